"""Atomic batch publish (ADR-50, ``allow_atomic``, nats-server 2.12+).

A publisher sends messages with ``Nats-Batch-Id`` and ``Nats-Batch-Sequence``
1, 2, ...; the stream stages them (each answered with an empty message) and
stores none until the one carrying ``Nats-Batch-Commit: 1`` (that message is
the last of the batch) or ``Nats-Batch-Commit: eob`` (an end-of-batch marker
that is not stored itself). At the commit every staged message is checked
against the stream as one unit (expected-* headers, duplicates, rollups,
counters, discard new, all with the batch's own earlier messages taken into
account); if any fails, the whole batch is refused and nothing is stored.
Otherwise all of it is stored in one go and the commit is answered with one
PubAck carrying ``batch`` and ``count``.

Staged messages live in memory: a server that dies before the commit has
stored nothing of the batch. The commit stores all its records in one turn of
the event loop, before the PubAck goes out; the file store usually writes
them with one ``os.write``, but a read in between (a counter's last value, a
rollup, a full block) writes out what it has so far, so a crash can still cut
a commit short on disk. ``recover`` takes such an unacknowledged partial
batch off the tail at the next start (nats-server, which stages batches on
disk, completes it instead: either way no partial batch is ever seen).

The checks, limits, errors and their order follow nats-server's
processJetStreamAtomicBatchMsg and checkMsgHeadersPreClusteredProposal."""

from __future__ import annotations

import logging
import re
import weakref
from typing import TYPE_CHECKING

from . import counters, schedules
from .. import errors, headers
from ..errors import ApiError
from .expiry import parse_ttl
from ..shapes import dumps, now_ns, rfc3339

if TYPE_CHECKING:
    from .stream import Stream

log = logging.getLogger("natslab.jetstream")

BATCH_ID = b"Nats-Batch-Id"
BATCH_SEQ = b"Nats-Batch-Sequence"
BATCH_COMMIT = b"Nats-Batch-Commit"
MAX_ID_LEN = 64
# nats-server's defaults; jetstream { limits { batch { ... } } } overrides them
MAX_MSGS = 1000
MAX_INFLIGHT_PER_STREAM = 50
MAX_INFLIGHT_TOTAL = 1000
TIMEOUT = 10.0
API_LEVEL = 5
ADV_ABANDONED = "$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED"

# open batches per JetStream (server), for the server-wide inflight limit
_inflight_total: "weakref.WeakKeyDictionary[object, int]" = weakref.WeakKeyDictionary()


def api_level_too_high(hdr: bytes) -> bool:
    """errorOnRequiredApiLevel: Nats-Required-Api-Level is not a number
    (strconv.Atoi) or above this server's API level."""
    lvl = headers.value(hdr, headers.REQUIRED_API_LEVEL.encode())
    if not re.fullmatch(r"[+-]?[0-9]+", lvl):
        return True
    return int(lvl) > API_LEVEL


def go_parse_uint(v: str) -> int | None:
    """parseUint64: ASCII digits only, no sign, no overflow."""
    if not v or not v.isascii() or not v.isdigit():
        return None
    n = int(v)
    return n if n < 1 << 64 else None


class _Batch:
    __slots__ = ("msgs", "timer")

    def __init__(self) -> None:
        self.msgs: list[tuple[str, bytes | None, bytes]] = []
        self.timer = None


class Staged:
    """What a batch's earlier messages change, for the checks of the later
    ones (nats-server's batchStagedDiff)."""
    __slots__ = ("msg_ids", "counter", "inflight", "expected", "msgs", "bytes")

    def __init__(self) -> None:
        self.msg_ids: set[str] = set()
        self.counter: dict[str, tuple[int, dict]] = {}  # subject -> (total, per-source totals)
        self.inflight: dict[str, tuple[int, bool]] = {}  # subject -> (messages, has a schedule)
        self.expected: dict[str, int] = {}  # expected-last-subject-sequence results
        self.msgs = 0
        self.bytes = 0


