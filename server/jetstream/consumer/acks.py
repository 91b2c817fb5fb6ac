"""A consumer's ack state (``AckState``, one per ``consumer.Consumer``): what
has been delivered and what is still owed an ack, as nats-server's consumer
store keeps it (delivered sequences, the two ack floors, pending acks,
redelivery counts), with the redelivery queue and the ack-wait / backoff timer
that fills it.

It owns the ``$JS.ACK`` subject and its payloads (ack, -NAK with delay, +WPI,
+TERM, +NXT, and the ack-of-ack reply), max_deliver, sample_freq's ack
samples and the consumer advisories those raise. Every ack, one or a run from
one read, goes through ``on_acks``; the floors move in ``move_floors`` only.
Delivery (``delivery.Delivery``) asks it for the next redelivery and tells it
what it delivered; it never touches the maps itself. The consumer persists
``as_dict()`` and restores it with ``load()``."""

from __future__ import annotations

import json
import random
import string
from collections import deque
from itertools import islice, repeat
from operator import itemgetter, le, lt
from time import time_ns as _time_ns

from ...internal import RunSpec
from .config import filters_of
from ..shapes import NS, dumps, now_ns, parse_go_duration, rfc3339
from ...subjects import is_subset

ADV_MAX_DELIVERIES = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"
ADV_NAK = "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED"
ADV_TERMINATED = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED"
METRIC_ACK = "$JS.EVENT.METRIC.CONSUMER.ACK"  # sample_freq's ack samples
_ACK_WAIT_DELAY = 1_000_000  # ns, as ackWaitDelay in the real server
# ack subjects handed out and not yet acked that ``parse`` answers from
# memory (``delivered_run`` fills it); above this many it starts again
_SENT_MAX = 16384
TERM_UNACKED_DELETED = "Unacknowledged message was deleted"
_pd = itemgetter(0)  # a pending entry's consumer sequence


def _nuid() -> str:
    return "".join(random.choices(string.ascii_letters + string.digits, k=22))


def parse_ack_subject(subject: bytes) -> tuple[int, int, int] | None:
    """(stream seq, consumer seq, delivery count) from a v1 or v2 ack subject."""
    t = subject.split(b".")
    try:
        if len(t) == 9:
            return int(t[5]), int(t[6]), int(t[4])
        if len(t) >= 11:
            return int(t[7]), int(t[8]), int(t[6])
    except ValueError:
        return None
    return None


