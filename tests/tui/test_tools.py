"""Publish composer and request-reply tester against a real broker."""

from __future__ import annotations

from textual.widgets import Input, Select, Static, TextArea

from .conftest import connected, screen_text, show_tab, wait_for


async def press(pilot, selector: str) -> None:
    """Press a button as a click would (after hit-testing), without racing layout."""
    await pilot.pause(0.05)
    pilot.app.screen.query_one(selector).press()
    await pilot.pause(0.05)


def text_of(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_publish_through_composer_and_read_back(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "publish")
        app.screen.query_one("#pub-subject", Input).value = "orders.new"
        app.screen.query_one("#pub-headers", TextArea).text = "Tenant: acme\nTenant: beta\nTrace-Id: t-1"
        app.screen.query_one("#pub-payload", TextArea).text = '{"n": {{n}}}'
        app.screen.query_one("#pub-count", Input).value = "3"
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: "PubAck: stream ORDERS, seq 3" in text_of(app, "#pub-result"), what="puback")

        msg = await js.get_msg("ORDERS", 2)
        assert msg.subject == "orders.new" and msg.data == b'{"n": 2}'
        assert msg.headers["Tenant"] == "acme, beta" and msg.headers["Trace-Id"] == "t-1"

        # duplicate detection through Nats-Msg-Id, reported in plain words
        app.screen.query_one("#pub-count", Input).value = "1"
        app.screen.query_one("#pub-msgid", Input).value = "only-once"
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: "seq 4" in text_of(app, "#pub-result"), what="first")
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: "duplicate" in text_of(app, "#pub-result"), what="duplicate")

        # wrong expected last sequence: the server's reason, not a crash
        app.screen.query_one("#pub-msgid", Input).value = ""
        app.screen.query_one("#pub-lastseq", Input).value = "1"
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: "wrong last sequence" in text_of(app, "#pub-result"), what="wrong last seq")

        # no stream for the subject
        app.screen.query_one("#pub-lastseq", Input).value = ""
        app.screen.query_one("#pub-subject", Input).value = "nowhere.x"
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: "no stream matches" in text_of(app, "#pub-result"), what="no stream")


async def test_composer_bad_inputs_show_inline_errors(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "publish")
        subject = app.screen.query_one("#pub-subject", Input)

        await press(pilot, "#pub-send")  # empty subject
        assert "empty" in text_of(app, "#pub-subject-error")

        subject.value = "orders.*"
        await press(pilot, "#pub-send")
        assert "wildcard" in text_of(app, "#pub-subject-error")

        subject.value = "orders.new"
        app.screen.query_one("#pub-headers", TextArea).text = "Good: yes\nthis line has no colon"
        app.screen.query_one("#pub-count", Input).value = "ten"
        app.screen.query_one("#pub-rate", Input).value = "-5"
        await press(pilot, "#pub-send")
        assert text_of(app, "#pub-subject-error") == ""
        assert "line 2" in text_of(app, "#pub-headers-error")
        assert "whole number" in text_of(app, "#pub-count-error")
        assert "positive" in text_of(app, "#pub-rate-error")
        assert "Fix the marked fields" in text_of(app, "#pub-result")
        assert app.is_running

        # a JSON body typed into Headers: the line is named, not nats-py's "invalid header: '{"id"'"
        app.screen.query_one("#pub-count", Input).value = ""
        app.screen.query_one("#pub-rate", Input).value = ""
        app.screen.query_one("#pub-headers", TextArea).text = 'Tenant: acme\n{"id": 1, "total": 10}'
        await press(pilot, "#pub-send")
        error = text_of(app, "#pub-headers-error")
        assert "line 2 is not 'Key: value'" in error and "Payload" in error, error
        assert "invalid header" not in text_of(app, "#pub-result")


async def test_core_publish_reaches_outside_subscriber(make_app, outside):
    got: list = []

    async def collect(msg) -> None:
        got.append(msg)

    sub = await outside.subscribe("greet.*", cb=collect)
    await outside.flush()
    await outside.flush()
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "publish")
        app.screen.query_one("#pub-subject", Input).value = "greet.world"
        app.screen.query_one("#pub-mode", Select).value = "core"
        app.screen.query_one("#pub-payload", TextArea).text = "hello"
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: len(got) == 1, what="core message")
        assert got[0].data == b"hello"
    await sub.unsubscribe()


