"""Acks and redelivery (a mixin of ``consumer.Consumer``): the ``$JS.ACK``
subject and its payloads (ack, -NAK with delay, +WPI, +TERM, +NXT, and the
ack-of-ack reply), the ack floor, the ack-wait / backoff timer that queues
redeliveries, max_deliver, the consumer advisories and sample_freq's ack samples."""

from __future__ import annotations

import json
import random
import string
from time import time_ns as _time_ns

from ..internal import RunSpec
from .consumerconfig import filters_of
from .shapes import NS, dumps, now_ns, parse_go_duration, rfc3339
from .subjects import is_subset

ADV_MAX_DELIVERIES = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"
ADV_NAK = "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED"
ADV_TERMINATED = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED"
METRIC_ACK = "$JS.EVENT.METRIC.CONSUMER.ACK"  # sample_freq's ack samples
_ACK_WAIT_DELAY = 1_000_000  # ns, as ackWaitDelay in the real server
TERM_UNACKED_DELETED = "Unacknowledged message was deleted"


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


class AckMixin:
    def init_acks(self) -> None:
        self._ptmr = None
        self._ptmr_at = 0.0

    def stop_acks(self) -> None:
        if self._ptmr:
            self._ptmr.cancel()
            self._ptmr = None

    # -- the ack subject -----------------------------------------------------------------
    def ack_runs(self, key: bytes) -> RunSpec:
        """How the parser hands this consumer runs of plain acks (no reply,
        an empty or +ACK body) under its ack subject prefix ``key``: all at
        once, to on_acks."""

        def starts(subject: bytes, reply: bytes | None, payload: bytes) -> bytes | None:
            return key if reply is None and (not payload or payload == b"+ACK") else None

        def handler(_key: bytes, items: list) -> None:
            self.on_acks([subject for subject, _, _ in items])

        return RunSpec(starts, handler, (b"", b"+ACK"), False)

    def on_ack(self, subject: bytes, reply: bytes, hdr, msg: bytes) -> None:
        """The ack subscription (raw: subject and reply arrive as bytes)."""
        if self.closed:
            return
        try:
            t = parse_ack_subject(subject)
            if t is None:
                return
            sseq, dseq, dc = t
            send_reply = sseq != 0
            durable = False  # an ack (or term) whose answer waits until it is written
            if not msg or msg == b"+ACK" or msg == b"+OK":
                send_reply = self.on_acks((subject,)) and send_reply
                durable = True
            elif msg.startswith(b"+NXT"):
                self.process_ack(sseq, dseq, dc)
                if reply:
                    self.on_pull_request(reply.decode(), msg[4:])
                send_reply = False
            elif msg.startswith(b"-NAK"):
                self.process_nak(sseq, dseq, dc, msg[4:])
            elif msg == b"+WPI":
                p = self.pending.get(sseq)
                if p is not None:
                    p[1] = now_ns()
                    self.schedule_save()
            elif msg.startswith(b"+TERM"):
                reason = msg[5:].strip().decode(errors="replace")
                send_reply = self.process_term(sseq, dseq, dc, reason) and send_reply
                durable = True
            if reply and send_reply:
                if durable:
                    self.reply_when_saved(reply, sseq, dseq)
                else:
                    self.server.reply_internal(reply, b"")
        except Exception:
            self.server.logger.exception("consumer %s > %s: ack failed", self.stream.name, self.name)

    def on_acks(self, subjects) -> int:
        """Plain acks (payload empty, +ACK or +OK), in order: a run of them
        from one read (the parser hands those over at once) or one from
        on_ack. Returns how many were for messages delivered (the ones an
        ack-of-ack answers). The common case, explicit acks on a limits
        stream, takes the time and the save once for the run."""
        if self.closed:
            return 0
        n = 0
        try:
            if self.config["ack_policy"] != "explicit" or self.stream.config["retention"] != "limits":
                for subject in subjects:
                    t = parse_ack_subject(subject)
                    if t is not None and self.process_ack(*t):
                        n += 1
                return n
            sample = self.sample_percent()
            for subject in subjects:
                t = parse_ack_subject(subject)
                if t is not None and t[0] < self.sseq:
                    if sample:
                        self.sample_ack(sample, *t)
                    self._ack_explicit(t[0], t[1])
                    n += 1
            if n:
                self.lat = _time_ns()
                if self._save_handle is None:
                    self.schedule_save()
        except Exception:
            self.server.logger.exception("consumer %s > %s: ack failed", self.stream.name, self.name)
        return n

    def process_ack(self, sseq: int, dseq: int, dc: int) -> bool:
        """processAckMsg; False when the ack is for something not delivered yet
        (then no ack-of-ack reply is sent)."""
        if sseq >= self.sseq:
            return False
        sample = self.sample_percent()
        if sample:
            self.sample_ack(sample, sseq, dseq, dc)
        ap = self.config["ack_policy"]
        if ap == "explicit":
            acked = [sseq] if self._ack_explicit(sseq, dseq) else []
        elif ap == "all":
            if dseq <= self.adflr or sseq <= self.asflr:
                return True
            self.adflr, self.asflr = dseq, sseq
            self.sfloor = [dseq, sseq]
            before = len(self.pending)
            acked = [s for s in self.pending if s <= sseq]
            for s in acked:
                del self.pending[s]
                self.rdc.pop(s, None)
            self.rdq = [s for s in self.rdq if s > sseq]
            self.signal_if_stalled(before)
        else:
            return self.stream.config["retention"] != "limits"
        self.lat = _time_ns()
        if self._save_handle is None:
            self.schedule_save()
        if acked and self.stream.config["retention"] != "limits":
            for s in acked:
                self.stream.ack_processed(s)
        return True

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
        pd = p[0]
        fl = self.sfloor
        if pd == dseq == fl[0] + 1 == self.adflr + 1 and self.dseq - 1 > dseq and pending:
            # the next in order with both floors where they were: the two
            # floors move alike, found with one scan (what _store_ack and
            # move_ack_floor each do below)
            nd, ns = dseq, sseq
            for ss in range(sseq + 1, self.sseq):
                q = pending.get(ss)
                if q is not None:
                    if q[0] > 0:
                        nd, ns = q[0] - 1, ss - 1
                    break
            self.sfloor = [nd, ns]
            self.adflr, self.asflr = nd, ns
        else:
            self._store_ack(dseq if not (0 < pd < dseq) else pd, sseq)
            self.move_ack_floor(pd, sseq)
        mp = self.config.get("max_ack_pending") or 0
        if mp > 0 and len(pending) >= mp - 1:
            self.signal()
        return True

    def signal_if_stalled(self, before: int) -> None:
        """Delivery held back by max_ack_pending (``before``: pending until
        now) goes on once acks bring pending under it, however many at once."""
        mp = self.config.get("max_ack_pending") or 0
        if mp > 0 and before >= mp > len(self.pending):
            self.signal()

    def _store_ack(self, dseq: int, sseq: int) -> None:
        """UpdateAcks of the real consumer store (explicit ack, ``sseq`` just
        removed from pending): moves the ack floor that info reports."""
        fl = self.sfloor
        if dseq <= fl[0]:
            return
        if not self.pending:
            self.sfloor = [self.dseq - 1, self.sseq - 1]
        elif dseq == fl[0] + 1:
            self.sfloor = [dseq, sseq]
            if self.dseq - 1 > dseq:
                for ss in range(sseq + 1, self.sseq):
                    p = self.pending.get(ss)
                    if p is not None:
                        if p[0] > 0:
                            self.sfloor = [p[0] - 1, ss - 1]
                        break

    def move_ack_floor(self, dseq: int, sseq: int) -> None:
        if not self.pending:
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
        elif dseq == self.adflr + 1:
            self.adflr, self.asflr = dseq, sseq
            for ss in range(sseq + 1, self.sseq):
                p = self.pending.get(ss)
                if p is not None:
                    if p[0] > 0:
                        self.adflr, self.asflr = p[0] - 1, ss - 1
                    break

    def process_nak(self, sseq: int, dseq: int, dc: int, arg: bytes) -> None:
        if dseq <= self.adflr or dseq > self.dseq or sseq not in self.pending:
            return
        self.advisory(ADV_NAK, "io.nats.jetstream.advisory.v1.nak",
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
                self.server.logger.warning("JetStream consumer '$G > %s > %s' bad NAK delay value: %r",
                                           self.stream.name, self.name, arg)
            if delay is not None:
                self._remove_from_rdq(sseq)
                p = self.pending.get(sseq)
                if p is not None:
                    p[1] = now_ns() - self.config.get("ack_wait", 0) + delay
                    self._arm_ptmr(0.01)
                    self.schedule_save()
                return
        if sseq not in self.rdq:
            self._add_to_rdq([sseq])
        self.signal()

    def process_term(self, sseq: int, dseq: int, dc: int, reason: str) -> bool:
        ok = self.process_ack(sseq, dseq, dc)
        body = {"consumer_seq": dseq, "stream_seq": sseq, "deliveries": dc}
        if reason:
            body["reason"] = reason
        self.advisory(ADV_TERMINATED, "io.nats.jetstream.advisory.v1.terminated", body)
        return ok

    # -- redelivery queue -------------------------------------------------------------------
    def _add_to_rdq(self, seqs: list[int]) -> None:
        q = set(self.rdq)
        self.rdq.extend(s for s in seqs if s not in q)

    def _remove_from_rdq(self, seq: int) -> None:
        if self.rdq and seq in self.rdq:
            self.rdq.remove(seq)

    # -- ack wait -------------------------------------------------------------------------
    def _ack_wait_for(self, seq: int) -> int:
        bo = self.config.get("backoff")
        if bo:
            i = min(max(self.rdc.get(seq, 0), 0), len(bo) - 1)
            return bo[i] + _ACK_WAIT_DELAY
        return self.config.get("ack_wait", 0) + _ACK_WAIT_DELAY

    def track_pending(self, sseq: int) -> None:
        if self._ptmr is not None and not self.config.get("backoff"):
            # with one ack wait for every delivery, the armed timer is due
            # no later than this delivery's deadline (rearm_pending covers a
            # shortened ack_wait)
            return
        delay = self._ack_wait_for(sseq) / NS
        at = self.server.loop.time() + delay
        if self._ptmr is None or self._ptmr_at > at:
            self._arm_ptmr(delay)

    def _arm_ptmr(self, delay: float) -> None:
        if self._ptmr:
            self._ptmr.cancel()
        if self.closed:
            return
        self._ptmr_at = self.server.loop.time() + delay
        self._ptmr = self.server.loop.call_later(delay, self.check_pending)

    def rearm_pending(self) -> None:
        if self.pending and self.config.get("ack_wait"):
            self._arm_ptmr(0.0 if self.server.loop else 0)

    def check_pending(self) -> None:
        """checkPending: queue expired pending acks for redelivery."""
        try:
            self._check_pending()
        except Exception:
            self.server.logger.exception("consumer %s > %s: ack wait check failed", self.stream.name, self.name)
            if not self.closed and self._ptmr is None:
                self._arm_ptmr(1.0)

    def _check_pending(self) -> None:
        self._ptmr = None
        if self.closed or not self.config.get("ack_wait"):
            return
        ttl = self.config["ack_wait"]
        bo = self.config.get("backoff") or []
        first = self.stream.store.state().first_seq
        now = now_ns()
        nxt = bo[-1] if bo else ttl + _ACK_WAIT_DELAY
        expired = []
        changed = False
        maxdc = self.config["max_deliver"]
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
            self.signal()
        if self.pending:
            self._arm_ptmr(max(nxt, 0) / NS)
        else:
            self.rdq.clear()
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
        if changed or expired:
            self.schedule_save()

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
            self.move_ack_floor(p[0], seq)
        self.rdc[seq] = dc
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
        start, wider = fseq, False
        if flt:
            filters = filters_of(self.config)
            if not (filters and all(is_subset(f, flt) for f in filters)):
                if filters and not any(is_subset(flt, f) for f in filters):
                    return
                start, wider = first, True
        if start == 0 and not wider:
            start = lseq + 1
        store = self.stream.store
        ack_all = self.config["ack_policy"] == "all"
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
                        self._store_ack(p[0], seq)
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
        self.schedule_save()
        self.signal()

    def on_msg_removed(self, seq: int) -> None:
        """decStreamPending: a message left the stream by itself. Pending here,
        it is terminated just after (as nats-server does from a goroutine),
        with the MSG_TERMINATED advisory; its redelivery count goes."""
        p = self.pending.get(seq)
        if p is not None:
            dc = self.rdc.get(seq) or 1  # deliveryCount: the redelivery count, at least 1
            self.server.loop.call_soon(self._term_removed, seq, p[0], dc)
        elif self.rdc.pop(seq, None) is not None:
            self.lat = _time_ns()

    def _term_removed(self, seq: int, dseq: int, dc: int) -> None:
        if not self.closed:
            self.process_term(seq, dseq, dc, TERM_UNACKED_DELETED)

    # -- ack samples (sample_freq) -------------------------------------------------------
    def sample_percent(self) -> int:
        """sample_freq as a percentage (0: no sampling), read again when the
        config changes."""
        freq = self.config.get("sample_freq") or ""
        if getattr(self, "_sample_src", None) != freq:
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
        self.advisory(METRIC_ACK, "io.nats.jetstream.metric.v1.consumer_ack",
                      {"consumer_seq": dseq, "stream_seq": sseq, "ack_time": now_ns() - p[1], "deliveries": dc})

    # -- advisories -------------------------------------------------------------------------
    def advisory_max_deliveries(self, seq: int, dc: int) -> None:
        self.advisory(ADV_MAX_DELIVERIES, "io.nats.jetstream.advisory.v1.max_deliver",
                      {"stream_seq": seq, "deliveries": dc})

    def advisory(self, prefix: str, type_name: str, body: dict, account: bool = False) -> None:
        """``account``: the event names the account (the priority-group ones do)."""
        subject = f"{prefix}.{self.stream.name}.{self.name}"
        if not self.server.has_interest(subject):
            return
        d = {"type": type_name, "id": _nuid(), "timestamp": rfc3339(now_ns())}
        if account:
            d["account"] = "$G"
        d["stream"], d["consumer"] = self.stream.name, self.name
        d.update(body)
        self.server.publish_internal(subject, "", None, dumps(d).encode())
