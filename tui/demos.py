"""Guided demos from the command palette, replaying the seed walkthrough.

Demos never touch the user's data: every stream, subject and bucket they make
is named ``DEMO_...`` / ``demo....``, a demo that finds its own leftovers asks
before resetting them, and on a server natslab did not start itself (remote)
every demo asks first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual import work

from .client import NatsError

if TYPE_CHECKING:
    from .app import NatslabApp

NS = 1_000_000_000
PREFIX = "DEMO_"


@dataclass(frozen=True)
class Demo:
    key: str
    title: str
    summary: str
    hint: str
    stream: dict | None = None  # the stream config the demo (re)creates
    messages: tuple[tuple[str, bytes], ...] = ()
    consumer: dict | None = None
    bucket: str | None = None  # a KV bucket instead of a stream
    values: tuple[tuple[str, bytes], ...] = field(default=())

    @property
    def owned_stream(self) -> str:
        """The one stream this demo creates (a bucket is the stream KV_<bucket>)."""
        return f"KV_{self.bucket}" if self.bucket else self.stream["name"]


REDELIVERY = Demo(
    "redelivery", "Demo: redelivery",
    "DEMO_ORDERS stream, 4 orders, pull consumer RDL with ack wait 4s",
    "DEMO_ORDERS has 4 orders and RDL waits 4 s for an ack. Press f to fetch one, don't ack, "
    "wait for the countdown, press f again: tries 2.",
    # demo.o.new is as long as the walkthrough's orders.new, so the stream's
    # byte count (which counts subjects) is the walkthrough's 222 B
    stream={
        "name": "DEMO_ORDERS", "subjects": ["demo.o.>"], "storage": "file", "retention": "limits",
        "discard": "old", "max_msgs": 1000, "max_age": 24 * 3600 * NS, "max_msgs_per_subject": 100,
        "duplicate_window": 120 * NS, "num_replicas": 1,
    },
    messages=(
        ("demo.o.new", b"order-1 payload"),
        ("demo.o.new", b"order-2 payload"),
        ("demo.o.new", b"order-3 payload"),
        ("demo.o.eu", b"order-eu-1 payload"),
    ),
    consumer={"durable_name": "RDL", "ack_policy": "explicit", "deliver_policy": "all", "ack_wait": 4 * NS,
              "max_ack_pending": 1000},
)

DEMOS = {d.key: d for d in (
    REDELIVERY,
    Demo("limits", "Demo: limits (max 2 messages, discard old)", "DEMO_LIMITS keeps 2 messages of 4",
         "Four publishes, max 2 kept: Messages 2, First seq moved to 3.",
         stream={"name": "DEMO_LIMITS", "subjects": ["demo.limits.>"], "retention": "limits", "discard": "old",
                 "max_msgs": 2, "num_replicas": 1},
         messages=(("demo.limits.a", b"m1"), ("demo.limits.b", b"m2"), ("demo.limits.c", b"m3"),
                   ("demo.limits.d", b"m4"))),
    Demo("max-age", "Demo: max-age (messages vanish after 8 s)", "DEMO_TTL drops messages after 8 s",
         "Three messages now; watch Messages drop to 0 after 8 seconds.",
         stream={"name": "DEMO_TTL", "subjects": ["demo.ttl.>"], "retention": "limits", "max_age": 8 * NS,
                 "max_msgs": 100, "num_replicas": 1},
         messages=(("demo.ttl.a", b"m1"), ("demo.ttl.b", b"m2"), ("demo.ttl.c", b"m3"))),
    Demo("interest", "Demo: interest retention (kept only until acked)", "DEMO_EVENTS with consumer LIVE",
         "One message held for consumer LIVE. Fetch it in the pull hand and ack: Messages drops to 0.",
         stream={"name": "DEMO_EVENTS", "subjects": ["demo.events.>"], "retention": "interest", "num_replicas": 1},
         messages=(("demo.events.login", b"kept-until-acked"),),
         consumer={"durable_name": "LIVE", "ack_policy": "explicit", "filter_subject": "demo.events.>"}),
    Demo("workqueue", "Demo: workqueue (deleted as acked)", "DEMO_JOBS with consumer WQ",
         "Two jobs for consumer WQ. Fetch one and ack it: the stream keeps one message.",
         stream={"name": "DEMO_JOBS", "subjects": ["demo.jobs.>"], "retention": "workqueue", "num_replicas": 1},
         messages=(("demo.jobs.a", b"job a"), ("demo.jobs.b", b"job b")),
         consumer={"durable_name": "WQ", "ack_policy": "explicit"}),
    Demo("kv-history", "Demo: KV history", "bucket DEMO_CONFIG with three revisions of one key",
         "Bucket DEMO_CONFIG keeps 5 revisions; key region was put three times — see its history.",
         bucket="DEMO_CONFIG", values=(("region", b"eu"), ("region", b"us"), ("region", b"apac"))),
)}


async def exists(client, demo: Demo) -> bool:
    return await stream_exists(client, demo.owned_stream)


async def stream_exists(client, name: str) -> bool:
    try:
        await client.stream_info(name)
    except NatsError as exc:
        if exc.code == 404:
            return False
        raise
    return True


async def set_up(client, demo: Demo, *, reset: bool) -> None:
    """Create what the demo needs; ``reset`` deletes the demo's own stream first."""
    if reset:
        if demo.bucket:
            await client.delete_bucket(demo.bucket)
        else:
            await client.delete_stream(demo.owned_stream)
    if demo.bucket:
        await client.create_bucket(demo.bucket, 5, None, None, "file")
        for key, value in demo.values:
            await client.kv_op(demo.bucket, "put", key, value)
        return
    await client.create_stream(demo.stream)
    if demo.consumer:
        # before the messages: an interest stream keeps only what a consumer wants
        await client.create_consumer(demo.owned_stream, demo.consumer)
    for subject, data in demo.messages:
        await client.js_publish(subject, data)


