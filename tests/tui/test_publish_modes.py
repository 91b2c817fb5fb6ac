"""The composer's newer JetStream publishes against a real broker: an atomic
batch, a counter increment and a schedule, each answered in plain words, and
each refusal (a stream without the flag, a value the server will not take)
shown in the server's words with what to change. Runs on natslab's broker
and, with NATSLAB_TUI_BROKER=nats-server, on nats-server 2.15."""

from __future__ import annotations

import asyncio
import base64
import json
import time

from textual.widgets import Input, Select, Static, TextArea

from .conftest import connected, show_tab, wait_for
from .test_tools import press, text_of


async def api(nc, subject: str, body: dict | None = None) -> dict:
    msg = await nc.request(subject, json.dumps(body).encode() if body is not None else b"", timeout=3)
    return json.loads(msg.data)


async def make_stream(nc, name: str, subjects: list[str], **flags) -> None:
    resp = await api(nc, f"$JS.API.STREAM.CREATE.{name}", {"name": name, "subjects": subjects, **flags})
    assert "error" not in resp, resp


async def stream_msgs(nc, name: str) -> int:
    return (await api(nc, f"$JS.API.STREAM.INFO.{name}"))["state"]["messages"]


async def get(nc, stream: str, **query) -> dict | None:
    resp = await api(nc, f"$JS.API.STREAM.MSG.GET.{stream}", query)
    if "error" in resp:
        return None
    m = resp["message"]
    return {"seq": m["seq"], "data": base64.b64decode(m.get("data") or ""),
            "hdrs": base64.b64decode(m.get("hdrs") or b"").decode()}


def field_error(app, field_id: str) -> str:
    box = app.screen.query_one(f"#{field_id}-error", Static)
    return str(box.render()) if box.has_class("-shown") else ""


async def composer(app, pilot, mode: str):
    await connected(app, pilot)
    await show_tab(app, pilot, "publish")
    pane = app.screen.query_one("PublishPane")
    app.screen.query_one("#pub-mode", Select).value = mode
    await wait_for(pilot, lambda: pane.mode == mode, what=f"{mode} mode")
    return pane


def fill(app, **fields: str) -> None:
    for field_id, value in fields.items():
        box = app.screen.query_one(f"#{field_id.replace('_', '-')}")
        if isinstance(box, TextArea):
            box.text = value
        else:
            box.value = value


async def publish_and_read(app, pilot, expect: str, what: str) -> str:
    app.screen.query_one("#pub-result", Static).update("")
    await press(pilot, "#pub-send")
    await wait_for(pilot, lambda: expect in text_of(app, "#pub-result"), what=what)
    return text_of(app, "#pub-result")


async def test_atomic_batch_stored_together_and_refused_whole(make_app, outside):
    await make_stream(outside, "ORDERS", ["orders.>"], allow_atomic=True)
    await make_stream(outside, "PLAIN", ["plain.>"])
    await outside.request("orders.old", b"before", timeout=3)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await composer(app, pilot, "batch")
        fill(app, pub_subject="orders.new", pub_payload="first\nsecond\n\nthird", pub_batch_id="b-1")
        said = await publish_and_read(app, pilot, "stored", "batch stored")
        assert said == "batch of 3 stored as seq 2–4 in ORDERS (batch id b-1)"
        assert [(await get(outside, "ORDERS", seq=s))["data"] for s in (2, 3, 4)] == [b"first", b"second", b"third"]
        last = await get(outside, "ORDERS", seq=4)
        assert "Nats-Batch-Id: b-1" in last["hdrs"] and "Nats-Batch-Commit: 1" in last["hdrs"]

        # N copies of a template, with a message id per copy; the batch id is made up
        fill(app, pub_payload="copy {{n}}", pub_batch_count="2", pub_batch_id="", pub_msgid="m-{{n}}")
        said = await publish_and_read(app, pilot, "stored", "copies stored")
        assert said.startswith("batch of 2 stored as seq 5–6 in ORDERS (batch id natslab-")
        m6 = await get(outside, "ORDERS", seq=6)
        assert m6["data"] == b"copy 2" and "Nats-Msg-Id: m-2" in m6["hdrs"]

        # a message id used twice in one batch: the commit is refused, nothing is stored
        fill(app, pub_msgid="same")
        said = await publish_and_read(app, pilot, "refused", "duplicate refused")
        assert "stream ORDERS refused the batch at its commit: atomic publish batch contains duplicate " \
               "message id (400/10201)" in said and "Nothing of the batch was stored" in said
        assert "duplicate message id" in field_error(app, "pub-msgid")
        assert await stream_msgs(outside, "ORDERS") == 6

        # a stream without allow_atomic: refused at the first message, and the flag is named
        fill(app, pub_subject="plain.x", pub_msgid="")
        said = await publish_and_read(app, pilot, "refused", "disabled refused")
        assert "stream PLAIN refused the batch at message 1 of 2: atomic publish is disabled (400/10174)" in said
        assert "allow_atomic: true" in said
        assert await stream_msgs(outside, "PLAIN") == 0

        # no stream at all for the subject
        fill(app, pub_subject="nowhere.x")
        said = await publish_and_read(app, pilot, "no stream", "no stream")
        assert said == "no stream matches this subject (no responders). Nothing of the batch was stored."

        # the form's own checks come first: nothing to send
        fill(app, pub_subject="orders.new", pub_batch_count="", pub_payload="\n \n")
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: "N copies" in field_error(app, "pub-batch-count"), what="no messages")