class AckState:
    """The consumer store's state and the acks that move it. ``sseq`` /
    ``dseq``: the stream and consumer sequences delivered next; ``adflr`` /
    ``asflr``: the consumer's ack floor (what interest retention and
    redelivery go by); ``sfloor``: the floor as the real server's consumer
    store keeps it (what info reports; it differs only when max_deliver
    drops a pending message); ``pending``: stream seq -> [consumer seq,
    delivery time ns]; ``rdc``: stream seq -> times redelivered; ``rdq``:
    the redelivery queue. Others read these; only this class changes them."""

    def __init__(self, consumer) -> None:
        self.c = consumer  # config, stream, messaging, advisories, signal(), schedule_save()
        self.sseq = 1
        self.dseq = 1
        self.adflr = 0
        self.asflr = 0
        self.sfloor = [0, 0]
        self.pending: dict[int, list[int]] = {}
        self.rdc: dict[int, int] = {}
        self.rdq: list[int] = []
        self.ldt = 0  # last delivery time (ns)
        self.lat = 0  # last ack time (ns)
        self._ptmr = None
        self._ptmr_at = 0.0
        self._sample_src = None
        self._sample_pct = 0
        # ack subject -> what parse_ack_subject makes of it, for the ack
        # subjects of recent deliveries: an ack's subject is looked up, not
        # split and converted (three int() calls cost more than the rest of
        # the ack). A memo of a pure function: whatever it holds or drops,
        # every ack is read the same.
        self._sent: dict[bytes, tuple[int, int, int]] = {}

    def stop(self) -> None:
        if self._ptmr:
            self._ptmr.cancel()
            self._ptmr = None

    # -- the whole state -------------------------------------------------------------------
    def start_at(self, sseq: int) -> None:
        """Start (over) at stream sequence ``sseq``: nothing delivered, nothing
        pending, the floors just below it (a new consumer, a reset)."""
        self.pending.clear()
        self.rdc.clear()
        self.rdq.clear()
        self.sseq, self.dseq = sseq, 1
        self.adflr, self.asflr = 0, sseq - 1
        self.sfloor = [0, sseq - 1]
        self.ldt = self.lat = 0

    def as_dict(self) -> dict:
        """What the consumer writes to disk (consumer/state.py)."""
        return {
            "sseq": self.sseq,
            "dseq": self.dseq,
            "ack_floor": [self.adflr, self.asflr],
            "store_ack_floor": self.sfloor,
            "pending": self.pending,
            "redelivered": self.rdc,
        }

    def go_state(self) -> dict:
        """The Go ConsumerState (stream snapshots)."""
        d = {"delivered": {"consumer_seq": self.dseq - 1, "stream_seq": self.sseq - 1},
             "ack_floor": {"consumer_seq": self.sfloor[0], "stream_seq": self.sfloor[1]}}
        if self.pending:
            d["pending"] = {str(s): {"Sequence": p[0], "Timestamp": p[1]} for s, p in self.pending.items()}
        if self.rdc:
            d["redelivered"] = {str(s): n for s, n in self.rdc.items()}
        return d

    def load(self, state: dict) -> None:
        """The state as written (by ``as_dict`` or an earlier build), less what
        left the stream while the consumer was down; pending acks whose ack
        wait ran out meanwhile are redelivered."""
        self.sseq, self.dseq = state["sseq"], state["dseq"]
        self.adflr, self.asflr = state["ack_floor"]
        self.sfloor = list(state.get("store_ack_floor") or state["ack_floor"])
        pending, rdc = state["pending"], state["redelivered"]
        if isinstance(pending, list):  # the JSON state file of earlier builds
            pending = {s: [d, t] for s, d, t in pending}
            rdc = {s: n for s, n in rdc}
        self.pending = {int(s): [int(d), int(t)] for s, (d, t) in pending.items()}
        self.rdc = {int(s): int(n) for s, n in rdc.items()}
        # anything acked-and-removed while we were down (workqueue / interest) is no longer pending
        store = self.c.stream.store
        first = store.state().first_seq
        for s in list(self.pending):
            if store.load(s) is None and s < self.sseq:
                self.pending.pop(s)
                self.rdc.pop(s, None)
        if self.sseq < first:
            self.sseq = first
        if not self.pending:
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
            self.sfloor = [self.adflr, self.asflr]
        self.rearm_pending()

    def needs(self, seq: int) -> bool:
        """needAck for a message the consumer's filters match."""
        if seq <= self.asflr:
            return False
        if self.c.config["ack_policy"] == "none":
            return True
        if seq >= self.sseq:
            return True
        return seq in self.pending

    def full(self) -> bool:
        """Delivery is held back by max_ack_pending."""
        cfg = self.c.config
        mp = cfg.get("max_ack_pending") or 0
        return mp > 0 and cfg["ack_policy"] != "none" and len(self.pending) >= mp

    # -- the ack subject -----------------------------------------------------------------
    def ack_runs(self, key: bytes) -> RunSpec:
        """How the parser hands this consumer runs of plain acks (no reply,
        an empty or +ACK body) under its ack subject prefix ``key``: all at
        once, to on_acks."""

        def starts(subject: bytes, reply: bytes | None, payload: bytes) -> bytes | None:
            return key if reply is None and (not payload or payload == b"+ACK") else None

        def handler(_key: bytes, items: list) -> None:
            subjects = next(zip(*items))
            acks = list(map(self._sent.pop, subjects, repeat(None)))
            if None in acks:  # not one of the subjects remembered: read it
                acks = [a for s, t in zip(subjects, acks) if (a := t or parse_ack_subject(s)) is not None]
            self.on_acks(acks)

        return RunSpec(starts, handler, (b"", b"+ACK"), False)

    def parse(self, subject: bytes) -> tuple[int, int, int] | None:
        """parse_ack_subject, answered from the ack subjects handed out when
        it is one of them."""
        t = self._sent.pop(subject, None)
        return t if t is not None else parse_ack_subject(subject)

    def on_ack(self, subject: bytes, reply: bytes, hdr, msg: bytes) -> None:
        """The ack subscription (raw: subject and reply arrive as bytes)."""
        c = self.c
        if c.closed:
            return
        try:
            t = self.parse(subject)
            if t is None:
                return
            sseq, dseq, dc = t
            send_reply = sseq != 0
            durable = False  # an ack (or term) whose answer waits until it is written
            if not msg or msg == b"+ACK" or msg == b"+OK":
                send_reply = self.on_acks((t,)) > 0 and send_reply
                durable = True
            elif msg.startswith(b"+NXT"):
                self.on_acks((t,))
                if reply:
                    c.on_pull_request(reply.decode(), msg[4:])
                send_reply = False
            elif msg.startswith(b"-NAK"):
                self.nak(sseq, dseq, dc, msg[4:])
            elif msg == b"+WPI":
                p = self.pending.get(sseq)
                if p is not None:
                    p[1] = now_ns()
                    c.schedule_save()
                    if c.journal is not None:
                        c.journal.consumer(c, "progress", (sseq,), dseq, dc)
            elif msg.startswith(b"+TERM"):
                reason = msg[5:].strip().decode(errors="replace")
                send_reply = self.term(sseq, dseq, dc, reason) and send_reply
                durable = True
            if reply and sseq == 0 and durable and c.config["ack_policy"] == "explicit" \
                    and c.stream.config["retention"] == "limits":
                # nats-server answers an ack (or term) of stream sequence 0 in
                # this case alone: its updateAcks sends the reply itself (no
                # ack is applied, so nothing waits for a write)
                c.messaging.reply(reply, b"")
            elif reply and send_reply:
                # answered once the state it changed is durable (a nak or
                # +WPI is not an ack to log: the whole state is written)
                c.reply_when_saved(reply, sseq, dseq, durable)
        except Exception:
            c.messaging.logger.exception("consumer %s > %s: ack failed", c.stream.name, c.name)

    def on_acks(self, acks) -> int:
        """processAckMsg for acks (``(stream seq, consumer seq, delivery
        count)`` each, in order): a run of them from one read (the parser
        hands those over at once), one from on_ack or a term, or the acks a
        restart applies again. Returns how many were for messages delivered
        (the ones an ack-of-ack answers). The time and the save are taken
        once for the run; an interest or workqueue stream is told of the
        messages acked after it."""
        c = self.c
        if c.closed:
            return 0
        n = 0
        try:
            ap = c.config["ack_policy"]
            limits = c.stream.config["retention"] == "limits"
            if ap == "none":
                if limits:
                    return 0
                nxt = self.sseq
                return sum(1 for t in acks if t[0] < nxt)
            sample = self.sample_percent()
            acked = None if limits else []
            touched = False
            nxt = self.sseq  # (acks do not deliver: it stays)
            if ap == "explicit":
                run = None if sample else self._ack_in_order(acks, nxt)
                if run is not None:
                    n = len(run)
                    if acked is not None:
                        acked += run
                else:
                    ack = self._ack_explicit
                    for sseq, dseq, dc in acks:
                        if sseq < nxt:  # else not delivered yet: no ack-of-ack either
                            n += 1
                            if sample:
                                self.sample_ack(sample, sseq, dseq, dc)
                            if ack(sseq, dseq) and acked is not None:
                                acked.append(sseq)
                touched = n > 0
            else:  # ack all
                for sseq, dseq, dc in acks:
                    if sseq < nxt:
                        n += 1
                        if sample:
                            self.sample_ack(sample, sseq, dseq, dc)
                        if dseq > self.adflr and sseq > self.asflr:  # past the floor
                            touched = True
                            self._ack_through(dseq, sseq, acked)
            if touched:
                self.lat = _time_ns()
                c.schedule_save()
                if c.journal is not None and not self._terming:  # (once per run of acks; a term records itself)
                    c.journal.consumer(c, "ack", tuple(t[0] for t in acks if t[0] < nxt))
            if acked:
                for s in acked:
                    c.stream.ack_processed(s)
        except Exception:
            c.messaging.logger.exception("consumer %s > %s: ack failed", c.stream.name, c.name)
        return n

    def _ack_explicit(self, sseq: int, dseq: int) -> bool:
        """An explicit ack of a delivered message: out of pending and the
        redelivery queue, both floors moved; delivery held back by
        max_ack_pending goes on. False when it was not pending."""
        pending = self.pending
        p = pending.pop(sseq, None)
        if self.rdc:
            self.rdc.pop(sseq, None)
        rdq = self.rdq
        if rdq and sseq in rdq:
            rdq.remove(sseq)
        if p is None:
            return False
        self.move_floors(p[0], dseq, sseq)
        mp = self.c.config.get("max_ack_pending") or 0
        if mp > 0 and len(pending) >= mp - 1:
            self.c.signal()
        return True

    def _ack_in_order(self, acks, nxt: int) -> tuple | None:
        """Explicit acks of a run taken at once when they are the messages
        right above the ack floor, in the order delivered (what a client
        acking a fetched batch sends): the stream seqs acked, or None (and
        nothing done) when the run is not of that shape, for
        ``_ack_explicit`` to take one by one.

        The shape: pending holds each (once), with the consumer sequences
        just above both floors (the two are equal) in stream order, no
        other pending message lies between the first and the last, and no
        ack names an earlier delivery than the one pending. One by one,
        each ack then moves both floors to just below the next in the run
        (move_floors finds it first in its scan), so the floors reach just
        below the last, and the last ack moves them as move_floors says:
        that one call is the whole run's floor move, the same end state."""
        k = len(acks)
        if k < 2:
            return None
        sseqs, dseqs, _ = zip(*acks)
        first, last = sseqs[0], sseqs[-1]
        base = self.adflr
        if last >= nxt or self.sfloor[0] != base:
            return None
        pending = self.pending
        ps = list(map(pending.get, sseqs))
        if None in ps:
            return None
        pds = list(map(_pd, ps))
        if (pds[0] != base + 1 or pds[-1] != base + k or not all(map(lt, pds, islice(pds, 1, None)))
                or not all(map(lt, sseqs, islice(sseqs, 1, None))) or not all(map(le, pds, dseqs))):
            return None
        if last - first != k - 1 and sum(map(pending.__contains__, range(first + 1, last))) != k - 2:
            return None  # another pending message between them stops the floor
        before = len(pending)
        deque(map(pending.pop, sseqs), 0)
        if self.rdc:
            deque(map(self.rdc.pop, sseqs, repeat(None)), 0)
        if self.rdq:
            gone = set(sseqs)
            self.rdq[:] = [s for s in self.rdq if s not in gone]
        pd = pds[-1]
        self.adflr, self.asflr = pd - 1, last - 1
        self.sfloor = [pd - 1, last - 1]
        self.move_floors(pd, dseqs[-1], last)
        mp = self.c.config.get("max_ack_pending") or 0
        if mp > 0 and before >= mp:  # (one by one: the first ack would signal)
            self.c.signal()
        return sseqs

    def _ack_through(self, dseq: int, sseq: int, acked: list | None) -> None:
        """AckAll of (dseq, sseq): everything up to it is acked, the floors
        jump to it."""
        self.adflr, self.asflr = dseq, sseq
        self.sfloor = [dseq, sseq]
        before = len(self.pending)
        gone = [s for s in self.pending if s <= sseq]
        for s in gone:
            del self.pending[s]
            self.rdc.pop(s, None)
        self.rdq = [s for s in self.rdq if s > sseq]
        self.signal_if_stalled(before)
        if acked is not None:
            acked.extend(gone)

    def move_floors(self, pd: int, dseq: int, sseq: int, store: bool = True, ack: bool = True) -> None:
        """The one place an ack floor moves once ``sseq`` has left pending
        (``pd``: the consumer sequence it was delivered with; ``dseq``: the
        one its ack named). ``store``: the floor the consumer store keeps
        (UpdateAcks); ``ack``: the consumer's own. An ack moves both, a
        max_deliver drop only the consumer's, a purge only the store's. A
        floor moves only when this was the next above it: to it, or to just
        below the next message still pending (one scan serves both)."""
        pending = self.pending
        sd = pd if 0 < pd < dseq else dseq
        if not pending:
            if store and sd > self.sfloor[0]:
                self.sfloor = [self.dseq - 1, self.sseq - 1]
            if ack:
                self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
            return
        to_store = store and sd == self.sfloor[0] + 1
        to_ack = ack and pd == self.adflr + 1
        if not (to_store or to_ack):
            return
        nxt = None
        last = self.dseq - 1
        if to_ack or last > sd:
            for ss in range(sseq + 1, self.sseq):
                p = pending.get(ss)
                if p is not None:
                    if p[0] > 0:
                        nxt = (p[0] - 1, ss - 1)
                    break
        if to_store:
            self.sfloor = list(nxt) if nxt is not None and last > sd else [sd, sseq]
        if to_ack:
            self.adflr, self.asflr = nxt if nxt is not None else (pd, sseq)

    def signal_if_stalled(self, before: int) -> None:
        """Delivery held back by max_ack_pending (``before``: pending until
        now) goes on once acks bring pending under it, however many at once."""
        mp = self.c.config.get("max_ack_pending") or 0
        if mp > 0 and before >= mp > len(self.pending):
            self.c.signal()

    def nak(self, sseq: int, dseq: int, dc: int, arg: bytes) -> None:
        c = self.c
        if dseq <= self.adflr or dseq > self.dseq or sseq not in self.pending:
            return
        c.advisory(ADV_NAK, "io.nats.jetstream.advisory.v1.nak",
                   {"consumer_seq": dseq, "stream_seq": sseq, "deliveries": dc})
        arg = arg.strip()
        if arg:
            delay = None
            try:
                if arg[:1] == b"{":
                    delay = int(json.loads(arg).get("delay") or 0)
                else:
                    delay = parse_go_duration(arg.decode())
            except (ValueError, TypeError, AttributeError):
                c.messaging.logger.warning("JetStream consumer '$G > %s > %s' bad NAK delay value: %r",
                                        c.stream.name, c.name, arg)
            if delay is not None:
                self._remove_from_rdq(sseq)
                p = self.pending.get(sseq)
                if p is not None:
                    p[1] = now_ns() - c.config.get("ack_wait", 0) + delay
                    self._arm_ptmr(0.01)
                    c.schedule_save()
                if c.journal is not None:
                    c.journal.consumer(c, "nak", (sseq,), dseq, dc, delay)
                return
        if sseq not in self.rdq:
            self._add_to_rdq([sseq])
        if c.journal is not None:
            c.journal.consumer(c, "nak", (sseq,), dseq, dc, 0)
        c.signal()

    _terming = False  # term() is acking: the history records the term, not an ack

    def term(self, sseq: int, dseq: int, dc: int, reason: str) -> bool:
        self._terming = True
        try:
            ok = self.on_acks(((sseq, dseq, dc),)) > 0
        finally:
            self._terming = False
        body = {"consumer_seq": dseq, "stream_seq": sseq, "deliveries": dc}
        if reason:
            body["reason"] = reason
        self.c.advisory(ADV_TERMINATED, "io.nats.jetstream.advisory.v1.terminated", body)
        if self.c.journal is not None:
            self.c.journal.consumer(self.c, "term", (sseq,), dseq, dc, reason)
        return ok

    # -- what delivery takes and gives back ------------------------------------------------------
    def next_redelivery(self):
        """(msg, delivery count) of the next redelivery, None when there is
        none. On the way, messages past max_deliver are dropped from pending
        (with the advisory) and ones gone from the stream are terminated."""
        c = self.c
        store = c.stream.store
        maxdc = c.config["max_deliver"]
        rdq, rdc, pending = self.rdq, self.rdc, self.pending
        while rdq:
            seq = rdq.pop(0)
            if seq not in pending:
                continue
            dc = rdc.get(seq, 0) + 2
            rdc[seq] = dc - 1
            if maxdc > 0 and dc > maxdc:
                if dc == maxdc + 1:
                    self.advisory_max_deliveries(seq, dc - 1)
                p = pending.pop(seq, None)
                if p is not None:
                    self.move_floors(p[0], p[0], seq, store=False)
                    c.schedule_save()
                if c.journal is not None:
                    c.journal.consumer(c, "max_deliveries", (seq,), p[0] if p else 0, dc - 1)
                continue
            sm = store.load(seq)
            if sm is None:
                rdc[seq] = dc - 2
                if rdc[seq] <= 0:
                    rdc.pop(seq, None)
                p = pending.get(seq)
                if p is not None:
                    self.term(seq, p[0], dc - 1, TERM_UNACKED_DELETED)
                continue
            return sm, dc
        return None

    def advance(self, sseq: int) -> None:
        """The next new message to deliver is at ``sseq`` or after it."""
        self.sseq = sseq

    def put_back(self, seq: int, dc: int) -> None:
        """``seq`` (delivery count ``dc``) was taken but not delivered: the
        cursor goes back to it, or it goes first in the redelivery queue."""
        if dc == 1 and seq == self.sseq - 1:
            self.sseq -= 1
        elif seq not in self.rdq:
            self.rdc[seq] = self.rdc.get(seq, 1) - 1
            if self.rdc[seq] <= 0:
                self.rdc.pop(seq, None)
            self.rdq.insert(0, seq)
        if self.c.journal is not None:
            self.c.journal.consumer(self.c, "putback", (seq,), 0, dc)

    def delivered(self, seq: int) -> int:
        """``seq`` was delivered (with the consumer sequence returned): pending
        and timed, or under ack none acked at once."""
        dseq = self.dseq
        self.dseq += 1
        self.ldt = now = now_ns()
        if self.c.config["ack_policy"] == "none":
            self.adflr, self.asflr = dseq, seq
            self.sfloor = [dseq, seq]
        else:
            p = self.pending.get(seq)
            if p is not None:
                p[1] = now
            else:
                self.pending[seq] = [dseq, now]
            self.track_pending(seq)
        return dseq

    def delivered_run(self, seqs, now: int, ack_none: bool, replies: list | None = None) -> None:
        """A run of new messages (``seqs``: their stream seqs, in stream
        order) was delivered with consecutive consumer sequences from
        ``dseq`` (``replies``: their ack subjects, in bytes, when they are
        to be acked), at ``now``."""
        dseq = self.dseq
        k = len(seqs)
        last = seqs[-1]
        if ack_none:
            self.adflr, self.asflr = dseq + k - 1, last
            self.sfloor = [dseq + k - 1, last]
        else:
            pending = self.pending
            dseqs = range(dseq, dseq + k)
            if pending.keys().isdisjoint(seqs):
                pending.update(zip(seqs, map(list, zip(dseqs, repeat(now)))))
            else:  # one pending already keeps its consumer sequence, with a new time
                for seq, d in zip(seqs, dseqs):
                    p = pending.get(seq)
                    if p is not None:
                        p[1] = now
                    else:
                        pending[seq] = [d, now]
            if replies is not None:
                sent = self._sent
                if len(sent) > _SENT_MAX:
                    sent.clear()
                sent.update(zip(replies, zip(seqs, dseqs, repeat(1))))
            self.track_pending(last)
        self.dseq = dseq + k
        self.sseq = last + 1
        self.ldt = now
        if self.c.journal is not None:  # (once per run)
            self.c.journal.consumer(self.c, "deliver", tuple(seqs), dseq, 1)

    # -- redelivery queue -------------------------------------------------------------------
    def _add_to_rdq(self, seqs: list[int]) -> None:
        q = set(self.rdq)
        self.rdq.extend(s for s in seqs if s not in q)

    def _remove_from_rdq(self, seq: int) -> None:
        if self.rdq and seq in self.rdq:
            self.rdq.remove(seq)

    # -- ack wait -------------------------------------------------------------------------
    def _ack_wait_for(self, seq: int) -> int:
        cfg = self.c.config
        bo = cfg.get("backoff")
        if bo:
            i = min(max(self.rdc.get(seq, 0), 0), len(bo) - 1)
            return bo[i] + _ACK_WAIT_DELAY
        return cfg.get("ack_wait", 0) + _ACK_WAIT_DELAY

    def track_pending(self, sseq: int) -> None:
        if self._ptmr is not None and not self.c.config.get("backoff"):
            # with one ack wait for every delivery, the armed timer is due
            # no later than this delivery's deadline (rearm_pending covers a
            # shortened ack_wait)
            return
        delay = self._ack_wait_for(sseq) / NS
        at = self.c.messaging.loop.time() + delay
        if self._ptmr is None or self._ptmr_at > at:
            self._arm_ptmr(delay)

    def _arm_ptmr(self, delay: float) -> None:
        if self._ptmr:
            self._ptmr.cancel()
        if self.c.closed:
            return
        loop = self.c.messaging.loop
        self._ptmr_at = loop.time() + delay
        self._ptmr = loop.call_later(delay, self.check_pending)

    def rearm_pending(self) -> None:
        if self.pending and self.c.config.get("ack_wait"):
            self._arm_ptmr(0.0 if self.c.messaging.loop else 0)

    def check_pending(self) -> None:
        """checkPending: queue expired pending acks for redelivery."""
        try:
            self._check_pending()
        except Exception:
            c = self.c
            c.messaging.logger.exception("consumer %s > %s: ack wait check failed", c.stream.name, c.name)
            if not c.closed and self._ptmr is None:
                self._arm_ptmr(1.0)

    def _check_pending(self) -> None:
        self._ptmr = None
        c = self.c
        cfg = c.config
        if c.closed or not cfg.get("ack_wait"):
            return
        ttl = cfg["ack_wait"]
        bo = cfg.get("backoff") or []
        first = c.stream.store.state().first_seq
        now = now_ns()
        nxt = bo[-1] if bo else ttl + _ACK_WAIT_DELAY
        expired = []
        changed = False
        maxdc = cfg["max_deliver"]
        for seq, p in list(self.pending.items()):
            if seq < first or seq <= self.asflr:
                del self.pending[seq]
                self.rdc.pop(seq, None)
                self._remove_from_rdq(seq)
                self.asflr = max(self.asflr, seq)
                self.adflr = max(self.adflr, p[0])
                changed = True
                continue
            elapsed, deadline = now - p[1], ttl
            if bo:
                dc = max(self.rdc.get(seq, 0), 0)
                nbi = dc + 1
                if dc + 1 >= len(bo):
                    dc = len(bo) - 1
                    nbi = dc
                deadline = bo[dc]
                nxt = min(nxt, bo[nbi])
            if elapsed >= deadline:
                if seq not in self.rdq and not self._has_max_deliveries(seq, maxdc):
                    expired.append(seq)
            elif deadline - elapsed < nxt:
                nxt = deadline - elapsed
        if expired:
            expired.sort()
            self._add_to_rdq(expired)
            off = now - self.pending[expired[0]][1]
            for s in expired:
                p = self.pending.get(s)
                if p is not None:
                    p[1] += off
            c.signal()
        if self.pending:
            self._arm_ptmr(max(nxt, 0) / NS)
        else:
            self.rdq.clear()
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
        if changed or expired:
            c.schedule_save()
            if c.journal is not None:
                c.journal.consumer(c, "expired" if expired else "floor", tuple(expired))

    def _has_max_deliveries(self, seq: int, maxdc: int) -> bool:
        if maxdc <= 0:
            return False
        dc = self.rdc.get(seq, 0) or 1
        if dc < maxdc:
            return False
        if dc == maxdc:
            self.advisory_max_deliveries(seq, dc)
        before = len(self.pending)
        p = self.pending.pop(seq, None)
        if p is not None:
            self.move_floors(p[0], p[0], seq, store=False)
        self.rdc[seq] = dc
        if self.c.journal is not None:
            self.c.journal.consumer(self.c, "max_deliveries", (seq,), p[0] if p else 0, dc)
        self.signal_if_stalled(before)
        return True

    # -- stream changes ---------------------------------------------------------------------
    def on_purged(self, fseq: int, first: int, lseq: int, flt: str | None) -> None:
        """The stream was purged (``flt``: the purge's subject filter, if any).
        As nats-server's stream purge and consumer.purge: a consumer whose
        filters all lie within the purged subject moves past it to ``fseq``
        (the first message left on that subject, 0 for none); one with a
        filter wider than it (or none) moves to the stream's ``first`` and
        drops the pending messages that are gone; others are not touched."""
        c = self.c
        start, wider = fseq, False
        if flt:
            filters = filters_of(c.config)
            if not (filters and all(is_subset(f, flt) for f in filters)):
                if filters and not any(is_subset(flt, f) for f in filters):
                    return
                start, wider = first, True
        if start == 0 and not wider:
            start = lseq + 1
        store = c.stream.store
        ack_all = c.config["ack_policy"] in ("all", "flow_control")
        sseq, dseq, adflr, asflr = max(self.sseq, start), self.dseq, self.adflr, self.asflr
        if asflr < start:
            asflr = start - 1
            for seq, p in list(self.pending.items()):
                if seq <= asflr or (wider and store.load(seq) is None):
                    if p[0] > adflr:
                        adflr = p[0]
                        dseq = max(dseq, adflr)
                    del self.pending[seq]
                    self.rdc.pop(seq, None)
                    # the consumer store sees each, before the new state (under
                    # ack all, its floor jumps to the message)
                    if not ack_all:
                        self.move_floors(p[0], p[0], seq, ack=False)
                    elif p[0] > self.sfloor[0]:
                        self.sfloor = [p[0], seq]
                    self.lat = _time_ns()
        self.sseq, self.dseq = sseq, dseq
        if not self.pending:
            self.rdc.clear()
            adflr, asflr = dseq - 1, sseq - 1
        self.adflr, self.asflr = adflr, asflr
        self.rdq = [s for s in self.rdq if s >= sseq]
        # the consumer store takes the new state unless it looks older than
        # what it has, or does not add up (nats-server's Update checks)
        if (asflr >= self.sfloor[1] and adflr <= dseq - 1 and asflr <= sseq - 1
                and all(asflr < s <= sseq - 1 for s in self.pending)):
            self.sfloor = [adflr, asflr]
        c.schedule_save()
        if c.journal is not None:
            c.journal.consumer(c, "purge")
        c.signal()

    def on_msg_removed(self, seq: int) -> None:
        """decStreamPending: a message left the stream by itself. Pending here,
        it is terminated just after (as nats-server does from a goroutine),
        with the MSG_TERMINATED advisory; its redelivery count goes."""
        p = self.pending.get(seq)
        if p is not None:
            dc = self.rdc.get(seq) or 1  # deliveryCount: the redelivery count, at least 1
            self.c.messaging.loop.call_soon(self._term_removed, seq, p[0], dc)
        elif self.rdc.pop(seq, None) is not None:
            self.lat = _time_ns()
            if self.c.journal is not None:
                self.c.journal.consumer(self.c, "floor", (seq,))

    def _term_removed(self, seq: int, dseq: int, dc: int) -> None:
        if not self.c.closed:
            self.term(seq, dseq, dc, TERM_UNACKED_DELETED)

    # -- ack samples (sample_freq) -------------------------------------------------------
    def sample_percent(self) -> int:
        """sample_freq as a percentage (0: no sampling), read again when the
        config changes."""
        freq = self.c.config.get("sample_freq") or ""
        if self._sample_src != freq:
            digits = freq[:-1] if freq.endswith("%") else freq
            self._sample_src = freq
            self._sample_pct = max(0, min(100, int(digits))) if digits.lstrip("-").isdigit() else 0
        return self._sample_pct

    def sample_ack(self, percent: int, sseq: int, dseq: int, dc: int) -> None:
        """One ack of a delivered message, sampled as nats-server samples it:
        the consumer sequence of the delivery acked (the ack subject's) and
        how long since that delivery."""
        p = self.pending.get(sseq)
        if p is None or (percent < 100 and random.randrange(100) >= percent):
            return
        self.c.advisory(METRIC_ACK, "io.nats.jetstream.metric.v1.consumer_ack",
                        {"consumer_seq": dseq, "stream_seq": sseq, "ack_time": now_ns() - p[1], "deliveries": dc})

    def advisory_max_deliveries(self, seq: int, dc: int) -> None:
        self.c.advisory(ADV_MAX_DELIVERIES, "io.nats.jetstream.advisory.v1.max_deliver",
                        {"stream_seq": seq, "deliveries": dc})
