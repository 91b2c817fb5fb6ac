"""JetStream benchmark (streams and consumers): natslab's broker vs the real
nats-server, one run, both servers started as subprocesses with the same flags.

    python bench/bench_js.py [--quick] [--only streams,big,consumers]

Streams (issue 3): JetStream publish through nats-py, awaited one at a time (in
rounds that alternate between the servers, compared round by round) and
pipelined (publish_async, then publish_async_completed), to a file and a memory
stream; message get by sequence (js.get_msg, one at a time); raw-socket
pipelined publishes with ~1,000 PubAcks in flight (where the server, not
nats-py, is the bottleneck); a big file stream (1,000,000 x 128 B, 200,000 with
--quick): publish time, disk used, start-to-ready after a clean restart (until
$JS.API.STREAM.INFO answers with the full count) and RSS after the restart.

Consumers (issue 4): nats-py pull fetch(256) + ack of every message, and with
ack_sync (each ack confirmed before the next); the same (plain acks) over a raw socket (pull requests of 256, two outstanding, an empty-payload ack
per message); push delivery (deliver_subject, ack none) to a raw subscriber;
redelivery precision (ack_wait 1 s, how late after ack_wait a no_wait pull sees
the message again; median of 5 trials, target within 50 ms).

Every rate comes with the broker process's CPU time per operation (utime +
stime from /proc/<pid>/stat around the phase): on a busy shared machine that
is the steadier comparison. Ratios are natslab relative to nats-server, 1.0x
is parity, higher is better (for times, memory and CPU: nats-server/natslab).
Loads are bounded in count and run on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import socket
import statistics
import sys
import time
from dataclasses import dataclass, field

import nats
from nats.js.api import AckPolicy, ConsumerConfig, StorageType, StreamConfig

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import KINDS, Broker, cpu_seconds, cpu_seconds_fine, dir_kb  # noqa: E402

SIZE = 128
PAYLOAD = b"x" * SIZE
WINDOW = 1000          # raw publisher: PubAcks in flight
PULL_BATCH = 256       # raw and nats-py pulls
PENDING = 64 * 1024 * 1024


# ---------------------------------------------------------------- results

@dataclass
class Row:
    metric: str
    unit: str
    higher_is_better: bool = True
    value: dict = field(default_factory=dict)    # kind -> figure
    cpu_us: dict = field(default_factory=dict)   # kind -> broker CPU us per op
    note: dict = field(default_factory=dict)     # kind -> str
    paired: float | None = None      # median of per-round ratios (rounds alternating the servers)
    paired_cpu: float | None = None  # the same for CPU per op (nats-server / natslab)


ROWS: dict[str, Row] = {}
PROBLEMS: list[str] = []


def record(kind: str, metric: str, value: float, unit: str = "msg/s", cpu_us: float | None = None,
           higher_is_better: bool = True) -> None:
    """Keeps the best figure over rounds: the highest rate (lowest time), the
    lowest CPU per op -- what the server does when the machine lets it."""
    row = ROWS.setdefault(metric, Row(metric, unit, higher_is_better))
    old = row.value.get(kind)
    if old is None or (value > old if higher_is_better else value < old):
        row.value[kind] = value
    if cpu_us is not None:
        row.cpu_us[kind] = min(cpu_us, row.cpu_us.get(kind, cpu_us))


def problem(kind: str, what: str) -> None:
    msg = f"[{kind}] {what}"
    PROBLEMS.append(msg)
    print("  !! " + msg, flush=True)


class Cpu:
    """Broker CPU seconds over a block: `with Cpu(pid) as c: ...; c.per_op_us(n)`."""

    def __init__(self, pid: int):
        self.pid = pid

    def __enter__(self):
        self.c0 = cpu_seconds(self.pid)
        self.f0 = cpu_seconds_fine(self.pid)
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        # utime+stime from /proc/<pid>/stat counts in 10 ms ticks; the
        # schedstat sum has ns resolution; take it unless a thread exited
        # (then it can fall short of the tick count by more than a few ticks)
        coarse = cpu_seconds(self.pid) - self.c0
        fine = cpu_seconds_fine(self.pid) - self.f0
        self.cpu = fine if fine > coarse - 0.05 else coarse
        return False

    def per_op_us(self, n: int) -> float:
        return self.cpu / n * 1e6


def _ratio(row: Row, ref: float | None, ours: float | None, higher: bool, paired: float | None = None) -> str:
    if paired is not None:
        return f"{paired:5.2f}x"
    if not ref or not ours:
        return "   n/a"
    r = ours / ref if higher else ref / ours
    return f"{r:5.2f}x"


def print_report(title: str, metrics: list[str]) -> None:
    if not any(m in ROWS for m in metrics):
        return
    print(f"\n== {title}")
    print(f"{'metric':58} {'nats-server':>16} {'natslab':>16} {'ratio':>7} | "
          f"{'CPU us/op: ns':>13} {'natslab':>9} {'ratio':>7}")
    for m in metrics:
        row = ROWS.get(m)
        if row is None:
            continue
        ref, ours = row.value.get("nats-server"), row.value.get("natslab")
        fmt = (lambda v: f"{v:>10.1f}" if v is not None else f"{'-':>10}")
        line = (f"{m:58} {fmt(ref)} {row.unit:<5} {fmt(ours)} {row.unit:<5} "
                f"{_ratio(row, ref, ours, row.higher_is_better, row.paired):>7} | ")
        cref, cours = row.cpu_us.get("nats-server"), row.cpu_us.get("natslab")
        if cref is not None or cours is not None:
            cf = (lambda v: f"{v:.1f}" if v is not None else "-")
            line += f"{cf(cref):>13} {cf(cours):>9} {_ratio(row, cref, cours, False, row.paired_cpu):>7}"
        print(line)


# the issues' targets: (metric, minimum natslab/nats-server ratio)
TARGET_RATIOS = [
    ("nats-py publish awaited 1 by 1, file", 0.9),
    ("nats-py publish awaited 1 by 1, mem", 0.9),
    (f"nats-py publish_async (window {WINDOW}), file", 0.8),
    (f"nats-py publish_async (window {WINDOW}), mem", 0.8),
    (f"raw pipelined publish ({WINDOW} acks in flight), file", 0.7),
    (f"raw pipelined publish ({WINDOW} acks in flight), mem", 0.7),
    (f"nats-py pull fetch({PULL_BATCH}) + ack each", 0.8),
    (f"raw pull (batch {PULL_BATCH}, 2 outstanding) + ack each", 0.7),
]


def print_targets(q: dict) -> None:
    lines = []
    for m, want in TARGET_RATIOS:
        row = ROWS.get(m)
        if row is None or len(row.value) < 2:
            continue
        wall = row.paired if row.paired is not None else row.value["natslab"] / row.value["nats-server"]
        cpu = ""
        if len(row.cpu_us) == 2 and row.cpu_us["natslab"]:
            c = row.paired_cpu if row.paired_cpu is not None else row.cpu_us["nats-server"] / row.cpu_us["natslab"]
            cpu = f", by CPU/op {c:.3f}x {'ok' if c >= want else 'MISS'}"
        lines.append(f"  {m}: >= {want}x; wall {wall:.3f}x {'ok' if wall >= want else 'MISS'}{cpu}")
    row = ROWS.get("big file stream: restart, spawn to ready (full count)")
    if row and "natslab" in row.value:
        v = row.value["natslab"]
        scale = "" if q["big"] >= 1_000_000 else f" (target is for 1,000,000 messages; this run has {q['big']:,})"
        lines.append(f"  restart to ready <= 3 s: {v:.2f} s {'ok' if v <= 3 else 'MISS'}{scale}")
    row = ROWS.get("redelivery: median ms past ack_wait (1 s)")
    if row and "natslab" in row.value:
        v = row.value["natslab"]
        lines.append(f"  redelivery within 50 ms of ack_wait: median {v:.1f} ms {'ok' if v <= 50 else 'MISS'}")
    if lines:
        print("\n== targets (natslab)")
        print("\n".join(lines))


# ---------------------------------------------------------------- raw client

class Raw:
    """A minimal NATS client on a socket: pipelined writes, an incremental
    parser for MSG/HMSG that answers PING and counts PONGs."""

    def __init__(self):
        self.buf = bytearray()
        self.pongs = 0
        self.errors: list[bytes] = []

    @classmethod
    async def connect(cls, port: int) -> "Raw":
        self = cls()
        self.r, self.w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
        await self.r.readline()  # INFO
        self.w.write(b'CONNECT {"verbose":false,"pedantic":false,"protocol":1,"headers":true,'
                     b'"no_responders":true}\r\n')
        await self.sync()
        return self

    async def sync(self) -> list:
        """PING and read until its PONG; returns any messages read meanwhile."""
        want = self.pongs + 1
        self.w.write(b"PING\r\n")
        await self.w.drain()
        out = []
        while self.pongs < want:
            out += await self.read()
        return out

    async def read(self) -> list:
        data = await self.r.read(1 << 20)
        if not data:
            raise ConnectionError(f"server closed the connection (errors: {self.errors})")
        self.buf += data
        return self.parse()

    def parse(self) -> list:
        buf = self.buf
        n = len(buf)
        pos = 0
        out = []
        while True:
            i = buf.find(b"\r\n", pos)
            if i < 0:
                break
            op = bytes(buf[pos:pos + 4])
            if op == b"MSG ":
                parts = bytes(buf[pos + 4:i]).split()
                end = i + 2 + int(parts[-1])
                if end + 2 > n:
                    break
                out.append((parts[0], parts[2] if len(parts) == 4 else None, None, bytes(buf[i + 2:end])))
                pos = end + 2
            elif op == b"HMSG":
                parts = bytes(buf[pos + 5:i]).split()
                hlen, total = int(parts[-2]), int(parts[-1])
                end = i + 2 + total
                if end + 2 > n:
                    break
                out.append((parts[0], parts[2] if len(parts) == 5 else None,
                            bytes(buf[i + 2:i + 2 + hlen]), bytes(buf[i + 2 + hlen:end])))
                pos = end + 2
            else:
                line = bytes(buf[pos:i])
                if line == b"PING":
                    self.w.write(b"PONG\r\n")
                elif line == b"PONG":
                    self.pongs += 1
                elif line.startswith(b"-ERR"):
                    self.errors.append(line)
                pos = i + 2
        del buf[:pos]
        return out

    def close(self) -> None:
        self.w.close()


def is_status(hdr: bytes | None) -> bool:
    return hdr is not None and hdr.startswith(b"NATS/1.0 ")


async def raw_js_publish(kind: str, port: int, subject: str, n: int, window: int = WINDOW) -> float:
    """Pipelined JetStream publishes: PUB with a reply subject the client is
    subscribed to, at most `window` PubAcks outstanding. Returns msg/s."""
    c = await Raw.connect(port)
    c.w.write(b"SUB _INBOX.bjs.* 1\r\n")
    await c.sync()
    subj = subject.encode()
    acked = 0
    bad: list[bytes] = []
    room = asyncio.Event()

    async def reader():
        nonlocal acked
        while acked < n:
            for _subj, _reply, hdr, pl in await c.read():
                acked += 1
                if hdr is not None or b'"error"' in pl or not pl.startswith(b'{"stream":'):
                    if len(bad) < 3:
                        bad.append((hdr or b"") + pl)
                    else:
                        bad.append(b"")
            room.set()

    t0 = time.perf_counter()
    rt = asyncio.create_task(reader())
    sent = 0
    head = b"PUB " + subj + b" _INBOX.bjs.%d " + str(SIZE).encode() + b"\r\n" + PAYLOAD + b"\r\n"
    while sent < n:
        free = window - (sent - acked)
        if free < min(100, n - sent):
            room.clear()
            await room.wait()
            continue
        k = min(free, n - sent)
        c.w.write(b"".join([head % j for j in range(sent, sent + k)]))
        sent += k
        await c.w.drain()
    await asyncio.wait_for(rt, 600)
    dt = time.perf_counter() - t0
    c.close()
    if bad:
        problem(kind, f"raw publish to {subject}: {len(bad)} of {n} replies were not PubAcks, e.g. {bad[:3]}")
    return n / dt


def raw_request_sync(port: int, subject: str, payload: bytes, timeout: float = 1.0) -> bytes | None:
    """One request on a fresh blocking socket; None if nothing answers in time
    (or the server is not accepting yet)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            f = s.makefile("rb")
            f.readline()
            s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\n'
                      b"SUB _INBOX.ready 1\r\nPUB %s _INBOX.ready %d\r\n%s\r\n"
                      % (subject.encode(), len(payload), payload))
            while True:
                line = f.readline()
                if not line:
                    return None
                if line.startswith(b"PING"):
                    s.sendall(b"PONG\r\n")
                elif line.startswith(b"MSG "):
                    size = int(line.split()[-1])
                    return f.read(size + 2)[:-2]
                elif line.startswith(b"HMSG "):
                    size = int(line.split()[-1])
                    return f.read(size + 2)[:-2]
    except OSError:
        return None


