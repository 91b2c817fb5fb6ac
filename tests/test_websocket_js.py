"""nats.js over WebSocket (interop/nats-js/ws.mjs, wsconnect) against both
servers: same transcript. Needs node and the interop packages
(``cd interop/nats-js && npm ci``); skipped without them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from test_websocket import start

JS_DIR = Path(__file__).resolve().parent.parent / "interop" / "nats-js"


def run_ws_js(ws_url: str, tcp_url: str) -> list[str]:
    r = subprocess.run(["node", "--experimental-websocket", "ws.mjs", ws_url, tcp_url], cwd=JS_DIR,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


@pytest.mark.skipif(shutil.which("node") is None or not (JS_DIR / "node_modules" / "@nats-io" / "nats-core").is_dir(),
                    reason="node or interop/nats-js/node_modules missing (npm ci)")
def test_nats_js_wsconnect(tmp_path):
    transcripts = {}
    for kind in ("natslab", "nats-server"):
        srv = start(kind, tmp_path / kind, "  no_tls: true\n  compression: true\n")
        try:
            transcripts[kind] = run_ws_js(srv.ws_url, srv.url)
        finally:
            srv.stop()
    lines = transcripts["natslab"]
    assert lines == transcripts["nats-server"]
    assert [ln.split("\t")[0] for ln in lines] == ["info", "tcp-to-ws", "ws-to-tcp-big", "request",
                                                   "no-responders", "kv", "drain"]
    assert all("error" not in ln for ln in lines), lines
