"""SVG baselines of the trace view ("Where did my message go?") at 80x24 and
120x36: a message to orders.new traced (trace only) on a named nats-server
with a named subscriber, a queue group member and a stream with consumers.
Same pinned display as ``test_snapshots``; update with
``pytest tests/tui/test_trace_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio

import nats
import pytest
from textual.widgets import Input

from natslab.tui.app import NatslabApp
from natslab.tui.client import ConnectOptions
from natslab.tui.panes.publish.trace import TraceScreen

from .conftest import RealServer
from .test_snapshots import finish, ready, until


@pytest.fixture
def named_server(tmp_path):
    """nats-server names itself after its random id unless told: the picture shows the name."""
    srv = RealServer(tmp_path / "store", args=("-n", "n1"))
    yield srv.url
    srv.stop()


def seed(url: str) -> None:
    async def run() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        await js.add_stream(name="ORDERS", subjects=["orders.>"])
        await js.add_consumer("ORDERS", durable_name="SHIPPING", filter_subject="orders.new", ack_policy="explicit")
        await js.add_consumer("ORDERS", durable_name="AUDIT", ack_policy="explicit")
        await js.add_consumer("ORDERS", durable_name="EU", filter_subject="orders.eu.>", ack_policy="explicit")
        await nc.close()

    asyncio.run(run())


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_trace_view(snap_compare, named_server, size):
    seed(named_server)
    app = NatslabApp(
        connect=ConnectOptions(url=named_server, connect_timeout=1, max_reconnect_attempts=2),
        stable_display=True, display_url="nats://127.0.0.1:4222", display_version="2.x",
        remember_theme=False, theme_name="natslab-dark",
    )
    conns = []

    async def noop(_msg) -> None:
        return None

    async def run_before(pilot):
        await ready(pilot, 1)
        # the subscribers connect after the app, on its loop: their cids are the same every run
        for name, queue in (("billing", ""), ("worker-1", "workers")):
            nc = await nats.connect(named_server, name=name, connect_timeout=2, allow_reconnect=False)
            await nc.subscribe("orders.*" if not queue else "orders.new", queue=queue, cb=noop)
            await nc.flush()
            await nc.flush()
            conns.append(nc)
        pilot.app.action_tab("publish")
        await until(pilot, lambda: len(pilot.app.screen.query("#pub-subject")) > 0)
        await pilot.pause(0.3)
        pilot.app.screen.query_one("#pub-subject", Input).value = "orders.new"
        pilot.app.screen.query_one("#pub-subject", Input).focus()
        await pilot.press("ctrl+t")
        await until(pilot, lambda: isinstance(pilot.app.screen, TraceScreen))
        await until(pilot, lambda: str(pilot.app.screen.query_one("#trace-verdict").render()).startswith("Trace only:"))
        for nc in conns:  # the drawing is made: the subscribers may go
            await nc.close()
        pilot.app.screen.query_one("#trace-actions Button").blur()
        await finish(pilot)

    assert snap_compare(app, terminal_size=size, run_before=run_before)
