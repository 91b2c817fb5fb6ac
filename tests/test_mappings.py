"""Subject mappings (``mappings {}``, top-level for the global account and
in accounts {}) as nats-server applies them to a client's publishes:
literal and wildcard sources, weighted destinations (the rest of 100 to the
subject itself, or lost when the source is one of them), JetStream storing
the mapped subject, publish permissions checked on the mapped subject, and
nats-server's configuration errors. Differential: each file runs on natslab
and on nats-server with the same assertions."""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import connect
from test_cli import refusal
from test_config_file import started

MAPPINGS = """listen: 127.0.0.1:{port}
jetstream { max_mem: 64MB }
mappings {
  orders.new: orders.v2
  "svc.*.*": "svc.$2.$1"
  split: [ {destination: split.a, weight: 50%}, {destination: split.b, weight: 50} ]
  some: [ {destination: some.more, weight: 40} ]
  lossy: [ {destination: lossy, weight: 0}, {destination: lossy.kept, weight: 0} ]
}
"""


async def received(sub, until: bytes) -> list[tuple[str, bytes]]:
    """What ``sub`` got up to and without the message ``until`` (published last)."""
    out = []
    while True:
        m = await sub.next_msg(timeout=5)
        if m.data == until:
            return out
        out.append((m.subject, m.data))


async def test_top_level_mappings(server_kind, tmp_path):
    srv = started(server_kind, tmp_path, MAPPINGS)
    try:
        nc = await connect(srv.url)
        sub = await nc.subscribe(">")
        await nc.flush()
        await nc.flush()
        await nc.publish("orders.new", b"1")
        await nc.publish("svc.a.b", b"2")
        await nc.publish("lossy", b"3")
        await nc.publish("other", b"4")
        await nc.publish("end", b"end")
        assert await received(sub, b"end") == [("orders.v2", b"1"), ("svc.b.a", b"2"), ("other", b"4")]
        # weights: 50/50 over two destinations; 40 to one and the other 60 to the subject itself
        for i in range(200):
            await nc.publish("split", b"s")
            await nc.publish("some", b"m")
        await nc.publish("end", b"end")
        got = await received(sub, b"end")
        counts = {s: sum(1 for subject, _ in got if subject == s) for s in {s for s, _ in got}}
        assert set(counts) == {"split.a", "split.b", "some", "some.more"}, counts
        assert counts["split.a"] + counts["split.b"] == 200 and counts["some"] + counts["some.more"] == 200
        # a request on a mapped subject finds the responder of the mapped one
        async def answer(m):
            await m.respond(b"ok:" + m.data)

        resp = await nc.subscribe("orders.v2", cb=answer)
        await nc.flush()
        assert (await nc.request("orders.new", b"r", timeout=5)).data == b"ok:r"
        await resp.unsubscribe()
        # JetStream stores the subject the message was mapped to
        js = nc.jetstream()
        await js.add_stream(name="O", subjects=["orders.v2"], storage="memory")
        ack = await js.publish("orders.new", b"j")
        assert ack.stream == "O" and ack.seq == 1
        assert (await js.get_msg("O", 1)).subject == "orders.v2"
        await nc.close()
    finally:
        srv.stop()


async def test_account_mappings_and_publish_permissions(server_kind, tmp_path):
    """An account's mappings are its clients' only (another account's
    publish on the same subject is not mapped); the publish permission is
    checked against the subject the message is mapped to."""
    srv = started(server_kind, tmp_path, """listen: 127.0.0.1:{port}
accounts {
  A {
    users = [ {user: a, password: a}
              {user: only_v2, password: p, permissions: {publish: "orders.v2", subscribe: ">"}}
              {user: only_new, password: p, permissions: {publish: "orders.new", subscribe: ">"}} ]
    mappings { orders.new: orders.v2 }
  }
  B { users = [ {user: b, password: b} ] }
}
""")
    try:
        a = await connect(srv.url, user="a", password="a")
        b = await connect(srv.url, user="b", password="b")
        errors = []

        async def on_error(e):
            errors.append(str(e))

        v2 = await connect(srv.url, user="only_v2", password="p")
        new = await connect(srv.url, user="only_new", password="p", error_cb=on_error)
        suba, subb = await a.subscribe(">"), await b.subscribe(">")
        for nc in (a, b):
            await nc.flush()
            await nc.flush()
        await b.publish("orders.new", b"b")
        await b.publish("end", b"end")
        assert await received(subb, b"end") == [("orders.new", b"b")]
        await v2.publish("orders.new", b"allowed")  # mapped to orders.v2, which it may publish
        await new.publish("orders.new", b"denied")  # mapped to orders.v2, which it may not
        await v2.flush()
        await new.flush()
        await a.publish("end", b"end")
        assert await received(suba, b"end") == [("orders.v2", b"allowed")]
        for _ in range(100):
            if errors:
                break
            await asyncio.sleep(0.05)
        assert errors and 'permissions violation for publish to "orders.v2"' in errors[0].lower()
        for nc in (a, b, v2, new):
            await nc.close()
    finally:
        srv.stop()


