"""The message store interface shared by the memory and file stores.

A store holds one stream's messages, keyed by stream sequence. It knows nothing
of limits, retention or consumers: the stream (``stream/stream.py``) decides *what* to
keep and calls ``store_msg`` / ``remove`` / ``purge``; the store only keeps
records, answers look-ups, and does the real server's byte accounting.

Both implementations (``memory.MemoryStore``, ``file.store.FileStore``) must
behave identically for every method here; ``tests/test_store.py`` runs the same
tests over both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator


@dataclass(slots=True)
class StoredMsg:
    seq: int
    subject: str
    hdr: bytes | None  # the raw "NATS/1.0\r\n...\r\n\r\n" block, or None
    data: bytes
    ts: int  # nanoseconds since the epoch, as stored


@dataclass(slots=True)
class StoreState:
    messages: int = 0
    bytes: int = 0
    first_seq: int = 0
    first_ts: int = 0  # ns; 0 means the zero time
    last_seq: int = 0
    last_ts: int = 0
    num_subjects: int = 0
    num_deleted: int = 0


def file_msg_size(subject: str, hdr: bytes | None, data: bytes) -> int:
    """Bytes the real server's file store charges for one message."""
    if hdr:
        return 34 + len(subject) + len(hdr) + len(data)
    return 30 + len(subject) + len(data)


def memory_msg_size(subject: str, hdr: bytes | None, data: bytes) -> int:
    """Bytes the real server's memory store charges for one message."""
    return 16 + len(subject) + (len(hdr) if hdr else 0) + len(data)


def store_each(store: "Store", msgs: list[tuple[str, bytes, int]], done: int = 0, first: int = 0) -> int:
    """store_msg for each of ``msgs[done:]`` (``done`` already stored from
    sequence ``first`` on): store_run's way one by one; returns the first
    one's sequence. An OSError raised says how many of ``msgs`` were stored
    (``stored``) and from which sequence (``first``)."""
    store_msg = store.store_msg
    for i in range(done, len(msgs)):
        subject, data, ts = msgs[i]
        try:
            seq = store_msg(subject, None, data, ts)
        except OSError as e:
            e.stored, e.first = i, first
            raise
        first = first or seq
    return first


