"""The consumers pane's time slider (tui/panes/consumers/travel.py).

On the embedded broker the slider reads the broker's own history: stepping
back from event to event (``{``) must show, in the table, the ruler and the
details, exactly what consumer info said at that moment (recorded by another
program as it went). On a remote server (``make_app``, natslab's broker or
the real nats-server) it replays what the app observed: its polls and the
taps."""

from __future__ import annotations

import json

import nats
import pytest

from natslab.tui.app import NatslabApp
from natslab.tui.broker import BrokerSpec
from natslab.tui.widgets.ruler import ACKED, EXPIRED, OUTSTANDING, TERMED, StreamRuler

from .conftest import screen_text, settle, wait_for


def ts_ns(s: str) -> int:
    from datetime import datetime, timezone

    head, _, frac = s.rstrip("Z").partition(".")
    base = datetime.fromisoformat(head).replace(tzinfo=timezone.utc)
    return int(base.timestamp()) * 1_000_000_000 + int((frac + "000000000")[:9])


async def info(nc, stream: str, name: str) -> dict:
    return json.loads((await nc.request(f"$JS.API.CONSUMER.INFO.{stream}.{name}", b"", timeout=5)).data)


def row_of(d: dict) -> dict:
    return {"ack_pending": str(d["num_ack_pending"]), "redelivered": str(d["num_redelivered"]),
            "pending": str(d["num_pending"]),
            "delivered": f"{d['delivered']['consumer_seq']}/{d['delivered']['stream_seq']}",
            "ack_floor": f"{d['ack_floor']['consumer_seq']}/{d['ack_floor']['stream_seq']}"}


def shown(table, name: str) -> dict:
    return {k: table.value(name, k) for k in ("ack_pending", "redelivered", "pending", "delivered", "ack_floor")}


def embedded_app(**kw) -> NatslabApp:
    return NatslabApp(broker=BrokerSpec(port=0, memory=True, monitor_port=0), remember_theme=False, **kw)


async def scenario(pilot, app):
    """Another program works the consumer W of ORDERS; returns its consumer
    infos, one after each step, and its connection."""
    await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="embedded up")
    nc = await nats.connect(app.embedded.client_url, connect_timeout=2, allow_reconnect=False, name="worker")
    js = nc.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for _ in range(4):
        await js.publish("orders.new", b"order")
    await js.add_consumer("ORDERS", durable_name="W", ack_policy="explicit", ack_wait=30.0)
    sub = await js.pull_subscribe_bind("W", "ORDERS")
    snaps = [await info(nc, "ORDERS", "W")]
    msgs = await sub.fetch(3, timeout=5)
    snaps.append(await info(nc, "ORDERS", "W"))
    await msgs[0].ack_sync()
    snaps.append(await info(nc, "ORDERS", "W"))
    await msgs[1].nak()
    snaps.append(await info(nc, "ORDERS", "W"))
    await msgs[2].term()
    snaps.append(await info(nc, "ORDERS", "W"))
    again = await sub.fetch(1, timeout=5)  # seq 2 again, its second try
    assert again[0].metadata.num_delivered == 2
    snaps.append(await info(nc, "ORDERS", "W"))
    return nc, snaps


async def test_stepping_back_shows_exactly_what_consumer_info_said(tmp_path, monkeypatch):
    monkeypatch.setattr("natslab.tui.config.data_dir", lambda: tmp_path)
    app = embedded_app()
    async with app.run_test(size=(120, 36)) as pilot:
        nc, snaps = await scenario(pilot, app)
        pane = app.screen.query_one("ConsumersPane")
        app.jump_to_consumer("ORDERS", "W")
        await wait_for(pilot, lambda: shown(pane.query_one("LiveTable"), "W") == row_of(snaps[-1]) if "W" in pane.consumers else False,
                       what="the live state")
        table = pane.query_one("LiveTable")
        events = app.history("ORDERS")
        # each recorded info: the slider, just after the last event before it, must say the same
        targets = [max(e.t for e in events if e.t <= ts_ns(s["ts"]) and e.consumer == "W") for s in snaps]
        for snap, target in reversed(list(zip(snaps, targets))):
            for _ in range(20):
                if pane.travel_t is not None and pane.travel_t <= target:
                    break
                await pilot.press("left_curly_bracket")
            assert pane.travel_t == target
            await wait_for(pilot, lambda: shown(table, "W") == row_of(snap), what=f"the state at {snap['ts']}")
            assert "⏪" in str(pane.query_one("#consumers-status").render())
        # after the ack, the nak and the term (snaps[4]): the lane says which is which
        for _ in range(10):  # (a term is two events: the ack it makes and the term)
            if pane.travel_t >= targets[4]:
                break
            await pilot.press("right_curly_bracket")
        assert pane.travel_t == targets[4]
        lane = next(l for l in pane.query_one(StreamRuler).lanes if l.name == "W")
        assert lane.ack_floor == 1 and dict(lane.seen) == {2: (EXPIRED, 1), 3: (TERMED, 1)}
        assert "W delivered seq 2 (try 2)" in screen_text(app)  # what happened next
        details = pane._config_text(pane.consumers["W"]).plain
        # its deliveries on a time axis up to then: 1 acked, 2 nak'd, 3 terminated, none after
        axis = details[details.index("W until then"):]
        rows = {line.split()[1]: line for line in axis.splitlines() if line.startswith("seq ")}
        assert sorted(rows) == ["1", "2", "3"]
        assert "✓" in rows["1"] and "↺" in rows["2"] and "⊘" in rows["3"] and "2" not in rows["2"][9:]
        await pilot.press("E")
        from natslab.tui.panes.consumers.export_dialog import ExportHistoryDialog

        await wait_for(pilot, lambda: isinstance(app.screen, ExportHistoryDialog), what="where to write it")
        assert app.screen.query_one("Input").value.startswith(str(tmp_path / "history" / "history-ORDERS-W-"))
        app.screen.query_one("Input").value = str(tmp_path / "mine" / "report.txt")
        await pilot.press("enter")
        written = tmp_path / "mine" / "report.txt"
        await wait_for(pilot, written.exists, what="the report written")
        text = written.read_text()
        assert "W delivered seq 2 (try 2)" in text and "W acked seq 1" not in text  # the range starts at the slider
        await pilot.press("L")
        assert pane.travel_t is None
        await wait_for(pilot, lambda: "⏪" not in str(pane.query_one("#consumers-status").render()), what="live again")
        await nc.close()
        await app.shutdown()


