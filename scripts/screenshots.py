"""Regenerate screenshots/*.svg by driving the real workbench to each state.

    python scripts/screenshots.py            # against a throwaway nats-server
    python scripts/screenshots.py --embedded # against natslab's own broker
    python scripts/screenshots.py --topology # only the topology view's picture
    python scripts/screenshots.py --tour     # only the guided tour's picture

Nothing here is hand-made: a real broker, real data published with nats-py,
the real NatslabApp driven by Pilot, and ``save_screenshot`` for each picture.
Times, ports and paths are pinned (stable display) so the pictures only change
when the UI does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nats

from natslab.tui.app import NatslabApp
from natslab.tui.broker import BrokerSpec
from natslab.tui.client import ConnectOptions

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
SIZE = (120, 36)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """A throwaway nats-server with JetStream and the monitoring port."""

    def __init__(self, store: Path):
        port = free_port()
        self.http_port = free_port()
        self.proc = subprocess.Popen(
            [shutil.which("nats-server") or "nats-server", "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(store),
             "-m", str(self.http_port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self.url = f"nats://127.0.0.1:{port}"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nats-server did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


async def seed(url: str) -> None:
    """The seed walkthrough's streams, with a few JSON orders to browse."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(name="EVENTS", subjects=["events.>"], retention="interest")
    await js.add_stream(name="JOBS", subjects=["jobs.>"], retention="workqueue")
    await js.add_stream(name="TTL", subjects=["ttl.>"], max_age=8 * 3600, max_msgs=100)
    # the walkthrough's ORDERS, made by hand as a user would (the palette's demo
    # works in DEMO_ names and would leave this one alone)
    await js.add_stream(name="ORDERS", subjects=["orders.>"], max_msgs=1000, max_age=24 * 3600,
                        max_msgs_per_subject=100, duplicate_window=120)
    for n, subject in enumerate(("orders.new", "orders.new", "orders.new", "orders.eu"), start=1):
        await js.publish(subject, f"order-{n} payload".encode())
    await js.add_consumer("ORDERS", durable_name="RDL", ack_policy="explicit", ack_wait=4)
    for subject in ("jobs.a", "jobs.b"):
        await js.publish(subject, b"job")
    await js.add_consumer("EVENTS", durable_name="LIVE", ack_policy="explicit", filter_subject="events.>")
    await js.add_consumer("JOBS", durable_name="WQ", ack_policy="explicit")
    kv = await js.create_key_value(bucket="CONFIG", history=5)
    await kv.put("region", b"eu")
    await kv.put("region", b"us")
    await kv.put("feature.checkout", b'{"enabled": true, "rollout": 25}')
    await kv.put("color", b"blue")
    await kv.delete("color")
    await nc.close()


async def more_orders(url: str) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream()
    for i, (region, amount) in enumerate([("eu", 42.5), ("us", 17.0), ("eu", 99.9)], start=5):
        order = {"id": f"order-{i}", "region": region, "amount": amount, "items": [{"sku": "A-1", "qty": 2}]}
        await js.publish(f"orders.{region}", json.dumps(order).encode(), headers={"Nats-Msg-Id": f"order-{i}"})
    await js.add_consumer("ORDERS", durable_name="WORKER", ack_policy="explicit", ack_wait=60)
    await nc.close()


async def orders_flowing(url: str, seconds: float = 12.0) -> None:
    """A shop publishing orders and another program's worker taking them (bounded: ``seconds``,
    at most 40 rounds): a backlog builds while the worker takes 2 a pull, then drains at 12;
    each batch is acked on the next round, so some are always waiting for their ack."""
    nc = await nats.connect(url, name="order-worker")
    js = nc.jetstream()
    worker = await js.pull_subscribe_bind(durable="WORKER", stream="ORDERS")
    end = time.monotonic() + seconds
    held: list = []
    for tick in range(40):
        if time.monotonic() >= end:
            break
        for i in range(4):
            await js.publish("orders.eu", json.dumps({"order": 1000 + 4 * tick + i}).encode())
        for m in held:
            await m.ack()
        try:
            held = await worker.fetch(2 if tick < 14 else 12, timeout=0.3)
        except nats.errors.TimeoutError:
            held = []
        await asyncio.sleep(0.3)
    for m in held:
        await m.ack()
    await nc.close()


