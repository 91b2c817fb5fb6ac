"""Message counters (ADR-49, ``allow_msg_counter``, nats-server 2.12+).

On a counter stream every message is an increment: a ``Nats-Incr`` header
(``+1``, ``-10``, any size of integer) and no payload. The stream loads the
subject's last message, adds the increment to its ``{"val":"N"}`` body and
stores the new total as the message body, keeping the headers as published
(so a stream can be recounted from them). The PubAck carries the new total
in ``val``. The value lives only in the stored messages, so it survives
restarts with them.

Sourced counters: a message a stream copies from a source carries the
origin's total in its body and ``Nats-Stream-Source``. A counter stream keeps
the last total it saw from each origin (stream and original subject) in a
``Nats-Counter-Sources`` header carried on every later message of the
subject, rewrites the copy's ``Nats-Incr`` to the difference from that
origin's previous total, and adds that; so sources add up, and a source can
be removed and added again without counting twice. A stream without
counters stores such copies as they are.

The checks and their order follow nats-server's processJetStreamMsg; this
module holds the counter part of them, the stream calls it from its publish
path."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

from .. import errors, headers
from ..shapes import dumps

if TYPE_CHECKING:
    from .stream import Stream

INCR = b"Nats-Incr"
SOURCES = b"Nats-Counter-Sources"
STREAM_SOURCE = b"Nats-Stream-Source"
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


def check_headers(stream: "Stream", hdr: bytes, payload: bytes, sourced: int = 0) -> int | None:
    """The first checks of the publish path: an increment needs a counter
    stream, no payload, and none of the headers that make no sense for an
    increment (rollup and the expected-* ones). A copy from a source is only
    read (its increment must still be a number)."""
    incr = parse_incr(hdr)
    if incr is None or sourced:
        return incr
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


def _total(body: bytes) -> int:
    """The value in a {"val":"N"} body (json.Unmarshal, then SetString, whose
    failure leaves 0); a body that is not such JSON is a broken counter."""
    try:
        d = json.loads(body)
    except ValueError:
        raise errors.msg_counter_broken() from None
    if d is None:
        return 0
    if not isinstance(d, dict) or not isinstance(d.get("val", ""), str):
        raise errors.msg_counter_broken()
    val = d.get("val", "")
    return int(val) if _INCR_RE.match(val) else 0


def current(stream: "Stream", subject: str, staged: dict | None = None) -> tuple[int, dict]:
    """The subject's counter value and per-source totals: ``staged`` (what an
    atomic batch not yet stored made of them) first, else the last stored
    message's body and Nats-Counter-Sources."""
    if staged is not None and subject in staged:
        total, sources = staged[subject]
        return total, {k: dict(v) for k, v in sources.items()}
    sm = stream.store.load_last(subject)
    if sm is None:
        return 0, {}
    total = _total(sm.data)
    sources = {}
    raw = headers.value(sm.hdr, SOURCES) if sm.hdr else ""
    if raw:
        try:
            sources = json.loads(raw)
        except ValueError:
            raise errors.msg_counter_broken() from None
        if not isinstance(sources, dict) or not all(isinstance(v, dict) for v in sources.values()):
            raise errors.msg_counter_broken()
    return total, sources


def set_header(hdr: bytes | None, key: bytes, value: str) -> bytes:
    """setHeader: replace the value of ``key`` where it is, else add it."""
    if hdr:
        i = hdr.find(b"\r\n" + key + b":")
        if i >= 0:
            start = i + 2 + len(key) + 1
            if hdr[start:start + 1] == b" ":
                start += 1
            end = hdr.find(b"\r", start)
            if end >= 0:
                return hdr[:start] + value.encode() + hdr[end:]
    return headers.append(hdr, [(key.decode(), value)])


def apply(stream: "Stream", subject: str, hdr: bytes, payload: bytes, incr: int, max_size: int,
          staged: dict | None = None) -> tuple[bytes, bytes, int]:
    """The headers and body to store for an increment, and the new total.
    ``max_size`` is what header plus body may not exceed (the body grew from
    nothing). ``staged``, an atomic batch's running totals, is updated."""
    total, sources = current(stream, subject, staged)
    src = headers.value(hdr, STREAM_SOURCE) if hdr and hdr.find(STREAM_SOURCE) >= 0 else ""
    if src:
        fields = src.split(" ")
        origin, orig_subject = fields[0], fields[4] if len(fields) >= 5 else subject
        sourced = _total(payload)
        per = sources.setdefault(origin, {})
        prev = per.get(orig_subject, "")
        per[orig_subject] = str(sourced)
        incr = sourced - (int(prev) if _INCR_RE.match(prev) else 0)
        hdr = set_header(hdr, INCR, str(incr))
    total += incr
    body = b'{"val":"%d"}' % total
    if sources:
        hdr = set_header(hdr, SOURCES, dumps({k: dict(sorted(v.items())) for k, v in sorted(sources.items())}))
    if len(hdr) > max_size or len(body) > max_size - len(hdr):
        raise errors.stream_msg_too_big()
    if staged is not None:
        staged[subject] = (total, sources)
    return hdr, body, total
