"""Backup and restore of a stream, as `nats stream backup` / `restore` do it.

nats-py has no snapshot API, so this speaks the protocol over core requests:
``$JS.API.STREAM.SNAPSHOT.<stream>`` answers with the stream's config and
state and then sends the archive to our inbox in chunks; a chunk with a reply
subject is acked with an empty message (flow control), an empty message ends
it (status 204, or 408 when the server gave up waiting for acks).
``$JS.API.STREAM.RESTORE.<stream>`` answers with a subject the archive is sent
to, one acked request per chunk; an empty chunk ends it and its reply is the
stream's info (or the server's reason to refuse the archive).

The backup is a directory as natscli writes it: ``backup.json`` (config and
state) and ``stream.arc.s2`` (the archive exactly as the server sent it), so
either tool restores the other's backups.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .errors import NatsError, _plain, quietly
from .models import StreamSummary

if TYPE_CHECKING:
    from .core import NatsClient

META_FILE = "backup.json"
DATA_FILE = "stream.arc.s2"
CHUNK_SIZE = 128 * 1024  # what natscli asks for and sends
CHUNK_TIMEOUT = 10.0  # the server waits 5 s for an ack; this is the other side's patience

# (bytes done, bytes expected); expected is 0 while unknown: a backup's compressed
# size is known only at its end (the state's byte count is of the uncompressed messages)
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class BackupResult:
    stream: str
    directory: Path
    archive_bytes: int  # the compressed archive on disk
    chunks: int
    messages: int
    consumers: int


def _no_progress(_done: int, _total: int) -> None:
    return None


async def backup_stream(client: NatsClient, stream: str, directory: str | os.PathLike, *,
                        consumers: bool = True, progress: Progress = _no_progress) -> BackupResult:
    """Write ``stream``'s snapshot to ``directory`` (created; must not hold a backup already)."""
    folder = Path(directory).expanduser()
    if (folder / META_FILE).exists() or (folder / DATA_FILE).exists():
        raise NatsError(f"{folder} already holds a backup: choose an empty directory")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise NatsError(f"cannot create {folder}: {exc.strerror or exc}") from exc
    nc = client.nc
    inbox = nc.new_inbox()
    try:
        sub = await nc.subscribe(inbox)
        await nc.flush(timeout=client.timeout)
    except Exception as exc:
        raise _plain(exc) from exc
    partial = folder / (DATA_FILE + ".partial")
    try:
        resp = await client._api(f"STREAM.SNAPSHOT.{stream}", {
            "deliver_subject": inbox, "no_consumers": not consumers, "chunk_size": CHUNK_SIZE})
        state = resp.get("state") or {}
        received = chunks = 0
        with open(partial, "wb") as out:
            while True:
                try:
                    msg = await sub.next_msg(timeout=CHUNK_TIMEOUT)
                except Exception as exc:
                    raise NatsError(f"backup of {stream}: no chunk from the server for {CHUNK_TIMEOUT:g}s") from exc
                status = (msg.headers or {}).get("Status", "")
                if not msg.data:
                    if status and status != "204":
                        why = (msg.headers or {}).get("Description", "")
                        raise NatsError(f"backup of {stream} ended by the server: {status} {why}".rstrip())
                    break
                out.write(msg.data)
                received += len(msg.data)
                chunks += 1
                if msg.reply:
                    await nc.publish(msg.reply, b"")
                progress(received, 0)
        meta = {"config": resp.get("config") or {}, "state": state}
        (folder / META_FILE).write_text(json.dumps(meta, indent=2))
        partial.replace(folder / DATA_FILE)  # only a complete archive gets the name restore reads
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        await quietly(sub.unsubscribe(), f"stop the backup inbox of {stream}")
    progress(received, received)
    return BackupResult(stream, folder, received, chunks, int(state.get("messages") or 0),
                        int(state.get("consumer_count") or 0) if consumers else 0)


def read_backup(directory: str | os.PathLike) -> tuple[dict, Path]:
    """(backup.json's {config, state}, the archive's path); NatsError when it is not a backup."""
    folder = Path(directory).expanduser()
    meta_path, data_path = folder / META_FILE, folder / DATA_FILE
    if not meta_path.is_file() or not data_path.is_file():
        raise NatsError(f"{folder} is not a stream backup: it needs {META_FILE} and {DATA_FILE}")
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError) as exc:
        raise NatsError(f"{meta_path} cannot be read: {exc}") from exc
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict) or not meta["config"].get("name"):
        raise NatsError(f"{meta_path} has no stream config with a name")
    return meta, data_path


async def restore_stream(client: NatsClient, directory: str | os.PathLike, *,
                         progress: Progress = _no_progress) -> StreamSummary:
    """Restore the backup in ``directory``; the stream must not exist (the server refuses)."""
    meta, data_path = read_backup(directory)
    name = meta["config"]["name"]
    resp = await client._api(f"STREAM.RESTORE.{name}", {"config": meta["config"], "state": meta.get("state") or {}})
    deliver = resp.get("deliver_subject") or ""
    if not deliver:
        raise NatsError(f"restore of {name}: the server gave no subject to send the archive to")
    total = max(1, data_path.stat().st_size)
    sent = 0
    nc = client.nc
    with open(data_path, "rb") as archive:
        while chunk := archive.read(CHUNK_SIZE):
            try:
                await nc.request(deliver, chunk, timeout=CHUNK_TIMEOUT)
            except Exception as exc:
                raise NatsError(f"restore of {name} stopped after {sent} bytes: {_plain(exc)}") from exc
            sent += len(chunk)
            progress(sent, total)
    try:
        reply = await nc.request(deliver, b"", timeout=max(CHUNK_TIMEOUT, client.timeout))
    except Exception as exc:
        raise _plain(exc) from exc
    result = json.loads(reply.data or b"{}")
    if err := result.get("error"):
        raise NatsError(err.get("description", "restore failed"), err.get("code", 0), err.get("err_code", 0))
    return StreamSummary.from_json(result)
