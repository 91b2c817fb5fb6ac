"""TLS on the client port, on both servers: the --tls* flags and the tls {}
block, INFO's tls_required/tls_verify, the upgrade after INFO and the
handshake-first mode, client certificates (verify) and users mapped from
them (verify_and_map), and what a plain client gets on a TLS port. The
certificates are made for each test (tests/pki.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import subprocess
import sys

import nats
import pytest

from conftest import ServerProcess, connect, eventually
from pki import make_pki
from test_cli import refusal
from test_cli import binary


class TLSServer(ServerProcess):
    """A broker whose port speaks TLS first (handshake_first): ready once a
    handshake brings INFO."""

    ctx: ssl.SSLContext | None = None

    def ready(self, sock: socket.socket) -> bool:
        if self.ctx is None:
            return super().ready(sock)
        with self.ctx.wrap_socket(sock, server_hostname="127.0.0.1") as t:
            return t.recv(5) == b"INFO "


@pytest.fixture
def pki(tmp_path):
    return make_pki(tmp_path / "pki")


def start(kind, tmp_path, *, flags=None, conf=None, ready_ctx=None) -> TLSServer:
    extra = list(flags or [])
    if conf is not None:
        path = tmp_path / "tls.conf"
        path.write_text(conf)
        extra += ["-c", str(path)]
    srv = TLSServer(kind, tmp_path / "store", extra=extra)
    srv.ctx = ready_ctx
    srv.start()
    return srv


@pytest.fixture
def servers():
    started: list[ServerProcess] = []
    yield started
    for s in started:
        s.stop()


async def roundtrip(nc, subject="tls.echo") -> None:
    sub = await nc.subscribe(subject)
    await nc.flush()
    await nc.publish(subject, b"over tls")
    msg = await sub.next_msg(timeout=2)
    assert msg.data == b"over tls"
    await sub.unsubscribe()


async def plain_info(srv) -> dict:
    r, w = await asyncio.open_connection(srv.host, srv.port)
    line = await asyncio.wait_for(r.readline(), 3)
    w.close()
    assert line.startswith(b"INFO ") and line.endswith(b" \r\n")
    return json.loads(line[5:])


async def test_tls_flags(server_kind, tmp_path, pki, servers):
    """--tls --tlscert --tlskey: INFO says tls_required (not tls_verify) in
    plain text, then nats-py upgrades and works as usual."""
    srv = start(server_kind, tmp_path, flags=["--tls", "--tlscert", str(pki.server_cert),
                                               "--tlskey", str(pki.server_key)])
    servers.append(srv)
    info = await plain_info(srv)
    assert info["tls_required"] is True and "tls_verify" not in info
    nc = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context())
    await roundtrip(nc)
    assert nc.connected_url.scheme == "tls"
    await nc.close()


async def test_plain_client_on_tls_port_is_closed(server_kind, tmp_path, pki, servers):
    """A client that goes on in plain text after INFO is closed without a
    word, as nats-server closes it; one that says nothing is closed when the
    handshake times out; the TLS clients next to them are not disturbed."""
    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n'
            f'  timeout: 0.5\n}}\n')
    srv = start(server_kind, tmp_path, conf=conf)
    servers.append(srv)
    keeper = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context())
    for send in (b'CONNECT {"verbose":false}\r\nPING\r\n', b""):
        r, w = await asyncio.open_connection(srv.host, srv.port)
        assert (await asyncio.wait_for(r.readline(), 3)).startswith(b"INFO ")
        if send:
            w.write(send)
        assert await asyncio.wait_for(r.read(), 3) == b""  # closed, no -ERR
        w.close()
    # nats-py without a TLS context: it upgrades anyway (tls_required), with
    # the system CAs, which do not know this server's certificate
    with pytest.raises(ssl.SSLCertVerificationError):
        await connect(f"nats://127.0.0.1:{srv.port}")
    await roundtrip(keeper)
    await keeper.close()


async def test_tls_client_on_plain_port(server):
    """A TLS ClientHello sent to a plain port gets the parser's error and is
    closed. (nats-server closes with the rest of the hello unread, so the
    kernel may reset the connection before the -ERR is read; natslab's
    parser judges a line at its end, hence the CRLF after the hello.)"""
    ctx = ssl.create_default_context()
    r, w = await asyncio.open_connection(server.host, server.port)
    assert (await asyncio.wait_for(r.readline(), 3)).startswith(b"INFO ")
    hello = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(hello[0], hello[1], server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    w.write(hello[1].read() + b"\r\n")
    got, reset = b"", False
    try:
        while chunk := await asyncio.wait_for(r.read(4096), 3):
            got += chunk
    except ConnectionResetError:
        reset = True
    assert got == b"-ERR 'Unknown Protocol Operation'\r\n" or (reset and got in b"-ERR 'Unknown Protocol Operation'\r\n")
    w.close()


async def test_verify_client_certificates(server_kind, tmp_path, pki, servers):
    """verify: INFO says tls_verify; a certificate from the CA connects, none
    or one from another CA is refused in the handshake."""
    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n'
            f'  ca_file: "{pki.ca}"\n  verify: true\n}}\n')
    srv = start(server_kind, tmp_path, conf=conf)
    servers.append(srv)
    info = await plain_info(srv)
    assert info["tls_required"] is True and info["tls_verify"] is True
    nc = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context(pki.client("carol")))
    await roundtrip(nc)
    for cert in (None, pki.client("mallory", signer="other")):
        with pytest.raises((ssl.SSLError, ConnectionError, asyncio.TimeoutError, OSError)):
            bad = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context(cert))
            # TLS 1.3: the client may finish before the server refuses
            await bad.flush(timeout=2)
    await roundtrip(nc)
    await nc.close()


async def test_tlsverify_flags(server_kind, tmp_path, pki, servers):
    """The flags nats.py's own TLS tests start nats-server with."""
    srv = start(server_kind, tmp_path, flags=[
        "--tls", "--tlscert", str(pki.server_cert), "--tlskey", str(pki.server_key),
        "--tlsverify", "--tlscacert", str(pki.ca)])
    servers.append(srv)
    assert (await plain_info(srv))["tls_verify"] is True
    nc = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context(pki.client("dave")))
    await roundtrip(nc)
    await nc.close()


