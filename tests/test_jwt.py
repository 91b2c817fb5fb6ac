"""Operator mode (JWT auth) on both servers: an operator JWT, account JWTs
in a MEMORY resolver (``resolver_preload``) or the full directory
resolver, user JWTs in ``.creds`` files. Every JWT is made here, signed
with the ``nkeys`` package (the test extra), as nsc makes them; nats-py
logs in with ``user_credentials=``, the nats CLI with ``--creds``.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import time

import pytest

from conftest import RawClient, ServerProcess, connect, eventually
from natscli import nats_cli  # noqa: F401 (a fixture)

nkeys = pytest.importorskip("nkeys")
nats_errors = pytest.importorskip("nats.errors")

NO_LIMITS = {"subs": -1, "conn": -1, "leaf": -1, "imports": -1, "exports": -1, "data": -1, "payload": -1,
             "wildcards": True}
JS_LIMITS = {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}
USER_LIMITS = {"subs": -1, "data": -1, "payload": -1}


class Key:
    """A fresh nkey of a kind (operator, account, user)."""

    def __init__(self, prefix: int):
        self.seed = nkeys.encode_seed(os.urandom(32), prefix)
        self.kp = nkeys.from_seed(self.seed)
        self.public = self.kp.public_key.decode()

    @classmethod
    def operator(cls):
        return cls(nkeys.PREFIX_BYTE_OPERATOR)

    @classmethod
    def account(cls):
        return cls(nkeys.PREFIX_BYTE_ACCOUNT)

    @classmethod
    def user(cls):
        return cls(nkeys.PREFIX_BYTE_USER)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def encode(claims: dict, issuer: Key) -> str:
    """A v2 JWT of ``claims`` signed by ``issuer``, as nats-io/jwt encodes one."""
    claims = {"iat": int(time.time()), **claims, "iss": issuer.public}
    claims.pop("jti", None)
    claims["jti"] = base64.b32encode(hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()).decode().rstrip("=")
    head = _b64(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    body = _b64(json.dumps(claims).encode())
    sig = issuer.kp.sign(f"{head}.{body}".encode())
    return f"{head}.{body}.{_b64(sig)}"


def account_jwt(op: Key, acc: Key, name: str, **nats) -> str:
    claims = {"type": "account", "version": 2, "limits": {**NO_LIMITS, **nats.pop("limits", {})}, **nats}
    return encode({"sub": acc.public, "name": name, "nats": claims}, op)


def user_jwt(signer: Key, user: Key, name: str = "u", issuer_account: str | None = None, exp: int | None = None,
             **nats) -> str:
    claims = {"type": "user", "version": 2, **USER_LIMITS, **nats}
    if issuer_account:
        claims["issuer_account"] = issuer_account
    body = {"sub": user.public, "name": name, "nats": claims}
    if exp is not None:
        body["exp"] = exp
    return encode(body, signer)


def creds(path, token: str, user: Key):
    path.write_text("-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"
                    "************************* IMPORTANT *************************\n\n"
                    "-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n" % (token, user.seed.decode()))
    return str(path)


class Setup:
    """An operator with a system account SYS and accounts A (exports a stream
    and a service) and B (imports both), in the config of a server."""

    def __init__(self, tmp_path, a_limits=None, a_extra=None, resolver="memory"):
        self.tmp = tmp_path
        self.op, self.sys, self.a, self.b = Key.operator(), Key.account(), Key.account(), Key.account()
        self.a_signer = Key.account()
        self.resolver = resolver
        self.op_jwt = encode({"sub": self.op.public, "name": "OP",
                              "nats": {"type": "operator", "version": 2, "system_account": self.sys.public}}, self.op)
        self.a_claims = dict(limits={**JS_LIMITS, **(a_limits or {})}, signing_keys=[self.a_signer.public],
                             exports=[{"name": "events", "subject": "events.>", "type": "stream"},
                                      {"name": "help", "subject": "help.>", "type": "service"}],
                             **(a_extra or {}))
        self.jwts = {
            self.sys.public: account_jwt(self.op, self.sys, "SYS"),
            self.a.public: self.a_account_jwt(),
            self.b.public: account_jwt(self.op, self.b, "B", imports=[
                {"name": "events", "subject": "events.>", "account": self.a.public, "type": "stream"},
                {"name": "help", "subject": "help.>", "account": self.a.public, "type": "service"}]),
        }

    def a_account_jwt(self, **changes) -> str:
        return account_jwt(self.op, self.a, "A", **{**self.a_claims, **changes})

    def conf(self) -> str:
        opf = self.tmp / "op.jwt"
        # decorated, as nsc writes it (nats-server and natslab take the JWT out)
        opf.write_text(f"-----BEGIN TEST OPERATOR JWT-----\n{self.op_jwt}\n------END TEST OPERATOR JWT------\n")
        text = f'operator: "{opf}"\nsystem_account: {self.sys.public}\n'
        if self.resolver == "memory":
            text += "resolver: MEMORY\nresolver_preload: {\n"
            text += "".join(f"  {k}: {v}\n" for k, v in self.jwts.items()) + "}\n"
        else:
            d = self.tmp / "jwts"
            d.mkdir(exist_ok=True)
            for k, v in self.jwts.items():
                (d / f"{k}.jwt").write_text(v)
            text += f'resolver: {{ type: full, dir: "{d}" }}\n'
        return text

    def start(self, kind: str) -> ServerProcess:
        path = self.tmp / "op.conf"
        path.write_text(self.conf())
        srv = ServerProcess(kind, self.tmp / "store", extra=["-c", str(path)])
        srv.start()
        return srv

    def user(self, account: str = "a", name: str = "u", **kw) -> str:
        """A .creds file of a new user of account ``a``, ``b`` or ``sys``."""
        key = Key.user()
        signer = getattr(self, account)
        return creds(self.tmp / f"{name}.creds", user_jwt(signer, key, name, **kw), key)


@pytest.fixture
def setup(tmp_path):
    return Setup(tmp_path)


async def nothing_more(nc, sub) -> None:
    """``sub`` has nothing waiting once a message ``nc`` sends itself after
    (the server delivers in routing order, nats-py queues in socket order)
    has come: no fixed wait."""
    marker = await nc.subscribe(nc.new_inbox())
    await nc.flush()
    await nc.flush()
    await nc.publish(marker.subject, b"")
    await marker.next_msg(timeout=3)
    assert sub.pending_msgs == 0
    await marker.unsubscribe()


async def _errors(url, **kw):
    """The error a failed connect gives (nats-py raises it)."""
    errs: list = []

    async def on_error(e):
        errs.append(e)

    try:
        nc = await connect(url, error_cb=on_error, **kw)
    except Exception as e:  # noqa: BLE001 (any failure is the point)
        return str(e) or type(e).__name__, errs
    await nc.close()
    return None, errs


async def test_creds_login_and_account_isolation(server_kind, setup):
    srv = setup.start(server_kind)
    try:
        a1 = await connect(srv.url, user_credentials=setup.user("a", "a1"))
        a2 = await connect(srv.url, user_credentials=setup.user("a", "a2"))
        b = await connect(srv.url, user_credentials=setup.user("b", "b1"))
        try:
            sa = await a2.subscribe("hello")
            sb = await b.subscribe("hello")
            for c in (a2, b):
                await c.flush()
                await c.flush()
            await a1.publish("hello", b"in A")
            await a1.flush()
            assert (await sa.next_msg(timeout=3)).data == b"in A"
            await nothing_more(b, sb)
            # the server puts them in the account of their JWT's issuer
            info = json.loads((await a1.request("$SYS.REQ.USER.INFO", b"", timeout=3)).data)
            assert info["data"]["account"] == setup.a.public
            assert (info["data"]["account_name"], info["data"]["user_name"]) == ("A", "a1")
            assert "expires" not in info["data"]
        finally:
            for c in (a1, a2, b):
                await c.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("case", ["no creds", "unknown account", "expired", "bad signature", "user creds",
                                  "expired account", "websocket only", "revoked all", "nkey only"])
async def test_bad_logins_are_authorization_violations(server_kind, setup, tmp_path, case):
    if case == "expired account":
        setup.jwts[setup.b.public] = encode({"sub": setup.b.public, "name": "B", "exp": int(time.time()) - 10,
                                  "nats": {"type": "account", "version": 2, "limits": NO_LIMITS}}, setup.op)
    if case == "revoked all":
        setup.jwts[setup.b.public] = account_jwt(setup.op, setup.b, "B", revocations={"*": int(time.time()) + 60})
    srv = setup.start(server_kind)
    try:
        kw: dict = {}
        if case in ("expired account", "revoked all"):
            kw["user_credentials"] = setup.user("b")
        elif case == "websocket only":
            kw["user_credentials"] = setup.user("a", allowed_connection_types=["WEBSOCKET"])
        elif case == "nkey only":
            key = Key.user()
            kw["nkeys_seed_str"] = key.seed.decode()
        elif case == "unknown account":
            stranger = Key.account()
            key = Key.user()
            kw["user_credentials"] = creds(tmp_path / "x.creds", user_jwt(stranger, key), key)
        elif case == "expired":
            kw["user_credentials"] = setup.user("a", exp=int(time.time()) - 10)
        elif case == "bad signature":
            # a JWT of one user with the seed of another: the nonce signature fails
            key, other = Key.user(), Key.user()
            kw["user_credentials"] = creds(tmp_path / "x.creds", user_jwt(setup.a, key), other)
        elif case == "user creds":
            kw["user"], kw["password"] = "a", "b"
        err, errs = await _errors(srv.url, **kw)
        assert err is not None
        assert any("authorization violation" in str(e).lower() for e in errs) or "authorization" in err.lower()
    finally:
        srv.stop()


async def test_raw_connect_with_jwt_and_signed_nonce(server_kind, setup):
    """The protocol itself: INFO has a nonce; CONNECT with jwt and sig gets
    +OK, with a wrong sig -ERR 'Authorization Violation'."""
    srv = setup.start(server_kind)
    try:
        key = Key.user()
        token = user_jwt(setup.a, key)
        for good in (True, False):
            raw = await RawClient.open(srv, connect=None)
            try:
                info = json.loads(raw.info[5:])
                assert info["auth_required"] is True and info["nonce"]
                signer = key if good else Key.user()
                sig = _b64(signer.kp.sign(info["nonce"].encode()))
                await raw.send('CONNECT {"verbose":true,"pedantic":false,"jwt":"%s","sig":"%s"}\r\n' % (token, sig))
                got = await raw.readline()
                assert got == ("+OK" if good else "-ERR 'Authorization Violation'")
            finally:
                raw.close()
    finally:
        srv.stop()


async def test_user_permissions_from_the_jwt(server_kind, setup):
    srv = setup.start(server_kind)
    errs: list = []

    async def on_error(e):
        errs.append(str(e))

    try:
        nc = await connect(srv.url, error_cb=on_error,
                           user_credentials=setup.user("a", pub={"allow": ["ok.>", "_INBOX.>"]},
                                                       sub={"deny": ["secret.>"]}))
        try:
            await nc.subscribe("secret.x")
            await nc.publish("nope", b"x")
            await nc.flush()
            assert await eventually(lambda: len(errs) >= 2)
            assert any("permissions violation for subscription to \"secret.x\"" in e.lower() for e in errs)
            assert any("permissions violation for publish to \"nope\"" in e.lower() for e in errs)
            assert nc.is_connected
        finally:
            await nc.close()
    finally:
        srv.stop()


async def test_stream_and_service_imports_between_accounts(server_kind, setup):
    srv = setup.start(server_kind)
    try:
        a = await connect(srv.url, user_credentials=setup.user("a", "a1"))
        b = await connect(srv.url, user_credentials=setup.user("b", "b1"))
        try:
            events = await b.subscribe("events.>")

            async def helper(msg):
                await msg.respond(b"helped: " + msg.data)

            await a.subscribe("help.>", cb=helper)
            for c in (a, b):
                await c.flush()
                await c.flush()
            await a.publish("events.one", b"1")
            await a.flush()
            msg = await events.next_msg(timeout=3)
            assert (msg.subject, msg.data) == ("events.one", b"1")
            answer = await b.request("help.me", b"please", timeout=3)
            assert answer.data == b"helped: please"
        finally:
            await a.close()
            await b.close()
    finally:
        srv.stop()


async def test_signing_key_and_bearer_users(server_kind, setup, tmp_path):
    srv = setup.start(server_kind)
    try:
        # signed by A's signing key, naming A as its account
        key = Key.user()
        path = creds(tmp_path / "sk.creds", user_jwt(setup.a_signer, key, issuer_account=setup.a.public), key)
        nc = await connect(srv.url, user_credentials=path)
        info = json.loads((await nc.request("$SYS.REQ.USER.INFO", b"", timeout=3)).data)
        assert info["data"]["account"] == setup.a.public
        await nc.close()
        # a signing key A does not have is refused
        rogue = Key.account()
        path = creds(tmp_path / "rogue.creds", user_jwt(rogue, key, issuer_account=setup.a.public), key)
        err, _ = await _errors(srv.url, user_credentials=path)
        assert err is not None
        # a bearer JWT needs no nonce signature: raw CONNECT with no sig
        bearer = user_jwt(setup.a, Key.user(), bearer_token=True)
        raw = await RawClient.open(srv, connect=None)
        try:
            await raw.send('CONNECT {"verbose":true,"pedantic":false,"jwt":"%s"}\r\n' % bearer)
            assert await raw.readline() == "+OK"
        finally:
            raw.close()
    finally:
        srv.stop()


async def test_account_connection_limit(server_kind, tmp_path):
    setup = Setup(tmp_path, a_limits={"conn": 1})
    srv = setup.start(server_kind)
    try:
        first = await connect(srv.url, user_credentials=setup.user("a", "a1"))
        try:
            err, errs = await _errors(srv.url, user_credentials=setup.user("a", "a2"))
            assert err is not None
            assert any("maximum account active connections exceeded" in str(e).lower() for e in errs) or \
                "maximum account active connections exceeded" in err.lower()
            assert first.is_connected
            # another account is not limited by A's limit
            other = await connect(srv.url, user_credentials=setup.user("b", "b1"))
            await other.close()
        finally:
            await first.close()
    finally:
        srv.stop()


async def test_subscription_and_payload_limits(server_kind, tmp_path):
    setup = Setup(tmp_path, a_limits={"subs": 2, "payload": 100})
    srv = setup.start(server_kind)
    errs: list = []

    async def on_error(e):
        errs.append(str(e).lower())

    try:
        nc = await connect(srv.url, error_cb=on_error, user_credentials=setup.user("a"))
        try:
            for i in range(3):
                await nc.subscribe(f"s.{i}")
            # (nats-py closes on any -ERR but a permissions violation, and keeps it as last_error)
            assert await eventually(lambda: "maximum subscriptions exceeded" in str(nc.last_error).lower())
        finally:
            await nc.close()
        # a payload over the account's limit ends the connection (nats-py
        # still knows only the server's max_payload from INFO)
        raw = await RawClient.open(srv, connect=None)
        try:
            info = json.loads(raw.info[5:])
            key = Key.user()
            token = user_jwt(setup.a, key)
            sig = _b64(key.kp.sign(info["nonce"].encode()))
            await raw.send('CONNECT {"verbose":false,"pedantic":false,"jwt":"%s","sig":"%s"}\r\nPING\r\n' % (token, sig))
            assert await raw.readline() == "PONG"
            await raw.send("PUB x 101\r\n" + "x" * 101 + "\r\n")
            assert await raw.readline() == "-ERR 'Maximum Payload Violation'"
            assert await raw.closed()
        finally:
            raw.close()
    finally:
        srv.stop()


async def _claims_update(sys_nc, subject: str, token: str) -> dict:
    return json.loads((await sys_nc.request(subject, token.encode(), timeout=3)).data)


@pytest.mark.parametrize("resolver", ["memory", "full"])
async def test_revocation_pushed_over_sys(server_kind, tmp_path, resolver):
    setup = Setup(tmp_path, resolver=resolver)
    srv = setup.start(server_kind)
    errs: list = []

    async def on_error(e):
        errs.append(str(e).lower())

    try:
        key = Key.user()
        token = user_jwt(setup.a, key, "victim", iat=int(time.time()) - 5)
        path = creds(tmp_path / "victim.creds", token, key)
        victim = await connect(srv.url, user_credentials=path, error_cb=on_error)
        sys_nc = await connect(srv.url, user_credentials=setup.user("sys", "admin"))
        try:
            revoking = setup.a_account_jwt(revocations={key.public: int(time.time())})
            subject = f"$SYS.REQ.ACCOUNT.{setup.a.public}.CLAIMS.UPDATE"
            resp = await _claims_update(sys_nc, subject, revoking)
            assert resp["data"] == {"account": setup.a.public, "code": 200, "message": "jwt updated"}
            assert "server" in resp
            assert await eventually(lambda: victim.is_closed or not victim.is_connected, timeout=5)
            assert await eventually(lambda: "user authentication revoked" in str(victim.last_error).lower())
            err, _ = await _errors(srv.url, user_credentials=path)
            assert err is not None
            # another user of A is not revoked
            other = await connect(srv.url, user_credentials=setup.user("a", "other"))
            await other.close()
            # a JWT for another account's subject is refused
            resp = await _claims_update(sys_nc, f"$SYS.REQ.ACCOUNT.{setup.b.public}.CLAIMS.UPDATE", revoking)
            assert resp["error"]["code"] == 500
            assert "subject does not match jwt content" in resp["error"]["description"]
            if resolver == "full":
                stored = (tmp_path / "jwts" / f"{setup.a.public}.jwt").read_text()
                assert stored == revoking
        finally:
            await sys_nc.close()
            if not victim.is_closed:
                await victim.close()
    finally:
        srv.stop()


async def test_full_resolver_claims_update_stores_new_account(server_kind, tmp_path):
    setup = Setup(tmp_path, resolver="full")
    srv = setup.start(server_kind)
    try:
        sys_nc = await connect(srv.url, user_credentials=setup.user("sys", "admin"))
        try:
            c = Key.account()
            token = account_jwt(setup.op, c, "C", imports=[
                {"name": "events", "subject": "events.>", "account": setup.a.public, "type": "stream"}])
            resp = await _claims_update(sys_nc, "$SYS.REQ.CLAIMS.UPDATE", token)
            assert resp["data"] == {"account": c.public, "code": 200, "message": "jwt updated"}
            assert (tmp_path / "jwts" / f"{c.public}.jwt").read_text() == token
            # the directory lists its accounts
            listed = json.loads((await sys_nc.request("$SYS.REQ.CLAIMS.LIST", b"", timeout=3)).data)
            assert sorted(listed["data"]) == sorted([*setup.jwts, c.public])
            # the directory answers lookups: the stored JWT
            got = await sys_nc.request(f"$SYS.REQ.ACCOUNT.{c.public}.CLAIMS.LOOKUP", b"", timeout=3)
            assert got.data.decode() == token
            # served at once: C's user logs in and gets A's events through C's import
            cu = await connect(srv.url, user_credentials=creds(tmp_path / "cu.creds", user_jwt(c, ck := Key.user()), ck))
            a = await connect(srv.url, user_credentials=setup.user("a", "au"))
            try:
                info = json.loads((await cu.request("$SYS.REQ.USER.INFO", b"", timeout=3)).data)
                assert info["data"]["account"] == c.public
                sub = await cu.subscribe("events.>")
                await cu.flush()
                await cu.flush()
                await a.publish("events.new", b"for C")
                await a.flush()
                assert (await sub.next_msg(timeout=3)).data == b"for C"
                # A stops exporting: C's import goes
                resp = await _claims_update(sys_nc, "$SYS.REQ.CLAIMS.UPDATE", setup.a_account_jwt(exports=[]))
                assert resp["data"]["message"] == "jwt updated"
                await a.publish("events.new", b"not for C")
                await a.flush()
                await nothing_more(cu, sub)
            finally:
                await cu.close()
                await a.close()
            # a JWT the operator did not sign is stored too (nats-server's
            # claimValidate does not check the issuer) but gives no login
            r, rogue = Key.account(), Key.operator()
            resp = await _claims_update(sys_nc, "$SYS.REQ.CLAIMS.UPDATE", account_jwt(rogue, r, "R"))
            assert resp["data"] == {"account": r.public, "code": 200, "message": "jwt updated"}
            key = Key.user()
            err, _ = await _errors(srv.url, user_credentials=creds(tmp_path / "r.creds", user_jwt(r, key), key))
            assert err is not None
            # not a JWT at all
            resp = await _claims_update(sys_nc, "$SYS.REQ.CLAIMS.UPDATE", "garbage")
            assert resp["error"]["code"] == 500 and resp["error"]["account"] == "n/a"
        finally:
            await sys_nc.close()
    finally:
        srv.stop()


async def test_jetstream_in_a_jwt_account(server_kind, setup):
    srv = setup.start(server_kind)
    try:
        nc = await connect(srv.url, user_credentials=setup.user("a"))
        try:
            js = nc.jetstream()
            await js.add_stream(name="ORDERS", subjects=["orders.>"])
            ack = await js.publish("orders.1", b"x")
            assert ack.stream == "ORDERS" and ack.seq == 1
        finally:
            await nc.close()
    finally:
        srv.stop()


def test_nats_cli_with_creds(server_kind, setup, nats_cli):
    srv = setup.start(server_kind)
    try:
        path = setup.user("a", "cli")
        got = nats_cli.run(srv.url, "--creds", path, "request", "--help")  # (parses)
        assert got.returncode == 0
        pub = nats_cli.run(srv.url, "--creds", path, "pub", "cli.x", "hi")
        assert pub.returncode == 0, pub.stdout + pub.stderr
        info = nats_cli.run(srv.url, "--creds", path, "account", "info")
        assert info.returncode == 0, info.stdout + info.stderr
        # the account and user of the JWTs, by name and key ($SYS.REQ.USER.INFO)
        assert f"Account: A ({setup.a.public})" in info.stdout and "User: cli (U" in info.stdout
        sys_creds = setup.user("sys", "admin")
        sys_info = nats_cli.run(srv.url, "--creds", sys_creds, "account", "info")
        assert "System Account: true" in sys_info.stdout, sys_info.stdout + sys_info.stderr
        listed = nats_cli.run(srv.url, "--creds", sys_creds, "server", "list", "1")
        assert listed.returncode == 0 and "Server Overview" in listed.stdout, listed.stdout + listed.stderr
        js = nats_cli.run(srv.url, "--creds", path, "stream", "add", "CLI", "--subjects", "cli.>", "--defaults")
        assert js.returncode == 0, js.stdout + js.stderr
        assert nats_cli.run(srv.url, "--creds", path, "pub", "cli.y", "hi").returncode == 0
        got = nats_cli.run(srv.url, "--creds", path, "stream", "info", "CLI", "--json")
        assert json.loads(got.stdout)["state"]["messages"] == 1
        bad = nats_cli.run(srv.url, "--creds", setup.user("a", "cli2", exp=int(time.time()) - 5), "pub", "cli.x", "hi")
        assert bad.returncode != 0
        assert "authorization violation" in (bad.stdout + bad.stderr).lower()
    finally:
        srv.stop()


# nats.py's ClientJWTAuthTest (nats/tests/test_client_nkeys.py): its server
# config nats/tests/nkeys/resolver_preload.conf (an inline v1 operator JWT,
# accounts foo and bar preloaded in a MEMORY resolver) and its users'
# credentials (nkeys/foo-user.creds, bar-user.creds), as test data.
NATS_PY_OPERATOR = (
    "eyJ0eXAiOiJqd3QiLCJhbGciOiJlZDI1NTE5In0.eyJqdGkiOiIyTVhXQ0VaRFo2S0g3NU5ZU1NaUFBTTElET1NEVzdMVVE0"
    "RVRUSjJMWEhKQlFGWTRTMkZBIiwiaWF0IjoxNTUzODQwMzM3LCJpc3MiOiJPRFdJSUU3SjdOT1M3M1dWQk5WWTdIQ1dYVTRX"
    "WFdEQlNDVjRWSUtNNVk0TFhUT1Q1U1FQT0xXTCIsIm5hbWUiOiJ0ZXN0X29wZXJhdG9yIiwic3ViIjoiT0RXSUlFN0o3Tk9T"
    "NzNXVkJOVlk3SENXWFU0V1hXREJTQ1Y0VklLTTVZNExYVE9UNVNRUE9MV0wiLCJ0eXBlIjoib3BlcmF0b3IifQ.V_v6k3aMO"
    "pyau83RaqNHW_YmZw8X0ZnJWLOas3YvQYIyXrHF0bL9inBaQw6zXzbN_ViQnNskhB7tM40qguitAg")
NATS_PY_FOO_ACCOUNT = "AD7SEANS6BCBF6FHIB7SQ3UGJVPW53BXOALP75YXJBBXQL7EAFB6NJNA"
NATS_PY_FOO_ACCOUNT_JWT = (
    "eyJ0eXAiOiJqd3QiLCJhbGciOiJlZDI1NTE5In0.eyJqdGkiOiIyUDNHU1BFSk9DNlVZNE5aM05DNzVQVFJIV1pVRFhPV1pL"
    "R0NLUDVPNjJYSlZESVEzQ0ZRIiwiaWF0IjoxNTUzODQwNjE1LCJpc3MiOiJPRFdJSUU3SjdOT1M3M1dWQk5WWTdIQ1dYVTRX"
    "WFdEQlNDVjRWSUtNNVk0TFhUT1Q1U1FQT0xXTCIsIm5hbWUiOiJmb28iLCJzdWIiOiJBRDdTRUFOUzZCQ0JGNkZISUI3U1Ez"
    "VUdKVlBXNTNCWE9BTFA3NVlYSkJCWFFMN0VBRkI2TkpOQSIsInR5cGUiOiJhY2NvdW50IiwibmF0cyI6eyJsaW1pdHMiOnsi"
    "c3VicyI6LTEsImNvbm4iOi0xLCJpbXBvcnRzIjotMSwiZXhwb3J0cyI6LTEsImRhdGEiOi0xLCJwYXlsb2FkIjotMSwid2ls"
    "ZGNhcmRzIjp0cnVlfX19.COiKg5EFK4Gb2gA7vtKHQK7vjMEUx-RMWYuN-Bg-uVOFs9GLwW7Dxc4TcN-poBGBEkwKnleiA9S"
    "jYO3y4-AqBQ")
NATS_PY_BAR_ACCOUNT = "AAXPTP32BD73YW3ACUY6DPXKWBSUW4VEZNE3LD4FUOFDP6KDU43PQVU2"
NATS_PY_BAR_ACCOUNT_JWT = (
    "eyJ0eXAiOiJqd3QiLCJhbGciOiJlZDI1NTE5In0.eyJqdGkiOiJPQ1dUQkRQTzVETjRSV0lFNEtJQ1BQWkszUEhHV0dQUVFK"
    "NFVET1pQSTVaRzJQUzZKVkpBIiwiaWF0IjoxNTUzODQwNjE5LCJpc3MiOiJPRFdJSUU3SjdOT1M3M1dWQk5WWTdIQ1dYVTRX"
    "WFdEQlNDVjRWSUtNNVk0TFhUT1Q1U1FQT0xXTCIsIm5hbWUiOiJiYXIiLCJzdWIiOiJBQVhQVFAzMkJENzNZVzNBQ1VZNkRQ"
    "WEtXQlNVVzRWRVpORTNMRDRGVU9GRFA2S0RVNDNQUVZVMiIsInR5cGUiOiJhY2NvdW50IiwibmF0cyI6eyJsaW1pdHMiOnsi"
    "c3VicyI6LTEsImNvbm4iOi0xLCJpbXBvcnRzIjotMSwiZXhwb3J0cyI6LTEsImRhdGEiOi0xLCJwYXlsb2FkIjotMSwid2ls"
    "ZGNhcmRzIjp0cnVlfX19.KY2fBvYyNCA0dYS7I6_rETGHT4YGkWZSh03XhXxwAvJ8XCfKlVJRY82U-0ERg01SFtPTZ-6BYu-"
    "sty1E67ioDA")
NATS_PY_FOO_USER_JWT = (
    "eyJ0eXAiOiJqd3QiLCJhbGciOiJlZDI1NTE5In0.eyJqdGkiOiJXTURGT1dHV1JGWkRGRFVSM0dPUkdESEtUTTdDUlZBVDQ1"
    "RkRFMllNRUY1N0VOQ0JBVFFRIiwiaWF0IjoxNTUzODQwOTQ0LCJpc3MiOiJBRDdTRUFOUzZCQ0JGNkZISUI3U1EzVUdKVlBX"
    "NTNCWE9BTFA3NVlYSkJCWFFMN0VBRkI2TkpOQSIsIm5hbWUiOiJmb28tdXNlciIsInN1YiI6IlVDSzVON042Nk9CT0lORlhB"
    "WUMyQUNKUVlGU09ENFZZTlU2QVBFSlRBVkZaQjJTVkhMS0dFVzdMIiwidHlwZSI6InVzZXIiLCJuYXRzIjp7InB1YiI6e30s"
    "InN1YiI6e319fQ.Vri09BN561m37GvuSWoGN9L9TSkwQbjC_jIv1BCJcoxZqNc_Pa7WbR12b3SAS4_Ip2D9-2HCwyYib1JUE"
    "IO8Bg")
NATS_PY_FOO_USER_SEED = "SUAMLK2ZNL35WSMW37E7UD4VZ7ELPKW7DHC3BWBSD2GCZ7IUQQXZIORRBU"
NATS_PY_BAR_USER_JWT = (
    "eyJ0eXAiOiJqd3QiLCJhbGciOiJlZDI1NTE5In0.eyJqdGkiOiJTRVYzUE5WNExQU0JZUDRGVTdLSDROSkhSWjNSREhCQlpW"
    "UFZCNEZYNENIUURORktMSTRRIiwiaWF0IjoxNTUzODQwOTMyLCJpc3MiOiJBQVhQVFAzMkJENzNZVzNBQ1VZNkRQWEtXQlNV"
    "VzRWRVpORTNMRDRGVU9GRFA2S0RVNDNQUVZVMiIsIm5hbWUiOiJiYXItdXNlciIsInN1YiI6IlVBVFY3QkE0SEpBSUxXMjJH"
    "UVhJUzU1MlZNS1E2NDRGWlJJQUlVV1ZJTEpWSlo0U1pWVkNYQVZRIiwidHlwZSI6InVzZXIiLCJuYXRzIjp7InB1YiI6e30s"
    "InN1YiI6e319fQ.2_IUOJ_YnE1R0dpDxllFQkV4chzzlRi1MY5da9L0dPQkqPanSyNSig8yEUBLH4qHmmwl0Wc349vsO_ZYZ"
    "D0mDw")
NATS_PY_BAR_USER_SEED = "SUADASFE2CMNLLIYTMWA6VMSD6T3CLTFXDW7AFTRBNANFR5EPDE554NUOE"


class NoJetStream(ServerProcess):
    """Without -js, as nats.py's test runs its server (nats-server will not
    start JetStream in operator mode without a system account)."""

    def argv(self) -> list[str]:
        return [a for a in super().argv() if a != "-js"]


def _nats_py_conf(tmp_path) -> str:
    path = tmp_path / "resolver_preload.conf"
    path.write_text(f"operator: {NATS_PY_OPERATOR}\nresolver = MEMORY\nresolver_preload = {{\n"
                    f'  {NATS_PY_FOO_ACCOUNT} : "{NATS_PY_FOO_ACCOUNT_JWT}"\n'
                    f'  {NATS_PY_BAR_ACCOUNT} : "{NATS_PY_BAR_ACCOUNT_JWT}"\n}}\n')
    return str(path)


def _nats_py_creds(path, token: str, seed: str) -> str:
    path.write_text(f"-----BEGIN NATS USER JWT-----\n{token}\n------END NATS USER JWT------\n\n"
                    f"-----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n")
    return str(path)


@pytest.mark.parametrize("form", ["creds", "tuple", "raw"])
async def test_nats_py_client_jwt_auth_scenario(server_kind, tmp_path, form):
    """ClientJWTAuthTest's connects: a .creds file, a (jwt file, seed file)
    tuple, RawCredentials; then a request to its own 'help' responder."""
    from nats.aio.client import RawCredentials

    srv = NoJetStream(server_kind, tmp_path / "store", extra=["-c", _nats_py_conf(tmp_path)])
    srv.start()
    try:
        path = _nats_py_creds(tmp_path / "foo-user.creds", NATS_PY_FOO_USER_JWT, NATS_PY_FOO_USER_SEED)
        if form == "creds":
            cred = path
        elif form == "tuple":
            (tmp_path / "foo-user.jwt").write_text(NATS_PY_FOO_USER_JWT)
            (tmp_path / "foo-user.nk").write_text(NATS_PY_FOO_USER_SEED)
            cred = (str(tmp_path / "foo-user.jwt"), str(tmp_path / "foo-user.nk"))
        else:
            cred = RawCredentials((tmp_path / "foo-user.creds").read_text())
        nc = await connect(srv.url, user_credentials=cred, connect_timeout=5)

        async def help_handler(msg):
            await nc.publish(msg.reply, b"OK!")

        await nc.subscribe("help", cb=help_handler)
        await nc.flush()
        msg = await nc.request("help", b"I need help", timeout=3)
        assert msg.data == b"OK!"
        # bar's user is in account bar: foo's responder is not there
        bar = await connect(srv.url, user_credentials=_nats_py_creds(tmp_path / "bar-user.creds", NATS_PY_BAR_USER_JWT,
                                                                      NATS_PY_BAR_USER_SEED))
        try:
            with pytest.raises(nats_errors.NoRespondersError):
                await bar.request("help", b"I need help", timeout=3)
        finally:
            await bar.close()
        await nc.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("missing, error", [
    ("conn", "maximum account active connections exceeded"),
    ("subs", "maximum subscriptions exceeded"),
])
async def test_a_limit_left_out_of_a_v2_jwt_is_zero(server_kind, tmp_path, missing, error):
    """nats-io/jwt v2 reads an absent limit as Go's zero: no connection, no
    subscription allowed (a v1 JWT's absent limits are none: nats.py's)."""
    setup = Setup(tmp_path)
    limits = {k: v for k, v in NO_LIMITS.items() if k != missing}
    setup.jwts[setup.a.public] = encode({"sub": setup.a.public, "name": "A",
                                         "nats": {"type": "account", "version": 2, "limits": limits}}, setup.op)
    srv = setup.start(server_kind)
    try:
        # (nats-server sends the subscription error from a goroutine: it may
        # come after the connect's PONG, so the connect itself may pass and
        # the connection end just after)
        try:
            nc = await connect(srv.url, user_credentials=setup.user("a"))
        except Exception as e:  # noqa: BLE001 (nats-py's errors have no common base)
            err = str(e)
        else:
            assert await eventually(lambda: nc.is_closed)
            err = str(nc.last_error)
        assert error in err.lower()
        # B has every limit: served
        b = await connect(srv.url, user_credentials=setup.user("b"))
        await b.close()
    finally:
        srv.stop()


async def test_user_jwt_expiry_ends_the_connection(server_kind, setup):
    srv = setup.start(server_kind)
    try:
        nc = await connect(srv.url, user_credentials=setup.user("a", exp=int(time.time()) + 2))
        assert nc.is_connected
        info = json.loads((await nc.request("$SYS.REQ.USER.INFO", b"", timeout=3)).data)
        assert 0 <= info["data"]["expires"] <= 2 * 10**9 and info["data"]["expires"] % 10**9 == 0
        assert await eventually(lambda: nc.is_closed, timeout=6)
        assert "user authentication expired" in str(nc.last_error).lower()
    finally:
        srv.stop()


async def test_account_without_jetstream_limits(server_kind, setup):
    """B's JWT has no JetStream limits: the API says JetStream is not
    enabled for it (A's streams are A's alone)."""
    srv = setup.start(server_kind)
    try:
        nc = await connect(srv.url, user_credentials=setup.user("b"))
        try:
            r = json.loads((await nc.request("$JS.API.INFO", b"", timeout=3)).data)
            assert r["error"] == {"code": 503, "err_code": 10039, "description": "JetStream not enabled for account"}
        finally:
            await nc.close()
    finally:
        srv.stop()


async def test_operator_signing_key_and_system_account_from_the_operator(server_kind, tmp_path):
    """An account signed by one of the operator's signing keys is trusted;
    one signed by another operator is not. No system_account in the file:
    the operator JWT's system_account is the system account."""
    op, op_signer, sys_acc, acc, other_op = Key.operator(), Key.operator(), Key.account(), Key.account(), Key.operator()
    stranger = Key.account()
    op_jwt = encode({"sub": op.public, "name": "OP", "nats": {"type": "operator", "version": 2,
                                                             "signing_keys": [op_signer.public],
                                                             "system_account": sys_acc.public}}, op)
    preload = {sys_acc.public: account_jwt(op, sys_acc, "SYS"),
               acc.public: account_jwt(op_signer, acc, "ACC"),
               stranger.public: account_jwt(other_op, stranger, "STRANGER")}
    conf = tmp_path / "op.conf"
    conf.write_text(f"operator: {op_jwt}\nresolver: MEMORY\nresolver_preload: {{\n"
                    + "".join(f"  {k}: {v}\n" for k, v in preload.items()) + "}\n")
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf)])
    srv.start()
    try:
        k = Key.user()
        nc = await connect(srv.url, user_credentials=creds(tmp_path / "u.creds", user_jwt(acc, k), k))
        await nc.close()
        k = Key.user()
        err, _ = await _errors(srv.url, user_credentials=creds(tmp_path / "s.creds", user_jwt(stranger, k), k))
        assert err is not None
        k = Key.user()
        nc = await connect(srv.url, user_credentials=creds(tmp_path / "sys.creds", user_jwt(sys_acc, k), k))
        try:
            info = json.loads((await nc.request("$SYS.REQ.USER.INFO", b"", timeout=3)).data)
            assert info["data"]["account"] == sys_acc.public
            # the system account's users may ask the servers: $SYS.REQ.SERVER.PING
            pong = json.loads((await nc.request("$SYS.REQ.SERVER.PING", b"", timeout=3)).data)
            assert pong["server"]["id"]
        finally:
            await nc.close()
    finally:
        srv.stop()


