"""SVG baselines of each pane at 120x36 with pinned content (stable display:
no times, fixed URL/version, no change highlights, notifications cleared).

They always run against the real nats-server (``nats_server_url``): sizes in
the header differ between brokers and the pictures are about the UI. Update with ``pytest tests/tui/test_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio
import json

import nats
import pytest

from natslab.tui.app import NatslabApp
from natslab.tui.client import ConnectOptions

from .conftest import click_shown, screen_text, settle, wait_for

SIZE = (120, 36)

def seed(url: str, *, consumer: bool = True) -> None:
    async def run() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        await js.add_stream(name="ORDERS", subjects=["orders.>"], max_msgs=1000, duplicate_window=120)
        await js.add_stream(name="JOBS", subjects=["jobs.>"], retention="workqueue")
        for i in range(1, 4):
            await js.publish("orders.new", json.dumps({"id": i, "total": i * 10}).encode(), headers={"Nats-Msg-Id": f"o-{i}"})
        await js.publish("orders.eu", b"order-eu-1 payload")
        await js.publish("jobs.a", b"job")
        if consumer:
            await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=30)
            await js.add_consumer("ORDERS", durable_name="WORKER", ack_policy="explicit", ack_wait=60, filter_subject="orders.eu")
        await nc.close()

    asyncio.run(run())


def app_for(url: str, theme: str = "natslab-dark") -> NatslabApp:
    return NatslabApp(
        connect=ConnectOptions(url=url, connect_timeout=1, max_reconnect_attempts=2),
        stable_display=True, display_url="nats://127.0.0.1:4222", display_version="2.x",
        remember_theme=False, theme_name=theme,
    )


async def until(pilot, predicate, timeout: float = 15.0, what: str = "snapshot state") -> None:
    await wait_for(pilot, predicate, timeout=timeout, what=what)


async def ready(pilot, streams: int) -> None:
    app = pilot.app
    await until(pilot, lambda: app.client is not None)
    table = app.screen.query_one("#streams-table")
    status = app.screen.query_one("#streams-status")
    polled = ("Streams (", "No streams yet")  # the label only says either after a poll
    await until(pilot, lambda: table.row_count == streams and app.header_info.usage is not None
                and str(status.render()).startswith(polled))
    await settle(pilot)


async def finish(pilot) -> None:
    pilot.app.clear_notifications()
    await settle(pilot)


def test_empty_broker(snap_compare, nats_server_url):
    async def run_before(pilot):
        await ready(pilot, 0)
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", ["natslab-dark", "natslab-light", "natslab-harbor"])
def test_streams_pane(snap_compare, nats_server_url, theme):
    seed(nats_server_url)

    async def run_before(pilot):
        await ready(pilot, 2)
        pilot.app.jump_to_stream("ORDERS")
        await pilot.pause(0.3)
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url, theme), terminal_size=SIZE, run_before=run_before)


def test_message_browser_json(snap_compare, nats_server_url):
    seed(nats_server_url)

    async def run_before(pilot):
        await ready(pilot, 2)
        pilot.app.jump_to_stream("ORDERS")
        await pilot.pause(0.2)
        await pilot.press("m")
        browser = pilot.app.screen.query_one("#browser-list")
        await until(pilot, lambda: browser.row_count == 4)
        # a reload of the list right after the first rows arrive can put the
        # cursor back on row 0: move it until message 2 is the one shown
        for _ in range(8):
            browser.move_cursor(row=1)
            await pilot.pause(0.3)
            if "o-2" in screen_text(pilot.app):
                break
        await pilot.press("J")
        await until(pilot, lambda: "(json)" in screen_text(pilot.app) and "o-2" in screen_text(pilot.app),
                    what="message 2 as JSON")
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)


def test_stream_form_inline_errors(snap_compare, nats_server_url):
    async def run_before(pilot):
        await ready(pilot, 0)
        await pilot.press("n")
        await until(pilot, lambda: pilot.app.screen.query("#subjects"))
        pilot.app.screen.query_one("#name").value = "BAD NAME"
        pilot.app.screen.query_one("#subjects").value = "orders..new"
        await pilot.click("#form-submit")
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)


def test_consumers_pane(snap_compare, nats_server_url):
    seed(nats_server_url)

    async def run_before(pilot):
        await ready(pilot, 2)
        pilot.app.jump_to_consumer("ORDERS", "RDL")
        pane = pilot.app.screen.query_one("ConsumersPane")
        await until(pilot, lambda: len(pane.consumers) == 2 and pane.selected == "RDL")
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)


def test_pull_hand_after_fetch(snap_compare, nats_server_url):
    seed(nats_server_url)

    async def run_before(pilot):
        await ready(pilot, 2)
        pilot.app.open_pull_hand("ORDERS", "RDL")
        await pilot.pause(0.2)
        pilot.app.screen.query_one("#pull-batch").value = "2"
        await click_shown(pilot, "#pull-fetch")
        await until(pilot, lambda: len(pilot.app.screen.query("HandCard")) == 2)
        card = pilot.app.screen.query("HandCard").first()
        card.focus()
        await pilot.press("a")
        await until(pilot, lambda: card.state == "acked")
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)


def test_help_screen(snap_compare, nats_server_url):
    async def run_before(pilot):
        await ready(pilot, 0)
        await pilot.press("question_mark")
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)


def test_publish_composer_inline_errors(snap_compare, nats_server_url):
    async def run_before(pilot):
        await ready(pilot, 0)
        app = pilot.app
        app.action_tab("publish")
        await until(pilot, lambda: len(app.screen.query("#pub-subject")) > 0)
        await pilot.pause(0.3)
        app.screen.query_one("#pub-subject").value = "orders.*"
        app.screen.query_one("#pub-headers").text = "Tenant: acme\nno colon here"
        app.screen.query_one("#pub-count").value = "ten"
        app.screen.query_one("#pub-send").press()
        await pilot.pause(0.2)
        app.screen.query_one("#pub-subject").blur()
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)


def test_kv_browser(snap_compare, nats_server_url):
    async def prepare() -> None:
        nc = await nats.connect(nats_server_url)
        kv = await nc.jetstream().create_key_value(bucket="CONFIG", history=5)
        await kv.put("region", b"eu")
        await kv.put("region", b"us")
        await kv.put("feature.checkout", b'{"enabled": true}')
        await nc.close()

    asyncio.run(prepare())

    async def run_before(pilot):
        await ready(pilot, 1)
        app = pilot.app
        app.jump_to_bucket("CONFIG")
        await until(pilot, lambda: len(app.screen.query("KvPane")) > 0)
        pane = app.screen.query_one("KvPane")
        await until(pilot, lambda: len(pane.entries) == 2, what="entries")
        keys = app.screen.query_one("#kv-keys")
        keys.focus()
        keys.select_key("region")
        history = app.screen.query_one("#kv-history")
        await until(pilot, lambda: history.row_count == 2, what="history")
        # rows count at once; the table sizes its columns to them when idle (a
        # busy CI machine once took the picture before that: "PU", "--:-")
        await until(pilot, lambda: history.columns["op"].content_width >= 3
                    and history.columns["time"].content_width >= 8, what="history columns sized")
        # the user's consumers: none (the watch's ordered consumer is the app's own, counted out)
        await until(pilot, lambda: app.header_info.usage is not None and app.header_info.usage.consumers == 0
                    and "KV_CONFIG" in app.client.own_consumer_streams, timeout=12, what="usage settled")
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)
