"""SVG baselines of the stream ruler at 120x36 and 80x24: the seed's ORDERS
with RDL holding one acked and one outstanding message and WORKER untouched.
Same pinned display as ``test_snapshots``; update with
``pytest tests/tui/test_snapshots_ruler.py --snapshot-update``."""

from __future__ import annotations

import pytest

from .conftest import click_shown
from .test_snapshots import app_for, finish, ready, seed, until


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_ruler_rdl_one_acked_one_outstanding(snap_compare, nats_server_url, size):
    seed(nats_server_url)

    async def run_before(pilot):
        app = pilot.app
        await ready(pilot, 2)
        app.open_pull_hand("ORDERS", "RDL")
        await pilot.pause(0.3)
        app.screen.query_one("#pull-batch").value = "2"
        await click_shown(pilot, "#pull-fetch")
        await until(pilot, lambda: len(app.screen.query("HandCard")) == 2)
        card = app.screen.query("HandCard").first()
        card.focus()
        await pilot.press("a")
        await until(pilot, lambda: card.state == "acked")
        app.jump_to_consumer("ORDERS", "RDL")
        ruler = app.screen.query_one("#consumers-ruler")
        await until(pilot, lambda: "RDL" in str(ruler.render()) and "┃1" in str(ruler.render())
                    and "floor 1 · dlv 2 · ack pend 1 · pend 2" in str(ruler.render()), what="RDL's lane after the ack")
        app.screen.query_one("#consumers-table").focus()
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=size, run_before=run_before)
