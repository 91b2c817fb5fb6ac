"""Every consumer of the selected stream, refreshed twice a second.

Deltas are highlighted by the live table; the rate column is a sparkline of
deliveries per second (how fast ``delivered.stream_seq`` and redeliveries move).
"""

from __future__ import annotations

import gc

import time
from collections import deque
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Label, Static

from ...client import ConsumerSummary, NatsError, StreamSummary
from ...format import fmt_duration, sparkline
from ...widgets.confirm import ConfirmDialog
from ...widgets.live_table import LiveTable
from ...widgets.settle import update_static
from ...widgets.chart import WINDOWS, ConsumerRates, StreamRates, rates_view
from ...widgets.ruler import StreamRuler, delivery_log, lane_for, legend_text, note_incarnations
from ..base import LivePane
from .detail import ago, consumer_info, raw_json
from .form import ConsumerForm
from ...history import NS
from .travel import Scrub, default_report_path, export_report, lane_of, monotonic_at, rates_until, marker, now_ns, past_details, past_row, step_target

# The counters that move first (what is unacked, redelivered, still to come),
# then the rest; what a narrow terminal cuts off is reachable with the arrows
# (the table scrolls sideways) and in the details under the table.
COLUMNS = [
    ("Name", "name"), ("Ack pend", "ack_pending"), ("Redlv", "redelivered"), ("Pending", "pending"),
    ("Waiting", "waiting"), ("Delivered c/s", "delivered"), ("Ack floor c/s", "ack_floor"),
    ("Rate", "rate"), ("State", "state"), ("Kind", "kind"), ("Ack wait", "ack_wait"),
    ("Max dlv", "max_deliver"), ("Filter", "filter"),
]


def consumer_row(c: ConsumerSummary, rate: str) -> tuple:
    return (
        c.name, c.num_ack_pending, c.num_redelivered, c.num_pending, c.num_waiting,
        f"{c.delivered_consumer_seq}/{c.delivered_stream_seq}",
        f"{c.ack_floor_consumer_seq}/{c.ack_floor_stream_seq}",
        rate, "paused" if c.paused else "active",
        f"{'pull' if c.pull else 'push'}·{c.ack_policy}", fmt_duration(c.ack_wait),
        "∞" if c.max_deliver in (-1, 0) else c.max_deliver, c.filter_subject or "-",
    )


