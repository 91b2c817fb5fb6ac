"""The fault API of the embedded broker (``EmbeddedServer`` and
``ServerThread`` in ``embedded.py`` say what each fault does): the work of
each, done on the broker's own event loop. The disk faults (slow, full,
power cut) are in ``diskfaults.py``.

How: ``restart()`` stops the ``Server`` and starts a new one on the same
options and port. ``crash()`` copies the store directory as the kernel has
it at that instant (no loop turn between the copy and cutting the
connections), aborts every connection, stops the broker "into the void"
(whatever its shutdown writes is thrown away with the store it wrote to)
and puts the copy in place before starting again: exactly the files a
SIGKILL leaves. ``power_cut()`` does the same with the image of what the
recorded syncs made durable. ``freeze()`` swaps each client's transport
for one that holds its writes (or shadows one consumer's ``is_paused``),
``drop_client()`` aborts a connection with its output dropped.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
from pathlib import Path

from .diskfaults import DiskFaults, DurableImage
from .server import Server


@dataclasses.dataclass(frozen=True)
class ClientConn:
    """One client connection as ``clients()`` lists it (the fields /connz names so)."""

    cid: int
    name: str
    ip: str
    port: int
    lang: str
    version: str


class Faults:
    """The fault API's work, done on the broker's own event loop; mixed into
    ``EmbeddedServer`` and ``ServerThread``, which hold ``self.server`` and
    ``self.store_dir`` and make it awaitable or a plain call."""

    server: Server
    store_dir: Path

    def _init_faults(self, record_syncs: bool) -> None:
        self._disk: DiskFaults | None = None
        self._frozen: dict = {}  # what is frozen -> (thaw(send), its timer)
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
        a read of the store now, and per sync of what was written since the
        file's last one: for tests, not for production."""
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
        self._thaw_all(send=False)  # what a freeze held dies with the broker
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
    def _clients(self) -> list["ClientConn"]:
        """The connected clients, oldest first (whom ``drop_client`` can cut)."""
        return [ClientConn(c.cid, c.name, c.host, c.port, c.lang, c.version)
                for c in sorted(self.server.clients.values(), key=lambda c: c.cid)
                if c.transport is not None and not c.closed]

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
        thaws = []  # (key, thaw(send))
        if consumer is not None:
            c = self._consumer(consumer)

            def thaw_consumer(send: bool, c=c) -> None:
                c.__dict__.pop("is_paused", None)
                if send:
                    try:
                        c.signal()
                    except Exception:  # (deleted meanwhile)
                        pass
            # an instance attribute over the method: delivery asks it, info does not
            c.is_paused = lambda: True
            thaws.append((("consumer", id(c)), thaw_consumer))
        else:
            for cl in list(self.server.clients.values()):
                if cl.transport is None or cl.closed or isinstance(cl.transport, _HeldTransport):
                    continue
                held = _HeldTransport(cl.transport)
                cl.transport = held
                thaws.append((("client", id(cl)), lambda send, cl=cl, held=held: held.release(cl, send)))
            thaws += [(k, v[0]) for k, v in self._frozen.items() if k[0] == "client"]  # frozen already: longer
        loop = self.server.loop
        for key, thaw in thaws:
            old = self._frozen.pop(key, None)
            if old is not None:
                old[1].cancel()
                thaw = old[0]
            self._frozen[key] = (thaw, loop.call_later(max(0.0, seconds), self._thaw, key))

    def _thaw(self, key, send: bool = True) -> None:
        entry = self._frozen.pop(key, None)
        if entry is not None:
            entry[1].cancel()
            entry[0](send)

    def _thaw_all(self, send: bool = True) -> None:
        """End every freeze; ``send`` False: what was held is dropped (a crash)."""
        for key in list(self._frozen):
            self._thaw(key, send)

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

    def release(self, client, send: bool = True) -> None:
        if client.transport is self:
            client.transport = self.real
        if send and self.held and not self.real.is_closing():
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
