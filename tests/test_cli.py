"""``natslab server``: flags, config file, logging, signals."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import RawClient, ServerProcess, free_port

SERVER = [sys.executable, "-m", "natslab.server"]


def run(args, timeout=10):
    return subprocess.run(SERVER + args, capture_output=True, text=True, timeout=timeout)


def wait_listening(proc, pattern=r"Listening for client connections on ([\d.]+):(\d+)", timeout=10.0):
    """Read the log (stderr) until the listening line; return (host, port)."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            return m.group(1), int(m.group(2))
    raise AssertionError("no listening line in: " + "".join(seen))


def info_of(host, port) -> dict:
    with socket.create_connection((host, port), timeout=3) as s:
        line = s.makefile("rb").readline()
    return json.loads(line[5:])


def test_unknown_flag_is_a_usage_error():
    r = run(["--bogus"])
    assert r.returncode == 2
    assert "flag provided but not defined: --bogus" in r.stderr
    assert "Usage: natslab server" in r.stderr


def test_flag_needing_value_without_one():
    r = run(["-p"])
    assert r.returncode == 2
    assert "flag needs an argument" in r.stderr


def test_help_and_version():
    assert "-js, --jetstream" in run(["-h"]).stdout
    assert re.search(r"v2\.\d+\.\d+", run(["--version"]).stdout)


@pytest.mark.parametrize("port_flag", [["-p", "-1"], ["--port=0"], ["-port", "-1"]])
def test_free_port_is_logged_and_serves(port_flag, tmp_path):
    proc = subprocess.Popen(SERVER + port_flag + ["-a=127.0.0.1", "-sd", str(tmp_path)], stderr=subprocess.PIPE, text=True)
    try:
        host, port = wait_listening(proc)
        assert host == "127.0.0.1" and port > 0
        assert info_of(host, port)["port"] == port
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_sigterm_and_sigint_shut_down_cleanly(tmp_path):
    for sig, name in ((signal.SIGTERM, "terminated"), (signal.SIGINT, "interrupt")):
        proc = subprocess.Popen(SERVER + ["-p", "-1", "-js", "-sd", str(tmp_path)], stderr=subprocess.PIPE, text=True)
        wait_listening(proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 0
        assert f'Trapped "{name}" signal' in err
        assert "Server Exiting.." in err


def test_pid_file_log_file_and_server_name(tmp_path):
    pid_file = tmp_path / "natslab.pid"
    log_file = tmp_path / "natslab.log"
    port = free_port()
    proc = subprocess.Popen(
        SERVER + ["--pid", str(pid_file), "-l", str(log_file), "-p", str(port), "-n", "lab1"],
        stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pid_file.read_text() == str(proc.pid)
        assert info_of("127.0.0.1", port)["server_name"] == "lab1"
        assert "[INF] Listening for client connections on 127.0.0.1:%d" % port in log_file.read_text()
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
    assert not pid_file.exists()


def test_bad_config_file_is_reported(tmp_path):
    bad = tmp_path / "bad.conf"
    bad.write_text("port: {\n")
    r = run(["-c", str(bad)])
    assert r.returncode == 2
    assert "configuration file" in r.stderr
    r = run(["-c", str(tmp_path / "missing.conf")])
    assert r.returncode == 2


def test_port_in_use_fails_clearly(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        r = run(["-p", str(s.getsockname()[1])])
    assert r.returncode == 1
    assert "[FTL]" in r.stderr


def test_max_payload_flag(tmp_path):
    proc = subprocess.Popen(SERVER + ["-p", "-1", "--max_payload", "100"], stderr=subprocess.PIPE, text=True)
    try:
        host, port = wait_listening(proc)
        assert info_of(host, port)["max_payload"] == 100
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)


# -- the config file, read the same way by both servers ---------------------------

async def test_config_file_port_and_max_payload(server_kind, tmp_path):
    port = free_port()
    conf = tmp_path / "srv.conf"
    conf.write_text(f"# a comment\nport: {port}\nhost = 127.0.0.1\nmax_payload: 2KB\n")
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf)])
    srv.port = port  # the file wins over nothing; flags below repeat the same port
    srv.start()
    try:
        c = await RawClient.open(srv)
        assert json.loads(c.info[5:])["max_payload"] == 2048
        await c.send("PUB foo 3000\r\n")
        assert await c.readline() == "-ERR 'Maximum Payload Violation'"
        c.close()
    finally:
        srv.stop()


def test_trace_flag_logs_protocol_lines(tmp_path):
    proc = subprocess.Popen(SERVER + ["-p", "-1", "-DV"], stderr=subprocess.PIPE, text=True)
    try:
        host, port = wait_listening(proc)
        with socket.create_connection((host, port), timeout=3) as s:
            f = s.makefile("rb")
            f.readline()
            s.sendall(b'CONNECT {"verbose":false}\r\nSUB traced.subject 1\r\nPING\r\n')
            assert f.readline() == b"PONG\r\n"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert re.search(r'\[TRC\] 127\.0\.0\.1:\d+ - cid:\d+ - "<<- \[SUB traced.subject 1\]"', err)
