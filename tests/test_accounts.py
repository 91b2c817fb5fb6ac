"""Accounts from the config file on both servers: subject spaces kept apart,
users per account (passwords, nkeys, no_auth_user), and exports/imports of
streams (prefix, to) and services (to), with nats-py. The configurations
are nats.py's own no_auth_user.conf and nkeys_server.conf, and small ones
of ours."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from conftest import RawClient, ServerProcess, connect, eventually, nats_server_binary

# nats.py's nats/tests/conf/no_auth_user.conf, without its fixed port
NO_AUTH_USER = """
accounts {
  a {
    users = [ { user: 'foo', pass: 'foo',
      permissions: {
        subscribe: { allow: ["foo", "_INBOX.>"], deny: ["bar"] },
        publish: { allow: ["foo", "_INBOX.>"], deny: ["bar"] }
      }
    }]
  }
  b {
    users = [ { user: 'bar', pass: 'bar',
      permissions: {
        subscribe: { allow: ["bar"], deny: [">"] },
        publish: { allow: ["bar"], deny: [">"] }
      }
    }]
  }
}
no_auth_user = "foo"
"""

SHARED = """
authorization { users = [ {user: g, password: g} ] }
accounts {
  A {
    users = [ {user: a, password: a} ]
    exports = [
      {stream: "news.>"}
      {stream: "private.>", accounts: [B]}
      {service: "help"}
      {service: "calc.*", accounts: [B]}
    ]
  }
  B {
    users = [ {user: b, password: b} ]
    imports = [
      {stream: {account: A, subject: "news.>"}, prefix: "from_a"}
      {stream: {account: A, subject: "private.>"}}
      {service: {account: A, subject: "help"}, to: "a.help"}
      {service: {account: A, subject: "calc.*"}}
    ]
  }
  C {
    users = [ {user: c, password: c} ]
  }
}
"""


def start(kind, tmp_path, conf: str) -> ServerProcess:
    path = tmp_path / "acc.conf"
    path.write_text(conf)
    srv = ServerProcess(kind, tmp_path / "store", extra=["-c", str(path)])
    srv.start()
    return srv


@pytest.fixture
def shared(server_kind, tmp_path):
    srv = start(server_kind, tmp_path, SHARED)
    yield srv
    srv.stop()


async def drain(sub, wait: float = 0.3) -> list[tuple[str, bytes]]:
    out = []
    try:
        while True:
            m = await sub.next_msg(timeout=wait)
            out.append((m.subject, m.data))
    except asyncio.TimeoutError:
        return out


async def test_accounts_are_apart(shared):
    """Users of A, C and the global account each see only their own
    account's messages on the same subjects; CONNECT's INFO names the account."""
    url = shared.url.replace("nats://", "nats://{0}:{0}@")
    ncs = {u: await connect(url.format(u)) for u in ("a", "c", "g")}
    subs = {u: await nc.subscribe("room.>") for u, nc in ncs.items()}
    for nc in ncs.values():
        await nc.flush()
    for u, nc in ncs.items():
        await nc.publish("room.x", f"from {u}".encode())
        await nc.flush()
    for u, sub in subs.items():
        assert await drain(sub) == [("room.x", f"from {u}".encode())]
    for u, name in (("a", "A"), ("c", "C"), ("g", "$G")):
        raw = await RawClient.open(shared, connect=json.dumps({"verbose": False, "protocol": 1, "user": u, "pass": u}))
        line = (await asyncio.wait_for(raw.reader.readline(), 3)).decode()
        assert json.loads(line[5:])["remote_account"] == name
        raw.close()
    for nc in ncs.values():
        await nc.close()


async def test_stream_exports(shared):
    """A's public stream reaches B under B's prefix, its private one (exported
    to B only) as is; nothing reaches C or A's other subjects."""
    url = shared.url.replace("nats://", "nats://{0}:{0}@")
    a, b, c = [await connect(url.format(u)) for u in "abc"]
    sub_b = await b.subscribe(">")
    sub_c = await c.subscribe(">")
    await b.flush()
    await c.flush()
    await b.flush()
    await c.flush()
    for subj in ("news.today", "private.note", "other.thing"):
        await a.publish(subj, subj.encode())
    await a.flush()
    assert sorted(await drain(sub_b)) == [("from_a.news.today", b"news.today"), ("private.note", b"private.note")]
    assert await drain(sub_c) == []
    # and not the other way round: B's publishes stay in B
    sub_a = await a.subscribe(">")
    await a.flush()
    await a.flush()
    await b.publish("news.today", b"from b")
    await b.flush()
    assert await drain(sub_a) == []
    for nc in (a, b, c):
        await nc.close()


