"""Start-up: time from spawning the broker to its first INFO on a client
socket (accepting connections), natslab against nats-server in the same run.

    python bench/bench_startup.py [--rounds 5]

Each round spawns each broker in turn (order switching every round), once
without and once with JetStream (an empty store directory), and stops it.
Figures are medians of the rounds, wall time and the CPU the process used up
to that point (steadier on a loaded machine); the ratio is nats-server's time
over natslab's (1.0x is parity, higher is better). Python's bytecode cache
counts: run with PYTHONDONTWRITEBYTECODE=1 and no __pycache__ to see a start
that compiles every module.
"""

from __future__ import annotations

import argparse
import statistics
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import KINDS, Broker  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    print(f"{'flags':10} {'nats-server':>12} {'natslab':>10}  ratio")
    for js in (False, True):
        t = {k: [] for k in KINDS}
        cpu = {k: [] for k in KINDS}
        for r in range(a.rounds):
            for k in (KINDS if r % 2 == 0 else KINDS[::-1]):
                b = Broker(k, jetstream=js).start()
                t[k].append(b.startup_s)
                cpu[k].append(b.startup_cpu_s)
                b.stop()
        ref, ours = statistics.median(t["nats-server"]), statistics.median(t["natslab"])
        cref, cours = statistics.median(cpu["nats-server"]), statistics.median(cpu["natslab"])
        print(f"{'-js' if js else '(none)':10} {ref * 1000:>9.1f} ms {ours * 1000:>7.1f} ms  {ref / ours:5.2f}x"
              f"   natslab rounds: {', '.join(f'{x * 1000:.0f}' for x in t['natslab'])} ms", flush=True)
        print(f"{'  CPU':10} {cref * 1000:>9.1f} ms {cours * 1000:>7.1f} ms  {cref / cours:5.2f}x"
              f"   natslab rounds: {', '.join(f'{x * 1000:.0f}' for x in cpu['natslab'])} ms", flush=True)


if __name__ == "__main__":
    main()
