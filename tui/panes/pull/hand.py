"""The pull hand: fetch N from a pull consumer without acking, then decide per
message — ack, nak (with an optional delay), in progress, term — or let the ack
wait run out and watch the message come back with tries + 1."""

from __future__ import annotations

import time
from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label

from ...client import ConsumerSummary, DeliveryEvent, FetchedMessage, NatsError
from ...format import parse_int
from ...widgets.timeline import Scene, TimeAxis
from ..base import WritesGuard, is_showing
from .card import HandCard
from .nak_delay import DEFAULT_NAK_DELAY, NakDelayDialog, show_delay
from .timeline import DeliveryTimeline


class PullHand(WritesGuard, Vertical):
    WRITE_ACTIONS = frozenset({"fetch"})
    WRITE_BUTTONS = ("pull-fetch",)
    BINDINGS = [
        Binding("f", "fetch", "Fetch", id="pull.fetch"),
        Binding("c", "clear", "Clear settled", id="pull.clear"),
        Binding("j,down", "card(1)", "Next card", id="pull.next", show=False),
        Binding("k,up", "card(-1)", "Previous card", id="pull.prev", show=False),
        Binding("z", "zoom", "Zoom timeline", id="pull.zoom"),
        Binding("left_square_bracket", "scroll_axis(1)", "Timeline back", id="pull.back", key_display="[", show=False),
        Binding("right_square_bracket", "scroll_axis(-1)", "Timeline forward", id="pull.forward", key_display="]", show=False),
        Binding("question_mark", "legend", "Help, legend", id="pull.legend", key_display="?"),
    ]

    @dataclass
    class Fetched(Message):
        stream: str
        consumer: str
        messages: list[FetchedMessage]
        error: str = ""

    @dataclass
    class Delivery(Message):
        """A timeline event from the advisory / ack-tap subscription."""

        event: DeliveryEvent

    @dataclass
    class Acted(Message):
        card: HandCard
        action: str
        error: str = ""
        delay: float | None = None

    def __init__(self, **kw):
        super().__init__(**kw)
        self.stream: str | None = None
        self.consumer: str | None = None
        self._subscribed_generation = 0
        self.taps_ready = False  # subscribe_events done (the tests wait for it)
        self.nak_delay = DEFAULT_NAK_DELAY  # the last delay picked for N, offered again next time
        self.consumer_config: ConsumerSummary | None = None
        self._last_card: HandCard | None = None  # focused again when the hand is shown again
        self._ticks = 0

    def compose(self) -> ComposeResult:
        with Horizontal(id="pull-bar"):
            yield Label("Pick a pull consumer in the Consumers pane", id="pull-target")
            yield Label("fetch")
            yield Input("1", id="pull-batch", max_length=4, type="integer")
            yield Button("Fetch", id="pull-fetch", variant="primary")
            yield Label("", id="pull-status")
        with Horizontal(id="pull-body"):
            yield VerticalScroll(id="pull-cards")
            with VerticalScroll(id="pull-timeline"):
                yield DeliveryTimeline(id="timeline")
                yield TimeAxis(self._axis_events, id="time-axis")

    def on_mount(self) -> None:
        self.watch(self.app, "client_generation", self._client_changed)
        self.set_interval(0.25, self._tick)
        self.query_one(DeliveryTimeline).redraw()
        self.disable_writes()
        self.set_status("")

    STACK_BELOW = 60  # columns: narrower, the time axis goes under the cards

    def on_resize(self, event) -> None:
        # beside the tour at 80 columns the hand is ~48 wide: side by side the axis
        # had ~8 cells ("|0s  |5s"); under the cards it has the whole width
        self.query_one("#pull-body").set_class(event.size.width < self.STACK_BELOW, "-stacked")

    # ---- the timeline on a time axis (widgets/timeline.py) -------------------
    def _axis_events(self) -> Scene | None:
        """What the time axis draws: the chip timeline's consumer and events,
        and the consumer's ack wait, backoff and max deliveries."""
        chips = self.query_one(DeliveryTimeline)
        if chips.target is None:
            return None
        stream, consumer = chips.target
        info = self.consumer_config if self.consumer_config and self.consumer_config.name == consumer else None
        consumers = self.app.main_screen.pane("consumers") if getattr(self.app, "main_screen", None) else None
        if consumers is not None and consumers.stream == stream and consumer in consumers.consumers:
            info = consumers.consumers[consumer]  # the server's latest word, when the pane has it
        ack_wait = next((card.fm.ack_wait for card in self.query(HandCard)), 0.0)
        backoff: tuple[float, ...] = ()
        max_deliver = 0
        if info is not None:
            ack_wait = info.ack_wait
            backoff = tuple(ns / 1e9 for ns in info.config.get("backoff") or ())
            max_deliver = max(0, info.max_deliver)
        return Scene(f"{stream} › {consumer}", chips.events.get(chips.target) or {}, ack_wait, backoff, max_deliver)

    @work(exclusive=True, group="pull-config", exit_on_error=False)
    async def load_config(self, stream: str, consumer: str) -> None:
        """The consumer's config for the time axis (ack wait, backoff, max deliveries)."""
        client = getattr(self.app, "client", None)
        if client is None:
            return
        try:
            info = await client.consumer_info(stream, consumer)
        except NatsError:
            return  # the axis falls back to the cards' ack wait
        born = info.born_at(time.monotonic())
        remade = self.query_one(DeliveryTimeline).incarnation(stream, consumer, info.created, born)
        if (stream, consumer) == (self.stream, self.consumer):
            self.consumer_config = info
            if remade:
                self.forget_old_cards(info.created)

    def action_zoom(self) -> None:
        self.query_one(TimeAxis).zoom()

    def action_scroll_axis(self, halves: int) -> None:
        self.query_one(TimeAxis).scroll_by(halves)

    def action_legend(self) -> None:
        from ...screens.legend import LegendHelp
        from ...widgets.timeline import legend_text

        axis = self.query_one(TimeAxis)
        self.app.push_screen(LegendHelp.with_legends(self.screen.active_bindings, [legend_text(axis.styles_map())]))

    def focus_default(self) -> None:
        """A card in hand when there is one, so its keys (a, n, i, t) work the
        moment the hand is shown: the one last focused, else the first still
        waiting for a decision. Else the Fetch button — never the batch
        field, which would swallow the hand's letter keys (f, a, n, ...)."""
        cards = self.cards()
        open_cards = [c for c in cards if not c.has_class("-settled")]
        last = self._last_card if self._last_card in cards else None
        target = last or (open_cards or cards or [None])[0] or self.query_one("#pull-fetch", Button)
        self.screen.set_focus(target)

    def cards(self) -> list[HandCard]:
        """The cards in hand, without those being removed: a card asked to go
        (another consumer's, after a switch) is still in the DOM until its
        removal runs, and focusing it then left the focus on a widget no
        longer on screen, where every key went, the digits and ? too."""
        return [card for card in self.query(HandCard) if card.display]

    def on_descendant_focus(self, event) -> None:
        if isinstance(event.widget, HandCard):
            self._last_card = event.widget

    def action_card(self, step: int) -> None:
        """j/k and the arrows move between cards, from the bar to the first one."""
        cards = self.cards()
        if not cards:
            return
        focused = self.screen.focused
        at = cards.index(focused) if focused in cards else (-1 if step > 0 else len(cards))
        cards[max(0, min(len(cards) - 1, at + step))].focus()

    def _client_changed(self, generation: int) -> None:
        if generation and generation != self._subscribed_generation:
            self._subscribed_generation = generation
            self.subscribe_events()

    @work(exclusive=True, group="pull-events", exit_on_error=False)
    async def subscribe_events(self) -> None:
        client = getattr(self.app, "client", None)
        if client is None:
            return
        self.taps_ready = False
        try:
            await client.watch_deliveries(lambda ev: self.post_message(self.Delivery(ev)))
        except NatsError as exc:
            self.set_status(f"advisories unavailable: {exc}")
        else:
            self.taps_ready = True  # subscribed and flushed: other programs' deliveries and acks are seen from now

    @on(Delivery)
    def on_delivery(self, event: Delivery) -> None:
        event.stop()
        self.query_one(DeliveryTimeline).add(event.event)

    def set_target(self, stream: str | None, consumer: str | None, pull: bool = True) -> None:
        if (stream, consumer) == (self.stream, self.consumer):
            return
        self.stream, self.consumer = (stream, consumer) if consumer and pull else (stream, None)
        # the cards in hand are another consumer's messages: they go
        # (unacked ones come back to that consumer after its ack wait)
        self.query("#pull-cards HandCard").remove()
        self.set_status("")
        target = self.query_one("#pull-target", Label)
        self.consumer_config = None
        if self.consumer:
            target.update(f"{self.stream} › {self.consumer}")
            self.load_config(self.stream, self.consumer)
        elif consumer:
            target.update(f"{consumer} is a push consumer — pick a pull consumer")
        else:
            target.update("Pick a pull consumer in the Consumers pane")
        self.query_one(DeliveryTimeline).show_consumer(self.stream, self.consumer)

    def set_status(self, text: str) -> None:
        if not text and getattr(self.app, "read_only", False):
            text = "read-only: fetching would move the consumer, so the hand only watches"
        self.query_one("#pull-status", Label).update(text)

    # ---- fetching -----------------------------------------------------------
    @on(Button.Pressed, "#pull-fetch")
    @on(Input.Submitted, "#pull-batch")
    def action_fetch(self) -> None:
        if not self.stream or not self.consumer:
            self.set_status("no pull consumer selected")
            return
        try:
            batch = parse_int(self.query_one("#pull-batch", Input).value, "batch", minimum=1)
        except ValueError as exc:
            self.set_status(str(exc))
            return
        if batch is None or batch > 256:
            self.set_status("fetch between 1 and 256 messages")
            return
        self.set_status("fetching…")
        self.fetch(self.stream, self.consumer, batch)

    @work(exclusive=True, group="pull-fetch", exit_on_error=False)
    async def fetch(self, stream: str, consumer: str, batch: int) -> None:
        client = getattr(self.app, "client", None)
        if client is None:
            self.post_message(self.Fetched(stream, consumer, [], "not connected"))
            return
        try:
            msgs = await client.fetch(stream, consumer, batch, timeout=1.0)
        except NatsError as exc:
            self.post_message(self.Fetched(stream, consumer, [], str(exc)))
            return
        self.post_message(self.Fetched(stream, consumer, msgs))

    @on(Fetched)
    async def on_fetched(self, event: Fetched) -> None:
        event.stop()
        if (event.stream, event.consumer) != (self.stream, self.consumer):
            return  # fetched for the consumer picked before this one
        if event.error:
            self.set_status(event.error)
            return
        await self.action_clear(include_expired=True)
        timeline = self.query_one(DeliveryTimeline)
        for fm in event.messages[:1]:  # the incarnation of the consumer that handed them out
            if timeline.incarnation(fm.stream, fm.consumer, fm.consumer_created, fm.consumer_born):
                self.forget_old_cards(fm.consumer_created)
        cards = [HandCard(fm) for fm in event.messages]
        if cards:
            await self.query_one("#pull-cards").mount_all(cards)
            cards[0].focus()
        for fm in event.messages:
            timeline.add(DeliveryEvent(fm.stream, fm.consumer, fm.stream_seq, "deliver", fm.num_delivered, fm.received_at))
        if event.messages:
            again = sum(1 for fm in event.messages if fm.num_delivered > 1)
            self.set_status(f"fetched {len(event.messages)}" + (f" ({again} redelivered)" if again else ""))
        else:
            self.set_status("nothing to fetch right now (no pending messages, or all handed out within their ack wait)")

    async def action_clear(self, include_expired: bool = False) -> None:
        settled = [
            c for c in self.query(HandCard)
            if c.has_class("-settled") or (include_expired and c.state == "expired")
        ]
        for card in settled:
            await card.remove()

    # ---- acting on a message ------------------------------------------------
    @on(HandCard.Action)
    def on_card_action(self, event: HandCard.Action) -> None:
        event.stop()
        if event.action == "nak_delay":
            self.ask_nak_delay(event.card)
        else:
            self.act(event.card, event.action)

    def ask_nak_delay(self, card: HandCard) -> None:
        """N: ask for the delay; nothing is sent unless the dialog is confirmed."""

        def chosen(delay: float | None) -> None:
            if not card.is_attached:
                return
            card.focus()
            if delay is None or card.state not in ("pending", "expired"):
                return  # cancelled (Escape), or the card was settled meanwhile
            self.nak_delay = delay
            self.act(card, "nak_delay", delay)

        self.app.push_screen(NakDelayDialog(card.fm.stream_seq, self.nak_delay), chosen)

    @work(group="pull-act", exit_on_error=False)
    async def act(self, card: HandCard, action: str, delay: float | None = None) -> None:
        client = getattr(self.app, "client", None)
        if client is None:
            self.post_message(self.Acted(card, action, "not connected", delay))
            return
        try:
            if action == "ack":
                await client.ack(card.fm)
            elif action == "nak":
                await client.nak(card.fm)
            elif action == "nak_delay":
                await client.nak(card.fm, delay)
            elif action == "progress":
                await client.in_progress(card.fm)
            elif action == "term":
                await client.term(card.fm)
        except NatsError as exc:
            self.post_message(self.Acted(card, action, str(exc), delay))
            return
        self.post_message(self.Acted(card, action, delay=delay))

    @on(Acted)
    def on_acted(self, event: Acted) -> None:
        event.stop()
        card, fm = event.card, event.card.fm
        if event.error:
            self.set_status(f"{event.action} failed: {event.error}")
            return
        kind = {"ack": "ack", "nak": "nak", "nak_delay": "nak", "progress": "progress", "term": "term"}[event.action]
        card.nak_delay = event.delay if event.action == "nak_delay" else None
        card.state = {"ack": "acked", "nak": "naked", "term": "termed", "progress": "pending"}[kind]
        card.tick(time.monotonic())
        self.query_one(DeliveryTimeline).add(
            DeliveryEvent(fm.stream, fm.consumer, fm.stream_seq, kind, fm.num_delivered, time.monotonic(),
                          delay=event.delay or None if kind == "nak" else None)
        )
        detail = ""
        if event.action == "nak_delay":
            detail = f" (redelivery in {show_delay(event.delay)})" if event.delay else " (no delay: redelivery right away)"
        self.set_status(f"seq {fm.stream_seq}: {kind}{detail}")

    def forget_old_cards(self, created) -> None:
        """The consumer was deleted and made again: the cards in hand are the
        old one's messages, which can no longer be acked."""
        old = [card for card in self.query(HandCard) if card.fm.consumer_created not in (None, created)]
        for card in old:
            card.remove()
        if old:
            self.set_status(f"{self.consumer} was made again: the old consumer's cards are gone")

    def _tick(self) -> None:
        self._ticks += 1
        if self._ticks % 8 == 0 and self.consumer and is_showing(self):
            # every 2 s while shown: a consumer made again under its name is noticed without a fetch
            self.load_config(self.stream, self.consumer)
        now = time.monotonic()
        timeline = None
        for card in self.query(HandCard):
            before = card.state
            card.tick(now)
            if before == "pending" and card.state == "expired":
                timeline = timeline or self.query_one(DeliveryTimeline)
                fm = card.fm
                timeline.add(DeliveryEvent(fm.stream, fm.consumer, fm.stream_seq, "expired", fm.num_delivered, now))
