"""The walkthrough as a guided tour: a side panel that replays the seed
walkthrough step by step on the connected broker (``steps.py`` the steps as
data and their nats-py actions, ``run.py`` what a step works with,
``panel.py`` the widget). Opened with ``T`` or from the command palette."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..app import NatslabApp


def open_tour(app: "NatslabApp") -> None:
    """Show the tour panel (made on first use; closing only hides it, so it
    opens again at the step where it was) and give it the keys."""
    from .panel import TourPanel
    from . import run

    screen = app.main_screen
    if screen is None:
        return
    found = screen.query(TourPanel)
    if found:
        panel = found.first()
        panel.display = True
        panel.focus()
        panel.call_after_refresh(screen.fit_tabs)  # the panel takes the tabs' right end
        return
    panel = TourPanel(run.DEFAULT_TIMING, id="tour")
    screen.mount(panel)
    panel.call_after_refresh(panel.focus)
    panel.call_after_refresh(screen.fit_tabs)
