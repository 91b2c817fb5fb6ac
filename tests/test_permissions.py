"""Subscribe and publish permissions on every delivery path, on both servers
(raw sockets, so the exact -ERR lines and MSG lines are compared).

A user allowed ``>`` and denied ``secret.>``, ``_INBOX.>`` and ``$JS.API.>``
may still subscribe to ``>`` (nats-server does not refuse a wider wildcard
over a deny): the denied subjects are filtered out at delivery, for plain
and queue subscriptions, core messages, JetStream push deliveries, stream
and service imports. ``allow_responses`` lets a responder answer the
requests it received, ``max`` times within ``expires``.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import RawClient, ServerProcess, connect, eventually

SPY_PERMS = '{subscribe: {allow: ">", deny: ["secret.>", "_INBOX.>", "$JS.API.>"]}}'
USERS = f"""[
    {{user: spy, password: spy, permissions: {SPY_PERMS}}}
    {{user: app, password: app}}
    {{user: other, password: other}}
  ]"""
CONFS = {
    "authorization": f"authorization {{\n  users = {USERS}\n}}\n",
    "accounts": f"accounts {{\n  A {{\n    users = {USERS}\n  }}\n}}\n",
}


def start(kind: str, tmp_path, conf: str) -> ServerProcess:
    path = tmp_path / "perms.conf"
    path.write_text(conf)
    srv = ServerProcess(kind, tmp_path / "store", extra=["-c", str(path)])
    srv.start()
    return srv


@pytest.fixture(params=list(CONFS))
def users_server(request, server_kind, tmp_path):
    srv = start(server_kind, tmp_path, CONFS[request.param])
    yield srv
    srv.stop()


def creds(user: str, password: str | None = None) -> str:
    return json.dumps({"verbose": False, "pedantic": False, "headers": True, "protocol": 1,
                       "user": user, "pass": password or user})


async def login(srv, user: str, password: str | None = None) -> RawClient:
    return await RawClient.open(srv, connect=creds(user, password))


async def lines_of(raw: RawClient) -> list[str]:
    """Every line up to a PONG, server PINGs left out."""
    return [ln for ln in await raw.read_until_pong() if ln != "PING"]


def msgs(lines: list[str]) -> list[tuple[str, str, str]]:
    """(subject, sid, payload) of each MSG in ``lines`` (payload lines follow them)."""
    out = []
    for i, ln in enumerate(lines):
        if ln.startswith("MSG "):
            parts = ln.split()
            out.append((parts[1], parts[2], lines[i + 1]))
    return out


async def test_wildcard_over_deny_is_filtered(users_server):
    """SUB > (plain and queue) is taken; a SUB inside a deny is refused, the
    queue one with 'using queue'; the denied subjects never reach '>'."""
    srv = users_server
    spy = await login(srv, "spy")
    await spy.send("SUB > 1\r\nSUB > q 2\r\nSUB secret.* 3\r\nSUB secret.x q 4\r\nSUB _INBOX.> 5\r\n")
    assert await lines_of(spy) == [
        "-ERR 'Permissions Violation for Subscription to \"secret.*\"'",
        "-ERR 'Permissions Violation for Subscription to \"secret.x\" using queue \"q\"'",
        "-ERR 'Permissions Violation for Subscription to \"_INBOX.>\"'",
    ]
    app = await login(srv, "app")
    await app.send("SUB _INBOX.app.* 1\r\n"
                   "PUB secret.k 1\r\na\r\nPUB public.k 1\r\nb\r\nPUB _INBOX.app.1 1\r\nc\r\n"
                   "PUB $JS.API.STREAM.NAMES 2\r\n{}\r\nPUB secret.deep.er 1\r\nd\r\nPUB end 1\r\ne\r\n")
    assert msgs(await lines_of(app)) == [("_INBOX.app.1", "1", "c")]
    # (the API's audit advisory may come at any time: not asserted)
    got = [m for m in msgs(await lines_of(spy)) if not m[0].startswith("$JS.EVENT.")]
    assert sorted(got) == [("end", "1", "e"), ("end", "2", "e"), ("public.k", "1", "b"), ("public.k", "2", "b")]
    spy.close()
    app.close()


async def test_request_reply_not_seen_by_spy(users_server):
    """Other users' requests are seen on '>', their replies on _INBOX are not."""
    srv = users_server
    spy = await login(srv, "spy")
    await spy.send("SUB > 1\r\n")
    assert await lines_of(spy) == []
    responder = await login(srv, "other")
    await responder.send("SUB svc 1\r\n")
    assert await lines_of(responder) == []
    app = await login(srv, "app")
    await app.send("SUB _INBOX.app.> 1\r\nPUB svc _INBOX.app.r1 3\r\nreq\r\n")
    assert await lines_of(app) == []
    assert await lines_of(responder) == ["MSG svc 1 _INBOX.app.r1 3", "req"]
    await responder.send("PUB _INBOX.app.r1 3\r\nrep\r\n")
    assert await lines_of(responder) == []
    assert await lines_of(app) == ["MSG _INBOX.app.r1 1 3", "rep"]
    assert await lines_of(spy) == ["MSG svc 1 _INBOX.app.r1 3", "req"]
    for c in (spy, responder, app):
        c.close()


