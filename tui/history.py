"""Time travel (issue #30): a consumer's state at any past moment, from a list
of events, whichever source they come from.

The events have the slots of the embedded broker's history ring
(``natslab.server.jetstream.journal``, read through
``ServerThread.history``): time (wall clock, ns), kind, stream, consumer,
stream seqs, consumer seq, delivery count, then the consumer's counters
*after* the event (delivered consumer/stream seq, ack floor consumer/stream
seq, num_ack_pending, num_redelivered) and one extra slot. On a remote server
(``--connect``) ``Observed`` builds the same events from what the app itself
saw since it connected: its consumer info polls (``info`` events, which carry
the counters and num_pending) and the delivery log (its own fetches and
acks, acks on ``$JS.ACK``, other programs' deliveries, the advisories), whose
counters slots are None.

``state_at`` is pure: the counters are those of the last event at or before
the time that carries them (exact for the broker's own history, as of the
last poll for a remote one); the per-sequence states for the ruler's lane
come from replaying the seqs; num_pending is derived where it can be (an
unfiltered consumer on a limits stream: the stream's last seq, from the
publishes, less the last delivered, less what was removed above it) and is
None where it cannot. ``describe`` and ``report`` put events into words, one
line each, for "what happened next" and the exported text report.
"""

from __future__ import annotations

import time
from bisect import bisect_left, bisect_right
from itertools import islice
from dataclasses import dataclass, field
from datetime import datetime
from typing import Iterable, NamedTuple

from .widgets.ruler import ACKED, EXPIRED, OUTSTANDING, TERMED

NS = 1_000_000_000
# the kinds that start a consumer's history afresh (a new incarnation)
_STARTS = ("create", "restore")


class Event(NamedTuple):
    t: int
    kind: str
    stream: str
    consumer: str
    seqs: tuple = ()
    dseq: int = 0
    dc: int = 0
    dlv_dseq: int | None = None
    dlv_sseq: int | None = None
    flr_dseq: int | None = None
    flr_sseq: int | None = None
    ack_pending: int | None = None
    redelivered: int | None = None
    extra: object = None
    account: str = "$G"  # the stream's account (names are per account)


@dataclass
class PastState:
    """A consumer as it was at ``t`` (ns): what consumer info said then, and
    which sequence was in which state (``seen``: seq -> (ruler state, tries))."""

    t: int
    exists: bool = False
    delivered_consumer_seq: int = 0
    delivered_stream_seq: int = 0
    ack_floor_consumer_seq: int = 0
    ack_floor_stream_seq: int = 0
    num_ack_pending: int = 0
    num_redelivered: int = 0
    num_pending: int | None = None
    seen: dict[int, tuple[str, int]] = field(default_factory=dict)
    counted_at: int = 0  # the time of the event the counters are from (0: none yet)


def as_events(rows: Iterable) -> list[Event]:
    make = Event._make  # (tuple.__new__: a third quicker than Event(*r))
    return [r if isinstance(r, Event) else make(r) for r in rows]


_DELAYED = "nak-delayed"  # (in a replay) nak'd with a delay: outstanding until it is over


