"""SVG baselines of the guided tour's panel at 80x24 and 120x36: step 2 done
on the real nats-server (the walkthrough's four orders, 222 B), the panel
beside the streams pane that it points at. Same pinned display as
``test_snapshots``; update with ``pytest tests/tui/test_tour_snapshots.py --snapshot-update``."""

from __future__ import annotations

import pytest

from .conftest import answer
from .test_snapshots import app_for, finish, ready, until


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_tour_panel_after_the_four_orders(snap_compare, nats_server_url, size):
    async def run_before(pilot):
        app = pilot.app
        await ready(pilot, 0)
        await pilot.press("T")
        await until(pilot, lambda: len(app.screen.query("#tour")) == 1, what="tour panel")
        panel = app.screen.query_one("#tour")
        await pilot.pause(0.2)
        await pilot.press("enter")
        await answer(app, pilot)  # a server natslab did not start
        await until(pilot, lambda: 0 in panel.results, what="step 1")
        await pilot.press("enter", "enter")
        await until(pilot, lambda: 1 in panel.results, what="step 2")
        table = app.screen.query_one("#streams-table")
        await until(pilot, lambda: table.value("DEMO_ORDERS", "bytes") == "222 B", what="222 B")
        # the header's account usage is polled once a second: its storage too
        await until(pilot, lambda: app.header_info.usage is not None and app.header_info.usage.storage == 222,
                    what="222 B in the header")
        await until(pilot, lambda: app.focused is panel, what="the keys with the panel")
        await pilot.pause(0.3)
        # whether pointing at the cells scrolled the narrow table sideways
        # depends on when its columns were sized: the picture pins it left
        table.scroll_to(x=0, animate=False)
        await pilot.pause(0.2)
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=size, run_before=run_before)
