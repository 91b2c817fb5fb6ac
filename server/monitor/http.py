"""The monitoring port (``-m``/``--http_port``): a small HTTP/1.1 server on the
broker's own event loop serving nats-server's endpoints (/varz, /connz,
/subsz, /jsz, /healthz, the single-node /routez, /gatewayz, /leafz,
/accountz, /accstatz, /stacksz, and the / index page).

The standard library is enough here: a request is one line plus a few headers
and the answer is a JSON document built from in-memory counters, so an HTTP
framework would add a dependency without removing any code we need. Reads are
bounded (request line and headers together, the number of headers, a body we
only discard) and every read and write has a deadline, so a slow or hostile
HTTP client costs one idle coroutine, never the event loop. The JSON itself is
built in the package's ``varz``, ``connz``, ``jsz``, ``cluster`` and
``debug``, with Go's wire conventions in ``format``.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
from urllib.parse import parse_qs, unquote, urlsplit

from .cluster import accountz, accstatz, gatewayz, leafz, routez
from .connz import connz, subsz
from .debug import stacksz
from .format import BadRequest
from .jsz import jsz
from .varz import healthz, index, varz

logger = logging.getLogger("natslab.server")

MAX_HEAD_BYTES = 16 * 1024  # request line + headers
MAX_HEADERS = 100
MAX_BODY_BYTES = 64 * 1024  # bodies are read and dropped; none of our endpoints takes one
MAX_CONNECTIONS = 1024
READ_TIMEOUT = 10.0  # seconds for a whole request head, and for keep-alive idling
WRITE_TIMEOUT = 10.0
LINGER_BYTES = 4 * 1024 * 1024  # dropped after an error answer before closing

_REASONS = {
    200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
    408: "Request Timeout", 413: "Request Entity Too Large", 414: "URI Too Long",
    431: "Request Header Fields Too Large", 500: "Internal Server Error",
    501: "Not Implemented", 503: "Service Unavailable", 505: "HTTP Version Not Supported",
}
_METHODS = {"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"}

# path -> view(monitor, query) -> (content type, body)
ROUTES = {
    "/": index,
    "/varz": varz,
    "/connz": connz,
    "/subsz": subsz,
    "/subscriptionsz": subsz,
    "/jsz": jsz,
    "/healthz": healthz,
    "/routez": routez,
    "/gatewayz": gatewayz,
    "/leafz": leafz,
    "/accountz": accountz,
    "/accstatz": accstatz,
    "/stacksz": stacksz,
}


class _HTTPError(Exception):
    def __init__(self, status: int, text: str | None = None):
        super().__init__(status)
        self.status = status
        self.text = text or f"{status} {_REASONS.get(status, 'Error')}"


class Monitor:
    """The HTTP monitoring server of one broker."""

    def __init__(self, server):
        self.server = server
        self.host = ""
        self.port = 0
        self.secure = False  # https
        self.req_stats: dict[str, int] = {}
        self._tcp: asyncio.base_events.Server | None = None
        self._conns: set[asyncio.Task] = set()
        self._cpu_mark: tuple[float, float] | None = None  # (wall, cpu) of the last /varz

    async def start(self, host: str, port: int, ssl=None) -> None:
        """Listen (``ssl``: a server context, for https)."""
        self._tcp = await asyncio.start_server(
            self._serve, host, 0 if port in (0, -1) else port, limit=MAX_HEAD_BYTES, reuse_address=True, ssl=ssl
        )
        self.host = host
        self.port = self._tcp.sockets[0].getsockname()[1]
        self.secure = ssl is not None
        self.server.logger.info("Starting %s monitor on %s:%d", "https" if ssl else "http", host, self.port)

    async def stop(self) -> None:
        if self._tcp is not None:
            self._tcp.close()
        for t in list(self._conns):
            t.cancel()
        if self._conns:
            await asyncio.gather(*self._conns, return_exceptions=True)
        if self._tcp is not None:
            try:
                await asyncio.wait_for(self._tcp.wait_closed(), 2)
            except asyncio.TimeoutError:
                pass
            self._tcp = None

    # -- connections -------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._conns.add(task)
        try:
            if len(self._conns) > MAX_CONNECTIONS:
                await self._send(writer, 503, "text/plain; charset=utf-8", b"too many monitoring connections\n", close=True)
                return
            keep_alive = True
            while keep_alive:
                try:
                    method, target, version, headers = await asyncio.wait_for(self._read_head(reader), READ_TIMEOUT)
                except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    return  # idle keep-alive, or the peer went away mid-request
                except _HTTPError as e:
                    await self._refuse(reader, writer, e)
                    return
                conn = headers.get("connection", "").lower()
                keep_alive = (version == "HTTP/1.1" and conn != "close") or (version == "HTTP/1.0" and conn == "keep-alive")
                try:
                    await asyncio.wait_for(self._discard_body(reader, headers), READ_TIMEOUT)
                except _HTTPError as e:
                    await self._refuse(reader, writer, e)
                    return
                except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    return
                status, ctype, body, extra = self._dispatch(method, target)
                await self._send(writer, status, ctype, body, close=not keep_alive, head_only=method == "HEAD", extra=extra)
        except (asyncio.TimeoutError, ConnectionError):
            pass
        except asyncio.CancelledError:
            pass
        except Exception:  # a bug in a view must cost one response, not the broker
            logger.exception("monitoring connection failed")
        finally:
            self._conns.discard(task)
            writer.close()

    async def _refuse(self, reader, writer, e: _HTTPError) -> None:
        """Answer a request we will not serve, then close gently: read and drop
        what the client is still sending (bounded in bytes and time) so the
        close does not turn into a reset that destroys our answer."""
        await self._send(writer, e.status, "text/plain; charset=utf-8", e.text.encode(), close=True)
        try:
            if writer.can_write_eof():
                writer.write_eof()
            deadline = asyncio.get_running_loop().time() + 1.0
            dropped = 0
            while dropped < LINGER_BYTES:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    break
                chunk = await asyncio.wait_for(reader.read(65536), left)
                if not chunk:
                    break
                dropped += len(chunk)
        except (asyncio.TimeoutError, ConnectionError, OSError):
            pass

    async def _read_head(self, reader: asyncio.StreamReader):
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.LimitOverrunError:
            raise _HTTPError(431) from None
        except asyncio.IncompleteReadError as e:
            if e.partial.strip():
                raise _HTTPError(400) from None
            raise
        lines = head[:-4].split(b"\r\n")
        try:
            request_line = lines[0].decode("ascii")
        except UnicodeDecodeError:
            raise _HTTPError(400) from None
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[0] or not parts[1]:
            raise _HTTPError(400)
        method, target, version = parts
        if not method.isupper() or not method.isalpha():
            raise _HTTPError(400)
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            raise _HTTPError(505 if version.startswith("HTTP/") else 400)
        if len(lines) - 1 > MAX_HEADERS:
            raise _HTTPError(431)
        headers: dict[str, str] = {}
        for raw in lines[1:]:
            name, sep, value = raw.partition(b":")
            if not sep or not name or name != name.strip():
                raise _HTTPError(400)
            try:
                headers[name.decode("ascii").lower()] = value.strip().decode("latin-1")
            except UnicodeDecodeError:
                raise _HTTPError(400) from None
        if version == "HTTP/1.1" and "host" not in headers:
            raise _HTTPError(400, "400 Bad Request: missing required Host header")
        return method, target, version, headers

    async def _discard_body(self, reader: asyncio.StreamReader, headers: dict[str, str]) -> None:
        if "transfer-encoding" in headers:
            raise _HTTPError(501)
        cl = headers.get("content-length")
        if cl is None:
            return
        if not cl.isdigit():
            raise _HTTPError(400)
        n = int(cl)
        if n > MAX_BODY_BYTES:
            raise _HTTPError(413)
        if n:
            await reader.readexactly(n)

    async def _send(self, writer, status: int, ctype: str, body: bytes, *, close: bool,
                    head_only: bool = False, extra: dict | None = None) -> None:
        head = [
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}",
            f"Content-Type: {ctype}",
            f"Date: {email.utils.formatdate(usegmt=True)}",
            f"Content-Length: {len(body)}",
        ]
        for k, v in (extra or {}).items():
            head.append(f"{k}: {v}")
        if close:
            head.append("Connection: close")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        if not head_only:
            writer.write(body)
        await asyncio.wait_for(writer.drain(), WRITE_TIMEOUT)

    # -- routing -----------------------------------------------------------
    def _dispatch(self, method: str, target: str) -> tuple[int, str, bytes, dict | None]:
        if method not in _METHODS:
            return 405, "text/plain; charset=utf-8", b"405 method not allowed\n", None
        try:
            url = urlsplit(target)
        except ValueError:
            return 400, "text/plain; charset=utf-8", b"400 bad request\n", None
        path = unquote(url.path) or "/"
        view = ROUTES.get(path)
        if view is None:
            return 404, "text/plain; charset=utf-8", b"404 page not found\n", {"X-Content-Type-Options": "nosniff"}
        self.req_stats[path] = self.req_stats.get(path, 0) + 1
        query = parse_qs(url.query, keep_blank_values=True)
        try:
            ctype, body = view(self, {k: v[0] for k, v in query.items()})
        except BadRequest as e:
            return 400, "text/plain; charset=utf-8", str(e).encode(), None
        except Exception:
            logger.exception("monitoring endpoint %s failed", path)
            return 500, "text/plain; charset=utf-8", b"500 internal server error\n", None
        extra = {"Access-Control-Allow-Origin": "*"} if ctype == "application/json" else None
        return 200, ctype, body, extra
