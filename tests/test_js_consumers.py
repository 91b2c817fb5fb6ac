"""JetStream consumers (issue 4), differential: pull and push delivery, acks,
redelivery, counters, retention that depends on consumers, and the consumer
API errors, with the same assertions on natslab and nats-server 2.15.1."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from nats.js import api
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import NotFoundError

from conftest import eventually, settled
from test_js_streams import err, req


async def info(nc, stream: str, consumer: str) -> dict:
    return await req(nc, f"$JS.API.CONSUMER.INFO.{stream}.{consumer}")


async def count(nc, stream: str, consumer: str) -> tuple:
    return counters(await info(nc, stream, consumer))


def counters(ci: dict) -> tuple:
    return ((ci["delivered"]["consumer_seq"], ci["delivered"]["stream_seq"]),
            (ci["ack_floor"]["consumer_seq"], ci["ack_floor"]["stream_seq"]),
            ci["num_ack_pending"], ci["num_redelivered"], ci["num_pending"])


def status(reply: str, *lines: str) -> list[str]:
    """The lines a raw client reads for a status-only HMSG (sid 1)."""
    n = len("\r\n".join(lines) + "\r\n\r\n")
    return [f"HMSG {reply} 1 {n} {n}", *lines, "", ""]


async def orders(js):
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in (1, 2, 3):
        await js.publish("orders.new", f"order-{i} payload".encode())
    await js.publish("orders.eu", b"order-eu-1 payload")


async def test_seed_worker_and_rdl(nc, js):
    """The seed: WORKER acks two; RDL leaves one unacked past its ack wait,
    pulls again (tries 2, num_redelivered 1), then acks the third delivery."""
    await orders(js)
    await js.add_consumer("ORDERS", api.ConsumerConfig(durable_name="WORKER", ack_policy="explicit",
                                                       deliver_policy="all", ack_wait=60))
    w = await js.pull_subscribe_bind("WORKER", "ORDERS")
    msgs = await w.fetch(2, timeout=2)
    assert [(m.metadata.sequence.stream, m.metadata.num_delivered, m.metadata.num_pending) for m in msgs] == [(1, 1, 3), (2, 1, 2)]
    for m in msgs:
        await m.ack_sync()
    ci = await info(nc, "ORDERS", "WORKER")
    assert counters(ci) == ((2, 2), (2, 2), 0, 0, 2)
    assert ci["config"]["max_ack_pending"] == 1000 and ci["config"]["ack_wait"] == 60 * 10**9

    await js.add_consumer("ORDERS", api.ConsumerConfig(durable_name="RDL", ack_policy="explicit", ack_wait=1))
    rdl = await js.pull_subscribe_bind("RDL", "ORDERS")
    (m,) = await rdl.fetch(1, timeout=2)
    await m.ack_sync()
    (m,) = await rdl.fetch(1, timeout=2)  # not acked
    delivered_by = asyncio.get_running_loop().time()  # (the server sent it before this)
    assert (m.metadata.sequence.consumer, m.metadata.sequence.stream, m.metadata.num_delivered) == (2, 2, 1)
    # a time to pass, not a state to wait for: the ack wait runs out with no
    # pull waiting, and that alone changes no counter
    await asyncio.sleep(max(0.0, delivered_by + 1.5 - asyncio.get_running_loop().time()))
    ci = await info(nc, "ORDERS", "RDL")
    assert counters(ci) == ((2, 2), (1, 1), 1, 0, 2)
    (m,) = await rdl.fetch(1, timeout=2)
    assert (m.metadata.sequence.consumer, m.metadata.sequence.stream, m.metadata.num_delivered,
            m.metadata.num_pending, m.data) == (3, 2, 2, 2, b"order-2 payload")
    delivered_by = asyncio.get_running_loop().time()
    ci = await info(nc, "ORDERS", "RDL")
    assert counters(ci) == ((3, 2), (1, 1), 1, 1, 2)
    # a time to pass: 3 and 4 are pending too, so the next pull gets 2 only
    # once its ack wait has run out
    await asyncio.sleep(max(0.0, delivered_by + 1.5 - asyncio.get_running_loop().time()))
    (m,) = await rdl.fetch(1, timeout=5)
    assert (m.metadata.sequence.consumer, m.metadata.sequence.stream, m.metadata.num_delivered) == (4, 2, 3)
    await m.ack_sync()
    ci = await info(nc, "ORDERS", "RDL")
    assert counters(ci) == ((4, 2), (4, 2), 0, 0, 2)
    assert ci["ack_floor"]["last_active"] and ci["delivered"]["last_active"]


async def test_waiting_pull_requests_served_in_turn(nc, js):
    """Two waiting pull requests take messages in turn, each counting down its
    own batch, whether the messages arrive one at a time or in a burst; the
    ack subjects name delivery count, sequences and pending as they go."""
    await js.add_stream(name="RR", subjects=["rr.>"])
    await js.add_consumer("RR", api.ConsumerConfig(durable_name="C", ack_policy="explicit"))
    got: dict[str, list] = {"a": [], "b": []}
    for who in got:
        async def keep(m, who=who):
            got[who].append(m)
        await nc.subscribe(f"rr_in.{who}", cb=keep)
    await nc.flush()
    await nc.flush()

    async def two_requests(batch_a: int, batch_b: int) -> None:
        for who, batch in (("a", batch_a), ("b", batch_b)):
            await nc.publish("$JS.API.CONSUMER.MSG.NEXT.RR.C", json.dumps({"batch": batch, "expires": 10**10}).encode(),
                             reply=f"rr_in.{who}")
        async def both_waiting():
            return (await info(nc, "RR", "C"))["num_waiting"] == 2
        assert await eventually(both_waiting), "the two pull requests are not waiting"

    async def received(n: int) -> None:
        await eventually(lambda: len(got["a"]) + len(got["b"]) >= n)

    def seen(who: str) -> list[tuple]:
        # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>
        return [(m.subject, m.data, *(int(t) for t in m.reply.split(".")[4:7])) for m in got[who]]

    await two_requests(3, 2)
    for i in range(1, 6):
        await js.publish(f"rr.{i}", f"m{i}".encode())
        await received(i)
    assert seen("a") == [("rr.1", b"m1", 1, 1, 1), ("rr.3", b"m3", 1, 3, 3), ("rr.5", b"m5", 1, 5, 5)]
    assert seen("b") == [("rr.2", b"m2", 1, 2, 2), ("rr.4", b"m4", 1, 4, 4)]
    assert all(m.reply.endswith(".0") for m in got["a"] + got["b"])  # nothing pending behind each
    got["a"].clear()
    got["b"].clear()

    await two_requests(2, 4)
    acks = [await js.publish_async(f"rr.{i}", f"m{i}".encode()) for i in range(6, 12)]
    await asyncio.gather(*acks)
    await received(6)
    assert [t[:4] for t in seen("a")] == [("rr.6", b"m6", 1, 6), ("rr.8", b"m8", 1, 8)]
    assert [t[:4] for t in seen("b")] == [("rr.7", b"m7", 1, 7), ("rr.9", b"m9", 1, 9),
                                         ("rr.10", b"m10", 1, 10), ("rr.11", b"m11", 1, 11)]
    ci = await info(nc, "RR", "C")
    assert counters(ci) == ((11, 11), (0, 0), 11, 0, 0) and ci["num_waiting"] == 0


async def test_acks_are_seen_by_a_subscriber_on_the_ack_subjects(nc, js, server):
    """An ack is an ordinary message: a client listening on $JS.ACK.> gets
    each one while the consumer still counts it."""
    from conftest import connect

    await js.add_stream(name="AS", subjects=["as.>"])
    await js.add_consumer("AS", api.ConsumerConfig(durable_name="C", ack_policy="explicit"))
    for i in range(3):
        await js.publish("as.x", b"m%d" % i)
    spy = await connect(server.url)
    try:
        sub = await spy.subscribe("$JS.ACK.>")
        await spy.flush()
        await spy.flush()
        psub = await js.pull_subscribe_bind("C", "AS")
        msgs = await psub.fetch(3, timeout=2)
        await msgs[0].ack()
        await msgs[1].ack()
        await nc.flush()
        seen = [await sub.next_msg(timeout=2) for _ in range(2)]
        assert [(m.subject, m.data) for m in seen] == [(m.reply, b"") for m in msgs[:2]]  # nats-py acks with an empty payload
        want = ((3, 3), (2, 2), 1, 0, 0)  # nats-server takes acks on the consumer's goroutine
        assert await settled(lambda: count(nc, "AS", "C"), want) == want
    finally:
        await spy.close()


async def test_malformed_ack_subjects_after_a_good_ack_are_ignored(nc, js, server):
    """Acks sent together: an ack subject with an empty token (one at the
    end, one inside) is not a subject any subscription matches, and one cut
    short names no consumer, so only the good ack counts."""
    await js.add_stream(name="MA", subjects=["ma"])
    await js.add_consumer("MA", api.ConsumerConfig(durable_name="C", ack_policy="explicit"))
    for i in range(3):
        await js.publish("ma", b"m%d" % i)
    psub = await js.pull_subscribe_bind("C", "MA")
    msgs = await psub.fetch(3, timeout=2)
    t = msgs[2].reply.split(".")
    t[7] = ""
    # (a bare "$JS.ACK.MA" first: it names no consumer)
    acks = ["$JS.ACK.MA", msgs[0].reply, msgs[1].reply.rsplit(".", 1)[0] + ".", ".".join(t)]
    # one write, so the server reads them together
    r, w = await asyncio.open_connection(server.host, server.port)
    await r.readline()  # INFO
    w.write(b'CONNECT {"verbose":false,"pedantic":false}\r\n' + b"".join(b"PUB %s 0\r\n\r\n" % a.encode() for a in acks) + b"PING\r\n")
    while not (await r.readline()).startswith(b"PONG"):
        pass
    w.close()
    # acks are handled in order: once a later one is confirmed, those are done with
    await js.publish("ma", b"m3")
    (m,) = await psub.fetch(1, timeout=2)
    await m.ack_sync()
    assert counters(await info(nc, "MA", "C")) == ((4, 4), (1, 1), 2, 0, 0)


async def test_big_no_wait_pull_is_served_in_full(nc, js):
    """A no_wait pull for more than the server delivers in one go gets its
    whole batch, with no 404 half-way (natslab yields to its loop every
    2,000 deliveries; that is not the end of the stream)."""
    await js.add_stream(name="NW", subjects=["nw"])
    acks = [await js.publish_async("nw", b"x") for _ in range(6000)]
    await asyncio.gather(*acks)
    msgs, statuses = [], []

    async def keep(m):
        (statuses if m.headers and m.headers.get("Status") else msgs).append(m)
    await nc.subscribe("nw_in", cb=keep)
    await nc.flush()
    await nc.flush()
    for name, headers_only in (("C", False), ("H", True)):  # natslab's fast path, and its general loop
        msgs.clear()
        await js.add_consumer("NW", api.ConsumerConfig(durable_name=name, ack_policy="explicit", max_ack_pending=-1,
                                                       headers_only=headers_only))
        await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.NW.{name}", b'{"batch":5000,"no_wait":true}', reply="nw_in")
        await eventually(lambda: len(msgs) >= 5000, 30)
        # and no status after them: the consumer sends its pull replies in
        # order, so once a later pull's message has come anything the first
        # pull sent has come too
        sentinel = await nc.subscribe(f"nw_sentinel.{name}")
        await nc.flush()
        await nc.flush()
        await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.NW.{name}", b'{"batch":1,"no_wait":true}',
                         reply=f"nw_sentinel.{name}")
        assert (await sentinel.next_msg(timeout=5)).reply.split(".")[5] == "5001"
        assert (len(msgs), statuses) == (5000, []), name
        assert [m.reply.split(".")[5] for m in msgs[::1000]] == ["1", "1001", "2001", "3001", "4001"]
        ci = await info(nc, "NW", name)
        assert counters(ci) == ((5001, 5001), (0, 0), 5001, 0, 999) and ci["num_waiting"] == 0


async def pull_no_wait(nc, stream: str, consumer: str, n: int) -> list:
    """n no_wait pulls of one message each, through a subscription (nats-py's
    request() cannot take a JetStream delivery as its reply). nats-server
    counts a new message into a consumer's num_pending on a goroutine of its
    own after the publish ack, and answers a no_wait pull 404 No Messages
    while that count is 0, so this first waits for the consumer to count n."""
    async def counted():
        return (await info(nc, stream, consumer))["num_pending"] >= n
    assert await eventually(counted, 5), f"{stream}.{consumer} never counted {n} pending"
    got: asyncio.Queue = asyncio.Queue()

    async def keep(m):
        await got.put(m)
    sub = await nc.subscribe(f"pulled.{stream}.{consumer}", cb=keep)
    await nc.flush()
    await nc.flush()
    msgs = []
    for _ in range(n):
        await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", b'{"batch":1,"no_wait":true}',
                         reply=f"pulled.{stream}.{consumer}")
        msgs.append(await asyncio.wait_for(got.get(), 3))
        assert msgs[-1].reply.startswith("$JS.ACK."), (msgs[-1].headers, msgs[-1].data)  # a message, not a status
    await sub.unsubscribe()
    return msgs


def floors(ci: dict) -> tuple:
    return ((ci["delivered"]["consumer_seq"], ci["delivered"]["stream_seq"]),
            (ci["ack_floor"]["consumer_seq"], ci["ack_floor"]["stream_seq"]),
            ci["num_ack_pending"], ci["num_pending"], "last_active" in ci["ack_floor"])


@pytest.mark.parametrize("how", ["delete", "max_msgs", "per subject, file", "per subject, memory", "purge one"])
async def test_a_pending_message_that_leaves_the_stream_is_terminated(nc, js, how):
    """A delivered, unacked message that goes away by itself (deleted, pushed
    out by a limit, the one message a purge removes) is terminated at once:
    MSG_TERMINATED 'Unacknowledged message was deleted', the ack floor and
    num_ack_pending move, with no wait for its ack_wait to run out."""
    cfg = {"name": "TD", "subjects": ["td.*"], "max_msgs": 3}
    if how.startswith("per subject"):
        cfg = {"name": "TD", "subjects": ["td.*"], "max_msgs_per_subject": 1, "storage": how.split(", ")[1]}
    await req(nc, "$JS.API.STREAM.CREATE.TD", cfg)
    for c, ap in (("E", "explicit"), ("A", "all")):
        await req(nc, f"$JS.API.CONSUMER.CREATE.TD.{c}", {"stream_name": "TD", "config": {
            "durable_name": c, "ack_policy": ap, "ack_wait": 30_000_000_000}})
    adv = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.TD.*")
    for subj in ("td.a", "td.b", "td.c"):
        await js.publish(subj, b"x")
    for c in ("E", "A"):
        await pull_no_wait(nc, "TD", c, 3)
    if how == "delete":
        await req(nc, "$JS.API.STREAM.MSG.DELETE.TD", {"seq": 2})
        gone = 2
    elif how == "max_msgs":
        await js.publish("td.d", b"x")
        gone = 1
    elif how.startswith("per subject"):
        await js.publish("td.a", b"y")  # the subject's one message is now seq 4
        gone = 1
        how = "max_msgs"  # which moves the consumers the same way
    else:
        assert (await req(nc, "$JS.API.STREAM.PURGE.TD", {"filter": "td.b"}))["purged"] == 1
        gone = 2
    events = sorted([json.loads((await adv.next_msg(timeout=2)).data) for _ in range(2)], key=lambda e: e["consumer"])
    assert [(e["consumer"], e["stream_seq"], e["consumer_seq"], e["deliveries"], e["reason"]) for e in events] == [
        ("A", gone, gone, 1, "Unacknowledged message was deleted"),
        ("E", gone, gone, 1, "Unacknowledged message was deleted")]
    # In a purge nats-server runs the termination on a goroutine that races
    # the consumer's own purge step: usually the purge step comes first (it
    # drops the message and the floor's consumer sequence jumps to it; the
    # termination then finds nothing), as natslab always does it, but not always
    explicit = {"delete": [((3, 3), (0, 0), 2, 0, True)], "max_msgs": [((3, 3), (1, 1), 2, 1, True)],
                "purge one": [((3, 3), (2, 0), 2, 0, True), ((3, 3), (0, 0), 2, 0, True)]}[how]
    # ack all: terminating one acks everything up to it
    ack_all = {"delete": [(2, 1)], "max_msgs": [(1, 2)], "purge one": [(2, 2), (2, 1)]}[how]
    # The advisory can come before nats-server's signal goroutine counts the
    # publish that pushed the message out into num_pending (seen: 0 for 1,
    # about once in 1,600 runs under load), so both are read until they
    # settle, then asserted.
    got = {}

    async def settled():
        got["E"] = floors(await info(nc, "TD", "E"))
        ci = await info(nc, "TD", "A")
        got["A"] = (ci["ack_floor"]["stream_seq"], ci["num_ack_pending"])
        return got["E"] in explicit and got["A"] in ack_all
    await eventually(settled, 5)
    assert got["E"] in explicit
    assert got["A"] in ack_all


async def test_purge_moves_consumers_by_how_their_filters_meet_the_purged_subject(nc, js):
    """A filtered purge: a consumer whose filters all lie inside the purged
    subject skips past it; one with a wider filter (or none) drops what is
    gone below the new first message and keeps the rest pending; one whose
    filters it does not touch keeps everything. A purge of more than one
    message does not terminate pending messages one by one."""
    await js.add_stream(name="PF", subjects=["pf.*", "other.*"])
    cons = {"IN": ["pf.a", "pf.b"], "WIDE": ["pf.*", "other.x"], "ALL": [], "OUT": ["other.x"]}
    for c, f in cons.items():
        await js.add_consumer("PF", api.ConsumerConfig(durable_name=c, ack_policy="explicit", filter_subjects=f or None))
    for subj in ("pf.a", "pf.b", "other.x", "pf.a", "pf.c", "other.x"):
        await js.publish(subj, b"x")
    for c in cons:
        await pull_no_wait(nc, "PF", c, 2)
    assert (await req(nc, "$JS.API.STREAM.PURGE.PF", {"filter": "pf.*"}))["purged"] == 4
    got = {c: floors(await info(nc, "PF", c)) for c in cons}
    assert got == {
        "IN": ((2, 6), (2, 6), 0, 0, True),
        "WIDE": ((2, 2), (2, 2), 0, 2, True),
        "ALL": ((2, 2), (2, 2), 0, 2, True),
        "OUT": ((2, 6), (0, 0), 2, 0, False),
    }


@pytest.mark.parametrize("rollup", ["sub", "all"])
async def test_a_rollup_moves_consumers_as_a_purge_does(nc, js, rollup):
    """Nats-Rollup purges what it replaces the way a purge request does: the
    consumers' pending messages that went with it are dropped and their
    floors move (natslab used to leave them pending)."""
    await req(nc, "$JS.API.STREAM.CREATE.RU", {"name": "RU", "subjects": ["ru.*"], "allow_rollup_hdrs": True})
    for c, f in (("A", {"filter_subject": "ru.a"}), ("W", {})):
        await req(nc, f"$JS.API.CONSUMER.CREATE.RU.{c}", {"stream_name": "RU", "config": {
            "durable_name": c, "ack_policy": "explicit", **f}})
    for subj in ("ru.a", "ru.b", "ru.a"):
        await js.publish(subj, b"x")
    for c in ("A", "W"):
        await pull_no_wait(nc, "RU", c, 2)
    await js.publish("ru.a", b"rolled", headers={"Nats-Rollup": rollup})
    want = {"sub": [((2, 3), (2, 3), 0, 1, True), ((2, 2), (1, 1), 1, 1, True)],
            "all": [((2, 3), (2, 3), 0, 1, True), ((2, 3), (2, 3), 0, 1, True)]}[rollup]
    got = []

    async def settled():  # nats-server moves the consumers on their own goroutines, after the PubAck
        got[:] = [floors(await info(nc, "RU", c)) for c in ("A", "W")]
        return got == want
    await eventually(settled, 5)
    assert got == want


async def test_pull_status_replies(nc, js, raw):
    await js.add_stream(name="PS", subjects=["ps.>"])
    await req(nc, "$JS.API.CONSUMER.CREATE.PS.C", {"stream_name": "PS", "config": {
        "durable_name": "C", "ack_policy": "explicit", "max_batch": 10}})
    c = await raw()
    await c.send("SUB r.> 1\r\n")
    nxt = "$JS.API.CONSUMER.MSG.NEXT.PS.C"

    async def pull(body: str, reply: str) -> None:
        await c.send(f"PUB {nxt} {reply} {len(body)}\r\n{body}\r\n")

    # the real server answers pulls from another goroutine: its replies can
    # trail a PONG, so each read waits for the lines it expects (read_lines)
    async def got(expected: list[str]) -> list[str]:
        return await c.read_lines(len(expected))

    await pull('{"batch":1,"no_wait":true}', "r.1")
    assert await got(e := status("r.1", "NATS/1.0 404 No Messages")) == e
    await pull('{"batch":20}', "r.2")
    assert await got(e := status("r.2", "NATS/1.0 409 Exceeded MaxRequestBatch of 10")) == e
    await pull('{"batch":1,"expires":100000000,"idle_heartbeat":100000000}', "r.3")
    assert await got(e := status("r.3", "NATS/1.0 400 Bad Request - heartbeat value too large")) == e
    # a body that does not decode gets Go's message
    for body, why in (('{"expires":true}', "json: cannot unmarshal bool into Go struct field .expires of type time.Duration"),
                      ('{"batch":"2"}', "json: cannot unmarshal string into Go struct field .batch of type int"),
                      ('{"batch":', "unexpected end of JSON input")):
        await pull(body, "r.x")
        assert await got(e := status("r.x", f"NATS/1.0 400 Bad Request - {why}")) == e, body
    # the batch is kept as asked, even 0 or less, and a negative expires is already past
    await pull('{"no_wait":true,"expires":5}', "r.x")
    assert await got(e := status("r.x", "NATS/1.0 408 Request Timeout",
                                                "Nats-Pending-Messages: 0", "Nats-Pending-Bytes: 0")) == e
    await pull('{"batch":3,"expires":-1}', "r.x")
    assert await got(e := status("r.x", "NATS/1.0 408 Request Timeout",
                                                "Nats-Pending-Messages: 3", "Nats-Pending-Bytes: 0")) == e
    await pull('{"batch":2,"expires":300000000}', "r.4")
    assert await got(e := status("r.4", "NATS/1.0 408 Request Timeout",
                                                "Nats-Pending-Messages: 2", "Nats-Pending-Bytes: 0")) == e
    # a waiting request counts in num_waiting and gets messages as they arrive
    await pull('{"batch":1,"expires":5000000000}', "r.5")
    await c.read_until_pong()

    async def waiting():
        return (await info(nc, "PS", "C"))["num_waiting"]
    assert await settled(waiting, 1) == 1
    await js.publish("ps.a", b"one")
    lines = await c.read_lines(2)
    assert lines[0].startswith("MSG ps.a 1 $JS.ACK.PS.C.1.1.1.") and lines[0].endswith(".0 3") and lines[1] == "one"
    # max_bytes: the next message does not fit
    await js.publish("ps.b", b"x" * 100)
    await pull('{"batch":5,"max_bytes":50}', "r.6")
    lines = await c.read_lines(4)
    assert lines[1] == "NATS/1.0 409 Message Size Exceeds MaxBytes" and lines[2] == "Nats-Pending-Messages: 5"
    await pull('{"batch":1,"max_bytes":1000}', "r.7")
    lines = await c.read_lines(6)
    assert lines[0].startswith("MSG ps.b 1 $JS.ACK.PS.C.1.2.2.") and lines[2].startswith("HMSG r.7 1 ")
    assert lines[3] == "NATS/1.0 409 Batch Completed" and lines[4] == "Nats-Pending-Messages: 0"
    # a waiting request learns that its consumer was deleted
    await pull('{"batch":1,"expires":5000000000}', "r.9")
    assert await settled(waiting, 1) == 1  # the request is in before the delete (another connection)
    await js.delete_consumer("PS", "C")
    assert await got(e := status("r.9", "NATS/1.0 409 Consumer Deleted")) == e
    # pull from a push consumer
    await js.add_consumer("PS", api.ConsumerConfig(durable_name="P", deliver_subject="dp", ack_policy="explicit"))
    await c.send("PUB $JS.API.CONSUMER.MSG.NEXT.PS.P r.8 0\r\n\r\n")
    assert await got(e := status("r.8", "NATS/1.0 409 Consumer is push based")) == e


async def test_max_ack_pending_and_fetch(nc, js):
    await js.add_stream(name="MAP", subjects=["map"])
    for i in range(5):
        await js.publish("map", str(i).encode())
    await js.add_consumer("MAP", api.ConsumerConfig(durable_name="C", ack_policy="explicit", max_ack_pending=2))
    sub = await js.pull_subscribe_bind("C", "MAP")
    got = await sub.fetch(5, timeout=1)
    assert [m.data for m in got] == [b"0", b"1"]
    msg = await nc.request("$JS.API.CONSUMER.MSG.NEXT.MAP.C", b'{"batch":5,"expires":300000000}', timeout=2)
    assert msg.headers["Status"] == "408" and msg.headers["Nats-Pending-Messages"] == "5"
    await got[0].ack_sync()
    got = await sub.fetch(5, timeout=1)
    assert [m.data for m in got] == [b"2"]
    ci = await info(nc, "MAP", "C")
    assert counters(ci) == ((3, 3), (1, 1), 2, 0, 2)


async def test_ack_kinds_and_advisories(nc, js):
    await js.add_stream(name="AK", subjects=["ak.>"])
    for i in range(4):
        await js.publish(f"ak.{i}", str(i).encode())
    await js.add_consumer("AK", api.ConsumerConfig(durable_name="C", ack_policy="explicit", ack_wait=30, max_deliver=2))
    adv = []
    async def on_adv(m):
        adv.append((m.subject, json.loads(m.data)))

    await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.>", cb=on_adv)
    sub = await js.pull_subscribe_bind("C", "AK")
    m1, m2, m3, m4 = await sub.fetch(4, timeout=2)
    await m1.nak()
    await m2.term()
    await m3.in_progress()
    await m4.ack_sync()
    (r1,) = await sub.fetch(1, timeout=2)  # the nak'd message comes first
    assert (r1.metadata.sequence.stream, r1.metadata.num_delivered) == (1, 2)
    await r1.nak()
    with pytest.raises(asyncio.TimeoutError):
        await sub.fetch(1, timeout=0.5)  # max_deliver 2 reached: not delivered again
    await nc.flush()
    await eventually(lambda: len(adv) >= 4, 5)  # advisories come from the consumer's goroutine
    kinds = [(s.rsplit(".", 2)[0], d["type"], d["stream_seq"], d["deliveries"]) for s, d in adv]
    assert kinds == [
        ("$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED", "io.nats.jetstream.advisory.v1.nak", 1, 1),
        ("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED", "io.nats.jetstream.advisory.v1.terminated", 2, 1),
        ("$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED", "io.nats.jetstream.advisory.v1.nak", 1, 2),
        ("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES", "io.nats.jetstream.advisory.v1.max_deliver", 1, 2),
    ]
    assert adv[0][0] == "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.AK.C"
    want = ((5, 4), (0, 0), 1, 1, 0)
    assert await settled(lambda: count(nc, "AK", "C"), want) == want
    await m3.ack_sync()
    ci = await info(nc, "AK", "C")
    assert counters(ci) == ((5, 4), (5, 4), 0, 1, 0)


async def test_nak_delay_and_ack_all(nc, js):
    await js.add_stream(name="ND", subjects=["nd"])
    for i in range(2):
        await js.publish("nd", str(i).encode())
    await js.add_consumer("ND", api.ConsumerConfig(durable_name="C", ack_policy="explicit", ack_wait=30))
    sub = await js.pull_subscribe_bind("C", "ND")
    (m,) = await sub.fetch(1, timeout=2)
    naked_at = asyncio.get_running_loop().time()  # (the server's delay starts after this)
    await m.nak(delay=0.5)
    (m2,) = await sub.fetch(1, timeout=2)  # not the NAKed one again at once
    assert m2.metadata.sequence.stream == 2
    # nothing else is pending: this pull waits for the redelivery, which the
    # delay holds back (measured from before the NAK was sent, so a busy
    # machine only makes the gap longer)
    (m3,) = await sub.fetch(1, timeout=5)
    assert (m3.metadata.sequence.stream, m3.metadata.num_delivered) == (1, 2)
    assert asyncio.get_running_loop().time() - naked_at >= 0.5
    await js.publish("nd", b"2")

    await js.add_consumer("ND", api.ConsumerConfig(durable_name="ALL", ack_policy="all"))
    sub = await js.pull_subscribe_bind("ALL", "ND")
    msgs = await sub.fetch(3, timeout=2)
    await msgs[1].ack_sync()
    ci = await info(nc, "ND", "ALL")
    assert counters(ci) == ((3, 3), (2, 2), 1, 0, 0)


async def test_push_consumers(nc, js):
    await js.add_stream(name="PU", subjects=["pu.>"])
    for i in range(3):
        await js.publish(f"pu.{i}", str(i).encode())
    got = []
    done = asyncio.Event()

    async def cb(m):
        got.append((m.subject, m.data, m.metadata.sequence.stream))
        await m.ack_sync()
        if len(got) == 4:
            done.set()

    sub = await js.subscribe("pu.>", durable="PD", cb=cb, manual_ack=True)
    await js.publish("pu.x", b"late")
    await asyncio.wait_for(done.wait(), 3)
    assert got == [("pu.0", b"0", 1), ("pu.1", b"1", 2), ("pu.2", b"2", 3), ("pu.x", b"late", 4)]
    want = ((4, 4), (4, 4), 0, 0, 0)
    assert await settled(lambda: count(nc, "PU", "PD"), want) == want
    assert (await info(nc, "PU", "PD"))["push_bound"] is True
    await sub.unsubscribe()
    await nc.flush()
    # the real server drops push_bound asynchronously after the UNSUB
    async def unbound():
        return "push_bound" not in await info(nc, "PU", "PD")
    assert await eventually(unbound)

    # queue group push: each message to exactly one member
    qa = await nc.subscribe("dq", queue="Q")
    qb = await nc.subscribe("dq", queue="Q")
    await req(nc, "$JS.API.CONSUMER.CREATE.PU.QD", {"stream_name": "PU", "config": {
        "durable_name": "QD", "deliver_subject": "dq", "deliver_group": "Q", "ack_policy": "none"}})
    # a sentinel published after the four: the consumer delivers in stream
    # order to this one connection, so once it has come, so has any copy
    await js.publish("pu.y", b"sentinel")
    assert await eventually(lambda: qa.pending_msgs + qb.pending_msgs >= 5)
    a = []
    for s in (qa, qb):
        while s.pending_msgs:
            a.append((await s.next_msg(timeout=1)).data)
    assert sorted(a) == [b"0", b"1", b"2", b"late", b"sentinel"]


async def test_ordered_consumer_and_headers_only(nc, js):
    await js.add_stream(name="OC", subjects=["oc.>"])
    for i in range(20):
        await js.publish(f"oc.{i % 3}", b"x" * 1000)
    sub = await js.subscribe("oc.>", ordered_consumer=True, idle_heartbeat=0.5)
    seqs = []
    for _ in range(20):
        m = await sub.next_msg(timeout=2)
        seqs.append(m.metadata.sequence.stream)
    assert seqs == list(range(1, 21))
    await sub.unsubscribe()
    r = await req(nc, "$JS.API.CONSUMER.CREATE.OC", {"stream_name": "OC", "config": {
        "deliver_subject": "ho", "headers_only": True, "deliver_policy": "last_per_subject", "filter_subject": "oc.>"}})
    assert r["num_pending"] == 3 and r["config"]["ack_policy"] == "none"
    assert r["config"]["inactive_threshold"] == 5 * 10**9
    s2 = await nc.subscribe("ho")
    m = await s2.next_msg(timeout=2)
    assert m.data == b"" and m.headers["Nats-Msg-Size"] == "1000" and m.subject == "oc.2"
    assert m.reply.startswith("$JS.ACK.OC.") and m.reply.endswith(".2")


async def test_idle_heartbeat_and_flow_control(nc, js, raw):
    await js.add_stream(name="HB", subjects=["hb"])
    c = await raw()
    await c.send("SUB dhb 1\r\n")
    await c.read_until_pong()
    await js.add_consumer("HB", api.ConsumerConfig(durable_name="H", deliver_subject="dhb", idle_heartbeat=0.2,
                                                   flow_control=True))
    await js.publish("hb", b"x")
    lines = await c.read_lines(8)  # the message and (200 ms on) the first heartbeat
    assert lines[0].startswith("MSG hb 1 $JS.ACK.HB.H.1.1.1.") and lines[1] == "x"
    hb = lines[2:8]
    assert hb == status("dhb", "NATS/1.0 100 Idle Heartbeat", "Nats-Last-Consumer: 1", "Nats-Last-Stream: 1")
    # ~1 MiB unacknowledged by flow control triggers a FlowControl Request
    sub = await nc.subscribe("dfc")
    await js.add_consumer("HB", api.ConsumerConfig(durable_name="F", deliver_subject="dfc", idle_heartbeat=5,
                                                   flow_control=True, deliver_policy="new"))
    big = b"y" * 200_000
    for _ in range(6):
        await js.publish("hb", big)
    seen = []
    for _ in range(7):
        m = await sub.next_msg(timeout=2)
        if m.headers and m.headers.get("Status") == "100":
            seen.append(("fc", m.headers.get("Description"), m.reply.startswith("$JS.FC.HB.F.")))
            break
        seen.append(len(m.data))
    assert seen == [200_000] * 6 + [("fc", "FlowControl Request", True)]


FC_WINDOW = 32 * 1024 * 1024 // 16  # nats-server's first flow-control window (JsFlowControlMaxPending / 16)


@pytest.mark.parametrize("filters", [None, ["fw.a", "fw.b"]], ids=["one-filter", "two-filters"])
async def test_flow_control_window(nc, js, filters):
    """nats-server counts a push delivery against the flow-control window as
    len(deliver subject) + len(ack reply) + header + payload (pmsg.size()):
    the FlowControl request follows the message that takes the count over
    half the window, delivery stops after the one that takes it over the
    whole window, heartbeats name the request (Nats-Consumer-Stalled) until
    it is answered, then the window doubles and the rest follows. The stream
    subject is short and the deliver subject long, so counting the wrong one
    moves the request. (Two filters: natslab's general delivery loop; one:
    its batch path.)"""
    n, payload = 700, b"z" * 4000
    await js.add_stream(name="FCW", subjects=["fw.a", "fw.b"])
    for _ in range(n):
        await nc.publish("fw.a", payload)
    await nc.flush()

    async def stored():
        return (await js.stream_info("FCW")).state.messages == n
    assert await eventually(stored, 30)
    ds = "flow.control.window.deliver." + "d" * 40
    got: list = []  # ("m", counted size) / ("fc", reply) / ("hb", headers), in arrival order
    stalled, done = asyncio.Event(), asyncio.Event()

    async def cb(m):
        if m.headers and m.headers.get("Status") == "100":
            if m.reply:
                got.append(("fc", m.reply))
            elif m.headers.get("Nats-Consumer-Stalled"):
                got.append(("hb", dict(m.headers)))
                stalled.set()
            return
        got.append(("m", len(ds) + len(m.reply) + len(m.data)))
        if sum(k == "m" for k, _ in got) == n:
            done.set()

    await nc.subscribe(ds, cb=cb)
    await nc.flush()
    await nc.flush()
    await js.add_consumer("FCW", api.ConsumerConfig(deliver_subject=ds, flow_control=True, idle_heartbeat=0.2,
                                                    ack_policy="none", filter_subjects=filters))
    await asyncio.wait_for(stalled.wait(), 10)
    first = got.index(next(e for e in got if e[0] == "hb"))
    sizes = [v for k, v in got[:first] if k == "m"]
    cum = list(itertools.accumulate(sizes))
    k1 = next(i for i, c in enumerate(cum, 1) if c > FC_WINDOW // 2)
    k2 = next(i for i, c in enumerate(cum, 1) if c > FC_WINDOW)
    assert k2 == len(sizes) < n
    assert [k for k, _ in got[:first]] == ["m"] * k1 + ["fc"] + ["m"] * (k2 - k1)
    fc_reply = got[k1][1]
    assert fc_reply.startswith("$JS.FC.FCW.")
    hb = got[first][1]
    assert (hb["Nats-Consumer-Stalled"], hb["Nats-Last-Consumer"]) == (fc_reply, str(k2))
    await nc.publish(fc_reply, b"")
    await asyncio.wait_for(done.wait(), 10)
    rest = [k for k, _ in got[first:] if k != "hb"]
    sizes += [v for k, v in got[first:] if k == "m"]
    # answered: the window doubled and what is left stays under half of it
    assert sum(sizes[k1:]) <= FC_WINDOW
    assert rest == ["m"] * (n - k2)


async def test_consumer_api_errors_and_forms(nc, js):
    await js.add_stream(name="CA", subjects=["ca.>"])
    base = "$JS.API.CONSUMER"
    cases = [
        (f"{base}.INFO.CA.NOPE", None, (404, 10014, "consumer not found")),
        (f"{base}.INFO.NOPE.X", None, (404, 10059, "stream not found")),
        (f"{base}.CREATE.CA", {"stream_name": "CA", "config": {"durable_name": "D"}},
         (400, 10020, "consumer expected to be ephemeral but a durable name was set in request")),
        (f"{base}.CREATE.CA.X", {"stream_name": "CA", "config": {"durable_name": "Y"}},
         (400, 10017, "consumer name in subject does not match durable name in request")),
        (f"{base}.CREATE.CA.X.ca.a", {"stream_name": "CA", "config": {"filter_subject": "ca.b"}},
         (400, 10131, "Consumer create request did not match filtered subject from create subject")),
        (f"{base}.DURABLE.CREATE.CA.X", {"stream_name": "CA", "config": {}},
         (400, 10018, "consumer expected to be durable but a durable name was not set")),
        (f"{base}.CREATE.CA.X", {"stream_name": "CA", "config": {"deliver_policy": "by_start_sequence"}},
         (400, 10094, "consumer delivery policy is deliver by start sequence, but optional start sequence is not set")),
        (f"{base}.CREATE.CA.X", {"stream_name": "CA", "config": {"flow_control": True, "deliver_subject": "x"}},
         (400, 10108, "consumer with flow control also needs heartbeats")),
        (f"{base}.CREATE.CA.X", {"stream_name": "CA", "config": {"idle_heartbeat": 10**9}},
         (400, 10088, "consumer idle heartbeat requires a push based consumer")),
        (f"{base}.CREATE.CA.X", {"stream_name": "CA", "config": {"deliver_subject": "ca.x"}},
         (400, 10081, "consumer deliver subject forms a cycle")),
        (f"{base}.CREATE.CA.X", {"stream_name": "CA", "config": {"ack_policy": "explicit", "max_deliver": 2,
                                                                   "backoff": [10**9, 2 * 10**9, 3 * 10**9]}},
         (400, 10116, "max deliver is required to be > length of backoff values")),
        (f"{base}.CREATE.CA.X", {"stream_name": "CA", "action": "update", "config": {}},
         (400, 10149, "consumer does not exist")),
    ]
    for subject, body, want in cases:
        assert err(await req(nc, subject, body)) == want, subject
    r = await req(nc, f"{base}.CREATE.CA.D1.ca.>", {"stream_name": "CA", "config": {
        "durable_name": "D1", "filter_subject": "ca.>", "ack_policy": "explicit"}})
    assert r["name"] == "D1" and r["config"]["filter_subject"] == "ca.>"
    r = await req(nc, f"{base}.CREATE.CA.D1", {"stream_name": "CA", "action": "create", "config": {
        "durable_name": "D1", "filter_subject": "ca.>", "ack_policy": "explicit", "max_ack_pending": 5}})
    assert err(r) == (400, 10148, "consumer already exists")
    r = await req(nc, f"{base}.CREATE.CA.D1", {"stream_name": "CA", "config": {
        "durable_name": "D1", "filter_subject": "ca.>", "ack_policy": "all"}})
    assert err(r) == (500, 10012, "ack policy can not be updated")
    r = await req(nc, f"{base}.CREATE.CA.D1", {"stream_name": "CA", "config": {
        "durable_name": "D1", "filter_subject": "ca.>", "ack_policy": "explicit", "max_ack_pending": 5}})
    assert r["config"]["max_ack_pending"] == 5
    r = await req(nc, f"{base}.DURABLE.CREATE.CA.D2", {"stream_name": "CA", "config": {"durable_name": "D2"}})
    assert r["name"] == "D2" and r["config"]["ack_policy"] == "none" and "ack_wait" not in r["config"]
    names = await req(nc, f"{base}.NAMES.CA")
    assert names["consumers"] == ["D1", "D2"] and names["total"] == 2
    lst = await req(nc, f"{base}.LIST.CA")
    assert [c["name"] for c in lst["consumers"]] == ["D1", "D2"]
    assert (await req(nc, f"{base}.DELETE.CA.D2"))["success"] is True
    assert err(await req(nc, f"{base}.DELETE.CA.D2")) == (404, 10014, "consumer not found")
    assert (await js.account_info()).consumers == 1


async def test_deliver_policies(nc, js):
    await js.add_stream(name="DP", subjects=["dp.>"])
    for s in ("dp.a", "dp.b", "dp.a", "dp.c", "dp.b"):
        await js.publish(s, b"v")
    base = "$JS.API.CONSUMER.CREATE.DP"
    cases = [
        ({"deliver_policy": "all"}, (0, 0), 5),
        ({"deliver_policy": "last"}, (0, 4), 1),
        ({"deliver_policy": "new"}, (0, 5), 0),
        ({"deliver_policy": "by_start_sequence", "opt_start_seq": 3}, (0, 2), 3),
        ({"deliver_policy": "last_per_subject", "filter_subject": "dp.>"}, (0, 2), 3),
        ({"deliver_policy": "last", "filter_subject": "dp.a"}, (0, 2), 1),
    ]
    for i, (cfg, delivered, pending) in enumerate(cases):
        r = await req(nc, f"{base}.c{i}", {"stream_name": "DP", "config": dict(cfg, ack_policy="explicit")})
        assert (r["delivered"]["consumer_seq"], r["delivered"]["stream_seq"]) == delivered, cfg
        assert r["ack_floor"]["stream_seq"] == delivered[1] and r["num_pending"] == pending, cfg
    sub = await js.pull_subscribe_bind("c4", "DP")
    msgs = await sub.fetch(3, timeout=2)
    assert [(m.subject, m.metadata.sequence.stream, m.metadata.num_pending) for m in msgs] == \
        [("dp.a", 3, 2), ("dp.c", 4, 1), ("dp.b", 5, 0)]


async def test_ack_all_releases_max_ack_pending_at_once(nc, js):
    """An ack-all that acknowledges several pending messages at once lets a
    push consumer held at max_ack_pending go on (natslab stalled until a
    later ack brought pending to exactly the limit less one)."""
    await js.add_stream(name="AA", subjects=["aa"])
    for i in range(6):
        await js.publish("aa", b"%d" % i)
    got = []

    async def keep(m):
        got.append(m)
    await nc.subscribe("aa.deliver", cb=keep)
    await nc.flush()
    await nc.flush()
    await js.add_consumer("AA", api.ConsumerConfig(durable_name="C", deliver_subject="aa.deliver", ack_policy="all",
                                                   max_ack_pending=3))
    await eventually(lambda: len(got) >= 3, 5)
    # and no more: max_ack_pending holds the rest back (the consumer counts a
    # delivery before it sends it, so its info saying three means three)
    assert counters(await info(nc, "AA", "C")) == ((3, 3), (0, 0), 3, 0, 3)
    await nc.flush()
    assert [m.data for m in got] == [b"0", b"1", b"2"]
    await got[2].ack_sync()
    await eventually(lambda: len(got) >= 6, 5)
    assert [m.data for m in got] == [b"0", b"1", b"2", b"3", b"4", b"5"]
    want = ((6, 6), (3, 3), 3, 0, 0)
    assert await settled(lambda: count(nc, "AA", "C"), want) == want


async def test_interest_retention(nc, js):
    await js.add_stream(name="EVENTS", subjects=["events.>"], retention="interest")
    await js.publish("events.x", b"dropped")
    await js.add_consumer("EVENTS", api.ConsumerConfig(durable_name="LIVE", ack_policy="explicit",
                                                       filter_subject="events.>"))
    await js.add_consumer("EVENTS", api.ConsumerConfig(durable_name="LOGIN", ack_policy="explicit",
                                                       filter_subject="events.login"))
    ci = await info(nc, "EVENTS", "LIVE")
    assert counters(ci) == ((0, 1), (0, 1), 0, 0, 0)
    await js.publish("events.login", b"kept-until-acked")
    await js.publish("events.other", b"only LIVE wants it")
    assert (await js.stream_info("EVENTS")).state.messages == 2
    live = await js.pull_subscribe_bind("LIVE", "EVENTS")
    for m in await live.fetch(2, timeout=2):
        await m.ack_sync()
    st = (await js.stream_info("EVENTS")).state
    assert (st.messages, st.first_seq, st.last_seq) == (1, 2, 3)  # LOGIN still needs seq 2
    await js.delete_consumer("EVENTS", "LOGIN")
    st = (await js.stream_info("EVENTS")).state
    assert (st.messages, st.first_seq, st.last_seq) == (0, 4, 3)


async def test_interest_retention_as_consumers_change(nc, js):
    """Interest follows the consumers: a filter changed by an update lets go
    of what only the old filter wanted, and deleting the last consumer purges
    the stream (a never-used one then reports first_seq 1)."""
    await js.add_stream(name="IC", subjects=["ic.*"], retention="interest")
    await js.add_consumer("IC", api.ConsumerConfig(durable_name="ONLY", ack_policy="explicit"))
    await js.delete_consumer("IC", "ONLY")
    st = (await js.stream_info("IC")).state
    assert (st.messages, st.first_seq, st.last_seq) == (0, 1, 0)
    await js.add_consumer("IC", api.ConsumerConfig(durable_name="A", ack_policy="explicit", filter_subject="ic.a"))
    await js.add_consumer("IC", api.ConsumerConfig(durable_name="B", ack_policy="explicit", filter_subject="ic.b"))
    for subj in ("ic.a", "ic.b", "ic.a", "ic.b"):
        await js.publish(subj, b"x")
    await js.add_consumer("IC", api.ConsumerConfig(durable_name="B", ack_policy="explicit", filter_subject="ic.a"))
    st = (await js.stream_info("IC")).state
    assert (st.messages, st.first_seq, st.last_seq, st.num_deleted) == (2, 1, 4, 2)  # both ic.b gone
    await js.delete_consumer("IC", "A")
    await js.delete_consumer("IC", "B")
    st = (await js.stream_info("IC")).state
    assert (st.messages, st.first_seq, st.last_seq) == (0, 5, 4)


async def test_workqueue_retention(nc, js):
    await js.add_stream(name="JOBS", subjects=["jobs.>"], retention="workqueue")
    await js.publish("jobs.a", b"1")
    await js.publish("jobs.b", b"2")
    await js.publish("jobs.c", b"3")
    await js.add_consumer("JOBS", api.ConsumerConfig(durable_name="WQ", ack_policy="explicit", filter_subject="jobs.a"))
    base = "$JS.API.CONSUMER.CREATE.JOBS"
    assert err(await req(nc, f"{base}.X", {"stream_name": "JOBS", "config": {"ack_policy": "explicit"}})) == \
        (400, 10099, "multiple non-filtered consumers not allowed on workqueue stream")
    assert err(await req(nc, f"{base}.X", {"stream_name": "JOBS", "config": {"ack_policy": "explicit", "filter_subject": "jobs.>"}})) == \
        (400, 10100, "filtered consumer not unique on workqueue stream")
    assert err(await req(nc, f"{base}.X", {"stream_name": "JOBS", "config": {"ack_policy": "explicit", "filter_subject": "jobs.b", "deliver_policy": "new"}})) == \
        (400, 10101, "consumer must be deliver all on workqueue stream")
    assert err(await req(nc, f"{base}.X", {"stream_name": "JOBS", "config": {"filter_subject": "jobs.b"}})) == \
        (400, 10084, "consumer in pull mode requires explicit ack policy on workqueue stream")
    await js.add_consumer("JOBS", api.ConsumerConfig(durable_name="WB", ack_policy="explicit", filter_subject="jobs.b"))
    sub = await js.pull_subscribe_bind("WQ", "JOBS")
    (m,) = await sub.fetch(1, timeout=2)
    assert (m.subject, m.metadata.num_pending) == ("jobs.a", 0)
    assert (await js.stream_info("JOBS")).state.messages == 3
    await m.ack_sync()
    assert (await js.stream_info("JOBS")).state.messages == 2
    sb = await js.pull_subscribe_bind("WB", "JOBS")
    (m,) = await sb.fetch(1, timeout=2)
    await m.term()
    await nc.flush()

    async def state():  # nats-server removes it on the stream's goroutine
        st = (await js.stream_info("JOBS")).state
        return (st.messages, st.first_seq, st.last_seq)
    assert await settled(state, (1, 3, 3)) == (1, 3, 3)


async def test_ephemeral_inactive_threshold(nc, js):
    await js.add_stream(name="EPH", subjects=["eph"])
    r = await req(nc, "$JS.API.CONSUMER.CREATE.EPH", {"stream_name": "EPH", "config": {
        "deliver_subject": "nobody.listens", "inactive_threshold": 500_000_000}})
    name = r["name"]
    assert len(name) == 8
    r2 = await req(nc, "$JS.API.CONSUMER.CREATE.EPH.PULLEPH", {"stream_name": "EPH", "config": {
        "name": "PULLEPH", "inactive_threshold": 500_000_000}})
    assert r2["name"] == "PULLEPH"

    async def gone(consumer):
        try:
            await js.consumer_info("EPH", consumer)
        except NotFoundError:
            return True
        return False
    assert await eventually(lambda: gone(name))
    assert await eventually(lambda: gone("PULLEPH"))
    # a push ephemeral with a live subscriber stays: a time to pass (twice the
    # threshold, from after the consumer was made), not a state to wait for
    sub = await js.subscribe("eph", inactive_threshold=0.5)
    await asyncio.sleep(1.0)
    ci = await sub.consumer_info()
    assert ci.config.inactive_threshold == 0.5
    await sub.unsubscribe()

    async def no_consumers():
        return (await js.stream_info("EPH")).state.consumer_count == 0
    assert await eventually(no_consumers)


async def test_pause_backoff_and_multi_filters(nc, js, raw):
    await js.add_stream(name="PB", subjects=["pb.>"])
    for s in ("pb.a", "pb.b", "pb.c", "pb.a"):
        await js.publish(s, b"v")
    # several filters: only their subjects, in stream order
    await js.add_consumer("PB", api.ConsumerConfig(durable_name="MF", ack_policy="explicit",
                                                   filter_subjects=["pb.a", "pb.c"]))
    ci = await info(nc, "PB", "MF")
    assert ci["num_pending"] == 3 and ci["config"]["filter_subjects"] == ["pb.a", "pb.c"]
    sub = await js.pull_subscribe_bind("MF", "PB")
    msgs = await sub.fetch(3, timeout=2)
    assert [m.metadata.sequence.stream for m in msgs] == [1, 3, 4]
    assert err(await req(nc, "$JS.API.CONSUMER.CREATE.PB.OV", {"stream_name": "PB", "config": {
        "filter_subjects": ["pb.>", "pb.a"]}})) == (400, 10138, "consumer subject filters cannot overlap")

    # backoff: the first redelivery waits backoff[0], the next backoff[1]
    r = await req(nc, "$JS.API.CONSUMER.CREATE.PB.BO", {"stream_name": "PB", "config": {
        "durable_name": "BO", "ack_policy": "explicit", "filter_subject": "pb.b",
        "backoff": [300_000_000, 1_500_000_000], "max_deliver": 4}})
    assert r["config"]["ack_wait"] == 300_000_000
    # each pull waits for the redelivery (the consumer has nothing else to
    # give); the gaps are measured from before the pull that brought the
    # previous delivery, so a busy machine only makes them longer
    bo = await js.pull_subscribe_bind("BO", "PB")
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    (m,) = await bo.fetch(1, timeout=2)
    assert m.metadata.num_delivered == 1
    t1 = loop.time()
    (m,) = await bo.fetch(1, timeout=5)
    assert m.metadata.num_delivered == 2 and loop.time() - t0 >= 0.3
    (m,) = await bo.fetch(1, timeout=8)
    assert m.metadata.num_delivered == 3 and loop.time() - t1 >= 1.5  # the second step is 1.5 s

    # pause: nothing is delivered until the pause ends
    await js.add_consumer("PB", api.ConsumerConfig(durable_name="PZ", ack_policy="explicit"))
    import datetime as dt
    until = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1)
    r = await req(nc, "$JS.API.CONSUMER.PAUSE.PB.PZ", {"pause_until": until.isoformat().replace("+00:00", "Z")})
    assert r["paused"] is True and 0 < r["pause_remaining"] <= 10**9
    ci = await info(nc, "PB", "PZ")
    assert ci["paused"] is True and ci["config"]["pause_until"]
    pz = await js.pull_subscribe_bind("PZ", "PB")
    (m,) = await pz.fetch(1, timeout=5)  # waits out the pause (same clock as the server's)
    assert dt.datetime.now(dt.timezone.utc) >= until
    assert m.metadata.sequence.stream == 1
    r = await req(nc, "$JS.API.CONSUMER.PAUSE.PB.PZ", {})
    assert r["paused"] is False


async def test_pull_heartbeats_and_max_waiting(nc, js, raw):
    await js.add_stream(name="PH", subjects=["ph"])
    await req(nc, "$JS.API.CONSUMER.CREATE.PH.C", {"stream_name": "PH", "config": {
        "durable_name": "C", "ack_policy": "explicit", "max_waiting": 1}})
    c = await raw()
    await c.send("SUB r.> 1\r\n")
    body = '{"batch":1,"expires":1000000000,"idle_heartbeat":200000000}'
    await c.send(f"PUB $JS.API.CONSUMER.MSG.NEXT.PH.C r.1 {len(body)}\r\n{body}\r\n")
    body2 = '{"batch":1,"expires":1000000000}'
    await c.send(f"PUB $JS.API.CONSUMER.MSG.NEXT.PH.C r.2 {len(body2)}\r\n{body2}\r\n")
    lines = await c.read_lines(10)  # the 409, then r.1's first heartbeat (200 ms on)
    assert lines[:4] == status("r.2", "NATS/1.0 409 Exceeded MaxWaiting")
    assert lines[4:10] == status("r.1", "NATS/1.0 100 Idle Heartbeat", "Nats-Last-Consumer: 0", "Nats-Last-Stream: 0")


async def test_push_redelivery_and_replay_original(nc, js):
    await js.add_stream(name="RP", subjects=["rp"])
    await js.publish("rp", b"a")
    await asyncio.sleep(0.6)  # a time to pass: the gap between the two stored messages
    await js.publish("rp", b"b")
    # replay original: the second message comes as long after the first as
    # it was stored (measured from before the consumer was made, so a busy
    # machine only makes it longer)
    sub = await nc.subscribe("drp")
    t0 = asyncio.get_running_loop().time()
    await js.add_consumer("RP", api.ConsumerConfig(durable_name="R", deliver_subject="drp", ack_policy="none",
                                                   replay_policy="original"))
    m1 = await sub.next_msg(timeout=2)
    m2 = await sub.next_msg(timeout=5)
    gap = asyncio.get_running_loop().time() - t0
    stored_gap = (m2.metadata.timestamp - m1.metadata.timestamp).total_seconds()
    assert (m1.data, m2.data) == (b"a", b"b") and stored_gap >= 0.6 and gap >= stored_gap - 0.01
    # push with ack wait: an unacked message comes again, delivery count 2
    sub2 = await nc.subscribe("dre")
    await js.add_consumer("RP", api.ConsumerConfig(durable_name="W", deliver_subject="dre", ack_policy="explicit",
                                                   ack_wait=0.5, filter_subject="rp"))
    for _ in range(2):
        await sub2.next_msg(timeout=2)  # first deliveries, not acked
    again = await sub2.next_msg(timeout=2)
    assert again.reply.split(".")[4:6] == ["2", "1"]  # delivered twice, stream seq 1
    ci = await info(nc, "RP", "W")
    assert ci["num_redelivered"] >= 1 and ci["num_ack_pending"] == 2


async def test_consumer_reset(nc, js):
    await js.add_stream(name="RS", subjects=["rs"])
    for _ in range(5):
        await js.publish("rs", b"x")
    await js.add_consumer("RS", api.ConsumerConfig(durable_name="C", ack_policy="explicit"))
    await js.add_consumer("RS", api.ConsumerConfig(durable_name="L", ack_policy="explicit", deliver_policy="last"))
    sub = await js.pull_subscribe_bind("C", "RS")
    ms = await sub.fetch(3, timeout=2)
    await ms[0].ack_sync()
    r = await req(nc, "$JS.API.CONSUMER.RESET.RS.C")
    assert r["reset_seq"] == 2 and counters(r) == ((0, 1), (0, 1), 0, 0, 4)
    r = await req(nc, "$JS.API.CONSUMER.RESET.RS.L", {"seq": 2})
    assert err(r) == (400, 10204, "invalid reset: not allowed") and r["reset_seq"] == 0
    (m,) = await sub.fetch(1, timeout=2)
    assert (m.metadata.sequence.stream, m.metadata.sequence.consumer, m.metadata.num_delivered) == (2, 1, 1)


@pytest.mark.parametrize("no_responders", [False, True])
async def test_next_and_direct_get_to_nothing_honour_no_responders(js, raw, no_responders):
    """CONSUMER.MSG.NEXT / DIRECT.GET that nothing serves: the 503 goes only
    to a client whose CONNECT asked for no-responders statuses."""
    await js.add_stream(name="NR", subjects=["nr"])
    nr = ',"no_responders":true' if no_responders else ""
    c = await raw(connect='{"verbose":false,"pedantic":false,"headers":true,"protocol":1%s}' % nr)
    subjects = ["$JS.API.CONSUMER.MSG.NEXT.NOPE.NOPE", "$JS.API.CONSUMER.MSG.NEXT.NR.nope",
                "$JS.API.DIRECT.GET.NR", "$JS.API.DIRECT.GET.NOPE"]
    await c.send("SUB _r.* 1\r\n")
    for i, subj in enumerate(subjects):
        await c.send(f"PUB {subj} _r.{i} 9\r\n{{\"seq\":1}}\r\n")
    # a 503 is sent where the PUB is routed, before the PONG to a later PING
    lines = await c.read_lines(5 * len(subjects) if no_responders else 0)
    if not no_responders:
        assert lines == []
    else:
        assert lines == [x for i, subj in enumerate(subjects)
                         for x in (f"HMSG _r.{i} 1 {len(subj) + 32} {len(subj) + 32}", "NATS/1.0 503",
                                   f"Nats-Subject: {subj}", "", "")]


async def test_push_delivery_needs_a_literal_subscription(nc, js, raw):
    """A wildcard subscription that covers the deliver subject does not start
    push delivery; one on exactly the deliver subject does."""
    await js.add_stream(name="PD", subjects=["pd"])
    await js.publish("pd", b"one")
    r = await req(nc, "$JS.API.CONSUMER.CREATE.PD.P", {"stream_name": "PD", "config": {
        "name": "P", "deliver_subject": "deliver.x", "ack_policy": "none"}})
    assert "error" not in r
    c = await raw()
    await c.send("SUB deliver.* 1\r\n")
    assert await c.read_until_pong() == []
    assert (await req(nc, "$JS.API.CONSUMER.INFO.PD.P"))["delivered"]["consumer_seq"] == 0
    await c.send("SUB deliver.x 2\r\n")
    # ack none, so delivered once: had the wildcard started delivery, the one
    # delivery would have gone to it alone, before deliver.x was subscribed
    lines = await c.read_lines(4)
    assert sorted(line.split(" ", 3)[:3] for line in lines if line.startswith("MSG ")) == \
        [["MSG", "pd", "1"], ["MSG", "pd", "2"]], lines
    assert any(line.startswith("MSG pd 2 $JS.ACK.PD.P.1.1.1.") for line in lines), lines
    assert "one" in lines


@pytest.mark.parametrize("storage", ["file", "memory"])
async def test_delivered_stays_on_the_last_delivery_when_nothing_more_matches(nc, js, storage):
    """A pull that finds nothing more (a non-matching or deleted tail) leaves
    delivered.stream_seq on the last message delivered."""
    await js.add_stream(name="T", subjects=["t.>"], storage=api.StorageType(storage))
    for s in ["a", "b", "a", "c", "b"]:
        await js.publish(f"t.{s}", b"x")
    for durable, flt in (("W", "t.c"), ("ALL", None)):
        await js.add_consumer("T", api.ConsumerConfig(durable_name=durable, ack_policy=api.AckPolicy.EXPLICIT,
                                                      filter_subject=flt))
    w = await js.pull_subscribe_bind("W", "T")
    a = await js.pull_subscribe_bind("ALL", "T")
    assert [m.metadata.sequence.stream for m in await w.fetch(1, timeout=2)] == [4]
    assert [m.metadata.sequence.stream for m in await a.fetch(3, timeout=2)] == [1, 2, 3]
    await js.delete_msg("T", 4)
    await js.delete_msg("T", 5)
    for sub in (w, a):
        with pytest.raises(NatsTimeout):
            await sub.fetch(1, timeout=0.5)
    for durable, seq in (("W", 4), ("ALL", 3)):
        ci = await js.consumer_info("T", durable)
        assert (ci.delivered.stream_seq, ci.num_pending) == (seq, 0), durable
    await js.publish("t.c", b"z")
    assert [m.metadata.sequence.stream for m in await w.fetch(1, timeout=2)] == [6]
    assert (await js.consumer_info("T", "W")).delivered.stream_seq == 6


async def test_overflow_priority_groups(nc, js, raw):
    await js.add_stream(name="PG", subjects=["pg.>"])
    for i in range(3):
        await js.publish("pg.x", b"m%d" % i)

    async def create(name: str, **cfg) -> dict:
        r = await req(nc, f"$JS.API.CONSUMER.CREATE.PG.{name}", {"stream_name": "PG", "config": {
            "name": name, "ack_policy": "explicit", **cfg}})
        return r.get("error") or r["config"]

    assert (await create("A", priority_policy="overflow"))["err_code"] == 10159
    assert (await create("B", priority_groups=["g"]))["err_code"] == 10196
    assert (await create("E", priority_policy="overflow", priority_groups=[""]))["err_code"] == 10161
    assert (await create("F", priority_policy="overflow", priority_groups=["no spaces"]))["err_code"] == 10162
    assert (await create("H", priority_policy="overflow", priority_groups=["g"], deliver_subject="dh"))["err_code"] == 10178
    cfg = await create("C", priority_policy="overflow", priority_groups=["g", "h"])
    assert (cfg["priority_policy"], cfg["priority_groups"]) == ("overflow", ["g", "h"])
    info = await req(nc, "$JS.API.CONSUMER.INFO.PG.C")
    assert info["priority_groups"] == [{"group": "g", "pinned_ts": "0001-01-01T00:00:00Z"}]

    c = await raw()
    await c.send("SUB r.> 1\r\n")

    async def pull(body: dict, reply: str) -> list[str]:
        # each of these pulls ends in one reply: a message or a status
        # (nats-server sends it from the consumer's goroutine, maybe after a PONG)
        data = json.dumps(body)
        await c.send(f"PUB $JS.API.CONSUMER.MSG.NEXT.PG.C {reply} {len(data)}\r\n{data}\r\n")
        return await c.read_lines(2)

    short = {"batch": 1, "expires": 200_000_000}
    assert await pull(short, "r.1") == status("r.1", "NATS/1.0 400 Bad Request - Priority Group missing")
    assert await pull({**short, "group": "zz"}, "r.2") == status("r.2", "NATS/1.0 400 Bad Request - Invalid Priority Group")
    assert (await pull({**short, "group": "g", "id": "x"}, "r.3")) == status(
        "r.3", "NATS/1.0 400 Bad Request - Not a Pinned Client Priority consumer")
    # served only once 10 messages are pending: times out with all 3 still there
    assert (await pull({**short, "group": "g", "min_pending": 10}, "r.4"))[1] == "NATS/1.0 408 Request Timeout"
    lines = await pull({**short, "group": "g", "min_pending": 3}, "r.5")
    assert lines[0].startswith("MSG pg.x 1 $JS.ACK.PG.C.1.1.1.") and lines[1] == "m0"
    lines = await pull({**short, "group": "h", "min_ack_pending": 1}, "r.6")
    assert lines[1] == "m1"
    # either threshold will do: one message is still pending
    assert (await pull({**short, "group": "g", "min_pending": 1, "min_ack_pending": 5}, "r.7"))[1] == "m2"
    assert (await pull({**short, "group": "g", "min_pending": 1, "min_ack_pending": 5}, "r.9"))[1] == \
        "NATS/1.0 408 Request Timeout"
    # thresholds belong to overflow consumers only
    await create("N", priority_policy="none")
    data = json.dumps({**short, "min_pending": 1})
    await c.send(f"PUB $JS.API.CONSUMER.MSG.NEXT.PG.N r.8 {len(data)}\r\n{data}\r\n")
    assert await c.read_lines(4) == status("r.8", "NATS/1.0 400 Bad Request - Not a Overflow Priority consumer")


async def test_pause_until_a_past_time_is_kept(nc, js):
    """nats.js resumes a consumer by pausing it until the epoch: the time is
    kept in the config (not paused); only Go's zero time or no body resumes."""
    await js.add_stream(name="PZ", subjects=["pz.>"])
    await req(nc, "$JS.API.CONSUMER.CREATE.PZ.C", {"stream_name": "PZ", "config": {"name": "C", "ack_policy": "explicit"}})
    cases = [({"pause_until": "2099-01-01T00:00:00Z"}, "2099-01-01T00:00:00Z", True, "2099-01-01T00:00:00Z", "1"),
             ({"pause_until": "1970-01-01T00:00:00Z"}, "1970-01-01T00:00:00Z", False, "1970-01-01T00:00:00Z", "1"),
             ({"pause_until": "2000-01-01T00:00:00.5+01:00"}, "1999-12-31T23:00:00.5Z", False, "1999-12-31T23:00:00.5Z", "1"),
             ({}, "0001-01-01T00:00:00Z", False, None, "0"),
             ({"pause_until": "0001-01-01T00:00:00Z"}, "0001-01-01T00:00:00Z", False, None, "0")]
    for body, echoed, paused, kept, level in cases:
        r = await req(nc, "$JS.API.CONSUMER.PAUSE.PZ.C", body)
        assert (r["pause_until"], r["paused"]) == (echoed, paused), body
        ci = await info(nc, "PZ", "C")
        assert ci["config"].get("pause_until") == kept and ci["config"]["metadata"]["_nats.req.level"] == level, body
        assert ci.get("paused", False) == paused


