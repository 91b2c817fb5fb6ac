"""The broker embedded in a program: ``EmbeddedServer`` on the caller's event
loop, ``ServerThread`` on a thread and event loop of its own (the workbench
uses it). Both are importable from ``natslab.server``."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from .server import Server, ServerOptions


def _options(host: str, port: int, jetstream: bool, store_dir, **kw) -> ServerOptions:
    return ServerOptions(
        host=host, port=port, jetstream=jetstream,
        store_dir=str(store_dir) if store_dir is not None else None, **kw,
    )


class _Address:
    """Where the broker (``self.server``) listens, for both ways of running it."""

    server: Server

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def host(self) -> str:
        return self.server.opts.host

    @property
    def client_url(self) -> str:
        return f"nats://{self.host}:{self.port}"


class EmbeddedServer(_Address):
    """The broker on the current event loop. ``port=0`` picks a free port."""

    def __init__(self, host: str = "127.0.0.1", port: int = 4222, jetstream: bool = True,
                 store_dir: str | Path | None = None, **options):
        self.server = Server(_options(host, port, jetstream, store_dir, **options))

    async def start(self) -> "EmbeddedServer":
        await self.server.start()
        return self

    async def stop(self) -> None:
        await self.server.stop()

    async def __aenter__(self) -> "EmbeddedServer":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()


class ServerThread(_Address):
    """The broker on a thread of its own with its own event loop.

    ``start()`` blocks until the broker accepts connections (or raises what
    start-up raised); ``stop()`` shuts it down cleanly and joins the thread."""

    def __init__(self, host: str = "127.0.0.1", port: int = 4222, jetstream: bool = True,
                 store_dir: str | Path | None = None, **options):
        self.server = Server(_options(host, port, jetstream, store_dir, **options))
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stopped: asyncio.Event | None = None

    def start(self, timeout: float = 30.0) -> "ServerThread":
        self._thread = threading.Thread(target=self._run, name="natslab-broker", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("embedded broker did not start")
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.close()

    async def _main(self) -> None:
        self._stopped = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as e:  # reported to the starting thread
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        await self._stopped.wait()
        await self.server.stop()

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is None or self._thread is None:
            return
        if self._stopped is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(timeout)
        self._thread = None
