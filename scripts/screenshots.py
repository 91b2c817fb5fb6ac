"""Regenerate screenshots/*.svg by driving the real workbench to each state.

    python scripts/screenshots.py            # against a throwaway nats-server
    python scripts/screenshots.py --embedded # against natslab's own broker

Nothing here is hand-made: a real broker, real data published with nats-py,
the real NatslabApp driven by Pilot, and ``save_screenshot`` for each picture.
Times, ports and paths are pinned (stable display) so the pictures only change
when the UI does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nats

from natslab.tui.app import NatslabApp
from natslab.tui.client import ConnectOptions

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
SIZE = (120, 36)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, embedded: bool, store: Path):
        self.embedded = embedded
        if embedded:
            from natslab.server import ServerThread

            self.thread = ServerThread(host="127.0.0.1", port=0, jetstream=True, store_dir=store)
            self.thread.start()
            self.url = self.thread.client_url
            return
        port = free_port()
        self.proc = subprocess.Popen(
            [shutil.which("nats-server") or "nats-server", "-a", "127.0.0.1", "-p", str(port), "-js", "-sd", str(store)],
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
        if self.embedded:
            self.thread.stop()
        else:
            self.proc.terminate()
            self.proc.wait(10)


async def seed(url: str) -> None:
    """The seed walkthrough's streams, with a few JSON orders to browse."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    await js.add_stream(name="EVENTS", subjects=["events.>"], retention="interest")
    await js.add_stream(name="JOBS", subjects=["jobs.>"], retention="workqueue")
    await js.add_stream(name="TTL", subjects=["ttl.>"], max_age=8 * 3600, max_msgs=100)
    for subject in ("jobs.a", "jobs.b"):
        await js.publish(subject, b"job")
    await js.add_consumer("EVENTS", durable_name="LIVE", ack_policy="explicit", filter_subject="events.>")
    await js.add_consumer("JOBS", durable_name="WQ", ack_policy="explicit")
    await nc.close()


async def more_orders(url: str) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream()
    for i, (region, amount) in enumerate([("eu", 42.5), ("us", 17.0), ("eu", 99.9)], start=5):
        order = {"id": f"order-{i}", "region": region, "amount": amount, "items": [{"sku": "A-1", "qty": 2}]}
        await js.publish(f"orders.{region}", json.dumps(order).encode(), headers={"Nats-Msg-Id": f"order-{i}"})
    await js.add_consumer("ORDERS", durable_name="WORKER", ack_policy="explicit", ack_wait=60)
    await nc.close()


async def settle(pilot, seconds: float = 1.2) -> None:
    await pilot.pause(seconds)
    await pilot.wait_for_scheduled_animations()


async def shoot(app: NatslabApp, name: str) -> None:
    path = app.save_screenshot(filename=f"{name}.svg", path=str(OUT))
    print("wrote", Path(path).relative_to(ROOT))


async def main(embedded: bool) -> None:
    OUT.mkdir(exist_ok=True)
    store = Path(tempfile.mkdtemp(prefix="natslab-shots-"))
    broker = Broker(embedded, store)
    try:
        await seed(broker.url)
        app = NatslabApp(
            connect=ConnectOptions(url=broker.url),
            stable_display=True,
            display_url="nats://127.0.0.1:4222",
            remember_theme=False,
            theme_name="natslab-dark",
        )
        app.header_info = app.header_info.__class__(mode="embedded", store_dir="~/.local/share/natslab")
        async with app.run_test(size=SIZE) as pilot:
            while app.client is None:
                await pilot.pause(0.05)
            app.action_demo_redelivery()
            await settle(pilot, 1.0)
            await more_orders(broker.url)

            # 1. streams with ORDERS selected and its config/state
            app.jump_to_stream("ORDERS")
            await settle(pilot, 1.5)
            await shoot(app, "streams")

            # 2. message browser, pretty JSON
            await pilot.press("m")
            await settle(pilot, 0.8)
            app.screen.query_one("#browser-list").move_cursor(row=5)
            await pilot.press("j")
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
            await settle(pilot, 0.5)
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
            await app.shutdown()
    finally:
        broker.stop()
        shutil.rmtree(store, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedded", action="store_true", help="use natslab's own broker")
    asyncio.run(main(parser.parse_args().embedded))
    sys.exit(0)
