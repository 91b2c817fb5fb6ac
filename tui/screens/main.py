"""The workbench screen: header, disconnect banner, one tab per area, footer.

It wires selection between areas: the highlighted stream feeds the consumers
pane, the highlighted consumer feeds the pull hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Static, Tab, Tabs

from ..panes.registry import BY_AREA, PANES, WIDE, tab_label, tab_labels
from ..panes.streams import StreamsPane
from ..widgets.deferred import Deferred
from ..widgets.footer import KeysFooter
from ..widgets.status_header import StatusHeader

if TYPE_CHECKING:
    from ..panes.consumers import ConsumersPane


def is_text_field(widget) -> bool:
    # (imported here: the first frame has no text field, and TextArea's
    # module with its documents and themes is not needed for it)
    from textual.widgets import Input, TextArea

    return isinstance(widget, (Input, TextArea))


class AreaTabs(Tabs):
    """The tab bar, its underline moved in one frame: Textual slides it over
    0.3 s, about 17 more frames after each switch that competed with the
    new pane's first one and with the keys pressed right after it."""

    def _highlight_active(self, animate: bool = True) -> None:
        if not animate:
            super()._highlight_active(animate=False)
            return
        # Where Textual would slide it (a switch, a relabel) it measures the tab
        # 20 ms and a refresh later, once a relabel's new width is laid out;
        # so does this, then moves it at once (measured sooner, a relabelled
        # narrow bar kept the underline of the wide one: 80x24 snapshots)
        self.set_timer(0.02, lambda: self.call_after_refresh(super(AreaTabs, self)._highlight_active, False))


