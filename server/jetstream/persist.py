"""Small crash-safe state files: stream meta, consumer state, store snapshots.

Anything that is rewritten whole (rather than appended to, like the message
log) goes through here. A write never leaves a half-written file behind: the
bytes go to a temporary file in the same directory, are fsynced, then renamed
over the target (rename is atomic on POSIX), and the directory is fsynced so
the rename itself survives a power cut. After SIGKILL the reader therefore sees
either the old contents or the new ones, never a mix.

Every file starts with one header line that carries a format version and a
checksum of the body, so a file damaged by the disk (or by hand) is detected
rather than half-believed:

    natslab-state 1 <blake2b-64 hex of body> <body length>\\n
    <body>

For JSON the body is UTF-8 JSON, so the files stay readable with ``less``.

Use::

    from natslab.server.jetstream.persist import write_json_atomic, read_json_checked
    write_json_atomic(stream_dir / "meta.json", {"config": cfg, "created": ts})
    meta = read_json_checked(stream_dir / "meta.json")          # FileNotFoundError / CorruptStateError
    meta = read_json_checked(stream_dir / "meta.json", None)    # None when missing (still raises on corruption)

``write_bytes_atomic`` / ``read_bytes_checked`` are the same for binary bodies.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

try:
    # the blake2b hashlib itself hands out (the same type): importing hashlib
    # initialises OpenSSL's libcrypto, 3.7 MB of a JetStream server's resident
    # memory, for a checksum that does not use it
    from _blake2 import blake2b
except ImportError:  # a Python built without it
    from hashlib import blake2b

__all__ = [
    "CorruptStateError",
    "write_bytes_atomic",
    "read_bytes_checked",
    "write_json_atomic",
    "read_json_checked",
    "fsync_dir",
    "write_tmp",
    "make_dirs",
    "DIR_MODE",
    "FILE_MODE",
]

MAGIC = b"natslab-state"
VERSION = 1

# nats-server's defaultDirPerms and defaultFilePerms: the store is its owner's
# alone (the umask can only take more away)
DIR_MODE = 0o700
FILE_MODE = 0o600
_MISSING: Any = object()


class CorruptStateError(ValueError):
    """The file exists but its header or checksum does not match its body."""


def _digest(body: bytes) -> str:
    return blake2b(body, digest_size=8).hexdigest()


def fsync_dir(directory: Path) -> None:
    """fsync a directory so a rename or create inside it is durable."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on directories; nothing better to do
    finally:
        os.close(fd)


def make_dirs(directory: Path, sync: bool = True) -> list[Path]:
    """``mkdir -p`` that makes each directory it creates durable (the
    parent's entry fsynced), so a power cut cannot drop a stream's or a
    consumer's directory with the files fsynced inside it. With ``sync``
    False the caller makes them durable later; the directories created are
    returned, outermost first."""
    directory = Path(directory)
    if directory.is_dir():
        return []
    missing = []
    d = directory
    while not d.exists():
        missing.append(d)
        d = d.parent
    for d in reversed(missing):
        try:
            d.mkdir(DIR_MODE)
        except FileExistsError:
            pass
        if sync:
            fsync_dir(d.parent)
    return missing[::-1]


def _private(path, flags: int) -> int:
    return os.open(path, flags, FILE_MODE)


def write_tmp(tmp: Path, data: bytes, *, sync: bool = True) -> None:
    """Write the file ``tmp`` that is about to replace another (fsynced unless
    ``sync`` is False). When that fails it is removed and the error raised:
    on a full disk the file it was to replace is still whole."""
    try:
        with open(tmp, "wb", opener=_private) as f:
            f.write(data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes_atomic(path: Path | str, body: bytes, *, sync: bool = True) -> None:
    """Replace ``path`` with a checksummed file holding ``body``, atomically.

    With ``sync=False`` the fsyncs are skipped: still atomic against a crash of
    this process (the OS has the bytes before the rename), but not against a
    power cut. Parent directories are created when missing.
    """
    path = Path(path)
    if sync:
        make_dirs(path.parent)
    else:
        make_dirs(path.parent, sync=False)
    header = b"%s %d %s %d\n" % (MAGIC, VERSION, _digest(body).encode(), len(body))
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write_tmp(tmp, header + body, sync=sync)
    try:
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    if sync:
        fsync_dir(path.parent)


def read_bytes_checked(path: Path | str, default: Any = _MISSING) -> bytes:
    """The body written by ``write_bytes_atomic``.

    Raises FileNotFoundError when the file is missing (unless ``default`` is
    given, which is then returned) and CorruptStateError when the header,
    length or checksum is wrong.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if default is _MISSING:
            raise
        return default
    nl = raw.find(b"\n")
    parts = raw[:nl].split(b" ") if nl > 0 else []
    if len(parts) != 4 or parts[0] != MAGIC:
        raise CorruptStateError(f"{path}: not a natslab state file")
    try:
        version, length = int(parts[1]), int(parts[3])
    except ValueError:
        raise CorruptStateError(f"{path}: bad header") from None
    if version != VERSION:
        raise CorruptStateError(f"{path}: unsupported version {version}")
    body = raw[nl + 1 :]
    if len(body) != length:
        raise CorruptStateError(f"{path}: expected {length} bytes, found {len(body)}")
    if _digest(body).encode() != parts[2]:
        raise CorruptStateError(f"{path}: checksum mismatch")
    return body


def write_json_atomic(path: Path | str, obj: Any, *, sync: bool = True) -> None:
    """Atomically replace ``path`` with ``obj`` as checksummed JSON."""
    body = json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()
    write_bytes_atomic(path, body, sync=sync)


def read_json_checked(path: Path | str, default: Any = _MISSING) -> Any:
    """The object written by ``write_json_atomic`` (see ``read_bytes_checked``
    for missing and corrupt files)."""
    body = read_bytes_checked(path, default=_MISSING if default is _MISSING else None)
    if body is None:
        return default
    try:
        return json.loads(body)
    except ValueError as e:  # checksum fine but not JSON: written by something else
        raise CorruptStateError(f"{path}: {e}") from None
