"""The stream ruler: each lane state from the pure renderer, then the seed's
RDL scenario (ack wait 1 s here) on the real app and broker, and snapshots."""

from __future__ import annotations

from natslab.tui.client.models import DeliveryEvent
from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard
from natslab.tui.widgets.ruler import (
    ACKED, EXPIRED, FLOOR, OUTSTANDING, PENDING, TERMED, UNSEEN,
    Lane, cell_ranges, lane_cell, render_ruler, seen_states,
)

from .conftest import click_shown, connected, wait_for


def ev(seq: int, kind: str, tries: int, at: float, source: str = "app") -> DeliveryEvent:
    return DeliveryEvent("ORDERS", "RDL", seq, kind, tries, at, source)


def lane_glyphs(lane: Lane, first: int, last: int, width: int = 60) -> str:
    text = render_ruler("ORDERS", first, last, [lane], width + 7).plain
    return text.splitlines()[2].split(" ")[-1] if width + 7 < 30 else text.splitlines()[2][7:7 + last - first + 1]


def test_seen_states_follow_the_last_delivery():
    log = {
        1: [ev(1, "deliver", 1, 0.0), ev(1, "ack", 1, 1.0)],
        2: [ev(2, "deliver", 1, 0.0)],  # 4 s ack wait ran out at t=4
        3: [ev(3, "deliver", 1, 0.0), ev(3, "expired", 1, 4.0), ev(3, "deliver", 2, 9.0)],  # redelivered
        4: [ev(4, "deliver", 1, 0.0), ev(4, "progress", 1, 8.0)],  # in progress restarted the wait
        5: [ev(5, "deliver", 1, 0.0), ev(5, "nak", 1, 1.0)],
        6: [ev(6, "deliver", 3, 0.0), ev(6, "max_deliveries", 3, 4.0)],
        7: [ev(7, "ack", 1, 2.0, "ack-tap")],  # another program's ack
    }
    assert seen_states(log, 4.0, now=10.0) == {
        1: (ACKED, 1), 2: (EXPIRED, 1), 3: (OUTSTANDING, 2), 4: (OUTSTANDING, 1),
        5: (EXPIRED, 1), 6: (TERMED, 3), 7: (ACKED, 1),
    }
    assert seen_states(log, 4.0, now=13.0)[3] == (EXPIRED, 2)  # the second bar ran out too
    assert seen_states(log, 4.0, now=3.9)[2] == (OUTSTANDING, 1)
    # nak'd with a 5 s delay: held back (not redeliverable) until it ends, then eligible
    delayed = {8: [DeliveryEvent("ORDERS", "RDL", 8, "deliver", 1, 0.0),
                   DeliveryEvent("ORDERS", "RDL", 8, "nak", 1, 1.0, "app", 5.0)]}
    assert seen_states(delayed, 4.0, now=5.9)[8] == (OUTSTANDING, 1)
    assert seen_states(delayed, 4.0, now=6.1)[8] == (EXPIRED, 1)


def test_each_lane_state_has_its_glyph():
    seen = {3: (EXPIRED, 1), 4: (OUTSTANDING, 2), 5: (ACKED, 1), 6: (TERMED, 3)}
    # floor 2, delivered 8, 4 unacked by consumer info: 3 and 4 seen, two more not seen (7, 8)
    lane = Lane("RDL", ack_floor=2, delivered=8, num_ack_pending=4, num_pending=2, seen=seen)
    states = [lane_cell(lane, s, s)[0] for s in range(1, 11)]
    assert states == [FLOOR, FLOOR, EXPIRED, OUTSTANDING, ACKED, TERMED, UNSEEN, UNSEEN, PENDING, PENDING]
    line = render_ruler("ORDERS", 1, 10, [lane], 80).plain.splitlines()[2]
    assert line.startswith("RDL    ━┃!2✓⊘??·· floor 2 · dlv 8 · ack pend 4 (1 expired) · pend 2")


def test_unseen_deliveries_are_acked_when_nothing_is_outstanding():
    # consumer info: delivered 5, floor 3, nothing unacked: 4 and 5 were acked by someone
    lane = Lane("W", ack_floor=3, delivered=5, num_ack_pending=0, num_pending=0)
    assert [lane_cell(lane, s, s)[0] for s in (3, 4, 5)] == [FLOOR, ACKED, ACKED]
    # and with every unacked one seen, the rest above the floor were acked
    lane = Lane("W", ack_floor=3, delivered=6, num_ack_pending=1, seen={5: (OUTSTANDING, 1)})
    assert [lane_cell(lane, s, s)[0] for s in (4, 5, 6)] == [ACKED, OUTSTANDING, ACKED]


