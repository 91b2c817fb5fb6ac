"""A pull consumer's queue of waiting requests (``PullQueue``, one per
``consumer.Consumer``): reading a pull request (``$JS.API.CONSUMER.MSG.NEXT``
or an ack's +NXT) with its limits and refusals, the waiting requests in the
order they are served (round robin; by priority under ``prioritized``, see
priorities.py), the priority group rules (overflow thresholds, the pin of
``pinned_client`` with its timer and advisories), request expiry, no_wait
ends, request heartbeats and the status replies (404, 408, 409, 423).

Delivery (``delivery.Delivery``) asks it which request the next message goes
to (``next_waiting``, or ``run_targets`` / ``assign`` for a run) and says
when one was served; it never walks the queue itself."""

from __future__ import annotations

import random
import string
from collections import deque

from .. import gojson, headers
from . import priorities
from ...gowire import go_duration
from ..shapes import NS, now_ns

# JSApiConsumerGetNextRequest (with the embedded PriorityGroup), read with
# json.Unmarshal: unknown fields ignored, and an unnamed struct in errors
NEXT_REQUEST = gojson.Struct("", {
    "expires": gojson.DURATION, "batch": gojson.INT, "max_bytes": gojson.INT, "no_wait": gojson.BOOL,
    "idle_heartbeat": gojson.DURATION, "group": gojson.STRING, "min_pending": gojson.INT64,
    "min_ack_pending": gojson.INT64, "id": gojson.STRING, "priority": gojson.INT,
})

ADV_PINNED = "$JS.EVENT.ADVISORY.CONSUMER.PINNED"
ADV_UNPINNED = "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED"
_NUID_CHARS = string.ascii_letters + string.digits


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


def _pin_nuid() -> str:
    return "".join(random.choices(_NUID_CHARS, k=22))


def _pending_status(code_desc: str, wr: WaitingRequest) -> bytes:
    return (f"NATS/1.0 {code_desc}\r\nNats-Pending-Messages: {wr.n}\r\n"
            f"Nats-Pending-Bytes: {wr.b}\r\n\r\n").encode()


