"""The redelivery timeline on a time axis: one row per stream sequence.

Each delivery is a bar as long as its ack wait (the consumer's, or its
backoff step for that try), filling as the countdown runs (an in-progress
restarts it); an ack, nak, term or max deliveries stops it with a mark at the
moment it happened. A bar that runs out gets the expiry mark (a backoff step
mark on a consumer with backoff), and a dotted line follows until the next
delivery — on a pull consumer nothing happens until someone pulls again. A nak
with a delay draws the delay as a dashed gap, then the dots. Deliveries to
other programs' workers, seen on their inbox, are bars of their own shade;
those the app only learned of from an ack have no start to draw from: they
get the try number as a mark where their ack was seen.

``render_time_axis`` is pure (events, ack wait, a clock reading in; a
``rich.Text`` out) so the seed's RDL story is tested with a fake clock;
``TimeAxis`` is the widget in the pull hand that feeds it at 4 Hz.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, NamedTuple, Sequence

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

ZOOMS = (1.0, 10.0, 60.0, 0.25)  # seconds per cell, in the order `z` steps through them
SETTLING = {"ack": "✓", "nak": "↺", "term": "⊘", "max_deliveries": "☠"}
PROGRESS, EXPIRY, STEP, BAR, OTHER_BAR, LEFT, WAITING, DELAY = "↻", "◔", "»", "█", "▓", "░", "·", "╌"
LABEL_W = 9  # "seq 1234 "
MAX_ROWS = 60  # the newest sequences; older ones are summed up in one line

LEGEND = (
    ("1█", "bar", "a delivery (the digit is its try), and how much of its ack wait has run"),
    ("1▓", "other", "a delivery to another program's worker (seen on its inbox)"),
    ("░", "left", "the rest of the ack wait, still running"),
    ("◔", "expired", "the ack wait ran out: eligible for redelivery"),
    ("»", "step", "a backoff step ran out: eligible; the next try waits the next step"),
    ("·", "waiting", "eligible, not redelivered yet (a pull consumer waits for a pull)"),
    ("✓", "ack", "acked"),
    ("↺", "nak", "nak'd: eligible for redelivery at once, or after its delay"),
    ("╌", "delay", "a nak's delay: not redelivered before it ends"),
    ("↻", "progress", "in progress: the ack wait starts again"),
    ("⊘", "term", "terminated: never redelivered"),
    ("☠", "max_deliveries", "max deliveries reached: never redelivered"),
)
KEYS = "z zoom (1 s, 10 s, 1 m, ¼ s a cell) · [ back · ] forward half a window"


class Scene(NamedTuple):
    """What the time axis draws for one consumer."""

    title: str
    events_by_seq: Mapping[int, Sequence]
    ack_wait: float
    backoff: tuple[float, ...] = ()  # seconds; delivery n waits step n (the last one repeats)
    max_deliver: int = 0  # 0 or -1: unlimited


def wait_of(tries: int, ack_wait: float, backoff: Sequence[float] = ()) -> float:
    """How long delivery number ``tries`` waits for its ack (nats-server's checkPending)."""
    if backoff:
        return backoff[min(max(tries, 1), len(backoff)) - 1]
    return ack_wait


def zoom_label(seconds_per_cell: float) -> str:
    return f"{seconds_per_cell:g} s" if seconds_per_cell < 60 else f"{seconds_per_cell / 60:g} m"


def tick_every(spc: float) -> int:
    """Cells between two labelled ticks: 5 (5 s, 50 s, 5 m), or 8 (2 s) at 0.25 s per cell."""
    return 8 if spc < 1 else 5


def tick_label(since: float) -> str:
    """A tick's label: ``|15s``; past ten minutes ``|35:05`` (minutes and
    seconds: ``%g`` minutes, cut to the 5 cells between ticks, read "|35.2"
    with its unit lost, and ticks 5 s apart looked alike)."""
    if since < 600:
        return f"|{since:g}s"
    whole = int(since)
    return f"|{whole // 60}:{whole % 60:02d}"


def window_start(t0: float, now: float, cells: int, spc: float, scroll: float = 0.0) -> float:
    """Where the axis starts: at the first event while everything fits, else
    so that now sits near the right edge; ``scroll`` seconds further back.
    It moves a whole tick at a time, so the bars do not shift by a cell as the
    clock runs and the tick labels stay round."""
    span, step = cells * spc, tick_every(spc) * spc
    room = max(spc, span - step - spc)  # now stays in sight after rounding down to a tick
    start = t0 if now - t0 <= room else now - room
    start = max(t0, start - scroll)
    return t0 + ((start - t0) // step) * step


def paint_row(events: Sequence, ack_wait: float, now: float, start: float, cells: int, spc: float,
              backoff: Sequence[float] = (), max_deliver: int = 0) -> list[tuple[str, str]]:
    """One sequence's row: (glyph, style key) per cell."""
    row: list[tuple[str, str]] = [(" ", "")] * cells

    def cell(t: float) -> int | None:
        i = int((t - start) // spc)
        return i if 0 <= i < cells else None

    def fill(t_from: float, t_to: float, glyph: str, key: str) -> None:
        if t_to <= t_from:
            return
        a = max(0, int((t_from - start) // spc))
        b = min(cells, int(-(-(t_to - start) // spc)))  # ceil: a started cell is drawn
        for i in range(a, b):
            row[i] = (glyph, key)

    deliveries = [i for i, e in enumerate(events) if e.kind == "deliver"]
    marks: list[tuple[float, str, str]] = []
    for n, at_index in enumerate(deliveries):
        d = events[at_index]
        following = events[at_index + 1:deliveries[n + 1]] if n + 1 < len(deliveries) else events[at_index + 1:]
        next_at = events[deliveries[n + 1]].at if n + 1 < len(deliveries) else None
        resume = next_at if next_at is not None else now  # eligible until redelivered (or until now)
        tries = str(d.deliveries) if 0 < d.deliveries < 10 else "+"
        if d.source == "other program":  # no start time: only the try, where we saw it
            marks.append((d.at, tries, "bar"))
            for e in following:
                if e.kind in SETTLING:
                    marks.append((e.at, SETTLING[e.kind], e.kind))
            continue
        wait = wait_of(d.deliveries, ack_wait, backoff)
        deadline = d.at + wait if wait else None
        settled = None
        for e in following:
            if e.kind == "progress" and settled is None:
                deadline = e.at + wait if wait else deadline
                marks.append((e.at, PROGRESS, "progress"))
            elif e.kind in SETTLING and settled is None:
                settled = e
        # given up later (max deliveries after a nak is reported on the next pull)
        gone = next((e for e in following if e.kind == "max_deliveries" and e is not settled), None)
        if gone is not None:
            resume = min(resume, gone.at)
            marks.append((gone.at, SETTLING["max_deliveries"], "max_deliveries"))
        if deadline is not None and next_at is not None and next_at < deadline and settled is None:
            deadline = None  # redelivered before its wait ran out (a push consumer after a restart, say)
        end = min(t for t in (now, deadline, settled.at if settled else None, next_at) if t is not None)
        bar_key = "other" if d.source == "inbox-tap" else "bar"
        fill(d.at, end, OTHER_BAR if bar_key == "other" else BAR, bar_key)
        if settled is None and deadline is not None:
            if now < deadline:  # the cell the clock is in counts as run
                fill(start + -(-(now - start) // spc) * spc, deadline, LEFT, "left")
            elif 0 < max_deliver <= d.deliveries:  # its last try ran out: never redelivered
                marks.append((deadline, SETTLING["max_deliveries"], "max_deliveries"))
            else:
                fill(deadline, resume, WAITING, "waiting")
                marks.append((deadline, STEP, "step") if backoff else (deadline, EXPIRY, "expired"))
        if settled is not None:
            if settled.kind == "nak":
                eligible = settled.at + (settled.delay or 0.0)
                fill(settled.at, min(eligible, next_at) if next_at is not None else eligible, DELAY, "delay")
                # the dots start in the first cell after the delay (its last cell stays dashed)
                fill(max(eligible, start + -(-(eligible - start) // spc) * spc), resume, WAITING, "waiting")
            marks.append((settled.at, SETTLING[settled.kind], settled.kind))
        marks.append((d.at, tries, bar_key))
    tries_at = {cell(t): t for t, _, key in marks if key in ("bar", "other")}
    for t, glyph, key in marks:  # marks over bars; the delivery's try last, so it always shows
        at = cell(t)
        if key not in ("bar", "other") and at in tries_at and at is not None:
            # in a delivery's own cell: just after its try if it came after it (settled at once),
            # just before if it came first (the previous try ran out and this one followed at once)
            at = at - 1 if t < tries_at[at] and at > 0 and at - 1 not in tries_at else at + 1
            at = at if at < cells else None
        if at is not None:
            row[at] = (glyph, key)
    return row


def show_seconds(seconds: float) -> str:
    return f"{seconds:g} s" if seconds < 60 else f"{seconds / 60:g} m"


def render_time_axis(
    title: str, events_by_seq: Mapping[int, Sequence], ack_wait: float, now: float, width: int,
    seconds_per_cell: float = 1.0, scroll: float = 0.0, styles: Mapping[str, Style] | None = None,
    relative_times: bool = True, backoff: Sequence[float] = (), max_deliver: int = 0,
    first_at: float | None = None, not_drawn: int = 0,
) -> Text:
    """``first_at`` / ``not_drawn``: for a log already cut to the newest
    sequences (the time slider's), the first event's time and how many
    sequences were left out."""
    styles = styles or {}
    cells = max(1, width - LABEL_W)  # never wider than the room: a narrow column wrapped the ticks ("|10s" / "|15s")
    text = Text()
    if backoff:
        wait = "backoff " + " → ".join(f"{b:g}s" for b in backoff)
    else:
        wait = f"ack wait {show_seconds(ack_wait)}" if ack_wait else "ack wait unknown"
    limit = f" · max {max_deliver} deliveries" if max_deliver > 0 else ""
    # the keys (z zoom, [ ] scroll, ? legend) are in the footer and on ?
    text.append(f"{title} · {zoom_label(seconds_per_cell)} per cell · {wait}{limit}", style="bold")
    if scroll:
        text.append(f" · {show_seconds(scroll)} back (] returns)", style="dim")
    text.append("\n")
    starts = [e.at for events in events_by_seq.values() for e in events]
    if not starts:
        text.append("Nothing yet. Fetch a message, or let any worker consume.", style="italic")
        return text
    t0 = min(starts) if first_at is None else min(first_at, min(starts))
    start = window_start(t0, now, cells, seconds_per_cell, scroll)
    # the axis: a tick every 5 cells, labelled with the time since the first event
    axis = [" "] * cells
    free = 0  # a label longer than the room to the next tick takes that tick's place too
    for i in range(0, cells, tick_every(seconds_per_cell)):
        if i < free:
            continue
        since = (start - t0) + i * seconds_per_cell
        label = tick_label(since) if relative_times else "|"
        if i + len(label) > cells:
            label = "|"  # a tick, not a label cut short ("|1" for "|15s")
        for j, ch in enumerate(label):
            axis[i + j] = ch
        free = i + len(label)  # (the next label's own bar keeps them apart)
    text.append(" " * LABEL_W)
    text.append("".join(axis), style=styles.get("axis", Style(dim=True)))
    seqs = sorted(events_by_seq)
    if len(seqs) + not_drawn > MAX_ROWS:
        text.append(f"\n{len(seqs) + not_drawn - MAX_ROWS} earlier sequences not drawn (the newest {MAX_ROWS} are)",
                    style="dim")
        seqs = seqs[-MAX_ROWS:]
    for seq in seqs:
        text.append("\n")
        text.append(f"seq {seq:<4} "[:LABEL_W], style="bold")
        for glyph, key in paint_row(events_by_seq[seq], ack_wait, now, start, cells, seconds_per_cell,
                                    backoff, max_deliver):
            text.append(glyph, styles.get(key, Style()))
    return text


def legend_text(styles: Mapping[str, Style] | None = None) -> Text:
    styles = styles or {}
    text = Text("The redelivery timeline (Pull hand)\n", style="bold")
    for glyph, key, meaning in LEGEND:
        text.append(f"  {glyph:>3} ", styles.get(key, Style()))
        text.append(f" {meaning}\n")
    text.append(f"  keys: {KEYS}\n", style="dim")
    return text


class TimeAxis(Static):
    """The pull hand's consumer on a time axis; redrawn 4 times a second while shown."""

    COMPONENT_CLASSES = {
        "axis--bar", "axis--left", "axis--expired", "axis--waiting", "axis--ack", "axis--nak",
        "axis--progress", "axis--term", "axis--max_deliveries", "axis--axis", "axis--other", "axis--step",
        "axis--delay",
    }
    DEFAULT_CSS = """
    TimeAxis { height: auto; margin-top: 1; }
    TimeAxis > .axis--bar { color: $warning; }
    TimeAxis > .axis--left { color: $warning 50%; }
    TimeAxis > .axis--expired { color: $error; text-style: bold; }
    TimeAxis > .axis--waiting { color: $error 60%; }
    TimeAxis > .axis--ack { color: $success; text-style: bold; }
    TimeAxis > .axis--nak { color: $error; text-style: bold; }
    TimeAxis > .axis--progress { color: $accent; text-style: bold; }
    TimeAxis > .axis--term { color: $error; text-style: bold; }
    TimeAxis > .axis--max_deliveries { color: $error; text-style: bold reverse; }
    TimeAxis > .axis--axis { color: $foreground 50%; }
    TimeAxis > .axis--other { color: $secondary; }
    TimeAxis > .axis--step { color: $error; text-style: bold; }
    TimeAxis > .axis--delay { color: $error 60%; }
    """

    def __init__(self, events: Callable[[], tuple[str, Mapping[int, Sequence], float] | None],
                 clock: Callable[[], float] = time.monotonic, **kw):
        """``events`` says what to draw: a ``Scene`` (or the tuple of its fields), or None."""
        super().__init__("", **kw)
        self.events = events
        self.clock = clock
        self.seconds_per_cell = ZOOMS[0]
        self.scroll = 0.0
        self._shape: tuple | None = None  # (width, lines, title) of what is drawn

    def on_mount(self) -> None:
        if getattr(self.app, "stable_display", False):
            # pinned pictures (snapshots, screenshots): one cell holds the whole
            # scene and the clock stops at the last event, so timing cannot move a mark
            self.seconds_per_cell = 60.0
        self.redraw()
        self.set_interval(0.25, self._tick)

    def _tick(self) -> None:
        from ..panes.base import is_showing

        if is_showing(self):
            self.redraw()

    def styles_map(self) -> dict[str, Style]:
        return {name.removeprefix("axis--"): self.get_component_rich_style(name, partial=True)
                for name in self.COMPONENT_CLASSES}

    def zoom(self) -> None:
        self.seconds_per_cell = ZOOMS[(ZOOMS.index(self.seconds_per_cell) + 1) % len(ZOOMS)]
        self.scroll = 0.0
        self.redraw()

    def scroll_by(self, halves: int) -> None:
        """[ back, ] forward, by half a window; forward past now follows now again."""
        cells = max(1, (self.content_region.width or 40) - LABEL_W)
        self.scroll = max(0.0, self.scroll - halves * cells * self.seconds_per_cell / 2)
        self.redraw()

    def redraw(self) -> None:
        what = self.events()
        if what is None:
            self.update("")
            self._shape = None
            return
        scene = Scene(*what)
        width = self.content_region.width or 40
        stable = getattr(self.app, "stable_display", False)
        now = self.clock()
        if stable:
            now = max((e.at for events in scene.events_by_seq.values() for e in events), default=now)
        text = render_time_axis(scene.title, scene.events_by_seq, scene.ack_wait, now, width,
                                self.seconds_per_cell, self.scroll, self.styles_map(),
                                relative_times=not stable, backoff=scene.backoff,
                                max_deliver=scene.max_deliver)
        # redrawn 4 times a second: as many lines and the same title as before keep
        # its height (the rows are never wider than the axis), so no layout
        lines = text.plain.split("\n")
        shape = (width, len(lines), lines[0], tuple(line for line in lines if len(line) > width))
        self.update(text, layout=shape != self._shape)
        self._shape = shape
