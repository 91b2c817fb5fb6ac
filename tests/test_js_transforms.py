"""Stream subject transforms and RePublish (issue 18), differential: the same
assertions on natslab's broker and on nats-server 2.15.1. The mapping
functions (partition's fnv32a buckets included), nats-server's errors for
bad mappings, and the republished messages' headers, KV buckets too."""

from __future__ import annotations

import asyncio
import json

import pytest
from nats.js import api
from nats.js.errors import BadRequestError, NotFoundError

from conftest import eventually


async def req(nc, subject: str, body=None) -> dict:
    data = b"" if body is None else json.dumps(body).encode()
    return json.loads((await nc.request(subject, data, timeout=2)).data)


# what nats-server 2.15.1 stored for each publish, by transform
MAPPINGS = [
    ("m.*.*", "p.{{partition(5,1,2)}}.{{wildcard(2)}}.{{Wildcard(1)}}",
     ["m.alpha.beta", "m.x.y", "m.orders.123"], ["p.0.beta.alpha", "p.2.y.x", "p.4.123.orders"]),
    ("m.*", "p.{{partition(7)}}", ["m.alpha", "m.zz"], ["p.1", "p.3"]),
    ("m.*", "s.{{split(1,-)}}", ["m.a-b-c", "m.-a--b-", "m.abc"], ["s.a.b.c", "s.a.b", "s.abc"]),
    ("m.*", "sl.{{splitFromLeft(1,2)}}.sr.{{SplitFromRight(1,2)}}", ["m.abcdef", "m.a"],
     ["sl.ab.cdef.sr.abcd.ef", "sl.a.sr.a"]),
    ("m.*", "cl.{{sliceFromLeft(1,3)}}.cr.{{slicefromright(1,3)}}", ["m.abcdefg", "m.ab"],
     ["cl.abc.def.g.cr.a.bcd.efg", "cl.ab.cr.ab"]),
    ("m.*", "l.{{left(1,2)}}.r.{{right(1,2)}}", ["m.abcdef", "m.a"], ["l.ab.r.ef", "l.a.r.a"]),
    ("m.*.>", "w.$1.>", ["m.a.b.c", "m.x.y"], ["w.a.b.c", "w.x.y"]),
    ("m.>", "q.{{ partition(3) }}.>", ["m.a.b", "m.c"], ["q.2.a.b", "q.1.c"]),
    ("m.only", "other", ["m.only", "m.not"], ["other", "m.not"]),  # no match: stored as published
]


@pytest.mark.parametrize("src,dest,pubs,want", MAPPINGS, ids=[m[1] for m in MAPPINGS])
async def test_mapping_functions(js, src, dest, pubs, want):
    await js.add_stream(name="X", subjects=["m.>"], storage="memory",
                        subject_transform=api.SubjectTransform(src=src, dest=dest))
    for p in pubs:
        await js.publish(p, b"")
    assert [(await js.get_msg("X", seq)).subject for seq in range(1, len(pubs) + 1)] == want


BAD_TRANSFORMS = [
    ({"src": "foo.*", "dest": "bar.{{wildcard(2)}}"}, 10156,
     "stream transform: invalid mapping destination: wildcard index out of range in {{wildcard(2)}}: [2]"),
    ({"src": "foo.*", "dest": "bar.{{nope(1)}}"}, 10156,
     "stream transform: invalid mapping destination: unknown function in {{nope(1)}}"),
    ({"src": "foo..x", "dest": "bar"}, 10155, "stream transform source: invalid subject foo..x"),
    ({"src": "foo.*", "dest": "bar.*"}, 10156, "stream transform: invalid subject"),
    ({"src": "foo", "dest": "bar.$1"}, 10156,
     "stream transform: invalid mapping destination: wildcard index out of range in $1"),
    ({"src": "foo.>", "dest": "bar"}, 10156, "stream transform: invalid subject"),
    ({"src": "foo.*", "dest": "bar..x"}, 10156, "stream transform: invalid mapping destination: invalid transform"),
    ({"src": "foo.*", "dest": "bar.{{partition(3,a)}}"}, 10156,
     "stream transform: invalid mapping destination: function argument is invalid or in the wrong format in "
     "{{partition(3,a)}}"),
    ({"src": "foo.*", "dest": "b.{{splitFromLeft(1)}}"}, 10156,
     "stream transform: invalid mapping destination: not enough arguments passed to the function in "
     "{{splitFromLeft(1)}}"),
    ({"src": "foo.*", "dest": "b.{{wildcard(1,2)}}"}, 10156,
     "stream transform: invalid mapping destination: too many arguments passed to the function in "
     "{{wildcard(1,2)}}"),
]