def _operator_jwt() -> str:
    op = Key.operator()
    return encode({"sub": op.public, "name": "OP", "nats": {"type": "operator", "version": 2}}, op)


@pytest.mark.parametrize("rest, words", [
    ("resolver: MEMORY\nresolver_preload: { AAAA: notajwt }\n", "invalid account JWT"),
    ("resolver: MEMORY\nresolver_preload: [a]\n", "preload should be a map of account_public_key:account_jwt"),
    ("resolver: { type: full }\n", "dir has no value and needs to point to a directory"),
    ("resolver: FOO\n", "error parsing account resolver, should be MEM or"),
    ("resolver: { type: cache, dir: DIR, allow_delete: true }\n", "CACHE does not accept allow_delete"),
    ("resolver: { type: full, dir: DIR, ttl: \"2m\" }\n", "FULL does not accept ttl"),
    ("resolver: MEMORY\naccounts { A { users: [{user: a, password: a}] } }\n",
     "operators do not allow Accounts to be configured directly"),
    ("resolver: MEMORY\nsystem_account: AXXX\n", "error resolving system account: will only fetch valid account keys"),
    ("resolver: MEMORY\nsystem_account: ACCOUNT\n", "error resolving system account: account missing"),
    ("OPSYS resolver: MEMORY\n", "error resolving system account: account missing"),  # the operator's, not preloaded
])
def test_bad_operator_configs(tmp_path, rest, words):
    import subprocess
    import sys

    from conftest import nats_server_binary

    rest = rest.replace("DIR", str(tmp_path / "jwts")).replace("ACCOUNT", Key.account().public)
    path = tmp_path / "bad.conf"
    op_jwt = _operator_jwt()
    if rest.startswith("OPSYS "):
        rest = rest[len("OPSYS "):]
        op = Key.operator()
        op_jwt = encode({"sub": op.public, "name": "OP", "nats": {"type": "operator", "version": 2,
                                                                 "system_account": Key.account().public}}, op)
    path.write_text(f"operator: {op_jwt}\n{rest}")
    for cmd in ([sys.executable, "-m", "natslab.server"], [nats_server_binary()]):
        r = subprocess.run(cmd + ["-p", "-1", "-c", str(path)], capture_output=True, text=True, timeout=20)
        assert r.returncode != 0 and words in r.stdout + r.stderr, (cmd[0], r.stdout + r.stderr)
    missing = tmp_path / "none.conf"
    missing.write_text(f"operator: {tmp_path / 'nope.jwt'}\nresolver: MEMORY\n")
    for cmd in ([sys.executable, "-m", "natslab.server"], [nats_server_binary()]):
        r = subprocess.run(cmd + ["-p", "-1", "-c", str(missing)], capture_output=True, text=True, timeout=20)
        out = r.stdout + r.stderr
        assert r.returncode != 0 and "error parsing operator JWT: open" in out and "no such file or directory" in out, out


