"""Start-up imports only what the flags need: ``natslab server`` run as a
user runs it (``python -m natslab.server``, under ``-X importtime``, which
lists every module imported), asked which modules it had loaded once it
logged "Server is ready". natslab only: nats-server has no modules.

Each module left out is compile and load time (and memory) a start does
not pay; these tests fail when an import at the top of a module brings one
back. What they import once used (a stream created, a monitor page asked
for, TLS configured) is exercised by the rest of the suite.

Then the client listener (server/flags.py): on both servers, the first
connection the port takes from the spawn on is served with JetStream up
and its streams recovered; on natslab, the port takes connections before
the start is done and serves them once it is."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from conftest import ServerProcess, connect
from natslab.server.nossl import may_need_tls

SERVER = [sys.executable, "-X", "importtime", "-m", "natslab.server", "-a", "127.0.0.1", "-p", "0"]

# loaded by no start, whatever the flags (their features are configured in a file)
NEVER = ("natslab.server.tls", "natslab.server.msgtrace", "natslab.server.websocket", "natslab.server.nkeys", "natslab.server.ed25519",
         "natslab.server.monitor", "natslab.server.monitor.http", "natslab.server.monitor.connz",
         "natslab.server.monitor.varz", "natslab.server.monitor.jsz", "natslab.server.monitor.cluster",
         "shutil", "datetime", "lzma", "bz2",
         "_ssl")  # (asyncio's own import of ssl is listed even when it fails: _ssl is what loading it loads)
# JetStream's subsystems: loaded by the first request (the API dispatcher and its request shapes), the
# first stream restored or created, or the first request for them
STREAMS = ("api", "api.dispatch", "gojson", "fields", "shapes", "advisories", "stream", "stream.stream", "store", "store.base",
           "store.file", "store.file.store", "store.memory", "consumer", "consumer.consumer", "consumer.acks", "consumer.delivery",
           "consumer.pullqueue", "api.snapshot", "stream.sourcing", "stream.schedules", "stream.cron", "stream.counters",
           "stream.batch", "stream.fastbatch", "stream.directget", "stream.republish", "transform", "stream.config",
           "stream.topoconfig", "consumer.config", "api.s2")


IMPORT_LINE = re.compile(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)")


def imported_by_the_interpreter() -> set[str]:
    """What this interpreter imports before any of natslab runs: ``site`` and
    whatever the machine's ``.pth`` files import (a CA hook in the system
    site-packages imports certifi, and with it shutil, lzma and bz2). Those
    are the machine's, not natslab's start; the tests subtract them."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True, check=True).stderr
    return {m.group(1) for m in map(IMPORT_LINE.match, err.splitlines()) if m}


