"""Consumer delivery (a mixin of ``consumer.Consumer``): choosing the next
message (redeliveries first, then the last-per-subject skip list, then new
messages), pull requests with their waiting queue and status replies, push
delivery gated by interest and flow control, and idle heartbeats.

Delivery runs in ``_deliver`` scheduled with ``call_soon`` from ``signal()``,
never inside the routing callback that caused it."""

from __future__ import annotations

import random
import string
from collections import deque

from . import gojson, headers, priorities
from .shapes import NS, format_go_duration as _go_dur, now_ns

# JSApiConsumerGetNextRequest (with the embedded PriorityGroup), read with
# json.Unmarshal: unknown fields ignored, and an unnamed struct in errors
NEXT_REQUEST = gojson.Struct("", {
    "expires": gojson.DURATION, "batch": gojson.INT, "max_bytes": gojson.INT, "no_wait": gojson.BOOL,
    "idle_heartbeat": gojson.DURATION, "group": gojson.STRING, "min_pending": gojson.INT64,
    "min_ack_pending": gojson.INT64, "id": gojson.STRING, "priority": gojson.INT,
})

FC_MAX_PENDING = 32 * 1024 * 1024  # the real server's flow-control window budget
_BATCH_PER_TURN = 2000  # deliveries before yielding to the event loop
_CRLF = b"\r\n"


class WaitingRequest:
    __slots__ = ("reply", "n", "d", "b", "no_wait", "expires", "hb", "hbt", "tok", "min_pending", "min_ack_pending",
                 "group", "pin", "priority")

    def __init__(self, reply, n, b, no_wait, expires, hb, hbt):
        self.reply, self.n, self.d, self.b = reply, n, 0, b
        self.tok = 0  # the delivery batch that last found interest in reply
        self.no_wait, self.expires, self.hb, self.hbt = no_wait, expires, hb, hbt
        # overflow priority: served only once either threshold is reached
        self.min_pending = self.min_ack_pending = 0
        # pinned_client priority: the request's group and pin id ('' for none)
        self.group = self.pin = ""
        self.priority = 0  # prioritized priority: the request's (priorities.py)


ADV_PINNED = "$JS.EVENT.ADVISORY.CONSUMER.PINNED"
ADV_UNPINNED = "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED"
_NUID_CHARS = string.ascii_letters + string.digits


def _pin_nuid() -> str:
    return "".join(random.choices(_NUID_CHARS, k=22))


def _pending_status(code_desc: str, wr: WaitingRequest) -> bytes:
    return (f"NATS/1.0 {code_desc}\r\nNats-Pending-Messages: {wr.n}\r\n"
            f"Nats-Pending-Bytes: {wr.b}\r\n\r\n").encode()


