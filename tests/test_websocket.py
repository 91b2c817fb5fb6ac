"""NATS over WebSocket on both servers: nats-py's WebSocket transport (aiohttp)
talking to TCP clients, wss with a tls {} block, permessage-deflate, and raw
upgrades and frames where the bytes matter (bad handshakes answered with the
same HTTP errors, ping/pong, close frames, protocol errors). nats.js over
WebSocket is in tests/test_websocket_js.py."""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from conftest import ServerProcess, connect, free_port
from pki import make_pki
from test_cli import binary
from wsraw import WSRaw, deflate, frame, request

pytest.importorskip("aiohttp")


class WSServer(ServerProcess):
    ws_port = 0

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.ws_port}"


def start(kind, tmp_path, ws_block: str, top: str = "") -> WSServer:
    port = free_port()
    tmp_path.mkdir(parents=True, exist_ok=True)
    conf = tmp_path / "ws.conf"
    conf.write_text(top + "websocket {\n  port: %d\n%s}\n" % (port, ws_block))
    srv = WSServer(kind, tmp_path / "store", extra=["-c", str(conf)])
    srv.ws_port = port
    srv.start()
    return srv


@pytest.fixture
def ws_server(server_kind, tmp_path):
    srv = start(server_kind, tmp_path, "  no_tls: true\n  allowed_origins: [\"http://good.example:8000\"]\n")
    yield srv
    srv.stop()


async def test_nats_py_over_websocket(ws_server):
    """A ws:// client and a TCP client see each other's messages, requests
    and headers; a message bigger than one frame header class crosses too."""
    ws = await connect(ws_server.ws_url)
    tcp = await connect(ws_server.url)
    assert ws._server_info["port"] == ws_server.ws_port
    assert "tls_required" not in ws._server_info
    sub_ws = await ws.subscribe("to.ws")
    sub_tcp = await tcp.subscribe("to.tcp")
    for nc in (ws, tcp, ws, tcp):  # twice each: flush can overtake a just-queued SUB
        await nc.flush()
    await tcp.publish("to.ws", b"hello ws", headers={"X-A": "1"})
    msg = await sub_ws.next_msg(timeout=2)
    assert msg.data == b"hello ws" and msg.headers == {"X-A": "1"}
    big = bytes(range(256)) * 800  # 200 KiB: 64-bit lengths, several reads
    await ws.publish("to.tcp", big)
    assert (await sub_tcp.next_msg(timeout=3)).data == big

    async def echo(m):
        await m.respond(m.data.upper())

    await tcp.subscribe("svc", cb=echo)
    await tcp.flush()
    await tcp.flush()  # (nats-py's flush can overtake a just-queued SUB)
    assert (await ws.request("svc", b"ping", timeout=2)).data == b"PING"
    await ws.close()
    await tcp.close()


async def test_wss(server_kind, tmp_path):
    """websocket { tls {} }: wss with nats-py; INFO says tls_required and
    tls_available for the websocket client only."""
    pki = make_pki(tmp_path / "pki")
    srv = start(server_kind, tmp_path, f'  tls {{\n    cert_file: "{pki.server_cert}"\n'
                                        f'    key_file: "{pki.server_key}"\n  }}\n')
    try:
        ws = await connect(f"wss://127.0.0.1:{srv.ws_port}", tls=pki.client_context())
        assert ws._server_info["tls_required"] is True and ws._server_info["tls_available"] is True
        tcp = await connect(srv.url)
        assert "tls_required" not in tcp._server_info
        sub = await ws.subscribe("x")
        await ws.flush()
        await ws.flush()  # (nats-py's flush can overtake a just-queued SUB)
        await tcp.publish("x", b"over wss")
        assert (await sub.next_msg(timeout=2)).data == b"over wss"
        await ws.close()
        await tcp.close()
    finally:
        srv.stop()


def test_websocket_requires_tls_or_no_tls(tmp_path):
    import subprocess
    import sys

    from conftest import nats_server_binary

    conf = tmp_path / "bad.conf"
    conf.write_text("websocket {\n  port: %d\n}\n" % free_port())
    for cmd in ([sys.executable, "-m", "natslab.server"], [nats_server_binary()]):
        r = subprocess.run(cmd + ["-p", "-1", "-c", str(conf)], capture_output=True, text=True, timeout=20)
        assert r.returncode != 0 and "websocket requires TLS configuration" in r.stdout + r.stderr


