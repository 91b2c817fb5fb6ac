"""The redelivery timeline on a time axis: the painter with a fake clock
(each mark, the countdown filling, zoom and the window following now), the
seed's RDL story as a snapshot, and the pull hand drawing it live on a real
broker with a 1 s ack wait."""

from __future__ import annotations

import re

from textual.app import App, ComposeResult

from natslab.tui.client.models import DeliveryEvent
from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard
from natslab.tui.widgets.timeline import TimeAxis, paint_row, render_time_axis, window_start

from .conftest import click_shown, connected, settle, wait_for


def ev(seq: int, kind: str, tries: int, at: float, source: str = "app", delay: float | None = None) -> DeliveryEvent:
    return DeliveryEvent("ORDERS", "RDL", seq, kind, tries, at, source, delay)


# The walkthrough's RDL story for stream seq 2 (ack wait 4 s): delivered at
# 13:19:22, nothing happens when the ack wait runs out, pulled again at 13:19:39
# (tries 2), then acked. t=0 is the first delivery.
RDL_STORY = {2: [ev(2, "deliver", 1, 0.0), ev(2, "expired", 1, 4.0), ev(2, "deliver", 2, 17.0), ev(2, "ack", 2, 19.0)]}


def row(events, now: float, ack_wait: float = 4.0, cells: int = 30, spc: float = 1.0, start: float = 0.0,
        **kw) -> str:
    return "".join(g for g, _ in paint_row(events, ack_wait, now, start, cells, spc, **kw))


def test_rdl_story_reads_at_a_glance():
    assert row(RDL_STORY[2], now=22.0) == "1███◔············2█✓" + " " * 10


def test_the_bar_fills_as_the_countdown_runs():
    events = [ev(1, "deliver", 1, 0.0)]
    assert row(events, now=0.5, cells=8) == "1░░░    "
    assert row(events, now=2.5, cells=8) == "1██░    "
    assert row(events, now=6.0, cells=8) == "1███◔·  "  # ran out: eligible, waiting for a pull


def test_each_mark_at_the_moment_it_happened():
    events = [ev(3, "deliver", 1, 0.0), ev(3, "progress", 1, 2.0), ev(3, "nak", 1, 5.0),
              ev(3, "deliver", 2, 6.0), ev(3, "term", 2, 8.0)]
    # in progress at 2 s restarts the 4 s wait (it would have run out at 4 s): the nak at 5 s stops it
    assert row(events, now=10.0, cells=12) == "1█↻██↺2█⊘   "
    maxed = [ev(4, "deliver", 3, 0.0), ev(4, "max_deliveries", 3, 4.5)]
    assert row(maxed, now=6.0, cells=8) == "3███☠   "
    # an ack inside the delivery's own cell goes just after the try
    assert row([ev(5, "deliver", 1, 0.0), ev(5, "ack", 1, 0.3)], now=1.0, cells=4) == "1✓  "
    # a delivery to another program, known only from its ack: no bar, the try where it was seen
    other = [ev(6, "deliver", 2, 3.0, "other program"), ev(6, "ack", 2, 3.0, "ack-tap")]
    assert row(other, now=5.0, cells=6) == "   2✓ "


def test_nak_with_its_delay():
    # nak'd at 1 s with a 5 s delay: dashes until 6 s (not redeliverable), then dots until the pull at 9 s
    events = [ev(1, "deliver", 1, 0.0), ev(1, "nak", 1, 1.0, delay=5.0), ev(1, "deliver", 2, 9.0), ev(1, "ack", 2, 10.5)]
    assert row(events, now=12.0, cells=14) == "1↺╌╌╌╌···2✓   "
    # the delay still running: drawn to its end, like the rest of an ack wait
    assert row(events[:2], now=3.0, cells=10) == "1↺╌╌╌╌    "
    # the delay ending inside a cell: that cell stays dashed, the dots start after it
    mid = [ev(1, "deliver", 1, 0.2), ev(1, "nak", 1, 0.9, delay=3.0)]
    assert row(mid, now=6.0, cells=8) == "1↺╌╌··  "
    # a nak without a delay: eligible at once, waiting for the next pull
    assert row([ev(1, "deliver", 1, 0.0), ev(1, "nak", 1, 1.0)], now=4.0, cells=8) == "1↺··    "
    # nak'd on its last try: the server gives up on the next pull (the advisory ends the dots)
    gone = [ev(1, "deliver", 1, 0.0), ev(1, "nak", 1, 1.0), ev(1, "max_deliveries", 1, 3.0, "advisory")]
    assert row(gone, now=5.0, cells=8) == "1↺·☠    "


