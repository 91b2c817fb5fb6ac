"""Power cuts, simulated (``powercut.py``): natslab's broker runs in this
process while pipelined publishes, awaited publishes, consumer creation and
a worker that fetches and confirms each ack with ack_sync go on; at seeded
moments the store is rebuilt as only the fsynced bytes would survive a power
cut (and, for the defaults, also with unsynced writes torn and reordered), a
broker is started on that copy, and every message whose PubAck had arrived,
every consumer whose CREATE had been answered and the worker's confirmed
ack floor must be there. With the defaults (a PubAck leaves after the fsync
that covers its message) nothing is lost; with a lazy ``sync_interval``
(nats-server's way) the same check loses acknowledged messages, which shows
the simulator can tell.

natslab only: nats-server cannot run in this process, and with its default
(fsync every two minutes) it loses acknowledged messages on a power cut
(Jepsen, NATS 2.12.1); docs/compatibility.md."""

from __future__ import annotations

import asyncio
import json
import random

from conftest import connect
from faultkit import scale
from powercut import PowerCut


async def _run_with_cuts(tmp_path, monkeypatch, seed: int, cuts: int, torn: bool = False, **options) -> list[tuple]:
    """Publish, create consumers and ack; take ``cuts`` images at seeded
    moments (``torn``: each also with unsynced writes torn, and torn and
    reordered). Returns (image dir, acked {seq: payload}, consumers made,
    the worker's confirmed ack floor) per image."""
    from nats.js.api import ConsumerConfig
    from natslab.server import EmbeddedServer

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    rng = random.Random(seed)
    images = []
    async with EmbeddedServer(port=0, store_dir=store, **options) as srv:
        nc = await connect(srv.client_url)
        js = nc.jetstream()
        await js.add_stream(name="P", subjects=["p.>"])
        acked: dict[int, bytes] = {}
        consumers: list[str] = ["W"]
        floor = [0]  # every message up to it acked, each ack confirmed
        stop = asyncio.Event()
        sub = await js.pull_subscribe("p.>", durable="W", stream="P", config=ConsumerConfig(ack_wait=60))

        async def worker() -> None:
            while not stop.is_set():
                try:
                    msgs = await sub.fetch(20, timeout=1)
                except asyncio.TimeoutError:
                    continue
                for m in msgs:
                    await m.ack_sync()
                    floor[0] = m.metadata.sequence.stream

        async def publisher(k: int) -> None:
            i = 0
            while not stop.is_set():
                payload = b"%d-%06d-" % (k, i) + b"z" * rng.randrange(1, 600)
                i += 1
                try:
                    a = await nc.request(f"p.{k}", payload, timeout=5)
                except asyncio.TimeoutError:
                    continue
                body = json.loads(a.data)
                assert "error" not in body, body
                acked[body["seq"]] = payload

        tasks = [asyncio.create_task(publisher(k)) for k in range(8)] + [asyncio.create_task(worker())]
        try:
            for n in range(cuts):
                await asyncio.sleep(rng.uniform(0.02, 0.15))
                if rng.random() < 0.5:
                    name = f"C{n}"
                    await js.add_consumer("P", durable_name=name, ack_policy="explicit")
                    consumers.append(name)
                # the cut: what arrived so far was acknowledged before it
                now = (dict(acked), list(consumers), floor[0])
                images.append((cut.image(tmp_path / f"cut{n}"), *now))
                if torn:
                    images.append((cut.image(tmp_path / f"cut{n}-torn", rng=rng, torn=True), *now))
                    images.append((cut.image(tmp_path / f"cut{n}-reordered", rng=rng, torn=True, reorder=True), *now))
        finally:
            stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            await nc.close()
    monkeypatch.undo()
    return images


async def _check_image(image, acked: dict, consumers: list, floor: int = 0) -> tuple[int, int]:
    """(acked messages lost, consumers lost) after starting on the image; the
    worker's ack floor is at least what its ack_syncs confirmed."""
    from natslab.server import EmbeddedServer

    async with EmbeddedServer(port=0, store_dir=image) as srv:
        nc = await connect(srv.client_url)
        js = nc.jetstream()
        lost = 0
        try:
            names = {c.name for c in await js.consumers_info("P")}
            w = await js.consumer_info("P", "W") if "W" in names else None
            seqs = sorted(acked)
            for i in range(0, len(seqs), 200):
                got = await asyncio.gather(*(js.get_msg("P", s) for s in seqs[i : i + 200]), return_exceptions=True)
                for s, m in zip(seqs[i : i + 200], got):
                    if isinstance(m, BaseException) or m.data != acked[s]:
                        lost += 1
        except Exception:  # the stream itself is gone
            names, w = set(), None
            lost = len(acked)
        await nc.close()
    if w is not None:
        assert w.ack_floor.stream_seq >= floor, (image.name, w.ack_floor, floor)
    return lost, len(set(consumers) - names)