async def test_service_exports(shared):
    """B's requests on its imports reach A's services (under A's subject) and
    the answers come back; C has no import and gets no responders."""
    url = shared.url.replace("nats://", "nats://{0}:{0}@")
    a, b, c = [await connect(url.format(u)) for u in "abc"]
    seen = []

    async def helper(m):
        seen.append((m.subject, m.reply.split(".")[0]))
        await m.respond(b"help:" + m.data)

    async def calc(m):
        await m.respond(str(sum(int(x) for x in m.data.split())).encode())

    await a.subscribe("help", cb=helper)
    await a.subscribe("calc.sum", cb=calc)
    await a.flush()
    await a.flush()
    assert (await b.request("a.help", b"me", timeout=2)).data == b"help:me"
    assert (await b.request("calc.sum", b"1 2 3", timeout=2)).data == b"6"
    assert seen == [("help", "_R_")]  # A sees its own subject and a mapped reply
    from nats.errors import NoRespondersError

    with pytest.raises(NoRespondersError):
        await c.request("a.help", b"me", timeout=2)
    with pytest.raises(NoRespondersError):
        await b.request("help", b"not imported under this name", timeout=2)
    for nc in (a, b, c):
        await nc.close()


async def test_nats_py_no_auth_user(server_kind, tmp_path):
    """nats.py's NoAuthUserClientTest: bar (account b) may not subscribe to
    foo; a client without credentials is foo in account a and answers its
    own requests."""
    srv = start(server_kind, tmp_path, NO_AUTH_USER)
    try:
        for kw in ({"user": "bar", "password": "bar"}, {}):
            fut = asyncio.get_running_loop().create_future()

            async def err_cb(e):
                if not fut.done():
                    fut.set_result(e)

            url = srv.url if kw else srv.url.replace("nats://", "nats://bar:bar@")
            nc = await connect(url, error_cb=err_cb, **kw)
            await nc.subscribe("foo")
            await nc.flush()
            await nc.publish("foo", b"hello")
            err = await asyncio.wait_for(fut, 2)
            assert str(err) == 'nats: permissions violation for subscription to "foo"'
            nc2 = await connect(srv.url)

            async def cb(msg):
                await msg.respond(b"pong")

            await nc2.subscribe("foo", cb=cb)
            await nc2.flush()
            assert (await nc2.request("foo", b"ping", timeout=2)).data == b"pong"
            await nc2.close()
            await nc.close()
    finally:
        srv.stop()


