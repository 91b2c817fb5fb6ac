"""The redelivery timeline: per stream sequence, every delivery, ack, nak, term,
ack-wait expiry and max-deliveries event for one consumer.

Events come from the app's own actions, the server's advisories, and the
``$JS.ACK`` tap (acks by other programs, which also reveal their deliveries).
"""

from __future__ import annotations

from collections import defaultdict

from rich.text import Text
from textual.widgets import Static

from ...client import DeliveryEvent

GLYPHS = {
    "deliver": ("▶", "bold"),
    "ack": ("✓ ack", "bold"),
    "nak": ("↺ nak", "bold"),
    "progress": ("… in progress", ""),
    "term": ("⊘ term", "bold"),
    "expired": ("◔ ack wait expired", "italic"),
    "max_deliveries": ("☠ max deliveries", "bold reverse"),
}


class DeliveryTimeline(Static):
    """Renders the events of the consumer set by ``show_consumer``."""

    def __init__(self, **kw):
        super().__init__("", **kw)
        self.events: dict[tuple[str, str], dict[int, list[DeliveryEvent]]] = defaultdict(lambda: defaultdict(list))
        self.target: tuple[str, str] | None = None

    def show_consumer(self, stream: str | None, consumer: str | None) -> None:
        self.target = (stream, consumer) if stream and consumer else None
        self.redraw()

    def clear_target(self) -> None:
        if self.target:
            self.events.pop(self.target, None)
        self.redraw()

    def add(self, event: DeliveryEvent) -> None:
        per_seq = self.events[(event.stream, event.consumer)][event.stream_seq]
        if event.kind != "expired" and any(
            e.kind == event.kind and e.deliveries == event.deliveries for e in per_seq
        ):
            return  # the same ack seen by our action and by the ack tap
        if event.kind in ("ack", "nak", "term", "progress") and event.deliveries and not any(
            e.kind == "deliver" and e.deliveries == event.deliveries for e in per_seq
        ):
            # delivered to another program: we only learn of it from its ack
            per_seq.append(DeliveryEvent(event.stream, event.consumer, event.stream_seq, "deliver",
                                         event.deliveries, event.at, "other program"))
        per_seq.append(event)
        if self.target == (event.stream, event.consumer):
            self.redraw()

    def redraw(self) -> None:
        if self.target is None:
            self.update(Text("Timeline — pick a pull consumer", style="italic"))
            return
        stable = getattr(self.app, "stable_display", False)
        text = Text()
        text.append(f"Timeline {self.target[0]} › {self.target[1]}\n", style="bold underline")
        per_consumer = self.events.get(self.target) or {}
        if not per_consumer:
            text.append("Nothing yet. Fetch a message, or let any worker consume.\n", style="italic")
        for seq in sorted(per_consumer):
            events = per_consumer[seq]
            start = events[0].at
            text.append(f"seq {seq:<4}", style="bold")
            for i, e in enumerate(events):
                glyph, style = GLYPHS.get(e.kind, (e.kind, ""))
                if i:
                    text.append(" → ")
                label = f"{glyph} #{e.deliveries}" if e.kind == "deliver" else glyph
                if e.source == "other program":
                    label += " (other)"
                text.append(label, style=style)
                if not stable and i:
                    text.append(f" +{e.at - start:.1f}s", style="dim")
            text.append("\n")
        self.update(text)
