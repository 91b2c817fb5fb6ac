""""Where did my message go?": the composer's message, traced.

Opened from the publish composer with the message it holds. ``t`` sends it
with ``Nats-Trace-Only`` (nothing is delivered or stored: the servers only
say where it would go); ``p`` publishes it for real and traces it. The answer
is drawn by ``trace_path``: plain words on top, the path as a tree below.
It opens with a trace-only run, which changes nothing anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from ...client import NatsError
from ...widgets.footer import KeysFooter
from .parse import render_template
from .trace_path import path_tree, verdict

if TYPE_CHECKING:
    from ...client.trace import MessageTrace


@dataclass(frozen=True)
class TraceRequest:
    """The composer's message: what the trace publishes (the first of a repeat)."""

    subject: str
    headers: dict[str, str]
    data: bytes
    jetstream: bool
    of: int = 1  # the composer's repeat count: the trace sends only the first

    @classmethod
    def from_publish(cls, req) -> "TraceRequest":
        headers = dict(req.headers)
        if req.msg_id:
            headers["Nats-Msg-Id"] = render_template(req.msg_id, 1)
        if req.expected_last_seq is not None:
            headers["Nats-Expected-Last-Sequence"] = str(req.expected_last_seq)
        if req.expected_stream:
            headers["Nats-Expected-Stream"] = req.expected_stream
        return cls(req.subject, headers, render_template(req.payload, 1).encode(), req.jetstream, req.count)


class TraceScreen(ModalScreen):
    CSS_PATH = "trace.tcss"
    BINDINGS = [
        Binding("t", "trace(True)", "Trace only", id="trace.only"),
        Binding("p", "trace(False)", "Publish and trace", id="trace.publish"),
        Binding("escape", "close", "Close", id="trace.close"),
        # a modal screen does not get the app's own keys: its help is its own
        Binding("question_mark", "help", "Help", id="trace.help", key_display="?"),
        # the path scrolls wherever the focus is (it starts on the buttons)
        Binding("down,j", "scroll('down')", "Scroll the path down", id="trace.down", show=False),
        Binding("up,k", "scroll('up')", "Scroll the path up", id="trace.up", show=False),
        Binding("pagedown", "scroll('page_down')", "Page down", id="trace.page_down", show=False),
        Binding("pageup", "scroll('page_up')", "Page up", id="trace.page_up", show=False),
        Binding("end", "scroll('end')", "End of the path", id="trace.end", show=False),
        Binding("home", "scroll('home')", "Top of the path", id="trace.home", show=False),
    ]

    @dataclass
    class Traced(Message):
        trace: MessageTrace

    @dataclass
    class Failed(Message):
        error: str

    def __init__(self, request: TraceRequest):
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        mode = "JetStream" if self.request.jetstream else "core"
        with Vertical(id="trace-box"):
            title = Text("Where did my message go?  ", style="bold")
            title.append(f"{self.request.subject} ({mode})")
            if self.request.of > 1:
                title.append(f"  the first of {self.request.of} messages", style="italic")
            yield Static(title, id="trace-title")
            with Horizontal(id="trace-actions"):
                yield Button("t Trace only", id="trace-only", variant="primary")
                yield Button("p Publish and trace", id="trace-publish")
                yield Button("esc Close", id="trace-close")
            yield Static("Tracing…", id="trace-verdict")
            with VerticalScroll(id="trace-scroll"):
                yield Static("", id="trace-tree")
        yield KeysFooter()  # the trace view's keys, not the composer's beneath it

    def on_mount(self) -> None:
        if getattr(self.app, "read_only", False):
            button = self.query_one("#trace-publish", Button)
            button.disabled, button.tooltip = True, "read-only"
        self.action_trace(True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "trace" and parameters == (False,) and getattr(self.app, "read_only", False):
            return False
        return True

    @on(Button.Pressed, "#trace-only")
    def _only(self) -> None:
        self.action_trace(True)

    @on(Button.Pressed, "#trace-publish")
    def _publish(self) -> None:
        self.action_trace(False)

    @on(Button.Pressed, "#trace-close")
    def action_close(self) -> None:
        self.workers.cancel_group(self, "trace")
        self.dismiss(None)

    def action_help(self) -> None:
        from ...screens.help import HelpScreen

        self.app.push_screen(HelpScreen.for_bindings(self.active_bindings))

    def action_scroll(self, how: str) -> None:
        getattr(self.query_one("#trace-scroll", VerticalScroll), f"scroll_{how}")(animate=False)

    def action_trace(self, trace_only: bool) -> None:
        self.query_one("#trace-verdict", Static).update(
            "Tracing (nothing is delivered or stored)…" if trace_only else "Publishing and tracing…")
        self.run_trace(trace_only)

    @work(exclusive=True, group="trace", exit_on_error=False)
    async def run_trace(self, trace_only: bool) -> None:
        client = getattr(self.app, "client", None)
        if client is None or not client.connected:
            self.post_message(self.Failed("not connected"))
            return
        req = self.request
        try:
            trace = await client.trace_message(req.subject, req.data, req.headers,
                                               trace_only=trace_only, jetstream=req.jetstream)
        except NatsError as exc:
            self.post_message(self.Failed(str(exc)))
            return
        self.post_message(self.Traced(trace))

    @on(Traced)
    def show(self, event: Traced) -> None:
        box = self.query_one("#trace-verdict", Static)
        box.set_class(False, "-error")
        box.update(verdict(event.trace))
        self.query_one("#trace-tree", Static).update(path_tree(event.trace))

    @on(Failed)
    def failed(self, event: Failed) -> None:
        box = self.query_one("#trace-verdict", Static)
        box.set_class(True, "-error")
        box.update(Text(f"Not traced: {event.error}"))
        self.query_one("#trace-tree", Static).update("")


def open_trace(pane, req) -> None:
    """The composer's trace action: its message traced, or the marked fields first."""
    if req is None:
        result = pane.query_one("#pub-result", Static)
        result.set_class(True, "-error")
        result.update(Text("Fix the marked fields first.", style="italic"))
        return
    pane.app.push_screen(TraceScreen(TraceRequest.from_publish(req)))
