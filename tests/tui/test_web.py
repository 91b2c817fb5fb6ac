"""``natslab --web``: the workbench served to a browser through textual-serve.

Starts ``natslab --web`` as a process (temporary data and config dirs, an
in-memory store), opens the page in headless Chromium driven over the DevTools
protocol, waits for the Streams pane in the terminal's text and checks a
screenshot of it. Skips when /usr/bin/chromium (Debian's ``chromium``) or
textual-serve is not installed.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import socket
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import aiohttp
import nats
import pytest

from conftest import free_port
from tests.tui.conftest import stop_process

CHROMIUM = Path("/usr/bin/chromium")
WIDTH, HEIGHT = 1280, 800
SCREENSHOT = os.environ.get("NATSLAB_WEB_SCREENSHOT")  # e.g. screenshots/web.png: keep the picture there

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install -y chromium)"),
]
pytest.importorskip("textual_serve", reason="needs textual-serve (pip install 'natslab[web]')")


async def _get(session: aiohttp.ClientSession, url: str, deadline: float, proc: subprocess.Popen, json=True):
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[0]} exited with {proc.returncode}")
        try:
            async with session.get(url) as r:
                if r.status == 200:
                    return await r.json(content_type=None) if json else await r.text()
        except aiohttp.ClientError:
            pass
        assert time.monotonic() < deadline, f"nothing answered on {url}"
        await asyncio.sleep(0.1)


class DevTools:
    """One page of Chromium over the DevTools protocol."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse):
        self.ws = ws
        self.ids = itertools.count(1)

    async def call(self, method: str, **params):
        msg_id = next(self.ids)
        await self.ws.send_json({"id": msg_id, "method": method, "params": params})
        while True:
            msg = await asyncio.wait_for(self.ws.receive_json(), 30)
            if msg.get("id") == msg_id:
                assert "error" not in msg, msg
                return msg["result"]

    async def text(self, expression: str) -> str:
        res = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return res["result"].get("value") or ""


# xterm.js draws on a canvas (textual-serve loads its WebGL/canvas renderer), so
# the page has no text to read: this script, run before the page's own, keeps
# what the session's websocket sends to the terminal (ANSI output) as text, with
# the escape sequences taken out, in window.__terminal_text
CAPTURE_TERMINAL = r"""
(() => {
  window.__terminal_text = "";
  const decoder = new TextDecoder();
  const keep = (data) => {
    if (typeof data === "string") { window.__terminal_text += data; return; }
    if (data instanceof Blob) { data.arrayBuffer().then(keep); return; }
    window.__terminal_text += decoder.decode(data, {stream: true})
      .replace(/\x1b\[[0-9;?]*[ -\/]*[@-~]/g, "").replace(/\x1b[\]P_][^\x07\x1b]*(\x07|\x1b\\)/g, "");
  };
  const Native = window.WebSocket;
  window.WebSocket = function (...args) {
    const ws = new Native(...args);
    ws.addEventListener("message", (event) => keep(event.data));
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
})();
"""


async def _show_workbench(ws: aiohttp.ClientWebSocketResponse, url: str, deadline: float) -> DevTools:
    """Open the page in this tab and wait until its workbench shows the Streams
    pane, connected, listing the stream of the one broker --web runs."""
    tools = DevTools(ws)
    await tools.call("Page.enable")
    await tools.call("Page.addScriptToEvaluateOnNewDocument", source=CAPTURE_TERMINAL)
    await tools.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT,
                     deviceScaleFactor=1, mobile=False)
    await tools.call("Page.navigate", url=url)
    text = ""
    while not all(part in text for part in ("Streams", "● connected", "ROOM")):
        assert time.monotonic() < deadline, f"no Streams pane in the page; terminal text: {text[-2000:]!r}"
        await asyncio.sleep(0.2)
        text = await tools.text("window.__terminal_text")
    # and on screen: the canvas has been drawn (xterm.js paints on animation frames)
    await tools.call("Runtime.evaluate", awaitPromise=True, expression=(
        "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"))
    return tools


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    except OSError:
        return []


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _png_size_and_colours(data: bytes) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte values in its pixels (1 for a blank picture)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, width, height, idat = 8, 0, 0, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    pixels = zlib.decompress(idat)  # decodes, or raises
    return width, height, len(set(pixels))