def test_long_stream_is_scaled_and_the_urgent_state_wins():
    assert cell_ranges(1, 10, 20) == [(i, i) for i in range(1, 11)]
    ranges = cell_ranges(1, 1000, 50)
    assert len(ranges) == 50 and ranges[0] == (1, 20) and ranges[-1] == (981, 1000)
    lane = Lane("RDL", ack_floor=500, delivered=700, num_ack_pending=1, num_pending=300,
                seen={650: (EXPIRED, 2)})
    text = render_ruler("ORDERS", 1, 1000, [lane], 57).plain
    assert "1 cell ≈ 20 seqs" in text
    cells = text.splitlines()[2][7:]
    assert cells[32] == "!" and cells[:24] == "━" * 24 and cells[24] == "┃" and cells[-1] == "·"


def test_a_scaled_cell_shows_the_most_important_state_of_its_seqs():
    """dead/termed > expired > outstanding > pending > acked > floor: a 511
    message stream at one cell per three seqs put seq 1 (terminated, the floor
    moved past it) and seq 3 (outstanding) in one cell, and the ⊘ went."""
    ranges = cell_ranges(1, 511, 170)
    assert ranges[0] == (1, 3)
    termed_below_floor = Lane("RDL", ack_floor=2, delivered=3, num_ack_pending=1, num_pending=508,
                              seen={1: (TERMED, 3), 2: (ACKED, 1), 3: (OUTSTANDING, 1)})
    assert lane_cell(termed_below_floor, 1, 3) == (TERMED, 1)
    assert lane_cell(termed_below_floor, 1, 1)[0] == TERMED and lane_cell(termed_below_floor, 2, 2)[0] == FLOOR
    termed_above_floor = Lane("RDL", ack_floor=0, delivered=3, num_ack_pending=1, num_pending=508,
                              seen={1: (TERMED, 3), 3: (OUTSTANDING, 2)})
    assert lane_cell(termed_above_floor, 1, 3)[0] == TERMED
    # each rank over the next, two seqs to a cell
    pairs = [((TERMED, 1), (EXPIRED, 1), TERMED), ((EXPIRED, 2), (OUTSTANDING, 1), EXPIRED)]
    for (a, b, want) in pairs:
        lane = Lane("C", ack_floor=0, delivered=2, num_ack_pending=2, seen={1: a, 2: b})
        assert lane_cell(lane, 1, 2)[0] == want
    # outstanding over pending, pending over acked, acked over floor
    lane = Lane("C", ack_floor=0, delivered=1, num_ack_pending=1, num_pending=1, seen={1: (OUTSTANDING, 1)})
    assert lane_cell(lane, 1, 2)[0] == OUTSTANDING
    lane = Lane("C", ack_floor=0, delivered=1, num_pending=1, seen={1: (ACKED, 1)})
    assert lane_cell(lane, 1, 2)[0] == PENDING
    lane = Lane("C", ack_floor=1, delivered=2, seen={2: (ACKED, 1)})
    assert lane_cell(lane, 1, 2)[0] == ACKED
    # the unseen count is not fooled by a termed seq under the floor
    lane = Lane("C", ack_floor=2, delivered=4, num_ack_pending=0, seen={1: (TERMED, 1)})
    assert [lane_cell(lane, s, s)[0] for s in (1, 2, 3, 4)] == [TERMED, FLOOR, ACKED, ACKED]
    line = render_ruler("ORDERS", 1, 511, [termed_below_floor], 177).plain.splitlines()[2]
    assert line[7] == "⊘", line