async def test_queue_member_denied_others_take_it(users_server):
    """A queue group of a member that denies a subject and one that does
    not: every denied message goes to the other member (nats-server tries
    the next member), runs of identical PUBs and one-off subjects alike."""
    srv = users_server
    spy = await login(srv, "spy")
    other = await login(srv, "other")
    await spy.send("SUB > q 1\r\n")
    await other.send("SUB > q 7\r\n")
    assert await lines_of(spy) == [] and await lines_of(other) == []
    app = await login(srv, "app")
    n = 20
    same = "PUB secret.k 1\r\nx\r\n" * n
    distinct = "".join(f"PUB secret.k{i} 1\r\ny\r\n" for i in range(n))
    await app.send(same + distinct + "PUB public.k 1\r\nz\r\n" * n)
    assert await lines_of(app) == []
    to_spy = msgs(await lines_of(spy))
    to_other = msgs(await lines_of(other))
    assert not [m for m in to_spy if m[0].startswith("secret.")]
    assert [m for m in to_other if m[0] == "secret.k"] == [("secret.k", "7", "x")] * n
    assert sorted(m[0] for m in to_other if m[0].startswith("secret.k") and m[0] != "secret.k") == sorted(
        f"secret.k{i}" for i in range(n))
    assert len([m for m in to_spy + to_other if m[0] == "public.k"]) == n


async def test_jetstream_push_delivery_filtered(server_kind, tmp_path):
    """A push consumer's deliveries carry the stream subjects: to a client
    whose deny filter is on, the denied ones are not delivered; to one
    whose filter is off (only literal subscriptions) they are."""
    srv = start(server_kind, tmp_path, CONFS["authorization"])
    try:
        spy = await login(srv, "spy")
        await spy.send("SUB *.nothing 9\r\nSUB push.spy 1\r\n")  # the wildcard collides with secret.>
        plain = await login(srv, "spy")
        await plain.send("SUB push.plain 1\r\n")
        assert await lines_of(spy) == [] and await lines_of(plain) == []
        nc = await connect(srv.url, user="app", password="app")
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["secret.>", "public.>"])
        from nats.js.api import AckPolicy, ConsumerConfig

        for name in ("spy", "plain"):
            await js.add_consumer("S", ConsumerConfig(durable_name=name, deliver_subject=f"push.{name}",
                                                      ack_policy=AckPolicy.NONE))
        await js.publish("secret.a", b"1")
        await js.publish("public.a", b"2")
        await js.publish("public.b", b"3")
        got = []
        while len(got) < 2:
            line = await spy.readline()
            if line.startswith("MSG "):
                got.append((line.split()[1], await spy.readline()))
        assert got == [("public.a", "2"), ("public.b", "3")]
        got = []
        while len(got) < 3:
            line = await plain.readline()
            if line.startswith("MSG "):
                got.append((line.split()[1], await plain.readline()))
        assert got == [("secret.a", "1"), ("public.a", "2"), ("public.b", "3")]
        await nc.close()
        spy.close()
        plain.close()
    finally:
        srv.stop()


