"""Mirrors and sources (issue 18), differential: the same assertions on
natslab's broker and on nats-server 2.15.1. What a mirror and a source copy
(sequences, timestamps, headers, the Nats-Stream-Source header with the
origin's identity), their config checks and errors, their STREAM.INFO, mirror
promotion, sources changed by update, KV buckets behind them, and catching
up after a clean restart and after SIGKILL. Includes the essence of nats.py's
test_stream_mirror_removal, test_stream_source_opt_start_time and the
sourcing half of test_subject_transforms."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import json

import pytest
from nats.js import api
from nats.js.errors import BadRequestError

from conftest import connect, listing


async def req(nc, subject: str, body=None) -> dict:
    data = b"" if body is None else json.dumps(body).encode()
    return json.loads((await nc.request(subject, data, timeout=2)).data)


async def wait_for(cond, timeout: float = 5.0, step: float = 0.05):
    """Poll ``cond`` (async, returns truthy) until it holds; its last value."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        v = await cond()
        if v or asyncio.get_running_loop().time() > deadline:
            return v
        await asyncio.sleep(step)


async def count_is(js, stream: str, n: int, timeout: float = 5.0) -> bool:
    async def check():
        return (await js.stream_info(stream)).state.messages == n
    return await wait_for(check, timeout)


async def raw_msg(nc, stream: str, seq: int) -> dict | None:
    r = await req(nc, f"$JS.API.STREAM.MSG.GET.{stream}", {"seq": seq})
    m = r.get("message")
    if m is None:
        return None
    return {"subject": m["subject"], "seq": m["seq"], "time": m["time"],
            "hdrs": base64.b64decode(m.get("hdrs", "")), "data": base64.b64decode(m.get("data", ""))}


def identity(created: str) -> str:
    """nats-server's stream identity (getHash of the creation time)."""
    b62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    return "".join(b62[b % 62] for b in hashlib.sha256(created.encode()).digest()[:8])


# -- the nats.py tests ---------------------------------------------------------------

async def test_stream_mirror_removal(js):
    await js.add_stream(name="SOURCE", subjects=["source.>"])
    for i in range(5):
        await js.publish(f"source.{i}", f"message-{i}".encode())
    await js.add_stream(name="MIRROR", mirror=api.StreamSource(name="SOURCE"))
    assert await count_is(js, "MIRROR", 5)
    si = await js.stream_info("MIRROR")
    assert si.config.mirror is not None and si.config.mirror.name == "SOURCE"
    si = await js.update_stream(config=si.config.evolve(mirror=None))
    assert si.config.mirror is None
    assert si.state.messages == 5
    # promoted: a stream of its own, with its name as its subject; the origin
    # no longer feeds it (its consumer on the origin is gone, so nothing
    # published there after can be copied)
    assert si.config.subjects == ["MIRROR"]

    async def no_feed():
        return (await js.stream_info("SOURCE")).state.consumer_count == 0
    assert await wait_for(no_feed, 15)
    await js.publish("source.x", b"after")
    ack = await js.publish("MIRROR", b"own")
    assert ack.seq == 6
    assert (await js.stream_info("MIRROR")).state.messages == 6


async def test_stream_source_opt_start_time(nc, js):
    await js.add_stream(name="SOURCE_TIME", subjects=["src.>"])
    await js.publish("src.1", b"before")
    await js.publish("src.2", b"before")
    # (times to pass, not states: the stored times either side of midpoint differ)
    await asyncio.sleep(0.1)
    midpoint = datetime.datetime.now(datetime.timezone.utc)
    await asyncio.sleep(0.1)
    await js.publish("src.3", b"after")
    await js.publish("src.4", b"after")
    await js.add_stream(name="DEST_TIME", sources=[api.StreamSource(name="SOURCE_TIME", opt_start_time=midpoint)])
    assert await count_is(js, "DEST_TIME", 2)
    # and no more: the source copies in order, so once a later message is
    # copied any earlier one it was to copy is there too
    await js.publish("src.5", b"sentinel")
    assert await count_is(js, "DEST_TIME", 3)
    si = await js.stream_info("DEST_TIME")
    assert si.state.messages == 3
    assert [(await raw_msg(nc, "DEST_TIME", s))["subject"] for s in (1, 2, 3)] == ["src.3", "src.4", "src.5"]
    assert len(si.config.sources) == 1 and si.config.sources[0].name == "SOURCE_TIME"
    assert isinstance(si.config.sources[0].opt_start_time, datetime.datetime)