class Store:
    """Abstract message store. Sequences start at ``first_seq`` given at
    creation (default 1); an empty store has first_seq == last_seq + 1 once it
    has held anything (the real server's convention)."""

    # -- writing ---------------------------------------------------------
    def store_msg(self, subject: str, hdr: bytes | None, data: bytes, ts: int) -> int:
        """Append a message with the next sequence; returns that sequence.
        For the file store the record is written to the OS before returning."""
        raise NotImplementedError

    def store_run(self, msgs: list[tuple[str, bytes, int]]) -> int:
        """Append messages without headers, (subject, data, ts) each, with
        consecutive sequences, as ``store_msg`` would one by one; returns the
        first one's sequence (the file store packs a run at once). If
        storing one fails, the OSError raised says how many were stored
        before it (``stored``, from sequence ``first``)."""
        return store_each(self, msgs)

    def remove(self, seq: int, rederivable: bool = False) -> bool:
        """Remove one message; False when it is not there."""
        raise NotImplementedError

    def purge(self, subject: str | None = None, seq: int = 0, keep: int = 0) -> int:
        """Remove messages; returns how many. ``subject`` (may hold wildcards)
        limits the purge to matching subjects; ``seq`` removes those strictly
        below seq; ``keep`` keeps the newest ``keep`` (per filter). With no
        arguments removes everything (first_seq becomes last_seq + 1)."""
        raise NotImplementedError

    def compact(self, seq: int) -> int:
        """Remove every message below ``seq`` and set first_seq to at least seq
        (used for a purge with seq, and for interest/workqueue clean-up)."""
        raise NotImplementedError

    # -- reading ---------------------------------------------------------
    def load(self, seq: int) -> StoredMsg | None:
        raise NotImplementedError

    def load_next(self, start_seq: int, subject_filter: str | None = None) -> StoredMsg | None:
        """The first message with seq >= start_seq whose subject matches the
        filter (wildcards allowed; None or '>' means any)."""
        raise NotImplementedError

    def load_batch(self, start_seq: int, subject_filter: str | None, limit: int) -> list[tuple]:
        """Up to ``limit`` messages from ``load_next`` in a row: the next
        matching message at or after start_seq, then the one after it, ...
        As (seq, subject, hdr, data, ts) rows (the delivery hot path reads
        every field once; a row is cheaper to make than a StoredMsg)."""
        out: list[tuple] = []
        load_next = self.load_next
        while len(out) < limit:
            sm = load_next(start_seq, subject_filter)
            if sm is None:
                break
            out.append((sm.seq, sm.subject, sm.hdr, sm.data, sm.ts))
            start_seq = sm.seq + 1
        return out

    def load_last(self, subject_filter: str | None = None) -> StoredMsg | None:
        """The newest message whose subject matches the filter (wildcards allowed)."""
        raise NotImplementedError

    def load_last_many(self, subjects: list[str]) -> list[StoredMsg | None]:
        """``load_last`` for each of a run of subjects (direct gets by
        subject arrive in runs; a store may answer them in one call)."""
        return list(map(self.load_last, subjects))

    def last_seq_for_subject(self, subject: str) -> int:
        """Sequence of the newest message on this literal subject, 0 if none."""
        raise NotImplementedError

    def subject_seqs(self, subject: str) -> list[int]:
        """Sequences held for one literal subject, oldest first."""
        raise NotImplementedError

    def subject_count(self, subject: str) -> int:
        """How many messages are held on one literal subject (cheap: the
        publish path asks on every message under a per-subject limit)."""
        return len(self.subject_seqs(subject))

    def oldest_for_subject(self, subject: str, n: int) -> list[int]:
        """The ``n`` oldest sequences held on one literal subject (the
        per-subject limit removes them without copying the whole list)."""
        return self.subject_seqs(subject)[:n]

    def trim_subject(self, subject: str, keep: int) -> list[int]:
        """Remove the messages on one literal subject beyond its newest
        ``keep`` (the per-subject limit, checked on every publish); returns
        the sequences removed, oldest first."""
        excess = self.subject_count(subject) - keep
        if excess <= 0:
            return []
        return [seq for seq in self.oldest_for_subject(subject, excess) if self.remove(seq)]

    def totals(self) -> tuple[int, int, int]:
        """(messages, bytes, first live seq; the last only meaningful when
        messages > 0): what the limits check on every publish, without
        building a StoreState."""
        st = self.state()
        return st.messages, st.bytes, st.first_seq

    def subjects_state(self, subject_filter: str | None = None) -> dict[str, int]:
        """Message count per subject, for subjects matching the filter."""
        raise NotImplementedError

    def num_pending(self, start_seq: int, subject_filter: str | None = None, last_per_subject: bool = False) -> int:
        """How many stored messages with seq >= start_seq match the filter."""
        raise NotImplementedError

    def seq_for_time(self, ts: int) -> int:
        """The first sequence stored at or after ``ts`` (ns), last_seq + 1
        when there is none (GetSeqFromTime): a binary search, as timestamps
        never go down along the sequence."""
        st = self.state()
        if not st.messages:
            return st.last_seq + 1
        lo, hi, found = st.first_seq, st.last_seq, st.last_seq + 1
        while lo <= hi:
            mid = (lo + hi) // 2
            sm = self.load_next(mid)
            if sm is None or sm.seq > hi:
                hi = mid - 1
            elif sm.ts >= ts:
                found, hi = sm.seq, mid - 1
            else:
                lo = sm.seq + 1
        return found

    def deleted(self) -> list[int]:
        """Interior gaps between first_seq and last_seq."""
        raise NotImplementedError

    def state(self) -> StoreState:
        raise NotImplementedError

    def msg_size(self, subject: str, hdr: bytes | None, data: bytes) -> int:
        raise NotImplementedError

    def iter_seqs(self, start_seq: int = 0) -> Iterator[int]:
        """Stored sequences in ascending order from start_seq."""
        raise NotImplementedError

    def seqs_with_headers(self, start_seq: int = 0) -> list[int]:
        """Stored sequences >= start_seq whose message has a header block,
        ascending. Restart-time rebuilds (dedupe window, TTLs) use it to skip
        messages without headers unread; the file store answers from its
        index without touching the disk. This default loads every message."""
        out = []
        for seq in self.iter_seqs(start_seq):
            sm = self.load(seq)
            if sm is not None and sm.hdr:
                out.append(seq)
        return out

    # -- write-behind (the file store buffers; see file/store.py) ---------------
    write_behind = None  # set by the owner: called with the store when records wait
    on_written = None  # set by the owner: on_written(held replies, error, first lost seq)

    def hold(self, reply: bytes, payload: bytes, stored: bool = True) -> bool:
        """Keep a reply until buffered records are written; False: send it now."""
        return False

    def hold_many(self, answers: list[tuple[bytes, bytes, bool]]) -> bool:
        """``hold`` for each (reply, payload, stored) of a run, in order: all
        kept, or none (False: send them now)."""
        return False

    def sync_owed(self) -> bool:
        """Do held replies wait for a sync (group commit) in ``write_out``?"""
        return False

    def write_out(self, durable: bool = False) -> None:
        """Write buffered records and release the replies held for them
        (``durable``: synced first, as when replies are held, see file/store.py)."""

    def commit(self) -> None:
        """Make every change made so far as durable as the sync policy
        promises a reply (the file store's group commit: synced), releasing
        held replies; for answers that are not held in the store."""
        self.write_out(True)

    # -- lifecycle -------------------------------------------------------
    def flush(self) -> None:
        """Make written records durable as far as the sync policy says."""

    def close(self) -> None:
        """Flush and release files."""

    def delete(self) -> None:
        """Close and remove everything the store keeps on disk."""
