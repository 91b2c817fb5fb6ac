"""The pytest plugin (natslab/pytest_plugin.py) as a user meets it: pytester
runs a user's test file in a pytest of its own (a subprocess, so nothing of
this session's broker or faults leaks in), in pytest-asyncio's auto and
strict modes and as plain sync tests; and once from a fresh venv that
installed natslab."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent

# The README's example (README.md, "Testing your code with natslab").
EXAMPLE_ASYNC = '''
async def test_worker_acks_survive_a_crash(natslab_server, nats_client):
    js = nats_client.jetstream()
    await js.add_stream(name="JOBS", subjects=["jobs.>"])
    for i in range(3):
        await js.publish(f"jobs.{i}", b"job %d" % i)
    worker = await js.pull_subscribe("jobs.>", durable="worker")
    for msg in await worker.fetch(2):
        await msg.ack_sync()                          # processed: acked
    await natslab_server.crash()                      # as a SIGKILL would
    info = await js.consumer_info("JOBS", "worker")
    assert info.ack_floor.stream_seq == 2             # the acks survived
    msgs = await worker.fetch(1, timeout=5)
    assert [m.data for m in msgs] == [b"job 2"]       # nothing acked comes again
'''

EXAMPLE_SYNC = '''
import asyncio

import nats


def test_worker_acks_survive_a_crash(natslab_server):
    async def with_js(step):
        nc = await nats.connect(natslab_server.url)
        try:
            return await step(nc.jetstream())
        finally:
            await nc.close()

    async def work(js):
        await js.add_stream(name="JOBS", subjects=["jobs.>"])
        for i in range(3):
            await js.publish(f"jobs.{i}", b"job %d" % i)
        worker = await js.pull_subscribe("jobs.>", durable="worker")
        for msg in await worker.fetch(2):
            await msg.ack_sync()

    async def after(js):
        info = await js.consumer_info("JOBS", "worker")
        worker = await js.pull_subscribe("jobs.>", durable="worker")
        return info.ack_floor.stream_seq, [m.data for m in await worker.fetch(1, timeout=5)]

    asyncio.run(with_js(work))
    natslab_server.crash()                            # a plain call in a sync test
    assert asyncio.run(with_js(after)) == (2, [b"job 2"])
'''


def test_the_readme_shows_this_example():
    readme = (ROOT / "README.md").read_text()
    assert EXAMPLE_ASYNC.strip() in readme


def _ini(pytester, mode: str | None) -> None:
    lines = ["[pytest]", "asyncio_default_fixture_loop_scope = function"]
    if mode:
        lines.append(f"asyncio_mode = {mode}")
    pytester.makeini("\n".join(lines) + "\n")


def _run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", *args, timeout=120)


def test_example_async_auto_mode(pytester):
    _ini(pytester, "auto")
    pytester.makepyfile(test_worker=EXAMPLE_ASYNC)
    _run(pytester).assert_outcomes(passed=1)


def test_example_async_strict_mode(pytester):
    _ini(pytester, "strict")
    pytester.makepyfile(test_worker="import pytest\n\n\n@pytest.mark.asyncio" + EXAMPLE_ASYNC)
    _run(pytester).assert_outcomes(passed=1)


def test_example_sync(pytester):
    _ini(pytester, "strict")
    pytester.makepyfile(test_worker=EXAMPLE_SYNC)
    _run(pytester).assert_outcomes(passed=1)


def test_the_example_fails_when_acks_are_lost(pytester):
    """The example can fail: a broker that loses the acks in a crash (here
    the crash replaced by one that wipes the consumer's state) fails it."""
    _ini(pytester, "auto")
    pytester.makeconftest('''
import pytest

@pytest.fixture(autouse=True)
def lossy_crash(monkeypatch):
    from natslab.server import faults
    real = faults.Faults._crash

    async def crash(self):
        for js in self.server.jetstreams.values():
            for st in js.streams.values():
                for c in st.consumers.values():
                    c.delete()
        await real(self)
    monkeypatch.setattr(faults.Faults, "_crash", crash)
''')
    pytester.makepyfile(test_worker=EXAMPLE_ASYNC)
    _run(pytester).assert_outcomes(failed=1)


def test_kinds_urls_session_and_faults(pytester):
    """Which object each fixture is, in async and sync tests; the session
    broker is shared; the fault methods are awaitables in async tests and
    plain calls in sync ones."""
    _ini(pytester, "auto")
    pytester.makepyfile(test_kinds='''
import asyncio
import inspect

import nats
import pytest
from natslab.server import EmbeddedServer, ServerThread


async def test_async(natslab_server, natslab_url, nats_client):
    assert isinstance(natslab_server, EmbeddedServer)
    assert natslab_url == natslab_server.url == nats_client.connected_url.geturl()
    assert (natslab_server.store_dir / "jetstream").is_dir()
    assert inspect.iscoroutinefunction(natslab_server.restart)
    sub = await nats_client.subscribe("x")
    await nats_client.flush()
    await natslab_server.restart()
    await nats_client.publish("x", b"back")
    assert (await sub.next_msg(timeout=5)).data == b"back"


def test_sync(natslab_server, natslab_url):
    assert isinstance(natslab_server, ServerThread)
    assert natslab_url.startswith("nats://127.0.0.1:")
    natslab_server.restart()
    natslab_server.slow_disk(0)


def test_session_first(natslab_server_session):
    async def go():
        nc = await nats.connect(natslab_server_session.url)
        await nc.jetstream().add_stream(name="SHARED", subjects=["shared"])
        await nc.close()
    asyncio.run(go())


@pytest.mark.asyncio(loop_scope="module")
async def test_module_loop_gets_the_thread(natslab_server):
    assert isinstance(natslab_server, ServerThread)
    nc = await nats.connect(natslab_server.url)
    await nc.jetstream().add_stream(name="M", subjects=["m"])
    await nc.close()


async def test_session_second(natslab_server_session, natslab_server):
    assert natslab_server_session.url != natslab_server.url
    nc = await nats.connect(natslab_server_session.url)
    assert (await nc.jetstream().stream_info("SHARED")).config.name == "SHARED"
    await nc.close()
''')
    _run(pytester).assert_outcomes(passed=5)


def test_config_file_by_flag_ini_and_marker(pytester):
    """A nats-server config file reaches the broker three ways; its port
    and store are replaced by the fixture's own."""
    pytester.makefile(".conf", small="port: 4222\nmax_payload: 1024\njetstream { store_dir: /nonexistent }\n",
                      tiny="max_payload: 512\n")
    pytester.makepyfile(test_conf='''
import asyncio

import nats
import pytest


def payload_limit(srv):
    async def go():
        nc = await nats.connect(srv.url)
        n = nc.max_payload
        await nc.close()
        return n
    return asyncio.run(go())


def test_from_flag_or_ini(natslab_server, request):
    assert natslab_server.port != 4222
    assert "/nonexistent" not in str(natslab_server.store_dir)
    assert payload_limit(natslab_server) == 1024


@pytest.mark.natslab(config="tiny.conf")
def test_marker_wins(natslab_server):
    assert payload_limit(natslab_server) == 512
''')
    _ini(pytester, "auto")
    _run(pytester, "--natslab-config", "small.conf").assert_outcomes(passed=2)
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
                     "natslab_config = small.conf\n")
    _run(pytester).assert_outcomes(passed=2)
    r = _run(pytester, "--natslab-config", "missing.conf")
    r.assert_outcomes(passed=1, errors=1)  # (the marker names a file that is there)
    assert "missing.conf" in r.stdout.str()


