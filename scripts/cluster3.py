"""A 3-node nats-server cluster with JetStream on 127.0.0.1, to try the
workbench against by hand (docs/walkthrough.md):

    python scripts/cluster3.py up [--dir /tmp/natslab-cluster] [--base 14230]
    python -m natslab --connect nats://127.0.0.1:14231
    python scripts/cluster3.py kill n2      # SIGKILL, as a crashed node
    python scripts/cluster3.py start n2     # back, from its store
    python scripts/cluster3.py status
    python scripts/cluster3.py down

Node i (1..3) listens for clients on base+i, for routes on base+10+i and for
monitoring on base+20+i; its store and log are under --dir/n<i>. The pids are
kept in --dir/n<i>.pid, so each command can be run from any shell.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

NAMES = ("n1", "n2", "n3")


def ports(base: int, i: int) -> tuple[int, int, int]:
    return base + i, base + 10 + i, base + 20 + i


def pid_of(root: Path, name: str) -> int | None:
    try:
        pid = int((root / f"{name}.pid").read_text())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start(root: Path, base: int, name: str) -> None:
    if pid_of(root, name):
        print(f"{name} runs already")
        return
    i = NAMES.index(name) + 1
    client, route, monitor = ports(base, i)
    if listening(client):
        sys.exit(f"port {client} is taken by another program: pick another --base")
    routes = ",".join(f"nats://127.0.0.1:{ports(base, j)[1]}" for j in (1, 2, 3) if j != i)
    store = root / name
    store.mkdir(parents=True, exist_ok=True)
    cmd = [shutil.which("nats-server") or "nats-server", "-a", "127.0.0.1", "-p", str(client), "-m", str(monitor),
           "-js", "-sd", str(store), "-n", name, "--cluster_name", "NATSLAB", "--cluster",
           f"nats://127.0.0.1:{route}", "--routes", routes, "-l", str(root / f"{name}.log")]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    (root / f"{name}.pid").write_text(str(proc.pid))
    deadline = time.monotonic() + 10
    while not listening(client):
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"{name} did not start: see {root / f'{name}.log'}")
        time.sleep(0.05)
    print(f"{name} pid {proc.pid}: nats://127.0.0.1:{client} · monitor http://127.0.0.1:{monitor}")


def stop(root: Path, name: str, sig: int) -> None:
    pid = pid_of(root, name)
    if pid is None:
        print(f"{name} is not running")
        return
    os.kill(pid, sig)
    deadline = time.monotonic() + 10
    while pid_of(root, name) and time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)  # (only when this process started it)
        except ChildProcessError:
            pass
        time.sleep(0.05)
    (root / f"{name}.pid").unlink(missing_ok=True)
    print(f"{name} {'killed (SIGKILL)' if sig == signal.SIGKILL else 'stopped'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("up", "down", "kill", "start", "stop", "status"))
    parser.add_argument("node", nargs="?", choices=NAMES)
    parser.add_argument("--dir", default="/tmp/natslab-cluster", type=Path)
    parser.add_argument("--base", default=14230, type=int, help="client ports base+1..3 (default 14230)")
    args = parser.parse_args()
    root: Path = args.dir
    root.mkdir(parents=True, exist_ok=True)
    if args.command in ("kill", "start", "stop") and not args.node:
        parser.error(f"{args.command} needs a node: n1, n2 or n3")
    if args.command == "up":
        for name in NAMES:
            start(root, args.base, name)
        print(f"python -m natslab --connect nats://127.0.0.1:{args.base + 1}")
    elif args.command == "down":
        for name in NAMES:
            stop(root, name, signal.SIGTERM)
    elif args.command == "start":
        start(root, args.base, args.node)
    elif args.command == "kill":
        stop(root, args.node, signal.SIGKILL)
    elif args.command == "stop":
        stop(root, args.node, signal.SIGTERM)
    else:
        for name in NAMES:
            print(name, "up, pid %d" % pid_of(root, name) if pid_of(root, name) else "down")


if __name__ == "__main__":
    main()
