"""Rates over time as small block charts, as ``nats consumer graph`` and
``nats stream graph`` draw them.

``ConsumerRates`` and ``StreamRates`` keep the last minutes of a consumer's
and a stream's counters from the consumers pane's polls and derive the rates;
``render_chart`` draws one series on a time axis (the window ends now, one
column per slice of it, eighth-blocks for the height) with its latest and
highest value. A column keeps the highest value of its slice, so a burst does
not average away when the window is zoomed out.

Drawn by hand with rich, not with a plotting library: the run-time
dependencies are textual, nats-py, rich and platformdirs only, and building the
six charts takes a few milliseconds per 2 Hz poll (about 2.4 ms for the 1 m
window, 15 ms for 15 m of samples; each reads only the samples in its window).
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text

EIGHTHS = " ▁▂▃▄▅▆▇█"
WINDOWS = (60.0, 300.0, 900.0)  # the time window `z` steps through: 1 m, 5 m, 15 m
KEEP_SECONDS = WINDOWS[-1]

Points = Sequence[tuple[float, float]]  # (monotonic time, value), oldest first


def window_label(seconds: float) -> str:
    return f"{seconds:g} s" if seconds < 60 else f"{seconds / 60:g} m"


def columns(values: Sequence[float], width: int) -> list[float]:
    """At most ``width`` columns: the values, or bucket maxima when there are more
    (a burst must not average away)."""
    values = list(values)
    if len(values) <= width:
        return values
    out = []
    for i in range(width):
        lo, hi = i * len(values) // width, (i + 1) * len(values) // width
        out.append(max(values[lo:hi]))
    return out


def time_columns(points: Points, now: float, window: float, width: int) -> list[float | None]:
    """The window ending at ``now`` in ``width`` equal slices: each slice's highest
    value; a slice with no sample between two that have one keeps the value
    before it (the poll is slower than a slice); None before the first sample."""
    cols: list[float | None] = [None] * width
    begin, step = now - window, window / width
    for t, v in points:
        i = int((t - begin) // step)
        if 0 <= i < width:
            cols[i] = v if cols[i] is None else max(cols[i], v)
        elif i >= width:  # a sample stamped a hair after now
            cols[-1] = v if cols[-1] is None else max(cols[-1], v)
    last = None
    for i, v in enumerate(cols):
        if v is None and last is not None:
            cols[i] = last
        elif v is not None:
            last = v
    return cols


def fmt_value(v: float, unit: str = "") -> str:
    if unit == "B":  # sizes: 980B, 1.9KiB, 98KiB, 1.2MiB
        for scale, suffix in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
            if v >= scale:
                return f"{v / scale:.1f}{suffix}" if v < 10 * scale else f"{v / scale:.0f}{suffix}"
        return f"{v:.0f}B"
    if v >= 10_000_000:
        return f"{v / 1_000_000:.0f}M"
    if v >= 10_000:
        return f"{v / 1000:.0f}k"
    if v >= 100 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.1f}"


def render_chart(title: str, values: Sequence[float | None], width: int, height: int = 3,
                 style: Style | None = None, unit: str = "") -> Text:
    """A title line (latest and highest value), then ``height`` rows of eighth-blocks.

    ``values`` are the columns, left to right (None: no sample there yet); a
    longer list is bucketed down to ``width``."""
    cols = columns(values, max(1, width)) if None not in values else list(values)[-max(1, width):]
    known = [v for v in cols if v is not None]
    top = max(known, default=0.0)
    text = Text()
    latest = fmt_value(known[-1], unit) if known else "-"
    info = f"now {latest} · max {fmt_value(top, unit)}"
    if len(title) + 1 + len(info) > width:  # one line, always: the chart's rows must not move
        info = f"now {latest}"
    text.append(f"{title} "[:width], style="bold")
    text.append(info[:max(0, width - len(title) - 1)], style="dim")
    for row in range(height - 1, -1, -1):
        text.append("\n")
        line = []
        for v in cols:
            eighths = round(v / top * height * 8) if top > 0 and v is not None else 0
            line.append(EIGHTHS[max(0, min(8, eighths - row * 8))])
        text.append("".join(line).ljust(width), style or Style())
    return text


def recent(samples: deque, since: float | None) -> list[tuple]:
    """The samples from ``since`` on, and the one before it (a rate needs a pair),
    walking from the newest end: a 1 m window does not pay for 15 m of history."""
    if since is None:
        return list(samples)
    out = []
    for x in reversed(samples):
        out.append(x)
        if x[0] < since:
            break
    out.reverse()
    return out


def per_second(samples: Sequence[tuple], index: int) -> list[tuple[float, float]]:
    """How fast field ``index`` of the samples moved, stamped at the later sample of each pair."""
    out = []
    for a, b in zip(samples, samples[1:]):
        if b[0] > a[0]:
            out.append((b[0], max(0, b[index] - a[index]) / (b[0] - a[0])))
    return out


class ConsumerRates:
    """One consumer's counters over the last minutes, and the rates derived from them."""

    def __init__(self, keep_seconds: float = KEEP_SECONDS):
        self.keep = keep_seconds
        # (time, delivered consumer seq, ack floor consumer seq, ack pending, pending)
        self.samples: deque[tuple[float, int, int, int, int]] = deque()

    def record(self, now: float, delivered: int, ack_floor: int, ack_pending: int, pending: int) -> None:
        self.samples.append((now, delivered, ack_floor, ack_pending, pending))
        while self.samples and self.samples[0][0] < now - self.keep:
            self.samples.popleft()

    def delivered(self, since: float | None = None) -> list[tuple[float, float]]:
        """Deliveries per second, redeliveries included (the consumer sequence counts every one)."""
        return per_second(recent(self.samples, since), 1)

    def acked(self, since: float | None = None) -> list[tuple[float, float]]:
        """How fast the ack floor moves, in deliveries per second (as nats consumer graph reads it)."""
        return per_second(recent(self.samples, since), 2)

    def ack_pending_points(self, since: float | None = None) -> list[tuple[float, float]]:
        return [(x[0], float(x[3])) for x in recent(self.samples, since)]

    def pending_points(self, since: float | None = None) -> list[tuple[float, float]]:
        return [(x[0], float(x[4])) for x in recent(self.samples, since)]

    # the values alone, oldest first
    def delivered_per_second(self) -> list[float]:
        return [v for _, v in self.delivered()]

    def acked_per_second(self) -> list[float]:
        return [v for _, v in self.acked()]

    def ack_pending(self) -> list[float]:
        return [v for _, v in self.ack_pending_points()]

    def pending(self) -> list[float]:
        return [v for _, v in self.pending_points()]


