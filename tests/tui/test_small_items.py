"""The issue's smaller items: publish history per store and never for a
throwaway broker, the monitoring port flag and header, ? in the help, the
tail of '>' without the app's own polling, "you" in Connections, the empty
subjects case said aloud, a huge payload cleared in one key."""

from __future__ import annotations

import json

from textual.widgets import Input, TextArea

from natslab.tui.app import NatslabApp
from natslab.tui.broker import BrokerSpec
from natslab.tui.cli import build_parser, resolve
from natslab.tui.widgets.live_table import LiveTable

from .conftest import connected, show_tab, wait_for
from .test_tools import press, text_of


def history_files(tmp_path) -> list:
    return sorted((tmp_path / "data").rglob("*.json"))


async def test_memory_broker_writes_no_publish_history(tmp_path):
    app = NatslabApp(broker=BrokerSpec(port=0, memory=True, monitor_port=0), remember_theme=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, timeout=15, what="embedded up")
        await show_tab(app, pilot, "publish")
        app.screen.query_one("#pub-subject", Input).value = "greet.x"
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: "no stream" in text_of(app, "#pub-result"), what="published")
        assert len(app.screen.query_one("PublishPane").history) == 1  # kept for the session
        await app.shutdown()
    assert history_files(tmp_path) == []


async def test_publish_history_is_per_store_bounded_and_skips_huge_payloads(make_app, tmp_path, broker_url):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "publish")
        pane = app.screen.query_one("PublishPane")
        app.screen.query_one("#pub-mode").value = "core"
        app.screen.query_one("#pub-subject", Input).value = "greet.small"
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: "Published" in text_of(app, "#pub-result"), what="small one")
        app.screen.query_one("#pub-subject", Input).value = "greet.huge"
        app.screen.query_one("#pub-payload", TextArea).text = "x" * 200_000
        app.screen.query_one("#pub-result").update("")
        await press(pilot, "#pub-send")
        await wait_for(pilot, lambda: "Published" in text_of(app, "#pub-result"), what="huge one")
        for n in range(60):
            pane.history.insert(0, {"subject": f"s.{n}", "payload": "", "headers": "", "mode": "core"})
        app.screen.query_one("#pub-payload", TextArea).text = "again"
        await press(pilot, "#pub-send")
        await pilot.pause(0.3)
    (path,) = history_files(tmp_path)
    saved = json.loads(path.read_text())
    assert len(saved) == 50 and path.stat().st_size < 16_000
    assert "greet.huge" not in {e["subject"] for e in saved[1:]} and saved[0]["payload"] == "again"
    assert str(broker_url.rsplit(":", 1)[1]) in path.name  # named after the server's URL

    other = NatslabApp(broker=BrokerSpec(port=0, store_dir=tmp_path / "store-b"), remember_theme=False)
    assert other.publish_history_path != path and "store_b" in other.publish_history_path.name


def test_monitor_port_flag():
    _, spec = resolve(build_parser().parse_args(["--monitor-port", "8333"]))
    assert spec.monitor_port == 8333
    _, spec = resolve(build_parser().parse_args(["--monitor-port", "0"]))
    assert spec.monitor_port == 0


async def test_embedded_header_shows_the_monitoring_port(tmp_path):
    from natslab.tui.broker import choose_port

    port = choose_port("127.0.0.1", 18222)
    app = NatslabApp(broker=BrokerSpec(port=0, memory=True, monitor_port=port), remember_theme=False)
    async with app.run_test(size=(160, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, timeout=15, what="embedded up")
        await pilot.pause(0.1)
        assert f"monitor 127.0.0.1:{port}" in str(app.screen.query_one("#header").render())
        assert app.monitor_url == f"http://127.0.0.1:{port}"
        await app.shutdown()


async def test_help_shows_question_mark(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: hasattr(app.screen, "bindings"), what="help")
        keys = {d: k for k, d, _ in app.screen.bindings}
        assert keys["Help"] == "?, f1"  # one row: ? first, and f1, which works in text fields too
        assert not any("question_mark" in k for k, _, _ in app.screen.bindings)


async def test_tail_of_everything_hides_the_apps_own_polling(make_app, outside):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "tail")
        pane = app.screen.query_one("TailPane")
        app.screen.query_one("#tail-subject", Input).value = ">"
        await press(pilot, "#tail-go")
        await wait_for(pilot, lambda: pane.subject == ">", what="subscribed")
        await outside.publish("orders.new", b"from another program")
        await outside.request("$JS.API.INFO", b"", timeout=2)  # another program's API call shows
        log = app.screen.query_one("#tail-log")
        await wait_for(pilot, lambda: pane.hidden >= 4, timeout=8, what="own polls hidden")  # 1 s usage polls
        lines = [line.text for line in log.lines]
        assert any("from another program" in line for line in lines)
        assert sum(line.startswith("$JS.API.INFO") for line in lines) == 1  # the other program's only
        assert not any("natslab_" in line for line in lines)
        assert "natslab's own hidden" in str(app.screen.query_one("#tail-status").render())
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: sum(line.text.startswith("$JS.API.INFO") for line in log.lines) >= 2,
                       timeout=6, what="own polls shown")


async def test_connections_pane_marks_this_is_you(make_app, broker, outside):
    app = make_app(monitor_url=f"http://127.0.0.1:{broker.http_port}")
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "connections")
        table = app.screen.query_one("#conn-table", LiveTable)
        me = str(app.client.client_id)
        await wait_for(pilot, lambda: table.row_count >= 2 and table.value(me, "name") is not None, what="listed")
        assert table.value(me, "name") == "natslab ◀ you"
        assert [k for k in table._order if "you" in table.value(k, "name")] == [me]


async def test_empty_subjects_says_it_uses_the_stream_name(make_app, outside):
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        await pilot.press("n")
        await wait_for(pilot, lambda: app.screen.query("#subjects"), what="form")
        assert "empty = the stream's name" in str(app.screen.query_one("#field-subjects .field-label").render())
        app.screen.query_one("#name", Input).value = "PLAIN"
        await pilot.click("#form-submit")
        await wait_for(pilot, lambda: any("subject PLAIN" in n.message for n in app._notifications), what="said")
    assert (await outside.jetstream().stream_info("PLAIN")).config.subjects == ["PLAIN"]


async def test_a_huge_pasted_payload_is_cleared_in_one_key(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await show_tab(app, pilot, "publish")
        payload = app.screen.query_one("#pub-payload", TextArea)
        payload.text = "x" * 1_200_000
        payload.focus()
        await pilot.press("ctrl+l")
        assert payload.text == ""
