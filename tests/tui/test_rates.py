"""Rates over time: the chart painter on a time axis, the rates derived from
polled counters, the zoom of the window, and `g` / `z` in the consumers pane
drawing them live on a real broker."""

from __future__ import annotations

from typing import Callable

from textual.app import App, ComposeResult
from textual.widgets import Static

import pytest
from rich.style import Style

from natslab.tui.widgets.chart import ConsumerRates, StreamRates, columns, rates_view, render_chart, time_columns

from .conftest import connected, wait_for


def test_chart_rows_use_eighth_blocks_scaled_to_the_highest_value():
    text = render_chart("Delivered/s", [0, 1, 2, 4, 8], 30, height=2).plain
    title, top, bottom = text.splitlines()
    assert title == "Delivered/s now 8 · max 8"
    assert bottom == " ▂▄██".ljust(30) and top == "    █".ljust(30)
    # a narrow chart keeps its title on one line: the latest value stays, the highest goes
    assert render_chart("Delivered/s", [0, 1, 2, 4, 8], 20).plain.splitlines()[0] == "Delivered/s now 8"
    assert render_chart("ORDERS bytes/s", [980, 2048], 40, unit="B").plain.startswith(
        "ORDERS bytes/s now 2.0KiB · max 2.0KiB")


def test_long_history_keeps_bursts():
    assert columns([0, 0, 9, 0, 0, 0], 3) == [0, 9, 0]
    assert columns([1, 2], 5) == [1, 2]


def test_time_columns_slice_the_window_ending_now():
    points = [(1.0, 5.0), (1.5, 9.0), (4.2, 2.0)]
    # 6 s in 6 columns: nothing before the first sample, the slice's highest value,
    # a slice without a sample keeps the one before (the poll is slower than a slice)
    assert time_columns(points, now=6.0, window=6.0, width=6) == [None, 9.0, 9.0, 9.0, 2.0, 2.0]
    # zoomed out: the same samples squeezed into the right end, older ones dropped off the left
    assert time_columns(points, now=6.0, window=12.0, width=6) == [None, None, None, 9.0, 9.0, 2.0]
    assert time_columns(points, now=20.0, window=6.0, width=6) == [None] * 6
    text = render_chart("Ack pending", [None, 9.0, 9.0, 2.0] + [None] * 26, 30, height=1).plain
    assert text.splitlines() == ["Ack pending now 2 · max 9", " ██▂".ljust(30)]


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
    r.record(0.0, last_seq=4, size=222, first_seq=1, messages=4)
    r.record(0.5, last_seq=9, size=500, first_seq=1, messages=9)
    assert r.in_per_second() == [10.0] and r.size() == [222.0, 500.0]
    assert r.bytes_in() == [(0.5, 556.0)]  # nothing left the stream: the growth is what came in
    # at its limit (first seq moved, the size stayed): messages in times the average stored size
    r.record(1.0, last_seq=19, size=500, first_seq=11, messages=9)
    assert r.bytes_in()[-1] == (1.0, 10 * 500 / 9 / 0.5)
    # a per-subject limit replacing messages in the middle: the first seq stays, the size too
    r.record(1.5, last_seq=29, size=500, first_seq=11, messages=9)
    assert r.bytes_in()[-1] == (1.5, 10 * 500 / 9 / 0.5)


class ChartsHost(App):
    """A minute and a half of polls (twice a second): a publisher at 20 msg/s
    pausing in the middle, and a worker speeding up, then draining its backlog."""

    def __init__(self, window: float):
        super().__init__()
        self.window = window

    def compose(self) -> ComposeResult:
        r, sr = ConsumerRates(), StreamRates()
        delivered = 0
        for i in range(180):
            delivered += min(i // 4, 20) if delivered < 1200 else 0
            r.record(i * 0.5, delivered, max(0, delivered - 15), 15 if 0 < delivered < 1200 else 0,
                     max(0, 400 + 10 * i - delivered))
            last = 400 + 10 * min(i, 60) + 10 * max(0, i - 100)  # no publishes between 30 s and 50 s
            sr.record(i * 0.5, last, 98 * last, 1, last)
        styles = {"stream": Style(color="cyan"), "delivered": Style(color="blue"), "acked": Style(color="green"),
                  "ack_pending": Style(color="yellow"), "pending": Style(color="magenta")}
        yield Static(rates_view("WORKER", r, 78, styles, stream=("ORDERS", sr), window=self.window))


@pytest.mark.parametrize("window", [60.0, 300.0], ids=["1m", "5m"])
def test_rates_snapshot(snap_compare, window):
    assert snap_compare(ChartsHost(window), terminal_size=(80, 15))


async def charts_of(app, pilot, stream: str, consumer: str) -> Callable[[], str]:
    """Once connected, select ``consumer`` of ``stream`` ("": the stream
    itself) in the Consumers pane and press g; returns a reader of the
    detail panel's text, where the charts are drawn."""
    await connected(app, pilot)
    app.jump_to_consumer(stream, consumer)
    pane = app.screen.query_one("ConsumersPane")
    await wait_for(pilot, lambda: pane.stream == stream and (not consumer or pane.selected == consumer),
                   what=f"{consumer or stream} selected")
    await pilot.press("g")
    detail = app.screen.query_one("#consumer-config")

    def shown() -> str:
        return "\n".join(s.text for s in detail.render_lines(detail.region.reset_offset)) \
            if detail.region.width else ""

    return shown


async def test_g_shows_rates_as_another_program_consumes(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(30):
        await js.publish("orders.new", f"order-{i}".encode())
    await js.add_consumer("ORDERS", durable_name="WORKER", ack_policy="explicit", ack_wait=30)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        shown = await charts_of(app, pilot, "ORDERS", "WORKER")
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
        # z: the window zooms out to 5 m, 15 m, and back to 1 m
        assert "WORKER · the last 1 m" in shown()
        await pilot.press("z")
        await wait_for(pilot, lambda: "WORKER · the last 5 m" in shown(), what="5 m window")
        await pilot.press("z", "z")
        await wait_for(pilot, lambda: "WORKER · the last 1 m" in shown(), what="back to 1 m")
        await pilot.press("g")
        await wait_for(pilot, lambda: "Information for Consumer" in shown(), what="back to details")
        # ? : the ruler's legend, the charts' and the keys
        await pilot.press("question_mark")

        def legends() -> str:
            return "\n".join(str(w.render()) for w in app.screen.query(".help-legend"))

        await wait_for(pilot, lambda: "Rates over time (Consumers, g)" in legends()
                       and "z window (1 m, 5 m, 15 m)" in legends(), what="charts legend on ?")


async def test_a_stream_without_consumers_shows_its_own_rates(make_app, outside):
    js = outside.jetstream()
    await js.add_stream(name="LOGS", subjects=["logs.>"])
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        shown = await charts_of(app, pilot, "LOGS", "")
        await wait_for(pilot, lambda: "LOGS · the last 1 m" in shown() and "LOGS in/s" in shown(), what="stream charts")
        assert "Delivered/s" not in shown()
        for i in range(10):
            await js.publish("logs.a", b"x" * 100)
        await wait_for(pilot, lambda: "LOGS bytes/s now 0 B · max 0 B" not in shown()
                       and "LOGS bytes/s" in shown(), what="bytes in/s moved")
