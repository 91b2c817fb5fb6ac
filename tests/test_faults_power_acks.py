"""A consumer's progress and power cuts (issue #27): the answer to an
``ack_sync`` (an ack sent with a reply subject) leaves only once the ack
state, and the removals it made on a workqueue or interest stream, are
durable; plain acks, deliveries and redelivery counts are durable within the
sync interval. natslab's broker runs in this process under the power-cut
simulator (``powercut.py``); a broker started on each image must show the
ack floor, the pending and redelivered counts the consumer had.

Before the fix a consumer's state was never fsynced while the server ran
(an ack_sync was answered once its state reached the OS): after a power cut
the ack floor went back to where the consumer was created, and everything
was redelivered; the workqueue removals an ack_sync made came back.

natslab only: nats-server cannot run in this process (nats-server with
``sync_interval: always`` keeps those acks; with its default it loses them)."""

from __future__ import annotations

import random

import pytest
from nats.js.api import ConsumerConfig

from conftest import connect, eventually
from powercut import PowerCut

N = 300


async def _fill(js, stream: str = "P", n: int = N, **cfg) -> None:
    await js.add_stream(name=stream, subjects=[f"{stream.lower()}.>"], **cfg)
    for i in range(n):
        await js.publish(f"{stream.lower()}.{i % 3}", b"m%d" % i)


async def _info(image, stream: str = "P", consumer: str = "C"):
    from natslab.server import EmbeddedServer

    async with EmbeddedServer(port=0, store_dir=image) as srv:
        nc = await connect(srv.client_url)
        js = nc.jetstream()
        ci = await js.consumer_info(stream, consumer)
        si = await js.stream_info(stream)
        await nc.close()
    return ci, si


def _images(cut, tmp_path, tag: str, seed: int) -> list:
    return [cut.image(tmp_path / f"{tag}-synced"),
            cut.image(tmp_path / f"{tag}-torn", rng=random.Random(seed), torn=True),
            cut.image(tmp_path / f"{tag}-reordered", rng=random.Random(seed + 1), torn=True, reorder=True)]


async def test_ack_sync_is_durable_when_answered(tmp_path, monkeypatch):
    """150 acks, each confirmed with ack_sync; cut after 50, 100 and 150:
    the ack floor, pending and ack pending are where the confirmed acks put them."""
    from natslab.server import EmbeddedServer

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    taken = []
    try:
        async with EmbeddedServer(port=0, store_dir=store) as srv:
            nc = await connect(srv.client_url)
            js = nc.jetstream()
            await _fill(js)
            sub = await js.pull_subscribe("p.>", durable="C", stream="P", config=ConsumerConfig(ack_wait=60))
            acked = 0
            while acked < 150:
                for m in await sub.fetch(10, timeout=5):
                    await m.ack_sync()
                    acked += 1
                if acked % 50 == 0:
                    taken.append((acked, _images(cut, tmp_path, f"a{acked}", acked)))
            await nc.close()
    finally:
        monkeypatch.undo()
    for acked, images in taken:
        for image in images:
            ci, si = await _info(image)
            got = (ci.ack_floor.stream_seq, ci.num_ack_pending, ci.num_pending, si.state.messages)
            assert got == (acked, 0, N - acked, N), (image.name, got)


async def test_plain_acks_are_durable_within_the_sync_interval(tmp_path, monkeypatch):
    """150 plain acks (fire and forget), then idle: within the sync interval
    (1 s) they are on disk, and a power cut keeps the ack floor at 150."""
    from natslab.server import EmbeddedServer
    from natslab.server.jetstream.consumer.state import StateSlots

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    polls = iter(range(10_000))
    try:
        async with EmbeddedServer(port=0, store_dir=store) as srv:
            nc = await connect(srv.client_url)
            js = nc.jetstream()
            await _fill(js)
            sub = await js.pull_subscribe("p.>", durable="C", stream="P", config=ConsumerConfig(ack_wait=60))
            for _ in range(15):
                for m in await sub.fetch(10, timeout=5):
                    await m.ack()
            await nc.flush()

            def durable_floor() -> bool:
                image = cut.image(tmp_path / f"poll{next(polls)}")
                state = StateSlots(image / "jetstream" / "$G" / "streams" / "P" / "obs" / "C").read()
                return state is not None and state["ack_floor"][1] == 150

            assert await eventually(durable_floor, timeout=5), "plain acks not durable within 5 s"
            image = _images(cut, tmp_path, "idle", 1)
            await nc.close()
    finally:
        monkeypatch.undo()
    for img in image:
        ci, _ = await _info(img)
        got = (ci.ack_floor.stream_seq, ci.num_ack_pending, ci.num_pending, ci.delivered.stream_seq)
        assert got == (150, 0, N - 150, 150), (img.name, got)


