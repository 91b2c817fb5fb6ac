"""The topology view: the graph of stream links above a live table of the links.

The table's cursor picks a link; Enter jumps to the stream it feeds, ``o`` to
the stream it comes from (the screen closes and the streams pane selects it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Label, Static

from ...client.topology import Link, Topology, read_topology
from ...widgets.live_table import LiveTable
from ..base import LivePane
from .graph import draw_topology, link_state

if TYPE_CHECKING:
    from ...client import NatsClient, NatsError

COLUMNS = [("From", "origin"), ("Link", "kind"), ("To", "target"), ("Lag", "lag"), ("State", "state"),
           ("Error", "error")]


def link_row(link: Link, stable: bool) -> tuple:
    target = link.target if link.target_is_stream else f"subject {link.target}"
    lag = "-" if link.lag is None else str(link.lag)
    return (link.origin, link.kind, target, lag, link_state(link, stable, lag=False), link.error or "-")


class TopologyView(LivePane):
    POLL_SECONDS = 1.0
    BINDINGS = [
        Binding("o", "jump('origin')", "Go to origin", id="topology.origin"),
    ]

    @dataclass
    class Polled(Message):
        topology: Topology | None
        error: str = ""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, TopologyView.Polled)

    @dataclass
    class Jump(Message):
        """The user asked to see a stream at one end of a link."""

        stream: str = field(default="")

    def __init__(self, **kw):
        super().__init__(**kw)
        self.topology: Topology | None = None
        self.links: dict[str, Link] = {}

    def compose(self) -> ComposeResult:
        yield Label("Topology", id="topology-status", classes="pane-status")
        with VerticalScroll(id="topology-graph-box"):
            yield Static("", id="topology-graph")
        yield LiveTable(COLUMNS, id="topology-links")

    def on_mount(self) -> None:
        super().on_mount()
        self.query_one(LiveTable).focus()

    async def fetch(self, client: NatsClient) -> None:
        self.post_message(self.Polled(await read_topology(client)))

    def poll_failed(self, error: NatsError) -> None:
        self.post_message(self.Polled(None, str(error)))

    def _styles(self) -> dict[str, str]:
        v = getattr(self.app, "theme_variables", None) or self.app.get_css_variables()
        # the theme's colours (its text-* variables are Textual-only "auto 60%" forms rich cannot read)
        return {"stream": f"bold {v.get('primary', '')}", "kind": v.get("accent", ""),
                "error": f"bold {v.get('error', '')}", "muted": "dim"}

    @on(Polled)
    def show_topology(self, event: Polled) -> None:
        event.stop()
        status = self.query_one("#topology-status", Label)
        if event.topology is None:
            status.update(f"Topology — could not list streams: {event.error}")
            return
        self.topology = topo = event.topology
        stable = getattr(self.app, "stable_display", False)
        self.query_one("#topology-graph", Static).update(draw_topology(topo, self._styles(), stable))
        self.links = {link.key: link for link in topo.links}
        self.query_one(LiveTable).sync({key: link_row(link, stable) for key, link in self.links.items()})
        failing = sum(1 for link in topo.links if link.error)
        status.update(f"Topology — {len(topo.links)} links, {sum(not n.missing for n in topo.nodes.values())} streams"
                      + (f", {failing} failing" if failing else "")
                      + " · enter: to target · o: to origin · esc")

    @property
    def selected_link(self) -> Link | None:
        key = self.query_one(LiveTable).selected_key
        return self.links.get(key) if key else None

    def action_jump(self, end: str) -> None:
        link = self.selected_link
        if link is None:
            return
        if end == "target" and not link.target_is_stream:
            self.app.notify(f"No stream stores {link.target}: the republished messages go to subscribers only")
            return
        self.post_message(self.Jump(link.origin if end == "origin" else link.target))

    # Enter on the table (its own binding, select_cursor) is the jump to the target
    @on(LiveTable.RowSelected, "#topology-links")
    def row_selected(self, event: LiveTable.RowSelected) -> None:
        event.stop()
        self.action_jump("target")