async def test_compression(server_kind, tmp_path):
    """compression: true and a client offering permessage-deflate: the
    response agrees (no context takeover both ways), the server's frames
    (INFO) come compressed, and a compressed PUB is understood."""
    srv = start(server_kind, tmp_path, "  no_tls: true\n  compression: true\n")
    try:
        c = await WSRaw.open(srv.ws_port, extra="Sec-WebSocket-Extensions: permessage-deflate; "
                                               "client_max_window_bits\r\n")
        head = await c.read_response()
        assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
        assert (b"Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                b"client_no_context_takeover\r\n") in head
        h = await asyncio.wait_for(c.reader.readexactly(1), 3)
        assert h[0] & 0x40  # RSV1: the INFO is compressed
        c.reader._buffer[0:0] = h  # (put it back for read_frame)
        _op, _fin, info = await c.read_frame()
        assert info.startswith(b"INFO ")
        cmd = b'CONNECT {"verbose":false,"protocol":1}\r\nSUB z 1\r\nPUB z 5\r\nhello\r\nPING\r\n'
        c.send(frame(2, deflate(cmd), rsv1=True))
        got = await c.read_data(b"PONG\r\n")
        assert b"MSG z 1 5\r\nhello\r\n" in got
        # a client that does not offer it gets plain frames
        p = await WSRaw.open(srv.ws_port)
        assert b"permessage-deflate" not in await p.read_response()
        h = await asyncio.wait_for(p.reader.readexactly(1), 3)
        assert not h[0] & 0x40
        c.close()
        p.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("name, req_kw, status", [
    ("post", {"method": "POST"}, b"HTTP/1.1 405 Method Not Allowed\r\n"),
    ("no upgrade", {"extra": ""}, None),  # built below
    ("key missing", {"key": None}, b"HTTP/1.1 400 Bad Request\r\n"),
    ("bad key", {"key": "abc"}, b"HTTP/1.1 400 Bad Request\r\n"),
    ("bad origin", {"extra": "Origin: http://evil.example\r\n"}, b"HTTP/1.1 403 Forbidden\r\n"),
    ("origin port", {"extra": "Origin: http://good.example:9000\r\n"}, b"HTTP/1.1 403 Forbidden\r\n"),
])
async def test_bad_handshakes(ws_server, name, req_kw, status):
    """Upgrades nats-server refuses, refused with its HTTP answers (and the
    connection left open for another request, as Go's HTTP server does)."""
    if name == "no upgrade":
        req = request(ws_server.ws_port).replace(b"Upgrade: websocket\r\n", b"")
        status = b"HTTP/1.1 400 Bad Request\r\n"
    else:
        req = request(ws_server.ws_port, **req_kw)
    c = await WSRaw.open(ws_server.ws_port, req=req)
    resp = await c.read_response()
    assert resp.startswith(status)
    assert b"Sec-Websocket-Version: 13\r\n" in resp and b"X-Content-Type-Options: nosniff\r\n" in resp
    text = status.split(b" ", 2)[2].strip()
    assert resp.endswith(b"\r\n\r\n" + text + b"\n")
    # the same connection can still upgrade
    c.send(request(ws_server.ws_port, extra="Origin: http://good.example:8000\r\n"))
    assert (await c.read_response()).startswith(b"HTTP/1.1 101 ")
    c.close()


async def test_http_level_errors(ws_server):
    """What Go's HTTP server itself answers, before nats-server sees it."""
    port = ws_server.ws_port
    c = await WSRaw.open(port, req=request(port, host=False))
    assert await asyncio.wait_for(c.reader.read(), 3) == (
        b"HTTP/1.1 400 Bad Request: missing required Host header\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Connection: close\r\n\r\n400 Bad Request: missing required Host header")
    c = await WSRaw.open(port, req=b"garbage\r\n\r\n")
    assert await asyncio.wait_for(c.reader.read(), 3) == (
        b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"
        b"400 Bad Request")
    # HTTP/1.0 without Host: nats-server's own check; then closed
    c = await WSRaw.open(port, req=request(port, host=False, version="HTTP/1.0"))
    resp = await c.read_response()
    assert resp.startswith(b"HTTP/1.0 400 Bad Request\r\n") and await c.eof()
    # a frame sent along with the upgrade request: closed without an answer
    c = await WSRaw.open(port, req=request(port) + frame(2, b"PING\r\n"))
    assert await asyncio.wait_for(c.reader.read(), 3) == b""


async def upgraded(srv) -> WSRaw:
    c = await WSRaw.open(srv.ws_port)
    assert (await c.read_response()).startswith(b"HTTP/1.1 101 ")
    assert (await c.read_frame())[2].startswith(b"INFO ")
    return c


async def test_frames(ws_server):
    """Fragmented messages, text frames, a PING cut across frames, ping/pong
    control frames, and a close frame echoed before the close."""
    c = await upgraded(ws_server)
    c.send(frame(1, b'CONNECT {"verbose":false,"protocol":1}\r\nSUB f 1\r\n'))
    c.send(frame(2, b"PUB f 3\r\nab", final=False) + frame(9, b"are you there") + frame(0, b"c\r\nPI", final=False)
           + frame(0, b"NG\r\n"))
    op, fin, payload = await c.read_frame()
    assert (op, fin, payload) == (10, True, b"are you there")
    got = await c.read_data(b"PONG\r\n")
    assert b"MSG f 1 3\r\nabc\r\nPONG\r\n" in got
    c.send(frame(8, (1000).to_bytes(2, "big") + b"bye"))
    assert await c.read_frame() == (8, True, (1000).to_bytes(2, "big") + b"bye")
    assert await c.eof()


FRAME_ERRORS = [
    (frame(2, b"PING\r\n", mask=False), b"mask bit missing"),
    (bytes((0x82 | 0x20, 0x80)) + b"\0\0\0\0", b"RSV2 and RSV3 must be clear"),
    (frame(2, b"PING\r\n", rsv1=True), b"compressed frame received without negotiated permessage-deflate"),
    (frame(0, b"PING\r\n"), b"invalid continuation frame"),
    (frame(9, b"x", final=False), b"control frame does not have final bit set"),
    (frame(5, b"x"), b"unknown opcode 5"),
    (frame(2, b"PUB a 1\r\n", final=False) + frame(2, b"x\r\n"),
     b"new message started before final frame for previous message was received"),
    (frame(8, b"\x03"), b"close frame payload cannot be 1 byte"),
    (frame(8, (1005).to_bytes(2, "big")), b"invalid close status code 1005"),
]


# ids from the expected text: the frames carry random masks, and pytest-xdist
# workers must collect the same test ids
@pytest.mark.parametrize("data, text", FRAME_ERRORS, ids=[t.decode() for _, t in FRAME_ERRORS])
async def test_frame_errors(ws_server, data, text):
    """A frame nats-server refuses: the connection is closed with a close
    frame saying 1002 and why. (nats-server's close races its write loop:
    the frame does not always get out before the socket closes.)"""
    c = await upgraded(ws_server)
    c.send(data)
    got, close = await c.until_closed()
    assert got == b"" and close in ((1002).to_bytes(2, "big") + text, None)


def closed_with(status: int, text: bytes):
    return ((status).to_bytes(2, "big") + text, None)


async def test_server_close_frames(ws_server):
    """When the server ends a websocket connection it says why: the -ERR,
    then a close frame with nats-server's status and close reason (both may
    be lost on nats-server, whose close races its writes)."""
    c = await upgraded(ws_server)
    c.send(frame(2, b'CONNECT {"verbose":false,"protocol":1}\r\nPUB big 99999999\r\n'))
    got, close = await c.until_closed()
    assert got in (b"-ERR 'Maximum Payload Violation'\r\n", b"")
    assert close in closed_with(1009, b"Maximum Message Payload Exceeded")
    c = await upgraded(ws_server)
    c.send(frame(2, b"BOGUS\r\n"))
    got, close = await c.until_closed()
    assert got in (b"-ERR 'Unknown Protocol Operation'\r\n", b"")
    assert close in closed_with(1001, b"Read Error")


async def test_auth_over_websocket(server_kind, tmp_path):
    """The server's authorization applies to websocket clients too."""
    srv = start(server_kind, tmp_path, "  no_tls: true\n", top="authorization { user: u, password: p }\n")
    try:
        c = await WSRaw.open(srv.ws_port)
        await c.read_response()
        info = json.loads((await c.read_frame())[2][5:])
        assert info["auth_required"] is True
        c.send(frame(2, b'CONNECT {"verbose":false,"user":"u","pass":"x"}\r\n'))
        got, close = await c.until_closed()
        assert got in (b"-ERR 'Authorization Violation'\r\n", b"")
        assert close in closed_with(1008, b"Authentication Failure")
        ok = await connect(srv.ws_url.replace("ws://", "ws://u:p@"))
        await ok.flush()
        await ok.close()
    finally:
        srv.stop()


async def test_wss_verify_and_map(server_kind, tmp_path):
    """A websocket tls {} block with verify_and_map: the client certificate
    names the user on the websocket port too."""
    pki = make_pki(tmp_path / "pki")
    srv = start(server_kind, tmp_path, f'  tls {{\n    cert_file: "{pki.server_cert}"\n'
                                        f'    key_file: "{pki.server_key}"\n    ca_file: "{pki.ca}"\n'
                                        '    verify_and_map: true\n  }\n',
                top='authorization { users = [ {user: "dana@example.com"}, {user: other, password: x} ] }\n')
    try:
        ws = await connect(f"wss://127.0.0.1:{srv.ws_port}",
                           tls=pki.client_context(pki.client("dana", email="dana@example.com")))
        await ws.flush()
        await ws.close()
        with pytest.raises(Exception) as ei:
            await connect(f"wss://127.0.0.1:{srv.ws_port}",
                          tls=pki.client_context(pki.client("erin", email="erin@example.com")))
        assert "authorization violation" in str(ei.value).lower()
    finally:
        srv.stop()


def _wss_refusal(port: int, ctx) -> str:
    """What a wss client without an acceptable certificate meets: the TLS
    alert's reason as OpenSSL names it, or EOF for a close without one
    (the HTTP upgrade is sent, as a browser would, right after the handshake)."""
    import socket
    import ssl

    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        try:
            with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
                t.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
                data = t.recv(4096)
                return "EOF" if not data else "data: " + data.decode(errors="replace")[:40]
        except ssl.SSLError as e:
            return getattr(e, "reason", None) or str(e)
        except (ConnectionError, OSError) as e:
            return f"EOF ({type(e).__name__})"


async def test_wss_verify_failure_sends_an_alert(server_kind, tmp_path):
    """websocket { tls { verify: true } }: a client without a certificate, or
    with one of another CA, gets the TLS alert nats-server (Go's crypto/tls)
    sends, not a bare close; one with a good certificate is served."""
    import asyncio

    pki = make_pki(tmp_path / "pki")
    srv = start(server_kind, tmp_path, f'  tls {{\n    cert_file: "{pki.server_cert}"\n'
                                        f'    key_file: "{pki.server_key}"\n    ca_file: "{pki.ca}"\n'
                                        '    verify: true\n  }\n')
    try:
        none = await asyncio.to_thread(_wss_refusal, srv.ws_port, pki.client_context(None))
        other = await asyncio.to_thread(_wss_refusal, srv.ws_port,
                                        pki.client_context(pki.client("mallory", signer="other")))
        assert (none, other) == ("TLSV13_ALERT_CERTIFICATE_REQUIRED", "TLSV1_ALERT_UNKNOWN_CA")
        ws = await connect(f"wss://127.0.0.1:{srv.ws_port}", tls=pki.client_context(pki.client("dana")))
        await ws.flush()
        await ws.close()
    finally:
        srv.stop()


async def test_upgrade_response_headers(server_kind, tmp_path):
    """websocket { headers {} }: each header is in the 101 response, after
    nats-server's own; a header nats-server reserves is its start-up error."""
    srv = start(server_kind, tmp_path, '  no_tls: true\n  headers {\n    X-Frame-Options: DENY\n'
                                       '    "Strict-Transport-Security": "max-age=10"\n  }\n')
    try:
        ws = await WSRaw.open(srv.ws_port)
        await ws.read_response()
        lines = ws.response.split(b"\r\n")
        assert lines[0] == b"HTTP/1.1 101 Switching Protocols"
        assert sorted(lines[-4:-2]) == [b"Strict-Transport-Security: max-age=10", b"X-Frame-Options: DENY"]
        ws.writer.close()
    finally:
        srv.stop()
    for name, want in (("Upgrade", 'websocket: invalid header "Upgrade" not allowed'),
                       ("Sec-WebSocket-Protocol", 'websocket: invalid header "Sec-WebSocket-Protocol", '
                                                  '"Sec-WebSocket-" prefix not allowed')):
        conf = tmp_path / "bad.conf"
        conf.write_text("port: -1\nwebsocket {\n  port: -1\n  no_tls: true\n  headers { %s: x }\n}\n" % name)
        r = subprocess.run(binary(server_kind) + ["-c", str(conf)], capture_output=True, text=True, timeout=20)
        assert r.returncode == 1 and want in r.stderr, r.stderr


async def test_websocket_ping_interval(server_kind, tmp_path):
    """websocket { ping_interval }: a websocket client is pinged at the
    block's interval (here well before the server's 2 m); a bad duration is
    nats-server's error."""
    srv = start(server_kind, tmp_path, '  no_tls: true\n  ping_interval: "200ms"\n')
    try:
        ws = await WSRaw.open(srv.ws_port)
        await ws.read_response()
        ws.send(frame(1, b'CONNECT {"verbose":false,"protocol":1}\r\n'))
        assert b"PING\r\n" in await ws.read_data(b"PING\r\n", timeout=10)
        ws.writer.close()
    finally:
        srv.stop()
    conf = tmp_path / "bad.conf"
    conf.write_text('port: -1\nwebsocket {\n  port: -1\n  no_tls: true\n  ping_interval: "often"\n}\n')
    r = subprocess.run(binary(server_kind) + ["-c", str(conf)], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and 'error parsing ping_interval: time: invalid duration "often"' in r.stderr, r.stderr


async def test_websocket_no_auth_user(server_kind, tmp_path):
    """websocket { no_auth_user }: a websocket client without credentials is
    that user (INFO on the websocket port says auth_required, as nats-server's
    auth override does), while a TCP client without them is refused; the
    user must exist (nats-server's error)."""
    from test_jwt import _errors

    top = "authorization { users: [ {user: a, password: a}, {user: wsuser, password: w} ] }\n"
    srv = start(server_kind, tmp_path, "  no_tls: true\n  no_auth_user: wsuser\n", top=top)
    try:
        ws = await connect(srv.ws_url)
        assert ws._server_info["auth_required"] is True
        info = json.loads((await ws.request("$SYS.REQ.USER.INFO", b"", timeout=3)).data)
        assert info["data"]["user"] == "wsuser"
        await ws.close()
        err, errs = await _errors(srv.url)
        assert err is not None and "authorization violation" in (err + " ".join(map(str, errs))).lower()
        tcp = await connect(srv.url, user="a", password="a")
        await tcp.close()
    finally:
        srv.stop()
    conf = tmp_path / "bad.conf"
    conf.write_text(top + "websocket {\n  port: -1\n  no_tls: true\n  no_auth_user: nobody\n}\n")
    r = subprocess.run(binary(server_kind) + ["-c", str(conf)], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and 'no_auth_user: "nobody" not present as user or nkey' in r.stderr, r.stderr


def test_websocket_pinned_certs_are_refused(server_kind, tmp_path):
    """websocket { tls { pinned_certs } }: natslab checks pinned certificates
    on the client port only, so on the websocket port it refuses the key
    rather than ignoring it; nats-server starts with the same file."""
    pki = make_pki(tmp_path / "pki")
    conf = tmp_path / "c.conf"
    conf.write_text(f'port: -1\nwebsocket {{\n  port: -1\n  tls {{ cert_file: "{pki.server_cert}", key_file: '
                    f'"{pki.server_key}", pinned_certs: ["{"a" * 64}"] }}\n}}\n')
    r = subprocess.run(binary(server_kind) + ["-c", str(conf), "-t"], capture_output=True, text=True, timeout=20)
    if server_kind == "natslab":
        assert r.returncode == 1 and '"websocket.tls.pinned_certs" is not supported by natslab' in r.stderr
    else:
        assert r.returncode == 0, r.stderr


async def _ws_login(srv, connect_json: bytes, extra: str = "") -> tuple[dict, bytes]:
    """A raw websocket client's INFO, and what its CONNECT (then a PING) gets
    back: PONG, or the -ERR it is closed with."""
    c = await WSRaw.open(srv.ws_port, request(srv.ws_port, extra))
    try:
        assert (await c.read_response()).startswith(b"HTTP/1.1 101 ")
        info = json.loads((await c.read_frame())[2][5:])
        c.send(frame(2, b"CONNECT " + connect_json + b"\r\nPING\r\n"))
        return info, await c.read_data(b"\r\n")
    finally:
        c.close()


async def test_websocket_authorization_user(server_kind, tmp_path):
    """websocket { authorization { user, password } } (nats-server's auth
    override): websocket clients log in with that user instead of the
    server's; TCP clients keep the server's (here none, so they need
    nothing); INFO on the websocket port says auth_required."""
    srv = start(server_kind, tmp_path, "  no_tls: true\n  authorization { user: wsu, password: wsp, timeout: 2 }\n")
    try:
        info, got = await _ws_login(srv, b'{"verbose":false,"user":"wsu","pass":"wsp"}')
        assert info.get("auth_required") is True and got == b"PONG\r\n"
        for bad in (b'{"verbose":false,"user":"wsu","pass":"nope"}', b'{"verbose":false}'):
            _, got = await _ws_login(srv, bad)
            assert got == b"-ERR 'Authorization Violation'\r\n", bad
        ok = await connect(srv.ws_url.replace("ws://", "ws://wsu:wsp@"))
        await ok.flush()
        await ok.close()
        tcp = await connect(srv.url)  # (the client port asks for nothing)
        assert not tcp._server_info.get("auth_required")
        await tcp.close()
    finally:
        srv.stop()


async def test_websocket_authorization_token_overrides_the_servers(server_kind, tmp_path):
    """A websocket token in place of the server's user/password: websocket
    clients need the token (the server's user does not log in there), TCP
    clients the server's user."""
    srv = start(server_kind, tmp_path, "  no_tls: true\n  authorization { token: wstok }\n",
                top="authorization { user: u, password: p }\n")
    try:
        _, got = await _ws_login(srv, b'{"verbose":false,"auth_token":"wstok"}')
        assert got == b"PONG\r\n"
        _, got = await _ws_login(srv, b'{"verbose":false,"user":"u","pass":"p"}')
        assert got == b"-ERR 'Authorization Violation'\r\n"
        tcp = await connect(srv.url, user="u", password="p")
        await tcp.close()
    finally:
        srv.stop()


async def test_websocket_authorization_timeout(server_kind, tmp_path):
    """The websocket block's authorization timeout: a websocket client that
    sends no CONNECT is closed with nats-server's 'Authentication Timeout'."""
    srv = start(server_kind, tmp_path, "  no_tls: true\n  authorization { user: a, password: b, timeout: 0.5 }\n",
                top="authorization { timeout: 30 }\n")
    try:
        c = await WSRaw.open(srv.ws_port)
        assert (await c.read_response()).startswith(b"HTTP/1.1 101 ")
        await c.read_frame()
        got, close = await c.until_closed(timeout=10)
        assert got == b"-ERR 'Authentication Timeout'\r\n"
        c.close()
    finally:
        srv.stop()


async def test_websocket_credentials_from_cookies(server_kind, tmp_path):
    """user_cookie / pass_cookie / token_cookie: the upgrade request's cookies
    stand in for what CONNECT leaves out."""
    srv = start(server_kind, tmp_path, "  no_tls: true\n  user_cookie: u\n  pass_cookie: pw\n",
                top="authorization { users: [ {user: alice, password: s3cret} ] }\n")
    try:
        _, got = await _ws_login(srv, b'{"verbose":false}', "Cookie: u=alice; other=1; pw=s3cret\r\n")
        assert got == b"PONG\r\n"
        _, got = await _ws_login(srv, b'{"verbose":false}', "Cookie: u=alice; pw=wrong\r\n")
        assert got == b"-ERR 'Authorization Violation'\r\n"
        _, got = await _ws_login(srv, b'{"verbose":false,"pass":"s3cret"}', "Cookie: u=alice; pw=wrong\r\n")
        assert got == b"PONG\r\n"  # (CONNECT's own password wins over the cookie)
    finally:
        srv.stop()
    token = start(server_kind, tmp_path / "t", "  no_tls: true\n  token_cookie: tk\n", top="authorization { token: abc }\n")
    try:
        _, got = await _ws_login(token, b'{"verbose":false}', "Cookie: tk=abc\r\n")
        assert got == b"PONG\r\n"
    finally:
        token.stop()


@pytest.mark.parametrize("block, top, want", [
    ("  authorization { user: x, password: y }\n", "authorization { users: [{user: a, password: b}] }\n",
     "websocket authentication username not compatible with presence of users/nkeys"),
    ("  authorization { token: t }\n", "accounts { A { users: [{user: a, password: b}] } }\n",
     "websocket authentication token not compatible with presence of users/nkeys"),
    ("  jwt_cookie: jc\n", "", 'trusted operators or trusted keys configuration is required for JWT authentication '
                               'via cookie "jc"'),
    ("  authorization { user: a, bogus: 1 }\n", "", 'ws.conf:4:28: unknown field "bogus"'),
])
def test_websocket_authorization_refused(server_kind, tmp_path, block, top, want):
    conf = tmp_path / "ws.conf"
    conf.write_text(top + "websocket {\n  port: -1\n  no_tls: true\n" + block + "}\n")
    r = subprocess.run(binary(server_kind) + ["-c", conf.name], capture_output=True, text=True, timeout=20,
                       cwd=tmp_path)
    assert r.returncode == 1 and want in r.stderr, r.stderr