IMPORTS = """
accounts {
  A {
    users = [
      {user: a, password: a}
      {user: aspy, password: aspy, permissions: {subscribe: {deny: ["svc.secret"]}}}
    ]
    exports = [ {service: "svc.>"}, {stream: "feed.>"} ]
  }
  B {
    users = [
      {user: b, password: b}
      {user: bspy, password: bspy, permissions: {subscribe: {deny: ["feed.secret"]}}}
    ]
    imports = [
      {service: {account: A, subject: "svc.>"}}
      {stream: {account: A, subject: "feed.>"}}
    ]
  }
}
"""


async def test_imports_filtered(server_kind, tmp_path):
    """Service imports: a request whose subject the exporter's responder
    denies does not reach it (its wildcard is over the deny); the other one
    does and its answer comes back. Stream imports: the importer's wildcard
    subscriber gets the allowed subjects only."""
    srv = start(server_kind, tmp_path, IMPORTS)
    try:
        aspy = await login(srv, "aspy")
        await aspy.send("SUB svc.* 1\r\n")
        bspy = await login(srv, "bspy")
        await bspy.send("SUB feed.* 1\r\n")
        assert await lines_of(aspy) == [] and await lines_of(bspy) == []
        b = await login(srv, "b")
        await b.send("SUB _INBOX.b.* 1\r\nPUB svc.secret _INBOX.b.1 1\r\nx\r\nPUB svc.open _INBOX.b.2 1\r\ny\r\n")
        assert await lines_of(b) == []
        got = await lines_of(aspy)
        # a cross-account request carries Nats-Request-Info (nats-server's
        # header; its rtt is the requester's, not compared)
        assert got[0].startswith("HMSG svc.open 1 _R_.") and got[1:2] == ["NATS/1.0"] and got[-2:] == ["", "y"]
        info = [h for h in got[2:-2] if h.startswith("Nats-Request-Info: ")]
        assert len(info) == 1 and len(got) == 5
        info = json.loads(info[0].split(": ", 1)[1])
        assert info["acc"] == "B" and set(info) == {"acc", "rtt"}
        reply = got[0].split()[3]
        await aspy.send(f"PUB {reply} 2\r\nok\r\n")
        assert await lines_of(aspy) == []
        assert await lines_of(b) == ["MSG _INBOX.b.2 1 2", "ok"]
        a = await login(srv, "a")
        await a.send("PUB feed.secret 1\r\ns\r\nPUB feed.open 1\r\no\r\n")
        assert await lines_of(a) == []
        assert await lines_of(bspy) == ["MSG feed.open 1 1", "o"]
    finally:
        srv.stop()


RESPONSES = """
accounts {
  A {
    users = [
      {user: req, password: req}
      {user: r1, password: r1, permissions: {subscribe: "svc", allow_responses: true}}
      {user: r2, password: r2, permissions: {subscribe: "svc", publish: "pub.ok", allow_responses: {max: 2}}}
      {user: r3, password: r3, permissions: {subscribe: "svc", allow_responses: {max: -1, expires: "1h"}}}
      {user: r4, password: r4, permissions: {subscribe: "svc", allow_responses: {max: -1, expires: "50ms"}}}
      {user: r5, password: r5, permissions: {publish: ">", allow_responses: {max: 3, expires: "1m"}}}
    ]
  }
}
"""


@pytest.fixture
def responses_server(server_kind, tmp_path):
    srv = start(server_kind, tmp_path, RESPONSES)
    yield srv
    srv.stop()


async def _request(req: RawClient, responder: RawClient, n: int) -> str:
    inbox = f"_INBOX.req.{n}"
    await req.send(f"PUB svc {inbox} 1\r\nq\r\n")
    assert await lines_of(req) == []
    assert await lines_of(responder) == [f"MSG svc 1 {inbox} 1", "q"]
    return inbox


def denied(subject: str) -> str:
    return f"-ERR 'Permissions Violation for Publish to \"{subject}\"'"


