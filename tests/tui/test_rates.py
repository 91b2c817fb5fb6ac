"""Rates over time: the chart painter, the rates derived from polled
counters, and `g` in the consumers pane drawing them live on a real broker."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from natslab.tui.widgets.chart import ConsumerRates, StreamRates, columns, rates_view, render_chart

from .conftest import connected, wait_for


def test_chart_rows_use_eighth_blocks_scaled_to_the_highest_value():
    text = render_chart("Delivered/s", [0, 1, 2, 4, 8], 5, height=2).plain
    title, top, bottom = text.splitlines()
    assert title == "Delivered/s now 8 · max 8"
    assert bottom == " ▂▄██" and top == "    █"


def test_long_history_keeps_bursts():
    assert columns([0, 0, 9, 0, 0, 0], 3) == [0, 9, 0]
    assert columns([1, 2], 5) == [1, 2]


def test_rates_from_counters():
    r = ConsumerRates(keep_seconds=10)
    r.record(0.0, delivered=0, ack_floor=0, ack_pending=0, pending=10)
    r.record(0.5, delivered=5, ack_floor=2, ack_pending=3, pending=5)
    r.record(1.0, delivered=10, ack_floor=10, ack_pending=0, pending=0)
    assert r.delivered_per_second() == [10.0, 10.0]
    assert r.acked_per_second() == [4.0, 16.0]
    assert r.ack_pending() == [0, 3, 0] and r.pending() == [10, 5, 0]
    r.record(20.0, 10, 10, 0, 0)  # older than the window: dropped
    assert len(r.samples) == 1


def test_stream_rates_from_its_last_sequence_and_size():
    r = StreamRates(keep_seconds=10)
    r.record(0.0, last_seq=4, size=222)
    r.record(0.5, last_seq=9, size=500)
    assert r.in_per_second() == [10.0] and r.size() == [222.0, 500.0]


class ChartsHost(App):
    def compose(self) -> ComposeResult:
        r = ConsumerRates()
        for i in range(40):  # a worker speeding up, then a backlog draining
            delivered = sum(min(j, 20) for j in range(i + 1))
            r.record(i * 0.5, delivered, max(0, delivered - 15), 15 if i else 0, max(0, 400 - delivered))
        sr = StreamRates()
        for i in range(40):
            sr.record(i * 0.5, 400 + 10 * i, 98 * (400 + 10 * i))
        yield Static(rates_view("WORKER", r, 78, stream=("ORDERS", sr)))


def test_rates_snapshot(snap_compare):
    assert snap_compare(ChartsHost(), terminal_size=(80, 15))


async def test_g_shows_rates_as_another_program_consumes(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(30):
        await js.publish("orders.new", f"order-{i}".encode())
    await js.add_consumer("ORDERS", durable_name="WORKER", ack_policy="explicit", ack_wait=30)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        app.jump_to_consumer("ORDERS", "WORKER")
        pane = app.screen.query_one("ConsumersPane")
        await wait_for(pilot, lambda: pane.selected == "WORKER", what="WORKER selected")
        await pilot.press("g")
        detail = app.screen.query_one("#consumer-config")

        def shown() -> str:
            return "\n".join(s.text for s in detail.render_lines(detail.region.reset_offset)) \
                if detail.region.width else ""

        await wait_for(pilot, lambda: "Delivered/s" in shown() and "Pending now 30" in shown(), what="charts")
        psub = await js.pull_subscribe_bind(durable="WORKER", stream="ORDERS")
        for m in await psub.fetch(20, timeout=5):
            await m.ack_sync()
        await js.publish("orders.new", b"one more")
        await wait_for(pilot, lambda: "ORDERS in/s now 0 · max 0" not in shown() and "ORDERS in/s" in shown(),
                       what="the stream's messages in/s moved")
        await wait_for(pilot, lambda: "Pending now 11" in shown() and "max 0/" not in shown()
                       and "Acked/s now" in shown() and "Delivered/s now 0 · max 0" not in shown(),
                       what="delivered and acked rates moved")
        await pilot.press("g")
        await wait_for(pilot, lambda: "Information for Consumer" in shown(), what="back to details")
