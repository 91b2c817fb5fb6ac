"""Stream expiry: max_age on a timer armed for the oldest message,
per-message TTLs (``Nats-TTL``) on a heap, and the subject delete markers
left when the last message of a subject expires. One per ``Stream``
(``stream.expiry``)."""

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


class Expiry:
    """What expires in one stream and when (``stream.expiry``).

    It owns the age timer (armed for the oldest message while max_age is
    set), the TTL heap of (expires ns, seq) with its timer, and the
    sequences whose ``Nats-TTL`` is never. It reads the stream's config and
    store, and removes what expired through the stream (``remove_msg``, or
    ``process_msg`` for a subject delete marker), so consumers hear of it
    as of any removal. The stream's publish path calls ``add`` for a
    message with a TTL and ``arm_age`` when max_age has no timer yet."""

    __slots__ = ("stream", "ttl_heap", "never", "age_timer", "ttl_timer", "ttl_at")

    def __init__(self, stream) -> None:
        self.stream = stream
        self.ttl_heap: list[tuple[int, int]] = []  # (expires ns, seq)
        self.never: set[int] = set()  # sequences stored with Nats-TTL: never
        self.age_timer = None
        self.ttl_timer = None
        self.ttl_at = 0  # when the TTL timer fires

    def add(self, seq: int, ts: int, ttl: int) -> None:
        """A message stored with a TTL in seconds (-1: never)."""
        if ttl > 0:
            heapq.heappush(self.ttl_heap, (ts + ttl * NS, seq))
            self.arm_ttl()
        else:
            self.never.add(seq)

    def stop(self) -> None:
        for t in (self.age_timer, self.ttl_timer):
            if t:
                t.cancel()

    def state(self) -> tuple[list, list]:
        """The TTL heap and the never-expiring sequences, for a clean stop's
        runtime state (``Stream.save_runtime_state``)."""
        return self.ttl_heap, sorted(self.never)

    def restore(self, ttls: list, never: list) -> None:
        self.ttl_heap = [tuple(e) for e in ttls]
        heapq.heapify(self.ttl_heap)
        self.never = set(never)
        self.arm_ttl()

    # -- max_age -----------------------------------------------------------
    def arm_age(self) -> None:
        st = self.stream
        if self.age_timer:
            self.age_timer.cancel()
            self.age_timer = None
        max_age = st.config["max_age"]
        if not max_age or st.closed:
            return
        first = st.store.load_next(0)
        if first is None:
            return
        delay = max(0.0, (first.ts + max_age - now_ns()) / NS)
        self.age_timer = st.js.messaging.loop.call_later(delay, self._expire_by_age)

    def _expire_by_age(self) -> None:
        st = self.stream
        self.age_timer = None
        try:
            cutoff = now_ns() - st.config["max_age"]
            seq = 0
            while True:
                sm = st.store.load_next(seq)
                if sm is None or sm.ts > cutoff:
                    break
                seq = sm.seq + 1
                if sm.seq in self.never:
                    continue
                self._expire(sm)
        except Exception:
            log.exception("stream %s: age expiry failed", st.name)
        self.arm_age()

    # -- message TTLs --------------------------------------------------------
    def rebuild(self) -> None:
        """After a restart without runtime state: the TTLs from the stored
        messages' headers."""
        st = self.stream
        if not st.config.get("allow_msg_ttl"):
            return
        for seq in st.store.iter_seqs():
            sm = st.store.load(seq)
            if sm and sm.hdr and b"Nats-TTL" in sm.hdr:
                v = headers.parse(sm.hdr).get(headers.TTL)
                try:
                    ttl = parse_ttl(v) if v else 0
                except ApiError:
                    ttl = 0
                if ttl > 0:
                    self.ttl_heap.append((sm.ts + ttl * NS, seq))
                elif ttl < 0:
                    self.never.add(seq)
        heapq.heapify(self.ttl_heap)
        self.arm_ttl()

    def _expire(self, sm: StoredMsg) -> int:
        """Remove an expired message, or with subject_delete_marker_ttl, replace
        the last one of its subject by a delete marker (which rolls it up)."""
        st = self.stream
        smt = st.config.get("subject_delete_marker_ttl") or 0
        if smt > 0 and not (sm.hdr and b"Nats-Marker-Reason" in sm.hdr) \
                and st.store.last_seq_for_subject(sm.subject) == sm.seq:
            marker = headers.append(None, [("Nats-Marker-Reason", "MaxAge"),
                                           (headers.TTL, go_duration(smt // NS * NS)),
                                           (headers.ROLLUP, "sub")])
            try:
                st.process_msg(sm.subject, b"", marker, b"")
            except ApiError as e:
                log.warning("stream %s: delete marker refused: %s", st.name, e)
                return st.remove_msg(sm.seq, True)
            return 1
        return st.remove_msg(sm.seq, True)  # (expired again when the stream is recovered)

    def arm_ttl(self) -> None:
        st = self.stream
        if not self.ttl_heap or st.closed:
            return
        at = self.ttl_heap[0][0]
        if self.ttl_timer and self.ttl_at <= at:
            return
        if self.ttl_timer:
            self.ttl_timer.cancel()
        self.ttl_at = at
        self.ttl_timer = st.js.messaging.loop.call_later(max(0.0, (at - now_ns()) / NS), self._expire_ttls)

    def _expire_ttls(self) -> None:
        try:
            self._expire_ttls_now()
        except Exception:
            log.exception("stream %s: TTL expiry failed", self.stream.name)
            self.ttl_timer = None
            self.arm_ttl()

    def _expire_ttls_now(self) -> None:
        self.ttl_timer = None
        now = now_ns()
        heap = self.ttl_heap
        load = self.stream.store.load
        while heap and heap[0][0] <= now:
            _, seq = heapq.heappop(heap)
            sm = load(seq)
            if sm is not None:
                self._expire(sm)
        self.arm_ttl()
