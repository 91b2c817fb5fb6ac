"""Buckets on the left, the selected bucket's keys below them (filter as you
type, updated live by a watch so other programs' changes appear highlighted),
the selected key's value and revision history on the right, and an editor."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, DataTable, Input, Label, Static, TextArea

from ...client import NatsError
from ...client.kv import BucketSummary, KvEntry
from ...format import fmt_bytes, fmt_duration, parse_int, render_payload
from ...widgets.confirm import ConfirmDialog
from ...widgets.live_table import LiveTable
from ...widgets.fit_label import FitLabel
from ..base import LivePane
from .form import BucketForm

KEY_RE = re.compile(r"^[-/_=.a-zA-Z0-9]+$")


class KvPane(LivePane):
    POLL_SECONDS = 2.0
    WRITE_ACTIONS = frozenset({"new_bucket", "delete_bucket", "put"})
    WRITE_BUTTONS = ("kv-put", "kv-create", "kv-update", "kv-delete", "kv-purge")
    BINDINGS = [
        Binding("n", "new_bucket", "New bucket", id="kv.new"),
        # from any field: key, value, then ctrl+s (it took up to 9 Tabs to reach Put)
        Binding("ctrl+s", "put", "Put key", id="kv.put"),
        Binding("ctrl+d", "delete_bucket", "Delete bucket", id="kv.delete_bucket"),
        Binding("ctrl+t", "cycle_mode", "Text/JSON/hex", id="kv.mode"),
    ]

    @dataclass
    class Buckets(Message):
        buckets: list[BucketSummary]
        error: str = ""

    @dataclass
    class Changed(Message):
        bucket: str
        entry: KvEntry

    @dataclass
    class History(Message):
        bucket: str
        key: str
        entries: list[KvEntry]

    @dataclass
    class Done(Message):
        text: str
        error: bool = False

    def __init__(self, **kw):
        super().__init__(**kw)
        self.buckets: dict[str, BucketSummary] = {}
        self.bucket: str | None = None
        self.bucket_created = ""
        self.entries: dict[str, KvEntry] = {}
        self.key: str | None = None
        self.mode = "text"

    def compose(self) -> ComposeResult:
        # beside the tour at 80 columns the pane is ~48 wide: the line says it shorter there
        if self.read_only:
            yield FitLabel("Key-value — ctrl+t text/JSON/hex · read-only", "Key-value — ^t view · read-only",
                           classes="pane-status", id="kv-status")
        else:
            yield FitLabel("Key-value — n new bucket · ctrl+s put key · ctrl+d delete bucket · ctrl+t text/JSON/hex",
                           "Key-value — n new · ^s put · ^d delete · ^t view",
                           "KV — n new · ^s put · ^d delete · ^t view", classes="pane-status", id="kv-status")
        with Horizontal(id="kv-body"):
            with Vertical(id="kv-left"):
                yield LiveTable([("Bucket", "name"), ("Values", "values"), ("History", "history"), ("TTL", "ttl"), ("Size", "bytes")], id="kv-buckets")
                yield Input(placeholder="filter keys…", id="kv-filter")
                yield LiveTable([("Key", "key"), ("Rev", "rev"), ("Op", "op"), ("Size", "size")], id="kv-keys")
            with Vertical(id="kv-right"):
                with VerticalScroll(id="kv-value-box"):
                    yield Static("", id="kv-value")
                yield DataTable(id="kv-history", cursor_type="row")
                with Horizontal(classes="form-row"):
                    with Vertical(classes="cell"):
                        yield Label("Key")
                        yield Input(placeholder="e.g. region", id="kv-key")
                    with Vertical(classes="cell"):
                        yield Label("Revision (update)")
                        yield Input(placeholder="the latest, for update", id="kv-rev")
                yield TextArea(id="kv-edit")
                with Horizontal(id="kv-actions"):
                    for op, label in (("put", "Put"), ("create", "Create"), ("update", "Update"), ("delete", "Delete"), ("purge", "Purge")):
                        yield Button(label, id=f"kv-{op}")
                yield Static("", id="kv-result")

    def on_mount(self) -> None:
        super().on_mount()
        # (results, not query_one: an app quitting while the pane mounts has removed it already)
        for table in self.query("#kv-history").results(DataTable):
            self._history_columns(table)

    @staticmethod
    def _history_columns(history: DataTable) -> None:
        for label, key in (("Rev", "rev"), ("Op", "op"), ("Time", "time"), ("Value", "value")):
            history.add_column(label, key=key)

    # ---- buckets ---------------------------------------------------------
    async def fetch(self, client) -> None:
        self.post_message(self.Buckets(await client.list_buckets()))

    def poll_failed(self, error: NatsError) -> None:
        self.post_message(self.Buckets([], str(error)))

    @on(Buckets)
    def show_buckets(self, event: Buckets) -> None:
        if event.error:
            self.query_one("#kv-status", FitLabel).set_texts(f"Key-value — {event.error}")
            return
        self.buckets = {b.name: b for b in sorted(event.buckets, key=lambda b: b.name)}
        self.query_one("#kv-buckets", LiveTable).sync({
            b.name: (b.name, b.values, b.history, fmt_duration(b.ttl) if b.ttl else "-", fmt_bytes(b.bytes))
            for b in self.buckets.values()
        })
        pending = getattr(self.app, "pending_bucket", None)
        if pending in self.buckets:
            self.select_bucket(pending)
        self._bucket_changed()

    @on(DataTable.RowHighlighted, "#kv-buckets")
    def _on_bucket_row(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._bucket_changed()

    def _bucket_changed(self) -> None:
        name = self.query_one("#kv-buckets", LiveTable).selected_key
        summary = self.buckets.get(name or "")
        created = summary.created if summary else ""
        # deleted and made again under the same name: its keys and revisions are not the old ones
        if name != self.bucket or created != self.bucket_created:
            self.bucket, self.bucket_created = name, created
            self.entries.clear()
            self.key = None
            self._show_keys()
            self._show_value()
            if name:
                self.watch_bucket(name)

    def select_bucket(self, name: str) -> None:
        """Select ``name`` now, or as soon as a poll lists it."""
        table = self.query_one("#kv-buckets", LiveTable)
        if table.value(name, "name") is None:
            self.app.pending_bucket = name
            return
        self.app.pending_bucket = None
        table.select_key(name)
        self._bucket_changed()

    @work(exclusive=True, group="kv-watch", exit_on_error=False)
    async def watch_bucket(self, bucket: str) -> None:
        client = self.client
        if client is None:
            return
        try:
            async for entry in client.kv_watch(bucket):
                self.post_message(self.Changed(bucket, entry))
        except NatsError as exc:
            self.post_message(self.Done(f"watch stopped: {exc}", True))

    @on(Changed)
    def on_changed(self, event: Changed) -> None:
        if event.bucket != self.bucket:
            return
        before = self.entries.get(event.entry.key)
        self.entries[event.entry.key] = event.entry
        self._show_keys()
        if event.entry.key == self.key:
            rev = self.query_one("#kv-rev", Input)
            if before is not None and rev.value == str(before.revision):
                # the field said the latest revision: it still does (an update
                # with the old one answered "wrong last sequence")
                rev.value = str(event.entry.revision)
            self._show_value()
            self.load_history(self.bucket, self.key)

    # ---- keys ------------------------------------------------------------
    @on(Input.Changed, "#kv-filter")
    def _on_filter(self) -> None:
        self._show_keys()

    def _show_keys(self) -> None:
        needle = self.query_one("#kv-filter", Input).value.strip().lower()
        self.query_one("#kv-keys", LiveTable).sync({
            k: (k, e.revision, e.operation, fmt_bytes(len(e.value)))
            for k, e in sorted(self.entries.items()) if needle in k.lower()
        })

    @on(DataTable.RowHighlighted, "#kv-keys")
    def _on_key_row(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        key = self.query_one("#kv-keys", LiveTable).selected_key
        if key != self.key:
            self.key = key
            self._show_value()
            if key and self.bucket:
                entry = self.entries.get(key)
                self.query_one("#kv-key", Input).value = key
                self.query_one("#kv-rev", Input).value = str(entry.revision) if entry else ""
                self.load_history(self.bucket, key)

    def _show_value(self) -> None:
        box = self.query_one("#kv-value", Static)
        entry = self.entries.get(self.key or "")
        if entry is None:
            box.update(Text("Select a key." if self.bucket else "Select or create a bucket (n).", style="italic"))
            self.query_one("#kv-history", DataTable).clear()
            return
        text = Text()
        text.append(f"{entry.key}  revision {entry.revision}  {entry.operation}  ({self.mode})\n", style="bold")
        text.append(render_payload(entry.value, self.mode) if entry.operation == "PUT" else "(deleted)")
        box.update(text)

    def action_cycle_mode(self) -> None:
        self.mode = {"text": "json", "json": "hex", "hex": "text"}[self.mode]
        self._show_value()

    @work(exclusive=True, group="kv-history", exit_on_error=False)
    async def load_history(self, bucket: str, key: str) -> None:
        try:
            entries = await self.app.client.kv_history(bucket, key)
        except (NatsError, AttributeError):
            entries = []
        self.post_message(self.History(bucket, key, entries))

    @on(History)
    def show_history(self, event: History) -> None:
        if (event.bucket, event.key) != (self.bucket, self.key):
            return
        table = self.query_one("#kv-history", DataTable)
        # columns too: DataTable.clear keeps their widths, and a key's history
        # would stand in the columns of the one shown before (a long value's)
        table.clear(columns=True)
        self._history_columns(table)
        stable = getattr(self.app, "stable_display", False)
        for e in reversed(event.entries):
            when = "--:--:--" if stable or e.created is None else e.created.astimezone().strftime("%H:%M:%S")
            table.add_row(Text(str(e.revision)), Text(e.operation), Text(when), Text(e.value[:40].decode(errors="replace")))

    # ---- edits -------------------------------------------------------------
    @on(Button.Pressed, "#kv-actions Button")
    def on_action(self, event: Button.Pressed) -> None:
        self.edit((event.button.id or "").removeprefix("kv-"))

    def action_put(self) -> None:
        editor = self.query_one("#kv-edit", TextArea)
        key = self.query_one("#kv-key", Input).value.strip()
        in_form = self.screen.focused in (editor, self.query_one("#kv-key"), self.query_one("#kv-rev"))
        if key and not editor.text and not in_form:
            # ctrl+s on a key picked in the table, nothing typed: it put an empty
            # value over the key's (region "us" became ""); the value field takes it
            editor.focus()
            self._done(f"Type the new value of {key} here, then ctrl+s puts it (the field left empty puts an empty value)")
            return
        self.edit("put")

    def edit(self, op: str) -> None:
        """Put, create, update, delete or purge the key in the Key field."""
        result = self.query_one("#kv-result", Static)
        if not self.bucket:
            result.update("Select a bucket first")
            return
        field = self.query_one("#kv-key", Input)
        key = field.value.strip()
        if not key and op == "put":  # ctrl+s before a key: take the user to it, as ctrl+r does for a mock
            field.focus()
            self._done("Type the key here and its value below, then ctrl+s puts it")
            return
        if not key or not KEY_RE.match(key) or key.startswith(".") or key.endswith("."):
            self._done(f"'{key}' is not a valid key (letters, digits, - / _ = . ; no leading or trailing dot)", True)
            return
        revision = None
        if op == "update":
            try:
                revision = parse_int(self.query_one("#kv-rev", Input).value, "revision", minimum=0, allow_empty=False)
            except ValueError as exc:
                self._done(str(exc), True)
                return
        self.kv_edit(self.bucket, op, key, self.query_one("#kv-edit", TextArea).text.encode(), revision)

    @work(exclusive=True, group="kv-edit", exit_on_error=False)
    async def kv_edit(self, bucket: str, op: str, key: str, value: bytes, revision: int | None) -> None:
        try:
            rev = await self.app.client.kv_op(bucket, op, key, value, revision)
        except NatsError as exc:
            text = str(exc)
            if "wrong last sequence" in text:
                text = ("the key exists already" if op == "create"
                        else f"revision {revision} is not the key's latest") + f" ({text})"
            self.post_message(self.Done(f"{op} {key}: {text}", True))
            return
        self.post_message(self.Done(f"{op} {key}: ok" + (f", revision {rev}" if rev else "")))

    @on(Done)
    def _on_done(self, event: Done) -> None:
        self._done(event.text, event.error)

    def _done(self, text: str, error: bool = False) -> None:
        result = self.query_one("#kv-result", Static)
        result.set_class(error, "-error")
        result.update(Text(text))

    def action_new_bucket(self) -> None:
        def done(name: str | None) -> None:
            if name:
                self.app.notify(f"Bucket {name} created")
                self.schedule_poll(0.01)

        self.app.push_screen(BucketForm(), done)

    def action_delete_bucket(self) -> None:
        name = self.bucket
        if not name:
            return

        def done(yes: bool | None) -> None:
            if yes:
                self._delete_bucket(name)

        self.app.push_screen(ConfirmDialog(f"Delete bucket {name} and every key and revision in it?"), done)

    @work(group="kv-edit", exit_on_error=False)
    async def _delete_bucket(self, name: str) -> None:
        try:
            await self.app.client.delete_bucket(name)
        except (NatsError, AttributeError) as exc:
            self.post_message(self.Done(f"delete bucket {name}: {exc}", True))
            return
        self.post_message(self.Done(f"bucket {name} deleted"))
        self.schedule_poll(0.01)
