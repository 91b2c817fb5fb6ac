"""Fast batch publish (ADR-50 fast ingest, ``allow_batched``), differential:
the same assertions hold on natslab's broker and on nats-server 2.15.1. The
batch is named by the reply subject (``<prefix>.<id>.<flow>.<gap>.<seq>.<op>.$FI``,
op 0 start, 1 append, 2 commit, 3 end of batch, 4 ping); the stream answers
with flow-control acks, gap and error reports and one PubAck at the end."""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import ServerProcess, connect, eventually, settled


async def req(nc, subject: str, body=None) -> dict:
    data = b"" if body is None else json.dumps(body).encode()
    return json.loads((await nc.request(subject, data, timeout=2)).data)


def R(batch_id: str, flow: int, gap: str, seq: int, op: int) -> str:
    return f"in.{batch_id}.{flow}.{gap}.{seq}.{op}.$FI"


class Inbox:
    """Everything the stream sends to ``in.>``, with the reply it answered."""

    def __init__(self, nc):
        self.nc = nc
        self.got: list[tuple[str, str]] = []

    async def start(self):
        async def cb(m):
            self.got.append((m.subject[3:-4], m.data.decode()))
        await self.nc.subscribe("in.>", cb=cb)
        await self.nc.flush()
        await self.nc.flush()

    async def pub(self, subject: str, reply: str, hdrs=None, data: bytes = b"x", answers: int = 0):
        """One message. One stream answers its messages in order, so this
        waits only for ``answers`` (to put them before a later stream's)."""
        before = len(self.got)
        await self.nc.publish(subject, data, reply=reply, headers=hdrs)
        await self.nc.flush()
        assert await eventually(lambda: len(self.got) >= before + answers), (reply, self.got[before:])


# (the reply a message had, what the stream sent to it), in order
EXPECTED = [
    ('a.3.fail.1.0', '{"error":{"code":400,"err_code":10205,"description":"batch publish is disabled"},"stream":"N","seq":0}'),
    ('bad', '{"error":{"code":400,"err_code":10206,"description":"batch publish pattern is invalid"},"stream":"F","seq":0}'),
    ('a.3.fail.2.1', '{"error":{"code":400,"err_code":10208,"description":"batch publish ID unknown"},"stream":"F","seq":0}'),
    ('xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx.3.fail.1.0', '{"error":{"code":400,"err_code":10207,"description":"batch publish ID is invalid"},"stream":"F","seq":0}'),
    ('a.3.fail.1.0', '{"type":"ack","seq":0,"msgs":3}'),
    ('a.3.fail.3.1', '{"type":"ack","seq":3,"msgs":3}'),
    ('a.3.fail.6.1', '{"type":"ack","seq":6,"msgs":3}'),
    ('a.3.fail.8.2', '{"stream":"F","seq":8,"batch":"a","count":8}'),
    ('b.2.fail.1.0', '{"type":"ack","seq":0,"msgs":2}'),
    ('b.2.fail.2.1', '{"type":"ack","seq":2,"msgs":2}'),
    ('b.2.fail.2.4', '{"type":"ack","seq":2,"msgs":2}'),
    ('b.2.fail.5.4', '{"type":"gap","last_seq":3,"seq":6}'),
    ('b.2.fail.5.4', '{"stream":"F","seq":10,"batch":"b","count":2}'),
    ('c.2.fail.1.0', '{"type":"ack","seq":0,"msgs":2}'),
    ('c.2.fail.3.1', '{"type":"gap","last_seq":2,"seq":3}'),
    ('c.2.fail.3.1', '{"stream":"F","seq":11,"batch":"c","count":1}'),
    ('d.2.ok.1.0', '{"type":"ack","seq":0,"msgs":2}'),
    ('d.2.ok.3.1', '{"type":"gap","last_seq":2,"seq":3}'),
    ('d.2.ok.3.1', '{"type":"ack","seq":2,"msgs":2}'),
    ('d.2.ok.4.1', '{"type":"err","seq":4,"error":{"code":400,"err_code":10060,"description":"expected stream does not match"}}'),
    ('d.2.ok.5.1', '{"type":"ack","seq":4,"msgs":2}'),
    ('d.2.ok.6.1', '{"type":"ack","seq":6,"msgs":2}'),
    ('d.2.ok.7.3', '{"stream":"F","seq":14,"batch":"d","count":6}'),
    ('e.0.fail.1.0', '{"type":"ack","seq":0,"msgs":10}'),
    ('e.0.fail.1.0', '{"error":{"code":400,"err_code":10060,"description":"expected stream does not match"},"stream":"F","seq":0}'),
    ('g.5.fail.1.2', '{"stream":"F","seq":15,"batch":"g","count":1}'),
    ('h.5.fail.1.0', '{"type":"ack","seq":0,"msgs":5}'),
    ('h.5.fail.2.1', '{"type":"err","seq":2,"error":{"code":400,"err_code":10060,"description":"expected stream does not match"}}'),
    ('h.5.fail.2.1', '{"stream":"F","seq":16,"batch":"h","count":1}'),
    ('h.5.fail.3.1', '{"error":{"code":400,"err_code":10208,"description":"batch publish ID unknown"},"stream":"F","seq":0}'),
]


