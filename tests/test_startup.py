"""Start-up imports only what the flags need: ``natslab server`` run as a
user runs it (``python -m natslab.server``, under ``-X importtime``, which
lists every module imported), asked which modules it had loaded once it
logged "Server is ready". natslab only: nats-server has no modules.

Each module left out is compile and load time (and memory) a start does
not pay; these tests fail when an import at the top of a module brings one
back. What they import once used (a stream created, a monitor page asked
for, TLS configured) is exercised by the rest of the suite."""

from __future__ import annotations

import re
import subprocess
import sys
import time

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
STREAMS = ("api", "gojson", "fields", "shapes", "advisories", "stream", "filestore", "memstore", "consumer", "acks", "delivery", "pullqueue", "snapshot",
           "sourcing", "schedules", "cron", "counters", "batch", "fastbatch", "directget", "republish",
           "transform", "streamconfig", "topoconfig", "consumerconfig", "s2")


IMPORT_LINE = re.compile(r"import time:\s+\d+ \|\s+\d+ \|\s*(\S+)")


def imported_by_the_interpreter() -> set[str]:
    """What this interpreter imports before any of natslab runs: ``site`` and
    whatever the machine's ``.pth`` files import (a CA hook in the system
    site-packages imports certifi, and with it shutil, lzma and bz2). Those
    are the machine's, not natslab's start; the tests subtract them."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True, check=True).stderr
    return {m.group(1) for m in map(IMPORT_LINE.match, err.splitlines()) if m}


def imported_at_start(*flags: str) -> set[str]:
    """The modules ``natslab server`` with these flags imports before it is
    ready, beyond those the interpreter imported on its own."""
    before = imported_by_the_interpreter()
    proc = subprocess.Popen(SERVER + list(flags), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
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