class _Replay:
    """``state_at``'s replay of one consumer's events, one event at a time,
    so a scrub can stop anywhere, keep a copy and go on from it."""

    __slots__ = ("st", "last_seq", "derivable", "removed_above", "until")

    def __init__(self):
        self.st = PastState(0)
        self.last_seq = 0  # the stream's last seq as far as the events say
        self.derivable = False
        self.removed_above = 0
        self.until: dict[int, int] = {}  # seq -> when its nak delay is over (ns)

    def copy(self) -> "_Replay":
        """A copy to go on from (the seqs at or below the ack floor dropped:
        a floor only moves up within an incarnation, so no later moment
        shows them)."""
        r = _Replay()
        st, floor = self.st, self.st.ack_floor_stream_seq
        r.st = PastState(0, st.exists, st.delivered_consumer_seq, st.delivered_stream_seq, st.ack_floor_consumer_seq,
                         floor, st.num_ack_pending, st.num_redelivered, st.num_pending,
                         {s: v for s, v in st.seen.items() if s > floor}, st.counted_at)
        r.last_seq, r.derivable, r.removed_above = self.last_seq, self.derivable, self.removed_above
        r.until = {s: u for s, u in self.until.items() if s > floor}
        return r

    def feed(self, e: Event) -> None:
        """One event of the consumer or of its stream's own (consumer "")."""
        st = self.st
        if not e.consumer:  # the stream's own events
            if e.kind == "pub":
                self.last_seq = max(self.last_seq, e.seqs[0])
            elif e.kind == "stream":
                if e.extra == "remove" and e.seqs and e.seqs[0] > st.delivered_stream_seq:
                    self.removed_above += 1
                elif e.extra in ("purge", "delete"):
                    self.derivable = False
            return
        k = e.kind
        if k in _STARTS:
            st = self.st = PastState(0, exists=True)
            self.removed_above = 0
            self.until = {}
            ex = e.extra or ()
            if len(ex) >= 6:
                _created, last, filtered, retention, first, msgs = ex[:6]
                self.last_seq = max(self.last_seq, last)
                # no gaps in the stream, every message for this consumer
                self.derivable = not filtered and retention == "limits" and msgs == (last - first + 1 if msgs else 0)
        elif k == "delete":
            self.st = PastState(0)
            self.derivable = False
            return
        elif k == "info":  # a poll (remote): counters and num_pending as the server said
            st.exists = True
        seen = st.seen
        if k == "deliver":
            for s in e.seqs:
                seen[s] = (OUTSTANDING, max(e.dc, 1))
        elif k == "ack":
            for s in e.seqs:
                seen[s] = (ACKED, seen.get(s, ("", e.dc))[1])
        elif k == "nak":
            tries = seen.get(e.seqs[0], ("", e.dc))[1] if e.seqs else 0
            # a nak with a delay keeps its digit until the delay is over (the broker's
            # history then has its "expired"; an observed one is timed here)
            if e.seqs:
                s = e.seqs[0]
                if e.extra:
                    seen[s] = (_DELAYED, max(tries, e.dc))
                    self.until[s] = e.t + int(e.extra)
                else:
                    seen[s] = (EXPIRED, max(tries, e.dc))
        elif k == "progress":
            for s in e.seqs:
                seen[s] = (OUTSTANDING, seen.get(s, ("", e.dc))[1])
        elif k in ("term", "max_deliveries"):
            for s in e.seqs:
                seen[s] = (TERMED, max(seen.get(s, ("", 0))[1], e.dc))
        elif k == "expired":
            for s in e.seqs:
                if s in seen and seen[s][0] in (OUTSTANDING, _DELAYED):
                    seen[s] = (EXPIRED, seen[s][1])
        elif k == "putback":
            for s in e.seqs:
                if e.dc <= 1:
                    seen.pop(s, None)
                elif s in seen:
                    seen[s] = (EXPIRED, e.dc - 1)
        elif k in ("reset",):
            seen.clear()
        if e.dlv_sseq is not None:
            st.exists = True
            st.delivered_consumer_seq, st.delivered_stream_seq = e.dlv_dseq, e.dlv_sseq
            st.ack_floor_consumer_seq, st.ack_floor_stream_seq = e.flr_dseq, e.flr_sseq
            st.num_ack_pending, st.num_redelivered = e.ack_pending, e.redelivered
            st.counted_at = e.t
            if k == "info" and isinstance(e.extra, int):
                st.num_pending = e.extra

    def result(self, t: int) -> PastState:
        """The state at ``t`` (the events fed: those at or before it)."""
        st, floor, until = self.st, self.st.ack_floor_stream_seq, self.until
        num_pending = st.num_pending
        if st.exists and self.derivable:
            num_pending = max(0, self.last_seq - st.delivered_stream_seq - self.removed_above)
        seen = {}
        for s, v in st.seen.items():
            if s > floor:
                if v[0] == _DELAYED:
                    v = (OUTSTANDING if until.get(s, 0) > t else EXPIRED, v[1])
                seen[s] = v
        return PastState(t, st.exists, st.delivered_consumer_seq, st.delivered_stream_seq, st.ack_floor_consumer_seq,
                         floor, st.num_ack_pending, st.num_redelivered, num_pending, seen, st.counted_at)


def state_at(events: Iterable[Event], stream: str, consumer: str, t: int) -> PastState:
    """The state of ``stream``/``consumer`` at ``t`` (ns) from ``events``
    (oldest first; other streams' and consumers' are skipped). One pass over
    the events: the time slider asks ``Scrub`` instead, which keeps its place."""
    r = _Replay()
    for e in events:
        if e.t > t:
            break
        if e.stream == stream and (not e.consumer or e.consumer == consumer):
            r.feed(e)
    return r.result(t)


