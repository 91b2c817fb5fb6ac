"""Measure the workbench: launch to first paint, and CPU at rest under load.

    python scripts/bench_tui.py paint            # embedded broker, --memory
    python scripts/bench_tui.py paint --connect  # against a nats-server
    python scripts/bench_tui.py idle             # 200 streams, 500 consumers, 20 s at rest
    python scripts/bench_tui.py flood            # key latency while 10,000 msg/s flow into the embedded broker

The app runs as a real `natslab` process on a pseudo-terminal; "first paint"
is the first frame that contains the header text. CPU is the app process's
user+system time over the window, as a share of one core.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pty
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import nats


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_nats_server(store: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([shutil.which("nats-server"), "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", store],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            break
        except OSError:
            time.sleep(0.02)
    return proc, f"nats://127.0.0.1:{port}"


def spawn_app(args: list[str]) -> tuple[subprocess.Popen, int]:
    master, slave = pty.openpty()
    os.set_blocking(master, False)
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="120", LINES="36")
    import fcntl, struct, termios

    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "natslab", *args], stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)
    os.close(slave)
    return proc, master


def read_until(master: int, needle: bytes, timeout: float) -> float | None:
    buf = b""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r, _, _ = select.select([master], [], [], 0.01)
        if r:
            try:
                buf += os.read(master, 65536)
            except OSError:
                return None
            if needle in buf:
                return time.monotonic()
    return None


def drain(master: int, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        r, _, _ = select.select([master], [], [], 0.05)
        if r:
            try:
                os.read(master, 65536)
            except OSError:
                return


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def quit_app(proc: subprocess.Popen, master: int) -> float:
    t = time.monotonic()
    os.write(master, b"q")
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
    return time.monotonic() - t


def paint(connect: bool) -> None:
    store = tempfile.mkdtemp()
    server = None
    args = ["--memory", "--port", "0"]
    if connect:
        server, url = start_nats_server(store)
        args = ["--connect", url]
    try:
        t0 = time.monotonic()
        proc, master = spawn_app(args)
        painted = read_until(master, b"natslab", 20)
        connected = read_until(master, b"connected", 20)
        drain(master, 0.5)
        quit_time = quit_app(proc, master)
    finally:
        if server:
            server.terminate()
    print(f"launch to first paint: {painted - t0:.3f} s" if painted else "no paint within 20 s")
    if connected:
        print(f"launch to connected:   {connected - t0:.3f} s")
    print(f"quit took:             {quit_time:.3f} s (exit code {proc.returncode})")


async def populate(url: str, streams: int, consumers: int) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream()
    for i in range(streams):
        await js.add_stream(name=f"S{i:03d}", subjects=[f"s{i:03d}.>"])
        await js.publish(f"s{i:03d}.x", b"x")
    for j in range(consumers):
        await js.add_consumer(f"S{j % streams:03d}", durable_name=f"C{j:03d}", ack_policy="explicit")
    await nc.close()


def idle(seconds: float) -> None:
    store = tempfile.mkdtemp()
    server, url = start_nats_server(store)
    asyncio.run(populate(url, 200, 500))
    try:
        _idle(url, seconds)
    finally:
        server.terminate()


def _idle(url: str, seconds: float) -> None:
    proc, master = spawn_app(["--connect", url])
    read_until(master, b"S199", 30)
    drain(master, 3)
    c0, t0 = cpu_seconds(proc.pid), time.monotonic()
    drain(master, seconds)
    c1, t1 = cpu_seconds(proc.pid), time.monotonic()
    print(f"streams pane, 200 streams / 500 consumers: CPU {100 * (c1 - c0) / (t1 - t0):.1f}% of one core over {t1 - t0:.0f} s")
    os.write(master, b"2")  # consumers pane (polls twice a second)
    drain(master, 2)
    c0, t0 = cpu_seconds(proc.pid), time.monotonic()
    drain(master, seconds)
    c1, t1 = cpu_seconds(proc.pid), time.monotonic()
    print(f"consumers pane (with the stream ruler): CPU {100 * (c1 - c0) / (t1 - t0):.1f}% of one core over {t1 - t0:.0f} s")
    os.write(master, b"g")  # the selected consumer's rates charts instead of its details
    drain(master, 2)
    c0, t0 = cpu_seconds(proc.pid), time.monotonic()
    drain(master, seconds)
    c1, t1 = cpu_seconds(proc.pid), time.monotonic()
    print(f"consumers pane, ruler and rates charts: CPU {100 * (c1 - c0) / (t1 - t0):.1f}% of one core over {t1 - t0:.0f} s")
    quit_app(proc, master)


FLOOD = """
import asyncio, sys, time, nats
async def main():
    nc = await nats.connect(sys.argv[1])
    rate, n, t0 = int(sys.argv[2]), 0, time.monotonic()
    while True:
        for _ in range(100):
            await nc.publish("flood.data", b"x" * 64)
        n += 100
        await nc.flush()
        ahead = n / rate - (time.monotonic() - t0)
        if ahead > 0:
            await asyncio.sleep(ahead)
        if n % 50_000 == 0:
            print(f"{n / (time.monotonic() - t0):.0f} msg/s", flush=True)
asyncio.run(main())
"""


def flood(seconds: float, rate: int) -> None:
    import re

    proc, master = spawn_app(["--memory", "--port", "0"])
    buf = b""
    end = time.monotonic() + 20
    url = None
    while time.monotonic() < end and url is None:
        r, _, _ = select.select([master], [], [], 0.05)
        if r:
            buf += os.read(master, 65536)
            m = re.search(rb"nats://127\.0\.0\.1:(\d+)", buf)
            if m and b"connected" in buf:
                url = m.group(0).decode()
    if url is None:
        print("app did not show a URL")
        proc.kill()
        return
    drain(master, 1)
    pub = subprocess.Popen([sys.executable, "-c", FLOOD, url, str(rate)], stdout=subprocess.PIPE, text=True) if rate else None
    # a core subscriber in the flood too, so the broker fans out as well
    drain(master, 2)
    latencies = []
    for i in range(int(seconds)):
        key, needle = (b"2", b"Consumers") if i % 2 == 0 else (b"1", b"Streams")
        t = time.monotonic()
        os.write(master, key)
        done = read_until(master, needle, 5)
        if done:
            latencies.append(done - t)
        drain(master, 0.5)
    out = []
    if pub is not None:
        pub.terminate()
        out = pub.communicate()[0].strip().splitlines()
    quit_app(proc, master)
    print("per press (ms, in order): " + " ".join(f"{1000 * x:.0f}" for x in latencies))
    latencies.sort()
    print(f"publisher: {out[-1] if out else 'none'}")
    if latencies:
        print(f"key press to screen update under flood: median {1000 * latencies[len(latencies) // 2]:.0f} ms, "
              f"max {1000 * latencies[-1]:.0f} ms over {len(latencies)} presses")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["paint", "idle", "flood"])
    p.add_argument("--connect", action="store_true")
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--rate", type=int, default=10_000, help="flood: messages per second (0 = none)")
    a = p.parse_args()
    {"paint": lambda: paint(a.connect), "idle": lambda: idle(a.seconds), "flood": lambda: flood(a.seconds, a.rate)}[a.what]()