async def test_redeliveries_and_pending_survive_a_power_cut(tmp_path, monkeypatch):
    """Deliveries, naks, redeliveries and acks, then idle: after a cut the
    consumer reports the same delivered, ack floor, ack pending, redelivered
    and pending as before it."""
    from natslab.server import EmbeddedServer
    from natslab.server.jetstream.consumer.state import StateSlots

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    try:
        async with EmbeddedServer(port=0, store_dir=store) as srv:
            nc = await connect(srv.client_url)
            js = nc.jetstream()
            await _fill(js, n=40)
            sub = await js.pull_subscribe("p.>", durable="C", stream="P", config=ConsumerConfig(ack_wait=60))
            first = await sub.fetch(20, timeout=5)
            for m in first[:10]:
                await m.ack_sync()
            for m in first[10:15]:
                await m.nak()
            await nc.flush()
            again = []
            while len(again) < 5:
                again += await sub.fetch(5 - len(again), timeout=5)
            assert all(m.metadata.num_delivered == 2 for m in again)
            await again[0].ack_sync()
            await again[1].ack_sync()

            async def settled():
                return (await js.consumer_info("P", "C")).num_redelivered == 3

            assert await eventually(settled)
            before = await js.consumer_info("P", "C")

            polls = iter(range(10_000))

            def durable() -> bool:  # the state as a power cut now would leave it
                image = cut.image(tmp_path / f"poll{next(polls)}")
                state = StateSlots(image / "jetstream" / "$G" / "streams" / "P" / "obs" / "C").read()
                return state is not None and (len(state["pending"]), len(state["redelivered"])) == (8, 3)

            assert await eventually(durable, timeout=5), "deliveries and redeliveries not durable within 5 s"
            images = _images(cut, tmp_path, "r", 7)
            await nc.close()
    finally:
        monkeypatch.undo()

    def shape(ci):
        return (ci.delivered.stream_seq, ci.delivered.consumer_seq, ci.ack_floor.stream_seq,
                ci.ack_floor.consumer_seq, ci.num_ack_pending, ci.num_redelivered, ci.num_pending)

    assert (before.delivered.stream_seq, before.delivered.consumer_seq, before.ack_floor.stream_seq,
            before.num_ack_pending, before.num_redelivered, before.num_pending) == (20, 25, 12, 8, 3, 20)
    for image in images:
        ci, _ = await _info(image)
        assert shape(ci) == shape(before), (image.name, shape(ci))


@pytest.mark.parametrize("retention", ["workqueue", "interest"])
async def test_ack_sync_removal_is_durable_when_answered(tmp_path, monkeypatch, retention):
    """On a workqueue or interest stream an ack removes the message: the
    ack_sync's answer waits for that removal to be durable too."""
    from natslab.server import EmbeddedServer

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    try:
        async with EmbeddedServer(port=0, store_dir=store) as srv:
            nc = await connect(srv.client_url)
            js = nc.jetstream()
            await js.add_stream(name="W", subjects=["w.>"], retention=retention)
            sub = await js.pull_subscribe("w.>", durable="C", stream="W", config=ConsumerConfig(ack_wait=60))
            for i in range(20):
                await js.publish(f"w.{i}", b"x")
            for m in await sub.fetch(10, timeout=5):
                await m.ack_sync()
            images = _images(cut, tmp_path, "w", 3)
            await nc.close()
    finally:
        monkeypatch.undo()
    for image in images:
        ci, si = await _info(image, "W")
        got = (si.state.messages, si.state.first_seq, ci.ack_floor.stream_seq, ci.num_pending)
        assert got == (10, 11, 10, 10), (image.name, got)


