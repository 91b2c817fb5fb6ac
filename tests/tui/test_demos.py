"""The palette demos never touch the user's data.

The broker holds a user's ORDERS stream (with a consumer RDL, as the demo's)
and CONFIG bucket (the ``user_data`` fixture); every demo runs, twice, and
both are checked untouched.
On a server natslab did not start, every demo asks first; a demo that finds
its own leftovers asks before it resets them.
"""

from __future__ import annotations

from natslab.tui.demos import DEMOS, run_demo

from .conftest import answer, connected, wait_for


async def test_demos_leave_the_users_orders_and_config_alone(make_app, user_data):
    js = user_data.js
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        for key, demo in DEMOS.items():
            run_demo(app, key)
            question = await answer(app, pilot)  # remote server: asked first
            assert "did not start" in question and demo.owned_stream in question
            await wait_for(pilot, lambda: any(demo.title == n.title for n in app._notifications),
                           what=f"{key} done")
            app.clear_notifications()
        names = {s.config.name for s in await js.streams_info()}
        assert {"DEMO_ORDERS", "DEMO_LIMITS", "DEMO_TTL", "DEMO_EVENTS", "DEMO_JOBS", "KV_DEMO_CONFIG"} <= names
        assert (await js.stream_info("DEMO_ORDERS")).state.messages == 4

        # again: the demo finds its own stream and asks before resetting it
        await js.publish("demo.o.new", b"one more")
        run_demo(app, "redelivery")
        question = await answer(app, pilot, yes=False)
        assert "DEMO_ORDERS exists already" in question
        await pilot.pause(0.3)
        assert (await js.stream_info("DEMO_ORDERS")).state.messages == 5  # No: nothing changed
        run_demo(app, "redelivery")
        await answer(app, pilot)
        await wait_for(pilot, lambda: any("tries 2" in n.message for n in app._notifications), what="reset")
        assert (await js.stream_info("DEMO_ORDERS")).state.messages == 4
        run_demo(app, "kv-history")
        assert "DEMO_CONFIG exists already" in await answer(app, pilot)
        await wait_for(pilot, lambda: any("DEMO_CONFIG keeps" in n.message for n in app._notifications), what="kv")

    await user_data.assert_untouched()


async def test_a_demo_cancelled_on_a_remote_server_creates_nothing(make_app, outside):
    js = outside.jetstream()
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await connected(app, pilot)
        run_demo(app, "limits")
        await answer(app, pilot, yes=False)
        await wait_for(pilot, lambda: any("nothing was changed" in n.message for n in app._notifications),
                       what="cancelled")
    assert [s.config.name async for s in _streams(js)] == []


async def _streams(js):
    for s in await js.streams_info():
        yield s


async def test_on_its_own_embedded_broker_a_fresh_demo_runs_without_asking():
    from natslab.tui.app import NatslabApp
    from natslab.tui.broker import BrokerSpec
    from natslab.tui.widgets.confirm import ConfirmDialog

    app = NatslabApp(broker=BrokerSpec(port=0, memory=True, monitor_port=0), remember_theme=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, timeout=15, what="embedded up")
        run_demo(app, "workqueue")
        consumers = app.screen.query_one("ConsumersPane")
        await wait_for(pilot, lambda: "WQ" in consumers.consumers, what="demo ran")
        assert not isinstance(app.screen, ConfirmDialog)
        await app.shutdown()
