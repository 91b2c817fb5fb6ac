"""Where a LiveTable's cursor stands while rows arrive: on the top row (the
first by name) until someone moves it, then on the object they chose.

The KV keys table is the case that showed it: a bucket's keys come one by one
from its watch, in revision order, and the cursor stayed on the first key that
arrived wherever the name order put it (at 80x24 off screen, the view scrolled
down to it). The streams table shares the path: a stream made by another
program that sorts first takes the top row, and the cursor with it.
"""

from __future__ import annotations

from natslab.tui.panes.streams import StreamsPane
from natslab.tui.widgets.live_table import LiveTable

from .conftest import connected, screen_text, show_tab, wait_for

KEYS = [f"key-{i:02d}" for i in range(40)]


async def test_kv_keys_cursor_on_top_until_moved_then_on_the_chosen_key(make_app, outside):
    js = outside.jetstream()
    kv = await js.create_key_value(bucket="CURSOR_TEST")
    for key in reversed(KEYS):  # the first to arrive (key-39) sorts last
        await kv.put(key, f"value of {key}".encode())
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.jump_to_bucket("CURSOR_TEST")
        await wait_for(pilot, lambda: len(app.screen.query("KvPane")) > 0, what="KV pane mounted")
        pane = app.screen.query_one("KvPane")
        keys = app.screen.query_one("#kv-keys", LiveTable)
        await wait_for(pilot, lambda: keys.row_count == len(KEYS), what="every key listed")
        await pilot.pause(0.2)  # the last rows' paint and any scroll
        assert [row.key.value for row in keys.ordered_rows] == KEYS
        assert (keys.cursor_row, keys.selected_key, keys.scroll_y) == (0, "key-00", 0)
        await wait_for(pilot, lambda: pane.key == "key-00", what="the value shown is the top key's")
        history = app.screen.query_one("#kv-history")
        await wait_for(pilot, lambda: history.row_count == 1 and history.columns["value"].content_width == 15,
                       what="key-00's history")

        def shown() -> list[str]:
            return [line.split()[0] for line in screen_text(app).splitlines() if line.split()]

        await wait_for(pilot, lambda: "key-00" in shown(), what="key-00 painted")
        assert "key-39" not in shown()

        # a key sorting first arrives: it takes the top row and the cursor, and
        # the pane shows its value (the cursor's line did not change, its key did)
        await kv.put("aa-top", b"later")
        await wait_for(pilot, lambda: keys.row_count == len(KEYS) + 1, what="aa-top listed")
        assert (keys.cursor_row, keys.selected_key) == (0, "aa-top")
        await wait_for(pilot, lambda: pane.key == "aa-top", what="the value shown is aa-top's")
        # its history in columns of its own width, not key-00's longer value's
        await wait_for(pilot, lambda: history.row_count == 1 and history.get_cell_at((0, 3)).plain == "later",
                       what="aa-top's history")
        assert history.columns["value"].content_width == len("Value")

        # the user moves the cursor: from now on it stays on that key
        keys.focus()
        await pilot.press("down", "down", "down")
        assert keys.selected_key == "key-02"
        for key in ("aa-2", "aa-1", "aa-0"):  # each sorts before every key shown
            await kv.put(key, b"later")
        await wait_for(pilot, lambda: keys.row_count == len(KEYS) + 4, what="three more keys")
        await pilot.pause(0.1)
        assert (keys.selected_key, keys.cursor_row, pane.key) == ("key-02", 6, "key-02")


async def test_streams_cursor_on_top_row_until_clicked_then_on_the_clicked_stream(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="CURSOR_DELTA", subjects=["cursor.delta"])
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "streams")
        pane = app.screen.query_one(StreamsPane)
        table = app.screen.query_one("#streams-table", LiveTable)
        await wait_for(pilot, lambda: table.row_count == 1, what="one stream")
        assert pane.selected == "CURSOR_DELTA"

        await js.add_stream(name="CURSOR_ALPHA", subjects=["cursor.alpha"])
        pane.schedule_poll(0.01)
        await wait_for(pilot, lambda: table.row_count == 2, what="two streams")
        assert (table.cursor_row, table.selected_key) == (0, "CURSOR_ALPHA")
        await wait_for(pilot, lambda: pane.selected == "CURSOR_ALPHA", what="the top stream's details")

        # a click on CURSOR_DELTA's line (the header is line 0): the cursor stays on it
        await pilot.click("#streams-table", offset=(3, 2))
        assert table.selected_key == "CURSOR_DELTA"
        await js.add_stream(name="CURSOR_0", subjects=["cursor.zero"])
        pane.schedule_poll(0.01)
        await wait_for(pilot, lambda: table.row_count == 3, what="three streams")
        assert (table.cursor_row, table.selected_key, pane.selected) == (2, "CURSOR_DELTA", "CURSOR_DELTA")


async def test_the_columns_fit_the_rows_the_moment_they_are_synced(make_app, outside):
    """DataTable widens its columns to new cells on idle, and a row painted
    before that keeps the narrower widths: on a loaded machine the KV keys read
    "key  40  PU" for "key-00  40  PUT" 15 s after the last key came. The table
    widens its columns as sync adds or changes the cells, before any paint (no
    await between the sync and the check: nothing else can have run)."""
    from textual.widgets.data_table import ColumnKey

    kv = await outside.jetstream().create_key_value(bucket="WIDTHS")
    await kv.put("k", b"v")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await connected(app, pilot)
        app.jump_to_bucket("WIDTHS")
        await wait_for(pilot, lambda: app.screen.query("#kv-keys"), what="KV pane mounted")
        keys = app.screen.query_one("#kv-keys", LiveTable)
        await wait_for(pilot, lambda: keys.row_count == 1, what="k listed")
        long_key = "a-key-with-a-long-name"
        keys.sync({"k": ("k", 1, "OPERATION-PUT", "1 B"), long_key: (long_key, 2, "PUT", "12 B")})
        widths = {col: keys.columns[ColumnKey(col)].content_width for col in ("key", "op")}
        assert widths == {"key": len(long_key), "op": len("OPERATION-PUT")}
