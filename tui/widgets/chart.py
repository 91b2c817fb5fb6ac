"""Rates over time as small block charts, as ``nats consumer graph`` draws them.

``ConsumerRates`` keeps the last minutes of a consumer's counters from the
consumers pane's polls; ``render_chart`` draws one series (oldest left, newest
right, eighth-blocks for the height) with its latest and highest value. Drawn
by hand with rich: the run-time dependencies are textual, nats-py, rich and
platformdirs only, and four charts of a few hundred points cost nothing
measurable at the pane's 2 Hz.
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

from rich.style import Style
from rich.table import Table
from rich.text import Text

EIGHTHS = " ▁▂▃▄▅▆▇█"
KEEP_SECONDS = 300.0  # five minutes of history


def columns(values: Sequence[float], width: int) -> list[float]:
    """At most ``width`` columns: the newest values, or bucket maxima when there are more
    (a burst must not average away)."""
    values = list(values)
    if len(values) <= width:
        return values
    out = []
    for i in range(width):
        lo, hi = i * len(values) // width, (i + 1) * len(values) // width
        out.append(max(values[lo:hi]))
    return out


def fmt_value(v: float) -> str:
    if v >= 10_000:
        return f"{v / 1000:.0f}k"
    if v >= 100 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.1f}"


def render_chart(title: str, values: Sequence[float], width: int, height: int = 3,
                 style: Style | None = None, unit: str = "") -> Text:
    """A title line (latest and highest value), then ``height`` rows of eighth-blocks."""
    cols = columns(values, max(1, width))
    top = max(cols, default=0.0)
    text = Text()
    latest = fmt_value(cols[-1]) if cols else "-"
    text.append(f"{title} ", style="bold")
    text.append(f"now {latest}{unit} · max {fmt_value(top)}{unit}", style="dim")
    for row in range(height - 1, -1, -1):
        text.append("\n")
        line = []
        for v in cols:
            eighths = round(v / top * height * 8) if top > 0 else 0
            line.append(EIGHTHS[max(0, min(8, eighths - row * 8))])
        text.append("".join(line).ljust(width), style or Style())
    return text


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

    def _per_second(self, index: int) -> list[float]:
        s = self.samples
        return [max(0, b[index] - a[index]) / (b[0] - a[0]) for a, b in zip(s, list(s)[1:]) if b[0] > a[0]]

    def delivered_per_second(self) -> list[float]:
        """Deliveries per second, redeliveries included (the consumer sequence counts every one)."""
        return self._per_second(1)

    def acked_per_second(self) -> list[float]:
        """How fast the ack floor moves, in deliveries per second (as nats consumer graph reads it)."""
        return self._per_second(2)

    def ack_pending(self) -> list[float]:
        return [float(x[3]) for x in self.samples]

    def pending(self) -> list[float]:
        return [float(x[4]) for x in self.samples]


class StreamRates:
    """The stream's last sequence and size over the last minutes: messages in/s and bytes."""

    def __init__(self, keep_seconds: float = KEEP_SECONDS):
        self.keep = keep_seconds
        self.samples: deque[tuple[float, int, int]] = deque()  # (time, last seq, bytes)

    def record(self, now: float, last_seq: int, size: int) -> None:
        self.samples.append((now, last_seq, size))
        while self.samples and self.samples[0][0] < now - self.keep:
            self.samples.popleft()

    def in_per_second(self) -> list[float]:
        """Messages stored per second (the last sequence moves once per message)."""
        s = list(self.samples)
        return [max(0, b[1] - a[1]) / (b[0] - a[0]) for a, b in zip(s, s[1:]) if b[0] > a[0]]

    def size(self) -> list[float]:
        return [float(x[2]) for x in self.samples]


def rates_view(name: str, rates: ConsumerRates, width: int, styles: dict[str, Style] | None = None,
               stream: tuple[str, StreamRates] | None = None) -> Table:
    """Two by two: delivered/s, acked/s; ack pending, pending — under the
    stream's messages in/s and bytes when ``stream`` (its name and rates) is given."""
    styles = styles or {}
    half = max(10, (width - 3) // 2)
    span = rates.samples[-1][0] - rates.samples[0][0] if len(rates.samples) > 1 else 0.0
    grid = Table.grid(padding=(0, 3))
    grid.add_column(width=half)
    grid.add_column(width=half)
    grid.add_row(Text(f"{name}, the last {span:.0f} s · g details", style="bold"), "")
    if stream is not None:
        stream_name, sr = stream
        grid.add_row(render_chart(f"{stream_name} in/s", sr.in_per_second(), half, height=2),
                     render_chart(f"{stream_name} bytes", sr.size(), half, height=2))
    grid.add_row(render_chart("Delivered/s", rates.delivered_per_second(), half, style=styles.get("delivered")),
                 render_chart("Acked/s", rates.acked_per_second(), half, style=styles.get("acked")))
    grid.add_row(render_chart("Ack pending", rates.ack_pending(), half, style=styles.get("ack_pending")),
                 render_chart("Pending", rates.pending(), half, style=styles.get("pending")))
    return grid
