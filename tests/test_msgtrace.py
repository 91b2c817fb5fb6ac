"""Message tracing (Nats-Trace-Dest / Nats-Trace-Only, what `nats trace`
uses), on both servers: the trace event's request and events (ingress,
JetStream, egress with queue groups), what is delivered and stored with and
without trace-only, PubAcks, interest streams nobody wants a message for,
and headers that do not start a trace."""

from __future__ import annotations

import asyncio
import base64
import json

from conftest import connect, eventually


def shape(event: dict) -> dict:
    """An event without what differs between servers and runs: times, the
    server block's ids, client ids; a JetStream error's text (natslab gives
    the API error's description, nats-server its store's wording)."""
    out = {"request": event["request"], "server": sorted(event["server"])}
    evs = []
    for e in event["events"]:
        e = {k: v for k, v in e.items() if k not in ("ts", "cid")}
        if "error" in e:
            e["error"] = bool(e["error"])
        evs.append(e)
    out["events"] = evs
    return out


async def test_trace_events_and_delivery(server):
    tracer = await connect(server.url, name="tracer")
    other = await connect(server.url)
    try:
        for name, cfg in (("T", {"subjects": ["t.>"]}), ("I", {"subjects": ["i.>"], "retention": "interest"})):
            r = await tracer.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps({"name": name, **cfg}).encode(), timeout=3)
            assert "error" not in json.loads(r.data)
        got = []

        async def seen(m):
            got.append((m.subject, m.data, dict(m.headers or {})))

        await other.subscribe("t.x", cb=seen)
        await other.subscribe("t.*", queue="q", cb=seen)
        await other.flush()
        await other.flush()
        traces = await tracer.subscribe("trace.dest")
        acks = await tracer.subscribe("acks.>")
        await tracer.flush()

        cases = [
            ("t.x", {"Nats-Trace-Only": "true"}, ""),
            ("t.x", {"Nats-Trace-Only": "TRUE"}, ""),
            ("t.x", {"Nats-Trace-Only": "on"}, ""),
            ("t.x", {"Nats-Trace-Only": "1"}, ""),
            ("t.x", {"Nats-Trace-Only": "yes", "X": "kept"}, ""),
            ("t.x", {}, "acks.1"),
            ("t.y", {"Nats-Trace-Only": "true"}, "acks.2"),
            ("t.y", {"Nats-Expected-Last-Sequence": "99"}, "acks.3"),
            ("i.y", {}, ""),
            ("nobody", {}, ""),
        ]
        events = []
        for subject, extra, reply in cases:
            await tracer.publish(subject, b"payload", reply=reply, headers={"Nats-Trace-Dest": "trace.dest", **extra})
            events.append(shape(json.loads((await traces.next_msg(3)).data)))
        # headers that start no trace: no destination, a lower-case name, a wildcard destination
        await tracer.publish("t.x", b"plain", headers={"Nats-Trace-Dest": ""})
        await tracer.publish("t.x", b"lower", headers={"nats-trace-dest": "trace.dest"})
        await tracer.publish("t.x", b"wild", headers={"Nats-Trace-Dest": "trace.*", "Nats-Trace-Only": "true"})
        # a sentinel: a traced message down the same road (the stream T), so
        # its trace comes after any the three above could have started
        await tracer.publish("t.x", b"end", headers={"Nats-Trace-Dest": "trace.dest", "Nats-Trace-Only": "true",
                                                     "X-End": "1"})
        end = json.loads((await traces.next_msg(5)).data)
        assert end["request"]["header"].get("X-End") == ["1"]
        assert traces.pending_msgs == 0
        # the two PubAcks, and the nine deliveries to the other connection
        assert await eventually(lambda: acks.pending_msgs >= 2 and len(got) >= 9)
        answered = []
        while acks.pending_msgs:
            m = await acks.next_msg(1)
            answered.append((m.subject, json.loads(m.data)))
        stored = []
        for seq in range(1, 6):
            r = json.loads((await tracer.request("$JS.API.STREAM.MSG.GET.T", json.dumps({"seq": seq}).encode(), timeout=3)).data)
            if "message" in r:
                stored.append((r["message"]["subject"], base64.b64decode(r["message"].get("hdrs", "")).decode()))
        return_value = (events, sorted(got, key=repr), answered, stored)
    finally:
        await tracer.close()
        await other.close()

    events, got, answered, stored = return_value
    head = {"Nats-Trace-Dest": ["trace.dest"]}
    assert events[0] == {
        "request": {"header": {**head, "Nats-Trace-Only": ["true"]}, "msgsize": 71},
        "server": ["feature_flags", "flags", "host", "id", "jetstream", "name", "seq", "time", "ver"],
        "events": [{"type": "in", "kind": 0, "name": "tracer", "acc": "$G", "subj": "t.x"},
                   {"type": "js", "stream": "T", "subject": "t.x"},
                   {"type": "eg", "kind": 0, "sub": "t.x"},
                   {"type": "eg", "kind": 0, "sub": "t.*", "queue": "q"}],
    }
    assert [e["events"] for e in events[1:5]] == [events[0]["events"]] * 4
    assert events[5]["events"] == events[0]["events"]
    queue = {"type": "eg", "kind": 0, "sub": "t.*", "queue": "q"}
    assert events[6]["events"][1:] == [{"type": "js", "stream": "T", "subject": "t.y"}, queue]
    assert events[7]["events"][1:] == [{"type": "js", "stream": "T", "error": True}, queue]
    assert events[8]["events"][1:] == [{"type": "js", "stream": "I", "subject": "i.y", "nointerest": True}]
    assert events[9]["events"] == [{"type": "in", "kind": 0, "name": "tracer", "acc": "$G", "subj": "nobody"}]
    # trace-only (true/TRUE/on/1) went nowhere; "yes" is not trace-only;
    # each message reached the plain and the queue subscriber (t.y the queue one)
    trace = {"Nats-Trace-Dest": "trace.dest"}
    assert got == sorted(
        [("t.x", b"lower", {"nats-trace-dest": "trace.dest"})] * 2
        + [("t.x", b"payload", {**trace, "Nats-Trace-Only": "yes", "X": "kept"})] * 2
        + [("t.x", b"payload", trace)] * 2 + [("t.x", b"plain", {"Nats-Trace-Dest": ""})] * 2
        + [("t.y", b"payload", {**trace, "Nats-Expected-Last-Sequence": "99"})], key=repr)
    # no PubAck for the trace-only publish, the refusal for the wrong expectation
    assert [(s, a.get("seq"), a.get("error", {}).get("err_code")) for s, a in answered] == [("acks.1", 2, None), ("acks.3", 0, 10071)]
    # stored with the trace turned off; the trace-only ones not at all
    assert stored == [
        ("t.x", "NATS/1.0\r\nNats-Trace-Dest: trace disabled\r\nNats-Trace-Only: yes\r\nX: kept\r\n\r\n"),
        ("t.x", "NATS/1.0\r\nNats-Trace-Dest: trace disabled\r\n\r\n"),
        ("t.x", "NATS/1.0\r\nNats-Trace-Dest: \r\n\r\n"),
        ("t.x", "NATS/1.0\r\nnats-trace-dest: trace.dest\r\n\r\n"),
    ]


