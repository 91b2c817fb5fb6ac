"""The composer's modes and what each one reads from the form.

Plain JetStream and core publishes are ``PublishRequest`` (pane.py); the
newer JetStream features each have a request of their own: an atomic batch
(several messages stored together or not at all), a counter increment, a
schedule. ``read_*`` turn the fields' text into a request, or into
``{field id: what is wrong}`` for the form to show next to each field; the
server checks the rest and its refusal is shown in words (answers.py).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from ...client import subject_error
from ...client.schedules import expand_shorthand
from ...format import parse_int
from .parse import render_template

# (value, label in the Mode list); ctrl+o steps through them in this order
MODES = (
    ("js", "JetStream (PubAck)"),
    ("core", "core (no ack)"),
    ("batch", "atomic batch"),
    ("counter", "counter"),
    ("schedule", "schedule"),
)
MODE_VALUES = tuple(value for value, _ in MODES)

# the payload's label in each mode, longest first: beside the tour at 80 columns
# the payload cell is ~28 wide and shows the first that fits (widgets/fit_label.py)
PAYLOAD_LABELS = {
    "js": ("Payload — {{n}} and {{time}} are filled per message", "Payload — {{n}}, {{time}} filled",
           "Payload ({{n}}, {{time}})", "Payload"),
    "core": ("Payload — {{n}} and {{time}} are filled per message", "Payload — {{n}}, {{time}} filled",
             "Payload ({{n}}, {{time}})", "Payload"),
    "batch": ("Payload — one message per line, or N copies of it", "Payload — a message per line",
              "Payload (one per line)", "Payload"),
    "counter": ("Payload",),
    "schedule": ("Payload — what the target gets each time it fires", "Payload — what the target gets",
                 "Payload (the target's)", "Payload"),
}

# The mode fields of the third row: (id, label, placeholder, modes it shows in).
FIELDS = (
    ("pub-msgid", "Nats-Msg-Id", "e.g. order-7", ("js", "core", "batch", "counter")),
    # (the expectations as a sentence, "last seq is 41": short enough for a cell at 80 columns)
    ("pub-lastseq", "Last seq is", "e.g. 41", ("js", "core", "batch")),
    ("pub-stream", "Stream is", "e.g. ORDERS", ("js", "core")),
    ("pub-count", "Repeat N", "once", ("js", "core")),
    ("pub-rate", "Rate msg/s", "flat out", ("js", "core")),
    ("pub-batch-id", "Batch id", "auto", ("batch",)),
    ("pub-batch-count", "Messages N", "one per line", ("batch",)),
    ("pub-incr", "Increment", "+1", ("counter",)),
    ("pub-sched", "Schedule", "+10s · @every 5s · cron", ("schedule",)),
    ("pub-target", "Target subject", "e.g. orders.due", ("schedule",)),
    ("pub-sched-ttl", "TTL of each", "none", ("schedule",)),
    ("pub-tz", "Time zone", "UTC (cron)", ("schedule",)),
)
# Beside the tour at 80 columns a third-row cell is ~8 wide ("Nats-Msg", "Rate msg/"
# were cut): there the label and the placeholder say it shorter (the tooltip keeps the rest).
SHORT_FIELDS = {
    "pub-msgid": ("Msg-Id", "ord-17"),
    "pub-lastseq": ("Last seq", "41"),
    "pub-stream": ("Stream", "ORDERS"),
    "pub-count": ("Repeat", "once"),
    "pub-rate": ("Rate/s", "max"),
    "pub-batch-count": ("Msgs N", "1/line"),
    "pub-incr": ("Incr", "+1"),
    "pub-target": ("Target", "o.due"),
    "pub-sched-ttl": ("TTL", "none"),
    "pub-tz": ("TZ", "UTC"),
}
WIDE_FIELDS = frozenset({"pub-sched"})
# the field a refusal is about, by the server's err_code
REFUSAL_FIELD = {10171: "pub-incr", 10189: "pub-sched", 10190: "pub-target", 10191: "pub-sched-ttl",
                 10166: "pub-sched-ttl", 10223: "pub-tz", 10179: "pub-batch-id", 10199: "pub-batch-count",
                 10201: "pub-msgid", 10071: "pub-lastseq"}


@dataclass
class BatchRequest:
    subject: str
    headers: dict[str, str]
    messages: list[tuple[str, bytes, dict[str, str]]]
    batch_id: str


@dataclass
class CounterRequest:
    subject: str
    headers: dict[str, str]
    increment: str


@dataclass
class ScheduleRequest:
    subject: str
    headers: dict[str, str]
    payload: str
    pattern: str  # as sent: a +10s shorthand is already an @at
    target: str
    ttl: str
    time_zone: str


def _subject(values: dict[str, str], errors: dict[str, str], field: str = "pub-subject") -> str:
    subject = values.get(field, "").strip()
    if (err := subject_error(subject, wildcards=False)) is not None:
        errors[field] = err
    return subject


def read_batch(values: dict[str, str], headers: dict[str, str], payload: str,
               errors: dict[str, str]) -> BatchRequest | None:
    subject = _subject(values, errors)
    count = None
    try:
        count = parse_int(values.get("pub-batch-count", ""), "messages", minimum=1)
    except ValueError as exc:
        errors["pub-batch-count"] = str(exc)
    last_seq = None
    try:
        last_seq = parse_int(values.get("pub-lastseq", ""), "expected last seq", minimum=0)
    except ValueError as exc:
        errors["pub-lastseq"] = str(exc)
    bodies = [render_template(payload, n) for n in range(1, count + 1)] if count else \
        [line for line in payload.splitlines() if line.strip()]
    if not bodies and "pub-batch-count" not in errors:
        errors["pub-batch-count"] = "one message per payload line, or N copies"
    if errors:
        return None
    msg_id = values.get("pub-msgid", "").strip()
    messages = []
    for n, body in enumerate(bodies, start=1):
        hdrs = dict(headers)
        if msg_id:
            hdrs["Nats-Msg-Id"] = render_template(msg_id, n)
        if n == 1 and last_seq is not None:  # only a batch's first message may expect a sequence
            hdrs["Nats-Expected-Last-Sequence"] = str(last_seq)
        messages.append((subject, body.encode(), hdrs))
    batch_id = values.get("pub-batch-id", "").strip() or f"natslab-{secrets.token_hex(4)}"
    return BatchRequest(subject, headers, messages, batch_id)


def read_counter(values: dict[str, str], headers: dict[str, str], errors: dict[str, str]) -> CounterRequest | None:
    subject = _subject(values, errors)
    if errors:
        return None
    hdrs = dict(headers)
    if msg_id := values.get("pub-msgid", "").strip():
        hdrs["Nats-Msg-Id"] = msg_id
    # the server reads the increment (any size of integer, with a sign or not) and says when it cannot
    return CounterRequest(subject, hdrs, values.get("pub-incr", "").strip() or "+1")


def read_schedule(values: dict[str, str], headers: dict[str, str], payload: str,
                  errors: dict[str, str]) -> ScheduleRequest | None:
    subject = _subject(values, errors)
    pattern = values.get("pub-sched", "").strip()
    if not pattern:
        errors["pub-sched"] = "when: +10s, @at 2026-12-01T12:03:05Z, @every 5s or a cron such as 0 */5 * * * *"
    target = values.get("pub-target", "").strip()
    if not target:
        errors["pub-target"] = "the subject the scheduled message is published to"
    elif (err := subject_error(target, wildcards=False)) is not None:
        errors["pub-target"] = err
    if errors:
        return None
    return ScheduleRequest(subject, headers, payload, expand_shorthand(pattern), target,
                           values.get("pub-sched-ttl", "").strip(), values.get("pub-tz", "").strip())


def code_for(req: BatchRequest | CounterRequest | ScheduleRequest) -> str:
    """Copy as code for the newer modes: nats-py has no API for them, so the
    snippet sends the headers nats-server reads, as the composer does."""
    if isinstance(req, BatchRequest):
        lines = [f"# atomic batch {req.batch_id!r}: nothing is stored until the commit (the last message)"]
        last = len(req.messages)
        for n, (subject, data, hdrs) in enumerate(req.messages, start=1):
            h = {**hdrs, "Nats-Batch-Id": req.batch_id, "Nats-Batch-Sequence": str(n)}
            if n == last:
                h["Nats-Batch-Commit"] = "1"
            lines.append(f"{'ack = ' if n == last else ''}await nc.request({subject!r}, {data!r}, headers={h!r})")
        return "\n".join(lines)
    if isinstance(req, CounterRequest):
        h = {**req.headers, "Nats-Incr": req.increment}
        return f"ack = await nc.request({req.subject!r}, b'', headers={h!r})  # ack.data: {{\"val\": ...}}"
    h = {**req.headers, "Nats-Schedule": req.pattern, "Nats-Schedule-Target": req.target}
    if req.ttl:
        h["Nats-Schedule-TTL"] = req.ttl
    if req.time_zone:
        h["Nats-Schedule-Time-Zone"] = req.time_zone
    return f"ack = await nc.request({req.subject!r}, {req.payload.encode()!r}, headers={h!r})"
