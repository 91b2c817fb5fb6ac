"""The Faults room (issue #30 part 1): on the workbench's own embedded broker,
a fault from the menu (F, a key, a confirmation) and the before / after report.
Real embedded broker and real nats-py clients; no mocks."""

from __future__ import annotations

import time

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig

from natslab.tui.app import NatslabApp
from natslab.tui.broker import BrokerSpec
from natslab.tui.screens.faults import AmountPrompt, FaultReport, FaultsMenu, PickClient

from .conftest import answer, wait_for


def report_composed(app) -> bool:
    """The fault report is on screen with all it composes: the scroll's
    children (table, verdict) mount after the labels above them."""
    screen = app.screen
    return (isinstance(screen, FaultReport) and bool(screen.query("#report-table"))
            and (screen.verdict is None or bool(screen.query("#report-verdict"))))


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
            await wait_for(pilot, lambda: report_composed(app), timeout=30, what="report")
            report = app.screen
            assert report.fault.name == fault
            assert app.client_generation > generation and app.client.connected  # the app reconnected
            before = report.before.consumers[("FAULTDEMO", "FD")]
            after = report.after.consumers[("FAULTDEMO", "FD")]
            assert (before.ack_floor, before.ack_pending) == (1, 2)
            assert after.ack_floor == 1  # the acked one stays acked
            assert report.before.streams["FAULTDEMO"].messages == report.after.streams["FAULTDEMO"].messages == 5
            assert "reconnected" in str(report.query_one("#report-note").render())
            # judged against the promise: every message held before is there; the 2 unacked come again
            assert report.verdict == (True, "promise kept: all 5 message(s) the streams held before are there")
            assert "FAULTDEMO › FD: 2 will be redelivered: seqs 2, 3" in str(report.query_one("#report-marks").render())
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


async def test_a_power_cut_is_judged_against_the_state_just_before_it(tmp_path):
    """Messages published while the menu is open (after it armed the cut)
    are in the report's "before" (taken once the cut is confirmed) and, the
    promise being PubAck = on disk, all there after the cut."""
    from natslab.tui.widgets.confirm import ConfirmDialog

    app = NatslabApp(broker=BrokerSpec(port=0, monitor_port=0, store_dir=tmp_path / "store"), remember_theme=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="embedded up")
        nc, js, psub = await _demo(app.embedded.client_url)
        try:
            await pilot.press("F")
            await wait_for(pilot, lambda: isinstance(app.screen, FaultsMenu), what="faults menu")
            await pilot.press("p")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmDialog), what="the question")
            for i in range(3):  # written after the menu opened, before the cut is confirmed
                await js.publish("faultdemo.late", f"late{i}".encode())
            await answer(app, pilot)
            await wait_for(pilot, lambda: report_composed(app), timeout=30, what="report")
            report = app.screen
            assert report.before.streams["FAULTDEMO"].last_seq == 8
            assert report.after.streams["FAULTDEMO"].last_seq == 8
            assert report.verdict == (True, "promise kept: all 8 message(s) the streams held before are there")
            assert str(report.query_one("#report-verdict").render()).startswith("promise kept")
            # (this client reconnects on its own schedule: a request sent before would wait in its buffer)
            await wait_for(pilot, lambda: nc.is_connected, timeout=30, what="the test's client reconnected")
            assert [(await js.get_msg("FAULTDEMO", s)).data for s in (6, 7, 8)] == [b"late0", b"late1", b"late2"]
        finally:
            await nc.close()
        await app.shutdown()


def test_the_promise_verdict_names_what_was_lost():
    from natslab.tui.client.survival import ConsumerState, Snapshot, StreamState, fault_marks, promise_verdict

    before = Snapshot(streams={"S": StreamState(8, 1, 8)}, consumers={("S", "C"): ConsumerState(6, 3, 3, 0, 2)})
    after = Snapshot(streams={"S": StreamState(5, 1, 5)}, consumers={("S", "C"): ConsumerState(5, 2, 0, 0, 3)})
    marks = fault_marks(before, after)
    assert marks["S"].lost == (6, 7, 8)
    assert marks["S"].redeliver == {"C": (3, 4, 5, 6)}  # 3 unacked, and one whose ack the cut lost
    assert promise_verdict(before, after, marks) == (
        False, "PROMISE BROKEN (acknowledged messages lost): S lost seqs 6, 7, 8")


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
    await wait_for(pilot, lambda: report_composed(app), timeout=30, what="report")
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