class AtomicBatches:
    """One stream's open atomic batches."""

    def __init__(self, stream: "Stream") -> None:
        self.stream = stream
        self.open: dict[str, _Batch] = {}

    # -- staging ----------------------------------------------------------
    def on_message(self, subject: str, reply: bytes, hdr: bytes, payload: bytes, batch_id: str) -> None:
        stream = self.stream
        if not stream.config.get("allow_atomic"):
            raise errors.atomic_publish_disabled()
        if len(batch_id.encode()) > MAX_ID_LEN:
            raise errors.atomic_publish_invalid_id()
        seq = go_parse_uint(headers.value(hdr, BATCH_SEQ))
        if seq is None:
            raise errors.atomic_publish_missing_seq()
        opts = stream.js.messaging.options
        commit = headers.value(hdr, BATCH_COMMIT)
        eob = commit == "eob"
        if commit and not eob and commit != "1":
            commit_invalid = True
        else:
            commit_invalid = False
        max_msgs = opts.batch_max_msgs or MAX_MSGS
        b = self.open.get(batch_id)
        if b is None:
            if seq != 1:
                if seq - eob > max_msgs:
                    raise errors.atomic_publish_too_large(max_msgs)
                raise errors.atomic_publish_incomplete()
            js = stream.js
            total = _inflight_total.get(js, 0)
            if (len(self.open) + 1 > (opts.batch_max_inflight_per_stream or MAX_INFLIGHT_PER_STREAM)
                    or total + 1 > (opts.batch_max_inflight_total or MAX_INFLIGHT_TOTAL)):
                raise errors.atomic_publish_too_many_inflight()
            b = self.open[batch_id] = _Batch()
            _inflight_total[js] = total + 1
        if commit_invalid:
            self._drop(batch_id)
            raise errors.atomic_publish_invalid_commit()
        if headers.value(hdr, headers.REQUIRED_API_LEVEL.encode()):
            if api_level_too_high(hdr):
                self._drop(batch_id, "unsupported")
                raise errors.required_api_level()
            hdr = headers.remove(hdr, headers.REQUIRED_API_LEVEL)
        if seq != len(b.msgs) + 1 or (seq == 1 and eob):
            self._drop(batch_id, "incomplete")
            raise errors.atomic_publish_incomplete()
        if seq - eob > max_msgs:
            self._drop(batch_id, "large")
            raise errors.atomic_publish_too_large(max_msgs)
        b.msgs.append((subject, hdr, payload))
        if b.timer is not None:
            b.timer.cancel()
        if not commit:
            b.timer = stream.js.messaging.loop.call_later(opts.batch_timeout or TIMEOUT, self._timed_out, batch_id)
            if reply and stream._ack:
                stream._reply(reply, b"", False)  # staged: an empty answer
            return
        b.timer = None
        msgs = b.msgs[:-1] if eob else b.msgs
        self._drop(batch_id)
        self._commit(batch_id, msgs, reply, eob)

    def _timed_out(self, batch_id: str) -> None:
        if batch_id in self.open:
            self.open[batch_id].timer = None
            self._drop(batch_id, "timeout")

    def _drop(self, batch_id: str, reason: str = "") -> None:
        b = self.open.pop(batch_id, None)
        if b is None:
            return
        if b.timer is not None:
            b.timer.cancel()
        js = self.stream.js
        _inflight_total[js] = max(0, _inflight_total.get(js, 0) - 1)
        if reason:
            self._advise_abandoned(batch_id, reason)

    def drop_all(self) -> None:
        """The stream stops, or no longer allows atomic publish."""
        for batch_id in list(self.open):
            self._drop(batch_id)

    def _advise_abandoned(self, batch_id: str, reason: str) -> None:
        stream = self.stream
        subject = f"{ADV_ABANDONED}.{stream.name}"
        messaging = stream.js.messaging
        if not messaging.has_interest(subject):
            return
        from ..consumer.acks import _nuid  # the advisories' id generator
        d = {"type": "io.nats.jetstream.advisory.v1.stream_batch_abandoned", "id": _nuid(),
             "timestamp": rfc3339(now_ns()), "stream": stream.name, "batch": batch_id, "reason": reason}
        messaging.publish(subject, "", None, dumps(d).encode())

    # -- the commit -------------------------------------------------------------
    def _commit(self, batch_id: str, msgs: list, reply: bytes, eob: bool) -> None:
        stream = self.stream
        staged = Staged()
        checked = []
        try:
            for i, (subject, hdr, payload) in enumerate(msgs):
                if hdr and headers.value(hdr, b"Nats-Expected-Last-Msg-Id"):
                    raise errors.atomic_publish_unsupported_header("Nats-Expected-Last-Msg-Id")
                checked.append(check_message(stream, staged, i, subject, hdr, payload))
        except ApiError:
            # the whole batch is refused (nats-server sends no advisory here)
            raise
        n = len(checked)
        tail = b',"batch":%s,"count":%d}' % (dumps(batch_id).encode(), n)
        for i, (subject, hdr, payload, msg_id, ttl, rollup) in enumerate(checked):
            last = i == n - 1
            if last and eob:
                # the stored commit message says so, as a Nats-Batch-Commit: 1 would
                hdr = headers.append(hdr, [("Nats-Batch-Commit", "1")])
            stream.store_checked(subject, reply if last else b"", hdr, payload, msg_id, ttl, False, rollup, tail)


