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
- ``clients()``: the connected clients (cid, name, ip, port, lang, version).
- ``drop_client(name_or_cid)``: cut one client's connection.
- ``freeze(seconds, consumer=None)``: nothing is sent to clients (or nothing
  delivered by one consumer) for a while; ``thaw()`` ends it early.
- ``slow_disk(ms)``: each fsync of the store takes ``ms`` longer (0: normal).
- ``disk_full()`` / ``release_disk()``: the store's writes fail with ENOSPC
  until released.

``restart()``, ``crash()`` and ``power_cut()`` return once as many clients are
connected again as were before (nats-py reconnects by itself), or after
``reconnect_wait`` seconds (3). How each fault works is in ``faults.py``
(and ``diskfaults.py``); nothing of the disk faults runs while none is armed.

``history_mb=N`` (off by default) keeps a ring of about N MB of what happened
to streams and consumers (deliveries, acks, naks, terms, expiries, floor
moves, publishes, API changes), read with ``history(since, until,
stream=, consumer=)`` from any thread; the workbench's time slider reads it.
The events are described in ``jetstream/journal.py``.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from .faults import ClientConn, Faults
from .server import Server, ServerOptions, default_store_dir


def _options(host: str, port: int, jetstream: bool, store_dir, history_mb: float = 0, **kw) -> ServerOptions:
    opts = ServerOptions(
        host=host, port=port, jetstream=jetstream,
        store_dir=str(store_dir) if store_dir is not None else None, **kw,
    )
    return _with_history(opts, history_mb)


def _with_history(opts: ServerOptions, history_mb: float) -> ServerOptions:
    if history_mb and opts.journal is None:
        # one ring for the embedding's life: a restart or a crash keeps it
        from .internal import jetstream

        opts.journal = jetstream().Journal(int(history_mb * 1_000_000))
    return opts


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

    def history(self, since: int | None = None, until: int | None = None, *,
                stream: str | None = None, consumer: str | None = None,
                account: str | None = "$G") -> list[tuple]:
        """What the broker recorded (``history_mb``; jetstream/journal.py
        names each event's fields), oldest first: the events with ``since
        <= t <= until`` (wall-clock ns, None: open), of one stream and, with
        ``consumer``, of that consumer (and its stream's publishes), in
        ``account`` (``$G`` when no accounts are configured; None: every
        account). Safe to call from any thread; [] when no history is kept."""
        j = self.server.journal
        return [] if j is None else j.events(since, until, stream, consumer, account)

    @property
    def history_enabled(self) -> bool:
        return self.server.journal is not None

    @property
    def store_dir(self) -> Path:
        """The directory the store is in (JetStream's files are under ``jetstream/``)."""
        d = self.server.opts.store_dir
        return Path(d) if d else default_store_dir()


class EmbeddedServer(_Address, Faults):
    """The broker on the current event loop. ``port=0`` picks a free port.

    ``opts`` (a ``ServerOptions``, e.g. from a config file with
    ``server.cli.build_options``) replaces the other arguments;
    ``record_syncs=True`` arms ``power_cut()`` from the start;
    ``history_mb=50`` keeps that much history (``history()``)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 4222, jetstream: bool = True,
                 store_dir: str | Path | None = None, *, opts: ServerOptions | None = None,
                 record_syncs: bool = False, history_mb: float = 0, **options):
        opts = _with_history(opts, history_mb) if opts else _options(host, port, jetstream, store_dir,
                                                                     history_mb, **options)
        self.server = Server(opts)
        self._init_faults(record_syncs)

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

    async def clients(self) -> list[ClientConn]:
        """The connected clients (cid, name, ip, port, lang, version), oldest first."""
        return self._clients()

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


class ServerThread(_Address, Faults):
    """The broker on a thread of its own with its own event loop.

    ``start()`` blocks until the broker accepts connections (or raises what
    start-up raised); ``stop()`` shuts it down cleanly and joins the thread.
    The fault API's methods are plain calls that return once done."""

    def __init__(self, host: str = "127.0.0.1", port: int = 4222, jetstream: bool = True,
                 store_dir: str | Path | None = None, *, opts: ServerOptions | None = None,
                 record_syncs: bool = False, history_mb: float = 0, **options):
        opts = _with_history(opts, history_mb) if opts else _options(host, port, jetstream, store_dir,
                                                                     history_mb, **options)
        self.server = Server(opts)
        self._init_faults(record_syncs)
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
    def arm_power_cut(self) -> None:
        """Record from now on what each fsync makes durable (``Faults.arm_power_cut``).
        While the broker runs this is done on its loop, so the store is not read
        in the middle of one of its writes; safe to call from any thread."""
        if self._loop is None or self._thread is None or not self._thread.is_alive():
            super().arm_power_cut()
        else:
            self._on_loop(super().arm_power_cut)

    def restart(self) -> None:
        """Stop cleanly and start again on the same port and store."""
        self._on_loop(self._restart)

    def crash(self) -> None:
        """Die as a SIGKILL would, then start again from the store (EmbeddedServer.crash)."""
        self._on_loop(self._crash)

    def power_cut(self) -> None:
        """As ``crash()``, losing every write not fsynced (EmbeddedServer.power_cut)."""
        self._on_loop(self._power_cut)

    def clients(self) -> list[ClientConn]:
        """The connected clients, oldest first (EmbeddedServer.clients)."""
        return self._on_loop(self._clients)

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