async def test_pinned_client_priority_groups(nc, js, raw):
    """One client holds the pin: its messages carry Nats-Pin-Id, other
    clients wait (or get 423 with a wrong id) until UNPIN or the timeout."""
    await js.add_stream(name="PN", subjects=["pn.>"])
    for i in range(6):
        await js.publish("pn.x", b"m%d" % i)
    r = await req(nc, "$JS.API.CONSUMER.CREATE.PN.C", {"stream_name": "PN", "config": {
        "name": "C", "ack_policy": "explicit", "priority_policy": "pinned_client", "priority_groups": ["g"],
        "priority_timeout": 4_000_000_000}})  # (ample for the pulls below on a loaded machine)
    assert r["config"]["priority_timeout"] == 4_000_000_000
    r = await req(nc, "$JS.API.CONSUMER.CREATE.PN.D", {"stream_name": "PN", "config": {
        "name": "D", "ack_policy": "explicit", "priority_policy": "pinned_client", "priority_groups": ["g"]}})
    assert r["config"]["priority_timeout"] == 120_000_000_000
    assert (await info(nc, "PN", "C"))["priority_groups"] == [{"group": "g", "pinned_ts": "0001-01-01T00:00:00Z"}]
    adv = await nc.subscribe("$JS.EVENT.ADVISORY.CONSUMER.*.PN.C")
    c = await raw()
    await c.send("SUB r.> 1\r\n")

    async def pull(body: dict, reply: str) -> list[str]:
        # every reply up to the one that ends the pull: a status, or its
        # batch's last message (nats-server sends them from the consumer's
        # goroutine, maybe after a PONG)
        data = json.dumps(body)
        await c.send(f"PUB $JS.API.CONSUMER.MSG.NEXT.PN.C {reply} {len(data)}\r\n{data}\r\n")
        return await c.read_until(lambda lines: any(x.startswith("NATS/1.0 4") for x in lines)
                                  or sum(x.startswith("m") for x in lines) >= body["batch"])

    short = {"batch": 1, "expires": 200_000_000, "group": "g"}
    lines = await pull(short, "r.1")
    assert lines[0].startswith("HMSG pn.x 1 $JS.ACK.PN.C.1.1.1.") and lines[-1] == "m0"
    pin = next(x for x in lines if x.startswith("Nats-Pin-Id: ")).split(": ", 1)[1]
    g = (await info(nc, "PN", "C"))["priority_groups"][0]
    assert g["pinned_client_id"] == pin and g["pinned_ts"] != "0001-01-01T00:00:00Z"
    # another client waits while the pin is held; a wrong pin is refused
    assert (await pull(short, "r.2"))[1] == "NATS/1.0 408 Request Timeout"
    assert (await pull({**short, "id": "bogus"}, "r.3")) == status("r.3", "NATS/1.0 423 Nats-Pin-Id mismatch")
    lines = await pull({**short, "id": pin}, "r.4")
    assert lines[-1] == "m1" and f"Nats-Pin-Id: {pin}" in lines
    # UNPIN, with its errors
    assert await req(nc, "$JS.API.CONSUMER.UNPIN.PN.C", {"group": "g"}) == {
        "type": "io.nats.jetstream.api.v1.consumer_unpin_response"}
    for body, code in ((b"", 10025), ({}, 10025), ({"group": "zz"}, 10160), ({"group": "no spaces"}, 10162)):
        assert (await req(nc, "$JS.API.CONSUMER.UNPIN.PN.C", body))["error"]["err_code"] == code, body
    assert (await req(nc, "$JS.API.CONSUMER.UNPIN.PN.X", {"group": "g"}))["error"]["err_code"] == 10014
    assert "pinned_client_id" not in (await info(nc, "PN", "C"))["priority_groups"][0]
    # the old pin is refused once gone; a new client gets a new pin
    assert (await pull({**short, "id": pin}, "r.5"))[1] == "NATS/1.0 423 Nats-Wrong-Pin-Id"
    lines = await pull({**short, "batch": 2}, "r.6")
    new_pin = next(x for x in lines if x.startswith("Nats-Pin-Id: ")).split(": ", 1)[1]
    assert new_pin != pin and [x for x in lines if x.startswith("m")] == ["m2", "m3"]
    # a pinned client that stops pulling loses the pin after priority_timeout
    async def unpinned():
        return "pinned_client_id" not in (await info(nc, "PN", "C"))["priority_groups"][0]
    assert await eventually(unpinned, 15)
    events = []
    for _ in range(4):  # (nats-server may publish the last one after the info shows no pin)
        m = await adv.next_msg(timeout=5)
        d = json.loads(m.data)
        events.append((m.subject.split(".")[4], d.get("reason"), d["group"], d["account"]))
    assert events == [("PINNED", None, "g", "$G"), ("UNPINNED", "admin", "g", "$G"),
                      ("PINNED", None, "g", "$G"), ("UNPINNED", "timeout", "g", "$G")]


