"""No client can stall the broker, part 2 (issue #27): a client that stops
reading its socket, or stops half-way through a line, costs the others
nothing. nats-server queues what a subscriber has not taken up to
``max_pending`` (64 MiB by default) and waits at most ``write_deadline``
(10 s) for its socket; past either it closes the connection as a slow
consumer, with the reason in /connz?state=closed. Differential: the same
assertions on natslab's broker and on nats-server.

Meanwhile another client measures pub/sub round trips (a PUB to its own
subscription and the PING after it); its slowest must stay far under what a
stalled broker gives (the 10 s write deadline). The bound is generous: the
machine running the tests is shared.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from conftest import RawClient, ServerProcess, connect, eventually
from test_monitor import get_json, poll_json

RTT_MAX = 1.0
SLOW = ("Slow Consumer (Pending Bytes)", "Slow Consumer (Write Deadline)")
NAMED = '{"verbose":false,"pedantic":false,"headers":true,"protocol":1,"name":"%s"}'
CHUNK = b"x" * (64 * 1024)


class PubSubProber:
    """PUB to its own subscription, then PING: the round trip until both the
    MSG and the PONG are back; keeps the slowest, until stopped."""

    def __init__(self, c: RawClient):
        self.c = c
        self.worst = 0.0
        self.count = 0
        self._stop = False
        self.task: asyncio.Task | None = None

    @classmethod
    async def start(cls, srv) -> "PubSubProber":
        c = await RawClient.open(srv)
        await c.send("SUB probe 1\r\n")
        assert await c.read_until_pong() == []
        self = cls(c)
        self.task = asyncio.ensure_future(self._run())
        return self

    async def _run(self) -> None:
        while not self._stop:
            t0 = time.monotonic()
            lines = await self.c.read_until_pong(timeout=15)
            assert lines == [], lines
            await self.c.send("PUB probe 2\r\nhi\r\n")
            assert await self.c.read_until_pong(timeout=15) == ["MSG probe 1 2", "hi"]
            self.worst = max(self.worst, time.monotonic() - t0)
            self.count += 1

    async def stop(self) -> None:
        self._stop = True
        await asyncio.wait_for(self.task, 30)
        self.c.close()


async def _closed_reason(srv, name: str) -> str | None:
    cz = await poll_json(srv, "/connz?state=closed", lambda cz: any(c.get("name") == name for c in cz["connections"]),
                         timeout=30)
    return next((c.get("reason") for c in cz["connections"] if c.get("name") == name), None)


@pytest.fixture
def short_deadline_server(server_kind, tmp_path):
    """A broker with the monitor port and a 2 s write_deadline (nats-server's
    default is 10 s: this test waited those out on a broker that cuts by the
    deadline first)."""
    conf = tmp_path / "deadline.conf"
    conf.write_text('write_deadline: "2s"\n')
    srv = ServerProcess(server_kind, tmp_path / "store", http=True, extra=["-c", str(conf)])
    srv.start()
    yield srv
    srv.stop()


async def test_a_subscriber_that_never_reads_is_cut_and_the_others_are_served(short_deadline_server):
    srv = short_deadline_server
    slow = await RawClient.open(srv, NAMED % "slow")
    await slow.send("SUB firehose 1\r\n")
    assert await slow.read_until_pong() == []
    # from here on the slow client reads nothing (its buffer fills, then the socket's)
    probe = await PubSubProber.start(srv)
    pub = await RawClient.open(srv)
    try:
        # 80 MiB to the subscriber that does not read: past its 64 MiB
        # max_pending even with the kernel's socket buffers full (nats-server
        # cuts it by that; natslab holds the publisher back while the
        # subscriber's socket is backed up, so its cut is the write deadline's)
        for _ in range(1280):
            await pub.send(b"PUB firehose %d\r\n%s\r\n" % (len(CHUNK), CHUNK))
        assert await pub.read_until_pong(timeout=30) == []
        # cut as a slow consumer, by its pending bytes or, within the 2 s
        # write deadline, by that (its socket is not read before: reading
        # would let the writes go on)
        assert await _closed_reason(srv, "slow") in SLOW
        assert await slow.closed(timeout=10)
        assert (await get_json(srv, "/varz"))["slow_consumers"] >= 1
        assert await pub.read_until_pong() == []  # the publisher is served on
    finally:
        await probe.stop()
        slow.close()
        pub.close()
    assert probe.count > 0
    assert probe.worst < RTT_MAX, f"another client waited {probe.worst:.3f} s for its own message"


async def test_half_a_line_then_silence_holds_nobody_up(server):
    # a client stops half-way through a control line, another half-way
    # through a payload: both stay connected, everyone else is served
    # meanwhile, and the rest of each line, when it comes, is taken as if
    # it had come at once
    watcher = await RawClient.open(server)
    await watcher.send("SUB half.* 1\r\n")
    assert await watcher.read_until_pong() == []
    line = await RawClient.open(server)
    await line.send("PUB half.line 5")
    payload = await RawClient.open(server)
    await payload.send("PUB half.payload 5\r\nhel")
    probe = await PubSubProber.start(server)
    try:
        assert await eventually(lambda: probe.count >= 50, timeout=20)
        await line.send("\r\nhello\r\n")
        await payload.send("lo\r\n")
        assert await line.read_until_pong() == []
        assert await payload.read_until_pong() == []
        got = await watcher.read_lines(4)
        assert sorted(zip(got[::2], got[1::2])) == [("MSG half.line 1 5", "hello"), ("MSG half.payload 1 5", "hello")]
    finally:
        await probe.stop()
        for c in (watcher, line, payload):
            c.close()
    assert probe.worst < RTT_MAX, f"another client waited {probe.worst:.3f} s for its own message"


async def test_a_push_consumer_to_a_client_that_never_reads(server_kind, tmp_path):
    # a JetStream push consumer delivering to a client that does not read
    # (max_pending 4 MiB here, so 12 MiB overflows it): the client is cut as
    # a slow consumer, the stream takes every publish, and the others are
    # served meanwhile
    conf = tmp_path / "server.conf"
    conf.write_text("max_pending: 4MB\n")
    srv = ServerProcess(server_kind, tmp_path / "store", http=True, extra=["-c", str(conf)])
    srv.start()
    try:
        slow = await RawClient.open(srv, NAMED % "slow")
        await slow.send("SUB push.slow 1\r\n")
        assert await slow.read_until_pong() == []
        nc = await connect(srv.url)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"], storage="memory")
        await js.add_consumer("S", durable_name="P", deliver_subject="push.slow", ack_policy="none")
        probe = await PubSubProber.start(srv)
        try:
            acks = await asyncio.gather(*(js.publish("s.x", CHUNK, timeout=30) for _ in range(192)))  # 12 MiB
            assert [a.seq for a in acks] == list(range(1, 193))
            assert await _closed_reason(srv, "slow") in SLOW
            assert await slow.closed(timeout=10)
            info = json.loads((await nc.request("$JS.API.STREAM.INFO.S", b"", timeout=5)).data)
            assert info["state"]["messages"] == 192
        finally:
            await probe.stop()
            slow.close()
            await nc.close()
        assert probe.count > 0
        assert probe.worst < RTT_MAX, f"another client waited {probe.worst:.3f} s for its own message"
    finally:
        srv.stop()


@pytest.mark.parametrize("policy", ["retry", "close"])
async def test_write_timeout_policy(server_kind, tmp_path, policy):
    """write_timeout (nats-server 2.11+): a subscriber whose socket takes
    its data slower than it comes passes the write deadline while still
    reading. With "retry" it is a slow consumer (counted in /varz) and kept:
    it gets every message, then its PONG; with "close" (a client's default)
    it is cut as a slow consumer. The reader takes 32 KiB per read with a
    pause between (its socket drains, slowly: nats-server's deadline is per
    write call, so one write must take longer than it, past the kernel's
    send buffer of up to 4 MiB); 8 MiB queued for it stay below
    max_pending."""
    import socket

    conf = tmp_path / "wt.conf"
    conf.write_text(f'write_deadline: "1s"\nwrite_timeout: {policy}\nmax_pending: 12MB\n')
    srv = ServerProcess(server_kind, tmp_path / "store", http=True, extra=["-c", str(conf)])
    srv.start()
    n = 128  # x 64 KiB
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    sock.connect((srv.host, srv.port))
    reader, writer = await asyncio.open_connection(sock=sock)
    pub = await RawClient.open(srv)
    try:
        await reader.readline()  # INFO
        writer.write(b'CONNECT {"verbose":false,"name":"slow"}\r\nSUB firehose 1\r\nPING\r\n')
        assert await asyncio.wait_for(reader.readline(), 5) == b"PONG\r\n"
        for _ in range(n):
            await pub.send(b"PUB firehose %d\r\n%s\r\n" % (len(CHUNK), CHUNK))
        assert await pub.read_until_pong(timeout=30) == []
        buf, msgs = b"", 0
        deadline = time.monotonic() + 60  # (bounded: a cut connection ends the loop sooner)
        while msgs < n and time.monotonic() < deadline:
            data = await asyncio.wait_for(reader.read(32 * 1024), 10)
            if not data:
                break
            buf += data
            while True:  # whole MSGs (and the server's PINGs, answered) off the front
                if buf.startswith(b"PING\r\n"):
                    buf = buf[6:]
                    writer.write(b"PONG\r\n")
                    continue
                head, sep, _ = buf.partition(b"\r\n")
                if not sep or not head.startswith(b"MSG firehose 1 "):
                    assert not sep, head[:60]
                    break
                end = len(head) + 2 + int(head.split()[-1]) + 2
                if len(buf) < end:
                    break
                buf, msgs = buf[end:], msgs + 1
            await asyncio.sleep(0.02)  # (the reader's pace, not a wait for a state)
        if policy == "retry":
            assert msgs == n
            writer.write(b"PING\r\n")
            assert await asyncio.wait_for(reader.readline(), 5) == b"PONG\r\n"
            assert (await get_json(srv, "/varz"))["slow_consumers"] >= 1
        else:
            assert msgs < n
            assert await _closed_reason(srv, "slow") == "Slow Consumer (Write Deadline)"
    finally:
        writer.close()
        pub.close()
        srv.stop()