async def test_drop_client_picked_from_the_list_of_connections(tmp_path):
    """d lists the broker's connections (name, cid, ip:port, lang); the one
    picked is dropped, the other client is still served."""
    from textual.widgets import DataTable

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
            await wait_for(pilot, lambda: isinstance(app.screen, PickClient), what="client list")
            table = app.screen.query_one("#faults-clients", DataTable)
            rows = {table.get_row_at(i)[0]: table.get_row_at(i) for i in range(table.row_count)}
            assert {"faultvictim", "faultbystander"} <= rows.keys(), rows
            assert any(name.endswith("(this workbench)") for name in rows)
            victim, victim_cid = rows["faultvictim"], clients[0].client_id  # (a new one once it reconnects)
            assert victim[1] == str(victim_cid)
            assert victim[2].startswith("127.0.0.1:") and victim[3].startswith("python3")
            # move the cursor to the victim's row and press enter
            target = [table.get_row_at(i)[0] for i in range(table.row_count)].index("faultvictim")
            while table.cursor_row != target:
                await pilot.press("down" if table.cursor_row < target else "up")
            await pilot.press("enter")
            assert "faultvictim" in await answer(app, pilot)
            await wait_for(pilot, lambda: report_composed(app), timeout=30, what="report")
            assert f"cut connection(s) {victim_cid}" in str(app.screen.query_one("#report-note").render())
            await wait_for(pilot, lambda: dropped["faultvictim"] == 1, what="the victim dropped")
            await clients[1].flush(timeout=2)  # the bystander is still served
            assert dropped["faultbystander"] == 0
            assert app.client_generation == generation and app.client.connected  # the workbench stayed
        finally:
            for nc in clients:
                await nc.close()
        await app.shutdown()


async def _amount(app, pilot, key: str, text: str) -> AmountPrompt:
    """F, the fault's key, the number typed into its form (not yet confirmed)."""
    from textual.widgets import Input

    app.screen.set_focus(None)
    await pilot.press("F")
    await wait_for(pilot, lambda: isinstance(app.screen, FaultsMenu), what="faults menu")
    await pilot.press(key)
    await wait_for(pilot, lambda: isinstance(app.screen, AmountPrompt), what="the fault's form")
    prompt = app.screen
    field = prompt.query_one("#amount-value", Input)
    assert field.value == f"{prompt.amount.default:g}"  # a default, ready to confirm
    field.value = ""
    await pilot.press(*text)
    return prompt


def _error(prompt) -> str:
    return str(prompt.query_one("#amount-error").render())


async def test_freeze_one_consumer_for_n_seconds_from_the_form(tmp_path):
    """u: the form names the consumer and N; a bad number is refused inline;
    a fetch during the freeze gets nothing, after it the message."""
    app = NatslabApp(broker=BrokerSpec(port=0, monitor_port=0, store_dir=tmp_path / "store"), remember_theme=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="embedded up")
        nc = await nats.connect(app.embedded.client_url, max_reconnect_attempts=5, connect_timeout=2)
        try:
            js = nc.jetstream()
            await js.add_stream(name="FREEZEME", subjects=["freezeme"])
            psub = await js.pull_subscribe("freezeme", durable="FZ", stream="FREEZEME",
                                           config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT))
            await js.publish("freezeme", b"held")
            prompt = await _amount(app, pilot, "u", "ten")
            await wait_for(pilot, lambda: "not a number" in _error(prompt), what="inline error")
            await pilot.press("enter")  # refused: the form stays, nothing frozen
            await pilot.pause()
            assert app.screen is prompt and not app.embedded.frozen
            prompt.query_one("#amount-value").value = ""
            await pilot.press(*"0")
            await wait_for(pilot, lambda: "between" in _error(prompt), what="out of range said")
            prompt.query_one("#amount-value").value = ""
            seconds = 4
            await pilot.press(*str(seconds))
            await wait_for(pilot, lambda: _error(prompt) == "", what="a good number")
            assert prompt.query_one("#amount-consumer").value == "FREEZEME/FZ"
            confirmed = time.monotonic()
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.embedded.frozen, what="the consumer frozen")
            with pytest.raises(nats.errors.TimeoutError):
                await psub.fetch(1, timeout=0.5)
            # (that fetch ran inside the freeze: else this test proves nothing)
            assert time.monotonic() < confirmed + seconds
            got = []
            deadline = time.monotonic() + seconds + 20
            while not got and time.monotonic() < deadline:
                try:
                    got = await psub.fetch(1, timeout=1)
                except nats.errors.TimeoutError:
                    pass
            assert [m.data for m in got] == [b"held"]
            assert time.monotonic() >= confirmed + seconds  # not before the freeze was over
            assert not app.embedded.frozen
        finally:
            await nc.close()
        await app.shutdown()


async def test_slow_disk_from_the_form_slows_a_puback_by_n_ms(tmp_path):
    app = NatslabApp(broker=BrokerSpec(port=0, monitor_port=0, store_dir=tmp_path / "store"), remember_theme=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="embedded up")
        nc = await nats.connect(app.embedded.client_url, max_reconnect_attempts=5, connect_timeout=2)
        try:
            js = nc.jetstream()
            await js.add_stream(name="SLOWDISK", subjects=["slowdisk"])
            await js.publish("slowdisk", b"warm")
            # (no consumer to freeze yet: the consumer form says so and runs nothing)
            prompt = await _amount(app, pilot, "u", "3")
            await wait_for(pilot, lambda: "no consumer" in _error(prompt), what="no consumer said")
            await pilot.press("enter")
            await pilot.pause()
            assert app.screen is prompt and not app.embedded.frozen
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, AmountPrompt), what="form closed")
            ms = 300
            prompt = await _amount(app, pilot, "s", "-5")
            await wait_for(pilot, lambda: "between" in _error(prompt), what="inline error")
            prompt.query_one("#amount-value").value = ""
            await pilot.press(*str(ms))
            await wait_for(pilot, lambda: _error(prompt) == "", what="a good number")
            await pilot.press("enter")
            await wait_for(pilot, lambda: any("Slow disk" in n.message for n in app._notifications), what="slowed")
            started = time.monotonic()
            ack = await js.publish("slowdisk", b"slow", timeout=10)
            assert time.monotonic() - started >= ms / 1000  # the one publish: at least N ms (load only adds)
            assert ack.seq == 2
            await _fault(app, pilot, "n")  # normal again
        finally:
            await nc.close()
        await app.shutdown()