async def test_subject_transforms_sourcing(js):
    """The sourcing half of nats.py's test_subject_transforms."""
    await js.add_stream(name="TRANSFORMS", subjects=["test", "foo"],
                        subject_transform=api.SubjectTransform(src=">", dest="transformed.>"))
    for i in range(10):
        await js.publish("test", f"{i}".encode())
    source = api.StreamSource(name="TRANSFORMS", subject_transforms=[
        api.SubjectTransform(src="transformed.>", dest="fromtest.transformed.>"),
        api.SubjectTransform(src="foo.>", dest="fromtest.foo.>")])
    await js.add_stream(name="SOURCING", sources=[source])
    await js.add_consumer(stream="SOURCING", config=api.ConsumerConfig(durable_name="b"))
    psub = await js.pull_subscribe_bind(consumer="b", stream="SOURCING")

    async def ten():
        return (await psub.consumer_info()).num_pending == 10
    assert await wait_for(ten)
    msgs = await psub.fetch(10, timeout=2)
    assert [m.subject for m in msgs] == ["fromtest.transformed.test"] * 10
    assert [m.data for m in msgs] == [str(i).encode() for i in range(10)]
    overlapping = api.StreamSource(name="TRANSFORMS2", subject_transforms=[
        api.SubjectTransform(src=">", dest="fromtest.transformed.>"),
        api.SubjectTransform(src=">", dest="fromtest.foo.>")])
    with pytest.raises(BadRequestError) as e:
        await js.add_stream(name="SOURCING", sources=[overlapping])
    assert e.value.err_code == 10147


# -- mirrors -------------------------------------------------------------------------

async def test_mirror_copies_sequences_times_and_headers(nc, js):
    await js.add_stream(name="O", subjects=["o.>"], storage="memory", allow_direct=True)
    await js.publish("o.a", b"1", headers={"Nats-Msg-Id": "id1"})
    await js.publish("o.b", b"2", headers={"Nats-Expected-Stream": "O", "X-Keep": "k"})
    await js.publish("o.c", b"3", headers={"Nats-Expected-Last-Sequence": "2"})
    await js.publish("o.d", b"4")
    await js.delete_msg("O", 4)
    await js.publish("o.e", b"5")
    r = await req(nc, "$JS.API.STREAM.CREATE.M", {"name": "M", "mirror": {"name": "O"}, "storage": "memory"})
    assert r["config"]["mirror"] == {"name": "O"} and "subjects" not in r["config"]
    assert r["config"]["mirror_direct"] is True  # inherited from the origin's allow_direct
    assert "duplicate_window" not in r["config"]
    assert r["mirror"] == {"name": "O", "lag": 0, "active": -1}
    assert await count_is(js, "M", 4)
    for seq in (1, 2, 3, 5):
        o, m = await raw_msg(nc, "O", seq), await raw_msg(nc, "M", seq)
        assert (m["subject"], m["seq"], m["time"], m["data"]) == (o["subject"], o["seq"], o["time"], o["data"])
    assert (await raw_msg(nc, "M", 1))["hdrs"] == b"NATS/1.0\r\nNats-Msg-Id: id1\r\n\r\n"
    assert (await raw_msg(nc, "M", 2))["hdrs"] == b"NATS/1.0\r\nX-Keep: k\r\n\r\n"
    assert (await raw_msg(nc, "M", 3))["hdrs"] == b""
    assert await raw_msg(nc, "M", 4) is None
    info = await req(nc, "$JS.API.STREAM.INFO.M")
    st = info["state"]
    assert (st["messages"], st["first_seq"], st["last_seq"], st.get("num_deleted")) == (4, 1, 5, 1)
    mi = info["mirror"]
    assert (mi["name"], mi["lag"]) == ("O", 0) and 0 <= mi["active"] < 5 * 10**9
    assert list(mi) == ["name", "lag", "active"]
    # new messages keep flowing
    await js.publish("o.f", b"6")
    assert await count_is(js, "M", 5)
    assert (await raw_msg(nc, "M", 6))["data"] == b"6"
    # a mirror's consumers are not the origin's
    assert (await js.stream_info("O")).state.consumer_count == 0
    assert (await req(nc, "$JS.API.CONSUMER.LIST.O"))["consumers"] == []


