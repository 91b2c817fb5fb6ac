"""Where did my message go: publish with a trace destination and read back
what the servers say became of it.

nats-server 2.11+ (and natslab's broker) route a message whose headers carry
``Nats-Trace-Dest: <subject>`` as usual and then publish to that subject one
JSON event per server the message passed through: where it came in ("in",
with the publish's permission error if it was refused), a subject mapping
("sm"), stream exports and service imports ("se", "si"), the stream that took
it ("js": stored, no interest, or the store's error) and every subscription,
route, gateway or leaf node it went out to ("eg"). With ``Nats-Trace-Only``
the message goes nowhere and only the events come back.

An event names how many hops it sent the message on (``hops``); each server
behind one of those hops sends its own event, whose request headers carry the
hop id (``Nats-Trace-Hop``, "1", "1.2" ...) that the sending egress names.
Events are gathered until the first server's and every announced hop's have
come (in any order), or the time is up.

The events say nothing about consumers or sequences, so this adds what the
API knows: the PubAck of a JetStream publish (the stored sequence), and for
each stream that took the message its config and the consumers whose filters
cover the subject.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

from .errors import NatsError, _nats_errors, _plain, quietly
from .models import ConsumerSummary, PubAckResult, StreamSummary
from .topology import subject_matches

TRACE_DEST = "Nats-Trace-Dest"
TRACE_ONLY = "Nats-Trace-Only"
TRACE_HOP = "Nats-Trace-Hop"
# nats-server's ClientKind: who a message came from or went to
KINDS = {0: "client", 1: "route", 2: "gateway", 3: "system", 4: "leaf node", 5: "JetStream", 6: "account"}
# The first server that can answer a trace; an older one would deliver a
# "trace only" message for real, so it is not asked at all.
MIN_VERSION = (2, 11)


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for token in version.split("-", 1)[0].split("."):
        if not token.isdigit():
            break
        parts.append(int(token))
    return tuple(parts)


@dataclass(frozen=True)
class Egress:
    """One place a server sent the message: a subscription of a client, or a
    route / gateway / leaf node to the next server (``hop``)."""

    kind: int
    cid: int
    name: str = ""
    subscription: str = ""
    queue: str = ""
    account: str = ""
    hop: str = ""
    error: str = ""

    @property
    def kind_name(self) -> str:
        return KINDS.get(self.kind, f"kind {self.kind}")

    @property
    def to_server(self) -> bool:
        return self.kind in (1, 2, 4)

    @classmethod
    def from_json(cls, e: dict) -> "Egress":
        return cls(e.get("kind", 0), e.get("cid", 0), e.get("name", ""), e.get("sub", ""), e.get("queue", ""),
                   e.get("acc", ""), e.get("hop", ""), e.get("error", ""))


@dataclass(frozen=True)
class StreamHit:
    """A stream the message was offered to (the "js" event)."""

    stream: str
    subject: str = ""  # the subject it is stored under (after the stream's transform)
    no_interest: bool = False  # an interest or work-queue stream nobody wants it for
    error: str = ""

    @classmethod
    def from_json(cls, e: dict) -> "StreamHit":
        return cls(e.get("stream", ""), e.get("subject", ""), bool(e.get("nointerest")), e.get("error", ""))


@dataclass
class ServerHop:
    """One server's trace event."""

    server: str  # its name
    server_id: str
    hop_id: str  # "" on the server the message was published to
    hops: int  # how many servers it sent the message on to
    account: str
    subject: str
    from_kind: int
    from_cid: int
    from_name: str
    refused: str = ""  # the ingress error: a publish permission violation, say
    mapped_to: str = ""
    exports: list[tuple[str, str]] = field(default_factory=list)  # (account, subject)
    imports: list[tuple[str, str, str]] = field(default_factory=list)  # (account, from, to)
    streams: list[StreamHit] = field(default_factory=list)
    egress: list[Egress] = field(default_factory=list)

    @property
    def deliveries(self) -> list[Egress]:
        return [e for e in self.egress if not e.to_server]

    @classmethod
    def from_json(cls, event: dict) -> "ServerHop":
        server = event.get("server") or {}
        header = (event.get("request") or {}).get("header") or {}
        hop = cls(server.get("name", ""), server.get("id", ""), (header.get(TRACE_HOP) or [""])[0],
                  int(event.get("hops") or 0), "", "", 0, 0, "")
        for e in event.get("events") or []:
            kind = e.get("type")
            if kind == "in":
                hop.account, hop.subject = e.get("acc", ""), e.get("subj", "")
                hop.from_kind, hop.from_cid, hop.from_name = e.get("kind", 0), e.get("cid", 0), e.get("name", "")
                hop.refused = e.get("error", "")
            elif kind == "sm":
                hop.mapped_to = e.get("to", "")
            elif kind == "se":
                hop.exports.append((e.get("acc", ""), e.get("to", "")))
            elif kind == "si":
                hop.imports.append((e.get("acc", ""), e.get("from", ""), e.get("to", "")))
            elif kind == "js":
                hop.streams.append(StreamHit.from_json(e))
            elif kind == "eg":
                hop.egress.append(Egress.from_json(e))
        return hop