async def test_allow_responses_once(responses_server):
    """allow_responses: true: one answer to each request received; no other
    publish (no publish allow list: allow_responses makes it empty)."""
    srv = responses_server
    req = await login(srv, "req")
    await req.send("SUB _INBOX.req.* 1\r\n")
    r1 = await login(srv, "r1")
    await r1.send("SUB svc 1\r\n")
    assert await lines_of(req) == [] and await lines_of(r1) == []
    await r1.send("PUB _INBOX.req.1 1\r\nx\r\n")  # nothing received on it yet
    assert await lines_of(r1) == [denied("_INBOX.req.1")]
    inbox = await _request(req, r1, 1)
    await r1.send(f"PUB {inbox} 1\r\na\r\nPUB {inbox} 1\r\nb\r\nPUB elsewhere 1\r\nc\r\n")
    assert await lines_of(r1) == [denied(inbox), denied("elsewhere")]
    assert await lines_of(req) == [f"MSG {inbox} 1 1", "a"]
    # a second request, answered with identical PUB lines in one read
    inbox = await _request(req, r1, 2)
    await r1.send(f"PUB {inbox} 1\r\na\r\n" * 3)
    assert await lines_of(r1) == [denied(inbox)] * 2
    assert await lines_of(req) == [f"MSG {inbox} 1 1", "a"]


async def test_allow_responses_max(responses_server):
    """{max: 2}: two answers per request, next to the publish allow list."""
    srv = responses_server
    req = await login(srv, "req")
    await req.send("SUB _INBOX.req.* 1\r\nSUB pub.ok 2\r\n")
    r2 = await login(srv, "r2")
    await r2.send("SUB svc 1\r\n")
    assert await lines_of(req) == [] and await lines_of(r2) == []
    inbox = await _request(req, r2, 1)
    await r2.send(f"PUB {inbox} 1\r\na\r\nPUB {inbox} 1\r\nb\r\nPUB {inbox} 1\r\nc\r\nPUB pub.ok 1\r\nd\r\n")
    assert await lines_of(r2) == [denied(inbox)]
    assert await lines_of(req) == [f"MSG {inbox} 1 1", "a", f"MSG {inbox} 1 1", "b", "MSG pub.ok 2 1", "d"]


async def test_allow_responses_unlimited(responses_server):
    """{max: -1, expires: 1h}: any number of answers."""
    srv = responses_server
    req = await login(srv, "req")
    await req.send("SUB _INBOX.req.* 1\r\n")
    r3 = await login(srv, "r3")
    await r3.send("SUB svc 1\r\n")
    assert await lines_of(req) == [] and await lines_of(r3) == []
    inbox = await _request(req, r3, 1)
    await r3.send(f"PUB {inbox} 1\r\na\r\n" * 5 + f"PUB {inbox} 1\r\nb\r\n" * 5)
    assert await lines_of(r3) == []
    assert msgs(await lines_of(req)) == [(inbox, "1", "a")] * 5 + [(inbox, "1", "b")] * 5


async def test_allow_responses_expires(responses_server):
    """{max: -1, expires: 50ms}: answers are allowed until the reply subject
    expires (polled: answers until one is refused; how many got through
    before depends on timing and is not asserted, only that each did)."""
    srv = responses_server
    req = await login(srv, "req")
    await req.send("SUB _INBOX.req.* 1\r\n")
    r4 = await login(srv, "r4")
    await r4.send("SUB svc 1\r\n")
    assert await lines_of(req) == [] and await lines_of(r4) == []
    inbox = await _request(req, r4, 1)
    answers = 0

    async def refused() -> bool:
        nonlocal answers
        await r4.send(f"PUB {inbox} 1\r\na\r\n")
        got = await lines_of(r4)
        if got == [denied(inbox)]:
            return True
        assert got == []
        answers += 1
        return False

    assert await eventually(refused, timeout=10)
    assert msgs(await lines_of(req)) == [(inbox, "1", "a")] * answers


def conn_types_conf(ws_port: int, where: str) -> str:
    users = """[
      {user: wsonly, password: w, allowed_connection_types: ["WEBSOCKET"]}
      {user: tcponly, password: t, connection_types: ["standard"]}
      {user: leaf, password: l, clients: ["LEAFNODE", "MQTT", "IN_PROCESS"]}
      {user: any, password: a}
    ]"""
    auth = (f"authorization {{\n  users = {users}\n}}\n" if where == "authorization"
            else f"accounts {{\n  A {{\n    users = {users}\n  }}\n}}\n")
    return f"websocket {{\n  port: {ws_port}\n  no_tls: true\n}}\n" + auth


