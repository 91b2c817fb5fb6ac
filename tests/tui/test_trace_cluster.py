"""The trace view on a 3-node nats-server cluster: the app on n1, subscribers
on n2 and n3. Each server sends its own trace event; the view links them by
hop (the route's egress names the hop the next server's event carries) and
draws the path through the routes to the subscriptions on the far nodes."""

from __future__ import annotations

import nats

from natslab.tui.app import NatslabApp
from natslab.tui.client import ConnectOptions

from .conftest import connected, screen_text
from .test_cluster import cluster  # noqa: F401  (the fixture)
from .test_trace import open_trace, shown


async def test_trace_follows_the_routes_of_a_cluster(cluster):  # noqa: F811
    n1, n2, n3 = cluster.nodes
    conns = []

    async def noop(_msg) -> None:
        return None

    try:
        for node, name, queue in ((n2, "billing", ""), (n3, "worker-3", "workers")):
            nc = await nats.connect(node.url, name=name, connect_timeout=2, allow_reconnect=False)
            await nc.subscribe("orders.new", queue=queue, cb=noop)
            await nc.flush()
            conns.append(nc)
        app = NatslabApp(connect=ConnectOptions(url=n1.url, connect_timeout=1, max_reconnect_attempts=3),
                         remember_theme=False)
        async with app.run_test(size=(120, 36)) as pilot:
            await connected(app, pilot)
            # the routes carry the subscriptions' interest to n1 a moment after they are made
            for _ in range(20):
                await open_trace(app, pilot, "orders.new", mode="core")
                if "2 subscriptions" in shown(app, "#trace-verdict"):
                    break
                await pilot.press("escape")
                await pilot.pause(0.2)
            assert "It would reach 2 subscriptions on 2 connections (queue group workers: one of its members)." in shown(app, "#trace-verdict")
            text = screen_text(app)
            assert "from natslab" in text and "on server n1" in text
            for name, hop in (("n2", 1), ("n3", 2)):
                assert f"⇢ route {name} (cid" in text and f"hop {hop}" in text
                assert f"server {name}" in text
            assert "→ billing  cid" in text and "sub orders.new  ✓ would get it" in text
            assert "→ worker-3  cid" in text and "queue workers  ✓ would get it" in text
            assert "Only" not in shown(app, "#trace-verdict")  # every server answered
    finally:
        for nc in conns:
            await nc.close()
