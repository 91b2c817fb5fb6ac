"""Message counters (ADR-49, ``allow_msg_counter``, nats-server 2.12+).

On a counter stream every message is an increment: a ``Nats-Incr`` header
(``+1``, ``-10``, any size of integer) and no payload. The stream loads the
subject's last message, adds the increment to its ``{"val":"N"}`` body and
stores the new total as the message body, keeping the headers as published
(so a stream can be recounted from them). The PubAck carries the new total
in ``val``. The value lives only in the stored messages, so it survives
restarts with them.

The checks and their order follow nats-server's processJetStreamMsg; this
module holds the counter part of them, the stream calls it from its publish
path. Sourced counters (``Nats-Counter-Sources``) are not handled: natslab
has no sources."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from . import errors, headers

if TYPE_CHECKING:
    from .stream import Stream

INCR = b"Nats-Incr"
# big.Int's SetString(v, 10): an optional sign, then decimal digits only
_INCR_RE = re.compile(r"[+-]?[0-9]+\Z")


def parse_incr(hdr: bytes) -> int | None:
    """The increment a message asks for; None without (or with an empty)
    ``Nats-Incr``. A value big.Int cannot read is refused, on any stream."""
    v = headers.value(hdr, INCR)
    if not v:
        return None
    if not _INCR_RE.match(v):
        raise errors.msg_incr_invalid()
    return int(v)


def check_headers(stream: "Stream", hdr: bytes, payload: bytes) -> int | None:
    """The first checks of the publish path: an increment needs a counter
    stream, no payload, and none of the headers that make no sense for an
    increment (rollup and the expected-* ones)."""
    incr = parse_incr(hdr)
    if incr is None:
        return None
    if not stream.config.get("allow_msg_counter"):
        raise errors.msg_incr_disabled()
    if payload:
        raise errors.msg_incr_payload()
    value = headers.value
    if (value(hdr, b"Nats-Rollup") or value(hdr, b"Nats-Expected-Stream")
            or value(hdr, b"Nats-Expected-Last-Msg-Id")
            or value(hdr, b"Nats-Expected-Last-Subject-Sequence-Subject")
            or value(hdr, b"Nats-Expected-Last-Sequence")
            or value(hdr, b"Nats-Expected-Last-Subject-Sequence")):
        raise errors.msg_incr_invalid()
    return incr


def current(stream: "Stream", subject: str, last: dict[str, int] | None = None) -> int:
    """The subject's counter value: ``last`` (totals staged by an atomic batch
    not yet stored) first, else the body of its last stored message."""
    if last is not None and subject in last:
        return last[subject]
    sm = stream.store.load_last(subject)
    if sm is None:
        return 0
    try:
        body = json.loads(sm.data)
    except ValueError:
        raise errors.msg_counter_broken() from None
    if not isinstance(body, dict) and body is not None:
        raise errors.msg_counter_broken()
    val = (body or {}).get("val")
    # nats-server reads the value with SetString and ignores a failure (0)
    if isinstance(val, str) and _INCR_RE.match(val):
        return int(val)
    return 0


def apply(stream: "Stream", subject: str, hdr: bytes, incr: int, max_size: int,
          last: dict[str, int] | None = None) -> tuple[bytes, int]:
    """The body to store for an increment and the new total. ``max_size``
    is what header plus body may not exceed (the body grew from nothing)."""
    total = current(stream, subject, last) + incr
    body = b'{"val":"%d"}' % total
    if len(hdr) > max_size or len(body) > max_size - len(hdr):
        raise errors.stream_msg_too_big()
    return body, total
