"""The redelivery timeline on a time axis: the painter with a fake clock
(each mark, the countdown filling, zoom and the window following now), the
seed's RDL story as a snapshot, and the pull hand drawing it live on a real
broker with a 1 s ack wait."""

from __future__ import annotations

from textual.app import App, ComposeResult

from natslab.tui.client.models import DeliveryEvent
from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard
from natslab.tui.widgets.timeline import TimeAxis, paint_row, render_time_axis, window_start

from .conftest import connected, wait_for


def ev(seq: int, kind: str, tries: int, at: float, source: str = "app") -> DeliveryEvent:
    return DeliveryEvent("ORDERS", "RDL", seq, kind, tries, at, source)


# The walkthrough's RDL story for stream seq 2 (ack wait 4 s): delivered at
# 13:19:22, nothing happens when the ack wait runs out, pulled again at 13:19:39
# (tries 2), then acked. t=0 is the first delivery.
RDL_STORY = {2: [ev(2, "deliver", 1, 0.0), ev(2, "expired", 1, 4.0), ev(2, "deliver", 2, 17.0), ev(2, "ack", 2, 19.0)]}


def row(events, now: float, ack_wait: float = 4.0, cells: int = 30, spc: float = 1.0, start: float = 0.0) -> str:
    return "".join(g for g, _ in paint_row(events, ack_wait, now, start, cells, spc))


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


def test_zoom_and_the_window_following_now():
    text = render_time_axis("ORDERS › RDL", RDL_STORY, 4.0, 22.0, 40, seconds_per_cell=10.0).plain
    assert "10 s per cell" in text and text.splitlines()[2].startswith("seq 2    12✓")
    assert "1 m per cell" in render_time_axis("t", RDL_STORY, 4.0, 22.0, 40, seconds_per_cell=60.0).plain
    # 31 cells at 1 s: 100 s after the start the window has moved on, in whole ticks, now in sight
    start = window_start(0.0, 100.0, 31, 1.0)
    assert start % 5 == 0 and 100.0 - 31 < start < 100.0
    assert window_start(0.0, 100.0, 31, 1.0, scroll=20.0) == start - 20.0
    assert window_start(0.0, 10.0, 31, 1.0) == 0.0


class AxisHost(App):
    """The time axis alone, on a fake clock."""

    def compose(self) -> ComposeResult:
        yield TimeAxis(lambda: ("ORDERS › RDL", RDL_STORY, 4.0), clock=lambda: 22.0)


def test_rdl_story_snapshot(snap_compare):
    assert snap_compare(AxisHost(), terminal_size=(80, 6))


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

        await pilot.click("#pull-fetch")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 1, what="first card")
        await wait_for(pilot, lambda: seq1().startswith("1") and "◔" in seq1(), timeout=4, what="bar ran out")
        first = seq1()
        assert first.index("◔") in (3, 4, 5)  # 1 s at 0.25 s per cell (the hand's clock starts on receipt)
        await pilot.pause(1.0)  # nobody pulls for a while: the row must show that nothing happens
        await pilot.click("#pull-fetch")
        await wait_for(pilot, lambda: "2" in seq1(), what="second bar")
        assert "◔··" in seq1().split("2")[0]  # nothing happened between the expiry and the pull
        hand.query_one(HandCard).focus()
        await pilot.press("a")
        await wait_for(pilot, lambda: seq1().endswith("✓"), what="ack mark")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: "ack wait ran out" in str(app.screen.query_one(".help-legend").render()),
                       what="legend on ?")
