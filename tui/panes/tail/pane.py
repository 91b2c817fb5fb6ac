"""Subscribe to a subject or wildcard and watch messages scroll by.

The subscription callback only appends to a bounded buffer; a 10 Hz timer
moves what arrived onto the screen. One UI message per NATS message would
drown the event loop at 10k msg/s; the buffer keeps memory and the UI bounded.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Label, RichLog

from ...client import NatsError, subject_error
from ...format import parse_int
from ...widgets.fit_label import FitLabel

DEFAULT_CAP = 1000
log = logging.getLogger(__name__)


@dataclass
class TailLine:
    subject: str
    headers: dict
    data: bytes


class TailPane(Vertical):
    BINDINGS = [
        Binding("ctrl+space", "toggle_pause", "Pause/resume", id="tail.pause"),
        Binding("ctrl+l", "clear", "Clear", id="tail.clear"),
        Binding("ctrl+o", "toggle_own", "Show/hide natslab's own", id="tail.own"),
    ]

    @dataclass
    class Subscribed(Message):
        subject: str
        sub: object | None
        error: str = ""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.buffer: deque[TailLine] = deque(maxlen=DEFAULT_CAP)
        self.sub = None
        self.subject = ""
        self.paused = False
        self.received = 0
        self.dropped = 0
        # the app's own polling ($JS.API requests, their replies, audit advisories)
        # would flood a tail of '>': hidden unless asked for
        self.hide_own = True
        self.hidden = 0

    def compose(self) -> ComposeResult:
        # beside the tour at 80 columns the pane is ~48 wide: the line says it shorter there
        yield FitLabel("Live tail — subscribe to a subject or a wildcard (orders.>) · ctrl+space pause · ctrl+l clear · ctrl+o own traffic",
                       "Live tail — a subject or a wildcard · ^space pause · ^l clear · ^o own",
                       "Live tail — ^space pause · ^l clear · ^o own", classes="pane-status", id="tail-status")
        # narrow (on_resize), the buttons go under the fields: beside them the fields were "Subjec Fil Kee"
        with Horizontal(classes="form-row", id="tail-bar"):
            with Horizontal(id="tail-fields"):
                with Vertical(classes="cell wide"):
                    yield Label("Subject")
                    yield Input(placeholder="e.g. orders.>", id="tail-subject")
                    yield Label("", id="tail-subject-error", classes="inline-error")
                with Vertical(classes="cell"):
                    yield Label("Filter")  # (what it matches is the placeholder: the label fits a cell at any width)
                    yield Input(placeholder="any text", id="tail-filter",
                                tooltip="only messages whose subject or payload contains this text")
                with Vertical(classes="cell"):
                    yield Label("Keep lines")
                    yield Input(str(DEFAULT_CAP), id="tail-cap")
                    yield Label("", id="tail-cap-error", classes="inline-error")
            with Horizontal(id="tail-buttons"):
                yield Button("Subscribe", id="tail-go", variant="primary")
                yield Button("Pause", id="tail-pause")
                yield Button("Own: hidden", id="tail-own")
        yield RichLog(id="tail-log", max_lines=DEFAULT_CAP, wrap=False, markup=False, highlight=False)

    def on_mount(self) -> None:
        self.set_interval(0.1, self._drain)

    def on_resize(self, event) -> None:
        self.query_one("#tail-bar").set_class(event.size.width < 60, "-stacked")

    def _error(self, field: str, message: str | None) -> None:
        box = self.query_one(f"#{field}-error", Label)
        box.update(message or "")
        box.set_class(bool(message), "-shown")

    @on(Button.Pressed, "#tail-go")
    @on(Input.Submitted, "#tail-subject")
    def start(self) -> None:
        subject = self.query_one("#tail-subject", Input).value.strip()
        err = subject_error(subject, wildcards=True)
        self._error("tail-subject", err)
        cap = DEFAULT_CAP
        try:
            cap = parse_int(self.query_one("#tail-cap", Input).value, "keep lines", minimum=10) or DEFAULT_CAP
            if cap > 100_000:
                raise ValueError("keep at most 100000 lines")
            self._error("tail-cap", None)
        except ValueError as exc:
            self._error("tail-cap", str(exc))
            err = err or str(exc)
        if err:
            return
        log = self.query_one(RichLog)
        log.max_lines = cap
        self.buffer = deque(self.buffer, maxlen=cap)
        self.subscribe(subject)

    @work(exclusive=True, group="tail", exit_on_error=False)
    async def subscribe(self, subject: str) -> None:
        client = getattr(self.app, "client", None)
        if client is None:
            self.post_message(self.Subscribed(subject, None, "not connected"))
            return
        if self.sub is not None:
            try:
                await self.sub.unsubscribe()
            except Exception as exc:  # nats-py: connection closed / draining; the sub is gone either way
                log.debug("tail unsubscribe: %s", exc)
            self.sub = None

        async def on_msg(msg) -> None:
            if self.hide_own and client.is_own_traffic(msg.subject, msg.reply, msg.data):
                self.hidden += 1
                return
            self.received += 1
            if len(self.buffer) == self.buffer.maxlen:
                self.dropped += 1
            self.buffer.append(TailLine(msg.subject, dict(msg.headers or {}), msg.data or b""))

        try:
            sub = await client.subscribe(subject, on_msg)
        except NatsError as exc:
            self.post_message(self.Subscribed(subject, None, str(exc)))
            return
        self.post_message(self.Subscribed(subject, sub))

    @on(Subscribed)
    def on_subscribed(self, event: Subscribed) -> None:
        if event.error:
            self._error("tail-subject", event.error)
            return
        self.sub, self.subject = event.sub, event.subject
        self.received = self.dropped = self.hidden = 0
        self._status()

    def _status(self) -> None:
        state = "paused" if self.paused else "live"
        said = (f"Tailing {self.subject} — {state} · {self.received} received"
                + (f" · {len(self.buffer)} waiting" if self.paused else "")
                + (f" · {self.hidden} of natslab's own hidden" if self.hide_own and self.hidden else ""))
        self.query_one("#tail-status", FitLabel).set_texts(
            said + " · ctrl+space pause · ctrl+l clear · ctrl+o own traffic",
            said + " · ^space pause · ^l clear · ^o own", said + " · ^space pause", said)

    def _drain(self) -> None:
        if not self.subject:
            return
        if not self.paused and self.buffer:
            log = self.query_one(RichLog)
            needle = self.query_one("#tail-filter", Input).value.strip()
            lines = list(self.buffer)
            self.buffer.clear()
            for line in lines[-log.max_lines:] if log.max_lines else lines:
                payload = line.data.decode("utf-8", errors="replace")
                if needle and needle not in line.subject and needle not in payload:
                    continue
                text = Text()
                text.append(line.subject, style="bold")
                if line.headers:
                    text.append(" [" + ", ".join(f"{k}={v}" for k, v in line.headers.items()) + "]", style="italic")
                text.append("  " + payload.replace("\n", "⏎")[:500])
                log.write(text)
        self._status()

    @on(Button.Pressed, "#tail-pause")
    def action_toggle_pause(self) -> None:
        self.paused = not self.paused
        self.query_one("#tail-pause", Button).label = "Resume" if self.paused else "Pause"
        self._status()

    @on(Button.Pressed, "#tail-own")
    def action_toggle_own(self) -> None:
        self.hide_own = not self.hide_own
        self.query_one("#tail-own", Button).label = "Own: hidden" if self.hide_own else "Own: shown"
        self._status()

    def action_clear(self) -> None:
        self.query_one(RichLog).clear()
