"""Stream and consumer names as nats-server checks them: the characters an
asset name may not hold (isValidAssetName), path separators, and lengths
counted in bytes, as Go's ``len`` counts a string, never in characters.

A name is also a directory name in the store; what the file system refuses
(a NUL, more than 255 bytes) is found by creating that directory, as the
real server finds it, so the answer is the same store-creation error."""

from __future__ import annotations

MAX_NAME_LEN = 255  # JSMaxNameLen
MAX_DESCRIPTION_LEN = 4096  # JSMaxDescriptionLen

_NOT_IN_NAME = frozenset(" \t\r\n\f.*>\\/")


def is_valid_asset_name(name) -> bool:
    """isValidAssetName: non-empty, without white space, '.', '*', '>' or a
    path separator."""
    return isinstance(name, str) and bool(name) and _NOT_IN_NAME.isdisjoint(name)


def has_path_separators(name: str) -> bool:
    return "/" in name or "\\" in name


def byte_len(s: str) -> int:
    """Go's len() of the string nats-server holds: UTF-8 bytes. A subject
    token that was not UTF-8 arrives surrogate-escaped and counts its bytes."""
    if s.isascii():
        return len(s)
    try:
        return len(s.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return len(s.encode("utf-8", "surrogatepass"))
