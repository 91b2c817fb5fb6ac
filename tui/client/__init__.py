"""The one client layer between the workbench and NATS.

Every pane talks to the broker through :class:`NatsClient` and gets typed
results back (see ``models``). This is the only place that knows ``$JS.API``
subject names; it works the same against natslab's embedded broker and any
nats-server, because it only speaks the public protocol through nats-py.
"""

from __future__ import annotations

from .core import ConnectOptions, NatsClient, NatsError
from .models import (
    AccountUsage,
    ConsumerSummary,
    DeliveryEvent,
    FetchedMessage,
    PubAckResult,
    ServerSummary,
    StoredMessage,
    StreamSummary,
)
from .subjects import name_error, subject_error

__all__ = [
    "AccountUsage",
    "ConnectOptions",
    "ConsumerSummary",
    "DeliveryEvent",
    "FetchedMessage",
    "NatsClient",
    "NatsError",
    "PubAckResult",
    "ServerSummary",
    "StoredMessage",
    "StreamSummary",
    "name_error",
    "subject_error",
]