@pytest.mark.parametrize("st,err_code,desc", BAD_TRANSFORMS, ids=[b[0]["dest"] for b in BAD_TRANSFORMS])
async def test_bad_transform_is_refused(nc, st, err_code, desc):
    r = await req(nc, "$JS.API.STREAM.CREATE.T", {"name": "T", "subjects": ["foo.>"], "subject_transform": st})
    assert r["error"] == {"code": 400, "err_code": err_code, "description": desc}


async def test_transform_config_echo(nc):
    for st in ({"src": "", "dest": "bar.>"}, {"src": "foo.*", "dest": ""}, {"src": "foo.*", "dest": "b.{{split(1,.)}}"}):
        r = await req(nc, "$JS.API.STREAM.CREATE.T", {"name": "T", "subjects": ["foo.>"], "storage": "memory",
                                                       "subject_transform": st})
        assert r["config"]["subject_transform"] == st
        await req(nc, "$JS.API.STREAM.DELETE.T")


async def test_subject_transforms_nats_py(nc, js):
    """nats.py's test_subject_transforms, the stream half (the sourcing half is in test_js_sourcing)."""
    await js.add_stream(name="TRANSFORMS", subjects=["test", "foo"],
                        subject_transform=api.SubjectTransform(src=">", dest="transformed.>"))
    for i in range(10):
        await js.publish("test", f"{i}".encode())
    psub = await js.pull_subscribe("test")
    assert (await psub.consumer_info()).num_pending == 0
    with pytest.raises(asyncio.TimeoutError):
        await psub.fetch(1, timeout=0.5)
    with pytest.raises(NotFoundError):
        await js.pull_subscribe("transformed.>")  # the stream's subjects are what lookups see
    psub = await js.pull_subscribe("transformed.test", stream="TRANSFORMS")
    assert (await psub.consumer_info()).num_pending == 10
    msgs = await psub.fetch(10, timeout=2)
    assert [(m.subject, m.data) for m in msgs[:1]] == [("transformed.test", b"0")]
    assert msgs[5].data == b"5"


async def test_transform_on_update(nc, js):
    await js.add_stream(name="U", subjects=["u.>"], storage="memory")
    await js.publish("u.a", b"1")
    await js.update_stream(api.StreamConfig(name="U", subjects=["u.>"], storage="memory",
                                            subject_transform=api.SubjectTransform(src="u.*", dest="v.{{wildcard(1)}}")))
    await js.publish("u.b", b"2")
    await js.update_stream(api.StreamConfig(name="U", subjects=["u.>"], storage="memory"))
    await js.publish("u.c", b"3")
    assert [(await js.get_msg("U", s)).subject for s in (1, 2, 3)] == ["u.a", "v.b", "u.c"]


# -- republish --------------------------------------------------------------------

BAD_REPUBLISH = [
    ({"src": "a.>", "dest": "a.>"}, 500, 10052, "stream configuration for republish destination forms a cycle"),
    ({"src": "q.*", "dest": "z.{{wildcard(2)}}"}, 500, 10052,
     "stream configuration for republish with transform from 'q.*' to 'z.{{wildcard(2)}}' not valid"),
]


@pytest.mark.parametrize("rp,code,err_code,desc", BAD_REPUBLISH, ids=["cycle", "bad-transform"])
async def test_bad_republish_is_refused(nc, rp, code, err_code, desc):
    r = await req(nc, "$JS.API.STREAM.CREATE.R", {"name": "R", "subjects": ["a.>"], "republish": rp})
    assert r["error"] == {"code": code, "err_code": err_code, "description": desc}


async def test_republish_config_echo(nc):
    r = await req(nc, "$JS.API.STREAM.CREATE.R", {"name": "R", "subjects": ["a.>"], "storage": "memory",
                                                   "republish": {"dest": "x.>"}})
    assert r["config"]["republish"] == {"src": ">", "dest": "x.>"}
    await req(nc, "$JS.API.STREAM.DELETE.R")
    # '>' to '>' with a transform of the only subject: the transformed subject is republished
    r = await req(nc, "$JS.API.STREAM.CREATE.R", {"name": "R", "subjects": ["a.>"], "storage": "memory",
                                                   "subject_transform": {"src": "a.>", "dest": "b.>"},
                                                   "republish": {"src": ">", "dest": ">", "headers_only": True}})
    assert r["config"]["republish"] == {"src": "b.>", "dest": "b.>", "headers_only": True}