class Scrub:
    """One stream's history indexed for the time slider, so a step costs what
    changed and not a replay of the whole ring (with a full 50 MB ring each
    key took ~0.5 s: a copy of it as Events, and a replay per consumer).

    ``events`` are read once (``extend`` adds what came since); the moment
    ``t`` is cut by a bisect on the running maximum of the events' times
    (the first event later than ``t`` ends it, as in ``state_at``); each
    consumer's events are listed once; its replay keeps a copy every
    ``spacing`` of its events, and the state last asked for, so a step back
    replays from the copy before it and a step forward from where it was.
    Results are those of ``state_at`` over the same events."""

    def __init__(self, events: list[Event], stream: str):
        self.stream = stream
        self.events: list[Event] = []
        self._maxt: list[int] = []
        self._hi: list[int] = [0]  # the stream's highest seq known after events[:i]
        self._mine: dict[str, list[int]] = {}  # consumer -> indices of its (and the stream's own) events
        self._marks: dict[str, list] = {}  # consumer -> [(n, _Replay after its first n events)]
        self._last: dict[str, tuple[int, _Replay]] = {}
        self._times: dict[str, tuple[int, list[int]]] = {}
        self.read_len = len(events)  # the length of the last full read (extend's bound)
        self.extend(events)

    @property
    def last_t(self) -> int:
        return self._maxt[-1] if self._maxt else 0

    def extend(self, new: list[Event]) -> None:
        """Events recorded after the ones held, in the ring's order."""
        i0 = len(self.events)
        self.events.extend(new)
        maxt, hi, stream = self._maxt, self._hi, self.stream
        m, h = (maxt[-1] if maxt else -1), hi[-1]
        for e in new:
            if e.t > m:
                m = e.t
            maxt.append(m)
            if e.stream == stream:
                if e.kind == "pub":
                    h = max(h, e.seqs[0])
                elif e.kind in _STARTS and e.extra and len(e.extra) >= 5:
                    h = max(h, e.extra[1])
            hi.append(h)
        for name, idx in self._mine.items():
            idx.extend(i for i in range(i0, len(self.events)) if self._is_of(self.events[i], name))

    def tail_since(self, t: int) -> list[Event]:
        """The held events with a time at or after ``t``, in order (what a
        read ``since=t`` of the same ring returns first)."""
        j = bisect_left(self._maxt, t)
        return [e for e in self.events[j:] if e.t >= t]

    def _is_of(self, e: Event, consumer: str) -> bool:
        return e.stream == self.stream and (not e.consumer or e.consumer == consumer)

    def _indices(self, consumer: str) -> list[int]:
        idx = self._mine.get(consumer)
        if idx is None:  # every consumer's at once: one pass over the events, not one each
            stream, mine = self.stream, self._mine
            names = {e.consumer for e in self.events if e.stream == stream and e.consumer} - mine.keys()
            lists = {name: [] for name in names | {consumer}}
            every = list(lists.values())
            for i, e in enumerate(self.events):
                if e.stream == stream:
                    if not e.consumer:
                        for x in every:
                            x.append(i)
                    elif e.consumer in lists:
                        lists[e.consumer].append(i)
            mine.update(lists)
            idx = lists[consumer]
        return idx

    def cut(self, t: int) -> int:
        """How many events ``state_at`` reads for the moment ``t``."""
        return bisect_right(self._maxt, t)

    def state_at(self, consumer: str, t: int) -> PastState:
        idx = self._indices(consumer)
        n = bisect_left(idx, self.cut(t))  # its events at or before t
        last = self._last.get(consumer)
        if last is not None and last[0] <= n:
            k, r = last  # on from where the last step left it
        else:
            k, r = self._mark_before(consumer, idx, n)
        events = self.events
        for i in idx[k:n]:
            r.feed(events[i])
        self._last[consumer] = (n, r)
        return r.result(t)

    def _mark_before(self, consumer: str, idx: list[int], n: int) -> tuple[int, _Replay]:
        """A fresh copy of the replay after the last mark at or before ``n``
        (marks are made up to ``n`` the first time they are needed)."""
        spacing = max(256, len(idx) // 32)  # at most ~32 copies of the outstanding seqs
        marks = self._marks.setdefault(consumer, [(0, _Replay())])
        k, r = marks[-1]
        if k + spacing <= n:
            r, events = r.copy(), self.events
            while k + spacing <= n:
                for i in idx[k:k + spacing]:
                    r.feed(events[i])
                k += spacing
                marks.append((k, r.copy()))
        for mk, mr in reversed(marks):
            if mk <= n:
                return mk, mr.copy()
        return 0, _Replay()

    def range_at(self, t: int, first: int, last: int) -> tuple[int, int]:
        """``stream_range_at`` of these events."""
        hi = self._hi[self.cut(t)]
        return (min(first, hi) if hi else first), (hi or last)

    def after(self, t: int, consumer: str, n: int = 5) -> list[Event]:
        """``after`` of these events (none before the cut is later than ``t``)."""
        out = []
        for e in islice(self.events, self.cut(t), None):
            if e.t > t and self._is_of(e, consumer):
                out.append(e)
                if len(out) >= n:
                    break
        return out

    def times_of(self, consumer: str) -> list[int]:
        """The times of the consumer's own events (not polls), in order: where ``{`` ``}`` stop."""
        got = self._times.get(consumer)
        if got is None or got[0] != len(self.events):
            events = self.events
            got = self._times[consumer] = (len(events), sorted(events[i].t for i in self._indices(consumer)
                                                             if events[i].consumer and events[i].kind != "info"))
        return got[1]

    def incarnation_upto(self, consumer: str, t: int) -> list[Event]:
        """The consumer's own events up to ``t`` since it was last made (or deleted)."""
        idx, events = self._indices(consumer), self.events
        n = bisect_left(idx, self.cut(t))
        j = 0
        for p in range(n - 1, -1, -1):
            if events[idx[p]].kind in ("create", "restore", "delete") and events[idx[p]].consumer:
                j = p
                break
        return [events[i] for i in idx[j:n] if events[i].consumer]


def lane_of(name: str, st: PastState):
    """The ruler's Lane for a past state."""
    from .widgets.ruler import Lane

    return Lane(name, st.ack_floor_stream_seq, st.delivered_stream_seq, st.num_ack_pending,
                st.num_pending or 0, st.seen)


def stream_range_at(events: Iterable[Event], stream: str, t: int, first: int, last: int) -> tuple[int, int]:
    """The stream's first..last sequence at ``t`` as far as its publishes say
    (``first``/``last``: today's, when the events say nothing)."""
    hi = 0
    for e in events:
        if e.t > t:
            break
        if e.stream == stream and e.kind == "pub":
            hi = max(hi, e.seqs[0])
        elif e.stream == stream and e.kind in _STARTS and e.extra and len(e.extra) >= 5:
            hi = max(hi, e.extra[1])
    return (min(first, hi) if hi else first), (hi or last)


def of_consumer(events: Iterable[Event], stream: str, consumer: str) -> list[Event]:
    return [e for e in events if e.stream == stream and e.consumer in (consumer, "")]


def after(events: Iterable[Event], t: int, stream: str, consumer: str, n: int = 5) -> list[Event]:
    """The first ``n`` events of the consumer (and its stream's publishes) after ``t``."""
    out = []
    for e in events:
        if e.t > t and e.stream == stream and e.consumer in (consumer, ""):
            out.append(e)
            if len(out) >= n:
                break
    return out


def clock(t: int, tenths: bool = True) -> str:
    """``12:03:05.2`` (local time)."""
    d = datetime.fromtimestamp(t / NS)
    return d.strftime("%H:%M:%S") + (f".{d.microsecond // 100_000}" if tenths else "")


def _seqs(seqs: tuple) -> str:
    if not seqs:
        return ""
    if len(seqs) > 2 and seqs[-1] - seqs[0] == len(seqs) - 1:
        return f"{seqs[0]}-{seqs[-1]}"
    if len(seqs) > 6:
        return ",".join(map(str, seqs[:6])) + f",… ({len(seqs)})"
    return ",".join(map(str, seqs))


def describe(e: Event) -> str:
    """One line: what happened (without the time)."""
    s = _seqs(e.seqs)
    k = e.kind
    if k == "pub":
        return f"{e.stream} stored seq {s}"
    if k == "stream":
        return f"{e.stream} message {s} removed" if e.extra == "remove" else f"stream {e.stream} {e.extra}"
    who = e.consumer
    if k == "deliver":
        tries = f" (try {e.dc})" if e.dc > 1 else ""
        return f"{who} delivered seq {s}{tries}"
    if k == "ack":
        return f"{who} acked seq {s}"
    if k == "nak":
        delay = f" with a {int(e.extra) / NS:g} s delay" if e.extra else ""
        return f"{who} nak'd seq {s}{delay}"
    if k == "progress":
        return f"{who} in progress seq {s}"
    if k == "term":
        return f"{who} terminated seq {s}" + (f": {e.extra}" if e.extra else "")
    if k == "expired":
        return f"{who} ack wait ran out: seq {s}"
    if k == "max_deliveries":
        return f"{who} max deliveries: seq {s} after {e.dc}"
    if k == "putback":
        return f"{who} put back seq {s}"
    if k == "floor":
        return f"{who} floor moved to {e.flr_sseq}"
    if k == "info":
        return f"{who} info: floor {e.flr_sseq} delivered {e.dlv_sseq} ack pending {e.ack_pending}"
    if k in ("create", "restore", "delete", "update", "pause", "reset", "purge"):
        return f"{who} {k}" + (f" {s}" if s else "")
    return f"{who} {k} {s}".rstrip()


def state_line(st: PastState) -> str:
    if not st.exists:
        return "consumer does not exist"
    pending = "?" if st.num_pending is None else st.num_pending
    return (f"delivered {st.delivered_consumer_seq}/{st.delivered_stream_seq} · "
            f"ack floor {st.ack_floor_consumer_seq}/{st.ack_floor_stream_seq} · "
            f"ack pending {st.num_ack_pending} · redelivered {st.num_redelivered} · pending {pending}")


def report(events: list[Event], stream: str, consumer: str, t0: int, t1: int) -> str:
    """The text report of ``t0``..``t1``: the start state, the events one
    per line with their times, the end state."""
    mine = of_consumer(events, stream, consumer)
    d0 = datetime.fromtimestamp(t0 / NS).isoformat(timespec="milliseconds")
    d1 = datetime.fromtimestamp(t1 / NS).isoformat(timespec="milliseconds")
    lines = [f"natslab history of {stream} > {consumer}, {d0} to {d1}",
             f"start  {state_line(state_at(mine, stream, consumer, t0))}"]
    for e in mine:
        if t0 < e.t <= t1:
            lines.append(f"{clock(e.t)}{datetime.fromtimestamp(e.t / NS).microsecond // 1000 % 100:02d}  {describe(e)}")
    lines.append(f"end    {state_line(state_at(mine, stream, consumer, t1))}")
    return "\n".join(lines) + "\n"


class Observed:
    """A remote server's history as the app saw it since it connected:
    ``info`` events from the consumers pane's polls, and the delivery log's
    events (the pull hand's timeline) as they come. Bounded by count."""

    def __init__(self, max_events: int = 200_000):
        from collections import deque

        self.events: deque[Event] = deque(maxlen=max_events)
        self._offset = time.time_ns() - time.monotonic_ns()  # monotonic -> wall clock

    def wall(self, monotonic: float) -> int:
        return int(monotonic * NS) + self._offset

    def info(self, c, at: float | None = None) -> None:
        """A consumer info (ConsumerSummary) answered at ``at`` (monotonic)."""
        t = self.wall(at) if at is not None else time.time_ns()
        self._add(Event(t, "info", c.stream, c.name, (), 0, 0, c.delivered_consumer_seq,
                        c.delivered_stream_seq, c.ack_floor_consumer_seq, c.ack_floor_stream_seq,
                        c.num_ack_pending, c.num_redelivered, c.num_pending))

    _KINDS = {"deliver": "deliver", "ack": "ack", "nak": "nak", "term": "term", "progress": "progress",
              "expired": "expired", "max_deliveries": "max_deliveries"}

    def seen(self, ev) -> None:
        """One of the delivery log's DeliveryEvents (``at``: monotonic s)."""
        kind = self._KINDS.get(ev.kind)
        if kind is None:
            return
        delay = getattr(ev, "delay", None)
        extra = int(delay * NS) if kind == "nak" and delay else (0 if kind == "nak" else None)
        self._add(Event(self.wall(ev.at), kind, ev.stream, ev.consumer, (ev.stream_seq,), 0, ev.deliveries or 0,
                        extra=extra))

    def _add(self, e: Event) -> None:
        ev = self.events
        if e.kind != "info" and any(x[1:7] == e[1:7] and abs(x.t - e.t) < NS for x in islice(reversed(ev), 8)):
            return  # one event seen twice (the app's own action and a tap, an advisory and a tap)
        if ev and ev[-1].t > e.t:  # keep them in time order (a tap's event can come after a later poll)
            i = len(ev)
            for x in reversed(ev):  # (it belongs near the end)
                if x.t <= e.t:
                    break
                i -= 1
            if len(ev) == ev.maxlen:
                ev.popleft()
                i -= 1
            ev.insert(max(i, 0), e)
        else:
            ev.append(e)

    def history(self, since=None, until=None, stream=None, consumer=None) -> list[Event]:
        return [e for e in self.events
                if (since is None or e.t >= since) and (until is None or e.t <= until)
                and (stream is None or e.stream == stream)
                and (consumer is None or e.consumer in (consumer, ""))]