_NO_NETWORK = ("Failed to establish a new connection", "Temporary failure in name resolution",
               "No matching distribution found", "Could not find a version", "Network is unreachable",
               "ProxyError", "ConnectTimeout", "ReadTimeout")


def test_fresh_venv_install_runs_the_example(tmp_path):
    """``pip install natslab`` registers the plugin: a fresh venv gets
    natslab (built from a copy of the tree), pytest, pytest-asyncio and
    nats-py, from PyPI as a user's would (about 15 s here with pip's cache),
    and runs the README's example. Skipped, saying why, where PyPI cannot
    be reached."""
    src = tmp_path / "src"
    for part in ("natslab", "server", "tui", "themes"):
        shutil.copytree(ROOT / part, src / part, ignore=shutil.ignore_patterns("__pycache__"))
    for f in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)
    venv = tmp_path / "venv"
    # a venv without pip of its own, filled by this pip (`pip --python`, pip 22.3+):
    # ensurepip costs 10 s of the test's 25 under load and is not what is tested
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    r = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
         "--disable-pip-version-check", str(src), "pytest", "pytest-asyncio", "nats-py"],
        capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and any(s in r.stdout + r.stderr for s in _NO_NETWORK):
        pytest.skip(f"pip cannot reach PyPI here: {(r.stdout + r.stderr).strip()[-300:]}")
    assert r.returncode == 0, r.stdout + r.stderr
    work = tmp_path / "user"
    work.mkdir()
    (work / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    (work / "test_worker.py").write_text(EXAMPLE_ASYNC)
    (work / "test_where.py").write_text(textwrap.dedent(f'''
        import natslab
        def test_natslab_comes_from_the_venv():
            assert natslab.__file__.startswith({str(venv)!r}), natslab.__file__
    '''))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                       cwd=work, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 passed" in r.stdout
