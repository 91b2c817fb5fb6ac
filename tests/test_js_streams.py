"""JetStream streams (issue 3), differential: the same assertions hold on
natslab's broker and on nats-server 2.15.1. Covers the stream API, the publish
path (PubAck, dedupe, expected-* headers, rollup, TTL, limits and discard) and
the seed walkthrough's stream numbers."""

from __future__ import annotations

import asyncio
import json

import pytest
from nats.errors import NoRespondersError, TimeoutError as NatsTimeout
from nats.js import api
from nats.js.errors import NoStreamResponseError, NotFoundError

from conftest import settled


async def req(nc, subject: str, body=None, timeout: float = 2.0, headers=None) -> dict:
    data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    msg = await nc.request(subject, data, timeout=timeout, headers=headers)
    return json.loads(msg.data)


async def lines_until(c, n: int, timeout: float = 5.0) -> list[str]:
    """The lines a raw client reads, PING after PING, until there are at
    least ``n`` or ``timeout`` runs out: nats-server sends PubAcks from the
    stream's own goroutine, so they can come after the PONG to a PING sent
    behind the publishes."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    lines = await c.read_until_pong()
    while len(lines) < n and loop.time() < deadline:
        await asyncio.sleep(0.02)
        lines += await c.read_until_pong()
    return lines


def err(resp: dict) -> tuple[int, int, str]:
    e = resp["error"]
    assert set(e) == {"code", "err_code", "description"}
    return e["code"], e["err_code"], e["description"]


async def pub_raw(nc, subject, data=b"", headers=None) -> dict:
    msg = await nc.request(subject, data, timeout=2, headers=headers)
    return json.loads(msg.data)


# -- the seed walkthrough -----------------------------------------------------------

async def test_seed_orders_stream(nc, js):
    await js.add_stream(name="ORDERS", subjects=["orders.>"], storage="file", retention="limits", discard="old",
                        max_msgs=1000, max_age=24 * 3600, max_msgs_per_subject=100, duplicate_window=120)
    for i in (1, 2, 3):
        ack = await js.publish("orders.new", f"order-{i} payload".encode())
        assert (ack.stream, ack.seq) == ("ORDERS", i)
    await js.publish("orders.eu", b"order-eu-1 payload")
    await nc.publish("core.plain", b"this subject has no stream and no subscriber")
    await nc.flush()
    si = await js.stream_info("ORDERS")
    st = si.state
    assert (st.messages, st.bytes, st.first_seq, st.last_seq, st.consumer_count) == (4, 222, 1, 4, 0)
    raw = await req(nc, "$JS.API.STREAM.INFO.ORDERS")
    assert raw["state"]["num_subjects"] == 2
    assert raw["config"]["max_age"] == 24 * 3600 * 10**9 and raw["config"]["duplicate_window"] == 120 * 10**9
    assert raw["config"]["max_msg_size"] == -1 and raw["config"]["num_replicas"] == 1
    assert raw["config"]["metadata"]["_nats.req.level"] == "0"
    assert raw["cluster"]["leader"]
    names = await req(nc, "$JS.API.STREAM.NAMES")
    assert names["streams"] == ["ORDERS"]
    assert (await req(nc, "$JS.API.STREAM.NAMES", {"subject": "core.plain"}))["streams"] is None
    assert (await req(nc, "$JS.API.STREAM.NAMES", {"subject": "orders.x"}))["streams"] == ["ORDERS"]


async def test_empty_stream_state_and_pub_ack_bytes(nc, js, raw):
    r = await req(nc, "$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"], "storage": "memory"})
    assert r["did_create"] is True
    st = r["state"]
    assert (st["messages"], st["first_seq"], st["last_seq"], st["first_ts"]) == (0, 0, 0, "0001-01-01T00:00:00Z")
    c = await raw()
    await c.send("SUB _in.> 1\r\nPUB s.a _in.1 2\r\nhi\r\nHPUB s.a _in.2 30 30\r\nNATS/1.0\r\nNats-Msg-Id: abc\r\n\r\n\r\n"
                 "HPUB s.a _in.3 30 30\r\nNATS/1.0\r\nNats-Msg-Id: abc\r\n\r\n\r\n")
    lines = await lines_until(c, 6)
    assert lines == ["MSG _in.1 1 22", '{"stream":"S","seq":1}', "MSG _in.2 1 22", '{"stream":"S","seq":2}',
                     "MSG _in.3 1 40", '{"stream":"S","seq":2,"duplicate": true}']
    si = await js.stream_info("S")
    # memory store: 16 + subject + headers + payload
    assert si.state.bytes == (16 + 3 + 2) + (16 + 3 + 30)
    await js.purge_stream("S")
    si = await js.stream_info("S")
    assert (si.state.messages, si.state.first_seq, si.state.last_seq) == (0, 3, 2)


@pytest.mark.parametrize("storage", ["memory", "file"])
async def test_pub_acks_sent_together_reach_every_matching_inbox(nc, js, raw, storage):
    """PubAcks for publishes read together go out together: each still
    reaches every subscription its reply subject matches (a wildcard inbox,
    a literal one beside it, another prefix, none for a longer subject), in
    publish order."""
    await js.add_stream(name="PA", subjects=["pa"], storage=storage)
    c = await raw()
    await c.send("SUB _INBOX.a.* 1\r\nSUB _INBOX.a.5 2\r\nSUB _INBOX.b.* 3\r\n")
    await c.read_until_pong()
    await c.send("".join(f"PUB pa {r} 1\r\nx\r\n" for r in ("_INBOX.a.4", "_INBOX.a.5", "_INBOX.b.1", "_INBOX.a.6", "_INBOX.a.5.x")))
    lines = await lines_until(c, 10)
    heads = [ln for ln in lines if ln.startswith("MSG")]
    assert sorted(heads[1:3]) == ["MSG _INBOX.a.5 1 23", "MSG _INBOX.a.5 2 23"]
    assert [heads[0], heads[3], heads[4]] == ["MSG _INBOX.a.4 1 23", "MSG _INBOX.b.1 3 23", "MSG _INBOX.a.6 1 23"]
    assert [ln for ln in lines if not ln.startswith("MSG")] == ['{"stream":"PA","seq":%d}' % s for s in (1, 2, 2, 3, 4)]


async def test_no_stream_and_unknown_api(nc, js):
    before = await req(nc, "$JS.API.INFO")
    with pytest.raises(NoStreamResponseError):
        await js.publish("nowhere.at.all", b"x")
    with pytest.raises(NatsTimeout):
        await nc.request("$JS.API.FOO.BAR", b"", timeout=0.5)
    with pytest.raises(NatsTimeout):
        await nc.request("$JS.API.STREAM.CREATE.A.B", b"{}", timeout=0.5)
    with pytest.raises(NoRespondersError):
        await nc.request("$JS.API.CONSUMER.MSG.NEXT.NOPE.NOPE", b"", timeout=1)
    info = await req(nc, "$JS.API.INFO")
    # unknown subjects and wrong token counts are not API calls; one of the INFOs is
    assert info["api"]["total"] - before["api"]["total"] == 1 and info["api"]["errors"] == 0


async def test_stream_api_errors(nc, js):
    await js.add_stream(name="A", subjects=["a.>"])
    before = (await req(nc, "$JS.API.INFO"))["api"]
    cases = [
        ("$JS.API.STREAM.INFO.NOPE", None, (404, 10059, "stream not found")),
        ("$JS.API.STREAM.CREATE.X", {"name": "Y"}, (400, 10056, "stream name in subject does not match request")),
        ("$JS.API.STREAM.CREATE.X", b"", (400, 10056, "stream name in subject does not match request")),
        ("$JS.API.STREAM.CREATE.X", {"name": "X", "num_replicas": 3}, (500, 10074, "replicas > 1 not supported in non-clustered mode")),
        ("$JS.API.STREAM.CREATE.X", {"name": "X", "max_age": 5}, (500, 10052, "max age needs to be >= 100ms")),
        ("$JS.API.STREAM.CREATE.B", {"name": "B", "subjects": ["a.b"]}, (400, 10065, "subjects overlap with an existing stream")),
        ("$JS.API.STREAM.CREATE.A", {"name": "A", "subjects": ["a.>"], "max_msgs": 5}, (400, 10058, "stream name already in use with a different configuration")),
        ("$JS.API.STREAM.UPDATE.A", {"name": "A", "subjects": ["a.>"], "storage": "memory"}, (500, 10052, "stream configuration update can not change storage type")),
        ("$JS.API.STREAM.UPDATE.Z", {"name": "Z"}, (404, 10059, "stream not found")),
        ("$JS.API.STREAM.MSG.GET.A", b"", (400, 10003, "bad request")),
        ("$JS.API.STREAM.MSG.GET.A", {"seq": 9}, (404, 10037, "no message found")),
        ("$JS.API.STREAM.PURGE.A", {"seq": 3, "keep": 1}, (400, 10003, "bad request")),
        ("$JS.API.STREAM.CREATE.X", b"{bad", (400, 10025, "invalid JSON: invalid character 'b' looking for beginning of object key string at offset 2")),
    ]
    for subject, body, want in cases:
        assert err(await req(nc, subject, body)) == want, subject
    # idempotent re-create still says did_create
    r = await req(nc, "$JS.API.STREAM.CREATE.A", {"name": "A", "subjects": ["a.>"]})
    assert r["did_create"] is True
    r = await req(nc, "$JS.API.STREAM.PURGE.NOPE")
    assert r["purged"] == 0 and err(r)[1] == 10059
    r = await req(nc, "$JS.API.INFO", headers={"Nats-Required-Api-Level": "9"})
    assert err(r) == (412, 10185, "JetStream minimum api level required")
    info = (await req(nc, "$JS.API.INFO"))["api"]
    assert info["errors"] - before["errors"] == len(cases) + 2
    assert info["total"] - before["total"] == len(cases) + 4  # re-create, purge, level, one INFO


async def test_dedupe_and_expected_headers(nc, js):
    await js.add_stream(name="E", subjects=["e.>"])
    a1 = await js.publish("e.a", b"1", headers={"Nats-Msg-Id": "m1"})
    a2 = await js.publish("e.b", b"2", headers={"Nats-Msg-Id": "m1"})
    assert (a1.seq, a1.duplicate, a2.seq, a2.duplicate) == (1, None, 1, True)
    r = await pub_raw(nc, "e.a", b"x", {"Nats-Expected-Stream": "OTHER"})
    assert err(r) == (400, 10060, "expected stream does not match") and r["stream"] == "E" and r["seq"] == 0
    r = await pub_raw(nc, "e.a", b"x", {"Nats-Expected-Last-Sequence": "5"})
    assert err(r) == (400, 10071, "wrong last sequence: 1")
    r = await pub_raw(nc, "e.a", b"x", {"Nats-Expected-Last-Sequence": "1"})
    assert r == {"stream": "E", "seq": 2}
    r = await pub_raw(nc, "e.a", b"x", {"Nats-Expected-Last-Subject-Sequence": "1"})
    assert err(r) == (400, 10071, "wrong last sequence: 2")
    r = await pub_raw(nc, "e.new", b"x", {"Nats-Expected-Last-Subject-Sequence": "0"})
    assert r["seq"] == 3
    r = await pub_raw(nc, "e.a", b"x", {"Nats-Expected-Last-Msg-Id": "zzz"})
    assert err(r) == (400, 10070, "wrong last msg ID: ")
    await js.publish("e.a", b"y", headers={"Nats-Msg-Id": "m2"})
    r = await pub_raw(nc, "e.a", b"x", {"Nats-Expected-Last-Msg-Id": "m2"})
    assert r["seq"] == 5


async def test_limits_discard_old_and_new(nc, js):
    await js.add_stream(name="OLD", subjects=["old.>"], max_msgs=2, discard="old")
    for i in range(4):
        await js.publish("old.x", str(i).encode())
    st = (await js.stream_info("OLD")).state
    assert (st.messages, st.first_seq, st.last_seq) == (2, 3, 4)

    await js.add_stream(name="NEW", subjects=["new.>"], max_msgs=2, discard="new")
    await js.publish("new.x", b"1")
    await js.publish("new.x", b"2")
    r = await pub_raw(nc, "new.x", b"3")
    assert err(r) == (503, 10077, "maximum messages exceeded")

    await js.add_stream(name="NB", subjects=["nb.>"], max_bytes=100, discard="new")
    await js.publish("nb.x", b"a" * 40)  # 30 + 4 + 40 = 74 bytes in the file store
    r = await pub_raw(nc, "nb.x", b"a" * 40)
    assert err(r) == (503, 10077, "maximum bytes exceeded")

    await js.add_stream(name="PS", subjects=["ps.>"], max_msgs_per_subject=2, discard="new",
                        discard_new_per_subject=True)
    await js.publish("ps.a", b"1")
    await js.publish("ps.a", b"2")
    r = await pub_raw(nc, "ps.a", b"3")
    assert err(r) == (503, 10077, "maximum messages per subject exceeded")
    assert (await js.publish("ps.b", b"1")).seq == 3

    await js.add_stream(name="H", subjects=["h.>"], max_msgs_per_subject=3)
    for i in range(5):
        await js.publish("h.k", str(i).encode())
    await js.publish("h.j", b"j")
    raw = await req(nc, "$JS.API.STREAM.INFO.H", {"subjects_filter": ">", "deleted_details": True})
    st = raw["state"]
    assert (st["messages"], st["first_seq"], st["last_seq"], st["subjects"]) == (4, 3, 6, {"h.k": 3, "h.j": 1})
    assert raw["total"] == 2 and raw["limit"] == 100000

    await js.add_stream(name="SZ", subjects=["sz"], max_msg_size=10)
    r = await pub_raw(nc, "sz", b"12345", {"K": "v"})
    assert err(r) == (400, 10054, "message size exceeds maximum allowed")
    assert (await js.publish("sz", b"1234567890")).seq == 1


async def test_max_age_expiry(nc, js):
    await js.add_stream(name="TTL", subjects=["ttl.>"], max_age=1.0, max_msgs=100)
    loop = asyncio.get_running_loop()
    published = loop.time()  # (their age runs from after this)
    for s in ("a", "b", "c"):
        await js.publish(f"ttl.{s}", b"m")
    assert (await js.stream_info("TTL")).state.messages == 3 or loop.time() - published >= 1

    async def state():
        st = (await js.stream_info("TTL")).state
        return (st.messages, st.first_seq, st.last_seq, st.bytes)
    assert await settled(state, (0, 4, 3, 0)) == (0, 4, 3, 0)
    raw = await req(nc, "$JS.API.STREAM.INFO.TTL")
    assert raw["state"]["first_ts"] == "0001-01-01T00:00:00Z"


async def test_per_message_ttl(nc, js):
    await js.add_stream(name="NT", subjects=["nt"])
    r = await pub_raw(nc, "nt", b"x", {"Nats-TTL": "1s"})
    assert err(r) == (400, 10166, "per-message TTL is disabled")
    await js.add_stream(name="MT", subjects=["mt.>"], allow_msg_ttl=True)
    r = await pub_raw(nc, "mt.a", b"x", {"Nats-TTL": "10ms"})
    assert err(r) == (400, 10165, "invalid per-message TTL")
    await js.publish("mt.a", b"keep")
    assert (await pub_raw(nc, "mt.b", b"x", {"Nats-TTL": "1s"}))["seq"] == 2
    await js.publish("mt.c", b"keep")

    async def state():
        st = (await req(nc, "$JS.API.STREAM.INFO.MT", {"deleted_details": True}))["state"]
        return (st["messages"], st["first_seq"], st["last_seq"], st.get("num_deleted"), st.get("deleted"))
    assert await settled(state, (2, 1, 3, 1, [2])) == (2, 1, 3, 1, [2])


async def test_rollup(nc, js):
    await js.add_stream(name="NR", subjects=["nr.>"])
    r = await pub_raw(nc, "nr.a", b"x", {"Nats-Rollup": "sub"})
    assert err(r) == (500, 10111, "rollup not permitted")
    await js.add_stream(name="R", subjects=["r.>"], allow_rollup_hdrs=True)
    for s in ("r.a", "r.a", "r.b", "r.a"):
        await js.publish(s, b"v")
    r = await pub_raw(nc, "r.a", b"x", {"Nats-Rollup": "bad"})
    assert err(r) == (500, 10111, 'rollup value invalid: "bad"')
    await js.publish("r.a", b"roll", headers={"Nats-Rollup": "sub"})
    st = (await js.stream_info("R")).state
    assert (st.messages, st.first_seq, st.last_seq) == (2, 3, 5)
    await js.publish("r.c", b"all", headers={"Nats-Rollup": "all"})
    st = (await js.stream_info("R")).state
    assert (st.messages, st.first_seq, st.last_seq) == (1, 6, 6)


async def test_purge_get_delete(nc, js):
    await js.add_stream(name="P", subjects=["p.>"])
    for i in range(1, 11):
        await js.publish("p.a" if i % 2 else "p.b", str(i).encode())
    assert (await req(nc, "$JS.API.STREAM.PURGE.P", {"filter": "p.a", "keep": 2}))["purged"] == 3
    assert (await req(nc, "$JS.API.STREAM.PURGE.P", {"seq": 4}))["purged"] == 1
    st = (await js.stream_info("P")).state
    assert (st.messages, st.first_seq, st.last_seq) == (6, 4, 10)
    m = await js.get_msg("P", seq=4)
    assert (m.subject, m.seq, m.data) == ("p.b", 4, b"4")
    m = await js.get_msg("P", subject="p.a")
    assert m.seq == 9
    r = await req(nc, "$JS.API.STREAM.MSG.GET.P", {"seq": 5, "next_by_subj": "p.b"})
    assert r["message"]["seq"] == 6 and r["message"]["data"] == "Ng=="
    r = await req(nc, "$JS.API.STREAM.MSG.GET.P", {"last_by_subj": "p.*"})
    assert r["message"]["seq"] == 10
    assert await js.delete_msg("P", 6)
    r = await req(nc, "$JS.API.STREAM.MSG.DELETE.P", {"seq": 6})
    assert err(r) == (400, 10043, "sequence 6 not found")
    raw = await req(nc, "$JS.API.STREAM.INFO.P", {"deleted_details": True})
    assert raw["state"]["num_deleted"] == 2 and raw["state"]["deleted"] == [5, 6]
    assert err(await req(nc, "$JS.API.STREAM.MSG.DELETE.P", {"seq": 99})) == (500, 10057, "stream store EOF")
    assert err(await req(nc, "$JS.API.STREAM.MSG.DELETE.P", {"seq": 2})) == (500, 10057, "no message found")
    assert err(await req(nc, "$JS.API.STREAM.MSG.DELETE.P", {})) == (400, 10003, "bad request")

    await js.add_stream(name="DP", subjects=["dp"], deny_purge=True, deny_delete=True)
    await js.publish("dp", b"x")
    assert err(await req(nc, "$JS.API.STREAM.PURGE.DP")) == (500, 10110, "stream purge not permitted")
    assert err(await req(nc, "$JS.API.STREAM.MSG.DELETE.DP", {"seq": 1})) == (500, 10057, "message delete not permitted")


async def test_sealed_and_update(nc, js):
    await js.add_stream(name="SE", subjects=["se"], max_age=60)
    await js.publish("se", b"x")
    si = await js.stream_info("SE")
    cfg = si.config
    cfg.sealed = True
    si = await js.update_stream(cfg)
    c = si.config
    assert (c.sealed, c.deny_delete, c.deny_purge, c.max_age, c.discard) == (True, True, True, 0, api.DiscardPolicy.NEW)
    r = await pub_raw(nc, "se", b"y")
    assert err(r) == (400, 10109, "invalid operation on sealed stream")
    # subjects can change on update
    await js.add_stream(name="U", subjects=["u1"])
    await js.update_stream(api.StreamConfig(name="U", subjects=["u1", "u2"], max_msgs=10))
    assert (await js.publish("u2", b"x")).stream == "U"
    assert (await js.stream_info("U")).config.max_msgs == 10


async def test_first_seq_and_direct_get(nc, js):
    r = await req(nc, "$JS.API.STREAM.CREATE.F", {"name": "F", "subjects": ["f.>"], "first_seq": 100,
                                                 "allow_direct": True})
    assert (r["state"]["first_seq"], r["state"]["last_seq"]) == (100, 99)
    assert (await js.publish("f.a", b"hello", headers={"X": "1"})).seq == 100
    m = await js.get_msg("F", seq=100, direct=True)
    assert (m.subject, m.seq, m.data, m.headers["X"]) == ("f.a", 100, b"hello", "1")
    msg = await nc.request("$JS.API.DIRECT.GET.F.f.a", b"", timeout=2)
    assert msg.headers["Nats-Stream"] == "F" and msg.headers["Nats-Sequence"] == "100"
    assert msg.headers["Nats-Subject"] == "f.a" and msg.data == b"hello"
    msg = await nc.request("$JS.API.DIRECT.GET.F", json.dumps({"seq": 1}).encode(), timeout=2)
    assert msg.headers["Status"] == "404" and msg.headers.get("Description") == "Message Not Found"
    await js.add_stream(name="ND", subjects=["nd"])
    with pytest.raises(NoRespondersError):
        await nc.request("$JS.API.DIRECT.GET.ND", json.dumps({"seq": 1}).encode(), timeout=1)


async def test_interest_no_consumers_and_account_info(nc, js):
    await js.add_stream(name="EVENTS", subjects=["events.>"], retention="interest")
    await js.publish("events.a", b"x")
    await js.publish("events.b", b"x")
    st = (await js.stream_info("EVENTS")).state
    assert (st.messages, st.first_seq, st.last_seq) == (0, 3, 2)
    await js.add_stream(name="M", subjects=["m"], storage="memory")
    await js.publish("m", b"12345")
    await js.add_stream(name="FI", subjects=["fi"], max_bytes=1000)
    await js.publish("fi", b"12345")
    ai = await js.account_info()
    assert (ai.memory, ai.storage, ai.streams, ai.consumers) == (16 + 1 + 5, 30 + 2 + 5, 3, 0)
    raw = await req(nc, "$JS.API.INFO")
    assert raw["reserved_storage"] == 1000 and raw["limits"]["max_streams"] == -1
    await js.delete_stream("M")
    with pytest.raises(NotFoundError):
        await js.stream_info("M")
    lst = await req(nc, "$JS.API.STREAM.LIST")
    assert lst["total"] == 2 and [s["config"]["name"] for s in lst["streams"]] == ["EVENTS", "FI"]
    # each entry is a StreamInfo with its own timestamp, and no cluster block
    assert [list(s)[-1] for s in lst["streams"]] == ["ts", "ts"] and not any("cluster" in s for s in lst["streams"])


@pytest.mark.parametrize("storage", ["memory", "file"])
async def test_purge_of_a_new_stream_reports_first_seq_1(nc, js, storage):
    await js.add_stream(name="NEW", subjects=["new.>"], storage=storage)
    assert (await js.stream_info("NEW")).state.first_seq == 0
    for body in (None, {"filter": "new.x"}, {"keep": 1}):
        r = await req(nc, "$JS.API.STREAM.PURGE.NEW", body)
        assert (r["success"], r["purged"]) == (True, 0)
        st = (await js.stream_info("NEW")).state
        assert (st.messages, st.first_seq, st.last_seq) == (0, 1, 0)


@pytest.mark.parametrize("storage", ["memory", "file"])
async def test_purge_to_seq_on_a_new_stream(nc, js, storage):
    """A purge with seq (the store's compact) on a stream that never held
    anything moves first_seq to seq on both stores."""
    await js.add_stream(name="NEW", subjects=["new"], storage=storage)
    r = await req(nc, "$JS.API.STREAM.PURGE.NEW", {"seq": 4})
    assert (r["success"], r["purged"]) == (True, 0)
    st = (await js.stream_info("NEW")).state
    assert (st.messages, st.first_seq, st.last_seq) == (0, 4, 3)
    assert (await js.publish("new", b"x")).seq == 4


async def _raw_reply(c, subject: str, body: bytes, sid: int) -> bytes:
    await c.send(f"PUB {subject} _r.{sid} {len(body)}\r\n".encode() + body + b"\r\n")
    line = await c.readline()
    while line == "PING":
        line = await c.readline()
    parts = line.split()
    assert parts[:2] == ["MSG", f"_r.{sid}"], line
    data = await c.read_exactly(int(parts[-1]) + 2)
    return data[:-2]


async def test_api_reply_bytes_are_go_json(nc, js, raw):
    """Exact reply bytes: Go's encoder escapes <, > and & inside strings."""
    await js.add_stream(name="a&b", subjects=["amp.>"], storage="memory")
    c = await raw()
    await c.send("SUB _r.* 1\r\n")
    got = await _raw_reply(c, "$JS.API.CONSUMER.INFO.a&b.nope", b"", 1)
    assert got == (b'{"type":"io.nats.jetstream.api.v1.consumer_info_response",'
                   b'"error":{"code":404,"err_code":10014,"description":"consumer not found"}}')
    got = await _raw_reply(c, "$JS.API.STREAM.NAMES", b'{"subject":"a.>"}', 2)
    assert got == b'{"type":"io.nats.jetstream.api.v1.stream_names_response","total":0,"offset":0,"limit":1024,"streams":null}'
    got = await _raw_reply(c, "$JS.API.STREAM.NAMES", b'{"subject":"amp.>"}', 3)
    assert got == b'{"type":"io.nats.jetstream.api.v1.stream_names_response","total":1,"offset":0,"limit":1024,"streams":["a\\u0026b"]}'
    got = await _raw_reply(c, "$JS.API.STREAM.NAMES", b"{<x>", 4)
    assert got == (b'{"type":"io.nats.jetstream.api.v1.stream_names_response","error":{"code":400,"err_code":10025,'
                   b'"description":"invalid JSON: invalid character \'\\u003c\' looking for beginning of object key string at offset 2"},'
                   b'"total":0,"offset":0,"limit":0,"streams":null}')
    got = await _raw_reply(c, "$JS.API.STREAM.CREATE.T", b"<x>", 6)
    assert got == (b'{"type":"io.nats.jetstream.api.v1.stream_create_response","error":{"code":400,"err_code":10025,'
                   b'"description":"invalid JSON: invalid character \'\\u003c\' looking for beginning of value at offset 1"}}')
    # the PubAck is formatted by hand (no escapes); its error form is marshalled
    got = await _raw_reply(c, "amp.x", b"hi", 5)
    assert got == b'{"stream":"a&b","seq":1}'
    hdr = b"NATS/1.0\r\nNats-Expected-Stream: x<y\r\n\r\n"
    await c.send(b"HPUB amp.x _r.7 %d %d\r\n%shi\r\n" % (len(hdr), len(hdr) + 2, hdr))
    line = await c.readline()
    assert line.startswith("MSG _r.7 1 "), line
    got = (await c.read_exactly(int(line.split()[-1]) + 2))[:-2]
    assert got == (b'{"error":{"code":400,"err_code":10060,"description":"expected stream does not match"},'
                   b'"stream":"a\\u0026b","seq":0}')


async def test_request_bodies_read_as_the_real_server_does(nc, js):
    """Three ways of reading a request body: unmarshal always (Go's type
    errors), only when it looks like an object or array, or must be empty.
    Body errors come before the stream/consumer look-up."""
    await js.add_stream(name="B", subjects=["b.>"], storage="memory")
    await js.publish("b.a", b"x")
    await js.add_consumer("B", api.ConsumerConfig(durable_name="C", ack_policy="explicit"))
    cant = "invalid JSON: json: cannot unmarshal {} into Go value of type server.{}"
    not_empty = (400, 10038, "expected an empty request payload")
    cases = [
        # ignored unless it starts like an object or array
        ("STREAM.NAMES", b"<x>", None), ("STREAM.NAMES", b"5", None),
        ("STREAM.NAMES", b"[1]", (400, 10025, cant.format("array", "JSApiStreamNamesRequest"))),
        ("STREAM.LIST", b"[]", (400, 10025, cant.format("array", "JSApiStreamListRequest"))),
        ("STREAM.INFO.NOPE", b"[1]", (400, 10025, cant.format("array", "JSApiStreamInfoRequest"))),
        ("STREAM.INFO.B", b"null", None),
        ("STREAM.PURGE.NOPE", b"<x>", (404, 10059, "stream not found")),
        ("CONSUMER.NAMES.NOPE", b"[1]", (400, 10025, cant.format("array", "JSApiConsumersRequest"))),
        ("CONSUMER.LIST.B", b"<x>", None),
        ("CONSUMER.PAUSE.B.NOPE", b"[1]", (400, 10025, cant.format("array", "JSApiConsumerPauseRequest"))),
        ("CONSUMER.PAUSE.B.C", b"{<x>", (400, 10025, "invalid JSON: invalid character '<' looking for beginning of object key string at offset 2")),
        # always unmarshalled
        ("STREAM.MSG.GET.NOPE", b'"s"', (400, 10025, cant.format("string", "JSApiMsgGetRequest"))),
        ("STREAM.MSG.GET.B", b"null", (400, 10003, "bad request")),
        ("STREAM.MSG.DELETE.NOPE", b"5", (400, 10025, cant.format("number", "JSApiMsgDeleteRequest"))),
        ("STREAM.MSG.DELETE.B", b"{}", (400, 10003, "bad request")),
        ("STREAM.MSG.DELETE.B", b'{"seq":0}', (400, 10043, "sequence 0 not found")),
        ("STREAM.CREATE.T", b"[1]", (400, 10025, cant.format("array", "StreamConfigRequest"))),
        ("CONSUMER.CREATE.NOPE", b"5", (400, 10025, cant.format("number", "CreateConsumerRequest"))),
        ("CONSUMER.CREATE.NOPE", b"{}", (400, 10056, "stream name in subject does not match request")),
        ("CONSUMER.CREATE.B", b'{"config":{"ack_policy":"none"}}', (400, 10056, "stream name in subject does not match request")),
        ("CONSUMER.RESET.B.C", b"5", (400, 10025, cant.format("number", "JSApiConsumerResetRequest"))),
        ("CONSUMER.RESET.B.C", b"<x>", (400, 10025, "invalid JSON: invalid character '<' looking for beginning of value")),
        # must be empty (or {})
        ("CONSUMER.INFO.NOPE.C", b"x", not_empty), ("CONSUMER.INFO.B.C", b" ", not_empty),
        ("CONSUMER.INFO.B.C", b"{ }", None), ("CONSUMER.DELETE.B.NOPE", b"null", not_empty),
        ("STREAM.DELETE.NOPE", b"[]", not_empty), ("STREAM.DELETE.B", b"x", not_empty),
    ]
    for subj, body, want in cases:
        r = await req(nc, "$JS.API." + subj, body)
        if want is None:
            assert "error" not in r, (subj, body, r)
        else:
            assert "error" in r and err(r) == want, (subj, body, r)
    r = await req(nc, "$JS.API.CONSUMER.CREATE.B", {"stream_name": "B"})  # no config: the defaults
    assert "error" not in r and r["config"]["ack_policy"] == "none"


async def test_atomic_batch_headers_refused_without_allow_atomic(nc, js):
    await js.add_stream(name="AB", subjects=["ab.>"])
    for h in ({"Nats-Batch-Id": "b1", "Nats-Batch-Sequence": "1"}, {"Nats-Batch-Id": "b2", "Nats-Batch-Sequence": "1",
                                                                   "Nats-Batch-Commit": "1"}):
        msg = await nc.request("ab.x", b"v", headers=h, timeout=2)
        assert msg.data == b'{"error":{"code":400,"err_code":10174,"description":"atomic publish is disabled"},"stream":"AB","seq":0}'
    # a batch sequence without a batch id is an ordinary message
    assert json.loads((await nc.request("ab.x", b"v", headers={"Nats-Batch-Sequence": "1"}, timeout=2)).data) == \
        {"stream": "AB", "seq": 1}
    assert (await js.stream_info("AB")).state.messages == 1


async def test_stream_info_pages_subjects_from_the_offset(nc, js):
    """STREAM.INFO with subjects_filter honours offset as nats-server does:
    the subjects sorted, the page from the offset on, total/offset/limit set
    (the offset as asked, a negative one as 0), a page past the end empty."""
    await js.add_stream(name="SP", subjects=["sp.>"])
    for s in ("sp.d", "sp.b", "sp.e", "sp.a", "sp.c", "sp.b", "sp.x.y"):
        await js.publish(s, b"")
    counts = {"sp.a": 1, "sp.b": 2, "sp.c": 1, "sp.d": 1, "sp.e": 1}

    async def page(offset=None, flt="sp.*"):
        body = {"subjects_filter": flt}
        if offset is not None:
            body["offset"] = offset
        d = await req(nc, "$JS.API.STREAM.INFO.SP", body)
        return d["total"], d["offset"], d["limit"], d["state"].get("subjects")

    assert await page() == (5, 0, 100_000, counts)
    assert await page(0) == (5, 0, 100_000, counts)
    assert await page(-3) == (5, 0, 100_000, counts)
    assert await page(2) == (5, 2, 100_000, {"sp.c": 1, "sp.d": 1, "sp.e": 1})
    assert await page(4) == (5, 4, 100_000, {"sp.e": 1})
    assert await page(5) == (5, 5, 100_000, None)
    assert await page(9) == (5, 9, 100_000, None)
    assert await page(1, ">") == (6, 1, 100_000, {"sp.b": 2, "sp.c": 1, "sp.d": 1, "sp.e": 1, "sp.x.y": 1})
    assert await page(1, "none.>") == (0, 0, 0, None)
    d = await req(nc, "$JS.API.STREAM.INFO.SP", {"offset": 2})
    assert (d["total"], d["offset"], d["limit"], d["state"].get("subjects")) == (0, 0, 0, None)
    # a client paging by offset until it has total sees every subject once
    seen: dict = {}
    while True:
        total, _, _, subjects = await page(len(seen))
        if not subjects:
            break
        assert not set(subjects) & set(seen)
        seen.update(subjects)
    assert seen == counts and total == 5


async def test_update_lowering_consumer_limits_below_a_consumer_is_refused(nc, js):
    """nats-server refuses a STREAM.UPDATE whose consumer_limits a consumer
    already exceeds (500/10069, naming it), and keeps the old config; a
    limit at or above every consumer is taken."""
    base = {"name": "CL", "subjects": ["cl"], "storage": "memory"}
    await req(nc, "$JS.API.STREAM.CREATE.CL", base)
    await req(nc, "$JS.API.CONSUMER.CREATE.CL.BIG", {"stream_name": "CL", "config": {
        "durable_name": "BIG", "ack_policy": "explicit", "inactive_threshold": 10 * 10**9}})  # max_ack_pending 1000
    await req(nc, "$JS.API.CONSUMER.CREATE.CL.SMALL", {"stream_name": "CL", "config": {
        "durable_name": "SMALL", "ack_policy": "explicit", "max_ack_pending": 10}})

    async def update(limits: dict) -> dict:
        return await req(nc, "$JS.API.STREAM.UPDATE.CL", {**base, "consumer_limits": limits})

    assert err(await update({"max_ack_pending": 100})) == (500, 10069, "change to limits violates consumers: BIG")
    assert err(await update({"inactive_threshold": 5 * 10**9})) == (
        500, 10069, "change to limits violates consumers: BIG")
    d = await update({"inactive_threshold": 20 * 10**9, "max_ack_pending": 5})
    code, err_code, text = err(d)
    assert (code, err_code) == (500, 10069)
    # (nats-server names them in its map's order: any order)
    prefix = "change to limits violates consumers: "
    assert text.startswith(prefix) and sorted(text[len(prefix):].split(", ")) == ["BIG", "SMALL"]
    info = await req(nc, "$JS.API.STREAM.INFO.CL")
    assert info["config"]["consumer_limits"] == {}
    d = await update({"inactive_threshold": 10 * 10**9, "max_ack_pending": 1000})
    assert "error" not in d, d
    assert d["config"]["consumer_limits"] == {"inactive_threshold": 10 * 10**9, "max_ack_pending": 1000}
