"""Token and user/password authorization, from flags and from a config file,
on both servers: the right credentials connect, wrong or missing ones get
nats-server's 'Authorization Violation' and are cut off, and nobody else
notices."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import RawClient, ServerProcess, connect

CONF = {
    "conf-user": "authorization {\n  user: alice\n  password: \"s3cret!\"\n}\n",
    "conf-token": "authorization {\n  token: tok-123\n}\n",
    "conf-users": "authorization {\n  users = [\n    {user: a, password: pa}\n    {user: bob, password: pb}\n  ]\n}\n",
}
# mode -> (extra flags or config text, good credentials, bad credentials) as nats.connect kwargs
MODES = {
    "flags-user": (["--user", "u", "--pass", "p"], {"user": "u", "password": "p"}, {"user": "u", "password": "x"}),
    "flags-token": (["--auth", "tok"], {"token": "tok"}, {"token": "tik"}),
    "conf-user": (CONF["conf-user"], {"user": "alice", "password": "s3cret!"}, {"user": "alice", "password": "s3cret"}),
    "conf-token": (CONF["conf-token"], {"token": "tok-123"}, {"token": "tok-1234"}),
    "conf-users": (CONF["conf-users"], {"user": "bob", "password": "pb"}, {"user": "bob", "password": "pa"}),
}


def _start(kind: str, tmp_path, spec) -> ServerProcess:
    if isinstance(spec, str):
        conf = tmp_path / "auth.conf"
        conf.write_text(spec)
        extra = ["-c", str(conf)]
    else:
        extra = list(spec)
    srv = ServerProcess(kind, tmp_path / "store", extra=extra)
    srv.start()
    return srv


@pytest.fixture(params=list(MODES))
def auth_server(request, server_kind, tmp_path):
    spec, good, bad = MODES[request.param]
    srv = _start(server_kind, tmp_path, spec)
    yield srv, good, bad
    srv.stop()


def _connect_json(creds: dict) -> str:
    d = {"verbose": False, "pedantic": False, "headers": True, "protocol": 1}
    if "token" in creds:
        d["auth_token"] = creds["token"]
    if "user" in creds:
        d["user"], d["pass"] = creds["user"], creds["password"]
    return json.dumps(d)


async def _roundtrip(nc) -> None:
    sub = await nc.subscribe("auth.echo")
    await nc.publish("auth.echo", b"hi")
    msg = await sub.next_msg(timeout=2)
    assert msg.data == b"hi"
    await sub.unsubscribe()


async def test_credentials(auth_server):
    """Right credentials connect; wrong and missing ones get 'Authorization
    Violation' and are closed, while an honest client stays served."""
    srv, good, bad = auth_server
    raw = await RawClient.open(srv, connect=None)
    assert json.loads(raw.info[5:])["auth_required"] is True
    raw.close()
    keeper = await connect(srv.url, **good)
    await _roundtrip(keeper)

    for creds in (bad, {}):
        raw = await RawClient.open(srv, connect=None)
        await raw.send(f"CONNECT {_connect_json(creds)}\r\nPING\r\n")
        assert await raw.readline() == "-ERR 'Authorization Violation'"
        assert await raw.closed()
        raw.close()

        with pytest.raises(Exception) as ei:
            await connect(srv.url, **creds)
        assert "authorization violation" in str(ei.value).lower()

    await _roundtrip(keeper)
    assert keeper.is_connected
    await keeper.close()


async def test_ops_before_connect_are_refused(server_kind, tmp_path):
    srv = _start(server_kind, tmp_path, ["--auth", "tok"])
    try:
        raw = await RawClient.open(srv, connect=None)
        await raw.send("SUB foo 1\r\n")
        assert await raw.readline() == "-ERR 'Authorization Violation'"
        assert await raw.closed()
        raw.close()
    finally:
        srv.stop()


async def test_auth_timeout(server_kind, tmp_path):
    conf = "authorization {\n  token: t\n  timeout: 0.5\n}\n"
    srv = _start(server_kind, tmp_path, conf)
    try:
        raw = await RawClient.open(srv, connect=None)
        line = await raw.readline(timeout=3)
        assert line == "-ERR 'Authentication Timeout'"
        assert await raw.closed()
        raw.close()
    finally:
        srv.stop()


async def test_no_auth_server_ignores_credentials(server):
    """Credentials sent to a server without authorization are ignored."""
    nc = await connect(server.url, user="who", password="ever")
    await _roundtrip(nc)
    await nc.close()


async def test_user_permissions(server_kind, tmp_path):
    """A config user's publish/subscribe permissions: a denied PUB or SUB gets
    'Permissions Violation' and the connection stays up."""
    conf = ("authorization {\n  users = [\n    {user: limited, password: pw, permissions: "
            '{publish: "allowed.>", subscribe: ["allowed.>", "_INBOX.>"]}}\n  ]\n}\n')
    srv = _start(server_kind, tmp_path, conf)
    try:
        raw = await RawClient.open(srv, connect=_connect_json({"user": "limited", "password": "pw"}))
        await raw.send("PUB denied.x 2\r\nhi\r\nSUB denied.y 1\r\nSUB allowed.y 2\r\nPUB allowed.y 2\r\nok\r\n")
        lines = [ln for ln in await raw.read_until_pong() if not ln.startswith("INFO ")]
        assert lines == [
            "-ERR 'Permissions Violation for Publish to \"denied.x\"'",
            "-ERR 'Permissions Violation for Subscription to \"denied.y\"'",
            "MSG allowed.y 2 2", "ok",
        ]
        raw.close()
    finally:
        srv.stop()


# bcrypt("pw") at cost 4, as `nats server passwd` would write it
BCRYPT_PW = "$2a$04$GkUE34rsQ.iVCD8xJND32.7sRHwhrnvdCMokQWaS46y/I3oATmy1W"


async def test_bcrypt_password(server_kind, tmp_path):
    """Passwords in a config file may be bcrypt hashes; clients send the plain
    text (checked with the system's crypt(3) by natslab); the hash itself
    does not log in."""
    text = f'authorization {{\n  user: hashed\n  password: "{BCRYPT_PW}"\n}}\n'
    srv = _start(server_kind, tmp_path, text)
    try:
        nc = await connect(srv.url, user="hashed", password="pw")
        await _roundtrip(nc)
        await nc.close()
        with pytest.raises(Exception):
            await connect(srv.url, user="hashed", password=BCRYPT_PW)
    finally:
        srv.stop()