async def test_account_default_permissions(server_kind, tmp_path):
    """A user JWT without permissions gets the account's default_permissions."""
    setup = Setup(tmp_path, a_extra={"default_permissions": {"pub": {"deny": ["nope.>"]}}})
    srv = setup.start(server_kind)
    errs: list = []

    async def on_error(e):
        errs.append(str(e).lower())

    try:
        plain = await connect(srv.url, user_credentials=setup.user("a", "plain"), error_cb=on_error)
        own = await connect(srv.url, user_credentials=setup.user("a", "own", pub={"allow": [">"]}), error_cb=on_error)
        try:
            await plain.publish("nope.x", b"")
            await plain.flush()
            assert await eventually(lambda: any('publish to "nope.x"' in e for e in errs))
            errs.clear()
            await own.publish("nope.x", b"")
            await own.flush()
            await own.publish("nope.y", b"")
            await nothing_more(own, await own.subscribe("unused"))
            assert errs == []
        finally:
            await plain.close()
            await own.close()
    finally:
        srv.stop()


async def test_strict_signing_key_usage(server_kind, tmp_path):
    """An operator with strict_signing_key_usage: accounts signed by its
    signing key, users by their account's signing keys only; a claim update
    signed by the operator's own key is refused."""
    op, op_sk, sys_acc, acc, acc_sk = Key.operator(), Key.operator(), Key.account(), Key.account(), Key.account()
    sys_sk = Key.account()
    op_jwt = encode({"sub": op.public, "name": "OP", "nats": {"type": "operator", "version": 2,
                                                             "signing_keys": [op_sk.public],
                                                             "strict_signing_key_usage": True,
                                                             "system_account": sys_acc.public}}, op)
    d = tmp_path / "jwts"
    d.mkdir()
    (d / f"{sys_acc.public}.jwt").write_text(account_jwt(op_sk, sys_acc, "SYS", signing_keys=[sys_sk.public]))
    (d / f"{acc.public}.jwt").write_text(account_jwt(op_sk, acc, "ACC", limits=JS_LIMITS, signing_keys=[acc_sk.public]))
    conf = tmp_path / "op.conf"
    conf.write_text(f"operator: {op_jwt}\nresolver: {{ type: full, dir: \"{d}\" }}\n")
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf)])
    srv.start()
    try:
        k = Key.user()  # signed by the account's own key
        err, _ = await _errors(srv.url, user_credentials=creds(tmp_path / "d.creds", user_jwt(acc, k), k))
        assert err is not None
        k = Key.user()
        ok = await connect(srv.url, user_credentials=creds(tmp_path / "sk.creds",
                                                           user_jwt(acc_sk, k, issuer_account=acc.public), k))
        await ok.close()
        k = Key.user()
        sys_nc = await connect(srv.url, user_credentials=creds(tmp_path / "sys.creds",
                                                               user_jwt(sys_sk, k, issuer_account=sys_acc.public), k))
        try:
            new = Key.account()
            for subject in ("$SYS.REQ.CLAIMS.UPDATE", f"$SYS.REQ.ACCOUNT.{new.public}.CLAIMS.UPDATE"):
                resp = await _claims_update(sys_nc, subject, account_jwt(op, new, "BYOP"))
                assert resp["error"]["code"] == 500
                assert "operator requires issuer to be a signing key" in resp["error"]["description"]
            assert not (d / f"{new.public}.jwt").exists()
            resp = await _claims_update(sys_nc, "$SYS.REQ.CLAIMS.UPDATE", account_jwt(op_sk, new, "BYSK"))
            assert resp["data"]["message"] == "jwt updated"
        finally:
            await sys_nc.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("bad", [
    {"pub": "x"}, {"pub": {"allow": "x"}}, {"sub": {"deny": [1]}}, {"subs": "1"}, {"bearer_token": "yes"},
])
async def test_malformed_user_jwt_is_refused_and_others_served(server_kind, setup, tmp_path, bad):
    """A user JWT whose claims have the wrong types (Go cannot decode it):
    Authorization Violation, and the server keeps serving."""
    srv = setup.start(server_kind)
    try:
        good = await connect(srv.url, user_credentials=setup.user("a", "good"))
        key = Key.user()
        raw = await RawClient.open(srv, connect=None)
        try:
            info = json.loads(raw.info[5:])
            sig = _b64(key.kp.sign(info["nonce"].encode()))
            await raw.send('CONNECT {"verbose":false,"pedantic":false,"jwt":"%s","sig":"%s"}\r\nPING\r\n'
                           % (user_jwt(setup.a, key, **bad), sig))
            assert await raw.readline() == "-ERR 'Authorization Violation'"
        finally:
            raw.close()
        assert (await good.request("$SYS.REQ.USER.INFO", b"", timeout=3)).data
        await good.close()
    finally:
        srv.stop()


