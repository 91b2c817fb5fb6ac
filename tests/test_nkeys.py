"""nkey users and no_auth_user on both servers, and the pure-Python Ed25519
verification natslab checks nkey signatures with (RFC 8032's vectors, and
signatures made by the ``nkeys`` package, the test extra's, which nats-py
signs with too)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys

import pytest

from conftest import RawClient, ServerProcess, connect, eventually, nats_server_binary

nkeys = pytest.importorskip("nkeys")

from natslab.server.ed25519 import verify  # noqa: E402
from natslab.server import nkeys as our_nkeys  # noqa: E402


def new_user() -> tuple[str, str]:
    """(seed, public key) of a fresh user nkey."""
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    return seed.decode(), nkeys.from_seed(seed).public_key.decode()


# RFC 8032 section 7.1, tests 1-3: (public key, message, signature)
RFC8032 = [
    ("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
    ("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
    ("fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
]


def test_ed25519_vectors():
    for pk, msg, sig in RFC8032:
        pk, msg, sig = bytes.fromhex(pk), bytes.fromhex(msg), bytes.fromhex(sig)
        assert verify(pk, msg, sig)
        assert not verify(pk, msg + b"\0", sig)
        bad = bytearray(sig)
        bad[5] ^= 1
        assert not verify(pk, msg, bytes(bad))
        bad = bytearray(sig)
        bad[40] ^= 1
        assert not verify(pk, msg, bytes(bad))
    assert not verify(b"\0" * 31, b"", b"\0" * 64)
    assert not verify(bytes.fromhex(RFC8032[0][0]), b"", b"\0" * 63)
    # s >= the group order is refused (signature malleability)
    pk, _, sig = RFC8032[0]
    s = int.from_bytes(bytes.fromhex(sig)[32:], "little") + 2**252 + 27742317777372353535851937790883648493
    assert not verify(bytes.fromhex(pk), b"", bytes.fromhex(sig)[:32] + s.to_bytes(32, "little"))


def test_ed25519_against_nkeys_package():
    for i in range(20):
        seed, public = new_user()
        kp = nkeys.from_seed(seed.encode())
        msg = os.urandom(i * 7)
        sig = kp.sign(msg)
        raw = our_nkeys.decode_public_key(public)
        assert verify(raw, msg, sig)
        assert not verify(raw, msg + b"x", sig)
    assert our_nkeys.is_user_key(public)
    assert not our_nkeys.is_user_key(public[:-1] + ("A" if public[-1] != "A" else "B"))  # CRC
    assert not our_nkeys.is_user_key("N" + public[1:])


def start(kind, tmp_path, conf: str) -> ServerProcess:
    path = tmp_path / "nk.conf"
    path.write_text(conf)
    srv = ServerProcess(kind, tmp_path / "store", extra=["-c", str(path)])
    srv.start()
    return srv


async def test_nkey_users(server_kind, tmp_path):
    """An nkey user signs the INFO nonce: nats-py connects with its seed, its
    permissions apply; another key, a bad signature or none are refused."""
    seed, public = new_user()
    other_seed, _ = new_user()
    srv = start(server_kind, tmp_path, "authorization {\n  users = [\n"
                f'    {{nkey: "{public}", permissions: {{publish: ["help", "_INBOX.>"], subscribe: ["help", "_INBOX.>"]}}}}\n'
                "    {user: plain, password: pw}\n  ]\n}\n")
    try:
        raw = await RawClient.open(srv, connect=None)
        info = json.loads(raw.info[5:])
        assert info["auth_required"] is True and len(info["nonce"]) == 15
        nonce = info["nonce"]
        raw.close()

        errors = []

        async def on_error(e):
            errors.append(str(e))

        nc = await connect(srv.url, nkeys_seed_str=seed, error_cb=on_error)

        async def helper(m):
            await m.respond(b"ok")

        await nc.subscribe("help", cb=helper)
        assert (await nc.request("help", b"?", timeout=2)).data == b"ok"
        await nc.publish("foo", b"denied")
        await nc.flush()
        assert await eventually(lambda: any("permissions violation for publish" in e.lower() for e in errors))
        plain = await connect(srv.url, user="plain", password="pw")
        await plain.close()

        with pytest.raises(Exception) as ei:
            await connect(srv.url, nkeys_seed_str=other_seed)
        assert "authorization violation" in str(ei.value).lower()

        kp = nkeys.from_seed(seed.encode())
        for sig in (base64.b64encode(kp.sign(b"not the nonce")).decode(), "", "!!notbase64!!"):
            raw = await RawClient.open(srv, connect=None)
            await raw.send("CONNECT " + json.dumps({"verbose": False, "nkey": public, "sig": sig}) + "\r\nPING\r\n")
            assert await raw.readline() == "-ERR 'Authorization Violation'"
            assert await raw.closed()
            raw.close()
        # a nonce is good for its own connection only
        raw = await RawClient.open(srv, connect=None)
        sig = base64.b64encode(kp.sign(nonce.encode())).decode()
        await raw.send("CONNECT " + json.dumps({"verbose": False, "nkey": public, "sig": sig}) + "\r\nPING\r\n")
        assert await raw.readline() == "-ERR 'Authorization Violation'"
        raw.close()
        # the right signature, raw-URL base64 as nats-server also takes it
        raw = await RawClient.open(srv, connect=None)
        nonce = json.loads(raw.info[5:])["nonce"]
        sig = base64.urlsafe_b64encode(kp.sign(nonce.encode())).decode().rstrip("=")
        await raw.send("CONNECT " + json.dumps({"verbose": False, "nkey": public, "sig": sig}) + "\r\nPING\r\n")
        assert await raw.readline() == "PONG"
        raw.close()
        await nc.close()
    finally:
        srv.stop()


async def test_no_auth_user(server_kind, tmp_path):
    """no_auth_user: INFO drops auth_required, a client without credentials is
    that user (with its permissions); credentials still pick their user and
    wrong ones are still refused."""
    srv = start(server_kind, tmp_path, "authorization {\n  users = [\n"
                '    {user: foo, password: foo, permissions: {publish: ["foo", "_INBOX.>"], '
                'subscribe: ["foo", "_INBOX.>"]}}\n'
                "    {user: bar, password: bar}\n  ]\n}\nno_auth_user: foo\n")
    try:
        raw = await RawClient.open(srv, connect=None)
        assert "auth_required" not in json.loads(raw.info[5:])
        raw.close()
        errors = []

        async def on_error(e):
            errors.append(str(e))

        anon = await connect(srv.url, error_cb=on_error)
        sub = await anon.subscribe("foo")
        await anon.flush()
        await anon.publish("foo", b"as foo")
        assert (await sub.next_msg(timeout=2)).data == b"as foo"
        await anon.publish("bar", b"denied")
        await anon.flush()
        assert await eventually(lambda: any('permissions violation for publish to "bar"' in e.lower() for e in errors))
        bar = await connect(srv.url, user="bar", password="bar")
        await bar.publish("bar", b"fine")
        await bar.flush()
        with pytest.raises(Exception) as ei:
            await connect(srv.url, user="bar", password="nope")
        assert "authorization violation" in str(ei.value).lower()
        await anon.close()
        await bar.close()
    finally:
        srv.stop()


async def test_no_auth_user_nkey(server_kind, tmp_path):
    """no_auth_user may name an nkey user."""
    _seed, public = new_user()
    srv = start(server_kind, tmp_path, f'authorization {{\n  users = [ {{nkey: "{public}"}} ]\n}}\n'
                                       f"no_auth_user: {public}\n")
    try:
        nc = await connect(srv.url)
        await nc.flush()
        await nc.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("conf, words", [
    ('authorization {\n  users = [ {nkey: "UNOTAKEY"} ]\n}\n', "Not a valid public nkey for a user"),
    ("authorization {\n  users = [ {user: a, password: b} ]\n}\nno_auth_user: zed\n",
     'no_auth_user: "zed" not present as user or nkey in authorization block or account configuration'),
    ("no_auth_user: zed\n", 'no_auth_user: "zed" present, but users/nkeys are not defined'),
])
def test_bad_config(tmp_path, conf, words):
    path = tmp_path / "bad.conf"
    path.write_text(conf)
    for cmd in ([sys.executable, "-m", "natslab.server"], [nats_server_binary()]):
        r = subprocess.run(cmd + ["-p", "-1", "-c", str(path)], capture_output=True, text=True, timeout=20)
        assert r.returncode != 0 and words in r.stdout + r.stderr, (cmd[0], r.stdout + r.stderr)
