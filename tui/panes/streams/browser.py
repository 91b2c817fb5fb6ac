"""The message browser: pages through a stream by sequence with message get.

It never creates a consumer and never acks, so browsing a workqueue stream
removes nothing. Counter increments, schedules, what a schedule produced and
atomic batch messages are said for what they are (``client.msgkinds``): in
the list beside the subject, in words above the headers of the one shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable, Input, Label, Static
from textual.widgets.data_table import CellDoesNotExist

from ...client import NatsError
from ...client.msgkinds import describe
from ...format import fmt_bytes, parse_int, render_payload

if TYPE_CHECKING:
    from ...client import StoredMessage

PAGE = 20


class MessageBrowser(Vertical):
    BINDINGS = [
        Binding("right_square_bracket", "next_page", "Next page", id="browser.next"),
        Binding("left_square_bracket", "prev_page", "Prev page", id="browser.prev"),
        Binding("t", "mode('text')", "Text", id="browser.text"),
        Binding("J", "mode('json')", "JSON", id="browser.json"),
        Binding("x", "mode('hex')", "Hex", id="browser.hex"),
        Binding("r", "reload", "Reload", id="browser.reload"),
    ]

    stream: reactive[str | None] = reactive(None)
    mode: reactive[str] = reactive("text")

    @dataclass
    class Loaded(Message):
        stream: str
        messages: list[StoredMessage]
        error: str = ""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.start_seq = 1
        self.messages: dict[int, StoredMessage] = {}
        self._seen_state: tuple[int, int] | None = None  # (first, last seq) the page was read at

    def compose(self) -> ComposeResult:
        with Horizontal(id="browser-bar"):
            yield Label("from seq ", classes="bar-label")
            yield Input("1", id="browser-seq", restrict=r"[0-9]*", max_length=20)
            yield Label("", id="browser-status")
        with Horizontal(id="browser-body"):
            table = DataTable(id="browser-list", cursor_type="row")
            yield table
            with VerticalScroll(id="browser-view"):
                yield Static("", id="browser-headers")
                yield Static("", id="browser-payload")

    def on_mount(self) -> None:
        table = self.query_one("#browser-list", DataTable)
        table.add_column("Seq", key="seq")
        table.add_column("Subject", key="subject")
        table.add_column("Size", key="size")
        table.add_column("Time", key="time")

    def watch_stream(self, stream: str | None) -> None:
        self.start_seq = 1
        self._seen_state = None
        self.query_one("#browser-seq", Input).value = "1"
        self.load()

    def watch_mode(self, mode: str) -> None:
        self.show_selected()

    def action_mode(self, mode: str) -> None:
        self.mode = mode

    def action_reload(self) -> None:
        self.load()

    def follow(self, first_seq: int, last_seq: int) -> None:
        """The streams poll saw the stream at (first, last): re-read the page
        when that changes what it shows (new messages on a page that is not
        full, or messages gone from its start)."""
        state = (first_seq, last_seq)
        if state == self._seen_state:
            return
        self._seen_state = state
        shown = self.messages
        if len(shown) < PAGE or (shown and min(shown) < first_seq):
            self.load()

    def action_next_page(self) -> None:
        if self.messages:
            self.start_seq = max(self.messages) + 1
            self.load()

    def action_prev_page(self) -> None:
        self.start_seq = max(1, self.start_seq - PAGE)
        self.load()

    @on(Input.Submitted, "#browser-seq")
    def goto(self, event: Input.Submitted) -> None:
        try:
            seq = parse_int(event.value, "sequence", minimum=1)
        except ValueError as exc:
            self.query_one("#browser-status", Label).update(str(exc))
            return
        self.start_seq = seq or 1
        self.load()

    @work(exclusive=True, group="browse", exit_on_error=False)
    async def load(self) -> None:
        stream = self.stream
        client = getattr(self.app, "client", None)
        if not stream or client is None:
            self.post_message(self.Loaded(stream or "", []))
            return
        try:
            msgs = await client.get_messages(stream, self.start_seq, PAGE)
        except NatsError as exc:
            self.post_message(self.Loaded(stream, [], str(exc)))
            return
        self.post_message(self.Loaded(stream, msgs))

    @on(Loaded)
    def show_page(self, event: Loaded) -> None:
        event.stop()
        if event.stream != (self.stream or ""):
            return
        table = self.query_one("#browser-list", DataTable)
        table.clear()
        self.messages = {m.seq: m for m in event.messages}
        stable = getattr(self.app, "stable_display", False)
        for m in event.messages:
            when = "--:--:--" if stable or m.time is None else m.time.astimezone().strftime("%H:%M:%S")
            subject = Text(m.subject)
            notes = describe(m)
            if notes:
                subject.append("  " + " · ".join(n.short for n in notes), style="italic")
            table.add_row(Text(str(m.seq)), subject, Text(fmt_bytes(len(m.data))), Text(when), key=str(m.seq))
        self.query_one("#browser-seq", Input).value = str(self.start_seq)
        status = event.error or (
            f"seq {min(self.messages)}–{max(self.messages)} · [ ] page · t/J/x format" if self.messages
            else "no messages at or after this sequence"
        )
        self.query_one("#browser-status", Label).update(status)
        self.show_selected()

    @on(DataTable.RowHighlighted, "#browser-list")
    def on_row(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.show_selected()

    def show_selected(self) -> None:
        table = self.query_one("#browser-list", DataTable)
        headers = self.query_one("#browser-headers", Static)
        payload = self.query_one("#browser-payload", Static)
        msg = None
        if table.row_count:
            try:
                key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
                msg = self.messages.get(int(key))
            except (CellDoesNotExist, ValueError):  # the page was just replaced
                msg = None
        if msg is None:
            headers.update("")
            payload.update("")
            return
        head = Text()
        head.append(f"#{msg.seq}  {msg.subject}  ({self.mode})\n", style="bold")
        now = datetime.now(timezone.utc)
        for note in describe(msg, now):
            for label, value in note.facts:
                head.append(f"{label}: ", style="bold")
                head.append(f"{self._when(value, now) if isinstance(value, datetime) else value}\n", style="italic")
        for k, v in msg.headers.items():
            head.append(f"{k}: ", style="bold")
            head.append(f"{v}\n")
        headers.update(head)
        payload.update(Text(render_payload(msg.data, self.mode)))

    def _when(self, when: datetime, now: datetime) -> str:
        """Local time, with the date when not today, and how far off it is."""
        if getattr(self.app, "stable_display", False):
            return "--:--:--"  # pinned pictures: no clock
        local = when.astimezone()
        text = local.strftime("%H:%M:%S" if local.date() == now.astimezone().date() else "%Y-%m-%d %H:%M:%S")
        secs = (when - now).total_seconds()
        if abs(secs) < 86400:
            ahead = f"{abs(secs):.0f}s" if abs(secs) < 120 else f"{abs(secs) / 60:.0f} min"
            text += f" (in {ahead})" if secs >= 0 else f" ({ahead} ago)"
        return text