def test_backoff_steps_and_max_deliveries():
    # backoff 1 s, 3 s (the last step repeats), max deliver 3: each bar as long as its step,
    # a step mark where it ran out, and the third try's end is the end (no redelivery after it)
    events = [ev(1, "deliver", 1, 0.0), ev(1, "deliver", 2, 2.0), ev(1, "deliver", 3, 6.0)]
    assert row(events, now=12.0, cells=14, backoff=(1.0, 3.0), max_deliver=3) == "1»2██»3██☠    "
    plain = [ev(1, "deliver", 1, 0.0), ev(1, "deliver", 2, 5.0), ev(1, "deliver", 3, 10.0)]
    assert row(plain, now=16.0, cells=16, max_deliver=3) == "1███◔2███◔3███☠ "  # ack wait 4 s, no backoff
    text = render_time_axis("ORDERS › BO", {1: events}, 4.0, 12.0, 40, backoff=(1.0, 3.0), max_deliver=3).plain
    assert "backoff 1s → 3s · max 3 deliveries" in text.splitlines()[0]


def test_deliveries_to_other_programs():
    # seen on their inbox: a bar of its own shade, with a countdown like ours
    events = [ev(2, "deliver", 1, 0.0, "inbox-tap"), ev(2, "deliver", 2, 6.0, "inbox-tap"), ev(2, "ack", 2, 7.5, "ack-tap")]
    assert row(events, now=9.0, cells=10) == "1▓▓▓◔·2✓  "
    keys = [k for _, k in paint_row(events, 4.0, 9.0, 0.0, 10, 1.0)]
    assert keys[:4] == ["other"] * 4 and keys[6] == "other"


def test_only_the_newest_sequences_are_drawn():
    many = {seq: [ev(seq, "deliver", 1, seq * 0.01)] for seq in range(1, 101)}
    lines = render_time_axis("t", many, 4.0, 2.0, 40).plain.splitlines()
    assert "40 earlier sequences not drawn" in lines[2]
    assert lines[3].startswith("seq 41 ") and lines[-1].startswith("seq 100 ") and len(lines) == 63


def test_legend_lists_every_mark_and_the_keys():
    from natslab.tui.widgets.timeline import LEGEND, legend_text

    text = legend_text().plain
    for glyph, _, meaning in LEGEND:
        assert meaning in text
    assert "z zoom (1 s, 10 s, 1 m" in text and "[ back · ] forward" in text


def test_zoom_and_the_window_following_now():
    text = render_time_axis("ORDERS › RDL", RDL_STORY, 4.0, 22.0, 40, seconds_per_cell=10.0).plain
    assert "10 s per cell" in text and text.splitlines()[2].startswith("seq 2    12✓")
    assert "1 m per cell" in render_time_axis("t", RDL_STORY, 4.0, 22.0, 40, seconds_per_cell=60.0).plain
    # 31 cells at 1 s: 100 s after the start the window has moved on, in whole ticks, now in sight
    start = window_start(0.0, 100.0, 31, 1.0)
    assert start % 5 == 0 and 100.0 - 31 < start < 100.0
    assert window_start(0.0, 100.0, 31, 1.0, scroll=20.0) == start - 20.0
    assert window_start(0.0, 10.0, 31, 1.0) == 0.0


def test_tick_labels_past_ten_minutes_keep_their_unit():
    """The pull hand 35 minutes after the consumer's first delivery (a demo
    reset and run again): the ticks read minutes:seconds in the 5 cells they
    have, not "|35.2" cut from "|35.2333m" (a label too long for its room
    takes the next tick's place too)."""
    story = {1: [ev(1, "deliver", 1, 0.0), ev(1, "ack", 1, 2.0)], 2: [ev(2, "deliver", 1, 2112.0)]}
    axis = render_time_axis("t", story, 4.0, 2115.0, 40).plain.splitlines()[1]
    labels = [x for x in axis.split() if x != "|"]  # (a last tick with no room for its label)
    assert len(labels) >= 3 and all(re.fullmatch(r"\|\d+:\d\d", x) for x in labels), axis
    labels = [x.lstrip("|") for x in labels]
    minutes, seconds = map(int, labels[0].split(":"))
    assert 2070 <= minutes * 60 + seconds <= 2115  # the window ends at now
    assert re.fullmatch(r"\|\d+s", render_time_axis("t", RDL_STORY, 4.0, 22.0, 40).plain.splitlines()[1].split()[0])