@pytest.mark.parametrize("where", ["accounts", "authorization"])
async def test_allowed_connection_types(server_kind, tmp_path, where):
    """A user limited to WEBSOCKET gets 'Authorization Violation' over TCP
    and logs in over websocket; one limited to STANDARD (any case, any
    alias) the other way round; one with only types natslab has no listener
    for nowhere; a user without the key everywhere."""
    from conftest import free_port

    ws_port = free_port()
    srv = start(server_kind, tmp_path, conn_types_conf(ws_port, where))
    try:
        for user, pw, ok in (("wsonly", "w", False), ("tcponly", "t", True), ("leaf", "l", False), ("any", "a", True)):
            raw = await RawClient.open(srv, connect=None)
            await raw.send(f"CONNECT {creds(user, pw)}\r\nPING\r\n")
            if ok:
                assert await raw.readline() == "PONG", user
            else:
                assert await raw.readline() == "-ERR 'Authorization Violation'", user
                assert await raw.closed(), user
            raw.close()
        for user, pw, ok in (("wsonly", "w", True), ("tcponly", "t", False), ("leaf", "l", False), ("any", "a", True)):
            from wsraw import WSRaw, frame

            ws = await WSRaw.open(ws_port)
            assert (await ws.read_response()).startswith(b"HTTP/1.1 101")
            assert (await ws.read_data(b"\r\n")).startswith(b"INFO ")
            ws.send(frame(2, b"CONNECT " + creds(user, pw).encode() + b"\r\nPING\r\n"))
            if ok:
                assert (await ws.read_data(b"PONG\r\n")).startswith(b"PONG\r\n"), user
            else:
                data, _close = await ws.until_closed()
                assert data == b"-ERR 'Authorization Violation'\r\n", user
            ws.close()
    finally:
        srv.stop()


NO_AUTH = """
accounts {
  A {
    users = [
      {user: u, password: p, permissions: {publish: "ok.>"}}
      {user: w, password: w}
    ]
  }
}
no_auth_user: u
"""


async def test_commands_before_connect_run_as_no_auth_user(server_kind, tmp_path):
    """With no_auth_user, a client that sends commands without CONNECT is
    that user (nats-server's parser logs it in at its first command): in
    its account, under its permissions, verbose as before any CONNECT; a
    CONNECT after them authenticates again (bad credentials: Authorization
    Violation)."""
    srv = start(server_kind, tmp_path, NO_AUTH)
    try:
        w = await login(srv, "w")
        await w.send("SUB ok.x 1\r\n")
        assert await lines_of(w) == []
        bare = await RawClient.open(srv, connect=None)
        assert "auth_required" not in json.loads(bare.info[5:])
        await bare.send("SUB ok.> 5\r\nPUB ok.x 2\r\nhi\r\nPUB bad.x 1\r\nx\r\n")
        assert await lines_of(bare) == ["+OK", "+OK", "MSG ok.x 5 2", "hi",
                                        "-ERR 'Permissions Violation for Publish to \"bad.x\"'"]
        assert await lines_of(w) == ["MSG ok.x 1 2", "hi"]
        await w.send("PUB ok.y 1\r\nz\r\n")
        assert await lines_of(w) == []
        assert await lines_of(bare) == ["MSG ok.y 5 1", "z"]
        await bare.send(f"CONNECT {creds('w', 'bad')}\r\nPING\r\n")
        assert await bare.readline() == "-ERR 'Authorization Violation'"
        assert await bare.closed()
        w.close()
    finally:
        srv.stop()


async def test_request_only_denied_subscribers_gets_no_responders(users_server):
    """A request whose only subscribers filter it out was delivered to
    nobody: a requester that asked for no_responders gets the 503, as from
    nats-server; one that someone took does not."""
    srv = users_server
    spy = await login(srv, "spy")
    await spy.send("SUB > 1\r\nSUB * q 2\r\n")
    assert await lines_of(spy) == []
    app = await RawClient.open(srv, connect=json.dumps({
        "verbose": False, "pedantic": False, "headers": True, "no_responders": True, "protocol": 1,
        "user": "app", "pass": "app"}))
    await app.send("SUB _INBOX.a.* 1\r\nPUB secret.x _INBOX.a.1 1\r\nx\r\nPUB secret _INBOX.a.2 1\r\ny\r\n")
    assert await lines_of(app) == ["HMSG _INBOX.a.1 1 40 40", "NATS/1.0 503", "Nats-Subject: secret.x", "", ""]
    assert sorted(msgs(await lines_of(spy))) == [("secret", "1", "y"), ("secret", "2", "y")]
    spy.close()
    app.close()