class StreamRates:
    """The stream's sequences and size over the last minutes: messages and bytes in per second."""

    def __init__(self, keep_seconds: float = KEEP_SECONDS):
        self.keep = keep_seconds
        # (time, last seq, bytes stored, first seq, messages stored)
        self.samples: deque[tuple[float, int, int, int, int]] = deque()

    def record(self, now: float, last_seq: int, size: int, first_seq: int = 0, messages: int = 0) -> None:
        self.samples.append((now, last_seq, size, first_seq, messages))
        while self.samples and self.samples[0][0] < now - self.keep:
            self.samples.popleft()

    def messages_in(self, since: float | None = None) -> list[tuple[float, float]]:
        """Messages stored per second (the last sequence moves once per message, as nats stream graph reads it)."""
        return per_second(recent(self.samples, since), 1)

    def bytes_in(self, since: float | None = None) -> list[tuple[float, float]]:
        """Bytes stored per second. Exact while nothing left the stream (the
        message count grew by as much as the last sequence); when messages were
        removed meanwhile (limits, per-subject limits, deletes, acks on a
        workqueue) the stored size cannot tell what came in, so it is the
        messages in times the stream's average stored message size."""
        out = []
        s = recent(self.samples, since)
        for a, b in zip(s, s[1:]):
            dt = b[0] - a[0]
            if dt <= 0:
                continue
            if b[4] - a[4] == b[1] - a[1] and b[2] >= a[2]:  # as many more stored as came in
                out.append((b[0], (b[2] - a[2]) / dt))
            else:
                avg = b[2] / b[4] if b[4] else 0.0
                out.append((b[0], max(0, b[1] - a[1]) * avg / dt))
        return out

    def in_per_second(self) -> list[float]:
        return [v for _, v in self.messages_in()]

    def size(self) -> list[float]:
        return [float(x[2]) for x in self.samples]


def chart_grid(width: int) -> tuple[Table, int]:
    half = max(10, (width - 3) // 2)
    grid = Table.grid(padding=(0, 3))
    grid.add_column(width=half)
    grid.add_column(width=half)
    return grid, half


def rates_view(name: str | None, rates: ConsumerRates | None, width: int, styles: dict[str, Style] | None = None,
               stream: tuple[str, StreamRates] | None = None, window: float = WINDOWS[0],
               now: float | None = None) -> Group:
    """Two by two: delivered/s, acked/s; ack pending, pending — under the
    stream's messages in/s and bytes in/s when ``stream`` (its name and rates)
    is given; over the last ``window`` seconds up to ``now`` (the newest sample
    when not given). Without a consumer (``rates`` None) only the stream's."""
    styles = styles or {}
    if now is None:
        stamps = [r.samples[-1][0] for r in (rates, stream[1] if stream else None) if r is not None and r.samples]
        now = max(stamps, default=0.0)
    who = name if rates is not None and name else (stream[0] if stream else "")
    grid, half = chart_grid(width)
    title = Text(f"{who} · the last {window_label(window)} · z zoom (1 m, 5 m, 15 m) · g details", style="bold")

    def chart(title: str, points: Points, style_key: str = "", height: int = 3, unit: str = "") -> Text:
        return render_chart(title, time_columns(points, now, window, half), half, height=height,
                            style=styles.get(style_key), unit=unit)

    since = now - window
    if stream is not None:
        stream_name, sr = stream
        grid.add_row(chart(f"{stream_name} in/s", sr.messages_in(since), "stream", height=2),
                     chart(f"{stream_name} bytes/s", sr.bytes_in(since), "stream", height=2, unit="B"))
    if rates is not None:
        grid.add_row(chart("Delivered/s", rates.delivered(since), "delivered"),
                     chart("Acked/s", rates.acked(since), "acked"))
        grid.add_row(chart("Ack pending", rates.ack_pending_points(since), "ack_pending"),
                     chart("Pending", rates.pending_points(since), "pending"))
    # the time axis, once under both columns: the window's start on the left, now on the right
    left = f"-{window_label(window)}"
    axis = Text(left + "now".rjust(half - len(left)), style="dim")
    grid.add_row(axis, axis.copy())
    return Group(title, grid)


def legend_text() -> Text:
    """What `?` says about the charts in the consumers pane."""
    text = Text("Rates over time (Consumers, g)\n", style="bold")
    for line in (
        "in/s, bytes/s: what the stream stored per second (its last sequence moving)",
        "Delivered/s: deliveries, redeliveries too · Acked/s: the ack floor moving",
        "Ack pending: delivered, not acked yet · Pending: not delivered yet",
        "a column is the highest value in its slice of the window; right is now",
    ):
        text.append(f"  {line}\n")
    text.append("  keys: g charts / details · z window (1 m, 5 m, 15 m) · ? this legend\n", style="dim")
    return text
