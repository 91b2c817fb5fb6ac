"""RePublish: once a stream has stored a message whose subject matches the
config's ``src``, the message goes out again on the transformed subject
(``dest``) through the broker's ordinary core publish path, with the
headers nats-server adds: ``Nats-Stream``, ``Nats-Subject``,
``Nats-Sequence``, ``Nats-Time-Stamp``, ``Nats-Last-Sequence`` (the previous
message on that subject, 0 if none) and, with ``headers_only``, an empty
body and ``Nats-Msg-Size``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ... import transform
from ..shapes import rfc3339
from ...subjects import is_literal

if TYPE_CHECKING:
    from .stream import Stream

log = logging.getLogger("natslab.jetstream")


class RePublisher:
    __slots__ = ("stream", "tr", "headers_only", "_prefix")

    def __init__(self, stream: "Stream", cfg: dict):
        self.stream = stream
        self.tr = transform.new(cfg.get("src") or ">", cfg["dest"])
        self.headers_only = bool(cfg.get("headers_only"))
        self._prefix = f"Nats-Stream: {stream.name}\r\nNats-Subject: ".encode()

    def prepare(self, subject: str) -> tuple[str, int] | None:
        """Before the message is stored: (republish subject, the last
        sequence on ``subject`` so far), or None when it is not republished."""
        dest = self.tr.match(subject) if self.tr is not None else None
        if not dest or not is_literal(dest):
            return None  # nats-server suppresses a republish to an invalid subject
        return dest, self.stream.store.last_seq_for_subject(subject)

    def send(self, prepared: tuple[str, int], subject: str, seq: int, ts: int, hdr: bytes | None,
             payload: bytes) -> None:
        dest, last = prepared
        extra = b"%s%s\r\nNats-Sequence: %d\r\nNats-Time-Stamp: %s\r\nNats-Last-Sequence: %d\r\n" % (
            self._prefix, subject.encode(), seq, rfc3339(ts).encode(), last)
        if self.headers_only:
            extra += b"Nats-Msg-Size: %d\r\n" % len(payload)
            payload = b""
        out = (hdr[:-2] if hdr else b"NATS/1.0\r\n") + extra + b"\r\n"
        try:
            self.stream.js.messaging.publish(dest, "", out, payload)
        except Exception:  # a republish must never undo the store it follows
            log.exception("stream %s: republish to %s failed", self.stream.name, dest)
