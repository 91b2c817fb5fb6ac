"""JetStream's API audit and asset advisories ($JS.EVENT.ADVISORY.API,
STREAM.CREATED/UPDATED/DELETED, CONSUMER.CREATED/DELETED), what `nats events
--js-advisory` shows, on both servers: which requests are audited and with
what, which changes are announced (the consumers of a deleted stream too),
and that a consumer update is not."""

from __future__ import annotations

import asyncio
import json

from conftest import connect, eventually


def masked(subject: str, body: dict) -> tuple:
    """An advisory without what differs between servers and runs."""
    body = {k: v for k, v in body.items() if k not in ("id", "timestamp", "server")}
    if "client" in body:
        c = dict(body["client"])
        assert isinstance(c.pop("start"), str) and isinstance(c.pop("rtt"), int) and isinstance(c.pop("id"), int)
        c.pop("server")
        body["client"] = c
    if "response" in body:
        resp = json.loads(body["response"])
        body["response"] = {k: v for k, v in resp.items() if k in ("type", "error", "success")}
    return subject, body


async def test_api_audit_and_asset_advisories(server):
    nc = await connect(server.url, name="auditor")
    got = []  # (subject, masked body) in arrival order

    async def keep(m):
        got.append(masked(m.subject, json.loads(m.data)))

    def audited() -> int:
        return sum(s == "$JS.EVENT.ADVISORY.API" for s, _ in got)
    try:
        await nc.subscribe("$JS.EVENT.ADVISORY.>", cb=keep)
        await nc.flush()
        await nc.flush()

        async def api(subject: str, body: dict | None = None, *, audit: bool = True) -> dict:
            # nats-server answers $JS.API requests on a pool of goroutines and
            # publishes each audit after its reply, so the next request's audit
            # can overtake it: wait for this one's before making the next
            before = audited()
            data = json.dumps(body).encode() if body is not None else b""
            r = json.loads((await nc.request("$JS.API." + subject, data, timeout=3)).data)
            if audit:
                assert await eventually(lambda: audited() > before, 5), f"no audit for {subject}"
            return r

        await api("STREAM.CREATE.X", {"name": "X", "subjects": ["x.>"], "allow_direct": True})
        await api("STREAM.UPDATE.X", {"name": "X", "subjects": ["x.>"], "allow_direct": True, "max_msgs": 5})
        await nc.request("x.a", b"m", timeout=3)
        await api("STREAM.MSG.GET.X", {"seq": 1}, audit=False)  # answered, not audited
        await api("STREAM.MSG.GET.X", {"seq": 9})  # an error: audited
        await nc.request("$JS.API.DIRECT.GET.X", b'{"seq":1}', timeout=3)  # never audited
        await api("CONSUMER.CREATE.X.C", {"stream_name": "X", "config": {"durable_name": "C", "ack_policy": "explicit"}})
        await api("CONSUMER.CREATE.X.C", {"stream_name": "X", "config": {"durable_name": "C", "ack_policy": "explicit",
                                                                          "max_deliver": 3}})  # an update: no advisory
        await api("CONSUMER.CREATE.X.E", {"stream_name": "X", "config": {"name": "E", "ack_policy": "none",
                                                                          "inactive_threshold": 300_000_000}})
        # E goes for inactivity: CONSUMER.DELETED
        assert await eventually(lambda: any(s == "$JS.EVENT.ADVISORY.CONSUMER.DELETED.X.E" for s, _ in got), 10)
        await api("CONSUMER.DELETE.X.C")
        await api("CONSUMER.CREATE.X.D", {"stream_name": "X", "config": {"durable_name": "D", "ack_policy": "explicit"}})
        await api("STREAM.DELETE.X")  # D goes with it, announced
        await api("STREAM.INFO.NOPE")
        # the asset advisories come from the stream's own goroutine, in order
        # (its consumers' too, on the out queue they share): wait for the 9
        # expected; the last, STREAM.DELETED, comes after any that should not
        # be there (each audit was waited for above)
        await eventually(lambda: len(got) >= 10 + 9, 5)
    finally:
        await nc.close()

    audits = [b for s, b in got if s == "$JS.EVENT.ADVISORY.API"]
    assets = [(s, b) for s, b in got if s != "$JS.EVENT.ADVISORY.API"]
    assert [a["subject"] for a in audits] == [
        "$JS.API.STREAM.CREATE.X", "$JS.API.STREAM.UPDATE.X", "$JS.API.STREAM.MSG.GET.X",
        "$JS.API.CONSUMER.CREATE.X.C", "$JS.API.CONSUMER.CREATE.X.C", "$JS.API.CONSUMER.CREATE.X.E",
        "$JS.API.CONSUMER.DELETE.X.C", "$JS.API.CONSUMER.CREATE.X.D", "$JS.API.STREAM.DELETE.X",
        "$JS.API.STREAM.INFO.NOPE"]
    client = {"host": "127.0.0.1", "acc": "$G", "name": "auditor", "lang": "python3", "ver": audits[0]["client"]["ver"],
              "kind": "Client", "client_type": "nats"}
    assert all(a["type"] == "io.nats.jetstream.advisory.v1.api_audit" and a["client"] == client for a in audits)
    assert audits[0]["request"] == json.dumps({"name": "X", "subjects": ["x.>"], "allow_direct": True})
    assert audits[0]["response"] == {"type": "io.nats.jetstream.api.v1.stream_create_response"}
    assert audits[2]["response"]["error"]["err_code"] == 10037
    assert "request" not in audits[6] and audits[6]["response"] == {"type": "io.nats.jetstream.api.v1.consumer_delete_response",
                                                                    "success": True}
    assert audits[9]["response"]["error"]["err_code"] == 10059
    stream = "io.nats.jetstream.advisory.v1.stream_action"
    consumer = "io.nats.jetstream.advisory.v1.consumer_action"
    want = [
        ("$JS.EVENT.ADVISORY.STREAM.CREATED.X", {"type": stream, "stream": "X", "action": "create"}),
        ("$JS.EVENT.ADVISORY.STREAM.UPDATED.X", {"type": stream, "stream": "X", "action": "modify"}),
        ("$JS.EVENT.ADVISORY.CONSUMER.CREATED.X.C", {"type": consumer, "stream": "X", "consumer": "C", "action": "create"}),
        ("$JS.EVENT.ADVISORY.CONSUMER.CREATED.X.E", {"type": consumer, "stream": "X", "consumer": "E", "action": "create"}),
        ("$JS.EVENT.ADVISORY.CONSUMER.DELETED.X.E", {"type": consumer, "stream": "X", "consumer": "E", "action": "delete"}),
        ("$JS.EVENT.ADVISORY.CONSUMER.DELETED.X.C", {"type": consumer, "stream": "X", "consumer": "C", "action": "delete"}),
        ("$JS.EVENT.ADVISORY.CONSUMER.CREATED.X.D", {"type": consumer, "stream": "X", "consumer": "D", "action": "create"}),
        ("$JS.EVENT.ADVISORY.CONSUMER.DELETED.X.D", {"type": consumer, "stream": "X", "consumer": "D", "action": "delete"}),
        ("$JS.EVENT.ADVISORY.STREAM.DELETED.X", {"type": stream, "stream": "X", "action": "delete"}),
    ]
    # nats-server 2.15 can lose the last one: its stream's stop() queues
    # STREAM.DELETED on the out queue the consumers share and at once closes
    # the quit channel of the goroutine that drains it; when that goroutine is
    # still busy sending D's DELETED, its next select sees both ready and Go
    # picks either (missing in 3 of about 60 runs under load, once still 5 s
    # after the delete). natslab always sends it.
    if server.kind == "nats-server" and assets == want[:-1]:
        return
    assert assets == want