BAD = {
    "index": ('mappings {\n  "foo.*": "bar.$2"\n}\n',
              'c.conf:3:4: Error adding mapping for "foo.*" to "bar.$2" : invalid mapping destination: '
              'wildcard index out of range in $2: [2]'),
    "subject": ('mappings {\n  "foo..bar": baz\n}\naccounts { A { mappings { "a.>.b": c } } }\n',
                'c.conf:2:1: Subject "foo..bar" is not a valid subject',
                'c.conf:5:16: Subject "a.>.b" is not a valid subject'),
    "weights": ('mappings {\n  a: [ {destination: b, weight: 60}, {destination: c, weight: "50%"} ]\n'
                '  d: [ {destination: e, weight: 101} ]\n  f: [ {destination: g} ]\n  h: [ {dest: i, weight: 1, bogus: 2} ]\n}\n',
                'c.conf:3:3: Error adding mapping for "a" : total weight needs to be <= 100',
                'c.conf:4:25: Invalid weight 101 for mapping destination',
                'c.conf:5:24: Missing weight for mapping destination "g"',
                'c.conf:6:29: Unknown field "bogus" for mapping destination'),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_mappings_fail_the_same(server_kind, tmp_path, case):
    text, *want = BAD[case]
    (tmp_path / "c.conf").write_text("port: 1\n" + text)
    assert refusal(server_kind, tmp_path / "c.conf") == (1, set(want))


async def test_account_jwt_mappings_and_their_update(server_kind, tmp_path):
    """Operator mode: an account JWT's ``mappings`` (a weight left out is
    100) map its users' publishes; a claims update over $SYS replaces them,
    for the clients already connected too."""
    from test_jwt import Setup, _claims_update

    setup = Setup(tmp_path, a_extra={"mappings": {"orders.new": [{"subject": "orders.v2"}],
                                                  "svc.*.*": [{"subject": "svc.$2.$1", "weight": 100}]}})
    srv = setup.start(server_kind)
    try:
        a = await connect(srv.url, user_credentials=setup.user("a", "a1"))
        sys_nc = await connect(srv.url, user_credentials=setup.user("sys", "admin"))
        sub = await a.subscribe(">")
        await a.flush()
        await a.flush()
        await a.publish("orders.new", b"1")
        await a.publish("svc.x.y", b"2")
        await a.publish("end", b"end")
        assert await received(sub, b"end") == [("orders.v2", b"1"), ("svc.y.x", b"2")]
        resp = await _claims_update(sys_nc, f"$SYS.REQ.ACCOUNT.{setup.a.public}.CLAIMS.UPDATE",
                                    setup.a_account_jwt(mappings={"orders.new": [{"subject": "orders.v3"}]}))
        assert resp["data"]["code"] == 200
        await a.publish("orders.new", b"3")
        await a.publish("svc.x.y", b"4")
        await a.publish("end", b"end")
        assert await received(sub, b"end") == [("orders.v3", b"3"), ("svc.x.y", b"4")]
        await a.close()
        await sys_nc.close()
    finally:
        srv.stop()


IMPORTS = """listen: 127.0.0.1:{port}
accounts {
  A {
    users: [{user: a, password: a}]
    exports: [{service: "svc.>"}, {stream: "ev.>"}]
    mappings: { "svc.old": "svc.new", "ev.old": "ev.new" }
  }
  B {
    users: [{user: b, password: b}]
    imports: [{service: {account: A, subject: "svc.>"}}, {service: {account: A, subject: "svc.>"}, to: "viaA.>"},
              {stream: {account: A, subject: "ev.>"}}]
    mappings: { "req": "svc.old", "ev.new": "ev.remapped" }
  }
}
"""


async def test_mappings_and_imports(server_kind, tmp_path):
    """Where nats-server applies mappings around imports (client.go): the
    requester's account maps its publish before the service import is looked
    up; the exporting account maps the subject the import delivers to
    (processServiceImport's selectMappedSubject), also after a `to`; a
    stream import carries what the exporter's mapping made of its publish,
    and the importer's mappings do not apply to it."""
    srv = started(server_kind, tmp_path, IMPORTS)
    try:
        a = await connect(srv.url, user="a", password="a")
        b = await connect(srv.url, user="b", password="b")

        async def answer(m):
            await m.respond(m.subject.encode())

        await a.subscribe("svc.*", cb=answer)
        await a.flush()
        await a.flush()
        for asked in ("svc.old", "viaA.old", "req", "svc.other"):
            got = (await b.request(asked, b"", timeout=3)).data
            assert got == (b"svc.other" if asked == "svc.other" else b"svc.new"), asked
        events = await b.subscribe("ev.>")
        await b.flush()
        await b.flush()
        await a.publish("ev.old", b"1")
        await a.publish("ev.end", b"2")
        await a.flush()
        seen = [(m.subject, m.data) for m in [await events.next_msg(timeout=3) for _ in range(2)]]
        assert seen == [("ev.new", b"1"), ("ev.end", b"2")]
        await a.close()
        await b.close()
    finally:
        srv.stop()
