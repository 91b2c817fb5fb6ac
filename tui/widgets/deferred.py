"""A tab's content mounted the first time the tab is shown.

The tool panes hold hundreds of widgets between them; composing them up front
slowed the first paint and every start-up, though most sessions open few.
"""

from __future__ import annotations

from typing import Callable

from textual.containers import Vertical
from textual.widget import AwaitMount, Widget


class Deferred(Vertical):
    def __init__(self, factory: Callable[[], Widget], **kw):
        super().__init__(**kw)
        self.factory = factory
        self.materialized = False
        self._content: Widget | None = None
        self._mounting: AwaitMount | None = None

    def materialize(self) -> AwaitMount | None:
        """Mount the content; returns something to await while it is still mounting.

        A second caller during the mount gets the same awaitable, so it never
        sees a pane whose children are not composed yet.
        """
        if not self.materialized:
            self.materialized = True
            self._content = self.factory()
            self._mounting = self.mount(self._content)
            return self._mounting
        if self._content is not None and not self._content.is_mounted:
            return self._mounting
        return None