async def test_mirror_filter_and_start_seq(nc, js):
    await js.add_stream(name="O", subjects=["o.>"], storage="memory")
    for i in range(1, 7):
        await js.publish("o.even" if i % 2 == 0 else "o.odd", str(i).encode())
    await js.add_stream(name="MF", storage="memory",
                        mirror=api.StreamSource(name="O", filter_subject="o.even", opt_start_seq=3))
    assert await count_is(js, "MF", 2)
    st = (await js.stream_info("MF")).state
    assert (st.first_seq, st.last_seq) == (4, 6)
    assert [(await raw_msg(nc, "MF", s))["data"] for s in (4, 6)] == [b"4", b"6"]
    await js.add_stream(name="MT", storage="memory", mirror=api.StreamSource(name="O", subject_transforms=[
        api.SubjectTransform(src="o.odd", dest="x.odd")]))
    assert await count_is(js, "MT", 3)
    assert [(await raw_msg(nc, "MT", s))["subject"] for s in (1, 3, 5)] == ["x.odd"] * 3


MIRROR_ERRORS = [
    ({"mirror": {"name": "O"}, "subjects": ["m.x"]}, 400, 10034, "stream mirrors can not contain subjects"),
    ({"mirror": {"name": "O"}, "sources": [{"name": "O"}]}, 400, 10031,
     "stream mirrors can not also contain other sources"),
    ({"mirror": {"name": "O"}, "first_seq": 5}, 400, 10143, "stream mirrors can not have first sequence configured"),
    ({"mirror": {"name": "O"}, "allow_msg_counter": True}, 400, 10173, "stream mirrors can not also calculate counters"),
    ({"mirror": {"name": "O"}, "allow_atomic": True}, 400, 10198, "stream mirrors can not also use atomic publishing"),
    ({"mirror": {"name": "O"}, "allow_msg_schedules": True}, 400, 10186,
     "stream mirrors can not also schedule messages"),
    ({"sources": [{"name": "O"}], "allow_msg_schedules": True}, 400, 10187,
     "stream source can not also schedule messages"),
    ({"mirror": {"name": "O", "filter_subject": "o.a", "subject_transforms": [{"src": "o.b", "dest": "x"}]}}, 400,
     10150, "mirror with multiple subject transforms cannot also have a single subject filter"),
    ({"mirror": {"name": "O", "subject_transforms": [{"src": "o.*", "dest": "x.$1"}, {"src": "o.a", "dest": "y"}]}},
     400, 10152, "mirror subject filters can not overlap"),
    ({"mirror": {"name": "O", "subject_transforms": [{"src": "o..", "dest": "x"}]}}, 400, 10151,
     "mirror transform source: invalid subject o.."),
    ({"mirror": {"name": "O", "subject_transforms": [{"src": "o.*", "dest": "x.$2"}]}}, 400, 10154,
     "mirror transform: invalid mapping destination: wildcard index out of range in $2: [2]"),
    ({"mirror": {"name": "O.x"}}, 400, 10142, "mirrored stream name is invalid"),
    ({"mirror": {"name": "O"}, "max_msg_size": 10}, 400, 10030, "stream mirror must have max message size >= source"),
    ({"sources": [{"name": "O"}, {"name": "O"}]}, 400, 10140, "duplicate source configuration detected"),
    ({"sources": [{"name": ""}]}, 400, 10141, "sourced stream name is invalid"),
    ({"sources": [{"name": "O", "filter_subject": "o.a", "subject_transforms": [{"src": "o.b", "dest": "x"}]}]},
     400, 10144, "source with multiple subject transforms cannot also have a single subject filter"),
    ({"sources": [{"name": "O", "subject_transforms": [{"src": "o..", "dest": "x"}]}]}, 400, 10145,
     "source transform source: invalid subject o.."),
    ({"sources": [{"name": "O", "subject_transforms": [{"src": "o.*", "dest": "x.{{nope()}}"}]}]}, 400, 10146,
     "source transform: invalid mapping destination: unknown function in {{nope()}}"),
    ({"sources": [{"name": "O"}], "max_msg_size": 10}, 400, 10046, "stream source must have max message size >= target"),
]


@pytest.mark.parametrize("cfg,code,err_code,desc", MIRROR_ERRORS, ids=[str(e[2]) for e in MIRROR_ERRORS])
async def test_mirror_and_source_config_errors(nc, cfg, code, err_code, desc):
    await req(nc, "$JS.API.STREAM.CREATE.O", {"name": "O", "subjects": ["o.>"], "max_msg_size": 100})
    r = await req(nc, "$JS.API.STREAM.CREATE.T", dict(cfg, name="T"))
    assert r["error"] == {"code": code, "err_code": err_code, "description": desc}


