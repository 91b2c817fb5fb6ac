"""DIRECT.GET in all its forms (issue 3), differential: single gets, batches
ending in a 204 EOB, multi_last, start_time / up_to_*, max_bytes,
no_hdr, and every status reply, with the same assertions on natslab's
broker and on nats-server."""

from __future__ import annotations

import asyncio
import json

import pytest

API = "$JS.API.DIRECT.GET.D"


async def collect(nc, body, subject: str = API, headers=None) -> list[tuple]:
    """Every reply to one request: (subject, seq, pending, last, data) for a
    message, ("status", code, description, pending, last, upto) for a status,
    which ends the reply (a lone message ends it too when no batch was asked)."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.flush()
    await nc.flush()
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    await nc.publish(subject, data, reply=inbox, headers=headers)
    single = isinstance(body, bytes) or not (body.get("batch") or body.get("multi_last"))
    out: list[tuple] = []
    try:
        while True:
            m = await sub.next_msg(timeout=2)
            h = m.headers or {}
            if "Status" in h:
                out.append(("status", h["Status"], h.get("Description", ""), h.get("Nats-Num-Pending"),
                            h.get("Nats-Last-Sequence"), h.get("Nats-UpTo-Sequence")))
                break
            out.append((h.get("Nats-Subject"), h.get("Nats-Sequence"), h.get("Nats-Num-Pending"),
                        h.get("Nats-Last-Sequence"), m.data.decode()))
            if single:
                break
    finally:
        await sub.unsubscribe()
    return out


@pytest.fixture
async def stream(nc, js):
    """Stream D (allow_direct) holding d.b m0, d.a m1, d.b m2, d.a m3 (with
    header X: 3), d.b m4, d.a m5 at sequences 1..6."""
    await js.add_stream(name="D", subjects=["d.>"], allow_direct=True)
    for i in range(6):
        await js.publish("d.a" if i % 2 else "d.b", f"m{i}".encode(), headers={"X": "3"} if i == 3 else None)
    return js


def st(code: str, desc: str, pending=None, last=None, upto=None) -> tuple:
    return ("status", code, desc, pending, last, upto)


async def test_single_gets(nc, stream):
    assert await collect(nc, {"seq": 2}) == [("d.a", "2", None, None, "m1")]
    assert await collect(nc, {"last_by_subj": "d.b"}) == [("d.b", "5", None, None, "m4")]
    assert await collect(nc, {"seq": 3, "next_by_subj": "d.a"}) == [("d.a", "4", None, None, "m3")]
    assert await collect(nc, {"seq": 1, "batch": 0}) == [("d.b", "1", None, None, "m0")]
    assert await collect(nc, {"seq": 50}) == [st("404", "Message Not Found")]
    # the original headers come first, then the stream's
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.flush()
    await nc.flush()
    await nc.publish(API, b'{"seq":4}', reply=inbox)
    m = await sub.next_msg(timeout=2)
    assert list(m.headers)[:4] == ["X", "Nats-Stream", "Nats-Subject", "Nats-Sequence"]
    assert "Nats-Time-Stamp" in m.headers


async def test_batches_end_with_eob(nc, stream):
    assert await collect(nc, {"seq": 2, "batch": 3}) == [
        ("d.a", "2", "4", "0", "m1"), ("d.b", "3", "3", "2", "m2"), ("d.a", "4", "2", "3", "m3"),
        st("204", "EOB", "2", "4")]
    assert await collect(nc, {"seq": 1, "batch": 10, "next_by_subj": "d.a"}) == [
        ("d.a", "2", "2", "0", "m1"), ("d.a", "4", "1", "2", "m3"), ("d.a", "6", "0", "4", "m5"),
        st("204", "EOB", "0", "6")]
    assert await collect(nc, {"batch": 2, "next_by_subj": "d.a"}) == [
        ("d.a", "2", "2", "0", "m1"), ("d.a", "4", "1", "2", "m3"), st("204", "EOB", "1", "4")]
    assert await collect(nc, {"seq": 4, "batch": 100}) == [
        ("d.a", "4", "2", "0", "m3"), ("d.b", "5", "1", "4", "m4"), ("d.a", "6", "0", "5", "m5"),
        st("204", "EOB", "0", "6")]
    # up_to_seq only limits multi_last requests
    assert await collect(nc, {"seq": 3, "batch": 2, "up_to_seq": 2}) == [
        ("d.b", "3", "3", "0", "m2"), ("d.a", "4", "2", "3", "m3"), st("204", "EOB", "2", "4")]
    assert await collect(nc, {"seq": 1, "batch": -1}) == [st("204", "EOB", "6", "0")]
    assert await collect(nc, {"seq": 50, "batch": 2}) == [st("404", "Message Not Found")]
    assert await collect(nc, {"seq": 1, "batch": 3, "next_by_subj": "zz"}) == [st("404", "Message Not Found")]


async def test_batch_max_bytes_counts_subject_headers_and_payload(nc, stream):
    # d.b + m0 is 5 bytes: the batch stops once max_bytes is reached
    assert await collect(nc, {"seq": 1, "batch": 10, "max_bytes": 5}) == [
        ("d.b", "1", "5", "0", "m0"), st("204", "EOB", "5", "1")]
    got = await collect(nc, {"seq": 1, "batch": 10, "max_bytes": 40})
    assert [g[1] for g in got[:-1]] == ["1", "2", "3", "4", "5"] and got[-1] == st("204", "EOB", "1", "5")


async def test_batch_steps_over_deleted_messages(nc, stream):
    await stream.delete_msg("D", 3)
    assert await collect(nc, {"seq": 2, "batch": 2}) == [
        ("d.a", "2", "3", "0", "m1"), ("d.a", "4", "2", "2", "m3"), st("204", "EOB", "2", "4")]
    assert await collect(nc, {"seq": 3}) == [st("404", "Message Not Found")]


async def test_multi_last(nc, stream):
    assert await collect(nc, {"multi_last": ["d.a", "d.b"]}) == [
        ("d.b", "5", "1", "0", "m4"), ("d.a", "6", "0", "5", "m5"), st("204", "EOB", "0", "6", "6")]
    assert await collect(nc, {"multi_last": ["d.*", "d.a"]}) == [
        ("d.b", "5", "1", "0", "m4"), ("d.a", "6", "0", "5", "m5"), st("204", "EOB", "0", "6", "6")]
    assert await collect(nc, {"multi_last": ["d.>"], "up_to_seq": 3}) == [
        ("d.a", "2", "1", "0", "m1"), ("d.b", "3", "0", "2", "m2"), st("204", "EOB", "0", "3", "3")]
    assert await collect(nc, {"multi_last": ["d.a", "d.b"], "batch": 1}) == [
        ("d.b", "5", "1", "0", "m4"), st("204", "EOB", "1", "5", "6")]
    assert await collect(nc, {"multi_last": ["d.a"], "seq": 1}) == [
        ("d.a", "6", "0", "0", "m5"), st("204", "EOB", "0", "6", "6")]
    # seq is a floor: older last messages are skipped but still counted down
    assert await collect(nc, {"multi_last": ["d.>"], "seq": 6}) == [
        ("d.a", "6", "0", "0", "m5"), st("204", "EOB", "0", "6", "6")]
    assert await collect(nc, {"multi_last": ["x.>"]}) == [st("404", "No Results")]


async def msg_time(nc, seq: int) -> str:
    r = await nc.request("$JS.API.STREAM.MSG.GET.D", json.dumps({"seq": seq}).encode(), timeout=2)
    return json.loads(r.data)["message"]["time"]


async def test_times(nc, stream):
    t3, t4 = await msg_time(nc, 3), await msg_time(nc, 4)
    assert await collect(nc, {"start_time": "2000-01-01T00:00:00Z", "batch": 2}) == [
        ("d.b", "1", "5", "0", "m0"), ("d.a", "2", "4", "1", "m1"), st("204", "EOB", "4", "2")]
    # a time between two messages starts at the later one
    got = await collect(nc, {"start_time": t4})
    assert len(got) == 1 and got[0][1] == ("3" if t3 == t4 else "4")
    assert await collect(nc, {"start_time": "2099-01-01T00:00:00Z"}) == [st("404", "Message Not Found")]
    assert await collect(nc, {"multi_last": ["d.>"], "up_to_time": "2099-01-01T00:00:00Z"}) == [
        ("d.b", "5", "1", "0", "m4"), ("d.a", "6", "0", "5", "m5"), st("204", "EOB", "0", "6", "6")]
    assert await collect(nc, {"multi_last": ["d.>"], "up_to_time": "2000-01-01T00:00:00Z"}) == [st("404", "No Results")]


async def test_no_headers(nc, stream):
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.flush()
    await nc.flush()
    await nc.publish(API, b'{"seq":1,"batch":2,"no_hdr":true}', reply=inbox)
    got = [await sub.next_msg(timeout=2) for _ in range(3)]
    assert [(m.headers, m.data) for m in got[:2]] == [(None, b"m0"), (None, b"m1")]
    assert got[2].headers["Status"] == "204"
    await nc.publish("$JS.API.DIRECT.GET.D.d.a", b'{"no_hdr":true}', reply=inbox)
    m = await sub.next_msg(timeout=2)
    assert (m.headers, m.data) == (None, b"m5")


async def test_bad_requests(nc, stream):
    assert await collect(nc, b"") == [st("408", "Empty Request")]
    assert await collect(nc, {"seq": 0, "batch": 2}) == [st("408", "Empty Request")]
    assert await collect(nc, {"multi_last": []}) == [st("408", "Empty Request")]
    assert await collect(nc, b"{not json") == [st("408", "Malformed Request")]
    assert await collect(nc, b'{"seq":"1"}') == [st("408", "Malformed Request")]
    assert await collect(nc, b'{"seq":1.5}') == [st("408", "Malformed Request")]
    assert await collect(nc, b'{"seq":-1}') == [st("408", "Malformed Request")]
    assert await collect(nc, b'{"start_time":"yesterday"}') == [st("408", "Malformed Request")]
    for body in ({"last_by_subj": "d.a", "batch": 2}, {"seq": 1, "last_by_subj": "d.a"},
                 {"seq": 1, "batch": 2, "start_time": "2000-01-01T00:00:00Z"},
                 {"last_by_subj": "d.a", "next_by_subj": "d.a"}, {"next_by_subj": "d.a", "multi_last": ["d.a"]},
                 {"multi_last": ["d.a"], "up_to_seq": 2, "up_to_time": "2000-01-01T00:00:00Z"}):
        assert await collect(nc, body) == [st("408", "Bad Request")], body
    # the subject form: an option-free JSON body is allowed, options are not
    assert await collect(nc, b"{}", "$JS.API.DIRECT.GET.D.d.a") == [("d.a", "6", None, None, "m5")]
    assert await collect(nc, b'{"seq":1}', "$JS.API.DIRECT.GET.D.d.a") == [st("408", "Bad Request")]
    assert await collect(nc, b"nope", "$JS.API.DIRECT.GET.D.d.a") == [st("408", "Malformed Request")]
    assert await collect(nc, b"", "$JS.API.DIRECT.GET.D.x.y") == [st("404", "Message Not Found")]
    assert await collect(nc, {"seq": 1}, headers={"Nats-Required-Api-Level": "99"}) == [st("412", "Required Api Level")]
    # the broker keeps serving
    assert await collect(nc, {"seq": 1}) == [("d.b", "1", None, None, "m0")]
    await asyncio.sleep(0)


async def test_unknown_fields_are_ignored(nc, stream):
    # DIRECT.GET decodes with plain json.Unmarshal, unlike the API
    assert await collect(nc, {"seq": 2, "bogus": 1}) == [("d.a", "2", None, None, "m1")]


async def msg_get(nc, body) -> dict:
    r = await nc.request("$JS.API.STREAM.MSG.GET.D", json.dumps(body).encode(), timeout=2)
    d = json.loads(r.data)
    d.get("message", {}).pop("time", None)
    return d


async def test_msg_get_options_and_errors(nc, stream):
    assert (await msg_get(nc, {"seq": 4, "no_hdr": True}))["message"] == {"subject": "d.a", "seq": 4, "data": "bTM="}
    assert "hdrs" in (await msg_get(nc, {"seq": 4}))["message"]
    assert (await msg_get(nc, {"start_time": "2000-01-01T00:00:00Z"}))["message"]["seq"] == 1
    assert (await msg_get(nc, {"start_time": "2000-01-01T00:00:00Z", "next_by_subj": "d.a"}))["message"]["seq"] == 2
    assert (await msg_get(nc, {"seq": 1, "batch": -1}))["message"]["seq"] == 1
    bad = {"code": 400, "err_code": 10003, "description": "bad request"}
    for body in ({"seq": 1, "batch": 2}, {"seq": 1, "max_bytes": 2}, {"multi_last": ["d.>"]},
                 {"seq": 1, "start_time": "2000-01-01T00:00:00Z"}):
        assert (await msg_get(nc, body))["error"] == bad, body
    assert (await msg_get(nc, {"start_time": "2099-01-01T00:00:00Z"}))["error"]["err_code"] == 10037
    invalid = [
        ({"seq": 1, "no_headers": True}, 'json: unknown field "no_headers"'),
        ({"seq": "x"}, "json: cannot unmarshal string into Go struct field JSApiMsgGetRequest.seq of type uint64"),
        ({"seq": -1}, "json: cannot unmarshal number -1 into Go struct field JSApiMsgGetRequest.seq of type uint64"),
        ({"multi_last": [1]}, "json: cannot unmarshal number into JSApiMsgGetRequest.multi_last.0 of type string"),
        ({"start_time": "bad"}, 'parsing time "bad" as "2006-01-02T15:04:05Z07:00": cannot parse "bad" as "2006"'),
    ]
    for body, description in invalid:
        assert (await msg_get(nc, body))["error"] == {"code": 400, "err_code": 10025,
                                                        "description": "invalid JSON: " + description}, body


async def test_subjects_that_only_start_like_a_direct_get_or_pull_get_no_responders(nc, js, stream):
    """nats-server gives anything starting with "$JS.API.DIRECT.GET" or
    "$JS.API.CONSUMER.MSG.NEXT." (as bytes) only to a stream's or consumer's
    own responder: a near miss gets no responders. Without the dot, the
    pull prefix is an unknown API subject: silence."""
    from nats.errors import NoRespondersError, TimeoutError

    await js.add_consumer("D", durable_name="C")
    for subject in ("$JS.API.DIRECT.GET", "$JS.API.DIRECT.GETX.D", "$JS.API.DIRECT.GET.", "$JS.API.DIRECT.GET.Q",
                    "$JS.API.CONSUMER.MSG.NEXT.D", "$JS.API.CONSUMER.MSG.NEXT.D.Q", "$JS.API.CONSUMER.MSG.NEXT.Q.C",
                    "$JS.API.CONSUMER.MSG.NEXT.D.C.x"):
        with pytest.raises(NoRespondersError):
            await nc.request(subject, b'{"seq":1}', timeout=2)
    for subject in ("$JS.API.CONSUMER.MSG.NEXT", "$JS.API.CONSUMER.MSG.NEXTX.D.C"):
        with pytest.raises(TimeoutError):
            await nc.request(subject, b'{"seq":1}', timeout=0.5)
    # while the real ones answer
    assert (await nc.request("$JS.API.DIRECT.GET.D", b'{"seq":1}', timeout=2)).data == b"m0"



async def _raw_requests(server, subjects: list[bytes]) -> dict[int, bytes]:
    """Each subject published with reply rep.<i> on a raw connection (which
    asked for no-responders statuses); the payload (or headers) answered."""
    r, w = await asyncio.open_connection(server.host, server.port)
    await r.readline()  # INFO
    w.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\nSUB rep.* 1\r\nPING\r\n')
    while not (await r.readline()).startswith(b"PONG"):
        pass
    w.write(b"".join(b"PUB %s rep.%d 0\r\n\r\n" % (s, i) for i, s in enumerate(subjects)))
    got = {}

    async def read_replies():
        while len(got) < len(subjects):
            t = (await r.readline()).split()
            if t and t[0] in (b"MSG", b"HMSG"):
                got[int(t[1][4:])] = (await r.readexactly(int(t[-1]) + 2))[:-2]
    try:
        await asyncio.wait_for(read_replies(), 2)
    finally:
        w.close()
    return got


async def test_names_that_are_not_utf8_name_nothing(nc, stream, server):
    """Bytes that are not UTF-8 in a stream or consumer name (only a raw
    client can send them) name no stream or consumer."""
    got = await _raw_requests(server, [b"$JS.API.STREAM.INFO.D\xff", b"$JS.API.DIRECT.GET.D\xff.d.a",
                                       b"$JS.API.CONSUMER.INFO.D.\xff"])
    assert json.loads(got[0])["error"] == {"code": 404, "err_code": 10059, "description": "stream not found"}
    assert got[1] == b"NATS/1.0 503\r\nNats-Subject: $JS.API.DIRECT.GET.D\xff.d.a\r\n\r\n"
    assert json.loads(got[2])["error"] == {"code": 404, "err_code": 10014, "description": "consumer not found"}


async def test_a_subject_that_is_not_utf8_is_not_stored(nc, stream, server):
    """natslab only (docs/compatibility.md): nats-server stores a
    message whose subject is not UTF-8; natslab refuses it with no
    responders, and nothing is stored."""
    if server.kind == "nats-server":
        pytest.skip("documented difference: nats-server stores it")
    got = await _raw_requests(server, [b"d.\xff"])
    assert got[0] == b"NATS/1.0 503\r\nNats-Subject: d.\xff\r\n\r\n"
    assert (await stream.stream_info("D")).state.messages == 6


@pytest.mark.parametrize("storage", ["file", "memory"])
async def test_last_by_subject_of_a_stored_wildcard_subject_is_still_a_filter(nc, js, storage):
    """A message published on 'w.*' is stored under that subject, but asked
    for by it (the KV-style DIRECT.GET.<stream>.<subject>, last_by_subj,
    MSG.GET) 'w.*' is a filter: the newest message on any w.<token>."""
    await js.add_stream(name="W", subjects=["w.>"], allow_direct=True, storage=storage)
    for subj, data in (("w.*", "star"), ("w.a", "a"), ("w.b.c", "bc")):
        await js.publish(subj, data.encode())
    want = [("w.a", "2", None, None, "a")]
    assert await collect(nc, b"", "$JS.API.DIRECT.GET.W.w.*") == want
    assert await collect(nc, {"last_by_subj": "w.*"}, "$JS.API.DIRECT.GET.W") == want
    assert await collect(nc, b"", "$JS.API.DIRECT.GET.W.w.b.c") == [("w.b.c", "3", None, None, "bc")]
    assert await collect(nc, b"", "$JS.API.DIRECT.GET.W.w.>") == [("w.b.c", "3", None, None, "bc")]
    assert await collect(nc, b"", "$JS.API.DIRECT.GET.W.w.z") == [st("404", "Message Not Found")]
    m = await nc.request("$JS.API.STREAM.MSG.GET.W", b'{"last_by_subj":"w.*"}', timeout=2)
    assert json.loads(m.data)["message"]["seq"] == 2


async def _read_answers(r: asyncio.StreamReader, want: int) -> dict[bytes, list[tuple]]:
    """MSG/HMSG frames up to `want` of them, per reply subject: (status, or
    Nats-Subject and Nats-Sequence, payload), or ('sid', sid) for a copy
    that reached the test's own subscription on a request subject."""
    got: dict[bytes, list[tuple]] = {}
    n = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 3
    while n < want:
        try:
            line = await asyncio.wait_for(r.readline(), max(deadline - loop.time(), 0.01))
        except asyncio.TimeoutError:
            break  # (the comparison shows what is missing)
        if not line:
            break  # the server closed the connection
        if not line.startswith((b"MSG ", b"HMSG ")):
            continue
        t = line.split()
        body = await r.readexactly(int(t[-1]) + 2)
        n += 1
        if t[2] == b"2":  # the watcher on a request subject: the request itself
            got.setdefault(t[1], []).append(("sid", t[2], t[3]))
            continue
        if t[0] == b"MSG":
            got.setdefault(t[1], []).append(("plain", body[:-2]))
            continue
        hlen = int(t[-2])
        hdr, data = body[:hlen], body[hlen:-2]
        lines = hdr.decode().split("\r\n")
        fields = dict(x.split(": ", 1) for x in lines[1:] if ": " in x)
        if len(lines[0]) > len("NATS/1.0"):
            got.setdefault(t[1], []).append(("status", lines[0][9:12]))
        else:
            got.setdefault(t[1], []).append((fields["Nats-Subject"], fields["Nats-Sequence"], data))
    return got