async def test_nothing_built_without_a_listener(server):
    """No listener, no advisory: the same API calls, then a late subscriber
    sees nothing of them."""
    nc = await connect(server.url)
    try:
        await nc.request("$JS.API.STREAM.CREATE.Y", json.dumps({"name": "Y", "subjects": ["y"]}).encode(), timeout=3)
        late = await nc.subscribe("$JS.EVENT.ADVISORY.>")
        await nc.flush()
        await nc.flush()
        # a sentinel: this request's audit goes out on the queue the earlier
        # advisories would have taken, so once it has come, so would they
        await nc.request("$JS.API.STREAM.INFO.Y", b"", timeout=3)
        m = await late.next_msg(timeout=5)
        late_ones = {("$JS.EVENT.ADVISORY.STREAM.CREATED.Y", None), ("$JS.EVENT.ADVISORY.API", "$JS.API.STREAM.CREATE.Y")}
        for _ in range(2):
            if server.kind != "nats-server" or (m.subject, json.loads(m.data).get("subject")) not in late_ones:
                break
            # nats-server builds the create's advisories after it has queued the
            # reply: the STREAM.CREATED on the stream's own out queue, drained by the
            # stream's goroutine, and the API audit after sendAPIResponse has queued
            # the response; both look for interest when they are sent, so on a busy
            # machine they can come after the late subscribe (seen in stressed runs)
            m = await late.next_msg(timeout=5)
        assert (m.subject, json.loads(m.data).get("subject")) == ("$JS.EVENT.ADVISORY.API", "$JS.API.STREAM.INFO.Y")
        assert late.pending_msgs == 0
    finally:
        await nc.close()


