"""KV and object-store benchmark: natslab's broker vs the real nats-server, one run.

    python bench/bench_kv.py [--quick]

Through nats-py's own KeyValue / ObjectStore API: KV put, KV get through
$JS.API.STREAM.MSG.GET (nats-py's default bucket) and through
$JS.API.DIRECT.GET (a bucket with allow_direct), each one at a time
(latency-bound) and with 64 operations in flight; then a 20 MiB object put
and get with its digest checked. Ratios are natslab relative to nats-server,
1.0x is parity, higher is better.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time

import nats

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import KINDS, Broker, report  # noqa: E402

KEYS = [f"key.{i}" for i in range(100)]
CLK_TCK = os.sysconf("SC_CLK_TCK")
VALUE = b"v" * 128
WINDOW = 64


def cpu_seconds(pid: int) -> float:
    """User + system CPU the broker process has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


async def _ops(fn, n: int, window: int, pid: int = 0, cpu: dict | None = None, key: str = "") -> float:
    """n calls of fn(i), at most `window` in flight; returns op/s. With a pid,
    also records the broker's CPU microseconds per op in cpu[key] (a figure a
    busy machine does not distort the way it distorts wall-clock rates)."""
    c0 = cpu_seconds(pid) if pid else 0.0
    t0 = time.perf_counter()
    if window <= 1:
        for i in range(n):
            await fn(i)
    else:
        for start in range(0, n, window):
            await asyncio.gather(*(fn(i) for i in range(start, min(n, start + window))))
    rate = n / (time.perf_counter() - t0)
    if pid and cpu is not None:
        cpu[key] = (cpu_seconds(pid) - c0) / n * 1e6
    return rate


async def kv_bench(url: str, n: int, pid: int) -> dict[str, float]:
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=30)
    res: dict[str, float] = {}
    kv = await js.create_key_value(bucket="BENCH", history=1)
    kvd = await js.create_key_value(bucket="BENCHD", history=1, direct=True)
    assert not kv._direct and kvd._direct

    async def put(i):
        await kv.put(KEYS[i % len(KEYS)], VALUE)

    async def put_d(i):
        await kvd.put(KEYS[i % len(KEYS)], VALUE)

    async def get(i):
        e = await kv.get(KEYS[i % len(KEYS)])
        assert e.value == VALUE

    async def get_d(i):
        e = await kvd.get(KEYS[i % len(KEYS)])
        assert e.value == VALUE

    cpu: dict[str, float] = {}
    res["put_1"] = await _ops(put, n, 1)
    res["put_w"] = await _ops(put, n, WINDOW, pid, cpu, "cpu_put")
    await _ops(put_d, len(KEYS), WINDOW)
    res["get_1"] = await _ops(get, n, 1)
    res["get_w"] = await _ops(get, n, WINDOW, pid, cpu, "cpu_get")
    res["dget_1"] = await _ops(get_d, n, 1)
    res["dget_w"] = await _ops(get_d, n, WINDOW, pid, cpu, "cpu_dget")
    res.update(cpu)
    await nc.close()
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
    args = ap.parse_args()
    n = 2_000 if args.quick else 10_000
    obj_size = (4 if args.quick else 20) * 2**20
    results: dict[str, dict[str, float]] = {}
    for kind in KINDS:
        b = Broker(kind).start()
        try:
            results[kind] = asyncio.run(kv_bench(b.url, n, b.proc.pid))
            results[kind].update(asyncio.run(obj_bench(b.url, obj_size)))
        finally:
            b.stop()
    ref, ours = results["nats-server"], results["natslab"]
    mib = obj_size // 2**20
    rows = [
        ("KV put op/s (1 in flight)", ref["put_1"], ours["put_1"], ""),
        (f"KV put op/s ({WINDOW} in flight)", ref["put_w"], ours["put_w"], ""),
        ("KV get MSG.GET op/s (1 in flight)", ref["get_1"], ours["get_1"], ""),
        (f"KV get MSG.GET op/s ({WINDOW} in flight)", ref["get_w"], ours["get_w"], ""),
        ("KV get DIRECT.GET op/s (1 in flight)", ref["dget_1"], ours["dget_1"], ""),
        (f"KV get DIRECT.GET op/s ({WINDOW} in flight)", ref["dget_w"], ours["dget_w"], ""),
        (f"object put {mib} MiB", ref["obj_put"], ours["obj_put"], "MiB/s"),
        (f"object get {mib} MiB (digest checked)", ref["obj_get"], ours["obj_get"], "MiB/s"),
    ]
    report(f"KV and object store ({n} ops, 128 B values)", rows)
    cpu_rows = [
        ("broker CPU per KV put", ref["cpu_put"], ours["cpu_put"], "us"),
        ("broker CPU per KV get (MSG.GET)", ref["cpu_get"], ours["cpu_get"], "us"),
        ("broker CPU per KV get (DIRECT.GET)", ref["cpu_dget"], ours["cpu_dget"], "us"),
    ]
    report("broker CPU per operation (64 in flight; lower is better)", cpu_rows, {r[0]: False for r in cpu_rows})


if __name__ == "__main__":
    main()
