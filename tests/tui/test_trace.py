""""Where did my message go?": the composer's trace view against a real broker
(natslab's, or nats-server with NATSLAB_TUI_BROKER=nats-server) with other
real nats-py connections subscribed: named connections and their cids, a
queue group, a stream with consumers whose filters do and do not cover the
subject, trace only (nothing delivered or stored) against publish and trace
(the PubAck's seq), no interest, an interest stream nobody wants it for, a
full stream with discard new, and a publish the server's permissions deny."""

from __future__ import annotations

import asyncio

import nats
import pytest
from textual.widgets import Input, Select, Static

from natslab.tui.client import ConnectOptions
from natslab.tui.app import NatslabApp
from natslab.tui.panes.publish.trace import TraceScreen

from .conftest import ConfBroker, connected, screen_text, show_tab, wait_for


def shown(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def open_trace(app, pilot, subject: str, mode: str = "js") -> TraceScreen:
    """Compose a message for ``subject`` and press ctrl+t, as a user would;
    the view opens with a trace-only run."""
    if not app.screen.query("#pub-subject"):
        await show_tab(app, pilot, "publish")
    app.screen.query_one("#pub-subject", Input).value = subject
    app.screen.query_one("#pub-mode", Select).value = mode
    app.screen.query_one("#pub-subject", Input).focus()
    await pilot.press("ctrl+t")
    await wait_for(pilot, lambda: isinstance(app.screen, TraceScreen), what="trace view")
    await traced(app, pilot, "Trace only:")
    return app.screen


async def traced(app, pilot, start: str) -> str:
    await wait_for(pilot, lambda: shown(app, "#trace-verdict").startswith(start), what=f"verdict {start!r}")
    await pilot.pause(0.05)
    return shown(app, "#trace-verdict")


async def close(app, pilot) -> None:
    await pilot.press("escape")
    await wait_for(pilot, lambda: not isinstance(app.screen, TraceScreen), what="trace view closed")


async def test_trace_names_subscribers_queue_group_stream_and_consumers(make_app, broker_url, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.add_consumer("ORDERS", durable_name="SHIPPING", filter_subject="orders.new", ack_policy="explicit")
    await js.add_consumer("ORDERS", durable_name="AUDIT", ack_policy="explicit")
    await js.add_consumer("ORDERS", durable_name="EU", filter_subject="orders.eu.>", ack_policy="explicit")
    conns = [await nats.connect(broker_url, name=name, connect_timeout=2, allow_reconnect=False)
             for name in ("billing", "worker-1", "worker-2")]
    billing, w1, w2 = conns
    got: dict[str, int] = {"billing": 0, "workers": 0}

    async def on_billing(_m):
        got["billing"] += 1

    async def on_worker(_m):
        got["workers"] += 1

    try:
        await billing.subscribe("orders.*", cb=on_billing)
        for w in (w1, w2):
            await w.subscribe("orders.new", queue="workers", cb=on_worker)
        for c in conns:
            await c.flush()
            await c.flush()
        app = make_app()
        async with app.run_test(size=(120, 36)) as pilot:
            await connected(app, pilot)
            await open_trace(app, pilot, "orders.new")
            words = shown(app, "#trace-verdict")
            assert "nothing was delivered or stored" in words
            assert "It would reach 2 subscriptions on 2 connections (queue group workers: one of its members)" in words
            assert "Stream ORDERS would store it as orders.new. 2 consumers would deliver it: AUDIT, SHIPPING." in words
            tree = screen_text(app)
            assert f"billing  cid {billing.client_id}  sub orders.*  ✓ would get it" in tree
            member = [w for w in (w1, w2) if f"worker-{(w1, w2).index(w) + 1}  cid {w.client_id}  sub orders.new  queue workers" in tree]
            assert len(member) == 1, tree  # the group's one member the server picked
            assert "consumer SHIPPING  orders.new  ✓ would deliver when fetched" in tree
            assert "consumer AUDIT  all subjects  ✓ would deliver" in tree
            assert "consumer EU  orders.eu.>  ✗ not its subject" in tree
            assert f"from natslab (cid {app.client.client_id})" in tree
            # trace only: nobody got it, nothing was stored
            await asyncio.sleep(0.2)
            assert got == {"billing": 0, "workers": 0}
            assert (await js.stream_info("ORDERS")).state.messages == 0

            await pilot.press("p")
            words = await traced(app, pilot, "Published and traced.")
            assert "It reached 2 subscriptions on 2 connections" in words
            assert "Stream ORDERS stored it at seq 1 (PubAck). 2 consumers will deliver it: AUDIT, SHIPPING." in words
            assert "■ stream ORDERS  ✓ stored at seq 1" in screen_text(app)
            await wait_for(pilot, lambda: got == {"billing": 1, "workers": 1}, what="delivered once each")
            assert (await js.stream_info("ORDERS")).state.messages == 1
            await close(app, pilot)
            # a core publish has no PubAck: the view reads the stream's last message on the subject
            await open_trace(app, pilot, "orders.new", mode="core")
            await pilot.press("p")
            words = await traced(app, pilot, "Published and traced.")
            assert "Stream ORDERS stored it (no PubAck for a core publish: its last message on orders.new is now seq 2)." in words
            assert "■ stream ORDERS  ✓ stored (last on subject: seq 2)" in screen_text(app)
            await wait_for(pilot, lambda: got == {"billing": 2, "workers": 2}, what="delivered twice each")
            await close(app, pilot)
    finally:
        for c in conns:
            await c.close()


async def test_trace_why_nobody_got_it(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="EVENTS", subjects=["events.>"], retention="interest")
    await js.add_stream(name="FULL", subjects=["full.>"], max_msgs=1, discard="new")
    await js.publish("full.a", b"first")
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        # no interest at all, a core publish
        await open_trace(app, pilot, "nobody.here", mode="core")
        assert "Nobody would get it: no subscription and no stream has interest in nobody.here, so a core publish to it is simply gone." in shown(app, "#trace-verdict")
        assert "✗ no interest: nothing subscribes to nobody.here" in screen_text(app)
        await close(app, pilot)
        # an interest stream with no consumer drops it
        await open_trace(app, pilot, "events.x", mode="core")
        await pilot.press("p")
        words = await traced(app, pilot, "Published and traced.")
        assert "Stream EVENTS (interest retention) dropped it: no consumer is interested in events.x." in words
        assert "■ stream EVENTS  ✗ no interest: dropped" in screen_text(app)
        await close(app, pilot)
        # a full stream with discard new refuses it, and the view names the limit
        await open_trace(app, pilot, "full.b")
        await pilot.press("p")
        words = await traced(app, pilot, "Published and traced.")
        assert "Stream FULL refused it: maximum messages exceeded (limits: max_msgs 1; discard new)." in words
        assert "■ stream FULL  ✗ maximum messages exceeded" in screen_text(app)
        assert (await js.stream_info("FULL")).state.messages == 1
        await close(app, pilot)


CONF = """authorization {
  users = [
    {user: app, password: pw, permissions: {publish: {allow: [">"], deny: ["secret.>"]}, subscribe: ">"}}
  ]
}
"""


@pytest.fixture
def auth_broker(tmp_path):
    """The same broker kind as ``broker``, with a user who may not publish to secret.>."""
    srv = ConfBroker(tmp_path, CONF, monitor=False)
    yield srv.url
    srv.stop()


async def test_trace_publish_denied_by_permissions(auth_broker):
    options = ConnectOptions(url=auth_broker, user="app", password="pw", connect_timeout=1, max_reconnect_attempts=3)
    app = NatslabApp(connect=options, remember_theme=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await open_trace(app, pilot, "secret.plans", mode="core")
        words = shown(app, "#trace-verdict")
        assert "Refused: the server did not accept this publish" in words
        assert 'permissions violation for publish to "secret.plans"' in words.lower()
        assert "✗ refused:" in screen_text(app)
        await close(app, pilot)


async def test_read_only_traces_without_publishing(make_app, outside):
    """--read-only may trace (a trace-only publish delivers and stores nothing)
    but not publish: the view's publish key and button are not there."""
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    got = []

    async def seen(msg):
        got.append(msg)

    await outside.subscribe("orders.new", cb=seen)
    await outside.flush()
    await outside.flush()
    app = make_app(read_only=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        screen = await open_trace(app, pilot, "orders.new")
        assert "It would reach 1 subscription on 1 connection." in shown(app, "#trace-verdict")
        assert "outside  cid" in screen_text(app)
        assert screen.query_one("#trace-publish").disabled
        await pilot.press("p")  # not bound under --read-only: nothing happens
        await pilot.pause(0.3)
        assert shown(app, "#trace-verdict").startswith("Trace only:")
        assert got == [] and (await js.stream_info("ORDERS")).state.messages == 0
        await close(app, pilot)


async def test_a_long_path_scrolls_at_80x24(make_app, broker_url, outside):
    """Twelve subscribers do not fit at 80x24: end / home scroll the path with
    the focus still on the buttons, and nothing is cut off."""
    conns = []

    async def noop(_msg) -> None:
        return None

    try:
        for i in range(12):
            nc = await nats.connect(broker_url, name=f"service-{i:02}", connect_timeout=2, allow_reconnect=False)
            await nc.subscribe("orders.new", cb=noop)
            await nc.flush()
            await nc.flush()
            conns.append(nc)
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await connected(app, pilot)
            await open_trace(app, pilot, "orders.new", mode="core")
            assert "It would reach 12 subscriptions on 12 connections." in shown(app, "#trace-verdict")
            first = screen_text(app)
            assert "● orders.new  from natslab" in first and first.count("→ service-") < 12  # cut off
            assert "└── → service-" not in first
            await pilot.press("end")
            await pilot.pause(0.1)
            last = screen_text(app)
            assert "└── → service-" in last and "● orders.new" not in last
            await pilot.press("home")
            await pilot.pause(0.1)
            assert "● orders.new  from natslab" in screen_text(app)
            # ? lists the view's own keys (a modal screen does not get the app's)
            from natslab.tui.screens.help import HelpScreen

            await pilot.press("question_mark")
            await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
            assert "Publish and trace" in screen_text(app) and "Scroll the path down" in screen_text(app)
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(app.screen, TraceScreen), what="back to the trace")
            await close(app, pilot)
    finally:
        for nc in conns:
            await nc.close()