async def test_ack_samples(server):
    """sample_freq: each ack of a sampled consumer is a consumer_ack metric on
    $JS.EVENT.METRIC.CONSUMER.ACK.<stream>.<consumer> (the consumer sequence
    of the delivery acked, the delivery count, how long the ack took);
    without sample_freq, none; turned on by an update."""
    nc = await connect(server.url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="M", subjects=["m"])
        metrics = await nc.subscribe("$JS.EVENT.METRIC.>")
        await nc.flush()

        async def consumer(name: str, **cfg) -> None:
            body = {"stream_name": "M", "config": {"durable_name": name, "ack_policy": "explicit", "ack_wait": 500_000_000, **cfg}}
            r = json.loads((await nc.request(f"$JS.API.CONSUMER.CREATE.M.{name}", json.dumps(body).encode(), timeout=3)).data)
            assert "error" not in r, r

        await consumer("S", sample_freq="100%")
        await consumer("N")
        for i in range(3):
            await js.publish("m", f"m{i}".encode())
        sampled = await js.pull_subscribe("m", durable="S")
        plain = await js.pull_subscribe("m", durable="N")
        first = await sampled.fetch(3)
        await first[0].ack_sync()
        await first[1].ack_sync()  # the third is left to come back
        for m in await plain.fetch(3):
            await m.ack_sync()
        again = await sampled.fetch(1, timeout=5)  # waits out the 500 ms ack wait (nothing else is pending)
        await again[0].ack_sync()
        await consumer("N", sample_freq="100")  # an update turns it on
        await js.publish("m", b"m3")
        for m in await plain.fetch(1):
            await m.ack_sync()
        # each consumer sends its metrics in order: N's one after anything its
        # unsampled acks could have sent, S's last after its others
        assert await eventually(lambda: metrics.pending_msgs >= 4)
        got = []
        while metrics.pending_msgs:
            m = await metrics.next_msg(1)
            body = json.loads(m.data)
            assert body.pop("ack_time") > 0 and len(body.pop("id")) == 22 and body.pop("timestamp")
            got.append((m.subject, body))
    finally:
        await nc.close()
    kind = "io.nats.jetstream.metric.v1.consumer_ack"
    assert got == [
        ("$JS.EVENT.METRIC.CONSUMER.ACK.M.S", {"type": kind, "stream": "M", "consumer": "S", "consumer_seq": 1, "stream_seq": 1, "deliveries": 1}),
        ("$JS.EVENT.METRIC.CONSUMER.ACK.M.S", {"type": kind, "stream": "M", "consumer": "S", "consumer_seq": 2, "stream_seq": 2, "deliveries": 1}),
        ("$JS.EVENT.METRIC.CONSUMER.ACK.M.S", {"type": kind, "stream": "M", "consumer": "S", "consumer_seq": 4, "stream_seq": 3, "deliveries": 2}),
        ("$JS.EVENT.METRIC.CONSUMER.ACK.M.N", {"type": kind, "stream": "M", "consumer": "N", "consumer_seq": 4, "stream_seq": 4, "deliveries": 1}),
    ]