class ConsumersPane(LivePane):
    POLL_SECONDS = 0.5
    WRITE_ACTIONS = frozenset({"create", "edit", "toggle_pause", "delete"})
    BINDINGS = [
        # first: the time slider is what this pane has that `nats consumer info`
        # has not, and at 80 columns the footer shows only its first three keys
        Binding("left_square_bracket", "travel('back')", "Back in time", id="consumers.back", key_display="["),
        Binding("n", "create", "New consumer", id="consumers.create"),
        Binding("e", "edit", "Edit", id="consumers.edit"),
        Binding("space", "toggle_pause", "Pause/resume", id="consumers.pause"),
        Binding("d,delete", "delete", "Delete", id="consumers.delete"),
        Binding("f", "pull_hand", "Pull hand", id="consumers.pull"),
        Binding("J", "toggle_raw", "Raw JSON", id="consumers.raw"),
        Binding("g", "toggle_graph", "Rates over time", id="consumers.graph"),
        Binding("z", "zoom_rates", "Rates window (1 m, 5 m, 15 m)", id="consumers.zoom", show=False),
        Binding("right_square_bracket", "travel('forward')", "1 s forward in time", id="consumers.forward",
                show=False, key_display="]"),
        Binding("left_curly_bracket", "travel('prev')", "Back to the previous event", id="consumers.prev_event",
                show=False, key_display="{"),
        Binding("right_curly_bracket", "travel('next')", "On to the next event", id="consumers.next_event",
                show=False, key_display="}"),
        Binding("L", "live", "Back to live", id="consumers.live", show=False),
        Binding("E", "export_history", "Export the history from the moment shown as text", id="consumers.export",
                show=False),
        Binding("question_mark", "legend", "Help, legend", id="consumers.legend", key_display="?"),
    ]

    COMPONENT_CLASSES = {"rates--stream", "rates--delivered", "rates--acked", "rates--ack_pending", "rates--pending"}

    stream: reactive[str | None] = reactive(None)

    @dataclass
    class Polled(Message):
        stream: str
        consumers: list[ConsumerSummary]
        error: str = ""
        stream_info: StreamSummary | None = None  # for the ruler's first..last sequence
        answered: float = 0.0  # time.monotonic() when the consumers' infos came back

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ConsumersPane.Polled)

    @dataclass
    class Selected(Message):
        stream: str
        consumer: str | None
        pull: bool

    @dataclass
    class OpenPullHand(Message):
        stream: str
        consumer: str

    def __init__(self, **kw):
        super().__init__(**kw)
        self.consumers: dict[str, ConsumerSummary] = {}
        self.selected: str | None = None
        self._pending_select: str | None = None
        # per consumer: (time, delivered count incl. redeliveries) samples -> rates
        self._last: dict[str, tuple[float, int]] = {}
        self._rates: dict[str, deque[float]] = {}
        self._polled_stream: str | None = None
        self.raw = False  # J: the consumer's JSON as `nats consumer info -j` prints it
        self.graph = False  # g: rates over time, as `nats consumer graph` draws them
        self._history: dict[str, ConsumerRates] = {}
        self._stream_history = StreamRates()
        # the incarnation the histories above are about: a consumer (or the
        # stream) deleted and made again under its name starts them afresh
        self._created: dict[str, object] = {}
        self._stream_created = ""
        self.rates_window = WINDOWS[0]  # z: the charts' time window
        self._detail_shape: tuple | None = None  # what the details showed last (charts: their shape)
        self._status_text = ""
        # the time slider (travel.py): the moment shown (wall clock ns), None: live
        self.travel_t: int | None = None
        self._past: dict = {}  # consumer -> PastState at travel_t
        self._scrub: Scrub | None = None  # the stream's history as last read, indexed (history.Scrub)
        self._past_text: tuple = (None, None)  # (what it was drawn for, the selected consumer's past details)
        self._stream_info: StreamSummary | None = None

    def compose(self) -> ComposeResult:
        yield Label("Consumers — select a stream first", id="consumers-status", classes="pane-status")
        yield LiveTable(COLUMNS, id="consumers-table", repaint_on_resize=True)
        yield StreamRuler(id="consumers-ruler")
        with VerticalScroll(id="consumer-detail"):
            yield Static("", id="consumer-config")

    def watch_stream(self, stream: str | None) -> None:
        self.travel_t = None
        self._past, self._scrub = {}, None
        self.consumers.clear()
        self._last.clear()
        self._rates.clear()
        self._history.clear()
        self._created.clear()
        self._stream_history = StreamRates()
        self._stream_created = ""
        self.query_one(LiveTable).sync({})
        self.query_one(StreamRuler).show("", 0, 0, [])
        self.selected = None
        self._update_status()
        self.schedule_poll(0.01)

    async def fetch(self, client) -> None:
        self._polled_stream = stream = self.stream
        if stream:
            consumers = await client.list_consumers(stream)
            answered = time.monotonic()
            self.post_message(self.Polled(stream, consumers, stream_info=await client.stream_info(stream),
                                          answered=answered))

    def poll_failed(self, error: NatsError) -> None:
        if self._polled_stream:
            self.post_message(self.Polled(self._polled_stream, [], str(error)))

    def _rate(self, c: ConsumerSummary, now: float) -> str:
        # delivered consumer seq counts every delivery, redeliveries included
        count = c.delivered_consumer_seq
        last = self._last.get(c.name)
        self._last[c.name] = (now, count)
        rates = self._rates.setdefault(c.name, deque(maxlen=12))
        if last is not None and now > last[0]:
            rates.append(max(0, count - last[1]) / (now - last[0]))
        if not rates:
            return ""
        return f"{sparkline(list(rates), 8)} {rates[-1]:.0f}/s"

    @on(Polled)
    def show_consumers(self, event: Polled) -> None:
        event.stop()
        if event.stream != self.stream:
            return
        if event.error:
            self._status_text = f"Consumers of {event.stream} — {event.error}"
            self.query_one("#consumers-status", Label).update(self._status_text)
            return
        now = time.monotonic()
        self.consumers = {c.name: c for c in sorted(event.consumers, key=lambda c: c.name)}
        self._forget_earlier_incarnations(event, now)
        for c in self.consumers.values():
            self._history.setdefault(c.name, ConsumerRates()).record(
                now, c.delivered_consumer_seq, c.ack_floor_consumer_seq, c.num_ack_pending, c.num_pending)
        if event.stream_info is not None:
            info = event.stream_info
            self._stream_history.record(now, info.last_seq, info.bytes, info.first_seq, info.messages)
            self._stream_info = info
        observed = getattr(self.app, "observed", None)
        if observed is not None:  # a remote server's history is what the app sees
            for c in self.consumers.values():
                observed.info(c, event.answered or now)
        if self.travel_t is not None:
            if self._pending_select in self.consumers:
                self.select_consumer(self._pending_select)
            self._show_past()  # (the past does not change: the history read at the last key)
            return
        stable = getattr(self.app, "stable_display", False)
        self.query_one(LiveTable).sync(
            {name: consumer_row(c, "" if stable else self._rate(c, now)) for name, c in self.consumers.items()}
        )
        if self._pending_select in self.consumers:
            self.select_consumer(self._pending_select)
        self._update_status()
        self._selection_changed()
        if event.stream_info is not None:
            self.show_ruler(event.stream_info)

    def _forget_earlier_incarnations(self, event: Polled, now: float) -> None:
        """History is about one incarnation of a consumer (its ``created``):
        the rates start again for a consumer made again under its name, and
        the delivery log (timeline, ruler) drops what the old one saw."""
        info = event.stream_info
        if info is not None and info.created != self._stream_created:
            if self._stream_created:
                self._stream_history = StreamRates()
            self._stream_created = info.created
        for c in self.consumers.values():
            if self._created.get(c.name, c.created) != c.created:
                for history in (self._history, self._last, self._rates):
                    history.pop(c.name, None)
            self._created[c.name] = c.created
        note_incarnations(self.app, self.consumers.values(), event.answered or now)

    def show_ruler(self, info: StreamSummary) -> None:
        log, now = delivery_log(self.app).get, time.monotonic()
        lanes = [lane_for(c, log((c.stream, c.name)) or {}, now) for c in self.consumers.values()]
        self.query_one(StreamRuler).show(info.name, info.first_seq, info.last_seq, lanes, info.retention)

    # ---- the time slider (travel.py) ------------------------------------------
    def action_travel(self, how: str) -> None:
        if not self.stream:
            return
        scrub = self._scrub
        # back from a moment already shown: all before it is held; forward, or from
        # live, reads what came since (a copy of the ring's newest part: ~60 ms when full)
        if scrub is None or scrub.stream != self.stream or self.travel_t is None or how in ("forward", "next"):
            scrub = self._read_history()
        if not scrub.events:
            self.app.notify("No history yet" + ("" if self.app.embedded is not None
                                                 else ": the app keeps what it observes from now on"))
            return
        self.travel_t = step_target(scrub, self.selected, self.travel_t, now_ns(), how)
        if self.travel_t is None:
            self._after_travel()
        else:
            self._show_past()

    def _read_history(self) -> Scrub:
        """The stream's history as a Scrub: read whole the first time, then
        only what came since (a step costs what is new, not a copy of the
        ring); read whole again once what was added reaches half the first
        read (so what the ring dropped since is dropped here too)."""
        scrub, stream = self._scrub, self.stream
        if scrub is not None and scrub.stream == stream and scrub.events:
            # from a little before the last event held: an observed event can come
            # in late, in its time's place (history.Observed._add)
            since = scrub.last_t - 5 * NS
            fresh, held = self.app.history(stream, since=since), scrub.tail_since(since)
            if fresh[:len(held)] == held and len(scrub.events) + len(fresh) - len(held) <= 1.5 * scrub.read_len + 1000:
                scrub.extend(fresh[len(held):])
                return scrub
        # a whole read makes an object per event (~200,000 with a full ring): the
        # collector's full passes over the app's objects, set off by them, took
        # three quarters of it
        gc.disable()
        try:
            self._scrub = Scrub(self.app.history(stream), stream)
        finally:
            gc.enable()
        return self._scrub

    def action_live(self) -> None:
        self.travel_t = None
        self._after_travel()

    def _after_travel(self) -> None:
        if self.travel_t is None:
            self._past = {}  # (the Scrub stays: going back again reads only what is new)
            self._status_text = ""
            self.schedule_poll(0.01)  # the live view again with the next poll
        else:
            self._show_past()

    def _show_past(self) -> None:
        """The table, ruler and details at ``travel_t`` from the history read
        at the last key (the past does not change; a poll redraws it)."""
        stream, t = self.stream, self.travel_t
        scrub = self._scrub
        if scrub is None or scrub.stream != stream:
            scrub = self._read_history()
        self._past = {}
        rows, lanes = {}, []
        for name, c in self.consumers.items():
            st = scrub.state_at(name, t)
            if st.exists:
                self._past[name] = st
                rows[name] = past_row(c, st, consumer_row)
                lanes.append(lane_of(name, st))
        self.query_one(LiveTable).sync(rows)
        info = self._stream_info
        if info is not None:
            first, last = scrub.range_at(t, info.first_seq, info.last_seq)
            self.query_one(StreamRuler).show(info.name, first, last, lanes, info.retention)
        self._update_status()
        self._selection_changed()

    def action_export_history(self) -> None:
        name = self.selected
        if not self.stream or not name:
            self.app.notify("Select a consumer first", severity="warning")
            return
        from ...config import data_dir
        from .export_dialog import ExportHistoryDialog

        stream, t0, now = self.stream, self.travel_t, now_ns()

        def write(path) -> None:
            if path is None:
                return
            try:
                export_report(self.app.history(stream), stream, name, t0, now, path)
            except OSError as exc:
                self.app.notify(f"Could not write the history: {exc}", severity="error")
                return
            self.app.notify(f"History of {stream} > {name} written to {path}")

        self.app.push_screen(ExportHistoryDialog(f"{stream} > {name}",
                                                 default_report_path(data_dir() / "history", stream, name, now)),
                             write)

    def action_legend(self) -> None:
        from ...screens.legend import LegendHelp

        from ...widgets.chart import legend_text as charts_legend

        ruler = self.query_one(StreamRuler)
        self.app.push_screen(LegendHelp.with_legends(self.screen.active_bindings,
                                                     [legend_text(ruler.styles_map()), charts_legend()]))

    def _update_status(self) -> None:
        label = self.query_one("#consumers-status", Label)
        if not self.stream:
            text = "Consumers — select a stream in the Streams pane first"
        elif not self.consumers:
            text = f"Consumers of {self.stream} — " + ("none (read-only)" if self.read_only
                                                       else "none yet; press n to create one")
        elif self.travel_t is not None:
            stable = getattr(self.app, "stable_display", False)
            text = f"{marker(self.travel_t, now_ns(), stable)} · [ ] 1 s · {{ }} events · E export"
        else:
            table = self.query_one(LiveTable)
            # the sizes as the pane was last shown (a poll answered just after the
            # pane was hidden would measure a table 0 wide: a line of fewer keys,
            # and a layout to put them back when the pane is shown again)
            if table.scrollable_content_region.width and label.size.width:
                self._status_room = (table.virtual_size.width > table.scrollable_content_region.width,
                                     label.size.width)
            wider, width = self._status_room
            more = " · ← → more columns" if wider else ""
            keys = (["read-only", "f pull hand (watch only)", "[ back in time", "J raw JSON", "g rates"]
                    if self.read_only else
                    ["n new", "e edit", "f pull hand", "[ back in time", "space pause/resume", "d delete"])
            head = f"Consumers of {self.stream} ({len(self.consumers)}){more} — "
            # as many keys as fit on the line (the rest are in the footer and on ?)
            room = (width or self.size.width or 80) - len(head)
            while len(keys) > 1 and len(" · ".join(keys)) > room:
                keys.pop()
            text = head + " · ".join(keys)
        if text != self._status_text:  # called on every poll: the same line would cost a layout each time
            self._status_text = text
            label.update(text)

    @on(DataTable.RowHighlighted, "#consumers-table")
    def on_highlight(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._selection_changed()

    def _selection_changed(self) -> None:
        key = self.query_one(LiveTable).selected_key
        c = self.consumers.get(key) if key else None
        config = self.query_one("#consumer-config", Static)
        # the charts keep their height from poll to poll: no new layout of the
        # screen (~15 ms, twice a second) unless what is shown changes shape
        shape = ("graph", c is None, config.content_region.width) if self._graph_shows(c) else None
        if shape is not None:
            config.update(self._config_text(c), layout=shape != self._detail_shape)
            self._info_for = None
        else:
            # the details: drawn again only when what they say changes, with a
            # layout only when they change height (widgets/settle.py)
            info_for = self._info_key(c)
            if info_for is None or info_for != self._info_for:
                update_static(config, self._config_text(c))
            self._info_for = info_for
        self._detail_shape = shape
        if key != self.selected and self.stream:
            self.selected = key
            self.post_message(self.Selected(self.stream, key, bool(c and c.pull)))

    _info_for: tuple | None = None  # what the details were drawn from (consumer_info's inputs)
    _status_room: tuple[bool, int] = (False, 0)  # (table wider than the pane, the status line's width) as last shown

    def _info_key(self, c: ConsumerSummary | None) -> tuple | None:
        """What ``consumer_info`` draws ``c`` from, None where that is not all
        (the raw JSON, the past): the answer's time only through its "… ago"."""
        if self.raw or self.travel_t is not None:
            return None
        if c is None:
            return ("none",)
        stable = getattr(self.app, "stable_display", False)
        return (replace(c, server_time=None), c.config, c.cluster, stable, ago(c.last_delivery, c.server_time),
                ago(c.last_ack, c.server_time))

    def _graph_shows(self, c: ConsumerSummary | None) -> bool:
        return bool(self.graph and self.stream and (c is None or c.name in self._history))

    def _config_text(self, c: ConsumerSummary | None):
        if self._graph_shows(c):
            # the selected consumer's rates under its stream's; the stream's alone when it has no consumer
            width = self.query_one("#consumer-config").content_region.width or 76
            styles = {name.removeprefix("rates--"): self.get_component_rich_style(name, partial=True)
                      for name in self.COMPONENT_CLASSES}
            rates, stream_rates, until = self._history.get(c.name) if c else None, self._stream_history, None
            if self.travel_t is not None:  # the charts as they were then (the pane's own polls up to it)
                until = monotonic_at(self.travel_t)
                rates, stream_rates = rates_until(rates, until), rates_until(stream_rates, until)
            return rates_view(c.name if c else None, rates, width, styles,
                              stream=(self.stream, stream_rates), window=self.rates_window, now=until)
        if c is None:
            return Text("")
        if self.travel_t is not None and c.name in self._past:
            width = self.query_one("#consumer-config").content_region.width or 76
            stable = getattr(self.app, "stable_display", False)
            # the past does not change: a poll while it is shown draws it again from here
            key = (id(self._scrub), len(self._scrub.events), c.name, self.travel_t, width, stable)
            if self._past_text[0] != key:
                self._past_text = (key, past_details(self._scrub, c.name, self._past[c.name], self.travel_t,
                                                     stable, consumer=c, width=width))
            return self._past_text[1]
        if self.raw:
            return raw_json(c.raw)
        return consumer_info(c, stable=getattr(self.app, "stable_display", False))

    def action_toggle_graph(self) -> None:
        self.graph = not self.graph
        self.set_class(self.graph, "-graph")
        self._selection_changed()

    def action_zoom_rates(self) -> None:
        """The next time window (1 m, 5 m, 15 m); shows the charts if they were not."""
        if self.graph:
            self.rates_window = WINDOWS[(WINDOWS.index(self.rates_window) + 1) % len(WINDOWS)]
        self.graph = True
        self.set_class(True, "-graph")
        self._selection_changed()

    def action_toggle_raw(self) -> None:
        self.raw = not self.raw
        self._selection_changed()

    def select_consumer(self, name: str) -> None:
        table = self.query_one(LiveTable)
        if table.value(name, "name") is not None:
            table.select_key(name)
            self._pending_select = None
            self._selection_changed()
        else:
            self._pending_select = name

    # ---- actions ----------------------------------------------------------
    def action_create(self) -> None:
        if not self.stream:
            self.app.notify("Select a stream first", severity="warning")
            return

        def done(name: str | None) -> None:
            if name:
                self.app.notify(f"Consumer {name} created on {self.stream}")
                self.select_consumer(name)
                self.schedule_poll(0.01)

        self.app.push_screen(ConsumerForm(self.stream), done)

    def action_edit(self) -> None:
        if self.stream and self.selected in self.consumers:
            self.app.push_screen(ConsumerForm(self.stream, self.consumers[self.selected]), lambda _r: self.schedule_poll(0.01))

    def action_toggle_pause(self) -> None:
        c = self.consumers.get(self.selected or "")
        if c is not None:
            self.set_paused(c.stream, c.name, not c.paused)

    @work(exclusive=True, group="consumers-action", exit_on_error=False)
    async def set_paused(self, stream: str, name: str, pause: bool) -> None:
        until = datetime.now(timezone.utc) + timedelta(days=365) if pause else None
        try:
            paused = await self.app.client.pause_consumer(stream, name, until)
        except (NatsError, AttributeError) as exc:
            self.app.notify(f"Could not {'pause' if pause else 'resume'} {name}: {exc}", severity="error")
            return
        self.app.notify(f"{name} {'paused' if paused else 'resumed'}")
        self.schedule_poll(0.01)

    def action_delete(self) -> None:
        stream, name = self.stream, self.selected
        if not stream or not name:
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.delete_consumer(stream, name)

        self.app.push_screen(ConfirmDialog(f"Delete consumer {name} of {stream}? Its position is lost."), done)

    @work(exclusive=True, group="consumers-action", exit_on_error=False)
    async def delete_consumer(self, stream: str, name: str) -> None:
        try:
            await self.app.client.delete_consumer(stream, name)
        except (NatsError, AttributeError) as exc:
            self.app.notify(f"Could not delete {name}: {exc}", severity="error")
            return
        self.app.notify(f"Consumer {name} deleted")
        self.schedule_poll(0.01)

    def action_pull_hand(self) -> None:
        c = self.consumers.get(self.selected or "")
        if c is None:
            return
        if not c.pull:
            self.app.notify(f"{c.name} is a push consumer; the pull hand needs a pull consumer", severity="warning")
            return
        self.post_message(self.OpenPullHand(c.stream, c.name))
