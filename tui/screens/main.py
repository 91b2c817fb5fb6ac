"""The workbench screen: header, disconnect banner, one tab per area, footer.

It wires selection between areas: the highlighted stream feeds the consumers
pane, the highlighted consumer feeds the pull hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Static, Tab, Tabs

from ..panes.streams import StreamsPane
from ..widgets.deferred import Deferred
from ..widgets.status_header import StatusHeader

if TYPE_CHECKING:
    from ..panes.consumers import ConsumersPane
    from ..panes.pull import PullHand


def _consumers_pane() -> "ConsumersPane":
    from ..panes.consumers import ConsumersPane

    return ConsumersPane(id="consumers-pane")


def _pull_hand() -> "PullHand":
    from ..panes.pull import PullHand

    return PullHand(id="pull-pane")


class MainScreen(Screen):
    # Tabs + ContentSwitcher rather than TabbedContent: measured, TabbedContent
    # added about a second to the first paint with nine areas.
    # Only the streams area is composed for the first frame (and not its hidden
    # Messages tab). The consumers pane, the pull hand and the message browser
    # are mounted right after it (mount_hidden_areas, before the app connects);
    # the tool panes the first time their tab is shown.
    HIDDEN_AT_START = ("consumers", "pull")

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        yield Static("", id="banner")
        yield Tabs(*[Tab(title, id=f"tab-{tab}") for tab, title in self.app.TABS], id="tabs")
        with ContentSwitcher(id="panes", initial="streams"):
            yield Vertical(StreamsPane(id="streams-pane"), id="streams")
            yield Deferred(_consumers_pane, id="consumers")
            yield Deferred(_pull_hand, id="pull")
            yield from self.app.tool_panes()
        yield Footer()

    _resumed_before = False

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # The first resume comes right after compose, whose widgets were styled
        # as they were mounted: restyling every node again cost ~40 ms of the
        # first paint. Later resumes (a dialog closed, ...) restyle as usual.
        if not self._resumed_before:
            self._resumed_before = True
            event.refresh_styles = False

    async def mount_hidden_areas(self) -> None:
        for area in self.HIDDEN_AT_START:
            await self.materialize(area)
        await self.query_one(StreamsPane).mount_browser()  # the streams pane's Messages tab

    async def materialize(self, area: str) -> None:
        """Make sure the area's pane is mounted (and composed)."""
        holder = self.query_one(f"#{area}")
        if isinstance(holder, Deferred) and (mounting := holder.materialize()) is not None:
            await mounting
            if area == "consumers":
                # a stream highlighted before the pane existed
                consumers = self.query_one("#consumers-pane")
                selected = self.query_one(StreamsPane).selected
                if selected and consumers.stream is None:  # type: ignore[attr-defined]
                    consumers.stream = selected  # type: ignore[attr-defined]

    def show_banner(self, message: str | None) -> None:
        banner = self.query_one("#banner", Static)
        banner.update(message or "")
        self.set_class(bool(message), "-banner")

    def show_area(self, tab: str) -> None:
        self.query_one("#tabs", Tabs).active = f"tab-{tab}"

    @property
    def active_area(self) -> str:
        return self.query_one("#panes", ContentSwitcher).current or ""

    # The consumers and pull modules are imported when their panes are mounted,
    # so their messages are handled by name rather than with @on(Class.Message).
    @on(StreamsPane.Selected)
    def stream_selected(self, event: StreamsPane.Selected) -> None:
        for consumers in self.query("#consumers-pane"):
            consumers.stream = event.stream  # type: ignore[attr-defined]

    def on_consumers_pane_selected(self, event: "ConsumersPane.Selected") -> None:
        for hand in self.query("#pull-pane"):
            hand.set_target(event.stream, event.consumer, event.pull)  # type: ignore[attr-defined]

    def on_consumers_pane_open_pull_hand(self, event: "ConsumersPane.OpenPullHand") -> None:
        for hand in self.query("#pull-pane"):
            hand.set_target(event.stream, event.consumer, True)  # type: ignore[attr-defined]
        self.show_area("pull")

    @on(Tabs.TabActivated, "#tabs")
    async def tab_activated(self, event: Tabs.TabActivated) -> None:
        if event.tab is None or not event.tab.id:
            return
        area = event.tab.id.removeprefix("tab-")
        self.query_one("#panes", ContentSwitcher).current = area
        await self.materialize(area)
        holder = self.query_one(f"#{area}")
        pane = holder.children[0] if holder.children else None
        # A pane that was hidden polls right away instead of on its next tick.
        if pane is not None and hasattr(pane, "schedule_poll"):
            pane.schedule_poll(0.01)
        if pane is not None:
            # keys of the pane work right away: focus the pane's chosen widget,
            # or its first focusable one
            if hasattr(pane, "focus_default"):
                pane.focus_default()
                return
            for widget in pane.query("*"):
                if widget.focusable:
                    widget.focus()
                    break
