"""Stumbles found by running the walkthrough by hand in tmux (docs/walkthrough.md),
each driven here through the real app against the real broker."""

from __future__ import annotations

from natslab.tui.demos import run_demo
from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard

from .conftest import answer, connected, wait_for


async def test_the_pull_hand_keys_work_after_it_changes_consumer_with_a_card_in_hand(make_app, outside):
    """A card in hand of one consumer, then palette → Demo: redelivery (the hand
    moves to DEMO_ORDERS › RDL): the old card went but kept the focus, so
    every key went to a removed widget — f, the digits, ?, ctrl+p: the app
    looked frozen."""
    js = outside.jetstream()
    await js.add_stream(name="JOBS", subjects=["jobs.>"])
    await js.publish("jobs.a", b"job a")
    await js.add_consumer("JOBS", durable_name="W", ack_policy="explicit", ack_wait=30)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.open_pull_hand("JOBS", "W")
        hand = app.screen.query_one(PullHand)
        await wait_for(pilot, lambda: hand.consumer == "W" and hand.consumer_config is not None, what="hand on W")
        await pilot.press("f")
        await wait_for(pilot, lambda: isinstance(app.focused, HandCard), what="W's card in hand, focused")

        run_demo(app, "redelivery")
        await answer(app, pilot)  # a server natslab did not start: it asks first
        await wait_for(pilot, lambda: hand.consumer == "RDL", what="hand on RDL")
        await wait_for(pilot, lambda: not hand.query(HandCard), what="W's card gone")
        assert app.focused is None or app.focused.is_attached
        await pilot.press("f")
        await wait_for(pilot, lambda: [c.fm.consumer for c in hand.query(HandCard)] == ["RDL"],
                       what="f fetched RDL's first message")
        await pilot.press("2")
        await wait_for(pilot, lambda: app.screen.query_one("#panes").current == "consumers", what="2 shows Consumers")
