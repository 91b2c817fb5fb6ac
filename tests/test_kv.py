"""Key-Value buckets through nats-py's own KeyValue API, unmodified, with the
same assertions on natslab and nats-server: a program using KV must not be
able to tell the two apart (issue 5)."""

from __future__ import annotations

import asyncio

import pytest
from nats.js import api
from nats.js.errors import (
    APIError,
    BucketNotFoundError,
    KeyNotFoundError,
    KeyWrongLastSequenceError,
    NoKeysError,
    NotFoundError,
)

from conftest import connect, listing


async def test_seed_session(js):
    """The seed's `kv add CONFIG --history 5`, two puts, a get, and what
    `stream info KV_CONFIG` shows."""
    kv = await js.create_key_value(bucket="CONFIG", history=5)
    assert await kv.put("region", b"eu") == 1
    assert await kv.put("region", b"us") == 2
    e = await kv.get("region")
    assert (e.key, e.value, e.revision, e.bucket) == ("region", b"us", 2, "CONFIG")
    assert (await kv.get("region", revision=1)).value == b"eu"

    si = await js.stream_info("KV_CONFIG")
    c = si.config
    assert c.subjects == ["$KV.CONFIG.>"]
    assert c.storage == api.StorageType.FILE
    assert c.retention == api.RetentionPolicy.LIMITS
    assert c.discard == api.DiscardPolicy.NEW
    assert c.max_msgs_per_subject == 5
    assert (c.max_msgs, c.max_bytes, c.max_consumers, c.max_age) == (-1, -1, -1, 0)
    assert c.allow_rollup_hdrs and c.deny_delete
    assert not c.allow_direct  # nats-py does not ask for it
    assert c.duplicate_window == 120
    assert si.state.messages == 2
    assert si.state.bytes == 98  # the seed's "98 B": file-store accounting
    assert (si.state.first_seq, si.state.last_seq) == (1, 2)

    st = await kv.status()
    assert (st.bucket, st.values, st.history, st.ttl) == ("CONFIG", 2, 5, 0)

    names = [s.config.name for s in await js.streams_info()]
    assert names == ["KV_CONFIG"]


async def test_create_update_revisions(js):
    kv = await js.create_key_value(bucket="REV", history=10)
    assert await kv.create("k", b"1") == 1
    with pytest.raises(KeyWrongLastSequenceError) as ei:
        await kv.create("k", b"again")
    assert "wrong last sequence: 1" in ei.value.description
    assert await kv.update("k", b"2", last=1) == 2
    with pytest.raises(KeyWrongLastSequenceError) as ei:
        await kv.update("k", b"3", last=1)
    assert "wrong last sequence: 2" in ei.value.description
    # update of a key that does not exist with last=0 behaves as create
    assert await kv.update("other", b"x", last=0) == 3
    # create works again after a delete (nats-py retries on the DEL marker's revision)
    await kv.delete("k")
    assert await kv.create("k", b"reborn") == 5
    assert (await kv.get("k")).value == b"reborn"
    # delete with an expected last revision that is wrong is refused
    with pytest.raises(APIError) as ei:
        await kv.delete("k", last=1)
    assert ei.value.err_code == 10071


async def test_delete_purge_markers(js):
    kv = await js.create_key_value(bucket="MARK", history=5)
    await kv.put("a", b"1")
    await kv.put("a", b"2")
    await kv.put("b", b"x")
    await kv.delete("a")
    with pytest.raises(KeyNotFoundError):
        await kv.get("a")
    hist = await listing(lambda: kv.history("a"))
    assert [(e.revision, e.value, e.operation) for e in hist] == [(1, b"1", None), (2, b"2", None), (4, b"", "DEL")]

    msg = await js.get_msg("KV_MARK", subject="$KV.MARK.a")
    assert msg.seq == 4 and msg.headers == {"KV-Operation": "DEL"}

    await kv.purge("a")  # rollup: only the PURGE marker is left for "a"
    hist = await listing(lambda: kv.history("a"))
    assert [(e.revision, e.operation) for e in hist] == [(5, "PURGE")]
    with pytest.raises(KeyNotFoundError):
        await kv.get("a", revision=1)
    msg = await js.get_msg("KV_MARK", seq=5)
    assert msg.headers["KV-Operation"] == "PURGE" and msg.headers["Nats-Rollup"] == "sub"
    assert (await js.stream_info("KV_MARK")).state.messages == 2

    await kv.purge_deletes(olderthan=-1)  # markers of any age go, with nothing kept
    si = await js.stream_info("KV_MARK")
    assert si.state.messages == 1
    assert await listing(kv.keys) == ["b"]


