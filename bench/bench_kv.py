"""KV and object-store benchmark: natslab's broker vs the real nats-server, one run.

    python bench/bench_kv.py [--quick] [--rounds R]

Through nats-py's own KeyValue / ObjectStore API: KV put, KV get through
$JS.API.STREAM.MSG.GET (nats-py's default bucket) and through
$JS.API.DIRECT.GET (a bucket with allow_direct), each one at a time
(latency-bound) and with 64 operations in flight; KV put one at a time from
a bare socket as well (a client that costs next to nothing, so the round trip
is mostly the broker's); then a 20 MiB object put and get with its digest
checked.

Both brokers run at once and each KV measurement is taken in rounds that go
to one broker and then the other (the order switching every round), so a
slow spell of this shared machine hits both alike: a ratio is the median of
the per-round ratios, a rate the median of the broker's rounds. Ratios are
natslab relative to nats-server, 1.0x is parity, higher is better.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import socket
import statistics
import sys
import time

import nats

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import KINDS, Broker, cpu_seconds_fine, report  # noqa: E402

KEYS = [f"key.{i}" for i in range(100)]
VALUE = b"v" * 128
WINDOW = 64
# (key, label, operation, in flight)
PHASES = [
    ("put_1", "KV put op/s (1 in flight)", "put", 1),
    ("put_w", f"KV put op/s ({WINDOW} in flight)", "put", WINDOW),
    ("rawput_1", "KV put op/s (1 in flight, raw socket)", "raw_put", 1),
    ("get_1", "KV get MSG.GET op/s (1 in flight)", "get", 1),
    ("get_w", f"KV get MSG.GET op/s ({WINDOW} in flight)", "get", WINDOW),
    ("dget_1", "KV get DIRECT.GET op/s (1 in flight)", "dget", 1),
    ("dget_w", f"KV get DIRECT.GET op/s ({WINDOW} in flight)", "dget", WINDOW),
]


async def _ops(fn, n: int, window: int, pid: int) -> tuple[float, float]:
    """n calls of fn(i), at most `window` in flight: (op/s, the broker's CPU
    microseconds per op, a figure a busy machine distorts less than rates)."""
    c0 = cpu_seconds_fine(pid)
    t0 = time.perf_counter()
    if window <= 1:
        for i in range(n):
            await fn(i)
    else:
        for start in range(0, n, window):
            await asyncio.gather(*(fn(i) for i in range(start, min(n, start + window))))
    rate = n / (time.perf_counter() - t0)
    return rate, (cpu_seconds_fine(pid) - c0) / n * 1e6


class KvClient:
    """One broker's connection and buckets, with the three operations."""

    async def open(self, url: str) -> "KvClient":
        self.nc = await nats.connect(url, max_reconnect_attempts=3, connect_timeout=5)
        js = self.nc.jetstream(timeout=30)
        self.kv = await js.create_key_value(bucket="BENCH", history=1)
        self.kvd = await js.create_key_value(bucket="BENCHD", history=1, direct=True)
        assert not self.kv._direct and self.kvd._direct
        await asyncio.gather(*(self.kvd.put(k, VALUE) for k in KEYS))
        self.raw = _raw_connection(int(url.rsplit(":", 1)[1]))
        self.raw_puts = [b"PUB $KV.BENCH.%s _INBOX.raw.%d %d\r\n%s\r\n" % (k.encode(), i, len(VALUE), VALUE)
                         for i, k in enumerate(KEYS)]
        return self

    async def raw_put(self, i: int) -> None:
        # blocking on purpose: nothing else runs while a phase is measured
        s = self.raw
        s.sendall(self.raw_puts[i % len(KEYS)])
        ack = s.recv(4096)
        while not ack.endswith(b"}\r\n"):
            more = s.recv(4096)
            if not more:
                raise ConnectionError("the broker closed the raw connection")
            ack += more
        assert b'"seq"' in ack and b'"error"' not in ack, ack

    async def put(self, i: int) -> None:
        await self.kv.put(KEYS[i % len(KEYS)], VALUE)

    async def get(self, i: int) -> None:
        e = await self.kv.get(KEYS[i % len(KEYS)])
        assert e.value == VALUE

    async def dget(self, i: int) -> None:
        e = await self.kvd.get(KEYS[i % len(KEYS)])
        assert e.value == VALUE