async def test_mirror_updates_and_cycles(nc, js):
    await js.add_stream(name="O", subjects=["o.>"], storage="memory")
    await js.add_stream(name="M", storage="memory", mirror=api.StreamSource(name="O"))
    r = await req(nc, "$JS.API.STREAM.UPDATE.M", {"name": "M", "storage": "memory", "mirror": {"name": "O"},
                                                   "subjects": ["m.x"]})
    assert r["error"]["err_code"] == 10034
    r = await req(nc, "$JS.API.STREAM.UPDATE.M", {"name": "M", "storage": "memory",
                                                   "mirror": {"name": "O", "filter_subject": "o.a"}})
    assert r["error"] == {"code": 400, "err_code": 10055, "description": "stream mirror configuration can not be updated"}
    r = await req(nc, "$JS.API.STREAM.UPDATE.O", {"name": "O", "subjects": ["o.>"], "storage": "memory",
                                                   "sources": [{"name": "M"}]})
    assert r["error"] == {"code": 500, "err_code": 10052, "description": "detected cycle"}
    # a publish with a source header of its own is refused
    msg = await nc.request("o.a", b"x", headers={"Nats-Stream-Source": "X 1 > > o.a"}, timeout=2)
    assert json.loads(msg.data)["error"] == {"code": 400, "err_code": 10227,
                                              "description": "message stream source header is not allowed"}


async def test_mirror_of_missing_stream(nc):
    await req(nc, "$JS.API.STREAM.CREATE.M", {"name": "M", "mirror": {"name": "NOPE"}, "storage": "memory"})

    async def errored():
        r = await req(nc, "$JS.API.STREAM.INFO.M")
        return r["mirror"] if "error" in r["mirror"] else None
    mi = await wait_for(errored, 3)
    assert mi == {"name": "NOPE", "lag": 0, "active": -1,
                  "error": {"code": 404, "err_code": 10059, "description": "stream not found"}}
    assert (await req(nc, "$JS.API.STREAM.INFO.M"))["config"]["mirror_direct"] is False


async def test_mirror_direct_answers_for_the_origin(nc, js):
    await js.add_stream(name="O", subjects=["o.>"], storage="memory", allow_direct=True)
    await js.publish("o.a", b"one")
    await js.add_stream(name="M", storage="memory", mirror=api.StreamSource(name="O"))
    assert await count_is(js, "M", 1)
    await js.delete_stream("O")
    from nats.errors import NoRespondersError

    async def mirror_answers():  # (nats-server subscribes the mirror's direct get on a goroutine)
        try:
            return await nc.request("$JS.API.DIRECT.GET.O.o.a", b"", timeout=2)
        except NoRespondersError:
            return None
    msg = await wait_for(mirror_answers)
    assert msg is not None and msg.data == b"one" and msg.headers["Nats-Sequence"] == "1"


# -- sources -------------------------------------------------------------------------

async def test_sources_aggregate_and_dedupe(nc, js):
    await js.add_stream(name="O1", subjects=["a.>"], storage="memory")
    await js.add_stream(name="O2", subjects=["b.>"], storage="memory")
    await js.publish("a.1", b"a1", headers={"Nats-Msg-Id": "same"})
    await js.publish("b.1", b"b1", headers={"Nats-Msg-Id": "same"})
    await js.publish("b.2", b"b2", headers={"Nats-Expected-Stream": "O2"})
    r = await req(nc, "$JS.API.STREAM.CREATE.S", {
        "name": "S", "storage": "memory", "duplicate_window": 60 * 10**9, "subjects": ["s.own"],
        "sources": [{"name": "O1"}, {"name": "O2", "filter_subject": "b.2"}]})
    assert r["config"]["sources"] == [{"name": "O1"}, {"name": "O2", "filter_subject": "b.2"}]
    # nats-server lists a stream's sources in no particular order (a Go map)
    assert sorted(r["sources"], key=lambda x: x["name"]) == [
        {"name": "O1", "lag": 0, "active": -1}, {"name": "O2", "lag": 0, "active": -1, "filter_subject": "b.2"}]
    assert await count_is(js, "S", 2)
    await js.publish("s.own", b"own")
    await js.publish("a.2", b"a2", headers={"Nats-Msg-Id": "same"})  # a duplicate within S's window
    await js.publish("a.3", b"a3")
    assert await count_is(js, "S", 4)
    msgs = [await raw_msg(nc, "S", s) for s in range(1, 5)]
    assert sorted(m["data"] for m in msgs) == [b"a1", b"a3", b"b2", b"own"]
    ident1 = identity((await req(nc, "$JS.API.STREAM.INFO.O1"))["created"])
    ident2 = identity((await req(nc, "$JS.API.STREAM.INFO.O2"))["created"])
    by_data = {m["data"]: m for m in msgs}
    assert by_data[b"a1"]["hdrs"] == (b"NATS/1.0\r\nNats-Msg-Id: same\r\nNats-Stream-Source: O1 1 > > a.1 "
                                      + ident1.encode() + b"\r\n\r\n")
    assert by_data[b"b2"]["hdrs"] == b"NATS/1.0\r\nNats-Stream-Source: O2 2 b.2 > b.2 " + ident2.encode() + b"\r\n\r\n"
    assert by_data[b"own"]["hdrs"] == b""
    info = await req(nc, "$JS.API.STREAM.INFO.S")
    s1, s2 = sorted(info["sources"], key=lambda x: x["name"])
    # "seq" (2.15): how far in its origin a source got; nats-server's count
    # lags behind after a duplicate (docs/compatibility.md), so only its presence is compared
    assert (s1["name"], s1["lag"], list(s1)) == ("O1", 0, ["name", "lag", "seq", "active"])
    assert s1["seq"] > 0 and 0 <= s1["active"] < 5 * 10**9
    assert (s2["name"], s2["seq"], s2["filter_subject"]) == ("O2", 2, "b.2")


