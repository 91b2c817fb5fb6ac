"""What a stored message is, beyond its headers: a counter's value, a
schedule and when it fires, a message a schedule produced, part of a batch.

The message browser shows these in words instead of leaving the reader to
decode ``Nats-Incr``, ``{"val":"7"}`` or ``Nats-Schedule-Next`` by hand. Only
what the message itself carries is read (no extra API calls per row).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from . import schedules

if TYPE_CHECKING:
    from .models import StoredMessage

Fact = tuple[str, "str | datetime"]  # (label, value); a datetime is formatted by the view


@dataclass(frozen=True)
class MessageNote:
    kind: str  # counter, schedule, scheduled (produced by a schedule), batch
    short: str  # a few words for the message list
    facts: list[Fact] = field(default_factory=list)


def counter_value(data: bytes) -> str | None:
    """The total in a counter message's ``{"val":"N"}`` body."""
    try:
        body = json.loads(data)
    except ValueError:
        return None
    val = body.get("val") if isinstance(body, dict) else None
    return val if isinstance(val, str) else None


def describe(msg: StoredMessage, now: datetime | None = None) -> list[MessageNote]:
    """Every note that applies (a batch message may also be a counter)."""
    now = now or datetime.now(timezone.utc)
    h = msg.headers
    notes: list[MessageNote] = []
    val = counter_value(msg.data) if h.get("Nats-Incr") else None
    # a plain stream stores a Nats-Incr header as it is: only a {"val"} body makes a counter
    if val is not None:
        facts: list[Fact] = [("counter", f"{msg.subject} = {val}"), ("increment", h["Nats-Incr"])]
        if h.get("Nats-Counter-Sources"):
            facts.append(("from sources", h["Nats-Counter-Sources"]))
        notes.append(MessageNote("counter", f"= {val}", facts))
    if h.get("Nats-Schedule") and not h.get("Nats-Scheduler"):
        pattern = h["Nats-Schedule"]
        tz_name = h.get("Nats-Schedule-Time-Zone", "")
        once = not schedules.repeats(pattern)
        facts = [("schedule", f"{pattern}  ({'once' if once else 'repeats'})"),
                 ("target", h.get("Nats-Schedule-Target", "(none)"))]
        if pattern.startswith("@every ") and msg.time is not None:
            nxt = schedules.every_next(pattern, msg.time, now)
        elif once:
            nxt = schedules.next_fire(pattern, now)
        else:
            zone = schedules.zone(tz_name)
            nxt = schedules.next_fire(pattern, now, zone) if zone is not None else None
        if nxt is None:
            facts.append(("next fire", "unknown (the pattern is not one natslab reads)"))
        elif once and nxt <= now:
            facts.append(("was due", nxt))
        else:
            facts.append(("next fire", nxt))
        for label, key in (("source", "Nats-Schedule-Source"), ("TTL of each", "Nats-Schedule-TTL"),
                           ("rollup of each", "Nats-Schedule-Rollup"), ("time zone", "Nats-Schedule-Time-Zone")):
            if h.get(key):
                facts.append((label, h[key]))
        notes.append(MessageNote("schedule", "schedule", facts))
    if h.get("Nats-Scheduler"):
        nxt_text = h.get("Nats-Schedule-Next", "")
        facts = [("produced by schedule", h["Nats-Scheduler"])]
        if nxt_text == "purge":
            facts.append(("next run", "none: a one-off, its schedule was removed"))
        elif nxt_text:
            when = schedules.parse_rfc3339(nxt_text)
            facts.append(("next run after this one", when if when is not None else nxt_text))
        if h.get("Nats-TTL"):
            facts.append(("TTL", h["Nats-TTL"]))
        notes.append(MessageNote("scheduled", "scheduled", facts))
    if h.get("Nats-Batch-Id"):
        commit = h.get("Nats-Batch-Commit") == "1"
        number = h.get("Nats-Batch-Sequence", "?")
        facts = [("atomic batch", h["Nats-Batch-Id"]),
                 ("batch message", f"{number}" + ("  (the commit: the batch's last)" if commit else ""))]
        notes.append(MessageNote("batch", "batch end" if commit else "batch", facts))
    return notes
