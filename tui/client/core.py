"""NatsClient: connection, JetStream management and the pull hand's acks."""

from __future__ import annotations

import asyncio
import importlib
import json
import logging
import secrets
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from .errors import NatsError, _nats_errors, _plain, quietly
from .options import ConnectOptions
from .kv import KvMixin
from .pull import PullMixin
from .publishing import PublishFeaturesMixin
from .objects import ObjectsMixin
from .trace import TraceMixin
from .models import (
    AccountUsage,
    ConsumerSummary,
    PubAckResult,
    ServerSummary,
    StoredMessage,
    StreamSummary,
)

if TYPE_CHECKING:
    from nats.aio.client import Client as NATS

# nats-py is imported on first use, not at start-up: the first frame paints
# while it loads (launch-to-first-paint is a measured target).

API = "$JS.API"
SERVER_ERRORS_KEPT = 20
log = logging.getLogger(__name__)
# What --read-only still asks the JetStream API: reads, never a change.
READ_ONLY_API = ("INFO", "STREAM.LIST", "STREAM.NAMES", "STREAM.INFO.", "STREAM.MSG.GET.",
                 "CONSUMER.LIST.", "CONSUMER.NAMES.", "CONSUMER.INFO.")


class NatsClient(PullMixin, KvMixin, ObjectsMixin, TraceMixin, PublishFeaturesMixin):
    """A connected nats-py client plus typed JetStream management calls."""

    def __init__(self, nc: NATS, options: ConnectOptions, inbox_prefix: str = "_INBOX",
                 server_errors: deque | None = None):
        self.nc = nc
        self.js = nc.jetstream()
        self.options = options
        self.timeout = 3.0
        # every reply, watch and fetch inbox of this connection starts with it,
        # so the app can tell its own traffic from other programs'
        self.inbox_prefix = inbox_prefix
        # the server's recent -ERRs to this connection (a denied publish is
        # only ever said this way): (monotonic time, text), newest last
        self.server_errors: deque = server_errors if server_errors is not None else deque(maxlen=SERVER_ERRORS_KEPT)
        # the streams the app has put consumers of its own on: the ordered consumers
        # nats-py makes for the KV and Objects panes' watches, object lists and gets
        # (own_consumers counts them out of the header's figure), and how many of
        # its watches are running on each
        self.own_consumer_streams: set[str] = set()
        self._own_watches: dict[str, int] = {}

    # ---- connection -------------------------------------------------
    @classmethod
    async def connect(
        cls,
        options: ConnectOptions,
        *,
        on_disconnect: Callable[[], Awaitable[None]] | None = None,
        on_reconnect: Callable[[], Awaitable[None]] | None = None,
        on_error: Callable[[Exception], Awaitable[None]] | None = None,
    ) -> "NatsClient":
        async def _noop(*_a: Any) -> None:
            return None

        inbox_prefix = f"_INBOX.natslab_{secrets.token_hex(4)}"
        server_errors: deque = deque(maxlen=SERVER_ERRORS_KEPT)

        async def error_cb(exc: Exception) -> None:
            server_errors.append((time.monotonic(), str(exc)))
            if on_error is not None:
                await on_error(exc)

        kw: dict[str, Any] = dict(
            servers=[u.strip() for u in options.url.split(",") if u.strip()],
            inbox_prefix=inbox_prefix,
            name=options.name,
            connect_timeout=options.connect_timeout,
            max_reconnect_attempts=options.max_reconnect_attempts,
            reconnect_time_wait=options.reconnect_time_wait,
            disconnected_cb=on_disconnect or _noop,
            reconnected_cb=on_reconnect or _noop,
            error_cb=error_cb,
        )
        if options.user:
            kw["user"] = options.user
            kw["password"] = options.password or ""
        if options.token:
            kw["token"] = options.token
        if options.creds:
            kw["user_credentials"] = options.creds
        if options.nkey:
            kw["nkeys_seed"] = options.nkey
        try:
            tls = options.ssl_context()
        except ValueError as exc:
            raise NatsError(f"cannot connect to {options.url}: {exc}") from exc
        if tls is not None:
            kw["tls"] = tls
            kw["tls_handshake_first"] = options.tls_first
        # import off the UI loop: nats-py takes a few hundred ms to import
        nats = await asyncio.to_thread(importlib.import_module, "nats")
        await asyncio.to_thread(importlib.import_module, "nats.js")

        try:
            nc = await nats.connect(**kw)
        except Exception as exc:  # nats-py raises several unrelated types here
            raise NatsError(f"cannot connect to {options.url}: {_plain(exc)}") from exc
        return cls(nc, options, inbox_prefix, server_errors)

    async def close(self) -> None:
        await self._close_delivery_tap()  # the pull hand's second connection (pull.py)
        if not self.nc.is_closed:
            await quietly(asyncio.wait_for(self.nc.close(), 3), "close the connection")

    @property
    def connected(self) -> bool:
        return self.nc.is_connected

    @property
    def read_only(self) -> bool:
        return self.options.read_only

    def _writing(self, what: str) -> None:
        """The one gate of --read-only: every call that changes something passes here."""
        if self.options.read_only:
            raise NatsError(f"read-only: {what} is not allowed (natslab was started with --read-only)")

    @property
    def client_id(self) -> int | None:
        """This connection's cid on the server it is connected to (from INFO)."""
        return self.nc.client_id

    @property
    def server_id(self) -> str:
        return (self.nc._server_info or {}).get("server_id", "")

    def is_own_traffic(self, subject: str, reply: str, data: bytes) -> bool:
        """A message the app itself caused: its $JS.API requests (reply to its
        inbox), the answers to them and its watches and fetches (to its inbox),
        and the server's audit advisory of each of its API calls."""
        prefix = self.inbox_prefix + "."
        if subject.startswith(prefix) or (reply or "").startswith(prefix):
            return True
        if subject == "$JS.EVENT.ADVISORY.API" and self.client_id is not None:
            try:
                client = json.loads(data).get("client") or {}
            except (ValueError, AttributeError):
                return False
            return client.get("id") == self.client_id
        return False

    def server_summary(self) -> ServerSummary:
        info = self.nc._server_info or {}
        url = self.nc.connected_url
        client_url = f"{url.scheme}://{url.hostname}:{url.port}" if url else self.options.url
        return ServerSummary(
            server_name=info.get("server_name", ""),
            version=info.get("version", "?"),
            jetstream=bool(info.get("jetstream")),
            client_url=client_url,
            cluster=info.get("cluster", "") or "",
            domain=info.get("domain", "") or "",
        )

    async def _call(self, awaitable):
        """Await a nats-py call, turning its exceptions into NatsError."""
        try:
            return await awaitable
        except NatsError:
            raise
        except Exception as exc:
            raise _plain(exc) from exc

    # ---- raw API ----------------------------------------------------
    async def _api(self, subject: str, payload: dict | None = None, timeout: float | None = None) -> dict:
        if not subject.startswith(READ_ONLY_API):
            self._writing(f"$JS.API.{subject}")
        data = json.dumps(payload).encode() if payload is not None else b""
        try:
            msg = await self.nc.request(f"{API}.{subject}", data, timeout=timeout or self.timeout)
        except Exception as exc:
            raise _plain(exc) from exc
        try:
            resp = json.loads(msg.data)
        except ValueError as exc:
            raise NatsError(f"server sent a reply that is not JSON: {msg.data[:80]!r}") from exc
        err = resp.get("error")
        if err:
            raise NatsError(err.get("description", "unknown error"), err.get("code", 0), err.get("err_code", 0))
        return resp

    # ---- account ----------------------------------------------------
    async def account_usage(self) -> AccountUsage:
        """The account's usage, its consumers the user's: the app's own are counted out."""
        usage = AccountUsage.from_json(await self._api("INFO"))
        if not self.own_consumer_streams:
            return usage
        return replace(usage, consumers=max(0, usage.consumers - await self.own_consumers()))

    @contextmanager
    def own_consumer(self, stream: str):
        """Around a watch of the app's own on ``stream`` (it holds a consumer while it runs)."""
        self.own_consumer_streams.add(stream)
        self._own_watches[stream] = self._own_watches.get(stream, 0) + 1
        try:
            yield
        finally:
            self._own_watches[stream] -= 1

    async def own_consumers(self) -> int:
        """How many consumers the app has of its own now. nats-py's ordered
        consumers have names nobody chooses, but each delivers to an inbox of
        this connection (``inbox_prefix``), which no other program's does; one
        that stopped stays until the server drops it (5 s), and is counted till then."""
        mine = 0
        for stream in sorted(self.own_consumer_streams):
            try:
                found = await self._own_on(stream)
            except NatsError:
                found = 0  # the stream went (or the list failed): nothing of ours to count there
            if not found and not self._own_watches.get(stream):
                self.own_consumer_streams.discard(stream)
            mine += found
        return mine

    def _is_own(self, consumer: dict) -> bool:
        """A consumer of the app's own: it delivers to an inbox of this connection."""
        return str((consumer.get("config") or {}).get("deliver_subject") or "").startswith(self.inbox_prefix + ".")

    async def _own_on(self, stream: str) -> int:
        found, offset = 0, 0
        while True:
            resp = await self._api(f"CONSUMER.LIST.{stream}", {"offset": offset}, timeout=self.LIST_TIMEOUT)
            page = resp.get("consumers") or []
            found += sum(1 for c in page if self._is_own(c))
            offset += len(page)
            if not page or offset >= resp.get("total", 0):
                return found

    # ---- streams ----------------------------------------------------
    # On a cluster the meta leader gathers a list from every stream's leader
    # and waits a few seconds for those that do not answer (a node is down)
    # before it names them as missing: a list may take that long.
    LIST_TIMEOUT = 8.0

    async def list_streams(self) -> list[StreamSummary]:
        streams: list[StreamSummary] = []
        unreachable: dict[str, str] = {}
        offset = 0
        while True:
            resp = await self._api("STREAM.LIST", {"offset": offset}, timeout=self.LIST_TIMEOUT)
            page = resp.get("streams") or []
            streams.extend(StreamSummary.from_json(s) for s in page)
            unreachable.update({name: "no answer from its leader" for name in resp.get("missing") or []})
            unreachable.update(resp.get("offline") or {})
            offset += len(page)
            if not page or offset >= resp.get("total", 0):
                listed = {s.name for s in streams}
                return [await self._users_count(s) for s in streams] + [
                    StreamSummary.unreachable(name, why) for name, why in unreachable.items() if name not in listed]

    async def stream_info(self, name: str) -> StreamSummary:
        return await self._users_count(StreamSummary.from_json(await self._api(f"STREAM.INFO.{name}")))

    async def _users_count(self, stream: StreamSummary) -> StreamSummary:
        """The stream's consumer count without the app's own (a KV or object watch)."""
        if stream.name not in self.own_consumer_streams or not stream.consumer_count:
            return stream
        try:
            mine = await self._own_on(stream.name)
        except NatsError:
            return stream
        return replace(stream, consumer_count=max(0, stream.consumer_count - mine)) if mine else stream

    async def create_stream(self, config: dict) -> StreamSummary:
        return StreamSummary.from_json(await self._api(f"STREAM.CREATE.{config['name']}", config))

    async def update_stream(self, config: dict) -> StreamSummary:
        return StreamSummary.from_json(await self._api(f"STREAM.UPDATE.{config['name']}", config))

    async def delete_stream(self, name: str) -> None:
        await self._api(f"STREAM.DELETE.{name}")

    async def purge_stream(self, name: str, subject: str | None = None, keep: int | None = None) -> int:
        req: dict[str, Any] = {}
        if subject:
            req["filter"] = subject
        if keep is not None:
            req["keep"] = keep
        resp = await self._api(f"STREAM.PURGE.{name}", req)
        return resp.get("purged", 0)

    async def get_message(self, stream: str, seq: int, subject: str = ">") -> StoredMessage | None:
        """The first message at or after ``seq`` on ``subject`` (message get; never a consumer)."""
        try:
            resp = await self._api(f"STREAM.MSG.GET.{stream}", {"seq": seq, "next_by_subj": subject})
        except NatsError as exc:
            if exc.code == 404:
                return None
            raise
        return _stored(stream, resp["message"])

    async def get_messages(self, stream: str, start_seq: int, count: int) -> list[StoredMessage]:
        out: list[StoredMessage] = []
        seq = max(1, start_seq)
        while len(out) < count:
            msg = await self.get_message(stream, seq)
            if msg is None:
                break
            out.append(msg)
            seq = msg.seq + 1
        return out

    # ---- consumers --------------------------------------------------
    async def list_consumers(self, stream: str) -> list[ConsumerSummary]:
        consumers: list[ConsumerSummary] = []
        offset = 0
        while True:
            resp = await self._api(f"CONSUMER.LIST.{stream}", {"offset": offset}, timeout=self.LIST_TIMEOUT)
            page = resp.get("consumers") or []
            consumers.extend(ConsumerSummary.from_json(c) for c in page if not self._is_own(c))
            offset += len(page)
            if not page or offset >= resp.get("total", 0):
                return consumers

    async def consumer_info(self, stream: str, name: str) -> ConsumerSummary:
        return ConsumerSummary.from_json(await self._api(f"CONSUMER.INFO.{stream}.{name}"))

    async def create_consumer(self, stream: str, config: dict, action: str = "") -> ConsumerSummary:
        name = config.get("durable_name") or config.get("name")
        req: dict[str, Any] = {"stream_name": stream, "config": config}
        if action:
            req["action"] = action
        subject = f"CONSUMER.CREATE.{stream}.{name}" if name else f"CONSUMER.CREATE.{stream}"
        return ConsumerSummary.from_json(await self._api(subject, req))

    async def delete_consumer(self, stream: str, name: str) -> None:
        await self._api(f"CONSUMER.DELETE.{stream}.{name}")

    async def pause_consumer(self, stream: str, name: str, until: datetime | None) -> bool:
        """Pause until ``until`` (UTC); ``None`` resumes. Returns the paused flag."""
        when = until or datetime(1970, 1, 1, tzinfo=timezone.utc)
        resp = await self._api(
            f"CONSUMER.PAUSE.{stream}.{name}",
            {"pause_until": when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")},
        )
        return bool(resp.get("paused"))

    # ---- publishing and requests -------------------------------------
    async def publish(self, subject: str, data: bytes, headers: dict[str, str] | None = None) -> None:
        self._writing("publishing")
        try:
            await self.nc.publish(subject, data, headers=headers or None)
            await self.nc.flush(timeout=self.timeout)
        except Exception as exc:
            raise _plain(exc) from exc

    async def js_publish(
        self,
        subject: str,
        data: bytes,
        headers: dict[str, str] | None = None,
        *,
        msg_id: str | None = None,
        expected_last_seq: int | None = None,
        expected_stream: str | None = None,
    ) -> PubAckResult:
        self._writing("publishing")
        hdrs = dict(headers or {})
        if msg_id:
            hdrs["Nats-Msg-Id"] = msg_id
        if expected_last_seq is not None:
            hdrs["Nats-Expected-Last-Sequence"] = str(expected_last_seq)
        if expected_stream:
            hdrs["Nats-Expected-Stream"] = expected_stream
        resp = await self.pub_ack_json(subject, data, hdrs)
        return PubAckResult(resp.get("stream", ""), resp.get("seq", 0), bool(resp.get("duplicate")))

    async def request(self, subject: str, data: bytes, headers: dict[str, str] | None, timeout: float):
        """Core request; returns (reply msg, round-trip seconds)."""
        self._writing("sending a request (its responder may change something)")
        NoRespondersError, NatsTimeoutError = _nats_errors()
        start = time.perf_counter()
        try:
            msg = await self.nc.request(subject, data, timeout=timeout, headers=headers or None)
        except NoRespondersError as exc:
            raise NatsError("no responders: nothing is subscribed to that subject", 503) from exc
        except (NatsTimeoutError, asyncio.TimeoutError) as exc:
            raise NatsError(f"timed out after {timeout:g}s: a responder exists but did not answer", 408) from exc
        except Exception as exc:
            raise _plain(exc) from exc
        return msg, time.perf_counter() - start

    async def subscribe(self, subject: str, callback: Callable[[Any], Awaitable[None]], queue: str = ""):
        try:
            sub = await self.nc.subscribe(subject, queue=queue, cb=callback)
            await self.nc.flush(timeout=self.timeout)
        except Exception as exc:
            raise _plain(exc) from exc
        return sub

    async def start_responder(self, responder, on_request) -> None:
        """Subscribe a mock responder (see ``responders``); ``on_request`` only posts a message."""
        self._writing("answering requests with a mock responder")

        async def cb(msg) -> None:
            try:
                await responder.handle(msg, on_request)
            except Exception as exc:  # a mock must never take the app down; it says why in the log
                log.warning("mock responder on %s failed: %s", responder.subject, exc)

        responder.sub = await self.subscribe(responder.subject, cb)

    async def stop_responder(self, responder) -> None:
        if responder.sub is not None:
            await quietly(responder.sub.unsubscribe(), f"stop the mock on {responder.subject}")
            responder.sub = None

def _stored(stream: str, m: dict) -> StoredMessage:
    import base64

    data = base64.b64decode(m.get("data") or b"")
    headers: dict[str, str] = {}
    if m.get("hdrs"):
        raw = base64.b64decode(m["hdrs"]).decode(errors="replace")
        for line in raw.split("\r\n")[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip()] = v.strip()
    when = None
    if m.get("time"):
        try:
            when = datetime.fromisoformat(m["time"][:26].rstrip("Z") + "+00:00")
        except ValueError:
            when = None
    return StoredMessage(stream, m.get("seq", 0), m.get("subject", ""), data, headers, when)