async def test_sources_added_changed_and_removed(nc, js):
    await js.add_stream(name="O1", subjects=["a.>"], storage="memory")
    await js.add_stream(name="O2", subjects=["b.>"], storage="memory")
    await js.publish("a.1", b"a1")
    await js.publish("b.1", b"b1")
    await js.add_stream(name="S", storage="memory", sources=[api.StreamSource(name="O1")])
    assert await count_is(js, "S", 1)
    cfg = (await js.stream_info("S")).config
    await js.update_stream(cfg.evolve(sources=[api.StreamSource(name="O1"), api.StreamSource(name="O2")]))
    assert await count_is(js, "S", 2)
    await js.update_stream(cfg.evolve(sources=[api.StreamSource(name="O2")]))

    async def o1_unfed():  # its source's consumer on O1 is gone: nothing published there after is copied
        return (await js.stream_info("O1")).state.consumer_count == 0
    assert await wait_for(o1_unfed, 15)
    await js.publish("a.2", b"a2")
    await js.publish("b.2", b"b2")
    assert await count_is(js, "S", 3)
    assert (await js.stream_info("S")).state.messages == 3
    assert [s["name"] for s in (await req(nc, "$JS.API.STREAM.INFO.S"))["sources"]] == ["O2"]
    # a changed filter is a new source: it starts over from the origin's beginning
    await js.update_stream(cfg.evolve(sources=[api.StreamSource(name="O2", filter_subject="b.1")]))
    assert await count_is(js, "S", 4)
    assert (await raw_msg(nc, "S", 4))["data"] == b"b1"


async def test_kv_buckets_from_sources_and_mirrors(nc, js):
    kv = await js.create_key_value(bucket="A", history=5)
    await kv.put("k1", b"v1")
    await kv.put("k2", b"v2")
    await kv.put("k1", b"v1b")
    await kv.delete("k2")
    # a sourced bucket and a mirrored one, both mapped onto their own $KV subjects
    await js.add_stream(name="KV_B", subjects=["$KV.B.>"], max_msgs_per_subject=5, allow_rollup_hdrs=True,
                        deny_delete=True, discard="new", allow_direct=False,
                        sources=[api.StreamSource(name="KV_A", subject_transforms=[
                            api.SubjectTransform(src="$KV.A.>", dest="$KV.B.>")])])
    await js.add_stream(name="KV_C", max_msgs_per_subject=5, allow_rollup_hdrs=True, deny_delete=True,
                        discard="new", mirror=api.StreamSource(name="KV_A", subject_transforms=[
                            api.SubjectTransform(src="$KV.A.>", dest="$KV.C.>")]))
    assert await count_is(js, "KV_B", 4)
    assert await count_is(js, "KV_C", 4)
    for bucket in ("B", "C"):
        b = await js.key_value(bucket)
        assert (await b.get("k1")).value == b"v1b"
        assert [e.value for e in await listing(lambda: b.history("k1"))] == [b"v1", b"v1b"]
        with pytest.raises(Exception):
            await b.get("k2")  # deleted in A: deleted here too
    b = await js.key_value("B")
    assert await listing(b.keys) == ["k1"]
    await kv.put("k3", b"v3")

    async def arrived():
        try:
            return (await b.get("k3")).value == b"v3"
        except Exception:
            return False
    assert await wait_for(arrived)
    assert (await (await js.key_value("C")).get("k3")).revision == 5  # the mirror keeps A's revisions