def check_message(stream: "Stream", staged: Staged, index: int, subject: str, hdr: bytes | None,
                  payload: bytes) -> tuple:
    """One message of a batch (an atomic one at its commit, a fast one as it
    comes): the checks processJetStreamMsg would make, with the batch's
    earlier messages counted as stored (nats-server's
    checkMsgHeadersPreClusteredProposal). Returns what ``store_checked``
    needs: (subject, hdr, payload, msg id, ttl, rollup)."""
    cfg = stream.config
    value = headers.value
    incr = None
    msg_id = ""
    ttl = 0
    rollup = ""
    has_schedule = False
    if hdr:
        if hdr.find(counters.INCR) >= 0:
            incr = counters.check_headers(stream, hdr, payload)
        es = value(hdr, b"Nats-Expected-Stream")
        if es and es != stream.name:
            raise errors.expected_stream_mismatch()
        ttl_hdr = value(hdr, b"Nats-TTL")
        if ttl_hdr:
            try:
                ttl = parse_ttl(ttl_hdr)
                bad = False
            except ApiError:
                bad = True
            if ttl or bad:
                if not cfg["allow_msg_ttl"]:
                    raise errors.msg_ttl_disabled()
                if bad:
                    raise errors.msg_ttl_invalid()
        msg_id = value(hdr, b"Nats-Msg-Id")
        if msg_id:
            if msg_id in staged.msg_ids or stream._check_dup(msg_id):
                raise errors.atomic_publish_duplicate_msg()
            staged.msg_ids.add(msg_id)
        if value(hdr, b"Nats-Stream-Source"):
            raise errors.message_source_header_not_allowed()
    if stream._counter:
        if incr is None:
            raise errors.msg_incr_missing()
        hdr, payload, _ = counters.apply(stream, subject, hdr, payload, incr, stream.max_counter_size(),
                                         staged.counter)
    if hdr:
        els = value(hdr, b"Nats-Expected-Last-Sequence")
        if els:
            expect = stream.store.state().last_seq + index
            if headers.go_uint64(els) != expect:
                raise errors.wrong_last_sequence(expect)
            if staged.inflight:  # only the batch's first message may expect a sequence
                raise errors.wrong_last_sequence_constant()
        elss = value(hdr, b"Nats-Expected-Last-Subject-Sequence")
        on = value(hdr, b"Nats-Expected-Last-Subject-Sequence-Subject")
        if elss:
            subj = on or subject
            if subj in staged.inflight:  # already written to in this batch
                raise errors.wrong_last_sequence_constant()
            want = headers.go_uint64(elss)
            if subj in staged.expected:
                last = staged.expected[subj]
            else:
                last = staged.expected[subj] = stream._last_seq_for(subj)
            if want != last:
                raise errors.wrong_last_sequence(last)
        elif on:
            raise errors.expected_last_seq_per_subject_invalid()
        hdr, has_schedule = schedules.check_publish(stream, subject, hdr, staged.inflight)
        rollup = value(hdr, b"Nats-Rollup").lower()
        if rollup:
            if not cfg["allow_rollup_hdrs"] or cfg["deny_purge"]:
                raise errors.stream_rollup_failed("rollup not permitted")
            if rollup == "sub":
                if subject in staged.inflight:
                    raise errors.stream_rollup_failed("batch rollup sub invalid")
            elif rollup == "all":
                if staged.inflight:
                    raise errors.stream_rollup_failed("batch rollup all invalid")
            else:
                raise errors.stream_rollup_failed(f'rollup value invalid: "{rollup}"')
    ops, _ = staged.inflight.get(subject, (0, False))
    staged.inflight[subject] = (ops + 1, has_schedule)
    size = stream.store.msg_size(subject, hdr, payload)
    staged.msgs += 1
    staged.bytes += size
    if cfg["discard"] == "new":
        mm, mb = cfg["max_msgs"], cfg["max_bytes"]
        if mm > 0 or mb > 0:
            msgs, nbytes, _ = stream.store.totals()
            if mm > 0 and msgs + staged.msgs > mm:
                raise errors.stream_store_failed("maximum messages exceeded")
            if mb > 0 and nbytes + staged.bytes > mb:
                raise errors.stream_store_failed("maximum bytes exceeded")
        per = cfg["max_msgs_per_subject"]
        if cfg.get("discard_new_per_subject") and per > 0 and not (hdr and value(hdr, b"Nats-Rollup")):
            if stream.store.subject_count(subject) + ops + 1 > per:
                raise errors.stream_store_failed("maximum messages per subject exceeded")
    return subject, hdr, payload, msg_id, ttl, rollup


def recover(stream: "Stream") -> None:
    """At start-up: a batch whose commit was cut short by a crash (its last
    stored message has a batch id but no commit) was never acknowledged;
    take its messages off the tail so no part of it is seen."""
    if not stream.config.get("allow_atomic"):
        return
    store = stream.store
    sm = store.load_last()
    if sm is None or not sm.hdr or headers.value(sm.hdr, BATCH_COMMIT):
        return
    batch_id = headers.value(sm.hdr, BATCH_ID)
    if not batch_id or go_parse_uint(headers.value(sm.hdr, BATCH_SEQ)) is None:
        return
    removed = 0
    while sm is not None and sm.hdr and headers.value(sm.hdr, BATCH_ID) == batch_id \
            and not headers.value(sm.hdr, BATCH_COMMIT):
        store.remove(sm.seq)
        removed += 1
        sm = store.load_last()
    log.warning("stream %s: removed %d message(s) of batch %r whose commit was cut short", stream.name,
                removed, batch_id)
