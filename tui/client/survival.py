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


# ---- what a fault did, judged (the report and the stream ruler draw it) ----
@dataclass(frozen=True)
class StreamMarks:
    """One stream after a fault: the sequences the fault lost (stored before
    it, gone after) and, per consumer, those that will be redelivered (handed
    out, not acked: the ack wait runs out and the next pull gets them again)."""

    lost: tuple[int, ...] = ()
    redeliver: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # consumers whose unacked count is known but not which sequences (the app
    # did not see every delivery): consumer -> how many
    redeliver_count: dict[str, int] = field(default_factory=dict)


SETTLED = ("acked", "termed")  # the ruler's lane states that are never redelivered


def fault_marks(before: Snapshot, after: Snapshot,
                seen: dict[tuple[str, str], dict[int, tuple[str, int]]] | None = None) -> dict[str, StreamMarks]:
    """Per stream: what was lost, what will be redelivered. ``seen`` is what
    the app saw of each consumer's sequences (the ruler's ``seen_states``):
    the unacked sequences above the floor are those delivered and not seen
    acked; when the app saw less than consumer info counts, only the count
    is known (never guessed)."""
    seen = seen or {}
    out: dict[str, StreamMarks] = {}
    for name in before.streams.keys() | after.streams.keys():
        b, a = before.streams.get(name), after.streams.get(name)
        lost: tuple[int, ...] = ()
        if b is not None and b.last_seq:
            kept_to = a.last_seq if a is not None else 0
            lost = tuple(range(max(kept_to, b.first_seq - 1) + 1, b.last_seq + 1))
        redeliver, counts = {}, {}
        for (stream, consumer), c in after.consumers.items():
            was = before.consumers.get((stream, consumer))
            if stream != name or was is None:
                continue
            # handed out before the fault and not acked after it: each comes
            # again (once its ack wait runs out, or as a fresh delivery where
            # the fault rolled the delivered sequence back)
            unacked = was.ack_pending + max(0, was.ack_floor - c.ack_floor)
            if not unacked:
                continue
            mine = seen.get((stream, consumer), {})
            seqs = tuple(s for s in range(c.ack_floor + 1, max(was.delivered, c.delivered) + 1)
                         if mine.get(s, ("", 0))[0] not in SETTLED)
            if len(seqs) == unacked:
                redeliver[consumer] = seqs
            else:
                counts[consumer] = unacked
        if lost or redeliver or counts:
            out[name] = StreamMarks(lost, redeliver, counts)
    return out


def promise_verdict(before: Snapshot, after: Snapshot, marks: dict[str, StreamMarks]) -> tuple[bool, str]:
    """natslab's durability promise (docs/durability.md): by default a PubAck
    leaves only once its message is fsynced, so every message a stream held
    just before the fault (taken when it was confirmed) must be there after it,
    even after a power cut. (True, what was kept) or (False, what was lost)."""
    lost = {name: m.lost for name, m in marks.items() if m.lost}
    gone = [name for name in before.streams if name not in after.streams]
    if not lost and not gone:
        held = sum(s.messages for s in before.streams.values())
        return True, f"promise kept: all {held} message(s) the streams held before are there"
    parts = [f"{name} gone" for name in sorted(gone)]
    parts += [f"{name} lost {seq_list(seqs)}" for name, seqs in sorted(lost.items()) if name not in gone]
    return False, "PROMISE BROKEN (acknowledged messages lost): " + "; ".join(parts)


def seq_list(seqs: tuple[int, ...], most: int = 8) -> str:
    """'seq 4' / 'seqs 4, 5, 6' / 'seqs 4, 5, … 40 (37)'."""
    if len(seqs) == 1:
        return f"seq {seqs[0]}"
    if len(seqs) <= most:
        return "seqs " + ", ".join(map(str, seqs))
    return "seqs " + ", ".join(map(str, seqs[:most - 1])) + f", … {seqs[-1]} ({len(seqs)})"


def redelivery_lines(marks: dict[str, StreamMarks], stream: str | None = None) -> list[str]:
    """'FD: 3 will be redelivered: seqs 4, 5, 6', one per consumer."""
    lines = []
    for name in sorted(marks) if stream is None else [stream] if stream in marks else []:
        m = marks[name]
        where = "" if stream is not None else f"{name} › "
        for consumer, seqs in sorted(m.redeliver.items()):
            lines.append(f"{where}{consumer}: {len(seqs)} will be redelivered: {seq_list(seqs)}")
        for consumer, n in sorted(m.redeliver_count.items()):
            lines.append(f"{where}{consumer}: {n} will be redelivered (which: the app did not see every delivery)")
        if m.lost:
            lines.append(f"{where}lost: {len(m.lost)} message(s), {seq_list(m.lost)}")
    return lines