async def test_ack_none_consumer_has_no_ack_subject(nc, js):
    """nats-server subscribes no ack subject for an ack-none consumer: an ack
    sent anyway (here as a request) finds no responders."""
    from nats.errors import NoRespondersError

    await js.add_stream(name="AN", subjects=["an.>"])
    await js.publish("an.x", b"x")
    await js.add_consumer("AN", api.ConsumerConfig(durable_name="N", ack_policy=api.AckPolicy.NONE))
    sub = await js.pull_subscribe_bind("N", "AN")
    m = (await sub.fetch(1, timeout=2))[0]
    with pytest.raises(NoRespondersError):
        await nc.request(m.reply, b"+ACK", timeout=1)


async def test_acks_read_together_keep_their_order(nc, js, server):
    """One read brings plain acks for two consumers interleaved, out of
    order and repeated, with a NAK, a TERM, an ack that asks for a reply and
    acks for an interest-retention stream among them: each lands exactly as
    if it had come alone (natslab hands runs of plain acks over together)."""
    await js.add_stream(name="MB", subjects=["mb"])
    await js.add_stream(name="MI", subjects=["mi"], retention="interest")
    for name in ("A", "B"):
        await js.add_consumer("MB", api.ConsumerConfig(durable_name=name, ack_policy="explicit", ack_wait=60))
    await js.add_consumer("MB", api.ConsumerConfig(durable_name="P", ack_policy="explicit", max_ack_pending=2))
    await js.add_consumer("MI", api.ConsumerConfig(durable_name="I", ack_policy="explicit", ack_wait=60))
    for i in range(6):
        await js.publish("mb", b"b%d" % i)
        await js.publish("mi", b"i%d" % i)
    got = {}
    for stream, name in (("MB", "A"), ("MB", "B"), ("MI", "I")):
        psub = await js.pull_subscribe_bind(name, stream)
        got[name] = (psub, [m.reply for m in await psub.fetch(6, timeout=2)])
    a, b, i = got["A"][1], got["B"][1], got["I"][1]
    pp = [m.reply for m in await (await js.pull_subscribe_bind("P", "MB")).fetch(2, timeout=2)]
    lines = [(a[0], "", ""), (a[2], "", "+ACK"), (b[1], "", "+ACK"), (i[0], "", ""), (a[1], "", ""),
             (i[2], "", "+ACK"), (a[3], "", "-NAK"), (a[4], "rep.1", ""), (b[0], "", "+TERM"),
             (b[2], "", ""), (b[2], "", ""), (i[1], "", ""), (a[5], "", "+WPI"), (i[3], "rep.2", "+ACK"),
             # P is at its max_ack_pending with a pull waiting: the acks let two more go out
             (pp[0], "", ""), (pp[1], "", "")]
    r, w = await asyncio.open_connection(server.host, server.port)
    await r.readline()  # INFO
    w.write(b'CONNECT {"verbose":false,"pedantic":false}\r\nSUB rep.* 1\r\nPING\r\n')
    while not (await r.readline()).startswith(b"PONG"):
        pass
    w.write(b'PUB $JS.API.CONSUMER.MSG.NEXT.MB.P rep.3 32\r\n{"batch":2,"expires":5000000000}\r\nPING\r\n')
    while not (await r.readline()).startswith(b"PONG"):
        pass

    async def pull_waiting():  # nats-server queues the pull for the consumer's goroutine
        return (await info(nc, "MB", "P"))["num_waiting"] == 1
    assert await eventually(pull_waiting)
    w.write(b"".join(b"PUB %s %s %d\r\n%s\r\n" % (s.encode(), rep.encode(), len(p), p.encode())
                     for s, rep, p in lines) + b"PING\r\n")
    replies = []

    async def read_replies():  # nats-server may send them after the PONG
        while len(replies) < 4:
            line = await r.readline()
            if line.startswith((b"MSG ", b"HMSG ")):
                t = line.split()
                body = await r.readexactly(int(t[-1]) + 2)
                replies.append((t[1], body[:-2]) if t[0] == b"MSG" else (t[1], body.split(b"\r\n")[0]))
    await asyncio.wait_for(read_replies(), 2)
    w.close()
    assert sorted(replies) == [(b"mb", b"b2"), (b"mb", b"b3"), (b"rep.1", b""), (b"rep.2", b"")]
    # A: 1, 2, 3 and 5 acked; 4 NAKed (delivered again next, tries 2); 6 pending
    assert counters(await info(nc, "MB", "A")) == ((6, 6), (3, 3), 2, 0, 0)
    (m,) = await got["A"][0].fetch(1, timeout=2)
    assert (m.metadata.sequence.stream, m.metadata.num_delivered) == (4, 2)
    # B: 1 terminated, 2 and 3 acked (3 twice)
    assert counters(await info(nc, "MB", "B")) == ((6, 6), (3, 3), 3, 0, 0)
    # I: 1 to 4 acked, so gone from the interest stream
    assert counters(await info(nc, "MI", "I")) == ((6, 6), (4, 4), 2, 0, 0)
    st = (await js.stream_info("MI")).state
    assert (st.messages, st.first_seq) == (2, 5)
    # the consumer's own ack floor (where a reset starts over) moved too
    assert (await req(nc, "$JS.API.CONSUMER.RESET.MB.B"))["reset_seq"] == 4