# -- restarts ------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["restart", "kill"])
async def test_mirror_and_sources_catch_up_after_restart(server, how):
    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="O", subjects=["o.>"])
    for i in range(3):
        await js.publish("o.a", str(i).encode(), headers={"Nats-Msg-Id": f"m{i}"})
    await js.add_stream(name="M", mirror=api.StreamSource(name="O"))
    await js.add_stream(name="S", duplicate_window=60, sources=[api.StreamSource(name="O")])
    assert await count_is(js, "M", 3) and await count_is(js, "S", 3)
    # a time to pass, not a state: the file stores' sync interval (1 s here,
    # on nats-server 2 min but all written) before a SIGKILL
    await asyncio.sleep(1.5)
    await nc.close()
    server.bounce(how)
    nc = await connect(server.url)
    js = nc.jetstream()
    for i in range(3, 5):
        await js.publish("o.a", str(i).encode(), headers={"Nats-Msg-Id": f"m{i}"})
    assert await count_is(js, "M", 5, timeout=15)
    assert await count_is(js, "S", 5, timeout=15)
    # nothing copied twice: a sentinel after them, copied in order, comes last
    await js.publish("o.a", b"5", headers={"Nats-Msg-Id": "m5"})
    assert await count_is(js, "S", 6, timeout=15)
    assert await count_is(js, "M", 6, timeout=15)
    assert [(await raw_msg(nc, "S", s))["data"] for s in range(1, 7)] == [b"0", b"1", b"2", b"3", b"4", b"5"]
    si = await js.stream_info("M")
    assert (si.state.first_seq, si.state.last_seq) == (1, 6)
    assert (await js.stream_info("S")).config.sources[0].name == "O"
    await nc.close()


async def test_sourcing_from_workqueue_and_interest_streams(js):
    """A source's consumer on its origin holds interest and never acks: a
    workqueue keeps what was sourced, an interest stream keeps what the
    source matches until the source goes, and both count it as a consumer."""
    await js.add_stream(name="WQ", subjects=["wq.>"], retention="workqueue", storage="memory")
    await js.add_stream(name="IN", subjects=["in.>"], retention="interest", storage="memory")
    for _ in range(3):
        await js.publish("wq.a", b"w")
        await js.publish("wq.b", b"w")
        await js.publish("in.a", b"i")
    assert (await js.stream_info("IN")).state.messages == 0  # no interest yet: dropped
    await js.add_stream(name="SW", storage="memory", sources=[api.StreamSource(name="WQ", filter_subject="wq.a")])
    await js.add_stream(name="SI", storage="memory", sources=[api.StreamSource(name="IN")])
    assert await count_is(js, "SW", 3)

    async def set_up():  # nats-server sets its sourcing consumers up in the background
        return (await js.stream_info("IN")).state.consumer_count == 1
    assert await wait_for(set_up)
    wq, inn = await js.stream_info("WQ"), await js.stream_info("IN")
    assert (wq.state.messages, wq.state.consumer_count, inn.state.messages, inn.state.consumer_count) == (6, 1, 0, 1)
    await js.publish("in.a", b"i2")
    await js.publish("wq.a", b"w2")
    assert await count_is(js, "SI", 1) and await count_is(js, "SW", 4)
    assert (await js.stream_info("IN")).state.messages == 1
    assert (await js.stream_info("WQ")).state.messages == 7
    # the sourcing consumer does not make a workqueue's filters clash
    await js.add_consumer("WQ", api.ConsumerConfig(durable_name="c", filter_subject="wq.a"))
    await js.delete_stream("SI")
    await js.publish("in.a", b"i3")
    st = (await js.stream_info("IN")).state
    assert (st.messages, st.first_seq, st.last_seq, st.consumer_count) == (0, 6, 5, 0)


DS = {"name": "c", "deliver_subject": "ds"}
DURABLE_SOURCE_ERRORS = [
    ({"sources": [{"name": "O", "consumer": {"name": "a.b", "deliver_subject": "ds"}}]}, 10215),
    ({"sources": [{"name": "O", "consumer": {"name": "c", "deliver_subject": "ds.*"}}]}, 10215),
    ({"sources": [{"name": "O", "consumer": {"name": "c", "deliver_subject": "ds..x"}}]}, 10215),
    ({"sources": [{"name": "O", "consumer": {"name": "c"}}]}, 10215),
    ({"sources": [{"name": "O", "consumer": {}}]}, 10215),
    ({"sources": [{"name": "O", "consumer": DS, "opt_start_seq": 2}]}, 10215),
    ({"sources": [{"name": "O", "consumer": DS, "opt_start_time": "2026-01-01T00:00:00Z"}]}, 10215),
    ({"sources": [{"name": "O", "consumer": DS, "filter_subject": "o.a"}]}, 10215),
    # the consumer's name is part of the source's identity, its deliver subject is not
    ({"sources": [{"name": "O", "consumer": DS}, {"name": "O", "consumer": dict(DS, deliver_subject="ds2")}]}, 10140),
    ({"sources": [{"name": "O", "consumer": DS, "subject_transforms": [{"src": "o.a", "dest": "a"}]},
                  {"name": "O", "consumer": DS, "subject_transforms": [{"src": "o.b", "dest": "b"}]}]}, 10216),
    ({"mirror": {"name": "O", "consumer": {"name": "a.b", "deliver_subject": "ds"}}}, 10213),
    ({"mirror": {"name": "O", "consumer": DS, "opt_start_seq": 2}}, 10213),
]
DURABLE_TEXTS = {10215: "stream source consumer config is invalid", 10140: "duplicate source configuration detected",
                 10216: "duplicate stream source consumer detected", 10213: "stream mirror consumer config is invalid"}


