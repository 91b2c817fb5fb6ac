"""The fault API of the embedded broker (server/embedded.py, server/faults.py),
through nats-py against an EmbeddedServer with JetStream on a tmp store.
natslab only: nats-server has no such API (its faults are in the other
test_faults_*.py files, on both servers)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import nats
import pytest
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig
from nats.js.errors import APIError

from conftest import eventually
from natslab.server import EmbeddedServer, ServerThread

_REAL_OS = {n: getattr(os, n) for n in ("fsync", "fdatasync", "write", "pwrite", "pwritev", "ftruncate", "unlink")}


async def _connect(srv, **kw) -> nats.NATS:
    """A client that reconnects (up to 50 times, 50 ms apart) after a fault."""
    kw.setdefault("connect_timeout", 2)
    kw.setdefault("max_reconnect_attempts", 50)
    kw.setdefault("reconnect_time_wait", 0.05)
    return await nats.connect(srv.url, **kw)


async def _fault(nc, fault) -> None:
    """Run ``fault`` (a restart, crash or power cut) and wait until ``nc``
    has reconnected."""
    n = nc.stats["reconnects"]
    await fault()
    assert await eventually(lambda: nc.stats["reconnects"] > n and nc.is_connected, timeout=10), \
        "the client did not reconnect"


async def _stream_msgs(js, stream="S") -> list[bytes]:
    st = (await js.stream_info(stream)).state
    return [(await js.get_msg(stream, s)).data for s in range(st.first_seq, st.last_seq + 1)] if st.messages else []


async def _consumer_setup(js, n: int, ack_wait: float = 1.0):
    await js.add_stream(name="S", subjects=["s.>"])
    for i in range(n):
        await js.publish(f"s.{i}", b"m%d" % i)
    await js.add_consumer("S", ConsumerConfig(durable_name="C", ack_policy=AckPolicy.EXPLICIT, ack_wait=ack_wait))
    return await js.pull_subscribe_bind("C", stream="S")


async def test_crash_keeps_acked_and_redelivers_the_rest(tmp_path):
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store") as srv:
        nc = await _connect(srv)
        js = nc.jetstream()
        sub = await _consumer_setup(js, 10)
        msgs = await sub.fetch(10, timeout=5)
        assert len(msgs) == 10
        for m in msgs[:6]:
            await m.ack_sync()
        port = srv.port
        await _fault(nc, srv.crash)
        assert srv.port == port
        assert await _stream_msgs(js) == [b"m%d" % i for i in range(10)]
        info = await js.consumer_info("S", "C")
        assert info.ack_floor.stream_seq == 6
        got = {}
        deadline = time.monotonic() + 15
        while len(got) < 4 and time.monotonic() < deadline:
            try:
                for m in await sub.fetch(4, timeout=1):
                    got[m.metadata.sequence.stream] = m.metadata.num_delivered
                    await m.ack_sync()
            except NatsTimeout:
                pass
        assert sorted(got) == [7, 8, 9, 10], "acked messages came again, or unacked ones did not"
        assert all(n >= 2 for n in got.values())
        await nc.close()


async def test_crash_loses_what_was_never_written(tmp_path):
    """What stop() would write (here: a stream's config written by the
    crashed broker's shutdown) never reaches the store: the files are taken
    as they are at the crash. Checked through a stream created and then
    deleted: after the crash it stays deleted, and a restart after a crash
    works on the same store again."""
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store") as srv:
        nc = await _connect(srv)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        await js.add_stream(name="GONE", subjects=["g"])
        await js.delete_stream("GONE")
        await js.publish("s.1", b"a")
        await _fault(nc, srv.crash)
        names = await js.streams_info()
        assert [s.config.name for s in names] == ["S"]
        await js.publish("s.2", b"b")
        await _fault(nc, srv.restart)
        assert await _stream_msgs(js) == [b"a", b"b"]
        await nc.close()
    assert not list(tmp_path.glob(".store.*")), "crash left its copies next to the store"


def _files(store) -> dict:
    return {str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()}


async def test_crash_starts_from_the_files_as_they_were(tmp_path, monkeypatch):
    """The broker after crash() starts on exactly the bytes the store had at
    the crash: nothing the dying broker would still write (its shutdown's
    index files and state) reaches them; after restart() it does."""
    from natslab.server.server import Server

    seen = []
    real_start = Server.start

    async def start(self):  # what the next broker finds, before it touches anything
        seen.append(_files(Path(self.opts.store_dir)))
        await real_start(self)

    monkeypatch.setattr(Server, "start", start)
    store = tmp_path / "store"
    async with EmbeddedServer(port=0, store_dir=store) as srv:
        nc = await _connect(srv)
        js = nc.jetstream()
        sub = await _consumer_setup(js, 30)
        for m in await sub.fetch(10, timeout=5):
            await m.ack_sync()
        before = _files(store)  # (no loop turn between this and the crash's own copy)
        await _fault(nc, srv.crash)
        assert seen[-1] == before
        for m in await sub.fetch(10, timeout=5):
            await m.ack_sync()
        before = _files(store)
        await _fault(nc, srv.restart)
        assert seen[-1] != before  # a clean stop writes
        await nc.close()


async def test_power_cut_keeps_every_puback(tmp_path):
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store", record_syncs=True) as srv:
        nc = await _connect(srv)
        js = nc.jetstream()
        sub = await _consumer_setup(js, 20)
        for m in (await sub.fetch(5, timeout=5)):
            await m.ack_sync()
        acked = await asyncio.gather(*(js.publish(f"s.x{i}", b"p%d" % i) for i in range(50)))
        assert [a.seq for a in acked] == list(range(21, 71))
        syncs = srv.disk.image.syncs
        assert syncs > 0
        await _fault(nc, srv.power_cut)
        assert await _stream_msgs(js) == [b"m%d" % i for i in range(20)] + [b"p%d" % i for i in range(50)]
        info = await js.consumer_info("S", "C")
        assert info.config.durable_name == "C"
        assert info.ack_floor.stream_seq <= 5
        await nc.close()


async def test_power_cut_drops_what_was_not_fsynced(tmp_path):
    """With lazy fsync (nats-server's sync_interval, here 1 h) PubAck'd
    messages are only in the page cache: a crash keeps them, a power cut
    loses those written since the last sync (docs/durability.md)."""
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store", record_syncs=True,
                              sync_interval=3600.0) as srv:
        nc = await _connect(srv)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        for i in range(10):
            await js.publish("s.a", b"a%d" % i)
        await _fault(nc, srv.restart)  # a clean stop syncs what it wrote
        for i in range(10):
            await js.publish("s.b", b"b%d" % i)
        await _fault(nc, srv.crash)  # the page cache survives a crash: all 20 there
        assert await _stream_msgs(js) == [b"a%d" % i for i in range(10)] + [b"b%d" % i for i in range(10)]
        await _fault(nc, srv.power_cut)  # the b's were never synced
        assert await _stream_msgs(js) == [b"a%d" % i for i in range(10)]
        await js.publish("s.c", b"after")  # and the store takes writes again
        assert (await _stream_msgs(js))[-1] == b"after"
        await nc.close()


async def test_power_cut_model_agrees_with_the_test_suites(tmp_path, monkeypatch):
    """The product's model of what a power cut leaves (server/faults.py,
    which reads only the ranges written since a file's last sync) against
    the test suite's own (tests/powercut.py, which rereads whole files),
    both recording one run: publishes awaited and pipelined, consumer acks,
    a purge, a deleted stream, the sync timer's reclaims. The images must be
    byte for byte the same, at several moments."""
    from powercut import PowerCut

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)  # first: the product's wrappers go over it
    async with EmbeddedServer(port=0, store_dir=store, record_syncs=True) as srv:
        nc = await _connect(srv)
        js = nc.jetstream()
        sub = await _consumer_setup(js, 50)
        await js.add_stream(name="T", subjects=["t"], max_msgs=40)

        async def compare(n: int) -> None:
            mine = _files(srv.disk.image.build(tmp_path / f"mine{n}"))
            theirs = _files(cut.image(tmp_path / f"theirs{n}"))
            assert mine == theirs, sorted(set(mine.items()) ^ set(theirs.items()))[:3]
            assert mine  # (not two empty images)

        for r in range(4):
            await asyncio.gather(*(js.publish("t", b"%d-%d" % (r, i) * (1 + i % 50)) for i in range(200)))
            for m in await sub.fetch(10, timeout=5):
                await m.ack_sync()
            await js.publish(f"s.{r}", b"x" * 3000)
            await compare(r)
        await js.purge_stream("S", seq=30)
        await js.delete_stream("T")
        srv.server.jetstream.flush_stores()  # what the sync timer does
        await compare(9)
        await nc.close()


async def test_power_cut_needs_recording(tmp_path):
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store") as srv:
        with pytest.raises(RuntimeError, match="record_syncs"):
            await srv.power_cut()
        srv.arm_power_cut()  # from now on: what is there counts as durable
        nc = await _connect(srv)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s"])
        await js.publish("s", b"1")
        await _fault(nc, srv.power_cut)
        assert await _stream_msgs(js) == [b"1"]
        await nc.close()


async def test_drop_client_closes_that_client_only(tmp_path):
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store") as srv:
        a = await nats.connect(srv.url, name="a", allow_reconnect=False, connect_timeout=2)
        b = await nats.connect(srv.url, name="b", allow_reconnect=False, connect_timeout=2)
        sub = await b.subscribe("x")
        await b.flush()
        await b.flush()
        cids = await srv.drop_client("a")
        assert len(cids) == 1
        assert await eventually(lambda: a.is_closed, timeout=5)
        await b.publish("x", b"still here")
        assert (await sub.next_msg(timeout=5)).data == b"still here"
        assert b.is_connected
        with pytest.raises(LookupError):
            await srv.drop_client("a")
        (cid_b,) = [c.cid for c in srv.server.clients.values() if c.name == "b"]
        assert await srv.drop_client(cid_b) == [cid_b]
        assert await eventually(lambda: b.is_closed, timeout=5)


async def test_freeze_holds_delivery_then_resumes(tmp_path):
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store") as srv:
        pub = await _connect(srv)
        nc = await _connect(srv)
        sub = await nc.subscribe("x")
        await nc.flush()
        await nc.flush()
        await srv.freeze(60)
        for i in range(5):
            await pub.publish("x", b"%d" % i)
        with pytest.raises(NatsTimeout):
            await sub.next_msg(timeout=0.3)
        assert srv.frozen  # (still within the 60 s)
        await srv.thaw()
        got = [(await sub.next_msg(timeout=5)).data for _ in range(5)]
        assert got == [b"0", b"1", b"2", b"3", b"4"]  # all of them, in order
        # a short freeze ends by itself
        await srv.freeze(0.2)
        await pub.publish("x", b"later")
        assert (await sub.next_msg(timeout=10)).data == b"later"
        assert not srv.frozen
        await pub.close()
        await nc.close()


async def test_crash_during_a_freeze_drops_what_was_held(tmp_path):
    """A frozen broker that dies never sends what it held (core NATS: gone)."""
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store") as srv:
        pub = await _connect(srv)
        nc = await _connect(srv)
        sub = await nc.subscribe("x")
        await nc.flush()
        await nc.flush()
        await srv.freeze(60)
        n = srv.server.in_msgs
        await pub.publish("x", b"held")
        assert await eventually(lambda: srv.server.in_msgs > n)  # routed, and held for the subscriber
        await _fault(nc, srv.crash)
        assert not srv.frozen
        assert await eventually(lambda: pub.is_connected and pub.stats["reconnects"] > 0, timeout=10)
        await pub.publish("x", b"after")
        assert (await sub.next_msg(timeout=5)).data == b"after"
        await pub.close()
        await nc.close()


async def test_freeze_one_consumer(tmp_path):
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store") as srv:
        nc = await _connect(srv)
        js = nc.jetstream()
        sub = await _consumer_setup(js, 3)
        await js.add_consumer("S", ConsumerConfig(durable_name="D", ack_policy=AckPolicy.EXPLICIT))
        other = await js.pull_subscribe_bind("D", stream="S")
        await srv.freeze(60, consumer="S/C")
        with pytest.raises(NatsTimeout):
            await sub.fetch(1, timeout=0.5)
        assert len(await other.fetch(3, timeout=5)) == 3  # the others deliver
        info = await js.consumer_info("S", "C")
        assert not info.paused and info.num_pending == 3  # nothing handed out
        await srv.freeze(0.05)  # a short broker freeze, its own timer: the consumer stays frozen
        assert await eventually(lambda: len(srv._frozen) == 1, timeout=10)
        with pytest.raises(NatsTimeout):
            await sub.fetch(1, timeout=0.5)
        await srv.thaw()
        assert [m.data for m in await sub.fetch(3, timeout=5)] == [b"m0", b"m1", b"m2"]
        with pytest.raises(LookupError):
            await srv.freeze(1, consumer="S/NOPE")
        await nc.close()


async def test_slow_disk_slows_pubacks(tmp_path):
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store") as srv:
        nc = await _connect(srv)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s"])
        await js.publish("s", b"warm")
        await srv.slow_disk(250)
        before = srv.disk.slowed
        t0 = time.monotonic()
        ack = await js.publish("s", b"slow", timeout=10)
        # every PubAck waits for its fsync: the added 250 ms are a floor
        # (load can only add to it)
        assert time.monotonic() - t0 >= 0.25
        assert srv.disk.slowed > before
        await srv.slow_disk(0)
        n = srv.disk.slowed
        await js.publish("s", b"fast")
        assert srv.disk.slowed == n
        assert await _stream_msgs(js) == [b"warm", b"slow", b"fast"] and ack.seq == 2
        await nc.close()
    # unarmed, the store's I/O is the os module's own again: nothing in the way
    assert {n: getattr(os, n) for n in _REAL_OS} == _REAL_OS


async def test_disk_full_refuses_then_release_restores(tmp_path):
    async with EmbeddedServer(port=0, store_dir=tmp_path / "store") as srv:
        nc = await _connect(srv)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s"])
        for i in range(5):
            await js.publish("s", b"%d" % i)
        sub = await nc.subscribe("core")
        await nc.flush()
        await nc.flush()
        await srv.disk_full()
        with pytest.raises(APIError) as e:
            await js.publish("s", b"refused")
        assert (e.value.code, e.value.err_code) == (503, 10077)
        assert "No space left on device" in e.value.description
        await nc.publish("core", b"core NATS goes on")
        assert (await sub.next_msg(timeout=5)).data == b"core NATS goes on"
        assert srv.disk.refused > 0
        await srv.release_disk()
        ack = await js.publish("s", b"after")
        assert ack.seq > 5  # (the refused write's sequence is not handed out again)
        await _fault(nc, srv.restart)
        assert (await js.stream_info("S")).state.messages == 6
        assert [(await js.get_msg("S", q)).data for q in (1, 2, 3, 4, 5, ack.seq)] == \
            [b"0", b"1", b"2", b"3", b"4", b"after"]
        await nc.close()


def test_server_thread_faults_are_plain_calls(tmp_path):
    """The same API on ServerThread, from sync code; the client runs on a
    loop of its own in this thread."""
    srv = ServerThread(port=0, store_dir=tmp_path / "store", record_syncs=True).start()
    try:
        async def setup():
            nc = await _connect(srv, name="w")
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s"])
            await js.publish("s", b"1")
            return nc

        loop = asyncio.new_event_loop()
        nc = loop.run_until_complete(setup())
        srv.crash()
        srv.power_cut()
        srv.restart()

        async def check():
            # (this loop stood still meanwhile: the client notices only now)
            assert await eventually(lambda: nc.stats["reconnects"] >= 1 and nc.is_connected, timeout=10)
            js = nc.jetstream()
            assert await _stream_msgs(js) == [b"1"]
            n = nc.stats["reconnects"]
            assert srv.drop_client("w")
            assert await eventually(lambda: nc.stats["reconnects"] > n and nc.is_connected, timeout=10)
            srv.freeze(0.01)
            srv.disk_full()
            with pytest.raises(APIError):
                await js.publish("s", b"2")
            srv.release_disk()
            await js.publish("s", b"2")
            await nc.close()

        loop.run_until_complete(check())
        loop.close()
    finally:
        srv.stop()


def test_server_thread_arms_a_power_cut_while_running(tmp_path):
    """``ServerThread.arm_power_cut()`` on a running broker (the workbench's
    Faults menu arms it so): what is in the store then counts as durable,
    what is written after it only once synced (lazy sync here: it is not)."""
    srv = ServerThread(port=0, store_dir=tmp_path / "store", sync_interval=3600.0).start()
    try:
        loop = asyncio.new_event_loop()

        async def before_arming():
            nc = await _connect(srv)
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s"])
            await js.publish("s", b"before")
            return nc

        nc = loop.run_until_complete(before_arming())
        with pytest.raises(RuntimeError, match="record_syncs"):
            srv.power_cut()
        srv.arm_power_cut()

        async def after_arming():
            js = nc.jetstream()
            await js.publish("s", b"after")  # never synced (1 h sync interval)
            n = nc.stats["reconnects"]
            await asyncio.to_thread(srv.power_cut)
            assert await eventually(lambda: nc.stats["reconnects"] > n and nc.is_connected, timeout=10)
            assert await _stream_msgs(js) == [b"before"]
            await nc.close()

        loop.run_until_complete(after_arming())
        loop.close()
    finally:
        srv.stop()


def test_disk_wrappers_under_someone_elses(tmp_path, monkeypatch):
    """Someone (a test's monkeypatch) wraps os.fsync over the armed
    wrapper: disarming leaves theirs in place, and arming again does not
    slow a sync twice (the old wrapper in their chain passes through)."""
    from natslab.server.diskfaults import DiskFaults

    f = DiskFaults(tmp_path)
    f.slow_ms = 1
    f.update()
    ours = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd, _ours=ours: _ours(fd))
    theirs = os.fsync
    f.slow_ms = 0
    f.update()
    assert os.fsync is theirs
    f.slow_ms = 1
    f.update()
    fd = os.open(tmp_path / "x", os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    assert f.slowed == 1
    f.slow_ms = 0
    f.update()
    assert os.fsync is theirs
