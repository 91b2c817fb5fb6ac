"""Start-up order: the first frame comes before the broker, the connection and
the panes hidden behind the first tab; none of that may lose function."""

from __future__ import annotations

import gc

from textual.color import Color

from natslab.tui.app import NatslabApp
from natslab.tui.client import core

from .conftest import connected, wait_for


async def test_hidden_panes_are_mounted_before_the_connection_starts(make_app, monkeypatch):
    seen: dict[str, list[int]] = {}
    original = core.NatsClient.connect.__func__

    async def connect(cls, options, **kw):
        screen = app.main_screen
        seen["at connect"] = [
            len(screen.query(q)) for q in ("#consumers-table", "#pull-fetch", "#browser-list", "#publish-pane")
        ]
        return await original(cls, options, **kw)

    monkeypatch.setattr(core.NatsClient, "connect", classmethod(connect))
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        # consumers pane, pull hand and message browser composed; a tool pane waits for its tab
        assert seen["at connect"] == [1, 1, 1, 0]
        assert app.header_info.state == "connected"


async def test_quit_before_the_first_frame_starts_nothing(make_app, monkeypatch):
    monkeypatch.setattr(NatslabApp, "on_ready", lambda self: None)  # hold the start-up back
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.2)
        assert app.client is None and len(app.screen.query("#pull-pane")) == 0
        await app.shutdown()  # q
        app.first_frame_painted()  # the frame lands after that
        await pilot.pause(0.3)
        assert app.client is None and len(app.screen.query("#pull-pane")) == 0
        assert not [w for w in app.workers if w.group in ("startup", "connect")]


async def test_remembered_theme_is_applied_from_the_first_frame(make_app, tmp_path):
    settings = tmp_path / "config" / "natslab" / "settings.json"
    for name in ("natslab-harbor", "natslab-light"):  # same dark/light as Textual's default, and not
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(f'{{"theme": "{name}"}}')
        app = make_app(remember_theme=True)
        async with app.run_test(size=(120, 36)) as pilot:
            await connected(app, pilot)
            theme = app.get_theme(name)
            assert app.theme == name and app.has_class(f"-theme-{name}")
            assert app.screen.styles.background == Color.parse(theme.background)


async def test_cyclic_gc_runs_on_the_apps_schedule_and_is_restored(make_app):
    """Paused for start-up (as the CLI does), then driven by the app: young
    collections every second, the automatic collector off while the app
    runs, and back on when it exits."""
    app = make_app()
    app.gc_paused_until_paint = True
    app.GC_FULL_EVERY = 1.5  # a minute in the app; both timers must run without error
    gc.disable()
    runs: dict[int, int] = {1: 0, 2: 0}

    def watch(phase: str, info: dict) -> None:
        if phase == "stop" and info["generation"] in runs:
            runs[info["generation"]] += 1

    gc.callbacks.append(watch)
    try:
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_for(pilot, lambda: runs[1] >= 2 and runs[2] >= 1, what="the app's young and full collections")
            assert not gc.isenabled()
            await connected(app, pilot)
            assert app.is_running
        assert gc.isenabled() and app.return_code in (0, None)
    finally:
        gc.callbacks.remove(watch)
        gc.enable()


async def test_quit_right_after_the_first_frame_exits_cleanly(make_app):
    """q while the hidden panes are still being mounted: no half-mounted pane fails."""
    for _ in range(3):
        app = make_app()
        painted = app.first_frame_painted

        def quit_at_once() -> None:
            painted()
            app.call_later(app.action_quit)

        app.first_frame_painted = quit_at_once
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause(0.5)
        assert app.return_code == 0


async def test_hidden_parts_mount_on_demand_before_the_start_up_does(make_app, monkeypatch):
    """Keys pressed before the after-paint start-up mounts them still work."""
    monkeypatch.setattr(NatslabApp, "on_ready", lambda self: None)  # hold the start-up back
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.2)
        assert len(app.screen.query("#browser-list")) == 0
        await pilot.press("m")  # streams pane: the Messages tab
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "browser-list", what="browser focused")
        await pilot.press("2")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "consumers-table", what="consumers")
        await pilot.press("3")
        await wait_for(pilot, lambda: app.focused is not None and app.focused.id == "pull-fetch", what="pull hand")


async def test_first_frame_header_says_remote_and_the_url(make_app, monkeypatch, broker_url):
    monkeypatch.setattr(NatslabApp, "on_ready", lambda self: None)  # stay at the first frame
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.2)
        header = str(app.screen.query_one("#header").render())
        assert "remote" in header and broker_url in header and "starting" in header
