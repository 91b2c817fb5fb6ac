"""The stream ruler: every consumer's cursor on the selected stream.

A strip from the stream's first to its last sequence (one cell per sequence,
or per range of sequences when the stream is longer than the strip), and under
it one lane per consumer: what is acknowledged up to its ack floor, what was
acked above the floor, each message handed out and not yet acked (with its
tries), those whose ack wait ran out (eligible for redelivery), and the pending
tail not yet delivered. The counters come from consumer info; which sequence
is in which state above the floor comes from what the app saw happen (its own
pulls, the ``$JS.ACK`` tap and the advisories: the pull hand's event log).
Where the app saw nothing, a delivered-but-not-seen-acked sequence says so
(``?``) rather than guessing.

``render_ruler`` is pure (numbers and events in, a ``rich.Text`` out) so each
lane state is unit tested; ``StreamRuler`` is the widget that feeds it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

# Lane states, most important first: a cell covering several sequences shows
# the most important of them (a dead or expired message must never hide in a
# scaled cell): dead/termed > expired (eligible for redelivery) > outstanding
# (and delivered-but-unseen) > pending > acked > floor.
EXPIRED, OUTSTANDING, UNSEEN, ACKED, PENDING, FLOOR, TERMED = (
    "expired", "outstanding", "unseen", "acked", "pending", "floor", "termed")
PRIORITY = (TERMED, EXPIRED, OUTSTANDING, UNSEEN, PENDING, ACKED, FLOOR)

GLYPH = {
    FLOOR: "━",  # acknowledged: at or below the ack floor
    ACKED: "✓",  # acked above the floor (the floor waits for a lower one)
    TERMED: "⊘",  # terminated, or given up after max deliveries: never redelivered
    UNSEEN: "?",  # delivered (the counters say so) but the app saw neither the delivery nor its ack
    EXPIRED: "!",  # handed out, ack wait ran out (or nak'd): eligible for redelivery on the next pull
    PENDING: "·",  # not delivered yet
}
FLOOR_MARK = "┃"  # the ack floor itself

LEGEND = (
    ("━", FLOOR, "acknowledged: at or below the consumer's ack floor"),
    ("┃", FLOOR, "the ack floor (the consumer's durable position)"),
    ("1-9", OUTSTANDING, "delivered, not acked, inside its ack wait; the digit is its tries (+ for 10 or more)"),
    ("!", EXPIRED, "ack wait ran out or nak'd (its delay over): eligible on the next pull"),
    ("✓", ACKED, "acked above the floor (the floor waits for a lower sequence)"),
    ("⊘", TERMED, "terminated, or max deliveries reached: never redelivered"),
    ("?", UNSEEN, "delivered (consumer info says so) but the app saw neither delivery nor ack"),
    ("·", PENDING, "the pending tail: not delivered yet"),
    ("_", "", "underlined: the consumer's last delivered sequence"),
    ("↻", "redeliver", "after a fault (F): handed out, not acked, will be redelivered"),
    ("✗", "lost", "after a fault: lost (a power cut past the durability promise)"),
)
REDELIVER_MARK, LOST_MARK = "↻", "✗"


@dataclass(frozen=True)
class Lane:
    """One consumer, as the ruler draws it."""

    name: str
    ack_floor: int  # ack floor stream sequence
    delivered: int  # last delivered stream sequence
    num_ack_pending: int = 0
    num_pending: int = 0
    # sequence -> (state, tries) for what the app saw above the floor
    seen: Mapping[int, tuple[str, int]] = field(default_factory=dict)


def seen_states(events_by_seq: Mapping[int, Sequence], ack_wait: float, now: float) -> dict[int, tuple[str, int]]:
    """What the app saw happen to each sequence (DeliveryEvent lists, oldest
    first) -> (state, tries): the last delivery decides; an ack or term after
    it settles it, a nak or the ack wait running out makes it eligible again,
    an in-progress restarts the wait, a nak's delay holds it back until it ends."""
    out: dict[int, tuple[str, int]] = {}
    for seq, events in events_by_seq.items():
        state, tries, deadline = "", 0, None
        for e in events:
            if e.kind == "deliver":
                state, tries = OUTSTANDING, max(tries, e.deliveries)
                # a delivery learned from another program's ack has no start time worth a countdown
                deadline = e.at + ack_wait if ack_wait and e.source != "other program" else None
            elif e.kind == "progress":
                state, deadline = OUTSTANDING, (e.at + ack_wait if ack_wait else None)
            elif e.kind == "ack":
                state, deadline = ACKED, None
            elif e.kind in ("term", "max_deliveries"):
                state, deadline = TERMED, None
            elif e.kind == "nak" and getattr(e, "delay", None):
                # nak'd with a delay: not redeliverable before it ends, then eligible
                state, deadline = OUTSTANDING, e.at + e.delay
            elif e.kind in ("nak", "expired"):
                state, deadline = EXPIRED, None
            tries = max(tries, e.deliveries)
        if state == OUTSTANDING and deadline is not None and now >= deadline:
            state = EXPIRED
        if state:
            out[seq] = (state, tries)
    return out


