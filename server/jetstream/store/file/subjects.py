"""The file store's subject index: for every subject its live sequences in
a sorted array, so filtered look-ups (next message for a filter, pending
counts, last per subject) are a bisect per matching subject rather than a
scan of the stream. One per ``FileStore`` (``store.subjects``); subjects get
small integer ids that the per-block ``sids`` arrays hold."""

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
    """The file store's subjects: their ids, names and live sequences. Not
    the core's subscription index (subjects.SubjectIndex).

    It owns ``names`` (id -> subject), ``ids`` (subject -> id), ``seqs``
    (id -> ``SubjectSeqs``), ``live`` (how many subjects hold a message),
    ``wild`` (the ids of stored subjects with wildcard tokens) and the
    cache of which ids a wildcard filter matches. It reads nothing of the
    store: the store appends and removes sequences in ``seqs`` as it stores
    and drops records (and keeps ``live`` with them), and asks which ids
    a filter matches. The containers are emptied in place, never replaced,
    so the store binds ``ids`` and ``seqs`` once for its hot paths."""

    __slots__ = ("names", "ids", "seqs", "live", "wild", "_filter_cache")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.ids: dict[str, int] = {}
        self.seqs: list[SubjectSeqs] = []
        self.live = 0  # subjects with at least one message
        self.wild: set[int] = set()  # stored subjects that hold wildcard tokens (rarely any)
        self._filter_cache: dict[str, list[int]] = {}  # wildcard filter -> matching subject ids

    def id_for(self, subject: str) -> int:
        """The subject's id, given it now if it has none."""
        sid = self.ids.get(subject)
        if sid is None:
            sid = self.ids[subject] = len(self.names)
            self.names.append(subject)
            self.seqs.append(SubjectSeqs())
            self._filter_cache.clear()
            if not is_literal(subject):  # decided once here, not per read (load_last)
                self.wild.add(sid)
        return sid

    def matching(self, flt: str | None) -> list[int]:
        """The ids of the subjects a filter matches (every subject with a
        message for no filter)."""
        if flt in ALL:
            return [i for i, ss in enumerate(self.seqs) if ss.count()]
        if is_literal(flt):
            sid = self.ids.get(flt)
            return [] if sid is None else [sid]
        sids = self._filter_cache.get(flt)
        if sids is None:
            if len(self._filter_cache) > 256:
                self._filter_cache.clear()
            sids = self._filter_cache[flt] = [i for i, s in enumerate(self.names) if subject_matches(flt, s)]
        return sids

    def matching_seqs(self, flt: str) -> list[int]:
        """The live sequences of every subject a filter matches, in order."""
        out: list[int] = []
        sids = self.matching(flt)
        for sid in sids:
            out.extend(self.seqs[sid].live())
        if len(sids) > 1:
            out.sort()
        return out

    def clear(self) -> None:
        """Every message is gone (the store's reset): forget every subject."""
        self.names.clear()
        self.ids.clear()
        self.wild.clear()
        self.seqs.clear()
        self._filter_cache.clear()
        self.live = 0
