"""One fetched, not yet acknowledged message in the pull hand."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, Label, Static

from ...client import FetchedMessage
from ...format import render_payload
from .nak_delay import show_delay

STATE_TEXT = {
    "acked": "✓ acknowledged",
    "naked": "↺ nak sent — will be redelivered",
    "termed": "⊘ terminated — never redelivered",
    "expired": "◔ ack wait expired — will be redelivered on the next pull",
}


class HandCard(Vertical):
    BINDINGS = [
        Binding("a", "act('ack')", "Ack", id="card.ack"),
        Binding("n", "act('nak')", "Nak", id="card.nak"),
        Binding("N", "act('nak_delay')", "Nak…", id="card.nak_delay"),
        Binding("i", "act('progress')", "Progress", id="card.progress"),
        Binding("t", "act('term')", "Term", id="card.term"),
        # here, not only on the hand: the cards' scroll container would take up/down first
        Binding("j,down", "move(1)", "Next card", id="card.next", show=False),
        Binding("k,up", "move(-1)", "Previous card", id="card.prev", show=False),
    ]
    can_focus = True
    state: reactive[str] = reactive("pending")

    @dataclass
    class Action(Message):
        card: "HandCard"
        action: str  # ack | nak | nak_delay (asks for the delay first) | progress | term

    def __init__(self, fm: FetchedMessage):
        super().__init__(id=f"card-{fm.stream_seq}-{fm.consumer_seq}")
        self.fm = fm
        self.nak_delay: float | None = None  # the delay of the nak sent, if any
        self._countdown: tuple[str, str] = ("", "")  # (state, text) the countdown label shows

    def compose(self) -> ComposeResult:
        fm = self.fm
        # tries and the two sequences first, in natscli's words (`tries: 2 / cons seq: 3 /
        # str seq: 2`): they are what the hand is about, and a narrow card wraps the
        # subject onto the next line rather than a sequence in two ("consumer seq" / "1")
        yield Label(
            Text(f"tries {fm.num_delivered} · str seq {fm.stream_seq} · cons seq {fm.consumer_seq} · {fm.subject}"),
            classes="card-head",
        )
        if fm.headers:
            yield Static(Text("\n".join(f"{k}: {v}" for k, v in fm.headers.items())), classes="card-headers")
        payload = render_payload(fm.data, "text")
        yield Static(Text(payload if len(payload) < 400 else payload[:400] + "…"), classes="card-payload")
        yield Label("", classes="card-countdown")
        with Horizontal(classes="card-buttons"):
            # short enough that all five fit a card at 80 columns; the footer has their keys
            yield Button("Ack", id="ack", variant="success", tooltip="a: ack")
            yield Button("Nak", id="nak", variant="warning", tooltip="n: nak, redeliver at once")
            yield Button("Nak…", id="nak_delay", tooltip="N: nak with a delay you type")
            yield Button("Progress", id="progress", tooltip="i: in progress, the ack wait starts again")
            yield Button("Term", id="term", variant="error", tooltip="t: term, never redeliver")

    def on_mount(self) -> None:
        self.tick(time.monotonic())

    def on_resize(self, event) -> None:
        # the five buttons need 37 columns in a row; in a narrower card (at 80
        # columns beside the tour: "Ack Nak Nak… Pr") they go two by two
        self.set_class(event.size.width - 4 < 37, "-narrow")

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_act(event.button.id or "")

    def action_move(self, step: int) -> None:
        # (not those being removed: focused, they would take every key with them)
        cards = [c for c in self.parent.query(HandCard) if c.display] if self.parent else [self]
        if self not in cards:  # this one is going: the first that stays
            if cards:
                cards[0].focus()
            return
        at = cards.index(self) + step
        if 0 <= at < len(cards):
            cards[at].focus()

    def action_act(self, action: str) -> None:
        if self.state in ("pending", "expired"):
            self.post_message(self.Action(self, action))

    def watch_state(self, state: str) -> None:
        for s in ("acked", "naked", "termed", "expired"):
            self.set_class(state == s, f"-{s}")
        self.set_class(state in ("acked", "naked", "termed"), "-settled")
        self.tick(time.monotonic())

    @property
    def remaining(self) -> float:
        return self.fm.ack_deadline() - time.monotonic()

    def tick(self, now: float) -> None:
        """Refresh the countdown; flips to expired when the ack wait runs out."""
        if self.state == "pending" and self.fm.ack_wait and now >= self.fm.ack_deadline():
            self.state = "expired"
            return
        label = self.query(".card-countdown")
        if not label:
            return
        if self.state == "pending":
            if getattr(self.app, "stable_display", False):
                text = f"◷ ack wait {self.fm.ack_wait:g}s"  # (snapshots: no clock)
            else:
                text = f"◷ {max(0.0, self.fm.ack_deadline() - now):4.1f}s left to ack"  # the footer shows the keys
        elif self.state == "naked" and self.nak_delay:
            text = f"↺ nak sent with a {show_delay(self.nak_delay)} delay — will be redelivered after it"
        else:
            text = STATE_TEXT.get(self.state, self.state)
        if text == self._countdown[1]:
            return
        # a countdown step ("2.1s" -> "2.0s") keeps the label's size: no layout of
        # the screen, 4 a second per card, shown or not (the hand ticks while hidden)
        same_size = (self.state, len(text)) == (self._countdown[0], len(self._countdown[1]))
        self._countdown = (self.state, text)
        label.first(Label).update(text, layout=not same_size)
