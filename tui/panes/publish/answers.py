"""The server's answers to the composer, in plain words.

A PubAck becomes "batch of 3 stored as seq 4–6 in ORDERS", "counter
orders.count = 7", "scheduled for 12:03:05 → orders.due"; a refusal becomes
the server's own words and codes, plus what to change when the words leave
it implicit (``PublishRefused.hint``: e.g. which stream flag is missing).
"""

from __future__ import annotations

from datetime import datetime, timezone

from ...client import NatsError
from ...client.publishing import BatchAck, CounterAck, PublishRefused
from ...client.schedules import next_fire, repeats, zone


def when_text(when: datetime, now: datetime | None = None) -> str:
    """Local time; with the date when it is not today."""
    local = when.astimezone()
    today = (now or datetime.now(timezone.utc)).astimezone().date()
    return local.strftime("%H:%M:%S" if local.date() == today else "%Y-%m-%d %H:%M:%S")


def refusal(exc: NatsError, what: str = "it") -> str:
    """'ORDERS refused it: atomic publish is disabled (400/10174) — the stream needs allow_atomic: true ...'"""
    if not isinstance(exc, PublishRefused) or not exc.err_code:
        return str(exc)  # no responders, a timeout: the words say it all
    who = f"stream {exc.stream}" if exc.stream else "the server"
    codes = f" ({exc.code}/{exc.err_code})" if exc.err_code else ""
    text = f"{who} refused {what}: {exc.description}{codes}"
    return f"{text} — {exc.hint}" if exc.hint else text


def batch_stored(ack: BatchAck) -> str:
    seqs = f"seq {ack.seq}" if ack.count == 1 else f"seq {ack.first_seq}–{ack.seq}"
    return f"batch of {ack.count} stored as {seqs} in {ack.stream} (batch id {ack.batch})"


def batch_refused(exc: NatsError, total: int) -> str:
    index = getattr(exc, "index", 0)
    where = "its commit" if index == total else f"message {index} of {total}"
    if isinstance(exc, PublishRefused):
        return f"{refusal(exc, f'the batch at {where}')}. Nothing of the batch was stored."
    if index == total:
        return (f"no answer to the batch's commit ({exc}): it may or may not be stored — "
                "look in the stream before sending it again")
    return (f"the batch stopped at {where} ({exc}); nothing of it was stored (the server drops an unfinished "
            "batch after its timeout)")


def counter_stored(subject: str, increment: str, ack: CounterAck) -> str:
    if ack.duplicate:
        return (f"duplicate increment (its Nats-Msg-Id was seen within the duplicate window): not counted again "
                f"· {ack.stream} seq {ack.seq}")
    return f"counter {subject} = {ack.value} ({increment}) · {ack.stream} seq {ack.seq}"


def schedule_stored(subject: str, pattern: str, target: str, stream: str, seq: int, time_zone: str = "",
                    now: datetime | None = None) -> str:
    now = now or datetime.now(timezone.utc)
    where = f"schedule stored on {subject} in {stream} seq {seq}"
    tz = zone(time_zone)
    nxt = next_fire(pattern, now, tz) if tz is not None else None
    if not repeats(pattern):
        return f"scheduled for {when_text(nxt, now) if nxt else pattern[4:]} → {target} · {where}"
    nxt_text = f"next fire {when_text(nxt, now)}" if nxt else "next fire as the server reckons it"
    return f"schedule {pattern}: {nxt_text} → {target} · {where}"