# ---------------------------------------------------------------- streams

async def streams_phase(kind: str, b: Broker, q: dict, rnd: int) -> None:
    pid = b.proc.pid
    nc = await nats.connect(b.url, pending_size=PENDING)
    js = nc.jetstream(timeout=30, publish_async_max_pending=WINDOW)
    names = {"FILE": f"FILE{rnd}", "MEM": f"MEM{rnd}"}  # fresh streams each round
    for label, st in (("FILE", StorageType.FILE), ("MEM", StorageType.MEMORY)):
        name = names[label]
        await js.add_stream(StreamConfig(name=name, subjects=[f"{name.lower()}.>"], storage=st))

    for label in ("FILE", "MEM"):
        name = names[label]
        subj = f"{name.lower()}.async"
        n = q["pub_async"]
        with Cpu(pid) as c:
            futs = [await js.publish_async(subj, PAYLOAD) for _ in range(n)]
            await asyncio.wait_for(js.publish_async_completed(), 120)
        errs = [f.exception() for f in futs if f.exception() is not None]
        if errs:
            problem(kind, f"publish_async to {name}: {len(errs)} failures, first {errs[0]!r}")
        record(kind, f"nats-py publish_async (window {WINDOW}), {label.lower()}", n / c.wall,
               cpu_us=c.per_op_us(n))

    # get by sequence, one at a time, random over what FILE / MEM hold
    for label in ("FILE", "MEM"):
        name = names[label]
        info = await js.stream_info(name)
        total = info.state.messages
        expect = q["pub_async"]
        if total != expect:
            problem(kind, f"stream {name} holds {total} messages after publishing {expect}")
        rnd = random.Random(7)
        n = q["get"]
        seqs = [rnd.randint(1, total) for _ in range(n)]
        with Cpu(pid) as c:
            for s in seqs:
                m = await js.get_msg(name, s)
        if m.data != PAYLOAD or m.seq != seqs[-1]:
            problem(kind, f"get_msg({name}, {seqs[-1]}) returned seq {m.seq} with {len(m.data or b'')} bytes")
        record(kind, f"nats-py get_msg by seq (1 by 1), {label.lower()}", n / c.wall, "op/s", c.per_op_us(n))
    await nc.close()

    for label in ("FILE", "MEM"):
        name = names[label]
        n = q["raw"]
        with Cpu(pid) as c:
            rate = await raw_js_publish(kind, b.port, f"{name.lower()}.raw", n)
        record(kind, f"raw pipelined publish ({WINDOW} acks in flight), {label.lower()}", rate,
               cpu_us=c.per_op_us(n))