@pytest.mark.parametrize("cfg,err_code", DURABLE_SOURCE_ERRORS, ids=[f"{e[1]}-{i}" for i, e in enumerate(DURABLE_SOURCE_ERRORS)])
async def test_durable_consumer_source_config_errors(nc, cfg, err_code):
    """A source through a durable consumer of the origin (nats-server 2.14's
    StreamSource.consumer) is checked as nats-server checks it."""
    await req(nc, "$JS.API.STREAM.CREATE.O", {"name": "O", "subjects": ["o.>"]})
    r = await req(nc, "$JS.API.STREAM.CREATE.T", dict(cfg, name="T"))
    assert r["error"] == {"code": 400, "err_code": err_code, "description": DURABLE_TEXTS[err_code]}


async def test_durable_consumer_source_is_taken_and_waits_for_its_consumer(nc):
    """A valid durable-consumer source is taken and echoed; with no consumer
    of that name on the origin, or one not acked by flow control, nothing is
    copied and the source shows no error, lag 0 and never active, as on
    nats-server."""
    await req(nc, "$JS.API.STREAM.CREATE.O", {"name": "O", "subjects": ["o.>"]})
    for i in range(3):
        await nc.request("o.a", b"m%d" % i, timeout=2)
    r = await req(nc, "$JS.API.STREAM.CREATE.T", {"name": "T", "sources": [{"name": "O", "consumer": DS}]})
    assert "error" not in r, r
    assert r["config"]["sources"] == [{"name": "O", "consumer": {"name": "c", "deliver_subject": "ds"}}]
    info = await req(nc, "$JS.API.STREAM.INFO.T")
    assert info["config"]["sources"] == r["config"]["sources"]
    assert info["sources"] == [{"name": "O", "lag": 0, "active": -1}]
    assert info["state"]["messages"] == 0
    # an update keeps it, and an ordinary source of the same origin is another source
    r = await req(nc, "$JS.API.STREAM.UPDATE.T", {"name": "T", "sources": [{"name": "O", "consumer": DS}, {"name": "O"}]})
    assert "error" not in r, r
    assert r["config"]["sources"] == [{"name": "O", "consumer": DS}, {"name": "O"}]
    assert await wait_for(lambda: _messages(nc, "T", 3))


async def test_durable_consumer_source_copies_what_its_consumer_delivers(nc):
    """Through an ack_policy flow_control push consumer of the origin: the
    source copies what the consumer delivers (its filter, from its ack
    floor), with Nats-Stream-Source naming '<origin>:C=<hash>', and acks it
    by the flow control replies; what comes later follows."""
    await req(nc, "$JS.API.STREAM.CREATE.O", {"name": "O", "subjects": ["o.>"]})
    for s in ("o.a", "o.b", "o.a"):
        await nc.request(s, s.encode(), timeout=2)
    r = await req(nc, "$JS.API.CONSUMER.CREATE.O.c", {"stream_name": "O", "config": {
        "durable_name": "c", "deliver_subject": "ds", "ack_policy": "flow_control", "max_ack_pending": 100,
        "filter_subject": "o.a"}})
    assert "error" not in r, r
    r = await req(nc, "$JS.API.STREAM.CREATE.T", {"name": "T", "sources": [{"name": "O", "consumer": DS}]})
    assert "error" not in r, r
    assert await wait_for(lambda: _messages(nc, "T", 2), timeout=10)
    origin = await req(nc, "$JS.API.STREAM.INFO.O")
    ident = identity(origin["created"])
    chash = identity("c")  # (getHash of the consumer's name)
    for seq, oseq in ((1, 1), (2, 3)):
        m = await raw_msg(nc, "T", seq)
        assert (m["subject"], m["data"]) == ("o.a", b"o.a")
        assert m["hdrs"] == f"NATS/1.0\r\nNats-Stream-Source: O:C={chash} {oseq} > > o.a {ident}\r\n\r\n".encode()
    src = (await req(nc, "$JS.API.STREAM.INFO.T"))["sources"][0]
    assert (src["name"], src["lag"], src["seq"]) == ("O", 0, 3) and src["active"] >= 0 and "error" not in src

    async def acked(n: int) -> bool:
        ci = await req(nc, "$JS.API.CONSUMER.INFO.O.c")
        return ci["ack_floor"]["stream_seq"] == n and ci["num_ack_pending"] == 0

    assert await wait_for(lambda: acked(3), timeout=10)  # (the heartbeat's flow control brings the ack)
    await nc.request("o.a", b"later", timeout=2)
    await nc.request("o.b", b"not for it", timeout=2)
    assert await wait_for(lambda: _messages(nc, "T", 3), timeout=10)
    m = await raw_msg(nc, "T", 3)
    assert m["data"] == b"later" and f" 4 > > o.a {ident}".encode() in m["hdrs"]
    assert await wait_for(lambda: acked(4), timeout=10)


