"""Object stores through nats-py's own ObjectStore API, unmodified, with the
same assertions on natslab and nats-server (issue 5). Objects of a few MiB
keep the suite fast; the 20 MiB round trip lives in bench/."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import random

import pytest
from nats.js import api
from nats.js.errors import (
    APIError,
    BucketNotFoundError,
    NotFoundError,
    ObjectAlreadyExists,
    ObjectDeletedError,
    ObjectNotFoundError,
)

CHUNK = 128 * 1024


def blob(n: int, seed: int = 7) -> bytes:
    return random.Random(seed).randbytes(n)


def digest(data: bytes) -> str:
    return "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()


async def test_put_get_multichunk(js):
    obs = await js.create_object_store("FILES")
    data = blob(2 * 1024 * 1024 + 12345)
    info = await obs.put("big.bin", data, meta=api.ObjectMeta(name="big.bin", description="two MiB"))
    chunks = -(-len(data) // CHUNK)
    assert (info.name, info.bucket, info.size, info.chunks) == ("big.bin", "FILES", len(data), chunks)
    assert info.digest == digest(data)

    res = await obs.get("big.bin")
    assert res.data == data
    assert (res.info.size, res.info.chunks, res.info.digest) == (len(data), chunks, digest(data))
    assert res.info.description == "two MiB"

    sink = io.BytesIO()
    await obs.get("big.bin", writeinto=sink)
    assert sink.getvalue() == data

    gi = await obs.get_info("big.bin")
    assert (gi.size, gi.nuid, bool(gi.deleted)) == (len(data), info.nuid, False)

    si = await js.stream_info("OBJ_FILES")
    c = si.config
    assert c.subjects == ["$O.FILES.C.>", "$O.FILES.M.>"]
    assert c.discard == api.DiscardPolicy.NEW
    assert c.allow_rollup_hdrs and c.allow_direct
    assert (c.max_bytes, c.max_consumers) == (-1, -1)
    assert si.state.messages == chunks + 1
    meta_subject = "$O.FILES.M." + base64.urlsafe_b64encode(b"big.bin").decode()
    meta = await js.get_last_msg("OBJ_FILES", meta_subject)
    assert meta.headers == {"Nats-Rollup": "sub"}
    assert json.loads(meta.data)["digest"] == digest(data)

    # a reader instead of bytes, a smaller chunk size, and headers kept in the meta
    part = data[:300_000]
    meta = api.ObjectMeta(name="chunky", headers={"X-Kind": ["test"]},
                          options=api.ObjectMetaOptions(max_chunk_size=64 * 1024))
    small = await obs.put("chunky", io.BytesIO(part), meta=meta)
    assert (small.size, small.chunks) == (len(part), 5)
    got = await obs.get("chunky")
    assert got.data == part and got.info.headers == {"X-Kind": ["test"]}
    assert got.info.options.max_chunk_size == 64 * 1024

    # an empty object has no chunks
    e = await obs.put("empty", b"")
    assert (e.size, e.chunks) == (0, 0)
    assert (await obs.get("empty")).data == b""


async def test_replace_delete_and_list(js):
    obs = await js.create_object_store("DOCS")
    with pytest.raises(NotFoundError):
        await obs.list()
    with pytest.raises(ObjectNotFoundError):
        await obs.get("nope")

    await obs.put("a", blob(300_000, 1))  # 3 chunks
    await obs.put("b", b"bee")
    await obs.put("a", b"short now")  # replaces: the old chunks are purged
    assert (await obs.get("a")).data == b"short now"
    si = await js.stream_info("OBJ_DOCS")
    assert si.state.messages == 4  # a: 1 chunk + meta, b: 1 chunk + meta

    names = sorted(o.name for o in await obs.list())
    assert names == ["a", "b"]

    await obs.delete("b")
    with pytest.raises(ObjectNotFoundError):
        await obs.get("b")
    gone = await obs.get_info("b", show_deleted=True)
    assert gone.deleted and gone.size == 0
    assert (await js.stream_info("OBJ_DOCS")).state.messages == 3
    listed = {o.name: bool(o.deleted) for o in await obs.list()}
    assert listed == {"a": False, "b": True}
    assert [o.name for o in await obs.list(ignore_deletes=True)] == ["a"]


async def test_watch(js):
    obs = await js.create_object_store("WATCHED")
    await obs.put("one", b"1")
    w = await obs.watch()
    first = await w.updates(timeout=3)
    assert first.name == "one"
    assert await w.updates(timeout=3) is None
    await obs.put("two", b"2")
    e = await w.updates(timeout=3)
    assert (e.name, e.size) == ("two", 1)
    await w.stop()

    await obs.put("one", b"11")  # a second revision of "one"
    w = await obs.watch(include_history=True)
    names = []
    while (e := await w.updates(timeout=3)) is not None:
        names.append((e.name, e.size))
    assert names == [("two", 1), ("one", 2)]  # metas roll up: one per object, in stream order
    await w.stop()

    w = await obs.watch(updates_only=True)
    await obs.put("three", b"33")
    e = await w.updates(timeout=3)
    assert e.name == "three"
    await w.stop()


async def test_update_meta_and_links(js):
    obs = await js.create_object_store("META")
    await obs.put("old", b"payload")
    await obs.update_meta("old", api.ObjectMeta(name="old", description="described"))
    assert (await obs.get_info("old")).description == "described"
    # nats-py 2.16 refuses a rename unless the old name is deleted
    with pytest.raises(ObjectAlreadyExists):
        await obs.update_meta("old", api.ObjectMeta(name="new", description="renamed"))
    res = await obs.get("old")
    assert res.data == b"payload" and res.info.description == "described"
    await obs.delete("old")
    with pytest.raises(ObjectDeletedError):
        await obs.update_meta("old", api.ObjectMeta(name="old", description="too late"))

    # nats-py follows links (nats.go's AddLink writes them): a meta message
    # whose options.link names an object in another bucket
    src = await js.create_object_store("SRC")
    dst = await js.create_object_store("DST")
    data = blob(200_000, 3)
    target = await src.put("target", data)
    link = {
        "name": "alias", "bucket": "DST", "nuid": "LINKNUID", "size": 0, "chunks": 0,
        "mtime": "2026-01-01T00:00:00Z", "digest": "",
        "options": {"link": {"bucket": "SRC", "name": "target"}},
    }
    subj = "$O.DST.M." + base64.urlsafe_b64encode(b"alias").decode()
    await js.publish(subj, json.dumps(link).encode(), headers={"Nats-Rollup": "sub"})
    info = await dst.get_info("alias")
    assert info.is_link() and info.options.link.bucket == "SRC"
    res = await dst.get("alias")
    assert res.data == data and res.info.digest == target.digest


async def test_status_seal_and_delete_store(js):
    obs = await js.create_object_store("SEAL", description="sealed soon", storage=api.StorageType.MEMORY)
    await obs.put("x", b"12345")
    st = await obs.status()
    assert (st.bucket, st.description, st.sealed, st.replicas) == ("SEAL", "sealed soon", False, 1)
    assert st.storage_type == api.StorageType.MEMORY
    assert st.size == (await js.stream_info("OBJ_SEAL")).state.bytes > 0

    await obs.seal()
    assert (await obs.status()).sealed
    with pytest.raises(APIError):
        await obs.put("y", b"no")
    assert (await obs.get("x")).data == b"12345"  # reads still work

    with pytest.raises(BucketNotFoundError):
        await js.object_store("MISSING")
    assert await js.delete_object_store("SEAL")
    with pytest.raises(BucketNotFoundError):
        await js.object_store("SEAL")