async def test_republish_headers(nc, js):
    await js.add_stream(name="RP", subjects=["rp.>"], storage="memory",
                        republish=api.RePublish(src="rp.*", dest="out.{{wildcard(1)}}"))
    sub = await nc.subscribe("out.>")
    await nc.flush()
    await nc.flush()
    await js.publish("rp.a", b"one", headers={"X-Mine": "1"})
    await js.publish("rp.a", b"two")
    await js.publish("rp.b.c", b"not republished")  # rp.* does not match
    await js.publish("rp.b", b"three")
    got = [await sub.next_msg(timeout=2) for _ in range(3)]
    with pytest.raises(Exception):
        await sub.next_msg(timeout=0.3)
    assert [(m.subject, m.data) for m in got] == [("out.a", b"one"), ("out.a", b"two"), ("out.b", b"three")]
    h = got[0].headers
    assert (h["X-Mine"], h["Nats-Stream"], h["Nats-Subject"], h["Nats-Sequence"], h["Nats-Last-Sequence"]) == (
        "1", "RP", "rp.a", "1", "0")
    stored = await req(nc, "$JS.API.STREAM.MSG.GET.RP", {"seq": 1})
    assert h["Nats-Time-Stamp"] == stored["message"]["time"]
    assert "Nats-Msg-Size" not in h
    assert (got[1].headers["Nats-Sequence"], got[1].headers["Nats-Last-Sequence"]) == ("2", "1")
    assert (got[2].headers["Nats-Sequence"], got[2].headers["Nats-Last-Sequence"]) == ("4", "0")


async def test_republish_into_another_stream(nc, js):
    """Republished messages are ordinary publishes: another stream stores them."""
    await js.add_stream(name="A", subjects=["a.>"], storage="memory", republish=api.RePublish(src=">", dest="b.>"))
    await js.add_stream(name="B", subjects=["b.>"], storage="memory")
    await js.publish("a.x", b"hi")

    async def stored():
        return (await js.stream_info("B")).state.messages == 1
    assert await eventually(stored)
    m = await js.get_msg("B", 1)
    assert (m.subject, m.data, m.headers["Nats-Stream"], m.headers["Nats-Sequence"]) == ("b.a.x", b"hi", "A", "1")


async def test_kv_republish(nc, js):
    """nats.py's test_kv_republish."""
    kv = await js.create_key_value(bucket="TEST_UPDATE", republish=api.RePublish(src=">", dest="bar.>"))
    assert (await js.stream_info("KV_TEST_UPDATE")).config.republish is not None
    sub = await nc.subscribe("bar.>")
    await nc.flush()
    await kv.put("hello.world", b"Hello World!")
    msg = await sub.next_msg(timeout=2)
    assert msg.subject == "bar.$KV.TEST_UPDATE.hello.world"
    assert msg.data == b"Hello World!"
    assert msg.headers.get("Nats-Msg-Size") is None
    await sub.unsubscribe()
    kv = await js.create_key_value(bucket="TEST_UPDATE_HEADERS",
                                   republish=api.RePublish(src=">", dest="quux.>", headers_only=True))
    sub = await nc.subscribe("quux.>")
    await nc.flush()
    await kv.put("hello.world", b"Hello World!")
    msg = await sub.next_msg(timeout=2)
    assert msg.data == b""
    assert (msg.headers["Nats-Sequence"], msg.headers["Nats-Msg-Size"], msg.headers["Nats-Stream"]) == (
        "1", "12", "KV_TEST_UPDATE_HEADERS")


@pytest.mark.parametrize("how", ["restart", "kill"])
async def test_transform_and_republish_survive_restart(server, how):
    from conftest import connect

    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="P", subjects=["p.>"],
                        subject_transform=api.SubjectTransform(src="p.*", dest="q.{{wildcard(1)}}"),
                        republish=api.RePublish(src="q.*", dest="out.{{wildcard(1)}}", headers_only=True))
    await js.publish("p.a", b"before")
    cfg = (await req(nc, "$JS.API.STREAM.INFO.P"))["config"]
    await asyncio.sleep(1.5)  # a time to pass, not a state: past the file store's sync interval
    await nc.close()
    server.bounce(how)
    nc = await connect(server.url)
    js = nc.jetstream()
    assert (await req(nc, "$JS.API.STREAM.INFO.P"))["config"] == cfg
    sub = await nc.subscribe("out.>")
    await nc.flush()
    await nc.flush()
    await js.publish("p.a", b"after!")
    msg = await sub.next_msg(timeout=2)
    assert (msg.subject, msg.data, msg.headers["Nats-Subject"], msg.headers["Nats-Sequence"],
            msg.headers["Nats-Last-Sequence"], msg.headers["Nats-Msg-Size"]) == ("out.a", b"", "q.a", "2", "1", "6")
    assert [(await js.get_msg("P", s)).subject for s in (1, 2)] == ["q.a", "q.a"]
    await nc.close()
