"""The workbench screen: header, disconnect banner, one tab per area, footer.

It wires selection between areas: the highlighted stream feeds the consumers
pane, the highlighted consumer feeds the pull hand.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.widgets import Footer, Static, TabbedContent, TabPane

from ..panes.consumers import ConsumersPane
from ..panes.pull import PullHand
from ..panes.streams import StreamsPane
from ..widgets.deferred import Deferred
from ..widgets.status_header import StatusHeader
from textual.screen import Screen


class MainScreen(Screen):
    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        yield Static("", id="banner")
        with TabbedContent(id="tabs", initial="streams"):
            with TabPane("Streams", id="streams"):
                yield StreamsPane(id="streams-pane")
            with TabPane("Consumers", id="consumers"):
                yield ConsumersPane(id="consumers-pane")
            with TabPane("Pull hand", id="pull"):
                yield PullHand(id="pull-pane")
            yield from self.app.tool_panes()
        yield Footer()

    def show_banner(self, message: str | None) -> None:
        banner = self.query_one("#banner", Static)
        banner.update(message or "")
        self.set_class(bool(message), "-banner")

    @on(StreamsPane.Selected)
    def stream_selected(self, event: StreamsPane.Selected) -> None:
        self.query_one(ConsumersPane).stream = event.stream

    @on(ConsumersPane.Selected)
    def consumer_selected(self, event: ConsumersPane.Selected) -> None:
        self.query_one(PullHand).set_target(event.stream, event.consumer, event.pull)

    @on(ConsumersPane.OpenPullHand)
    def open_pull_hand(self, event: ConsumersPane.OpenPullHand) -> None:
        self.query_one(PullHand).set_target(event.stream, event.consumer, True)
        self.query_one("#tabs", TabbedContent).active = "pull"

    @on(TabbedContent.TabActivated, "#tabs")
    async def tab_activated(self, event: TabbedContent.TabActivated) -> None:
        # A pane that was hidden polls right away instead of on its next tick.
        pane = event.pane.children[0] if event.pane.children else None
        if isinstance(pane, Deferred):
            if (mounting := pane.materialize()) is not None:
                await mounting
            pane = pane.children[0] if pane.children else None
        if pane is not None and hasattr(pane, "schedule_poll"):
            pane.schedule_poll(0.01)
        if pane is not None:
            # keys of the pane work right away: focus its first focusable widget
            for widget in pane.query("*"):
                if widget.focusable:
                    widget.focus()
                    break