async def test_request_mock_responder_and_missing_one(make_app):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "request")
        # a request nobody answers
        app.screen.query_one("#req-subject", Input).value = "svc.missing"
        await press(pilot, "#req-send")
        await wait_for(pilot, lambda: "no responders" in text_of(app, "#req-result"), what="no responders")

        # start an echo mock and ask it
        app.screen.query_one("#mock-subject", Input).value = "svc.echo"
        await press(pilot, "#mock-start")
        pane = app.screen.query_one("RequestPane")
        await wait_for(pilot, lambda: "svc.echo" in pane.responders, what="mock started")
        app.screen.query_one("#req-subject", Input).value = "svc.echo"
        app.screen.query_one("#req-payload", TextArea).text = "shipped order 4711"
        app.screen.query_one("#req-count", Input).value = "3"
        await press(pilot, "#req-send")
        await wait_for(pilot, lambda: len(pane.latencies) == 3, what="three replies")
        assert "shipped order 4711" in text_of(app, "#req-result")
        assert "p50" in str(app.screen.query_one("#req-stats").render())
        assert pane.responders["svc.echo"].handled == 3

        # a silent mock: the requester times out, in plain words
        app.screen.query_one("#mock-subject", Input).value = "svc.silent"
        app.screen.query_one("#mock-kind", Select).value = "silence"
        await press(pilot, "#mock-start")
        await wait_for(pilot, lambda: "svc.silent" in pane.responders, what="silent mock")
        app.screen.query_one("#req-subject", Input).value = "svc.silent"
        app.screen.query_one("#req-timeout", Input).value = "300ms"
        app.screen.query_one("#req-count", Input).value = "1"
        await press(pilot, "#req-send")
        await wait_for(pilot, lambda: "timed out" in text_of(app, "#req-result"), what="timeout")

        app.screen.query_one("#req-timeout", Input).value = "soon"
        await press(pilot, "#req-send")
        assert "not a duration" in text_of(app, "#req-timeout-error")


async def test_kv_watch_shows_outside_changes(make_app, outside):
    js = outside.jetstream()
    kv = await js.create_key_value(bucket="CONFIG", history=5)
    await kv.put("region", b"eu")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        app.jump_to_bucket("CONFIG")
        await wait_for(pilot, lambda: len(app.screen.query("KvPane")) > 0, what="KV pane mounted")
        pane = app.screen.query_one("KvPane")
        await wait_for(pilot, lambda: pane.bucket == "CONFIG", what="bucket selected")
        await wait_for(pilot, lambda: "region" in pane.entries, what="key listed")
        keys = app.screen.query_one("#kv-keys")

        await kv.put("region", b"us")  # another program changes the key
        await wait_for(pilot, lambda: keys.value("region", "rev") == "2", what="live update")
        await kv.put("color", b"blue")
        await wait_for(pilot, lambda: keys.value("color", "op") == "PUT", what="new key")
        await kv.delete("color")
        await wait_for(pilot, lambda: keys.value("color", "op") == "DEL", what="delete seen")

        # filter as you type
        app.screen.query_one("#kv-filter", Input).value = "reg"
        await wait_for(pilot, lambda: keys.row_count == 1, what="filtered")
        # the cursor on the one row left fills the key and its revision in: wait for that, or it
        # lands after the stale revision typed below and overwrites it (a stressed run saw it)
        await wait_for(pilot, lambda: pane.key == "region"
                       and app.screen.query_one("#kv-rev", Input).value == "2", what="region picked")

        # update with a stale revision: plain words, nothing crashes
        app.screen.query_one("#kv-key", Input).value = "region"
        app.screen.query_one("#kv-rev", Input).value = "1"
        app.screen.query_one("#kv-edit", TextArea).text = "apac"
        await press(pilot, "#kv-update")
        await wait_for(pilot, lambda: "not the key's latest" in text_of(app, "#kv-result"), what="stale revision")
        app.screen.query_one("#kv-rev", Input).value = "2"
        await press(pilot, "#kv-update")
        await wait_for(pilot, lambda: "revision 5" in text_of(app, "#kv-result"), what="update ok")
        assert (await kv.get("region")).value == b"apac"

        app.screen.query_one("#kv-key", Input).value = "bad key!"
        await press(pilot, "#kv-put")
        assert "not a valid key" in text_of(app, "#kv-result")


