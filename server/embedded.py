"""The broker embedded in a program: ``EmbeddedServer`` on the caller's event
loop, ``ServerThread`` on a thread and event loop of its own (the workbench
uses it). Both are importable from ``natslab.server``.

Both carry the fault API a program's tests use to see what their code does
when the broker fails (the same methods on both: awaitable on
``EmbeddedServer``, plain calls on ``ServerThread``):

- ``restart()``: a clean stop and a start on the same port and store.
- ``crash()``: what a SIGKILL leaves: connections cut without flushing, what
  the broker held in memory (buffered records, timers, state not yet written)
  gone; it starts again from the store as the files were at that moment.
- ``power_cut()``: as ``crash()``, and every write not made durable (fsynced)
  is lost too; needs ``record_syncs=True`` (or ``arm_power_cut()``) first.
- ``drop_client(name_or_cid)``: cut one client's connection.
- ``freeze(seconds, consumer=None)``: nothing is sent to clients (or nothing
  delivered by one consumer) for a while; ``thaw()`` ends it early.
- ``slow_disk(ms)``: each fsync of the store takes ``ms`` longer (0: normal).
- ``disk_full()`` / ``release_disk()``: the store's writes fail with ENOSPC
  until released.

``restart()``, ``crash()`` and ``power_cut()`` return once as many clients are
connected again as were before (nats-py reconnects by itself), or after
``reconnect_wait`` seconds (3). The disk faults are in ``faults.py``; nothing
of them runs while none is armed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import threading
from pathlib import Path

from .faults import DiskFaults, DurableImage
from .server import Server, ServerOptions, default_store_dir


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

    url = client_url

    @property
    def store_dir(self) -> Path:
        """The directory the store is in (JetStream's files are under ``jetstream/``)."""
        d = self.server.opts.store_dir
        return Path(d) if d else default_store_dir()


class _Faults(_Address):
    """The fault API's work, done on the broker's own event loop."""

    def _init_faults(self, opts: ServerOptions, record_syncs: bool) -> None:
        self._disk: DiskFaults | None = None
        self._frozen: dict = {}  # what is frozen -> how to thaw it
        self._thaw_timer: asyncio.TimerHandle | None = None
        self._record_syncs = record_syncs
        # restart(), crash() and power_cut() return once as many clients are
        # connected again as were before, or after this many seconds
        self.reconnect_wait = 3.0

    @property
    def disk(self) -> DiskFaults:
        """The disk faults of this broker's store (counters: ``slowed``, ``refused``)."""
        if self._disk is None:
            self.store_dir.mkdir(parents=True, exist_ok=True)
            self._disk = DiskFaults(self.store_dir)
        return self._disk

    def arm_power_cut(self) -> None:
        """Record from now on what each fsync makes durable, so ``power_cut()``
        can drop the rest (what is in the store now counts as durable). Costs
        a read of each synced file per sync: for tests, not for production."""
        if self.disk.image is None:
            self.disk.image = DurableImage(self.disk.root)
            self.disk.update()

    def _set_slow_disk(self, ms: float) -> None:
        self.disk.slow_ms = max(0.0, float(ms))
        self.disk.update()

    def _set_disk_full(self, full: bool) -> None:
        self.disk.full = bool(full)
        self.disk.update()

    # -- stop and start ---------------------------------------------------------
    async def _start_again(self, old: Server, clients: int = 0) -> None:
        self._thaw_all()
        self.server = Server(dataclasses.replace(old.opts, port=old.port))
        await self.server.start()
        # the clients that were connected come back on their own; a test
        # goes on more simply once they have (bounded: some never will)
        deadline = self.server.loop.time() + self.reconnect_wait
        while len(self.server.clients) < clients and self.server.loop.time() < deadline:
            await asyncio.sleep(0.005)

    async def _restart(self) -> None:
        old = self.server
        self._thaw_all()
        n = len(old.clients)
        await old.stop()
        await self._start_again(old, n)

    @staticmethod
    def _abandon_clients(server: Server) -> None:
        """Cut every connection with nothing more sent (what a killed process does)."""
        for c in list(server.clients.values()):
            c.drop_output()
            if c.transport is not None:
                c.transport.abort()

    async def _stop_into_the_void(self, old: Server, image: DurableImage | None) -> None:
        """Stop ``old`` with its connections cut; what it writes meanwhile is
        thrown away by the caller (and not recorded as durable)."""
        self._thaw_all()
        self._abandon_clients(old)
        disk = self._disk
        if disk is not None:
            disk.image = None
        try:
            await old.stop()
        except Exception:
            old.logger.exception("stopping the crashed broker")
        if disk is not None:
            disk.image = image

    def _replace_store(self, new: Path) -> None:
        store = self.store_dir
        aside = _sibling(store, "dead")
        os.rename(store, aside)
        os.rename(new, store)
        shutil.rmtree(aside, ignore_errors=True)

    async def _crash(self) -> None:
        old, store = self.server, self.store_dir
        image = self._disk.image if self._disk is not None else None
        keys = image.keys_by_path() if image is not None else None
        # the files as the kernel has them now: what a SIGKILL leaves (no loop
        # turn between this copy and cutting the connections)
        n = len(old.clients)
        if not old.opts.jetstream or not store.is_dir():  # no store: only the connections and memory go
            await self._stop_into_the_void(old, image)
            await self._start_again(old, n)
            return
        snap = _sibling(store, "crash")
        shutil.copytree(store, snap, symlinks=True)
        await self._stop_into_the_void(old, image)
        self._replace_store(snap)
        if image is not None:
            image.moved(keys)
        await self._start_again(old, n)

    async def _power_cut(self) -> None:
        disk = self._disk
        if disk is None or disk.image is None:
            raise RuntimeError("power_cut() needs the syncs recorded: record_syncs=True or arm_power_cut() first")
        old, store = self.server, self.store_dir
        n = len(old.clients)
        cut = disk.image.build(_sibling(store, "powercut"))
        await self._stop_into_the_void(old, None)
        self._replace_store(cut)
        disk.image = DurableImage(store)  # what survived is durable
        disk.update()
        await self._start_again(old, n)

    # -- clients and delivery -----------------------------------------------------
    def _drop_client(self, name_or_cid) -> list[int]:
        gone = [c for c in list(self.server.clients.values())
                if (c.cid == name_or_cid if isinstance(name_or_cid, int) else c.name == name_or_cid)]
        if not gone:
            raise LookupError(f"no client {name_or_cid!r}")
        for c in gone:
            c.close_reason = "Kicked"
            c.drop_output()
            if c.transport is not None:
                c.transport.abort()
        return [c.cid for c in gone]

    def _consumer(self, consumer):
        stream, _, name = consumer.partition("/") if isinstance(consumer, str) else (consumer[0], "", consumer[1])
        for js in self.server.jetstreams.values():
            st = js.streams.get(stream)
            if st is not None and name in st.consumers:
                return st.consumers[name]
        raise LookupError(f"no consumer {consumer!r} (give 'STREAM/CONSUMER')")

    def _freeze(self, seconds: float, consumer=None) -> None:
        if consumer is not None:
            c = self._consumer(consumer)
            key = ("consumer", id(c))
            if key not in self._frozen:
                # an instance attribute over the method: delivery asks it, info does not
                c.is_paused = lambda: True
                self._frozen[key] = lambda: (c.__dict__.pop("is_paused", None), c.signal())
        else:
            for cl in list(self.server.clients.values()):
                key = ("client", id(cl))
                if key in self._frozen or cl.transport is None or cl.closed:
                    continue
                held = _HeldTransport(cl.transport)
                cl.transport = held
                self._frozen[key] = lambda cl=cl, held=held: held.release(cl)
        if self._thaw_timer is not None:
            self._thaw_timer.cancel()
        self._thaw_timer = self.server.loop.call_later(max(0.0, seconds), self._thaw_all)

    def _thaw_all(self) -> None:
        if self._thaw_timer is not None:
            self._thaw_timer.cancel()
            self._thaw_timer = None
        frozen, self._frozen = self._frozen, {}
        for thaw in frozen.values():
            thaw()

    @property
    def frozen(self) -> bool:
        """A freeze is in force."""
        return bool(self._frozen)


class _HeldTransport:
    """A client's transport while the broker is frozen: what is written is
    kept, in order, and sent when the freeze ends."""

    def __init__(self, real):
        self.real = real
        self.held: list[bytes] = []

    def write(self, data) -> None:
        self.held.append(bytes(data))

    def get_write_buffer_size(self) -> int:
        return self.real.get_write_buffer_size()

    def __getattr__(self, name):
        return getattr(self.real, name)

    def release(self, client) -> None:
        if client.transport is self:
            client.transport = self.real
        if self.held and not self.real.is_closing():
            self.real.write(b"".join(self.held))
        self.held.clear()


def _sibling(path: Path, what: str) -> Path:
    """A fresh name next to ``path`` (same file system, so a rename moves it)."""
    i = 0
    while True:
        p = path.with_name(f".{path.name}.{what}{i or ''}")
        if not os.path.lexists(p):
            return p
        i += 1


class EmbeddedServer(_Faults):
    """The broker on the current event loop. ``port=0`` picks a free port.

    ``opts`` (a ``ServerOptions``, e.g. from a config file with
    ``server.cli.build_options``) replaces the other arguments;
    ``record_syncs=True`` arms ``power_cut()`` from the start."""

    def __init__(self, host: str = "127.0.0.1", port: int = 4222, jetstream: bool = True,
                 store_dir: str | Path | None = None, *, opts: ServerOptions | None = None,
                 record_syncs: bool = False, **options):
        opts = opts or _options(host, port, jetstream, store_dir, **options)
        self.server = Server(opts)
        self._init_faults(opts, record_syncs)

    async def start(self) -> "EmbeddedServer":
        if self._record_syncs:
            self.arm_power_cut()
        await self.server.start()
        return self

    async def stop(self) -> None:
        self._thaw_all()
        await self.server.stop()
        if self._disk is not None:
            self._disk.slow_ms, self._disk.full, self._disk.image = 0, False, None
            self._disk.update()

    async def __aenter__(self) -> "EmbeddedServer":
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.stop()

    # -- faults (see the module docstring) ----------------------------------------
    async def restart(self) -> None:
        """Stop cleanly (everything written and synced) and start again on the
        same port and store. Clients see the connection close and reconnect."""
        await self._restart()

    async def crash(self) -> None:
        """Die as a SIGKILL would: connections cut with nothing more sent,
        buffered records and unwritten state lost, timers gone; then start
        again from the store as the files were at that instant."""
        await self._crash()

    async def power_cut(self) -> None:
        """As ``crash()``, and the store loses every write not made durable
        by an fsync (the worst case POSIX allows); needs ``record_syncs=True``
        or ``arm_power_cut()`` before the writes that are to be judged."""
        await self._power_cut()

    async def drop_client(self, name_or_cid: str | int) -> list[int]:
        """Cut the connection of the client with this id (int) or name (the
        ``name`` of its CONNECT: every client with it); nothing more is sent
        to it; the others go on. Returns the ids cut; LookupError if none."""
        return self._drop_client(name_or_cid)

    async def freeze(self, seconds: float, consumer: str | tuple | None = None) -> None:
        """For ``seconds`` (from now) nothing is sent to the connected clients
        (messages, replies, PONGs are kept in order and sent when it ends);
        with ``consumer`` ("STREAM/NAME" or (stream, name)) only that
        consumer stops delivering. Returns at once; ``thaw()`` ends it early.
        Clients that connect during a broker freeze are not frozen."""
        self._freeze(seconds, consumer)

    async def thaw(self) -> None:
        """End every freeze now."""
        self._thaw_all()

    async def slow_disk(self, ms: float) -> None:
        """Each fsync of the store takes ``ms`` more milliseconds (the broker
        waits, as on a slow disk); 0 makes the disk normal again."""
        self._set_slow_disk(ms)

    async def disk_full(self, full: bool = True) -> None:
        """The store's writes fail with ENOSPC (publishes get nats-server's
        503 / 10077 store error) until ``release_disk()``."""
        self._set_disk_full(full)

    async def release_disk(self) -> None:
        """The disk has room again."""
        self._set_disk_full(False)


class ServerThread(_Faults):
    """The broker on a thread of its own with its own event loop.

    ``start()`` blocks until the broker accepts connections (or raises what
    start-up raised); ``stop()`` shuts it down cleanly and joins the thread.
    The fault API's methods are plain calls that return once done."""

    def __init__(self, host: str = "127.0.0.1", port: int = 4222, jetstream: bool = True,
                 store_dir: str | Path | None = None, *, opts: ServerOptions | None = None,
                 record_syncs: bool = False, **options):
        opts = opts or _options(host, port, jetstream, store_dir, **options)
        self.server = Server(opts)
        self._init_faults(opts, record_syncs)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stopped: asyncio.Event | None = None

    def start(self, timeout: float = 30.0) -> "ServerThread":
        if self._record_syncs:
            self.arm_power_cut()
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
        self._thaw_all()
        await self.server.stop()

    def stop(self, timeout: float = 10.0) -> None:
        if self._loop is None or self._thread is None:
            return
        if self._stopped is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stopped.set)
        self._thread.join(timeout)
        self._thread = None
        if self._disk is not None:
            self._disk.slow_ms, self._disk.full, self._disk.image = 0, False, None
            self._disk.update()

    def _on_loop(self, fn, *args, timeout: float = 60.0):
        """Run ``fn(*args)`` (a coroutine function or a plain one) on the
        broker's loop and return its result."""
        if self._loop is None or self._thread is None:
            raise RuntimeError("the broker is not running")

        async def run():
            r = fn(*args)
            return await r if asyncio.iscoroutine(r) else r
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    # -- faults (see the module docstring; the same as EmbeddedServer's) ----------
    def restart(self) -> None:
        """Stop cleanly and start again on the same port and store."""
        self._on_loop(self._restart)

    def crash(self) -> None:
        """Die as a SIGKILL would, then start again from the store (EmbeddedServer.crash)."""
        self._on_loop(self._crash)

    def power_cut(self) -> None:
        """As ``crash()``, losing every write not fsynced (EmbeddedServer.power_cut)."""
        self._on_loop(self._power_cut)

    def drop_client(self, name_or_cid: str | int) -> list[int]:
        """Cut one client's connection (EmbeddedServer.drop_client)."""
        return self._on_loop(self._drop_client, name_or_cid)

    def freeze(self, seconds: float, consumer: str | tuple | None = None) -> None:
        """Send nothing (or deliver nothing from one consumer) for ``seconds`` (EmbeddedServer.freeze)."""
        self._on_loop(self._freeze, seconds, consumer)

    def thaw(self) -> None:
        """End every freeze now."""
        self._on_loop(self._thaw_all)

    def slow_disk(self, ms: float) -> None:
        """Each fsync of the store takes ``ms`` more milliseconds; 0: normal."""
        self._set_slow_disk(ms)

    def disk_full(self, full: bool = True) -> None:
        """The store's writes fail with ENOSPC until ``release_disk()``."""
        self._set_disk_full(full)

    def release_disk(self) -> None:
        """The disk has room again."""
        self._set_disk_full(False)
