"""The topology screen: the TopologyView full screen, over the workbench.

Opened from the streams pane (``g``) or the palette; a jump to a stream closes
it and selects that stream in the streams pane.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from ..widgets.footer import KeysFooter

from ..panes.topology import TopologyView
from ..widgets.status_header import StatusHeader


class TopologyScreen(Screen):
    CSS_PATH = "../panes/topology/topology.tcss"
    BINDINGS = [Binding("escape", "close", "Back", id="topology.close")]

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")  # takes the app's header_info when it mounts
        yield TopologyView(id="topology-pane")
        yield KeysFooter()

    def on_mount(self) -> None:
        # the app updates the main screen's header; this one follows it
        header = self.query_one(StatusHeader)
        self.set_interval(1.0, lambda: setattr(header, "info", self.app.header_info), name="topology header")

    def action_close(self) -> None:
        self.dismiss(None)

    @on(TopologyView.Jump)
    def jump(self, event: TopologyView.Jump) -> None:
        event.stop()
        self.dismiss(event.stream)


def open_topology(app) -> None:
    """Show the topology; a jump from it selects the stream in the streams pane."""

    def done(stream: str | None) -> None:
        if stream:
            app.jump_to_stream(stream)

    app.push_screen(TopologyScreen(), done)
