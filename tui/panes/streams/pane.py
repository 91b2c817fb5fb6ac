"""The live streams list with the selected stream's detail and messages below."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Label, TabbedContent, TabPane

from ...client import NatsError
from ...format import fmt_bytes, fmt_count
from ...widgets.deferred import Deferred
from ...widgets.live_table import LiveTable
from ..base import LivePane
from .detail import StreamInfoView

if TYPE_CHECKING:
    from .browser import MessageBrowser
    from ...client import StreamSummary

# the stream form and the purge dialog are imported when first opened (first paint)

# the counts before storage and retention, which the Info tab shows too:
# an 80-column terminal cuts the table's end
COLUMNS = [
    ("Name", "name"), ("Subjects", "subjects"), ("Messages", "messages"), ("Bytes", "bytes"),
    ("First seq", "first"), ("Last seq", "last"), ("Consumers", "consumers"),
    ("Storage", "storage"), ("Retention", "retention"),
]


def _message_browser():
    from .browser import MessageBrowser

    return MessageBrowser(id="browser")


def stream_row(s: StreamSummary) -> tuple:
    if s.offline:  # never "0 messages": nothing is known while its servers are gone
        return (s.name, "-", "offline", "-", "-", "-", "-", "-", "-")
    return (
        s.name, ", ".join(s.subjects) or "-", fmt_count(s.messages), fmt_bytes(s.bytes),
        s.first_seq, s.last_seq, s.consumer_count, s.storage, s.retention,
    )


class StreamsPane(LivePane):
    POLL_SECONDS = 1.0
    WRITE_ACTIONS = frozenset({"create", "edit", "purge", "delete", "backup", "restore"})
    BINDINGS = [
        Binding("n", "create", "New stream", id="streams.create"),
        Binding("e", "edit", "Edit", id="streams.edit"),
        Binding("p", "purge", "Purge", id="streams.purge"),
        Binding("d,delete", "delete", "Delete", id="streams.delete"),
        Binding("m", "messages", "Messages", id="streams.messages"),
        Binding("i", "info", "Info", id="streams.info"),
        Binding("J", "toggle_raw", "Raw JSON", id="streams.raw"),
        # not in the footer (it is full at 80 columns); the help screen and the palette list it
        Binding("g", "topology", "Topology", id="streams.topology", show=False),
        Binding("b", "backup", "Back up", id="streams.backup", show=False),
        Binding("R", "restore", "Restore", id="streams.restore", show=False),
    ]

    @dataclass
    class Polled(Message):
        streams: list[StreamSummary]
        error: str = ""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, StreamsPane.Polled)

    @dataclass
    class Selected(Message):
        """The highlighted stream changed (None when the list is empty)."""

        stream: str | None

    _more = False  # the table is wider than the pane (as last shown)

    def __init__(self, **kw):
        super().__init__(**kw)
        self.streams: dict[str, StreamSummary] = {}
        self.selected: str | None = None
        self._pending_select: str | None = None
        self._status_text = ""
        self._listed_at = 0.0  # when the rows were listed
        self.raw = False  # J: the Info tab shows the stream's JSON (`nats stream info -j`)

    def compose(self) -> ComposeResult:
        yield Label("Streams", id="streams-status", classes="pane-status")
        yield LiveTable(COLUMNS, id="streams-table")
        with TabbedContent(id="stream-detail"):
            with TabPane("Info", id="stream-info-tab"):
                yield StreamInfoView(id="stream-info")
            with TabPane("Messages", id="stream-messages-tab"):
                # hidden at first: mounted right after the first frame
                # (MainScreen.mount_hidden_areas) or when first shown
                # (its module, the message kinds and schedules, is imported after the first frame)
                yield Deferred(_message_browser, id="browser-holder")

    def on_resize(self, event) -> None:
        self.set_class(self.app.size.height < 30, "-short")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(StreamInfoView).show(None)
        self.query_one(LiveTable).focus()

    async def mount_browser(self) -> MessageBrowser:
        """The message browser, mounted (and pointed at the selected stream) if it was not yet."""
        mounting = self.query_one("#browser-holder", Deferred).materialize()
        if mounting is not None:
            await mounting
            self.query_one("MessageBrowser").stream = self.selected
        return self.query_one("MessageBrowser")

    @on(TabbedContent.TabActivated, "#stream-detail")
    async def detail_tab_shown(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "stream-messages-tab":
            await self.mount_browser()

    async def fetch(self, client) -> None:
        self.post_message(self.Polled(await client.list_streams()))

    def poll_failed(self, error: NatsError) -> None:
        self.post_message(self.Polled([], str(error)))

    @on(Polled)
    def show_streams(self, event: Polled) -> None:
        event.stop()
        status = self.query_one("#streams-status", Label)
        table = self.query_one(LiveTable)
        if event.error:
            # the rows stay as last listed, dimmed, and the line says how old they are
            text = f"Streams — could not list: {event.error}"
            if self.streams:
                table.add_class("-stale")
                age = time.monotonic() - self._listed_at
                text += f" · rows as of {age:.0f}s ago (dimmed)"
                # the Info tab's config and state (replicas' "not seen for 19.5s" and all)
                # are as old as the rows: dimmed under a line that says so
                self.query_one(StreamInfoView).mark_stale(age)
            self._status_text = text
            status.update(text)
            return
        self._listed_at = time.monotonic()
        table.remove_class("-stale")
        self.streams = {s.name: s for s in sorted(event.streams, key=lambda s: s.name)}
        table.sync({name: stream_row(s) for name, s in self.streams.items()})
        # a narrow terminal cuts the last columns: the table scrolls sideways, and says so
        # (as of the last time it was shown: a poll answered just after the pane was
        # hidden would say it of a table 0 wide, and showing it again cost a layout)
        if table.scrollable_content_region.width:
            self._more = table.virtual_size.width > table.scrollable_content_region.width
        more = " · ← → more columns" if self._more else ""
        if self.read_only:  # only what works: browsing
            text = (f"Streams ({len(self.streams)}){more} — m messages · i info · J raw JSON · read-only"
                    if self.streams else "No streams yet (read-only: none can be created here)")
        else:
            text = (f"Streams ({len(self.streams)}){more} — n new · e edit · p purge · d delete · m messages"
                    if self.streams else "No streams yet — press n to create one, or ctrl+p → Demo: redelivery")
        if text != self._status_text:  # every poll: the same line would cost a layout each time
            self._status_text = text
            status.update(text)
        if self._pending_select in self.streams:
            self.select_stream(self._pending_select)
        self._selection_changed()
        shown = self.streams.get(self.selected or "")
        if shown is not None:
            for browser in self.query("MessageBrowser"):
                browser.follow(shown.first_seq, shown.last_seq)

    @on(DataTable.RowHighlighted, "#streams-table")
    def on_highlight(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._selection_changed()

    def _selection_changed(self) -> None:
        key = self.query_one(LiveTable).selected_key
        stable = getattr(self.app, "stable_display", False)
        self.query_one(StreamInfoView).show(self.streams.get(key) if key else None, stable=stable, raw=self.raw)
        if key != self.selected:
            self.selected = key
            for browser in self.query("MessageBrowser"):
                browser.stream = key
            self.post_message(self.Selected(key))

    def select_stream(self, name: str) -> None:
        """Move the cursor to ``name`` now, or as soon as a poll shows it."""
        self._pending_select = name
        table = self.query_one(LiveTable)
        if table.value(name, "name") is not None:
            table.select_key(name)
            self._pending_select = None
            self._selection_changed()

    # ---- actions ------------------------------------------------------
    def _after_change(self, _result=None) -> None:
        self.schedule_poll(0.01)

    def action_create(self) -> None:
        def done(name: str | None) -> None:
            if name:
                self.app.notify(f"Stream {name} created")
                self.select_stream(name)
                self.schedule_poll(0.01)

        from .form import StreamForm

        self.app.push_screen(StreamForm(), done)

    def action_edit(self) -> None:
        if self.selected and self.selected in self.streams:
            from .form import StreamForm

            self.app.push_screen(StreamForm(self.streams[self.selected]), self._after_change)

    def action_purge(self) -> None:
        if not self.selected:
            return

        def done(purged: int | None) -> None:
            if purged is not None:
                self.app.notify(f"Purged {purged} messages from {self.selected}")
                self.schedule_poll(0.01)
                for browser in self.query("MessageBrowser"):
                    browser.load()

        from .purge import PurgeDialog

        self.app.push_screen(PurgeDialog(self.selected), done)

    def action_delete(self) -> None:
        name = self.selected
        if not name:
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.delete_stream(name)

        from ...widgets.confirm import ConfirmDialog

        self.app.push_screen(ConfirmDialog(f"Delete stream {name} and all its messages and consumers?"), done)

    @work(exclusive=True, group="streams-action", exit_on_error=False)
    async def delete_stream(self, name: str) -> None:
        try:
            await self.app.client.delete_stream(name)
        except (NatsError, AttributeError) as exc:
            self.app.notify(f"Could not delete {name}: {exc}", severity="error")
            return
        self.app.notify(f"Stream {name} deleted")
        self.schedule_poll(0.01)

    async def action_messages(self) -> None:
        self.query_one("#stream-detail", TabbedContent).active = "stream-messages-tab"
        browser = await self.mount_browser()
        browser.query_one("#browser-list").focus()

    def action_info(self) -> None:
        self.query_one("#stream-detail", TabbedContent).active = "stream-info-tab"

    def action_topology(self) -> None:
        from ...screens.topology import open_topology

        open_topology(self.app)

    def action_backup(self) -> None:
        name = self.selected
        if not name:
            return

        def done(result) -> None:
            if result is not None:
                self.app.notify(f"Stream {name} backed up to {result.directory} "
                                f"({result.messages} messages, {result.consumers} consumers)", timeout=8)

        from ...screens.backup import BackupDialog

        self.app.push_screen(BackupDialog(name), done)

    def action_restore(self) -> None:
        def done(name: str | None) -> None:
            if name:
                self.app.notify(f"Stream {name} restored")
                self.select_stream(name)
                self.schedule_poll(0.01)

        from ...screens.backup import RestoreDialog

        self.app.push_screen(RestoreDialog(), done)

    def action_toggle_raw(self) -> None:
        self.raw = not self.raw
        self.action_info()
        self._selection_changed()
