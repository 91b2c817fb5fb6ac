"""The S2 stream framing (klauspost/compress/s2, a superset of the Snappy
framing format) as far as stream snapshots need it: nats-server compresses
its snapshot archives with it.

``encode`` writes a valid S2 stream of uncompressed chunks (every S2 and
Snappy reader accepts those; natslab does not compress). ``decode`` reads any
S2 or Snappy stream: uncompressed chunks, and compressed ones in the S2 block
format (Snappy's literals and copies plus S2's repeat-offset copies), each
checked against its masked CRC-32C. Anything malformed raises ``S2Error``."""

from __future__ import annotations

CHUNK = 65536  # uncompressed bytes per chunk (the Snappy limit, within S2's)
_STREAM_ID_S2 = b"\xff\x06\x00\x00S2sTwO"
_IDS = (b"S2sTwO", b"sNaPpY")
_MAX_BLOCK = 4 << 20  # S2's largest block


class S2Error(ValueError):
    pass


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    t = _TABLE
    for b in data:
        crc = t[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> bytes:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8 & 0xFFFFFFFF).to_bytes(4, "little")


def encode(data: bytes) -> bytes:
    out = [_STREAM_ID_S2]
    for i in range(0, len(data), CHUNK):
        part = data[i:i + CHUNK]
        n = len(part) + 4
        out.append(b"\x01" + n.to_bytes(3, "little") + _masked(part) + part)
    return b"".join(out)


def _uvarint(b: bytes, i: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        if i >= len(b) or shift > 63:
            raise S2Error("s2: corrupt input")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7


def decode_block(src: bytes) -> bytes:
    """One S2 (or Snappy) compressed block."""
    n, s = _uvarint(src, 0)
    if n > _MAX_BLOCK:
        raise S2Error("s2: corrupt input")
    dst = bytearray()
    offset = 0
    end = len(src)
    try:
        while s < end:
            tag = src[s]
            kind = tag & 3
            if kind == 0:  # literal
                ln = tag >> 2
                if ln < 60:
                    s += 1
                else:
                    extra = ln - 59
                    ln = int.from_bytes(src[s + 1:s + 1 + extra], "little")
                    s += 1 + extra
                ln += 1
                if s + ln > end:
                    raise S2Error("s2: corrupt input")
                dst += src[s:s + ln]
                s += ln
                continue
            if kind == 1:  # copy with a 1-byte offset, or S2's repeat
                ln = (tag >> 2) & 7
                toff = ((tag & 0xE0) << 3) | src[s + 1]
                s += 2
                if toff == 0:
                    if ln == 5:
                        ln = src[s] + 4
                        s += 1
                    elif ln == 6:
                        ln = (src[s] | src[s + 1] << 8) + (1 << 8)
                        s += 2
                    elif ln == 7:
                        ln = (src[s] | src[s + 1] << 8 | src[s + 2] << 16) + (1 << 16)
                        s += 3
                else:
                    offset = toff
                ln += 4
            elif kind == 2:
                ln = (tag >> 2) + 1
                offset = src[s + 1] | src[s + 2] << 8
                s += 3
            else:
                ln = (tag >> 2) + 1
                offset = int.from_bytes(src[s + 1:s + 5], "little")
                s += 5
            if offset <= 0 or offset > len(dst):
                raise S2Error("s2: corrupt input")
            start = len(dst) - offset
            if offset >= ln:
                dst += dst[start:start + ln]
            else:
                for k in range(ln):  # an overlapping copy repeats what it copies
                    dst.append(dst[start + k])
    except IndexError:
        raise S2Error("s2: corrupt input") from None
    if len(dst) != n:
        raise S2Error("s2: corrupt input")
    return bytes(dst)


def decode(stream: bytes) -> bytes:
    out = []
    i, n = 0, len(stream)
    seen_id = False
    while i < n:
        if i + 4 > n:
            raise S2Error("s2: corrupt input")
        ctype = stream[i]
        ln = int.from_bytes(stream[i + 1:i + 4], "little")
        body = stream[i + 4:i + 4 + ln]
        if len(body) != ln:
            raise S2Error("unexpected EOF")
        i += 4 + ln
        if ctype == 0xFF:
            if body not in _IDS:
                raise S2Error("s2: corrupt input")
            seen_id = True
            continue
        if not seen_id:
            raise S2Error("s2: corrupt input")
        if ctype in (0x00, 0x01):
            if ln < 4:
                raise S2Error("s2: corrupt input")
            crc, data = body[:4], body[4:]
            if ctype == 0x00:
                data = decode_block(data)
            elif len(data) > _MAX_BLOCK:
                raise S2Error("s2: corrupt input")
            if _masked(data) != crc:
                raise S2Error("s2: corrupt input, crc mismatch")
            out.append(data)
        elif ctype < 0x80:
            raise S2Error("s2: unsupported input")  # reserved unskippable chunk
        # 0x80-0xfe: skippable (padding and the like)
    return b"".join(out)
