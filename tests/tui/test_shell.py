"""The shell around the panes: command line, nats contexts, themes, palette, help."""

from __future__ import annotations

import json

import pytest

from natslab.tui.cli import build_parser, main, resolve
from natslab.tui.commands import NatslabCommands
from natslab.tui.config import load_settings

from .conftest import answer, connected, wait_for


def test_cli_defaults_to_embedded_broker():
    options, spec = resolve(build_parser().parse_args([]))
    assert spec is not None and spec.port == 4222 and not spec.memory


def test_cli_connect_and_credentials():
    options, spec = resolve(build_parser().parse_args(["--connect", "nats://h:1", "--user", "u", "--password", "p"]))
    assert spec is None and options.url == "nats://h:1" and (options.user, options.password) == ("u", "p")


def test_cli_context_by_name_and_selected(tmp_path, monkeypatch):
    ctx_dir = tmp_path / "config" / "nats" / "context"
    ctx_dir.mkdir(parents=True)
    (ctx_dir / "dev.json").write_text(json.dumps({"url": "nats://dev:4222", "token": "t0k"}))
    options, spec = resolve(build_parser().parse_args(["--context", "dev"]))
    assert spec is None and options.url == "nats://dev:4222" and options.token == "t0k"

    (tmp_path / "config" / "nats" / "context.txt").write_text("dev\n")
    options, _ = resolve(build_parser().parse_args(["--context", "--user", "me"]))
    assert options.url == "nats://dev:4222" and options.user == "me"


def test_cli_bad_flags_are_plain_errors(capsys):
    assert main(["--context", "nope"]) == 2
    assert "no nats context named 'nope'" in capsys.readouterr().err
    assert main(["--memory", "--store-dir", "/tmp/x"]) == 2
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    assert "--connect URL" in capsys.readouterr().out


async def test_bad_user_theme_is_reported_once_and_good_one_loads(make_app, tmp_path):
    themes = tmp_path / "config" / "natslab" / "themes"
    themes.mkdir(parents=True)
    (themes / "broken.toml").write_text("name = 'broken'\n[colors\nprimary=")
    (themes / "mine.toml").write_text("name = 'mine'\n[colors]\nprimary = '#ff8800'\n")
    app = make_app(remember_theme=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        warnings = [n for n in app._notifications if "broken.toml" in n.message]
        assert len(warnings) == 1
        assert "mine" in app.available_themes and "mine" in app.user_theme_names
        app.theme = "mine"
        await pilot.pause(0.1)
        assert load_settings()["theme"] == "mine"

    app2 = make_app(remember_theme=True)
    async with app2.run_test(size=(120, 36)) as pilot:
        assert app2.theme == "mine"


async def test_palette_jumps_to_stream_and_consumer(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.add_stream(name="AUDIT", subjects=["audit.>"])
    await js.add_consumer("ORDERS", durable_name="WORKER", ack_policy="explicit")
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        provider = NatslabCommands(app.screen)
        hits = [hit async for hit in provider.search("worker")]
        assert any("ORDERS › WORKER" in str(h.text) for h in hits)
        hits = [hit async for hit in provider.search("Stream: ORD")]
        hits[0].command()
        streams = app.screen.query_one("StreamsPane")
        await wait_for(pilot, lambda: streams.selected == "ORDERS", what="ORDERS selected")
        titles = [str(h.text) async for h in provider.discover()]
        assert "Demo: redelivery" in titles and "Theme: natslab-light" in titles
        # one way to switch theme: textual's own "Theme" picker is not offered beside natslab's
        system = [c.title for c in app.get_system_commands(app.screen)]
        assert "Theme" not in system and "Quit" in system


async def test_help_lists_pane_keys(make_app):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.2)
        rows = app.screen.bindings
        descriptions = [d for _, d, _ in rows]
        assert "New stream" in descriptions and "Quit" in descriptions
        assert descriptions.index("New stream") < descriptions.index("Cursor up")
        await pilot.press("escape")


async def test_guided_demos_set_up_the_walkthrough(make_app, outside):
    from natslab.tui.demos import run_demo

    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        run_demo(app, "limits")
        await answer(app, pilot)
        streams = app.screen.query_one("StreamsPane")
        await wait_for(pilot, lambda: streams.selected == "DEMO_LIMITS", what="DEMO_LIMITS selected")
        # (the row is live: after the third publish it reads 2 messages from seq 2; the demo is done at 2 from 3)
        limits = lambda: (streams.streams["DEMO_LIMITS"].messages, streams.streams["DEMO_LIMITS"].first_seq)
        await wait_for(pilot, lambda: limits() == (2, 3), what="limits applied: 2 messages from seq 3")
        run_demo(app, "workqueue")
        await answer(app, pilot)
        consumers = app.screen.query_one("ConsumersPane")
        await wait_for(pilot, lambda: consumers.stream == "DEMO_JOBS" and "WQ" in consumers.consumers
                       and consumers.consumers["WQ"].num_pending == 2, what="DEMO_JOBS › WQ with 2 pending")
        run_demo(app, "kv-history")
        await answer(app, pilot)
        await wait_for(pilot, lambda: len(app.screen.query("KvPane")) > 0, what="KV pane")
        kv = await outside.jetstream().key_value("DEMO_CONFIG")
        assert [e.value for e in await kv.history("region")] == [b"eu", b"us", b"apac"]


async def test_copy_as_code_in_stream_and_consumer_forms(make_app, outside):
    from textual.widgets import Input

    await outside.jetstream().add_stream(name="ORDERS", subjects=["orders.>"])
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        await pilot.press("n")
        await wait_for(pilot, lambda: len(app.screen.query("#subjects")) > 0, what="stream form")
        app.screen.query_one("#name", Input).value = "PAYMENTS"
        app.screen.query_one("#subjects", Input).value = "payments.>"
        app.screen.query_one("#max_age", Input).value = "24h"
        await pilot.press("ctrl+y")
        code = str(app.screen.query_one("#form-code").render())
        assert "nats stream add PAYMENTS --subjects 'payments.>'" in code and "--max-age 1d" in code
        assert "add_stream(name='PAYMENTS'" in code and "max_age=86400" in code
        await pilot.press("escape")

        app.jump_to_consumer("ORDERS", "X")

        def consumers_focused() -> bool:  # n is the focused pane's: the Consumers pane of ORDERS
            panes = app.screen.query("ConsumersPane")
            return bool(panes) and panes.first().stream == "ORDERS" and app.focused is not None \
                and panes.first() in app.focused.ancestors_with_self

        await wait_for(pilot, consumers_focused, what="the Consumers pane of ORDERS focused")
        await pilot.press("n")
        await wait_for(pilot, lambda: len(app.screen.query("#ack_wait")) > 0, what="consumer form")
        app.screen.query_one("#name", Input).value = "RDL"
        app.screen.query_one("#ack_wait", Input).value = "4s"
        await pilot.press("ctrl+y")
        code = str(app.screen.query_one("#form-code").render())
        assert "nats consumer add ORDERS RDL --pull --ack explicit --deliver all --wait 4s" in code
        assert "add_consumer('ORDERS', durable_name='RDL'" in code and "ack_wait=4" in code
