"""Callgrind instructions per message for bench_inproc.py workloads: the
steady figure for A/B of code changes (see docs/benchmarks.md).

    python bench/instructions.py [WORKLOAD ...] [--small 2000] [--large 6000] [--chunk C] [--sync always|SECONDS]

Each workload runs once with ``-n small`` and once with ``-n large`` under
``valgrind --tool=callgrind``; the difference in instructions divided by the
difference in messages leaves out start-up and set-up. It counts user space
only: a system call saved does not show in it. ``NATSLAB_BENCH_HISTORY_MB=50``
in the environment runs them with the broker's history ring on.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def instructions(workload: str, n: int, chunk: int = 256, sync: str = "") -> int:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, os.path.join(HERE, "bench_inproc.py"), workload, "-n", str(n), "--rounds", "1",
                        "--chunk", str(chunk), *(["--sync", sync] if sync else [])],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONHASHSEED": "0"})  # the same dict layouts every run
        with open(out) as f:
            for line in f:
                m = re.match(r"(?:summary|totals): (\d+)", line)
                if m:
                    return int(m.group(1))
    raise SystemExit(f"{workload}: no instruction total in callgrind's output")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="*", default=["core-all", "pub-mem", "pub-file", "kv-put", "kv-get", "pull", "push"])
    ap.add_argument("--small", type=int, default=2000)
    ap.add_argument("--large", type=int, default=6000)
    ap.add_argument("--chunk", type=int, default=256, help="commands per read (bench_inproc --chunk; 1: one at a time)")
    ap.add_argument("--sync", default="", help="bench_inproc --sync: always, or a lazy sync_interval in seconds")
    a = ap.parse_args()
    from bench_inproc import CORE

    names = [w for x in a.workloads for w in (CORE if x == "core-all" else [x])]
    for w in names:
        lo, hi = instructions(w, a.small, a.chunk, a.sync), instructions(w, a.large, a.chunk, a.sync)
        print(f"{w:12s} {(hi - lo) / (a.large - a.small):10.0f} instructions/msg", flush=True)


if __name__ == "__main__":
    main()