async def test_fast_batch_flow_gaps_errors_and_commits(nc, js):
    r = await req(nc, "$JS.API.STREAM.CREATE.F", {"name": "F", "subjects": ["f.>"], "allow_batched": True})
    assert r["config"]["allow_batched"] is True
    await req(nc, "$JS.API.STREAM.CREATE.N", {"name": "N", "subjects": ["n.>"]})
    inbox = Inbox(nc)
    await inbox.start()
    p = inbox.pub
    await p("n.1", R("a", 3, "fail", 1, 0), answers=1)  # not allowed on N (stream N answers, before F does)
    await p("f.1", "in.bad.$FI")  # not a batch reply
    await p("f.1", R("a", 3, "fail", 2, 1))  # no such batch
    await p("f.1", R("x" * 65, 3, "fail", 1, 0))  # id too long
    # flow 3: an ack after every third stored message, the PubAck at the commit
    for i in range(1, 8):
        await p("f.1", R("a", 3, "fail", i, 0 if i == 1 else 1))
    await p("f.1", R("a", 3, "fail", 8, 2))
    # ping: the last flow ack again; a ping past the end is a gap, which ends a "fail" batch
    await p("f.1", R("b", 2, "fail", 1, 0))
    await p("f.1", R("b", 2, "fail", 2, 1))
    await p("f.1", R("b", 2, "fail", 2, 4))
    await p("f.1", R("b", 2, "fail", 5, 4))
    # a gap ends a "fail" batch with what was stored
    await p("f.1", R("c", 2, "fail", 1, 0))
    await p("f.1", R("c", 2, "fail", 3, 1))
    # "ok": gaps and errors are reported and the batch goes on; a duplicate is skipped; end of batch
    await p("f.1", R("d", 2, "ok", 1, 0))
    await p("f.1", R("d", 2, "ok", 3, 1))
    await p("f.1", R("d", 2, "ok", 4, 1), {"Nats-Expected-Stream": "Z"})
    await p("f.1", R("d", 2, "ok", 5, 1), {"Nats-Msg-Id": "m"})
    await p("f.1", R("d", 2, "ok", 6, 1), {"Nats-Msg-Id": "m"})
    await p("f.1", R("d", 2, "ok", 7, 3))
    # flow 0 means 10; the first message refused is answered as a publish
    await p("f.1", R("e", 0, "fail", 1, 0), {"Nats-Expected-Stream": "Z"})
    # a batch of one; an error later in a "fail" batch ends it
    await p("f.1", R("g", 5, "fail", 1, 2))
    await p("f.1", R("h", 5, "fail", 1, 0))
    await p("f.1", R("h", 5, "fail", 2, 1), {"Nats-Expected-Stream": "Z"})
    await p("f.1", R("h", 5, "fail", 3, 1))
    await eventually(lambda: len(inbox.got) >= len(EXPECTED))
    assert inbox.got == EXPECTED

    async def stored():  # (the API answers on a goroutine of its own, the stream stores on its own)
        return (await req(nc, "$JS.API.STREAM.INFO.F"))["state"]["messages"]
    assert await settled(stored, 16) == 16


