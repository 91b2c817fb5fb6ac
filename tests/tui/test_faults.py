"""The Faults room (issue #30 part 1): on the workbench's own embedded broker,
a fault from the menu (F, a key, a confirmation) and the before / after report.
Real embedded broker and real nats-py clients; no mocks."""

from __future__ import annotations

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig

from natslab.tui.app import NatslabApp
from natslab.tui.broker import BrokerSpec
from natslab.tui.screens.faults import FaultReport, FaultsMenu

from .conftest import answer, wait_for


async def _demo(url: str):
    nc = await nats.connect(url, max_reconnect_attempts=60, reconnect_time_wait=0.2, connect_timeout=2)
    js = nc.jetstream()
    await js.add_stream(name="FAULTDEMO", subjects=["faultdemo.>"])
    for i in range(5):
        await js.publish("faultdemo.x", f"m{i}".encode())
    psub = await js.pull_subscribe("faultdemo.>", durable="FD", stream="FAULTDEMO",
                                   config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=2))
    msgs = await psub.fetch(3, timeout=5)
    assert [m.metadata.sequence.stream for m in msgs] == [1, 2, 3]
    await msgs[0].ack_sync()
    return nc, js, psub


@pytest.mark.parametrize("key,fault", [("c", "crash"), ("p", "power_cut"), ("r", "restart")])
async def test_a_fault_from_the_menu_keeps_the_acked_and_brings_back_the_rest(tmp_path, key, fault):
    app = NatslabApp(broker=BrokerSpec(port=0, monitor_port=0, store_dir=tmp_path / "store"), remember_theme=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="embedded up")
        nc, js, psub = await _demo(app.embedded.client_url)
        try:
            generation = app.client_generation
            assert "F" in app.screen.active_bindings  # listed in ? help on the embedded broker
            await pilot.press("F")
            await wait_for(pilot, lambda: isinstance(app.screen, FaultsMenu), what="faults menu")
            await pilot.press(key)
            question = await answer(app, pilot)
            assert question  # the confirmation names the fault
            await wait_for(pilot, lambda: isinstance(app.screen, FaultReport), timeout=30, what="report")
            report = app.screen
            assert report.fault.name == fault
            assert app.client_generation > generation and app.client.connected  # the app reconnected
            before = report.before.consumers[("FAULTDEMO", "FD")]
            after = report.after.consumers[("FAULTDEMO", "FD")]
            assert (before.ack_floor, before.ack_pending) == (1, 2)
            assert after.ack_floor == 1  # the acked one stays acked
            assert report.before.streams["FAULTDEMO"].messages == report.after.streams["FAULTDEMO"].messages == 5
            assert "reconnected" in str(report.query_one("#report-note").render())
            # the 2 unacked come back (after ack_wait), the acked one does not
            seen = []
            for _ in range(20):
                try:
                    got = await psub.fetch(2, timeout=2)
                except nats.errors.TimeoutError:
                    continue
                seen += [m.metadata.sequence.stream for m in got if m.metadata.num_delivered > 1]
                if len(seen) >= 2:
                    break
            assert sorted(seen) == [2, 3]
        finally:
            await nc.close()
        await app.shutdown()


async def test_faults_are_absent_on_a_remote_server(nats_server_url):
    from natslab.tui.client import ConnectOptions

    app = NatslabApp(connect=ConnectOptions(url=nats_server_url), remember_theme=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="connected")
        assert app.check_action("faults", ()) is False
        assert "F" not in app.screen.active_bindings  # so not in ? help nor the footer
        await pilot.press("F")
        await pilot.pause(0.3)
        assert not isinstance(app.screen, FaultsMenu)
        from natslab.tui.commands import NatslabCommands

        titles = [t for t, _h, _c in await NatslabCommands(app.screen)._commands()]
        assert not any(t.startswith("Faults") for t in titles)
        await app.shutdown()


async def _fault(app, pilot, key: str) -> FaultReport:
    app.screen.set_focus(None)  # a focused text box would take the F as text
    await pilot.press("F")
    await wait_for(pilot, lambda: isinstance(app.screen, FaultsMenu), what="faults menu")
    await pilot.press(key)
    await answer(app, pilot)
    await wait_for(pilot, lambda: isinstance(app.screen, FaultReport), timeout=30, what="report")
    report = app.screen
    await pilot.press("escape")
    await wait_for(pilot, lambda: not isinstance(app.screen, FaultReport), what="report closed")
    return report


async def test_disk_full_shows_the_servers_error_in_the_publish_pane_and_release_restores(tmp_path):
    from textual.widgets import Select

    from .test_publish_modes import composer, fill, publish_and_read

    app = NatslabApp(broker=BrokerSpec(port=0, monitor_port=0, store_dir=tmp_path / "store"), remember_theme=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="embedded up")
        nc = await nats.connect(app.embedded.client_url, max_reconnect_attempts=5, connect_timeout=2)
        try:
            js = nc.jetstream()
            await js.add_stream(name="FAULTDISK", subjects=["faultdisk.>"])
            await _fault(app, pilot, "f")
            await composer(app, pilot, "js")
            fill(app, pub_subject="faultdisk.a", pub_payload="x")
            said = await publish_and_read(app, pilot, "failed", "refused on a full disk")
            assert "10077" in said, said
            assert (await js.stream_info("FAULTDISK")).state.messages == 0
            await _fault(app, pilot, "n")
            await wait_for(pilot, lambda: app.screen.query_one("#pub-mode", Select).value == "js", what="publish pane")
            said = await publish_and_read(app, pilot, "PubAck", "stored once released")
            assert "seq 1" in said
            assert (await js.stream_info("FAULTDISK")).state.messages == 1
        finally:
            await nc.close()
        await app.shutdown()


async def test_drop_client_drops_exactly_the_chosen_connection(tmp_path):
    app = NatslabApp(broker=BrokerSpec(port=0, monitor_port=0, store_dir=tmp_path / "store"), remember_theme=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="embedded up")
        dropped = {"faultvictim": 0, "faultbystander": 0}

        def counter(name):
            async def cb():
                dropped[name] += 1
            return cb
        clients = [await nats.connect(app.embedded.client_url, name=n, disconnected_cb=counter(n),
                                      max_reconnect_attempts=5, reconnect_time_wait=0.2, connect_timeout=2)
                   for n in dropped]
        try:
            generation = app.client_generation
            await pilot.press("F")
            await wait_for(pilot, lambda: isinstance(app.screen, FaultsMenu), what="faults menu")
            await pilot.press("d")
            await wait_for(pilot, lambda: len(app.screen.query("#faults-client")) > 0, what="client picker")
            await pilot.press(*"faultvictim", "enter")
            assert "faultvictim" in await answer(app, pilot)
            await wait_for(pilot, lambda: isinstance(app.screen, FaultReport), timeout=30, what="report")
            assert "cut connection" in str(app.screen.query_one("#report-note").render())
            await wait_for(pilot, lambda: dropped["faultvictim"] == 1, what="the victim dropped")
            await clients[1].flush(timeout=2)  # the bystander is still served
            assert dropped["faultbystander"] == 0
            assert app.client_generation == generation and app.client.connected  # the workbench stayed
        finally:
            for nc in clients:
                await nc.close()
        await app.shutdown()