# ---------------------------------------------------------------- big stream

async def big_create(url: str) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=30)
    await js.add_stream(StreamConfig(name="BIG", subjects=["big.>"], storage=StorageType.FILE))
    await nc.close()


def wait_ready(port: int, n: int, t0: float, limit: float = 120.0) -> float:
    return wait_ready_stream(port, "BIG", n, t0, limit)


def wait_ready_stream(port: int, stream: str, n: int, t0: float, limit: float = 120.0) -> float:
    """Poll $JS.API.STREAM.INFO.<stream> until it answers with n messages; seconds since t0."""
    last = None
    while time.perf_counter() - t0 < limit:
        rep = raw_request_sync(port, f"$JS.API.STREAM.INFO.{stream}", b"", timeout=2.0)
        if rep:
            try:
                last = json.loads(rep)
                if last.get("state", {}).get("messages") == n:
                    return time.perf_counter() - t0
            except ValueError:
                last = rep[:200]
        time.sleep(0.005)
    raise RuntimeError(f"stream {stream} not ready with {n} messages after {limit}s; last answer {last}")


def big_phase(kind: str, n: int) -> None:
    b = Broker(kind).start()
    try:
        asyncio.run(big_create(b.url))
        with Cpu(b.proc.pid) as c:
            rate = asyncio.run(raw_js_publish(kind, b.port, "big.data", n))
        record(kind, f"big file stream: publish {n:,} (raw, {WINDOW} in flight)", c.wall, "s",
               cpu_us=c.per_op_us(n), higher_is_better=False)
        record(kind, "big file stream: publish rate", rate)
        rss_before = b.current_rss_kb() / 1024
        record(kind, "big file stream: RSS after publishing", rss_before, "MB", higher_is_better=False)
    finally:
        b.stop()
    record(kind, "big file stream: disk used (du, clean stop)", dir_kb(b.store_dir) / 1024, "MB",
           higher_is_better=False)
    # restart on the same store dir: time from spawn to STREAM.INFO with the full count
    r = Broker(kind, store_dir=b.store_dir)
    t0 = time.perf_counter()
    r.start()
    accept = time.perf_counter() - t0
    try:
        ready = wait_ready(r.port, n, t0)
        record(kind, "big file stream: restart, spawn to accepting", accept, "s", higher_is_better=False)
        record(kind, "big file stream: restart, spawn to ready (full count)", ready, "s",
               higher_is_better=False)
        record(kind, "big file stream: RSS after restart", r.current_rss_kb() / 1024, "MB",
               higher_is_better=False)
        rep = raw_request_sync(r.port, "$JS.API.STREAM.MSG.GET.BIG", json.dumps({"seq": n}).encode())
        if not rep or b'"message"' not in rep:
            problem(kind, f"after restart, MSG.GET of seq {n} in BIG answered {rep[:200] if rep else rep}")
    finally:
        r.stop()
        shutil.rmtree(b.store_dir, ignore_errors=True)