@dataclass(frozen=True)
class ConsumerMatch:
    """A consumer of a stream that took the message, and whether its filter covers it."""

    name: str
    filters: tuple[str, ...]
    covers: bool
    pull: bool
    paused: bool
    deliver_subject: str = ""


@dataclass
class MessageTrace:
    subject: str
    trace_only: bool
    jetstream: bool
    hops: list[ServerHop]  # in arrival order; the origin first when it came
    expected: int  # events announced: the first server's, and one per hop any server announced
    pub_ack: PubAckResult | None = None
    publish_error: NatsError | None = None
    streams: dict[str, StreamSummary] = field(default_factory=dict)
    consumers: dict[str, list[ConsumerMatch]] = field(default_factory=dict)
    # a core publish has no PubAck: the stream's last message on the subject, read just after
    last_on_subject: dict[str, int] = field(default_factory=dict)
    lookup_errors: list[str] = field(default_factory=list)  # a stream or consumer list the API refused
    server_errors: list[str] = field(default_factory=list)  # -ERRs the connection got meanwhile
    elapsed: float = 0.0

    @property
    def origin(self) -> ServerHop | None:
        return next((h for h in self.hops if not h.hop_id), self.hops[0] if self.hops else None)

    @property
    def complete(self) -> bool:
        """The first server's event came and every hop it (or a later one) announced answered:
        events come in any order (the first server sends its own last when a stream is involved)."""
        return any(not h.hop_id for h in self.hops) and len(self.hops) >= self.expected

    def next_hops(self, egress: Egress) -> list[ServerHop]:
        """The event of the server an egress to a route / gateway / leaf went to."""
        return [h for h in self.hops if egress.hop and h.hop_id == egress.hop]

    def all_deliveries(self) -> list[tuple[ServerHop, Egress]]:
        return [(h, e) for h in self.hops for e in h.deliveries]

    def all_streams(self) -> list[tuple[ServerHop, StreamHit]]:
        return [(h, s) for h in self.hops for s in h.streams]

    @property
    def refused(self) -> str:
        """Why the server refused the publish itself (a permission), if it did."""
        if self.origin is not None and self.origin.refused:
            return self.origin.refused
        denied = [e for e in self.server_errors if _denied(e, self.subject)]
        return denied[0].removeprefix("nats: ") if denied else ""


def _denied(error: str, subject: str) -> bool:
    """The -ERR of a publish to ``subject`` the permissions refused (not another pane's)."""
    return f'permissions violation for publish to "{subject}"'.lower() in error.lower()


