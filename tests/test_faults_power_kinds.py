"""Acknowledged means durable, for every kind of publish and every API call
that changes stored data (issue #27): natslab's broker runs in this process
under the power-cut simulator (``powercut.py``); right after a reply arrives
the store is imaged three ways (only what was synced; that plus every
unsynced write with the last one of each file torn; a random subset of the
unsynced writes, the last kept one torn) and a broker started on each image
must show what the reply confirmed.

Before the fix the reply to a rollup, a schedule, a KV purge, a subject
purge, a message delete and a consumer delete left before its change was
synced (the group commit held a reply only while records were buffered;
what a read had written out early, deletes and floors were not waited for),
and a deleted consumer or stream came back (its directory's removal was not
synced).

natslab only: nats-server cannot run in this process."""

from __future__ import annotations

import asyncio
import json
import random
from datetime import datetime, timedelta, timezone

import pytest

from conftest import connect
from powercut import PowerCut

IMAGES = [("synced", {}), ("torn", {"torn": True}), ("reordered", {"torn": True, "reorder": True})]


async def _cut_after(tmp_path, monkeypatch, setup, action, seed: int = 0) -> list:
    """Run ``setup(nc, js)``, then ``action(nc, js)`` (it returns when its
    reply arrived); image the store at once, each way of IMAGES."""
    from natslab.server import EmbeddedServer

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    images = []
    try:
        async with EmbeddedServer(port=0, store_dir=store) as srv:
            nc = await connect(srv.client_url)
            js = nc.jetstream()
            await setup(nc, js)
            await action(nc, js)
            for i, (name, kw) in enumerate(IMAGES):
                images.append((name, cut.image(tmp_path / name, rng=random.Random(seed * 10 + i), **kw)))
            await nc.close()
    finally:
        monkeypatch.undo()
    return images


async def _check(images, check) -> None:
    from natslab.server import EmbeddedServer

    for name, image in images:
        async with EmbeddedServer(port=0, store_dir=image) as srv:
            nc = await connect(srv.client_url)
            try:
                await check(nc, nc.jetstream(), name)
            finally:
                await nc.close()


async def _pub(nc, subject: str, payload: bytes = b"x", headers: dict | None = None) -> dict:
    """A publish awaited for its PubAck, which must not be an error."""
    msg = await nc.request(subject, payload, timeout=5, headers=headers)
    ack = json.loads(msg.data)
    assert "error" not in ack, ack
    return ack


async def _msgs(js, stream: str) -> list[tuple[str, bytes]]:
    info = await js.stream_info(stream)
    out = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            m = await js.get_msg(stream, seq)
        except Exception:
            continue
        out.append((m.subject, m.data))
    return out


# -- publishes ------------------------------------------------------------------------------
# (name, stream config, messages published first, the publish checked, what the stream then holds)
_AT = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
PUBLISHES = [
    ("plain", {}, [], ("k.a", b"new", None), [("k.a", b"0"), ("k.a", b"1"), ("k.a", b"new")]),
    ("msg-id", {}, [], ("k.a", b"new", {"Nats-Msg-Id": "id-1"}), [("k.a", b"0"), ("k.a", b"1"), ("k.a", b"new")]),
    ("expected-last-seq", {}, [], ("k.a", b"new", {"Nats-Expected-Last-Sequence": "2"}),
     [("k.a", b"0"), ("k.a", b"1"), ("k.a", b"new")]),
    ("expected-last-subject-seq", {}, [], ("k.a", b"new", {"Nats-Expected-Last-Subject-Sequence": "2"}),
     [("k.a", b"0"), ("k.a", b"1"), ("k.a", b"new")]),
    ("ttl", {"allow_msg_ttl": True}, [], ("k.a", b"new", {"Nats-TTL": "1h"}),
     [("k.a", b"0"), ("k.a", b"1"), ("k.a", b"new")]),
    ("rollup-sub", {"allow_rollup_hdrs": True}, [("k.b", b"b")], ("k.a", b"new", {"Nats-Rollup": "sub"}),
     [("k.b", b"b"), ("k.a", b"new")]),
    ("rollup-all", {"allow_rollup_hdrs": True}, [("k.b", b"b")], ("k.a", b"new", {"Nats-Rollup": "all"}),
     [("k.a", b"new")]),
    ("schedule-at", {"allow_msg_schedules": True}, [],
     ("k.s", b"later", {"Nats-Schedule": f"@at {_AT}", "Nats-Schedule-Target": "k.t"}),
     [("k.a", b"0"), ("k.a", b"1"), ("k.s", b"later")]),
    ("schedule-every", {"allow_msg_schedules": True}, [],
     ("k.s", b"often", {"Nats-Schedule": "@every 1h", "Nats-Schedule-Target": "k.t"}),
     [("k.a", b"0"), ("k.a", b"1"), ("k.s", b"often")]),
    ("republish", {"republish": {"src": "k.>", "dest": "out.>"}}, [], ("k.a", b"new", None),
     [("k.a", b"0"), ("k.a", b"1"), ("k.a", b"new")]),
    ("workqueue", {"retention": "workqueue"}, [], ("k.a", b"new", None),
     [("k.a", b"0"), ("k.a", b"1"), ("k.a", b"new")]),
    ("discard-new", {"max_msgs": 3, "discard": "new"}, [], ("k.a", b"new", None),
     [("k.a", b"0"), ("k.a", b"1"), ("k.a", b"new")]),
    ("limits", {"max_msgs_per_subject": 2}, [], ("k.a", b"new", None), [("k.a", b"1"), ("k.a", b"new")]),
    ("max-msgs", {"max_msgs": 2}, [], ("k.a", b"new", None), [("k.a", b"1"), ("k.a", b"new")]),
    # stored and removed at once: nobody is interested
    ("interest-unwanted", {"retention": "interest"}, [], ("k.a", b"new", None), []),
]