async def test_counter_increments_and_refusals(make_app, outside):
    await make_stream(outside, "COUNTS", ["counts.>"], allow_msg_counter=True)
    await make_stream(outside, "PLAIN", ["plain.>"])
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await composer(app, pilot, "counter")
        assert not app.screen.query_one("#pub-payload-cell").display or \
            app.screen.query_one("#pub-payload-cell").styles.display == "none"
        fill(app, pub_subject="counts.orders", pub_incr="+5")
        assert await publish_and_read(app, pilot, "counter", "first") == "counter counts.orders = 5 (+5) · COUNTS seq 1"
        fill(app, pub_incr="-2")
        assert "= 3 (-2)" in await publish_and_read(app, pilot, "counter", "second")
        fill(app, pub_incr="")  # +1 when left empty
        assert "= 4 (+1) · COUNTS seq 3" in await publish_and_read(app, pilot, "counter", "third")
        big = "123456789012345678901234567890"
        fill(app, pub_incr=big)
        assert f"= {int(big) + 4} " in await publish_and_read(app, pilot, "counter", "big")
        assert json.loads((await get(outside, "COUNTS", last_by_subj="counts.orders"))["data"]) == \
            {"val": str(int(big) + 4)}

        # a duplicate increment is not counted again
        fill(app, pub_incr="1", pub_msgid="inc-1")
        await publish_and_read(app, pilot, "counter", "with id")
        said = await publish_and_read(app, pilot, "duplicate", "duplicate")
        assert "not counted again" in said

        # the server reads the increment and says why it will not
        fill(app, pub_incr="1.5", pub_msgid="")
        said = await publish_and_read(app, pilot, "refused", "bad increment")
        assert "message counter increment is invalid (400/10171)" in said and "whole number" in said
        assert "increment is invalid" in field_error(app, "pub-incr")

        # a stream without allow_msg_counter
        fill(app, pub_subject="plain.count", pub_incr="1")
        said = await publish_and_read(app, pilot, "refused", "disabled")
        assert "stream PLAIN refused the increment: message counters is disabled (400/10168)" in said
        assert "allow_msg_counter: true" in said

        # a plain JetStream publish to a counter stream: the hint points at the counter mode
        app.screen.query_one("#pub-mode", Select).value = "js"
        fill(app, pub_subject="counts.orders", pub_payload="")
        said = await publish_and_read(app, pilot, "failed", "js publish to a counter")
        assert "message counter increment is missing (400/10169)" in said and "counter mode" in said
        assert await stream_msgs(outside, "PLAIN") == 0


