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


async def test_sourced_counters_add_up(nc):
    """ADR-49's aggregate counter: two counter streams sourced (with subject
    transforms) into a third on one subject. The copies' Nats-Incr is the
    change since that origin's last total, Nats-Counter-Sources keeps each
    origin's total and goes on with local increments; a stream without
    counters stores the copies as they are."""
    import asyncio

    for n in ("C1", "C2"):
        await req(nc, f"$JS.API.STREAM.CREATE.{n}", {"name": n, "subjects": [n.lower() + ".>"],
                                                     "allow_msg_counter": True})
    r = await req(nc, "$JS.API.STREAM.CREATE.AGG", {
        "name": "AGG", "subjects": ["t.>"], "allow_msg_counter": True,
        "sources": [{"name": "C1", "subject_transforms": [{"src": "c1.>", "dest": "t.>"}]},
                    {"name": "C2", "subject_transforms": [{"src": "c2.>", "dest": "t.>"}]}]})
    assert "error" not in r
    await req(nc, "$JS.API.STREAM.CREATE.PLAIN", {"name": "PLAIN", "subjects": ["plain.>"], "sources": [{"name": "C1"}]})

    async def settled(stream: str, messages: int) -> None:
        for _ in range(100):
            if (await req(nc, f"$JS.API.STREAM.INFO.{stream}"))["state"]["messages"] >= messages:
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"{stream} did not reach {messages} messages")

    def masked(hdr: bytes) -> bytes:  # the source identity is a hash of the server's id
        lines = [ln.rsplit(b" ", 1)[0] if ln.startswith(b"Nats-Stream-Source:") else ln for ln in hdr.split(b"\r\n")]
        return b"\r\n".join(lines)

    for n, (subject, by) in enumerate((("c1.a", "5"), ("c2.a", "2"), ("c1.a", "3")), 1):
        await incr(nc, subject, by)
        await settled("AGG", n)
    hdr, body = await last(nc, "AGG", "t.a")
    assert body == b'{"val":"10"}'
    assert masked(hdr) == (b'NATS/1.0\r\nNats-Incr: 3\r\nNats-Stream-Source: C1 2 c1.> t.> c1.a\r\n'
                           b'Nats-Counter-Sources: {"C1":{"c1.a":"8"},"C2":{"c2.a":"2"}}\r\n\r\n')
    # a local increment carries the sources on
    assert await incr(nc, "t.a", "-4") == {"stream": "AGG", "seq": 4, "val": "6"}
    hdr, body = await last(nc, "AGG", "t.a")
    assert hdr == b'NATS/1.0\r\nNats-Incr: -4\r\nNats-Counter-Sources: {"C1":{"c1.a":"8"},"C2":{"c2.a":"2"}}\r\n\r\n'
    # the next copy from C1 adds only its change
    await incr(nc, "c1.a", "1")
    await settled("AGG", 5)
    hdr, body = await last(nc, "AGG", "t.a")
    assert body == b'{"val":"7"}' and b"Nats-Incr: 1\r\n" in hdr and b'"C1":{"c1.a":"9"}' in hdr
    await settled("PLAIN", 3)
    hdr, body = await last(nc, "PLAIN", "c1.a")
    assert body == b'{"val":"9"}' and masked(hdr) == b"NATS/1.0\r\nNats-Incr: 1\r\nNats-Stream-Source: C1 3 > > c1.a\r\n\r\n"


@pytest.mark.parametrize("extra, want", [
    ({"allow_msg_counter": True}, (400, 10173, "stream mirrors can not also calculate counters")),
    ({"allow_atomic": True}, (400, 10198, "stream mirrors can not also use atomic publishing")),
    ({"allow_batched": True}, (400, 10209, "stream mirrors can not also use batch publishing")),
    ({"allow_msg_schedules": True}, (400, 10186, "stream mirrors can not also schedule messages")),
])
async def test_mirrors_refuse_the_publish_features(nc, extra, want):
    """A mirror keeps its origin's messages as they are; a source may not
    feed a stream with schedules (at create or update); counters and
    batches are fine on a sourcing stream."""
    await req(nc, "$JS.API.STREAM.CREATE.O", {"name": "O", "subjects": ["o.>"]})
    assert err(await req(nc, "$JS.API.STREAM.CREATE.M", {"name": "M", "mirror": {"name": "O"}, **extra})) == want
    cfg = {"name": "S", "subjects": ["s.>"], "sources": [{"name": "O"}], **extra}
    r = await req(nc, "$JS.API.STREAM.CREATE.S", cfg)
    if "allow_msg_schedules" in extra:
        assert err(r) == (400, 10187, "stream source can not also schedule messages")
        await req(nc, "$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"], **extra})
        assert err(await req(nc, "$JS.API.STREAM.UPDATE.S", cfg)) == \
            (400, 10187, "stream source can not also schedule messages")
    else:
        assert "error" not in r
