"""The footer with `?` and `q` always in sight.

Textual's footer lists the keys of the focused widget first and the app's
last, so at 80 columns `?` (help, which lists every key) and `q` were the
first to be cut. Here they sit on the right, next to the palette key; the
pane's own keys fill the rest and scroll sideways when they do not fit, and
`?` lists them all.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import HorizontalGroup
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

PINNED_KEYS = ("question_mark", "q")  # in this order, left of the palette key


class KeysFooter(Footer):
    DEFAULT_CSS = """
    KeysFooter #footer-pinned {
        dock: right;
        width: auto;
        height: 1;
        background: $footer-background;
        border-left: vkey $foreground 20%;
    }
    KeysFooter #footer-pinned FooterKey.-command-palette {
        dock: none;
        border-left: none;
    }
    """

    def bindings_changed(self, screen) -> None:
        # Textual's footer recomposes "after the next refresh" and not at all
        # while the terminal reports no focus: leaving the pull hand for
        # Publish or Objects, the hand's keys stayed in the footer until some
        # other repaint (0.3-2 s, or the next key). On the next turn of the
        # message loop instead, whatever else is on screen.
        self._bindings_ready = True
        if self.is_attached and screen is self.screen:
            self.call_later(self.recompose)

    def compose(self) -> ComposeResult:
        # (natslab's bindings have no groups: every key is a FooterKey of its own)
        keys = list(super().compose())
        pinned = {k.key: k for k in keys if isinstance(k, FooterKey) and k.key in PINNED_KEYS}
        palette = [k for k in keys if k.has_class("-command-palette")]
        yield from (k for k in keys if k not in palette and k not in pinned.values())
        if pinned or palette:
            with HorizontalGroup(id="footer-pinned"):
                yield from (pinned[key] for key in PINNED_KEYS if key in pinned)
                yield from palette
