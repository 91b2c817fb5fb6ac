"""NATS header blocks: parse the ``NATS/1.0`` block a client sent, and build
the blocks JetStream sends (status replies, heartbeats, direct-get headers).

Keys are matched exactly as the real server does (it looks headers up by
their canonical spelling, e.g. ``Nats-Msg-Id``)."""

from __future__ import annotations

HDR_LINE = b"NATS/1.0\r\n"
CRLF = b"\r\n"

MSG_ID = "Nats-Msg-Id"
BATCH_ID = "Nats-Batch-Id"
EXPECTED_STREAM = "Nats-Expected-Stream"
EXPECTED_LAST_SEQ = "Nats-Expected-Last-Sequence"
EXPECTED_LAST_SUBJ_SEQ = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_SUBJ_SEQ_SUBJ = "Nats-Expected-Last-Subject-Sequence-Subject"
EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
ROLLUP = "Nats-Rollup"
TTL = "Nats-TTL"
REQUIRED_API_LEVEL = "Nats-Required-Api-Level"
# the JetStream API level this server implements: what a Nats-Required-Api-Level
# is checked against, INFO's api_lvl (here, not in shapes.py, which re-exports
# it: a JetStream starts without shapes.py and the request tables it loads)
API_LEVEL = 5


def value(hdr: bytes, key: bytes) -> str:
    """One header's value as the real server's publish path reads it
    (sliceHeader): the first line that starts with ``key:`` exactly
    (case-sensitive), leading spaces skipped, trailing ones kept; '' when
    absent, which it treats the same as empty."""
    n, klen, off = len(hdr), len(key), 0
    while True:
        i = hdr.find(key, off)
        if i - off < 2:  # also not found; Go's check is relative to the search start
            return ""
        if i >= n - 1 or hdr[i - 1] != 0x0A or hdr[i - 2] != 0x0D:
            off = i + klen
            continue
        if i + klen >= n:
            return ""
        if hdr[i + klen] != 0x3A:
            off = i + klen
            continue
        j = i + klen + 1
        while j < n and hdr[j] == 0x20:
            j += 1
        e = hdr.find(b"\r\n", j)
        return hdr[j:e if e >= 0 else n].decode("utf-8", "replace")


def go_uint64(v: str) -> int:
    """parseInt64 then uint64(): decimal digits only (else -1, i.e. 2^64-1),
    wrapping as Go's int64 arithmetic does."""
    if not v or not v.isascii() or not v.isdigit():
        return (1 << 64) - 1
    return int(v) & ((1 << 64) - 1)


def parse(hdr: bytes | None) -> dict[str, str]:
    """Header name -> first value. The status line is ignored."""
    out: dict[str, str] = {}
    if not hdr:
        return out
    for line in hdr.decode("utf-8", "replace").split("\r\n")[1:]:
        if not line:
            continue
        k, sep, v = line.partition(":")
        if sep:
            k = k.strip()
            if k not in out:
                out[k] = v.strip()
    return out


def status(code: int, description: str = "", headers: list[tuple[str, str]] | None = None) -> bytes:
    """``NATS/1.0 404 No Messages\\r\\n...\\r\\n\\r\\n``."""
    line = f"NATS/1.0 {code} {description}" if description else f"NATS/1.0 {code}"
    parts = [line]
    if headers:
        parts.extend(f"{k}: {v}" for k, v in headers)
    return ("\r\n".join(parts) + "\r\n\r\n").encode()


def append(hdr: bytes | None, headers: list[tuple[str, str]]) -> bytes:
    """Add headers to an existing block (or make a new one)."""
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers).encode()
    if not hdr:
        return HDR_LINE + extra + CRLF
    # strip the blank line that ends the block, add ours, end it again
    return hdr[:-2] + extra + CRLF


def remove(hdr: bytes | None, name: str) -> bytes | None:
    """Drop a header from the block; None when nothing is left of it."""
    if not hdr:
        return hdr
    lines = hdr.split(b"\r\n")
    key = name.encode().lower() + b":"
    kept = [ln for ln in lines[1:] if ln and not ln.lower().startswith(key)]
    if not kept:
        return None
    return lines[0] + CRLF + CRLF.join(kept) + CRLF + CRLF
