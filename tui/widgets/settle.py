"""Updating a Static that is refreshed on every poll without laying out the screen.

``Static.update`` lays the whole screen out again (``refresh(layout=True)``):
measured ~15-40 ms on the busy 2-core machine, and the detail views are
updated on every poll (a consumer's "Last delivery: 6.37s ago" moves twice a
second) — most of the app's CPU at rest and a stall for a key pressed meanwhile
(scripts/bench_tui.py feel). The layout is only needed when the new content
is not as tall as what is shown.
"""

from __future__ import annotations

from textual.visual import visualize
from textual.widgets import Static


def update_static(widget: Static, content) -> None:
    """``widget.update(content)``, with a layout of the screen only when the
    content's height changes (or the widget's size depends on more than it)."""
    styles = widget.styles
    width = widget.content_size.width
    if (not widget.is_mounted or width <= 0 or styles.height is None or not styles.height.is_auto
            or (styles.width is not None and styles.width.is_auto)):
        widget.update(content)
        return
    visual = visualize(widget, content, markup=getattr(widget, "_render_markup", True))
    height = visual.get_height(styles, width)
    widget.update(content, layout=height != widget.content_size.height)
