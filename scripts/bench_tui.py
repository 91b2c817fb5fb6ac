"""Measure the workbench: launch to first paint, CPU at rest, key latency under load.

    python scripts/bench_tui.py budgets          # issue 22's three budgets, 3 runs each (about 3 minutes)
    python scripts/bench_tui.py budgets --broker nats-server --runs 5
    python scripts/bench_tui.py paint            # embedded broker, --memory
    python scripts/bench_tui.py paint --connect  # against a nats-server
    python scripts/bench_tui.py idle             # 200 streams, 500 consumers, 20 s at rest
    python scripts/bench_tui.py flood            # key latency while 10,000 msg/s flow into the embedded broker
    python scripts/bench_tui.py feel             # issue 29: 60 streams, 100 consumers on nats-server: first
                                                 # paint, connected, CPU at rest, j/k and tab switch latency
    python scripts/bench_tui.py feel --busy 2    # the same with two busy loops beside it (issue 29's stress)

``budgets`` runs the broker as a process of its own (natslab's by default, or
nats-server), gives it 200 streams and 500 consumers, and opens the app on
the consumers pane with the stream ruler and the rates charts (`g`) showing:
first paint (launch to the first frame with the header), CPU of the app at
rest over a window, and key press to screen update while an outside client
publishes 10,000 msg/s (z zooms the charts and g flips charts and details;
each press waits for text only the new frame has). Budgets: first paint at
most 1.0 s, CPU at most 15 % of one core, key latency median below 100 ms and
max below 150 ms. Each figure is the median of the runs.

The app runs as a real `natslab` process on a pseudo-terminal, from
compiled modules as an installed natslab is (pip compiles them at install;
with PYTHONDONTWRITEBYTECODE set, as here, an editable checkout compiled its
~35 modules from source on every launch, ~45 ms of the first paint). CPU is the app
process's user+system time over the window, as a share of one core. Every
load loop is bounded in count and time and stopped before the next run.
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


def start_nats_server(store: str, kind: str = "nats-server") -> tuple[subprocess.Popen, str]:
    """nats-server, or natslab's broker as its own process (``python -m natslab.server``)."""
    port = free_port()
    cmd = [shutil.which("nats-server")] if kind == "nats-server" else [sys.executable, "-m", "natslab.server"]
    proc = subprocess.Popen([*cmd, "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", store],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), 0.1).close()
            break
        except OSError:
            time.sleep(0.02)
    return proc, f"nats://127.0.0.1:{port}"


