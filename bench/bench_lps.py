"""Push delivery with deliver_policy last_per_subject (what KV key listing and
the watchers of the Go and C clients use): natslab against nats-server, in
the same run.

    python bench/bench_lps.py [--subjects 5000 10000] [--rounds 3]

A stream holds one message on each of N subjects (history 1, the layout of a
KV bucket that keeps one revision, and history 5, where each subject's last
message is found with a skip list); a push consumer with a filter and ack
none delivers the last message of every subject. The figure is the time from
the consumer's creation to the last delivery (median of the rounds); the
ratio is nats-server's time over natslab's (1.0x is parity, higher is better).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time

import nats

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import KINDS, Broker  # noqa: E402


async def one(url: str, n: int, history: int, round_: int) -> float:
    nc = await nats.connect(url, max_reconnect_attempts=1, connect_timeout=5)
    try:
        name = f"LPS{round_}H{history}"
        cfg = {"name": name, "subjects": [f"{name}.>"], "max_msgs_per_subject": history, "storage": "memory"}
        r = await nc.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps(cfg).encode(), timeout=10)
        assert b'"error"' not in r.data, r.data
        for i in range(n):
            await nc.publish(f"{name}.k.{i}", b"v" * 32)
            if i % 1000 == 999:
                await nc.flush()
        while True:
            r = await nc.request(f"$JS.API.STREAM.INFO.{name}", b"", timeout=10)
            if json.loads(r.data)["state"]["messages"] >= n:
                break
            await asyncio.sleep(0.05)
        got = 0
        done = asyncio.Event()

        async def cb(m):
            nonlocal got
            got += 1
            if got == n:
                done.set()

        inbox = f"_LPS.{name}"
        await nc.subscribe(inbox, cb=cb, pending_msgs_limit=n + 10, pending_bytes_limit=-1)
        await nc.flush()
        await nc.flush()
        t0 = time.perf_counter()
        ccfg = {"stream_name": name, "config": {"deliver_policy": "last_per_subject", "ack_policy": "none",
                                                 "deliver_subject": inbox, "filter_subject": f"{name}.>"}}
        r = await nc.request(f"$JS.API.CONSUMER.CREATE.{name}", json.dumps(ccfg).encode(), timeout=10)
        assert b'"error"' not in r.data, r.data
        await asyncio.wait_for(done.wait(), 120)
        return time.perf_counter() - t0
    finally:
        await nc.close()


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subjects", type=int, nargs="+", default=[5000, 10000])
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    brokers = {k: Broker(k).start() for k in KINDS}
    try:
        print(f"{'subjects':>8} {'history':>7} {'nats-server':>12} {'natslab':>10}  ratio")
        for n in a.subjects:
            for history in (1, 5):
                t = {k: [] for k in KINDS}
                for r in range(a.rounds):
                    for k in (KINDS if r % 2 == 0 else KINDS[::-1]):
                        t[k].append(await one(brokers[k].url, n, history, r * 10 + n % 7))
                ref, ours = statistics.median(t["nats-server"]), statistics.median(t["natslab"])
                print(f"{n:>8} {history:>7} {ref:>10.3f} s {ours:>8.3f} s  {ref / ours:5.2f}x", flush=True)
    finally:
        for b in brokers.values():
            b.stop()


if __name__ == "__main__":
    asyncio.run(main())
