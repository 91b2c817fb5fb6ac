"""A consumer's delivery (``Delivery``, one per ``consumer.Consumer``):
choosing the next message (redeliveries first, from the ack state, then the
last-per-subject skip list, then new messages), handing it to a pull request
(the pull queue picks which) or to the push subscriber, push delivery gated by
interest and flow control, replay_policy original, and idle heartbeats.

It owns the delivery schedule, the push state (interest, flow-control
window), the replay pacing and the skip list; what was delivered is recorded
in the ack state (``acks.AckState``) through its methods, and the waiting
requests are the pull queue's (``pullqueue.PullQueue``). Delivery runs in
``_deliver``, scheduled with ``call_soon`` from ``signal()``, never inside
the routing callback that caused it."""

from __future__ import annotations

import random
import string
from collections import deque
from itertools import repeat

from .. import headers
from ..shapes import NS, now_ns

FC_MAX_PENDING = 32 * 1024 * 1024  # the real server's flow-control window budget
_BATCH_PER_TURN = 2000  # deliveries before yielding to the event loop



def _int(v: str) -> int:
    """nats-server's parseInt64 of a header value: -1 unless all ASCII digits."""
    return int(v) if v and v.isascii() and v.isdigit() else -1


class Delivery:
    """``push_active``: a subscriber listens on the deliver subject; ``lss``
    / ``lss_resume``: the last-per-subject skip list (stream seqs still to
    deliver, None when done) and the last sequence it covers. Others read
    these; only this class changes them."""

    def __init__(self, consumer) -> None:
        self.c = consumer  # config, stream, messaging, filters, acks, pulls, schedule_save(), check_inactive()
        self._scheduled = False
        self.push_active = False
        self.pbytes = 0
        self.maxpb = 0
        self.pblimit = 0
        self.fcid = ""
        self.fcsz = 0
        self._ack_fc = consumer.config.get("ack_policy") == "flow_control"  # acked by its flow control replies
        self.source = None  # the durable source (sourcing.Link) subscribed to the deliver subject, if any
        self._hb_timer = None
        self._last_send = 0.0
        self._listener = None
        self._wtok = 0
        self.lss: deque[int] | None = None
        self.lss_resume = 0
        # replay_policy original: pace deliveries like the stored timestamps
        # until caught up with what the stream held when the consumer started
        self.replay = consumer.config.get("replay_policy") == "original"
        self._replay_lseq = consumer.stream.store.state().last_seq
        self._lts = 0
        self._replay_ready = 0

    # -- setup -----------------------------------------------------------------------
    def start(self) -> None:
        c = self.c
        if not c.is_pull:
            self._listener = self._on_interest
            c.messaging.interest_listeners.append(self._listener)
            self.push_active = self._push_interest()
            if c.config.get("flow_control"):
                self.pblimit = FC_MAX_PENDING
                self.maxpb = max(1, FC_MAX_PENDING // 16)
            self._arm_heartbeat()
        self.signal()

    def stop(self) -> None:
        if self._listener is not None:
            try:
                self.c.messaging.interest_listeners.remove(self._listener)
            except ValueError:
                pass
            self._listener = None
        if self._hb_timer:
            self._hb_timer.cancel()
        self._hb_timer = None

    def _push_interest(self) -> bool:
        # nats-server starts (and keeps) push delivery only for a subscription
        # on exactly the deliver subject; a wildcard one does not count. A
        # durable source taking this consumer's deliveries (sourcing.Link,
        # an internal subscription, which has_interest leaves out) counts.
        if self.source is not None:
            return True
        return self.c.messaging.has_interest(self.c.config["deliver_subject"], literal_only=True)

    def update_push_subject(self) -> None:
        self.push_active = self._push_interest()
        self.c.check_inactive()

    def _on_interest(self, subject: str, added: bool) -> None:
        c = self.c
        ds = c.config.get("deliver_subject")
        if not ds or c.closed:
            return
        if subject != ds:
            return  # only literal subscriptions on ds count
        active = self._push_interest()
        if active != self.push_active:
            self.push_active = active
            if active:
                self.pbytes, self.fcid, self.fcsz = 0, "", 0
                self.signal()
            c.check_inactive()

    # -- the skip list and num_pending ------------------------------------------------------
    def skip_list(self, seqs: list[int] | None, resume: int) -> None:
        """Deliver ``seqs`` (the last message of each subject) first, then go
        on after ``resume``; None: no skip list."""
        self.lss, self.lss_resume = (deque(seqs) if seqs is not None else None), resume

    def num_pending(self) -> int:
        c = self.c
        if self.lss is not None:
            return len(self.lss) + c.count_from(self.lss_resume + 1, False)
        return c.count_from(c.acks.sseq, c.config["deliver_policy"] == "last_per_subject")

    # -- the delivery loop ---------------------------------------------------------------
    def signal(self) -> None:
        if not self._scheduled and not self.c.closed:
            self._scheduled = True
            self.c.messaging.loop.call_soon(self._deliver)

    def _deliver(self) -> None:
        self._scheduled = False
        c = self.c
        if c.closed:
            return
        try:
            self._deliver_some()
        except Exception:
            c.messaging.logger.exception("consumer %s > %s: delivery failed", c.stream.name, c.name)

    def _deliver_some(self) -> None:
        c = self.c
        acks, pulls = c.acks, c.pulls
        stalled_on_ack_pending = False
        pull = c.is_pull
        cfg = c.config
        if c.is_paused():
            if pull:
                pulls.process_waiting(eos=True)
            return
        store = c.stream.store
        filters = c.filters
        ack_prefix = f"$JS.ACK.{c.stream.name}.{c.name}."
        headers_only = cfg.get("headers_only")
        pinned = cfg.get("priority_policy") == "pinned_client"
        dsubj = None if pull else cfg["deliver_subject"]
        waiting = pulls.waiting
        self._wtok = tok = self._wtok + 1
        # num_pending (the ack subject's last token) is counted once and then
        # stepped down per delivery while the store is unchanged: a new
        # message moves sseq past exactly one pending message, a redelivery
        # does not move it
        lps = cfg["deliver_policy"] == "last_per_subject"
        if ((waiting if pull else self.push_active) and not (acks.rdq or self.replay or headers_only or pinned or lps)
                and self.lss is None and len(filters) <= 1
                and self._run(ack_prefix, tok) >= _BATCH_PER_TURN):
            self.signal()  # more to do: yield to the loop and come back
            if pull:
                pulls.process_waiting(eos=False)
            return
        np_sseq = -1
        np_key = None
        np = 0
        lss_key = None  # the store as it was when lss_rest was counted
        lss_rest = 0  # with a skip list: what is pending after it
        lps_step = lps and len(filters) <= 1  # (overlapping filters count a subject twice)
        for _ in range(_BATCH_PER_TURN):
            if pull:
                if not waiting:
                    break
            elif not self.push_active or (self.maxpb and self.pbytes > self.maxpb):
                break
            s0 = acks.sseq
            lss0 = self.lss is not None
            sm, dc = self.get_next_msg()
            if sm is None:
                stalled_on_ack_pending = dc == -1
                if self.replay and acks.sseq > self._replay_lseq:
                    self.replay = False
                break
            if self.replay and self._lts and sm.seq != self._replay_ready:
                delay = (sm.ts - self._lts) / NS
                if delay > 0.001:
                    acks.put_back(sm.seq, dc)
                    self._replay_ready = sm.seq
                    c.messaging.loop.call_later(delay, self.signal)
                    return
            self._lts = sm.ts
            seq = sm.seq
            if self.lss is not None:
                # num_pending(): the skip list left, and what follows it,
                # counted again only when the store changes
                key = (store._last, store.totals())
                if key != lss_key:
                    lss_rest, lss_key = c.count_from(self.lss_resume + 1, False), key
                np_sseq = -1
                npv = len(self.lss) + lss_rest
            elif lss0 or (lps and not lps_step):
                np_sseq = -1
                npv = self.num_pending()
            else:
                key = (store._last, store.totals())
                sseq = acks.sseq
                if np_sseq == s0 and key == np_key and (sseq == s0 if dc > 1 else sseq == seq + 1 and dc == 1):
                    # (last per subject: only this message's subject can
                    # leave the count, if this was its last message)
                    if sseq != s0 and (not lps or store.last_seq_for_subject(sm.subject) == seq):
                        np -= 1
                else:
                    np = c.count_from(sseq, lps)
                np_sseq, np_key, npv = sseq, key, np
            ack_reply = f"{ack_prefix}{dc}.{seq}.{acks.dseq}.{sm.ts}.{npv}"
            hdr, data = sm.hdr, sm.data
            if headers_only:
                hdr = headers.append(hdr, [("Nats-Msg-Size", str(len(data)))])
                data = b""
            body = len(ack_reply) + (len(hdr) if hdr else 0) + len(data)
            if pull:
                size = len(sm.subject) + body
                wr = pulls.next_waiting(size, tok, pinned)
                if wr is None:
                    acks.put_back(seq, dc)
                    break
                if pinned and pulls.pin_id:
                    hdr = headers.append(hdr, [("Nats-Pin-Id", pulls.pin_id)])
                    size = len(sm.subject) + len(ack_reply) + len(hdr) + len(data)
                self.deliver_msg(wr.reply, ack_reply, sm, dc, hdr, data, size)
                pulls.served(wr)
            else:
                # (flow control counts the deliver subject, as nats-server's pmsg.size())
                self.deliver_msg(dsubj, ack_reply, sm, dc, hdr, data, len(dsubj) + body)
        else:
            self.signal()  # more to do: yield to the loop and come back
            stalled_on_ack_pending = True  # not the end of the stream either
        if pull:
            pulls.process_waiting(eos=not stalled_on_ack_pending)

    def _run(self, ack_prefix: str, tok: int) -> int:
        """The common case at speed: new messages in stream order, to a push
        consumer without flow control or to plain waiting pull requests (no
        max_bytes, no priority rules). Delivers what it can exactly as the
        general loop would, message for message, and returns how many; the
        general loop goes on from there (or does all when this declines).
        With flow control it stops where the window is full and sends the
        FlowControl request right after the message that crosses half of it."""
        c = self.c
        messaging = c.messaging
        now = messaging.loop.time()
        cfg = c.config
        acks, pulls = c.acks, c.pulls
        ack_none = cfg["ack_policy"] == "none"
        if ack_none and c.stream.config["retention"] != "limits":
            return 0  # each delivery is also a removal there
        if c.is_pull:
            dests = pulls.run_targets(tok, now)
            if dests is None:
                return 0
            limit = min(pulls.wanted(), _BATCH_PER_TURN)
        else:
            if self.maxpb and self.pbytes > self.maxpb:
                return 0  # the window is full: wait for the FlowControl reply
            dest = messaging.match_deliver(cfg["deliver_subject"].encode())
            limit = _BATCH_PER_TURN
        fc = self.maxpb  # (push with flow control only)
        dlen = len(cfg["deliver_subject"]) if fc else 0
        mp = cfg.get("max_ack_pending") or 0
        if mp > 0 and not ack_none:
            limit = min(limit, mp - len(acks.pending))
        if limit <= 0:
            return 0
        start = acks.sseq
        filters = c.filters
        msgs = c.stream.store.load_batch(start, filters[0] if filters else None, limit)
        if not msgs:
            return 0
        k = len(msgs)
        npv = c.count_from(start, False)
        dseq = acks.dseq
        ts_now = now_ns()
        # the run as columns, with C loops over them (no Python per message)
        seqs, subjects, hdrs, datas, tss = zip(*msgs)
        # the ack subject ("<prefix>1.<seq>.<dseq>.<ts>.<pending>") of each,
        # in one format each
        tpl = ack_prefix.encode().replace(b"%", b"%%") + b"1.%d.%d.%d.%d"
        replies = list(map(tpl.__mod__, zip(seqs, range(dseq, dseq + k), tss, range(npv - 1, npv - 1 - k, -1))))
        first = subjects[0]
        if subjects.count(first) == k:  # (a run of one subject: the store's one str)
            subj_col = repeat(first.encode(), k)
        else:
            enc = {s: s.encode() for s in set(subjects)}
            subj_col = map(enc.__getitem__, subjects)
        rows = list(zip(subj_col, replies, hdrs, datas))
        deliver_run = messaging.deliver_run
        if fc:
            k = self._flow_controlled(dest, rows, dlen)
            if k < len(rows):  # the rest waits for the FlowControl reply
                seqs, replies = seqs[:k], replies[:k]
        elif c.is_pull:
            i = 0
            for target, m in pulls.assign(k, now, dests):
                deliver_run(target, rows[i : i + m] if m < k else rows)
                i += m
        else:
            deliver_run(dest, rows)
        if k:
            acks.delivered_run(seqs, ts_now, ack_none, None if ack_none else replies)
            if self._ack_fc:
                self.flow_control_due(at_limit=True)
            self._lts = tss[k - 1]
            self._last_send = now
            c.schedule_save()
            messaging.schedule_flush()
        return k

    def _flow_controlled(self, dest, rows: list, dlen: int) -> int:
        """Push a run under flow control (``dlen``: the deliver subject's
        length, which flow control counts): up to where the window is full,
        with the FlowControl request right after the message that crosses
        half of it. Returns how many went."""
        deliver_run = self.c.messaging.deliver_run
        start = 0
        for i, (_, reply, hdr, data) in enumerate(rows):
            if self.pbytes > self.maxpb:
                if start < i:
                    deliver_run(dest, rows[start:i])
                return i
            if self._count_pending(dlen + len(reply) + (len(hdr) if hdr else 0) + len(data)):
                deliver_run(dest, rows[start : i + 1])
                start = i + 1
                self.send_flow_control()
        if start < len(rows):
            deliver_run(dest, rows[start:])
        return len(rows)

    def get_next_msg(self):
        """(msg, delivery count), or (None, -1) when held back by max_ack_pending."""
        c = self.c
        acks = c.acks
        r = acks.next_redelivery()
        if r is not None:
            return r
        if acks.full():
            return None, -1
        store = c.stream.store
        if self.lss is not None:
            while self.lss:
                seq = self.lss.popleft()
                if not self.lss:
                    self.lss = None
                    acks.advance(self.lss_resume + 1)
                else:
                    acks.advance(seq + 1)
                sm = store.load(seq)
                if sm is not None:
                    return sm, 1
            self.lss = None
            acks.advance(max(acks.sseq, self.lss_resume + 1))
        filters = c.filters
        if not filters:
            sm = store.load_next(acks.sseq)
        elif len(filters) == 1:
            sm = store.load_next(acks.sseq, filters[0])
        else:
            sm = None
            for f in filters:
                cand = store.load_next(acks.sseq, f)
                if cand is not None and (sm is None or cand.seq < sm.seq):
                    sm = cand
        if sm is None:
            # nothing (more) matches: the cursor stays where it is, so
            # delivered.stream_seq keeps naming the last message delivered,
            # as on the real server, however many others follow it
            return None, 0
        acks.advance(sm.seq + 1)
        return sm, 1

    def deliver_msg(self, dsubj: str, ack_reply: str, sm, dc: int, hdr, data, size: int) -> None:
        c = self.c
        dseq = c.acks.delivered(sm.seq)
        if c.journal is not None:
            c.journal.consumer(c, "deliver", (sm.seq,), dseq, dc)
        messaging = c.messaging
        self._last_send = messaging.loop.time()
        messaging.deliver(dsubj, sm.subject, ack_reply, hdr, data)
        if self.maxpb and self._count_pending(size):
            self.send_flow_control()
        elif self._ack_fc:
            self.flow_control_due(at_limit=True)
        c.schedule_save()
        if c.config["ack_policy"] == "none" and c.stream.config["retention"] != "limits":
            c.stream.ack_processed(sm.seq, sm.subject)

    # -- heartbeats and flow control ---------------------------------------------------------
    def _count_pending(self, size: int) -> bool:
        """A push delivery of ``size`` bytes went out under flow control
        (nats-server's needFlowControl): True when a FlowControl request is
        due now, the window being over half full with none outstanding."""
        self.pbytes += size
        if not self.fcid:
            return self.pbytes > self.maxpb // 2
        if self.pbytes - self.fcsz >= self.maxpb:
            self.fcsz += size
        return False

    def send_heartbeat(self, subject: str) -> None:
        acks = self.c.acks
        hdrs = [("Nats-Last-Consumer", str(acks.dseq - 1)), ("Nats-Last-Stream", str(acks.sseq - 1))]
        if self.fcid:
            hdrs.append(("Nats-Consumer-Stalled", self.fcid))
        self.c.messaging.publish(subject, "", headers.status(100, "Idle Heartbeat", hdrs), b"")

    def _arm_heartbeat(self) -> None:
        hb = self.c.config.get("idle_heartbeat") or 0
        if hb and not self.c.closed:
            self._hb_timer = self.c.messaging.loop.call_later(hb / NS, self._heartbeat_fired)

    def _heartbeat_fired(self) -> None:
        self._hb_timer = None
        c = self.c
        if c.closed:
            return
        loop = c.messaging.loop
        hb = c.config.get("idle_heartbeat") / NS
        idle = loop.time() - self._last_send
        if idle >= hb * 0.99:
            if self.push_active:
                self.send_heartbeat(c.config["deliver_subject"])
                self.flow_control_due()
                self._last_send = loop.time()
            self._hb_timer = loop.call_later(hb, self._heartbeat_fired)
        else:
            self._hb_timer = loop.call_later(hb - idle, self._heartbeat_fired)

    def send_flow_control(self) -> None:
        c = self.c
        rnd = "".join(random.choices(string.ascii_letters + string.digits, k=4))
        self.fcid = f"$JS.FC.{c.stream.name}.{c.name}.{rnd}"
        self.fcsz = self.pbytes
        c.messaging.publish(c.config["deliver_subject"], self.fcid,
                                  headers.status(100, "FlowControl Request"), b"")

    def on_flow_control(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        c = self.c
        if subject != self.fcid or c.closed:
            return
        if self.maxpb < self.pblimit:
            self.maxpb = min(self.maxpb * 2, self.pblimit)
        self.pbytes = max(0, self.pbytes - self.fcsz)
        self.fcid, self.fcsz = "", 0
        self.signal()
        if c.config["ack_policy"] == "flow_control" and hdr:
            # the reply names the last message its receiver took: an ack of
            # everything up to it (a consumer sequence of 0 acks nothing)
            lsseq = _int(headers.value(hdr, b"Nats-Last-Stream"))
            if lsseq > 0:
                c.acks.on_acks([(lsseq, max(_int(headers.value(hdr, b"Nats-Last-Consumer")), 0), 1)])

    def flow_control_due(self, at_limit: bool = False) -> None:
        """An ack_policy flow_control consumer asks for the reply that acks
        it, if no request is out: from the heartbeat whenever something is
        pending, after a delivery once max_ack_pending is reached."""
        c = self.c
        if self.fcid or c.config["ack_policy"] != "flow_control" or not c.acks.pending:
            return
        if at_limit and len(c.acks.pending) < (c.config.get("max_ack_pending") or 0):
            return
        self.send_flow_control()