class DeliveryMixin:
    # -- setup -----------------------------------------------------------------------
    def init_delivery(self) -> None:
        self.waiting: deque[WaitingRequest] = deque()
        self._scheduled = False
        self.push_active = False
        self.pbytes = 0
        self.maxpb = 0
        self.pblimit = 0
        self.fcid = ""
        self.fcsz = 0
        self._hb_timer = None
        self._wr_timer = None
        self._wr_timer_at = 0.0
        self._last_send = 0.0
        # pinned_client priority: the pin, when it was given, its idle timer
        self.pin_id = ""
        self.pin_ts = 0
        self._pin_timer = None
        self._listener = None
        self._wtok = 0
        # replay_policy original: pace deliveries like the stored timestamps
        # until caught up with what the stream held when the consumer started
        self.replay = self.config.get("replay_policy") == "original"
        self._replay_lseq = self.stream.store.state().last_seq
        self._lts = 0
        self._replay_ready = 0

    def start_delivery(self) -> None:
        if not self.is_pull:
            self._listener = self._on_interest
            self.server.interest_listeners.append(self._listener)
            self.push_active = self._push_interest()
            if self.config.get("flow_control"):
                self.pblimit = FC_MAX_PENDING
                self.maxpb = max(1, FC_MAX_PENDING // 16)
            self._arm_heartbeat()
        self.signal()

    def stop_delivery(self) -> None:
        if self._listener is not None:
            try:
                self.server.interest_listeners.remove(self._listener)
            except ValueError:
                pass
            self._listener = None
        for t in (self._hb_timer, self._wr_timer, self._pin_timer):
            if t:
                t.cancel()
        self._hb_timer = self._wr_timer = self._pin_timer = None

    def _push_interest(self) -> bool:
        # nats-server starts (and keeps) push delivery only for a subscription
        # on exactly the deliver subject; a wildcard one does not count
        return self.server.has_interest(self.config["deliver_subject"], literal_only=True)

    def update_push_subject(self) -> None:
        self.push_active = self._push_interest()
        self.check_inactive()

    def _on_interest(self, subject: str, added: bool) -> None:
        ds = self.config.get("deliver_subject")
        if not ds or self.closed:
            return
        if subject != ds:
            return  # only literal subscriptions on ds count
        active = self._push_interest()
        if active != self.push_active:
            self.push_active = active
            if active:
                self.pbytes, self.fcid, self.fcsz = 0, "", 0
                self.signal()
            self.check_inactive()

    # -- the delivery loop ---------------------------------------------------------------
    def signal(self) -> None:
        if not self._scheduled and not self.closed:
            self._scheduled = True
            self.server.loop.call_soon(self._deliver)

    def on_stored(self, seq: int, subject: str) -> None:
        if self.filter_matches(subject):
            self.signal()

    def _deliver(self) -> None:
        self._scheduled = False
        if self.closed:
            return
        try:
            self._deliver_some()
        except Exception:
            self.server.logger.exception("consumer %s > %s: delivery failed", self.stream.name, self.name)

    def _deliver_some(self) -> None:
        stalled_on_ack_pending = False
        pull = self.is_pull
        cfg = self.config
        if self.is_paused():
            if pull:
                self.process_waiting(eos=True)
            return
        store = self.stream.store
        ack_prefix = f"$JS.ACK.{self.stream.name}.{self.name}."
        headers_only = cfg.get("headers_only")
        pinned = cfg.get("priority_policy") == "pinned_client"
        dsubj = None if pull else cfg["deliver_subject"]
        waiting = self.waiting
        self._wtok = tok = self._wtok + 1
        # num_pending (the ack subject's last token) is counted once and then
        # stepped down per delivery while the store is unchanged: a new
        # message moves sseq past exactly one pending message, a redelivery
        # does not move it
        lps = cfg["deliver_policy"] == "last_per_subject"
        if ((waiting if pull else self.push_active) and not (self.acks.rdq or self.replay or headers_only or pinned or lps)
                and self.lss is None and len(self.filters) <= 1
                and self._run(ack_prefix, tok) >= _BATCH_PER_TURN):
            self.signal()  # more to do: yield to the loop and come back
            if pull:
                self.process_waiting(eos=False)
            return
        np_sseq = -1
        np_key = None
        np = 0
        lss_key = None  # the store as it was when lss_rest was counted
        lss_rest = 0  # with a skip list: what is pending after it
        lps_step = lps and len(self.filters) <= 1  # (overlapping filters count a subject twice)
        for _ in range(_BATCH_PER_TURN):
            if pull:
                if not waiting:
                    break
            elif not self.push_active or (self.maxpb and self.pbytes > self.maxpb):
                break
            s0 = self.acks.sseq
            lss0 = self.lss is not None
            sm, dc = self.get_next_msg()
            if sm is None:
                stalled_on_ack_pending = dc == -1
                if self.replay and self.acks.sseq > self._replay_lseq:
                    self.replay = False
                break
            if self.replay and self._lts and sm.seq != self._replay_ready:
                delay = (sm.ts - self._lts) / NS
                if delay > 0.001:
                    self.acks.put_back(sm.seq, dc)
                    self._replay_ready = sm.seq
                    self.server.loop.call_later(delay, self.signal)
                    return
            self._lts = sm.ts
            seq = sm.seq
            if self.lss is not None:
                # num_pending(): the skip list left, and what follows it,
                # counted again only when the store changes
                key = (store._last, store.totals())
                if key != lss_key:
                    lss_rest, lss_key = self._count_from(self.lss_resume + 1, False), key
                np_sseq = -1
                npv = len(self.lss) + lss_rest
            elif lss0 or (lps and not lps_step):
                np_sseq = -1
                npv = self.num_pending()
            else:
                key = (store._last, store.totals())
                sseq = self.acks.sseq
                if np_sseq == s0 and key == np_key and (sseq == s0 if dc > 1 else sseq == seq + 1 and dc == 1):
                    # (last per subject: only this message's subject can
                    # leave the count, if this was its last message)
                    if sseq != s0 and (not lps or store.last_seq_for_subject(sm.subject) == seq):
                        np -= 1
                else:
                    np = self._count_from(sseq, lps)
                np_sseq, np_key, npv = sseq, key, np
            ack_reply = f"{ack_prefix}{dc}.{seq}.{self.acks.dseq}.{sm.ts}.{npv}"
            hdr, data = sm.hdr, sm.data
            if headers_only:
                hdr = headers.append(hdr, [("Nats-Msg-Size", str(len(data)))])
                data = b""
            size = len(sm.subject) + len(ack_reply) + (len(hdr) if hdr else 0) + len(data)
            if pull:
                wr = self.next_waiting(size, tok, pinned)
                if wr is None:
                    self.acks.put_back(seq, dc)
                    break
                if pinned and self.pin_id:
                    hdr = headers.append(hdr, [("Nats-Pin-Id", self.pin_id)])
                    size = len(sm.subject) + len(ack_reply) + len(hdr) + len(data)
                self.deliver_msg(wr.reply, ack_reply, sm, dc, hdr, data, size)
                if wr.n <= 0 and wr.b > 0:
                    self.server.publish_internal(wr.reply, "", _pending_status("409 Batch Completed", wr), b"")
                if wr.n > 0 and wr.hb:
                    wr.hbt = self.server.loop.time() + wr.hb
            else:
                self.deliver_msg(dsubj, ack_reply, sm, dc, hdr, data, size)
        else:
            self.signal()  # more to do: yield to the loop and come back
            stalled_on_ack_pending = True  # not the end of the stream either
        if pull:
            self.process_waiting(eos=not stalled_on_ack_pending)

    def _run(self, ack_prefix: str, tok: int) -> int:
        """The common case at speed: new messages in stream order, to a push
        consumer without flow control or to plain waiting pull requests (no
        max_bytes, no priority rules). Delivers what it can exactly as the
        general loop would, message for message, and returns how many; the
        general loop goes on from there (or does all when this declines)."""
        srv = self.server
        now = srv.loop.time()
        cfg = self.config
        ack_none = cfg["ack_policy"] == "none"
        if ack_none and self.stream.config["retention"] != "limits":
            return 0  # each delivery is also a removal there
        waiting = self.waiting
        match = srv.index.match
        if self.is_pull:
            dests = {}
            if len(waiting) > 1 and cfg.get("priority_policy") == "prioritized":
                return 0  # not round robin: next_waiting orders them
            for wr in waiting:
                if wr.b or wr.min_pending or wr.min_ack_pending or (wr.expires and now >= wr.expires):
                    return 0
                if wr.tok != tok:
                    if not srv.has_interest(wr.reply):
                        return 0
                    wr.tok = tok
                dests[wr] = match(wr.reply.encode())
            limit = min(sum(wr.n for wr in waiting), _BATCH_PER_TURN)
        else:
            if self.maxpb:
                return 0
            dest = match(cfg["deliver_subject"].encode())
            limit = _BATCH_PER_TURN
        mp = cfg.get("max_ack_pending") or 0
        if mp > 0 and not ack_none:
            limit = min(limit, mp - len(self.acks.pending))
        if limit <= 0:
            return 0
        start = self.acks.sseq
        msgs = self.stream.store.load_batch(start, self.filters[0] if self.filters else None, limit)
        if not msgs:
            return 0
        npv = self._count_from(start, False)
        dseq = self.acks.dseq
        ts_now = now_ns()
        deliver_run = srv.deliver_matched_run
        prefix_b = ack_prefix.encode()
        subj_s = subj_b = None
        run: list = []  # consecutive deliveries to one destination
        run_dest = None
        for seq, subject, hdr, data, ts in msgs:
            npv -= 1
            if waiting:
                wr = waiting.popleft()
                wr.d += 1
                wr.n -= 1
                if wr.n > 0:
                    waiting.append(wr)  # round robin, as next_waiting
                    if wr.hb:
                        wr.hbt = now + wr.hb
                dest = dests[wr]
            if subject is not subj_s:
                subj_s = subject
                subj_b = subject.encode()
            if dest is not run_dest:
                if run:
                    deliver_run(run_dest, run)
                    run = []
                run_dest = dest
            run.append((subj_b, b"%b1.%d.%d.%d.%d" % (prefix_b, seq, dseq, ts, npv), hdr, data))
            dseq += 1
        deliver_run(run_dest, run)
        self.acks.delivered_run(msgs, ts_now, ack_none)
        self._lts = ts
        self._last_send = now
        self.schedule_save()
        srv.schedule_flush()
        return len(msgs)

    def get_next_msg(self):
        """(msg, delivery count), or (None, -1) when held back by max_ack_pending."""
        acks = self.acks
        r = acks.next_redelivery()
        if r is not None:
            return r
        if acks.full():
            return None, -1
        store = self.stream.store
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
        if not self.filters:
            sm = store.load_next(acks.sseq)
        elif len(self.filters) == 1:
            sm = store.load_next(acks.sseq, self.filters[0])
        else:
            sm = None
            for f in self.filters:
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
        self.acks.delivered(sm.seq)
        self._last_send = self.server.loop.time()
        self.server.deliver_internal(dsubj, sm.subject, ack_reply, hdr, data)
        if self.maxpb:
            self.pbytes += size
            if not self.fcid and self.pbytes > self.maxpb // 2:
                self.send_flow_control()
            elif self.fcid and self.pbytes - self.fcsz >= self.maxpb:
                self.fcsz += size
        self.schedule_save()
        if self.config["ack_policy"] == "none" and self.stream.config["retention"] != "limits":
            self.stream.ack_processed(sm.seq, sm.subject)

    # -- pull requests ---------------------------------------------------------------------
    def num_waiting(self) -> int:
        if self.is_pull:
            self.process_waiting(eos=False)
        return len(self.waiting)

    def on_pull_request(self, reply: str, payload: bytes) -> None:
        srv = self.server
        if not self.is_pull:
            srv.publish_internal(reply, "", headers.status(409, "Consumer is push based"), b"")
            return
        req = payload.strip()
        batch, expires, no_wait, max_bytes, hb = 1, 0, False, 0, 0
        d = None
        if req[:1] == b"{":
            try:
                d = gojson.unmarshal_request(req, NEXT_REQUEST, strict=False, stream=False)
            except gojson.GoJSONError as e:
                srv.publish_internal(reply, "", headers.status(400, f"Bad Request - {e}"), b"")
                return
            batch = d.get("batch") or 0
            expires = d.get("expires") or 0
            no_wait = bool(d.get("no_wait"))
            max_bytes = d.get("max_bytes") or 0
            hb = d.get("idle_heartbeat") or 0
            if hb > 0 and hb * 2 > expires:
                srv.publish_internal(reply, "", headers.status(400, "Bad Request - heartbeat value too large"), b"")
                return
        elif req:
            try:
                batch = int(req)
            except ValueError:
                batch = 1
        cfg = self.config
        if cfg.get("max_batch") and batch > cfg["max_batch"]:
            srv.publish_internal(reply, "", headers.status(409, f"Exceeded MaxRequestBatch of {cfg['max_batch']}"), b"")
            return
        if expires and cfg.get("max_expires") and expires > cfg["max_expires"]:
            srv.publish_internal(reply, "", headers.status(409, f"Exceeded MaxRequestExpires of {_go_dur(cfg['max_expires'])}"), b"")
            return
        if max_bytes and cfg.get("max_bytes") and max_bytes > cfg["max_bytes"]:
            srv.publish_internal(reply, "", headers.status(409, f"Exceeded MaxRequestMaxBytes of {cfg['max_bytes']}"), b"")
            return
        min_pending = min_ack_pending = 0
        group = pin = ""
        if d is not None:  # a JSON request carries a priority group (maybe empty)
            why = self._priority_refusal(d)
            if why:
                srv.publish_internal(reply, "", headers.status(400, f"Bad Request - {why}"), b"")
                return
            min_pending, min_ack_pending = d.get("min_pending") or 0, d.get("min_ack_pending") or 0
            group, pin = d.get("group") or "", d.get("id") or ""
            if self.pin_id and cfg.get("priority_policy") == "pinned_client":
                if pin == self.pin_id:
                    self.arm_pin_timer()  # the pinned client is still there
                elif pin:
                    srv.publish_internal(reply, "", headers.status(423, "Nats-Pin-Id mismatch"), b"")
                    return
        if no_wait:
            avail = self.num_pending() + len(self.acks.rdq)
            if avail == 0 and not expires:
                srv.publish_internal(reply, "", headers.status(404, "No Messages"), b"")
                self._touch_pull()
                return
        if len(self.waiting) >= (cfg.get("max_waiting") or 512):
            self.process_waiting(eos=False)
        if len(self.waiting) >= (cfg.get("max_waiting") or 512):
            if not hb:
                srv.publish_internal(reply, "", headers.status(409, "Exceeded MaxWaiting"), b"")
            return
        now = srv.loop.time()
        # as the real server: the batch is kept as asked (0 or less still gets
        # one message, and the status replies report it), and a negative
        # expires is already past
        wr = WaitingRequest(reply, batch, max_bytes, no_wait,
                            now + expires / NS if expires else 0.0,
                            hb / NS if hb > 0 else 0.0, now + hb / NS if hb > 0 else 0.0)
        wr.min_pending, wr.min_ack_pending = min_pending, min_ack_pending
        wr.group, wr.pin = group, pin
        if cfg.get("priority_policy") == "prioritized":
            wr.priority = priorities.request_priority(d)
            priorities.enqueue(self.waiting, wr)
        else:
            self.waiting.append(wr)
        self._touch_pull()
        self.signal()

    def _priority_refusal(self, d: dict) -> str:
        """Why a pull request does not fit the consumer's priority policy
        ('' when it does), in the real server's words and order."""
        policy = self.config.get("priority_policy") or "none"
        if (d.get("min_pending") or d.get("min_ack_pending")) and policy != "overflow":
            return "Not a Overflow Priority consumer"
        if d.get("id") and policy != "pinned_client":
            return "Not a Pinned Client Priority consumer"
        if not 0 <= (d.get("priority") or 0) <= 9:
            return "Priority must be between 0 and 9"
        if policy != "none":
            if not d.get("group"):
                return "Priority Group missing"
            if d["group"] not in self.config.get("priority_groups", ()):
                return "Invalid Priority Group"
        return ""

    def _overflow_ready(self, wr: WaitingRequest) -> bool:
        """An overflow request with thresholds is served once the consumer
        has that many messages pending (counting the one in hand) or that
        many unacknowledged."""
        mp, map_ = wr.min_pending, wr.min_ack_pending
        if mp <= 0 and map_ <= 0:
            return True
        return (mp > 0 and mp <= self.num_pending() + 1) or (map_ > 0 and map_ <= len(self.acks.pending))

    # -- pinned_client priority -------------------------------------------------------------
    @property
    def pinned(self) -> bool:
        return self.config.get("priority_policy") == "pinned_client"

    def assign_pin(self, wr: WaitingRequest) -> None:
        """Pin the consumer to the client behind ``wr``: its messages carry
        Nats-Pin-Id, and other clients' requests wait until the pin goes."""
        self.pin_id = _pin_nuid()
        self.pin_ts = now_ns()
        wr.pin = self.pin_id
        self.arm_pin_timer()
        self.advisory(ADV_PINNED, "io.nats.jetstream.advisory.v1.consumer_group_pinned",
                      {"group": wr.group, "pinned_id": self.pin_id}, account=True)

    def unassign_pin(self) -> None:
        self.pin_id, self.pin_ts = "", 0
        if self._pin_timer:
            self._pin_timer.cancel()
            self._pin_timer = None

    def arm_pin_timer(self) -> None:
        """(Re)start the priority_timeout: a pinned client that stops pulling loses the pin."""
        if self._pin_timer:
            self._pin_timer.cancel()
        ttl = (self.config.get("priority_timeout") or 0) / NS
        self._pin_timer = self.server.loop.call_later(ttl, self._pin_expired) if ttl > 0 else None

    def _pin_expired(self) -> None:
        self._pin_timer = None
        if self.closed or not self.pin_id:
            return
        self.unpin(self.config["priority_groups"][0], "timeout")

    def unpin(self, group: str, reason: str) -> None:
        self.unassign_pin()
        self.advisory(ADV_UNPINNED, "io.nats.jetstream.advisory.v1.consumer_group_unpinned",
                      {"group": group, "reason": reason}, account=True)
        self.signal()

    def _touch_pull(self) -> None:
        if self.config.get("inactive_threshold"):
            self.check_inactive()

    def next_waiting(self, size: int, tok: int = 0, pinned: bool | None = None) -> WaitingRequest | None:
        """The request to deliver the next message to; interest in its reply
        subject is checked once per delivery batch ``tok`` (every call when 0)."""
        srv = self.server
        now = srv.loop.time()
        cycled = 0
        while self.waiting:
            wr = self.waiting[0]
            if wr.expires and now >= wr.expires:
                srv.publish_internal(wr.reply, "", _pending_status("408 Request Timeout", wr), b"")
                self.waiting.popleft()
                continue
            if (wr.min_pending or wr.min_ack_pending) and not self._overflow_ready(wr):
                # not this one's turn yet: try the next waiting request
                self.waiting.rotate(-1)
                cycled += 1
                if cycled >= len(self.waiting):
                    return None
                continue
            assigned = False
            if pinned is None:
                pinned = self.pinned
            if pinned:
                if not self.pin_id:
                    if wr.pin:  # asks for a pin that is gone
                        srv.publish_internal(wr.reply, "", _pending_status("423 Nats-Wrong-Pin-Id", wr), b"")
                        self.waiting.popleft()
                        continue
                    if wr.group:
                        self.assign_pin(wr)
                        assigned = True
                elif wr.pin != self.pin_id:
                    if wr.pin:
                        srv.publish_internal(wr.reply, "", _pending_status("423 Nats-Wrong-Pin-Id", wr), b"")
                        self.waiting.popleft()
                        continue
                    # unpinned clients wait while another one holds the pin
                    self.waiting.rotate(-1)
                    cycled += 1
                    if cycled >= len(self.waiting):
                        return None
                    continue
            if wr.b > 0:
                if size <= wr.b:
                    wr.b -= size
                    if wr.b == 0:
                        wr.n = 1
                else:
                    srv.publish_internal(wr.reply, "", _pending_status("409 Message Size Exceeds MaxBytes", wr), b"")
                    self.waiting.popleft()
                    if assigned:  # the pin just claimed goes back
                        self.unassign_pin()
                    continue
            if not tok or wr.tok != tok:
                if not srv.has_interest(wr.reply):
                    self.waiting.popleft()
                    continue
                wr.tok = tok
            wr.d += 1
            wr.n -= 1
            self.waiting.popleft()
            if wr.n > 0:
                if self.config.get("priority_policy") == "prioritized":
                    priorities.enqueue(self.waiting, wr)  # behind its equals
                else:
                    self.waiting.append(wr)  # round robin between waiting requests
            return wr
        return None

    def process_waiting(self, eos: bool) -> None:
        """Expire requests (408), end no_wait ones at end of stream (404),
        send request heartbeats, drop requests nobody listens to; re-arm the timer."""
        if not self.waiting:
            if self._wr_timer:
                self._wr_timer.cancel()
                self._wr_timer = None
            self.check_inactive()
            return
        srv = self.server
        now = srv.loop.time()
        keep: deque[WaitingRequest] = deque()
        fexp = 0.0
        for wr in self.waiting:
            expired = wr.expires and now >= wr.expires
            if expired:
                srv.publish_internal(wr.reply, "", _pending_status("408 Request Timeout", wr), b"")
                continue
            if eos and wr.no_wait and (not wr.expires or wr.d > 0):
                srv.publish_internal(wr.reply, "", headers.status(404, "No Messages"), b"")
                continue
            if not srv.has_interest(wr.reply):
                continue
            if wr.hbt:
                if now >= wr.hbt:
                    self.send_heartbeat(wr.reply)
                    wr.hbt = now + wr.hb
                fexp = wr.hbt if not fexp else min(fexp, wr.hbt)
            if wr.expires:
                fexp = wr.expires if not fexp else min(fexp, wr.expires)
            keep.append(wr)
        self.waiting = keep
        if self._wr_timer and (not fexp or self._wr_timer_at != fexp):
            self._wr_timer.cancel()
            self._wr_timer = None
        if fexp and self._wr_timer is None:
            self._wr_timer_at = fexp
            self._wr_timer = srv.loop.call_at(fexp, self._wr_timer_fired)
        if not self.waiting:
            self.check_inactive()

    def _wr_timer_fired(self) -> None:
        self._wr_timer = None
        if not self.closed:
            try:
                self.process_waiting(eos=True)
            except Exception:
                self.server.logger.exception("consumer %s: waiting requests", self.name)

    def notify_waiting_deleted(self) -> None:
        for wr in self.waiting:
            self.server.publish_internal(wr.reply, "", headers.status(409, "Consumer Deleted"), b"")
        self.waiting.clear()

    # -- heartbeats and flow control ---------------------------------------------------------
    def send_heartbeat(self, subject: str) -> None:
        hdrs = [("Nats-Last-Consumer", str(self.acks.dseq - 1)), ("Nats-Last-Stream", str(self.acks.sseq - 1))]
        if self.fcid:
            hdrs.append(("Nats-Consumer-Stalled", self.fcid))
        self.server.publish_internal(subject, "", headers.status(100, "Idle Heartbeat", hdrs), b"")

    def _arm_heartbeat(self) -> None:
        hb = self.config.get("idle_heartbeat") or 0
        if hb and not self.closed:
            self._hb_timer = self.server.loop.call_later(hb / NS, self._heartbeat_fired)

    def _heartbeat_fired(self) -> None:
        self._hb_timer = None
        if self.closed:
            return
        hb = self.config.get("idle_heartbeat") / NS
        idle = self.server.loop.time() - self._last_send
        if idle >= hb * 0.99:
            if self.push_active:
                self.send_heartbeat(self.config["deliver_subject"])
                self._last_send = self.server.loop.time()
            self._hb_timer = self.server.loop.call_later(hb, self._heartbeat_fired)
        else:
            self._hb_timer = self.server.loop.call_later(hb - idle, self._heartbeat_fired)

    def send_flow_control(self) -> None:
        rnd = "".join(random.choices(string.ascii_letters + string.digits, k=4))
        self.fcid = f"$JS.FC.{self.stream.name}.{self.name}.{rnd}"
        self.fcsz = self.pbytes
        self.server.publish_internal(self.config["deliver_subject"], self.fcid,
                                     headers.status(100, "FlowControl Request"), b"")

    def on_flow_control(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        if subject != self.fcid or self.closed:
            return
        if self.maxpb < self.pblimit:
            self.maxpb = min(self.maxpb * 2, self.pblimit)
        self.pbytes = max(0, self.pbytes - self.fcsz)
        self.fcid, self.fcsz = "", 0
        self.signal()
