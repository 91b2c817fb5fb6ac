"""Typed results of the client layer: what panes get back instead of raw JSON.

Names follow the real server's JSON (``num_ack_pending``, ``ack_floor`` ...) so a
field is easy to look up in the JetStream API docs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any


def _ns_to_seconds(value: Any) -> float:
    return (value or 0) / 1e9


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 time from the API (nanoseconds, 'Z') as an aware datetime."""
    if not isinstance(value, str) or not value or value.startswith("0001-"):
        return None
    text = value.rstrip("Z")
    if "." in text:  # Python takes at most microseconds
        head, frac = text.split(".", 1)
        offset = ""
        for sign in ("+", "-"):
            if sign in frac:
                frac, offset = frac.split(sign, 1)
                offset = sign + offset
        text = f"{head}.{frac[:6]}{offset}"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class ServerSummary:
    """What the INFO line told us about the server we are connected to."""

    server_name: str
    version: str
    jetstream: bool
    client_url: str
    cluster: str = ""  # the cluster's name when the server is one of a cluster
    domain: str = ""  # the JetStream domain, when one is set


@dataclass(frozen=True)
class AccountUsage:
    streams: int = 0
    consumers: int = 0
    storage: int = 0
    memory: int = 0
    api_total: int = 0
    api_errors: int = 0

    @classmethod
    def from_json(cls, data: dict) -> "AccountUsage":
        api = data.get("api") or {}
        return cls(
            streams=data.get("streams", 0),
            consumers=data.get("consumers", 0),
            storage=data.get("storage", 0),
            memory=data.get("memory", 0),
            api_total=api.get("total", 0),
            api_errors=api.get("errors", 0),
        )


@dataclass(frozen=True)
class StreamSummary:
    """One stream's config and state, as STREAM.INFO / STREAM.LIST return it."""

    name: str
    subjects: tuple[str, ...]
    storage: str
    retention: str
    messages: int
    bytes: int
    first_seq: int
    last_seq: int
    consumer_count: int
    num_subjects: int
    created: str
    config: dict = field(default_factory=dict, compare=False, hash=False)
    state: dict = field(default_factory=dict, compare=False, hash=False)
    raw: dict = field(default_factory=dict, compare=False, hash=False)  # the API's JSON, for the -j view
    # on a cluster: {"name", "leader", "replicas": [{"name", "current", "active", "lag", "offline"}]}
    cluster: dict = field(default_factory=dict, compare=False, hash=False)
    offline: str = ""  # why the stream could not be read (its leader is gone), as STREAM.LIST says

    @classmethod
    def unreachable(cls, name: str, reason: str) -> "StreamSummary":
        """A stream STREAM.LIST names as missing or offline: no state to show, only that."""
        return cls(name=name, subjects=(), storage="", retention="", messages=0, bytes=0, first_seq=0,
                   last_seq=0, consumer_count=0, num_subjects=0, created="", offline=reason or "offline",
                   raw={"config": {"name": name}, "offline": reason or "offline"})

    @classmethod
    def from_json(cls, data: dict) -> "StreamSummary":
        config = data.get("config") or {}
        state = data.get("state") or {}
        return cls(
            name=config.get("name", ""),
            subjects=tuple(config.get("subjects") or ()),
            storage=config.get("storage", "file"),
            retention=config.get("retention", "limits"),
            messages=state.get("messages", 0),
            bytes=state.get("bytes", 0),
            first_seq=state.get("first_seq", 0),
            last_seq=state.get("last_seq", 0),
            consumer_count=state.get("consumer_count", 0),
            num_subjects=state.get("num_subjects", 0),
            created=data.get("created", ""),
            config=config,
            state=state,
            raw=data,
            cluster=data.get("cluster") or {},
        )


