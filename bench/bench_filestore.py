"""File store benchmark (not a test): N messages of 128 bytes.

Reports write time, disk used, time to reopen (clean close, so the block
index files are used; and as after a crash, with every block scanned) and the
RSS of a fresh process after reopening. Each reopen runs in its own process so
the RSS is the store's alone.

    python bench/bench_filestore.py [--messages 1000000] [--dir /tmp/x] [--subjects 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from natslab.server.jetstream.store.file.store import FileStore

REOPEN = """
import json, sys, time
t0 = time.perf_counter()
from natslab.server.jetstream.store.file.store import FileStore
st = FileStore(sys.argv[1])
s = st.state()
t1 = time.perf_counter()
m = st.load(s.last_seq)
rss = 0
for line in open("/proc/self/status"):
    if line.startswith("VmRSS:"):
        rss = int(line.split()[1]) * 1024
base = {"open_s": t1 - t0, "messages": s.messages, "bytes": s.bytes, "rss": rss, "warnings": len(st.warnings),
        "last_ok": m is not None and len(m.data) == 128}
print(json.dumps(base))
"""

BASELINE = """
import json
from natslab.server.jetstream.store.file import store
for line in open("/proc/self/status"):
    if line.startswith("VmRSS:"):
        print(json.dumps({"rss": int(line.split()[1]) * 1024}))
"""


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def reopen(directory: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", REOPEN, str(directory)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--subjects", type=int, default=1, help="spread messages over this many subjects")
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    root = args.dir or Path(tempfile.mkdtemp(prefix="bench-filestore-"))
    d = root / "stream"
    shutil.rmtree(d, ignore_errors=True)

    payload = os.urandom(args.size)
    subjects = [f"bench.orders.{i}" for i in range(args.subjects)]
    st = FileStore(d)
    t0 = time.perf_counter()
    last_flush = t0
    store = st.store_msg
    ns = time.time_ns()
    for i in range(args.messages):
        store(subjects[i % args.subjects], None, payload, ns + i)
        if not i & 0xFFF:  # the stream's ~1 s flush timer, approximated
            now = time.perf_counter()
            if now - last_flush >= 1.0:
                st.flush()
                last_flush = now
    t_write = time.perf_counter() - t0
    state_bytes = st.state().bytes  # (before the close: a closed store reads no timestamps)
    t1 = time.perf_counter()
    st.close()
    t_close = time.perf_counter() - t1
    disk = du(d)

    clean = reopen(d)
    # After SIGKILL the sealed blocks still have the index files written when
    # they filled up; only the block being appended to has none.
    idxs = sorted((d / "msgs").glob("*.idx"), key=lambda p: int(p.stem))
    idxs[-1].unlink()
    killed = reopen(d)
    for idx in idxs:
        idx.unlink(missing_ok=True)
    crash = reopen(d)  # worst case: every block scanned
    clean2 = reopen(d)  # that open rewrote the index files
    base = json.loads(subprocess.run([sys.executable, "-c", BASELINE], capture_output=True, text=True, check=True).stdout)

    n = args.messages
    mib = 1024 * 1024
    print(f"messages            {n:,} x {args.size} B on {args.subjects} subject(s)")
    print(f"write               {t_write:.2f} s  ({n / t_write:,.0f} msg/s, {t_write / n * 1e6:.2f} us/msg)")
    print(f"close               {t_close:.2f} s")
    print(f"disk used           {disk / mib:.1f} MiB  (accounted bytes {state_bytes / mib:.1f} MiB)")
    print(f"reopen, index files {clean['open_s']:.2f} s   (second run {clean2['open_s']:.2f} s)")
    print(f"reopen, after kill  {killed['open_s']:.2f} s  (last block scanned, the rest from index files)")
    print(f"reopen, full scan   {crash['open_s']:.2f} s  (worst case: no index file at all, every record checked)")
    print(f"RSS after reopen    {clean['rss'] / mib:.1f} MiB  (python + package baseline {base['rss'] / mib:.1f} MiB)")
    assert clean["messages"] == crash["messages"] == killed["messages"] == n and clean["last_ok"] and crash["last_ok"]
    assert clean["warnings"] == crash["warnings"] == 0
    if not args.dir:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