async def test_keys_and_filters(js):
    kv = await js.create_key_value(bucket="KEYS", history=3)
    with pytest.raises(NoKeysError):
        await kv.keys()
    for k in ("app.one", "app.two", "db.main", "app.one"):
        await kv.put(k, b"v")
    await kv.delete("app.two")
    assert sorted(await listing(kv.keys)) == ["app.one", "db.main"]
    assert await listing(lambda: kv.keys(filters=["db"])) == ["db.main"]
    with pytest.raises(NoKeysError):
        await kv.history("never.written")
    await kv.delete("app.one", last=4)  # the right expected revision is accepted
    await kv.purge("db.main")
    with pytest.raises(NoKeysError):  # only markers left
        await kv.keys()


async def test_watch(js):
    kv = await js.create_key_value(bucket="WATCH", history=5)
    await kv.put("x", b"1")
    await kv.put("x", b"2")
    await kv.put("y", b"1")

    w = await kv.watchall()
    initial = []
    while (e := await w.updates(timeout=3)) is not None:
        initial.append((e.key, e.value, e.revision, e.delta))
    assert initial == [("x", b"2", 2, 1), ("y", b"1", 3, 0)]
    await kv.put("z", b"new")
    await kv.delete("x")
    e = await w.updates(timeout=3)
    assert (e.key, e.value, e.revision, e.operation) == ("z", b"new", 4, None)
    e = await w.updates(timeout=3)
    assert (e.key, e.revision, e.operation) == ("x", 5, "DEL")
    await w.stop()

    # include_history on one key; meta_only drops values; ignore_deletes skips markers
    w = await kv.watch("x", include_history=True)
    revs = []
    while (e := await w.updates(timeout=3)) is not None:
        revs.append(e.revision)
    assert revs == [1, 2, 5]
    await w.stop()

    w = await kv.watchall(meta_only=True, ignore_deletes=True)
    seen = []
    while (e := await w.updates(timeout=3)) is not None:
        seen.append((e.key, e.value))
    assert seen == [("y", b""), ("z", b"")]
    await w.stop()

    # a wildcard key filter watches only the keys it matches
    await kv.put("app.one", b"a1")
    await kv.put("app.two", b"a2")
    await kv.put("db.main", b"d")
    w = await kv.watch("app.*")
    seen = []
    while (e := await w.updates(timeout=3)) is not None:
        seen.append(e.key)
    assert seen == ["app.one", "app.two"]
    await kv.put("db.main", b"d2")
    await kv.put("app.three", b"a3")
    assert (await w.updates(timeout=3)).key == "app.three"
    await w.stop()

    # an empty bucket's watcher signals the end of the initial values at once
    empty = await js.create_key_value(bucket="EMPTY")
    w = await empty.watchall()
    assert await w.updates(timeout=3) is None
    await empty.put("k", b"v")
    e = await w.updates(timeout=3)
    assert (e.key, e.value, e.delta) == ("k", b"v", 0)
    await w.stop()


async def test_bucket_options(js):
    kv = await js.create_key_value(
        bucket="OPTS", history=2, ttl=60, max_value_size=16, max_bytes=4096,
        storage=api.StorageType.MEMORY, description="opts",
    )
    si = await js.stream_info("KV_OPTS")
    c = si.config
    assert c.max_age == 60 and c.duplicate_window == 60
    assert (c.max_msg_size, c.max_bytes, c.max_msgs_per_subject) == (16, 4096, 2)
    assert c.storage == api.StorageType.MEMORY and c.description == "opts"
    assert c.allow_msg_ttl

    with pytest.raises(APIError) as ei:
        await kv.put("big", b"x" * 17)
    assert ei.value.err_code == 10054
    for i in range(4):
        await kv.put("h", str(i).encode())
    assert [e.revision for e in await listing(lambda: kv.history("h"))] == [3, 4]  # history 2 keeps two
    st = await kv.status()
    assert (st.values, st.history, st.ttl) == (2, 2, 60)

    # bind to an existing bucket; delete it
    with pytest.raises(BucketNotFoundError):
        await js.key_value("NOPE")
    kv = await js.key_value("OPTS")
    assert (await kv.get("h")).value == b"3"
    assert await js.delete_key_value("OPTS")
    with pytest.raises(BucketNotFoundError):
        await js.key_value("OPTS")
    with pytest.raises(NotFoundError):
        await js.stream_info("KV_OPTS")