class AxisHost(App):
    """The time axis alone, on a fake clock."""

    def compose(self) -> ComposeResult:
        yield TimeAxis(lambda: ("ORDERS › RDL", RDL_STORY, 4.0), clock=lambda: 22.0)


async def axes_drawn(pilot) -> None:
    """Every axis has drawn its rows and the screen is still (a snapshot
    taken at the app's first idle moment could catch a busy machine before
    the first paint of the axis)."""
    await wait_for(pilot, lambda: all("seq " in str(a.render()) for a in pilot.app.query(TimeAxis)), what="axes drawn")
    await settle(pilot)


def test_rdl_story_snapshot(snap_compare):
    assert snap_compare(AxisHost(), terminal_size=(80, 6), run_before=axes_drawn)


# Every mark in one picture (ack wait 4 s): seq 1 the RDL story; seq 2 in progress
# at 2 s (the bar starts again), nak'd at 5 s with a 4 s delay, pulled again at 12 s,
# terminated; seq 3 handed to another program's worker twice, acked by it;
# seq 4 acked by another program we never saw receive it.
MARKS = {
    1: RDL_STORY[2],
    2: [ev(2, "deliver", 1, 0.0), ev(2, "progress", 1, 2.0), ev(2, "nak", 1, 5.0, delay=4.0),
        ev(2, "deliver", 2, 12.0), ev(2, "term", 2, 14.0)],
    3: [ev(3, "deliver", 1, 1.0, "inbox-tap"), ev(3, "deliver", 2, 8.0, "inbox-tap"), ev(3, "ack", 2, 10.0, "ack-tap")],
    4: [ev(4, "deliver", 1, 15.0, "other program"), ev(4, "ack", 1, 15.0, "ack-tap")],
}
# backoff 1 s, 3 s, 5 s and max deliver 3, on another consumer
BACKOFF = {5: [ev(5, "deliver", 1, 0.0), ev(5, "deliver", 2, 3.0), ev(5, "deliver", 3, 8.0)]}


class MarksHost(App):
    def compose(self) -> ComposeResult:
        yield TimeAxis(lambda: ("ORDERS › RDL", MARKS, 4.0), clock=lambda: 22.0, id="marks")
        yield TimeAxis(lambda: ("ORDERS › BACKOFF", BACKOFF, 4.0, (1.0, 3.0, 5.0), 3), clock=lambda: 22.0, id="backoff")


def test_marks_snapshot(snap_compare):
    """The nak's delay, in progress, term, other programs' deliveries, backoff steps and max deliveries."""
    assert snap_compare(MarksHost(), terminal_size=(76, 11), run_before=axes_drawn)


async def test_pull_hand_draws_the_story_live(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.publish("orders.new", b"order-1 payload")
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=1.0)

    app = make_app()
    async with app.run_test(size=(140, 36)) as pilot:
        await connected(app, pilot)
        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer == "RDL", what="pull hand target")
        await pilot.pause(0.3)
        axis = hand.query_one(TimeAxis)
        await pilot.press("z", "z", "z")  # 1 s -> 10 s -> 1 m -> 0.25 s per cell
        assert axis.seconds_per_cell == 0.25

        def seq1() -> str:
            lines = [line for line in str(axis.render()).splitlines() if line.startswith("seq 1")]
            return lines[0][9:].rstrip() if lines else ""

        await click_shown(pilot, "#pull-fetch")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 1, what="first card")
        await wait_for(pilot, lambda: seq1().startswith("1") and "◔" in seq1(), timeout=4, what="bar ran out")
        first = seq1()
        assert first.index("◔") in (3, 4, 5)  # 1 s at 0.25 s per cell (the hand's clock starts on receipt)
        await pilot.pause(1.0)  # nobody pulls for a while: the row must show that nothing happens
        await click_shown(pilot, "#pull-fetch")
        await wait_for(pilot, lambda: "2" in seq1(), what="second bar")
        assert "◔··" in seq1().split("2")[0]  # nothing happened between the expiry and the pull
        hand.query_one(HandCard).focus()
        await pilot.press("a")
        await wait_for(pilot, lambda: seq1().endswith("✓"), what="ack mark")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: "ack wait ran out" in str(app.screen.query_one(".help-legend").render()),
                       what="legend on ?")


