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

from conftest import RawClient, ServerProcess, connect, free_port, nats_server_binary

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


@pytest.mark.parametrize("text, want", [
    ("port: {\n", "Parse error on line 2: 'Unexpected EOF processing map.'"),
    ("include nope.conf\n", "error parsing include file 'nope.conf', open nope.conf: no such file or directory"),
])
def test_bad_config_file_is_reported(server_kind, tmp_path, text, want):
    """A file that does not parse, and a file that is not there: the exit
    status (not a usage error) and the words of nats-server."""
    bad = tmp_path / "bad.conf"
    bad.write_text(text)
    assert refusal(server_kind, bad) == (1, {want})
    r = subprocess.run(binary(server_kind) + ["-c", str(tmp_path / "missing.conf")], capture_output=True, text=True,
                       timeout=10)
    assert r.returncode == 1
    assert f"open {tmp_path / 'missing.conf'}: no such file or directory" in r.stderr


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


# -- the config file checked as nats-server checks it -------------------------------

def binary(kind: str) -> list[str]:
    return SERVER if kind == "natslab" else [nats_server_binary()]


def refusal(kind: str, conf, timeout: float = 10) -> tuple[int, set[str]]:
    """Run ``kind`` on config file ``conf`` (it must not start): its exit
    status and the lines of its complaint, without the program's name (the
    order is nats-server's map order: random)."""
    r = subprocess.run(binary(kind) + ["-c", conf.name], capture_output=True, text=True, timeout=timeout,
                       cwd=conf.parent)
    prefix = "natslab server: " if kind == "natslab" else "nats-server: "
    assert r.stderr.startswith(prefix), r.stderr
    return r.returncode, {ln for ln in r.stderr[len(prefix):].splitlines() if ln}


BAD_CONFIGS = {
    "top": ("port: -1\nbogus: 1\n", {'c.conf:2:1: unknown field "bogus"'}),
    "nested": ('port: -1\njetstream {\n  store_dir: "js"\n  bogus_js: 1\n}\n', {'c.conf:4:3: unknown field "bogus_js"'}),
    "several": ("port: -1\na1: 1\n  a2: 2\nauthorization { users: [ {user: c, password: d, qq: 1, permissions: "
                '{ pub: "x", bogusp: 1, sub: { allow: "y", nope: 2 } } } ], zz: 1 }\n',
                {'c.conf:2:1: unknown field "a1"', 'c.conf:3:3: unknown field "a2"',
                 'c.conf:4:49: unknown field "qq"', 'c.conf:4:81: Unknown field "bogusp" parsing permissions',
                 "c.conf:4:111: Unknown field name \"nope\" parsing subject permissions, only 'allow' or 'deny' "
                 "are permitted", 'c.conf:4:128: unknown field "zz"'}),
    # nesting of any depth is read (natslab's reader recursed: a traceback)
    "deep": ("port: -1\n" + "a { " * 3000 + "}" * 3000 + "\n", {'c.conf:2:1: unknown field "a"'}),
    "jetstream-string": ("port: -1\njetstream: maybe\n",
                         {"c.conf:2:1: Expected 'enabled' or 'disabled' for string value, got 'maybe'"}),
    "user-and-token": ("port: -1\nauthorization { user: a, pass: b, token: t }\n",
                       {"c.conf:2:1: Cannot have a user/pass and token"}),
    "token-and-users": ("port: -1\nauthorization { token: t, users: [{user: a, password: b}] }\n",
                        {"c.conf:2:1: Can not have a token and a users array"}),
    "user-and-users": ("port: -1\nauthorization { user: t, users: [{user: a, password: b}] }\n",
                       {"c.conf:2:1: Can not have a single user/pass and a users array"}),
    # a user's permissions, checked as nats-server checks them (a value given
    # directly is named without a place, as nats-server names it)
    "perm-type": ('port: -1\nauthorization { users: [{user: a, password: b, permissions: {publish: 1}}] }\n',
                  {"Expected subject permissions to be a subject, or array of subjects, got int64"}),
    "perm-bool": ('port: -1\nauthorization { users: [{user: a, password: b, permissions: {subscribe: true}}] }\n',
                  {"Expected subject permissions to be a subject, or array of subjects, got bool"}),
    "perm-allow-type": ('port: -1\nauthorization { users: [{user: a, password: b, permissions: {publish: {allow: 1}}}] }\n',
                        {"c.conf:2:72: Expected subject permissions to be a subject, or array of subjects, got int64"}),
    "perm-subject": ('port: -1\nauthorization { users: [{user: a, password: b, permissions: {publish: ["a", "b c"]}}] }\n',
                     {'subject "b c" is not a valid subject'}),
    "perm-deny-subject": ('port: -1\nauthorization { users: [{user: a, password: b, permissions: {publish: {deny: "a.>.b"}}}] }\n',
                          {'c.conf:2:72: subject "a.>.b" is not a valid subject'}),
    "perm-queue": ('port: -1\nauthorization { users: [{user: a, password: b, permissions: {subscribe: "q a..b"}}] }\n',
                   {'queue "a..b" is not a valid queue'}),
    "duplicate-user": ("port: -1\nauthorization { users: [{user: a, password: b}, {user: a, password: c}] }\n",
                       {'c.conf:2:1: Duplicate user "a" detected'}),
}


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_config_errors_are_nats_servers(server_kind, tmp_path, case):
    """Unknown keys (at the top, in blocks, in users and permissions) and
    the value checks natslab shares: the same exit status and the same
    complaint, each at its line and column."""
    text, want = BAD_CONFIGS[case]
    conf = tmp_path / "c.conf"
    conf.write_text(text)
    assert refusal(server_kind, conf) == (1, want)


