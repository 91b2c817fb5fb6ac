"""Message counters (ADR-49, ``allow_msg_counter``), differential: the same
assertions hold on natslab's broker and on nats-server 2.15.1. Increments go
out as plain requests with a ``Nats-Incr`` header (nats-py has no counter
API); the PubAck carries ``val`` and the stored body is ``{"val":"N"}``."""

from __future__ import annotations

import base64
import json

import pytest

from conftest import connect


async def req(nc, subject: str, body=b"", headers=None) -> dict:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    msg = await nc.request(subject, data, timeout=2, headers=headers)
    return json.loads(msg.data)


def err(resp: dict) -> tuple[int, int, str]:
    e = resp["error"]
    return e["code"], e["err_code"], e["description"]


async def incr(nc, subject: str, by: str, **extra) -> dict:
    return await req(nc, subject, headers={"Nats-Incr": by, **extra})


async def last(nc, stream: str, subject: str) -> tuple[bytes, bytes]:
    m = (await req(nc, f"$JS.API.STREAM.MSG.GET.{stream}", {"last_by_subj": subject}))["message"]
    return base64.b64decode(m.get("hdrs", "")), base64.b64decode(m.get("data", ""))


COUNTER = {"name": "C", "subjects": ["c.>"], "allow_msg_counter": True}


@pytest.mark.parametrize("extra, description", [
    ({"discard": "new"}, "counter stream cannot use discard new"),
    ({"allow_msg_ttl": True}, "counter stream cannot use message TTLs"),
    ({"allow_msg_schedules": True}, "counter stream cannot use message schedules"),
    ({"retention": "workqueue"}, "counter stream can only use limits retention"),
    ({"retention": "interest"}, "counter stream can only use limits retention"),
])
async def test_counter_config_conflicts(nc, extra, description):
    r = await req(nc, "$JS.API.STREAM.CREATE.C", dict(COUNTER, **extra))
    assert err(r) == (500, 10052, description)


async def test_counter_config_and_update(nc):
    r = await req(nc, "$JS.API.STREAM.CREATE.C", COUNTER)
    assert r["config"]["allow_msg_counter"] is True
    assert r["config"]["metadata"]["_nats.req.level"] == "2"
    r = await req(nc, "$JS.API.STREAM.UPDATE.C", {"name": "C", "subjects": ["c.>"]})
    assert err(r) == (500, 10052, "stream configuration update can not change message counter setting")
    await req(nc, "$JS.API.STREAM.CREATE.P", {"name": "P", "subjects": ["p.>"]})
    r = await req(nc, "$JS.API.STREAM.UPDATE.P", {"name": "P", "subjects": ["p.>"], "allow_msg_counter": True})
    assert err(r) == (500, 10052, "stream configuration update can not change message counter setting")
    # a subject delete marker TTL turns message TTLs on after the counter check, as on nats-server
    r = await req(nc, "$JS.API.STREAM.CREATE.D", {"name": "D", "subjects": ["d.>"], "allow_msg_counter": True,
                                                  "subject_delete_marker_ttl": 10**9})
    assert r["config"]["allow_msg_ttl"] is True and r["config"]["allow_msg_counter"] is True


async def test_counter_values_pub_ack_and_body(nc):
    await req(nc, "$JS.API.STREAM.CREATE.C", COUNTER)
    assert await incr(nc, "c.a", "+1") == {"stream": "C", "seq": 1, "val": "1"}
    assert await incr(nc, "c.a", "41") == {"stream": "C", "seq": 2, "val": "42"}
    assert await incr(nc, "c.b", "-5") == {"stream": "C", "seq": 3, "val": "-5"}
    assert await incr(nc, "c.a", "-2") == {"stream": "C", "seq": 4, "val": "40"}
    assert await incr(nc, "c.a", "0") == {"stream": "C", "seq": 5, "val": "40"}
    big = "123456789012345678901234567890"
    assert await incr(nc, "c.big", big) == {"stream": "C", "seq": 6, "val": big}
    assert (await incr(nc, "c.big", "+" + big))["val"] == str(2 * int(big))
    assert (await incr(nc, "c.a", "+0007"))["val"] == "47"
    # the raw PubAck bytes, as nats-server formats them
    msg = await nc.request("c.a", b"", timeout=2, headers={"Nats-Incr": "1"})
    assert msg.data == b'{"stream":"C","seq":9,"val":"48"}'
    hdr, body = await last(nc, "C", "c.a")
    assert hdr == b"NATS/1.0\r\nNats-Incr: 1\r\n\r\n" and body == b'{"val":"48"}'
    hdr, body = await last(nc, "C", "c.b")
    assert hdr == b"NATS/1.0\r\nNats-Incr: -5\r\n\r\n" and body == b'{"val":"-5"}'
    # a duplicate increment counts once
    assert (await incr(nc, "c.d", "5", **{"Nats-Msg-Id": "m1"})) == {"stream": "C", "seq": 10, "val": "5"}
    assert (await incr(nc, "c.d", "5", **{"Nats-Msg-Id": "m1"})) == {"stream": "C", "seq": 10, "duplicate": True}
    assert (await incr(nc, "c.d", "1"))["val"] == "6"
    # a purged subject starts again from zero
    assert (await req(nc, "$JS.API.STREAM.PURGE.C", {"filter": "c.d"}))["purged"] == 2
    assert (await incr(nc, "c.d", "1"))["val"] == "1"