async def test_nkey_user_in_account(server_kind, tmp_path):
    """nats.py's nkeys_server.conf: an nkey user of account acme."""
    nkeys = pytest.importorskip("nkeys")
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    public = nkeys.from_seed(seed).public_key.decode()
    conf = ("accounts {\n  acme {\n    users [\n      {\n         nkey = \"%s\",\n"
            "         permissions = {\n           subscribe = { allow = [\"help\", \"_INBOX.>\"], deny = [\"foo\"] }\n"
            "           publish = { allow = [\"help\", \"_INBOX.>\"], deny = [\"foo\"] }\n         }\n"
            "      }\n    ]\n  }\n}\n") % public
    srv = start(server_kind, tmp_path, conf)
    try:
        nc = await connect(srv.url, nkeys_seed_str=seed.decode())

        async def help_cb(m):
            await m.respond(b"OK")

        await nc.subscribe("help", cb=help_cb)
        await nc.flush()
        assert (await nc.request("help", b"?", timeout=2)).data == b"OK"
        await nc.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("conf, words", [
    ("accounts {\n  A { users = [ {user: x, password: x} ] }\n  B { users = [ {user: x, password: y} ] }\n}\n",
     'Duplicate user "x" detected'),
    ("accounts {\n  A { }\n  B { imports = [ {stream: {account: A, subject: foo}} ] }\n}\n",
     'Error adding stream import "foo": stream import not authorized'),
    ("accounts {\n  A { exports = [ {service: foo, accounts: [C]} ] }\n  B { }\n  C { }\n"
     "  B2 { imports = [ {service: {account: A, subject: foo}} ] }\n}\n",
     'Error adding service import "foo": service import not authorized'),
    ("accounts {\n  B { imports = [ {stream: {account: Z, subject: foo}} ] }\n}\n",
     '"Z" account not defined for stream import'),
    ("accounts {\n  $G { }\n}\n", '"$G" is a Reserved Account'),
    ("authorization { user: u, password: p }\naccounts {\n  A { users = [ {user: a, password: a} ] }\n}\n",
     # (nats-server's own wording depends on which block its map iteration meets first)
     ("Can not have a single user/pass and accounts", "Can not have a single user/pass and a users array")),
])
def test_bad_accounts(tmp_path, conf, words):
    path = tmp_path / "bad.conf"
    path.write_text(conf)
    for cmd in ([sys.executable, "-m", "natslab.server"], [nats_server_binary()]):
        r = subprocess.run(cmd + ["-p", "-1", "-c", str(path)], capture_output=True, text=True, timeout=20)
        words_any = (words,) if isinstance(words, str) else words
        assert r.returncode != 0 and any(w in r.stdout + r.stderr for w in words_any), (cmd[0], r.stdout + r.stderr)


async def test_jetstream_not_enabled_for_account(shared):
    """The server runs JetStream (-js), but a configured account without a
    jetstream block has none: its API requests get 10039, direct gets no
    answer. (The global account differs: docs/compatibility.md.)"""
    a = await connect(shared.url.replace("nats://", "nats://a:a@"))
    for subj, body, rtype in (("$JS.API.INFO", b"", "account_info_response"),
                              ("$JS.API.STREAM.CREATE.X", b'{"name":"X"}', "stream_create_response"),
                              ("$JS.API.STREAM.NAMES", b"", "stream_names_response")):
        r = json.loads((await a.request(subj, body, timeout=2)).data)
        assert r["type"] == "io.nats.jetstream.api.v1." + rtype
        assert r["error"] == {"code": 503, "err_code": 10039, "description": "JetStream not enabled for account"}
    assert r["streams"] is None and r["total"] == 0
    from nats.errors import NoRespondersError

    with pytest.raises(NoRespondersError):
        await a.request("$JS.API.DIRECT.GET.X", b'{"seq":1}', timeout=2)
    await a.close()


JS_ACCOUNTS = """
authorization { users = [ {user: g, password: g} ] }
accounts {
  JS {
    jetstream: enabled
    users = [ {user: js, password: js} ]
    exports = [ {service: "$JS.API.>"}, {service: "$KV.>"} ]
  }
  OTHER {
    users = [ {user: o, password: o} ]
    imports = [
      {service: {account: JS, subject: "$JS.API.>"}}
      {service: {account: JS, subject: "$KV.>"}}
    ]
  }
}
"""


async def test_jetstream_account_and_kv_across_accounts(server_kind, tmp_path):
    """jetstream: enabled in one account: its users have JetStream, $G then
    has none (10039, as nats-server); another account reaches its KV bucket
    through service imports of $JS.API.> and $KV.> (reads, writes, PubAcks
    and direct gets all answered across)."""
    srv = start(server_kind, tmp_path, JS_ACCOUNTS)
    try:
        owner = await connect(srv.url.replace("nats://", "nats://js:js@"))
        kv = await owner.jetstream().create_key_value(bucket="shared")
        await kv.put("k", b"v1")
        other = await connect(srv.url.replace("nats://", "nats://o:o@"))
        kv2 = await other.jetstream().key_value("shared")
        assert (await kv2.get("k")).value == b"v1"
        rev = await kv2.put("k", b"v2")
        assert rev == 2
        assert (await kv.get("k")).value == b"v2"
        info = await other.jetstream().stream_info("KV_shared")
        assert info.state.messages == 1 and info.state.last_seq == 2
        g = await connect(srv.url.replace("nats://", "nats://g:g@"))
        r = json.loads((await g.request("$JS.API.INFO", b"", timeout=2)).data)
        assert r["error"]["err_code"] == 10039
        for nc in (owner, other, g):
            await nc.close()
    finally:
        srv.stop()


