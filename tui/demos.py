"""Guided demos from the command palette, replaying the seed walkthrough."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work

from .client import NatsError

if TYPE_CHECKING:
    from .app import NatslabApp

NS = 1_000_000_000

ORDERS = {
    "name": "ORDERS",
    "subjects": ["orders.>"],
    "storage": "file",
    "retention": "limits",
    "discard": "old",
    "max_msgs": 1000,
    "max_age": 24 * 3600 * NS,
    "max_msgs_per_subject": 100,
    "duplicate_window": 120 * NS,
    "num_replicas": 1,
}
ORDER_MESSAGES = [
    ("orders.new", b"order-1 payload"),
    ("orders.new", b"order-2 payload"),
    ("orders.new", b"order-3 payload"),
    ("orders.eu", b"order-eu-1 payload"),
]
RDL = {"durable_name": "RDL", "ack_policy": "explicit", "deliver_policy": "all", "ack_wait": 4 * NS, "max_ack_pending": 1000}


async def setup_redelivery(client) -> None:
    """Stream ORDERS on orders.> with four orders and durable pull consumer RDL (ack wait 4 s).

    An existing ORDERS is reset (RDL deleted, stream purged) so the demo always
    starts from the same four messages.
    """
    try:
        await client.stream_info("ORDERS")
    except NatsError:
        await client.create_stream(ORDERS)
    else:
        try:
            await client.delete_consumer("ORDERS", "RDL")
        except NatsError:
            pass
        await client.purge_stream("ORDERS")
    for subject, data in ORDER_MESSAGES:
        await client.js_publish(subject, data)
    await client.create_consumer("ORDERS", RDL)


def run_redelivery_demo(app: "NatslabApp") -> None:
    _redelivery_worker(app)


@work(group="demo", exclusive=True, exit_on_error=False)
async def _redelivery_worker(app: "NatslabApp") -> None:
    client = app.client
    if client is None:
        app.notify("Not connected yet", severity="warning")
        return
    try:
        await setup_redelivery(client)
    except NatsError as exc:
        app.notify(f"Demo setup failed: {exc}", severity="error")
        return
    app.jump_to_consumer("ORDERS", "RDL", show=False)
    app.open_pull_hand("ORDERS", "RDL")
    app.notify(
        "ORDERS has 4 orders and RDL waits 4 s for an ack. Press f to fetch one, don't ack, "
        "wait for the countdown, press f again: tries 2.",
        title="Demo: redelivery",
        timeout=12,
    )