async def test_handshake_first(server_kind, tmp_path, pki, servers):
    """handshake_first: no plain INFO; the handshake comes first and INFO
    follows over TLS. A client that waits for INFO gets nothing."""
    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n'
            f'  handshake_first: true\n  timeout: 1\n}}\n')
    srv = start(server_kind, tmp_path, conf=conf, ready_ctx=pki.client_context())
    servers.append(srv)
    nc = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context(), tls_handshake_first=True)
    assert nc._server_info["tls_required"] is True
    await roundtrip(nc)
    r, w = await asyncio.open_connection(srv.host, srv.port)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(r.readline(), 0.5)  # no plain INFO
    assert await asyncio.wait_for(r.read(), 3) == b""  # then the handshake times out
    w.close()
    with pytest.raises(Exception):
        await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context(), connect_timeout=1.5)
    await nc.close()


async def test_verify_and_map(server_kind, tmp_path, pki, servers):
    """verify_and_map: the certificate names the user (e-mail SAN, DNS SAN,
    then the subject DN); the user's permissions apply; a certificate that
    names nobody gets 'Authorization Violation'."""
    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n'
            f'  ca_file: "{pki.ca}"\n  verify_and_map: true\n}}\n'
            'authorization {\n  users = [\n'
            '    {user: "alice@example.com", permissions: {publish: "alice.>", subscribe: ["alice.>", "_INBOX.>"]}}\n'
            '    {user: "svc.example.com"}\n'
            '    {user: "CN=bob,O=natslab"}\n'
            '  ]\n}\n')
    srv = start(server_kind, tmp_path, conf=conf)
    servers.append(srv)
    info = await plain_info(srv)
    assert info["auth_required"] is True and info["tls_verify"] is True
    url = f"tls://127.0.0.1:{srv.port}"
    alice = await connect(url, tls=pki.client_context(pki.client("alice", email="alice@example.com")))
    await roundtrip(alice, "alice.x")
    errors = []

    async def on_error(e):
        errors.append(str(e))

    alice2 = await connect(url, tls=pki.client_context(pki.client("alice", email="alice@example.com")),
                           error_cb=on_error)
    await alice2.publish("bob.x", b"denied")
    await alice2.flush()
    assert await eventually(lambda: any("permissions violation for publish" in e.lower() for e in errors))
    svc = await connect(url, tls=pki.client_context(pki.client("svc", dns="svc.example.com")))
    await roundtrip(svc)
    bob = await connect(url, tls=pki.client_context(pki.client("bob", org="natslab")))
    await roundtrip(bob)
    with pytest.raises(Exception) as ei:
        await connect(url, tls=pki.client_context(pki.client("eve", org="natslab")))
    assert "authorization violation" in str(ei.value).lower()
    for nc in (alice, alice2, svc, bob):
        await nc.close()


