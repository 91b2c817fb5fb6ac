"""The footer with Help and Quit always in sight.

Textual's footer lists the keys of the focused widget first and the app's
last, so at 80 columns `?` (help, which lists every key) and `q` were the
first to be cut. Here they sit on the right, next to the palette key; the
pane's own keys fill the rest and scroll sideways when they do not fit, and
`?` lists them all.

Where `?` and `q` do not reach the app, the footer names the key that does
instead of dropping the entry: in a text field they are typed (Textual takes
a key the focused field consumes out of the active bindings, which is how the
Publish pane, whose subject field has the focus, lost both), and a modal
form or dialog does not get the app's keys at all. There `f1` opens the help
and `ctrl+q` quits (priority keys of the app, so no field or modal screen
takes them first).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import HorizontalGroup
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

PINNED_KEYS = ("question_mark", "q")  # in this order, left of the palette key
# what stands in for a pinned key where it does not reach the app: (key, action, description)
STAND_INS = {"question_mark": ("f1", "app.help", "Help"), "q": ("ctrl+q", "app.quit", "Quit")}


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
        # One recompose per turn, and none when the keys are what is shown: a
        # tab switch changes the bindings many times over (focus, mounts,
        # refresh_bindings), and each recompose mounted the footer's keys
        # anew, their styles and all (~9 per switch, most of its time).
        self._bindings_ready = True
        if self.is_attached and screen is self.screen and not self._recompose_due:
            self._recompose_due = True
            self.call_later(self._recompose_if_changed)

    _recompose_due = False
    _composed: tuple | None = None

    def _keys_signature(self) -> tuple:
        screen = self.screen
        return (getattr(screen, "FOOTER_PINS", PINNED_KEYS),
                tuple((key, b.binding.action, b.binding.description, b.binding.key_display, b.enabled, b.binding.show)
                      for key, b in screen.active_bindings.items()))

    async def _recompose_if_changed(self) -> None:
        self._recompose_due = False
        if self.is_attached and self._keys_signature() != self._composed:
            if not await self._update_in_place():
                await self.recompose()

    async def _update_in_place(self) -> bool:
        """The new keys written into the FooterKeys on screen, instead of
        removing them and mounting new ones with their styles (a recompose:
        ~15-35 ms of every tab switch on the busy 2-core machine, before the
        new pane's first frame). Keys beyond the new count are hidden, not
        removed, so the next pane with more keys mounts none. False when the
        footer is not made of what ``compose`` makes (then it recomposes)."""
        if self._composed is None or not self._bindings_ready:
            return False
        groups = [w for w in self.children if not isinstance(w, FooterKey)]
        if len(groups) != 1 or groups[0].id != "footer-pinned":
            return False
        group = groups[0]
        signature = self._keys_signature()
        main, pinned = self._keys()
        on_screen = [w for w in self.children if isinstance(w, FooterKey)]
        pinned_now = list(group.children)
        if len(pinned_now) != len(pinned) or not all(
                isinstance(old, FooterKey) and _kind(old) == _kind(new) for old, new in zip(pinned_now, pinned)):
            return False
        if not all(_kind(old) == _kind(new) for old, new in zip(on_screen, main)):
            return False
        for old, new in zip(pinned_now, pinned):
            _assign(old, new)
            old.display = new.display
        for old, new in zip(on_screen, main):
            _assign(old, new)
            old.display = True
        for extra in on_screen[len(main):]:
            extra.display = False
        self._composed = signature
        if len(main) > len(on_screen):
            await self.mount_all([self._settle_compact(key) for key in main[len(on_screen):]], before=group)
        return True

    def _keys(self) -> tuple[list[FooterKey], list[FooterKey]]:
        """The footer's keys as Textual's footer makes them (not mounted):
        the pane's, then the pinned ones (`?`, `q` or their stand-ins) and the
        palette's."""
        keys = list(super().compose())
        shown = {k.key: k for k in keys if isinstance(k, FooterKey) and k.key in PINNED_KEYS}
        palette = [k for k in keys if k.has_class("-command-palette")]
        main = [k for k in keys if k not in palette and k not in shown.values()]
        return main, [*self.pinned_keys(shown), *palette]

    def pinned_keys(self, shown: dict[str, FooterKey]) -> list[FooterKey]:
        """`?` and `q` as the screen binds them, or the key that stands in
        for one the focused field types or the modal screen keeps from the
        app. A screen lists in ``FOOTER_PINS`` which of the two it wants (the
        help screen, where `?` closes it, only Quit)."""
        wanted = getattr(self.screen, "FOOTER_PINS", PINNED_KEYS)
        keys = []
        # a text field types the digits and letters: nothing said how to get the app's
        # keys back (4 then 5 typed "5" into Publish's subject). Always there, shown
        # only in a text field: the same pinned keys either way, so a tab switch
        # between a text field and a table rewrites them in place (no recompose)
        leave = FooterKey("escape", "esc", "Leave field", "screen.leave_input").data_bind(compact=Footer.compact)
        leave.display = "question_mark" not in shown and getattr(self.screen, "in_text_field", lambda: False)()
        keys.append(leave)
        for key in PINNED_KEYS:
            if key in shown:
                keys.append(shown[key])
            elif key in wanted:
                stand_in, action, description = STAND_INS[key]
                display = self.app.get_key_display(self.app._bindings.key_to_bindings[stand_in][0])
                keys.append(FooterKey(stand_in, display, description, action).data_bind(compact=Footer.compact))
        return keys

    def compose(self) -> ComposeResult:
        # (natslab's bindings have no groups: every key is a FooterKey of its own)
        if not self._bindings_ready:
            return
        self._composed = self._keys_signature()
        main, pinned = self._keys()
        yield from (self._settle_compact(key) for key in main)
        with HorizontalGroup(id="footer-pinned"):
            for key in pinned:
                # (the palette's is not bound to the footer's compact: it stays compact)
                yield key if key.has_class("-command-palette") else self._settle_compact(key)

    def _settle_compact(self, key):
        """A FooterKey starts compact (its default) and is bound to the
        footer's (not compact) on mount: a style pass over it each way, two
        per key and ~20 keys per footer, a tenth of a tab switch. Given the
        footer's value before it is mounted, neither happens."""
        if isinstance(key, FooterKey):
            key.set_reactive(FooterKey.compact, self.compact)
            key.set_class(self.compact, "-compact", update=False)
        return key


def _kind(key: FooterKey) -> frozenset[str]:
    """The classes that make a FooterKey what it is (the palette's, a grouped one)."""
    return frozenset(key.classes - {"-disabled", "-compact"})


def _assign(target: FooterKey, source: FooterKey) -> None:
    """Make ``target`` (on screen) show what ``source`` (made by compose) would."""
    new = (source.key, source.key_display, source.description, source.action, source._disabled)
    if (target.key, target.key_display, target.description, target.action, target._disabled) != new:
        target.key, target.key_display, target.description, target.action, target._disabled = new
        target.set_class(source._disabled, "-disabled")
        target.refresh(layout=True)
    if target.tooltip != source.tooltip:
        target.tooltip = source.tooltip