async def _lps_stream(js, c, name: str, n: int) -> None:
    """A stream like a KV bucket with one revision: one message on each of n subjects."""
    await js.add_stream(name=name, subjects=[f"{name}.>"], max_msgs_per_subject=1, storage="memory")
    await c.send("".join(f"PUB {name}.k.{i} 1\r\nv\r\n" for i in range(n)))
    await c.read_until_pong()

    async def stored():
        return (await js.stream_info(name)).state.messages >= n
    assert await eventually(stored, 30)


async def test_last_per_subject_push_over_many_subjects(js, raw):
    # what KV key listing and the Go and C clients' watchers do: deliver the
    # last message of each of 10,000 subjects, counting down num_pending
    n = 10_000
    c = await raw()
    await _lps_stream(js, c, "LPS", n)
    await c.send("SUB dlps 1\r\n")
    await c.read_until_pong()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await js.add_consumer("LPS", api.ConsumerConfig(deliver_subject="dlps", deliver_policy="last_per_subject",
                                                    ack_policy="none", filter_subject="LPS.>"))
    pending = []
    while len(pending) < n:
        line = await c.readline(timeout=10)
        if line.startswith("MSG "):
            pending.append(int(line.split()[3].rsplit(".", 1)[1]))
    assert pending == list(range(n - 1, -1, -1))
    assert loop.time() - t0 < 10  # (nats-server: about 0.1 s; natslab once took 18 s)