async def test_live_tail_shows_outside_messages_and_bad_subject(make_app, outside):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "tail")
        pane = app.screen.query_one("TailPane")
        app.screen.query_one("#tail-subject", Input).value = "orders..x"
        await press(pilot, "#tail-go")
        assert "empty token" in str(app.screen.query_one("#tail-subject-error").render())

        app.screen.query_one("#tail-subject", Input).value = "orders.>"
        await press(pilot, "#tail-go")
        await wait_for(pilot, lambda: pane.subject == "orders.>", what="subscribed")
        for i in range(5):
            await outside.publish("orders.new", f"order-{i}".encode(), headers={"K": "v"})
        await outside.flush()
        log = app.screen.query_one("#tail-log")
        await wait_for(pilot, lambda: len(log.lines) == 5, what="five lines")
        assert pane.received == 5


async def test_connections_pane_lists_outside_client(make_app, broker, outside):
    app = make_app(monitor_url=f"http://127.0.0.1:{broker.http_port}" if broker.http_port else None)
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "connections")
        pane = app.screen.query_one("ConnectionsPane")
        table = pane.query_one("#conn-table")
        if broker.http_port is None:
            return
        await wait_for(pilot, lambda: any(table.value(k, "name") == "outside" for k in table._order), what="outside listed")
        names = {table.value(k, "name") for k in table._order}
        assert {"natslab ◀ you", "outside"} <= names


async def test_connections_pane_says_plainly_when_unreachable(make_app):
    app = make_app(monitor_url="http://127.0.0.1:9")
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "connections")
        status = app.screen.query_one("#conn-status")
        await wait_for(pilot, lambda: "not reachable" in str(status.render()), what="unreachable message")


async def test_object_store_put_get_and_outside_change(make_app, outside, tmp_path):
    src = tmp_path / "report.bin"
    src.write_bytes(bytes(range(256)) * 1200)  # 300 KiB: several chunks
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "objects")
        pane = app.screen.query_one("ObjectsPane")
        app.screen.query_one("#obj-new", Input).value = "bad name"
        await press(pilot, "#obj-create")
        assert "must not contain" in text_of(app, "#obj-result")
        app.screen.query_one("#obj-new", Input).value = "FILES"
        await press(pilot, "#obj-create")
        await wait_for(pilot, lambda: pane.store == "FILES", what="store selected")

        app.screen.query_one("#obj-path", Input).value = str(tmp_path / "missing.bin")
        await press(pilot, "#obj-put")
        assert "no such file" in text_of(app, "#obj-result")

        app.screen.query_one("#obj-path", Input).value = str(src)
        await press(pilot, "#obj-put")
        await wait_for(pilot, lambda: "report.bin" in pane.objects, what="object listed")
        assert pane.objects["report.bin"].size == src.stat().st_size and pane.objects["report.bin"].chunks > 1

        dest = tmp_path / "copy.bin"
        app.screen.query_one("#obj-path", Input).value = str(dest)
        app.screen.query_one("#obj-name", Input).value = "report.bin"
        await press(pilot, "#obj-get")
        await wait_for(pilot, lambda: "digest checked" in text_of(app, "#obj-result"), what="get done")
        assert dest.read_bytes() == src.read_bytes()

        obs = await outside.jetstream().object_store("FILES")
        await obs.put("from-outside.txt", b"hello")
        await wait_for(pilot, lambda: "from-outside.txt" in pane.objects, what="outside put appears")


