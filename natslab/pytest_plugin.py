"""natslab as the broker of a program's own tests: a pytest plugin, loaded by
pytest whenever natslab is installed (the ``pytest11`` entry point).

Fixtures (all prefixed, so they never clash with a project's own):

- ``natslab_server``: a fresh broker with JetStream on a temporary store and
  a free port, for one test, with ``.url``, ``.store_dir`` and the fault API
  (``restart``, ``crash``, ``power_cut``, ``drop_client``, ``freeze``,
  ``slow_disk``, ``disk_full``/``release_disk``). In an ``async def`` test it
  is an ``EmbeddedServer`` on the test's event loop (the faults are awaited);
  in a plain test (or an async one on a module- or session-wide loop) a
  ``ServerThread`` (the faults are plain calls).
- ``natslab_url``: its URL.
- ``nats_client``: a nats-py connection to it (async tests), which reconnects
  by itself after a fault.
- ``natslab_server_session``: one broker for the whole session (a
  ``ServerThread``, usable from sync and async tests alike; its faults are
  plain calls). Streams made by one test are seen by the next.

A nats-server config file for the broker: ``@pytest.mark.natslab(config=...)``
on a test, else ``--natslab-config`` on the command line, else the
``natslab_config`` ini option (relative to the ini file). Its port, host and
store directory are replaced (a free port on 127.0.0.1, a temporary store,
in /dev/shm where there is one with 512 MB free) and JetStream is on. ``@pytest.mark.natslab(record_syncs=False)`` skips
recording the fsyncs ``power_cut()`` needs (on by default for
``natslab_server``)."""

from __future__ import annotations

import inspect
import os
import shutil
import tempfile
from pathlib import Path

import pytest

try:
    import pytest_asyncio
except ImportError:  # async tests need it anyway; sync tests do not
    pytest_asyncio = None


def pytest_addoption(parser) -> None:
    group = parser.getgroup("natslab", "natslab broker for tests")
    group.addoption("--natslab-config", dest="natslab_config", default=None,
                    help="nats-server config file for the natslab_server fixtures")
    parser.addini("natslab_config", "nats-server config file for the natslab_server fixtures "
                  "(relative to the ini file)", default="")


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "natslab(config=None, record_syncs=True): options of the natslab_server fixture")


def _config_file(config, marker) -> str | None:
    if marker is not None and marker.kwargs.get("config"):
        return str(marker.kwargs["config"])
    if config.getoption("natslab_config", None):
        return config.getoption("natslab_config")
    ini = config.getini("natslab_config")
    if ini:
        base = Path(config.inipath).parent if config.inipath else Path(config.rootpath)
        return str(base / ini)
    return None


def _options(config, marker, store_dir: str):
    from natslab.server import ServerOptions
    from natslab.server.cli import build_options

    flags = {"host": "127.0.0.1", "port": "0", "jetstream": True, "store_dir": store_dir}
    path = _config_file(config, marker)
    if path is None:
        return ServerOptions(host="127.0.0.1", port=0, jetstream=True, store_dir=store_dir)
    return build_options({"config": path, **flags})


def _marker(request):
    return request.node.get_closest_marker("natslab") if hasattr(request.node, "get_closest_marker") else None


def _record_syncs(marker, default: bool) -> bool:
    return bool(marker.kwargs.get("record_syncs", default)) if marker is not None else default


def _tmp_base() -> str | None:
    """Where the temporary stores go: /dev/shm (a RAM disk) where there is
    one with room to spare, since on a real disk the store's fsyncs at start
    (its directories) and the removal cost 10-30 ms a test; the faults are
    modelled (server/faults.py), not left to the disk. Else the usual tmp."""
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize >= 512 << 20 and os.access("/dev/shm", os.W_OK | os.X_OK):
            return "/dev/shm"
    except OSError:
        pass
    return None


class _Store:
    """A temporary store directory (cheaper than tmp_path: a per-test start
    and stop is meant to take a few milliseconds)."""

    base_dir = _tmp_base()

    def __init__(self):
        self.base = tempfile.mkdtemp(prefix="natslab-", dir=self.base_dir)
        self.path = str(Path(self.base) / "store")

    def remove(self) -> None:
        shutil.rmtree(self.base, ignore_errors=True)


def _thread_server(config, marker, record: bool):
    from natslab.server import ServerThread

    store = _Store()
    try:
        srv = ServerThread(opts=_options(config, marker, store.path), record_syncs=record).start()
    except BaseException:
        store.remove()
        raise
    return srv, store


def _on_the_tests_loop(request) -> bool:
    """An async test on a loop of its own (pytest-asyncio's default): the
    broker can run on that loop. A test on a longer-lived loop
    (``loop_scope="module"``...) gets the ServerThread instead, which serves
    any loop (its faults are plain calls there)."""
    fn = getattr(request, "function", None)
    if fn is None or not inspect.iscoroutinefunction(fn) or pytest_asyncio is None:
        return False
    m = request.node.get_closest_marker("asyncio")
    scope = (m.kwargs.get("loop_scope") or m.kwargs.get("scope")) if m is not None else None
    if not scope:
        try:
            scope = request.config.getini("asyncio_default_test_loop_scope")
        except ValueError:  # (an older pytest-asyncio)
            scope = None
    return scope in (None, "", "function")


@pytest.fixture
def natslab_server(request):
    """A broker with JetStream for this test (see the module docstring)."""
    if _on_the_tests_loop(request):
        yield request.getfixturevalue("natslab_embedded_server")
        return
    marker = _marker(request)
    srv, store = _thread_server(request.config, marker, _record_syncs(marker, True))
    try:
        yield srv
    finally:
        srv.stop()
        store.remove()


@pytest.fixture
def natslab_url(natslab_server) -> str:
    """The URL of this test's broker."""
    return natslab_server.url


@pytest.fixture(scope="session")
def natslab_server_session(request):
    """One broker (a ServerThread) for the whole session."""
    srv, store = _thread_server(request.config, None, False)
    try:
        yield srv
    finally:
        srv.stop()
        store.remove()


if pytest_asyncio is not None:

    @pytest_asyncio.fixture(loop_scope="function")
    async def natslab_embedded_server(request):
        """The broker as an EmbeddedServer on the test's own event loop
        (what ``natslab_server`` is in an async test)."""
        from natslab.server import EmbeddedServer

        marker = _marker(request)
        store = _Store()
        srv = EmbeddedServer(opts=_options(request.config, marker, store.path),
                             record_syncs=_record_syncs(marker, True))
        try:
            await srv.start()
            yield srv
            await srv.stop()
        finally:
            store.remove()

    @pytest_asyncio.fixture
    async def nats_client(natslab_server):
        """A nats-py connection to ``natslab_server``; it reconnects (quickly,
        a bounded number of times) after a restart, crash or power cut."""
        import nats

        nc = await nats.connect(natslab_server.url, connect_timeout=2, reconnect_time_wait=0.05,
                                max_reconnect_attempts=100)
        try:
            yield nc
        finally:
            if not nc.is_closed:
                await nc.close()
