"""Streams pane against a real broker: create in the form, live counts, bad input."""

from __future__ import annotations

from textual.widgets import Input

from natslab.tui.panes.streams import StreamsPane
from natslab.tui.widgets.form import FormField
from natslab.tui.widgets.live_table import LiveTable

from .conftest import connected, screen_text, wait_for


async def test_create_stream_in_form_and_see_outside_publishes(make_app, outside):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        table = app.screen.query_one("#streams-table", LiveTable)
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen.query("#name"), what="form")
        app.screen.query_one("#name", Input).value = "ORDERS"
        app.screen.query_one("#subjects", Input).value = "orders.>"
        await pilot.click("#form-submit")
        await wait_for(pilot, lambda: table.value("ORDERS", "name") == "ORDERS", what="ORDERS row")
        assert table.value("ORDERS", "messages") == "0"

        js = outside.jetstream()
        for i in range(3):
            await js.publish("orders.new", f"order-{i}".encode())
        await wait_for(pilot, lambda: table.value("ORDERS", "messages") == "3", what="count 3")
        assert table.value("ORDERS", "last") == "3"


async def test_bad_subject_shows_inline_error(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="TAKEN", subjects=["taken.>"])
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen.query("#name"), what="form")
        app.screen.query_one("#name", Input).value = "BAD"
        app.screen.query_one("#subjects", Input).value = "orders..new"
        await pilot.click("#form-submit")
        await pilot.pause(0.1)
        field = app.screen.query_one("#field-subjects", FormField)
        assert field.has_class("-invalid")
        assert "empty token" in field.error_text

        # The server's own objection lands next to the field too.
        app.screen.query_one("#subjects", Input).value = "taken.>"
        await pilot.click("#form-submit")
        await wait_for(pilot, lambda: "server" in field.error_text, what="server error")
        assert "overlap" in field.error_text
        await pilot.press("escape")
        assert isinstance(app.screen.query_one(StreamsPane), StreamsPane)


async def test_purge_keep_delete_and_consumer_pause(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(5):
        await js.publish("orders.new", f"o{i}".encode())
    await js.add_consumer("ORDERS", durable_name="WORKER", ack_policy="explicit")
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        table = app.screen.query_one("#streams-table", LiveTable)
        await wait_for(pilot, lambda: table.value("ORDERS", "messages") == "5", what="ORDERS listed")

        await pilot.press("p")
        await wait_for(pilot, lambda: len(app.screen.query("#keep")) > 0, what="purge dialog")
        app.screen.query_one("#keep", Input).value = "two"
        await pilot.click("#form-submit")
        await pilot.pause(0.1)
        assert "whole number" in app.screen.query_one("#field-keep", FormField).error_text
        app.screen.query_one("#keep", Input).value = "2"
        await pilot.click("#form-submit")
        await wait_for(pilot, lambda: table.value("ORDERS", "messages") == "2", what="purged to 2")
        assert table.value("ORDERS", "first") == "4"

        # consumer pause / resume
        app.jump_to_consumer("ORDERS", "WORKER")
        consumers = app.screen.query_one("#consumers-table", LiveTable)
        await wait_for(pilot, lambda: consumers.value("WORKER", "state") == "active", what="WORKER active")
        await pilot.press("space")
        await wait_for(pilot, lambda: consumers.value("WORKER", "state") == "paused", what="paused")
        await pilot.press("space")
        await wait_for(pilot, lambda: consumers.value("WORKER", "state") == "active", what="resumed")

        # delete asks first; cancel keeps it, confirm removes it
        app.action_tab("streams")
        await pilot.pause(0.3)
        table.focus()
        await pilot.press("d")
        await wait_for(pilot, lambda: len(app.screen.query("#confirm")) > 0, what="confirm dialog")
        await pilot.press("escape")
        await pilot.pause(0.2)
        assert (await js.stream_info("ORDERS")).config.name == "ORDERS"
        await pilot.press("d")
        await wait_for(pilot, lambda: len(app.screen.query("#confirm")) > 0, what="confirm dialog")
        await pilot.press("y")
        await wait_for(pilot, lambda: table.value("ORDERS", "name") is None, what="ORDERS gone")


async def test_streams_created_live_take_their_place_by_name(make_app, outside):
    """Streams made by another program while the app runs stand in name order (as
    $JS.API.STREAM.LIST gives them), and the highlighted stream stays highlighted
    when a row is put in or taken out above it."""
    js = outside.jetstream()
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        pane = app.screen.query_one(StreamsPane)
        table = app.screen.query_one("#streams-table", LiveTable)

        def shown() -> list[str]:
            return [row.key.value for row in table.ordered_rows]

        for name in ("DELTA", "BRAVO"):
            await js.add_stream(name=name, subjects=[f"{name.lower()}.>"])
        pane.schedule_poll(0.01)  # the next poll now rather than in up to a second
        await wait_for(pilot, lambda: len(shown()) == 2, what="two streams")
        assert shown() == ["BRAVO", "DELTA"]
        pane.select_stream("DELTA")
        assert pane.selected == "DELTA"

        for name in ("CHARLIE", "ALPHA", "ECHO"):
            await js.add_stream(name=name, subjects=[f"{name.lower()}.>"])
        pane.schedule_poll(0.01)
        await wait_for(pilot, lambda: len(shown()) == 5, what="five streams")
        assert shown() == ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO"]
        assert (table.selected_key, pane.selected, table.cursor_row) == ("DELTA", "DELTA", 3)
        await pilot.pause(0.1)  # painted in that order too, cursor on DELTA's line
        lines = [line.split()[0] for line in screen_text(app).splitlines()[:12]
                 if line.split() and line.split()[0] in ("ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO")]
        assert lines == ["ALPHA", "BRAVO", "CHARLIE", "DELTA", "ECHO"]

        await js.delete_stream("BRAVO")
        pane.schedule_poll(0.01)
        await wait_for(pilot, lambda: len(shown()) == 4, what="BRAVO gone")
        assert shown() == ["ALPHA", "CHARLIE", "DELTA", "ECHO"]
        assert (table.selected_key, pane.selected) == ("DELTA", "DELTA")