async def test_unsub_during_a_big_push_is_honoured_promptly(js, raw):
    n = 10_000
    c = await raw()
    await _lps_stream(js, c, "LPU", n)
    await c.send("SUB dlpu 1\r\n")
    await c.read_until_pong()
    await js.add_consumer("LPU", api.ConsumerConfig(deliver_subject="dlpu", deliver_policy="last_per_subject",
                                                    ack_policy="none", filter_subject="LPU.>"))
    line = await c.readline(timeout=10)
    assert line.startswith("MSG LPU.k.0 1 ")
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await c.send("UNSUB 1\r\nPING\r\n")
    while await c.readline(timeout=10) != "PONG":
        pass
    # the broker read the UNSUB while it was pushing (natslab once read it 6.5 s late)
    assert loop.time() - t0 < 2
    # and nothing comes for the subscription after it
    assert not [x for x in await c.read_until_pong() if x.startswith("MSG ")]


@pytest.mark.parametrize("max_expires,text", [(1_234_567, "1.234567ms"), (90 * 10**9 + 1, "1m30.000000001s"),
                                              (2 * 10**9, "2s"), (1_500_000_000, "1.5s")])
async def test_pull_above_max_expires_names_it_as_go_prints_a_duration(nc, js, max_expires, text):
    """The 409 for a pull that asks for more than max_expires writes it with
    Go's time.Duration.String(), every digit of the fraction kept."""
    await js.add_stream(name="MX", subjects=["mx"])
    await req(nc, "$JS.API.CONSUMER.CREATE.MX.C", {"stream_name": "MX", "config": {
        "durable_name": "C", "ack_policy": "explicit", "max_expires": max_expires}})
    body = json.dumps({"batch": 1, "expires": max_expires + 10**9}).encode()
    msg = await nc.request("$JS.API.CONSUMER.MSG.NEXT.MX.C", body, timeout=2)
    assert msg.headers["Status"] == "409"
    assert msg.headers["Description"] == f"Exceeded MaxRequestExpires of {text}"


