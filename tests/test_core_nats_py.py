"""Core NATS through nats-py, and keepalive/slow-consumer limits, on both servers."""

from __future__ import annotations

import asyncio
import collections
import re

import nats
import pytest

from conftest import RawClient, ServerProcess, connect, eventually


async def _sub_ready(nc, *subs):
    # nats-py's flush can overtake a just-queued SUB; two round trips settle it
    await nc.flush()
    await nc.flush()


async def test_pub_sub_with_headers(nc, server):
    other = await connect(server.url)
    sub = await nc.subscribe("orders.*")
    await _sub_ready(nc)
    await other.publish("orders.new", b"order-1", headers={"Trace": "a", "X": "1"})
    await other.publish("orders.eu", b"order-2")
    m1 = await sub.next_msg(timeout=2)
    m2 = await sub.next_msg(timeout=2)
    assert (m1.subject, m1.data, m1.headers) == ("orders.new", b"order-1", {"Trace": "a", "X": "1"})
    assert (m2.subject, m2.data, m2.headers) == ("orders.eu", b"order-2", None)
    await other.close()


async def test_queue_group_each_message_to_exactly_one_member(server):
    members = [await connect(server.url) for _ in range(3)]
    plain = await connect(server.url)
    counts: collections.Counter = collections.Counter()
    seen: list[bytes] = []

    def handler(i):
        async def cb(m):
            counts[i] += 1
            seen.append(m.data)
        return cb

    for i, c in enumerate(members):
        await c.subscribe("work", queue="workers", cb=handler(i))
        await _sub_ready(c)
    psub = await plain.subscribe("work")
    await _sub_ready(plain)
    pub = await connect(server.url)
    for n in range(90):
        await pub.publish("work", str(n).encode())
    await pub.flush()
    await eventually(lambda: len(seen) >= 90)
    assert sorted(seen) == sorted(str(n).encode() for n in range(90))  # exactly once each
    assert len(counts) == 3  # spread over the members
    for _ in range(90):  # plain subscribers still see everything
        await psub.next_msg(timeout=2)
    for c in members + [plain, pub]:
        await c.close()


async def test_request_reply_and_no_responders(server):
    svc = await connect(server.url)

    async def upper(m):
        await m.respond(m.data.upper())

    await svc.subscribe("svc.upper", cb=upper)
    await _sub_ready(svc)
    cli = await connect(server.url)
    reply = await cli.request("svc.upper", b"shipped order 4711", timeout=2)
    assert reply.data == b"SHIPPED ORDER 4711"
    with pytest.raises(nats.errors.NoRespondersError):
        await cli.request("svc.missing", b"x", timeout=2)
    await svc.close()
    await cli.close()


async def test_core_publish_leaves_no_trace(nc, js):
    await nc.publish("core.plain", b"this subject has no stream and no subscriber")
    await nc.flush()
    info = await js.account_info()
    assert info.streams == 0


def _with_config(server_kind: str, tmp_path, text: str) -> ServerProcess:
    conf = tmp_path / "server.conf"
    conf.write_text(text)
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf)])
    srv.start()
    return srv


async def test_slow_consumer_is_cut_and_others_served(tmp_path, server_kind):
    srv = _with_config(server_kind, tmp_path, "max_pending: 1MB\n")
    try:
        slow = await RawClient.open(srv)
        await slow.send("SUB firehose 1\r\n")
        await slow.read_until_pong()
        # a subscriber that keeps reading is served all along
        fast = await connect(srv.url)
        got = 0
        all_in = asyncio.Event()

        async def count(msg):
            nonlocal got
            got += 1
            if got == 400:
                all_in.set()

        await fast.subscribe("firehose", cb=count, pending_bytes_limit=64 * 1024 * 1024)
        await _sub_ready(fast)
        pub = await connect(srv.url)
        payload = b"x" * 65536
        for _ in range(400):  # 25 MiB: far past 1 MiB pending plus socket buffers
            await pub.publish("firehose", payload)
        await pub.flush(timeout=10)
        await asyncio.wait_for(all_in.wait(), 20)
        assert fast.is_connected
        await fast.close()
        # the slow client was disconnected: draining it ends in EOF, short of everything
        received = 0
        while True:
            data = await asyncio.wait_for(slow.reader.read(1 << 20), 5)
            if not data:
                break
            received += len(data)
        assert received < 400 * 65536
        # everyone else is still served
        other = await connect(srv.url)
        sub = await other.subscribe("after")
        await _sub_ready(other)
        await pub.publish("after", b"still here")
        assert (await sub.next_msg(timeout=2)).data == b"still here"
        assert pub.is_connected
        await pub.close()
        await other.close()
    finally:
        srv.stop()
    # the log says what happened, in nats-server's words
    log = srv.log()
    assert re.search(r"\[INF\] 127\.0\.0\.1:\d+ - cid:\d+ - Slow Consumer Detected: MaxPending of 1048576 Exceeded\n",
                     log), log
    assert "WriteDeadline" not in log


FAST_PINGS = 'ping_interval: "1s"\nping_max: 1\n'


async def test_stale_connection(tmp_path, server_kind):
    srv = _with_config(server_kind, tmp_path, FAST_PINGS)
    try:
        c = await RawClient.open(srv)
        lines = []
        while True:
            line = await c.readline(timeout=6)
            lines.append(line)
            if line.startswith("-ERR"):
                break
        assert lines[-1] == "-ERR 'Stale Connection'"
        assert "PING" in lines
        assert await c.closed()
    finally:
        srv.stop()


async def test_client_answering_pings_stays(tmp_path, server_kind):
    srv = _with_config(server_kind, tmp_path, FAST_PINGS)
    try:
        nc = await connect(srv.url)
        await asyncio.sleep(3.2)  # a time to pass, not a state: several of the server's ping intervals
        assert nc.is_connected
        await nc.close()
    finally:
        srv.stop()
