"""The redelivery timeline: per stream sequence, every delivery, ack, nak, term,
ack-wait expiry and max-deliveries event for one consumer.

Events come from the app's own actions, the server's advisories, the
``$JS.ACK`` tap (acks by other programs, which also reveal their deliveries)
and the ``_INBOX`` tap (other programs' pulled deliveries as they happen).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from datetime import datetime

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


TWIN_SECONDS = 0.5  # the app's own in-progress and the ack tap's sighting of it
KEEP_SEQUENCES = 500  # per consumer


class DeliveryTimeline(Static):
    """Renders the events of the consumer set by ``show_consumer``."""

    def __init__(self, **kw):
        super().__init__("", **kw)
        self.events: dict[tuple[str, str], dict[int, list[DeliveryEvent]]] = defaultdict(lambda: defaultdict(list))
        self.target: tuple[str, str] | None = None
        self._redraw_due = False
        # per (stream, consumer): the creation time of the consumer the history is about
        self.created: dict[tuple[str, str], datetime] = {}

    def incarnation(self, stream: str, consumer: str, created: datetime | None, born: float | None) -> bool:
        """The consumer's creation time (consumer info's ``created``), ``born``
        the same moment on the ``time.monotonic`` clock. History belongs to one
        incarnation of a consumer: a consumer deleted and made again under the
        same name starts with an empty history, or its first delivery would read
        as a twin of the old one's and never be drawn. Events seen before the
        new one was born are the old one's and go; those after are kept (an
        advisory may come before the info that tells of the new consumer).
        True when a consumer known before was made again."""
        if created is None:
            return False
        key = (stream, consumer)
        known = self.created.get(key)
        if known == created:
            return False
        self.created[key] = created
        per_consumer = self.events.get(key)
        if not per_consumer or born is None:
            return known is not None
        dropped = False
        for seq in list(per_consumer):
            kept = [e for e in per_consumer[seq] if e.at >= born]
            if len(kept) != len(per_consumer[seq]):
                dropped = True
                if kept:
                    per_consumer[seq] = kept
                else:
                    del per_consumer[seq]
        if dropped and self.target == key:
            self.redraw()
        return known is not None

    def show_consumer(self, stream: str | None, consumer: str | None) -> None:
        self.target = (stream, consumer) if stream and consumer else None
        self.redraw()

    def clear_target(self) -> None:
        if self.target:
            self.events.pop(self.target, None)
        self.redraw()

    def add(self, event: DeliveryEvent) -> None:
        observed = getattr(self.app, "observed", None)
        if observed is not None:  # a remote server's history, for the time slider
            observed.seen(event)
        per_seq = self.events[(event.stream, event.consumer)][event.stream_seq]
        same = next((i for i, e in enumerate(per_seq) if event.kind != "expired"
                     and e.kind == event.kind and e.deliveries == event.deliveries
                     # in progress may be sent many times per delivery: only a twin sighting is the same
                     and (event.kind != "progress" or abs(e.at - event.at) < TWIN_SECONDS)), None)
        if same is not None:
            # the same event seen twice (our action and the ack tap, an advisory
            # and the tap): keep the first sighting, with what the later one adds
            first = per_seq[same]
            if event.delay is not None and first.delay is None:
                per_seq[same] = replace(first, delay=event.delay)
            elif event.source == "app" and first.source == "inbox-tap":
                per_seq[same] = replace(first, source="app")
            elif not (event.source == "app" and self._redraw_due):
                return  # (the user's own key, seen first on a tap, is still drawn at once below)
            self._changed(event)
            return
        if event.kind in ("ack", "nak", "term", "progress") and event.deliveries and not any(
            e.kind == "deliver" and e.deliveries == event.deliveries for e in per_seq
        ):
            # delivered to another program: we only learn of it from its ack
            per_seq.append(DeliveryEvent(event.stream, event.consumer, event.stream_seq, "deliver",
                                         event.deliveries, event.at, "other program"))
        per_seq.append(event)
        per_consumer = self.events[(event.stream, event.consumer)]
        if len(per_consumer) > 2 * KEEP_SEQUENCES:  # a busy consumer: forget the oldest sequences
            for seq in sorted(per_consumer)[:-KEEP_SEQUENCES]:
                del per_consumer[seq]
        self._changed(event)

    def _changed(self, event: DeliveryEvent) -> None:
        if self.target != (event.stream, event.consumer):
            return
        if event.source == "app":  # the user's own key: on screen at once
            self.redraw()
        elif not self._redraw_due:  # the taps: at most 4 redraws a second (a busy worker acks thousands)
            self._redraw_due = True
            self.set_timer(0.25, self._due)

    def _due(self) -> None:
        self._redraw_due = False
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
                if e.source in ("other program", "inbox-tap"):
                    label += " (other)"
                if e.kind == "nak" and e.delay:
                    label += f" {e.delay:g}s"
                text.append(label, style=style)
                if not stable and i:
                    text.append(f" +{e.at - start:.1f}s", style="dim")
            text.append("\n")
        self.update(text)