async def test_torn_state_writes_keep_the_last_durable_state(tmp_path, monkeypatch):
    """Plain acks after an ack_sync write the state again and again without a
    sync (the sync timer is held off here): whatever of those writes reaches
    the disk, torn or out of order, the state the ack_sync confirmed is read
    back (before the fix the second unsynced write went over it)."""
    from natslab.server import EmbeddedServer
    from natslab.server.jetstream import jetstream

    monkeypatch.setattr(jetstream.JetStream, "_arm_sync_timer", lambda self: None)
    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    taken = []
    try:
        async with EmbeddedServer(port=0, store_dir=store) as srv:
            nc = await connect(srv.client_url)
            js = nc.jetstream()
            await _fill(js, n=60)
            sub = await js.pull_subscribe("p.>", durable="C", stream="P", config=ConsumerConfig(ack_wait=60))
            msgs = await sub.fetch(30, timeout=5)
            for m in msgs[:10]:
                await m.ack_sync()
            c = srv.server.jetstream.streams["P"].consumers["C"]
            for k, m in enumerate(msgs[10:16]):
                gen = c._slots.generation
                await m.ack()
                assert await eventually(lambda: c._slots.generation > gen), "the state was not written"
                for seed in range(3):
                    taken.append(cut.image(tmp_path / f"t{k}-{seed}", rng=random.Random(k * 10 + seed),
                                           torn=True, reorder=seed > 0))
            await nc.close()
    finally:
        monkeypatch.undo()
    for image in taken:
        ci, _ = await _info(image)
        assert 10 <= ci.ack_floor.stream_seq <= 16, (image.name, ci.ack_floor)


async def test_a_state_write_torn_at_any_byte_keeps_the_confirmed_acks(tmp_path, monkeypatch):
    """8 acks confirmed with ack_sync (the first writes a whole state and
    syncs it, the others go to the ack log), then the plain save the 50 ms
    timer makes writes a new generation over the older slot, not synced. A
    power cut may tear that write after any byte: every cut reads back the
    confirmed ack floor. Before the fix the checksum covered only the body: a
    cut after the new generation number (bytes 9 to 28) over the consumer's
    first state (the same length) read back as that first state under a
    newer generation, and the ack floor went back to 0 (the pipelined power
    cuts in test_faults_power.py showed it under load, now and then). The
    timers are held off and the save is the test's call, so the writes are
    the same in every run."""
    from natslab.server import EmbeddedServer
    from natslab.server.jetstream.consumer import consumer as consumer_mod
    from natslab.server.jetstream import jetstream
    from natslab.server.jetstream.consumer.state import StateSlots

    monkeypatch.setattr(jetstream.JetStream, "_arm_sync_timer", lambda self: None)
    monkeypatch.setattr(consumer_mod, "_SAVE_DELAY", 3600.0)
    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    images = []
    try:
        async with EmbeddedServer(port=0, store_dir=store) as srv:
            nc = await connect(srv.client_url)
            js = nc.jetstream()
            await _fill(js, n=20)
            sub = await js.pull_subscribe("p.>", durable="C", stream="P", config=ConsumerConfig(ack_wait=60))
            msgs = []
            while len(msgs) < 8:
                msgs += await sub.fetch(8 - len(msgs), timeout=5)
            for m in msgs:
                await m.ack_sync()
            c = srv.server.jetstream.streams["P"].consumers["C"]
            slots = c._slots
            gen = slots.generation
            assert not slots.unsynced
            c.save_state()  # what the save timer runs
            assert slots.generation == gen + 1 and slots.unsynced
            size = slots._sizes[slots._written]
            outcomes = {}
            for n in range(size):
                image = cut.image(tmp_path / f"tear{n}", tear=n)
                state = StateSlots(image / "jetstream" / "$G" / "streams" / "P" / "obs" / "C").read()
                key = (state["sseq"], tuple(state["ack_floor"]), tuple(map(tuple, state["acks"])))
                outcomes.setdefault(key, image)
            images = list(outcomes.values())
            await nc.close()
    finally:
        monkeypatch.undo()
    assert images
    for image in images:  # one broker per distinct state read back
        ci, si = await _info(image)
        got = (ci.ack_floor.stream_seq, ci.num_ack_pending, ci.num_pending, si.state.messages)
        assert got == (8, 0, 12, 20), (image.name, got)


def test_state_checksum_covers_the_header_and_reads_earlier_builds_files():
    """A state file's checksum covers its header (generation, lengths) as
    well as its body; a file of an earlier build (version 1: the body only)
    is still read."""
    import struct
    from zlib import crc32

    from natslab.server.jetstream.consumer.state import decode, encode

    state = {"sseq": 9, "dseq": 9, "ack_floor": [8, 8], "pending": {9: [9, 5]}, "redelivered": {9: 2}}
    data = encode(state, 7)
    assert decode(data) == (7, state)
    newer = data[:8] + struct.pack("<Q", 8) + data[16:]  # only the generation changed
    assert decode(newer) is None
    v1 = bytearray(data)
    v1[4] = 1
    struct.pack_into("<I", v1, 28, crc32(data[32:]))
    assert decode(bytes(v1)) == (7, state)
