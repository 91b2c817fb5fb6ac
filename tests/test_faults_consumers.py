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
    for name in ("state.0", "state.1") if server.kind == "natslab" else ("o.dat",):
        (d / name).unlink()
    server.start()
    await _check_reset(server)


async def test_damaged_consumer_state_resets_delivery_only(tmp_path):
    """The state file is garbage: natslab keeps the consumer and starts its
    delivery over, keeping the damaged file aside. natslab only
    (docs/compatibility.md): nats-server 2.15.1 drops the consumer
    ('corrupt state file')."""
    srv = ServerProcess("natslab", tmp_path / "store")
    srv.start()
    try:
        await _consumer_with_progress(srv)
        srv.stop()
        d = consumer_dir(srv, "S", "D")
        for name in ("state.0", "state.1"):
            (d / name).write_bytes(b"\x07garbage" * 5)
        srv.start()
        await _check_reset(srv)
        assert len([p for p in d.iterdir() if p.name.startswith("state.") and ".corrupt-" in p.name]) == 2
        srv.restart()  # and the new state is kept from then on
        nc = await connect(srv.url)
        js = nc.jetstream()
        assert (await js.consumer_info("S", "D")).delivered.stream_seq == 1
        await nc.close()
    finally:
        srv.stop()


async def ack_sync_round(srv, rnd: int, n: int) -> tuple[int, int]:
    """Fetch n, confirm every ack (half one by one, half all at once), SIGKILL
    at once, restart: (acks confirmed, confirmed acks lost)."""
    nc = await connect(srv.url)
    js = nc.jetstream()
    stream = f"A{rnd}"
    await js.add_stream(name=stream, subjects=[f"a{rnd}"])
    for i in range(n):
        await js.publish(f"a{rnd}", b"%d" % i)
    sub = await js.pull_subscribe(f"a{rnd}", "D", stream=stream)
    msgs = await sub.fetch(n, timeout=5)
    assert len(msgs) == n
    half = n // 2
    for m in msgs[:half]:
        await m.ack_sync()
    await asyncio.gather(*(m.ack_sync() for m in msgs[half:]))
    if srv.kind == "natslab":  # most were kept by the ack log alone (see jetstream/consumer/state.py)
        assert (consumer_dir(srv, stream, "D") / "acks.log").stat().st_size > 0
    srv.kill()
    await nc.close()
    srv.start()
    nc = await connect(srv.url)
    js = nc.jetstream()
    ci = await js.consumer_info(stream, "D")
    await nc.close()
    return n, n - ci.ack_floor.stream_seq


async def test_confirmed_acks_survive_sigkill(tmp_path):
    """An ack_sync that was answered survives SIGKILL straight after. natslab
    only (docs/compatibility.md): nats-server 2.15.1 confirms first
    and loses every such ack if killed within ~100 ms. With
    NATSLAB_FAULTS=long both are run and the figures printed."""
    from faultkit import LONG

    kinds = ["natslab", "nats-server"] if LONG else ["natslab"]
    for kind in kinds:
        srv = ServerProcess(kind, tmp_path / f"store-{kind}")
        srv.start()
        confirmed = lost = 0
        try:
            for rnd in range(scale(3, 20)):
                c, l = await ack_sync_round(srv, rnd, scale(40, 200))
                confirmed += c
                lost += l
        finally:
            srv.stop()
        print(f"\n[{kind}] acks confirmed by ack_sync then SIGKILL: {confirmed} confirmed, {lost} lost")
        if kind == "natslab":
            assert lost == 0, f"{lost} of {confirmed} confirmed acks lost"


async def test_consumer_state_of_earlier_builds_is_read(tmp_path):
    """natslab's own layout change: config and state in one state.json (as
    earlier builds wrote it) is read, and moved to meta.json + state.0/1."""
    from natslab.server.jetstream.consumer.state import StateSlots
    from natslab.server.jetstream.persist import read_json_checked, write_json_atomic

    srv = ServerProcess("natslab", tmp_path / "store")
    srv.start()
    try:
        await _consumer_with_progress(srv)
        srv.stop()
        d = consumer_dir(srv, "S", "D")
        state = StateSlots(d).read()
        state.pop("acks")
        legacy = dict(read_json_checked(d / "meta.json"), **state)
        legacy["pending"] = [[s, p[0], p[1]] for s, p in state["pending"].items()]
        legacy["redelivered"] = [[s, n] for s, n in state["redelivered"].items()]
        for p in list(d.iterdir()):
            p.unlink()
        write_json_atomic(d / "state.json", legacy)
        srv.start()
        nc = await connect(srv.url)
        js = nc.jetstream()
        ci = await js.consumer_info("S", "D")
        assert (ci.delivered.stream_seq, ci.ack_floor.stream_seq, ci.num_ack_pending) == (6, 4, 2)
        await nc.close()
        assert sorted(p.name for p in d.iterdir()) == ["acks.log", "meta.json", "state.0", "state.1"]
    finally:
        srv.stop()


async def test_unreadable_consumer_config_is_kept(tmp_path):
    """natslab: a consumer whose meta.json is garbled is not restored (and
    said so); its files are left alone, and creating it again keeps them
    aside instead of overwriting them or taking their state."""
    srv = ServerProcess("natslab", tmp_path / "store")
    srv.start()
    try:
        await _consumer_with_progress(srv)
        srv.stop()
        d = consumer_dir(srv, "S", "D")
        (d / "meta.json").write_bytes(b"garbage")
        srv.start()
        nc = await connect(srv.url)
        js = nc.jetstream()
        assert "D" not in {c.name for c in await js.consumers_info("S")}
        assert (d / "meta.json").read_bytes() == b"garbage"
        await js.add_consumer("S", ConsumerConfig(durable_name="D", ack_policy=AckPolicy.EXPLICIT))
        await nc.close()
        kept = sorted(p.name.split(".corrupt-")[0] for p in d.iterdir() if ".corrupt-" in p.name)
        assert kept == ["acks.log", "meta.json", "state.0", "state.1"]
        srv.restart()
        await _check_reset(srv)  # the new consumer, from the start
    finally:
        srv.stop()
    assert "could not restore consumer S > D" in srv.log()
