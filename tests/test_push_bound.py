"""A durable push consumer delivers to one deliver subject at a time: a
create that moves it to another subject is an update, allowed only while
nobody listens on the current one; otherwise nats-server answers
``400 / 10013 consumer name already in use``, so of workers racing to bind
one durable exactly one wins. Differential: the same assertions on natslab's
broker and on nats-server."""

from __future__ import annotations

import asyncio
import json

from conftest import connect

NAME_IN_USE = {"code": 400, "err_code": 10013, "description": "consumer name already in use"}


async def create(nc, deliver: str, **extra) -> dict:
    body = {"stream_name": "S", "config": dict({"durable_name": "D", "deliver_subject": deliver}, **extra)}
    m = await nc.request("$JS.API.CONSUMER.CREATE.S.D", json.dumps(body).encode(), timeout=3)
    return json.loads(m.data)


async def listening(nc, subject: str):
    sub = await nc.subscribe(subject)
    await nc.flush()
    await nc.flush()  # (nats-py's flush can overtake a just-queued SUB)
    return sub


async def test_rebinding_a_listened_durable_is_refused(server):
    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s.>"])
    first = await listening(nc, "deliver.one")
    r = await create(nc, "deliver.one")
    assert "error" not in r and r["config"]["deliver_subject"] == "deliver.one"
    # someone listens on deliver.one: another subject is refused, the same config is fine
    assert (await create(nc, "deliver.two"))["error"] == NAME_IN_USE
    assert "error" not in await create(nc, "deliver.one")
    # a wildcard subscription that covers the deliver subject is interest too
    await first.unsubscribe()
    wide = await listening(nc, "deliver.*")
    assert (await create(nc, "deliver.two"))["error"] == NAME_IN_USE
    await wide.unsubscribe()
    await nc.flush()
    # nobody listens any more: the durable moves, and delivers to its new subject
    second = await listening(nc, "deliver.two")
    r = await create(nc, "deliver.two")
    assert "error" not in r and r["config"]["deliver_subject"] == "deliver.two"
    await js.publish("s.1", b"hello")
    msg = await second.next_msg(timeout=3)
    assert msg.data == b"hello"
    info = await js.consumer_info("S", "D")
    assert info.config.deliver_subject == "deliver.two"
    await nc.close()


async def test_ten_workers_racing_to_bind_one_durable_one_wins(server):
    nc = await connect(server.url)
    await nc.jetstream().add_stream(name="S", subjects=["s.>"])
    workers = [await connect(server.url) for _ in range(10)]
    subs = [await listening(w, f"deliver.worker{i}") for i, w in enumerate(workers)]
    answers = await asyncio.gather(*(create(w, f"deliver.worker{i}", ack_policy="explicit")
                                     for i, w in enumerate(workers)))
    winners = [i for i, a in enumerate(answers) if "error" not in a]
    assert len(winners) == 1, answers
    assert all(a["error"] == NAME_IN_USE for i, a in enumerate(answers) if i != winners[0])
    w = winners[0]
    info = await nc.jetstream().consumer_info("S", "D")
    assert info.config.deliver_subject == f"deliver.worker{w}"
    # the winner gets the messages, nobody else does
    await nc.jetstream().publish("s.1", b"job")
    assert (await subs[w].next_msg(timeout=3)).data == b"job"
    # a sentinel: anything the consumer sent elsewhere before it was queued
    # on that worker's connection before this PING, so before its PONG
    await nc.jetstream().publish("s.1", b"end")
    assert (await subs[w].next_msg(timeout=3)).data == b"end"
    for i, c in enumerate(workers):
        if i != w:
            await c.flush()
    assert all(s.pending_msgs == 0 for i, s in enumerate(subs) if i != w)
    for c in workers + [nc]:
        await c.close()
