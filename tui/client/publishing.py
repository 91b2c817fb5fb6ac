"""The newer ways to publish to a stream: atomic batches, counters, schedules.

nats-py has no API for these (nats-server 2.12+): each is a JetStream publish
with headers, answered with a PubAck that carries more than stream and seq
(``batch``/``count`` for a batch, ``val`` for a counter). The calls here send
them as nats-server 2.15 expects and turn the answer into a typed result, or
a :class:`PublishRefused` naming the stream and, where the server's words
leave it implicit, what to change (``hint``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .errors import NatsError, _nats_errors, _plain

BATCH_ID = "Nats-Batch-Id"
BATCH_SEQUENCE = "Nats-Batch-Sequence"
BATCH_COMMIT = "Nats-Batch-Commit"
INCR = "Nats-Incr"
SCHEDULE = "Nats-Schedule"
SCHEDULE_TARGET = "Nats-Schedule-Target"
SCHEDULE_TTL = "Nats-Schedule-TTL"
SCHEDULE_TIME_ZONE = "Nats-Schedule-Time-Zone"

# What to do about a refusal, by the server's err_code: the stream flag it
# lacks or the form the value must take.
HINTS = {
    10174: "the stream needs allow_atomic: true to take atomic batches",
    10168: "the stream needs allow_msg_counter: true (set when it is created; it cannot be changed later)",
    10169: "every message on a counter stream is an increment: use the counter mode",
    10170: "an increment carries no payload",
    10171: "an increment is a whole number such as +1, -5 or 42",
    10188: "the stream needs allow_msg_schedules: true to hold schedules",
    10189: "use @at <RFC 3339 time>, @every <duration of 1s or more>, a six-field cron "
           "(sec min hour day month weekday) or @hourly/@daily/@weekly/@monthly/@yearly",
    10190: "the target must be a plain subject of the same stream, not the schedule's own subject",
    10166: "the stream needs allow_msg_ttl: true for a TTL",
    10191: "a TTL is a duration such as 30s or 5m, or 'never'",
    10223: "the time zone is an IANA name such as Europe/Amsterdam, and only cron patterns take one",
    10176: "a batch's messages must arrive in order 1, 2, ... without gaps, and before it times out",
    10199: "the server takes at most that many messages in one batch",
    10201: "each message of a batch needs its own Nats-Msg-Id",
    10210: "too many batches are open on the server at once: try again",
    10177: "that header cannot be used in an atomic batch",
}


class PublishRefused(NatsError):
    """The server's refusal of a publish: its words, codes and stream (as the
    error PubAck names it), and for a batch which message was refused."""

    def __init__(self, description: str, code: int = 0, err_code: int = 0, stream: str = "",
                 index: int = 0):
        super().__init__(description, code, err_code)
        self.stream = stream
        self.index = index  # 1-based message of a batch; 0 for a single publish

    @property
    def hint(self) -> str:
        return HINTS.get(self.err_code, "")


@dataclass(frozen=True)
class BatchAck:
    """An atomic batch stored: ``seq`` is its last message, ``count`` how many."""

    stream: str
    seq: int
    batch: str
    count: int

    @property
    def first_seq(self) -> int:
        return self.seq - self.count + 1  # a batch is stored in one run of sequences


@dataclass(frozen=True)
class CounterAck:
    """An increment stored; ``value`` is the subject's new total as the server
    wrote it (any size of integer), None for a duplicate (nothing was added)."""

    stream: str
    seq: int
    value: str | None
    duplicate: bool


class PublishFeaturesMixin:
    """Mixed into NatsClient: needs ``nc``, ``timeout`` and ``_writing``."""

    async def pub_ack_json(self, subject: str, data: bytes, headers: dict[str, str] | None) -> dict:
        """A JetStream publish: the PubAck's JSON ({} for the empty answer to
        a staged batch message), or PublishRefused with the server's error."""
        self._writing("publishing")
        NoRespondersError, _ = _nats_errors()
        try:
            msg = await self.nc.request(subject, data, timeout=self.timeout, headers=headers or None)
        except NoRespondersError as exc:
            raise PublishRefused("no stream matches this subject (no responders)", 503) from exc
        except Exception as exc:  # nats-py raises several unrelated types here
            raise _plain(exc) from exc
        if not msg.data:
            return {}
        try:
            resp = json.loads(msg.data)
        except ValueError as exc:
            raise NatsError(f"the server answered with something that is not a PubAck: {msg.data[:80]!r}") from exc
        err = resp.get("error")
        if err:
            raise PublishRefused(err.get("description", "error"), err.get("code", 0), err.get("err_code", 0),
                                 resp.get("stream", ""))
        return resp

    async def publish_batch(self, messages: list[tuple[str, bytes, dict[str, str]]], batch_id: str) -> BatchAck:
        """An atomic batch: every message carries the batch id and its number,
        the last one ``Nats-Batch-Commit: 1``. Each is sent as a request so a
        refusal names the message it was about (a staged one is answered with
        an empty message); nothing is stored unless the commit is answered."""
        if not messages:
            raise NatsError("a batch needs at least one message")
        last = len(messages)
        resp: dict = {}
        for number, (subject, data, headers) in enumerate(messages, start=1):
            hdrs = {**headers, BATCH_ID: batch_id, BATCH_SEQUENCE: str(number)}
            if number == last:
                hdrs[BATCH_COMMIT] = "1"
            try:
                resp = await self.pub_ack_json(subject, data, hdrs)
            except PublishRefused as exc:
                exc.index = number
                raise
        if "batch" not in resp:
            raise NatsError(f"the commit was answered without a batch PubAck: {resp}")
        return BatchAck(resp.get("stream", ""), resp.get("seq", 0), resp["batch"], resp.get("count", last))

    async def increment_counter(self, subject: str, by: str, headers: dict[str, str] | None = None) -> CounterAck:
        """``Nats-Incr: by`` with no payload; the PubAck's ``val`` is the new total."""
        resp = await self.pub_ack_json(subject, b"", {**(headers or {}), INCR: by})
        return CounterAck(resp.get("stream", ""), resp.get("seq", 0), resp.get("val"), bool(resp.get("duplicate")))

    async def publish_schedule(self, subject: str, data: bytes, headers: dict[str, str], pattern: str,
                               target: str, ttl: str = "", time_zone: str = "") -> tuple[str, int]:
        """A schedule stored on ``subject``: the stream publishes ``data`` to
        ``target`` when it fires. Returns (stream, seq) of the schedule."""
        hdrs = {**headers, SCHEDULE: pattern, SCHEDULE_TARGET: target}
        if ttl:
            hdrs[SCHEDULE_TTL] = ttl
        if time_zone:
            hdrs[SCHEDULE_TIME_ZONE] = time_zone
        resp = await self.pub_ack_json(subject, data, hdrs)
        return resp.get("stream", ""), resp.get("seq", 0)
