"""A differential fuzz test of the client protocol: seeded random command
streams, valid and not, cut into random writes, run against natslab and
nats-server; what the fuzzing connection gets back (its frames, -ERR text,
the close) and what a subscriber to > sees must be the same on both.

Only what nats-server does the same way whatever the reads is generated: a
bare CR inside a control line is left out (nats-server's parser keeps or
drops it depending on where a read ends; test_protocol_malformed covers it
whole), nor is a client's HMSG cut by a write (what nats-server makes of
the CRLF it wants after HMSG's line depends on where a read ends), nor a
PUB to an invalid subject (a pedantic client gets nats-server's -ERR once
more when the payload comes in a later read: it parses the line again), and
sizes are written without leading zeros (nats-server echoes the
size as written in the MSG line; natslab writes the number). A stream's last
command, the one that may close the connection, goes alone in one write
after a PING round trip and nothing follows it: a server that closes with
input unread resets the connection, and a reset can lose the -ERR.

Set NATSLAB_FUZZ_SEED to replay a seed; the seed is printed on failure.
"""

from __future__ import annotations

import asyncio
import os
import random
import time

from conftest import SERVER_KINDS, ServerProcess

SESSIONS = 200  # command streams per run (each on a fresh connection)
BUDGET = 6.0  # seconds per server, at most (fewer streams when it is slow)
CONNECT = b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\n'  # (the subscriber's)

SUBJECTS = [b"a", b"a.b", b"a.b.c", b"b", b"b.c.d", b"x" * 40]
WILDCARDS = [b"a.*", b"a.>", b"*.b", b"b.>", b"*"]


def blanks(rng: random.Random) -> bytes:
    return rng.choice([b" ", b" ", b" ", b"\t", b"  ", b" \t "])


def payload(rng: random.Random) -> bytes:
    k = rng.choice([0, 1, 5, 17, 60, 200, 1500, 5000])
    return bytes(rng.choice(b"abcxyz \r\n\t\x00\xff.") for _ in range(k))


def op(rng: random.Random, name: bytes) -> bytes:
    return name.lower() if rng.random() < 0.1 else name


def middle_command(rng: random.Random, sids: list) -> bytes:
    """A command that leaves the connection open on nats-server (one that
    starts with PING, whatever follows on its line, is answered with one
    PONG: no other command or payload holds the word)."""
    r = rng.random()
    b = lambda: blanks(rng)  # noqa: E731
    if r < 0.3:
        subj = rng.choice(SUBJECTS)
        reply = rng.choice([None, None, b"r.1", b"_INBOX.x"])
        body = payload(rng)
        tail = b" " if rng.random() < 0.1 else b""
        line = op(rng, b"PUB") + b() + subj + (b() + reply if reply else b"") + b() + b"%d" % len(body) + tail
        return line + b"\r\n" + body + b"\r\n"
    if r < 0.4:
        subj = rng.choice(SUBJECTS)
        hdr = b"NATS/1.0\r\nK: v%d\r\n\r\n" % rng.randrange(100)
        body = payload(rng)
        return (op(rng, b"HPUB") + b() + subj + b() + b"%d" % len(hdr) + b() + b"%d" % (len(hdr) + len(body))
                + b"\r\n" + hdr + body + b"\r\n")
    if r < 0.55:
        subj = rng.choice(SUBJECTS + WILDCARDS + [b"a..b", b"a.>.b"])  # (the last two: Invalid Subject)
        sid = b"%d" % rng.randrange(1, 9)
        sids.append(sid)
        # a queue group of its own: which member of a shared one gets a message is random
        queue = b() + b"q%d" % rng.randrange(10**6) if rng.random() < 0.3 else b""
        return op(rng, b"SUB") + b() + subj + queue + b() + sid + b"\r\n"
    if r < 0.65:
        sid = rng.choice(sids) if sids and rng.random() < 0.8 else b"77"
        count = rng.choice([b"", b"", b" 1", b" 2", b" 0", b" B", b" +1", b" 1000000000"])
        return op(rng, b"UNSUB") + b() + sid + count + b"\r\n"
    return rng.choice([
        b"PING\r\n", b"ping\r\n", b"PINGX\r\n", b"PINGPING\r\n", b"PING\rfoo\r\n", b"PING " + b"z" * 3000 + b"\r\n",
        b"PONG\r\n", b"PONGX\r\n", b"+OK\r\n", b"+OKAY\r\n", b"INFO {}\r\n", b"INFO null\r\n", b"INFO\t{}\r\n",
        b"PUB\tq\t0\r\n\r\n", b"CONNECT\n{}\r\n", b"SUB x 1\r\r\n",
        b"PUB " + b"y" * 4000 + b" 0\r\n\r\n",  # a long line just under the limit
    ])


# the last command of a stream: closes the connection (True) or not
LAST = [
    (b"\n", True), (b"\r\n", True), (b" PING\r\n", True), (b"\tSUB a 1\r\n", True), (b"FOO bar\r\n", True),
    (b"MSG a 1 1\r\n", True), (b"+O\r\n", True), (b"PUB x +1\r\n", True), (b"PUB x 1_0\r\n", True),
    (b"PUB x 1000000000000\r\n", True), (b"PUB x 2000000000\r\n", True), (b"PUB x 2000000\r\n", True),
    (b"PUB x 1\r\nxy", True), (b"PUB x 1\r\nx\rPING\r\n", True), (b"PUB x 0\r\r\n", True), (b"PUB \r\n", True),
    (b"PUB x\r\n", True), (b"PUB\r\n", True), (b"UNSUB 1 2 3\r\n", True), (b"UNSUB\r\n", True),
    (b"SUB a\r\n", True), (b"SUB a b c d\r\n", True), (b"-ERR 'x'\r\n", True), (b"INFO []\r\n", True),
    (b"CONNECT {x\r\n", True), (b"CONNECT\r\n", True), (b"HPUB x 1 0\r\n", True), (b"HMSG a 1\r\nP", True),
    (b"PUB " + b"a" * 4097, True), (b"CONNECT" + b"{" * 4097, True),  # (one byte over the limit, no more)
    (b"PINGX\r\n", False), (b"+OKAY\r\n", False), (b"UNSUB 77 B\r\n", False), (b"", False),
]


