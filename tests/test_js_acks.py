"""Acks of a fetched batch sent in one write (issue 23), differential: a
client that acks what it fetched sends the acks back to back, and natslab
takes such a run at once. Whatever the order (in order, with a hole,
reversed, twice, in pairs, of a redelivery, on a filtered consumer with gaps
in the stream sequences), the ack floor, num_ack_pending and what delivery
held back by max_ack_pending does next are the same on natslab and
nats-server 2.15.1."""

from __future__ import annotations

import asyncio
import json

import pytest

from test_js_consumers import counters, info
from test_js_streams import req

PATTERNS = {  # which of six delivered messages are acked, in the order sent
    "in order": [0, 1, 2, 3, 4, 5],
    "all but the first": [1, 2, 3, 4, 5],
    "a hole": [0, 1, 3, 4, 5],
    "reversed": [5, 4, 3, 2, 1, 0],
    "twice": [0, 1, 1, 2, 3, 4, 5, 5],
    "in pairs": [1, 0, 3, 2, 5, 4],
    "first three": [0, 1, 2],
}
# (delivered, ack floor, num_ack_pending, num_redelivered, num_pending) after
# the acks, for a consumer of every message and one of ak.a only (stream
# sequences 1, 3, 5, ... 11 of the twelve)
EXPECTED = {
    ("in order", ""): ((6, 6), (6, 6), 0, 0, 6),
    ("all but the first", ""): ((6, 6), (0, 0), 1, 0, 6),
    ("a hole", ""): ((6, 6), (2, 2), 1, 0, 6),
    ("reversed", ""): ((6, 6), (6, 6), 0, 0, 6),
    ("twice", ""): ((6, 6), (6, 6), 0, 0, 6),
    ("in pairs", ""): ((6, 6), (6, 6), 0, 0, 6),
    ("first three", ""): ((6, 6), (3, 3), 3, 0, 6),
    ("in order", "ak.a"): ((6, 11), (6, 11), 0, 0, 0),
    ("all but the first", "ak.a"): ((6, 11), (0, 0), 1, 0, 0),
    ("a hole", "ak.a"): ((6, 11), (2, 4), 1, 0, 0),
    ("reversed", "ak.a"): ((6, 11), (6, 11), 0, 0, 0),
    ("twice", "ak.a"): ((6, 11), (6, 11), 0, 0, 0),
    ("in pairs", "ak.a"): ((6, 11), (6, 11), 0, 0, 0),
    ("first three", "ak.a"): ((6, 11), (3, 6), 3, 0, 0),
}


async def stream(nc, js) -> None:
    await req(nc, "$JS.API.STREAM.CREATE.AK", {"name": "AK", "subjects": ["ak.*"]})
    for i in range(12):
        await js.publish("ak.a" if i % 2 == 0 else "ak.b", b"m%d" % i)


async def consumer(nc, name: str, **cfg) -> None:
    await req(nc, f"$JS.API.CONSUMER.CREATE.AK.{name}", {"stream_name": "AK", "config": {
        "durable_name": name, "ack_policy": "explicit", "ack_wait": 30_000_000_000, **cfg}})


async def fetch(c, name: str, n: int, wanted: int | None = None) -> list[str]:
    """Pull n messages (a request for ``wanted``, n when None) on a raw
    client subscribed to pulled.> as sid 1: their ack subjects."""
    body = json.dumps({"batch": wanted or n, "expires": 5_000_000_000})
    await c.send(f"PUB $JS.API.CONSUMER.MSG.NEXT.AK.{name} pulled.{name} {len(body)}\r\n{body}\r\n")
    replies = []
    while len(replies) < n:
        line = await c.readline()
        assert line.startswith(f"MSG ak."), line
        replies.append(line.split()[3])
        await c.readline()  # the payload
    return replies


async def settled(nc, name: str, want: tuple) -> tuple:
    """The consumer's counters once they are ``want`` (or as they are after
    3 s): nats-server hands acks to the consumer's own goroutine, so a PONG
    can come back before it has taken them."""
    for _ in range(60):
        got = counters(await info(nc, "AK", name))
        if got == want:
            break
        await asyncio.sleep(0.05)
    return got


async def ack_in_one_write(c, replies: list[str], body: str = "") -> None:
    await c.send("".join(f"PUB {r} {len(body)}\r\n{body}\r\n" for r in replies))
    assert await c.read_until_pong() == []


