"""Start-up: time from spawning the broker to its first INFO on a client
socket (accepting connections), natslab against nats-server in the same run.

    python bench/bench_startup.py [--rounds 5] [--bytecode both|with|without]

Each round spawns each broker in turn (order switching every round), once
without and once with JetStream (an empty store directory), and stops it.
Figures are medians of the rounds, wall time and the CPU the process used up
to that point (steadier on a loaded machine); the ratio is nats-server's time
over natslab's (1.0x is parity, higher is better).

Python's bytecode cache counts, so natslab is measured both ways (by
default): "with" compiles natslab's modules into their __pycache__ first
(what pip does at install), "without" moves natslab's __pycache__
directories aside for the rounds (a start that compiles every module it
imports, as a source checkout under PYTHONDONTWRITEBYTECODE=1 does) and puts
them back. The standard library keeps its own cache either way.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import KINDS, Broker  # noqa: E402


def _package_dirs() -> list[Path]:
    import natslab
    import natslab.server

    return [Path(p) for m in (natslab, natslab.server) for p in m.__path__]


@contextlib.contextmanager
def bytecode(mode: str):
    """natslab's modules with their bytecode cache compiled, or without one."""
    dirs = _package_dirs()
    if mode == "with":
        for d in dirs:
            compileall.compile_dir(str(d), quiet=1)
        yield
        return
    aside = Path(tempfile.mkdtemp(prefix="bench-pycache-"))
    moved = []
    try:
        for d in dirs:
            for cache in d.rglob("__pycache__"):
                dest = aside / str(len(moved))
                shutil.move(str(cache), dest)
                moved.append((dest, cache))
        yield
    finally:
        for dest, cache in moved:
            if not cache.exists():
                shutil.move(str(dest), cache)
        shutil.rmtree(aside, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bytecode", choices=("both", "with", "without"), default="both",
                    help="natslab with its modules' bytecode cache, without it, or both (default)")
    a = ap.parse_args()
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # (else the first "without" round would write the cache for the rest)
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    for mode in (("with", "without") if a.bytecode == "both" else (a.bytecode,)):
        print(f"\n== natslab {mode} bytecode cache (median of {a.rounds} rounds)")
        with bytecode(mode):
            measure(a.rounds)


def measure(rounds: int) -> None:
    print(f"{'flags':10} {'nats-server':>12} {'natslab':>10}  ratio")
    for js in (False, True):
        t = {k: [] for k in KINDS}
        cpu = {k: [] for k in KINDS}
        for r in range(rounds):
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
