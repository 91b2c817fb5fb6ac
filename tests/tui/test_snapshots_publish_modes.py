"""The composer in each of its newer modes at 80x24, after the server
answered: an atomic batch stored, a counter incremented, a schedule refused by
a stream without allow_msg_schedules (its words and the flag to set). Always
on the real nats-server, pinned display as ``test_snapshots``; update with
``pytest tests/tui/test_snapshots_publish_modes.py --snapshot-update``."""

from __future__ import annotations

import asyncio
import json

import nats
import pytest

from .test_snapshots import app_for, finish, ready, until

SIZE = (80, 24)


def prepare(url: str) -> None:
    async def run() -> None:
        nc = await nats.connect(url)
        for name, flags in (("ORDERS", {"allow_atomic": True}), ("COUNTS", {"allow_msg_counter": True}),
                            ("PLAIN", {})):
            body = {"name": name, "subjects": [f"{name.lower()}.>"], **flags}
            await nc.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps(body).encode(), timeout=3)
        await nc.close()

    asyncio.run(run())


FORMS = {
    "batch": ({"pub-subject": "orders.new", "pub-batch-id": "b-1", "pub-msgid": "order-{{n}}"},
              '{"id": 1}\n{"id": 2}\n{"id": 3}', "stored"),
    "counter": ({"pub-subject": "counts.orders", "pub-incr": "+5"}, "", "counter"),
    "schedule": ({"pub-subject": "plain.remind", "pub-sched": "@every 5s", "pub-target": "plain.due",
                  "pub-sched-ttl": "1m"}, "ping", "refused"),
}


@pytest.mark.parametrize("mode", list(FORMS))
def test_composer_mode_at_80x24(snap_compare, nats_server_url, mode):
    prepare(nats_server_url)
    fields, payload, answer = FORMS[mode]

    async def run_before(pilot):
        app = pilot.app
        await ready(pilot, 3)
        app.action_tab("publish")
        await until(pilot, lambda: len(app.screen.query("#pub-subject")) > 0, what="composer")
        await pilot.pause(0.3)
        pane = app.screen.query_one("PublishPane")
        app.screen.query_one("#pub-mode").value = mode
        await until(pilot, lambda: pane.mode == mode, what="mode")
        for field_id, value in fields.items():
            app.screen.query_one(f"#{field_id}").value = value
        app.screen.query_one("#pub-payload").text = payload
        app.screen.query_one("#pub-send").press()
        result = app.screen.query_one("#pub-result")
        await until(pilot, lambda: answer in str(result.render()), what="the answer")
        if answer != "refused":  # the header's storage figure has caught up with what was stored
            await until(pilot, lambda: app.header_info.usage.storage > 0, timeout=12, what="storage in the header")
        app.screen.query_one("#pub-send").focus()  # the footer shows the composer's keys; no cursor blinks
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)
