"""Core NATS benchmark: natslab's broker vs the real nats-server, one run.

    python bench/bench_core.py [--quick]

Ratios are natslab / nats-server (for latencies: nats-server / natslab), so
1.0x means parity and higher is better. Loads are bounded in count and run on
127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time

import nats

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import KINDS, Broker, report  # noqa: E402


async def nc_pubsub(url: str, n: int, size: int) -> float:
    sub_nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    pub_nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    done = asyncio.Event()
    count = 0

    async def cb(m):
        nonlocal count
        count += 1
        if count == n:
            done.set()

    await sub_nc.subscribe("bench.ps", cb=cb, pending_msgs_limit=n + 10, pending_bytes_limit=-1)
    await sub_nc.flush()
    await sub_nc.flush()
    payload = b"x" * size
    t0 = time.perf_counter()
    for _ in range(n):
        await pub_nc.publish("bench.ps", payload)
    await pub_nc.flush()
    await asyncio.wait_for(done.wait(), 120)
    dt = time.perf_counter() - t0
    await sub_nc.close()
    await pub_nc.close()
    return n / dt


async def nc_pub_only(url: str, n: int, size: int) -> float:
    nc = await nats.connect(url, pending_size=64 * 1024 * 1024)
    payload = b"x" * size
    t0 = time.perf_counter()
    for _ in range(n):
        await nc.publish("bench.po", payload)
    await nc.flush(timeout=60)
    dt = time.perf_counter() - t0
    await nc.close()
    return n / dt


async def nc_request_latency(url: str, n: int) -> tuple[float, float]:
    svc = await nats.connect(url)
    cli = await nats.connect(url)

    async def echo(m):
        await m.respond(m.data)

    await svc.subscribe("bench.rr", cb=echo)
    await svc.flush()
    await svc.flush()
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        await cli.request("bench.rr", b"ping", timeout=5)
        lat.append((time.perf_counter() - t0) * 1e6)
    await svc.close()
    await cli.close()
    lat.sort()
    return lat[len(lat) // 2], lat[int(len(lat) * 0.99)]


async def _raw_connect(port: int):
    r, w = await asyncio.open_connection("127.0.0.1", port, limit=1 << 22)
    await r.readline()
    w.write(b'CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\nPING\r\n')
    await w.drain()
    while (await r.readline()) != b"PONG\r\n":
        pass
    return r, w


async def raw_ingest(port: int, n: int, size: int) -> float:
    """One raw client pushes n PUBs as fast as the server takes them."""
    r, w = await _raw_connect(port)
    batch = 1000
    chunk = (b"PUB bench.ingest %d\r\n" % size + b"x" * size + b"\r\n") * batch
    t0 = time.perf_counter()
    for _ in range(n // batch):
        w.write(chunk)
        await w.drain()
    w.write(b"PING\r\n")
    await w.drain()
    while (await r.readline()) != b"PONG\r\n":
        pass
    dt = time.perf_counter() - t0
    w.close()
    return n / dt


async def raw_fanthrough(port: int, n: int, size: int) -> float:
    """One raw publisher, one raw subscriber: messages per second through the broker."""
    sr, sw = await _raw_connect(port)
    sw.write(b"SUB bench.fan 1\r\nPING\r\n")
    await sw.drain()
    while (await sr.readline()) != b"PONG\r\n":
        pass
    pr, pw = await _raw_connect(port)
    msg_len = len(b"MSG bench.fan 1 %d\r\n" % size) + size + 2
    expect = msg_len * n

    async def reader():
        got = 0
        while got < expect:
            data = await sr.read(1 << 20)
            if not data:
                raise RuntimeError("subscriber closed")
            got += len(data)

    batch = 1000
    chunk = (b"PUB bench.fan %d\r\n" % size + b"x" * size + b"\r\n") * batch
    t0 = time.perf_counter()
    rt = asyncio.create_task(reader())
    for _ in range(n // batch):
        pw.write(chunk)
        await pw.drain()
    await asyncio.wait_for(rt, 120)
    dt = time.perf_counter() - t0
    sw.close()
    pw.close()
    return n / dt


def inprocess_startup_ms() -> float:
    from natslab.server import EmbeddedServer

    async def go():
        t0 = time.perf_counter()
        srv = EmbeddedServer(port=0, jetstream=False)
        await srv.start()
        dt = time.perf_counter() - t0
        await srv.stop()
        return dt * 1000

    return asyncio.run(go())


TESTS = ("nc_pubsub", "nc_pub", "rr", "raw_ingest", "raw_fan")


def run_once(kind: str, tests: tuple, n_nc: int, n_rr: int, n_raw: int, size: int) -> dict[str, float]:
    b = Broker(kind, jetstream=False).start()
    res = {"startup_ms": b.startup_s * 1000}
    try:
        if "nc_pubsub" in tests:
            res["nc_pubsub"] = asyncio.run(nc_pubsub(b.url, n_nc, size))
        if "nc_pub" in tests:
            res["nc_pub"] = asyncio.run(nc_pub_only(b.url, n_nc, size))
        if "rr" in tests:
            res["rr_p50"], res["rr_p99"] = asyncio.run(nc_request_latency(b.url, n_rr))
        if "raw_ingest" in tests:
            res["raw_ingest"] = asyncio.run(raw_ingest(b.port, n_raw, size))
        if "raw_fan" in tests:
            res["raw_fan"] = asyncio.run(raw_fanthrough(b.port, n_raw // 2, size))
        res["rss_mb"] = b.rss_kb() / 1024
    finally:
        b.stop()
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="smaller counts")
    ap.add_argument("--only", default="", help="comma-separated subset of " + ",".join(TESTS))
    ap.add_argument("--runs", type=int, default=1,
                    help="repeat the comparison (brokers in turn, order switching); figures and ratios are medians of the runs")
    args = ap.parse_args()
    tests = tuple(args.only.split(",")) if args.only else TESTS
    k = 0.2 if args.quick else 1.0
    n_nc = int(100_000 * k)
    n_rr = int(2_000 * k)
    n_raw = int(1_000_000 * k)
    size = 128
    runs: list[dict[str, dict[str, float]]] = []
    for r in range(args.runs):
        runs.append({kind: run_once(kind, tests, n_nc, n_rr, n_raw, size)
                     for kind in (KINDS if r % 2 == 0 else KINDS[::-1])})
    names = [
        ("nc_pubsub", "nats-py pub/sub msg/s (128 B)", ""),
        ("nc_pub", "nats-py publish-only msg/s (128 B)", ""),
        ("rr_p50", "nats-py request-reply p50", "us"),
        ("rr_p99", "nats-py request-reply p99", "us"),
        ("raw_ingest", "raw ingest msg/s (128 B)", ""),
        ("raw_fan", "raw fan-through msg/s (128 B)", ""),
        ("startup_ms", "start-up to accept (subprocess)", "ms"),
        ("rss_mb", "peak RSS", "MB"),
    ]
    lower = {"rr_p50", "rr_p99", "startup_ms", "rss_mb"}
    rows = []
    for key, label, unit in names:
        if key not in runs[0]["natslab"]:
            continue
        ref = statistics.median(x["nats-server"][key] for x in runs)
        ours = statistics.median(x["natslab"][key] for x in runs)
        ratios = [(x["nats-server"][key] / x["natslab"][key]) if key in lower else (x["natslab"][key] / x["nats-server"][key])
                  for x in runs]
        rows.append((label, ref, ours, unit, statistics.median(ratios)))
        if args.runs > 1:
            print(f"{label:42} ratios per run: {', '.join(f'{v:.2f}' for v in ratios)}")
    report(f"core NATS (medians of {args.runs} run{'s' if args.runs > 1 else ''})", rows)
    print(f"\nnatslab in-process start-up to accepting connections: {inprocess_startup_ms():.1f} ms")


if __name__ == "__main__":
    main()