async def test_counter_refusals(nc):
    await req(nc, "$JS.API.STREAM.CREATE.C", COUNTER)
    await req(nc, "$JS.API.STREAM.CREATE.P", {"name": "P", "subjects": ["p.>"]})
    invalid = (400, 10171, "message counter increment is invalid")
    cases = [
        ("c.a", b"x", {"Nats-Incr": "1"}, (400, 10170, "message counter has payload")),
        ("c.a", b"", {"Nats-Incr": "1.5"}, invalid),
        ("c.a", b"", {"Nats-Incr": "a"}, invalid),
        ("c.a", b"", {"Nats-Incr": "+-1"}, invalid),
        ("c.a", b"", {"Nats-Incr": "-"}, invalid),
        ("c.a", b"", {"Nats-Incr": "0x10"}, invalid),
        ("c.a", b"", None, (400, 10169, "message counter increment is missing")),
        ("c.a", b"x", None, (400, 10169, "message counter increment is missing")),
        ("c.a", b"", {"X-Other": "1"}, (400, 10169, "message counter increment is missing")),
        ("c.a", b"", {"Nats-Incr": ""}, (400, 10169, "message counter increment is missing")),
        ("c.a", b"", {"Nats-Incr": "1", "Nats-Rollup": "sub"}, invalid),
        ("c.a", b"", {"Nats-Incr": "1", "Nats-Expected-Stream": "C"}, invalid),
        ("c.a", b"", {"Nats-Incr": "1", "Nats-Expected-Last-Sequence": "0"}, invalid),
        ("c.a", b"", {"Nats-Incr": "1", "Nats-Expected-Last-Subject-Sequence": "0"}, invalid),
        ("c.a", b"", {"Nats-Incr": "1", "Nats-Expected-Last-Msg-Id": "x"}, invalid),
        ("c.a", b"", {"Nats-Incr": "1", "Nats-Stream-Source": "X"},
         (400, 10227, "message stream source header is not allowed")),
        ("c.a", b"", {"Nats-Incr": "1", "Nats-TTL": "5"}, (400, 10166, "per-message TTL is disabled")),
        ("p.a", b"", {"Nats-Incr": "1"}, (400, 10168, "message counters is disabled")),
        ("p.a", b"", {"Nats-Incr": "x"}, invalid),  # checked on every stream
    ]
    for subject, body, hdrs, want in cases:
        r = await req(nc, subject, body, headers=hdrs)
        assert err(r) == want, (subject, body, hdrs, r)
        assert r["seq"] == 0 and r["stream"] == subject[0].upper()
    # nothing was stored; an empty Nats-Incr on a plain stream is an ordinary message
    assert (await req(nc, "$JS.API.STREAM.INFO.C"))["state"]["messages"] == 0
    assert await req(nc, "p.a", b"", headers={"Nats-Incr": ""}) == {"stream": "P", "seq": 1}
    assert await incr(nc, "c.a", "3") == {"stream": "C", "seq": 1, "val": "3"}


async def test_counter_max_msg_size_counts_the_new_body(nc):
    hdr_len = len(b"NATS/1.0\r\nNats-Incr: 1\r\n\r\n")
    cfg = dict(COUNTER, max_msg_size=hdr_len + len(b'{"val":"9"}'))
    await req(nc, "$JS.API.STREAM.CREATE.C", cfg)
    for i in range(1, 10):
        assert (await incr(nc, "c.a", "1"))["val"] == str(i)
    # the tenth would store {"val":"10"}: one byte too many
    assert err(await incr(nc, "c.a", "1")) == (400, 10054, "message size exceeds maximum allowed")


@pytest.mark.parametrize("how", ["restart", "kill"])
async def test_counter_values_survive_restart(server, how):
    nc = await connect(server.url)
    await req(nc, "$JS.API.STREAM.CREATE.C", COUNTER)
    for _ in range(3):
        await incr(nc, "c.a", "+10")
    await nc.close()
    server.restart() if how == "restart" else (server.kill(), server.start())
    nc = await connect(server.url)
    try:
        info = await req(nc, "$JS.API.STREAM.INFO.C")
        assert info["config"]["allow_msg_counter"] is True and info["state"]["messages"] == 3
        assert await incr(nc, "c.a", "-1") == {"stream": "C", "seq": 4, "val": "29"}
        assert await incr(nc, "c.b", "1") == {"stream": "C", "seq": 5, "val": "1"}
    finally:
        await nc.close()