def _above_floor(lane: Lane) -> tuple[list[tuple[int, str, int]], list[int], int]:
    """What the app saw that a cell shows, sorted by sequence: every state above
    the floor, and the terminated ones at or below it too (a term moves the
    floor past its sequence, and the dead message must stay in sight); the
    sequences alone; and how many of them are unacked (cached on the lane:
    every cell asks)."""
    cached = lane.__dict__.get("_sorted")
    if cached is None:
        seen = sorted((seq, st, t) for seq, (st, t) in lane.seen.items() if seq > lane.ack_floor or st == TERMED)
        unacked = sum(1 for _, st, _ in seen if st in (OUTSTANDING, EXPIRED))
        cached = (seen, [s for s, _, _ in seen], unacked)
        object.__setattr__(lane, "_sorted", cached)
    return cached


def lane_cell(lane: Lane, lo: int, hi: int) -> tuple[str, int]:
    """The state of sequences lo..hi (inclusive) on this lane, the most
    important of them (``PRIORITY``), and the most tries seen there."""
    seen, seqs, seen_out = _above_floor(lane)
    found: set[str] = set()
    tries = 0
    seen_delivered = 0
    # delivered above the floor, in this cell: what the app saw accounts for some of them
    d_lo, d_hi = max(lo, lane.ack_floor + 1), min(hi, lane.delivered)
    for seq, state, t in seen[bisect_left(seqs, lo):bisect_right(seqs, hi)]:
        found.add(state)
        if state in (OUTSTANDING, EXPIRED):
            tries = max(tries, t)
        if d_lo <= seq <= d_hi:
            seen_delivered += 1
    if lo <= lane.ack_floor:
        found.add(FLOOR)
    # the rest not accounted for by what the app saw: outstanding if consumer
    # info counts more unacked than the app saw, acked otherwise
    if d_hi >= d_lo and (d_hi - d_lo + 1) > seen_delivered:
        found.add(UNSEEN if lane.num_ack_pending > seen_out else ACKED)
    if hi > lane.delivered:
        found.add(PENDING)
    for state in PRIORITY:
        if state in found:
            return state, tries
    return PENDING, 0