def _raw_connection(port: int) -> socket.socket:
    """A bare NATS connection with its inbox subscribed (and confirmed)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\n'
              b"SUB _INBOX.raw.* 1\r\nPING\r\n")
    got = b""
    while b"PONG\r\n" not in got:
        more = s.recv(4096)
        if not more:
            raise ConnectionError("the broker closed the raw connection")
        got += more
    return s


async def kv_bench(brokers: dict[str, Broker], n1: int, nw: int, rounds: int) -> dict[str, dict[str, list]]:
    """Per broker and phase, the (op/s, CPU us/op) of each round; a round is
    n1 operations one at a time or nw with WINDOW in flight."""
    clients = {k: await KvClient().open(b.url) for k, b in brokers.items()}
    res: dict[str, dict[str, list]] = {k: {} for k in brokers}
    for key, _, op, window in PHASES:
        for r in range(rounds):
            for kind in (KINDS if r % 2 == 0 else KINDS[::-1]):
                fn = getattr(clients[kind], op)
                n = n1 if window == 1 else nw
                res[kind].setdefault(key, []).append(await _ops(fn, n, window, brokers[kind].proc.pid))
    for c in clients.values():
        c.raw.close()
        await c.nc.close()
    return res


async def obj_bench(url: str, size: int) -> dict[str, float]:
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=60)
    obs = await js.create_object_store("BENCHOBJ")
    data = random.Random(1).randbytes(size)
    t0 = time.perf_counter()
    info = await obs.put("blob", data)
    t_put = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = await obs.get("blob")  # nats-py checks the digest itself
    t_get = time.perf_counter() - t0
    assert res.data == data and res.info.digest == info.digest
    await nc.close()
    return {"obj_put": size / t_put / 2**20, "obj_get": size / t_get / 2**20}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller counts, 4 MiB object")
    ap.add_argument("--rounds", type=int, default=8, help="rounds per KV measurement and broker")
    args = ap.parse_args()
    # operations per round: one at a time, and with WINDOW in flight
    n1, nw = (100, 640) if args.quick else (500, 1280)
    obj_size = (4 if args.quick else 20) * 2**20
    brokers = {kind: Broker(kind).start() for kind in KINDS}
    try:
        kv = asyncio.run(kv_bench(brokers, n1, nw, args.rounds))
        obj = {kind: asyncio.run(obj_bench(b.url, obj_size)) for kind, b in brokers.items()}
    finally:
        for b in brokers.values():
            b.stop()
    ref, ours = kv["nats-server"], kv["natslab"]

    def med(rounds: list, i: int) -> float:
        return statistics.median(x[i] for x in rounds)

    def paired(key: str, i: int, higher_is_better: bool) -> float:
        """The median over rounds of natslab relative to nats-server."""
        pairs = zip(ref[key], ours[key])
        return statistics.median((o[i] / r[i]) if higher_is_better else (r[i] / o[i]) for r, o in pairs)

    rows = [(label, med(ref[key], 0), med(ours[key], 0), "", paired(key, 0, True)) for key, label, _, _ in PHASES]
    mib = obj_size // 2**20
    rows += [
        (f"object put {mib} MiB", obj["nats-server"]["obj_put"], obj["natslab"]["obj_put"], "MiB/s"),
        (f"object get {mib} MiB (digest checked)", obj["nats-server"]["obj_get"], obj["natslab"]["obj_get"], "MiB/s"),
    ]
    report(f"KV ({args.rounds} rounds of {n1} ops 1 in flight, {nw} with {WINDOW}; 128 B values) and object store",
           rows)
    # (and the raw put one at a time: what a put costs the broker on its own, sync included)
    cpu_rows = [(f"broker CPU per {label.split(' op/s')[0]} ({'1, raw' if window == 1 else WINDOW})",
                 med(ref[key], 1), med(ours[key], 1), "us", paired(key, 1, False))
                for key, label, _, window in PHASES if window > 1 or key == "rawput_1"]
    report(f"broker CPU per operation ({WINDOW} in flight, or 1 from a raw socket; lower is better)", cpu_rows,
           {r[0]: False for r in cpu_rows})


if __name__ == "__main__":
    main()