async def test_schedule_fires_and_refusals(make_app, outside):
    await make_stream(outside, "SCHED", ["sched.>"], allow_msg_schedules=True)
    await make_stream(outside, "PLAIN", ["plain.>"])
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await composer(app, pilot, "schedule")
        fill(app, pub_subject="sched.once", pub_payload="due now", pub_sched="+1s", pub_target="sched.due")
        start = time.monotonic()
        said = await publish_and_read(app, pilot, "scheduled", "one-off stored")
        assert said.startswith("scheduled for ") and "→ sched.due · schedule stored on sched.once in SCHED seq 1" in said
        stored = await get(outside, "SCHED", last_by_subj="sched.once")
        assert "Nats-Schedule: @at 20" in stored["hdrs"] and "Nats-Schedule-Target: sched.due" in stored["hdrs"]
        # it fires: the stream stores the payload on the target
        deadline = time.monotonic() + 6
        fired = None
        while fired is None and time.monotonic() < deadline:
            fired = await get(outside, "SCHED", last_by_subj="sched.due")
            await asyncio.sleep(0.1)
        assert fired is not None and fired["data"] == b"due now", "the schedule did not fire"
        assert time.monotonic() - start >= 0.7

        # a repeating one: the answer says when it fires next
        fill(app, pub_subject="sched.tick", pub_sched="@every 5s", pub_payload="tick")
        said = await publish_and_read(app, pilot, "schedule @every 5s", "every stored")
        assert "next fire " in said and "→ sched.due" in said

        # refusals: each in the server's words, next to the field it is about
        cases = [
            ({"pub_sched": "@every 1x"}, "pub-sched", "message schedules pattern is invalid (400/10189)", "six-field cron"),
            ({"pub_sched": "@every 5s", "pub_target": "sched.tick"}, "pub-target",
             "message schedules target is invalid (400/10190)", "same stream"),
            ({"pub_target": "sched.due", "pub_sched_ttl": "5s"}, "pub-sched-ttl",
             "per-message TTL is disabled (400/10166)", "allow_msg_ttl: true"),
            ({"pub_sched_ttl": "", "pub_subject": "plain.s", "pub_target": "plain.t"}, "",
             "stream PLAIN refused the schedule: message schedules is disabled (400/10188)", "allow_msg_schedules: true"),
        ]
        for fields, field_id, words, hint in cases:
            fill(app, **fields)
            said = await publish_and_read(app, pilot, "refused", words)
            assert words in said and hint in said, said
            if field_id:
                assert field_error(app, field_id), field_id
        assert await stream_msgs(outside, "PLAIN") == 0

        # the form's checks: a schedule needs a pattern and a target
        fill(app, pub_sched="", pub_target="")
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: field_error(app, "pub-sched") and field_error(app, "pub-target"), what="marked")


async def test_mode_by_keyboard_and_recall(make_app, outside):
    """ctrl+o steps through the modes from any field; a recalled publish brings its mode and fields back."""
    await make_stream(outside, "COUNTS", ["counts.>"], allow_msg_counter=True)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = await composer(app, pilot, "js")
        subject = app.screen.query_one("#pub-subject", Input)
        subject.focus()
        seen = []
        for _ in range(5):
            await pilot.press("ctrl+o")
            await pilot.pause(0.05)
            seen.append(pane.mode)
        assert seen == ["core", "batch", "counter", "schedule", "js"]
        assert app.focused is subject  # the field keeps the focus
        # the field with the focus goes with its mode: the focus moves to the subject
        app.screen.query_one("#pub-payload", TextArea).focus()
        await pilot.press("ctrl+o", "ctrl+o")
        assert pane.mode == "batch" and app.focused is app.screen.query_one("#pub-payload")
        await pilot.press("ctrl+o")
        assert pane.mode == "counter" and app.focused is subject
        # keys faster than the list reports its changes: the late reports do not switch back
        for _ in range(5):
            pane.action_next_mode()
        await pilot.pause(0.3)
        assert pane.mode == "counter" and app.screen.query_one("#pub-mode", Select).value == "counter"
        await pilot.press(*"counts.a")
        app.screen.query_one("#pub-incr", Input).value = "7"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "= 7" in text_of(app, "#pub-result"), what="counted")
        await pilot.press("ctrl+y")  # copy as code: the headers nats-py has no API for
        assert "headers={'Nats-Incr': '7'}" in text_of(app, "#pub-result")
        await pilot.press("ctrl+o")
        app.screen.query_one("#pub-incr", Input).value = ""
        history = app.screen.query_one("#pub-history")
        history.focus()
        history.highlighted = 0
        await pilot.press("enter")
        await wait_for(pilot, lambda: pane.mode == "counter", what="mode recalled")
        assert app.screen.query_one("#pub-incr", Input).value == "7" and subject.value == "counts.a"