@pytest.mark.parametrize("name, cfg, before, pub, held", PUBLISHES, ids=[p[0] for p in PUBLISHES])
async def test_publish_is_durable_when_acknowledged(tmp_path, monkeypatch, name, cfg, before, pub, held):
    async def setup(nc, js):
        await js.add_stream(name="K", subjects=["k.>"], **cfg)
        for i in range(2):
            await _pub(nc, "k.a", b"%d" % i)
        for subject, payload in before:
            await _pub(nc, subject, payload)
        if name == "rollup-sub" or name == "rollup-all":
            await _pub(nc, "k.a", b"2")

    async def action(nc, js):
        await _pub(nc, pub[0], pub[1], pub[2])

    async def check(nc, js, image):
        assert await _msgs(js, "K") == held, image

    await _check(await _cut_after(tmp_path, monkeypatch, setup, action), check)


async def test_counter_is_durable_when_acknowledged(tmp_path, monkeypatch):
    async def setup(nc, js):
        await js.add_stream(name="K", subjects=["k.>"], allow_msg_counter=True)
        await _pub(nc, "k.c", b"", {"Nats-Incr": "5"})

    async def action(nc, js):
        ack = await _pub(nc, "k.c", b"", {"Nats-Incr": "2"})
        assert ack["val"] == "7"

    async def check(nc, js, image):
        m = await js.get_last_msg("K", "k.c")
        assert json.loads(m.data) == {"val": "7"}, image

    await _check(await _cut_after(tmp_path, monkeypatch, setup, action), check)


async def test_atomic_batch_is_durable_when_acknowledged(tmp_path, monkeypatch):
    async def setup(nc, js):
        await js.add_stream(name="K", subjects=["k.>"], allow_atomic=True, allow_rollup_hdrs=True)
        await _pub(nc, "k.a", b"old")

    async def action(nc, js):
        await nc.publish("k.a", b"b1", headers={"Nats-Batch-Id": "b", "Nats-Batch-Sequence": "1",
                                                "Nats-Rollup": "sub"})
        await nc.publish("k.b", b"b2", headers={"Nats-Batch-Id": "b", "Nats-Batch-Sequence": "2"})
        ack = await _pub(nc, "k.c", b"b3", {"Nats-Batch-Id": "b", "Nats-Batch-Sequence": "3",
                                           "Nats-Batch-Commit": "1"})
        assert ack.get("batch") == "b" and ack.get("count") == 3, ack

    async def check(nc, js, image):
        assert await _msgs(js, "K") == [("k.a", b"b1"), ("k.b", b"b2"), ("k.c", b"b3")], image

    await _check(await _cut_after(tmp_path, monkeypatch, setup, action), check)


async def test_kv_purge_and_delete_are_durable_when_acknowledged(tmp_path, monkeypatch):
    """A KV purge is a rollup of the key's subject with KV-Operation: PURGE:
    the purged revisions must not come back after the purge was answered."""
    async def setup(nc, js):
        kv = await js.create_key_value(bucket="B", history=5)
        for i in range(3):
            await kv.put("p", b"v%d" % i)
            await kv.put("d", b"v%d" % i)

    async def action(nc, js):
        kv = await js.key_value("B")
        await kv.purge("p")
        await kv.delete("d")

    async def check(nc, js, image):
        from nats.js.errors import KeyNotFoundError

        kv = await js.key_value("B")
        for key, op in (("p", "PURGE"), ("d", "DEL")):
            with pytest.raises(KeyNotFoundError):
                await kv.get(key)
        history = await kv.history("p")
        assert [e.operation for e in history] == ["PURGE"], (image, history)
        assert len(await kv.history("d")) == 4, image

    await _check(await _cut_after(tmp_path, monkeypatch, setup, action), check)


