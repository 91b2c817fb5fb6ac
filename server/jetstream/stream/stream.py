"""A stream: the publish path (expectation headers, dedupe, rollup, TTL,
limits, discard), retention clean-up (interest and workqueue removal) and
its message-level API (info state, purge, get, delete). Storage is
delegated to a ``store.Store``; max_age and message TTLs to the stream's
``expiry`` (expiry.py)."""

from __future__ import annotations

import base64
import logging
from collections import deque
from time import time_ns
from typing import TYPE_CHECKING

from ... import transform
from . import batch, counters, fastbatch, schedules
from .. import errors, headers, limits
from .directget import DirectGet
from ..errors import ApiError
from .expiry import Expiry, parse_ttl
from .republish import RePublisher
from ..persist import CorruptStateError, read_json_checked, write_json_atomic
from ..shapes import NS, dumps, dumps_plain, now_ns, rfc3339, stream_state
from ..store.base import Store, StoredMsg
from ...internal import RunSpec
from ...subjects import is_literal

if TYPE_CHECKING:
    from ..consumer.consumer import Consumer
    from ..jetstream import JetStream

log = logging.getLogger("natslab.jetstream")

RUNTIME_FILE = "runtime.json"
SOURCED, MIRRORED = 1, 2  # process_msg's ``sourced``: copied from a source / for a mirror
_ERR_MAX_MSGS = "maximum messages exceeded"
_ERR_MAX_BYTES = "maximum bytes exceeded"
_ERR_MAX_PER_SUBJECT = "maximum messages per subject exceeded"
_FAST_BATCH = fastbatch.SUFFIX


def _no_key(subject: bytes, reply: bytes | None, payload: bytes) -> None:
    return None  # (a stream's RunSpec takes any body: the parser never asks for a key)