async def more_orders_core(url: str) -> None:
    nc = await nats.connect(url, name="shop-frontend")
    for i in range(8):
        await nc.publish(f"orders.{'eu' if i % 2 else 'us'}", json.dumps({"order": 100 + i}).encode(), headers={"Tenant": "acme"})
    await nc.flush()
    await nc.close()


async def listeners(url: str) -> list:
    """Other programs subscribed to orders: one plain, two in a queue group (for the trace)."""
    async def noop(_msg) -> None:
        return None

    conns = []
    for name, subject, queue in (("billing", "orders.*", ""), ("shipper-1", "orders.eu", "shippers"),
                                 ("shipper-2", "orders.eu", "shippers")):
        nc = await nats.connect(url, name=name)
        await nc.subscribe(subject, queue=queue, cb=noop)
        await nc.flush()
        await nc.flush()
        conns.append(nc)
    return conns


async def link_streams(url: str) -> None:
    """Streams fed by other streams, for the topology picture."""
    nc = await nats.connect(url)

    async def create(config: dict) -> None:
        msg = await nc.request(f"$JS.API.STREAM.CREATE.{config['name']}", json.dumps(config).encode(), timeout=5)
        if "error" in json.loads(msg.data):
            raise RuntimeError(f"creating {config['name']}: {msg.data!r}")

    js = nc.jetstream()
    await create({"name": "ORDERS", "subjects": ["orders.>"]})
    for region in ("eu", "us", "eu"):
        await js.publish(f"orders.{region}", b'{"order": 1}')
    kv = await js.create_key_value(bucket="CONFIG")
    await kv.put("region", b"eu")
    await create({"name": "ORDERS_BACKUP", "mirror": {"name": "ORDERS"}})
    await create({"name": "ORDERS_EU", "sources": [{"name": "ORDERS", "filter_subject": "orders.eu"}]})
    await create({"name": "AUDIT", "subjects": ["audit.>"]})
    await create({"name": "SHIPPING", "subjects": ["ship.*"],
                  "republish": {"src": "ship.*", "dest": "audit.ship.{{wildcard(1)}}"}})
    await create({"name": "CONFIG_COPY", "mirror": {"name": "KV_CONFIG"}})
    await create({"name": "ALL_WORK", "sources": [{"name": "ORDERS_EU"}, {"name": "SHIPPING", "opt_start_seq": 1}]})
    await create({"name": "LEGACY", "sources": [{"name": "RETIRED"}]})  # its origin is gone: the link shows why
    await js.publish("ship.dhl", b"parcel 1")
    await nc.close()


async def topology_shot(store: Path) -> None:
    """screenshots/topology.svg on a broker of its own (``--topology``)."""
    broker = Broker(store)
    try:
        app = NatslabApp(connect=ConnectOptions(url=broker.url), stable_display=True,
                         display_url="nats://127.0.0.1:4222", display_version="2.x", remember_theme=False,
                         theme_name="natslab-dark")
        async with app.run_test(size=SIZE) as pilot:
            while app.client is None:
                await pilot.pause(0.05)
            await link_streams(broker.url)
            from natslab.tui.screens.topology import open_topology

            open_topology(app)
            await settle(pilot, 2.5)
            await shoot(app, "topology")
            await app.shutdown()
    finally:
        broker.stop()


async def tour_shot(store: Path) -> None:
    """screenshots/tour.svg: the guided tour run on a broker of its own up to
    step 7 (pull again: tries 2), with the walkthrough's own 4 s ack wait."""
    broker = Broker(store)
    try:
        app = NatslabApp(connect=ConnectOptions(url=broker.url), stable_display=True,
                         display_url="nats://127.0.0.1:4222", display_version="2.x", remember_theme=False,
                         theme_name="natslab-dark")
        async with app.run_test(size=SIZE) as pilot:
            while app.client is None or not app.client.connected:
                await pilot.pause(0.05)
            await settle(pilot, 0.5)
            await pilot.press("T")
            await settle(pilot, 0.5)
            panel = app.screen.query_one("#tour")
            for step in range(7):
                await pilot.press("enter")  # run the step
                if step == 0:  # a server natslab did not start: the tour asks first
                    await settle(pilot, 0.5)
                    await pilot.press("y")
                while step not in panel.results:
                    if step in panel.failed:
                        raise RuntimeError(f"tour step {step + 1}: {panel.failed[step]}")
                    await pilot.pause(0.1)
                if step == 4:  # the time axis at 1 s per cell (stable display starts it at 1 m)
                    app.screen.query_one("#time-axis").seconds_per_cell = 1.0
                if step < 6:
                    await pilot.press("enter")  # on to the next one
            await settle(pilot, 0.5)  # within the second delivery's 4 s ack wait
            await shoot(app, "tour")
            await app.shutdown()
    finally:
        broker.stop()


