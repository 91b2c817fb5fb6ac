"""N in the pull hand: nak with a delay the user types in a small dialog.

Against the real broker: the message stays away for the delay and comes back
with tries 2 after it; bad input or Escape sends nothing at all (an outside
client watching ``$JS.ACK.>`` sees every ack-subject message the app sends).
"""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest
from textual.widgets import Input, Label

from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard
from natslab.tui.panes.pull.nak_delay import NakDelayDialog, parse_nak_delay
from natslab.tui.panes.pull.timeline import DeliveryTimeline
from natslab.tui.widgets.form import FormField
from natslab.tui.widgets.timeline import TimeAxis

from .conftest import click_shown, connected, wait_for

DELAY = 3.0  # longer than the hand's 1 s fetch wait, so an immediate re-fetch cannot see it come back


async def seed_and_open(app, pilot, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.publish("orders.new", b"order-1 payload")
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=30.0)
    await connected(app, pilot)
    app.open_pull_hand("ORDERS", "RDL")
    hand = app.screen.query_one(PullHand)
    await wait_for(pilot, lambda: hand.consumer == "RDL", what="pull hand target")
    await pilot.pause(0.1)
    return hand


async def fetch_cards(pilot, hand: PullHand) -> list[HandCard]:
    status = hand.query_one("#pull-status", Label)
    status.update("")
    await click_shown(pilot, "#pull-fetch")
    await wait_for(
        pilot,
        lambda: str(status.render()).startswith(("fetched", "nothing to fetch")),
        what="fetch finished",
    )
    return list(hand.query(HandCard))


async def ack_tap(outside) -> list[bytes]:
    seen: list[bytes] = []

    async def got(msg):
        seen.append(msg.data)

    await outside.subscribe("$JS.ACK.>", cb=got)
    await outside.flush()
    return seen


async def test_nak_with_a_typed_delay(make_app, outside):
    seen = await ack_tap(outside)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        hand = await seed_and_open(app, pilot, outside)
        cards = await fetch_cards(pilot, hand)
        assert [c.fm.num_delivered for c in cards] == [1]
        card = cards[0]
        card.focus()
        await pilot.press("N")
        await wait_for(pilot, lambda: isinstance(app.screen, NakDelayDialog), what="delay dialog")
        field = app.screen.query_one("#delay", Input)
        assert field.value == "5s"  # the default, before any delay was picked
        await pilot.press(*"3s")
        assert field.value == "3s"
        await pilot.press("enter")
        await wait_for(pilot, lambda: card.state == "naked", what="nak sent")
        naked_at = time.monotonic()
        assert not isinstance(app.screen, NakDelayDialog)

        # the status line and the card say which delay was used; the timeline says nak
        assert "redelivery in 3s" in str(hand.query_one("#pull-status", Label).render())
        assert "3s delay" in str(card.query_one(".card-countdown", Label).render())
        assert "↺ nak 3s" in str(hand.query_one(DeliveryTimeline).render())
        # the time axis (1 s per cell) draws the delay as a dashed gap after the nak
        axis = hand.query_one(TimeAxis)
        assert axis.seconds_per_cell == 1.0

        def seq1() -> str:
            return next((line[9:].rstrip() for line in str(axis.render()).splitlines() if line.startswith("seq 1")), "")

        await wait_for(pilot, lambda: seq1().startswith("1↺╌╌"), what="the nak's delay on the time axis")
        await wait_for(pilot, lambda: seen, what="nak seen on $JS.ACK")
        assert seen[0].startswith(b"-NAK")
        assert json.loads(seen[0][len(b"-NAK"):])["delay"] == 3_000_000_000

        # right away: not redelivered
        again = await fetch_cards(pilot, hand)
        assert again == []
        assert time.monotonic() - naked_at < DELAY, "the immediate re-fetch came too late to prove anything"

        # after the delay: back with tries 2
        await asyncio.sleep(max(0.0, naked_at + DELAY + 0.3 - time.monotonic()))
        for _ in range(5):
            again = await fetch_cards(pilot, hand)
            if again:
                break
        assert [(c.fm.stream_seq, c.fm.num_delivered) for c in again] == [(1, 2)]
        # the delay ran out, then the redelivery: dashes, (dots while nobody pulled), the second bar
        await wait_for(pilot, lambda: "2" in seq1(), what="second delivery on the axis")
        # (the nak is placed when the app sent it, the redelivery when the app got
        # it: on a busy machine the app's clock for the nak can run a cell late)
        m = re.match(r"1↺(╌+)(·*)2", seq1())
        assert m and 1 <= len(m[1]) <= 4, seq1()
        assert "tries 2" in str(again[0].query_one(".card-head").render())

        # the dialog offers the last delay used; Escape closes it without a nak
        again[0].focus()
        await pilot.press("N")
        await wait_for(pilot, lambda: isinstance(app.screen, NakDelayDialog), what="delay dialog again")
        assert app.screen.query_one("#delay", Input).value == "3s"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, NakDelayDialog), what="dialog closed")
        await pilot.pause(0.3)
        assert again[0].state == "pending"
        assert len(seen) == 1


async def test_nak_delay_bad_input_shows_error_and_sends_nothing(make_app, outside):
    seen = await ack_tap(outside)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        hand = await seed_and_open(app, pilot, outside)
        cards = await fetch_cards(pilot, hand)
        card = cards[0]
        await pilot.click(f"#{card.id} #nak_delay")  # the button does what N does
        await wait_for(pilot, lambda: isinstance(app.screen, NakDelayDialog), what="delay dialog")
        dialog = app.screen
        await pilot.press(*"abc", "enter")
        await pilot.pause(0.2)
        assert app.screen is dialog, "bad input must not close the dialog"
        field = dialog.query_one("#field-delay", FormField)
        assert "'abc' is not a delay" in field.error_text
        assert field.query_one(".field-error").display  # shown under the field

        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is not dialog, what="dialog closed")
        await pilot.pause(0.3)
        assert card.state == "pending"
        assert "↺ nak" not in str(hand.query_one(DeliveryTimeline).render())
        await outside.flush()
        assert seen == []


@pytest.mark.parametrize(
    "text, seconds",
    [("500ms", 0.5), ("5s", 5.0), ("1m", 60.0), ("2.5", 2.5), ("1m30s", 90.0), (" 2S ", 2.0), ("0", 0.0)],
)
def test_parse_nak_delay(text, seconds):
    assert parse_nak_delay(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "abc", "5x", "-1", "inf", "nan", "5s5"])
def test_parse_nak_delay_refuses(text):
    with pytest.raises(ValueError):
        parse_nak_delay(text)
