"""The one list of the workbench's areas.

Tabs, their digit keys, the palette's "Go to" commands, when each pane is
mounted and how to build it all come from ``PANES``; adding an area is one row
here and a folder under ``panes/``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module

from textual.binding import Binding
from textual.widget import Widget


@dataclass(frozen=True)
class PaneSpec:
    area: str  # the id of the tab's content; the pane itself is "<area>-pane"
    title: str
    short: str  # the title in a narrow terminal (under WIDE columns)
    module: str  # relative to natslab.tui; imported when the pane is built
    cls: str
    # "first": composed for the first frame; "after-paint": mounted right after
    # it (before the app connects); "on-demand": the first time the tab is shown.
    # Importing and composing the tool panes up front cost ~0.1 s of the first paint.
    mount: str = "on-demand"

    @property
    def pane_id(self) -> str:
        return f"{self.area}-pane"

    @property
    def styles(self) -> str:
        """The pane's style sheet, beside its code (relative to natslab.tui)."""
        return f"panes/{self.area}/{self.area}.tcss"

    def build(self) -> Widget:
        return getattr(import_module(self.module, "natslab.tui"), self.cls)(id=self.pane_id)


PANES: tuple[PaneSpec, ...] = (
    PaneSpec("streams", "Streams", "Streams", ".panes.streams", "StreamsPane", "first"),
    PaneSpec("consumers", "Consumers", "Consumers", ".panes.consumers", "ConsumersPane", "after-paint"),
    PaneSpec("pull", "Pull hand", "Pull", ".panes.pull", "PullHand", "after-paint"),
    PaneSpec("publish", "Publish", "Publish", ".panes.publish", "PublishPane"),
    PaneSpec("request", "Request", "Request", ".panes.request", "RequestPane"),
    PaneSpec("kv", "KV", "KV", ".panes.kv", "KvPane"),
    PaneSpec("objects", "Objects", "Objects", ".panes.objects", "ObjectsPane"),
    PaneSpec("tail", "Tail", "Tail", ".panes.tail", "TailPane"),
    PaneSpec("connections", "Connections", "Conns", ".panes.connections", "ConnectionsPane"),
)
BY_AREA = {spec.area: spec for spec in PANES}
WIDE = 100  # columns from which the tabs show their long titles


def digit(spec: PaneSpec) -> str:
    return str(PANES.index(spec) + 1)


def tab_label(spec: PaneSpec, wide: bool | str = True) -> str:
    """``1 Streams``: the key that shows the tab, then its title; ``"digit"``:
    the key alone (a tab bar too narrow even for the short titles)."""
    if wide == "digit":
        return f"[b]{digit(spec)}[/b]"
    return f"[b]{digit(spec)}[/b] {spec.title if wide else spec.short}"


def tab_labels(width: int, active: str) -> dict[str, str]:
    """Every tab's label for a tab bar ``width`` columns wide: the long titles
    from WIDE columns, else the short ones (a column of padding each), else —
    the tour's panel beside them leaves 48 — the digits, with the title of the
    active tab only, so the bar never scrolls the "1" out of sight."""
    if width >= WIDE:
        return {spec.area: tab_label(spec, True) for spec in PANES}
    short = sum(len(f"{digit(spec)} {spec.short}") + 1 for spec in PANES)
    if short <= width:
        return {spec.area: tab_label(spec, False) for spec in PANES}
    return {spec.area: tab_label(spec, False if spec.area == active else "digit") for spec in PANES}


def style_sheets() -> list[str]:
    """The app's style sheet, then the help screen's, the tour panel's and every pane's."""
    return ["app.tcss", "screens/help.tcss", "tour/tour.tcss", *(spec.styles for spec in PANES)]


def tab_bindings() -> list[Binding]:
    """The digit keys. App-level and not priority: a focused text input keeps its digits."""
    return [
        Binding(digit(spec), f"tab('{spec.area}')", spec.title, id=f"app.tab.{spec.area}", show=False)
        for spec in PANES
    ]