# ---------------------------------------------------------------- consumers

async def wait_acked(kind: str, js, stream: str, durable: str, n: int) -> None:
    """The consumer's ack floor reaches n with nothing pending (acks are
    published without confirmation, so poll briefly)."""
    ci = None
    for _ in range(200):
        ci = await js.consumer_info(stream, durable)
        if ci.ack_floor.stream_seq >= n and ci.num_ack_pending == 0:
            return
        await asyncio.sleep(0.025)
    problem(kind, f"consumer {durable}: after acking {n} messages, ack_floor.stream_seq="
                  f"{ci.ack_floor.stream_seq}, num_ack_pending={ci.num_ack_pending} (expected {n}, 0)")


async def raw_pull(kind: str, port: int, stream: str, durable: str, n: int) -> float:
    c = await Raw.connect(port)
    c.w.write(b"SUB _INBOX.pull.* 1\r\n")
    await c.sync()
    nxt = f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}".encode()
    req = json.dumps({"batch": PULL_BATCH, "expires": 30_000_000_000}).encode()
    requested = 0
    received = 0
    statuses: list[bytes] = []

    def pull():
        nonlocal requested
        c.w.write(b"PUB %s _INBOX.pull.%d %d\r\n%s\r\n" % (nxt, requested, len(req), req))
        requested += PULL_BATCH

    t0 = time.perf_counter()
    pull()
    if requested < n:
        pull()
    while received < n:
        acks = []
        for _subj, reply, hdr, _pl in await c.read():
            if is_status(hdr):
                statuses.append(hdr.split(b"\r\n", 1)[0])
                continue
            received += 1
            acks.append(b"PUB %s 0\r\n\r\n" % reply)
            if received % PULL_BATCH == 0 and requested < n:
                pull()
        if acks:
            c.w.write(b"".join(acks))
    await c.sync()
    dt = time.perf_counter() - t0
    c.close()
    if statuses:
        problem(kind, f"raw pull: unexpected status replies {statuses[:3]} ({len(statuses)})")
    return n / dt