async def test_direct_gets_written_together_are_answered_one_by_one(nc, js, server):
    """One write brings many body-less DIRECT.GET.<stream>.<subject>
    requests (as nats.go, the nats CLI and nats-py send KV gets) mixed with
    everything that must not be taken for one of them: another stream, a
    stream without allow_direct, a missing stream, a body, headers, a
    filter, a missing subject (headers on the request change nothing), a key too long for a quick read, a request
    subject someone else listens on too, other reply prefixes. Each request
    gets the answer it gets alone (natslab takes runs of them together); the
    write goes twice, so the second meets subjects the server has seen."""
    await js.add_stream(name="G", subjects=["g.>"], allow_direct=True)
    await js.add_stream(name="H", subjects=["h.>"], allow_direct=True, storage="memory")
    await js.add_stream(name="N", subjects=["n.>"])
    for i in range(5):
        await js.publish(f"g.k{i}", b"g%d" % i, headers={"X": "1"} if i == 2 else None)
    await js.publish("h.k0", b"h0")
    await js.publish("n.k0", b"n0")
    long_key = "g." + "x" * 1500
    G, H = "$JS.API.DIRECT.GET.G.", "$JS.API.DIRECT.GET.H."
    reqs = [  # (subject, reply, headers, body, what it gets)
        (G + "g.k0", "_INBOX.a.1", None, "", [("g.k0", "1", b"g0")]),
        (G + "g.k1", "_INBOX.a.2", None, "", [("g.k1", "2", b"g1")]),
        (G + "g.k3", "_INBOX.a.6", None, "", [("g.k3", "4", b"g3")]),
        (G + "g.k2", "_INBOX.a.3", None, "", [("g.k2", "3", b"g2")]),
        (G + "g.zz", "_INBOX.a.4", None, "", [("status", "404")]),
        (H + "h.k0", "_INBOX.a.5", None, "", [("h.k0", "1", b"h0")]),
        (G + "g.*", "_INBOX.b.7", None, "", [("g.k4", "5", b"g4")]),
        ("$JS.API.DIRECT.GET.N.n.k0", "_INBOX.a.8", None, "", [("status", "503")]),
        ("$JS.API.DIRECT.GET.NOPE.x", "_INBOX.a.9", None, "", [("status", "503")]),
        (G + "g.k4", "_INBOX.a.10", None, '{"seq":1}', [("status", "408")]),
        (G + "g.k1", "_INBOX.a.11", "X: 1", "", [("g.k1", "2", b"g1")]),
        (G + "g.k4", "_INBOX.a.12", None, "", [("g.k4", "5", b"g4")]),
        (G + "g.k0", "cr.13", None, "", [("g.k0", "1", b"g0")]),
        (G + long_key, "_INBOX.a.14", None, "", [("status", "404")]),
        (G + "g.k3", "_INBOX.a.15", None, "", [("g.k3", "4", b"g3")]),
        ("$JS.API.DIRECT.GET.G", "_INBOX.a.16", None, '{"last_by_subj":"g.k1"}', [("g.k1", "2", b"g1")]),
        (G + "g.k1", "_INBOX.a.17", None, "", [("g.k1", "2", b"g1")]),
    ]
    r, w = await asyncio.open_connection(server.host, server.port)
    await r.readline()  # INFO
    w.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\n'
            b"SUB _INBOX.a.* 1\r\nSUB _INBOX.b.* 3\r\nSUB cr.* 4\r\n"
            + f"SUB {G}g.k3 2\r\n".encode() + b"PING\r\n")
    while not (await r.readline()).startswith(b"PONG"):
        pass
    write = b""
    for subject, reply, hdr, body, _ in reqs:
        if hdr is None:
            write += b"PUB %s %s %d\r\n%s\r\n" % (subject.encode(), reply.encode(), len(body), body.encode())
        else:
            h = f"NATS/1.0\r\n{hdr}\r\n\r\n".encode()
            write += b"HPUB %s %s %d %d\r\n%s%s\r\n" % (subject.encode(), reply.encode(), len(h), len(h) + len(body),
                                                        h, body.encode())
    want = {reply.encode(): answer for _, reply, _, _, answer in reqs}
    want.setdefault(b"$JS.API.DIRECT.GET.G.g.k3", [])
    want[b"$JS.API.DIRECT.GET.G.g.k3"] = [("sid", b"2", b"_INBOX.a.6"), ("sid", b"2", b"_INBOX.a.15")]
    total = sum(len(v) for v in want.values())
    try:
        for _ in range(2):
            w.write(write)
            got = await _read_answers(r, total)
            assert got == want
    finally:
        w.close()


