"""Export what you see: the current screen saved as SVG and as plain text.

For docs and bug reports: one key (S, shift+s) writes ``natslab-<tab>-<time>.svg``
(Textual's own screenshot, colours and all) and a ``.txt`` of the same frame
(what each terminal line shows, for a bug report or a diff) into the current
directory, and says where. The view, not the notifications over it: the
toasts (the last save's "View saved" among them) are taken out of the frame
while it is captured and put back at once.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App


def screen_lines(app: App) -> list[str]:
    """What the terminal shows, line by line, as the SVG draws it."""
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()]


@contextmanager
def toasts_hidden(app: App):
    """The screen laid out without its toasts for as long as this lasts: the
    compositor is reflowed at once (a capture reads it synchronously, no
    frame is painted in between), and again with the toasts back."""
    from textual.widgets._toast import ToastRack

    racks = [rack for rack in app.screen.query(ToastRack) if rack.display]
    for rack in racks:
        rack.display = False
    if racks:
        app.screen._refresh_layout()
    try:
        yield
    finally:
        for rack in racks:
            rack.display = True
        if racks:
            app.screen._refresh_layout()


def export_view(app: App, directory: str | Path = ".", stem: str | None = None) -> tuple[Path, Path]:
    """Write the screen as ``<stem>.svg`` and ``<stem>.txt`` in ``directory``; returns both paths.

    Raises OSError when the directory cannot be written (the caller says so).
    """
    folder = Path(directory).expanduser().resolve()
    if stem is None:
        area = getattr(getattr(app, "main_screen", None), "active_area", "") or "view"
        stem = f"natslab-{area}-{time.strftime('%Y%m%d-%H%M%S')}"
        n = 1
        while (folder / f"{stem}.svg").exists() or (folder / f"{stem}.txt").exists():
            n += 1  # two exports within a second keep both
            stem = f"{stem.rsplit('~', 1)[0]}~{n}"
    with toasts_hidden(app):
        svg = Path(app.save_screenshot(f"{stem}.svg", str(folder)))
        lines = screen_lines(app)
    txt = folder / f"{stem}.txt"
    txt.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return svg, txt