class Stream:
    # message tracing (msgtrace.py) reports a message its subscriptions take
    # as a "js" event (name, drops_unwanted): a stream says it is one
    traced_as_stream = True

    def __init__(self, js: "JetStream", config: dict, created: int, store: Store):
        self.js = js
        self._journal = js.messaging.journal  # the history (journal.py); None: not kept
        # can a message reach max_buffered_size? (not with the default: the publish path skips the sum)
        self._ingest_limited = js.ingest_limited
        self.name: str = config["name"]
        self.key = (js.account, self.name)  # the history's (journal.py): names are per account
        self.config = config  # the setter also caches what the publish path reads
        self.created = created
        self.store = store
        store.write_behind = js.messaging.write_behind
        store.on_written = self._on_written
        self._subj_b, self._subj_s = b"", ""  # the last subject published to, and its str
        self.consumers: dict[str, "Consumer"] = {}
        self._subs: list = []
        # nats-server formats the PubAck by hand: no HTML-safe escapes here,
        # and the domain (when there is one) between the stream and the seq
        domain = ',"domain":%s' % dumps_plain(js.domain) if js.domain else ""
        self._pub_ack = ('{"stream":%s%s,"seq":' % (dumps_plain(self.name), domain)).encode()
        # dedupe window: msg id -> (seq, ts), and insertion order for expiry
        self._ddmap: dict[str, tuple[int, int]] = {}
        self._ddq: deque[tuple[int, str]] = deque()
        self._last_msg_id = ""
        self.closed = False
        self.expiry = Expiry(self)  # max_age and message TTLs (expiry.py)
        self._direct = None  # the DIRECT.GET responder, made on first use
        self.followers: list = []  # sourcing.Links that copy from this stream
        self.links = None  # sourcing.Links: this stream's mirror or sources
        self._batches: batch.AtomicBatches | None = None  # open atomic batches, made on first use
        self._fast: fastbatch.FastBatches | None = None  # open fast batches, made on first use
        self._scheduler: schedules.Scheduler | None = None  # with allow_msg_schedules
        # the PUBs one read brings for this stream, taken in one call (_on_publish_run)
        self._run_spec = RunSpec(_no_key, self._on_publish_run, None)

    @property
    def config(self) -> dict:
        return self._config

    @config.setter
    def config(self, cfg: dict) -> None:
        self._config = cfg
        # read on every publish: looked up once per config, not per message
        self._sealed = bool(cfg["sealed"])
        self._ack = not cfg.get("no_ack")
        self._interest = cfg["retention"] == "interest"
        self._mms = cfg["max_msg_size"]
        self._smt = cfg.get("subject_delete_marker_ttl") or 0
        self._per = cfg["max_msgs_per_subject"]
        self._mm = cfg["max_msgs"]
        self._mb = cfg["max_bytes"]
        self._has_limits = self._per > 0 or self._mm > 0 or self._mb > 0
        # discard new refuses only on max_msgs, max_bytes, or a full subject
        # with discard_new_per_subject (a KV bucket has none of these)
        self._discard_new = cfg["discard"] == "new" and (
            self._mm > 0 or self._mb > 0 or (self._per > 0 and bool(cfg.get("discard_new_per_subject"))))
        self._max_age = cfg["max_age"]
        st = cfg.get("subject_transform")
        self._itr = transform.new(st["src"], st["dest"]) if st else None
        rp = cfg.get("republish")
        self._republish = RePublisher(self, rp) if rp and rp.get("dest") else None
        self._counter = bool(cfg.get("allow_msg_counter"))
        # a run of plain publishes (no headers) is stored at once unless one
        # of these makes storing each depend on the one before in a way the
        # run cannot count ahead (per-subject limits, interest) or changes it
        # (a transform, a counter, republish); max_msgs and max_bytes it
        # counts (_on_publish_run)
        self._runs_plain = not (self._sealed or self._itr is not None or self._counter or self._interest
                                or self._per > 0 or self._republish is not None)

    # -- lifecycle ---------------------------------------------------------
    def start(self) -> None:
        messaging = self.js.messaging
        messaging.internal_clients(3)  # (nats-server's stream client, its internal one and its loop's)
        batch.recover(self)
        # The deletes the limits made are logged but not synced with the
        # PubAck of the message that made them (one sync per group commit:
        # store/file/reclaim.py), so after a power cut the old revisions can be
        # back; re-derive them from the limits, as nats-server enforces its
        # limits when it recovers a stream.
        self._enforce_limits_all()
        for subj in self.config["subjects"]:
            self._subs.append(messaging.subscribe(subj, self._on_publish, raw=True, run=self._run_spec))
        if not self._load_runtime_state():
            self._rebuild_dedupe()
            self.expiry.rebuild()
        self.expiry.arm_age()
        self._start_scheduler()

    def _start_scheduler(self) -> None:
        if self.config.get("allow_msg_schedules") and self._scheduler is None:
            self._scheduler = schedules.Scheduler(self)
            self._scheduler.rebuild()

    def stop(self) -> None:
        self.closed = True
        messaging = self.js.messaging
        for s in self._subs:
            messaging.unsubscribe(s)
        self._subs.clear()
        self.expiry.stop()
        for batches in (self._batches, self._fast):
            if batches is not None:
                batches.drop_all()
        if self._scheduler is not None:
            self._scheduler.stop()
        for c in list(self.consumers.values()):
            c.stop()

    def update_config(self, cfg: dict) -> None:
        old_subjects = self.config["subjects"]
        self.config = cfg
        if cfg["subjects"] != old_subjects:
            messaging = self.js.messaging
            for s in self._subs:
                messaging.unsubscribe(s)
            self._subs = [messaging.subscribe(subj, self._on_publish, raw=True, run=self._run_spec)
                          for subj in cfg["subjects"]]
        self._enforce_limits_all()
        self.expiry.arm_age()
        if self._batches is not None and not cfg.get("allow_atomic"):
            self._batches.drop_all()
        if self._fast is not None and not cfg.get("allow_batched"):
            self._fast.drop_all()
        self._start_scheduler()

    # -- publish path --------------------------------------------------------
    def _on_publish(self, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes,
                    trace: list | None = None, pub=None) -> str | None:
        """The stream's subscription (raw: subject and reply arrive as bytes).
        Returns why the message was not stored, if it was refused (a message
        trace reports it; ``trace``: see ``traced_publish``). ``pub``: the
        publisher of a run's message (_on_publish_run)."""
        if self._ingest_limited and \
                len(payload) + len(subject) + len(reply) + (len(hdr) if hdr else 0) > self.js.max_buffered_size:
            return self._ingest_full(reply)
        if subject == self._subj_b:
            subj = self._subj_s  # one str for a run on one subject (the stores keep it, not copies)
        else:
            try:
                subj = subject.decode()
            except UnicodeDecodeError:
                # not a subject nats-server stores either: it answers no responders
                self.js.messaging.no_responders(subject, reply, pub)
                return "invalid subject"
            self._subj_b, self._subj_s = subject, subj
        try:
            self.process_msg(subj, reply, hdr, payload, trace=trace)
        except ApiError as e:
            if reply and self._ack:
                self._reply(reply, self._pub_error(e), False)
            return e.description
        except OSError as e:  # the store could not write (it has said so): the publisher hears why
            if reply and self._ack:
                self._reply(reply, self._pub_error(errors.stream_store_failed(str(e))), False)
            return str(e)
        except Exception as e:  # never let a bug escape into message routing
            log.exception("stream %s: publish failed", self.name)
            return str(e)
        return None

    def _on_publish_run(self, _key: bytes, items: list) -> None:
        """The stream's subscription taking a run: the plain PUBs (no
        headers, so no per-message expectations) that one read of a client
        brought for this stream, [(subject, reply, payload), ...] in order.
        They are checked in one pass, stored with one ``store_run`` and their
        PubAcks held together; each message still gets what ``_on_publish``
        would give it (its own sequence, its own refusal), and a stream
        whose messages depend on each other takes them one by one."""
        js = self.js
        pub = js.messaging.publisher()  # (answering the first ones changes who that is)
        if not self._runs_plain or self._ingest_limited or js.bytes_limited or self._scheduler is not None:
            for subject, reply, payload in items:
                self._on_publish(subject, reply, None, payload, None, pub)
            return
        mms = self._mms
        seg: list = []  # (subject, payload, ts) of the messages stored together
        replies: list = []  # and their replies, in order
        last_b, last_s = self._subj_b, self._subj_s
        # discard new on max_msgs / max_bytes: what the store would hold with
        # each message, counted ahead (store_checked's check, message by message)
        dn = self._discard_new
        if dn:
            mm, mb = self._mm, self._mb
            size_of = self.store.msg_size
            held, nbytes, _ = self.store.totals()
        for subject, reply, payload in items:
            if subject != last_b:
                try:
                    last_s = subject.decode()
                except UnicodeDecodeError:
                    last_s = None
                last_b = subject
            if not (last_s is None or (mms >= 0 and len(payload) > mms) or reply.endswith(_FAST_BATCH)):
                if not dn:
                    seg.append((last_s, payload, time_ns()))
                    replies.append(reply)
                    continue
                size = size_of(last_s, None, payload)
                if (not (mm > 0 and held >= mm) and not (mb > 0 and nbytes + size > mb)
                        and len(last_s) == len(subject)):  # (the size charged is the subject's bytes)
                    held += 1
                    nbytes += size
                    seg.append((last_s, payload, time_ns()))
                    replies.append(reply)
                    continue
            # refused, or a fast batch's: on its own, after those before it
            if seg:
                self._store_run(seg, replies)
                seg, replies = [], []
            self._on_publish(subject, reply, None, payload, None, pub)
            if dn:
                held, nbytes, _ = self.store.totals()
        if last_s is not None:
            self._subj_b, self._subj_s = last_b, last_s
        if seg:
            self._store_run(seg, replies)

    def _store_run(self, seg: list, replies: list) -> None:
        """Store what _on_publish_run checked, then answer and tell."""
        try:
            first = self.store.store_run(seg)
        except OSError as e:  # the store could not write (it has said so): those publishers hear why
            k = getattr(e, "stored", 0)
            if k:
                self._stored_run(e.first, seg[:k], replies[:k])
            if self._ack:
                fail = self._pub_error(errors.stream_store_failed(str(e)))
                for reply in replies[k:]:
                    if reply:
                        self._reply(reply, fail, False)
            return
        self._stored_run(first, seg, replies)

    def _stored_run(self, first: int, seg: list, replies: list) -> None:
        """What store_checked does after storing, for a run stored from
        sequence ``first`` on: once for the run where once is the same."""
        if self._last_msg_id:
            self._last_msg_id = ""  # (as _record_id for a message without an id)
        if self._has_limits:
            # max_msgs / max_bytes (no per-subject limit here): discard old
            # drops what the run pushed over them, as message by message;
            # discard new let nothing go over
            self._enforce_limits("")
        if self._ack:
            head = self._pub_ack
            answers = [(r, b"%s%d}" % (head, seq), True) for seq, r in enumerate(replies, first) if r]
            if answers and not self.store.hold_many(answers):
                self.js.messaging.reply_run([(r, None, payload) for r, payload, _ in answers])
        if self._max_age and self.expiry.age_timer is None:
            self.expiry.arm_age()
        if self.consumers:
            # (a consumer is told of a subject's new messages once: on_stored only wakes its delivery)
            last_seq = first + len(seg) - 1
            told = None
            for subject, _, _ in seg:
                if subject is not told:
                    told = subject
                    for c in self.consumers.values():
                        c.on_stored(last_seq, subject)
        journal = self._journal
        if journal is not None:
            mirror = self.config.get("mirror")
            for seq, (_, _, ts) in enumerate(seg, first):
                journal.published(self.key, seq, time_ns() if mirror else ts)
        if self.followers:
            for link in self.followers:
                link.origin_stored()

    def _ingest_full(self, reply: bytes) -> str:
        """A message bigger than ``jetstream { max_buffered_size }``: nats-server's
        stream ingest queue refuses it (``queueInbound``; natslab's queue holds
        the one message being stored, so only its size can reach the limit),
        dropped with a warning and, to a publisher that waits, a 429."""
        log.warning("Dropping messages due to excessive stream ingest rate on '%s' > '%s': IPQ size limit reached",
                    self.js.account, self.name)
        if reply:
            body = dumps({"error": errors.stream_too_many_requests().to_dict(), "stream": self.name, "seq": 0})
            self.js.messaging.reply(reply, body.encode(), b"NATS/1.0 429 Too Many Requests\r\n\r\n")
        return "IPQ size limit reached"

    def traced_publish(self, subject: bytes, reply: bytes, hdr: bytes, payload: bytes,
                       only: bool) -> tuple[str | None, bool]:
        """A publish a message trace follows: (why it was refused or None,
        whether its headers passed the checks). Trace-only (``only``) runs the
        checks and stops there: nothing is stored, and only a refusal is
        answered (as nats-server does)."""
        trace = [only]
        error = self._on_publish(subject, reply, hdr, payload, trace)
        return error, len(trace) > 1

    def config_json(self) -> dict:
        """The config in StreamConfig's field order (what /jsz shows)."""
        from ..shapes import STREAM_CONFIG_FIELDS, ordered

        return ordered(self.config, STREAM_CONFIG_FIELDS)

    def drops_unwanted(self, subject: str) -> bool:
        """An interest stream drops a message no consumer wants on arrival."""
        return bool(self._interest) and not self._has_interest(subject)

    def _pub_error(self, e: ApiError) -> bytes:
        return dumps({"error": e.to_dict(), "stream": self.name, "seq": 0}).encode()

    def _reply(self, reply: bytes, payload: bytes, stored: bool = True) -> None:
        """Answer a publish: at once, or (file store) once the message and
        those before it are written, in the order they were published."""
        if not self.store.hold(reply, payload, stored):
            self.js.messaging.reply(reply, payload)

    def _on_written(self, held: list, err: OSError | None, first: int) -> None:
        """The file store wrote (or failed to write) the messages from
        ``first`` on: send the replies that waited for that."""
        fail = None
        if err is not None:
            # those messages are not stored (the store has logged it): their
            # publishers get the error, and their ids no longer count as duplicates
            fail = self._pub_error(errors.stream_store_failed(str(err)))
            for mid in [mid for mid, (seq, _) in self._ddmap.items() if seq >= first]:
                del self._ddmap[mid]
        if fail is None:
            self.js.messaging.reply_run([(r, None, payload) for r, payload, _ in held])
        else:
            self.js.messaging.reply_run([(r, None, fail if stored else payload) for r, payload, stored in held])

    def process_msg(self, subject: str, reply: bytes, hdr: bytes | None, payload: bytes,
                    sourced: int = 0, ts: int = 0, trace: list | None = None) -> None:
        """Store one message: a publish (``sourced`` 0), one copied from a
        source (SOURCED) or for a mirror (MIRRORED, kept at the origin's
        ``ts``; the mirror positioned the store at the origin's sequence).
        Copied messages skip the publish-only checks, as nats-server's.
        ``trace`` ([trace-only]) is marked once the checks passed; a
        trace-only publish stops there."""
        if self._itr is not None:
            subject = self._itr.match(subject) or subject
        if self._sealed:
            raise errors.stream_sealed()
        msg_id = ""
        ttl = 0
        ttl_err = False
        rollup = ""
        incr = None
        # the size limits come first, before any header is looked at, as on
        # the real server (its inbound path checks them pre-emptively)
        hlen = len(hdr) if hdr else 0
        mms = self._mms
        if mms >= 0 and (hlen > mms or len(payload) > mms - hlen):
            raise errors.stream_msg_too_big()
        if hlen > 65535:
            raise errors.header_too_big()
        if trace is not None and trace[0] and (reply.endswith(_FAST_BATCH) or hdr and b"Nats-Batch-Id" in hdr):
            return  # (a batch's checks need the whole batch: trace-only stages nothing)
        if reply.endswith(_FAST_BATCH):  # the reply names a fast batch
            if self._fast is None:
                self._fast = fastbatch.FastBatches(self)
            return self._fast.on_message(subject, reply, hdr, payload)
        if hdr and hdr.find(b"Nats-") >= 0:  # every header looked at here is a Nats-* one
            # read, checked and ordered as the real server's processJetStreamMsg
            # does; an empty value counts as no header
            value = headers.value
            batch_id = value(hdr, b"Nats-Batch-Id")
            if batch_id and not sourced:
                if self._batches is None:
                    self._batches = batch.AtomicBatches(self)
                return self._batches.on_message(subject, reply, hdr, payload, batch_id)
            if hdr.find(counters.INCR) >= 0:
                incr = counters.check_headers(self, hdr, payload, sourced)
            es = value(hdr, b"Nats-Expected-Stream")
            if es and es != self.name:
                raise errors.expected_stream_mismatch()
            ttl_hdr = value(hdr, b"Nats-TTL")
            if ttl_hdr:
                try:
                    ttl = parse_ttl(ttl_hdr)
                except ApiError:
                    ttl_err = True
                if ttl and not self.config["allow_msg_ttl"]:
                    if not sourced:
                        raise errors.msg_ttl_disabled()
                    ttl = 0  # copied as is, but this stream keeps no TTLs
            elss = value(hdr, b"Nats-Expected-Last-Subject-Sequence")
            on = value(hdr, b"Nats-Expected-Last-Subject-Sequence-Subject")
            if elss:
                last = self._last_seq_for(on or subject)
                if headers.go_uint64(elss) != last:
                    raise errors.wrong_last_sequence(last)
            elif on:
                raise errors.expected_last_seq_per_subject_invalid()
            els = value(hdr, b"Nats-Expected-Last-Sequence")
            if els:
                last = self.store.state().last_seq
                if headers.go_uint64(els) != last:
                    raise errors.wrong_last_sequence(last)
            if not sourced and hdr.find(b"Nats-Schedul") >= 0:  # Nats-Schedule*, Nats-Scheduler
                hdr, _ = schedules.check_publish(self, subject, hdr, None)
            if not sourced and b"Nats-Stream-Source" in hdr and value(hdr, b"Nats-Stream-Source"):
                raise errors.message_source_header_not_allowed()  # only a stream's own sourcing sets it
            msg_id = value(hdr, b"Nats-Msg-Id")
            if msg_id and sourced != MIRRORED:  # a mirror keeps what its origin kept
                dup = self._check_dup(msg_id)
                if dup:
                    if reply and self._ack:
                        self._reply(reply, b'%s%d,"duplicate": true}' % (self._pub_ack, dup), False)
                    return
            elmi = value(hdr, b"Nats-Expected-Last-Msg-Id")
            if elmi and elmi != self._last_msg_id:
                raise errors.wrong_last_msg_id(self._last_msg_id)
            rollup = value(hdr, b"Nats-Rollup").lower()
            if rollup:
                allowed = self.config["allow_rollup_hdrs"] and not self.config["deny_purge"]
                if not allowed and not sourced:
                    raise errors.stream_rollup_failed("rollup not permitted")
                if rollup not in ("sub", "all"):
                    raise errors.stream_rollup_failed(f'rollup value invalid: "{rollup}"')
                if not allowed:
                    rollup = ""  # a copied rollup applies only where rollups are allowed
        if trace is not None:
            trace.append(True)
            if trace[0]:
                return
        ack_tail = b"}"
        if self._counter:
            if incr is None:
                raise errors.msg_incr_missing()
            hdr, payload, total = counters.apply(self, subject, hdr, payload, incr, self.max_counter_size())
            ack_tail = b',"val":"%d"}' % total
        self.store_checked(subject, reply, hdr, payload, msg_id, ttl, ttl_err, rollup, ack_tail, ts)

    def max_counter_size(self) -> int:
        """What a counter message (header and new body) may not exceed."""
        mp = self.js.messaging.options.max_payload
        return mp if self._mms < 0 else min(mp, self._mms)

    def store_checked(self, subject: str, reply: bytes, hdr: bytes | None, payload: bytes, msg_id: str = "",
                      ttl: int = 0, ttl_err: bool = False, rollup: str = "", ack_tail: bytes = b"}",
                      ts: int = 0) -> int:
        """Store a message whose headers were checked (by ``process_msg``, or
        by ``batch`` and ``fastbatch``), and answer ``reply`` with the PubAck,
        ``ack_tail`` ending it (the counter value, the batch). Returns the
        message's sequence."""
        store = self.store
        if self.js.bytes_limited:  # the account's memory or file total (nats-server: wouldExceedLimits)
            limits.check_store(self.js, self.config["storage"], store.msg_size(subject, hdr, payload))
        ts = ts or time_ns()
        if self._interest and not self._has_interest(subject):
            seq = store.store_msg(subject, hdr, payload, ts)
            store.remove(seq)
            self._record_id(msg_id, seq, ts)
            if reply and self._ack:
                self._reply(reply, b"%s%d%s" % (self._pub_ack, seq, ack_tail))
            return seq
        if ttl_err:
            raise errors.msg_ttl_invalid()
        if ttl > 0 and self._smt > 0 and self._per != 1 and ttl < self._smt // NS:
            # a TTL below the delete-marker TTL is raised to it (and the header rewritten)
            ttl = self._smt // NS
            hdr = headers.append(headers.remove(hdr, headers.TTL), [(headers.TTL, str(ttl))])
        if self._discard_new:
            self._check_discard_new(subject, store.msg_size(subject, hdr, payload), bool(rollup))
        rp = self._republish.prepare(subject) if self._republish is not None else None
        seq = store.store_msg(subject, hdr, payload, ts)
        if msg_id or self._last_msg_id:
            self._record_id(msg_id, seq, ts)
        if ttl:
            self.expiry.add(seq, ts, ttl)
        if self._has_limits:
            self._enforce_limits(subject)
        if rollup:
            # the new message is the one kept (nats-server: a purge with keep 1)
            self._purge(subject if rollup == "sub" else None, 0, 1)
        if rp is not None:
            self._republish.send(rp, subject, seq, ts, hdr, payload)
        if self._scheduler is not None:
            schedules.after_store(self, seq, subject, hdr, ts)
        if reply and self._ack:
            self._reply(reply, b"%s%d%s" % (self._pub_ack, seq, ack_tail))
        if self._max_age and self.expiry.age_timer is None:
            self.expiry.arm_age()
        if self.consumers:
            for c in self.consumers.values():
                c.on_stored(seq, subject)
        if self._journal is not None:
            # (the message's own time, but a mirror keeps its origin's: now instead)
            self._journal.published(self.key, seq, time_ns() if self.config.get("mirror") else ts)
        if self.followers:
            for link in self.followers:
                link.origin_stored()
        return seq

    def _last_seq_for(self, subject: str) -> int:
        if is_literal(subject):
            return self.store.last_seq_for_subject(subject)
        sm = self.store.load_last(subject)
        return sm.seq if sm else 0

    def _has_interest(self, subject: str) -> bool:
        # a mirror or source copying from here holds interest too (nats-server's
        # sourcing consumer never acks: what it matches stays while it exists)
        return (any(c.filter_matches(subject) for c in self.consumers.values())
                or any(link.wants(subject) for link in self.followers))

    def _check_discard_new(self, subject: str, size: int, rollup: bool = False) -> None:
        """discard new, as the real stores check it before storing: a subject
        at its limit is refused only with discard_new_per_subject (and not for
        a rollup, which purges the subject right after); otherwise storing on
        it replaces its oldest message, so max_msgs does not refuse it and
        max_bytes only when that message is smaller than the new one."""
        store = self.store
        per = self._per
        at_subject_limit = per > 0 and store.subject_count(subject) >= per
        if at_subject_limit and self.config.get("discard_new_per_subject") and not rollup:
            raise errors.stream_store_failed(_ERR_MAX_PER_SUBJECT)
        mm, mb = self._mm, self._mb
        if mm > 0 or mb > 0:
            msgs, nbytes, _ = store.totals()
            if mm > 0 and msgs >= mm and not at_subject_limit:
                raise errors.stream_store_failed(_ERR_MAX_MSGS)
            if mb > 0 and nbytes + size > mb:
                if not at_subject_limit:
                    raise errors.stream_store_failed(_ERR_MAX_BYTES)
                oldest = store.oldest_for_subject(subject, 1)
                sm = store.load(oldest[0]) if oldest else None
                if sm is None or store.msg_size(sm.subject, sm.hdr, sm.data) < size:
                    raise errors.stream_store_failed(_ERR_MAX_BYTES)

    def _enforce_limits(self, subject: str) -> None:
        """Apply discard-old limits after storing on ``subject``."""
        store = self.store
        per = self._per
        if per > 0 and subject:
            removed = store.trim_subject(subject, per)
            if removed and self.consumers:  # as remove_msg does for each
                for seq in removed:
                    for c in list(self.consumers.values()):
                        c.on_msg_removed(seq)
        mm, mb = self._mm, self._mb
        if mm > 0 or mb > 0:
            msgs, nbytes, first = store.totals()
            while msgs and ((mm > 0 and msgs > mm) or (mb > 0 and nbytes > mb)):
                self.remove_msg(first, True)
                msgs, nbytes, first = store.totals()

    def _enforce_limits_all(self) -> None:
        per = self.config["max_msgs_per_subject"]
        st = self.store.state() if per > 0 else None
        # (no subject over the limit when there are no more messages than it,
        # or one per subject: a KV bucket restarted cleanly is not walked)
        if st is not None and st.messages > per and st.messages > st.num_subjects:
            for subj, n in self.store.subjects_state().items():
                if n > per:
                    self._enforce_limits(subj)
        self._enforce_limits("")

    # -- dedupe ------------------------------------------------------------
    def _check_dup(self, msg_id: str) -> int:
        ent = self._ddmap.get(msg_id)
        if ent is None:
            return 0
        if now_ns() - ent[1] >= self.config["duplicate_window"]:
            return 0
        return ent[0]

    def _record_id(self, msg_id: str, seq: int, ts: int) -> None:
        self._last_msg_id = msg_id
        if not msg_id:
            return
        self._ddmap[msg_id] = (seq, ts)
        self._ddq.append((ts, msg_id))
        window = self.config["duplicate_window"]
        q = self._ddq
        while q and ts - q[0][0] >= window:
            old_ts, old_id = q.popleft()
            ent = self._ddmap.get(old_id)
            if ent and ent[1] == old_ts:
                del self._ddmap[old_id]

    # -- runtime state across a clean restart -----------------------------------
    # The dedupe window and the TTL deadlines derive from the stored messages;
    # after a crash they are rebuilt by scanning them, but a clean stop saves
    # them so a large stream starts without reading every message back.
    def _runtime_path(self):
        return self.js.stream_dir(self.name) / RUNTIME_FILE

    def save_runtime_state(self) -> None:
        if self.config["storage"] != "file":
            return
        ttls, never = self.expiry.state()
        state = {
            "last_seq": self.store.state().last_seq,
            "last_msg_id": self._last_msg_id,
            "dedupe": [[mid, seq, ts] for mid, (seq, ts) in self._ddmap.items()],
            "ttls": ttls,
            "never": never,
        }
        write_json_atomic(self._runtime_path(), state)

    def _load_runtime_state(self) -> bool:
        if self.config["storage"] != "file":
            return False
        path = self._runtime_path()
        try:
            state = read_json_checked(path, None)
        except CorruptStateError as e:
            log.warning("stream %s: ignoring %s: %s", self.name, path, e)
            state = None
        try:
            path.unlink()  # only good until the next write; a crash must rescan
        except OSError:
            pass
        if not state or state.get("last_seq") != self.store.state().last_seq:
            return False
        for mid, seq, ts in sorted(state["dedupe"], key=lambda e: e[2]):
            self._record_id(mid, seq, ts)
        self._last_msg_id = state.get("last_msg_id", "")
        self.expiry.restore(state["ttls"], state["never"])
        return True

    def _rebuild_dedupe(self) -> None:
        """After a restart: the msg ids stored within the window, from its
        first sequence on (nats-server's rebuildDedupe). Only messages with
        headers can hold one: the others are not read (the file store knows
        them from its index), which keeps a start on a big store short."""
        st = self.store.state()
        if not st.messages:
            return
        start = self.store.seq_for_time(now_ns() - self.config["duplicate_window"])
        for seq in self.store.seqs_with_headers(start):
            sm = self.store.load(seq)
            if sm is not None and sm.hdr and b"Nats-Msg-Id" in sm.hdr:
                mid = headers.parse(sm.hdr).get(headers.MSG_ID)
                if mid:
                    self._record_id(mid, sm.seq, sm.ts)
        last = self.store.load_last()
        if last and last.hdr:
            self._last_msg_id = headers.parse(last.hdr).get(headers.MSG_ID, "")

    # -- removal and consumers -----------------------------------------------
    def remove_msg(self, seq: int, rederivable: bool = False) -> bool:
        """Remove one message (a delete, a limit, an expiry, an ack under
        interest or workqueue retention). As the real stores' RemoveMsg does,
        each consumer hears of it, and terminates it if it was pending.
        ``rederivable``: a removal the stream makes again by itself when it
        is recovered (its limits, expiry), which no reply waits for."""
        if not self.store.remove(seq, rederivable):
            return False
        if self.js.messaging.journal is not None:
            self.js.messaging.journal.stream(self.key, "remove", seq)
        if self.consumers:
            for c in list(self.consumers.values()):
                c.on_msg_removed(seq)
        return True

    def ack_processed(self, seq: int, subject: str | None = None) -> None:
        """A consumer is done with ``seq``: remove it when retention says so."""
        ret = self.config["retention"]
        if ret == "limits":
            return
        if ret == "interest":
            if subject is None:
                sm = self.store.load(seq)
                if sm is None:
                    return
                subject = sm.subject
            for c in self.consumers.values():
                if c.needs(seq, subject):
                    return
            if any(link.wants(subject) for link in self.followers):
                return
        self.remove_msg(seq)

    def check_interest_all(self) -> None:
        """Interest retention after a consumer went away or acked in bulk."""
        if self.config["retention"] != "interest":
            return
        if not self.consumers and not self.followers:
            # no interest left at all: nats-server purges the stream
            self.store.purge()
            return
        for seq in list(self.store.iter_seqs()):
            sm = self.store.load(seq)
            if sm is None:
                continue
            if not any(c.needs(seq, sm.subject) for c in self.consumers.values()) and not any(
                    link.wants(sm.subject) for link in self.followers):
                self.remove_msg(seq)

    # -- stream API ------------------------------------------------------------
    def state_json(self, subjects_filter: str | None = None, deleted_details: bool = False) -> dict:
        st = self.store.state()
        subjects = self.store.subjects_state(subjects_filter) if subjects_filter else None
        deleted = self.store.deleted() if deleted_details else None
        n = len(self.consumers)
        if self.followers and self.config["retention"] != "limits":
            n += len(self.followers)  # sourcing consumers count where they hold messages
        return stream_state(st, n, subjects, deleted)

    def purge(self, req: dict) -> int:
        if self.config["sealed"]:
            raise errors.stream_sealed()
        if self.config["deny_purge"]:
            raise errors.stream_purge_failed("stream purge not permitted")
        flt = req.get("filter") or None
        seq = req.get("seq") or 0
        keep = req.get("keep") or 0
        if seq and keep:
            raise errors.bad_request()
        return self._purge(flt, seq, keep)

    def _purge(self, flt: str | None, seq: int, keep: int) -> int:
        """The purge itself (nats-server's purgeLocked), for the API and for
        a rollup; the consumers move as nats-server moves them."""
        # a purge by subject (or keeping the newest N) that removes exactly one
        # message tells the consumers which, as a delete does (nats-server's
        # PurgeEx); any other purge only moves them below
        one = None
        if flt not in (None, ">") or (keep and not seq):
            one = self.store.load_next(0, flt)
        if flt is None and not seq and not keep:
            n = self.store.purge()
        else:
            n = self.store.purge(flt, seq=seq, keep=keep)
        if self.js.messaging.journal is not None:
            self.js.messaging.journal.stream(self.key, "purge")
        if n == 1 and one is not None:
            for c in list(self.consumers.values()):
                c.on_msg_removed(one.seq)
        st = self.store.state()
        first = st.first_seq if st.messages else st.last_seq + 1
        fseq = first
        if flt:
            sm = self.store.load_next(first, flt)
            fseq = sm.seq if sm else 0
        for c in list(self.consumers.values()):
            c.on_purged(fseq, first, st.last_seq, flt)
        return n

    def delete_msg(self, seq: int, no_erase: bool) -> None:
        """The store's part of STREAM.MSG.DELETE (the API checks sealed and
        deny_delete first: those errors count in api.errors, these do not)."""
        if seq <= 0:
            raise errors.bad_request()
        if not self.remove_msg(seq):
            if self.config["storage"] == "file":
                # the real file store reports where the sequence is out of range
                st = self.store.state()
                if seq > st.last_seq:
                    raise errors.stream_msg_delete_failed("stream store EOF")
                if seq < st.first_seq:
                    raise errors.stream_msg_delete_failed("no message found")
            raise errors.sequence_not_found(seq)

    @staticmethod
    def stored_message_json(sm: StoredMsg, with_headers: bool = True) -> dict:
        d = {"subject": sm.subject, "seq": sm.seq}
        if sm.hdr and with_headers:
            d["hdrs"] = base64.b64encode(sm.hdr).decode()
        if sm.data:
            d["data"] = base64.b64encode(sm.data).decode()
        d["time"] = rfc3339(sm.ts)
        return d

    def direct_get_run(self, items: list[tuple[bytes, bytes, bytes]], skip: int) -> None:
        """``DIRECT.GET.<stream>.<subject>`` with no body and no headers, for
        a run of requests: (request subject, reply, payload), the message's subject
        from byte ``skip`` on."""
        try:
            (self._direct or self._direct_get()).last_by_subjects(items, skip)
        except Exception:
            log.exception("stream %s: direct get failed", self.name)

    def on_direct_get(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> None:
        try:
            self._direct_get().on_request(subject, reply, hdr, payload)
        except Exception:
            log.exception("stream %s: direct get failed", self.name)

    def _direct_get(self) -> DirectGet:
        if self._direct is None:
            self._direct = DirectGet(self)
        return self._direct