MATCHING = """
authorization {
  users = [
    {user: m, password: m, permissions: {subscribe: {allow: ["foo.*", "jobs.> workers"], deny: ["foo.bad"]}}}
    {user: qd, password: qd, permissions: {subscribe: {deny: ["tasks.secret workers"]}}}
    {user: app, password: app}
  ]
}
"""


async def test_subscribe_permission_matching(server_kind, tmp_path):
    """A SUB's subject is matched against the lists token by token as
    nats-server's Sublist.Match does (foo.> is inside allow foo.*); entries
    with a queue allow or deny only queue subscriptions of that group."""
    srv = start(server_kind, tmp_path, MATCHING)
    try:
        m = await login(srv, "m")
        await m.send("SUB foo.> 1\r\nSUB foo.* 2\r\nSUB foo.bad 3\r\nSUB jobs.a 4\r\nSUB jobs.a workers 5\r\n"
                     "SUB jobs.a other 6\r\nSUB bar.x 7\r\n")
        v = "-ERR 'Permissions Violation for Subscription to "
        assert await lines_of(m) == [v + '"foo.bad"\'', v + '"jobs.a"\'', v + '"jobs.a" using queue "other"\'',
                                     v + '"bar.x"\'']
        qd = await login(srv, "qd")
        await qd.send("SUB tasks.secret 1\r\nSUB tasks.secret workers 2\r\nSUB tasks.* workers 3\r\n")
        assert await lines_of(qd) == [v + '"tasks.secret" using queue "workers"\'']
        app = await login(srv, "app")
        await app.send("PUB foo.bad 1\r\na\r\nPUB foo.ok 1\r\nb\r\nPUB tasks.secret 1\r\nc\r\nPUB tasks.open 1\r\nd\r\n"
                       "PUB jobs.a 1\r\ne\r\n")
        assert await lines_of(app) == []
        # m's foo.> and foo.* collide with the deny foo.bad: filtered there
        assert sorted(msgs(await lines_of(m))) == [("foo.ok", "1", "b"), ("foo.ok", "2", "b"), ("jobs.a", "5", "e")]
        # qd's queue subscription does not get tasks.secret; its plain one does
        assert sorted(msgs(await lines_of(qd))) == [("tasks.open", "3", "d"), ("tasks.secret", "1", "c")]
        for c in (m, qd, app):
            c.close()
    finally:
        srv.stop()


async def test_allow_responses_in_user_info(responses_server):
    """$SYS.REQ.USER.INFO shows allow_responses as nats-server does:
    responses {max, ttl in nanoseconds} next to the subject lists."""
    nc = await connect(responses_server.url, user="r5", password="r5")
    info = json.loads((await nc.request("$SYS.REQ.USER.INFO", b"", timeout=2)).data)["data"]
    assert info["permissions"]["responses"] == {"max": 3, "ttl": 60_000_000_000}
    assert info["permissions"]["publish"] == {"allow": [">"]}
    await nc.close()


@pytest.mark.parametrize("bad, message", [
    ('permissions: {allow_responses: "yes"}', "error parsing response permissions, expected a boolean or a map"),
    ("permissions: {allow_responses: {max: 2, expires: 5}}", "error parsing expires, not a duration string"),
    ('permissions: {allow_responses: {expires: "abc"}}', 'error parsing expires: time: invalid duration "abc"'),
    ("permissions: {allow_responses: {maxx: 1}}", 'Unknown field "maxx" parsing permissions'),
    ('allowed_connection_types: ["websocket", "bogus"]', 'invalid connection types ["BOGUS"]'),
])
def test_bad_user_settings_refused_at_start(server_kind, tmp_path, bad, message):
    """A bad allow_responses or connection type in an account user stops
    the start-up with nats-server's words (not the user's first CONNECT)."""
    import subprocess
    import sys

    from conftest import nats_server_binary

    conf = tmp_path / "bad.conf"
    conf.write_text(f"accounts {{\n  A {{\n    users = [ {{user: r, password: r, {bad}}} ]\n  }}\n}}\n")
    cmd = ([sys.executable, "-m", "natslab.server"] if server_kind == "natslab" else [nats_server_binary()])
    r = subprocess.run(cmd + ["-a", "127.0.0.1", "-p", "-1", "-c", str(conf)], capture_output=True, text=True,
                       timeout=20)
    assert r.returncode != 0
    assert message in r.stdout + r.stderr


