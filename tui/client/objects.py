"""Object stores through nats-py's ObjectStore API (a store is a stream OBJ_<name>)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import AsyncIterator

from .errors import quietly
from .models import StreamSummary


@dataclass(frozen=True)
class StoreSummary:
    name: str
    bytes: int
    storage: str

    @classmethod
    def from_stream(cls, s: StreamSummary) -> "StoreSummary":
        return cls(s.name[4:], s.bytes, s.storage)


@dataclass(frozen=True)
class ObjectSummary:
    name: str
    size: int
    chunks: int
    digest: str
    mtime: str
    deleted: bool

    @classmethod
    def from_info(cls, info) -> "ObjectSummary":
        return cls(info.name, info.size or 0, info.chunks or 0, info.digest or "", info.mtime or "", bool(info.deleted))


class CountingReader(io.RawIOBase):
    """A file wrapper that counts bytes read, so a put can show progress."""

    def __init__(self, f):
        self.f = f
        self.done = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self.f.readinto(buffer)
        self.done += n or 0
        return n


class CountingWriter(io.RawIOBase):
    def __init__(self, f):
        self.f = f
        self.done = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.done += len(data)
        return self.f.write(data)


class ObjectsMixin:
    async def list_object_stores(self) -> list[StoreSummary]:
        return [StoreSummary.from_stream(s) for s in await self.list_streams() if s.name.startswith("OBJ_")]

    async def create_object_store(self, name: str, storage: str = "file") -> None:
        self._writing(f"creating object store {name}")
        from nats.js.api import ObjectStoreConfig, StorageType

        cfg = ObjectStoreConfig(storage=StorageType.MEMORY if storage == "memory" else StorageType.FILE)
        await self._call(self.js.create_object_store(name, config=cfg))

    async def delete_object_store(self, name: str) -> None:
        self._writing(f"deleting object store {name}")
        await self._call(self.js.delete_object_store(name))

    async def list_objects(self, store: str) -> list[ObjectSummary]:
        from nats.js.errors import NotFoundError

        obs = await self._call(self.js.object_store(store))
        try:
            with self.own_consumer(f"OBJ_{store}"):  # the header counts the list's consumer out
                infos = await obs.list(ignore_deletes=True)
        except NotFoundError:
            return []
        except Exception as exc:
            return await self._call(_raise(exc))
        return [ObjectSummary.from_info(i) for i in infos]

    async def put_object(self, store: str, name: str, reader: CountingReader) -> ObjectSummary:
        self._writing(f"putting object {name}")
        obs = await self._call(self.js.object_store(store))
        return ObjectSummary.from_info(await self._call(obs.put(name, reader)))

    async def get_object(self, store: str, name: str, writer: CountingWriter) -> ObjectSummary:
        """Write the object into ``writer``; nats-py checks the SHA-256 digest."""
        obs = await self._call(self.js.object_store(store))
        with self.own_consumer(f"OBJ_{store}"):  # the header counts the get's consumer out
            result = await self._call(obs.get(name, writeinto=writer))
        return ObjectSummary.from_info(result.info)

    async def delete_object(self, store: str, name: str) -> None:
        self._writing(f"deleting object {name}")
        obs = await self._call(self.js.object_store(store))
        await self._call(obs.delete(name))

    async def watch_objects(self, store: str) -> AsyncIterator[ObjectSummary]:
        obs = await self._call(self.js.object_store(store))
        with self.own_consumer(f"OBJ_{store}"):  # the header counts the watch's consumer out
            watcher = await self._call(obs.watch(include_history=False))
            try:
                async for info in watcher:
                    if info is not None:
                        yield ObjectSummary.from_info(info)
            finally:
                await quietly(watcher.stop(), f"stop the watch of object store {store}")


async def _raise(exc: Exception):
    raise exc