async def test_after_a_crash_the_ruler_marks_what_will_be_redelivered(tmp_path):
    """Consumers tab after a crash from the menu: the acked one on the floor,
    the 2 unacked marked ↻ with "2 will be redelivered: seqs 2, 3"; once
    they came again and were acked, the marks are gone. ? lists the glyphs."""
    app = NatslabApp(broker=BrokerSpec(port=0, monitor_port=0, store_dir=tmp_path / "store"), remember_theme=False)
    async with app.run_test(size=(100, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="embedded up")
        nc, js, psub = await _demo(app.embedded.client_url)
        try:
            await _fault(app, pilot, "c")
            app.jump_to_consumer("FAULTDEMO", "FD")
            ruler = app.screen.query_one("#consumers-ruler")

            def lines() -> list[str]:
                return str(ruler.render()).splitlines()
            await wait_for(pilot, lambda: "↻ FD: 2 will be redelivered: seqs 2, 3" in lines(), what="the sentence")
            lane = next(line for line in lines() if line.startswith("FD "))
            marks = next(line for line in lines() if line.startswith("↻ FD  "))
            assert "┃" in lane[:marks.index("↻", 1)]  # the acked one: the floor, left of the first mark
            assert marks.count("↻") == 3  # the label's, and one under each of seqs 2 and 3
            assert not any(line.startswith("✗") for line in lines())  # a crash lost nothing
            await pilot.press("question_mark")
            await wait_for(pilot, lambda: len(app.screen.query(".help-legend")) > 0, what="legend")
            legend = str(app.screen.query_one(".help-legend").render())
            assert "will be redelivered" in legend and "✗" in legend
            await pilot.press("escape")
            again, first = [], []
            for _ in range(20):  # the ack wait (2 s) runs out, they come back: ack them
                try:  # a fetch before the ack wait ran out gets seqs 4 and 5 first (never delivered)
                    got = await psub.fetch(2, timeout=2)
                except nats.errors.TimeoutError:
                    continue
                for m in got:
                    await m.ack_sync()
                    (again if m.metadata.num_delivered > 1 else first).append(m.metadata.sequence.stream)
                if len(again) >= 2:
                    break
            assert sorted(again) == [2, 3] and set(first) <= {4, 5}
            await wait_for(pilot, lambda: not any("↻" in line for line in lines()), what="the marks gone")
        finally:
            await nc.close()
        await app.shutdown()


def test_the_ruler_marks_lost_sequences_past_its_end():
    from natslab.tui.client.survival import StreamMarks
    from natslab.tui.widgets.ruler import Lane, fault_segment

    lanes = [Lane("C", 1, 3, 2, 2)]
    text = fault_segment(StreamMarks(lost=(6, 7), redeliver={"C": (2, 3)}), 1, 5, lanes, 78).plain.splitlines()
    assert "↻ C: 2 will be redelivered: seqs 2, 3" in text
    lost = next(line for line in text if line.startswith("✗ lost"))
    assert lost.rstrip().endswith("✗✗")
    assert "✗ the fault lost 2: seqs 6, 7 (never made durable)" in text


async def test_freeze_the_whole_broker_for_n_seconds_from_the_form(tmp_path):
    """z, N = 3: a client's PING gets no PONG during the freeze, then it does."""
    app = NatslabApp(broker=BrokerSpec(port=0, monitor_port=0, store_dir=tmp_path / "store"), remember_theme=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="embedded up")
        nc = await nats.connect(app.embedded.client_url, max_reconnect_attempts=5, connect_timeout=2)
        try:
            seconds = 3
            prompt = await _amount(app, pilot, "z", str(seconds))
            await wait_for(pilot, lambda: _error(prompt) == "", what="a good number")
            confirmed = time.monotonic()
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.embedded.frozen, what="the broker frozen")
            with pytest.raises(nats.errors.TimeoutError):
                await nc.flush(timeout=0.5)
            assert time.monotonic() < confirmed + seconds  # (that flush ran inside the freeze)
            deadline = time.monotonic() + seconds + 20
            while time.monotonic() < deadline:
                try:
                    await nc.flush(timeout=1)
                    break
                except nats.errors.TimeoutError:
                    pass
            assert time.monotonic() >= confirmed + seconds and not app.embedded.frozen
            await nc.flush(timeout=2)  # served again
        finally:
            await nc.close()
        await app.shutdown()