def test_bad_tls_config_stops_the_server(tmp_path, pki):
    """A certificate that does not load, or --tls without a key, stops the
    start with nats-server's words."""
    import subprocess
    import sys

    from conftest import nats_server_binary

    missing = tmp_path / "nope.pem"
    conf = tmp_path / "bad.conf"
    conf.write_text(f'tls {{\n  cert_file: "{missing}"\n  key_file: "{pki.server_key}"\n}}\n')
    for cmd in ([sys.executable, "-m", "natslab.server"], [nats_server_binary()]):
        r = subprocess.run(cmd + ["-p", "-1", "-c", str(conf)], capture_output=True, text=True, timeout=20)
        assert r.returncode != 0
        assert "error parsing X509 certificate/key pair" in r.stdout + r.stderr
        r = subprocess.run(cmd + ["-p", "-1", "--tls", "--tlscert", str(pki.server_cert)],
                           capture_output=True, text=True, timeout=20)
        assert r.returncode != 0
        assert "TLS Server private key must be present and valid" in r.stdout + r.stderr


async def test_connz_shows_tls(server_kind, tmp_path, pki, servers):
    """/connz tells the TLS version and suite of each connection (and
    tls_first for handshake_first), and the account and user with auth=1."""
    import urllib.request

    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n}}\n'
            'accounts {\n  APP { users = [ {user: app, password: app} ] }\n}\n')
    path = tmp_path / "tls.conf"
    path.write_text(conf)
    srv = TLSServer(server_kind, tmp_path / "store", http=True, extra=["-c", str(path)])
    srv.start()
    servers.append(srv)
    nc = await connect(f"tls://app:app@127.0.0.1:{srv.port}", tls=pki.client_context())
    await nc.flush()
    body = await asyncio.to_thread(lambda: urllib.request.urlopen(
        f"http://127.0.0.1:{srv.http_port}/connz?auth=1", timeout=5).read())
    conns = json.loads(body)["connections"]
    assert len(conns) == 1
    c = conns[0]
    assert c["type"] == "nats" and c["tls_version"] == "1.3" and c["tls_cipher_suite"].startswith("TLS_AES_")
    assert "tls_first" not in c
    assert c["authorized_user"] == "app" and c["account"] == "APP" and c["name_tag"] == "APP"
    await nc.close()


async def test_handshake_first_auto(server_kind, tmp_path, pki, servers):
    """handshake_first: auto: a TLS-first client and one that waits for INFO
    (which comes in plain text after the fallback delay, then TLS) are both
    served on the same port; /connz tells which came first."""
    import urllib.request

    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n'
            f'  handshake_first: auto\n}}\n')
    path = tmp_path / "tls.conf"
    path.write_text(conf)
    srv = TLSServer(server_kind, tmp_path / "store", http=True, extra=["-c", str(path)])
    srv.start()
    servers.append(srv)
    first = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context(), tls_handshake_first=True,
                          name="first")
    later = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context(), name="later")
    assert later._server_info["tls_required"] is True
    await roundtrip(first)
    await roundtrip(later)
    body = await asyncio.to_thread(lambda: urllib.request.urlopen(
        f"http://127.0.0.1:{srv.http_port}/connz", timeout=5).read())
    conns = {c["name"]: c for c in json.loads(body)["connections"]}
    assert conns["first"].get("tls_first") is True and "tls_first" not in conns["later"]
    assert conns["later"]["tls_version"] == "1.3"
    await first.close()
    await later.close()