async def test_pull_deliveries_and_pubacks_on_a_wildcard_over_deny(server_kind, tmp_path):
    """What a '>' subscriber denied _INBOX.> sees of another user's
    JetStream traffic: the PubAcks (MSG subject _INBOX...) are filtered; a
    pull delivery to an _INBOX reply carries the stream subject on its MSG
    line, which is what both servers check, so it is not filtered."""
    srv = start(server_kind, tmp_path, CONFS["authorization"])
    try:
        nc = await connect(srv.url, user="app", password="app")
        js = nc.jetstream()
        await js.add_stream(name="P", subjects=["orders.>"])
        from nats.js.api import AckPolicy, ConsumerConfig

        await js.add_consumer("P", ConsumerConfig(durable_name="c", ack_policy=AckPolicy.NONE))
        spy = await login(srv, "spy")
        await spy.send("SUB > 1\r\n")
        assert await lines_of(spy) == []
        app = await login(srv, "app")
        await app.send("SUB _INBOX.app.> 1\r\nPUB orders.1 _INBOX.app.ack 1\r\nx\r\n")
        line = await app.readline()  # the PubAck (JetStream answers when stored: waited for, not PONGed)
        assert line.startswith("MSG _INBOX.app.ack 1 ") and '"stream":"P"' in await app.readline()
        await app.send('PUB $JS.API.CONSUMER.MSG.NEXT.P.c _INBOX.app.pull 11\r\n{"batch":1}\r\n')
        line = await app.readline()
        assert line.startswith("MSG orders.1 1 $JS.ACK.P.c.1.1.1.")
        assert await app.readline() == "x"
        seen = [m[0] for m in msgs(await lines_of(spy))]
        # the publish, the pull request (its $JS.API subject is denied: not seen), the delivery
        assert [s for s in seen if not s.startswith("$JS.EVENT.")] == ["orders.1", "orders.1"]
        await nc.close()
        spy.close()
        app.close()
    finally:
        srv.stop()


SERVICE_RESPONSES = """
accounts {
  A {
    users = [ {user: resp, password: resp, permissions: {subscribe: "svc.>", allow_responses: true}} ]
    exports = [ {service: "svc.>"} ]
  }
  B {
    users = [ {user: b, password: b} ]
    imports = [ {service: {account: A, subject: "svc.>"}, to: "a.svc.>"} ]
  }
}
"""


async def test_allow_responses_across_a_service_import(server_kind, tmp_path):
    """A responder that may only answer gets a request through a service
    import (its reply an _R_ subject of its account): its one answer goes
    back to the requester in the other account, a second is refused."""
    srv = start(server_kind, tmp_path, SERVICE_RESPONSES)
    try:
        resp = await login(srv, "resp")
        await resp.send("SUB svc.> 1\r\n")
        assert await lines_of(resp) == []
        b = await login(srv, "b")
        await b.send("SUB _INBOX.b.* 1\r\nPUB a.svc.time _INBOX.b.1 1\r\nq\r\n")
        assert await lines_of(b) == []
        got = await lines_of(resp)
        assert got[0].startswith("HMSG svc.time 1 _R_.") and got[-1] == "q"
        reply = got[0].split()[3]
        await resp.send(f"PUB {reply} 2\r\nok\r\nPUB {reply} 2\r\nno\r\n")
        assert await lines_of(resp) == [denied(reply)]
        assert await lines_of(b) == ["MSG _INBOX.b.1 1 2", "ok"]
    finally:
        srv.stop()