def session(rng: random.Random) -> tuple[bytes, list[bytes], int, bytes, bool]:
    """The stream's CONNECT (verbose or not, pedantic or not), the writes of
    its middle part, the PONGs they get, its last command, and whether that
    one closes."""
    connect = b'CONNECT {"verbose":%s,"pedantic":%s,"headers":true,"protocol":1}\r\n' % (
        rng.choice([b"false", b"false", b"true"]), rng.choice([b"false", b"true"]))
    sids: list = []
    commands = [middle_command(rng, sids) for _ in range(rng.randrange(1, 30))]
    pongs = sum(c[:4].upper() == b"PING" for c in commands)
    data = b"".join(commands)
    writes = []
    i = 0
    while i < len(data):
        k = rng.choice([1, 2, 3, 7, 30, 100, 500, 4000, 70000])
        writes.append(data[i : i + k])
        i += k
    last, closes = rng.choice(LAST)
    return connect, writes, pongs, last, closes


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """One frame from the server (a line, or a MSG/HMSG with its payload);
    None at the close."""
    try:
        line = await asyncio.wait_for(reader.readuntil(b"\r\n"), 5)
    except asyncio.TimeoutError:
        return b"(nothing for 5 s)"
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    if line.startswith((b"MSG ", b"HMSG ")):
        size = int(line.split()[-1])
        try:
            line += await asyncio.wait_for(reader.readexactly(size + 2), 5)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
    return line


async def frames_until(reader, pongs: int) -> tuple[list, bool]:
    """Frames (INFO and server PINGs left out) up to the ``pongs``-th PONG;
    MSG frames between two of those sorted (the order in which one message
    reaches several subscriptions of one connection is the server's own).
    Returns them and whether the server closed first."""
    out: list = []
    group: list = []
    seen = 0
    while seen < pongs:
        f = await read_frame(reader)
        if f is None:
            return out + sorted(group), True
        if f.startswith(b"INFO ") or f == b"PING\r\n":
            continue
        if f == b"(nothing for 5 s)":
            return out + sorted(group) + [f], False
        if f.startswith((b"MSG ", b"HMSG ")):
            group.append(f)
            continue
        out += sorted(group)
        group = []
        out.append(f)
        seen += f == b"PONG\r\n"
    return out + sorted(group), False


async def run_session(srv: ServerProcess, connect: bytes, writes: list, pongs: int, last: bytes, closes: bool) -> dict:
    sr, sw = await asyncio.open_connection(srv.host, srv.port)
    await sr.readline()
    sw.write(CONNECT + b"SUB > 99\r\nPING\r\n")
    assert (await frames_until(sr, 1)) == ([b"PONG\r\n"], False)
    r, w = await asyncio.open_connection(srv.host, srv.port)
    await r.readline()
    w.write(connect + b"PING\r\n")
    got, closed = await frames_until(r, 1)  # (with an +OK when verbose)
    assert not closed
    closed = False
    try:
        for chunk in writes:
            w.write(chunk)
            await w.drain()
        w.write(b"PING\r\n")
        await w.drain()
        # the middle part leaves it open: every PING command in it is answered
        part, closed = await frames_until(r, pongs + 1)
        got += part
        if not closed:
            w.write(last)
            if not closes:
                w.write(b"PING\r\n")
            await w.drain()
            part, closed = await frames_until(r, 1 if not closes else 10**9)
            got += part
    except ConnectionError:
        closed = True
    w.close()
    sw.write(b"PING\r\n")
    seen, _ = await frames_until(sr, 1)
    sw.close()
    return {"got": got, "closed": closed, "subscriber saw": seen}


async def test_protocol_fuzz(tmp_path):
    seed = int(os.environ.get("NATSLAB_FUZZ_SEED") or random.randrange(1 << 32))
    rng = random.Random(seed)
    sessions = [session(rng) for _ in range(SESSIONS)]
    results: dict = {}
    count = SESSIONS
    for kind in reversed(SERVER_KINDS):  # nats-server first: it sets how many streams fit the budget
        srv = ServerProcess(kind, tmp_path / kind)
        srv.start()
        try:
            out = []
            t0 = time.monotonic()
            for i, one in enumerate(sessions[:count]):
                out.append(await asyncio.wait_for(run_session(srv, *one), 30))
                if time.monotonic() - t0 > BUDGET:
                    count = i + 1
                    break
            results[kind] = out
        finally:
            srv.stop()
    a, b = results["nats-server"][:count], results["natslab"][:count]
    for i, (x, y) in enumerate(zip(a, b)):
        assert y == x, (f"seed {seed} (NATSLAB_FUZZ_SEED={seed}), stream {i}: "
                        f"{sessions[i][0]!r}, writes {sessions[i][1]!r}, last {sessions[i][3]!r}")