async def test_fast_batch_messages_are_stored_as_they_come(nc, js):
    await req(nc, "$JS.API.STREAM.CREATE.F", {"name": "F", "subjects": ["f.>"], "allow_batched": True})
    inbox = Inbox(nc)
    await inbox.start()
    for i in range(1, 4):
        await inbox.pub(f"f.{i}", R("s", 100, "fail", i, 0 if i == 1 else 1), data=b"m%d" % i)
    # no commit yet, but stored (unlike an atomic batch), without batch headers
    async def stored():
        return (await req(nc, "$JS.API.STREAM.INFO.F"))["state"]["messages"]
    assert await settled(stored, 3) == 3
    m = await js.get_msg("F", 2)
    assert (m.subject, m.data, m.headers) == ("f.2", b"m2", None)
    await inbox.pub("f.4", R("s", 100, "fail", 4, 3))
    await eventually(lambda: inbox.got[-1][0] == "s.100.fail.4.3")
    assert inbox.got[-1] == ("s.100.fail.4.3", '{"stream":"F","seq":3,"batch":"s","count":3}')


@pytest.fixture
def short_batches(server_kind, tmp_path):
    conf = tmp_path / "batch.conf"
    conf.write_text('jetstream {\n  limits { batch { max_inflight_per_stream: 2, timeout: "300ms" } }\n}\n')
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf)])
    srv.start()
    yield srv
    srv.stop()


async def test_fast_batch_limits_and_timeout(short_batches):
    nc = await connect(short_batches.url)
    try:
        await req(nc, "$JS.API.STREAM.CREATE.F", {"name": "F", "subjects": ["f.>"], "allow_batched": True})
        inbox = Inbox(nc)
        await inbox.start()
        await inbox.pub("f.1", R("one", 4, "fail", 1, 0), answers=1)
        await inbox.pub("f.1", R("two", 4, "fail", 1, 0), answers=2)
        await inbox.pub("f.1", R("three", 4, "fail", 1, 0), answers=1)
        # a time to pass, not a state to wait for: all idle past the 300 ms
        # timeout (from after the last answer), so gone; 0.7 s to spare for
        # a busy machine that runs the broker's timer late
        await asyncio.sleep(1.0)
        await inbox.pub("f.1", R("one", 4, "fail", 2, 1), answers=1)
        assert inbox.got == [
            ("one.4.fail.1.0", '{"type":"ack","seq":0,"msgs":4}'),
            ("two.4.fail.1.0", '{"type":"ack","seq":0,"msgs":1}'),  # a second publisher starts slow
            ("two.4.fail.1.0", '{"type":"ack","seq":1,"msgs":2}'),  # and speeds up toward its share
            ("three.4.fail.1.0",
             '{"error":{"code":429,"err_code":10211,"description":"batch publish too many inflight"},'
             '"stream":"F","seq":0}'),
            ("one.4.fail.2.1",
             '{"error":{"code":400,"err_code":10208,"description":"batch publish ID unknown"},"stream":"F","seq":0}'),
        ]
    finally:
        await nc.close()


