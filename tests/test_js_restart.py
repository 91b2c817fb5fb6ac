"""JetStream state across restarts, differential: a clean stop/start and a
SIGKILL with the same store dir. Streams, messages, dedupe window and durable
consumers come back exactly; memory streams and ephemerals do not."""

from __future__ import annotations

import asyncio
import json

import pytest
from nats.js import api
from nats.js.errors import NotFoundError

from conftest import connect, eventually, settled
from faultkit import ack_floor_written
from test_js_consumers import counters, info, orders
from test_js_streams import req


async def snapshot(nc, stream: str) -> dict:
    r = await req(nc, f"$JS.API.STREAM.INFO.{stream}", {"deleted_details": True})
    r.pop("ts")
    r.pop("cluster")  # the server id changes on restart
    return r


async def test_clean_restart_keeps_everything(server):
    nc = await connect(server.url)
    js = nc.jetstream()
    await orders(js)
    await js.publish("orders.new", b"with id", headers={"Nats-Msg-Id": "x1"})
    await js.delete_msg("ORDERS", 2)
    await js.add_stream(name="MEM", subjects=["mem"], storage="memory")
    await js.add_stream(name="EMPTY", subjects=["empty"])
    await js.publish("empty", b"x")
    await js.purge_stream("EMPTY")
    await js.add_stream(name="JOBS", subjects=["jobs.>"], retention="workqueue")
    for i in range(3):
        await js.publish(f"jobs.{i}", b"j")
    await js.add_consumer("ORDERS", api.ConsumerConfig(durable_name="RDL", ack_policy="explicit", ack_wait=30))
    await js.add_consumer("JOBS", api.ConsumerConfig(durable_name="WQ", ack_policy="explicit"))
    sub = await js.pull_subscribe_bind("RDL", "ORDERS")
    msgs = await sub.fetch(3, timeout=2)
    await msgs[0].ack_sync()
    await msgs[2].ack_sync()
    wq = await js.pull_subscribe_bind("WQ", "JOBS")
    (j,) = await wq.fetch(1, timeout=2)
    await j.ack_sync()
    eph = await js.subscribe("orders.>")
    eph_name = (await eph.consumer_info()).name
    before = {s: await snapshot(nc, s) for s in ("ORDERS", "EMPTY", "JOBS")}
    rdl = await info(nc, "ORDERS", "RDL")
    await nc.close()

    server.restart()
    nc = await connect(server.url)
    js = nc.jetstream()
    for s, snap in before.items():
        after = await snapshot(nc, s)
        after["state"]["consumer_count"] = snap["state"]["consumer_count"] = 0
        assert after == snap, s
    assert before["ORDERS"]["state"]["num_deleted"] == 1
    assert (before["EMPTY"]["state"]["first_seq"], before["EMPTY"]["state"]["last_seq"]) == (2, 1)
    with pytest.raises(NotFoundError):
        await js.stream_info("MEM")
    # an ephemeral on a file stream (not mem_storage) comes back too, until its
    # inactive threshold runs out without interest
    assert (await js.consumer_info("ORDERS", eph_name)).name == eph_name
    ci = await info(nc, "ORDERS", "RDL")
    assert counters(ci) == counters(rdl) == ((3, 4), (1, 2), 1, 0, 1)
    assert ci["created"] == rdl["created"] and ci["config"] == rdl["config"]
    # the dedupe window survived: the same id is still a duplicate
    ack = await js.publish("orders.new", b"with id", headers={"Nats-Msg-Id": "x1"})
    assert (ack.seq, ack.duplicate) == (5, True)
    # and delivery continues where it was
    (m,) = await sub_fetch(js, "RDL", "ORDERS")
    assert (m.metadata.sequence.stream, m.metadata.sequence.consumer) == (5, 4)
    (j,) = await sub_fetch(js, "WQ", "JOBS")
    assert j.subject == "jobs.1"
    await nc.close()


async def sub_fetch(js, durable, stream):
    sub = await js.pull_subscribe_bind(durable, stream)
    return await sub.fetch(1, timeout=2)


