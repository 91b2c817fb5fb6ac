"""Start-up: time from spawning a broker to its first INFO on a client socket
(a listener that accepts and serves), natslab against nats-server in the
same run, one broker at a time and three at once.

    python bench/bench_startup.py [--rounds 7] [--bytecode with|without|both] [--only alone|three]
                                  [--streams N [--msgs M]]

Brokers measured, each without and with JetStream (``-js -sd DIR``, an empty
store directory):

- ``nats-server``: the binary itself (a pyenv shim in front of it costs
  about 50 ms of bash, so it is looked for next to the interpreter first);
- ``python -m natslab.server``: how the test suites start natslab;
- ``natslab server``: the console script pip installs;
- ``python floor``: this interpreter starting, importing asyncio and
  answering with an INFO line from an asyncio server, no natslab at all:
  the part of natslab's figure that is Python's (the interpreter, the
  machine's ``site`` and ``.pth`` hooks, asyncio).

Two times are taken from each spawn: "connect", when a connection to the
port is first taken (the listener is bound; natslab binds it as soon as
its flags are read, server/flags.py), and "INFO", when that connection
gets the first bytes of the broker's INFO (accepted and served).

With ``--streams N`` each -js start is also timed on a store the same
broker filled first (N file streams of M messages, a durable consumer
each): JetStream's recovery comes before the port serves, on both.

"alone" spawns one broker, waits for its INFO and stops it; "three"
spawns three of the same kind back to back (as a test run starting
servers on both xdist workers, or a client suite starting a cluster of
test servers) and takes each one's time from its own spawn. Kinds take
turns within a round, their order switching every round. Figures are
medians of all the times; the CPU column is the broker's on-CPU time up
to its INFO (steadier than wall time on a loaded machine). The ratio is
nats-server's time over natslab's (1.0x is parity, higher is better).

Python's bytecode cache counts: "with" (the default) compiles natslab's
modules into their __pycache__ first (what pip does at install);
"without" moves natslab's __pycache__ directories aside for the rounds (a
start that compiles every module it imports, as a source checkout under
PYTHONDONTWRITEBYTECODE=1 does) and puts them back. The standard library
keeps its own cache either way.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import cpu_seconds_fine, free_port, nats_server_binary  # noqa: E402

# the floor: what any Python broker pays before its own code runs
FLOOR = r"""
import asyncio, sys
async def main():
    async def hello(r, w):
        w.write(b'INFO {}\r\n')
    await asyncio.start_server(hello, '127.0.0.1', int(sys.argv[1]))
    await asyncio.Event().wait()
asyncio.run(main())
"""


def natslab_script() -> str | None:
    """The ``natslab`` console script of this interpreter's environment."""
    here = Path(sys.executable).parent / "natslab"
    return str(here) if here.exists() else shutil.which("natslab")


def kinds() -> dict[str, object]:
    """name -> argv(port, store_dir or None) for each broker measured."""

    def flags(port: int, sd: str | None) -> list[str]:
        return ["-a", "127.0.0.1", "-p", str(port)] + (["-js", "-sd", sd] if sd else [])

    out = {
        "nats-server": lambda port, sd: [nats_server_binary()] + flags(port, sd),
        "python -m natslab.server": lambda port, sd: [sys.executable, "-m", "natslab.server"] + flags(port, sd),
    }
    script = natslab_script()
    if script:
        out["natslab server"] = lambda port, sd: [script, "server"] + flags(port, sd)
    out["python floor"] = lambda port, sd: [sys.executable, "-c", FLOOR, str(port)]
    return out