REMAP = """
accounts {
  A {
    jetstream: enabled
    users = [ {user: a, password: a} ]
    exports = [ {service: "$JS.API.>"}, {service: "calc.>"}, {service: "shared.*", accounts: [B]} ]
  }
  B {
    users = [ {user: b, password: b} ]
    imports = [
      {service: {account: A, subject: "$JS.API.>"}, to: "fromA.>"}
      {service: {account: A, subject: "calc.>"}, to: "b.calc.v1.>"}
      {service: {account: A, subject: "shared.*"}, to: "s.*", share: true}
    ]
  }
}
"""


async def test_service_import_remapped_across_token_counts(server_kind, tmp_path):
    """A service import whose local subject has another number of tokens
    than the exported one (fromA.> for $JS.API.>) is remapped wildcard by
    wildcard: B reaches A's JetStream API, and A's responder sees calc.add.1
    for b.calc.v1.add.1; each request carries Nats-Request-Info with the
    requester's account (and, with share: true, its connection details)."""
    srv = start(server_kind, tmp_path, REMAP)
    try:
        a = await connect(srv.url.replace("nats://", "nats://a:a@"))
        await a.jetstream().add_stream(name="ORDERS", subjects=["orders.>"])
        b = await connect(srv.url.replace("nats://", "nats://b:b@"), name="bee")
        r = json.loads((await b.request("fromA.STREAM.INFO.ORDERS", b"", timeout=2)).data)
        assert r["type"] == "io.nats.jetstream.api.v1.stream_info_response" and r["config"]["name"] == "ORDERS"
        r = json.loads((await b.request("fromA.INFO", b"", timeout=2)).data)
        assert r["type"] == "io.nats.jetstream.api.v1.account_info_response" and r["streams"] == 1
        seen = []

        async def answer(msg):
            seen.append((msg.subject, msg.headers))
            await msg.respond(b"ok")

        await a.subscribe("calc.>", cb=answer)
        await a.subscribe("shared.*", cb=answer)
        await a.flush()
        await a.flush()
        assert (await b.request("b.calc.v1.add.1", b"1 2", timeout=2)).data == b"ok"
        assert (await b.request("s.x", b"", timeout=2)).data == b"ok"
        (s1, h1), (s2, h2) = seen
        assert s1 == "calc.add.1" and s2 == "shared.x"
        info = json.loads(h1["Nats-Request-Info"])
        assert info["acc"] == "B" and set(info) == {"acc", "rtt"}
        info = json.loads(h2["Nats-Request-Info"])
        assert info["acc"] == "B" and info["name"] == "bee" and info["lang"] == "python3"
        assert info["kind"] == "Client" and info["client_type"] == "nats" and info["host"] == "127.0.0.1"
        assert {"start", "id", "rtt", "ver", "server"} <= set(info)
        for nc in (a, b):
            await nc.close()
    finally:
        srv.stop()


PUSH_IMPORT = """
accounts {
  A {
    jetstream: enabled
    users = [ {user: a, password: a} ]
    exports = [ {stream: "deliver.>"}, {service: "$JS.ACK.>"} ]
  }
  B {
    users = [ {user: b, password: b} ]
    imports = [ {stream: {account: A, subject: "deliver.>"}}, {service: {account: A, subject: "$JS.ACK.>"}} ]
  }
}
"""


