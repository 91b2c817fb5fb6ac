"""The message browser says what the newer JetStream messages are: a
counter's value and the increment, a schedule with its target and next fire
time, a message a schedule produced, an atomic batch's messages. Against a
real broker (natslab's, or nats-server with NATSLAB_TUI_BROKER=nats-server)."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime, timedelta, timezone

from textual.widgets import DataTable, Static

from .conftest import connected, screen_text, wait_for


async def api(nc, subject: str, body: dict) -> dict:
    resp = json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=3)).data)
    assert "error" not in resp, resp
    return resp


async def pub(nc, subject: str, body: bytes = b"", **headers: str) -> dict:
    resp = json.loads((await nc.request(subject, body, timeout=3, headers=headers or None)).data or b"{}")
    assert "error" not in resp, resp
    return resp


async def browse(app, pilot, stream: str, rows: int) -> DataTable:
    await connected(app, pilot)
    app.jump_to_stream(stream)
    await pilot.pause(0.3)
    await pilot.press("m")
    table = app.screen.query_one("#browser-list", DataTable)
    await wait_for(pilot, lambda: table.row_count == rows, what=f"{rows} messages listed")
    return table


def detail(app) -> str:
    return str(app.screen.query_one("#browser-headers", Static).render())


def subject_cell(table: DataTable, row: int) -> str:
    return str(table.get_row_at(row)[1])


async def show_row(pilot, table: DataTable, row: int) -> None:
    table.move_cursor(row=row)
    await pilot.pause(0.1)


async def test_counter_messages_show_value_and_increment(make_app, outside):
    await api(outside, "$JS.API.STREAM.CREATE.COUNTS", {"name": "COUNTS", "subjects": ["counts.>"],
                                                         "allow_msg_counter": True})
    for by in ("+1", "+5", "-2"):
        await pub(outside, "counts.orders", **{"Nats-Incr": by})
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        table = await browse(app, pilot, "COUNTS", 3)
        assert [subject_cell(table, r) for r in range(3)] == ["counts.orders  = 1", "counts.orders  = 6",
                                                             "counts.orders  = 4"]
        await show_row(pilot, table, 2)
        text = detail(app)
        assert "counter: counts.orders = 4" in text and "increment: -2" in text
        # a plain stream keeps an empty Nats-Incr as an ordinary header: no counter there
        await api(outside, "$JS.API.STREAM.CREATE.PLAIN", {"name": "PLAIN", "subjects": ["plain.>"]})
        await pub(outside, "plain.a", b'{"val":"3"}', **{"Nats-Incr": ""})
        table = await browse(app, pilot, "PLAIN", 1)
        assert subject_cell(table, 0) == "plain.a" and "counter" not in detail(app)


async def test_schedules_and_what_they_produce(make_app, outside):
    await api(outside, "$JS.API.STREAM.CREATE.SCHED", {"name": "SCHED", "subjects": ["sched.>"],
                                                       "allow_msg_schedules": True})
    at = (datetime.now(timezone.utc) + timedelta(hours=2)).replace(microsecond=0)
    await pub(outside, "sched.later", b"later", **{"Nats-Schedule": at.strftime("@at %Y-%m-%dT%H:%M:%SZ"),
                                                    "Nats-Schedule-Target": "sched.out"})
    await pub(outside, "sched.hourly", b"h", **{"Nats-Schedule": "@every 1h", "Nats-Schedule-Target": "sched.out"})
    await pub(outside, "sched.cron", b"c", **{"Nats-Schedule": "0 30 9 * * mon-fri", "Nats-Schedule-Target": "sched.out",
                                               "Nats-Schedule-Time-Zone": "Europe/Amsterdam"})
    soon = datetime.now(timezone.utc) + timedelta(seconds=0.5)
    await pub(outside, "sched.once", b"now", **{"Nats-Schedule": soon.strftime("@at %Y-%m-%dT%H:%M:%S.%fZ"),
                                                 "Nats-Schedule-Target": "sched.fired"})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the one-off fires, and its schedule is removed
        info = await api(outside, "$JS.API.STREAM.INFO.SCHED", {})
        if info["state"]["last_seq"] == 5 and info["state"]["messages"] == 4:
            break
        await asyncio.sleep(0.05)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        table = await browse(app, pilot, "SCHED", 4)
        cells = [subject_cell(table, r) for r in range(table.row_count)]
        assert cells == ["sched.later  schedule", "sched.hourly  schedule", "sched.cron  schedule",
                         "sched.fired  scheduled"]
        await show_row(pilot, table, 0)
        text = detail(app)
        local = at.astimezone()
        when = local.strftime("%H:%M:%S" if local.date() == datetime.now().astimezone().date() else "%Y-%m-%d %H:%M:%S")
        assert "schedule: @at " in text and "(once)" in text and "target: sched.out" in text
        assert f"next fire: {when} (in 12" in text or f"next fire: {when} (in 11" in text, text
        await show_row(pilot, table, 1)
        text = detail(app)
        assert "schedule: @every 1h  (repeats)" in text and "(in 60 min)" in text, text
        await show_row(pilot, table, 2)
        text = detail(app)
        assert "(repeats)" in text and "time zone: Europe/Amsterdam" in text and "next fire: " in text
        assert ":30:00" in text  # 09:30 in Amsterdam, shown in local time
        await show_row(pilot, table, 3)
        text = detail(app)
        assert "produced by schedule: sched.once" in text and "next run: none: a one-off" in text


async def test_batch_messages_are_marked(make_app, outside):
    await api(outside, "$JS.API.STREAM.CREATE.ORDERS", {"name": "ORDERS", "subjects": ["orders.>"], "allow_atomic": True})
    await pub(outside, "orders.a", b"x", **{"Nats-Batch-Id": "b1", "Nats-Batch-Sequence": "1"})
    await pub(outside, "orders.b", b"y", **{"Nats-Batch-Id": "b1", "Nats-Batch-Sequence": "2", "Nats-Batch-Commit": "1"})
    await pub(outside, "orders.c", b"plain")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        table = await browse(app, pilot, "ORDERS", 3)
        assert [subject_cell(table, r) for r in range(3)] == ["orders.a  batch", "orders.b  batch end", "orders.c"]
        await show_row(pilot, table, 1)
        text = detail(app)
        assert "atomic batch: b1" in text and "batch message: 2  (the commit: the batch's last)" in text
        assert "batch end" in screen_text(app)  # seen at 80x24
