"""Stream creation: file streams created one at a time (as nats.py's
``test_jsm_stream_management_with_offset`` does with 300), natslab against
nats-server in the same run; creates per second, median of the runs.

    .venv/bin/python bench/bench_stream_create.py [--streams 300] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import nats  # noqa: E402
from common import KINDS, Broker  # noqa: E402


async def creates_per_s(url: str, n: int) -> float:
    nc = await nats.connect(url, max_reconnect_attempts=1)
    js = nc.jetstream(timeout=30)
    t0 = time.perf_counter()
    for i in range(n):
        await js.add_stream(name=f"S{i}", subjects=[f"s{i}.>"])
    rate = n / (time.perf_counter() - t0)
    await nc.close()
    return rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    rates: dict[str, list[float]] = {k: [] for k in KINDS}
    for _ in range(a.runs):
        for kind in KINDS:
            b = Broker(kind).start()
            try:
                rates[kind].append(asyncio.run(creates_per_s(b.url, a.streams)))
            finally:
                b.stop()
                shutil.rmtree(b.store_dir, ignore_errors=True)
    for kind in KINDS:
        print(f"{kind:12s} {statistics.median(rates[kind]):8.0f} creates/s  runs: "
              + ", ".join(f"{r:.0f}" for r in rates[kind]))
    ratio = statistics.median(rates["natslab"]) / statistics.median(rates["nats-server"])
    print(f"natslab / nats-server: {ratio:.2f}x ({a.streams} file streams, {a.runs} runs, median)")


if __name__ == "__main__":
    main()