def test_permission_subjects_must_be_strings(server_kind, tmp_path):
    """A list element that is not a string: nats-server's message, at the
    element's place (an array's is its closing bracket)."""
    conf = tmp_path / "c.conf"
    conf.write_text("port: -1\nauthorization { users: [{user: a, password: b, permissions: {publish: "
                    + "[" * 300 + '"x"' + "]" * 300 + "}}] }\n")
    assert refusal(server_kind, conf) == (1, {"c.conf:2:673: Subject in permissions array cannot be cast to string"})


UNSUPPORTED = {
    # nats-server takes each of these; natslab does not do what they ask, and says so
    # (docs/compatibility.md says why for each)
    'jetstream { cipher: "aes", key: "s3cr3t" }': '"jetstream.cipher" is not supported by natslab',
    "jetstream { limits { max_ack_pending: 100 } }": '"jetstream.limits.max_ack_pending" is not supported by natslab',
    "proxy_protocol: true": '"proxy_protocol" is not supported by natslab',
    "authorization { user: a, password: b, auth_callout { issuer: AAJPZL3IXNMI3JEZ27QWGVWZFPM6BJXBKJA5FBHJL4MF3YZBY5MDNPVD, "
    "auth_users: [a] } }":
        '"authorization.auth_callout" is not supported by natslab',
}


@pytest.mark.parametrize("line", list(UNSUPPORTED))
def test_keys_natslab_does_not_implement_stop_it(server_kind, tmp_path, line):
    """A key nats-server knows but natslab does not implement stops natslab
    at start-up, saying which; nats-server starts with the same file (so the
    key is a real one and the complaint is natslab's alone)."""
    conf = tmp_path / "c.conf"
    conf.write_text(f"port: -1\n{line}\n")
    if server_kind == "natslab":
        status, lines = refusal("natslab", conf)
        assert status == 1 and any(ln.startswith("c.conf:2:") and ln.endswith(UNSUPPORTED[line]) for ln in lines), lines
        return
    srv = ServerProcess("nats-server", tmp_path / "store", extra=["-c", str(conf)])
    srv.start()
    srv.stop()


async def test_config_keys_match_case_insensitively_with_aliases(server_kind, tmp_path):
    """nats-server's key spellings: any case, and its aliases (net, username,
    pass, max_conn, storedir, sync), all honoured, not ignored."""
    port = free_port()
    conf = tmp_path / "c.conf"
    conf.write_text(f"PORT: {port}\nNet: 127.0.0.1\nMax_Conn: 100\n"
                    f'JetStream {{\n  StoreDir: "{tmp_path / "js"}"\n  Sync: always\n}}\n'
                    "Authorization {\n  USERNAME: u\n  PASS: p\n}\n")
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf)])
    srv.port = port
    # the fixture's flags name a store dir; the file's must be the one used here
    srv.argv = lambda: binary(server_kind) + ["-c", str(conf)]
    srv.start()
    try:
        c = await RawClient.open(srv, connect=None)
        info = json.loads(c.info[5:])
        assert info["auth_required"] is True and info["jetstream"] is True
        c.close()
        nc = await connect(srv.url, user="u", password="p")
        await nc.jetstream().add_stream(name="S", subjects=["s"])
        await nc.close()
        assert (tmp_path / "js" / "jetstream").is_dir()  # the file's store dir
        with pytest.raises(Exception):
            await connect(srv.url, user="u", password="wrong")
    finally:
        srv.stop()


async def test_jetstream_disabled_in_the_file(server_kind, tmp_path):
    conf = tmp_path / "c.conf"
    conf.write_text("jetstream: Disable\n")  # (a string nats-server takes, any case)
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf)])
    srv.argv = lambda: binary(server_kind) + ["-a", "127.0.0.1", "-p", str(srv.port), "-c", str(conf)]
    srv.start()
    try:
        c = await RawClient.open(srv, connect=None)
        assert json.loads(c.info[5:]).get("jetstream", False) is False
        c.close()
    finally:
        srv.stop()


async def test_config_logfile_pidfile_and_store_dir(server_kind, tmp_path):
    """Top-level logfile, pidfile and store_dir, read by both servers (natslab
    ignored them before its file was checked)."""
    conf = tmp_path / "c.conf"
    log, pid, store = tmp_path / "srv.log", tmp_path / "srv.pid", tmp_path / "data"
    conf.write_text(f'logfile: "{log}"\npid_file: "{pid}"\nstore_dir: "{store}"\njetstream: enabled\n')
    srv = ServerProcess(server_kind, tmp_path / "store")
    srv.argv = lambda: binary(server_kind) + ["-a", "127.0.0.1", "-p", str(srv.port), "-c", str(conf)]
    srv.start()
    try:
        assert pid.read_text().strip() == str(srv.proc.pid)
        nc = await connect(srv.url)
        await nc.jetstream().add_stream(name="S", subjects=["s"])
        await nc.close()
        assert (store / "jetstream").is_dir()
        assert "Listening for client connections on 127.0.0.1:%d" % srv.port in log.read_text()
    finally:
        srv.stop()
