"""Lame duck mode on both servers, started by each one's own
``--signal ldm=<pid file>`` (or SIGUSR2): clients are told with an INFO
carrying ``ldm``, new connections are refused, the clients are closed after
the grace period and the server exits by itself. nats.py's
ClientLameDuckModeTest::test_lame_duck_callback is the model."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time

import pytest

from conftest import RawClient, ServerProcess, connect, nats_server_binary

CONF = 'lame_duck_duration: "30s"\nlame_duck_grace_period: "1s"\n'


@pytest.fixture
def ldm_server(server_kind, tmp_path):
    conf = tmp_path / "ldm.conf"
    conf.write_text(CONF)
    pid_file = tmp_path / "server.pid"
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf), "-P", str(pid_file)])
    srv.start()
    srv.pid_file = pid_file
    yield srv
    srv.stop()


def signal_cmd(kind: str) -> list[str]:
    return [sys.executable, "-m", "natslab.server"] if kind == "natslab" else [nats_server_binary()]


async def test_lame_duck_mode(ldm_server):
    srv = ldm_server
    fired = asyncio.get_running_loop().create_future()
    closed = asyncio.Event()

    async def lame_duck_mode_cb():
        if not fired.done():
            fired.set_result(True)

    async def closed_cb():
        closed.set()

    nc = await connect(srv.url, lame_duck_mode_cb=lame_duck_mode_cb, closed_cb=closed_cb)
    raw = await RawClient.open(srv)
    sub = await nc.subscribe("ldm.x")
    await nc.flush()
    deadline = time.monotonic() + 5
    while not srv.pid_file.exists() and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    r = subprocess.run(signal_cmd(srv.kind) + ["--signal", f"ldm={srv.pid_file}"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 0, r.stderr

    await asyncio.wait_for(fired, 5)
    # no automatic move: the client decides, and is still served meanwhile
    assert nc.is_connected
    await nc.publish("ldm.x", b"still here")
    assert (await sub.next_msg(timeout=2)).data == b"still here"
    infos = []
    while not infos or infos[-1].get("connect_info"):  # (first the one that answers CONNECT)
        line = (await asyncio.wait_for(raw.reader.readline(), 3)).decode()
        assert line.startswith("INFO ")
        infos.append(json.loads(line[5:]))
    info = infos[-1]
    assert info["ldm"] is True and "nonce" not in info and info["client_id"]
    # the listener is closed
    with pytest.raises(OSError):
        await asyncio.open_connection(srv.host, srv.port)
    # after the grace period (1 s) the clients are closed and the server exits
    await asyncio.wait_for(closed.wait(), 10)
    assert await raw.closed(timeout=5)
    assert srv.proc.wait(timeout=15) == 0
    raw.close()


async def test_sigusr2_with_no_clients_exits(ldm_server):
    srv = ldm_server
    srv.proc.send_signal(signal.SIGUSR2)
    assert srv.proc.wait(timeout=15) == 0
    assert "Entering lame duck mode, stop accepting new clients" in srv.log()


@pytest.mark.parametrize("conf, words", [
    ('lame_duck_duration: "5s"\n', "invalid lame_duck_duration of 5s, minimum is 30 seconds"),
    ('lame_duck_duration: "30s"\nlame_duck_grace_period: "40s"\n',
     "should be strictly lower than lame duck duration"),
])
def test_bad_lame_duck_config(tmp_path, conf, words):
    path = tmp_path / "bad.conf"
    path.write_text(conf)
    for kind in ("natslab", "nats-server"):
        r = subprocess.run(signal_cmd(kind) + ["-p", "-1", "-c", str(path)], capture_output=True, text=True,
                           timeout=20)
        assert r.returncode != 0 and words in r.stdout + r.stderr, (kind, r.stdout + r.stderr)


def test_signal_errors(tmp_path):
    for kind in ("natslab", "nats-server"):
        r = subprocess.run(signal_cmd(kind) + ["--signal", "bogus=1"], capture_output=True, text=True, timeout=20)
        assert r.returncode != 0 and 'unknown signal "bogus"' in r.stdout + r.stderr, (kind, r.stderr)
