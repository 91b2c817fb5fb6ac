"""One account's JetStream (nats-server's jsAccount): the stream registry,
stream persistence and restore under ``<store_dir>/jetstream/<account>/``,
the ``$JS.API.>`` subscription, the account's limits, API counters and
account info. Each account with JetStream has its own (``$G`` when no
accounts are configured); ``messaging`` (``internal.Messaging``) is all
it sees of the core: what it subscribes, sends and delivers through, in the
account's subject space, and the server's loop, logger and options.

Start-up imports only what an empty JetStream needs (this module, limits and
persistence): the API dispatcher (api/dispatch.py, with the request and response
shapes it reads) is imported by the first ``$JS.API`` request, the streams'
modules (stream, the two stores, mirrors and sources, config checks) by the
first stream restored or created, so ``-js`` with an empty store starts
nearly as fast as without it."""

from __future__ import annotations

import errno

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

from . import errors, limits
from .headers import API_LEVEL
from .persist import CorruptStateError, fsync_dir, make_dirs, read_json_checked, write_json_atomic

if TYPE_CHECKING:
    from .consumer.consumer import Consumer
    from .store.base import Store
    from .stream.stream import Stream

log = logging.getLogger("natslab.jetstream")

ACCOUNT = "$G"
STREAM_META = "meta.json"

DIRECT_GET_PREFIX = b"$JS.API.DIRECT.GET."
_DG = len(DIRECT_GET_PREFIX)


# nats-server's streamDefaultMaxQueueMsgs / streamDefaultMaxQueueBytes
STREAM_MAX_QUEUE_MSGS = 100_000
STREAM_MAX_QUEUE_BYTES = 128 * 1024 * 1024


def direct_get_key(subject: bytes, reply: bytes | None, payload: bytes) -> bytes | None:
    """For a body-less ``DIRECT.GET.<stream>.<subject>`` request with a
    reply (a KV get of nats.go, the nats CLI, nats-py): its
    "$JS.API.DIRECT.GET.<stream>." prefix, which the requests of a run of
    them for one stream share; None for anything else (the ``$JS.API.>``
    subscription's RunSpec key)."""
    if reply and not payload and subject.startswith(DIRECT_GET_PREFIX):
        i = subject.find(b".", _DG)
        if i > _DG and i + 1 < len(subject):
            return subject[: i + 1]
    return None


ALWAYS_SYNC_INTERVAL = 120.0  # seconds: nats-server's default sync_interval, kept with sync_interval: always