class Probe:
    """One broker being started: the time its port first took a connection
    (connect() returned: the listener is bound, the kernel queues it) and
    the time that connection got the first bytes of an INFO (the broker
    accepted it and serves it), both from the spawn, and the CPU the broker
    had used by its INFO."""

    def __init__(self, argv: list[str], port: int):
        self.argv, self.port = argv, port
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.sock: socket.socket | None = None
        self.got = b""
        self.connected = self.served = self.cpu = None

    def poll(self) -> bool:
        """One look; True once served."""
        if self.served is not None:
            return True
        if self.sock is None:
            try:
                self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=1)
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.argv} exited with {self.proc.returncode}") from None
                return False
            self.connected = time.perf_counter() - self.t0
            self.sock.setblocking(False)
        try:
            chunk = self.sock.recv(5 - len(self.got))
        except BlockingIOError:
            return False
        if not chunk:
            raise RuntimeError(f"{self.argv} closed the connection before its INFO")
        self.got += chunk
        if len(self.got) < 5:
            return False
        if self.got != b"INFO ":
            raise RuntimeError(f"{self.argv} sent {self.got!r}")
        self.served = time.perf_counter() - self.t0
        self.cpu = cpu_seconds_fine(self.proc.pid)
        return True

    def stop(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def spawn_and_time(argvs: list[list[str]], ports: list[int], stop: bool = True) -> list[Probe]:
    """Spawn each argv back to back and poll them all until each has sent
    its INFO; every broker is stopped before returning (unless ``stop`` is
    False: then the caller stops them)."""
    probes: list[Probe] = []
    ok = False
    try:
        for argv, port in zip(argvs, ports):
            probes.append(Probe(argv, port))
        deadline = time.perf_counter() + 30
        while not all([p.poll() for p in probes]):
            if time.perf_counter() > deadline:
                raise RuntimeError(f"not served in 30 s: {argvs}")
            time.sleep(0.0005)
        ok = True
        return probes
    finally:
        if stop or not ok:
            for p in probes:
                p.stop()


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


def fill_store(argv_of, store_dir: str, streams: int, msgs: int) -> None:
    """A store with ``streams`` file streams of ``msgs`` 128-byte messages
    and a durable consumer each (half of it acked), made by the broker that
    will start on it; stopped cleanly."""
    import asyncio

    import nats

    port = free_port()
    (p,) = spawn_and_time([argv_of(port, store_dir)], [port], stop=False)

    async def fill():
        nc = await nats.connect(f"nats://127.0.0.1:{port}", max_reconnect_attempts=0)
        js = nc.jetstream()
        for i in range(streams):
            await js.add_stream(name=f"S{i}", subjects=[f"s{i}.>"])
            acks = [js.publish(f"s{i}.{j % 10}", b"x" * 128) for j in range(msgs)]
            for k in range(0, len(acks), 500):
                await asyncio.gather(*acks[k:k + 500])
            sub = await js.pull_subscribe(f"s{i}.>", durable="D", stream=f"S{i}")
            for m in await sub.fetch(min(msgs // 2, 1000), timeout=10):
                await m.ack()
            await nc.flush()
        await nc.close()
    try:
        asyncio.run(fill())
    finally:
        p.stop()


def measure(rounds: int, together: int, streams: int = 0, msgs: int = 0) -> None:
    ks = kinds()
    if streams:
        ks.pop("python floor")  # (it has no store to recover)
    names = list(ks)
    width = max(map(len, names))
    for js in ((True,) if streams else (False, True)):
        conn = {k: [] for k in names}
        wall = {k: [] for k in names}
        cpu = {k: [] for k in names}
        with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
            filled = {}
            if streams:
                for k in names:
                    filled[k] = str(Path(tmp) / f"{k.replace(' ', '_')}-filled")
                    os.mkdir(filled[k])
                    fill_store(ks[k], filled[k], streams, msgs)
            for r in range(rounds):
                for k in (names if r % 2 == 0 else names[::-1]):
                    ports, argvs = [], []
                    for i in range(together):
                        port = free_port()
                        sd = None
                        if js:
                            sd = str(Path(tmp) / f"{k.replace(' ', '_')}-{r}-{i}")
                            if streams:
                                shutil.copytree(filled[k], sd)
                            else:
                                os.mkdir(sd)
                        ports.append(port)
                        argvs.append(ks[k](port, sd))
                    for p in spawn_and_time(argvs, ports):
                        conn[k].append(p.connected)
                        wall[k].append(p.served)
                        cpu[k].append(p.cpu)
        med = {k: (statistics.median(conn[k]), statistics.median(wall[k]), statistics.median(cpu[k])) for k in names}
        ref = med["nats-server"]
        store = f" ({streams} streams of {msgs} messages)" if streams else ""
        print(f"\n{'-js -sd DIR' if js else 'no flags'}{store}, {'alone' if together == 1 else f'{together} at once'}"
              f" (median of {len(wall['nats-server'])}; ratio: nats-server's over natslab's)")
        print(f"{'':{width}}  {'connect':>8} {'ratio':>6}  {'INFO':>8} {'ratio':>6}  {'CPU':>8} {'ratio':>6}  each INFO (ms)")
        for k in names:
            cells = []
            for i, x in enumerate(med[k]):
                ratio = "" if k in ("nats-server", "python floor") else f"{ref[i] / x:5.2f}x"
                cells.append(f"{x * 1e3:5.1f} ms {ratio:>6}")
            print(f"{k:{width}}  {'  '.join(cells)}  {' '.join(f'{x * 1e3:.0f}' for x in wall[k])}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--bytecode", choices=("both", "with", "without"), default="with",
                    help="natslab with its modules' bytecode cache (default), without it, or both")
    ap.add_argument("--only", choices=("alone", "three"), help="one broker at a time, or three at once (default both)")
    ap.add_argument("--streams", type=int, default=0,
                    help="also start -js on a store of this many file streams (each with a durable consumer)")
    ap.add_argument("--msgs", type=int, default=10000, help="messages in each of those streams (default 10000)")
    a = ap.parse_args()
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        # (else the first "without" round would write the cache for the rest)
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    print(f"nats-server: {nats_server_binary()}; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for mode in (("with", "without") if a.bytecode == "both" else (a.bytecode,)):
        print(f"\n==== natslab {mode} bytecode cache")
        with bytecode(mode):
            for together in {"alone": (1,), "three": (3,)}.get(a.only, (1, 3)):
                measure(a.rounds, together)
                if a.streams:
                    measure(a.rounds, together, a.streams, a.msgs)


if __name__ == "__main__":
    main()