@dataclass(frozen=True)
class ConsumerSummary:
    """One consumer's config and delivery state (CONSUMER.INFO)."""

    stream: str
    name: str
    pull: bool
    ack_policy: str
    ack_wait: float
    max_deliver: int
    filter_subject: str
    delivered_consumer_seq: int
    delivered_stream_seq: int
    ack_floor_consumer_seq: int
    ack_floor_stream_seq: int
    num_ack_pending: int
    num_redelivered: int
    num_waiting: int
    num_pending: int
    paused: bool
    config: dict = field(default_factory=dict, compare=False, hash=False)
    last_delivery: datetime | None = None  # delivered.last_active
    last_ack: datetime | None = None  # ack_floor.last_active
    server_time: datetime | None = None  # the answer's ts: "ago" by the server's clock
    created: datetime | None = None
    raw: dict = field(default_factory=dict, compare=False, hash=False)
    cluster: dict = field(default_factory=dict, compare=False, hash=False)

    @classmethod
    def from_json(cls, data: dict) -> "ConsumerSummary":
        config = data.get("config") or {}
        delivered = data.get("delivered") or {}
        ack_floor = data.get("ack_floor") or {}
        filters = config.get("filter_subjects") or (
            [config["filter_subject"]] if config.get("filter_subject") else []
        )
        return cls(
            stream=data.get("stream_name", ""),
            name=data.get("name", ""),
            pull=not config.get("deliver_subject"),
            ack_policy=config.get("ack_policy", "none"),
            ack_wait=_ns_to_seconds(config.get("ack_wait")),
            max_deliver=config.get("max_deliver", -1),
            filter_subject=", ".join(filters),
            delivered_consumer_seq=delivered.get("consumer_seq", 0),
            delivered_stream_seq=delivered.get("stream_seq", 0),
            ack_floor_consumer_seq=ack_floor.get("consumer_seq", 0),
            ack_floor_stream_seq=ack_floor.get("stream_seq", 0),
            num_ack_pending=data.get("num_ack_pending", 0),
            num_redelivered=data.get("num_redelivered", 0),
            num_waiting=data.get("num_waiting", 0),
            num_pending=data.get("num_pending", 0),
            paused=bool(data.get("paused")),
            config=config,
            last_delivery=parse_time(delivered.get("last_active")),
            last_ack=parse_time(ack_floor.get("last_active")),
            server_time=parse_time(data.get("ts")),
            created=parse_time(data.get("created")),
            raw=data,
            cluster=data.get("cluster") or {},
        )

    def born_at(self, now: float) -> float | None:
        """The consumer's creation on the ``time.monotonic`` clock, ``now`` being
        when this info was answered; measured by the server's own clock (its
        ``ts``), so a skewed local clock does not move it."""
        if self.created is None:
            return None
        server_now = self.server_time or datetime.now(timezone.utc)
        return now - max(0.0, (server_now - self.created).total_seconds())


@dataclass(frozen=True)
class StoredMessage:
    """A message read from a stream by sequence (message get): no consumer, no ack."""

    stream: str
    seq: int
    subject: str
    data: bytes
    headers: dict[str, str]
    time: datetime | None


@dataclass
class FetchedMessage:
    """A message handed out by a pull consumer and not yet acknowledged.

    ``msg`` is the nats-py message, kept so the client layer can ack it later.
    """

    stream: str
    consumer: str
    subject: str
    stream_seq: int
    consumer_seq: int
    num_delivered: int
    num_pending: int
    data: bytes
    headers: dict[str, str]
    ack_wait: float
    received_at: float = field(default_factory=time.monotonic)
    msg: Any = field(default=None, repr=False, compare=False)
    # which incarnation of the consumer handed it out (consumer info's created)
    consumer_created: datetime | None = None
    consumer_born: float | None = None  # that creation on the time.monotonic clock

    def ack_deadline(self) -> float:
        return self.received_at + self.ack_wait


@dataclass(frozen=True)
class PubAckResult:
    stream: str
    seq: int
    duplicate: bool


@dataclass(frozen=True)
class DeliveryEvent:
    """One thing that happened to a stream sequence on a consumer.

    ``kind`` is one of: deliver, ack, nak, progress, term, expired, max_deliveries.
    ``source`` says where we learned it: "app" (our own action), "advisory",
    "ack-tap" (another program's ack seen on ``$JS.ACK``) or "inbox-tap"
    (another program's delivery seen on its ``_INBOX``).
    ``delay`` is a nak's delay in seconds, when it asked for one.
    """

    stream: str
    consumer: str
    stream_seq: int
    kind: str
    deliveries: int
    at: float
    source: str = "app"
    delay: float | None = None
