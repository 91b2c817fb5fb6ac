"""The workbench screen: header, disconnect banner, one tab per area, footer.

It wires selection between areas: the highlighted stream feeds the consumers
pane, the highlighted consumer feeds the pull hand.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import ContentSwitcher, Footer, Static, Tab, Tabs

from ..panes.consumers import ConsumersPane
from ..panes.pull import PullHand
from ..panes.streams import StreamsPane
from ..widgets.deferred import Deferred
from ..widgets.status_header import StatusHeader
from textual.screen import Screen


class MainScreen(Screen):
    # Tabs + ContentSwitcher rather than TabbedContent: measured, TabbedContent
    # added about a second to the first paint with nine areas.
    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        yield Static("", id="banner")
        yield Tabs(*[Tab(title, id=f"tab-{tab}") for tab, title in self.app.TABS], id="tabs")
        with ContentSwitcher(id="panes", initial="streams"):
            yield Vertical(StreamsPane(id="streams-pane"), id="streams")
            yield Vertical(ConsumersPane(id="consumers-pane"), id="consumers")
            yield Vertical(PullHand(id="pull-pane"), id="pull")
            yield from self.app.tool_panes()
        yield Footer()

    def show_banner(self, message: str | None) -> None:
        banner = self.query_one("#banner", Static)
        banner.update(message or "")
        self.set_class(bool(message), "-banner")

    def show_area(self, tab: str) -> None:
        self.query_one("#tabs", Tabs).active = f"tab-{tab}"

    @property
    def active_area(self) -> str:
        return self.query_one("#panes", ContentSwitcher).current or ""

    @on(StreamsPane.Selected)
    def stream_selected(self, event: StreamsPane.Selected) -> None:
        self.query_one(ConsumersPane).stream = event.stream

    @on(ConsumersPane.Selected)
    def consumer_selected(self, event: ConsumersPane.Selected) -> None:
        self.query_one(PullHand).set_target(event.stream, event.consumer, event.pull)

    @on(ConsumersPane.OpenPullHand)
    def open_pull_hand(self, event: ConsumersPane.OpenPullHand) -> None:
        self.query_one(PullHand).set_target(event.stream, event.consumer, True)
        self.show_area("pull")

    @on(Tabs.TabActivated, "#tabs")
    async def tab_activated(self, event: Tabs.TabActivated) -> None:
        if event.tab is None or not event.tab.id:
            return
        area = event.tab.id.removeprefix("tab-")
        self.query_one("#panes", ContentSwitcher).current = area
        holder = self.query_one(f"#{area}")
        if isinstance(holder, Deferred) and (mounting := holder.materialize()) is not None:
            await mounting
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