FC = {"durable_name": "F", "deliver_subject": "fc.in", "ack_policy": "flow_control", "max_ack_pending": 100}


@pytest.mark.parametrize("extra,err_code", [
    ({"deliver_subject": None}, 10218), ({"ack_wait": 10**9}, 10221), ({"backoff": [10**9]}, 10221),
    ({"max_deliver": 5}, 10222), ({"max_ack_pending": -1}, 10220)])
async def test_flow_control_ack_policy_config_errors(nc, js, extra, err_code):
    await js.add_stream(name="FCS", subjects=["fcs.>"])
    cfg = {k: v for k, v in dict(FC, **extra).items() if v is not None}
    r = await req(nc, "$JS.API.CONSUMER.CREATE.FCS.F", {"stream_name": "FCS", "config": cfg})
    assert r["error"]["err_code"] == err_code, r


async def test_flow_control_ack_policy_acks_by_the_flow_control_reply(nc, js):
    """ack_policy flow_control (2.14): a flow-controlled push consumer with a
    1s heartbeat and no ack wait, acked up to the stream and consumer
    sequences the reply to its flow control request names."""
    await js.add_stream(name="FCS", subjects=["fcs.>"])
    r = await req(nc, "$JS.API.CONSUMER.CREATE.FCS.F", {"stream_name": "FCS", "config": dict(FC, idle_heartbeat=5 * 10**9)})
    cfg = r["config"]
    assert (cfg["ack_policy"], cfg["flow_control"], cfg["idle_heartbeat"], cfg["max_ack_pending"], cfg["max_deliver"]) == (
        "flow_control", True, 10**9, 100, -1)
    assert "ack_wait" not in cfg and cfg["metadata"]["_nats.req.level"] == "4"
    got: list = []

    async def take(m):
        got.append(m)

    sub = await nc.subscribe("fc.in", cb=take)
    await nc.flush()
    await nc.flush()
    for i in range(3):
        await js.publish(f"fcs.{i}", b"x")
    assert await eventually(lambda: sum(1 for m in got if m.reply.startswith("$JS.ACK.")) == 3, timeout=5)
    ci = await info(nc, "FCS", "F")
    assert (ci["delivered"]["stream_seq"], ci["ack_floor"]["stream_seq"], ci["num_ack_pending"]) == (3, 0, 3)
    # with messages pending the heartbeat brings a flow control request
    assert await eventually(lambda: any(m.reply.startswith("$JS.FC.FCS.F.") for m in got), timeout=5)
    fc = next(m for m in got if m.reply.startswith("$JS.FC.FCS.F."))
    assert fc.headers is None or fc.headers.get("Status") == "100"
    await nc.publish(fc.reply, b"", headers={"Nats-Last-Consumer": "2", "Nats-Last-Stream": "2"})
    await nc.flush()

    async def acked_to(n):
        ci = await info(nc, "FCS", "F")
        return ci["ack_floor"]["stream_seq"] == n and ci["num_ack_pending"] == 3 - n

    assert await eventually(lambda: acked_to(2), timeout=5)
    await sub.unsubscribe()
