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

    def materialize(self) -> AwaitMount | None:
        if self.materialized:
            return None
        self.materialized = True
        return self.mount(self.factory())