async def _messages(nc, stream: str, n: int) -> bool:
    return (await req(nc, f"$JS.API.STREAM.INFO.{stream}"))["state"]["messages"] == n


async def test_durable_consumer_mirror_keeps_sequences_and_times(nc):
    """A mirror through an ack_policy flow_control consumer of the origin:
    taken and waiting while the consumer is missing; then what the consumer
    delivers keeps the origin's sequence (gaps where its filter skips),
    timestamp and headers."""
    await req(nc, "$JS.API.STREAM.CREATE.O", {"name": "O", "subjects": ["o.>"]})
    for s in ("o.a", "o.b", "o.a"):
        await nc.request(s, s.encode(), timeout=2, headers={"H": "1"})
    r = await req(nc, "$JS.API.STREAM.CREATE.M", {"name": "M", "mirror": {"name": "O", "consumer": DS}})
    assert "error" not in r, r
    assert r["config"]["mirror"] == {"name": "O", "consumer": DS}
    assert r["mirror"] == {"name": "O", "lag": 0, "active": -1}
    r = await req(nc, "$JS.API.CONSUMER.CREATE.O.c", {"stream_name": "O", "config": {
        "durable_name": "c", "deliver_subject": "ds", "ack_policy": "flow_control", "max_ack_pending": 100,
        "filter_subject": "o.a"}})
    assert "error" not in r, r
    assert await wait_for(lambda: _messages(nc, "M", 2), timeout=10)
    st = (await req(nc, "$JS.API.STREAM.INFO.M"))["state"]
    assert (st["first_seq"], st["last_seq"], st["num_deleted"]) == (1, 3, 1)
    for seq in (1, 3):
        m, o = await raw_msg(nc, "M", seq), await raw_msg(nc, "O", seq)
        assert m == o
    assert await raw_msg(nc, "M", 2) is None


async def test_durable_consumer_source_after_a_restart(server):
    """After a restart the durable source picks up where it was: nothing it
    holds comes twice, and what was published meanwhile follows."""
    nc = await connect(server.url)
    await req(nc, "$JS.API.STREAM.CREATE.O", {"name": "O", "subjects": ["o.>"]})
    await req(nc, "$JS.API.CONSUMER.CREATE.O.c", {"stream_name": "O", "config": {
        "durable_name": "c", "deliver_subject": "ds", "ack_policy": "flow_control", "max_ack_pending": 100}})
    await req(nc, "$JS.API.STREAM.CREATE.T", {"name": "T", "sources": [{"name": "O", "consumer": DS}]})
    for i in range(3):
        await nc.request("o.a", b"m%d" % i, timeout=2)
    assert await wait_for(lambda: _messages(nc, "T", 3), timeout=10)
    await nc.close()
    server.restart()
    nc = await connect(server.url)
    for i in range(3, 5):
        await nc.request("o.a", b"m%d" % i, timeout=2)
    assert await wait_for(lambda: _messages(nc, "T", 5), timeout=15)
    datas = [(await raw_msg(nc, "T", seq))["data"] for seq in range(1, 6)]
    assert datas == [b"m%d" % i for i in range(5)]

    async def settled() -> bool:  # everything acked by a flow control reply: nothing more will come
        ci = await req(nc, "$JS.API.CONSUMER.INFO.O.c")
        return ci["ack_floor"]["stream_seq"] == 5 and ci["num_ack_pending"] == 0

    assert await wait_for(settled, timeout=10)
    assert (await req(nc, "$JS.API.STREAM.INFO.T"))["state"]["messages"] == 5
    await nc.close()