async def test_another_programs_worker_with_backoff_on_the_axis(make_app, outside):
    """A worker of another program pulls and never acks, on a consumer with
    backoff 0.5 s, 1 s and max deliver 3: its deliveries come from the inbox
    tap, each bar as long as its step, a step mark where each ran out, and
    max deliveries at the end of the third."""
    from nats.js.api import ConsumerConfig

    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.publish("orders.new", b"order-1 payload")
    await js.add_consumer("ORDERS", config=ConsumerConfig(
        durable_name="BO", ack_policy="explicit", backoff=[0.5, 1.0], max_deliver=3))
    app = make_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await connected(app, pilot)
        app.open_pull_hand("ORDERS", "BO")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer_config is not None, what="the consumer's config")
        axis = hand.query_one(TimeAxis)
        await pilot.press("z", "z", "z")  # 0.25 s per cell
        await wait_for(pilot, lambda: "backoff 0.5s → 1s · max 3 deliveries" in str(axis.render()), what="title")

        def seq1() -> str:
            return next((line[9:].rstrip() for line in str(axis.render()).splitlines() if line.startswith("seq 1")), "")

        worker = await js.pull_subscribe_bind(durable="BO", stream="ORDERS")
        for tries in (1, 2, 3):
            msgs = await worker.fetch(1, timeout=3)
            assert msgs[0].metadata.num_delivered == tries
            await wait_for(pilot, lambda: str(tries) in seq1(), what=f"delivery {tries} seen on the worker's inbox")
            if tries < 3:
                await wait_for(pilot, lambda: seq1().count("»") == tries, timeout=4, what=f"backoff step {tries} ran out")
        await wait_for(pilot, lambda: seq1().endswith("☠"), timeout=4, what="max deliveries")
        drawn = seq1()
        # 0.5 s, 1 s, 1 s at 0.25 s per cell: each bar at least as long as
        # its step (the next try comes once the step ran out and the worker
        # fetched again: a busy machine only makes a bar longer)
        m = re.fullmatch(r"1(▓*)»2(▓*)»3(▓*)☠", drawn)
        assert m, drawn
        assert len(m[2]) >= 2 and len(m[3]) >= 3, drawn
        assert [k for g, k in axis_keys(axis) if g == "▓"], "other programs' bars have their own style key"
        await worker.unsubscribe()


def axis_keys(axis: TimeAxis):
    scene = axis.events()
    return [(g, k) for events in scene[1].values()
            for g, k in paint_row(events, scene[2], axis.clock(), min(e.at for e in events), 40, 0.25, scene[3], scene[4])]


def test_the_sliders_axis_cut_to_the_newest_rows_draws_the_same():
    """The time slider makes DeliveryEvents only for the sequences the axis
    draws (the newest MAX_ROWS); with the first event's time and the count
    left out, the picture is the one the whole log gives."""
    from natslab.tui.history import NS, Event, Scrub
    from natslab.tui.panes.consumers.travel import delivery_log_at
    from natslab.tui.widgets.timeline import MAX_ROWS

    evs = [Event(0, "create", "S", "W", (), 0, 0, 0, 0, 0, 0, 0, 0, (0, 0, False, "limits", 0, 0))]
    for seq in range(1, 101):
        t = seq * NS // 2
        evs.append(Event(t, "deliver", "S", "W", (seq,), seq, 1, seq, seq, seq - 1, seq - 1, 1, 0, None))
        if seq % 3:
            evs.append(Event(t + NS // 4, "ack", "S", "W", (seq,), seq, 1, seq, seq, seq, seq, 0, 0, None))
    scrub, now = Scrub(evs, "S"), 60 * NS
    whole, _, none_left = delivery_log_at(scrub, "W", now)
    cut, first_at, left_out = delivery_log_at(scrub, "W", now, newest=MAX_ROWS)
    assert none_left == 0 and len(whole) == 100 and len(cut) == MAX_ROWS and left_out == 100 - MAX_ROWS
    for width in (76, 150):
        drawn = render_time_axis("W", whole, 4.0, now / NS, width)
        assert render_time_axis("W", cut, 4.0, now / NS, width, first_at=first_at, not_drawn=left_out) == drawn
        assert "40 earlier sequences not drawn" in drawn.plain


def test_a_narrow_column_gets_an_axis_as_narrow_not_wrapped_ticks():
    """At 80x24 with the tour open the time axis has 16 columns: it was drawn
    19 wide (at least 10 cells), so the tick line wrapped ("|10s" above "|15s")
    and each row's end landed under the next row's label."""
    text = render_time_axis("ORDERS › RDL", RDL_STORY, 4.0, now=22.0, width=16)
    axis_and_rows = text.plain.splitlines()[1:]
    assert axis_and_rows and all(len(line) <= 16 for line in axis_and_rows), axis_and_rows
    assert axis_and_rows[-1].startswith("seq 2")
