"""NatsClient: connection, JetStream management and the pull hand's acks."""

from __future__ import annotations

import asyncio
import importlib
import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from .kv import KvMixin
from .objects import ObjectsMixin
from .models import (
    AccountUsage,
    ConsumerSummary,
    DeliveryEvent,
    FetchedMessage,
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
ADVISORY = "$JS.EVENT.ADVISORY.CONSUMER"


class NatsError(Exception):
    """A failure in plain words, with the server's codes when there are any."""

    def __init__(self, description: str, code: int = 0, err_code: int = 0):
        super().__init__(description)
        self.description = description
        self.code = code
        self.err_code = err_code

    def __str__(self) -> str:
        return self.description


@dataclass
class ConnectOptions:
    url: str = "nats://127.0.0.1:4222"
    user: str | None = None
    password: str | None = None
    token: str | None = None
    creds: str | None = None
    name: str = "natslab"
    connect_timeout: float = 2.0
    max_reconnect_attempts: int = -1
    reconnect_time_wait: float = 1.0


def _nats_errors():
    from nats.errors import NoRespondersError, TimeoutError as NatsTimeoutError

    return NoRespondersError, NatsTimeoutError


def _plain(exc: BaseException) -> NatsError:
    NoRespondersError, NatsTimeoutError = _nats_errors()
    if isinstance(exc, NatsError):
        return exc
    if isinstance(exc, NoRespondersError):
        return NatsError("no responders: nothing is listening on that subject (is JetStream enabled?)", 503)
    if exc.__class__.__name__ == "DigestMismatchError":
        return NatsError("digest mismatch: the object's SHA-256 does not match what was stored")
    if isinstance(exc, (NatsTimeoutError, asyncio.TimeoutError)):
        return NatsError("timed out waiting for the server", 408)
    desc = getattr(exc, "description", None)
    if desc:
        return NatsError(desc, getattr(exc, "code", 0) or 0, getattr(exc, "err_code", 0) or 0)
    return NatsError(str(exc) or exc.__class__.__name__)


class NatsClient(KvMixin, ObjectsMixin):
    """A connected nats-py client plus typed JetStream management calls."""

    def __init__(self, nc: NATS, options: ConnectOptions):
        self.nc = nc
        self.js = nc.jetstream()
        self.options = options
        self.timeout = 3.0

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

        kw: dict[str, Any] = dict(
            servers=[u.strip() for u in options.url.split(",") if u.strip()],
            name=options.name,
            connect_timeout=options.connect_timeout,
            max_reconnect_attempts=options.max_reconnect_attempts,
            reconnect_time_wait=options.reconnect_time_wait,
            disconnected_cb=on_disconnect or _noop,
            reconnected_cb=on_reconnect or _noop,
            error_cb=on_error or _noop,
        )
        if options.user:
            kw["user"] = options.user
            kw["password"] = options.password or ""
        if options.token:
            kw["token"] = options.token
        if options.creds:
            kw["user_credentials"] = options.creds
        # import off the UI loop: nats-py takes a few hundred ms to import
        nats = await asyncio.to_thread(importlib.import_module, "nats")
        await asyncio.to_thread(importlib.import_module, "nats.js")

        try:
            nc = await nats.connect(**kw)
        except Exception as exc:  # nats-py raises several unrelated types here
            raise NatsError(f"cannot connect to {options.url}: {_plain(exc)}") from exc
        return cls(nc, options)

    async def close(self) -> None:
        if not self.nc.is_closed:
            try:
                await asyncio.wait_for(self.nc.close(), 3)
            except Exception:
                pass

    @property
    def connected(self) -> bool:
        return self.nc.is_connected

    def server_summary(self) -> ServerSummary:
        info = self.nc._server_info or {}
        url = self.nc.connected_url
        client_url = f"{url.scheme}://{url.hostname}:{url.port}" if url else self.options.url
        return ServerSummary(
            server_name=info.get("server_name", ""),
            version=info.get("version", "?"),
            jetstream=bool(info.get("jetstream")),
            client_url=client_url,
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
    async def _api(self, subject: str, payload: dict | None = None) -> dict:
        data = json.dumps(payload).encode() if payload is not None else b""
        try:
            msg = await self.nc.request(f"{API}.{subject}", data, timeout=self.timeout)
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
        return AccountUsage.from_json(await self._api("INFO"))

    # ---- streams ----------------------------------------------------
    async def list_streams(self) -> list[StreamSummary]:
        streams: list[StreamSummary] = []
        offset = 0
        while True:
            resp = await self._api("STREAM.LIST", {"offset": offset})
            page = resp.get("streams") or []
            streams.extend(StreamSummary.from_json(s) for s in page)
            offset += len(page)
            if not page or offset >= resp.get("total", 0):
                return streams

    async def stream_info(self, name: str) -> StreamSummary:
        return StreamSummary.from_json(await self._api(f"STREAM.INFO.{name}"))

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
            resp = await self._api(f"CONSUMER.LIST.{stream}", {"offset": offset})
            page = resp.get("consumers") or []
            consumers.extend(ConsumerSummary.from_json(c) for c in page)
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

    # ---- the pull hand ----------------------------------------------
    async def fetch(self, stream: str, consumer: str, batch: int, timeout: float = 1.0) -> list[FetchedMessage]:
        """Fetch up to ``batch`` messages without acking them."""
        _, NatsTimeoutError = _nats_errors()
        info = await self.consumer_info(stream, consumer)
        if not info.pull:
            raise NatsError(f"{consumer} is a push consumer; the pull hand needs a pull consumer")
        psub = await self.js.pull_subscribe_bind(durable=consumer, stream=stream)
        try:
            try:
                msgs = await psub.fetch(batch=batch, timeout=timeout)
            except (NatsTimeoutError, asyncio.TimeoutError):
                msgs = []
        except Exception as exc:
            raise _plain(exc) from exc
        finally:
            try:
                await psub.unsubscribe()
            except Exception:
                pass
        now = time.monotonic()
        out = []
        for m in msgs:
            md = m.metadata
            out.append(
                FetchedMessage(
                    stream=stream,
                    consumer=consumer,
                    subject=m.subject,
                    stream_seq=md.sequence.stream,
                    consumer_seq=md.sequence.consumer,
                    num_delivered=md.num_delivered,
                    num_pending=md.num_pending,
                    data=m.data or b"",
                    headers=dict(m.headers or {}),
                    ack_wait=info.ack_wait,
                    received_at=now,
                    msg=m,
                )
            )
        return out

    async def ack(self, fm: FetchedMessage) -> None:
        try:
            await fm.msg.ack_sync(timeout=self.timeout)
        except Exception as exc:
            raise _plain(exc) from exc

    async def nak(self, fm: FetchedMessage, delay: float | None = None) -> None:
        await self._fire(fm.msg.nak(delay=delay) if delay else fm.msg.nak())

    async def in_progress(self, fm: FetchedMessage) -> None:
        # in_progress may be sent many times; nats-py allows that.
        await self._fire(fm.msg.in_progress())
        fm.received_at = time.monotonic()

    async def term(self, fm: FetchedMessage) -> None:
        await self._fire(fm.msg.term())

    async def _fire(self, coro: Awaitable[None]) -> None:
        # nak/wpi/term are fire-and-forget in nats-py; flush so the server has
        # them before the next poll reads consumer state.
        try:
            await coro
            await self.nc.flush(timeout=self.timeout)
        except Exception as exc:
            raise _plain(exc) from exc

    # ---- publishing and requests -------------------------------------
    async def publish(self, subject: str, data: bytes, headers: dict[str, str] | None = None) -> None:
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
        hdrs = dict(headers or {})
        if msg_id:
            hdrs["Nats-Msg-Id"] = msg_id
        if expected_last_seq is not None:
            hdrs["Nats-Expected-Last-Sequence"] = str(expected_last_seq)
        if expected_stream:
            hdrs["Nats-Expected-Stream"] = expected_stream
        NoRespondersError, _ = _nats_errors()
        try:
            msg = await self.nc.request(subject, data, timeout=self.timeout, headers=hdrs or None)
        except NoRespondersError as exc:
            raise NatsError("no stream matches this subject (no responders)", 503) from exc
        except Exception as exc:
            raise _plain(exc) from exc
        resp = json.loads(msg.data or b"{}")
        if "error" in resp:
            err = resp["error"]
            raise NatsError(err.get("description", "error"), err.get("code", 0), err.get("err_code", 0))
        return PubAckResult(resp.get("stream", ""), resp.get("seq", 0), bool(resp.get("duplicate")))

    async def request(self, subject: str, data: bytes, headers: dict[str, str] | None, timeout: float):
        """Core request; returns (reply msg, round-trip seconds)."""
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

        async def cb(msg) -> None:
            try:
                await responder.handle(msg, on_request)
            except Exception:
                pass  # a mock must never take the app down

        responder.sub = await self.subscribe(responder.subject, cb)

    async def stop_responder(self, responder) -> None:
        if responder.sub is not None:
            try:
                await responder.sub.unsubscribe()
            except Exception:
                pass
            responder.sub = None

    # ---- redelivery timeline sources ---------------------------------
    async def watch_deliveries(self, callback: Callable[[DeliveryEvent], None]) -> list:
        """Advisories (nak, term, max deliveries) and acks of every program.

        Acks travel on ``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>...``
        as core messages, so subscribing to them shows other workers' acks too.
        """

        async def on_advisory(msg) -> None:
            try:
                data = json.loads(msg.data)
            except ValueError:
                return
            kind = {
                "MAX_DELIVERIES": "max_deliveries",
                "MSG_NAKED": "nak",
                "MSG_TERMINATED": "term",
            }.get(msg.subject.split(".")[4], "")
            if kind:
                callback(
                    DeliveryEvent(
                        data.get("stream", ""), data.get("consumer", ""), data.get("stream_seq", 0),
                        kind, data.get("deliveries", 0), time.monotonic(), "advisory",
                    )
                )

        async def on_ack(msg) -> None:
            parts = msg.subject.split(".")
            if len(parts) < 7:
                return
            # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>... (v1 layout);
            # v2 adds domain and account hash before stream.
            if len(parts) >= 12:
                parts = parts[:2] + parts[4:]
            body = (msg.data or b"").strip()
            kind = {b"+ACK": "ack", b"": "ack", b"+WPI": "progress", b"+TERM": "term"}.get(body)
            if kind is None and body.startswith(b"-NAK"):
                kind = "nak"
            if kind is None and body.startswith(b"+TERM"):
                kind = "term"
            if kind is None:
                return
            try:
                callback(
                    DeliveryEvent(parts[2], parts[3], int(parts[5]), kind, int(parts[4]), time.monotonic(), "ack-tap")
                )
            except ValueError:
                return

        subs = []
        for suffix in ("MAX_DELIVERIES", "MSG_NAKED", "MSG_TERMINATED"):
            subs.append(await self.subscribe(f"{ADVISORY}.{suffix}.>", on_advisory))
        subs.append(await self.subscribe("$JS.ACK.>", on_ack))
        return subs


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