async def test_direct_gets_of_a_client_without_headers_get_the_payload_only(js, server):
    """A connection that did not ask for headers gets each answer as a MSG
    with the payload alone, alone or in a run (a 404 is an empty message)."""
    await js.add_stream(name="G", subjects=["g.>"], allow_direct=True)
    await js.publish("g.a", b"A", headers={"X": "1"})
    await js.publish("g.b", b"B")
    r, w = await asyncio.open_connection(server.host, server.port)
    await r.readline()  # INFO
    w.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":false,"protocol":1}\r\nSUB _INBOX.x.* 1\r\nPING\r\n')
    while not (await r.readline()).startswith(b"PONG"):
        pass
    write = b"".join(b"PUB $JS.API.DIRECT.GET.G.%s _INBOX.x.%d 0\r\n\r\n" % (k, i)
                     for i, k in enumerate([b"g.a", b"g.b", b"g.zz", b"g.b"]))
    try:
        for _ in range(2):  # the second time the server has seen these subjects
            w.write(write)
            got = []
            while len(got) < 4:
                line = await asyncio.wait_for(r.readline(), 3)
                if line.startswith((b"MSG ", b"HMSG ")):
                    t = line.split()
                    got.append((t[0], t[1], (await r.readexactly(int(t[-1]) + 2))[:-2]))
            assert sorted(got) == [(b"MSG", b"_INBOX.x.0", b"A"), (b"MSG", b"_INBOX.x.1", b"B"),
                                   (b"MSG", b"_INBOX.x.2", b""), (b"MSG", b"_INBOX.x.3", b"B")]
    finally:
        w.close()
