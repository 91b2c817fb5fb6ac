"""A corpus of configuration files (tests/configs/, written for natslab after
the style of nats-server's own test/configs and server/configs): every file
in good/ starts both natslab and nats-server 2.15 (cluster, gateway,
leafnode, MQTT and websocket ports come from the environment, as $VARS, so
each run takes free ones); every file in bad/ stops both with the same
complaint at the same file:line:col, the one its first line names
(``# error: ...``; a file with several problems names each, in order, on
its first lines)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import RawClient, ServerProcess, free_port
from test_cli import binary

CONFIGS = Path(__file__).parent / "configs"
GOOD = sorted(p.name for p in (CONFIGS / "good").glob("*.conf"))
BAD = sorted(p.name for p in (CONFIGS / "bad").glob("*.conf"))

# what each good file's user may log in as (None: no authentication)
LOGIN = {"accounts.conf": ("orders", "pw"), "authorization.conf": ("dave", "qux"), "include.conf": ("a", "a"),
         "json.conf": ("u", "p"), "edge.conf": ("tab\tinAname", "p"), "leafnode_gateway_mqtt.conf": ("app", "app"),
         "durations_and_arrays.conf": ("app", "app"), "leafnode_remotes.conf": ("hub", "hub")}


def corpus_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("CLUSTER", "GATEWAY", "LEAF", "MQTT", "WEBSOCKET"):
        env[f"NATSLAB_CORPUS_{name}"] = f"127.0.0.1:{free_port()}"
    env["NATSLAB_CORPUS_ROUTE"] = f"nats-route://ruser:top_secret@127.0.0.1:{free_port()}"
    env.pop("NATSLAB_CORPUS_UNSET", None)
    return env


def test_corpus_is_there():
    assert len(GOOD) >= 10 and len(BAD) >= 10


@pytest.mark.parametrize("name", GOOD)
async def test_good_file_starts_both(server_kind, tmp_path, name, monkeypatch):
    for k, v in corpus_env().items():
        monkeypatch.setenv(k, v)
    conf = CONFIGS / "good" / name
    srv = ServerProcess(server_kind, tmp_path / "store")
    # the file as it is; the flags only move the client port and the store to the test's own
    srv.argv = lambda: binary(server_kind) + ["-c", str(conf), "-a", "127.0.0.1", "-p", str(srv.port),
                                              "-sd", str(tmp_path / "store")]
    srv.start()
    try:
        connect = '{"verbose":false,"protocol":1}'
        if name in LOGIN:
            import json

            user, pw = LOGIN[name]
            connect = json.dumps({"verbose": False, "protocol": 1, "user": user, "pass": pw})
        c = await RawClient.open(srv, connect=connect)
        c.close()
    finally:
        srv.stop()


@pytest.mark.parametrize("name", BAD)
def test_bad_file_fails_both_the_same(server_kind, name):
    conf = CONFIGS / "bad" / name
    lines = conf.read_text().splitlines()
    want = [ln.removeprefix("# error: ") for ln in lines[:next(i for i, ln in enumerate(lines)
                                                                if not ln.startswith("# error: "))]]
    env = corpus_env()
    r = subprocess.run(binary(server_kind) + ["-c", name, "-a", "127.0.0.1", "-p", "-1"], cwd=conf.parent,
                       capture_output=True, text=True, timeout=20, env=env)
    prefix = "natslab server: " if server_kind == "natslab" else "nats-server: "
    assert r.returncode == 1, r.stderr
    assert [ln.removeprefix(prefix) for ln in r.stderr.splitlines() if ln] == want
