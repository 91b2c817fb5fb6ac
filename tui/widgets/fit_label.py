"""A label that says it in fewer words when its column is narrow.

Beside the guided tour at 80 columns a pane is about 48 columns wide, and a
label written for 80 was cut mid-word ("Headers (Key:"). A FitLabel is given
its text longest first and shows the first that fits its width; the last one
is shown (and wraps or is cut) when none does. Wide, nothing is lost.
"""

from __future__ import annotations

from typing import Callable

from rich.cells import cell_len
from textual.widgets import Static


class FitLabel(Static):
    DEFAULT_CSS = "FitLabel { width: 100%; height: auto; }"

    def __init__(self, *texts: str, on_fit: Callable[[str], None] | None = None, **kw):
        """``on_fit`` is told the text shown each time the width changes (to put
        what the short text leaves out elsewhere, a field's placeholder)."""
        super().__init__("", **kw)
        self.texts: tuple[str, ...] = texts or ("",)
        self.on_fit = on_fit

    def set_texts(self, *texts: str) -> None:
        self.texts = texts or ("",)
        self.refresh(layout=True)

    @property
    def text(self) -> str:
        """The text shown at the present width."""
        width = self.content_region.width or self.size.width
        if width <= 0:
            return self.texts[0]
        return next((t for t in self.texts if cell_len(t) <= width), self.texts[-1])

    def render(self):
        return self.text

    def on_resize(self) -> None:
        self.refresh(layout=True)
        if self.on_fit is not None:
            self.on_fit(self.text)