async def test_push_consumer_delivers_to_importing_account(server_kind, tmp_path):
    """A push consumer whose deliver subject another account imports as a
    stream: that account's subscriber on the deliver subject is its
    interest, and gets the deliveries (the stream's subjects on the MSG
    line, the ack reply that acks them through a service import of
    $JS.ACK.>)."""
    srv = start(server_kind, tmp_path, PUSH_IMPORT)
    try:
        b = await RawClient.open(srv, connect=json.dumps({"verbose": False, "pedantic": False, "headers": True,
                                                          "protocol": 1, "user": "b", "pass": "b"}))
        await b.send("SUB deliver.b 1\r\n")
        assert await b.read_until_pong() == []
        a = await connect(srv.url.replace("nats://", "nats://a:a@"))
        js = a.jetstream()
        await js.add_stream(name="S", subjects=["orders.>"])
        from nats.js.api import ConsumerConfig

        await js.add_consumer("S", ConsumerConfig(durable_name="pb", deliver_subject="deliver.b"))
        await js.publish("orders.1", b"one")
        await js.publish("orders.2", b"two")
        got = []
        while len(got) < 2:
            line = await b.readline()
            if line.startswith("MSG "):
                got.append((line.split(), await b.readline()))
        assert [(m[1], m[2], d) for m, d in got] == [("orders.1", "1", "one"), ("orders.2", "1", "two")]
        assert all(m[3].startswith("$JS.ACK.S.pb.1.") for m, _ in got)
        await b.send(f"PUB {got[0][0][3]} 0\r\n\r\n")
        assert await b.read_until_pong() == []

        async def acked():
            return (await js.consumer_info("S", "pb")).ack_floor.stream_seq == 1

        assert await eventually(acked)
        # interest that comes after the consumer: B subscribes later
        await js.add_consumer("S", ConsumerConfig(durable_name="late", deliver_subject="deliver.late"))
        await b.send("SUB deliver.late 2\r\n")
        got = []
        while len(got) < 2:
            line = await b.readline()
            if line.startswith("MSG "):
                got.append((line.split()[1:3], await b.readline()))
        assert got == [(["orders.1", "2"], "one"), (["orders.2", "2"], "two")]
        await a.close()
        b.close()
    finally:
        srv.stop()


async def test_account_limits_block(server_kind, tmp_path):
    """accounts { A { limits { max_connections, max_subscriptions,
    max_payload } } } as nats-server applies them, with its -ERR lines: the
    connection over the account's count is refused, a SUB over the
    subscriptions and a PUB over the payload get their errors, and the
    other accounts are not limited."""
    from conftest import RawClient
    from test_config_file import started

    srv = started(server_kind, tmp_path, """listen: 127.0.0.1:{port}
accounts {
  A { users: [ {user: a, password: a} ], limits: { max_conn: 2, max_subs: 2, max_payload: 8, max_leafnodes: 1 } }
  B { users: [ {user: b, password: b} ] }
}
""")
    login = '{"verbose":false,"pedantic":false,"protocol":1,"user":"%s","pass":"%s"}'
    try:
        a1 = await RawClient.open(srv, connect=login % ("a", "a"))
        a2 = await RawClient.open(srv, connect=login % ("a", "a"))
        a3 = await RawClient.open(srv, connect=None)
        await a3.send("CONNECT " + login % ("a", "a") + "\r\nPING\r\n")
        assert await a3.readline() == "-ERR 'maximum account active connections exceeded'"
        assert await a3.closed()
        await a1.send("SUB x.1 1\r\nSUB x.2 2\r\nSUB x.3 3\r\n")
        assert await a1.read_until_pong() == ["-ERR 'maximum subscriptions exceeded'"]
        await a1.send("PUB x.1 8\r\n12345678\r\n")
        assert await a1.read_until_pong() == ["MSG x.1 1 8", "12345678"]
        await a1.send("PUB x.1 9\r\n123456789\r\n")
        assert await a1.readline() == "-ERR 'Maximum Payload Violation'"
        assert await a1.closed()
        b = await RawClient.open(srv, connect=login % ("b", "b"))
        await b.send("SUB y.1 1\r\nSUB y.2 2\r\nSUB y.3 3\r\nPUB y.1 9\r\n123456789\r\n")
        assert await b.read_until_pong() == ["MSG y.1 1 9", "123456789"]
        # a1 is gone: A has room for one more connection (once the server has let a1 go)
        async def fourth() -> bool:
            c = await RawClient.open(srv, connect=None)
            await c.send("CONNECT " + login % ("a", "a") + "\r\nPING\r\n")
            ok = await c.readline() == "PONG"
            c.close()
            return ok

        for _ in range(50):
            if await fourth():
                break
        else:
            raise AssertionError("A refused a second connection after the first closed")
        for c in (a2, b):
            c.close()
    finally:
        srv.stop()
