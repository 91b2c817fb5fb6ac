"""Malformed client input, read exactly as nats-server's parser (parser.go)
reads it: what the sender gets back, whether it is closed, and what a
subscriber sees. Every expected value was taken from nats-server 2.15.1
over a raw socket; both servers must give it.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from conftest import RawClient

UNKNOWN = "-ERR 'Unknown Protocol Operation'"
CLOSED = object()  # the end of what the sender gets: the server closed


async def exchange(c: RawClient, data: bytes, pongs: int) -> list:
    """Send ``data``; return the lines the sender gets (INFO and server
    PINGs left out) up to its ``pongs``-th PONG, or up to the close
    (then ending with CLOSED)."""
    await c.send(data)
    lines: list = []
    seen = 0
    while seen < pongs:
        try:
            raw = await asyncio.wait_for(c.reader.readline(), 5)
        except ConnectionError:
            raw = b""
        if not raw:
            lines.append(CLOSED)
            return lines
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith("INFO ") or line == "PING":
            continue
        lines.append(line)
        seen += line == "PONG"
    return lines


async def outcome(raw, data: bytes, pongs: int) -> tuple[list, list]:
    """What the sender of ``data`` gets, and what a subscriber to > sees."""
    sub = await raw()
    await sub.send("SUB > 99\r\n")
    assert await sub.read_until_pong() == []
    c = await raw()
    got = await exchange(c, data, pongs)
    seen = await sub.read_until_pong()
    return got, seen


# (input, PONGs the sender waits for, what it gets, what the subscriber sees)
CASES = {
    # a CR inside a line is no separator: PUB splits on blanks only
    "cr-in-pub-subject": (b"PUB a.b\rc.d 1\r\nx\r\nPING\r\n", 1, ["PONG"], ["MSG a.b\rc.d 99 1", "x"]),
    # ...and it makes the line end a byte early: the size is "0\r"
    "pub-cr-cr-lf": (b"PUB x 0\r\r\n\r\nPING\r\n", 1, [CLOSED], []),
    "pub-cr-then-junk": (b"PUB x 1\rjunk\nx\r\nPING\r\n", 1, [CLOSED], []),
    # SUB splits on CR too: a queue subscription to a in group b
    "cr-in-sub": (b"SUB a\rb 1\r\nPUB a 1\r\nx\r\nPING\r\n", 1, ["MSG a 1 1", "x", "PONG"], ["MSG a 99 1", "x"]),
    "sub-cr-cr-lf": (b"SUB x 1\r\r\nPUB x 1\r\nx\r\nPING\r\n", 1, ["MSG x 1 1", "x", "PONG"], ["MSG x 99 1", "x"]),
    # nothing may come before an operation
    "leading-lf": (b"\nPING\r\n", 1, [UNKNOWN, CLOSED], []),
    "blank-line": (b"\r\nPING\r\n", 1, [UNKNOWN, CLOSED], []),
    "bare-cr": (b"\rPING\r\n", 1, [UNKNOWN, CLOSED], []),
    "leading-space": (b" PING\r\n", 1, [UNKNOWN, CLOSED], []),
    "leading-tab": (b"\tPING\r\n", 1, [UNKNOWN, CLOSED], []),
    "blank-line-after-ping": (b"PING\r\n\r\n", 2, ["PONG", UNKNOWN, CLOSED], []),
    # PING, PONG and +OK end at their name; the rest of the line is ignored
    "pingx": (b"PINGX\r\n", 1, ["PONG"], []),
    "pingping": (b"PINGPING\r\n", 1, ["PONG"], []),
    "ping-cr-junk": (b"PING\rfoo\r\n", 1, ["PONG"], []),
    "ping-long-tail": (b"PING" + b"x" * 10000 + b"\r\nPING\r\n", 2, ["PONG", "PONG"], []),
    "pongx": (b"PONGX\r\nPING\r\n", 1, ["PONG"], []),
    "plus-ok": (b"+OK\r\nPING\r\n", 1, ["PONG"], []),
    "plus-okay": (b"+OKAY\r\nPING\r\n", 1, ["PONG"], []),
    "plus-o": (b"+O\r\nPING\r\n", 1, [UNKNOWN, CLOSED], []),
    # a client's INFO is read and ignored (a JSON object or null)
    "info-object": (b"INFO {}\r\nPING\r\n", 1, ["PONG"], []),
    "info-null": (b"INFO null\r\nPING\r\n", 1, ["PONG"], []),
    "info-array": (b"INFO []\r\nPING\r\n", 1, [CLOSED], []),
    "info-junk": (b"INFO x\r\nPING\r\n", 1, [CLOSED], []),
    # a client's -ERR closes it without a word
    "client-err": (b"-ERR 'x'\r\nPING\r\n", 1, [CLOSED], []),
    # an UNSUB count that is not a size unsubscribes at once
    "unsub-bad-count": (b"SUB q 1\r\nUNSUB 1 B\r\nPUB q 1\r\nx\r\nPING\r\n", 1, ["PONG"], ["MSG q 99 1", "x"]),
    "unsub-plus-count": (b"SUB q 1\r\nUNSUB 1 +1\r\nPUB q 1\r\nx\r\nPING\r\n", 1, ["PONG"], ["MSG q 99 1", "x"]),
    "unsub-three-args": (b"UNSUB 1 2 3\r\nPING\r\n", 1, [CLOSED], []),
    # sizes are 1 to 9 ASCII digits, nothing else
    "pub-plus-size": (b"PUB x +1\r\nx\r\nPING\r\n", 1, [CLOSED], []),
    "pub-underscore-size": (b"PUB x 1_0\r\n0123456789\r\nPING\r\n", 1, [CLOSED], []),
    "pub-13-digit-size": (b"PUB x 1000000000000\r\n", 1, [CLOSED], []),
    "pub-10-digit-size": (b"PUB x 2000000000\r\n", 1, [CLOSED], []),
    "pub-10-digit-size-of-1": (b"PUB x 0000000001\r\nx\r\nPING\r\n", 1, [CLOSED], []),  # (not the fast path's)
    "pub-over-max-payload": (b"PUB x 2000000\r\n", 1, ["-ERR 'Maximum Payload Violation'", CLOSED], []),
    "pub-no-size": (b"PUB \r\nPING\r\n", 1, [CLOSED], []),
    # the first byte after the blanks starts the arguments, even an LF
    "connect-lf-json": (b"CONNECT\n{}\r\nPING\r\n", 1, ["PONG"], []),
    "connect-no-args": (b"CONNECT\r\nPING\r\n", 1, [CLOSED], []),
    # MSG is not a client's; HMSG's line is taken when a CRLF follows it
    "client-msg": (b"MSG foo 1 1\r\nx\r\n", 1, [UNKNOWN, CLOSED], []),
    "client-hmsg": (b"HMSG foo 1 1\r\n\r\nPING\r\n", 1, ["PONG"], []),
    "client-hmsg-no-crlf": (b"HMSG foo 1\r\nPING\r\n", 1, [UNKNOWN, CLOSED], []),
    # a payload must end in CRLF, and a wrong byte is an error at once
    "payload-bare-cr": (b"PUB x 1\r\nx\rPING\r\n", 1, [UNKNOWN, CLOSED], []),
    "payload-wrong-end-unfinished": (b"PUB x 1\r\nxy", 1, [UNKNOWN, CLOSED], []),
    # an unknown operation is refused at its first byte, LF or not
    "unknown-unfinished": (b"FOO", 1, [UNKNOWN, CLOSED], []),
    "lower-case": (b"sub x 1\r\npub x 1\r\nx\r\nPING\r\n", 1, ["MSG x 1 1", "x", "PONG"], ["MSG x 99 1", "x"]),
    "tab-separators": (b"PUB\tx\t1\t\r\nx\r\nPING\r\n", 1, ["PONG"], ["MSG x 99 1", "x"]),
}


@pytest.mark.parametrize("name", list(CASES))
async def test_malformed(raw, name):
    data, pongs, want, want_seen = CASES[name]
    got, seen = await outcome(raw, data, pongs)
    assert got == want
    assert seen == want_seen


async def test_split_operation_name(raw):
    # the start of an operation's name waits for the rest
    c = await raw()
    await c.send(b"PU")
    await c.send(b"B x")
    assert await exchange(c, b" 1\r\nx\r\nSUB x 1\r\nPUB x 1\r\ny\r\nPING\r\n", 1) == ["MSG x 1 1", "y", "PONG"]


async def test_ping_tail_across_reads(raw):
    # whatever follows PING up to its LF is ignored, however many writes
    # it comes in, and the PONG goes at the LF
    c = await raw()
    for _ in range(5):
        await c.send(b"PING" + b"z" * 3000)
    for _ in range(20):
        await c.send(b"y" * 3000)
    assert await exchange(c, b"\r\nPING\r\n", 2) == ["PONG", "PONG"]


async def test_ack_of_stream_sequence_zero(server):
    """An ack of stream and delivery sequence 0 with a reply: nats-server
    answers it (empty) on a limits stream's explicit-ack consumer and says
    nothing for the other retentions and ack policies (its updateAcks sends
    the answer; the caller's own one is skipped for sequence 0)."""
    import nats

    nc = await nats.connect(server.url, max_reconnect_attempts=1, connect_timeout=2)
    try:
        js = nc.jetstream()
        got = {}
        for i, (retention, policy) in enumerate([("limits", "explicit"), ("limits", "all"), ("limits", "none"),
                                                  ("interest", "explicit"), ("workqueue", "explicit")]):
            name = f"Z{i}"
            await js.add_stream(name=name, subjects=[f"z{i}.>"], retention=retention)
            await js.add_consumer(name, durable_name="C", ack_policy=policy)
            await js.publish(f"z{i}.a", b"m")
            for body in (b"", b"+ACK", b"+TERM"):
                inbox = nc.new_inbox()
                s = await nc.subscribe(inbox)
                await nc.publish(f"$JS.ACK.{name}.C.1.0.0.1700000000000000000.0", body, reply=inbox)
                # a PING round trip with the consumer's own answer behind it:
                # a request for its info goes through the same server after
                # the ack, and the answer to the ack (if any) comes first
                await js.consumer_info(name, "C")
                try:
                    msg = await s.next_msg(timeout=0.5)
                    status = (msg.headers or {}).get("Status")
                    got[(retention, policy, body)] = "no responders" if status == "503" else msg.data
                except nats.errors.TimeoutError:
                    got[(retention, policy, body)] = None
                await s.unsubscribe()
        for k, v in got.items():
            if k[:2] == ("limits", "explicit"):
                assert v == b"", k
            elif k[1] == "none":
                # an ack-none consumer takes no acks: no one listens there
                assert v == "no responders", k
            else:
                assert v is None, k
    finally:
        await nc.close()


MORE = {
    # a second CONNECT drops the subscriptions made so far (nats-server 2.15)
    "second-connect-drops-subs": (b"SUB a 1\r\nCONNECT {}\r\nPUB a 1\r\nx\r\nPING\r\n", 1, ["PONG"], ["MSG a 99 1", "x"]),
    # a sid in use keeps its subscription, whatever the new subject
    "sid-in-use-bad-subject": (b"SUB a 7\r\nSUB a..b 7\r\nPUB a 1\r\nx\r\nPING\r\n", 1, ["MSG a 7 1", "x", "PONG"],
                               ["MSG a 99 1", "x"]),
    "bad-subject": (b"SUB a..b 7\r\nPING\r\n", 1, ["-ERR 'Invalid Subject'", "PONG"], []),
}


@pytest.mark.parametrize("name", list(MORE))
async def test_subscriptions(raw, name):
    data, pongs, want, want_seen = MORE[name]
    got, seen = await outcome(raw, data, pongs)
    assert got == want
    assert seen == want_seen


@pytest.mark.parametrize("kind", ["natslab", "nats-server"])
async def test_max_control_line_option(tmp_path, kind):
    """max_control_line is the server's own: 100 here (natslab's
    ServerOptions.max_control_line, nats-server's config key). The arguments
    count, not the operation's name and blanks."""
    from conftest import ServerProcess
    from natslab.server import ServerThread

    if kind == "natslab":
        srv = ServerThread(port=0, jetstream=False, max_control_line=100).start()
        host, port, stop = "127.0.0.1", srv.port, srv.stop
    else:
        conf = tmp_path / "mcl.conf"
        conf.write_text("max_control_line: 100\n")
        proc = ServerProcess(kind, tmp_path / "store", extra=["-c", str(conf)])
        proc.start()
        host, port, stop = proc.host, proc.port, proc.stop
    try:
        at = SimpleNamespace(host=host, port=port)  # (what RawClient.open needs of a server)
        ok = await RawClient.open(at)
        # 100 bytes of arguments after "SUB   " (a blank at the end counts): taken
        arg = b"a" * 97 + b" 1 "
        assert len(arg) == 100
        assert await exchange(ok, b"SUB   " + arg + b"\r\nPING\r\n", 1) == ["PONG"]
        # 101 bytes, no LF yet: refused as they come
        bad = await RawClient.open(at)
        assert await exchange(bad, b"SUB " + b"a" * 101, 1) == ["-ERR 'maximum control line exceeded'", CLOSED]
        bad = await RawClient.open(at)
        assert await exchange(bad, b"PUB " + b"b" * 99 + b" 1\r\n", 1) == ["-ERR 'maximum control line exceeded'",
                                                                          CLOSED]
        ok.close()
    finally:
        stop()


@pytest.mark.parametrize("data", [b"PING\r\n", b"ping\r\n", b"+OK\r\n", b"INFO {}\r\n", b"\r\n", b"x"],
                         ids=["ping", "lower-ping", "plus-ok", "info", "blank-line", "unknown"])
async def test_before_connect_with_auth(server_kind, tmp_path, data):
    # a client that must authenticate may send only CONNECT first: anything
    # else is an Authorization Violation at its first byte
    from conftest import ServerProcess

    srv = ServerProcess(server_kind, tmp_path / "store", extra=["--user", "u", "--pass", "p"])
    srv.start()
    try:
        c = await RawClient.open(srv, connect=None)
        assert await exchange(c, data, 1) == ["-ERR 'Authorization Violation'", CLOSED]
        ok = await RawClient.open(srv, connect=None)
        assert await exchange(ok, b'conNECT {"user":"u","pass":"p"}\r\nPING\r\n', 1) == ["+OK", "PONG"]
    finally:
        srv.stop()