class JetStream:
    def __init__(self, messaging, store_dir: str | Path | None, account_limits: limits.AccountLimits | None = None,
                 account: str = ACCOUNT, legacy_store: bool = False):
        self.messaging = messaging  # the core, as this account sees it (internal.Messaging)
        self.account = account
        # earlier natslab builds kept the one JetStream account's streams
        # under $G: this account's, when it is the only one with JetStream
        self.legacy_store = legacy_store and account != ACCOUNT
        # the account's limits (its jetstream {} block; all -1 otherwise)
        self.limits = account_limits or limits.AccountLimits()
        self.bytes_limited = limits.is_limited(self)
        self.stored_bytes = {s: limits.StoredBytes(self, s) for s in ("memory", "file")}
        self.logger = messaging.logger
        base = Path(store_dir) if store_dir else Path.cwd()
        self.store_dir = base / "jetstream"
        self.streams_dir = self.store_dir / account / "streams"
        self.streams: dict[str, Stream] = {}
        self.api_total = 0
        self.api_errors = 0
        self._api_sub = None
        self._api = None  # the dispatcher, made by the first request (the api property)
        opts = messaging.options
        self.sync_always = bool(getattr(opts, "sync_always", False))
        interval = getattr(opts, "sync_interval", None)
        # by default a PubAck leaves after the fsync that covers its message
        # (group commit); a sync_interval set in the config (nats-server's
        # own option) makes fsync lazy, every interval, as nats-server's is
        self.group_commit = not self.sync_always and interval is None
        # the sync timer (it also syncs consumers' state and reclaims space):
        # 1 s with group commit; with always nats-server's default 2 m, as
        # it reports it (every write is synced as it is made)
        default = ALWAYS_SYNC_INTERVAL if self.sync_always else 1.0
        self.sync_interval = float(interval) if interval and interval > 0 else default
        self._sync_timer = None
        self._unsynced_dirs: list = []  # made at the start, not yet synced (dirs_durable)
        self.api_level = API_LEVEL  # INFO's api_lvl
        self.domain = getattr(opts, "js_domain", "") or ""
        # jetstream { max_buffered_size }: the most a message may take in a
        # stream's ingest queue (nats-server's default, 128 MiB, when 0)
        self.max_buffered_size = getattr(opts, "js_max_buffered_size", 0) or STREAM_MAX_QUEUE_BYTES
        # a client's message is at most its control line (subject, reply) and max_payload (headers too)
        biggest = getattr(opts, "max_payload", 0) + getattr(opts, "max_control_line", 0)
        self.ingest_limited = self.max_buffered_size < max(biggest, 8 * 1024 * 1024)
        self._domain_mapping = None

    # -- lifecycle -------------------------------------------------------------
    async def start(self) -> None:
        from ..internal import RunSpec

        self.logger.info(f'Store Directory: "{self.store_dir}"')
        self._adopt_legacy_store()
        # the directories a new store needs are made now and made durable by
        # the first file stream's create (its commit point syncs them before
        # its own entry), not before the port serves: three directory syncs
        # that only matter once something is kept in them
        self._unsynced_dirs = make_dirs(self.streams_dir, sync=False)
        self._restore()
        # a consumer's ack subjects ($JS.ACK.<stream>.<consumer>.<...>) carry
        # sequence numbers: matched by stream and consumer, never cached one by one
        self.messaging.route_by_prefix(b"$JS.ACK.", 4)
        self._api_sub = self.messaging.subscribe(
            "$JS.API.>", self._on_api_request, raw=True,
            run=RunSpec(direct_get_key, self._on_direct_gets, (b"",), True))
        if self.domain:
            from .domain import DomainMapping

            self._domain_mapping = DomainMapping(self, self.domain)
            self._domain_mapping.start()
        self._arm_sync_timer()
        self.logger.info("JetStream started: %d streams", len(self.streams))

    @property
    def api(self):
        """The ``$JS.API`` dispatcher (api/dispatch.py), imported and made when first
        asked for: by the first request, not by the start."""
        if self._api is None:
            from .api.dispatch import Api

            self._api = Api(self)
        return self._api

    def not_enabled_answer(self, subject: bytes) -> bytes | None:
        """What a ``$JS.API`` request on ``subject`` from an account without
        JetStream gets (the core asks the server's JetStream): the API's
        answer 10039 "JetStream not enabled for account" in the response
        type of its route; None for silence (direct gets, pulls, unknown
        subjects), as on the real server."""
        from .shapes import api_response

        api = self.api
        tokens = subject[len(b"$JS.API."):].decode("utf-8", "replace").split(".")
        for n in (3, 2, 1):
            route = api.routes.get(".".join(tokens[:n]))
            if route is not None:
                break
        else:
            return None
        rtype = route[1]
        body = {"error": {"code": 503, "err_code": 10039, "description": "JetStream not enabled for account"}}
        body.update(api.error_extras.get(rtype, {}))
        return api_response(rtype, body)

    def _on_api_request(self, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        self.api.on_request(subject, reply, hdr, payload)

    def _on_direct_gets(self, prefix: bytes, items: list) -> None:
        (self._api or self.api).on_direct_gets(prefix, items)  # (a KV get per read: no property call once made)

    def _adopt_legacy_store(self) -> None:
        """Streams an earlier build kept in ``jetstream/$G/streams`` for the
        one JetStream account move to that account's directory (the layout
        nats-server uses), renamed, never copied or removed; with more than
        one JetStream account nobody can say whose they are: left there, and
        said so."""
        legacy = self.store_dir / ACCOUNT / "streams"
        if self.account == ACCOUNT or not legacy.is_dir() or not any(legacy.iterdir()):
            return
        if not self.legacy_store:
            self.logger.warning("%s holds streams of an earlier natslab build that no account serves now "
                                "(move them to %s/<account>/streams)", legacy, self.store_dir)
            return
        if self.streams_dir.exists() and any(self.streams_dir.iterdir()):
            self.logger.warning("%s holds streams of an earlier natslab build; %s has its own: both kept, "
                                "%s not served", legacy, self.streams_dir, legacy)
            return
        make_dirs(self.streams_dir.parent)
        if self.streams_dir.exists():
            self.streams_dir.rmdir()  # empty
        legacy.rename(self.streams_dir)
        self.logger.warning("Moved the streams of account %s from %s to %s", self.account, legacy, self.streams_dir)

    # -- periodic fsync ----------------------------------------------------------
    # The file store hands every record to the OS before acknowledging it and,
    # by default, fsyncs it too (group commit); deletes and everything else
    # are fsynced in flush(): this timer makes a quiet store durable within
    # sync_interval (the real server's default is 2 minutes; ours is 1 s).
    def _arm_sync_timer(self) -> None:
        loop = self.messaging.loop
        if loop is not None:
            self._sync_timer = loop.call_later(self.sync_interval, self._on_sync_timer)

    def _on_sync_timer(self) -> None:
        self._sync_timer = None
        try:
            self.flush_stores()
        finally:
            if self._api_sub is not None:  # still running
                self._arm_sync_timer()

    def commit(self, stream: str | None = None) -> None:
        """Before an answer that no store holds (the API's) leaves: every
        change made so far to ``stream`` (None: to any stream) is as durable
        as a PubAck's (see store/file/store.py)."""
        if stream is not None:
            st = self.streams.get(stream)
            streams = () if st is None else (st,)
        else:
            streams = self.streams.values()
        for st in streams:
            try:
                st.store.commit()
            except Exception:
                self.logger.exception("committing store of stream %s", st.name)

    def flush_stores(self) -> None:
        """fsync (and reclaim space in) every file store, then its
        consumers' delivery state (plain acks: durable within sync_interval)."""
        for st in list(self.streams.values()):
            if st.config["storage"] != "file":
                continue
            try:
                st.store.flush()
            except Exception:
                self.logger.exception("flushing store of stream %s", st.name)
            for c in list(st.consumers.values()):
                try:
                    c.sync_state()
                except Exception:
                    self.logger.exception("syncing consumer %s > %s", st.name, c.name)

    async def stop(self) -> None:
        if self._sync_timer is not None:
            self._sync_timer.cancel()
            self._sync_timer = None
        if self._api_sub is not None:
            self.messaging.unsubscribe(self._api_sub)
            self._api_sub = None
        if self._domain_mapping is not None:
            self._domain_mapping.stop()
            self._domain_mapping = None
        if self.streams:
            from .stream import sourcing

            for st in list(self.streams.values()):
                sourcing.stream_stopped(st)
        for st in list(self.streams.values()):
            for c in list(st.consumers.values()):
                c.save_state(sync=True)
            st.stop()
            try:
                st.save_runtime_state()
            except OSError as e:
                self.logger.error("saving state of stream %s: %s", st.name, e)
            try:
                st.store.close()
            except Exception:
                self.logger.exception("closing store of stream %s", st.name)
        self.streams.clear()

    def _restore(self) -> None:
        for d in sorted(self.streams_dir.iterdir()) if self.streams_dir.exists() else ():
            meta_path = d / STREAM_META
            if not meta_path.exists():
                continue
            from .consumer.consumer import restore_consumers
            from .stream.stream import Stream

            try:
                meta = read_json_checked(meta_path)
                cfg, created = meta["config"], meta["created"]
                store = self._make_store(cfg, d)
                st = Stream(self, cfg, created, store)
                self.streams[cfg["name"]] = st
                st.start()
                restore_consumers(st, d / "obs")
                self.logger.info("Restored stream %s: %d messages", cfg["name"], store.state().messages)
                if getattr(store, "read_only", None):
                    self.logger.error("Stream %s is read-only: %s", cfg["name"], store.read_only)
            except (CorruptStateError, KeyError, ValueError, OSError) as e:
                self.logger.error("Could not restore stream from %s: %s", d, e)
        if not self.streams:
            return
        from .stream import sourcing

        # mirrors and sources once every origin is back
        for st in list(self.streams.values()):
            sourcing.stream_started(self, st)

    # -- stores ------------------------------------------------------------------
    def dirs_durable(self) -> None:
        """Sync the entries of the store's directories made at the start
        (outermost first), once: before anything kept in them counts."""
        dirs, self._unsynced_dirs = self._unsynced_dirs, []
        for d in dirs:
            fsync_dir(d.parent)

    def stream_dir(self, name: str) -> Path:
        return self.streams_dir / name

    def _make_store(self, cfg: dict, directory: Path) -> Store:
        first = cfg.get("first_seq") or 0  # 0: not configured
        if cfg["storage"] == "file":
            from .store.file.store import FileStore

            # FileStore keeps its blocks under directory/msgs/
            _migrate_nested_msgs(directory)
            return FileStore(directory, first_seq=first, sync_always=self.sync_always,
                             group_commit=self.group_commit)
        from .store.memory import MemoryStore

        return MemoryStore(first_seq=first)

    def save_stream_meta(self, st: Stream, cfg: dict | None = None) -> None:
        """Write the stream's config (``cfg``: the one about to be applied), durably."""
        cfg = cfg or st.config
        if cfg["storage"] != "file":
            return  # as on the real server, memory streams do not survive a restart
        write_json_atomic(self.stream_dir(st.name) / STREAM_META, {"config": cfg, "created": st.created})

    # -- streams -----------------------------------------------------------------
    def check_overlap(self, cfg: dict, exclude: str | None = None) -> None:
        from ..subjects import subjects_overlap

        for other in self.streams.values():
            if other.name == exclude:
                continue
            for a in cfg["subjects"]:
                for b in other.config["subjects"]:
                    if subjects_overlap(a, b):
                        raise errors.stream_subject_overlap()

    def create_stream(self, raw: dict) -> tuple[Stream, bool]:
        """STREAM.CREATE: returns (stream, created). Raises ApiError."""
        from . import advisories
        from .stream import sourcing, config as streamconfig, topoconfig
        from .stream.stream import Stream

        # the account's limits, on the request as sent, before its config
        # is checked (nats-server: jsNonClusteredStreamLimitsCheck)
        limits.check_stream_create(self, {
            "name": raw.get("name"), "storage": raw.get("storage") or "file",
            "max_bytes": raw.get("max_bytes") or 0, "max_consumers": raw.get("max_consumers") or 0})
        cfg = streamconfig.normalize(raw)
        limits.check_stream_config(self.limits, cfg)
        streamconfig.check_replicas(cfg)
        cfg = topoconfig.check_streams(cfg, self.streams)
        existing = self.streams.get(cfg["name"])
        if existing is not None:
            if _comparable(existing.config) != _comparable(cfg):
                raise errors.stream_name_exists()
            return existing, True
        limits.check_stream_create(self, cfg)  # and again as configured (addStream)
        self.check_overlap(cfg)
        d = self.stream_dir(cfg["name"])
        adopted = cfg["storage"] == "file" and d.exists()
        if adopted:
            # a directory no stream was restored from (its meta.json garbled
            # or missing, or its store unreadable): as nats-server, the new
            # stream takes over the messages in it; nothing in it is removed
            self._set_aside_meta(d)
        try:
            store = self._make_store(cfg, d)
        except (OSError, ValueError) as e:
            self.logger.error("Could not create stream %s: %s", cfg["name"], e)
            if isinstance(e, ValueError) or e.errno in (errno.EINVAL, errno.ENAMETOOLONG):
                # a name the file system will not take as a directory (a NUL:
                # ValueError from Python, EINVAL from Go) fails here, as on
                # the real server, before anything is written
                raise errors.stream_store_create_failed() from None
            raise errors.stream_create(str(e)) from None
        st = Stream(self, cfg, time.time_ns(), store)
        try:
            self.save_stream_meta(st)
        except OSError as e:
            self.logger.error("Could not create stream %s: %s", cfg["name"], e)
            if adopted:
                store.close()
            else:
                store.delete()  # made just now: holds nothing
            raise errors.stream_create(str(e)) from None
        if cfg["storage"] == "file":
            # The commit point of a create (issue #16): meta.json's bytes and
            # the stream directory's entries (meta.json, msgs/) were synced
            # by save_stream_meta; this syncs the streams directory's entry
            # for it. Nothing before needs a sync (store/file/recovery.py's
            # docstring): a cut before this leaves no stream, or one whose
            # store opens as new.
            self.dirs_durable()
            fsync_dir(self.streams_dir)
            store.dirs_durable()
        if adopted:
            n = store.state().messages
            self.logger.warning("Stream %s took over %d messages found in %s", st.name, n, d)
        self.streams[st.name] = st
        self.stored_bytes[st.config["storage"]].forget()  # it may have taken over messages
        st.start()
        sourcing.stream_started(self, st)
        advisories.stream_action(self, st.name, "create")
        return st, True

    def _set_aside_meta(self, d: Path) -> None:
        """A meta.json that could not be read is kept (renamed), never overwritten."""
        meta = d / STREAM_META
        try:
            read_json_checked(meta, None)
        except (CorruptStateError, OSError) as e:
            aside = meta.with_name(f"{STREAM_META}.corrupt-{time.time_ns()}")
            self.logger.warning("Stream directory %s: %s; kept as %s", d, e, aside.name)
            meta.rename(aside)

    def update_stream(self, raw: dict) -> Stream:
        from .stream import sourcing, config as streamconfig, topoconfig

        name = raw.get("name") if isinstance(raw, dict) else None
        st = self.streams.get(name or "")
        if st is None:
            raise errors.stream_not_found()
        cfg = streamconfig.normalize(raw)
        limits.check_stream_config(self.limits, cfg)
        cfg = topoconfig.check_streams(cfg, self.streams)
        cfg = streamconfig.check_update(st.config, cfg)
        topoconfig.check_update(st.config, cfg)
        limits.check_stream_update(self, st.config, cfg)
        _check_consumer_limits(st, cfg)
        self.check_overlap(cfg, exclude=st.name)
        # on disk before it is applied: what the new limits remove (not
        # synced, made again from them on recovery) never reaches the disk
        # without the config that removed it
        self.save_stream_meta(st, cfg)
        st.update_config(cfg)
        sourcing.stream_updated(st)
        return st

    def delete_stream(self, name: str) -> None:
        st = self.streams.pop(name, None)
        if st is None:
            raise errors.stream_not_found()
        import shutil  # (it imports the compression modules: not at start-up)

        from .stream import sourcing

        for c in list(st.consumers.values()):
            c.delete(notify_stream=False)
        sourcing.stream_stopped(st)
        st.stop()
        try:
            st.store.delete()
        except Exception:
            self.logger.exception("deleting store of stream %s", name)
        shutil.rmtree(self.stream_dir(name), ignore_errors=True)
        fsync_dir(self.streams_dir)  # (a deleted stream must not come back after a power cut)

    def lookup(self, name: str) -> Stream:
        st = self.streams.get(name)
        if st is None:
            raise errors.stream_not_found()
        return st

    # -- account -----------------------------------------------------------------
    def account_info(self) -> dict:
        memory = storage = reserved_storage = reserved_memory = consumers = 0
        for st in self.streams.values():
            b = st.store.state().bytes
            if st.config["storage"] == "memory":
                memory += b
                if st.config["max_bytes"] > 0:
                    reserved_memory += st.config["max_bytes"]
            else:
                storage += b
                if st.config["max_bytes"] > 0:
                    reserved_storage += st.config["max_bytes"]
            consumers += len(st.consumers)
        info = {
            "memory": memory,
            "storage": storage,
            "reserved_memory": reserved_memory,
            "reserved_storage": reserved_storage,
            "streams": len(self.streams),
            "consumers": consumers,
            "limits": self.limits.to_dict(),
        }
        if self.domain:
            info["domain"] = self.domain
        info["api"] = {"level": 5, "total": self.api_total, "errors": self.api_errors}
        return info

    def all_consumers(self) -> list["Consumer"]:
        return [c for st in self.streams.values() for c in st.consumers.values()]


def _migrate_nested_msgs(directory: Path) -> None:
    """Earlier builds put the blocks in ``<stream>/msgs/msgs/``; move them up."""
    nested = directory / "msgs" / "msgs"
    if not nested.is_dir() or any(p.name != "msgs" for p in (directory / "msgs").iterdir()):
        return
    tmp = directory / "msgs.migrate"
    nested.rename(tmp)
    (directory / "msgs").rmdir()
    tmp.rename(directory / "msgs")
    log.info("moved the message blocks of %s out of msgs/msgs/", directory.name)


def _comparable(cfg: dict) -> dict:
    from .shapes import STREAM_CONFIG_FIELDS, ordered

    d = ordered(cfg, STREAM_CONFIG_FIELDS)
    d["metadata"] = {k: v for k, v in (cfg.get("metadata") or {}).items() if not k.startswith("_nats.")}
    return d


def _check_consumer_limits(st: Stream, cfg: dict) -> None:
    """A change of the stream's consumer_limits may not leave a consumer
    above them (nats-server's update: only a limit that is set and changed
    is checked, and each consumer above it is named)."""
    old = st.config.get("consumer_limits") or {}
    new = cfg.get("consumer_limits") or {}
    inactive, ack_pending = new.get("inactive_threshold", 0), new.get("max_ack_pending", 0)
    check_inactive = inactive > 0 and inactive != old.get("inactive_threshold", 0)
    check_pending = ack_pending > 0 and ack_pending != old.get("max_ack_pending", 0)
    if not (check_inactive or check_pending):
        return
    over = [name for name, c in st.consumers.items()
            if (inactive > 0 and c.config.get("inactive_threshold", 0) > inactive)
            or (ack_pending > 0 and c.config.get("max_ack_pending", 0) > ack_pending)]
    if over:
        raise errors.stream_update("change to limits violates consumers: " + ", ".join(over))

