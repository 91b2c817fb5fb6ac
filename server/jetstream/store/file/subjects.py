"""The file store's subject index: for every subject its live sequences in
a sorted array, so filtered look-ups (next message for a filter, pending
counts, last per subject) are a bisect per matching subject rather than a
scan of the stream. Mixed into ``FileStore``; subjects get small integer ids
that the per-block ``sids`` arrays hold."""

from __future__ import annotations

from array import array
from bisect import bisect_left

from ....subjects import is_literal, subject_matches

ALL = (None, "", ">")


class SubjectSeqs:
    """Sorted sequences of one subject; removals at the front move ``head``."""

    __slots__ = ("seqs", "head")

    def __init__(self) -> None:
        self.seqs = array("Q")
        self.head = 0

    def count(self) -> int:
        return len(self.seqs) - self.head

    def last(self) -> int:
        return self.seqs[-1] if len(self.seqs) > self.head else 0

    def first_ge(self, seq: int) -> int:
        i = bisect_left(self.seqs, seq, self.head)
        return self.seqs[i] if i < len(self.seqs) else 0

    def count_ge(self, seq: int) -> int:
        return len(self.seqs) - bisect_left(self.seqs, seq, self.head)

    def remove(self, seq: int) -> bool:
        """Forget seq; True when the subject has no sequences left. This runs
        per removed message, so the common case (the oldest) tidies only
        when there is something to tidy."""
        seqs = self.seqs
        head = self.head
        if seqs[head] == seq:
            self.head = head = head + 1
            if head == len(seqs) or head > 1024:
                self._tidy()
                return not self.seqs
            return False
        i = bisect_left(seqs, seq, head)
        if i < len(seqs) and seqs[i] == seq:
            del seqs[i]
        return len(seqs) == head

    def drop_below(self, seq: int) -> int:
        j = bisect_left(self.seqs, seq, self.head)
        n = j - self.head
        self.head = j
        self._tidy()
        return n

    def _tidy(self) -> None:
        if self.head == len(self.seqs):
            self.seqs = array("Q")
            self.head = 0
        elif self.head > 1024 and self.head * 2 > len(self.seqs):
            del self.seqs[: self.head]
            self.head = 0

    def live(self) -> list[int]:
        return self.seqs[self.head :].tolist()


class SubjectSequences:
    """The file store's subjects: their ids, names and live sequences
    (a mixin of FileStore; state lives on the store). Not the core's
    subscription index (subjects.SubjectIndex)."""

    _subjects: list[str]
    _sid: dict[str, int]
    _sseqs: list[SubjectSeqs]
    _num_subjects: int
    _filter_cache: dict[str, list[int]]

    def _init_subjects(self) -> None:
        self._subjects = []
        self._sid = {}
        self._sseqs = []
        self._num_subjects = 0  # subjects with at least one message
        self._filter_cache = {}  # wildcard filter -> matching subject ids
        self._wild_sids: set[int] = set()  # stored subjects that hold wildcard tokens (rarely any)

    def _sid_for(self, subject: str) -> int:
        sid = self._sid.get(subject)
        if sid is None:
            sid = self._sid[subject] = len(self._subjects)
            self._subjects.append(subject)
            self._sseqs.append(SubjectSeqs())
            self._filter_cache.clear()
            if not is_literal(subject):  # decided once here, not per read (load_last)
                self._wild_sids.add(sid)
        return sid

    def _matching_sids(self, flt: str) -> list[int]:
        if flt in ALL:
            return [i for i, ss in enumerate(self._sseqs) if ss.count()]
        if is_literal(flt):
            sid = self._sid.get(flt)
            return [] if sid is None else [sid]
        sids = self._filter_cache.get(flt)
        if sids is None:
            if len(self._filter_cache) > 256:
                self._filter_cache.clear()
            sids = self._filter_cache[flt] = [i for i, s in enumerate(self._subjects) if subject_matches(flt, s)]
        return sids

    def _matching_seqs(self, flt: str) -> list[int]:
        out: list[int] = []
        sids = self._matching_sids(flt)
        for sid in sids:
            out.extend(self._sseqs[sid].live())
        if len(sids) > 1:
            out.sort()
        return out
