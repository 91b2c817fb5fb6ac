"""The one client layer between the workbench and NATS.

Every pane talks to the broker through :class:`NatsClient` and gets typed
results back (see ``models``). This is the only place that knows ``$JS.API``
subject names; it works the same against natslab's embedded broker and any
nats-server, because it only speaks the public protocol through nats-py.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from .errors import NatsError
from .options import ConnectOptions

# Everything else is imported on first use: the client and its models are not
# needed for the first frame (launch-to-first-paint is a measured target).
_LAZY = {
    "NatsClient": ".core",
    "AccountUsage": ".models",
    "BatchAck": ".publishing",
    "CounterAck": ".publishing",
    "PublishRefused": ".publishing",
    "ConsumerSummary": ".models",
    "DeliveryEvent": ".models",
    "FetchedMessage": ".models",
    "PubAckResult": ".models",
    "ServerSummary": ".models",
    "StoredMessage": ".models",
    "StreamSummary": ".models",
    "name_error": ".subjects",
    "subject_error": ".subjects",
}

if TYPE_CHECKING:
    from .core import NatsClient
    from .publishing import BatchAck, CounterAck, PublishRefused
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


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "AccountUsage",
    "BatchAck",
    "ConnectOptions",
    "CounterAck",
    "ConsumerSummary",
    "DeliveryEvent",
    "FetchedMessage",
    "NatsClient",
    "NatsError",
    "PubAckResult",
    "PublishRefused",
    "ServerSummary",
    "StoredMessage",
    "StreamSummary",
    "name_error",
    "subject_error",
]