async def test_put_a_key_create_a_store_start_a_mock_with_one_key_each(make_app, outside):
    """ctrl+s puts the KV key from any field, n then Enter creates an object
    store (a one-field form), ctrl+r starts a mock responder (Enter in its
    subject too); each key is in the help."""
    js = outside.jetstream()
    kv = await js.create_key_value(bucket="CONFIG")
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        app.jump_to_bucket("CONFIG")
        await wait_for(pilot, lambda: app.screen.query_one("KvPane").bucket == "CONFIG", what="CONFIG selected")
        app.screen.query_one("#kv-buckets").focus()
        await pilot.press("ctrl+s")  # no key yet: the key field takes it (it was an error, focus elsewhere)
        assert app.focused is app.screen.query_one("#kv-key", Input)
        assert "Type the key" in str(app.screen.query_one("#kv-result").render())
        await pilot.press(*"region")
        app.screen.query_one("#kv-edit", TextArea).text = "eu-west"
        await pilot.press("ctrl+s")

        async def stored() -> bytes | None:
            try:
                return (await kv.get("region")).value
            except Exception:
                return None

        for _ in range(100):
            if await stored() == b"eu-west":
                break
            await pilot.pause(0.05)
        assert await stored() == b"eu-west"

        await show_tab(app, pilot, "objects")
        await pilot.press("escape", "n")
        new = app.screen.query_one("#obj-new", Input)
        assert app.focused is new
        await pilot.press(*"REPORTS", "enter")
        stores = app.screen.query_one("#obj-stores")
        await wait_for(pilot, lambda: stores.row_count == 1, timeout=8, what="the store listed")
        assert (await js.object_store("REPORTS")) is not None

        await show_tab(app, pilot, "request")
        await pilot.press("escape", "ctrl+r")  # no subject yet: the mock's subject field takes it
        assert app.focused is app.screen.query_one("#mock-subject", Input)
        await pilot.press(*"svc.echo", "enter")
        table = app.screen.query_one("#mock-table")
        await wait_for(pilot, lambda: table.row_count == 1, what="the mock listed")
        reply = await outside.request("svc.echo", b"hello", timeout=3)
        assert reply.data == b"hello"

        await pilot.press("escape", "question_mark")
        await wait_for(pilot, lambda: "Start mock" in screen_text(app), what="ctrl+r in the help")


async def test_request_stats_belong_to_the_subject_requested(make_app, outside):
    """p50/p99 and the sparkline are the subject's in the Subject field:
    requests to a quick and a 0.3 s slow responder do not mix, and switching
    the subject shows that subject's figures (none for one never asked)."""
    import asyncio
    import re

    from natslab.tui.panes.request.pane import percentile

    async def quick(msg):
        await msg.respond(b"quick")

    async def slow(msg):
        await asyncio.sleep(0.3)  # the responder's work, not the test waiting
        await msg.respond(b"slow")

    await outside.subscribe("svc.quick", cb=quick)
    await outside.subscribe("svc.slow", cb=slow)
    await outside.flush()
    await outside.flush()
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "request")
        pane = app.screen.query_one("RequestPane")
        subject = app.screen.query_one("#req-subject", Input)
        stats = lambda: str(app.screen.query_one("#req-stats").render())  # noqa: E731

        for name, count in (("svc.quick", 3), ("svc.slow", 2)):
            subject.value = name
            app.screen.query_one("#req-count", Input).value = str(count)
            await press(pilot, "#req-send")
            await wait_for(pilot, lambda: len(pane.latencies) == count, what=f"{count} replies from {name}")
            await wait_for(pilot, lambda: stats().startswith(f"{name}: {count} replies"), what=f"{name}'s stats")

        def figures() -> tuple[float, float]:
            found = re.search(r"p50 ([\d.]+) ms · p99 ([\d.]+) ms", stats())
            assert found, stats()
            return float(found.group(1)), float(found.group(2))

        slow_values = list(pane.latencies_by_subject["svc.slow"])
        assert len(slow_values) == 2 and min(slow_values) >= 300
        assert figures() == (round(percentile(slow_values, 50), 2), round(percentile(slow_values, 99), 2))
        assert list(app.screen.query_one("#req-spark").data) == slow_values

        subject.value = "svc.quick"
        await wait_for(pilot, lambda: stats().startswith("svc.quick: 3 replies"), what="back to svc.quick's stats")
        quick_values = list(pane.latencies_by_subject["svc.quick"])
        assert len(quick_values) == 3
        assert figures() == (round(percentile(quick_values, 50), 2), round(percentile(quick_values, 99), 2))
        assert list(app.screen.query_one("#req-spark").data) == quick_values

        subject.value = "svc.never"
        await wait_for(pilot, lambda: stats() == "", what="no stats for a subject never requested")
        assert list(app.screen.query_one("#req-spark").data) == []