@pytest.fixture
def web_url(tmp_path):
    port = free_port()
    env = dict(os.environ, XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    log = tmp_path / "natslab-web.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "natslab", "--web", "--port", str(port), "--memory", "--monitor-port", "0"],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        yield f"http://127.0.0.1:{port}", proc, log
    finally:
        stop_process(proc)


async def _broker_url(log: Path, proc: subprocess.Popen, deadline: float) -> str:
    """The URL of the one broker ``--web`` started, from what it prints."""
    while True:
        for line in log.read_text().splitlines():
            if line.startswith("natslab: broker on "):
                return line.split()[3]
        assert proc.poll() is None, f"natslab --web exited with {proc.returncode}: {log.read_text()}"
        assert time.monotonic() < deadline, f"natslab --web printed no broker URL: {log.read_text()}"
        await asyncio.sleep(0.1)


async def test_web_serves_the_workbench_to_a_browser(web_url, tmp_path):
    url, natslab, log = web_url
    deadline = time.monotonic() + 60
    # a stream made on the broker --web started, before the browser comes: the page must show it
    broker_url = await _broker_url(log, natslab, deadline)
    nc = await nats.connect(broker_url, max_reconnect_attempts=1, connect_timeout=5)
    try:
        await nc.jetstream().add_stream(name="ROOM", subjects=["room.>"])
    finally:
        await nc.close()
    devtools_port = free_port()
    chromium = subprocess.Popen(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--remote-debugging-port={devtools_port}", "--remote-debugging-address=127.0.0.1",
         f"--user-data-dir={tmp_path / 'chromium'}", f"--window-size={WIDTH},{HEIGHT}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        async with aiohttp.ClientSession() as session:
            assert "xterm" in await _get(session, url, deadline, natslab, json=False)  # the page is served
            targets = await _get(session, f"http://127.0.0.1:{devtools_port}/json", deadline, chromium)
            page = next(t for t in targets if t.get("type") == "page")
            async with session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                tools = await _show_workbench(ws, url, deadline)
                shot = await tools.call("Page.captureScreenshot", format="png")
                # a second viewer (another tab) gets a workbench of its own on the same broker
                async with session.put(f"http://127.0.0.1:{devtools_port}/json/new?about:blank") as r:
                    second = await r.json(content_type=None)
                async with session.ws_connect(second["webSocketDebuggerUrl"], max_msg_size=0) as ws2:
                    await _show_workbench(ws2, url, deadline)
                    sessions = _descendants(natslab.pid)
                    workbenches = [c for c in map(_cmdline, sessions) if c[1:4] == ["-m", "natslab", "--connect"]]
                    assert [c[4] for c in workbenches] == [broker_url] * 2, workbenches
                    # stopping --web (SIGTERM, as Ctrl+C) ends the sessions and the broker
                    natslab.terminate()
                    assert natslab.wait(30) == 0
                    while any(Path(f"/proc/{pid}").exists() for pid in sessions):
                        assert time.monotonic() < deadline, "a session's workbench outlived natslab --web"
                        await asyncio.sleep(0.1)
                    host, port = broker_url.removeprefix("nats://").split(":")
                    with pytest.raises(OSError):
                        socket.create_connection((host, int(port)), timeout=2).close()
    finally:
        stop_process(chromium)
    png = base64.b64decode(shot["data"])
    if SCREENSHOT:
        Path(SCREENSHOT).write_bytes(png)
    width, height, colours = _png_size_and_colours(png)
    assert (width, height) == (WIDTH, HEIGHT)
    assert colours > 8, "the screenshot is blank"
