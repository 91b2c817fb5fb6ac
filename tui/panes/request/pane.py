"""Send a request, see the reply (or 'no responders' / timeout in plain words),
keep a latency history per subject (the p50/p99 and sparkline beside Send are
the subject in the Subject field's: switching subject shows its own); start
mock responders on any subject."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, DataTable, Input, Label, Select, Sparkline, Static, TextArea

from ...client import NatsError, subject_error
from ...client.responders import KINDS, MockResponder, responder_error
from ...format import parse_duration, parse_int, render_payload
from ...widgets.fit_label import FitLabel
from ..base import WritesGuard
from ..publish.parse import parse_headers


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class RequestPane(WritesGuard, Vertical):
    WRITE_ACTIONS = frozenset({"send", "start_mock"})
    WRITE_BUTTONS = ("req-send", "mock-start")
    BINDINGS = [
        Binding("ctrl+s", "send", "Send request", id="request.send"),
        Binding("ctrl+y", "copy_code", "Copy as code", id="request.code"),
        # from any field (it took 3-9 Tabs to reach Start); Enter in the mock's subject or param too
        Binding("ctrl+r", "start_mock", "Start mock", id="request.mock"),
    ]

    @dataclass
    class Replied(Message):
        text: Text
        rtt: float | None
        error: bool = False
        subject: str = ""

    @dataclass
    class Handled(Message):
        responder: MockResponder

    def __init__(self, **kw):
        super().__init__(**kw)
        # round trips in ms, per subject requested (the last 200 of each)
        self.latencies_by_subject: dict[str, deque[float]] = {}
        self.responders: dict[str, MockResponder] = {}

    def compose(self) -> ComposeResult:
        # beside the tour at 80 columns the pane is ~48 wide: the labels say it shorter there
        if self.read_only:
            yield FitLabel("Request-reply — ctrl+y copy as code · read-only: nothing is sent",
                           "Request-reply · read-only: nothing is sent · ^y code",
                           "Request · read-only: nothing sent · ^y code", classes="pane-status")
        else:
            yield FitLabel("Request-reply — ctrl+s send · ctrl+y copy as code",
                           "Request-reply — ^s send · ^y copy as code", classes="pane-status")
        with Horizontal(classes="form-row"):
            with Vertical(classes="cell wide"):
                yield Label("Subject")
                yield Input(placeholder="e.g. svc.upper", id="req-subject")
                yield Static("", id="req-subject-error", classes="inline-error")
            with Vertical(classes="cell"):
                yield Label("Timeout")
                yield Input("2s", id="req-timeout")
                yield Static("", id="req-timeout-error", classes="inline-error")
            with Vertical(classes="cell"):
                yield Label("Repeat N")
                yield Input("1", id="req-count")
                yield Static("", id="req-count-error", classes="inline-error")
        with Horizontal(classes="form-row short"):
            with Vertical(classes="cell"):
                # narrow, the format moves into the empty field ("Headers (Key:" was cut)
                yield FitLabel("Headers (Key: value)", "Headers", on_fit=self._headers_label_fit)
                yield TextArea(id="req-headers")
                yield Static("", id="req-headers-error", classes="inline-error")
            with Vertical(classes="cell wide"):
                yield Label("Payload")
                yield TextArea(id="req-payload")
        with Horizontal(id="req-actions"):
            yield Button("Send", id="req-send", variant="primary")
            yield Label("", id="req-stats")
            yield Sparkline([], id="req-spark")
        yield Static("", id="req-result")
        yield FitLabel("Mock responders — start one, then request its subject",
                       "Mocks — start one, then request its subject", classes="pane-status")
        with Horizontal(classes="form-row", id="mock-row"):
            with Vertical(classes="cell wide"):
                yield Label("Subject")
                yield Input(placeholder="e.g. svc.echo", id="mock-subject")
                yield Static("", id="mock-subject-error", classes="inline-error")
            with Vertical(classes="cell", id="mock-kind-cell"):
                yield Label("Kind")
                # compact: one line, as the inputs beside it (a bordered one is 3 lines
                # and its value wrapped to "ec ▼ / ho" in the 80-column cell)
                yield Select([(k, k) for k in KINDS], value="echo", allow_blank=False, id="mock-kind", compact=True)
            with Vertical(classes="cell"):
                yield Label("Param")
                yield Input(id="mock-param")
            with Vertical(id="mock-buttons"):
                yield Button("Start", id="mock-start", compact=True)
                yield Button("Stop selected", id="mock-stop", compact=True)
        # what the chosen kind does (all five in one line were cut at 80 columns)
        yield FitLabel(*self._kind_help("echo"), id="mock-help")
        yield DataTable(id="mock-table", cursor_type="row")

    @property
    def subject(self) -> str:
        return self.query_one("#req-subject", Input).value.strip()

    @property
    def latencies(self) -> deque[float]:
        """The round trips of the subject in the Subject field."""
        return self.latencies_by_subject.get(self.subject, deque())

    def show_stats(self) -> None:
        """p50/p99 and the sparkline of the subject in the Subject field only."""
        subject, values = self.subject, list(self.latencies)
        self.query_one("#req-spark", Sparkline).data = values[-60:]
        stats = self.query_one("#req-stats", Label)
        if not values:
            stats.update("")
            return
        stats.update(f"{subject}: {len(values)} replies · p50 {percentile(values, 50):.2f} ms"
                     f" · p99 {percentile(values, 99):.2f} ms")

    @on(Input.Changed, "#req-subject")
    def _subject_changed(self) -> None:
        self.show_stats()

    def _headers_label_fit(self, text: str) -> None:
        self.query_one("#req-headers", TextArea).placeholder = "" if "value" in text else "Key: value"

    @staticmethod
    def _kind_help(kind: str) -> tuple[str, str]:
        """What the kind does, then the kinds (narrow, the Select lists them)."""
        return f"{kind}: {KINDS.get(kind, '')} · kinds: {', '.join(KINDS)}", f"{kind}: {KINDS.get(kind, '')}"

    @on(Select.Changed, "#mock-kind")
    def _kind_changed(self, event: Select.Changed) -> None:
        self.query_one("#mock-help", FitLabel).set_texts(*self._kind_help(str(event.value)))

    def on_mount(self) -> None:
        table = self.query_one("#mock-table", DataTable)
        table.add_column("Subject", key="subject")
        table.add_column("Kind", key="kind")
        table.add_column("Requests", key="handled")
        self.disable_writes()

    def _error(self, field_id: str, message: str | None) -> None:
        box = self.query_one(f"#{field_id}-error", Static)
        box.update(message or "")
        box.set_class(bool(message), "-shown")

    def _read(self):
        for f in ("req-subject", "req-timeout", "req-count", "req-headers"):
            self._error(f, None)
        ok = True
        subject = self.query_one("#req-subject", Input).value.strip()
        if err := subject_error(subject, wildcards=False):
            self._error("req-subject", err)
            ok = False
        timeout = 2.0
        try:
            timeout = parse_duration(self.query_one("#req-timeout", Input).value) or 2.0
        except ValueError as exc:
            self._error("req-timeout", str(exc))
            ok = False
        count = 1
        try:
            count = parse_int(self.query_one("#req-count", Input).value, "repeat", minimum=1) or 1
        except ValueError as exc:
            self._error("req-count", str(exc))
            ok = False
        headers = {}
        try:
            headers = parse_headers(self.query_one("#req-headers", TextArea).text)
        except ValueError as exc:
            self._error("req-headers", str(exc))
            ok = False
        payload = self.query_one("#req-payload", TextArea).text
        return (subject, payload, headers, timeout, count) if ok else None

    @on(Button.Pressed, "#req-send")
    @on(Input.Submitted, "#req-subject")
    def action_send(self) -> None:
        args = self._read()
        if args is not None:
            self.send(*args)

    @work(exclusive=True, group="request", exit_on_error=False)
    async def send(self, subject: str, payload: str, headers: dict, timeout: float, count: int) -> None:
        client = getattr(self.app, "client", None)
        if client is None:
            self.post_message(self.Replied(Text("not connected"), None, True))
            return
        for _ in range(count):
            try:
                msg, rtt = await client.request(subject, payload.encode(), headers, timeout)
            except NatsError as exc:
                self.post_message(self.Replied(Text(str(exc)), None, True, subject))
                return
            text = Text()
            text.append(f"Reply in {rtt * 1000:.2f} ms", style="bold")
            status = (msg.headers or {}).get("Nats-Service-Error-Code")
            if status:
                text.append(f" — service error {status}: {(msg.headers or {}).get('Nats-Service-Error', '')}")
            text.append("\n")
            for k, v in (msg.headers or {}).items():
                text.append(f"{k}: ", style="bold")
                text.append(f"{v}\n")
            text.append(render_payload(msg.data or b"", "json" if (msg.data or b"").strip()[:1] in (b"{", b"[") else "text"))
            self.post_message(self.Replied(text, rtt, bool(status), subject))

    @on(Replied)
    def on_replied(self, event: Replied) -> None:
        result = self.query_one("#req-result", Static)
        result.set_class(event.error, "-error")
        result.update(event.text)
        if event.rtt is not None:
            self.latencies_by_subject.setdefault(event.subject, deque(maxlen=200)).append(event.rtt * 1000)
            self.show_stats()

    # ---- mock responders ---------------------------------------------------
    def action_start_mock(self) -> None:
        subject = self.query_one("#mock-subject", Input)
        if not subject.value.strip():
            self.screen.set_focus(subject)  # the first thing a mock needs
            self._error("mock-subject", "type the subject the mock answers on, then ctrl+r or Enter")
            return
        self.start_mock()

    @on(Button.Pressed, "#mock-start")
    @on(Input.Submitted, "#mock-subject")
    @on(Input.Submitted, "#mock-param")
    def start_mock(self) -> None:
        subject = self.query_one("#mock-subject", Input).value.strip()
        kind = str(self.query_one("#mock-kind", Select).value)
        param = self.query_one("#mock-param", Input).value.strip()
        err = responder_error(subject_error(subject, wildcards=True), kind, param)
        if subject in self.responders:
            err = f"a mock already answers on {subject}"
        self._error("mock-subject", err)
        if err is None:
            self.run_mock(MockResponder(subject, kind, param))

    @work(group="mock", exit_on_error=False)
    async def run_mock(self, responder: MockResponder) -> None:
        client = getattr(self.app, "client", None)
        if client is None:
            self.app.notify("not connected", severity="error")
            return
        try:
            await client.start_responder(responder, lambda r: self.post_message(self.Handled(r)))
        except NatsError as exc:
            self.app.notify(f"Could not start the mock: {exc}", severity="error")
            return
        self.responders[responder.subject] = responder
        self.query_one("#mock-table", DataTable).add_row(
            Text(responder.subject), Text(responder.description), Text("0"), key=responder.subject
        )

    @on(Handled)
    def on_handled(self, event: Handled) -> None:
        r = event.responder
        if r.subject in self.responders:
            self.query_one("#mock-table", DataTable).update_cell(r.subject, "handled", Text(str(r.handled)))

    @on(Button.Pressed, "#mock-stop")
    def stop_mock(self) -> None:
        table = self.query_one("#mock-table", DataTable)
        if not table.row_count:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        responder = self.responders.pop(key, None)
        table.remove_row(key)
        if responder is not None:
            self._stop(responder)

    @work(group="mock", exit_on_error=False)
    async def _stop(self, responder: MockResponder) -> None:
        client = getattr(self.app, "client", None)
        if client is not None:
            await client.stop_responder(responder)

    def action_copy_code(self) -> None:
        args = self._read()
        if args is None:
            return
        from ...codegen import request_code

        code = request_code(*args[:4])
        self.app.copy_to_clipboard(code)
        self.query_one("#req-result", Static).update(Text(code))
