"""Profile natslab's broker on one JetStream workload of bench_js.py.

    python bench/bench_js_profile.py push|pull|publish-file|publish-mem|npy-pull|kv-put|kv-get|kv-direct|restart [-n N] [--top 25]

The broker runs as `python -m cProfile -o <file> -m natslab.server ...` (a
subprocess, so the client's own work stays out of the profile); the workload
runs against it, then SIGINT makes the broker shut down cleanly and cProfile
write its stats, which are printed by own time and by cumulative time. For
the consumer workloads and `restart` the stream is written first by an
unprofiled broker on the same store dir, so the profile holds the store's
start-up (the `restart` workload: until STREAM.INFO answers with the full
count) and the reading side only.
"""

from __future__ import annotations

import argparse
import asyncio
import pstats
import shutil
import signal
import sys
import tempfile
import time

import nats
from nats.js.api import AckPolicy, ConsumerConfig, StorageType, StreamConfig

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import bench_js  # noqa: E402
from common import Broker  # noqa: E402


class ProfiledBroker(Broker):
    def __init__(self, prof_path: str, store_dir: str | None = None):
        super().__init__("natslab", store_dir=store_dir)
        self.prof_path = prof_path

    def argv(self) -> list[str]:
        return [sys.executable, "-m", "cProfile", "-o", self.prof_path, "-m", "natslab.server",
                "-a", "127.0.0.1", "-p", str(self.port), "-sd", self.store_dir, "-js"]


async def populate(url: str, port: int, storage: StorageType, n: int) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=60)
    await js.add_stream(StreamConfig(name="P", subjects=["p.>"], storage=storage))
    await nc.close()
    if n:
        await bench_js.raw_js_publish("natslab", port, "p.x", n)


async def workload(name: str, b: Broker, n: int) -> float:
    """Runs against the profiled broker; for the consumer workloads the
    stream P already holds n messages (written by an unprofiled broker)."""
    if name.startswith("publish"):
        storage = StorageType.MEMORY if name == "publish-mem" else StorageType.FILE
        await populate(b.url, b.port, storage, 0)
        return await bench_js.raw_js_publish("natslab", b.port, "p.x", n)
    if name == "restart":
        t0 = time.perf_counter()
        await asyncio.to_thread(bench_js.wait_ready_stream, b.port, "P", n, t0)
        return n / (time.perf_counter() - t0)
    nc = await nats.connect(b.url, pending_size=bench_js.PENDING)
    js = nc.jetstream(timeout=60)
    if name == "pull":
        await js.add_consumer("P", ConsumerConfig(durable_name="C", ack_policy=AckPolicy.EXPLICIT))
        rate = await bench_js.raw_pull("natslab", b.port, "P", "C", n)
        await bench_js.wait_acked("natslab", js, "P", "C", n)
        return rate
    if name == "push":
        return await bench_js.raw_push("natslab", b.port, js, "P", n)
    if name == "npy-pull":
        psub = await js.pull_subscribe("p.x", durable="NPY", stream="P", pending_msgs_limit=100_000)
        got = 0
        t0 = time.perf_counter()
        while got < n:
            msgs = await psub.fetch(min(bench_js.PULL_BATCH, n - got), timeout=10)
            for m in msgs:
                await m.ack()
            got += len(msgs)
        return n / (time.perf_counter() - t0)
    if name in ("kv-put", "kv-get", "kv-direct"):
        # nats-py's KeyValue API with 64 operations in flight (bench_kv.py's windowed case);
        # kv-direct reads a bucket with allow_direct (DIRECT.GET instead of MSG.GET)
        kv = await js.create_key_value(bucket="B", history=1, direct=name == "kv-direct")
        if name != "kv-put":
            await asyncio.gather(*(kv.put(f"k{i % 100}", b"v" * 64) for i in range(100)))
        t0 = time.perf_counter()
        for start in range(0, n, 64):
            if name == "kv-put":
                await asyncio.gather(*(kv.put(f"k{i % 100}", b"v" * 64) for i in range(start, min(n, start + 64))))
            else:
                await asyncio.gather(*(kv.get(f"k{i % 100}") for i in range(start, min(n, start + 64))))
        return n / (time.perf_counter() - t0)
    raise SystemExit(f"unknown workload {name}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=["push", "pull", "publish-file", "publish-mem", "npy-pull", "kv-put", "kv-get", "kv-direct", "restart"])
    ap.add_argument("-n", type=int, default=100_000)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", default=None, help="where to keep the .prof file")
    args = ap.parse_args()
    out = args.out or tempfile.mktemp(prefix=f"natslab-{args.workload}-", suffix=".prof")
    store_dir = None
    if not args.workload.startswith("publish"):
        # write the stream with an unprofiled broker; profile only the reading side
        pre = Broker("natslab").start()
        try:
            asyncio.run(populate(pre.url, pre.port, StorageType.FILE, args.n))
        finally:
            pre.stop()
        store_dir = pre.store_dir
    b = ProfiledBroker(out, store_dir).start()
    try:
        rate = asyncio.run(workload(args.workload, b, args.n))
    finally:
        b.proc.send_signal(signal.SIGINT)
        b.proc.wait(60)
        shutil.rmtree(b.store_dir, ignore_errors=True)
    print(f"{args.workload}: {args.n} messages, {rate:,.0f} msg/s under cProfile; stats in {out}")
    if bench_js.PROBLEMS:
        print("problems:", *bench_js.PROBLEMS, sep="\n  ")
    st = pstats.Stats(out)
    st.strip_dirs().sort_stats("tottime").print_stats(args.top)
    st.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
