"""Compose and publish: subject, headers, payload, JetStream options, repeat.

A core publish is fire-and-forget; a JetStream publish waits for the PubAck
(stream, seq, duplicate) or says in plain words why there is none. The Mode
list (ctrl+o steps through it) also has the newer JetStream publishes: an
atomic batch, a counter increment and a schedule (modes.py reads their
fields, answers.py words the server's answer).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Button, Input, Label, OptionList, ProgressBar, Select, Static, TextArea
from textual.widgets.option_list import Option

from ...client import NatsError, subject_error
from ...format import parse_int
from ...widgets.fit_label import FitLabel
from ..base import WritesGuard, is_showing
from . import answers
from .modes import (FIELDS, MODE_VALUES, MODES, PAYLOAD_LABELS, REFUSAL_FIELD, SHORT_FIELDS, WIDE_FIELDS, BatchRequest,
                    CounterRequest, ScheduleRequest, code_for, read_batch, read_counter, read_schedule)
from .parse import parse_headers, render_template

log = logging.getLogger(__name__)

HISTORY_KEEP = 50
PLAIN_MODES = ("js", "core")  # a PublishRequest; the other modes have requests of their own (modes.py)
# A publish bigger than this is not remembered: recalling a megabyte into the
# payload box is no help, and it would be written to disk on every publish.
HISTORY_MAX_BYTES = 16 * 1024


def load_history(path: Path | None) -> list[dict]:
    if path is None:
        return []
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning("publish history %s not read: %s", path, exc)
        return []
    return [d for d in data if isinstance(d, dict)][:HISTORY_KEEP] if isinstance(data, list) else []


def save_history(path: Path | None, entries: list[dict]) -> None:
    """Keep the recent publishes of this store; None (a --memory broker) keeps them nowhere."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(entries[:HISTORY_KEEP], indent=1))
    except OSError as exc:  # remembering is a convenience: say so in the log, go on
        log.warning("publish history %s not written: %s", path, exc)


def history_size(entry: dict) -> int:
    return len(entry.get("payload", "").encode()) + len(entry.get("headers", "").encode())


@dataclass
class PublishRequest:
    subject: str
    headers: dict[str, str]
    payload: str
    jetstream: bool
    count: int
    rate: float | None
    msg_id: str | None
    expected_last_seq: int | None
    expected_stream: str | None


FIELD_TIPS = {  # the headers the expectations are sent as
    "pub-lastseq": "Nats-Expected-Last-Sequence: the stream's last sequence must be this",
    "pub-stream": "Nats-Expected-Stream: the subject must be stored by this stream",
}


