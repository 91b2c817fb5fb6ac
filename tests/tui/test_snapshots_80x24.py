"""Every pane at 80x24, the smallest terminal the workbench is laid out for:
the header on two lines with the connection state, every tab, the numbers
that matter in each pane. Same pinned display as ``test_snapshots``; update
with ``pytest tests/tui/test_snapshots_80x24.py --snapshot-update``.
"""

from __future__ import annotations

import asyncio

import nats
import pytest

from natslab.tui.app import NatslabApp
from natslab.tui.client import ConnectOptions

from .conftest import RealServer, screen_text
from .test_snapshots import finish, ready, seed, until

SIZE = (80, 24)


@pytest.fixture
def monitored_server(tmp_path):
    store = tmp_path / "ns-store"
    store.mkdir()
    srv = RealServer(store, monitor=True)
    yield srv
    srv.stop()


def app_for(srv: RealServer) -> NatslabApp:
    return NatslabApp(
        connect=ConnectOptions(url=srv.url, connect_timeout=1, max_reconnect_attempts=2),
        stable_display=True, display_url="nats://127.0.0.1:4222", display_version="2.x",
        remember_theme=False, theme_name="natslab-dark", monitor_url=f"http://127.0.0.1:{srv.http_port}",
    )


async def show(pilot, area: str) -> None:
    pilot.app.action_tab(area)
    await until(pilot, lambda: len(pilot.app.screen.query(f"#{area}-pane")) > 0, what=f"{area} pane")
    await pilot.pause(0.4)


async def streams(pilot) -> None:
    pilot.app.jump_to_stream("ORDERS")
    await pilot.pause(0.3)


async def consumers(pilot) -> None:
    pilot.app.jump_to_consumer("ORDERS", "RDL")
    pane = pilot.app.screen.query_one("ConsumersPane")
    await until(pilot, lambda: len(pane.consumers) == 2 and pane.selected == "RDL")


async def pull(pilot) -> None:
    pilot.app.open_pull_hand("ORDERS", "RDL")
    await pilot.pause(0.2)
    pilot.app.screen.query_one("#pull-batch").value = "2"
    await pilot.press("f")
    await until(pilot, lambda: len(pilot.app.screen.query("HandCard")) == 2)
    # the timeline and the time axis drew both: a dialog opened over them
    # before they did would keep the empty axis behind it (it redraws while shown)
    await until(pilot, lambda: "Nothing yet" not in screen_text(pilot.app), what="the timeline and axis drawn")


async def leave_field(pilot) -> None:
    """Out of the text field the tab focused: a cursor's blink would depend on timing."""
    await pilot.press("escape")
    await until(pilot, lambda: pilot.app.focused is not None and pilot.app.focused.id not in
                ("pub-subject", "req-subject"), what="focus left the field")


async def publish(pilot) -> None:
    await show(pilot, "publish")
    await leave_field(pilot)


async def request(pilot) -> None:
    await show(pilot, "request")
    app = pilot.app
    app.screen.query_one("#mock-subject").value = "svc.echo"  # a running mock: its table must be in sight
    await pilot.click("#mock-start")
    table = app.screen.query_one("#mock-table")
    await until(pilot, lambda: table.row_count == 1, what="the mock responder listed")
    await leave_field(pilot)


async def kv(pilot) -> None:
    app = pilot.app
    app.jump_to_bucket("CONFIG")
    await until(pilot, lambda: len(app.screen.query("KvPane")) > 0)
    pane = app.screen.query_one("KvPane")
    await until(pilot, lambda: len(pane.entries) == 1, what="entries")
    history = app.screen.query_one("#kv-history")
    await until(pilot, lambda: history.row_count == 2 and history.columns["time"].content_width >= 8, what="history")
    # RDL and WORKER: the watch's consumer is the app's own, counted out
    await until(pilot, lambda: app.header_info.usage.consumers == 2 and "KV_CONFIG" in app.client.own_consumer_streams,
                timeout=12, what="usage settled")


async def objects(pilot) -> None:
    await show(pilot, "objects")
    pane = pilot.app.screen.query_one("ObjectsPane")
    await until(pilot, lambda: pane.store == "FILES", what="store listed")
    # RDL and WORKER: the objects pane's own are counted out
    await until(pilot, lambda: pilot.app.header_info.usage.consumers == 2
                and "OBJ_FILES" in pilot.app.client.own_consumer_streams, timeout=12, what="usage settled")


