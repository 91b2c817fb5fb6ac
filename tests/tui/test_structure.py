"""The thin App: one registry of panes makes the tabs, the digit keys, the
palette's Go to and the mount schedule; one poll skeleton (LivePane.poll over
each pane's fetch); no swallowed exceptions."""

from __future__ import annotations

import re
from pathlib import Path

from natslab.tui.app import NatslabApp
from natslab.tui.commands import NatslabCommands
from natslab.tui.panes.base import LivePane
from natslab.tui.panes.registry import PANES

from .conftest import connected, wait_for

TUI = Path(__file__).resolve().parents[2] / "tui"


async def test_the_registry_makes_tabs_keys_palette_and_mounting(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        tabs = [t.id for t in app.screen.query("#tabs Tab")]
        assert tabs == [f"tab-{spec.area}" for spec in PANES]
        keys = {b.key: b.action for b in NatslabApp.BINDINGS if not isinstance(b, tuple)}
        titles = [str(h.text) async for h in NatslabCommands(app.screen).discover()]
        for n, spec in enumerate(PANES, start=1):
            assert keys[str(n)] == f"tab('{spec.area}')"
            assert f"Go to: {spec.title}" in titles
            mounted = len(app.screen.query(f"#{spec.pane_id}")) == 1
            assert mounted == (spec.mount != "on-demand"), spec.area
        for n, spec in enumerate(PANES, start=1):
            await pilot.press("escape", str(n))  # a tool pane's text field would keep the digit
            await wait_for(pilot, lambda: app.screen.pane(spec.area) is not None
                           and app.screen.active_area == spec.area, what=f"{spec.area} shown")
        assert type(app.screen.pane("kv")).__name__ == "KvPane"


def test_live_panes_share_one_poll_worker():
    import natslab.tui.panes.connections as connections
    import natslab.tui.panes.consumers as consumers
    import natslab.tui.panes.kv as kv
    import natslab.tui.panes.objects as objects
    import natslab.tui.panes.streams as streams

    panes = [streams.StreamsPane, consumers.ConsumersPane, kv.KvPane, objects.ObjectsPane,
             connections.ConnectionsPane]
    for cls in panes:
        assert issubclass(cls, LivePane)
        assert "poll" not in vars(cls) and "fetch" in vars(cls), cls.__name__


def test_no_exception_is_swallowed_silently():
    bare = re.compile(r"except Exception:\s*\n\s*pass\b")
    offenders = [str(p.relative_to(TUI)) for p in TUI.rglob("*.py") if bare.search(p.read_text())]
    assert offenders == []


async def test_a_failed_poll_is_said_and_polling_goes_on(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit")
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        app.jump_to_consumer("ORDERS", "RDL")
        pane = app.screen.query_one("ConsumersPane")
        status = app.screen.query_one("#consumers-status")
        await wait_for(pilot, lambda: "RDL" in pane.consumers, what="RDL listed")
        await js.delete_stream("ORDERS")
        await wait_for(pilot, lambda: "not found" in str(status.render()), what="the failure said")
        await js.add_stream(name="ORDERS", subjects=["orders.>"])
        await js.add_consumer("ORDERS", durable_name="AGAIN", ack_policy="explicit")
        await wait_for(pilot, lambda: "AGAIN" in pane.consumers, what="polling went on")