def cell_ranges(first: int, last: int, width: int) -> list[tuple[int, int]]:
    """Split first..last into at most ``width`` consecutive ranges of sequences."""
    count = last - first + 1
    if count <= 0 or width <= 0:
        return []
    cells = min(width, count)
    return [(first + i * count // cells, first + (i + 1) * count // cells - 1) for i in range(cells)]


def tries_glyph(tries: int) -> str:
    return str(tries) if 0 < tries < 10 else ("+" if tries else "1")


def cell_width(count: int, strip_w: int) -> int:
    """Cells per sequence: a short stream is spread out so each sequence gets
    its number on the strip; a long one is one cell per (range of) sequence."""
    return max(1, min(6, strip_w // max(1, count)))


def render_lane(lane: Lane, ranges: list[tuple[int, int]], styles: Mapping[str, Style], k: int = 1) -> Text:
    text = Text()
    for lo, hi in ranges:
        state, tries = lane_cell(lane, lo, hi)
        glyph = tries_glyph(tries) if state == OUTSTANDING else GLYPH[state]
        if state == FLOOR and lo <= lane.ack_floor <= hi and lane.ack_floor > 0:
            glyph = FLOOR_MARK
        style = styles.get(state, Style())
        if lo <= lane.delivered <= hi and lane.delivered > 0:
            style = style + Style(underline=True)
        if k > 1 and state == FLOOR:  # the floor region is one line up to its mark
            text.append("━" * (k - 1), styles.get(FLOOR, Style()))
        text.append(glyph, style)
        if k > 1 and state != FLOOR:  # the other states: one mark per sequence
            text.append(" " * (k - 1))
    return text


def lane_summary(lane: Lane) -> str:
    expired = sum(1 for s, _ in lane.seen.values() if s == EXPIRED)
    out = f"floor {lane.ack_floor} · dlv {lane.delivered} · ack pend {lane.num_ack_pending}"
    if expired:
        out += f" ({expired} expired)"
    return out + f" · pend {lane.num_pending}"


def render_ruler(
    stream: str, first: int, last: int, lanes: Iterable[Lane], width: int,
    styles: Mapping[str, Style] | None = None, max_lanes: int = 8, retention: str = "limits",
) -> Text:
    """The whole ruler: a header line, the stream strip, one line per lane;
    for an interest or workqueue stream, a last line saying for which consumer
    the messages are still kept (acked ones vanish: the strip starts later)."""
    styles = styles or {}
    lanes = list(lanes)
    label_w = min(12, max([len(lane.name) for lane in lanes] + [6]))
    strip_w = max(8, width - label_w - 1)
    # leave room for the lane's numbers when the stream is short enough to spread out
    spread_w = max(8, strip_w - 48)
    text = Text()
    if last < first or last == 0:
        text.append(f"Ruler {stream}: the stream is empty", style="italic")
        return text
    ranges = cell_ranges(first, last, strip_w)
    count = last - first + 1
    k = cell_width(count, spread_w)
    k = k if len(ranges) == count and len(str(last)) < k else 1
    scale = "1 cell = 1 seq" if len(ranges) == count else f"1 cell ≈ {count / len(ranges):.3g} seqs"
    text.append(f"Ruler {stream} · seq {first}…{last} · {scale if k == 1 else 'seq per column'} · ? legend\n",
                style="bold")
    # the stream strip: every sequence's number when spread out, else first and last at its ends
    strip = styles.get("strip", Style())
    text.append(" " * (label_w + 1))
    if k > 1:
        text.append("".join(f"{seq:<{k}}" for seq in range(first, last + 1)), strip)
    else:
        left, right = str(first), str(last)
        pad = len(ranges) - len(left) - len(right)
        text.append(left + "━" * pad + right if pad >= 1 else "━" * len(ranges), strip)
    for lane in lanes[:max_lanes]:
        text.append("\n")
        text.append(f"{lane.name[:label_w]:<{label_w}} ", style="bold")
        text.append_text(render_lane(lane, ranges, styles, k))
        if width - label_w - 1 - len(ranges) * k > 20:
            text.append(" " + lane_summary(lane), style="dim")
    if len(lanes) > max_lanes:
        text.append(f"\n… {len(lanes) - max_lanes} more consumers", style="italic")
    if retention in ("interest", "workqueue") and lanes:
        # what each consumer still holds: unacked plus not yet delivered (its filter's messages only)
        held = [f"{lane.name} {lane.num_ack_pending + lane.num_pending}" for lane in lanes
                if lane.num_ack_pending + lane.num_pending]
        text.append(f"\n{retention}: kept until acked — " + (" · ".join(held) if held else "nothing held"),
                    style="italic")
    return text


def _strip_cells(first: int, last: int, lanes: list[Lane], width: int) -> tuple[int, list[tuple[int, int]], int]:
    """The strip's layout as ``render_ruler`` lays it out: label width, cell
    ranges, cells per sequence (so a segment under the lanes lines up)."""
    label_w = min(12, max([len(lane.name) for lane in lanes] + [6]))
    strip_w = max(8, width - label_w - 1)
    ranges = cell_ranges(first, last, strip_w)
    count = last - first + 1
    k = cell_width(count, max(8, strip_w - 48))
    return label_w, ranges, (k if len(ranges) == count and len(str(last)) < k else 1)


def fault_segment(marks, first: int, last: int, lanes: list[Lane], width: int,
                  styles: Mapping[str, Style] | None = None) -> Text:
    """Under the lanes, after a fault from the Faults menu (``marks``: the
    stream's ``StreamMarks``): per consumer a line with ``↻`` under each
    sequence that will be redelivered (gone once acked), the sentence "3 will
    be redelivered: seqs 4, 5, 6", and what the fault lost (``✗``, past the
    strip's end: the stream's last sequence went back)."""
    from ..client.survival import seq_list

    styles = styles or {}
    text = Text()
    if not lanes or last < first or last == 0:
        return text
    label_w, ranges, k = _strip_cells(first, last, lanes, width)
    mark_style = styles.get("redeliver", Style())
    for lane in lanes:
        seqs = tuple(seq for seq in marks.redeliver.get(lane.name, ())
                     if seq > lane.ack_floor and lane.seen.get(seq, ("", 0))[0] not in (ACKED, TERMED))
        if seqs:
            text.append("\n")
            text.append(f"{REDELIVER_MARK} {lane.name}"[:label_w].ljust(label_w) + " ", mark_style)
            for lo, hi in ranges:
                hit = seqs[bisect_left(seqs, lo)] <= hi if bisect_left(seqs, lo) < len(seqs) else False
                text.append((REDELIVER_MARK if hit else " ") + " " * (k - 1), mark_style)
            text.append(f"\n{REDELIVER_MARK} {lane.name}: {len(seqs)} will be redelivered: {seq_list(seqs)}",
                        mark_style)
        n = marks.redeliver_count.get(lane.name)
        if n and lane.num_ack_pending:
            text.append(f"\n{REDELIVER_MARK} {lane.name}: {n} will be redelivered (which: the app did not see them all)",
                        mark_style)
    if marks.lost:
        lost = styles.get("lost", Style())
        text.append("\n")
        text.append(f"{LOST_MARK} lost"[:label_w].ljust(label_w) + " " + " " * (len(ranges) * k))
        text.append(LOST_MARK * min(len(marks.lost), 10), lost)
        text.append(f"\n{LOST_MARK} the fault lost {len(marks.lost)}: {seq_list(marks.lost)} (never made durable)",
                    lost)
    return text


def legend_text(styles: Mapping[str, Style] | None = None) -> Text:
    styles = styles or {}
    text = Text("The stream ruler (Consumers tab)\n", style="bold")
    for glyph, state, meaning in LEGEND:
        style = styles.get(state, Style()) + (Style(underline=True) if glyph == "_" else Style())
        text.append(f"  {glyph:>3} ", style)
        text.append(f" {meaning}\n")
    return text


class StreamRuler(Static):
    """The ruler for the consumers pane's stream, redrawn whenever it is fed."""

    COMPONENT_CLASSES = {
        "ruler--floor", "ruler--acked", "ruler--termed", "ruler--unseen", "ruler--outstanding",
        "ruler--expired", "ruler--pending", "ruler--strip", "ruler--redeliver", "ruler--lost",
    }
    DEFAULT_CSS = """
    StreamRuler { height: auto; max-height: 11; padding: 0 1; }
    StreamRuler > .ruler--floor { color: $success; }
    StreamRuler > .ruler--acked { color: $success; text-style: bold; }
    StreamRuler > .ruler--termed { color: $error; }
    StreamRuler > .ruler--unseen { color: $warning; }
    StreamRuler > .ruler--outstanding { color: $warning; text-style: bold; }
    StreamRuler > .ruler--expired { color: $error; text-style: bold reverse; }
    StreamRuler > .ruler--pending { color: $foreground 50%; }
    StreamRuler > .ruler--strip { color: $accent; }
    StreamRuler > .ruler--redeliver { color: $warning; text-style: bold; }
    StreamRuler > .ruler--lost { color: $error; text-style: bold; }
    """

    def __init__(self, **kw):
        super().__init__("", **kw)
        self.stream = ""
        self.first = self.last = 0
        self.lanes: list[Lane] = []
        self._shown: Text | None = None  # what is on screen, and its line count
        self._shown_lines = -1

    def styles_map(self) -> dict[str, Style]:
        return {name.removeprefix("ruler--"): self.get_component_rich_style(name, partial=True)
                for name in self.COMPONENT_CLASSES}

    retention = "limits"

    def show(self, stream: str, first: int, last: int, lanes: list[Lane], retention: str = "limits") -> None:
        self.stream, self.first, self.last, self.lanes, self.retention = stream, first, last, lanes, retention
        self.redraw()

    def redraw(self) -> None:
        if not self.stream:
            self.update("")
            self._shown, self._shown_lines = None, -1
            return
        width = self.content_region.width or max(0, self.size.width - 2) or 78
        text = render_ruler(self.stream, self.first, self.last, self.lanes, width, self.styles_map(),
                            retention=self.retention)
        marks = getattr(self.app, "fault_marks", {}).get(self.stream)  # the last fault's (Faults menu)
        if marks is not None:
            text.append_text(fault_segment(marks, self.first, self.last, self.lanes, width, self.styles_map()))
        if text == self._shown:
            return  # redrawn twice a second: most polls change nothing
        # a new layout of the screen (~15 ms) only when the ruler's height changes
        lines = text.plain.count("\n")
        self.update(text, layout=lines != self._shown_lines)
        self._shown, self._shown_lines = text, lines

    def on_resize(self) -> None:
        self._shown = None  # the width changed: draw again
        self.redraw()


def lane_for(consumer, events_by_seq: Mapping[int, Sequence], now: float) -> Lane:
    """A consumer's lane from its info (a ConsumerSummary) and what the app saw of it."""
    return Lane(consumer.name, consumer.ack_floor_stream_seq, consumer.delivered_stream_seq,
                consumer.num_ack_pending, consumer.num_pending,
                seen_states(events_by_seq, consumer.ack_wait, now))


def delivery_log(app) -> Mapping[tuple[str, str], Mapping[int, Sequence]]:
    """The app's record of deliveries, acks and advisories: the pull hand's
    timeline keeps it (it holds the taps); empty while that pane is not mounted."""
    screen = getattr(app, "main_screen", None)
    hand = screen.pane("pull") if screen is not None and screen.is_mounted else None
    if hand is None:
        return {}
    from ..panes.pull.timeline import DeliveryTimeline

    found = hand.query(DeliveryTimeline)
    return found.first().events if found else {}


def note_incarnations(app, consumers, answered: float) -> None:
    """Tell the delivery log which incarnation of each consumer is current
    (consumer info's ``created``, answered at ``answered`` on the monotonic
    clock), so a consumer made again under its old name loses the old one's
    history in every view that draws it."""
    screen = getattr(app, "main_screen", None)
    hand = screen.pane("pull") if screen is not None and screen.is_mounted else None
    if hand is None:
        return
    from ..panes.pull.timeline import DeliveryTimeline

    found = hand.query(DeliveryTimeline)
    if found:
        timeline = found.first()
        for c in consumers:
            timeline.incarnation(c.stream, c.name, c.created, c.born_at(answered))