@pytest.mark.parametrize("pattern", list(PATTERNS))
@pytest.mark.parametrize("flt", ["", "ak.a"])
async def test_acks_of_a_batch_in_one_write(nc, js, raw, pattern, flt):
    await stream(nc, js)
    await consumer(nc, "C", **({"filter_subject": flt} if flt else {}))
    c = await raw()
    await c.send("SUB pulled.> 1\r\n")
    replies = await fetch(c, "C", 6)
    await ack_in_one_write(c, [replies[i] for i in PATTERNS[pattern]])
    assert await settled(nc, "C", EXPECTED[pattern, flt]) == EXPECTED[pattern, flt]


async def test_acks_of_a_batch_with_more_delivered_after_it(nc, js, raw):
    """Acking the first of two fetched batches leaves the second pending."""
    await stream(nc, js)
    await consumer(nc, "C")
    c = await raw()
    await c.send("SUB pulled.> 1\r\n")
    first = await fetch(c, "C", 6)
    await fetch(c, "C", 3)
    await ack_in_one_write(c, first)
    assert await settled(nc, "C", ((9, 9), (6, 6), 3, 0, 3)) == ((9, 9), (6, 6), 3, 0, 3)


async def test_acks_of_a_batch_with_a_redelivery(nc, js, raw):
    """The second message is naked and redelivered; then the run acks the
    first and third by their first delivery and the second by its
    redelivery (a later consumer sequence than the one pending)."""
    await stream(nc, js)
    await consumer(nc, "C")
    c = await raw()
    await c.send("SUB pulled.> 1\r\n")
    replies = await fetch(c, "C", 3)
    # nats-server takes acks and pull requests on separate queues: the NAK
    # asks for a reply, which the consumer sends once it has taken the NAK
    await c.send(f"PUB {replies[1]} pulled.naked 4\r\n-NAK\r\n")
    assert (await c.readline()).startswith("MSG pulled.naked 1 ")
    assert await c.readline() == ""
    (again,) = await fetch(c, "C", 1)
    assert again.split(".")[4:7] == ["2", "2", "4"]  # delivery count, stream seq, consumer seq
    await ack_in_one_write(c, [replies[0], again, replies[2]])
    assert await settled(nc, "C", ((4, 3), (4, 3), 0, 0, 9)) == ((4, 3), (4, 3), 0, 0, 9)


async def test_acks_of_a_batch_release_max_ack_pending(nc, js, raw):
    """A pull waiting behind max_ack_pending is served once one write of
    acks brings pending under it."""
    await stream(nc, js)
    await consumer(nc, "C", max_ack_pending=4)
    c = await raw()
    await c.send("SUB pulled.> 1\r\n")
    replies = await fetch(c, "C", 4, wanted=6)
    assert await c.read_until_pong() == []  # the rest waits
    await c.send("".join(f"PUB {r} 0\r\n\r\n" for r in replies))
    more = [await c.readline() for _ in range(4)]
    assert [line.split()[1] for line in more[::2]] == ["ak.a", "ak.b"]
    assert await settled(nc, "C", ((6, 6), (4, 4), 2, 0, 6)) == ((6, 6), (4, 4), 2, 0, 6)


async def test_a_run_of_acks_is_counted_exactly(http_server):
    """Acks sent back to back, empty and +ACK (as nats.go sends them): /varz
    and /connz count every one and its bytes."""
    from conftest import RawClient, connect
    from test_monitor import get_json

    srv = http_server
    nc = await connect(srv.url)
    await stream(nc, nc.jetstream())
    await consumer(nc, "C")
    c = await RawClient.open(srv, '{"verbose":false,"pedantic":false,"headers":true,"protocol":1,"name":"acker"}')
    await c.send("SUB pulled.> 1\r\n")
    replies = await fetch(c, "C", 10)
    v0 = await get_json(srv, "/varz")
    await c.send("".join(f"PUB {r} 0\r\n\r\n" for r in replies[:4]) + "".join(f"PUB {r} 4\r\n+ACK\r\n" for r in replies[4:]))
    assert await c.read_until_pong() == []
    v = await get_json(srv, "/varz")
    assert (v["in_msgs"] - v0["in_msgs"], v["in_bytes"] - v0["in_bytes"]) == (10, 24)
    acker = [x for x in (await get_json(srv, "/connz"))["connections"] if x.get("name") == "acker"]
    assert (acker[0]["in_msgs"], acker[0]["in_bytes"]) == (11, 24 + len('{"batch": 10, "expires": 5000000000}'))
    assert await settled(nc, "C", ((10, 10), (10, 10), 0, 0, 2)) == ((10, 10), (10, 10), 0, 0, 2)
    c.close()
    await nc.close()
