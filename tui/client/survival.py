"""What survived a fault: a snapshot of the JetStream state through nats-py
only (the Faults menu takes one before and one after, tui/screens/faults.py)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import NatsError


@dataclass(frozen=True)
class StreamState:
    messages: int
    first_seq: int
    last_seq: int


@dataclass(frozen=True)
class ConsumerState:
    delivered: int  # stream sequence of the last delivery
    ack_floor: int  # stream sequence everything up to which is acked
    ack_pending: int
    redelivered: int
    pending: int


@dataclass
class Snapshot:
    streams: dict[str, StreamState] = field(default_factory=dict)
    consumers: dict[tuple[str, str], ConsumerState] = field(default_factory=dict)
    kv: dict[str, int] = field(default_factory=dict)  # bucket -> its last revision
    problems: list[str] = field(default_factory=list)


async def take_snapshot(client) -> Snapshot:
    """Streams' messages/first/last, each consumer's floors and pending, KV
    buckets' revisions (a bucket's revision is its stream's last sequence)."""
    snap = Snapshot()
    try:
        streams = await client.list_streams()
    except NatsError as exc:
        snap.problems.append(f"streams: {exc}")
        return snap
    for s in streams:
        if s.offline:
            snap.problems.append(f"{s.name}: {s.offline}")
            continue
        snap.streams[s.name] = StreamState(s.messages, s.first_seq, s.last_seq)
        if s.name.startswith("KV_"):
            snap.kv[s.name[3:]] = s.last_seq
        if not s.consumer_count:
            continue
        try:
            consumers = await client.list_consumers(s.name)
        except NatsError as exc:
            snap.problems.append(f"{s.name} consumers: {exc}")
            continue
        for c in consumers:
            snap.consumers[(s.name, c.name)] = ConsumerState(
                c.delivered_stream_seq, c.ack_floor_stream_seq, c.num_ack_pending,
                c.num_redelivered, c.num_pending)
    return snap
