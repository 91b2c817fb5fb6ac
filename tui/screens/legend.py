"""`?` where a picture is on screen: what its glyphs mean, then the keys.

The panes that draw pictures (the stream ruler, the redelivery timeline) bind
`?` to this instead of the plain key list, so the legend is where the user
already looks for help and the keys are still all listed under it.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from .help import HelpScreen


class LegendHelp(HelpScreen):
    def __init__(self, bindings: list[tuple[str, str, str]], legends: list[Text] | None = None):
        super().__init__(bindings)
        self.legends = legends or []

    @classmethod
    def with_legends(cls, active: dict, legends: list[Text]) -> "LegendHelp":
        screen = cls.for_bindings(active)
        screen.legends = legends
        return screen

    def on_mount(self) -> None:
        # the legend goes first in the help screen's own box (same styles, same scroll)
        box = self.query_one("#help-box")
        box.mount_all([Static(legend, classes="help-legend") for legend in self.legends], before=0)
