"""Key-value buckets through nats-py's KeyValue API (a bucket is a stream KV_<name>)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import AsyncIterator

from .errors import quietly
from .models import StreamSummary


@dataclass(frozen=True)
class BucketSummary:
    name: str
    values: int
    history: int
    ttl: float
    bytes: int
    storage: str
    max_value_size: int
    created: str = ""  # the stream's creation time: tells a recreated bucket from the old one

    @classmethod
    def from_stream(cls, s: StreamSummary) -> "BucketSummary":
        return cls(
            name=s.name[3:], values=s.messages, history=s.config.get("max_msgs_per_subject", 1),
            ttl=(s.config.get("max_age") or 0) / 1e9, bytes=s.bytes, storage=s.storage,
            max_value_size=s.config.get("max_msg_size", -1), created=s.created,
        )


@dataclass(frozen=True)
class KvEntry:
    bucket: str
    key: str
    value: bytes
    revision: int
    operation: str  # PUT, DEL, PURGE
    created: datetime | None

    @classmethod
    def from_nats(cls, e) -> "KvEntry":
        created = None
        if isinstance(e.created, (int, float)) and e.created:
            created = datetime.fromtimestamp(e.created / 1e9 if e.created > 1e12 else e.created, timezone.utc)
        elif isinstance(e.created, datetime):
            created = e.created
        return cls(e.bucket, e.key, e.value or b"", e.revision or 0, e.operation or "PUT", created)


class KvMixin:
    """Mixed into NatsClient; ``self.js`` and ``self.list_streams`` come from there."""

    async def list_kv_buckets(self) -> list[str]:
        return [b.name for b in await self.list_buckets()]

    async def list_buckets(self) -> list[BucketSummary]:
        return [BucketSummary.from_stream(s) for s in await self.list_streams() if s.name.startswith("KV_")]

    async def create_bucket(self, name: str, history: int, ttl: float | None, max_value_size: int | None, storage: str) -> None:
        self._writing(f"creating bucket {name}")
        from nats.js.api import KeyValueConfig, StorageType

        await self._call(self.js.create_key_value(KeyValueConfig(
            bucket=name, history=history, ttl=ttl or None, max_value_size=max_value_size,
            storage=StorageType.MEMORY if storage == "memory" else StorageType.FILE,
        )))

    async def delete_bucket(self, name: str) -> None:
        self._writing(f"deleting bucket {name}")
        await self._call(self.js.delete_key_value(name))

    async def kv_history(self, bucket: str, key: str, limit: int = 64) -> list[KvEntry]:
        """Every kept revision of ``key``, oldest first, read with message get
        (no consumer is created just to look at a key)."""
        out: list[KvEntry] = []
        seq = 1
        while len(out) < limit:
            msg = await self.get_message(f"KV_{bucket}", seq, f"$KV.{bucket}.{key}")
            if msg is None:
                break
            op = msg.headers.get("KV-Operation", "PUT")
            out.append(KvEntry(bucket, key, msg.data, msg.seq, op, msg.time))
            seq = msg.seq + 1
        return out

    async def kv_op(self, bucket: str, op: str, key: str, value: bytes = b"", revision: int | None = None) -> int | None:
        """put, create, update (needs revision), delete or purge one key."""
        self._writing(f"{op} of key {key}")
        kv = await self._call(self.js.key_value(bucket))
        if op == "put":
            return await self._call(kv.put(key, value))
        if op == "create":
            return await self._call(kv.create(key, value))
        if op == "update":
            return await self._call(kv.update(key, value, last=revision))
        if op == "delete":
            await self._call(kv.delete(key))
        elif op == "purge":
            await self._call(kv.purge(key))
        return None

    async def kv_watch(self, bucket: str) -> AsyncIterator[KvEntry]:
        """Every change to the bucket from now on (by anyone); runs until cancelled."""
        kv = await self._call(self.js.key_value(bucket))
        with self.own_consumer(f"KV_{bucket}"):  # the header counts the watch's consumer out
            watcher = await self._call(kv.watchall(include_history=False))
            try:
                async for entry in watcher:
                    if entry is not None:
                        yield KvEntry.from_nats(entry)
            finally:
                await quietly(watcher.stop(), f"stop the watch of bucket {bucket}")
