"""The memory store: one stream's messages held in a dict keyed by sequence,
with a per-subject index of sorted sequences and a sorted list of interior
deletes, so the questions consumers ask on every delivery (next message for a
filter, how many are pending) are answered without scanning the stream."""

from __future__ import annotations

from bisect import bisect_left, insort
from typing import Iterator

from .base import Store, StoredMsg, StoreState, memory_msg_size
from ...subjects import is_literal, subject_matches

# Below this many subjects a wildcard look-up scans the per-subject index;
# above it, a short linear scan of sequences is tried first.
_LINEAR_PROBE = 64


class MemoryStore(Store):
    def __init__(self, first_seq: int = 0):
        # seq -> (seq, subject, hdr, data, ts): plain tuples of str/bytes/int,
        # which the cyclic GC stops tracking, so a stream of millions of
        # messages adds nothing to its passes (StoredMsg objects would)
        self._msgs: dict[int, tuple] = {}
        self._subj: dict[str, list[int]] = {}
        self._deleted: list[int] = []  # missing seqs between first and last
        self._bytes = 0
        self._first = max(first_seq, 1)
        self._last = self._first - 1
        self._last_ts = 0
        # the real server reports first_seq 0 for a stream that never held anything
        self._held = first_seq > 0  # a configured first_seq (even 1) is reported from the start
        self._replies: list = []  # PubAcks waiting for the end of the client's read (hold)

    # -- writing ---------------------------------------------------------
    def msg_size(self, subject: str, hdr: bytes | None, data: bytes) -> int:
        return memory_msg_size(subject, hdr, data)

    def store_msg(self, subject: str, hdr: bytes | None, data: bytes, ts: int) -> int:
        seq = self._last + 1
        if not self._msgs:
            self._first = seq
            self._deleted.clear()
        self._msgs[seq] = (seq, subject, hdr, data, ts)
        lst = self._subj.get(subject)
        if lst is None:
            self._subj[subject] = [seq]
        else:
            lst.append(seq)
        self._bytes += memory_msg_size(subject, hdr, data)
        self._last = seq
        self._last_ts = ts
        self._held = True
        return seq

    def remove(self, seq: int, rederivable: bool = False) -> bool:
        sm = self._msgs.pop(seq, None)
        if sm is None:
            return False
        subject = sm[1]
        self._bytes -= memory_msg_size(subject, sm[2], sm[3])
        lst = self._subj[subject]
        if lst[0] == seq:
            del lst[0]
        else:
            del lst[bisect_left(lst, seq)]
        if not lst:
            del self._subj[subject]
        if not self._msgs:
            self._first = self._last + 1
            self._deleted.clear()
        elif seq == self._first:
            nxt, d, k = seq + 1, self._deleted, 0
            while k < len(d) and d[k] == nxt + k:
                k += 1
            del d[:k]
            self._first = nxt + k
        else:
            insort(self._deleted, seq)
        return True

    def purge(self, subject: str | None = None, seq: int = 0, keep: int = 0) -> int:
        self._held = True  # as nats-server: a purged, never-used store reports first_seq 1
        if seq == 1:
            return 0
        if subject in (None, "", ">"):
            if not keep and not seq:
                n = len(self._msgs)
                self._msgs.clear()
                self._subj.clear()
                self._deleted.clear()
                self._bytes = 0
                self._first = self._last + 1
                return n
            if seq > 1:
                return self.compact(seq)
            subject = ">"
        seqs = self._matching_seqs(subject)
        if keep:
            if keep >= len(seqs):
                return 0
            seqs = seqs[: len(seqs) - keep]
        if seq:
            seqs = seqs[: bisect_left(seqs, seq)]
        for s in seqs:
            self.remove(s)
        return len(seqs)

    def compact(self, seq: int) -> int:
        if seq <= self._first:
            return 0
        if seq > self._last:
            n = len(self._msgs)
            self._msgs.clear()
            self._subj.clear()
            self._deleted.clear()
            self._bytes = 0
            self._last = seq - 1
            self._first = seq
            self._held = True  # a new store reports first_seq == seq, as nats-server does
            return n
        n = 0
        for s in range(self._first, seq):
            if s in self._msgs:
                self.remove(s)
                n += 1
        if self._msgs and self._first < seq:
            self._first = seq
            self._deleted = [d for d in self._deleted if d > seq]
        return n

    def hold(self, reply: bytes, payload: bytes, stored: bool = True) -> bool:
        """Nothing waits to be written here, but the replies of one read are
        sent together (see ``on_written``): they go out in the same write
        to the client as they would one by one."""
        if self.write_behind is None:
            return False
        if not self._replies:
            self.write_behind(self)
        self._replies.append((reply, payload, stored))
        return True

    def hold_many(self, answers: list[tuple[bytes, bytes, bool]]) -> bool:
        if self.write_behind is None:
            return False
        if not self._replies:
            self.write_behind(self)
        self._replies += answers
        return True

    def write_out(self, durable: bool = False) -> None:
        if self._replies:
            held, self._replies = self._replies, []
            if self.on_written is not None:
                self.on_written(held, None, 0)

    # -- reading ---------------------------------------------------------
    def load(self, seq: int) -> StoredMsg | None:
        t = self._msgs.get(seq)
        return StoredMsg(*t) if t is not None else None

    def _matching_subjects(self, flt: str) -> list[str]:
        return [s for s in self._subj if subject_matches(flt, s)]

    def _matching_seqs(self, flt: str) -> list[int]:
        if flt == ">":
            return list(self._msgs)
        if is_literal(flt):
            return list(self._subj.get(flt, ()))
        out: list[int] = []
        for s in self._matching_subjects(flt):
            out.extend(self._subj[s])
        out.sort()
        return out

    def load_batch(self, start_seq: int, subject_filter: str | None, limit: int) -> list[tuple]:
        if subject_filter not in (None, "", ">"):
            if not is_literal(subject_filter):
                return super().load_batch(start_seq, subject_filter, limit)
            lst = self._subj.get(subject_filter, ())
            i = bisect_left(lst, start_seq)
            msgs = self._msgs
            return [msgs[s] for s in lst[i : i + limit]]
        out: list[tuple] = []
        get = self._msgs.get
        s = max(start_seq, self._first)
        last = self._last
        while s <= last and len(out) < limit:
            t = get(s)
            if t is not None:
                out.append(t)
            s += 1
        return out

    def load_next(self, start_seq: int, subject_filter: str | None = None) -> StoredMsg | None:
        s = max(start_seq, self._first)
        if s > self._last or not self._msgs:
            return None
        msgs = self._msgs
        if subject_filter in (None, "", ">"):
            while s <= self._last:
                t = msgs.get(s)
                if t is not None:
                    return StoredMsg(*t)
                s += 1
            return None
        if is_literal(subject_filter):
            lst = self._subj.get(subject_filter)
            if not lst:
                return None
            i = bisect_left(lst, s)
            return StoredMsg(*msgs[lst[i]]) if i < len(lst) else None
        if len(self._subj) > _LINEAR_PROBE:
            end = min(self._last, s + _LINEAR_PROBE)
            while s <= end:
                t = msgs.get(s)
                if t is not None and subject_matches(subject_filter, t[1]):
                    return StoredMsg(*t)
                s += 1
            if s > self._last:
                return None
        best = 0
        for subj in self._matching_subjects(subject_filter):
            lst = self._subj[subj]
            i = bisect_left(lst, s)
            if i < len(lst) and (not best or lst[i] < best):
                best = lst[i]
        return StoredMsg(*msgs[best]) if best else None

    def load_last(self, subject_filter: str | None = None) -> StoredMsg | None:
        if not self._msgs:
            return None
        if subject_filter in (None, "", ">"):
            s = self._last
            while s >= self._first:
                t = self._msgs.get(s)
                if t is not None:
                    return StoredMsg(*t)
                s -= 1
            return None
        if is_literal(subject_filter):
            lst = self._subj.get(subject_filter)
            return StoredMsg(*self._msgs[lst[-1]]) if lst else None
        best = 0
        for subj in self._matching_subjects(subject_filter):
            best = max(best, self._subj[subj][-1])
        return StoredMsg(*self._msgs[best]) if best else None

    def last_seq_for_subject(self, subject: str) -> int:
        lst = self._subj.get(subject)
        return lst[-1] if lst else 0

    def subject_seqs(self, subject: str) -> list[int]:
        return list(self._subj.get(subject, ()))

    def subject_count(self, subject: str) -> int:
        lst = self._subj.get(subject)
        return len(lst) if lst else 0

    def oldest_for_subject(self, subject: str, n: int) -> list[int]:
        return self._subj.get(subject, [])[:n]

    def totals(self) -> tuple[int, int, int]:
        return len(self._msgs), self._bytes, self._first

    def subjects_state(self, subject_filter: str | None = None) -> dict[str, int]:
        if subject_filter in (None, "", ">"):
            return {s: len(l) for s, l in self._subj.items()}
        return {s: len(self._subj[s]) for s in self._matching_subjects(subject_filter)}

    def num_pending(self, start_seq: int, subject_filter: str | None = None, last_per_subject: bool = False) -> int:
        if not self._msgs or start_seq > self._last:
            return 0
        if last_per_subject:
            subjects = self._subj if subject_filter in (None, "", ">") else self._matching_subjects(subject_filter)
            return sum(1 for s in subjects if self._subj[s][-1] >= start_seq)
        if subject_filter in (None, "", ">"):
            if start_seq <= self._first:
                return len(self._msgs)
            d = self._deleted
            return (self._last - start_seq + 1) - (len(d) - bisect_left(d, start_seq))
        if is_literal(subject_filter):
            lst = self._subj.get(subject_filter)
            return len(lst) - bisect_left(lst, start_seq) if lst else 0
        n = 0
        for s in self._matching_subjects(subject_filter):
            lst = self._subj[s]
            n += len(lst) - bisect_left(lst, start_seq)
        return n

    def deleted(self) -> list[int]:
        return list(self._deleted)

    def state(self) -> StoreState:
        first = self._first if self._held else 0
        first_ts = 0
        if self._msgs:
            first_ts = self._msgs[self._first][4]
        return StoreState(
            messages=len(self._msgs),
            bytes=self._bytes,
            first_seq=first,
            first_ts=first_ts,
            last_seq=self._last,
            last_ts=self._last_ts,
            num_subjects=len(self._subj),
            num_deleted=len(self._deleted),
        )

    def iter_seqs(self, start_seq: int = 0) -> Iterator[int]:
        s = max(start_seq, self._first)
        while s <= self._last:
            if s in self._msgs:
                yield s
            s += 1