async def test_sigkill_keeps_acknowledged(server):
    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="K", subjects=["k.>"])
    acks = [await js.publish(f"k.{i % 4}", f"m{i}".encode()) for i in range(199)]
    acks.append(await js.publish("k.0", b"m199", headers={"Nats-Msg-Id": "last"}))
    assert acks[-1].seq == 200
    await js.add_consumer("K", api.ConsumerConfig(durable_name="D", ack_policy="explicit"))
    sub = await js.pull_subscribe_bind("D", "K")
    for m in await sub.fetch(10, timeout=2):
        await m.ack_sync()
    await ack_floor_written(server, "K", "D", 10)  # (nats-server writes it from a goroutine of its own)
    await nc.close()
    server.kill()
    server.start()
    nc = await connect(server.url)
    js = nc.jetstream()
    st = (await js.stream_info("K")).state
    assert (st.messages, st.first_seq, st.last_seq) == (200, 1, 200)
    m = await js.get_msg("K", seq=137)
    assert (m.subject, m.data) == ("k.0", b"m136")
    ci = await info(nc, "K", "D")
    assert ci["delivered"]["stream_seq"] == 10 and ci["ack_floor"]["stream_seq"] == 10
    (m,) = await sub_fetch(js, "D", "K")
    assert m.metadata.sequence.stream == 11
    ack = await js.publish("k.0", b"again", headers={"Nats-Msg-Id": "last"})  # rebuilt from the messages
    assert (ack.seq, ack.duplicate) == (200, True)
    await nc.close()


async def test_sigkill_forgets_msg_ids_past_the_dedupe_window(server):
    """After a SIGKILL the dedupe window is rebuilt from the messages: an id
    stored more than the window ago is no duplicate any more (one within it
    still is: test_sigkill_keeps_acknowledged)."""
    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="DW", subjects=["dw.>"], duplicate_window=1.0)
    old = await js.publish("dw.a", b"old", headers={"Nats-Msg-Id": "old"})
    for i in range(20):
        await js.publish("dw.b", b"%d" % i)
    # a time to pass, not a state: past the 1 s window (a busy machine only makes it longer)
    await asyncio.sleep(1.5)
    await js.stream_info("DW")
    await nc.close()
    server.kill()
    server.start()
    nc = await connect(server.url)
    js = nc.jetstream()
    again = await js.publish("dw.a", b"old again", headers={"Nats-Msg-Id": "old"})
    assert (old.seq, again.seq, bool(again.duplicate)) == (1, 22, False)
    await nc.close()


async def stream_counts(js) -> tuple[int, int, int]:
    st = (await js.stream_info("T")).state
    return st.messages, st.first_seq, st.last_seq


async def test_message_ttl_survives_restart(server):
    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="T", subjects=["t.>"], allow_msg_ttl=True)
    await js.publish("t.keep", b"k")
    # (a TTL well past what a restart takes on a busy machine)
    await js.publish("t.go", b"g", headers={"Nats-TTL": "6s"})
    await nc.close()
    server.restart()
    nc = await connect(server.url)
    js = nc.jetstream()
    assert (await js.stream_info("T")).state.messages == 2
    # the restarted server still expires it (waited for, not slept for)
    assert await settled(lambda: stream_counts(js), (1, 1, 2), timeout=20) == (1, 1, 2)
    await nc.close()


