"""What every live pane shares: access to the client and a self-re-arming poll.

A poll never starts while the previous one runs: one worker skeleton
(``LivePane.poll``) awaits the pane's ``fetch``, reports a failure through
``poll_failed`` and re-arms a single timer when it finishes (poll, render,
re-arm); nothing polls while the pane is hidden behind another tab.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.containers import Vertical
from textual.dom import NoScreen
from textual.timer import Timer
from textual.widget import Widget

from ..client import NatsError

if TYPE_CHECKING:
    from ..client import NatsClient


def is_showing(widget: Widget) -> bool:
    """True when the widget is on the active screen and no ancestor is hidden."""
    try:
        if widget.app.screen is not widget.screen:
            return False
    except NoScreen:  # not on a screen (being mounted or removed)
        return False
    node = widget
    while node is not None and isinstance(node, Widget):
        if not node.display:
            return False
        node = node.parent  # type: ignore[assignment]
    return True


class WritesGuard:
    """Mixed into every pane: under --read-only its write actions vanish from the
    keys and the footer and its write buttons are disabled. The client refuses
    such calls anyway (``NatsClient._writing``); this keeps them out of sight."""

    WRITE_ACTIONS: ClassVar[frozenset[str]] = frozenset()
    WRITE_BUTTONS: ClassVar[tuple[str, ...]] = ()

    @property
    def read_only(self) -> bool:
        return bool(getattr(self.app, "read_only", False))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.WRITE_ACTIONS and self.read_only:
            return False
        return True

    def on_key(self, event) -> None:
        """A write key pressed under --read-only is not silent: one line says
        it was refused (its binding is hidden and off, so nothing else would
        answer it)."""
        if not self.read_only:
            return
        for binding in self._bindings.key_to_bindings.get(event.key, ()):  # type: ignore[attr-defined]
            if binding.action.split("(")[0] in self.WRITE_ACTIONS:
                event.stop()
                event.prevent_default()
                self.refuse(binding.description or binding.action)
                return

    def refuse(self, what: str) -> None:
        self.app.notify(f"read-only: {what} would change the server", title="", severity="warning",
                        timeout=3)

    def disable_writes(self) -> None:
        if getattr(self.app, "read_only", False):
            for button_id in self.WRITE_BUTTONS:
                for button in self.query(f"#{button_id}"):
                    button.disabled = True
                    button.tooltip = "read-only"


class LivePane(WritesGuard, Vertical):
    """A pane that polls the broker every ``POLL_SECONDS`` while it is visible."""

    POLL_SECONDS = 1.0
    _poll_timer: Timer | None = None

    @property
    def client(self) -> NatsClient | None:
        client = getattr(self.app, "client", None)
        return client if client is not None and client.connected else None

    def on_mount(self) -> None:
        self.disable_writes()
        self.schedule_poll(0.01)

    def schedule_poll(self, delay: float | None = None) -> None:
        if self._poll_timer is not None:
            self._poll_timer.stop()
        self._poll_timer = self.set_timer(self.POLL_SECONDS if delay is None else delay, self._tick)

    def _tick(self) -> None:
        self._poll_timer = None
        if self.client is None or not is_showing(self):
            self.schedule_poll(0.25)
            return
        self.poll()

    @work(exclusive=True, group="live-poll", exit_on_error=False)
    async def poll(self) -> None:
        """The one poll worker: ``fetch`` reads and posts what it found; a
        broker error goes to ``poll_failed``; the next poll is armed after it."""
        try:
            client = self.client
            if client is not None:
                try:
                    await self.fetch(client)
                except NatsError as exc:
                    self.poll_failed(exc)
        finally:
            self.schedule_poll()

    async def fetch(self, client: NatsClient) -> None:
        """Read what the pane shows and post it to the pane as a message."""

    def poll_failed(self, error: NatsError) -> None:
        """Say that the last poll failed (the next one is armed regardless)."""