async def tail(pilot) -> None:
    await show(pilot, "tail")
    app = pilot.app
    # subjects no stream stores: the header's storage figure stays what it was
    app.screen.query_one("#tail-subject").value = "shop.>"
    await pilot.press("enter")
    pane = app.screen.query_one("TailPane")
    await until(pilot, lambda: pane.subject == "shop.>", what="subscribed")
    nc = await nats.connect(app.client.server_summary().client_url)
    for i in range(3):
        await nc.publish(f"shop.{'eu' if i % 2 else 'us'}", f'{{"order": {100 + i}}}'.encode())
    await nc.flush()
    await nc.close()
    log = app.screen.query_one("#tail-log")
    await until(pilot, lambda: len(log.lines) == 3, what="three lines")
    await pilot.press("escape")  # out of the subject field: its cursor would depend on timing
    await until(pilot, lambda: app.focused is not None and app.focused.id == "tail-go", what="focus left the field")


async def connections(pilot) -> None:
    await show(pilot, "connections")
    table = pilot.app.screen.query_one("#conn-table")
    # the app's connection and the pull hand's delivery tap (a connection of its own)
    await until(pilot, lambda: table.row_count == 2, what="the app's connections listed")
    # the row counts at once; the columns are sized to it when the table is idle
    await until(pilot, lambda: table.columns["name"].content_width >= len("natslab ◀ you")
                and table.columns["lang"].content_width >= len("python3"), what="columns sized")
    # and painted so (a loaded machine once showed the row at the header-only widths)
    await until(pilot, lambda: "natslab ◀ you" in screen_text(pilot.app) and "python3" in screen_text(pilot.app),
                what="the row painted at its widths")


PANES = [streams, consumers, pull, publish, request, kv, objects, tail, connections]


async def settled(pilot, timeout: float = 8.0) -> None:
    """The screen no longer changes: no animation pending and two frames a
    poll apart the same (a loaded machine paints late; a fixed pause would
    snapshot whatever it had got to)."""
    await pilot.wait_for_scheduled_animations()
    deadline = asyncio.get_running_loop().time() + timeout
    before = screen_text(pilot.app)
    while asyncio.get_running_loop().time() < deadline:
        await pilot.pause(0.3)
        now = screen_text(pilot.app)
        if now == before:
            return
        before = now
    raise AssertionError("the screen kept changing")


async def on_a_button(pilot, selector: str) -> None:
    """Focus a button of the form: a text field's cursor would blink with timing."""
    pilot.app.screen.query_one(selector).focus()
    await until(pilot, lambda: pilot.app.focused is not None and pilot.app.focused.id == selector.lstrip("#"),
                what="the button focused")


async def stream_form(pilot) -> None:
    await streams(pilot)
    pilot.app.screen.query_one("#streams-table").focus()
    await pilot.press("n")
    await until(pilot, lambda: pilot.app.screen.query("#subjects"), what="the stream form")
    await on_a_button(pilot, "#form-submit")


async def stream_edit_form(pilot) -> None:
    await streams(pilot)
    pilot.app.screen.query_one("#streams-table").focus()
    await pilot.press("e")
    await until(pilot, lambda: pilot.app.screen.query("#subjects"), what="the edit form")
    await on_a_button(pilot, "#form-submit")


async def purge_dialog(pilot) -> None:
    await streams(pilot)
    pilot.app.screen.query_one("#streams-table").focus()
    await pilot.press("p")
    await until(pilot, lambda: pilot.app.screen.query("#keep"), what="the purge dialog")
    await on_a_button(pilot, "#form-submit")


async def delete_confirm(pilot) -> None:
    await streams(pilot)
    pilot.app.screen.query_one("#streams-table").focus()
    await pilot.press("d")
    await until(pilot, lambda: pilot.app.screen.query("#confirm"), what="the confirmation")
    await on_a_button(pilot, "#cancel")


async def consumer_form(pilot) -> None:
    await consumers(pilot)
    pilot.app.screen.query_one("#consumers-table").focus()
    await pilot.press("n")
    await until(pilot, lambda: pilot.app.screen.query("#form-submit"), what="the consumer form")
    await on_a_button(pilot, "#form-submit")


async def nak_delay_dialog(pilot) -> None:
    await pull(pilot)
    await pilot.press("N")
    await until(pilot, lambda: pilot.app.screen.query("#delay"), what="the nak delay dialog")
    await on_a_button(pilot, "#form-submit")


async def bucket_form(pilot) -> None:
    await kv(pilot)
    pilot.app.screen.query_one("#kv-buckets").focus()
    await pilot.press("n")
    await until(pilot, lambda: pilot.app.screen.query("#max_value_size"), what="the bucket form")
    await on_a_button(pilot, "#form-submit")


