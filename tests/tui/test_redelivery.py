"""The heart of the workbench: fetch without acking, let the ack wait run out,
fetch again — tries 2 in the pull hand, redelivered 1 in the consumers pane."""

from __future__ import annotations

from textual.widgets import Input

from natslab.tui.panes.consumers import ConsumersPane
from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard
from natslab.tui.panes.pull.timeline import DeliveryTimeline
from natslab.tui.widgets.live_table import LiveTable

from .conftest import answer, click_shown, connected, wait_for


async def test_redelivery_tries_two(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(2):
        await js.publish("orders.new", f"order-{i + 1} payload".encode())
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=1.0)

    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        app.jump_to_consumer("ORDERS", "RDL")
        consumers = app.screen.query_one("#consumers-table", LiveTable)
        await wait_for(pilot, lambda: consumers.value("RDL", "pending") == "2", what="RDL listed")

        await pilot.press("f")  # consumers pane: open the pull hand on RDL
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer == "RDL", what="pull hand target")
        await click_shown(pilot, "#pull-fetch")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 1, what="first card")
        card = hand.query_one(HandCard)
        assert card.fm.stream_seq == 1 and card.fm.num_delivered == 1
        assert "tries 1" in str(card.query_one(".card-head").render())

        # leave it: the countdown runs out and says what happens next
        await wait_for(pilot, lambda: card.state == "expired", timeout=4, what="ack wait expiry")
        assert "will be redelivered on the next pull" in str(card.query_one(".card-countdown").render())

        await click_shown(pilot, "#pull-fetch")
        await wait_for(
            pilot, lambda: [c.fm.num_delivered for c in hand.query(HandCard)] == [2], what="tries 2"
        )
        again = hand.query_one(HandCard)
        assert again.fm.stream_seq == 1
        assert "tries 2" in str(again.query_one(".card-head").render())
        timeline = str(hand.query_one(DeliveryTimeline).render())
        assert "ack wait expired" in timeline and "▶ #2" in timeline

        app.action_tab("consumers")
        await wait_for(pilot, lambda: consumers.value("RDL", "redelivered") == "1", what="redelivered 1")
        assert consumers.value("RDL", "ack_pending") == "1"

        # ack it by hand: ack pending drops to 0, the timeline records it
        app.action_tab("pull")
        await pilot.pause(0.05)
        again.focus()
        await pilot.press("a")
        await wait_for(pilot, lambda: again.state == "acked", what="acked")
        app.action_tab("consumers")
        await wait_for(pilot, lambda: consumers.value("RDL", "ack_pending") == "0", what="ack pending 0")
        assert "✓ ack" in str(hand.query_one(DeliveryTimeline).render())


async def demo_hand(app, pilot) -> PullHand:
    """Once connected, the redelivery demo (answered yes: natslab did not
    start this server, so it asks first), up to the pull hand it opens on RDL."""
    await connected(app, pilot)
    app.action_demo_redelivery()
    await answer(app, pilot)
    hand = app.screen.query_one(PullHand)
    await wait_for(pilot, lambda: hand.consumer == "RDL", what="demo opened pull hand")
    return hand


async def test_redelivery_demo_from_palette_action(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        hand = await demo_hand(app, pilot)
        hand.query_one("#pull-batch", Input).value = "2"
        await click_shown(pilot, "#pull-fetch")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 2, what="two cards")
        assert [c.fm.subject for c in hand.query(HandCard)] == ["demo.o.new", "demo.o.new"]
        assert [c.fm.ack_wait for c in hand.query(HandCard)] == [4.0, 4.0]

        app.action_tab("consumers")
        consumers = app.screen.query_one(ConsumersPane)
        await wait_for(pilot, lambda: "RDL" in consumers.consumers, what="RDL listed")
        rdl = consumers.consumers["RDL"]
        assert rdl.pull and rdl.ack_policy == "explicit" and rdl.ack_wait == 4
        assert rdl.num_pending == 2 and rdl.num_ack_pending == 2


async def test_demo_leaves_the_hand_keys_working(make_app):
    """After the demo the f key fetches; it is not typed into the batch field."""
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        hand = await demo_hand(app, pilot)
        await pilot.pause(0.1)
        await pilot.press("f")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 1, what="f fetched one")
        assert hand.query_one("#pull-batch", Input).value == "1"
        batch = hand.query_one("#pull-batch", Input)
        batch.focus()
        await pilot.press("x")  # letters never enter the batch field
        assert batch.value == "1"