async def test_fast_batch_odd_replies_and_api_levels(nc, js):
    """Reply subjects that are not quite a fast batch, and Nats-Required-Api-Level
    on fast and atomic batches: the same answers as nats-server, never a crash."""
    await req(nc, "$JS.API.STREAM.CREATE.F", {"name": "F", "subjects": ["f.>"], "allow_batched": True,
                                              "allow_atomic": True})
    got = []

    async def cb(m):
        got.append((m.subject, m.data.decode()))

    await nc.subscribe("in.>", cb=cb)
    await nc.flush()
    await nc.flush()
    for reply in ["in.a.--5.fail.1.0.$FI", "in.b.-5.fail.1.0.$FI", "in.c.x.fail.1.0.$FI", "in.d.99999999.ok.1.0.$FI",
                  "in.e.5.maybe.1.0.$FI", "in.f.5.ok.0.0.$FI", "in.g.5.ok.1.9.$FI", "in.h.5.ok.2.0.$FI",
                  "in.i.5.ok.1.1.$FI", "in.j.5.ok.18446744073709551615.1.$FI", "in.$FI", "in.k.5.ok.1.0.$FI",
                  "in..5.ok.1.0.$FI", "in.5.ok.1.0.$FI"]:
        await nc.publish("f.1", b"x", reply=reply)  # (one stream answers in order)
        await nc.flush()
    for i, level in enumerate(("+-5", "+1", "6", "x")):
        h = {"Nats-Required-Api-Level": level}
        await nc.publish("f.1", b"x", reply="in.l%d.5.ok.1.0.$FI" % i, headers=h)
        await nc.flush()
        await nc.publish("f.1", b"x", reply="in.atom%d" % i,
                         headers={"Nats-Batch-Id": "z%d" % i, "Nats-Batch-Sequence": "1", **h})
        await nc.flush()
    expected = [
        ('in.a.--5.fail.1.0.$FI', '{"type":"ack","seq":0,"msgs":10}'),
        ('in.b.-5.fail.1.0.$FI', '{"type":"ack","seq":0,"msgs":1}'),
        ('in.b.-5.fail.1.0.$FI', '{"type":"ack","seq":1,"msgs":2}'),
        ('in.c.x.fail.1.0.$FI', '{"type":"ack","seq":0,"msgs":1}'),
        ('in.c.x.fail.1.0.$FI', '{"type":"ack","seq":1,"msgs":2}'),
        ('in.d.99999999.ok.1.0.$FI', '{"type":"ack","seq":0,"msgs":1}'),
        ('in.d.99999999.ok.1.0.$FI', '{"type":"ack","seq":1,"msgs":2}'),
        ('in.e.5.maybe.1.0.$FI', '{"error":{"code":400,"err_code":10206,"description":"batch publish pattern is invalid"},"stream":"F","seq":0}'),
        ('in.f.5.ok.0.0.$FI', '{"error":{"code":400,"err_code":10206,"description":"batch publish pattern is invalid"},"stream":"F","seq":0}'),
        ('in.g.5.ok.1.9.$FI', '{"error":{"code":400,"err_code":10206,"description":"batch publish pattern is invalid"},"stream":"F","seq":0}'),
        ('in.h.5.ok.2.0.$FI', '{"error":{"code":400,"err_code":10206,"description":"batch publish pattern is invalid"},"stream":"F","seq":0}'),
        ('in.i.5.ok.1.1.$FI', '{"error":{"code":400,"err_code":10206,"description":"batch publish pattern is invalid"},"stream":"F","seq":0}'),
        ('in.j.5.ok.18446744073709551615.1.$FI', '{"error":{"code":400,"err_code":10206,"description":"batch publish pattern is invalid"},"stream":"F","seq":0}'),
        ('in.$FI', '{"error":{"code":400,"err_code":10206,"description":"batch publish pattern is invalid"},"stream":"F","seq":0}'),
        ('in.k.5.ok.1.0.$FI', '{"type":"ack","seq":0,"msgs":1}'),
        ('in.k.5.ok.1.0.$FI', '{"type":"ack","seq":1,"msgs":2}'),
        ('in.5.ok.1.0.$FI', '{"error":{"code":400,"err_code":10206,"description":"batch publish pattern is invalid"},"stream":"F","seq":0}'),
        ('in.l0.5.ok.1.0.$FI', '{"error":{"code":412,"err_code":10185,"description":"JetStream minimum api level required"},"stream":"F","seq":0}'),
        ('in.atom0', '{"error":{"code":412,"err_code":10185,"description":"JetStream minimum api level required"},"stream":"F","seq":0}'),
        ('in.l1.5.ok.1.0.$FI', '{"type":"ack","seq":0,"msgs":1}'),
        ('in.l1.5.ok.1.0.$FI', '{"type":"ack","seq":1,"msgs":2}'),
        ('in.atom1', ''),
        ('in.l2.5.ok.1.0.$FI', '{"error":{"code":412,"err_code":10185,"description":"JetStream minimum api level required"},"stream":"F","seq":0}'),
        ('in.atom2', '{"error":{"code":412,"err_code":10185,"description":"JetStream minimum api level required"},"stream":"F","seq":0}'),
        ('in.l3.5.ok.1.0.$FI', '{"error":{"code":412,"err_code":10185,"description":"JetStream minimum api level required"},"stream":"F","seq":0}'),
        ('in.atom3', '{"error":{"code":412,"err_code":10185,"description":"JetStream minimum api level required"},"stream":"F","seq":0}'),
    ]
    await eventually(lambda: len(got) >= len(expected))
    assert got == expected