async def test_remote_replays_what_the_app_observed(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for _ in range(3):
        await js.publish("orders.new", b"order")
    await js.add_consumer("ORDERS", durable_name="W", ack_policy="explicit", ack_wait=30.0)
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="connected")
        app.jump_to_consumer("ORDERS", "W")
        pane = app.screen.query_one("ConsumersPane")
        await wait_for(pilot, lambda: "W" in pane.consumers, what="W listed")
        app.open_pull_hand("ORDERS", "W")  # (its timeline holds the taps)
        await wait_for(pilot, lambda: len(app.screen.query("DeliveryTimeline")) > 0, what="timeline")
        hand = app.screen.query_one("PullHand")
        await wait_for(pilot, lambda: getattr(hand, "taps_ready", False), what="the taps subscribed")
        sub = await js.pull_subscribe_bind("W", "ORDERS")
        msgs = await sub.fetch(2, timeout=5)
        await msgs[0].ack_sync()
        kinds = lambda: {(e.kind, e.seqs) for e in app.history("ORDERS") if e.consumer == "W"}
        await wait_for(pilot, lambda: {("deliver", (1,)), ("deliver", (2,)), ("ack", (1,))} <= kinds(),
                       what="the taps' events in the history")
        app.action_tab("consumers")
        await wait_for(pilot, lambda: pane.consumers["W"].ack_floor_stream_seq == 1, what="polled after the ack")
        pane.query_one("LiveTable").focus()
        await pilot.press("left_curly_bracket")  # just after the ack (the last event of W)
        assert pane.travel_t is not None
        lane = next(l for l in pane.query_one(StreamRuler).lanes if l.name == "W")
        assert lane.seen.get(2) == (OUTSTANDING, 1) and (lane.ack_floor >= 1 or lane.seen.get(1) == (ACKED, 1))
        await pilot.press("left_curly_bracket", "left_curly_bracket")  # before the ack
        lane = next(l for l in pane.query_one(StreamRuler).lanes if l.name == "W")
        assert 1 not in lane.seen or lane.seen[1][0] == OUTSTANDING
        assert "W acked seq 1" in screen_text(app)  # what happened next
        await pilot.press("L")
        assert pane.travel_t is None
        await app.shutdown()


def test_scrubbed_back_at_80x24(snap_compare):
    """The consumers pane at 80x24 just after the nak: the marker, the past
    counters, the lane (1 acked, 2 eligible again, 3 out) and what came next."""
    app = embedded_app(stable_display=True, display_url="nats://127.0.0.1:4222", display_version="2.x",
                       display_store="/tmp/natslab-store", theme_name="natslab-dark")

    async def run_before(pilot):
        nc, snaps = await scenario(pilot, app)
        await nc.close()
        pane = app.screen.query_one("ConsumersPane")
        app.jump_to_consumer("ORDERS", "W")
        table = pane.query_one("LiveTable")
        await wait_for(pilot, lambda: "W" in pane.consumers and shown(table, "W") == row_of(snaps[-1]),
                       what="the live state")
        events = app.history("ORDERS")
        target = max(e.t for e in events if e.t <= ts_ns(snaps[3]["ts"]) and e.consumer == "W")
        for _ in range(20):
            if pane.travel_t is not None and pane.travel_t <= target:
                break
            await pilot.press("left_curly_bracket")
        assert pane.travel_t == target
        await wait_for(pilot, lambda: shown(table, "W") == row_of(snaps[3]), what="the state after the nak")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


async def test_back_in_time_key_is_in_the_footer_at_80_columns(make_app, outside):
    """`[` was only on `?` at 80 columns (the footer showed n, e, space):
    it is the footer's first key, wholly in sight left of Help/Quit."""
    from textual.widgets._footer import FooterKey

    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.publish("orders.new", b"order")
    await js.add_consumer("ORDERS", durable_name="W", ack_policy="explicit")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.client is not None and app.client.connected, what="connected")
        app.jump_to_consumer("ORDERS", "W")
        pane = app.screen.query_one("ConsumersPane")
        await wait_for(pilot, lambda: "W" in pane.consumers, what="W listed")

        def bracket_in_sight():
            keys = [k for k in app.screen.query(FooterKey) if k.key == "left_square_bracket"]
            pinned = app.screen.query_one("#footer-pinned").region
            return bool(keys) and keys[0].region.width > 0 and keys[0].region.right <= pinned.x
        await wait_for(pilot, bracket_in_sight, what="[ Back in time in the footer, in sight")
        await pilot.press("left_square_bracket")
        await wait_for(pilot, lambda: pane.travel_t is not None, what="in the past")
        await app.shutdown()
