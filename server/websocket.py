"""NATS over WebSocket (RFC 6455), as nats-server's websocket {} listener.

The listener answers the HTTP upgrade itself (no HTTP library: the request
is read, checked the way nats-server checks it and answered 101, or with the
same HTTP error and log line), then carries the NATS protocol in binary
frames. Each connection is an ordinary ``Client`` (same parser, same
outbound buffer, same routing) whose transport is a ``WSTransport``: what the
client flushes becomes one frame (fragmented for browsers as nats-server
does, compressed with permessage-deflate when negotiated), and what arrives
is unmasked, reassembled and inflated here before the parser sees it. Ping
is answered with pong; a close frame is echoed and ends the connection; a
connection the server closes gets a close frame whose status and text follow
the close reason, as nats-server's wsEnqueueCloseMessage.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import hashlib
import re
import socket
import zlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from . import tls
from .conf import ConfigError

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_PMC_RESPONSE = b"Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n"
_NO_MASKING = b"Nats-No-Masking: true\r\n"
_TAIL = b"\x00\x00\xff\xff"  # what a deflate sync flush ends with (RFC 7692: left off the wire)

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0, 1, 2, 8, 9, 10
MAX_CONTROL_PAYLOAD = 125
COMPRESS_THRESHOLD = 64  # smaller writes go uncompressed (nats-server's wsCompressThreshold)
BROWSER_FRAME_SIZE = 4096  # nats-server limits frames to browsers ("Mozilla/" user agents)
MAX_REQUEST = 64 * 1024  # the upgrade request's size limit
MAX_MESSAGE = 64 * 1024 * 1024  # the most a compressed message may inflate to

# a close reason (Client.close_reason) -> the close frame's status and text:
# nats-server's ClosedState names and wsEnqueueCloseMessage's statuses
_CLOSE = {
    "Client Closed": (1000, "Client Closed"),
    "Authentication Timeout": (1008, "Authentication Timeout"),
    "Authorization Violation": (1008, "Authentication Failure"),
    "Slow Consumer (Pending Bytes)": (1008, "Slow Consumer (Pending Bytes)"),
    "Maximum Connections Exceeded": (1008, "Maximum Connections Exceeded"),
    "maximum control line exceeded": (1008, "Maximum Control Line Exceeded"),
    "TLS Handshake Failure": (1015, "TLS Handshake Failure"),
    # a parser error ends a websocket read loop as a read error
    "Unknown Protocol Operation": (1001, "Read Error"),
    "malformed publish": (1001, "Read Error"),
    "malformed subscribe": (1001, "Read Error"),
    "malformed unsubscribe": (1001, "Read Error"),
    "bad CONNECT json": (1001, "Read Error"),
    "invalid client protocol": (1002, "Bad Client Protocol Version"),
    "Maximum Payload Violation": (1009, "Maximum Message Payload Exceeded"),
    "Maximum Payload Exceeded": (1009, "Maximum Message Payload Exceeded"),
    "Read Error": (1001, "Read Error"),
    "Stale Connection": (1001, "Stale Connection"),
    "Server Shutdown": (1001, "Server Shutdown"),
    "no responders requires headers support": (1011, "No Responders Requires Headers"),
}


@dataclass
class WebsocketOptions:
    port: int = 0
    host: str = ""
    no_tls: bool = False
    tls: tls.TLSOptions | None = None
    compression: bool = False
    same_origin: bool = False
    allowed_origins: list[str] = field(default_factory=list)
    handshake_timeout: float = 0.0  # 0: none, as nats-server
    headers: bytes = b""  # headers {}: added to the upgrade response, ``Name: value\r\n`` each
    ping_interval: float = 0.0  # ping_interval: the websocket clients' own (0: the server's)
    no_auth_user: str = ""  # no_auth_user: the websocket clients' own (server/auth.py)
    # authorization {}: the websocket clients' own user/password or token (nats-server's auth
    # override, server/auth.py) and authentication timeout (0: the server's)
    user: str = ""
    password: str = ""
    token: str = ""
    auth_timeout: float = 0.0
    # jwt_cookie, user_cookie, pass_cookie, token_cookie: cookies of the upgrade request whose
    # values stand in for what CONNECT leaves out (name -> CONNECT field)
    cookies: dict[str, str] = field(default_factory=dict)


_ORIGINS = ("allowed_origins", "allowed_origin", "allow_origins", "allow_origin", "origins", "origin")
_COOKIES = {"jwt_cookie": "jwt", "user_cookie": "user", "pass_cookie": "pass", "token_cookie": "auth_token"}


def _request_uri_problem(raw: str) -> str:
    """What Go's url.ParseRequestURI says first of ``raw`` (its control
    character, scheme and request-URI checks), or "" when those pass."""
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        return "net/url: invalid control character in URL"
    scheme, rest = "", raw
    for i, ch in enumerate(raw):  # (getScheme)
        if ch.isascii() and ch.isalpha():
            continue
        if ch.isascii() and (ch.isdigit() or ch in "+-."):
            if i == 0:
                break
            continue
        if ch == ":":
            if i == 0:
                return "missing protocol scheme"
            scheme, rest = raw[:i], raw[i + 1:]
        break
    if not scheme and not rest.startswith("/"):
        return "invalid URI for request"
    return ""


def parse_websocket_block(block, warnings: list[str] | None = None) -> WebsocketOptions:
    """A ``websocket {}`` block, read as nats-server's parseWebsocket reads
    it (every problem at its key, all at once: a value of the wrong Go type
    is its panic's ``interface conversion``), then checked as its
    validateWebsocketOptions checks it (those errors have no place)."""
    from .conf import OptionsError, config_duration, element_error, go_type

    w = WebsocketOptions()
    problems: list[str] = []

    def at(m, key: str, what: str) -> None:
        problems.append(f"{m.where(key)}: {what}" if hasattr(m, "where") else what)

    def typed(m, key: str, v, want: type, go: str):
        if isinstance(v, want) and (want is bool or not isinstance(v, bool)):
            return v
        at(m, key, f"interface conversion: interface {{}} is {go_type(v)}, not {go}")
        return None

    for key, v in block.items():
        k = key.lower()
        if k == "listen":
            h, sep, pt = str(v).rpartition(":") if isinstance(v, str) else ("", ":", str(v))
            if not sep:
                at(block, key, f'could not parse address string "{v}"')
            elif not re.fullmatch(r"[+-]?[0-9]+", pt):
                at(block, key, f'could not parse port "{pt}"')
            else:
                w.host, w.port = h or w.host, int(pt)
        elif k == "port":
            if typed(block, key, v, int, "int64") is not None:
                w.port = v
        elif k in ("host", "net", "advertise"):  # (advertise: for a cluster's gossip, none on one node)
            if typed(block, key, v, str, "string") is not None and k != "advertise":
                w.host = v
        elif k in ("no_tls", "same_origin", "compress", "compression"):
            if typed(block, key, v, bool, "bool") is not None:
                setattr(w, {"compress": "compression"}.get(k, k), v)
        elif k == "tls":
            if typed(block, key, v, dict, "map[string]interface {}") is None:
                continue
            try:
                w.tls = tls.parse_tls_block(v, block.where(key) if hasattr(block, "where") else "")
            except ConfigError as e:
                problems += str(e).split("\n")
                continue
            if w.tls.pinned is not None:  # (checked on the client port only: refused here, not ignored)
                at(block, key, '"websocket.tls.pinned_certs" is not supported by natslab')
                continue
            try:  # (GenTLSConfig, as the block is read: at its key)
                w.tls.context()
            except ConfigError as e:
                at(block, key, str(e))
        elif k in _ORIGINS:
            items = [v] if isinstance(v, str) else v if isinstance(v, list) else None
            if items is None:
                at(block, key, f"error parsing allowed origins: unsupported type {go_type(v)}")
                continue
            for i, x in enumerate(items):
                if not isinstance(x, str):  # (parseStringArray: at the element)
                    problems.append(str(element_error(items, i, f"error parsing allowed origins: unsupported type "
                                                                f"in array {go_type(x)}")))
            w.allowed_origins = [x for x in items if isinstance(x, str)]
        elif k == "handshake_timeout":
            try:
                w.handshake_timeout = config_duration(v, wrong=f"error parsing handshake timeout: unsupported type "
                                                               f"{go_type(v)}")
            except ConfigError as e:
                at(block, key, str(e))
        elif k in ("authorization", "authentication"):
            _simple_auth(block, key, v, w, at, typed)
        elif k in _COOKIES:
            if typed(block, key, v, str, "string") is not None and v:
                w.cookies[v] = _COOKIES[k]
        elif k == "no_auth_user":  # (checked against the users with the server's: auth.py)
            if typed(block, key, v, str, "string") is not None:
                w.no_auth_user = v
        elif k == "ping_interval":  # (parseDuration: a Go duration, or a number of seconds and a warning)
            if not isinstance(v, str) and warnings is not None and hasattr(block, "where"):
                warnings.append(f'{block.where(key)}: invalid use of field "ping_interval": ping_interval should be '
                                "converted to a duration")
            try:
                w.ping_interval = config_duration(v, "error parsing ping_interval: {}")
            except ConfigError as e:
                at(block, key, str(e))
        elif k == "headers":  # (nats-server's parseWebsocket and validateWebsocketOptions)
            if not isinstance(v, dict):
                at(block, key, f"error parsing headers: unsupported type {go_type(v)}")
                continue
            raw = []
            for name, value in v.items():
                if not isinstance(value, str):
                    at(v, name, f"error parsing header key {name}: unsupported type {go_type(value)}")
                    continue
                raw.append((name, f"{name}: {value}\r\n".encode()))
            w.headers = raw  # (checked below, with the other checks of the options)
        elif key not in getattr(block, "used", ()):
            at(block, key, f'unknown field "{key}"')
    if problems:
        raise ConfigError("\n".join(problems))
    raw, w.headers = w.headers or [], b""
    for name, line in raw:
        low = name.lower()
        if low in ("host", "content-length", "connection", "upgrade", "nats-no-masking"):
            raise OptionsError(f'websocket: invalid header "{name}" not allowed')
        if low.startswith("sec-websocket-"):
            raise OptionsError(f'websocket: invalid header "{name}", "Sec-WebSocket-" prefix not allowed')
        w.headers += line
    if w.port and w.tls is None and not w.no_tls:
        raise OptionsError("websocket requires TLS configuration")
    for ao in w.allowed_origins:
        why = _request_uri_problem(ao)
        if why:  # (Go's url.ParseRequestURI refuses it)
            raise OptionsError(f'unable to parse allowed origin: parse "{ao}": {why}')
        u = urlsplit(ao)
        if u.scheme not in ("http", "https"):
            raise OptionsError(f'unable to parse allowed origin "{ao}": allowed origins must be absolute URLs '
                              'with http or https scheme')
        if not u.netloc:
            raise OptionsError(f'unable to parse allowed origin "{ao}": host is required')
    return w


def _simple_auth(block, key: str, v, w: WebsocketOptions, at, typed) -> None:
    """The websocket block's ``authorization {}``: nats-server's
    parseSimpleAuth (user, password, token, timeout; a timeout that is not
    a number is 1 s, as there)."""
    if typed(block, key, v, dict, "map[string]interface {}") is None:
        return
    for k, x in v.items():
        low = k.lower()
        if low in ("user", "username", "pass", "password", "token"):
            if typed(v, k, x, str, "string") is not None:
                setattr(w, {"username": "user", "pass": "password"}.get(low, low), x)
        elif low == "timeout":
            w.auth_timeout = float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else 1.0
        elif k not in getattr(v, "used", ()):
            at(v, k, f'unknown field "{k}"')


def _cookies(lines: list[str], names: dict[str, str]) -> dict[str, str]:
    """The configured cookies of the request's Cookie headers (Go's
    Request.Cookies: ``name=value`` pairs split on ``;``, a quoted value
    unquoted), as the CONNECT fields they stand in for."""
    out: dict[str, str] = {}
    for line in lines:
        for part in line.split(";"):
            name, sep, value = part.strip().partition("=")
            if sep and name in names:
                value = value.strip()
                if len(value) > 1 and value[0] == value[-1] == '"':
                    value = value[1:-1]
                out[names[name]] = value
    return out


def _host_port(secure: bool, hostport: str) -> tuple[str, str]:
    host, sep, port = hostport.rpartition(":")
    if not sep or "]" in port:
        host, port = hostport, "443" if secure else "80"
    return host.strip("[]").lower(), port


# -- the listener ---------------------------------------------------------------

class WebsocketListener:
    def __init__(self, server, opts: WebsocketOptions):
        self.server = server
        self.opts = opts
        self.ctx = opts.tls.context() if opts.tls is not None else None
        self.secure = self.ctx is not None
        self.host = opts.host or server.opts.host
        self.port = 0
        self._srv: asyncio.base_events.Server | None = None
        # allowed origins: host -> [(scheme, port)]
        self.allowed: dict[str, list[tuple[str, str]]] = {}
        for ao in opts.allowed_origins:
            u = urlsplit(ao)
            h, pt = _host_port(u.scheme == "https", u.netloc)
            self.allowed.setdefault(h, []).append((u.scheme, pt))

    async def start(self) -> None:
        srv = self.server
        port = 0 if self.opts.port in (0, -1) else self.opts.port
        factory = lambda: WSConnection(self)  # noqa: E731
        if self.ctx is not None:  # wss: a refused client certificate gets its TLS alert, as from nats-server
            ctx, timeout, plain = self.ctx, self.opts.tls.timeout, factory
            factory = lambda: tls.alerting_server_protocol(srv.loop, plain(), ctx, timeout)  # noqa: E731
        self._srv = await srv.loop.create_server(factory, self.host, port, reuse_address=True, backlog=1024)
        for s in self._srv.sockets:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.port = self._srv.sockets[0].getsockname()[1]
        srv.logger.info("Listening for websocket clients on %s://%s:%d", "wss" if self.secure else "ws",
                        self.host, self.port)
        if not self.secure:
            srv.logger.warning("Websocket not configured with TLS. DO NOT USE IN PRODUCTION!")

    def close(self) -> None:
        if self._srv is not None:
            self._srv.close()

    async def wait_closed(self) -> None:
        if self._srv is not None:
            try:
                await asyncio.wait_for(self._srv.wait_closed(), 2)
            except asyncio.TimeoutError:
                pass
            self._srv = None

    def adjust_info(self, info: dict) -> None:
        """A websocket client's INFO names this listener (nats-server's
        generateClientInfoJSON): its host and port, TLS as the listener has it."""
        info["host"], info["port"] = self.host, self.port
        info.pop("tls_required", None)
        info.pop("tls_available", None)
        if self.secure:
            info["tls_required"] = info["tls_available"] = True

    def check_origin(self, headers: dict, secure: bool) -> str:
        """'' when the Origin is acceptable, else nats-server's reason."""
        if not self.opts.same_origin and not self.allowed:
            return ""
        origin = _get(headers, "origin") or _get(headers, "sec-websocket-origin")
        if not origin:
            return ""
        u = urlsplit(origin)
        if not u.scheme or not u.netloc:
            return f'parse "{origin}": invalid URI for request'
        oh, op = _host_port(u.scheme == "https", u.netloc)
        if self.opts.same_origin:
            rh, rp = _host_port(secure, _get(headers, "host"))
            if oh != rh or op != rp or u.scheme.lower() != ("https" if secure else "http"):
                return "not same origin"
        if self.allowed:
            if not any(u.scheme == s and op == pt for s, pt in self.allowed.get(oh, [])):
                return "not in the allowed list"
        return ""