async def help_screen(pilot) -> None:
    await streams(pilot)
    pilot.app.screen.query_one("#streams-table").focus()
    await pilot.press("question_mark")
    await until(pilot, lambda: "natslab — keys" in screen_text(pilot.app), what="help")


async def backup_dialog(pilot) -> None:
    await streams(pilot)
    pilot.app.screen.query_one("#streams-table").focus()
    await pilot.press("b")
    await until(pilot, lambda: pilot.app.screen.query("#consumers"), what="the backup dialog")
    pilot.app.screen.query_one("#directory").value = "/tmp/backups/ORDERS"  # (the default names the user's data dir)
    await on_a_button(pilot, "#form-submit")


async def restore_dialog(pilot) -> None:
    await streams(pilot)
    pilot.app.screen.query_one("#streams-table").focus()
    await pilot.press("R")
    await until(pilot, lambda: pilot.app.screen.query("#directory"), what="the restore dialog")
    pilot.app.screen.query_one("#directory").value = "/tmp/backups/ORDERS"  # (the default names the user's data dir)
    await on_a_button(pilot, "#form-submit")


async def export_history_dialog(pilot) -> None:
    await consumers(pilot)
    pilot.app.screen.query_one("#consumers-table").focus()
    await pilot.press("E")
    await until(pilot, lambda: pilot.app.screen.query("#export-history-path"), what="the export dialog")
    field = pilot.app.screen.query_one("#export-history-path")
    field.cursor_blink = False  # (its one field keeps the focus)
    field.value = "/tmp/history-ORDERS-RDL.txt"  # (the default names the user's data dir and the time)


async def message_browser(pilot) -> None:
    await streams(pilot)
    pilot.app.screen.query_one("#streams-table").focus()
    await pilot.press("m")
    await until(pilot, lambda: "orders.eu" in screen_text(pilot.app), what="the messages listed")


async def ruler_legend(pilot) -> None:
    await consumers(pilot)
    pilot.app.screen.query_one("#consumers-table").focus()
    await pilot.press("question_mark")
    await until(pilot, lambda: pilot.app.screen.query(".help-legend"), what="the legend over the keys")


FORMS = [stream_form, stream_edit_form, purge_dialog, delete_confirm, consumer_form, nak_delay_dialog,
         bucket_form, help_screen, backup_dialog, restore_dialog, export_history_dialog, message_browser, ruler_legend]


def prepare(url: str) -> None:
    async def run() -> None:
        nc = await nats.connect(url)
        js = nc.jetstream()
        bucket = await js.create_key_value(bucket="CONFIG", history=5)
        await bucket.put("region", b"eu")
        await bucket.put("region", b"us")
        await js.create_object_store("FILES")
        await nc.close()

    seed(url)
    asyncio.run(run())


@pytest.mark.parametrize("step", PANES, ids=[p.__name__ for p in PANES])
def test_pane_at_80x24(snap_compare, monitored_server, step):
    prepare(monitored_server.url)

    async def run_before(pilot):
        await ready(pilot, 4)
        await step(pilot)
        await finish(pilot)
        await settled(pilot)

    assert snap_compare(app_for(monitored_server), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("step", FORMS, ids=[f.__name__ for f in FORMS])
def test_form_at_80x24(snap_compare, monitored_server, step):
    prepare(monitored_server.url)

    async def run_before(pilot):
        await ready(pilot, 4)
        await step(pilot)
        await finish(pilot)
        await settled(pilot)

    assert snap_compare(app_for(monitored_server), terminal_size=SIZE, run_before=run_before)


def test_pull_hand_beside_the_tour_at_80x24(snap_compare, monitored_server):
    """Beside the tour the hand is 48 wide: side by side with the cards the time
    axis had ~8 cells ("|0s  |5s"); narrow, it goes under the cards, whole width."""
    prepare(monitored_server.url)

    async def run_before(pilot):
        app = pilot.app
        await ready(pilot, 4)
        app.action_tour()
        await until(pilot, lambda: len(app.screen.query("#tour")) == 1
                    and app.screen.query_one("#tour").region.width > 0, what="the tour beside the panes")
        await pull(pilot)
        body = app.screen.query_one("#pull-body")
        await until(pilot, lambda: body.has_class("-stacked"), what="the axis under the cards")
        await finish(pilot)
        await settled(pilot)

    assert snap_compare(app_for(monitored_server), terminal_size=SIZE, run_before=run_before)