# -- API calls ------------------------------------------------------------------------------
async def _setup_api(nc, js):
    await js.add_stream(name="K", subjects=["k.>"])
    for i in range(6):
        await _pub(nc, f"k.{'ab'[i % 2]}", b"%d" % i)
    await js.add_consumer("K", durable_name="C", ack_policy="explicit")


API_CALLS = {
    "purge": (lambda js: js.purge_stream("K"), lambda info, names, msgs: (info.state.messages, info.state.first_seq) == (0, 7)),
    "purge-subject": (lambda js: js.purge_stream("K", subject="k.a"),
                      lambda info, names, msgs: msgs == [("k.b", b"1"), ("k.b", b"3"), ("k.b", b"5")]),
    "purge-keep": (lambda js: js.purge_stream("K", keep=2), lambda info, names, msgs: msgs == [("k.a", b"4"), ("k.b", b"5")]),
    "purge-seq": (lambda js: js.purge_stream("K", seq=5), lambda info, names, msgs: msgs == [("k.a", b"4"), ("k.b", b"5")]),
    "msg-delete": (lambda js: js.delete_msg("K", 3), lambda info, names, msgs: ("k.a", b"2") not in msgs and len(msgs) == 5),
    "stream-update": (lambda js: js.update_stream(name="K", subjects=["k.>"], max_msgs=2),
                      lambda info, names, msgs: info.config.max_msgs == 2 and msgs == [("k.a", b"4"), ("k.b", b"5")]),
    "consumer-create": (lambda js: js.add_consumer("K", durable_name="D", ack_policy="explicit"),
                        lambda info, names, msgs: names == {"C", "D"}),
    "consumer-delete": (lambda js: js.delete_consumer("K", "C"), lambda info, names, msgs: names == set()),
    "consumer-reset": (lambda js: _reset(js, "K", "C", 4), None),
}


async def _reset(js, stream: str, consumer: str, seq: int) -> None:
    msg = await js._nc.request(f"$JS.API.CONSUMER.RESET.{stream}.{consumer}", json.dumps({"seq": seq}).encode(),
                               timeout=5)
    assert json.loads(msg.data).get("reset_seq") == seq, msg.data


@pytest.mark.parametrize("call", list(API_CALLS))
async def test_api_change_is_durable_when_answered(tmp_path, monkeypatch, call):
    do, ok = API_CALLS[call]

    async def action(nc, js):
        await do(js)

    async def check(nc, js, image):
        info = await js.stream_info("K")
        names = {c.name for c in await js.consumers_info("K")}
        msgs = await _msgs(js, "K")
        if ok is None:  # the consumer reset to 4
            ci = await js.consumer_info("K", "C")
            assert (ci.num_pending, ci.ack_floor.stream_seq) == (3, 3), (image, ci)
            return
        assert ok(info, names, msgs), (image, info.state, names, msgs)

    await _check(await _cut_after(tmp_path, monkeypatch, _setup_api, action), check)


async def test_stream_delete_is_durable_when_answered(tmp_path, monkeypatch):
    async def action(nc, js):
        await js.delete_stream("K")

    async def check(nc, js, image):
        assert await js.streams_info() == [], image

    await _check(await _cut_after(tmp_path, monkeypatch, _setup_api, action), check)


async def test_interest_removal_on_consumer_delete_is_durable(tmp_path, monkeypatch):
    """On an interest stream, deleting its only consumer removes what only it
    wanted; the answer waits for that."""
    async def setup(nc, js):
        await js.add_stream(name="I", subjects=["i.>"], retention="interest")
        await js.add_consumer("I", durable_name="A", ack_policy="explicit")
        await js.add_consumer("I", durable_name="B", ack_policy="explicit", filter_subject="i.b")
        for i in range(4):
            await _pub(nc, f"i.{'ab'[i % 2]}", b"%d" % i)

    async def action(nc, js):
        await js.delete_consumer("I", "A")

    async def check(nc, js, image):
        assert await _msgs(js, "I") == [("i.b", b"1"), ("i.b", b"3")], image

    await _check(await _cut_after(tmp_path, monkeypatch, setup, action), check)