async def show(app, pilot, tab: str) -> None:
    app.action_tab(tab)
    while not app.screen.query(f"#{tab}-pane"):
        await pilot.pause(0.05)
    await pilot.pause(0.4)


async def settle(pilot, seconds: float = 1.2) -> None:
    await pilot.pause(seconds)
    await pilot.wait_for_scheduled_animations()


async def shoot(app: NatslabApp, name: str) -> None:
    path = app.save_screenshot(filename=f"{name}.svg", path=str(OUT))
    print("wrote", Path(path).relative_to(ROOT))


async def main(embedded: bool) -> None:
    OUT.mkdir(exist_ok=True)
    store = Path(tempfile.mkdtemp(prefix="natslab-shots-"))
    # the user's own settings, themes and publish history stay out of the pictures
    os.environ["XDG_CONFIG_HOME"] = str(store / "config")
    os.environ["XDG_DATA_HOME"] = str(store / "data")
    # --embedded: the app starts natslab's broker itself, as `natslab --memory` would
    broker = None if embedded else Broker(store)
    try:
        app = NatslabApp(
            connect=None if embedded else ConnectOptions(url=broker.url),
            broker=BrokerSpec(port=0, memory=True) if embedded else None,
            stable_display=True,
            display_url="nats://127.0.0.1:4222",
            display_store="/tmp/natslab-mem" if embedded else None,
            monitor_url=None if embedded else f"http://127.0.0.1:{broker.http_port}",
            remember_theme=False,
            theme_name="natslab-dark",
        )
        async with app.run_test(size=SIZE) as pilot:
            while app.client is None:
                await pilot.pause(0.05)
            url = app.client.server_summary().client_url
            await seed(url)
            await more_orders(url)

            # 1. streams with ORDERS selected and its config/state
            app.jump_to_stream("ORDERS")
            await settle(pilot, 1.5)
            await shoot(app, "streams")

            # 2. message browser, pretty JSON
            await pilot.press("m")
            await settle(pilot, 0.8)
            app.screen.query_one("#browser-list").move_cursor(row=5)
            await pilot.press("J")
            await settle(pilot, 0.5)
            await shoot(app, "messages")

            # 3. create form with a bad subject, shown inline
            app.action_tab("streams")
            app.screen.query_one("#streams-table").focus()
            await pilot.press("n")
            await settle(pilot, 0.3)
            app.screen.query_one("#name").value = "PAYMENTS"
            app.screen.query_one("#subjects").value = "payments..card"
            app.screen.query_one("#max_age").value = "ten days"
            await pilot.click("#form-submit")
            await settle(pilot, 0.3)
            await shoot(app, "stream-form")
            await pilot.press("escape")

            # 4. the pull hand: fetch two, let the ack wait run out, fetch again
            app.open_pull_hand("ORDERS", "RDL")
            await settle(pilot, 0.3)
            # the time axis at 1 s per cell (stable display starts it at 1 m, for the tests)
            app.screen.query_one("#time-axis").seconds_per_cell = 1.0
            app.screen.query_one("#pull-batch").value = "2"
            await pilot.click("#pull-fetch")
            await settle(pilot, 0.5)
            await shoot(app, "pull-hand")
            await pilot.pause(4.5)
            await pilot.click("#pull-fetch")
            await settle(pilot, 0.5)
            cards = list(app.screen.query("HandCard"))
            if cards:
                cards[0].focus()
                await pilot.press("a")
            if len(cards) > 1:  # the other one nak'd with the dialog's 5 s delay: the dashed gap
                await settle(pilot, 0.3)
                cards[1].focus()
                await pilot.press("N")
                await settle(pilot, 0.3)
                await pilot.press("enter")
            await settle(pilot, 1.5)
            await shoot(app, "redelivery")

            # 5. consumers of ORDERS, live
            app.jump_to_consumer("ORDERS", "RDL")
            await settle(pilot, 1.2)
            await shoot(app, "consumers")

            # 6. help
            await pilot.press("question_mark")
            await settle(pilot, 0.3)
            await shoot(app, "help")
            await pilot.press("escape")

            # 7. publish composer: three templated JetStream publishes
            await show(app, pilot, "publish")
            app.screen.query_one("#pub-subject").value = "orders.eu"
            app.screen.query_one("#pub-headers").text = "Tenant: acme\nTrace-Id: demo-1"
            app.screen.query_one("#pub-payload").text = '{"order": {{n}}, "region": "eu"}'
            app.screen.query_one("#pub-count").value = "3"
            app.screen.query_one("#pub-send").press()
            await settle(pilot, 1.0)
            await shoot(app, "publish")

            # 7b. where did the composed message go? published and traced, others listening
            others = await listeners(url)
            app.screen.query_one("#pub-count").value = ""
            app.screen.query_one("#pub-subject").focus()
            await pilot.press("ctrl+t")
            await settle(pilot, 1.0)
            await pilot.press("p")
            await settle(pilot, 1.0)
            await shoot(app, "trace")
            await pilot.press("escape")
            for nc in others:
                await nc.close()

            # 8. request-reply against an echo mock
            await show(app, pilot, "request")
            app.screen.query_one("#mock-subject").value = "svc.upper"
            app.screen.query_one("#mock-start").press()
            await settle(pilot, 0.5)
            app.screen.query_one("#req-subject").value = "svc.upper"
            app.screen.query_one("#req-payload").text = "shipped order 4711"
            app.screen.query_one("#req-count").value = "20"
            app.screen.query_one("#req-send").press()
            await settle(pilot, 1.0)
            await shoot(app, "request")

            # 9. KV browser with a key's history
            app.jump_to_bucket("CONFIG")
            await settle(pilot, 1.5)
            keys = app.screen.query_one("#kv-keys")
            keys.focus()
            keys.select_key("region")
            await settle(pilot, 0.8)
            await shoot(app, "kv")

            # 10. object store
            await show(app, pilot, "objects")
            app.screen.query_one("#obj-new").value = "FILES"
            app.screen.query_one("#obj-create").press()
            await settle(pilot, 2.5)
            sample = store / "walkthrough.txt"
            sample.write_text("NATS JetStream walkthrough\n" * 20000)
            app.screen.query_one("#obj-path").value = str(sample)
            app.screen.query_one("#obj-put").press()
            await settle(pilot, 2.0)
            await shoot(app, "objects")

            # 11. live tail
            await show(app, pilot, "tail")
            app.screen.query_one("#tail-subject").value = "orders.>"
            app.screen.query_one("#tail-go").press()
            await settle(pilot, 0.5)
            await more_orders_core(url)
            await settle(pilot, 0.8)
            await shoot(app, "tail")

            # 12. connections (monitoring endpoint)
            await show(app, pilot, "connections")
            await settle(pilot, 2.2)
            await shoot(app, "connections")

            # 13. the smallest terminal it is laid out for: consumers at 80x24
            await pilot.resize_terminal(80, 24)
            app.jump_to_consumer("ORDERS", "RDL")
            await settle(pilot, 1.5)
            await shoot(app, "small-terminal")

            # 14. rates over time (g) while orders come in and another program's worker takes them
            # (last: the orders it adds would change every picture's header counts)
            await pilot.resize_terminal(*SIZE)
            app.jump_to_consumer("ORDERS", "WORKER")
            await settle(pilot, 1.0)
            await pilot.press("g")
            flowing = asyncio.create_task(orders_flowing(url))
            await pilot.pause(11.0)  # shot while the orders still flow: the latest values are not 0
            await shoot(app, "rates")
            await flowing
            await app.shutdown()
    finally:
        if broker is not None:
            broker.stop()
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedded", action="store_true", help="use natslab's own broker")
    parser.add_argument("--topology", action="store_true", help="only screenshots/topology.svg")
    parser.add_argument("--tour", action="store_true", help="only screenshots/tour.svg")
    args = parser.parse_args()
    if args.topology or args.tour:
        OUT.mkdir(exist_ok=True)
        shots = Path(tempfile.mkdtemp(prefix="natslab-shots-"))
        os.environ["XDG_CONFIG_HOME"] = str(shots / "config")
        os.environ["XDG_DATA_HOME"] = str(shots / "data")
        try:
            asyncio.run(topology_shot(shots) if args.topology else tour_shot(shots))
        finally:
            shutil.rmtree(shots, ignore_errors=True)
    else:
        asyncio.run(main(args.embedded))
        shots = Path(tempfile.mkdtemp(prefix="natslab-shots-"))
        try:
            asyncio.run(tour_shot(shots))
        finally:
            shutil.rmtree(shots, ignore_errors=True)
    sys.exit(0)