class TraceMixin:
    """Mixed into NatsClient (``self.nc``, ``self.js_publish``, ``self.list_consumers`` ...)."""

    TRACE_WAIT = 2.0  # for the events of every hop; a single server answers in milliseconds

    def trace_supported(self) -> str | None:
        """None, or why this server cannot trace (too old: it would deliver a trace-only message)."""
        version = (self.nc._server_info or {}).get("version", "")
        if version_tuple(version) < MIN_VERSION:
            return f"the server is {version or 'of unknown version'}: message tracing needs nats-server 2.11 or later"
        return None

    async def trace_message(self, subject: str, data: bytes, headers: dict[str, str] | None = None, *,
                            trace_only: bool, jetstream: bool, wait: float | None = None) -> MessageTrace:
        """Publish ``data`` with a trace destination (and ``Nats-Trace-Only`` when
        ``trace_only``: nothing delivered or stored) and gather what every
        server says; a JetStream publish that is delivered also waits for its PubAck."""
        if not trace_only:
            self._writing("publishing")
        why = self.trace_supported()
        if why is not None:
            raise NatsError(why)
        wait = self.TRACE_WAIT if wait is None else wait
        events: asyncio.Queue = asyncio.Queue()

        async def got(msg) -> None:
            events.put_nowait(msg.data)

        inbox = self.nc.new_inbox()
        try:
            sub = await self.nc.subscribe(inbox, cb=got)
            await self.nc.flush(timeout=self.timeout)
        except Exception as exc:
            raise _plain(exc) from exc
        hdrs = {k: v for k, v in (headers or {}).items() if k not in (TRACE_DEST, TRACE_ONLY)}
        hdrs[TRACE_DEST] = inbox
        if trace_only:
            hdrs[TRACE_ONLY] = "true"
        start = time.monotonic()
        trace = MessageTrace(subject, trace_only, jetstream, [], 1)
        acked = None
        try:
            if jetstream and not trace_only:
                acked = asyncio.ensure_future(self.js_publish(subject, data, hdrs))
            else:
                try:
                    await self.nc.publish(subject, data, headers=hdrs)
                    await self.nc.flush(timeout=self.timeout)
                except Exception as exc:
                    raise _plain(exc) from exc
            await self._gather_events(events, trace, start, start + wait)
            if acked is not None:
                try:
                    trace.pub_ack = await acked
                except NatsError as exc:
                    trace.publish_error = exc
        finally:
            if acked is not None and not acked.done():
                acked.cancel()
            await quietly(sub.unsubscribe(), "unsubscribe the trace inbox")
        trace.elapsed = time.monotonic() - start
        trace.server_errors = self._errors_since(start)
        await self._trace_streams(trace)
        return trace

    def _errors_since(self, start: float) -> list[str]:
        return [text for when, text in list(self.server_errors) if when >= start]

    async def _gather_events(self, events: asyncio.Queue, trace: MessageTrace, start: float, deadline: float) -> None:
        while not trace.complete:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                data = await asyncio.wait_for(events.get(), min(left, 0.1))
            except asyncio.TimeoutError:
                # a server that refuses the publish may say so only with -ERR
                # (nats-server also sends the event; natslab's broker does not)
                if not trace.hops and any(_denied(e, trace.subject) for e in self._errors_since(start)):
                    return
                continue
            try:
                event = json.loads(data)
            except ValueError:
                trace.lookup_errors.append(f"a trace event that is not JSON: {data[:60]!r}")
                continue
            hop = ServerHop.from_json(event)
            trace.hops.append(hop)
            trace.expected += hop.hops

    async def _trace_streams(self, trace: MessageTrace) -> None:
        """Each stream that took (or would take) the message: its config, and
        the consumers whose filters cover the stored subject."""
        for _, hit in trace.all_streams():
            if hit.stream in trace.streams:
                continue
            try:
                trace.streams[hit.stream] = await self.stream_info(hit.stream)
                consumers = await self.list_consumers(hit.stream)
            except NatsError as exc:
                trace.lookup_errors.append(f"stream {hit.stream}: {exc}")
                continue
            subject = hit.subject or trace.subject
            trace.consumers[hit.stream] = [consumer_match(c, subject) for c in consumers]
            if not trace.trace_only and trace.pub_ack is None and not hit.error and not hit.no_interest:
                try:
                    resp = await self._api(f"STREAM.MSG.GET.{hit.stream}", {"last_by_subj": subject})
                    trace.last_on_subject[hit.stream] = (resp.get("message") or {}).get("seq", 0)
                except NatsError as exc:  # purged already, say: the view says it does not know
                    trace.lookup_errors.append(f"stream {hit.stream}: last message on {subject}: {exc}")


def consumer_match(c: ConsumerSummary, subject: str) -> ConsumerMatch:
    config = c.config or {}
    filters = tuple(config.get("filter_subjects") or ([config["filter_subject"]] if config.get("filter_subject") else []))
    covers = not filters or any(subject_matches(f, subject) for f in filters)
    return ConsumerMatch(c.name, filters, covers, c.pull, c.paused, config.get("deliver_subject", ""))
