"""Consumers and crashes: a durable whose CREATE was answered survives
SIGKILL at once; losing or damaging a consumer's delivery state resets that
state only; an ack_sync that was answered survives SIGKILL."""

from __future__ import annotations

import asyncio

from nats.js.api import AckPolicy, ConsumerConfig

from conftest import ServerProcess, connect
from faultkit import consumer_dir, scale


async def test_durable_created_then_sigkill_at_once(server):
    """Each durable's CREATE answered, then SIGKILL without waiting: every
    one is there after the restart (nats-server: 7 of 7 in the issue)."""
    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s"])
    await js.publish("s", b"x")
    await nc.close()
    made = []
    for i in range(scale(4, 20)):
        nc = await connect(server.url)
        js = nc.jetstream()
        await js.add_consumer("S", ConsumerConfig(durable_name=f"D{i}", ack_policy=AckPolicy.EXPLICIT))
        made.append(f"D{i}")
        server.kill()  # no wait at all after the answer
        await nc.close()
        server.start()
    nc = await connect(server.url)
    js = nc.jetstream()
    names = {c.name for c in await js.consumers_info("S")}
    assert names == set(made), f"lost: {set(made) - names}"
    await nc.close()


async def _consumer_with_progress(srv) -> None:
    nc = await connect(srv.url)
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s"])
    for i in range(10):
        await js.publish("s", b"m%02d" % i)
    sub = await js.pull_subscribe("s", "D", stream="S")
    for m in (await sub.fetch(6, timeout=5))[:4]:
        await m.ack_sync()
    await nc.close()


async def _check_reset(srv) -> None:
    nc = await connect(srv.url)
    js = nc.jetstream()
    ci = await js.consumer_info("S", "D")
    assert ci.config.ack_policy == AckPolicy.EXPLICIT
    assert (ci.delivered.stream_seq, ci.ack_floor.stream_seq, ci.num_pending, ci.num_ack_pending) == (0, 0, 10, 0)
    sub = await js.pull_subscribe("s", "D", stream="S")
    m = (await sub.fetch(1, timeout=5))[0]
    assert (m.data, m.metadata.sequence.stream) == (b"m00", 1)
    await nc.close()


async def test_lost_consumer_state_resets_delivery_only(server):
    """The consumer's state file is gone: it is still there, with its config,
    and starts over (delivered 0, everything pending again)."""
    await _consumer_with_progress(server)
    server.stop()
    d = consumer_dir(server, "S", "D")
    (d / ("state.json" if server.kind == "natslab" else "o.dat")).unlink()
    server.start()
    await _check_reset(server)


async def test_damaged_consumer_state_resets_delivery_only(tmp_path):
    """The state file is garbage: natslab keeps the consumer and starts its
    delivery over, keeping the damaged file aside. natslab only (README,
    documented differences): nats-server 2.15.1 drops the consumer
    ('corrupt state file')."""
    srv = ServerProcess("natslab", tmp_path / "store")
    srv.start()
    try:
        await _consumer_with_progress(srv)
        srv.stop()
        d = consumer_dir(srv, "S", "D")
        (d / "state.json").write_bytes(b"\x07garbage" * 5)
        srv.start()
        await _check_reset(srv)
        assert [p for p in d.iterdir() if p.name.startswith("state.json.corrupt-")]
        srv.restart()  # and the new state is kept from then on
        nc = await connect(srv.url)
        js = nc.jetstream()
        assert (await js.consumer_info("S", "D")).delivered.stream_seq == 1
        await nc.close()
    finally:
        srv.stop()