async def raw_push(kind: str, port: int, js, stream: str, n: int, durable: str = "PUSH") -> float:
    c = await Raw.connect(port)
    deliver = f"push.deliver.{durable}"
    c.w.write(b"SUB %s 1\r\n" % deliver.encode())
    await c.sync()
    got = 0
    t0 = time.perf_counter()
    await js.add_consumer(stream, ConsumerConfig(durable_name=durable, deliver_subject=deliver,
                                                 ack_policy=AckPolicy.NONE))
    while got < n:
        for _subj, _reply, hdr, _pl in await c.read():
            if not is_status(hdr):
                got += 1
    dt = time.perf_counter() - t0
    c.close()
    return n / dt


async def redelivery_trials(kind: str, url: str, trials: int) -> list[float]:
    """ack_wait 1 s; fetch a message without acking, then no_wait pulls every
    ~5 ms until it is delivered again. Returns ms past ack_wait per trial."""
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=10)
    await js.add_stream(StreamConfig(name="RDL", subjects=["rdl.>"], storage=StorageType.FILE))
    await js.add_consumer("RDL", ConsumerConfig(durable_name="RDLC", ack_policy=AckPolicy.EXPLICIT,
                                                ack_wait=1.0))
    nxt = "$JS.API.CONSUMER.MSG.NEXT.RDL.RDLC"
    no_wait = json.dumps({"batch": 1, "no_wait": True}).encode()
    # nc.request's shared response inbox does not hand these replies back (a
    # nats-py quirk, same on both servers), so pull on a subscription of our own
    sub = await nc.subscribe("_INBOX.rdl")
    await nc.flush()

    async def pull():
        await nc.publish(nxt, no_wait, reply="_INBOX.rdl")
        return await sub.next_msg(5)

    late = []
    for i in range(trials):
        # one message at a time, so a no_wait pull can only return its redelivery
        await js.publish("rdl.x", b"m%d" % i)
        m = await pull()
        t_deliver = time.perf_counter()
        if m.data != b"m%d" % i:
            problem(kind, f"redelivery trial {i}: first pull got {m.data!r} headers {m.headers}")
            break
        while True:
            await asyncio.sleep(0.005)
            r = await pull()
            if r.headers and r.headers.get("Status"):
                if time.perf_counter() - t_deliver > 10:
                    problem(kind, f"redelivery trial {i}: nothing after 10 s (last status {r.headers})")
                    break
                continue
            t_again = time.perf_counter()
            if r.data != m.data or r.metadata.num_delivered != 2:
                problem(kind, f"redelivery trial {i}: got {r.data!r} delivered {r.metadata.num_delivered}, "
                              f"expected {m.data!r} delivered 2")
            late.append((t_again - t_deliver - 1.0) * 1000)
            await r.ack_sync()
            break
    await nc.close()
    return late


