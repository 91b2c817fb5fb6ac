"""The server's own subsystems as NATS clients: the internal client identity
they publish and subscribe as, their subscriptions, and how a subsystem takes
runs of messages on subjects it owns.

An internal subscription's callback runs synchronously during routing. One
with a ``RunSpec`` also gets, in one call, the PUBs that follow one of its
messages in the same socket read and have the shape it names (the parser
finds them, see ``parser.Parser``): a consumer takes the plain acks of a
pull batch so, the API the direct gets of a KV client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .client import Subscription


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Runs of messages a subsystem takes at once.

    ``key(subject, reply, payload)`` (bytes; reply None for none) says
    whether a message starts a run: the subject prefix, ending in ".", that
    the run's members share, or None. Members are the PUBs right behind it
    with a subject under that prefix, no headers, a payload among
    ``payloads`` and a reply when ``reply`` (none otherwise), that reach this
    subscription alone. ``handler(key, [(subject, reply, payload), ...])``
    gets the run, the first message included, in order."""

    key: Callable[[bytes, bytes | None, bytes], bytes | None]
    handler: Callable[[bytes, list], None]
    payloads: tuple[bytes, ...] = (b"",)
    reply: bool = False


class InternalClient:
    """The publisher/subscriber identity of the server's own subsystems
    (JetStream). Deliveries call the subscription's callback synchronously."""

    internal = True
    echo = True
    closed = False
    account = None
    headers = True
    no_responders = False
    cid = 0
    name = "$SYSTEM"

    def __init__(self, server):
        self.server = server

    def deliver(self, sub, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        sub.msgs += 1
        try:
            if sub.raw:
                sub.callback(subject, reply, hdr, payload)
            else:
                sub.callback(subject.decode(), reply.decode() if reply else "", hdr, payload)
        except Exception:  # a bug in a subsystem must not take routing down
            self.server.logger.exception("internal subscription %s failed", sub.subject.decode())

    def deliver_run(self, sub, msgs, alike: tuple | None = None) -> None:
        if alike is not None:  # (payloads that share subject and reply: router.deliver_results)
            subject, reply, _ = alike
            msgs = [(subject, reply, None, pl) for pl in msgs]
        for subject, reply, hdr, payload in msgs:
            self.deliver(sub, subject, reply, hdr, payload)


class InternalSubscription(Subscription):
    __slots__ = ("callback", "raw", "run")

    def __init__(self, client, subject: bytes, queue: bytes | None, callback):
        super().__init__(client, subject, queue, b"")
        self.callback = callback
        self.raw = False  # callback gets bytes subject/reply (Server.subscribe_internal)
        self.run: RunSpec | None = None  # runs taken at once (Server.subscribe_internal)
