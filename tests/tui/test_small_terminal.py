"""80x24: the header keeps both lines (the URL and the connection state), the
consumers table shows Ack pend / Redlv / Pending and scrolls sideways to the
rest, and a pull card shows tries N."""

from __future__ import annotations

from natslab.tui.panes.pull import PullHand
from natslab.tui.panes.pull.card import HandCard
from natslab.tui.widgets.live_table import LiveTable
from natslab.tui.widgets.status_header import HeaderInfo, StatusHeader, fit

from .conftest import connected, screen_text, wait_for


def test_fit_shortens_the_least_important_part_first():
    parts = [(["AAAA"], "", 0), (["long store path", "…/path", ""], "", 4), (["server 2.x", "2.x"], "", 3)]
    assert fit(parts, 80).plain == "AAAAlong store pathserver 2.x"
    assert fit(parts, 20).plain == "AAAA…/pathserver 2.x"
    assert fit(parts, 14).plain == "AAAAserver 2.x"
    assert fit(parts, 7).plain == "AAAA2.x"


async def test_header_keeps_two_unwrapped_lines_at_80_columns(make_app, broker_url):
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.set_header(store_dir="/home/someone/.local/share/natslab/a/very/long/store/directory")
        await wait_for(pilot, lambda: app.header_info.usage is not None, what="usage")
        await pilot.pause(0.1)
        header = app.screen.query_one(StatusHeader)
        lines = screen_text(app).splitlines()[:2]
        # the first two lines of the screen are the header's, nothing wrapped into the second
        assert broker_url in lines[0] and len(lines[0]) <= 80
        assert lines[1].lstrip().startswith("● connected") and "0 streams" in lines[1]
        assert header.size.height == 2


async def test_consumers_table_shows_what_matters_at_80_columns(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.publish("orders.new", b"o1")
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", filter_subject="orders.new")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.jump_to_consumer("ORDERS", "RDL")
        table = app.screen.query_one("#consumers-table", LiveTable)
        await wait_for(pilot, lambda: table.value("RDL", "pending") == "1", what="RDL listed")
        await pilot.pause(0.3)
        def header_row() -> str:
            return screen_text(app).splitlines()[table.region.y]

        for column in ("Ack pend", "Redlv", "Pending"):
            assert column in header_row()
        assert "more columns" in str(app.screen.query_one("#consumers-status").render())
        assert "Filter" not in header_row()  # cut off at 80 ...
        table.focus()
        await pilot.press("right")
        await pilot.pause(0.1)
        assert table.scroll_x > 0
        await pilot.press("end")  # all the way
        await pilot.pause(0.3)
        assert table.scroll_x > 0 and "Filter" in header_row()  # ... and reachable


async def test_pull_card_shows_tries_at_80_columns(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.publish("orders.some.rather.long.subject.name", b"o1")
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=30)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.open_pull_hand("ORDERS", "RDL")
        hand = app.screen.query_one(PullHand)
        await pilot.pause(0.1)
        await pilot.press("f")
        await wait_for(pilot, lambda: len(hand.query(HandCard)) == 1, what="card")
        await pilot.pause(0.3)
        assert "tries 1" in screen_text(app)


async def test_seven_of_eleven_streams_show_at_80x24(make_app, outside):
    """At 24 rows the list and the detail share the height (it was a third
    for the list: 4 or 5 of 11 streams in sight, now 7 above the sideways
    scroll bar); at 48 the detail has its
    two thirds again."""
    js = outside.jetstream()
    for i in range(11):
        await js.add_stream(name=f"S{i:02d}", subjects=[f"s{i:02d}.>"])
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        table = app.screen.query_one("#streams-table", LiveTable)
        await wait_for(pilot, lambda: table.row_count == 11, what="eleven streams listed")
        await wait_for(pilot, lambda: sum(f"S{i:02d} " in screen_text(app) for i in range(11)) >= 7,
                       what="seven streams in sight")
        await pilot.resize_terminal(160, 48)
        detail = app.screen.query_one("#stream-detail")
        await wait_for(pilot, lambda: detail.size.height >= 2 * table.size.height - 2, what="the detail taller again")
        await app.shutdown()