def question(app: "NatslabApp", demo: Demo, found: bool) -> str | None:
    """What to ask before running the demo, or None when nothing needs asking."""
    return ask_before(app, demo.title, [demo.owned_stream], [demo.owned_stream] if found else [])


def is_remote(app: "NatslabApp") -> bool:
    """A server natslab did not start itself: anything made there is asked first."""
    return app.header_info.mode != "embedded"


def ask_before(app: "NatslabApp", title: str, creates: list[str], found: list[str], *,
               remote: bool | None = None) -> str | None:
    """The one question of the demos and the tour before they create ``creates``
    (``found``: those that exist already and would be replaced), or None.
    ``remote`` False: the user already agreed to work on this server."""
    parts = []
    if is_remote(app) if remote is None else remote:
        parts.append(f"{title} creates {', '.join(creates)} on the server at "
                     f"{app.header_info.url or app.connect_options.url}, which natslab did not start.")
    if found:
        parts.append(f"{', '.join(found)} {'exists' if len(found) == 1 else 'exist'} already (from an earlier "
                     "demo?): deleted and made again, with all messages and consumers.")
    return " ".join(parts) + " Go ahead?" if parts else None


def may_write(app: "NatslabApp", what: str) -> bool:
    """Connected and not read-only; otherwise says why ``what`` does not run."""
    if app.client is None:
        app.notify("Not connected yet", severity="warning")
        return False
    if getattr(app, "read_only", False):
        app.notify(f"Read-only: {what} create streams, so they do not run", severity="warning")
        return False
    return True


async def confirm(app: "NatslabApp", ask: str, label: str) -> bool:
    from .widgets.confirm import ConfirmDialog

    return bool(await app.push_screen_wait(ConfirmDialog(ask, label)))


def run_demo(app: "NatslabApp", key: str) -> None:
    _demo_worker(app, DEMOS[key])


@work(group="demo", exclusive=True, exit_on_error=False)
async def _demo_worker(app: "NatslabApp", demo: Demo) -> None:
    if not may_write(app, "demos"):
        return
    client = app.client
    try:
        found = await exists(client, demo)
    except NatsError as exc:
        app.notify(f"Demo not started: {exc}", severity="error")
        return
    ask = question(app, demo, found)
    if ask is not None:
        if not await confirm(app, ask, "Reset and run" if found else "Run demo"):
            app.notify(f"{demo.title}: nothing was changed", timeout=4)
            return
    try:
        await set_up(client, demo, reset=found)
    except NatsError as exc:
        app.notify(f"Demo setup failed: {exc}", severity="error")
        return
    if demo.bucket:
        app.jump_to_bucket(demo.bucket)
    elif demo is REDELIVERY:
        app.jump_to_consumer(demo.owned_stream, demo.consumer["durable_name"], show=False)
        app.open_pull_hand(demo.owned_stream, demo.consumer["durable_name"])
    elif demo.consumer:
        app.jump_to_consumer(demo.owned_stream, demo.consumer["durable_name"])
    else:
        app.jump_to_stream(demo.owned_stream)
    app.notify(demo.hint, title=demo.title, timeout=12)
