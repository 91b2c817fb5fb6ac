"""History belongs to one incarnation of a consumer (consumer info's
``created``): a consumer deleted and made again under its name — as the
redelivery demo's "Reset and run" does — starts with an empty timeline, time
axis, ruler lane and rates, and its first delivery is drawn (it used to read
as a twin of the old consumer's first delivery and vanish)."""

from __future__ import annotations

import time

from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard
from natslab.tui.panes.pull.timeline import DeliveryTimeline
from natslab.tui.widgets.timeline import TimeAxis

from .conftest import connected, wait_for


async def make_rdl(js) -> None:
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.publish("orders.new", b"order-1 payload")
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=1.0)


async def test_a_recreated_consumer_starts_a_new_history(make_app, outside):
    js = outside.jetstream()
    await make_rdl(js)
    app = make_app()
    async with app.run_test(size=(140, 36)) as pilot:
        await connected(app, pilot)
        app.jump_to_consumer("ORDERS", "RDL")
        consumers = app.screen.query_one("ConsumersPane")
        await wait_for(pilot, lambda: "RDL" in consumers.consumers, what="RDL listed")
        await wait_for(pilot, lambda: len(consumers._history["RDL"].samples) >= 2, what="rates recorded")
        old = consumers.consumers["RDL"].created
        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer == "RDL", what="pull hand target")
        timeline = hand.query_one(DeliveryTimeline)
        axis = hand.query_one(TimeAxis)

        def kinds() -> list[tuple[str, int]]:
            return [(e.kind, e.deliveries) for e in (timeline.events.get(("ORDERS", "RDL")) or {}).get(1, [])]

        def seq1() -> str:
            return next((line[9:].rstrip() for line in str(axis.render()).splitlines() if line.startswith("seq 1")), "")

        await pilot.press("f")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 1, what="first card")
        await wait_for(pilot, lambda: ("expired", 1) in kinds(), timeout=5, what="the first ack wait ran out")

        # another program resets the scenario: the stream and the consumer made again
        await js.delete_stream("ORDERS")
        await make_rdl(js)
        remade = time.monotonic()
        # noticed without a fetch (the hand asks for the consumer's info every 2 s while shown):
        # the old consumer's card and history go
        await wait_for(pilot, lambda: not hand.query(HandCard) and not kinds(), timeout=8,
                       what="the old consumer's card and history gone")
        assert "made again" in str(hand.query_one("#pull-status").render())
        await pilot.press("f")
        # the new delivery is drawn, alone: nothing of the old consumer's history is left
        await wait_for(pilot, lambda: kinds()[:1] == [("deliver", 1)], what="the new delivery in the timeline")
        assert ("expired", 1) not in kinds()
        assert "#1" in str(timeline.render())
        await wait_for(pilot, lambda: seq1().startswith("1"), what="the new delivery on the time axis")
        await wait_for(pilot, lambda: ("expired", 1) in kinds(), timeout=5, what="the new ack wait ran out")
        assert kinds() == [("deliver", 1), ("expired", 1)]
        await wait_for(pilot, lambda: "◔" in seq1(), what="the expiry drawn")

        # the Consumers pane: the rates and the ruler's lane are the new consumer's only
        app.action_tab("consumers")
        await wait_for(pilot, lambda: consumers.consumers.get("RDL") is not None
                       and consumers.consumers["RDL"].created != old, what="the new RDL polled")
        await wait_for(pilot, lambda: len(consumers._history["RDL"].samples) >= 1, what="new rates")
        assert all(s[0] >= remade - 0.5 for s in consumers._history["RDL"].samples)