async def consumers_phase(kind: str, b: Broker, q: dict, rnd: int) -> None:
    pid = b.proc.pid
    nc = await nats.connect(b.url, pending_size=PENDING)
    js = nc.jetstream(timeout=30)
    cs = f"CONS{rnd}"  # a fresh stream each round
    await js.add_stream(StreamConfig(name=cs, subjects=[f"cons{rnd}.>"], storage=StorageType.FILE))
    total = max(q["pull_raw"], q["push"], q["pull_npy"])
    await raw_js_publish(kind, b.port, f"cons{rnd}.x", total)

    # nats-py pull + ack
    n = q["pull_npy"]
    psub = await js.pull_subscribe(f"cons{rnd}.x", durable="NPY", stream=cs, pending_msgs_limit=100_000)
    got = 0
    with Cpu(pid) as c:
        while got < n:
            msgs = await psub.fetch(min(PULL_BATCH, n - got), timeout=10)
            for m in msgs:
                await m.ack()
            got += len(msgs)
        await nc.flush()
    record(kind, f"nats-py pull fetch({PULL_BATCH}) + ack each", n / c.wall, cpu_us=c.per_op_us(n))
    await wait_acked(kind, js, cs, "NPY", n)
    await psub.unsubscribe()

    # nats-py pull + ack_sync: each ack confirmed before the next (natslab
    # writes the consumer's state before it confirms, so a confirmed ack
    # survives SIGKILL; nats-server confirms first)
    n = q["pull_sync"]
    psub = await js.pull_subscribe(f"cons{rnd}.x", durable="NPYS", stream=cs, pending_msgs_limit=100_000)
    got = 0
    with Cpu(pid) as c:
        while got < n:
            msgs = await psub.fetch(min(PULL_BATCH, n - got), timeout=10)
            for m in msgs:
                await m.ack_sync()
            got += len(msgs)
    record(kind, f"nats-py pull fetch({PULL_BATCH}) + ack_sync each", n / c.wall, cpu_us=c.per_op_us(n))
    await psub.unsubscribe()

    # raw pull + ack
    n = q["pull_raw"]
    await js.add_consumer(cs, ConsumerConfig(durable_name="RAWP", ack_policy=AckPolicy.EXPLICIT))
    with Cpu(pid) as c:
        rate = await raw_pull(kind, b.port, cs, "RAWP", n)
    record(kind, f"raw pull (batch {PULL_BATCH}, 2 outstanding) + ack each", rate, cpu_us=c.per_op_us(n))
    await wait_acked(kind, js, cs, "RAWP", n)

    # push, ack none
    n = q["push"]
    with Cpu(pid) as c:
        rate = await raw_push(kind, b.port, js, cs, n, f"PUSH{rnd}")
    record(kind, "push delivery, ack none (raw subscriber)", rate, cpu_us=c.per_op_us(n))
    await nc.close()

    if rnd:
        return  # redelivery precision: first round only (it takes ~1 s a trial)
    late = await redelivery_trials(kind, b.url, q["rdl"])
    if late:
        record(kind, "redelivery: median ms past ack_wait (1 s)", statistics.median(late), "ms",
               higher_is_better=False)
        record(kind, "redelivery: max ms past ack_wait", max(late), "ms", higher_is_better=False)
        print(f"  [{kind}] redelivery ms past ack_wait: {', '.join(f'{x:.1f}' for x in late)}", flush=True)