async def test_direct_get_bucket(js, nc):
    """allow_direct buckets: nats-py reads through $JS.API.DIRECT.GET, as nats.go does."""
    kv = await js.create_key_value(bucket="DIRECT", history=3, direct=True)
    assert (await js.stream_info("KV_DIRECT")).config.allow_direct
    await kv.put("k", b"one")
    await kv.put("k", b"two")
    e = await kv.get("k")
    assert (e.value, e.revision) == (b"two", 2)
    assert (await kv.get("k", revision=1)).value == b"one"
    with pytest.raises(KeyNotFoundError):
        await kv.get("missing")

    # the raw direct get, as nats.go and the nats CLI send it
    msg = await nc.request("$JS.API.DIRECT.GET.KV_DIRECT.$KV.DIRECT.k", b"", timeout=2)
    assert msg.data == b"two"
    assert msg.headers["Nats-Stream"] == "KV_DIRECT"
    assert msg.headers["Nats-Subject"] == "$KV.DIRECT.k"
    assert msg.headers["Nats-Sequence"] == "2"
    msg = await nc.request("$JS.API.DIRECT.GET.KV_DIRECT", b'{"seq":1}', timeout=2)
    assert msg.data == b"one"
    assert "Nats-Time-Stamp" in msg.headers
    msg = await nc.request("$JS.API.DIRECT.GET.KV_DIRECT.$KV.DIRECT.nope", b"", timeout=2)
    assert msg.headers["Status"] == "404" and msg.headers["Description"] == "Message Not Found"
    assert not msg.data


async def test_concurrent_puts_keep_order(js):
    kv = await js.create_key_value(bucket="PAR", history=64)
    revs = await asyncio.gather(*(kv.put("k", str(i).encode()) for i in range(50)))
    assert sorted(revs) == list(range(1, 51))
    assert len(await listing(lambda: kv.history("k"))) == 50


async def test_per_key_ttl_and_limit_markers(js):
    """Per-message TTL (create(msg_ttl=)) and limit markers (limit_marker_ttl):
    the server expires the key and leaves a marker watchers read as a purge."""
    kv = await js.create_key_value(bucket="TTL", history=3, limit_marker_ttl=2)
    c = (await js.stream_info("KV_TTL")).config
    assert c.allow_msg_ttl and c.subject_delete_marker_ttl == 2
    await kv.put("stays", b"v")
    assert await kv.create("short", b"v", msg_ttl=1) == 2
    msg = await js.get_msg("KV_TTL", seq=2)
    assert "Nats-TTL" in msg.headers

    w = await kv.watchall()
    while await w.updates(timeout=3) is not None:
        pass
    e = await w.updates(timeout=3.5)  # the server's marker when "short" expires (TTL raised to 2 s)
    assert (e.key, e.operation) == ("short", "PURGE")
    marker = await js.get_msg("KV_TTL", subject="$KV.TTL.short")
    assert marker.seq == 3 and not marker.data
    assert marker.headers["Nats-Marker-Reason"] == "MaxAge"
    assert marker.headers["Nats-TTL"] == "2s" and marker.headers["Nats-Rollup"] == "sub"
    # nats-py 2.16's get() only looks at KV-Operation, so it returns the marker
    assert not (await kv.get("short")).value
    assert (await kv.get("stays")).value == b"v"
    await w.stop()


async def test_bucket_survives_restart(server):
    """Values, revisions, markers and the bucket's config come back after a
    clean restart (SIGTERM) of the broker, and an acknowledged put survives
    the broker being killed (SIGKILL)."""
    nc = await connect(server.url)
    kv = await nc.jetstream().create_key_value(bucket="KEEP", history=3)
    await kv.put("a", b"1")
    await kv.put("a", b"2")
    await kv.put("b", b"x")
    await kv.delete("b")
    await nc.close()
    server.restart()
    nc = await connect(server.url)
    js = nc.jetstream()
    kv = await js.key_value("KEEP")
    e = await kv.get("a")
    assert (e.value, e.revision) == (b"2", 2)
    with pytest.raises(KeyNotFoundError):
        await kv.get("b")
    assert [h.revision for h in await listing(lambda: kv.history("a"))] == [1, 2]
    assert await kv.put("a", b"3") == 5
    st = await kv.status()
    assert (st.values, st.history) == (5, 3)
    await nc.close()
    server.kill()
    server.start()
    nc = await connect(server.url)
    kv = await nc.jetstream().key_value("KEEP")
    e = await kv.get("a")
    assert (e.value, e.revision) == (b"3", 5)
    await nc.close()