def _refusal(port: int, ctx: ssl.SSLContext) -> str:
    """What a client without an acceptable certificate meets: the TLS
    alert's reason as OpenSSL names it (or EOF for a close without one),
    whether the handshake or the first read after it fails (TLS 1.3 lets
    the client finish before the server has checked its certificate)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        f = s.makefile("rb")
        assert f.readline().startswith(b"INFO ")
        try:
            with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
                t.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
                data = t.recv(4096)
                return "EOF" if not data else "data: " + data.decode(errors="replace")
        except ssl.SSLError as e:
            return getattr(e, "reason", None) or str(e)
        except (ConnectionError, OSError) as e:
            return f"EOF ({type(e).__name__})"


async def test_verify_failure_sends_an_alert(server_kind, tmp_path, pki, servers):
    """verify: a client without a certificate, or with one of another CA,
    gets the TLS alert nats-server (Go's crypto/tls) sends, not a bare close."""
    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n'
            f'  ca_file: "{pki.ca}"\n  verify: true\n}}\n')
    srv = start(server_kind, tmp_path, conf=conf)
    servers.append(srv)
    none = await asyncio.to_thread(_refusal, srv.port, pki.client_context(None))
    other = await asyncio.to_thread(_refusal, srv.port, pki.client_context(pki.client("mallory", signer="other")))
    assert (none, other) == ("TLSV13_ALERT_CERTIFICATE_REQUIRED", "TLSV1_ALERT_UNKNOWN_CA")


async def test_allow_non_tls(server_kind, tmp_path, pki, servers):
    """allow_non_tls: INFO offers TLS (tls_available, no tls_required) and
    the client chooses: a TLS client upgrades, a plain one goes on in plain
    text, on the same port at the same time, and they reach each other."""
    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n}}\n'
            "allow_non_tls: true\n")
    srv = start(server_kind, tmp_path, conf=conf)
    servers.append(srv)
    info = await plain_info(srv)
    assert info.get("tls_available") is True and "tls_required" not in info
    secure = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context())
    plain = await connect(f"nats://127.0.0.1:{srv.port}")
    await roundtrip(secure)
    await roundtrip(plain)
    sub = await plain.subscribe("mixed")
    await plain.flush()
    await secure.publish("mixed", b"from tls")
    assert (await sub.next_msg(timeout=2)).data == b"from tls"
    r, w = await asyncio.open_connection(srv.host, srv.port)  # raw plain text too
    assert (await asyncio.wait_for(r.readline(), 3)).startswith(b"INFO ")
    w.write(b'CONNECT {"verbose":false}\r\nPING\r\n')
    assert await asyncio.wait_for(r.readline(), 3) == b"PONG\r\n"
    w.close()

    def tls_after_info() -> bytes:  # the upgrade itself, on a raw socket: PONG over TLS
        with socket.create_connection((srv.host, srv.port), timeout=3) as s:
            f = s.makefile("rb")
            assert f.readline().startswith(b"INFO ")
            with pki.client_context().wrap_socket(s, server_hostname="127.0.0.1") as t:
                t.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
                return t.recv(6)

    assert await asyncio.get_running_loop().run_in_executor(None, tls_after_info) == b"PONG\r\n"
    await secure.close()
    await plain.close()


@pytest.mark.parametrize("key", ["https", "https_port"])
async def test_https_monitor(server_kind, tmp_path, pki, servers, key):
    """https (host:port) or https_port: the monitoring endpoint over TLS with
    the tls {} block's certificate (no client certificate asked for, even
    with verify); /varz names it https_port."""
    import urllib.request

    from conftest import free_port

    port = free_port()
    value = f"127.0.0.1:{port}" if key == "https" else str(port)
    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n  ca_file: "{pki.ca}"\n'
            f"  verify: true\n}}\n{key}: {value}\n")
    srv = start(server_kind, tmp_path, conf=conf)
    servers.append(srv)

    def varz() -> dict:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/varz", context=pki.client_context(), timeout=5) as r:
            return json.loads(r.read())

    v = await asyncio.get_running_loop().run_in_executor(None, varz)
    assert (v["https_port"], v["http_port"]) == (port, 0)