async def test_many_rollups_pipelined_each_durable(tmp_path, monkeypatch):
    """KV purges and rollups pipelined from several publishers, cut at seeded
    moments: every key whose purge was answered stays purged."""
    from natslab.server import EmbeddedServer

    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    rng = random.Random(5)
    images = []
    try:
        async with EmbeddedServer(port=0, store_dir=store) as srv:
            nc = await connect(srv.client_url)
            js = nc.jetstream()
            kv = await js.create_key_value(bucket="R", history=3)
            purged: set[str] = set()
            stop = asyncio.Event()

            async def worker(k: int) -> None:
                i = 0
                while not stop.is_set() and i < 200:
                    key = f"k{k}-{i}"
                    i += 1
                    await kv.put(key, b"a")
                    await kv.put(key, b"b")
                    await kv.purge(key)
                    purged.add(key)

            tasks = [asyncio.create_task(worker(k)) for k in range(4)]
            try:
                for n in range(3):
                    await asyncio.sleep(rng.uniform(0.05, 0.2))
                    images.append((cut.image(tmp_path / f"cut{n}", rng=random.Random(n), torn=True, reorder=n == 2),
                                   set(purged)))
            finally:
                stop.set()
                await asyncio.gather(*tasks, return_exceptions=True)
                await nc.close()
    finally:
        monkeypatch.undo()
    assert sum(len(p) for _, p in images) > 0
    for image, keys in images:
        async with EmbeddedServer(port=0, store_dir=image) as srv:
            nc = await connect(srv.client_url)
            js = nc.jetstream()
            back = []
            for key in sorted(keys):
                m = await js.get_last_msg("KV_R", f"$KV.R.{key}")
                if (m.headers or {}).get("KV-Operation") != "PURGE":
                    back.append((key, "last", m.headers, m.data))
                info = await js.stream_info("KV_R", subjects_filter=f"$KV.R.{key}")
                if (info.state.subjects or {}).get(f"$KV.R.{key}") != 1:
                    back.append((key, "count", info.state.subjects))
            await nc.close()
        assert not back, (image, back[:5])


async def test_read_only_api_answers_wait_for_no_sync(tmp_path, monkeypatch):
    """A stream owes writes (publishes nobody waits a PubAck for, the sync
    timer held off): INFO, NAMES, LIST and MSG.GET answers leave without
    syncing it, a purge of another stream syncs only that one, and a
    message delete on it syncs it (before the narrowing every API answer
    synced every stream that owed writes)."""
    from natslab.server import EmbeddedServer
    from natslab.server.jetstream import jetstream

    monkeypatch.setattr(jetstream.JetStream, "_arm_sync_timer", lambda self: None)
    store = tmp_path / "store"
    cut = PowerCut(store)
    cut.install(monkeypatch)
    try:
        async with EmbeddedServer(port=0, store_dir=store) as srv:
            nc = await connect(srv.client_url)
            js = nc.jetstream()
            await js.add_stream(name="P", subjects=["p.>"])
            await js.add_stream(name="Q", subjects=["q.>"])
            await js.add_consumer("P", durable_name="C", ack_policy="explicit")
            await js.publish("q.1", b"q")
            for i in range(20):
                await nc.publish(f"p.{i}", b"x")  # no reply: nothing waits for a sync
            await nc.flush()
            p = srv.server.jetstream.streams["P"].store
            assert p._owes(), "the publishes were synced at once"
            syncs = cut.syncs
            for subject in ("$JS.API.INFO", "$JS.API.STREAM.INFO.P", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.LIST",
                            "$JS.API.CONSUMER.INFO.P.C", "$JS.API.CONSUMER.NAMES.P", "$JS.API.CONSUMER.LIST.P"):
                r = await nc.request(subject, b"", timeout=5)
                assert "error" not in json.loads(r.data), (subject, r.data)
            r = await nc.request("$JS.API.STREAM.MSG.GET.P", b'{"seq":5}', timeout=5)
            assert json.loads(r.data)["message"]["seq"] == 5
            assert (cut.syncs, p._owes()) == (syncs, True), "a read-only answer synced"
            r = await nc.request("$JS.API.STREAM.PURGE.Q", b"", timeout=5)
            assert json.loads(r.data)["purged"] == 1
            assert p._owes(), "a purge of Q synced P"
            r = await nc.request("$JS.API.STREAM.MSG.DELETE.P", b'{"seq":3}', timeout=5)
            assert json.loads(r.data)["success"] is True
            assert not p._owes(), "a message delete on P was answered before P was synced"
            await nc.close()
    finally:
        monkeypatch.undo()