async def test_retention_and_redelivery_survive_restart(server):
    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="EV", subjects=["ev.>"], retention="interest")
    await js.add_consumer("EV", api.ConsumerConfig(durable_name="A", ack_policy="explicit", ack_wait=1))
    await js.add_consumer("EV", api.ConsumerConfig(durable_name="B", ack_policy="explicit"))
    for i in range(4):
        await js.publish("ev.x", str(i).encode())
    a = await js.pull_subscribe_bind("A", "EV")
    ma = await a.fetch(4, timeout=2)
    for m in ma[:3]:
        await m.ack_sync()  # seq 4 stays pending on A, and will need a redelivery
    b = await js.pull_subscribe_bind("B", "EV")
    (mb,) = await b.fetch(1, timeout=2)
    await mb.ack_sync()  # seq 1 is done for both consumers
    want_a, want_b = ((4, 4), (3, 3), 1, 0, 0), ((1, 1), (1, 1), 0, 0, 3)

    async def settled():  # nats-server removes acked interest messages on the stream's own goroutine
        nonlocal st, ca, cb
        st = (await js.stream_info("EV")).state
        ca, cb = await info(nc, "EV", "A"), await info(nc, "EV", "B")
        return ((st.messages, st.first_seq, st.last_seq), counters(ca), counters(cb)) == ((3, 2, 4), want_a, want_b)
    st = ca = cb = None
    await eventually(settled, 5)
    assert (st.messages, st.first_seq, st.last_seq) == (3, 2, 4)
    await nc.close()

    server.restart()
    nc = await connect(server.url)
    js = nc.jetstream()
    st = (await js.stream_info("EV")).state
    assert (st.messages, st.first_seq, st.last_seq) == (3, 2, 4)
    assert counters(await info(nc, "EV", "A")) == counters(ca) == want_a == ((4, 4), (3, 3), 1, 0, 0)
    assert counters(await info(nc, "EV", "B")) == counters(cb) == want_b == ((1, 1), (1, 1), 0, 0, 3)
    # A's ack wait runs out after the restart too: the pull waits for that redelivery
    a = await js.pull_subscribe_bind("A", "EV")
    (m,) = await a.fetch(1, timeout=10)
    assert (m.metadata.sequence.stream, m.metadata.num_delivered, m.metadata.sequence.consumer) == (4, 2, 5)
    await m.ack_sync()
    b = await js.pull_subscribe_bind("B", "EV")
    for m in await b.fetch(3, timeout=2):
        await m.ack_sync()

    async def emptied():
        nonlocal st
        st = (await js.stream_info("EV")).state
        return (st.messages, st.first_seq, st.last_seq) == (0, 5, 4)
    await eventually(emptied, 5)
    assert (st.messages, st.first_seq, st.last_seq) == (0, 5, 4)
    await nc.close()


async def test_file_store_layout(server):
    """Message blocks live in <store>/jetstream/$G/streams/<name>/msgs/, as on
    the real server (not in a nested msgs/msgs/)."""
    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="LAY", subjects=["lay"])
    await js.publish("lay", b"x")
    msgs = server.store_dir / "jetstream" / "$G" / "streams" / "LAY" / "msgs"
    assert await eventually(lambda: msgs.is_dir() and any(p.suffix == ".blk" for p in msgs.iterdir()))
    assert not (msgs / "msgs").exists()
    await nc.close()


async def test_quiet_file_store_is_flushed_by_the_timer(tmp_path):
    """natslab only: a quiet file store is fsynced by the sync_interval timer
    (how soon is not asserted: a busy machine runs timers late)."""
    from natslab.server import EmbeddedServer

    async with EmbeddedServer(port=0, store_dir=tmp_path, sync_interval=0.1) as srv:
        nc = await connect(srv.client_url)
        js = nc.jetstream()
        await js.add_stream(name="Q", subjects=["q"])
        await js.publish("q", b"x")
        store = srv.server.jetstream.streams["Q"].store
        assert store._dirty
        assert await eventually(lambda: not store._dirty)  # (the 0.1 s sync timer, however late it runs)
        await nc.close()


async def test_sync_always_fsyncs_every_write(tmp_path):
    from natslab.server import EmbeddedServer

    async with EmbeddedServer(port=0, store_dir=tmp_path, sync_always=True) as srv:
        nc = await connect(srv.client_url)
        js = nc.jetstream()
        await js.add_stream(name="Q", subjects=["q"])
        await js.publish("q", b"x")
        store = srv.server.jetstream.streams["Q"].store
        assert store.sync_always and not store._dirty
        await nc.close()


def test_nested_msgs_layout_is_migrated(tmp_path):
    from natslab.server.jetstream.jetstream import _migrate_nested_msgs
    from natslab.server.jetstream.store.file.store import FileStore

    d = tmp_path / "S"
    old = FileStore(d / "msgs")  # the old, nested layout
    old.store_msg("a", None, b"1", 1)
    old.close()
    assert (d / "msgs" / "msgs").is_dir()
    _migrate_nested_msgs(d)
    fs = FileStore(d)
    assert fs.state().messages == 1 and fs.load(1).data == b"1"
    fs.close()


