"""SVG baselines of the topology screen at 120x36 and 80x24 (real nats-server,
pinned display as in ``test_snapshots``). Update with
``pytest tests/tui/test_topology_snapshots.py --snapshot-update``."""

from __future__ import annotations

import asyncio

import nats
import pytest

from .test_snapshots import app_for, finish, until
from .test_topology import seed_topology


def seed(url: str) -> None:
    async def run() -> None:
        nc = await nats.connect(url)
        await seed_topology(nc)
        await nc.close()

    asyncio.run(run())


@pytest.mark.parametrize("size", [(120, 36), (80, 24)], ids=["120x36", "80x24"])
def test_topology_screen(snap_compare, nats_server_url, size):
    seed(nats_server_url)

    async def run_before(pilot):
        app = pilot.app
        await until(pilot, lambda: app.client is not None and app.client.connected)
        from natslab.tui.screens.topology import open_topology

        open_topology(app)
        await until(pilot, lambda: len(app.screen.query("TopologyView")) == 1)
        view = app.screen.query_one("TopologyView")
        await until(pilot, lambda: view.topology is not None and len(view.links) == 4
                    and all(l.lag == 0 and l.active is not None for l in view.topology.links if l.kind != "republish"),
                    timeout=10)
        # the header's usage is polled on its own, once a second: it shows what
        # the server counts once the mirror and sources caught up
        nc = await nats.connect(nats_server_url, connect_timeout=2, allow_reconnect=False)
        try:
            info = await nc.jetstream().account_info()
        finally:
            await nc.close()
        want = (info.streams, info.consumers, info.storage)
        await until(pilot, lambda: app.header_info.usage is not None and (
            app.header_info.usage.streams, app.header_info.usage.consumers, app.header_info.usage.storage) == want,
            timeout=10, what=f"the header's usage at {want}")
        await pilot.pause(0.3)
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=size, run_before=run_before)