async def test_cipher_suites_and_curve_preferences(server_kind, tmp_path, pki, servers):
    """cipher_suites (Go's names) limit the TLS 1.2 suites: a TLS 1.2 client
    with a listed suite connects, one with only another is refused;
    curve_preferences are taken (Go's names)."""
    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n'
            "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256]\n"
            "  curve_preferences: [CurveP256, X25519]\n}\n")
    srv = start(server_kind, tmp_path, conf=conf)
    servers.append(srv)

    def handshake(cipher: str) -> str:
        ctx = pki.client_context()
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(cipher)
        with socket.create_connection((srv.host, srv.port), timeout=3) as s:
            assert s.makefile("rb").readline().startswith(b"INFO ")
            with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
                return t.cipher()[0]

    run = asyncio.get_running_loop().run_in_executor
    assert await run(None, handshake, "ECDHE-ECDSA-AES128-GCM-SHA256") == "ECDHE-ECDSA-AES128-GCM-SHA256"
    with pytest.raises(ssl.SSLError):
        await run(None, handshake, "ECDHE-ECDSA-AES256-GCM-SHA384")
    nc = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context())  # TLS 1.3
    await roundtrip(nc)
    await nc.close()


@pytest.mark.parametrize("line, want", [
    ("cipher_suites: [BAD_CIPHER_SPEC]", "c.conf:5:19: unrecognized cipher BAD_CIPHER_SPEC"),
    ("cipher_suites: []", "c.conf:5:3: error parsing tls config, 'cipher_suites' cannot be empty"),
    ("curve_preferences: [CurveP256, GARBAGE]", "c.conf:5:34: unrecognized curve preference GARBAGE"),
    # (a check after the block's keys: at the block's own key)
    ("cipher_suites: [TLS_RSA_WITH_AES_128_CBC_SHA]",
     "c.conf:2:1: insecure cipher suites configured without 'allow_insecure_cipher_suites' option set: "
     "TLS_RSA_WITH_AES_128_CBC_SHA"),
])
def test_bad_cipher_and_curve_settings(server_kind, tmp_path, pki, line, want):
    """nats-server's refusals, in its words and at its places (an element
    of a list at the element)."""
    conf = tmp_path / "c.conf"
    conf.write_text(f'port: -1\ntls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n'
                    f"  {line}\n}}\n")
    cmd = [sys.executable, "-m", "natslab.server"] if server_kind == "natslab" else ["nats-server"]
    r = subprocess.run(cmd + ["-c", conf.name], capture_output=True, text=True, timeout=10, cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.rstrip().endswith(": " + want), r.stderr


async def test_rsa_1024_key(server_kind, tmp_path, pki, servers):
    """A certificate with an RSA key of 1024 bits (Go's floor; nats-server's
    server/configs/tls/tls-rsa-1024.conf) starts and serves TLS (the client
    here lowers its own OpenSSL security level to accept it)."""
    cert, key = pki.server("localhost", rsa_bits=1024)
    srv = start(server_kind, tmp_path, conf=f'tls {{ cert_file: "{cert}"\n key_file: "{key}"\n timeout: "5s" }}\n')
    servers.append(srv)
    ctx = pki.client_context()
    ctx.set_ciphers("DEFAULT:@SECLEVEL=1")
    nc = await connect(f"tls://127.0.0.1:{srv.port}", tls=ctx)
    await roundtrip(nc)
    await nc.close()


def _served_cert_cn(port: int, ctx: ssl.SSLContext, sni: str | None) -> str:
    """The CN of the certificate the server shows a client asking for ``sni``
    (plain INFO first, then the upgrade)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        f = sock.makefile("rb")
        assert f.readline().startswith(b"INFO ")
        with ctx.wrap_socket(sock, server_hostname=sni) as t:
            subject = dict(x[0] for x in t.getpeercert()["subject"])
            return subject["commonName"]


async def test_certs_chosen_by_sni(server_kind, tmp_path, pki, servers):
    """tls { certs [...] }: several certificates, the one whose names match
    the client's SNI is served, else the first (nats-server's
    server/configs/reload/tls_multi_cert_*.conf)."""
    alpha, beta = pki.server("alpha.test"), pki.server("beta.test")
    conf = ("tls {\n  certs = [\n" + "".join(f'    {{ cert_file: "{c}", key_file: "{k}" }}\n' for c, k in (alpha, beta))
            + "  ]\n  timeout: 2\n}\n")
    srv = start(server_kind, tmp_path, conf=conf)
    servers.append(srv)
    ctx = pki.client_context()
    ctx.check_hostname = False  # (the CA still verifies; the name is checked here, by CN)
    assert _served_cert_cn(srv.port, ctx, "beta.test") == "beta.test"
    assert _served_cert_cn(srv.port, ctx, "alpha.test") == "alpha.test"
    assert _served_cert_cn(srv.port, ctx, "gamma.test") == "alpha.test"
    assert _served_cert_cn(srv.port, ctx, None) == "alpha.test"
    nc = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context(), tls_hostname="beta.test")
    await roundtrip(nc)
    await nc.close()


@pytest.mark.parametrize("block, want", [
    ("certs: 1", "error parsing certificates config: unsupported type map[string]interface {}"),
    ('certs: [ { cert_file: "a.pem" } ]', "error parsing certificates config: both 'cert_file' and 'cert_key' "
                                         "options are required"),
    ('certs: [ { cert_file: "a.pem", key_file: "b.pem", ca: "c" } ]', 'error parsing tls certs config, unknown '
                                                                      'field "ca"'),
])
def test_bad_certs_blocks(server_kind, tmp_path, block, want):
    conf = tmp_path / "c.conf"
    conf.write_text("port: -1\ntls {\n  " + block + "\n}\n")
    r = subprocess.run(binary(server_kind) + ["-c", str(conf), "-t"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1
    assert want in r.stderr, r.stderr


def _spki_sha256(cert_path) -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    import hashlib

    c = x509.load_pem_x509_certificate(cert_path.read_bytes())
    return hashlib.sha256(c.public_key().public_bytes(serialization.Encoding.DER,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)).hexdigest()


async def test_pinned_certs(server_kind, tmp_path, pki, servers):
    """tls { pinned_certs }: only a client certificate whose public key's
    sha256 is listed gets in (another from the same CA is cut once the
    handshake is done); a bad entry is nats-server's config error."""
    carol, dave = pki.client("carol"), pki.client("dave")
    conf = (f'tls {{\n  cert_file: "{pki.server_cert}"\n  key_file: "{pki.server_key}"\n'
            f'  ca_file: "{pki.ca}"\n  verify: true\n  pinned_certs: ["{_spki_sha256(carol[0]).upper()}"]\n}}\n')
    srv = start(server_kind, tmp_path, conf=conf)
    servers.append(srv)
    nc = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context(carol))
    await roundtrip(nc)
    with pytest.raises((ssl.SSLError, ConnectionError, asyncio.TimeoutError, OSError, nats.errors.Error)):
        bad = await connect(f"tls://127.0.0.1:{srv.port}", tls=pki.client_context(dave))
        await bad.flush(timeout=2)
    await roundtrip(nc)
    await nc.close()
    (tmp_path / "bad.conf").write_text(f'port: -1\ntls {{\n  cert_file: "{pki.server_cert}"\n  key_file: '
                                       f'"{pki.server_key}"\n  pinned_certs: ["abc"]\n}}\n')
    status, lines = refusal(server_kind, tmp_path / "bad.conf")
    assert status == 1 and [ln.split(": ", 1)[1] for ln in lines] == [
        "error parsing tls config, 'pinned_certs' key abc does not look like hex-encoded sha256 of DER encoded "
        "SubjectPublicKeyInfo"], lines