class MainScreen(Screen):
    # Tabs + ContentSwitcher rather than TabbedContent: measured, TabbedContent
    # added about a second to the first paint with nine areas.
    # Only the first area is composed for the first frame (and not its hidden
    # Messages tab); the registry says when each of the others is mounted.
    BINDINGS = [
        Binding("escape", "leave_input", "Leave the field", id="main.leave_input", show=False),
        Binding("j", "cursor('down')", "Next row", id="main.down", show=False),
        Binding("k", "cursor('up')", "Previous row", id="main.up", show=False),
    ]

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        yield Static("", id="banner")
        yield AreaTabs(*[Tab(tab_label(spec), id=f"tab-{spec.area}") for spec in PANES], id="tabs")
        with ContentSwitcher(id="panes", initial=PANES[0].area):
            for spec in PANES:
                if spec.mount == "first":
                    yield Vertical(spec.build(), id=spec.area)
                else:
                    yield Deferred(spec.build, id=spec.area)
        yield KeysFooter()

    def on_resize(self, event: events.Resize) -> None:
        self.fit_tabs(event.size.width)

    def fit_tabs(self, width: int | None = None) -> None:
        """Tab labels that fit the bar: long, short, or digits (see tab_labels);
        called on a resize, when the tour's panel comes or goes, and when the
        active tab changes (the digits-only bar names the active one)."""
        tabs = self.query_one("#tabs", Tabs)
        if width is None:
            width = tabs.size.width or self.size.width
        tour = self.query("#tour")
        if tour and tour.first().display:
            width = min(width, self.size.width - tour.first().outer_size.width)
        if tabs.has_class("-narrow") != (width < WIDE):
            tabs.set_class(width < WIDE, "-narrow")
            # the narrow bar's tabs have less padding: Textual moves the
            # underline on a resize or a relabel only, so it would stay under
            # the old width (a stale bar, or one that depends on which came first)
            highlight = getattr(tabs, "_highlight_active", None)
            if highlight is not None:
                tabs.call_after_refresh(highlight, animate=False)
        active = (tabs.active or "").removeprefix("tab-")
        for area, label in tab_labels(width, active).items():
            tab = self.query_one(f"#tab-{area}", Tab)
            if str(tab.label) != Text.from_markup(label).plain:
                tab.label = label

    _resumed_before = False

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # The first resume comes right after compose, whose widgets were styled
        # as they were mounted: restyling every node again cost ~40 ms of the
        # first paint. Later resumes (a dialog closed, ...) restyle as usual.
        if not self._resumed_before:
            self._resumed_before = True
            event.refresh_styles = False

    async def mount_hidden_areas(self) -> None:
        for spec in PANES:
            if spec.mount == "after-paint":
                await self.materialize(spec.area)
        await self.query_one(StreamsPane).mount_browser()  # the streams pane's Messages tab

    async def materialize(self, area: str) -> None:
        """Make sure the area's pane is mounted (and composed)."""
        holder = self.query_one(f"#{area}")
        if isinstance(holder, Deferred) and (mounting := holder.materialize()) is not None:
            await mounting
            if area == "consumers":
                # a stream highlighted before the pane existed
                consumers = self.query_one("#consumers-pane")
                selected = self.query_one(StreamsPane).selected
                if selected and consumers.stream is None:  # type: ignore[attr-defined]
                    consumers.stream = selected  # type: ignore[attr-defined]

    def show_banner(self, message: str | None) -> None:
        banner = self.query_one("#banner", Static)
        banner.update(message or "")
        self.set_class(bool(message), "-banner")

    def show_area(self, tab: str) -> None:
        self.query_one("#tabs", Tabs).active = f"tab-{tab}"

    def pane(self, area: str):
        """The area's pane, or None while it is not mounted."""
        found = self.query(f"#{BY_AREA[area].pane_id}")
        return found.first() if found else None

    # ---- navigation: the palette, the demos and the panes send the user here
    def jump_to_stream(self, name: str, show: bool = True) -> None:
        if show:
            self.show_area("streams")
        self.pane("streams").select_stream(name)

    def with_pane(self, area: str, use) -> None:
        """Call ``use(pane)`` now, or once the area's pane is mounted."""
        pane = self.pane(area)
        if pane is not None:
            use(pane)
            return

        async def when_mounted() -> None:
            await self.materialize(area)
            use(self.pane(area))

        self.run_worker(when_mounted(), group=f"mount-{area}", exit_on_error=False)

    def jump_to_consumer(self, stream: str, consumer: str, show: bool = True) -> None:
        self.jump_to_stream(stream, show=False)
        if show:
            self.show_area("consumers")

        def select(pane) -> None:
            pane.stream = stream
            pane.select_consumer(consumer)

        self.with_pane("consumers", select)

    def open_pull_hand(self, stream: str, consumer: str) -> None:
        def open_on(hand) -> None:
            hand.set_target(stream, consumer, True)
            self.show_area("pull")
            hand.focus_default()

        self.with_pane("pull", open_on)

    def jump_to_bucket(self, bucket: str) -> None:
        self.app.pending_bucket = bucket  # the KV pane may not be mounted yet: it picks this up
        self.show_area("kv")
        if (pane := self.pane("kv")) is not None:
            pane.select_bucket(bucket)

    # ---- the keyboard model (k9s / lazygit): Esc leaves a text field, j/k move
    def in_text_field(self) -> bool:
        """The focus is in a text field (the footer then shows esc, which leaves it)."""
        return is_text_field(self.focused)

    def action_leave_input(self) -> None:
        focused = self.focused
        if not is_text_field(focused):
            return
        holder = self.query_one("#panes", ContentSwitcher).current
        pane = self.pane(holder) if holder else None
        self.set_focus(None)
        if pane is not None:
            self.focus_pane(pane, text_fields=False)

    def focus_pane(self, pane, text_fields: bool = True) -> None:
        """Focus the pane's chosen widget (never a text field), or its first
        focusable one; with ``text_fields`` False a text field is skipped."""
        if hasattr(pane, "focus_default"):
            pane.focus_default()
        else:
            for widget in pane.query("*"):
                if widget.focusable and (text_fields or not is_text_field(widget)):
                    # at once, not on the next idle (Widget.focus): the pane's
                    # first key goes to it, not to the pane just hidden
                    self.set_focus(widget)
                    break
        focused = self.focused
        if focused is not None and pane not in focused.ancestors_with_self:
            self.set_focus(None)  # never a widget of a hidden pane: its keys would still be live
        # the footer belongs to the pane shown, even when the focus did not move
        self.refresh_bindings()

    def action_cursor(self, direction: str) -> None:
        focused = self.focused
        action = getattr(focused, f"action_cursor_{direction}", None)
        if action is not None:
            action()

    @property
    def active_area(self) -> str:
        return self.query_one("#panes", ContentSwitcher).current or ""

    # The consumers and pull modules are imported when their panes are mounted,
    # so their messages are handled by name rather than with @on(Class.Message).
    @on(StreamsPane.Selected)
    def stream_selected(self, event: StreamsPane.Selected) -> None:
        for consumers in self.query("#consumers-pane"):
            consumers.stream = event.stream  # type: ignore[attr-defined]

    def on_consumers_pane_selected(self, event: "ConsumersPane.Selected") -> None:
        for hand in self.query("#pull-pane"):
            hand.set_target(event.stream, event.consumer, event.pull)  # type: ignore[attr-defined]

    def on_consumers_pane_open_pull_hand(self, event: "ConsumersPane.OpenPullHand") -> None:
        for hand in self.query("#pull-pane"):
            hand.set_target(event.stream, event.consumer, True)  # type: ignore[attr-defined]
        self.show_area("pull")

    @on(Tabs.TabActivated, "#tabs")
    async def tab_activated(self, event: Tabs.TabActivated) -> None:
        if event.tab is None or not event.tab.id:
            return
        area = event.tab.id.removeprefix("tab-")
        self.fit_tabs()
        self.query_one("#panes", ContentSwitcher).current = area
        # The next frame lays the screen out with the new pane. Otherwise the
        # widgets restyled by the switch (focus, footer) were painted first, in
        # the old layout (the panes' own requests for a layout come a turn
        # later): ~30-45 ms of every switch on a busy machine, for a frame
        # nobody needed.
        self.refresh(layout=True)
        holder = self.query_one(f"#{area}")
        ready = not isinstance(holder, Deferred) or (holder.materialized and holder.children
                                                     and holder.children[0].is_mounted)
        if not ready and self.focused is not None and holder not in self.focused.ancestors_with_self:
            # the pane just hidden keeps neither the keys nor the footer while the
            # new one mounts (a tool pane's first showing takes a moment)
            self.set_focus(None)
        await self.materialize(area)
        holder = self.query_one(f"#{area}")
        pane = holder.children[0] if holder.children else None
        # A pane that was hidden polls right away instead of on its next tick.
        if pane is not None and hasattr(pane, "schedule_poll"):
            pane.schedule_poll(0.01)
        if pane is not None:
            self.focus_pane(pane)  # keys of the pane work right away