def _get(headers: dict, name: str) -> str:
    v = headers.get(name)
    return v[0] if v else ""


def _contains(headers: dict, name: str, token: str) -> bool:
    return any(t.strip(" \t").lower() == token.lower() for v in headers.get(name, []) for t in v.split(","))


_STATUS = {400: "Bad Request", 403: "Forbidden", 405: "Method Not Allowed", 431: "Request Header Fields Too Large"}


class WSConnection(asyncio.Protocol):
    """One websocket connection: the HTTP upgrade, then frames to and from
    its Client."""

    def __init__(self, listener: WebsocketListener):
        self.listener = listener
        self.server = listener.server
        self.transport = None
        self.peer = ("", 0)
        self.buf = bytearray()
        self.client = None
        self._timer = None
        # after the upgrade
        self.compress = False
        self.mask_read = True
        self.browser_frames = 0  # frame size limit for browsers (0: none)
        self.frag_compressed = True
        self.close_sent = False
        self.done = False  # closed or closing: nothing more is read
        # frame reader state
        self.in_frame = False  # a data frame's payload is being read
        self.rem = 0
        self.key = b""
        self.kpos = 0
        self.msg_final = True  # the current message's last frame has come
        self.msg_compressed = False
        self.cbuf: list[bytes] = []
        self.csize = 0

    # -- asyncio.Protocol ---------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        self.peer = transport.get_extra_info("peername") or ("", 0)
        t = self.listener.opts.handshake_timeout
        if t > 0:
            self._timer = self.server.loop.call_later(t, self._handshake_timeout)

    def data_received(self, data: bytes) -> None:
        if self.done:
            return
        self.buf += data
        if self.client is None:
            self._read_request()
        if self.client is not None and self.buf:
            self._read_frames()

    def connection_lost(self, exc) -> None:
        self.done = True
        if self._timer is not None:
            self._timer.cancel()
        if self.client is not None:
            self.client.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.client is not None:
            self.client.pause_writing()

    def resume_writing(self) -> None:
        if self.client is not None:
            self.client.resume_writing()

    def eof_received(self):
        return False

    def _handshake_timeout(self) -> None:
        if self.client is None and not self.done:
            self.done = True
            self.transport.close()

    # -- the upgrade --------------------------------------------------------------
    def _http_error(self, status: int, reason: str, version: str = "HTTP/1.1") -> None:
        """What Go's http.Error writes (wsReturnHTTPError), and the log line."""
        self.server.logger.error("%s:%d - websocket handshake error: %s", self.peer[0], self.peer[1], reason)
        text = _STATUS[status]
        body = text.encode() + b"\n"
        self.transport.write(
            f"{version} {status} {text}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Sec-Websocket-Version: 13\r\nX-Content-Type-Options: nosniff\r\n"
            f"Date: {email.utils.formatdate(usegmt=True)}\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        if version != "HTTP/1.1":
            self.done = True
            self.transport.close()

    def _bad_request(self, text: str = "400 Bad Request") -> None:
        """Go's http server's own answer to a request it cannot read (before
        any handler, so no log line)."""
        self.done = True
        self.transport.write(b"HTTP/1.1 " + text.encode() + b"\r\nContent-Type: text/plain; charset=utf-8\r\n"
                             b"Connection: close\r\n\r\n" + text.encode())
        self.transport.close()

    def _read_request(self) -> None:
        while self.client is None and not self.done:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buf) > MAX_REQUEST:
                    self._bad_request("431 Request Header Fields Too Large")
                return
            head = bytes(self.buf[:end]).decode("latin-1")
            del self.buf[:end + 4]
            lines = head.split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                self._bad_request()
                return
            method, _path, version = parts
            headers: dict[str, list[str]] = {}
            for ln in lines[1:]:
                name, sep, value = ln.partition(":")
                if not sep or not name or name != name.strip():
                    self._bad_request()
                    return
                headers.setdefault(name.lower(), []).append(value.strip(" \t"))
            if version == "HTTP/1.1" and not headers.get("host"):
                self._bad_request("400 Bad Request: missing required Host header")
                return
            self._upgrade(method, version, headers)

    def _upgrade(self, method: str, version: str, headers: dict) -> None:
        lst = self.listener
        if method != "GET":
            return self._http_error(405, "request method must be GET", version)
        if not _get(headers, "host"):
            return self._http_error(400, "'Host' missing in request", version)
        if not _contains(headers, "upgrade", "websocket"):
            return self._http_error(400, "invalid value for header 'Upgrade'", version)
        if not _contains(headers, "connection", "upgrade"):
            return self._http_error(400, "invalid value for header 'Connection'", version)
        key = _get(headers, "sec-websocket-key")
        if not key:
            return self._http_error(400, "key missing", version)
        try:
            if len(base64.b64decode(key, validate=True)) != 16:
                raise ValueError
        except ValueError:
            return self._http_error(400, "invalid websocket key", version)
        if not _contains(headers, "sec-websocket-version", "13"):
            return self._http_error(400, "invalid version", version)
        why = lst.check_origin(headers, lst.secure)
        if why:
            return self._http_error(403, f"origin not allowed: {why}", version)
        if self.buf:
            # nats-server hijacks the connection and finds bytes already read
            self.server.logger.error("%s:%d - websocket handshake error: client sent data before handshake is "
                                     "complete", self.peer[0], self.peer[1])
            self.done = True
            self.transport.close()
            return
        self.compress = lst.opts.compression and any(
            p.strip(" \t").lower() == "permessage-deflate"
            for v in headers.get("sec-websocket-extensions", []) for e in v.split(",") for p in e.split(";"))
        no_mask = _get(headers, "nats-no-masking") == "true"
        self.mask_read = not no_mask
        ua = _get(headers, "user-agent")
        if ua.startswith("Mozilla/"):
            self.browser_frames = BROWSER_FRAME_SIZE
            self.frag_compressed = not (self.compress and "Version/" in ua and "Safari/" in ua)
        accept = base64.b64encode(hashlib.sha1(key.encode() + _GUID).digest())
        resp = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Accept: " + accept + b"\r\n")
        if self.compress:
            resp += _PMC_RESPONSE
        if no_mask:
            resp += _NO_MASKING
        self.transport.write(resp + self.listener.opts.headers + b"\r\n")
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        srv = self.server
        from .client import Client, TracingClient

        client = (TracingClient if srv.opts.trace else Client)(srv)
        client.ws = lst
        if lst.opts.cookies and headers.get("cookie"):
            client.ws_cookies = _cookies(headers["cookie"], lst.opts.cookies) or None
        client.tls_state = self.transport.get_extra_info("ssl_object")  # (wss: for verify_and_map)
        self.client = client
        client.connection_made(WSTransport(self))

    # -- frames in ------------------------------------------------------------------
    def _protocol_error(self, message: str) -> None:
        c = self.client
        self.server.logger.error("%s:%d - wid:%d - read error: %s", self.peer[0], self.peer[1],
                                 c.cid if c is not None else 0, message)
        self._send_close(1002, message)
        self._end("Read Error")

    def _end(self, reason: str) -> None:
        """The connection ends from this side after a close frame went out."""
        self.done = True
        c = self.client
        if c is not None and not c.closed:
            c.close(reason)
        else:
            self.transport.close()

    def _read_frames(self) -> None:
        buf = self.buf
        client = self.client
        while buf and not self.done:
            if self.in_frame:
                n = min(self.rem, len(buf))
                chunk = self._unmask(bytes(buf[:n]))
                del buf[:n]
                self.rem -= n
                if self.rem == 0:
                    self.in_frame = False
                final = self.msg_final and self.rem == 0
                if self.msg_compressed:
                    self._inflate(chunk, final)
                elif chunk:
                    client.data_received(chunk)
                if client.closed:
                    self.done = True
                continue
            if len(buf) < 2:
                return
            b0, b1 = buf[0], buf[1]
            op = b0 & 0x0F
            final = bool(b0 & 0x80)
            compressed = bool(b0 & 0x40)
            if b0 & 0x30:
                return self._protocol_error("RSV2 and RSV3 must be clear")
            if compressed and not self.compress:
                return self._protocol_error("compressed frame received without negotiated permessage-deflate")
            if self.mask_read and not b1 & 0x80:
                return self._protocol_error("mask bit missing")
            n = b1 & 0x7F
            if op in (OP_CLOSE, OP_PING, OP_PONG):
                if n > MAX_CONTROL_PAYLOAD:
                    return self._protocol_error(
                        f"control frame length bigger than maximum allowed of {MAX_CONTROL_PAYLOAD} bytes")
                if not final:
                    return self._protocol_error("control frame does not have final bit set")
                if compressed:
                    return self._protocol_error("control frame must not be compressed")
            elif op in (OP_TEXT, OP_BINARY):
                if not self.msg_final:
                    return self._protocol_error(
                        "new message started before final frame for previous message was received")
            elif op == OP_CONT:
                if self.msg_final or compressed:
                    return self._protocol_error("invalid continuation frame")
            else:
                return self._protocol_error(f"unknown opcode {op}")
            pos = 2
            if n == 126:
                if len(buf) < 4:
                    return
                n = int.from_bytes(buf[2:4], "big")
                pos = 4
            elif n == 127:
                if len(buf) < 10:
                    return
                n = int.from_bytes(buf[2:10], "big")
                if n >> 63:
                    return self._protocol_error("invalid 64-bit payload length")
                pos = 10
            if b1 & 0x80:
                if len(buf) < pos + 4:
                    return
                key = bytes(buf[pos:pos + 4])
                pos += 4
            else:
                key = b""
            if op >= OP_CLOSE:
                if len(buf) < pos + n:
                    return  # a control frame is handled whole
                self.key, self.kpos = key, 0
                payload = self._unmask(bytes(buf[pos:pos + n]))
                del buf[:pos + n]
                self._control(op, payload)
                continue
            del buf[:pos]
            if op != OP_CONT:
                self.msg_compressed = compressed
            self.msg_final = final
            self.key, self.kpos = key, 0
            self.rem = n
            self.in_frame = True
            if n == 0:
                self.in_frame = False
                if final and self.msg_compressed:
                    self._inflate(b"", True)

    def _unmask(self, data: bytes) -> bytes:
        if not self.key or not data:
            return data
        n = len(data)
        k = self.key[self.kpos:] + self.key[:self.kpos]
        self.kpos = (self.kpos + n) % 4
        # XOR as one big integer: a C loop, not a Python one
        mask = (k * (n // 4 + 1))[:n]
        return (int.from_bytes(data, "big") ^ int.from_bytes(mask, "big")).to_bytes(n, "big")

    def _inflate(self, chunk: bytes, final: bool) -> None:
        if chunk:
            self.csize += len(chunk)
            if self.csize > MAX_MESSAGE:
                self._send_close(*close_frame("Maximum Payload Exceeded"))
                return self._end("Maximum Payload Exceeded")
            self.cbuf.append(chunk)
        if not final:
            return
        data = b"".join(self.cbuf) + _TAIL
        self.cbuf, self.csize = [], 0
        d = zlib.decompressobj(-15)
        try:
            out = d.decompress(data, MAX_MESSAGE + 1)
        except zlib.error as e:
            return self._protocol_error(f"flate: {e}")
        if len(out) > MAX_MESSAGE:
            self._send_close(*close_frame("Maximum Payload Exceeded"))
            return self._end("Maximum Payload Exceeded")
        if out:
            self.client.data_received(out)

    def _control(self, op: int, payload: bytes) -> None:
        if op == OP_PING:
            self.transport.write(_frame(OP_PONG, payload))
        elif op == OP_CLOSE:
            if len(payload) == 1:
                return self._protocol_error("close frame payload cannot be 1 byte")
            body = b""
            if len(payload) >= 2:
                status = int.from_bytes(payload[:2], "big")
                if not _valid_close_status(status):
                    return self._protocol_error(f"invalid close status code {status}")
                text = payload[2:]
                try:
                    text.decode("utf-8")
                except UnicodeDecodeError:
                    status, text = 1007, b"invalid utf8 body in close frame"
                body = status.to_bytes(2, "big") + text
            # echo it (without a status when none came) and close
            self.close_sent = True
            self.transport.write(_frame(OP_CLOSE, body))
            self._end("Client Closed")

    # -- frames out -----------------------------------------------------------------
    def _send_close(self, status: int, text: str) -> None:
        if self.close_sent or self.transport.is_closing():
            return
        self.close_sent = True
        body = text.encode()
        if len(body) > MAX_CONTROL_PAYLOAD - 2:
            body = body[:MAX_CONTROL_PAYLOAD - 5] + b"..."
        self.transport.write(_frame(OP_CLOSE, status.to_bytes(2, "big") + body))

    def frames(self, data: bytes) -> bytes:
        """The frames one flush of the client goes out in."""
        mfs = self.browser_frames
        if self.compress and len(data) > COMPRESS_THRESHOLD:
            c = zlib.compressobj(1, zlib.DEFLATED, -15)  # no context takeover: a fresh one each time
            p = c.compress(data) + c.flush(zlib.Z_SYNC_FLUSH)
            p = p[:-4] if p.endswith(_TAIL) else p
            if mfs and self.frag_compressed and len(p) > mfs:
                out = []
                for i in range(0, len(p), mfs):
                    first, last = i == 0, i + mfs >= len(p)
                    out.append(_header(OP_BINARY if first else OP_CONT, len(p[i:i + mfs]), last, first))
                    out.append(p[i:i + mfs])
                return b"".join(out)
            return _header(OP_BINARY, len(p), True, True) + p
        if mfs and len(data) > mfs:
            return b"".join(_header(OP_BINARY, len(data[i:i + mfs]), True, False) + data[i:i + mfs]
                            for i in range(0, len(data), mfs))
        return _header(OP_BINARY, len(data), True, False) + data


def _header(op: int, n: int, final: bool, compressed: bool) -> bytes:
    b0 = op | (0x80 if final else 0) | (0x40 if compressed else 0)
    if n <= 125:
        return bytes((b0, n))
    if n < 65536:
        return bytes((b0, 126)) + n.to_bytes(2, "big")
    return bytes((b0, 127)) + n.to_bytes(8, "big")


def _frame(op: int, payload: bytes) -> bytes:
    return _header(op, len(payload), True, False) + payload


def _valid_close_status(code: int) -> bool:
    if code in (1005, 1004, 1006, 1015):
        return False
    return 1000 <= code < 5000 and not 1016 <= code <= 2999


def close_frame(reason: str) -> tuple[int, str]:
    return _CLOSE.get(reason, (1011, reason))


class WSTransport(asyncio.Transport):
    """What a websocket Client writes to: frames over the real transport."""

    def __init__(self, conn: WSConnection):
        super().__init__()
        self.conn = conn
        self.raw = conn.transport

    def write(self, data) -> None:
        if data and not self.raw.is_closing():
            self.raw.write(self.conn.frames(bytes(data)))

    def close(self) -> None:
        conn = self.conn
        conn.done = True
        if not conn.close_sent and not self.raw.is_closing():
            reason = (conn.client.close_reason if conn.client is not None else "") or "Client Closed"
            conn._send_close(*close_frame(reason))
        self.raw.close()

    def abort(self) -> None:
        self.conn.done = True
        self.raw.abort()

    def is_closing(self) -> bool:
        return self.raw.is_closing()

    def get_extra_info(self, name, default=None):
        return self.raw.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self.raw.pause_reading()

    def resume_reading(self) -> None:
        self.raw.resume_reading()

    def get_write_buffer_size(self) -> int:
        return self.raw.get_write_buffer_size()

    def set_write_buffer_limits(self, high=None, low=None) -> None:
        self.raw.set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self):
        return self.raw.get_write_buffer_limits()
