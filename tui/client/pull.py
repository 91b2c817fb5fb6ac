"""The pull hand's side of the client: fetch without acking, then ack, nak,
in progress or term by hand; and the sources of the redelivery timeline."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Awaitable, Callable

from .errors import NatsError, _nats_errors, _plain, quietly
from .models import DeliveryEvent, FetchedMessage

ADVISORY = "$JS.EVENT.ADVISORY.CONSUMER"
log = logging.getLogger(__name__)


class PullMixin:
    """Mixed into NatsClient (``self.js``, ``self.nc``, ``self.consumer_info`` ...)."""

    # ---- the pull hand ----------------------------------------------
    async def fetch(self, stream: str, consumer: str, batch: int, timeout: float = 1.0) -> list[FetchedMessage]:
        """Fetch up to ``batch`` messages without acking them."""
        self._writing("fetching (it moves the consumer's delivered sequence)")
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
            await quietly(psub.unsubscribe(), "unsubscribe the pull hand's fetch")
        now = time.monotonic()
        born = info.born_at(now)
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
                    consumer_created=info.created,
                    consumer_born=born,
                )
            )
        return out

    async def ack(self, fm: FetchedMessage) -> None:
        self._writing("acking")
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
        if self.read_only:
            coro.close()  # never sent
            self._writing("acting on a message")
        try:
            await coro
            await self.nc.flush(timeout=self.timeout)
        except Exception as exc:
            raise _plain(exc) from exc

    # ---- redelivery timeline sources ---------------------------------
    async def watch_deliveries(self, callback: Callable[[DeliveryEvent], None]) -> list:
        """Advisories (nak, term, max deliveries), acks and pulled deliveries of every program.

        Acks travel on ``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>...``
        as core messages, so subscribing to them shows other workers' acks too.
        A pull consumer hands each message to the puller's reply inbox with that
        ack subject as its reply, so a tap on ``_INBOX.>`` sees other programs'
        deliveries the moment they happen (the app's own inbox is skipped: its
        fetches are reported by the pull hand itself). That tap has a connection
        of its own: on the app's connection it would match the app's own reply
        inboxes too, and a server hands a request's no-responders status to only
        one of the requester's matching subscriptions (nats-server's
        subForReply), so the app's requests would time out instead of saying
        "no responders". Without that connection (refused, say) the rest works.
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
            delay = nak_delay(body) if kind == "nak" else None
            try:
                callback(
                    DeliveryEvent(parts[2], parts[3], int(parts[5]), kind, int(parts[4]), time.monotonic(), "ack-tap",
                                  delay)
                )
            except ValueError:
                return

        own = self.inbox_prefix + "."

        async def on_inbox(msg) -> None:
            reply = msg.reply or ""
            if not reply.startswith("$JS.ACK.") or msg.subject.startswith(own):
                return  # not a JetStream delivery, or the app's own fetch
            parts = reply.split(".")
            if len(parts) >= 12:
                parts = parts[:2] + parts[4:]
            if len(parts) < 7:
                return
            try:
                callback(DeliveryEvent(parts[2], parts[3], int(parts[5]), "deliver", int(parts[4]), time.monotonic(),
                                       "inbox-tap"))
            except ValueError:
                return

        subs = []
        for suffix in ("MAX_DELIVERIES", "MSG_NAKED", "MSG_TERMINATED"):
            subs.append(await self.subscribe(f"{ADVISORY}.{suffix}.>", on_advisory))
        subs.append(await self.subscribe("$JS.ACK.>", on_ack))
        await self._close_delivery_tap()  # a second watch (a new pull hand) replaces the first
        from dataclasses import replace

        try:
            tap = await type(self).connect(replace(self.options, name=f"{self.options.name} delivery tap"))
        except NatsError as exc:
            log.warning("other programs' deliveries are not watched: %s", exc)
            return subs
        self._delivery_tap = tap
        subs.append(await tap.subscribe("_INBOX.>", on_inbox))
        return subs

    async def _close_delivery_tap(self) -> None:
        tap = getattr(self, "_delivery_tap", None)
        self._delivery_tap = None
        if tap is not None:
            await tap.close()


def nak_delay(body: bytes) -> float | None:
    """The delay of ``-NAK {"delay": <ns>}`` (nats-py, nats.go) or ``-NAK 5s``, in seconds; None without one."""
    arg = body[len(b"-NAK"):].strip()
    if not arg:
        return None
    if arg.startswith(b"{"):
        try:
            ns = json.loads(arg).get("delay")
        except (ValueError, AttributeError):
            return None
        return ns / 1e9 if isinstance(ns, (int, float)) and ns > 0 else None
    from ..format import parse_duration

    try:
        return parse_duration(arg.decode(errors="replace")) or None
    except ValueError:
        return None