def imported_at_start(*flags: str, command: list[str] = SERVER) -> set[str]:
    """The modules ``natslab server`` with these flags imports before it is
    ready, beyond those the interpreter imported on its own."""
    before = imported_by_the_interpreter()
    proc = subprocess.Popen(command + list(flags), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    modules: set[str] = set()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                raise AssertionError("the server exited before it was ready")
            m = IMPORT_LINE.match(line)
            if m:
                modules.add(m.group(1))
            elif "Server is ready" in line:
                return modules - before
        raise AssertionError("the server was not ready in 30 s")
    finally:
        proc.terminate()
        proc.wait(10)


def test_core_start_imports_no_jetstream_tls_or_monitor():
    mods = imported_at_start()
    assert "natslab.server.server" in mods  # (the listing works)
    assert not {m for m in mods if m.startswith("natslab.server.jetstream")}
    assert not mods & set(NEVER)
    assert "_hashlib" not in mods  # (OpenSSL's libcrypto: auth, service imports, mirrors and sources load it)


def test_the_natslab_server_command_imports_no_workbench(tmp_path):
    """``natslab server`` (the console script) runs the broker alone: not
    textual, rich, platformdirs or nats-py (the workbench's), and no more of
    the broker than ``python -m natslab.server``."""
    script = os.path.join(os.path.dirname(sys.executable), "natslab")
    command = [sys.executable, "-X", "importtime", script, "server", "-a", "127.0.0.1", "-p", "0"]
    mods = imported_at_start("-js", "-sd", str(tmp_path), command=command)
    assert "natslab.server.jetstream.jetstream" in mods  # (the listing works)
    assert not {m for m in mods if m.split(".")[0] in ("textual", "rich", "platformdirs", "nats")}
    assert not {m for m in mods if m.startswith("natslab.tui")}
    assert not mods & set(NEVER)


def test_tls_flags_or_a_config_file_keep_ssl(tmp_path):
    assert "_ssl" in imported_at_start("--tls=false")  # (any flag that may mean TLS: server/nossl.py)
    conf = tmp_path / "s.conf"
    conf.write_text("port: -1\n")
    assert "_ssl" in imported_at_start("-c", str(conf))
    assert not may_need_tls(["-js", "-sd", "/tmp/tls", "--user", "tls"])
    assert all(may_need_tls(a) for a in (["--tlscert=x"], ["-tlsverify"], ["--config", "f"], ["-c=f"], ["-DV", "--TLS"]))


def test_jetstream_start_on_an_empty_store_imports_no_stream_subsystem(tmp_path):
    mods = imported_at_start("-js", "-sd", str(tmp_path))
    assert "natslab.server.jetstream.jetstream" in mods
    assert not mods & {f"natslab.server.jetstream.{m}" for m in STREAMS}
    assert not mods & set(NEVER)
    assert "_hashlib" not in mods


# -- the client listener: bound before the start, served once it is done ------


STREAM_MSGS = 300


async def _open_when_port_takes_it(srv: ServerProcess, timeout: float = 30.0):
    """The first connection the broker's port takes, polled from its spawn."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            return await asyncio.open_connection(srv.host, srv.port)
        except OSError:
            if srv.proc.poll() is not None:
                raise AssertionError(f"{srv.kind} exited: {srv.log()}") from None
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"{srv.kind}: nothing listening after {timeout} s: {srv.log()}") from None
            await asyncio.sleep(0.001)


async def _request(r, w, subject: str, payload: bytes, sid: int) -> dict:
    """A JetStream API request on a raw connection, its reply's JSON."""
    inbox = f"_INBOX.startup.{sid}"
    w.write(f"SUB {inbox} {sid}\r\nPUB {subject} {inbox} {len(payload)}\r\n".encode() + payload + b"\r\n")
    await w.drain()
    while True:
        line = await asyncio.wait_for(r.readline(), 30)
        assert line, "the server closed the connection"
        if line.startswith(b"MSG "):
            size = int(line.split()[-1])
            body = await asyncio.wait_for(r.readexactly(size + 2), 30)
            return json.loads(body[:-2])
        assert not line.startswith((b"-ERR", b"HMSG ")), line  # (HMSG: a 503, no JetStream to answer)


async def _store_with_a_stream(srv: ServerProcess) -> None:
    srv.start()
    nc = await connect(srv.url)
    js = nc.jetstream()
    await js.add_stream(name="BOOT", subjects=["boot.>"])
    for i in range(STREAM_MSGS):
        await js.publish(f"boot.{i % 7}", b"m%d" % i)
    sub = await js.pull_subscribe("boot.>", durable="worker")
    for m in await sub.fetch(5, timeout=10):
        await m.ack_sync()
    await nc.close()
    srv.stop()


async def test_first_connection_the_port_takes_is_served_with_jetstream_recovered(server_kind, tmp_path):
    """From the spawn on, the first connection the client port takes gets
    INFO and is served with JetStream up and its streams recovered: no
    connection ever sees a half-started JetStream (nats-server opens the
    port after JetStream is enabled; natslab takes connections into the
    backlog earlier and serves them at that same point: server/flags.py)."""
    srv = ServerProcess(server_kind, tmp_path / "store")
    await _store_with_a_stream(srv)
    srv.store_dir.mkdir(parents=True, exist_ok=True)
    log = open(srv.log_path, "ab")
    srv.proc = subprocess.Popen(srv.argv(), stdout=log, stderr=subprocess.STDOUT)
    log.close()
    try:
        r, w = await _open_when_port_takes_it(srv)
        info = await asyncio.wait_for(r.readline(), 30)
        assert info.startswith(b"INFO ")
        assert json.loads(info[5:])["jetstream"] is True
        w.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\nPING\r\n')
        await w.drain()
        assert await asyncio.wait_for(r.readline(), 30) == b"PONG\r\n"
        stream = await _request(r, w, "$JS.API.STREAM.INFO.BOOT", b"", 1)
        assert stream["state"]["messages"] == STREAM_MSGS, stream
        assert stream["state"]["last_seq"] == STREAM_MSGS
        consumer = await _request(r, w, "$JS.API.CONSUMER.INFO.BOOT.worker", b"", 2)
        assert consumer["ack_floor"]["stream_seq"] == 5, consumer
        ack = await _request(r, w, "boot.new", b"after start", 3)
        assert ack == {"stream": "BOOT", "seq": STREAM_MSGS + 1}
        w.close()
        # and a client library connecting at once is served the same
        nc = await connect(srv.url, connect_timeout=30)
        info = await nc.jetstream().stream_info("BOOT")
        assert info.state.messages == STREAM_MSGS + 1
        await nc.close()
    finally:
        srv.stop()


def _full_pipe() -> tuple[int, int]:
    """A pipe whose buffer is full: a process writing to it blocks until
    the other end is read."""
    rfd, wfd = os.pipe()
    fcntl.fcntl(wfd, fcntl.F_SETFL, fcntl.fcntl(wfd, fcntl.F_GETFL) | os.O_NONBLOCK)
    try:
        while True:
            os.write(wfd, b"." * 65536)
    except BlockingIOError:
        pass
    fcntl.fcntl(wfd, fcntl.F_SETFL, fcntl.fcntl(wfd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return rfd, wfd


@pytest.mark.parametrize("how", ["-m natslab.server", "natslab server"])
async def test_natslab_takes_connections_before_its_start_and_serves_them_after(tmp_path, how):
    """natslab only (nats-server listens only once started): ``natslab
    server`` listens as soon as its flags are read (server/flags.py). The
    broker is held at its first log line, before JetStream starts, by a
    stderr pipe that is full: its port already takes a connection, which
    gets nothing while the start is held and INFO, then JetStream answers,
    once the pipe is read and the start goes on."""
    srv = ServerProcess("natslab", tmp_path / "store")
    await _store_with_a_stream(srv)
    argv = srv.argv()
    if how == "natslab server":
        argv = [os.path.join(os.path.dirname(sys.executable), "natslab"), "server"] + argv[3:]
    rfd, wfd = _full_pipe()
    srv.proc = subprocess.Popen(argv, stdout=wfd, stderr=wfd)
    os.close(wfd)
    drained = bytearray()
    reader = None

    def release():
        return asyncio.get_running_loop().run_in_executor(None, _drain, rfd, drained)

    try:
        r, w = await _open_when_port_takes_it(srv)  # (the start is held: the listener is the early one)
        # held at "Starting nats-server": no INFO can come until the pipe is read
        assert srv.proc.poll() is None
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(r.readline(), 0.3)
        reader = release()
        info = await asyncio.wait_for(r.readline(), 30)
        assert info.startswith(b"INFO ")
        w.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\nPING\r\n')
        await w.drain()
        assert await asyncio.wait_for(r.readline(), 30) == b"PONG\r\n"
        stream = await _request(r, w, "$JS.API.STREAM.INFO.BOOT", b"", 1)
        assert stream["state"]["messages"] == STREAM_MSGS, stream
        w.close()
    finally:
        reader = reader or release()  # (a broker held in its write cannot stop)
        srv.stop()
        await reader
    assert b"Starting JetStream" in drained and b"Server is ready" in drained


def _drain(fd: int, into: bytearray) -> None:
    with os.fdopen(fd, "rb", buffering=0) as f:
        while chunk := f.read(65536):
            into += chunk


def test_listen_early_binds_only_what_the_flags_alone_decide(tmp_path):
    from natslab.server.flags import early_listener_fits, listen_early

    s = listen_early(["-p", "0", "-js", "-sd", str(tmp_path)])
    try:
        host, port = s.getsockname()
        assert host == "127.0.0.1" and port > 0
        with socket.create_connection((host, port), timeout=5):
            pass  # (listening: the kernel takes it into the backlog)
        assert early_listener_fits(s, "127.0.0.1", 0) and early_listener_fits(s, "127.0.0.1", port)
        assert not early_listener_fits(s, "127.0.0.1", port + 1) and not early_listener_fits(s, "0.0.0.0", port)
        assert listen_early(["-p", str(port)]) is None  # (taken: the start reports it, where nats-server does)
    finally:
        s.close()
    conf = tmp_path / "s.conf"
    conf.write_text("port: -1\n")
    for argv in (["-c", str(conf)], ["-a", "localhost"], ["-p", "x"], ["--bogus"], ["-h"], ["-v"],
                 ["-t", "-c", str(conf)], ["--signal", "stop=1"], ["-p", "70000"]):
        assert listen_early(argv) is None, argv
    s6 = listen_early(["-a", "::1", "-p", "-1"])
    if s6 is not None:  # (a machine without IPv6 loopback binds nothing)
        assert s6.family == socket.AF_INET6 and s6.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY) == 1
        s6.close()