class PublishPane(WritesGuard, Vertical):
    WRITE_ACTIONS = frozenset({"publish"})
    WRITE_BUTTONS = ("pub-send",)
    BINDINGS = [
        Binding("ctrl+s", "publish", "Publish", id="publish.send"),
        Binding("ctrl+o", "next_mode", "Next mode", id="publish.mode"),
        Binding("ctrl+x", "cancel", "Cancel run", id="publish.cancel"),
        Binding("ctrl+y", "copy_code", "Copy as code", id="publish.code"),
        Binding("ctrl+l", "clear_payload", "Clear payload", id="publish.clear"),
        Binding("ctrl+t", "trace", "Trace", id="publish.trace"),
    ]

    @dataclass
    class Progress(Message):
        done: int
        total: int

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, PublishPane.Progress)

    @dataclass
    class Finished(Message):
        summary: str
        error: bool = False
        field: str = ""  # the form field a refusal is about ...
        field_text: str = ""  # ... and the server's words shown next to it

    mode: reactive[str] = reactive("js", init=False)

    def compose(self) -> ComposeResult:
        # beside the tour at 80 columns the pane is ~48 wide: its labels say it shorter there
        if self.read_only:
            yield FitLabel("Publish — read-only: nothing is sent · ctrl+t trace only · ctrl+y copy as code · ctrl+l clear",
                           "Publish · read-only: nothing is sent · ^t trace · ^y code · ^l clear",
                           "Publish · read-only · ^t trace · ^y code", classes="pane-status")
        else:
            yield FitLabel("Publish — ctrl+s publish · ctrl+o mode · ctrl+x cancel · ctrl+y copy as code · ctrl+l clear",
                           "Publish — ^s publish · ^o mode · ^x cancel · ^y code · ^l clear",
                           "Publish — ^s publish · ^o mode · ^y code", classes="pane-status")
        with Horizontal(id="pub-row1", classes="form-row"):
            with Vertical(classes="cell wide"):
                yield Label("Subject")
                yield Input(placeholder="e.g. orders.new", id="pub-subject")
                yield Static("", id="pub-subject-error", classes="inline-error")
            with Vertical(classes="cell", id="pub-mode-cell"):  # as wide as "JetStream (PubAck) ▼"
                yield Label("Mode")
                yield Select([(label, value) for value, label in MODES], value="js", allow_blank=False, id="pub-mode",
                             compact=True)  # one line, as the subject beside it
        with Horizontal(id="pub-row2", classes="form-row"):
            with Vertical(classes="cell"):
                # narrow, the format moves into the empty field ("Headers (Key:" was cut)
                yield FitLabel("Headers (Key: value)", "Headers", on_fit=self._headers_label_fit)
                yield TextArea(id="pub-headers", soft_wrap=False)
                yield Static("", id="pub-headers-error", classes="inline-error")
            with Vertical(classes="cell wide", id="pub-payload-cell"):
                yield FitLabel(*PAYLOAD_LABELS["js"], id="pub-payload-label")
                yield TextArea(id="pub-payload")
            with Vertical(classes="cell wide", id="pub-counter-note"):
                yield FitLabel("An increment carries no payload", "No payload: an increment")
                yield Static("The stream adds the increment to the subject's total, stores the new total as "
                             "the message and answers with it. Increments are whole numbers of any size: "
                             "+1, -5, 1000000000000.", classes="note")
        with Horizontal(id="pub-row3", classes="form-row"):
            for field_id, label, hint, modes in FIELDS:
                classes = " ".join(["cell", "mode-cell", *(f"for-{m}" for m in modes)]
                                   + (["wide"] if field_id in WIDE_FIELDS else []))
                with Vertical(classes=classes):
                    short = SHORT_FIELDS.get(field_id)
                    yield FitLabel(label, *short[:1] if short else (),
                                   on_fit=self._field_label_fit(field_id, label, hint))
                    yield Input(placeholder=hint, id=field_id, tooltip=FIELD_TIPS.get(field_id))
                    yield Static("", id=f"{field_id}-error", classes="inline-error")
        with Horizontal(id="pub-actions"):
            yield Button("Publish", id="pub-send", variant="primary")
            yield Button("Cancel", id="pub-cancel", disabled=True)
            yield Button("Clear payload", id="pub-clear")
            yield Button("Trace", id="pub-trace")
            yield ProgressBar(id="pub-progress", show_eta=False)
        yield Static("", id="pub-result")
        yield Label("Recent publishes (enter to recall)", classes="pane-status")
        yield OptionList(id="pub-history")

    def on_mount(self) -> None:
        self.history_path: Path | None = getattr(self.app, "publish_history_path", None)
        self.history = load_history(self.history_path)
        self.disable_writes()
        self._show_history()
        self.query_one("#pub-progress", ProgressBar).display = False
        self.watch_mode(self.mode)

    # ---- the mode ----------------------------------------------------
    def watch_mode(self, mode: str) -> None:
        # the few widgets that change get the class, not the pane: a class on
        # the pane restyles all of it (~0.15 s a switch on a loaded machine)
        for cell in self.query(".mode-cell"):
            cell.set_class(f"for-{mode}" in cell.classes, "-shown")
        self.query_one("#pub-payload-cell").set_class(mode == "counter", "-hidden")
        self.query_one("#pub-clear").set_class(mode == "counter", "-hidden")
        self.query_one("#pub-counter-note").set_class(mode == "counter", "-shown")
        # a trace (trace.py, where it is merged in) follows one plain message: not a batch,
        # an increment or a schedule
        for button in self.query("#pub-trace").results(Button):
            button.disabled = mode not in PLAIN_MODES
        self.refresh_bindings()
        focused = self.app.focused
        if focused is not None and self in focused.ancestors and not is_showing(focused):
            # the field with the focus went with the old mode: keep typing in the form
            self.query_one("#pub-subject", Input).focus()
        self.query_one("#pub-payload-label", FitLabel).set_texts(*PAYLOAD_LABELS[mode])
        select = self.query_one("#pub-mode", Select)
        if select.value != mode:
            select.value = mode

    def _headers_label_fit(self, text: str) -> None:
        self.query_one("#pub-headers", TextArea).placeholder = "" if "value" in text else "Key: value"

    def _field_label_fit(self, field_id: str, label: str, hint: str):
        """The placeholder follows its label: the short one under the short label."""
        short_hint = SHORT_FIELDS.get(field_id, ("", hint))[1]

        def fit(text: str) -> None:
            for box in self.query(f"#{field_id}").results(Input):
                box.placeholder = hint if text == label else short_hint
        return fit

    def on_resize(self) -> None:
        # four buttons in ~46 columns: "Clear payload" says "Clear", the gaps are 1
        narrow = self.size.width < 60
        self.query_one("#pub-actions").set_class(narrow, "-narrow")
        self.query_one("#pub-clear", Button).label = "Clear" if narrow else "Clear payload"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "trace" and self.mode not in PLAIN_MODES:
            return False
        return super().check_action(action, parameters)

    @on(Select.Changed, "#pub-mode")
    def mode_chosen(self, event: Select.Changed) -> None:
        # a Changed that ctrl+o caused may arrive after the next ctrl+o: only
        # the list's current value counts, or a stale one would switch back
        if event.value in MODE_VALUES and event.value == event.select.value:
            self.mode = str(event.value)

    def action_next_mode(self) -> None:
        self.mode = MODE_VALUES[(MODE_VALUES.index(self.mode) + 1) % len(MODE_VALUES)]

    def _show_history(self) -> None:
        options = self.query_one("#pub-history", OptionList)
        options.clear_options()
        for i, h in enumerate(self.history):
            payload = h.get("payload", "").replace("\n", " ")
            options.add_option(Option(Text(f"{h.get('mode', 'js'):4} {h.get('subject', '')}  {payload[:60]}"), id=str(i)))

    @on(OptionList.OptionSelected, "#pub-history")
    def recall(self, event: OptionList.OptionSelected) -> None:
        h = self.history[int(event.option_id or 0)]
        self.query_one("#pub-subject", Input).value = h.get("subject", "")
        self.query_one("#pub-headers", TextArea).text = h.get("headers", "")
        self.query_one("#pub-payload", TextArea).text = h.get("payload", "")
        mode = h.get("mode", "js")
        self.mode = mode if mode in MODE_VALUES else "js"
        for field_id, value in (h.get("fields") or {}).items():
            for box in self.query(f"#{field_id}").results(Input):
                box.value = str(value)
        self.query_one("#pub-subject", Input).focus()

    def _error(self, field_id: str, message: str | None) -> None:
        box = self.query_one(f"#{field_id}-error", Static)
        box.update(message or "")
        box.set_class(bool(message), "-shown")

    def build_request(self) -> PublishRequest | BatchRequest | CounterRequest | ScheduleRequest | None:
        """The request the form describes in its mode; None after marking what is wrong."""
        for fid in ("pub-subject", "pub-headers", *(f[0] for f in FIELDS)):
            self._error(fid, None)
        selected = self.query_one("#pub-mode", Select).value  # a Select.Changed may still be on its way
        if selected in MODE_VALUES:
            self.mode = str(selected)
        if self.mode in PLAIN_MODES:
            return self._plain_request()
        errors: dict[str, str] = {}
        headers: dict[str, str] = {}
        try:
            headers = parse_headers(self.query_one("#pub-headers", TextArea).text)
        except ValueError as exc:
            errors["pub-headers"] = str(exc)
        values = {box.id: box.value for box in self.query("#pub-row1 Input, #pub-row3 Input").results(Input) if box.id}
        payload = self.query_one("#pub-payload", TextArea).text
        req: BatchRequest | CounterRequest | ScheduleRequest | None
        if self.mode == "batch":
            req = read_batch(values, headers, payload, errors)
        elif self.mode == "counter":
            req = read_counter(values, headers, errors)
        else:
            req = read_schedule(values, headers, payload, errors)
        for field_id, message in errors.items():
            self._error(field_id, message)
        return None if errors else req

    def _plain_request(self) -> PublishRequest | None:
        ok = True
        subject = self.query_one("#pub-subject", Input).value.strip()
        if (err := subject_error(subject, wildcards=False)) is not None:
            self._error("pub-subject", err)
            ok = False
        headers: dict[str, str] = {}
        try:
            headers = parse_headers(self.query_one("#pub-headers", TextArea).text)
        except ValueError as exc:
            self._error("pub-headers", str(exc))
            ok = False
        count, last_seq, rate = 1, None, None
        try:
            count = parse_int(self.query_one("#pub-count", Input).value, "repeat", minimum=1) or 1
        except ValueError as exc:
            self._error("pub-count", str(exc))
            ok = False
        try:
            last_seq = parse_int(self.query_one("#pub-lastseq", Input).value, "expected last seq", minimum=0)
        except ValueError as exc:
            self._error("pub-lastseq", str(exc))
            ok = False
        rate_text = self.query_one("#pub-rate", Input).value.strip()
        if rate_text:
            try:
                rate = float(rate_text)
                if rate <= 0:
                    raise ValueError
            except ValueError:
                self._error("pub-rate", f"rate must be a positive number, not '{rate_text}'")
                ok = False
        jetstream = self.mode == "js"
        msg_id = self.query_one("#pub-msgid", Input).value.strip() or None
        expected_stream = self.query_one("#pub-stream", Input).value.strip() or None
        if not jetstream and (msg_id or last_seq is not None or expected_stream):
            self._error("pub-msgid", "JetStream options need JetStream mode")
            ok = False
        if not ok:
            return None
        return PublishRequest(subject, headers, self.query_one("#pub-payload", TextArea).text, jetstream,
                              count, rate, msg_id, last_seq, expected_stream)

    @on(Button.Pressed, "#pub-send")
    def action_publish(self) -> None:
        req = self.build_request()
        if req is None:
            result = self.query_one("#pub-result", Static)
            result.set_class(True, "-error")
            result.update(Text("Fix the marked fields first.", style="italic"))
            return
        entry = {"subject": req.subject, "headers": self.query_one("#pub-headers", TextArea).text,
                 "payload": self.query_one("#pub-payload", TextArea).text, "mode": self.mode}
        if self.mode not in PLAIN_MODES:  # the mode's own fields come back with a recall
            entry["fields"] = {f[0]: v for f in FIELDS if self.mode in f[3]
                               and (v := self.query_one(f"#{f[0]}", Input).value)}
        if history_size(entry) <= HISTORY_MAX_BYTES:
            self.history = ([entry] + [h for h in self.history if h != entry])[:HISTORY_KEEP]
            save_history(self.history_path, self.history)
            self._show_history()
        self.query_one("#pub-cancel", Button).disabled = False
        bar = self.query_one("#pub-progress", ProgressBar)
        if isinstance(req, PublishRequest):
            bar.update(total=req.count, progress=0)
            bar.display = req.count > 1
            self.run_publish(req)
        else:
            bar.display = False
            self.run_feature(req)

    @on(Button.Pressed, "#pub-trace")
    def action_trace(self) -> None:
        """"Where did my message go?": the composed message, traced (see trace.py)."""
        from .trace import open_trace

        open_trace(self, self.build_request())

    @on(Button.Pressed, "#pub-clear")
    def action_clear_payload(self) -> None:
        """A huge pasted payload goes in one key (selecting it all in the box is slow)."""
        self.query_one("#pub-payload", TextArea).text = ""
        self.query_one("#pub-payload", TextArea).focus()

    @on(Button.Pressed, "#pub-cancel")
    def action_cancel(self) -> None:
        self.workers.cancel_group(self, "publish")
        self.query_one("#pub-cancel", Button).disabled = True
        self.query_one("#pub-result", Static).update("Cancelled.")

    @work(exclusive=True, group="publish", exit_on_error=False)
    async def run_publish(self, req: PublishRequest) -> None:
        client = getattr(self.app, "client", None)
        if client is None:
            self.post_message(self.Finished("not connected", True))
            return
        start = time.monotonic()
        last = None
        for n in range(1, req.count + 1):
            data = render_template(req.payload, n).encode()
            msg_id = render_template(req.msg_id, n) if req.msg_id else None
            try:
                if req.jetstream:
                    last = await client.js_publish(
                        req.subject, data, req.headers, msg_id=msg_id,
                        expected_last_seq=req.expected_last_seq, expected_stream=req.expected_stream,
                    )
                else:
                    await client.publish(req.subject, data, req.headers)
            except NatsError as exc:
                self.post_message(self.Finished(f"Message {n} of {req.count} failed: {answers.refusal(exc)}", True))
                return
            if n % 10 == 0 or n == req.count:
                self.post_message(self.Progress(n, req.count))
            if req.rate:
                ahead = n / req.rate - (time.monotonic() - start)
                if ahead > 0:
                    await asyncio.sleep(ahead)
        if req.jetstream and last is not None:
            dup = " — duplicate, not stored again" if last.duplicate else ""
            summary = f"PubAck: stream {last.stream}, seq {last.seq}{dup}"
        else:
            summary = "Published (core: no acknowledgement — if nobody listens, it is gone)"
        if req.count > 1:
            summary = f"{req.count} messages in {time.monotonic() - start:.2f}s. Last {summary}"
        self.post_message(self.Finished(summary))

    @work(exclusive=True, group="publish", exit_on_error=False)
    async def run_feature(self, req: BatchRequest | CounterRequest | ScheduleRequest) -> None:
        """An atomic batch, a counter increment or a schedule, answered in words."""
        client = getattr(self.app, "client", None)
        if client is None:
            self.post_message(self.Finished("not connected", True))
            return
        try:
            if isinstance(req, BatchRequest):
                ack = await client.publish_batch(req.messages, req.batch_id)
                summary = answers.batch_stored(ack)
            elif isinstance(req, CounterRequest):
                counted = await client.increment_counter(req.subject, req.increment, req.headers)
                summary = answers.counter_stored(req.subject, req.increment, counted)
            else:
                stream, seq = await client.publish_schedule(req.subject, req.payload.encode(), req.headers,
                                                            req.pattern, req.target, req.ttl, req.time_zone)
                summary = answers.schedule_stored(req.subject, req.pattern, req.target, stream, seq, req.time_zone)
        except NatsError as exc:
            if isinstance(req, BatchRequest):
                text = answers.batch_refused(exc, len(req.messages))
            else:
                text = answers.refusal(exc, "the increment" if isinstance(req, CounterRequest) else "the schedule")
            self.post_message(self.Finished(text, True, REFUSAL_FIELD.get(exc.err_code, ""), exc.description))
            return
        self.post_message(self.Finished(summary))

    @on(Progress)
    def on_progress(self, event: Progress) -> None:
        self.query_one("#pub-progress", ProgressBar).update(total=event.total, progress=event.done)

    @on(Finished)
    def on_finished(self, event: Finished) -> None:
        self.query_one("#pub-cancel", Button).disabled = True
        result = self.query_one("#pub-result", Static)
        result.set_class(event.error, "-error")
        result.update(Text(event.summary))
        if event.field:
            self._error(event.field, event.field_text)

    def action_copy_code(self) -> None:
        req = self.build_request()
        if req is None:
            return
        from ...codegen import publish_code

        code = publish_code(req) if isinstance(req, PublishRequest) else code_for(req)
        self.app.copy_to_clipboard(code)
        self.query_one("#pub-result", Static).update(Text(code))