def compile_natslab() -> None:
    """Byte-compile natslab's own packages (an editable install's source tree)."""
    import compileall
    import importlib.util

    for name in ("natslab", "natslab.tui", "natslab.themes", "natslab.server"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            for path in spec.submodule_search_locations:
                compileall.compile_dir(path, quiet=1)


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
    """Press q and wait for the exit, reading the terminal meanwhile: an app
    whose last frames nobody reads blocks in its writer thread once the pty's
    buffer is full (this measured "quit took 15 s", then killed it)."""
    t = time.monotonic()
    os.write(master, b"q")
    end = t + 15
    while proc.poll() is None and time.monotonic() < end:
        drain(master, 0.05)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
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
    stop = t0 + float(sys.argv[3]) if len(sys.argv) > 3 else t0 + 120  # never runs on by itself
    subject = sys.argv[4] if len(sys.argv) > 4 else "flood.data"
    while time.monotonic() < stop and n < rate * 200:
        for _ in range(100):
            await nc.publish(subject, b"x" * 64)
        n += 100
        await nc.flush()
        ahead = n / rate - (time.monotonic() - t0)
        if ahead > 0:
            await asyncio.sleep(ahead)
        if n % 10_000 == 0:
            print(f"{n / (time.monotonic() - t0):.0f} msg/s", flush=True)
    print(f"{n / (time.monotonic() - t0):.0f} msg/s", flush=True)
    await nc.close()
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
    pub = subprocess.Popen([sys.executable, "-c", FLOOD, url, str(rate), str(seconds + 30)], stdout=subprocess.PIPE,
                           text=True) if rate else None
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


# ---- issue 22's budgets: 200 streams, 500 consumers, ruler and charts on screen ----

KEYS = [  # (key, text only the frame after it has)
    (b"z", b"the last 5 m"), (b"z", b"the last 15 m"), (b"z", b"the last 1 m"),
    (b"g", b"Information for Consumer"), (b"g", b"the last 1 m"),
]


def median(values: list[float]) -> float:
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def open_charts(url: str) -> tuple[subprocess.Popen, int, float | None, float]:
    """Launch the app on ``url``; the consumers pane of S000 (3 consumers) with the charts.
    Returns the process, its terminal, launch to first paint and the launch time."""
    t0 = time.monotonic()
    proc, master = spawn_app(["--connect", url])
    painted = read_until(master, b"natslab", 20)
    # the app's own CPU time by then: what the first frame costs without the machine's other load
    open_charts.cpu_at_paint = cpu_seconds(proc.pid) if painted else float("inf")
    read_until(master, b"S199", 30)  # the streams list is in
    drain(master, 1.5)
    os.write(master, b"2")  # consumers pane: the ruler under the table
    read_until(master, b"Consumers of S000", 10)
    drain(master, 1.0)
    os.write(master, b"g")  # the selected consumer's rates charts instead of its details
    read_until(master, b"the last 1 m", 10)
    return proc, master, (painted - t0) if painted else None, t0


def press_keys(master: int, presses: int) -> list[float]:
    latencies = []
    for i in range(presses):
        key, needle = KEYS[i % len(KEYS)]
        drain(master, 0.4)
        t = time.monotonic()
        os.write(master, key)
        done = read_until(master, needle, 5)
        latencies.append((done - t) if done else float("inf"))
    return latencies


def budgets(kind: str, runs: int, rest_seconds: float, presses: int, rate: int) -> None:
    store = tempfile.mkdtemp()
    server, url = start_nats_server(store, kind)
    try:
        t = time.monotonic()
        asyncio.run(populate(url, 200, 500))
        print(f"{kind}: 200 streams, 500 consumers in {time.monotonic() - t:.1f} s")
        paints, paint_cpus, cpus, medians, maxima, rates = [], [], [], [], [], []
        for run in range(runs):
            proc, master, painted, _ = open_charts(url)
            try:
                drain(master, 2)
                c0, t0 = cpu_seconds(proc.pid), time.monotonic()
                drain(master, rest_seconds)
                cpu = 100 * (cpu_seconds(proc.pid) - c0) / (time.monotonic() - t0)
                pub = subprocess.Popen([sys.executable, "-c", FLOOD, url, str(rate), str(presses * 0.6 + 15)],
                                       stdout=subprocess.PIPE, text=True)
                try:
                    drain(master, 2)  # the flood is on before the first press
                    lat = press_keys(master, presses)
                finally:
                    pub.terminate()
                    out = pub.communicate(timeout=10)[0].strip().splitlines()
            finally:
                quit_app(proc, master)
            paints.append(painted if painted is not None else float("inf"))
            paint_cpus.append(open_charts.cpu_at_paint)
            cpus.append(cpu)
            medians.append(median(lat))
            maxima.append(max(lat))
            rates.append(out[-1] if out else "none")
            print(f"run {run + 1}: first paint {painted or float('inf'):.3f} s (app CPU by then "
                  f"{paint_cpus[-1]:.2f} s) · CPU at rest {cpu:.1f}% over "
                  f"{rest_seconds:.0f} s · keys under flood ({rates[-1]}) median {1000 * medians[-1]:.0f} ms, "
                  f"max {1000 * maxima[-1]:.0f} ms over {len(lat)} presses", flush=True)
            print("   per press (ms): " + " ".join(f"{1000 * x:.0f}" for x in lat), flush=True)
        verdict = lambda ok: "ok" if ok else "MISSED"  # noqa: E731
        print(f"median of {runs} runs against {kind}:")
        print(f"  first paint {median(paints):.3f} s (budget 1.0 s: {verdict(median(paints) <= 1.0)}); "
              f"the app's CPU time by then {median(paint_cpus):.2f} s")
        print(f"  CPU at rest, ruler and charts showing: {median(cpus):.1f}% of one core "
              f"(budget 15%: {verdict(median(cpus) <= 15)})")
        print(f"  key press to screen update under {rate} msg/s: median {1000 * median(medians):.0f} ms "
              f"(budget 100 ms: {verdict(median(medians) < 0.1)}), max {1000 * median(maxima):.0f} ms "
              f"(budget 150 ms: {verdict(median(maxima) < 0.15)}); worst of all runs {1000 * max(maxima):.0f} ms")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(store, ignore_errors=True)


# ---- issue 29's speed as people feel it: 60 streams, 100 consumers ----

def read_marks(master: int, needles: list[bytes], timeout: float) -> dict[bytes, float]:
    """When each needle first appeared in the terminal's output (one buffer for
    all: a needle in the same chunk as an earlier one is not missed)."""
    buf, seen = b"", {}
    end = time.monotonic() + timeout
    while time.monotonic() < end and len(seen) < len(needles):
        r, _, _ = select.select([master], [], [], 0.005)
        if r:
            try:
                buf += os.read(master, 65536)
            except OSError:
                break
            now = time.monotonic()
            for needle in needles:
                if needle not in seen and needle in buf:
                    seen[needle] = now
    return seen


def press(master: int, key: bytes, needle: bytes, settle: float = 0.3) -> float:
    drain(master, settle)
    t = time.monotonic()
    os.write(master, key)
    done = read_until(master, needle, 5)
    return (done - t) if done else float("inf")


BUSY = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\nwhile time.monotonic() < end: pass\n"


def busy_loops(count: int, seconds: float) -> list[subprocess.Popen]:
    """``count`` processes spinning one core each, for at most ``seconds`` (stopped by the caller before)."""
    return [subprocess.Popen([sys.executable, "-c", BUSY, str(seconds)]) for _ in range(count)]


def feel(runs: int, rest_seconds: float, presses: int, busy: int = 0) -> None:
    store = tempfile.mkdtemp()
    server, url = start_nats_server(store)
    loops: list[subprocess.Popen] = []
    try:
        asyncio.run(populate(url, 60, 100))
        # the busy loops run through every run, bounded at 90 s a run in case this process dies
        loops = busy_loops(busy, 90.0 * runs + 30)
        print(f"nats-server: 60 streams, 100 consumers; {busy} busy loops; load: {os.getloadavg()[0]:.2f} "
              f"(1 min load average)")
        rows = []
        for run in range(runs):
            t0 = time.monotonic()
            proc, master = spawn_app(["--connect", url])
            try:
                marks = read_marks(master, [b"natslab", b"connected", b"S059"], 30)
                painted, connected = (marks.get(b"natslab", float("inf")) - t0,
                                      marks.get(b"connected", float("inf")) - t0)
                drain(master, 2)
                c0, w0 = cpu_seconds(proc.pid), time.monotonic()
                drain(master, rest_seconds)
                cpu = 100 * (cpu_seconds(proc.pid) - c0) / (time.monotonic() - w0)
                jk = [press(master, b"j", b"S%03d" % (i + 1)) for i in range(presses)]
                jk += [press(master, b"k", b"S%03d" % (presses - 1 - i)) for i in range(presses)]
                tabs = []
                for i in range(presses // 2):
                    tabs.append(press(master, b"2", b"Consumers of"))
                    tabs.append(press(master, b"1", b"Streams ("))
            finally:
                quit_s = quit_app(proc, master)
            rows.append((painted, connected, cpu, median(jk), max(jk), median(tabs), max(tabs)))
            print(f"run {run + 1} (load {os.getloadavg()[0]:.2f}, quit took {quit_s:.2f} s): first paint "
                  f"{painted:.3f} s · connected {connected:.3f} s · CPU at rest "
                  f"{cpu:.1f}% over {rest_seconds:.0f} s · j/k median {1000 * median(jk):.0f} ms max "
                  f"{1000 * max(jk):.0f} ms ({len(jk)}) · tab median {1000 * median(tabs):.0f} ms max "
                  f"{1000 * max(tabs):.0f} ms ({len(tabs)})", flush=True)
            print("   j/k (ms): " + " ".join(f"{1000 * x:.0f}" for x in jk), flush=True)
            print("   tab (ms): " + " ".join(f"{1000 * x:.0f}" for x in tabs), flush=True)
        col = lambda i: median([r[i] for r in rows])  # noqa: E731
        ok = lambda good: "ok" if good else "MISSED"  # noqa: E731
        print(f"median of {runs} runs (load now {os.getloadavg()[0]:.2f}):")
        print(f"  first paint {col(0):.3f} s (target 0.5 s: {ok(col(0) <= 0.5)}); "
              f"connected {col(1):.3f} s (target 1.0 s: {ok(col(1) <= 1.0)})")
        print(f"  CPU at rest {col(2):.1f}% of one core (target 5%: {ok(col(2) <= 5)})")
        print(f"  j/k median {1000 * col(3):.0f} ms (target 50: {ok(col(3) <= 0.05)}), max {1000 * col(4):.0f} ms "
              f"(target 150: {ok(col(4) <= 0.15)})")
        print(f"  tab switch median {1000 * col(5):.0f} ms, max {1000 * col(6):.0f} ms (target 100: {ok(col(6) <= 0.1)})")
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    compile_natslab()
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["paint", "idle", "flood", "budgets", "feel"])
    p.add_argument("--connect", action="store_true")
    p.add_argument("--seconds", type=float, default=20, help="idle: seconds at rest; budgets: 10 unless given")
    p.add_argument("--rate", type=int, default=10_000, help="flood: messages per second (0 = none)")
    p.add_argument("--broker", choices=["natslab", "nats-server"], default="natslab", help="budgets: the broker process")
    p.add_argument("--runs", type=int, default=3, help="budgets: runs (the figures are their medians)")
    p.add_argument("--presses", type=int, default=20, help="budgets: key presses per run")
    p.add_argument("--busy", type=int, default=0, help="feel: busy loops (one core each) running beside the app")
    a = p.parse_args()
    {"paint": lambda: paint(a.connect), "idle": lambda: idle(a.seconds), "flood": lambda: flood(a.seconds, a.rate),
     "feel": lambda: feel(a.runs, a.seconds if "--seconds" in sys.argv else 10.0, a.presses // 2, a.busy),
     "budgets": lambda: budgets(a.broker, a.runs, a.seconds if "--seconds" in sys.argv else 10.0, a.presses,
                                a.rate)}[a.what]()