# ---------------------------------------------------------------- main

def tree_version() -> str:
    """The commit natslab's server runs from (it is an editable install), and
    whether server/ has uncommitted changes."""
    import subprocess
    from pathlib import Path
    import natslab.server
    root = Path(natslab.server.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%h %s"],
                              capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "server"],
                               capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"
    return head[:80] + (" (server/ has uncommitted changes)" if dirty else "")


AWAITED_ROUNDS = 10


async def awaited_phase(brokers: dict, n: int, rounds: int = AWAITED_ROUNDS) -> None:
    """nats-py publishes awaited one at a time, to a file and a memory stream,
    in rounds of n // rounds that alternate between the servers (the order
    switching each round). A one-at-a-time rate is all latency, which a slow
    spell of a shared machine moves most: compared round by round, the spell
    hits both alike. The ratio is the median of the per-round ratios."""
    conns = {}
    try:
        for kind in KINDS:
            nc = await nats.connect(brokers[kind].url, max_reconnect_attempts=3, connect_timeout=5)
            js = nc.jetstream(timeout=30)
            conns[kind] = (nc, js)
            for label, st in (("FILE", StorageType.FILE), ("MEM", StorageType.MEMORY)):
                await js.add_stream(StreamConfig(name=f"ONE{label}", subjects=[f"one{label.lower()}.>"], storage=st))
        per_round = max(n // rounds, 1)
        for label in ("file", "mem"):
            res: dict[str, list] = {kind: [] for kind in KINDS}
            for r in range(rounds):
                for kind in (KINDS if r % 2 == 0 else KINDS[::-1]):
                    js = conns[kind][1]
                    with Cpu(brokers[kind].proc.pid) as c:
                        for _ in range(per_round):
                            await js.publish(f"one{label}.x", PAYLOAD)
                    res[kind].append((per_round / c.wall, c.per_op_us(per_round)))
            metric = f"nats-py publish awaited 1 by 1, {label}"
            row = ROWS.setdefault(metric, Row(metric, "msg/s"))
            for kind in KINDS:
                row.value[kind] = statistics.median(x[0] for x in res[kind])
                row.cpu_us[kind] = statistics.median(x[1] for x in res[kind])
            pairs = list(zip(res["nats-server"], res["natslab"]))
            row.paired = statistics.median(o[0] / r[0] for r, o in pairs)
            row.paired_cpu = statistics.median(r[1] / o[1] for r, o in pairs)
    finally:
        for nc, _ in conns.values():
            await nc.close()


def run_phase(name: str, fn, brokers: dict, q: dict, rnd: int) -> None:
    for kind in KINDS:
        t0 = time.perf_counter()
        try:
            asyncio.run(fn(kind, brokers[kind], q, rnd))
        except Exception as e:  # record what broke and carry on with the other server
            problem(kind, f"{name} phase failed (round {rnd}): {type(e).__name__}: {e}")
        print(f"  {name:9} {kind:12} round {rnd}  {time.perf_counter() - t0:6.1f} s", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller counts (about 2 minutes in all)")
    ap.add_argument("--only", default="streams,big,consumers", help="comma-separated phases")
    ap.add_argument("--rounds", type=int, default=2,
                    help="rounds of the streams and consumers phases, alternating the servers; the best "
                         "figure of each is reported (the big-stream phase runs once)")
    ap.add_argument("--big", type=int, default=None, help="messages in the big file stream")
    args = ap.parse_args()
    phases = set(args.only.split(","))
    if args.quick:
        q = dict(pub1=1_000, pub_async=10_000, get=1_000, raw=30_000, big=200_000,
                 pull_npy=10_000, pull_sync=2_000, pull_raw=30_000, push=30_000, rdl=5)
    else:
        q = dict(pub1=5_000, pub_async=50_000, get=5_000, raw=200_000, big=1_000_000,
                 pull_npy=50_000, pull_sync=10_000, pull_raw=200_000, push=200_000, rdl=5)
    if args.big:
        q["big"] = args.big
    print(f"counts: {q}", flush=True)
    print(f"natslab tree: {tree_version()}", flush=True)
    t_all = time.perf_counter()

    # both brokers run side by side; each phase alternates between them, so
    # load from elsewhere on the machine hits both alike
    brokers = {kind: Broker(kind).start() for kind in KINDS}
    try:
        if "streams" in phases:
            t0 = time.perf_counter()
            try:
                asyncio.run(awaited_phase(brokers, q["pub1"]))
            except Exception as e:
                problem("both", f"awaited phase failed: {type(e).__name__}: {e}")
            print(f"  {'awaited':9} {'both':12} {AWAITED_ROUNDS} rounds  {time.perf_counter() - t0:6.1f} s", flush=True)
        for rnd in range(args.rounds):
            if "streams" in phases:
                run_phase("streams", streams_phase, brokers, q, rnd)
            if "consumers" in phases:
                run_phase("consumers", consumers_phase, brokers, q, rnd)
    finally:
        for b in brokers.values():
            b.stop()
            shutil.rmtree(b.store_dir, ignore_errors=True)
    if "big" in phases:
        for kind in KINDS:
            t0 = time.perf_counter()
            try:
                big_phase(kind, q["big"])
            except Exception as e:
                problem(kind, f"big phase failed: {type(e).__name__}: {e}")
            print(f"  {'big':9} {kind:12} {time.perf_counter() - t0:6.1f} s", flush=True)

    pub = [f"nats-py publish awaited 1 by 1, {s}" for s in ("file", "mem")]
    pub += [f"nats-py publish_async (window {WINDOW}), {s}" for s in ("file", "mem")]
    pub += [f"nats-py get_msg by seq (1 by 1), {s}" for s in ("file", "mem")]
    pub += [f"raw pipelined publish ({WINDOW} acks in flight), {s}" for s in ("file", "mem")]
    print_report(f"JetStream streams ({SIZE} B messages; awaited: median of {AWAITED_ROUNDS} alternating "
                 f"rounds, the rest: best of {args.rounds} rounds; CPU = broker on-CPU time per op)", pub)
    print_report(f"big file stream ({q['big']:,} x {SIZE} B)", [m for m in ROWS if m.startswith("big file")])
    cons = [f"nats-py pull fetch({PULL_BATCH}) + ack each", f"nats-py pull fetch({PULL_BATCH}) + ack_sync each",
            f"raw pull (batch {PULL_BATCH}, 2 outstanding) + ack each",
            "push delivery, ack none (raw subscriber)", "redelivery: median ms past ack_wait (1 s)",
            "redelivery: max ms past ack_wait"]
    print_report(f"JetStream consumers (best of {args.rounds} rounds; redelivery: first round)", cons)
    print_targets(q)
    print(f"\ntotal {time.perf_counter() - t_all:.0f} s")
    if PROBLEMS:
        print("\nproblems:")
        for p in PROBLEMS:
            print("  " + p)


if __name__ == "__main__":
    main()
