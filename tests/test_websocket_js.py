"""nats.js over WebSocket (interop/nats-js/ws.mjs, wsconnect) against both
servers: same transcript. Needs node 20+; the pinned interop packages are
installed with ``npm ci`` on first use (skipped, saying why, when that fails)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from test_websocket import start

JS_DIR = Path(__file__).resolve().parent.parent / "interop" / "nats-js"


def run_ws_js(ws_url: str, tcp_url: str, env: dict | None = None) -> list[str]:
    r = subprocess.run(["node", "--experimental-websocket", "ws.mjs", ws_url, tcp_url], cwd=JS_DIR,
                       capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def _node_modules() -> str | None:
    """None when nats.js is there to run, else why not. The pinned packages
    (package-lock.json) are installed with `npm ci` the first time, as the
    natscli tests build their CLI: a fresh clone runs these tests too."""
    if shutil.which("node") is None:
        return "node is not installed (nats.js needs node 20+)"
    npm = shutil.which("npm")
    # every pytest-xdist worker imports this module: one installs, the others
    # wait on the lock and find the packages there (two `npm ci` in one folder
    # remove each other's files)
    with open(JS_DIR / ".npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (JS_DIR / "node_modules" / "@nats-io" / "nats-core").is_dir():
            return None
        if npm is None:
            return "interop/nats-js/node_modules missing and no npm to install it (cd interop/nats-js && npm ci)"
        try:
            r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=JS_DIR, capture_output=True,
                               text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return "npm ci in interop/nats-js took over 120 s (no registry?)"
        if r.returncode != 0:
            return f"npm ci in interop/nats-js failed: {(r.stderr or r.stdout).strip()[-300:]}"
    return None


_WHY_NOT = _node_modules()
needs_node = pytest.mark.skipif(_WHY_NOT is not None, reason=_WHY_NOT or "")


@needs_node
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


PROD_LIKE = """
tls {{
  cert_file: "{cert}"
  key_file: "{key}"
}}
websocket {{
  port: {ws_port}
  tls {{
    cert_file: "{cert}"
    key_file: "{key}"
  }}
  compression: true
}}
accounts {{
  APP {{
    users = [ {{user: app, password: app-secret}} ]
    exports = [ {{service: "app.status"}} ]
  }}
  OPS {{
    users = [ {{user: ops, password: ops-secret}} ]
    imports = [ {{service: {{account: APP, subject: "app.status"}}, to: "status"}} ]
  }}
}}
"""


@needs_node
def test_prod_like_config(tmp_path):
    """natslab server -c prod-like.conf: TLS on the client port, wss with
    compression, two accounts with a service import. nats.js connects over
    wss (and TLS TCP) as an account user: core traffic works, the account has
    no JetStream (10039 on both servers); an OPS client reaches APP's service
    through its import while APP's traffic stays invisible to OPS."""
    import asyncio

    from conftest import connect, free_port
    from pki import make_pki
    from test_websocket import WSServer

    pki = make_pki(tmp_path / "pki")
    transcripts = {}
    for kind in ("natslab", "nats-server"):
        d = tmp_path / kind
        d.mkdir()
        ws_port = free_port()
        conf = d / "prod-like.conf"
        conf.write_text(PROD_LIKE.format(cert=pki.server_cert, key=pki.server_key, ws_port=ws_port))
        srv = WSServer(kind, d / "store", extra=["-c", str(conf)])
        srv.ws_port = ws_port
        srv.start()
        try:
            transcripts[kind] = run_ws_js(f"wss://127.0.0.1:{ws_port}", f"tls://127.0.0.1:{srv.port}",
                                          {"NATS_USER": "app", "NATS_PASS": "app-secret", "NATS_CA": str(pki.ca),
                                           "NODE_EXTRA_CA_CERTS": str(pki.ca)})

            async def across():
                ctx = pki.client_context()
                app = await connect(f"tls://app:app-secret@127.0.0.1:{srv.port}", tls=ctx)
                ops = await connect(f"wss://ops:ops-secret@127.0.0.1:{ws_port}", tls=ctx)

                async def status(m):
                    await m.respond(b"green")

                await app.subscribe("app.status", cb=status)
                spy = await ops.subscribe(">")
                for nc in (app, ops, app, ops):  # twice each: flush can overtake a just-queued SUB
                    await nc.flush()
                answer = (await ops.request("status", b"", timeout=3)).data
                await app.publish("app.private", b"x")
                await app.flush()
                seen = []
                try:
                    while True:
                        seen.append((await spy.next_msg(timeout=0.5)).subject)
                except asyncio.TimeoutError:
                    pass
                await app.close()
                await ops.close()
                return answer, seen

            answer, seen = asyncio.run(across())
            # OPS sees its own request and the reply to it, never APP's subjects
            assert answer == b"green"
            assert seen and "status" in seen and not any(s.startswith("app.") for s in seen), seen
        finally:
            srv.stop()
    lines = transcripts["natslab"]
    assert lines == transcripts["nats-server"]
    steps = dict(ln.split("\t", 1) for ln in lines)
    assert steps["request"] == '"PING"' and '"hdr":"1"' in steps["tcp-to-ws"]
    assert "JetStream not enabled for account" in steps["kv"]
