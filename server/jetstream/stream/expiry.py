"""Stream expiry (a mixin of ``stream.Stream``): max_age on a timer armed
for the oldest message, per-message TTLs (``Nats-TTL``) on a heap, and the
subject delete markers left when the last message of a subject expires."""

from __future__ import annotations

import heapq
import logging

from .. import headers
from .. import errors
from ..errors import ApiError
from ...gowire import go_duration
from ..shapes import NS, now_ns, parse_go_duration
from ..store.base import StoredMsg

log = logging.getLogger("natslab.jetstream")


def parse_ttl(value: str) -> int:
    """Nats-TTL header to seconds; -1 is never; raises ApiError 10165."""
    if value.lower() == "never":
        return -1
    try:
        dur = parse_go_duration(value)
    except ValueError:
        # parseInt64: ASCII digits only (Python's int() would also take a
        # sign, spaces and underscores)
        if not (value.isascii() and value.isdigit()):
            raise errors.msg_ttl_invalid() from None
        return int(value)
    if dur < NS:
        raise errors.msg_ttl_invalid()
    return dur // NS


class ExpiryMixin:
    # -- expiry ------------------------------------------------------------
    def _arm_age_timer(self) -> None:
        if self._age_timer:
            self._age_timer.cancel()
            self._age_timer = None
        max_age = self.config["max_age"]
        if not max_age or self.closed:
            return
        first = self.store.load_next(0)
        if first is None:
            return
        delay = max(0.0, (first.ts + max_age - now_ns()) / NS)
        self._age_timer = self.js.messaging.loop.call_later(delay, self._expire_by_age)

    def _expire_by_age(self) -> None:
        self._age_timer = None
        try:
            cutoff = now_ns() - self.config["max_age"]
            seq = 0
            while True:
                sm = self.store.load_next(seq)
                if sm is None or sm.ts > cutoff:
                    break
                seq = sm.seq + 1
                if sm.seq in self._never_expire:
                    continue
                self._expire(sm)
        except Exception:
            log.exception("stream %s: age expiry failed", self.name)
        self._arm_age_timer()

    def _rebuild_ttls(self) -> None:
        if not self.config.get("allow_msg_ttl"):
            return
        for seq in self.store.iter_seqs():
            sm = self.store.load(seq)
            if sm and sm.hdr and b"Nats-TTL" in sm.hdr:
                v = headers.parse(sm.hdr).get(headers.TTL)
                try:
                    ttl = parse_ttl(v) if v else 0
                except ApiError:
                    ttl = 0
                if ttl > 0:
                    self._ttl_heap.append((sm.ts + ttl * NS, seq))
                elif ttl < 0:
                    self._never_expire.add(seq)
        heapq.heapify(self._ttl_heap)
        self._arm_ttl_timer()

    def _expire(self, sm: StoredMsg) -> int:
        """Remove an expired message, or with subject_delete_marker_ttl, replace
        the last one of its subject by a delete marker (which rolls it up)."""
        smt = self.config.get("subject_delete_marker_ttl") or 0
        if smt > 0 and not (sm.hdr and b"Nats-Marker-Reason" in sm.hdr) \
                and self.store.last_seq_for_subject(sm.subject) == sm.seq:
            marker = headers.append(None, [("Nats-Marker-Reason", "MaxAge"),
                                           (headers.TTL, go_duration(smt // NS * NS)),
                                           (headers.ROLLUP, "sub")])
            try:
                self.process_msg(sm.subject, b"", marker, b"")
            except ApiError as e:
                log.warning("stream %s: delete marker refused: %s", self.name, e)
                return self.remove_msg(sm.seq, True)
            return 1
        return self.remove_msg(sm.seq, True)  # (expired again when the stream is recovered)

    def _arm_ttl_timer(self) -> None:
        if not self._ttl_heap or self.closed:
            return
        at = self._ttl_heap[0][0]
        if self._ttl_timer and getattr(self, "_ttl_at", 0) <= at:
            return
        if self._ttl_timer:
            self._ttl_timer.cancel()
        self._ttl_at = at
        self._ttl_timer = self.js.messaging.loop.call_later(max(0.0, (at - now_ns()) / NS), self._expire_ttls)

    def _expire_ttls(self) -> None:
        try:
            self._expire_ttls_now()
        except Exception:
            log.exception("stream %s: TTL expiry failed", self.name)
            self._ttl_timer = None
            self._arm_ttl_timer()

    def _expire_ttls_now(self) -> None:
        self._ttl_timer = None
        now = now_ns()
        while self._ttl_heap and self._ttl_heap[0][0] <= now:
            _, seq = heapq.heappop(self._ttl_heap)
            sm = self.store.load(seq)
            if sm is not None:
                self._expire(sm)
        self._arm_ttl_timer()

