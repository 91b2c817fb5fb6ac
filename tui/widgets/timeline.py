"""The redelivery timeline on a time axis: one row per stream sequence.

Each delivery is a bar as long as the consumer's ack wait, filling as the
countdown runs (an in-progress restarts it); an ack, nak, term or max
deliveries stops it with a mark at the moment it happened; a bar that runs
out gets the expiry mark, and a dotted line follows until the next delivery —
on a pull consumer nothing happens until someone pulls again. Deliveries the
app only learned of from another program's ack have no start to draw from:
they get the try number as a mark where their ack was seen.

``render_time_axis`` is pure (events, ack wait, a clock reading in; a
``rich.Text`` out) so the seed's RDL story is tested with a fake clock;
``TimeAxis`` is the widget in the pull hand that feeds it at 4 Hz.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Sequence

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

ZOOMS = (1.0, 10.0, 60.0, 0.25)  # seconds per cell, in the order `z` steps through them
SETTLING = {"ack": "✓", "nak": "↺", "term": "⊘", "max_deliveries": "☠"}
PROGRESS, EXPIRY, BAR, LEFT, WAITING = "↻", "◔", "█", "░", "·"
LABEL_W = 9  # "seq 1234 "

LEGEND = (
    ("1█", "bar", "a delivery (the digit is its try) and the part of its ack wait that has run"),
    ("░", "left", "the rest of the ack wait, still running"),
    ("◔", "expired", "the ack wait ran out: eligible for redelivery"),
    ("·", "waiting", "eligible, not redelivered yet (a pull consumer waits for the next pull)"),
    ("✓", "ack", "acked"),
    ("↺", "nak", "nak'd: redelivered (after its delay, if one was given)"),
    ("↻", "progress", "in progress: the ack wait starts again"),
    ("⊘", "term", "terminated: never redelivered"),
    ("☠", "max_deliveries", "max deliveries reached: never redelivered"),
)


def zoom_label(seconds_per_cell: float) -> str:
    return f"{seconds_per_cell:g} s" if seconds_per_cell < 60 else f"{seconds_per_cell / 60:g} m"


def tick_every(spc: float) -> int:
    """Cells between two labelled ticks: 5 (5 s, 50 s, 5 m), or 8 (2 s) at 0.25 s per cell."""
    return 8 if spc < 1 else 5


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


def paint_row(events: Sequence, ack_wait: float, now: float, start: float, cells: int, spc: float) -> list[tuple[str, str]]:
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
        tries = str(d.deliveries) if 0 < d.deliveries < 10 else "+"
        if d.source == "other program":  # no start time: only the try, where we saw it
            marks.append((d.at, tries, "bar"))
            for e in following:
                if e.kind in SETTLING:
                    marks.append((e.at, SETTLING[e.kind], e.kind))
            continue
        deadline = d.at + ack_wait if ack_wait else None
        settled = None
        for e in following:
            if e.kind == "progress" and settled is None:
                deadline = e.at + ack_wait if ack_wait else deadline
                marks.append((e.at, PROGRESS, "progress"))
            elif e.kind in SETTLING and settled is None:
                settled = e
        end = min(t for t in (now, deadline, settled.at if settled else None) if t is not None)
        fill(d.at, end, BAR, "bar")
        if settled is None and deadline is not None:
            if now < deadline:  # the cell the clock is in counts as run
                fill(start + -(-(now - start) // spc) * spc, deadline, LEFT, "left")
            else:
                fill(deadline, next_at if next_at is not None else now, WAITING, "waiting")
                marks.append((deadline, EXPIRY, "expired"))
        if settled is not None:
            marks.append((settled.at, SETTLING[settled.kind], settled.kind))
        marks.append((d.at, tries, "bar"))
    tries_cells = {cell(t) for t, _, key in marks if key == "bar"}
    for t, glyph, key in marks:  # marks over bars; the delivery's try last, so it always shows
        at = cell(t)
        if key != "bar" and at in tries_cells and at is not None and at + 1 < cells:
            at += 1  # settled within the delivery's own cell: the mark goes just after the try
        if at is not None:
            row[at] = (glyph, key)
    return row


def render_time_axis(
    title: str, events_by_seq: Mapping[int, Sequence], ack_wait: float, now: float, width: int,
    seconds_per_cell: float = 1.0, scroll: float = 0.0, styles: Mapping[str, Style] | None = None,
    relative_times: bool = True,
) -> Text:
    styles = styles or {}
    cells = max(10, width - LABEL_W)
    text = Text()
    wait = f"ack wait {ack_wait:g} s" if ack_wait else "ack wait unknown"
    # the keys (z zoom, [ ] scroll, ? legend) are in the footer and on ?
    text.append(f"{title} · {zoom_label(seconds_per_cell)} per cell · {wait}\n", style="bold")
    starts = [e.at for events in events_by_seq.values() for e in events]
    if not starts:
        text.append("Nothing yet. Fetch a message, or let any worker consume.", style="italic")
        return text
    t0 = min(starts)
    start = window_start(t0, now, cells, seconds_per_cell, scroll)
    # the axis: a tick every 5 cells, labelled with the time since the first event
    axis = [" "] * cells
    for i in range(0, cells, tick_every(seconds_per_cell)):
        since = (start - t0) + i * seconds_per_cell
        label = ("|" + (f"{since:g}s" if since < 600 else f"{since / 60:g}m")) if relative_times else "|"
        for j, ch in enumerate(label):
            if i + j < cells:
                axis[i + j] = ch
    text.append(" " * LABEL_W)
    text.append("".join(axis), style=styles.get("axis", Style(dim=True)))
    for seq in sorted(events_by_seq):
        text.append("\n")
        text.append(f"seq {seq:<4} "[:LABEL_W], style="bold")
        for glyph, key in paint_row(events_by_seq[seq], ack_wait, now, start, cells, seconds_per_cell):
            text.append(glyph, styles.get(key, Style()))
    return text


def legend_text(styles: Mapping[str, Style] | None = None) -> Text:
    styles = styles or {}
    text = Text("The redelivery timeline (Pull hand)\n", style="bold")
    for glyph, key, meaning in LEGEND:
        text.append(f"  {glyph:>3} ", styles.get(key, Style()))
        text.append(f" {meaning}\n")
    return text


class TimeAxis(Static):
    """The pull hand's consumer on a time axis; redrawn 4 times a second while shown."""

    COMPONENT_CLASSES = {
        "axis--bar", "axis--left", "axis--expired", "axis--waiting", "axis--ack", "axis--nak",
        "axis--progress", "axis--term", "axis--max_deliveries", "axis--axis",
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
    """

    def __init__(self, events: Callable[[], tuple[str, Mapping[int, Sequence], float] | None],
                 clock: Callable[[], float] = time.monotonic, **kw):
        """``events`` says what to draw: (title, events by sequence, ack wait), or None."""
        super().__init__("", **kw)
        self.events = events
        self.clock = clock
        self.seconds_per_cell = ZOOMS[0]
        self.scroll = 0.0

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
        cells = max(10, (self.content_region.width or 40) - LABEL_W)
        self.scroll = max(0.0, self.scroll - halves * cells * self.seconds_per_cell / 2)
        self.redraw()

    def redraw(self) -> None:
        what = self.events()
        if what is None:
            self.update("")
            return
        title, events_by_seq, ack_wait = what
        width = self.content_region.width or 40
        stable = getattr(self.app, "stable_display", False)
        now = self.clock()
        if stable:
            now = max((e.at for events in events_by_seq.values() for e in events), default=now)
        self.update(render_time_axis(title, events_by_seq, ack_wait, now, width, self.seconds_per_cell,
                                     self.scroll, self.styles_map(), relative_times=not stable))