async def test_trace_of_a_refused_publish(server_kind, tmp_path):
    """What the trace says when a message is refused: a publish the user may
    not make (the ingress carries the permissions error, nothing else); a
    stream that refuses to store it (the stream entry names the subject and
    the error); a trace-only publish whose expectation fails (the headers
    are checked, the entry has the error and no subject, the publisher gets
    the refusal) and one that would pass (the subject, nothing stored, no
    PubAck)."""
    from conftest import ServerProcess

    conf = tmp_path / "auth.conf"
    conf.write_text('authorization { users = [ {user: app, password: pw, permissions: '
                    '{publish: {allow: [">"], deny: ["secret.>"]}, subscribe: ">"}} ] }\n')
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf)])
    srv.start()
    try:
        nc = await connect(srv.url, user="app", password="pw")
        js = nc.jetstream()
        await js.add_stream(name="FULL", subjects=["full.>"], max_msgs=1, discard="new")
        await js.publish("full.a", b"1")
        traces = await nc.subscribe("trace.dest")
        acks = await nc.subscribe("acks.>")
        await nc.flush()
        await nc.flush()
        events = []
        for subject, extra, reply in [
            ("secret.x", {"Nats-Trace-Only": "true"}, ""),
            ("secret.y", {}, ""),
            ("full.b", {}, "acks.1"),
            ("full.b", {"Nats-Trace-Only": "true", "Nats-Expected-Last-Sequence": "99"}, "acks.2"),
            ("full.b", {"Nats-Trace-Only": "true", "Nats-Expected-Last-Sequence": "1"}, "acks.3"),
        ]:
            await nc.publish(subject, b"x", reply=reply, headers={"Nats-Trace-Dest": "trace.dest", **extra})
            events.append(shape(json.loads((await traces.next_msg(3)).data))["events"])
        # a sentinel the full stream refuses, answered after anything it
        # answered before (one stream answers in order)
        await nc.publish("full.b", b"x", reply="acks.4")
        assert await eventually(lambda: acks.pending_msgs >= 3)
        answered = []
        while acks.pending_msgs:
            m = await acks.next_msg(1)
            answered.append((m.subject, json.loads(m.data).get("error", {}).get("err_code")))
        state = (await js.stream_info("FULL")).state
        await nc.close()
    finally:
        srv.stop()

    def ingress(subj, **more):
        return {"type": "in", "kind": 0, "acc": "$G", "subj": subj, **more}

    assert events[0] == [ingress("secret.x", error=True)]
    assert events[1] == [ingress("secret.y", error=True)]
    assert events[2] == [ingress("full.b"), {"type": "js", "stream": "FULL", "subject": "full.b", "error": True}]
    assert events[3] == [ingress("full.b"), {"type": "js", "stream": "FULL", "error": True}]
    assert events[4] == [ingress("full.b"), {"type": "js", "stream": "FULL", "subject": "full.b"}]
    # a trace-only publish is answered only when its checks refuse it
    assert answered == [("acks.1", 10077), ("acks.2", 10071), ("acks.4", 10077)]
    assert (state.messages, state.last_seq) == (1, 1)