async def test_power_cut_loses_nothing_acknowledged(tmp_path, monkeypatch):
    seeds = range(scale(1, 5))
    totals = [0, 0, 0, 0, 0]  # cuts, acked checked, lost, consumers checked, consumers lost
    for seed in seeds:
        images = await _run_with_cuts(tmp_path / f"s{seed}", monkeypatch, seed, scale(4, 12), torn=True)
        for image, acked, consumers, floor in images:
            lost, clost = await _check_image(image, acked, consumers, floor)
            totals[0] += 1
            totals[1] += len(acked)
            totals[2] += lost
            totals[3] += len(consumers)
            totals[4] += clost
    print(f"\npower cuts (defaults): {totals[0]} cuts, {totals[1]} acked messages checked, {totals[2]} lost, "
          f"{totals[3]} consumers checked, {totals[4]} lost")
    assert totals[1] > 0
    assert totals[2] == 0 and totals[4] == 0


async def test_power_cut_with_lazy_sync_interval_loses_acknowledged(tmp_path, monkeypatch):
    """The same with ``sync_interval`` set (60 s, as nats-server's lazy
    default): acknowledged messages are lost, so the simulator can fail."""
    images = await _run_with_cuts(tmp_path, monkeypatch, 7, 2, sync_interval=60.0)
    lost = 0
    for image, acked, consumers, _ in images:
        lost += (await _check_image(image, acked, consumers))[0]
    print(f"\npower cuts (sync_interval 60 s): {len(images)} cuts, lost {lost} acked messages")
    assert lost > 0


async def test_power_cut_with_sync_always_loses_nothing_acknowledged(tmp_path, monkeypatch):
    """``sync_interval: always`` syncs every record as it is stored (the same
    preallocated RWF_DSYNC writes as group commit): nothing acknowledged is lost."""
    images = await _run_with_cuts(tmp_path, monkeypatch, 3, 2, sync_always=True)
    checked = lost = 0
    for image, acked, consumers, floor in images:
        checked += len(acked)
        lost += (await _check_image(image, acked, consumers, floor))[0]
    print(f"\npower cuts (sync always): {len(images)} cuts, {checked} acked messages checked, {lost} lost")
    assert checked > 0 and lost == 0


async def test_kv_put_awaited_one_at_a_time_is_one_sync(tmp_path, monkeypatch):
    """Group commit at its smallest: a KV put (each replacing its key's last
    revision, so a delete as well) awaited one at a time costs one sync, a
    RWF_DSYNC write into the block's preallocated space, nothing else synced
    in between but the 1 s sync timer; and every put survives a power cut
    right after its PubAck, without the old revisions it replaced."""
    import time

    from natslab.server import EmbeddedServer

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    n, keys = 200, 20
    async with EmbeddedServer(port=0, store_dir=store) as srv:
        nc = await connect(srv.client_url)
        kv = await nc.jetstream().create_key_value(bucket="B", history=1)
        for k in range(keys):
            await kv.put(f"k{k}", b"first")
        before = cut.calls.copy()
        t0 = time.monotonic()
        for i in range(n):
            await kv.put(f"k{i % keys}", b"v%d" % i)
        elapsed = time.monotonic() - t0
        calls = cut.calls - before
        image = cut.image(tmp_path / "cut")
        await nc.close()
    monkeypatch.undo()
    timer = 4 * (int(elapsed) + 2)  # the sync timer's flush: block, delete log, last.seq, stream state
    print(f"\n{n} KV puts one at a time: {dict(calls)} in {elapsed:.2f} s")
    assert calls["rwf_dsync"] >= n - 2  # (the first write after a block starts or grows uses fdatasync)
    assert calls["fsync"] + calls["fdatasync"] + calls["rwf_dsync"] <= n + timer
    async with EmbeddedServer(port=0, store_dir=image) as srv:
        nc = await connect(srv.client_url)
        js = nc.jetstream()
        kv = await js.key_value("B")
        for k in range(keys):
            last = max(i for i in range(n) if i % keys == k)
            assert (await kv.get(f"k{k}")).value == b"v%d" % last
            # the old revisions' deletes were not synced; the history limit
            # removes them again when the stream is recovered
            assert [e.value for e in await kv.history(f"k{k}")] == [b"v%d" % last]
        assert (await js.stream_info("KV_B")).state.messages == keys
        await nc.close()


import pytest  # noqa: E402


@pytest.mark.parametrize("setting, group_commit, always, interval",
                         [(None, True, False, 1.0), ('"2m"', False, False, 120.0), ("always", False, True, 120.0)])
async def test_sync_interval_from_the_config_file(tmp_path, setting, group_commit, always, interval):
    """nats-server's `jetstream { sync_interval }` decides: unset, a PubAck
    waits for its fsync; a duration, fsync every interval; always, every write
    (and, as nats-server, the timer keeps its default interval, 2 m)."""
    from natslab.server.cli import build_options
    from natslab.server.server import Server

    conf = tmp_path / "srv.conf"
    line = f"sync_interval: {setting}" if setting else ""
    conf.write_text(f'port: -1\njetstream {{ store_dir: "{tmp_path / "store"}"\n{line} }}\n')
    o = build_options({"config": str(conf)})
    o.port = 0
    srv = Server(o)
    await srv.start()
    try:
        nc = await connect(f"nats://127.0.0.1:{srv.port}")
        js = nc.jetstream()
        await js.add_stream(name="Q", subjects=["q"])
        await js.publish("q", b"x")
        store = srv.jetstream.streams["Q"].store
        assert (store.group_commit, store.sync_always, srv.jetstream.sync_interval) == (group_commit, always, interval)
        await nc.close()
    finally:
        await srv.stop()
