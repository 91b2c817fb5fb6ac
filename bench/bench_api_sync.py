"""What an API answer costs while a file stream takes publishes: the rate of
sequential ``$JS.API.STREAM.INFO`` and ``$JS.API.CONSUMER.INFO`` requests
(each awaited) while another process publishes to a file stream with
256 PubAcks in flight (or, "fire", without reply subjects), and its publish
rate meanwhile; natslab and nats-server in the same run, each as a subprocess.

    python bench/bench_api_sync.py [--seconds 3]

A read-only answer should not wait for an fsync of the stream's unsynced
publishes (issue #27): on natslab before that was narrowed every answer
committed every stream that owed writes. Loads are bounded in count and
time and run on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time

import nats

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import KINDS, Broker  # noqa: E402

MAX_PUBLISHES = 2_000_000
MAX_REQUESTS = 200_000
# idle; publishing with PubAcks awaited (256 in flight); publishing without a
# reply subject (nothing waits for their sync but the sync timer)
MODES = ("idle", "publishing", "fire")


async def publisher(url: str, seconds: float, fire: bool = False) -> None:
    """Publish to p.x with 256 requests in flight for ``seconds`` (``fire``:
    without a reply subject, a flush every 256); print the rate."""
    nc = await nats.connect(url, max_reconnect_attempts=1, connect_timeout=5)
    pending: set = set()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds and n < MAX_PUBLISHES:
        n += 1
        if fire:
            await nc.publish("p.x", b"x" * 128)
            if n % 256 == 0:
                await nc.flush(timeout=10)
            continue
        pending.add(asyncio.ensure_future(nc.request("p.x", b"x" * 128, timeout=10)))
        if len(pending) >= 256:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    if pending:
        await asyncio.wait(pending, timeout=10)
    print(n / (time.perf_counter() - t0), flush=True)
    await nc.close()


async def measure(url: str, seconds: float, publishing: str | None) -> dict:
    req = await nats.connect(url, max_reconnect_attempts=1, connect_timeout=5)
    js = req.jetstream()
    await js.add_stream(name="P", subjects=["p.x"], storage="file")
    await js.add_consumer("P", durable_name="C", ack_policy="explicit")
    out = {}
    proc = None
    if publishing:
        proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--publisher", url,
                                 "--seconds", str(2 * seconds + 0.5)] + (["--fire"] if publishing == "fire" else []), stdout=subprocess.PIPE, text=True)
    try:
        await asyncio.sleep(0.5)
        for name, subject in (("stream_info", "$JS.API.STREAM.INFO.P"), ("consumer_info", "$JS.API.CONSUMER.INFO.P.C")):
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < seconds and n < MAX_REQUESTS:
                r = await req.request(subject, b"", timeout=10)
                assert "error" not in json.loads(r.data), r.data
                n += 1
            out[name] = n / (time.perf_counter() - t0)
    finally:
        if proc is not None:
            out["pub"] = float(proc.communicate(timeout=60)[0].strip() or 0)
        await js.delete_stream("P")
        await req.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--publisher", metavar="URL", help=argparse.SUPPRESS)
    ap.add_argument("--fire", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.publisher:
        asyncio.run(publisher(args.publisher, args.seconds, args.fire))
        return
    res: dict = {}
    for kind in KINDS:
        b = Broker(kind).start()
        try:
            res[kind] = {mode: asyncio.run(measure(b.url, args.seconds, None if mode == "idle" else mode))
                         for mode in MODES}
        finally:
            b.stop()
    print(f"{'':34}{'nats-server':>14}{'natslab':>14}{'ratio':>8}")
    for mode in MODES:
        for key in ("stream_info", "consumer_info"):
            ref, ours = res["nats-server"][mode][key], res["natslab"][mode][key]
            print(f"{key + ' req/s (' + mode + ')':34}{ref:14.0f}{ours:14.0f}{ours / ref:8.2f}x")
        if mode != "idle":
            ref, ours = res["nats-server"][mode]["pub"], res["natslab"][mode]["pub"]
            print(f"{'  publishes/s meanwhile':34}{ref:14.0f}{ours:14.0f}{ours / ref:8.2f}x")


if __name__ == "__main__":
    main()