async def test_a_terminated_seq_stays_in_sight_in_a_scaled_cell(make_app, outside):
    """511 messages: the first cell covers seqs 1 to 5. Seq 1 terminated (the
    floor moves past it), 2 acked, 3 outstanding: the cell shows the ⊘."""
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(511):
        await outside.publish("orders.new", f"o{i}".encode())
    await outside.flush()
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=60)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer == "RDL", what="pull hand target")
        hand.query_one("#pull-batch").value = "3"
        await pilot.press("f")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 3, what="three cards")
        cards = list(hand.query(HandCard))
        cards[0].focus()
        await pilot.press("t")
        await wait_for(pilot, lambda: cards[0].state == "termed", what="seq 1 terminated")
        cards[1].focus()
        await pilot.press("a")
        await wait_for(pilot, lambda: cards[1].state == "acked", what="seq 2 acked")
        app.action_tab("consumers")
        app.jump_to_consumer("ORDERS", "RDL")
        ruler = app.screen.query_one("#consumers-ruler")

        def lane() -> str:
            lines = [line for line in str(ruler.render()).splitlines() if line.startswith("RDL")]
            return lines[0] if lines else ""

        def drawn() -> bool:  # the ruler was fed the floor at 2 and the app's term of seq 1
            lanes = [lane for lane in ruler.lanes if lane.name == "RDL"]
            return bool(lanes) and lanes[0].ack_floor == 2 and lanes[0].seen.get(1, ("",))[0] == TERMED

        await wait_for(pilot, drawn, what="the ruler fed floor 2 and seq 1 terminated")
        assert lane()[7] == "⊘", lane()


async def test_ruler_shows_the_rdl_story_live(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(4):
        await js.publish("orders.new", f"order-{i + 1} payload".encode())
    # 2.5 s: long enough for the 2 Hz ruler to catch each outstanding state on a loaded machine
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=2.5)

    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        app.jump_to_consumer("ORDERS", "RDL")
        ruler = app.screen.query_one("#consumers-ruler")

        def lane() -> str:
            """The RDL lane with the spreading spaces taken out: 'RDL    ┃···  floor ...'."""
            lines = [line for line in str(ruler.render()).splitlines() if line.startswith("RDL")]
            if not lines:
                return ""
            cells, floor, numbers = lines[0][7:].partition(" floor")
            return "RDL    " + cells.replace(" ", "").replace("━", "") + floor + numbers

        await wait_for(pilot, lambda: lane().startswith("RDL    ····"), what="all pending")
        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer == "RDL", what="pull hand target")
        await pilot.pause(0.3)
        await click_shown(pilot, "#pull-fetch")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 1, what="first card")
        app.action_tab("consumers")
        await wait_for(pilot, lambda: lane().startswith("RDL    1···"), what="seq 1 outstanding, tries 1")
        await wait_for(pilot, lambda: lane().startswith("RDL    !···"), timeout=6, what="ack wait ran out")
        assert "(1 expired)" in lane()
        app.action_tab("pull")
        await pilot.pause(0.3)
        await click_shown(pilot, "#pull-fetch")
        await wait_for(pilot, lambda: [c.fm.num_delivered for c in hand.query(HandCard)] == [2], what="tries 2")
        app.action_tab("consumers")
        await wait_for(pilot, lambda: lane().startswith("RDL    2···"), what="redelivered, tries 2")
        app.action_tab("pull")
        await pilot.pause(0.3)
        hand.query_one(HandCard).focus()
        await pilot.press("a")
        app.action_tab("consumers")
        await wait_for(pilot, lambda: lane().startswith("RDL    ┃··· floor 1 · dlv 1 · ack pend 0"),
                       what="acked: the floor moved to 1")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: "ack wait ran out" in str(app.screen.query_one(".help-legend").render()),
                       what="legend on ?")


def test_interest_and_workqueue_say_what_is_kept_for_whom():
    lanes = [Lane("LIVE", 2, 3, 1, 2), Lane("AUDIT", 5, 5, 0, 0)]
    text = render_ruler("EVENTS", 3, 5, lanes, 80, retention="interest").plain
    assert text.splitlines()[-1] == "interest: kept until acked — LIVE 3"
    assert "kept" not in render_ruler("EVENTS", 3, 5, lanes, 80).plain  # limits: kept by the limits alone


async def test_workqueue_messages_vanish_from_the_ruler_as_they_are_acked(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="JOBS", subjects=["jobs.>"], retention="workqueue")
    for i in range(3):
        await js.publish("jobs.a", f"job-{i}".encode())
    await js.add_consumer("JOBS", durable_name="W", ack_policy="explicit", ack_wait=30)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        app.jump_to_consumer("JOBS", "W")
        ruler = app.screen.query_one("#consumers-ruler")
        await wait_for(pilot, lambda: "seq 1…3" in str(ruler.render())
                       and "workqueue: kept until acked — W 3" in str(ruler.render()), what="3 jobs held for W")
        psub = await js.pull_subscribe_bind(durable="W", stream="JOBS")
        msgs = await psub.fetch(2, timeout=5)
        for m in msgs:
            await m.ack_sync()
        await wait_for(pilot, lambda: "seq 3…3" in str(ruler.render())
                       and "W 1" in str(ruler.render()), what="two acked jobs gone from the strip")