async def test_jetstream_limits_left_out_are_no_limits(server_kind, tmp_path):
    """JetStream on (mem_storage, disk_storage -1) with no streams/consumer
    limit in the JWT: Go's 0, which JetStream takes as none; the account
    info says 0."""
    setup = Setup(tmp_path)
    setup.a_claims["limits"] = {**NO_LIMITS, "mem_storage": -1, "disk_storage": -1}
    setup.jwts[setup.a.public] = setup.a_account_jwt()
    srv = setup.start(server_kind)
    try:
        nc = await connect(srv.url, user_credentials=setup.user("a"))
        try:
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s"])
            await js.add_consumer("S", durable_name="C")
            info = await js.account_info()
            assert (info.limits.max_streams, info.limits.max_consumers, info.limits.max_memory) == (0, 0, -1)
            assert (info.streams, info.consumers) == (1, 1)
        finally:
            await nc.close()
    finally:
        srv.stop()


async def test_resolver_pinned_accounts(server_kind, tmp_path):
    """resolver_pinned_accounts: only users of the pinned accounts (and of
    the system account, always pinned) log in; each refusal is an
    Authorization Violation and counts in /varz pinned_account_fails; a key
    that is no account key stops the start with nats-server's words."""
    import urllib.request

    from test_cli import refusal

    setup = Setup(tmp_path)
    path = tmp_path / "op.conf"
    path.write_text(setup.conf() + f"resolver_pinned_accounts: [{setup.a.public}]\n")
    srv = ServerProcess(server_kind, tmp_path / "store", http=True, extra=["-c", str(path)])
    srv.start()
    try:
        for account in ("a", "sys"):
            nc = await connect(srv.url, user_credentials=setup.user(account, f"{account}1"))
            await nc.close()
        err, errs = await _errors(srv.url, user_credentials=setup.user("b", "b1"))
        assert err is not None and "authorization violation" in (err + " ".join(map(str, errs))).lower()
        varz = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{srv.http_port}/varz", timeout=5).read())
        assert varz["pinned_account_fails"] == 1
    finally:
        srv.stop()
    path.write_text(setup.conf() + f"resolver_pinned_accounts: [{setup.a.public}, {Key.user().public}]\n")
    status, lines = refusal(server_kind, path)
    assert status == 1 and any(ln.endswith("is not a valid public account nkey") for ln in lines), lines