class PullQueue:
    """``waiting``: the requests, the next to serve first; ``pin_id`` /
    ``pin_ts``: the pinned client's id and when it was pinned ('' / 0: no
    pin). Others read these; only this class changes them."""

    def __init__(self, consumer) -> None:
        self.c = consumer  # config, messaging, acks, delivery, advisories, signal(), check_inactive()
        self.waiting: deque[WaitingRequest] = deque()
        self._wr_timer = None
        self._wr_timer_at = 0.0
        self.pin_id = ""
        self.pin_ts = 0
        self._pin_timer = None

    def stop(self) -> None:
        for t in (self._wr_timer, self._pin_timer):
            if t:
                t.cancel()
        self._wr_timer = self._pin_timer = None

    def num_waiting(self) -> int:
        if self.c.is_pull:
            self.process_waiting(eos=False)
        return len(self.waiting)

    # -- a pull request ----------------------------------------------------------------------
    def on_request(self, reply: str, payload: bytes) -> None:
        c = self.c
        messaging = c.messaging
        if not c.is_pull:
            messaging.publish(reply, "", headers.status(409, "Consumer is push based"), b"")
            return
        req = payload.strip()
        batch, expires, no_wait, max_bytes, hb = 1, 0, False, 0, 0
        d = None
        if req[:1] == b"{":
            try:
                d = gojson.unmarshal_request(req, NEXT_REQUEST, strict=False, stream=False)
            except gojson.GoJSONError as e:
                messaging.publish(reply, "", headers.status(400, f"Bad Request - {e}"), b"")
                return
            batch = d.get("batch") or 0
            expires = d.get("expires") or 0
            no_wait = bool(d.get("no_wait"))
            max_bytes = d.get("max_bytes") or 0
            hb = d.get("idle_heartbeat") or 0
            if hb > 0 and hb * 2 > expires:
                messaging.publish(reply, "", headers.status(400, "Bad Request - heartbeat value too large"), b"")
                return
        elif req:
            try:
                batch = int(req)
            except ValueError:
                batch = 1
        cfg = c.config
        if cfg.get("max_batch") and batch > cfg["max_batch"]:
            messaging.publish(reply, "", headers.status(409, f"Exceeded MaxRequestBatch of {cfg['max_batch']}"), b"")
            return
        if expires and cfg.get("max_expires") and expires > cfg["max_expires"]:
            messaging.publish(reply, "", headers.status(409, f"Exceeded MaxRequestExpires of {go_duration(cfg['max_expires'])}"), b"")
            return
        if max_bytes and cfg.get("max_bytes") and max_bytes > cfg["max_bytes"]:
            messaging.publish(reply, "", headers.status(409, f"Exceeded MaxRequestMaxBytes of {cfg['max_bytes']}"), b"")
            return
        min_pending = min_ack_pending = 0
        group = pin = ""
        if d is not None:  # a JSON request carries a priority group (maybe empty)
            why = self._priority_refusal(d)
            if why:
                messaging.publish(reply, "", headers.status(400, f"Bad Request - {why}"), b"")
                return
            min_pending, min_ack_pending = d.get("min_pending") or 0, d.get("min_ack_pending") or 0
            group, pin = d.get("group") or "", d.get("id") or ""
            if self.pin_id and cfg.get("priority_policy") == "pinned_client":
                if pin == self.pin_id:
                    self.arm_pin_timer()  # the pinned client is still there
                elif pin:
                    messaging.publish(reply, "", headers.status(423, "Nats-Pin-Id mismatch"), b"")
                    return
        if no_wait:
            avail = c.num_pending() + len(c.acks.rdq)
            if avail == 0 and not expires:
                messaging.publish(reply, "", headers.status(404, "No Messages"), b"")
                self._touch_pull()
                return
        if len(self.waiting) >= (cfg.get("max_waiting") or 512):
            self.process_waiting(eos=False)
        if len(self.waiting) >= (cfg.get("max_waiting") or 512):
            if not hb:
                messaging.publish(reply, "", headers.status(409, "Exceeded MaxWaiting"), b"")
            return
        now = messaging.loop.time()
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
        c.signal()

    def _priority_refusal(self, d: dict) -> str:
        """Why a pull request does not fit the consumer's priority policy
        ('' when it does), in the real server's words and order."""
        cfg = self.c.config
        policy = cfg.get("priority_policy") or "none"
        if (d.get("min_pending") or d.get("min_ack_pending")) and policy != "overflow":
            return "Not a Overflow Priority consumer"
        if d.get("id") and policy != "pinned_client":
            return "Not a Pinned Client Priority consumer"
        if not 0 <= (d.get("priority") or 0) <= 9:
            return "Priority must be between 0 and 9"
        if policy != "none":
            if not d.get("group"):
                return "Priority Group missing"
            if d["group"] not in cfg.get("priority_groups", ()):
                return "Invalid Priority Group"
        return ""

    def _overflow_ready(self, wr: WaitingRequest) -> bool:
        """An overflow request with thresholds is served once the consumer
        has that many messages pending (counting the one in hand) or that
        many unacknowledged."""
        mp, map_ = wr.min_pending, wr.min_ack_pending
        if mp <= 0 and map_ <= 0:
            return True
        return (mp > 0 and mp <= self.c.num_pending() + 1) or (map_ > 0 and map_ <= len(self.c.acks.pending))

    def _touch_pull(self) -> None:
        if self.c.config.get("inactive_threshold"):
            self.c.check_inactive(activity=True)

    # -- pinned_client priority -------------------------------------------------------------
    @property
    def pinned(self) -> bool:
        return self.c.config.get("priority_policy") == "pinned_client"

    def assign_pin(self, wr: WaitingRequest) -> None:
        """Pin the consumer to the client behind ``wr``: its messages carry
        Nats-Pin-Id, and other clients' requests wait until the pin goes."""
        self.pin_id = _pin_nuid()
        self.pin_ts = now_ns()
        wr.pin = self.pin_id
        self.arm_pin_timer()
        self.c.advisory(ADV_PINNED, "io.nats.jetstream.advisory.v1.consumer_group_pinned",
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
        ttl = (self.c.config.get("priority_timeout") or 0) / NS
        self._pin_timer = self.c.messaging.loop.call_later(ttl, self._pin_expired) if ttl > 0 else None

    def _pin_expired(self) -> None:
        self._pin_timer = None
        if self.c.closed or not self.pin_id:
            return
        self.unpin(self.c.config["priority_groups"][0], "timeout")

    def unpin(self, group: str, reason: str) -> None:
        self.unassign_pin()
        self.c.advisory(ADV_UNPINNED, "io.nats.jetstream.advisory.v1.consumer_group_unpinned",
                        {"group": group, "reason": reason}, account=True)
        self.c.signal()

    # -- serving requests ----------------------------------------------------------------------
    def next_waiting(self, size: int, tok: int = 0, pinned: bool | None = None) -> WaitingRequest | None:
        """The request to deliver the next message (``size`` bytes) to;
        interest in its reply subject is checked once per delivery batch
        ``tok`` (every call when 0)."""
        c = self.c
        messaging = c.messaging
        now = messaging.loop.time()
        cycled = 0
        waiting = self.waiting
        while waiting:
            wr = waiting[0]
            if wr.expires and now >= wr.expires:
                messaging.publish(wr.reply, "", _pending_status("408 Request Timeout", wr), b"")
                waiting.popleft()
                continue
            if (wr.min_pending or wr.min_ack_pending) and not self._overflow_ready(wr):
                # not this one's turn yet: try the next waiting request
                waiting.rotate(-1)
                cycled += 1
                if cycled >= len(waiting):
                    return None
                continue
            assigned = False
            if pinned is None:
                pinned = self.pinned
            if pinned:
                if not self.pin_id:
                    if wr.pin:  # asks for a pin that is gone
                        messaging.publish(wr.reply, "", _pending_status("423 Nats-Wrong-Pin-Id", wr), b"")
                        waiting.popleft()
                        continue
                    if wr.group:
                        self.assign_pin(wr)
                        assigned = True
                elif wr.pin != self.pin_id:
                    if wr.pin:
                        messaging.publish(wr.reply, "", _pending_status("423 Nats-Wrong-Pin-Id", wr), b"")
                        waiting.popleft()
                        continue
                    # unpinned clients wait while another one holds the pin
                    waiting.rotate(-1)
                    cycled += 1
                    if cycled >= len(waiting):
                        return None
                    continue
            if wr.b > 0:
                if size <= wr.b:
                    wr.b -= size
                    if wr.b == 0:
                        wr.n = 1
                else:
                    messaging.publish(wr.reply, "", _pending_status("409 Message Size Exceeds MaxBytes", wr), b"")
                    waiting.popleft()
                    if assigned:  # the pin just claimed goes back
                        self.unassign_pin()
                    continue
            if not tok or wr.tok != tok:
                if not messaging.has_interest(wr.reply):
                    waiting.popleft()
                    continue
                wr.tok = tok
            wr.d += 1
            wr.n -= 1
            waiting.popleft()
            if wr.n > 0:
                if c.config.get("priority_policy") == "prioritized":
                    priorities.enqueue(waiting, wr)  # behind its equals
                else:
                    waiting.append(wr)  # round robin between waiting requests
            return wr
        return None

    def served(self, wr: WaitingRequest) -> None:
        """A message went to ``wr`` (from next_waiting): a max_bytes request
        filled up is told so, a heartbeating one's idle time starts again."""
        if wr.n <= 0 and wr.b > 0:
            self.c.messaging.publish(wr.reply, "", _pending_status("409 Batch Completed", wr), b"")
        if wr.n > 0 and wr.hb:
            wr.hbt = self.c.messaging.loop.time() + wr.hb

    def run_targets(self, tok: int, now: float) -> dict | None:
        """For a run of deliveries: each waiting request with the targets of
        its reply subject (the router's match), or None when the run cannot
        serve them alike (max_bytes, overflow thresholds, priorities, an
        expired request or one nobody listens to: next_waiting decides)."""
        waiting = self.waiting
        messaging = self.c.messaging
        if len(waiting) > 1 and self.c.config.get("priority_policy") == "prioritized":
            return None  # not round robin: next_waiting orders them
        match = messaging.match
        dests = {}
        for wr in waiting:
            if wr.b or wr.min_pending or wr.min_ack_pending or (wr.expires and now >= wr.expires):
                return None
            if wr.tok != tok:
                if not messaging.has_interest(wr.reply):
                    return None
                wr.tok = tok
            dests[wr] = match(wr.reply.encode())
        return dests

    def wanted(self) -> int:
        """How many messages the waiting requests ask for in all."""
        return sum(wr.n for wr in self.waiting)

    def assign(self, k: int, now: float, dests: dict) -> list:
        """Serve ``k`` messages round robin, as next_waiting would (the
        requests of ``run_targets``, which ask for ``k`` or more in all):
        the targets in order, as [target, how many messages in a row]."""
        waiting = self.waiting
        if len(waiting) == 1:  # one request takes them all
            wr = waiting[0]
            wr.d += k
            wr.n -= k
            if wr.n > 0:
                if wr.hb:
                    wr.hbt = now + wr.hb
            else:
                waiting.popleft()
            return [[dests[wr], k]]
        out = []
        for _ in range(k):
            wr = waiting.popleft()
            wr.d += 1
            wr.n -= 1
            if wr.n > 0:
                waiting.append(wr)
                if wr.hb:
                    wr.hbt = now + wr.hb
            t = dests[wr]
            if out and out[-1][0] is t:  # (one request left, or two on one reply subject)
                out[-1][1] += 1
            else:
                out.append([t, 1])
        return out

    def process_waiting(self, eos: bool) -> None:
        """Expire requests (408), end no_wait ones at end of stream (404),
        send request heartbeats, drop requests nobody listens to; re-arm the timer."""
        c = self.c
        if not self.waiting:
            if self._wr_timer:
                self._wr_timer.cancel()
                self._wr_timer = None
            c.check_inactive()
            return
        messaging = c.messaging
        now = messaging.loop.time()
        keep: deque[WaitingRequest] = deque()
        fexp = 0.0
        for wr in self.waiting:
            expired = wr.expires and now >= wr.expires
            if expired:
                messaging.publish(wr.reply, "", _pending_status("408 Request Timeout", wr), b"")
                continue
            if eos and wr.no_wait and (not wr.expires or wr.d > 0):
                messaging.publish(wr.reply, "", headers.status(404, "No Messages"), b"")
                continue
            if not messaging.has_interest(wr.reply):
                continue
            if wr.hbt:
                if now >= wr.hbt:
                    c.delivery.send_heartbeat(wr.reply)
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
            self._wr_timer = messaging.loop.call_at(fexp, self._wr_timer_fired)
        if not self.waiting:
            c.check_inactive()

    def _wr_timer_fired(self) -> None:
        self._wr_timer = None
        if not self.c.closed:
            try:
                self.process_waiting(eos=True)
            except Exception:
                self.c.messaging.logger.exception("consumer %s: waiting requests", self.c.name)

    def notify_deleted(self) -> None:
        for wr in self.waiting:
            self.c.messaging.publish(wr.reply, "", headers.status(409, "Consumer Deleted"), b"")
        self.waiting.clear()