async def test_failed_write_is_answered_and_loses_nothing_acknowledged(tmp_path):
    """natslab only (docs/compatibility.md): nats-server stops
    answering publishes to a stream after a write error, so this cannot be
    compared. The broker may write at most 64 KiB per file (RLIMIT_FSIZE), so
    block writes fail partway; publishes go 32 at a time, so replies wait for
    writes of several messages at once. Every publish gets an answer, every
    acknowledged message is there (before and after a restart), and nothing
    that was refused is."""
    from conftest import ServerProcess

    srv = ServerProcess("natslab", tmp_path / "store")
    srv.file_size_limit = 64 * 1024
    srv.start()
    try:
        nc = await connect(srv.url)
        js = nc.jetstream()
        await js.add_stream(name="W", subjects=["w"])
        acked: dict[int, int] = {}
        refused = []
        for start in range(0, 192, 32):
            answers = await asyncio.gather(*(nc.request("w", b"%06d" % i + b"x" * 994, timeout=5)
                                             for i in range(start, start + 32)))
            for i, a in zip(range(start, start + 32), answers):
                body = json.loads(a.data)
                if "error" in body:
                    refused.append(body["error"])
                else:
                    acked[body["seq"]] = i
        assert acked and refused
        assert {(e["code"], e["err_code"]) for e in refused} == {(503, 10077)}
        assert "File too large" in refused[0]["description"]
        assert "failed" in srv.log()

        async def check() -> None:
            assert (await js.stream_info("W")).state.messages == len(acked)
            for seq, i in acked.items():
                assert (await js.get_msg("W", seq)).data[:6] == b"%06d" % i
            # the broker goes on serving: core messaging and the API
            sub = await nc.subscribe("core")
            await nc.flush()
            await nc.flush()
            await nc.publish("core", b"hi")
            assert (await sub.next_msg(timeout=2)).data == b"hi"

        await check()
        # the refused messages' sequences were used: they stay used after a restart
        last = (await js.stream_info("W")).state.last_seq
        assert last > max(acked)
        await nc.close()
        srv.stop()
        srv.file_size_limit = None
        srv.start()
        nc = await connect(srv.url)
        js = nc.jetstream()
        await check()
        assert (await js.stream_info("W")).state.last_seq == last
        assert (await js.publish("w", b"next")).seq == last + 1
        await nc.close()
    finally:
        srv.stop()


def store_modes(root) -> dict:
    """Every directory and file under ``root``: its permission bits."""
    import os

    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, root)] = os.stat(p).st_mode & 0o777
    return out


@pytest.mark.parametrize("umask", [0o022, 0o000])
async def test_store_is_private_to_its_owner(server_kind, tmp_path, umask):
    """nats-server makes its store's directories 0700 and files 0600,
    whatever the umask: a stream's blocks, indexes and meta, a consumer's
    state, a KV bucket, also after a restart and a compaction."""
    import os

    from conftest import ServerProcess

    srv = ServerProcess(server_kind, tmp_path / "store")
    old = os.umask(umask)  # (the broker inherits it when it starts)
    try:
        srv.start()
    finally:
        os.umask(old)
    try:
        nc = await connect(srv.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        for i in range(5):
            await js.publish(f"s.{i % 2}", b"x" * 100)
        await js.delete_msg("S", 2)
        await js.add_consumer("S", api.ConsumerConfig(durable_name="C", ack_policy="explicit"))
        sub = await js.pull_subscribe("s.>", "C", stream="S")
        for m in await sub.fetch(2, timeout=2):
            await m.ack_sync()
        kv = await js.create_key_value(bucket="b")
        await kv.put("k", b"v")
        await nc.close()
        srv.restart()
        nc = await connect(srv.url)
        js = nc.jetstream()
        await js.purge_stream("S", subject="s.0")
        await js.publish("s.9", b"after")
        await nc.close()
        srv.stop()
        modes = store_modes(srv.store_dir / "jetstream")
        root = srv.store_dir / "jetstream"
        assert any(p.endswith(".blk") for p in modes) and any(os.sep + "obs" + os.sep in p for p in modes)
        wrong = {p: oct(m) for p, m in modes.items() if m != (0o700 if (root / p).is_dir() else 0o600)}
        assert wrong == {}
    finally:
        srv.stop()