async def test_trusted_keys_without_an_operator_jwt(server_kind, tmp_path):
    """trusted (trusted_keys): the operator's public key instead of its JWT,
    with the MEMORY resolver: accounts it signed are served, their users log
    in; an account another operator signed is not; a key that is no
    operator key is nats-server's config error, and the directory resolver,
    which wants an operator JWT, does not start."""
    import re
    import subprocess

    from test_cli import binary, refusal

    setup = Setup(tmp_path)
    rogue_op, rogue = Key.operator(), Key.account()
    setup.jwts[rogue.public] = account_jwt(rogue_op, rogue, "ROGUE")
    conf = re.sub(r'operator: "[^"]*"\n', f"trusted_keys: [{setup.op.public}]\n", setup.conf())
    path = tmp_path / "trusted.conf"
    path.write_text(conf)
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(path)])
    srv.start()
    try:
        a = await connect(srv.url, user_credentials=setup.user("a", "a1"))
        info = json.loads((await a.request("$SYS.REQ.USER.INFO", b"", timeout=3)).data)
        assert info["data"]["account"] == setup.a.public
        await a.close()
        sys_nc = await connect(srv.url, user_credentials=setup.user("sys", "admin"))
        await sys_nc.close()
        key = Key.user()
        err, _ = await _errors(srv.url, user_credentials=creds(tmp_path / "r.creds", user_jwt(rogue, key), key))
        assert err is not None
    finally:
        srv.stop()
    path.write_text(conf.replace(setup.op.public, setup.a.public))
    status, lines = refusal(server_kind, path)
    assert status == 1 and [ln.split(": ", 1)[1] for ln in lines] == [
        f'trust key "{setup.a.public}" required to be a valid public operator nkey'], lines
    full = Setup(tmp_path / "full", resolver="full")
    (tmp_path / "full").mkdir()
    path.write_text(re.sub(r'operator: "[^"]*"\n', f"trusted_keys: [{full.op.public}]\n", full.conf()))
    r = subprocess.run(binary(server_kind) + ["-c", str(path), "-p", "-1", "-sd", str(tmp_path / "full-store")],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and "Could not start resolver: no operator key found" in r.stderr + r.stdout
