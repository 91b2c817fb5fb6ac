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


# ---- the walkthrough's other scenarios ---------------------------------------
# Each: what to create, what to publish, and what to watch for afterwards.
SCENARIOS = {
    "limits": (
        "Demo: limits (max 2 messages, discard old)",
        {"name": "LIMITS", "subjects": ["limits.>"], "retention": "limits", "discard": "old", "max_msgs": 2, "num_replicas": 1},
        [("limits.a", b"m1"), ("limits.b", b"m2"), ("limits.c", b"m3"), ("limits.d", b"m4")],
        None,
        "LIMITS",
        "Four publishes, max 2 kept: Messages 2, First seq moved to 3.",
    ),
    "max-age": (
        "Demo: max-age (messages vanish after 8 s)",
        {"name": "TTL", "subjects": ["ttl.>"], "retention": "limits", "max_age": 8 * NS, "max_msgs": 100, "num_replicas": 1},
        [("ttl.a", b"m1"), ("ttl.b", b"m2"), ("ttl.c", b"m3")],
        None,
        "TTL",
        "Three messages now; watch Messages drop to 0 after 8 seconds.",
    ),
    "interest": (
        "Demo: interest retention (kept only until acked)",
        {"name": "EVENTS", "subjects": ["events.>"], "retention": "interest", "num_replicas": 1},
        [("events.login", b"kept-until-acked")],
        {"durable_name": "LIVE", "ack_policy": "explicit", "filter_subject": "events.>"},
        "EVENTS",
        "One message held for consumer LIVE. Fetch it in the pull hand and ack: Messages drops to 0.",
    ),
    "workqueue": (
        "Demo: workqueue (deleted as acked)",
        {"name": "JOBS", "subjects": ["jobs.>"], "retention": "workqueue", "num_replicas": 1},
        [("jobs.a", b"job a"), ("jobs.b", b"job b")],
        {"durable_name": "WQ", "ack_policy": "explicit"},
        "JOBS",
        "Two jobs for consumer WQ. Fetch one and ack it: the stream keeps one message.",
    ),
}


async def setup_scenario(client, key: str) -> None:
    _title, config, messages, consumer, _stream, _hint = SCENARIOS[key]
    try:
        await client.delete_stream(config["name"])
    except NatsError:
        pass
    await client.create_stream(config)
    if consumer:
        await client.create_consumer(config["name"], consumer)
    for subject, data in messages:
        await client.js_publish(subject, data)


async def setup_kv_history(client) -> None:
    try:
        await client.delete_bucket("CONFIG")
    except NatsError:
        pass
    await client.create_bucket("CONFIG", 5, None, None, "file")
    for value in (b"eu", b"us", b"apac"):
        await client.kv_op("CONFIG", "put", "region", value)


def run_scenario(app: "NatslabApp", key: str) -> None:
    _scenario_worker(app, key)


@work(group="demo", exclusive=True, exit_on_error=False)
async def _scenario_worker(app: "NatslabApp", key: str) -> None:
    client = app.client
    if client is None:
        app.notify("Not connected yet", severity="warning")
        return
    try:
        if key == "kv-history":
            await setup_kv_history(client)
        else:
            await setup_scenario(client, key)
    except NatsError as exc:
        app.notify(f"Demo setup failed: {exc}", severity="error")
        return
    if key == "kv-history":
        app.jump_to_bucket("CONFIG")
        app.notify("Bucket CONFIG keeps 5 revisions; key region was put three times — see its history.",
                   title="Demo: KV history", timeout=10)
        return
    title, config, _m, consumer, stream, hint = SCENARIOS[key]
    if consumer:
        app.jump_to_consumer(stream, consumer["durable_name"])
    else:
        app.jump_to_stream(stream)
    app.notify(hint, title=title, timeout=10)
