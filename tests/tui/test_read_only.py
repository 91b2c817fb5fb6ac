"""--read-only: browse everything, change nothing, and the header says so.
Consumer details as `nats consumer info` shows them, and the -j raw JSON
view of stream and consumer info."""

from __future__ import annotations

import re

import pytest
from textual.widgets import Button, Input

from natslab.tui.client import NatsError
from natslab.tui.panes.streams import StreamsPane
from natslab.tui.screens.main import MainScreen

from .conftest import connected, screen_text, show_tab, wait_for


async def user_data(outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(3):
        await js.publish("orders.new", f"order {i}".encode())
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit")
    kv = await js.create_key_value(bucket="CONFIG")
    await kv.put("region", b"eu")
    return js, kv


async def state(js, kv) -> tuple:
    info = await js.stream_info("ORDERS")
    rdl = await js.consumer_info("ORDERS", "RDL")
    return (info.state.messages, info.state.last_seq, rdl.delivered.stream_seq, rdl.paused,
            (await kv.get("region")).revision, sorted(s.config.name for s in await js.streams_info()))


async def test_read_only_browses_everything_and_changes_nothing(make_app, outside):
    js, kv = await user_data(outside)
    before = await state(js, kv)
    app = make_app(read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        assert "READ-ONLY" in str(app.screen.query_one("#header").render())
        streams = app.screen.query_one(StreamsPane)
        await wait_for(pilot, lambda: "ORDERS" in streams.streams, what="ORDERS listed")
        app.jump_to_stream("ORDERS")
        await pilot.pause(0.2)
        for key in ("n", "e", "p", "d"):
            await pilot.press(key)
            await pilot.pause(0.1)
            assert isinstance(app.screen, MainScreen), key  # no form, no dialog
        await pilot.press("m")  # browsing works
        browser = app.screen.query_one("#browser-list")
        await wait_for(pilot, lambda: browser.row_count == 3, what="messages browsed")

        app.jump_to_consumer("ORDERS", "RDL")
        consumers = app.screen.query_one("ConsumersPane")
        await wait_for(pilot, lambda: "RDL" in consumers.consumers, what="RDL listed")
        await pilot.press("space", "d", "n")
        await pilot.pause(0.2)
        assert isinstance(app.screen, MainScreen)

        app.open_pull_hand("ORDERS", "RDL")
        await pilot.pause(0.2)
        assert app.screen.query_one("#pull-fetch", Button).disabled
        await pilot.press("f")
        await pilot.pause(0.3)
        assert "read-only" in str(app.screen.query_one("#pull-status").render())

        await show_tab(app, pilot, "publish")
        assert app.screen.query_one("#pub-send", Button).disabled
        app.screen.query_one("#pub-subject", Input).value = "orders.new"
        await pilot.press("ctrl+s")
        await show_tab(app, pilot, "kv")
        assert app.screen.query_one("#kv-put", Button).disabled
        app.screen.query_one("#kv-buckets").focus()
        await pilot.press("n")
        await pilot.pause(0.1)
        assert isinstance(app.screen, MainScreen)

        from natslab.tui.demos import run_demo

        run_demo(app, "redelivery")
        await wait_for(pilot, lambda: any("Read-only" in n.message for n in app._notifications), what="no demo")

        # and the client itself refuses, whatever a pane might try
        for attempt in (app.client.delete_stream("ORDERS"), app.client.purge_stream("ORDERS"),
                        app.client.js_publish("orders.new", b"x"), app.client.kv_op("CONFIG", "put", "k", b"v"),
                        app.client.create_consumer("ORDERS", {"durable_name": "X"})):
            with pytest.raises(NatsError, match="read-only"):
                await attempt
        await pilot.pause(1.2)  # a few polls more
    assert await state(js, kv) == before


async def test_consumer_details_as_nats_consumer_info_and_raw_json(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(3):
        await js.publish("orders.new", f"order {i}".encode())
    psub = await js.pull_subscribe("orders.>", durable="RDL", stream="ORDERS")
    await psub.fetch(1, timeout=2)  # delivered, not acked
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await connected(app, pilot)
        app.jump_to_consumer("ORDERS", "RDL")
        await wait_for(pilot, lambda: "Last delivery" in screen_text(app), what="consumer details")
        text = screen_text(app)
        assert re.search(r"Last delivery: \d+\.\d\ds ago", text), text
        assert "Outstanding Acks: 1 out of maximum 1,000" in text and "Unprocessed Messages: 2" in text
        assert "Ack Policy: Explicit" in text
        await pilot.press("J")
        await wait_for(pilot, lambda: '"durable_name": "RDL"' in screen_text(app), what="raw JSON")
        app.screen.query_one("#consumer-detail").scroll_end(animate=False)
        await wait_for(pilot, lambda: '"num_ack_pending": 1' in screen_text(app), what="raw JSON state")

        app.action_tab("streams")
        await pilot.pause(0.3)
        app.screen.query_one("#streams-table").focus()
        await pilot.press("J")
        await wait_for(pilot, lambda: '"subjects": [' in screen_text(app), what="stream JSON")
        await pilot.press("J")
        await wait_for(pilot, lambda: "max_msgs_per_subject" in screen_text(app)
                       and '"subjects"' not in screen_text(app), what="back to the table")


async def test_read_only_says_so_and_shows_only_what_works(make_app, outside):
    """A refused key answers "read-only" in one line, and the titles, the
    footer and the help list only keys that work."""
    js, kv = await user_data(outside)
    before = await state(js, kv)
    app = make_app(read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        streams = app.screen.query_one(StreamsPane)
        await wait_for(pilot, lambda: "ORDERS" in streams.streams, what="ORDERS listed")
        app.jump_to_stream("ORDERS")
        app.screen.query_one("#streams-table").focus()
        await wait_for(pilot, lambda: "Streams (2)" in screen_text(app), what="the streams title")  # and KV_CONFIG

        def refusals() -> list[str]:
            return [n.message for n in app._notifications if "read-only" in n.message]

        def footer() -> str:
            return screen_text(app).splitlines()[-1]

        title = str(app.screen.query_one("#streams-status").render())
        assert "read-only" in title and not re.search(r"\bn new|e edit|p purge|d delete", title), title
        assert "New stream" not in footer() and "Purge" not in footer() and "Messages" in footer()
        await pilot.press("p")
        await wait_for(pilot, lambda: len(refusals()) == 1, what="p refused out loud")
        assert "\n" not in refusals()[0] and "Purge" in refusals()[0]
        assert isinstance(app.screen, MainScreen)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: "natslab — keys" in screen_text(app), what="help")
        assert "New stream" not in screen_text(app) and "Raw JSON" in screen_text(app)
        await pilot.press("escape")

        app.jump_to_consumer("ORDERS", "RDL")
        consumers = app.screen.query_one("ConsumersPane")
        await wait_for(pilot, lambda: "RDL" in consumers.consumers, what="RDL listed")
        await wait_for(pilot, lambda: "Consumers of ORDERS (1)" in screen_text(app), what="the consumers title")
        title = str(app.screen.query_one("#consumers-status").render())
        assert "read-only" in title and "n new" not in title and "pause" not in title, title

        await show_tab(app, pilot, "publish")
        app.screen.query_one("#pub-subject", Input).value = "orders.new"
        app.screen.query_one("#pub-subject", Input).focus()
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: any("Publish" in r for r in refusals()), what="ctrl+s refused out loud")
        assert "\n" not in refusals()[-1]
        assert "ctrl+s" not in screen_text(app) and "^s" not in footer()
        for area in ("request", "kv", "objects"):
            await show_tab(app, pilot, area)
            status = app.screen.query_one(f"#{area}-pane .pane-status")
            text = str(status.render())
            assert "read-only" in text and "ctrl+s send" not in text and "n new" not in text, (area, text)
    assert await state(js, kv) == before
