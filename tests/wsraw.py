"""A raw WebSocket client for the tests where the bytes matter: the upgrade
request, masked (or unmasked, or odd) frames out, frames in, inflated when
permessage-deflate was negotiated."""

from __future__ import annotations

import asyncio
import base64
import os
import zlib

KEY = base64.b64encode(b"natslab-ws-key!!").decode()


def request(port: int, extra: str = "", *, key: str | None = KEY, method: str = "GET", version: str = "HTTP/1.1",
            host: str | None = None) -> bytes:
    lines = [f"{method} / {version}"]
    if host is not False:
        lines.append(f"Host: {host or f'127.0.0.1:{port}'}")
    lines += ["Upgrade: websocket", "Connection: Upgrade"]
    if key:
        lines.append(f"Sec-WebSocket-Key: {key}")
    lines.append("Sec-WebSocket-Version: 13")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


def frame(op: int, payload: bytes, *, final: bool = True, mask: bool = True, rsv1: bool = False) -> bytes:
    b0 = op | (0x80 if final else 0) | (0x40 if rsv1 else 0)
    n = len(payload)
    mbit = 0x80 if mask else 0
    if n <= 125:
        head = bytes((b0, mbit | n))
    elif n < 65536:
        head = bytes((b0, mbit | 126)) + n.to_bytes(2, "big")
    else:
        head = bytes((b0, mbit | 127)) + n.to_bytes(8, "big")
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


def deflate(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    out = c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)
    return out[:-4]


class WSRaw:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer
        self.response = b""
        self.compressed = False

    @classmethod
    async def open(cls, port: int, req: bytes | None = None, **kw) -> "WSRaw":
        r, w = await asyncio.open_connection("127.0.0.1", port)
        self = cls(r, w)
        w.write(req if req is not None else request(port, **kw))
        await w.drain()
        return self

    async def read_response(self, timeout: float = 3) -> bytes:
        """The HTTP response head (and body, for an error with a length)."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), timeout)
        self.response = head
        self.compressed = b"permessage-deflate" in head
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                head += await asyncio.wait_for(self.reader.readexactly(int(line.split(b":")[1])), timeout)
        return head

    async def read_frame(self, timeout: float = 3) -> tuple[int, bool, bytes]:
        """(opcode, fin, payload) of the next frame, inflated if compressed."""
        h = await asyncio.wait_for(self.reader.readexactly(2), timeout)
        op, fin, rsv1 = h[0] & 0x0F, bool(h[0] & 0x80), bool(h[0] & 0x40)
        assert not h[1] & 0x80, "the server must not mask"
        n = h[1] & 0x7F
        if n == 126:
            n = int.from_bytes(await self.reader.readexactly(2), "big")
        elif n == 127:
            n = int.from_bytes(await self.reader.readexactly(8), "big")
        payload = await asyncio.wait_for(self.reader.readexactly(n), timeout)
        if rsv1:
            payload = zlib.decompressobj(-15).decompress(payload + b"\x00\x00\xff\xff")
        return op, fin, payload

    async def read_data(self, until: bytes, timeout: float = 3) -> bytes:
        """Data frames' payloads (answering nothing) until ``until`` shows."""
        out = b""
        while until not in out:
            op, _fin, payload = await self.read_frame(timeout)
            assert op in (0, 1, 2), (op, payload)
            out += payload
        return out

    async def until_closed(self, timeout: float = 3) -> tuple[bytes, bytes | None]:
        """Data and the close frame's payload (None if none came) up to EOF."""
        data, close = b"", None
        try:
            while True:
                op, _fin, payload = await self.read_frame(timeout)
                if op == 8:
                    close = payload
                elif op in (0, 1, 2):
                    data += payload
        except (asyncio.IncompleteReadError, ConnectionResetError):
            return data, close

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    async def eof(self, timeout: float = 3) -> bool:
        try:
            return await asyncio.wait_for(self.reader.read(), timeout) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.writer.close()
