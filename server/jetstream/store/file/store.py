"""The file store: one stream's messages in an append-only log of blocks on
disk, with a compact in-memory index. The room is split by concept:
``blocks`` (on-disk formats, scanning), and three objects the store owns,
``recovery`` (opening), ``reclaim`` (fsync, compaction) and ``subjects``
(the subject index); this module holds the blocks, the totals and the
Store interface itself.

Durability. A record is handed to the OS with ``os.write`` before anything
acknowledges it, so a crash of the server process (SIGKILL) loses nothing
that was acknowledged. Standalone, ``store_msg`` writes each record before it
returns. Under a stream (``write_behind`` set), records stored while one batch
of input is parsed are written together by ``write_out()``, which the server
runs before it next writes to any client; until then the stream's replies
(PubAcks) wait in the store (``hold``) and go out once the write succeeded, or
as errors if it failed (``on_written``). Reads and everything else that
touches the block file write the buffer out first. Deletes wait the same way
and go to the delete log with one write after the records; the floor record
of a purge is written at once.

Group commit (``group_commit``, JetStream's default unless a
``sync_interval`` is configured): a reply waits for every change the store
made before it, and goes out only once that is durable. ``hold`` keeps a
reply whenever anything is owed: records buffered, or written (a read wrote
them out early) but not synced, deletes or a floor a reply must see durable.
The ``write_out`` that releases held replies syncs what is owed first, with
one sync of the block (how, with preallocated space and RWF_DSYNC:
``reclaim``) and, when they hold deletes that are owed, one of the
delete log: every PubAck of one read of a connection shares them. Records
are always durable before deletes or a floor are written after them (an old
revision never vanishes while the one that replaced it is lost). The only
changes no reply waits for are those recovery makes again by itself:
deletes ``rederivable`` (the stream's limits, max_age and TTL expiry, all
enforced again when a stream is recovered). ``commit`` makes everything
owed durable at once, for answers that are not held here (the API's, an
``ack_sync``'s). Everything else is fsynced periodically:
JetStream's sync timer (``jetstream.py``) calls ``flush()`` on every file
store each ``sync_interval`` (1 s by default), which also runs space
reclamation; a busy store also calls it itself every 1024 writes when a
second has passed. With ``sync_always`` (``jetstream { sync_interval: always
}``) every write is fsynced as well.

Memory. Per message the index holds three 4-byte array slots (offset,
charged size, subject id), one live-map byte, and an 8-byte sequence in the
subject index: about 21 bytes. Payloads stay on disk and are read with
``pread`` on demand (the OS page cache is the cache).

Start-up. See ``recovery``: index files for sealed blocks, a scan
(with checksums) for anything else; a torn record at the tail is cut off, a
corrupt one in the middle skipped; both are logged on
``natslab.server.filestore`` and kept in ``store.warnings``.

Not thread-safe: the server drives it from its event loop.
"""
from __future__ import annotations

import logging
import os
import shutil
import zlib
from array import array
from bisect import bisect_left, bisect_right
from itertools import compress
from pathlib import Path
from typing import Iterator

from . import blocks as fb
from .blocks import HDR_FLAG, HEADER_SIZE, SIZE_MASK, Block, rec_len
from ..base import Store, StoredMsg, StoreState, file_msg_size, store_each
from .reclaim import Reclaim
from .recovery import Recovery
from .subjects import ALL as _ALL
from .subjects import SubjectSequences
from ...persist import FILE_MODE
from ....subjects import is_literal

log = logging.getLogger("natslab.server.filestore")

_pack_rec = fb.REC.pack
_pack_crc = fb.CRC.pack
_pack_drec = fb.pack_drec
_D_DELETE = fb.D_DELETE
_DREC_SIZE = fb.DREC_SIZE
_crc32 = zlib.crc32
_MIN_REC = fb.MIN_REC
_REC_UNPACK = fb.REC.unpack_from
_unpack_record = fb.unpack_record
_KIND_MSG = fb.KIND_MSG
_CRC_RESIDUE = fb.CRC_RESIDUE

_MAX_READ_FDS = 4  # per store, besides the active block's and the delete log's
_LINEAR_PROBE = 64
_READ_AHEAD = 64 * 1024  # bytes read at once when loads go in sequence order
_BATCH_READ_MAX = 4 * 1024 * 1024  # load_batch reads a block's run at once up to this
_NO_CHUNK = (None, 0, 0, b"")


class FileStore(Store):
    """A stream's messages under ``directory/msgs/``.

    ``first_seq`` only matters for a new store (an existing one keeps its
    own). ``sync_always`` fsyncs every write; ``group_commit`` every
    ``write_out`` (before the replies held for it leave); otherwise
    ``flush()`` does it.
    ``block_size`` is where a block file is sealed and a new one started.
    ``warnings`` lists damage found and repaired (also logged).

    The store owns three objects, each in its own module: ``recovery``
    (opening the files, and again when a read-only store tries to write),
    ``reclaim`` (how records reach the disk, flushes, space reclaiming) and
    ``subjects`` (the subject index). This class holds the blocks, the
    totals and the Store interface; what the three call per message is
    bound once in ``__init__``, so the hot paths look nothing up through
    them.
    """

    def __init__(self, directory: Path, first_seq: int = 0, sync_always: bool = False, block_size: int = 8 * 1024 * 1024,
                 group_commit: bool = False):
        self.dir = Path(directory)
        self.msgs_dir = self.dir / "msgs"
        self.sync_always = sync_always
        self.group_commit = group_commit
        self.block_size = max(block_size, 4096)
        self.warnings: list[str] = []
        self.read_only: str | None = None  # why the store cannot write (see recovery)
        self._failing: str | None = None  # the write error going on, if any
        self._fail_count = 0
        self._blocks: list[Block] = []
        self._firsts: list[int] = []  # blocks' first seqs, for bisect
        self._active: Block | None = None  # the block being appended to
        self._wfd = -1  # the active block's file (its extents: reclaim.alloc_end, reclaim.synced_to)
        self._next_num = 1
        self._read_fds: dict[int, Block] = {}  # block num -> block with an open rfd (LRU order)
        # totals
        self._msgs = 0
        self._bytes = 0
        self._first = 0  # first live seq when _msgs > 0
        self._last = 0
        self._last_ts = 0
        self._floor = 0  # every seq below is gone
        self._first_ts_cache = (0, 0)
        self._chunk = _NO_CHUNK  # (block, start offset, end offset, bytes) read ahead
        self._last_load = 0
        # delete log
        self._dfd = -1
        # last sequence file (see blocks)
        self._lfd = -1
        self._lslot = 0
        self._noted_last = 0  # what it holds
        self._dlog_records = 0
        self._dirty = False  # written since the last fsync
        self._ops = 0
        self._closed = False
        # write-behind (see the module docstring): set by the owning stream
        self.write_behind = None  # called when the buffer starts filling
        self.on_written = None  # on_written(held replies, OSError or None, first seq written)
        self._wbuf: list[bytes] = []  # records not yet written, in order
        self._wbuf_off = 0  # active block offset of the first of them
        self._wbuf_idx = 0  # its index in the active block's arrays
        self._held: list[tuple[bytes, bytes, bool]] = []  # (reply, payload, for a stored message)
        self._dbuf: list[bytes] = []  # delete log records not yet written
        # group commit (see the module docstring): deletes a reply must see
        # durable, buffered / written to the delete log but not synced yet
        self._dbuf_owed = False
        self._dlog_owed = False
        self.subjects = SubjectSequences()
        self.reclaim = Reclaim(self, prealloc=group_commit or sync_always)
        self.recovery = Recovery(self)
        # bound once for the per-message paths (store, load, remove): the
        # subject index's look-up and sequences (emptied in place, never
        # replaced) and the write of records
        self._sid = self.subjects.ids
        self._sseqs = self.subjects.seqs
        self._block_write = self.reclaim.block_write
        self.recovery.open(first_seq)

    # -- damage reports --------------------------------------------------
    def _warn(self, msg: str) -> None:
        self.warnings.append(msg)
        log.warning("file store %s: %s", self.dir, msg)

    def _writable(self) -> None:
        """A read-only store (see recovery) tries again to open for
        writes; OSError when it still cannot."""
        try:
            self.recovery.open_for_writes()
        except OSError as e:
            raise OSError(e.errno, f"store is read-only: {e.strerror or e}") from None
        log.warning("file store %s: writable again", self.dir)

    def _write_failed(self, what: str, err: OSError) -> None:
        """Report a failed write once while the same error goes on (a full
        disk fails every publish until space returns); ``_write_works`` says
        when it is over."""
        self._fail_count += 1
        if self._failing != str(err):
            self._failing = str(err)
            self._warn(f"{what} failed ({err}); failed writes are answered with the error until it works again")

    def _write_works(self) -> None:
        log.warning("file store %s: writing works again after %d failed writes", self.dir, self._fail_count)
        self._failing, self._fail_count = None, 0

    def _note_last(self, sync: bool = False) -> None:
        """Keep the last sequence handed out in ``last.seq`` (in place: one
        pwrite); ``sync``: fsync it too (sequences whose records failed)."""
        if self._lfd < 0 or self._noted_last == self._last:
            return
        try:
            os.pwrite(self._lfd, fb.pack_last(self._last, self._last_ts), HEADER_SIZE + self._lslot * fb.LAST_SLOT)
            if sync:
                os.fdatasync(self._lfd)
                if self.recovery.aux_pending:  # (sequences used by writes that failed in a new store)
                    self.recovery.aux_durable()
        except OSError as e:
            self._write_failed("last.seq: writing the last sequence", e)
            return
        self._lslot ^= 1
        self._noted_last = self._last

    def _write_index(self, blk: Block, subjects: list[str]) -> None:
        """A block's index is derived data: when it cannot be written (a full
        disk) the block is scanned at the next open instead."""
        try:
            fb.write_index(blk, subjects)
        except OSError as e:
            blk.idx_path.unlink(missing_ok=True)  # an old one would not match the block anyway
            self._warn(f"{blk.idx_path.name}: not written ({e}); the block will be scanned at the next open")

    # -- low-level I/O ---------------------------------------------------
    def _locate(self, seq: int) -> tuple[Block | None, int]:
        i = bisect_right(self._firsts, seq) - 1
        if i < 0:
            return None, 0
        blk = self._blocks[i]
        j = seq - blk.first
        if j >= len(blk.offs):
            return None, 0
        return blk, j

    def _tail_block(self) -> Block | None:
        """The newest block holding a record. Its last record is what tells
        last_seq/last_ts after a restart, so it is never dropped or rewritten
        (only a full reset, which logs the floor first, removes it)."""
        for blk in reversed(self._blocks):
            if blk.offs:
                return blk
        return None

    def _rfd(self, blk: Block) -> int:
        if blk is self._active:
            if self._wbuf:  # (readers write out before they locate a record: a safety net)
                self.write_out()
            return self._wfd  # opened read-write; pread does not move the write position
        fd = blk.rfd
        if fd >= 0:
            # move to the most recent end of the LRU
            self._read_fds[blk.num] = self._read_fds.pop(blk.num)
            return fd
        if len(self._read_fds) >= _MAX_READ_FDS:
            old = self._read_fds.pop(next(iter(self._read_fds)))
            os.close(old.rfd)
            old.rfd = -1
        blk.rfd = os.open(blk.path, os.O_RDONLY)
        self._read_fds[blk.num] = blk
        return blk.rfd

    def _close_rfd(self, blk: Block) -> None:
        if blk.rfd >= 0:
            os.close(blk.rfd)
            blk.rfd = -1
            self._read_fds.pop(blk.num, None)

    def _read_ts(self, seq: int) -> int:
        if self._wbuf:
            self.write_out()
        blk, i = self._locate(seq)
        if blk is None or not blk.offs[i]:
            return 0
        head = os.pread(self._rfd(blk), fb.REC.size, blk.offs[i])
        return fb.REC.unpack(head)[3] if len(head) == fb.REC.size else 0

    def _write_all(self, fd: int, data: bytes) -> None:
        n = os.write(fd, data)
        while n < len(data):  # short writes only happen on odd filesystems or a full disk
            k = os.write(fd, data[n:])
            if k <= 0:
                raise OSError("short write")
            n += k

    def _dlog_delete(self, data: bytes, rederivable: bool = False) -> None:
        """Log deletes: with write-behind, written by the next ``write_out``
        (after the records they may refer to, before any reply leaves);
        unless ``rederivable``, replies wait until they are durable."""
        if self.write_behind is None or self.sync_always:
            self._dlog_append(data, rederivable)
            return
        if self._dfd < 0:
            self._writable()
        if not self._wbuf and not self._dbuf and not self._held:
            self.write_behind(self)
        self._dbuf.append(data)
        if not rederivable:
            self._dbuf_owed = True
        self._dlog_records += len(data) // _DREC_SIZE
        self._dirty = True

    def _dlog_append(self, data: bytes, rederivable: bool = False) -> None:
        if self._dfd < 0:
            self._writable()
        self._write_all(self._dfd, data)
        self._dlog_records += len(data) // fb.DREC_SIZE
        if self.sync_always:
            os.fdatasync(self._dfd)
        else:
            self._dirty = True
            if self.group_commit and not rederivable:
                self._dlog_owed = True

    # -- writing ---------------------------------------------------------
    def msg_size(self, subject: str, hdr: bytes | None, data: bytes) -> int:
        return file_msg_size(subject, hdr, data)

    def _new_block(self, seq: int) -> Block:
        old = self._active
        if old is not None:
            self._seal(old)
        while True:  # (never over a file already there: it may be a block that could not be read)
            num = self._next_num
            blk = Block(num, self.msgs_dir / f"{num}.blk", first=seq)
            try:
                fd = os.open(blk.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, FILE_MODE)
                break
            except FileExistsError:
                self._next_num += 1
        try:
            self._write_all(fd, fb.BLOCK_HEADER)
        except OSError:  # a full disk: no empty block is left behind
            os.close(fd)
            blk.path.unlink(missing_ok=True)
            raise
        self._next_num += 1
        self._wfd = fd
        rc = self.reclaim
        rc.alloc_end, rc.synced_to = HEADER_SIZE, 0  # (the header is synced with the first records)
        rc.prealloc = self.group_commit or self.sync_always
        self._active = blk
        self._blocks.append(blk)
        self._firsts.append(seq)
        self.recovery.aux_durable()  # (the directory's entry for the block, and a new store's files)
        return blk

    def _seal(self, blk: Block) -> None:
        """The active block is full: make it durable and index it."""
        self.write_out()
        if self._active is not blk:
            return  # the write failed and took the whole block with it
        if self._wfd >= 0:
            self.reclaim.trim_prealloc()
            os.fdatasync(self._wfd)
            os.close(self._wfd)
            self._wfd = -1
        self._active = None
        self._write_index(blk, self.subjects.names)

    def store_msg(self, subject: str, hdr: bytes | None, data: bytes, ts: int) -> int:
        # The hot path: one packed record, one write, a few array appends.
        if self.read_only is not None:
            self._writable()
        seq = self._last + 1
        subj = subject.encode()
        sl = len(subj)
        if hdr:
            n = _MIN_REC + sl + len(hdr) + len(data)
            body = b"".join((_pack_rec(n, 1, seq, ts, sl, len(hdr)), subj, hdr, data))
            size = (n + 3) | HDR_FLAG
        else:
            n = _MIN_REC + sl + len(data)
            body = b"".join((_pack_rec(n, 1, seq, ts, sl, 0), subj, data))
            size = n - 1
        rec = body + _pack_crc(_crc32(body))
        blk = self._active
        if (
            blk is None
            or (blk.size + n > self.block_size and blk.size > HEADER_SIZE)
            or blk.first + len(blk.offs) != seq  # compact() moved past the end: no holes at the tail
        ):
            try:
                blk = self._new_block(seq)
            except OSError as e:
                self._write_failed(f"starting a block for message {seq}", e)
                raise
        pos = blk.size
        if self.write_behind is not None and not self.sync_always:  # (always: write and fsync each)
            if not self._wbuf:
                self._wbuf_off = pos
                self._wbuf_idx = len(blk.offs)
                self.write_behind(self)
            self._wbuf.append(rec)
        else:
            try:
                self._block_write(rec, pos, self.sync_always)
            except OSError as e:
                self.reclaim.cut_active(pos)
                self._write_failed(f"{blk.path.name}: writing message {seq}", e)
                raise
            if self._failing is not None:
                self._write_works()
        if not self.sync_always:
            self._dirty = True
        blk.size = pos + n
        sid = self._sid.get(subject)
        if sid is None:
            sid = self.subjects.id_for(subject)
        blk.offs.append(pos)
        blk.live_map.append(1)
        blk.lens.append(size)
        blk.sids.append(sid)
        size &= SIZE_MASK
        blk.live += 1
        blk.live_bytes += size
        seqs = self._sseqs[sid]
        if seqs.head == len(seqs.seqs):
            self.subjects.live += 1
        seqs.seqs.append(seq)
        if not self._msgs:
            self._first = seq
        self._msgs += 1
        self._bytes += size
        self._last = seq
        self._last_ts = ts
        self._ops += 1
        if not self._ops & 0x3FF:
            self.reclaim.maybe_flush()
        return seq

    def store_run(self, msgs: list[tuple[str, bytes, int]]) -> int:
        """store_msg for a run of messages without headers (a read's
        pipelined publishes): their records packed in one loop, buffered for
        the one write of ``write_out``, the index arrays extended once. What
        does not fit the active block (or a store that writes each record
        itself) goes through store_msg."""
        seq0 = self._last + 1
        blk = self._active
        if (self.read_only is not None or self.write_behind is None or self.sync_always or blk is None
                or blk.first + len(blk.offs) != seq0 or not blk.size > HEADER_SIZE):
            return store_each(self, msgs)
        room = self.block_size
        pos = start = blk.size
        seq = seq0
        recs: list[bytes] = []
        offs: list[int] = []
        lens: list[int] = []
        sids: list[int] = []
        put = recs.append
        last = None
        sl = sid = seq_from = 0
        subj = b""
        sid_get = self._sid.get
        for subject, data, ts in msgs:
            if subject is not last:
                if last is not None:
                    self._subject_run(sid, seq_from, seq)
                subj = subject.encode()
                sl = len(subj)
                sid = sid_get(subject)
                if sid is None:
                    sid = self.subjects.id_for(subject)
                last, seq_from = subject, seq
            n = _MIN_REC + sl + len(data)
            if pos + n > room:
                break
            body = b"".join((_pack_rec(n, 1, seq, ts, sl, 0), subj, data))
            put(body)
            put(_pack_crc(_crc32(body)))
            offs.append(pos)
            lens.append(n - 1)
            sids.append(sid)
            pos += n
            seq += 1
        if seq > seq_from:
            self._subject_run(sid, seq_from, seq)
        k = seq - seq0
        if k:
            if not self._wbuf:
                self._wbuf_off = start
                self._wbuf_idx = len(blk.offs)
                self.write_behind(self)
            self._wbuf += recs
            self._dirty = True
            blk.size = pos
            blk.offs.extend(offs)
            blk.live_map += b"\x01" * k
            blk.lens.extend(lens)
            blk.sids.extend(sids)
            size = pos - start - k  # (each record is charged its length less one: store_msg's n - 1)
            blk.live += k
            blk.live_bytes += size
            if not self._msgs:
                self._first = seq0
            self._msgs += k
            self._bytes += size
            self._last = seq - 1
            self._last_ts = msgs[k - 1][2]
            ops = self._ops
            self._ops = ops + k
            if (ops >> 10) != (self._ops >> 10):
                self.reclaim.maybe_flush()
        if k < len(msgs):
            store_each(self, msgs, k, seq0)
        return seq0

    def _subject_run(self, sid: int, lo: int, hi: int) -> None:
        """Sequences lo..hi-1 stored on subject ``sid`` (store_run)."""
        seqs = self._sseqs[sid]
        if seqs.head == len(seqs.seqs):
            self.subjects.live += 1
        seqs.seqs.extend(range(lo, hi))

    def hold_many(self, answers: list[tuple[bytes, bytes, bool]]) -> bool:
        if not self._wbuf:
            if not (self.group_commit and self.write_behind is not None and self._owes()):
                return False
            if not self._held and not self._dbuf:
                self.write_behind(self)
        self._held += answers
        return True

    def hold(self, reply: bytes, payload: bytes, stored: bool = True) -> bool:
        """Keep a reply until what the store changed before it is written,
        and with group commit until that is durable (False, and nothing
        kept, when nothing is owed: send it now). Replies that are not about
        a stored message (``stored`` False: a duplicate, an error) wait too,
        so a publisher gets its answers in order."""
        if not self._wbuf:
            if not (self.group_commit and self.write_behind is not None and self._owes()):
                return False
            if not self._held and not self._dbuf:
                self.write_behind(self)
        self._held.append((reply, payload, stored))
        return True

    def sync_owed(self) -> bool:
        # (only while the records buffered fit the space written ahead of
        # them: past it they are written as they come, so on a full disk
        # what fits is stored, and acknowledged, as before)
        return self.group_commit and bool(self._held) and (
            self._active is None or self._active.size <= self.reclaim.alloc_end)

    def _owes(self) -> bool:
        """Is anything written or buffered that a reply must see durable?"""
        return (self._dbuf_owed or self._dlog_owed
                or (self._wfd >= 0 and self.reclaim.synced_to < self._active.size))

    def commit(self) -> None:
        """Make every change made so far durable now (group commit; the
        other modes as ``write_out``), releasing the replies held."""
        self.write_out(self.group_commit)

    def write_out(self, durable: bool = False) -> None:
        """Write the buffered records with one ``os.write``, then the
        buffered deletes with one write to the delete log; then hand the
        held replies to ``on_written``. With group commit, when replies are
        held (or ``durable``), what they wait for is synced before they go:
        the block before the deletes are written, the delete log after. If
        the records' write fails, they are cut off the file and forgotten
        (their sequences stay used, as gaps) and ``on_written`` gets the
        error to answer with instead."""
        held = self._held
        if held:
            self._held = []  # (a failed write that drops the block writes out again: none are left for it)
        sync = self.group_commit and (durable or bool(held))
        err = None
        if self._wbuf:
            err, first = self._write_records(sync)
        elif sync and self._wfd >= 0 and self.reclaim.synced_to < self._active.size:
            self._sync_block()  # records a read wrote out before the replies came
        if self._dbuf:
            data = b"".join(self._dbuf)
            self._dbuf.clear()
            owed, self._dbuf_owed = self._dbuf_owed, False
            try:
                self._write_all(self._dfd, data)
            except OSError as e:
                self._warn(f"deletes.log: writing {len(data) // fb.DREC_SIZE} deletes failed ({e});"
                           " those messages may come back after a restart")
            else:
                self._dlog_owed |= owed
        if sync and self._dlog_owed:
            try:
                os.fdatasync(self._dfd)
            except OSError as e:
                self._warn(f"deletes.log: sync failed ({e}); deletes may come back after a power cut")
            self._dlog_owed = False
        if (held or err) and self.on_written is not None:
            self.on_written(held, err, first if err else 0)

    def _sync_block(self) -> None:
        try:
            os.fdatasync(self._wfd)
        except OSError as e:
            self._warn(f"{self._active.path.name}: sync failed ({e}); recent messages may be lost on a power cut")
            return
        self.reclaim.synced_to = self._active.size

    def _write_records(self, durable: bool) -> tuple[OSError | None, int]:
        data = b"".join(self._wbuf)
        self._wbuf.clear()
        err, first = None, self._active.first + self._wbuf_idx
        try:
            # group commit: every record of this write-out is on disk before
            # any of the replies held for it (and deliveries) leave, with one
            # sync, and before the deletes they made are written (an old
            # revision never vanishes while the one that replaced it is
            # lost); publishes that asked for no PubAck and deleted nothing
            # are synced by flush()
            self._block_write(data, self._wbuf_off, durable or (self.group_commit and bool(self._dbuf)))
        except OSError as e:
            err = e
            self._forget_unwritten(e)
        else:
            if self._failing is not None:
                self._write_works()
        self._note_last(sync=err is not None)
        return err, first

    def _forget_unwritten(self, err: OSError) -> None:
        blk, off, idx = self._active, self._wbuf_off, self._wbuf_idx
        self.reclaim.cut_active(off)
        lost = blk.first + idx, blk.first + len(blk.offs) - 1
        self._write_failed(f"{blk.path.name}: writing messages {lost[0]}..{lost[1]}", err)
        for i in range(idx, len(blk.offs)):
            if blk.offs[i]:
                self._drop(blk, i, blk.first + i, False)
        del blk.offs[idx:], blk.lens[idx:], blk.sids[idx:], blk.live_map[idx:]
        blk.size = off
        self._chunk = _NO_CHUNK
        if not blk.offs:
            self._remove_block(blk)  # the next message starts a block of its own

    def _drop(self, blk: Block, i: int, seq: int, track: bool) -> None:
        """Forget one live record in memory (the caller has logged why)."""
        off, ln = blk.offs[i], blk.lens[i]
        if track:
            blk.dels[seq] = (off, ln)
        blk.offs[i] = 0
        blk.lens[i] = 0
        blk.live_map[i] = 0
        size = ln & SIZE_MASK
        blk.live -= 1
        blk.live_bytes -= size
        self._msgs -= 1
        self._bytes -= size
        if self._sseqs[blk.sids[i]].remove(seq):
            self.subjects.live -= 1
        if seq == self._first:
            if not self._msgs:
                self._first = self._last + 1
            else:
                p = blk.live_map.find(1, i + 1)  # the next live one is most often in this block
                self._first = blk.first + p if p >= 0 else self._next_live(seq)

    def remove(self, seq: int, rederivable: bool = False) -> bool:
        blk, i = self._locate(seq)
        if blk is None or not blk.offs[i]:
            return False
        self._dlog_delete(_pack_drec(_D_DELETE, seq), rederivable)
        self._drop(blk, i, seq, True)
        if not blk.live and blk is not self._tail_block():
            self._remove_block(blk)
        self._ops += 1
        if not self._ops & 0x3FF:
            self.reclaim.maybe_flush()
        return True

    def trim_subject(self, subject: str, keep: int) -> list[int]:
        sid = self._sid.get(subject)
        if sid is None:
            return []
        ss = self._sseqs[sid]
        head = ss.head
        excess = len(ss.seqs) - head - keep
        if excess <= 0:
            return []
        # (the per-subject limit: made again when the stream is recovered)
        if excess == 1:  # a KV put on a key at its history limit
            seq = ss.seqs[head]
            return [seq] if self.remove(seq, True) else []
        seqs = ss.seqs[head : head + excess].tolist()
        remove = self.remove
        return [seq for seq in seqs if remove(seq, True)]

    def _remove_many(self, seqs: list[int]) -> int:
        if not seqs:
            return 0
        self._dlog_delete(b"".join(fb.pack_drec(fb.D_DELETE, s) for s in seqs))
        emptied = []
        for seq in seqs:
            blk, i = self._locate(seq)
            if blk is not None and blk.offs[i]:
                self._drop(blk, i, seq, True)
                if blk.live == 0 and blk is not self._tail_block() and blk not in emptied:
                    emptied.append(blk)
        for blk in emptied:
            self._remove_block(blk)
        return len(seqs)

    def purge(self, subject: str | None = None, seq: int = 0, keep: int = 0) -> int:
        if not self._last and not self._floor:
            self._set_floor(1)  # as nats-server: a purged, never-used store reports first_seq 1
        if seq == 1:
            return 0
        if subject in _ALL:
            if not keep and not seq:
                return self._purge_all()
            if seq > 1:
                return self.compact(seq)
            if keep >= self._msgs:
                return 0
            # keep the newest `keep`: everything before the keep-th newest goes
            target = self._nth_newest(keep)
            return self.compact(target)
        seqs = self.subjects.matching_seqs(subject)
        if keep:
            if keep >= len(seqs):
                return 0
            seqs = seqs[: len(seqs) - keep]
        if seq:
            seqs = seqs[: bisect_left(seqs, seq)]
        return self._remove_many(seqs)

    def _nth_newest(self, n: int) -> int:
        for blk in reversed(self._blocks):
            if blk.live >= n:
                live = list(compress(range(blk.first, blk.first + len(blk.offs)), blk.live_map))
                return live[-n]
            n -= blk.live
        return self._first

    def _set_floor(self, floor: int) -> None:
        self._floor = floor
        if self.group_commit:
            # the records below the floor's last sequence are durable before
            # it is written: a floor never outlives the message it kept
            self.write_out()
            if self._wfd >= 0 and self.reclaim.synced_to < self._active.size:
                self._sync_block()
        self._dlog_append(fb.pack_drec(fb.D_FLOOR, floor, self._last_ts))

    def _purge_all(self) -> int:
        n = self._msgs
        if not self._blocks and self._floor == self._last + 1:
            return 0
        self._set_floor(self._last + 1)
        self._reset()
        return n

    def _reset(self) -> None:
        """Everything is gone: drop every block and the subject index."""
        self.write_out()  # what was acknowledged was stored, then purged
        self._chunk = _NO_CHUNK
        if self._wfd >= 0:
            os.close(self._wfd)
            self._wfd = -1
        self._active = None
        for blk in self._blocks:
            self._close_rfd(blk)
            self._unlink_block_files(blk)
        self._blocks.clear()
        self._firsts.clear()
        self.subjects.clear()
        self._msgs = 0
        self._bytes = 0
        self._first = self._last + 1
        self.reclaim.rewrite_dlog()

    def compact(self, seq: int) -> int:
        if not self._msgs:
            if seq > self._last + 1:
                self._last = seq - 1
                self._set_floor(seq)
                if self._blocks:
                    self._reset()
                self._first = seq
            return 0
        if seq <= self._first:
            return 0
        if seq > self._last:
            n = self._msgs
            self._last = seq - 1
            self._set_floor(seq)
            self._reset()
            return n
        self._set_floor(seq)
        before = self._msgs
        touched: set[int] = set()  # subjects that lose messages
        while self._blocks and self._blocks[0].last < seq:
            blk = self._blocks[0]
            if blk.live:
                touched.update(blk.sids)
            self._msgs -= blk.live
            self._bytes -= blk.live_bytes
            self._remove_block(blk)
        blk, i = self._locate(seq)
        if blk is not None and blk.first < seq:
            if blk.dels:  # the floor covers these now
                blk.dels = {s: v for s, v in blk.dels.items() if s >= seq}
            offs, lens, live_map = blk.offs, blk.lens, blk.live_map
            for j in range(max(0, self._first - blk.first), seq - blk.first):
                if live_map[j]:
                    live_map[j] = 0
                    touched.add(blk.sids[j])
                    size = lens[j] & SIZE_MASK
                    blk.live -= 1
                    blk.live_bytes -= size
                    self._msgs -= 1
                    self._bytes -= size
                    offs[j] = 0
                    lens[j] = 0
        for sid in touched:
            ss = self._sseqs[sid]
            if ss.count() and ss.seqs[ss.head] < seq:
                ss.drop_below(seq)
                if not ss.count():
                    self.subjects.live -= 1
        self._first = self._next_live(seq)
        return before - self._msgs

    def _remove_block(self, blk: Block) -> None:
        self._chunk = _NO_CHUNK
        i = self._blocks.index(blk)
        del self._blocks[i]
        del self._firsts[i]
        if blk is self._active:
            self.write_out()
            os.close(self._wfd)
            self._wfd = -1
            self._active = None
        self._close_rfd(blk)
        self._unlink_block_files(blk)

    @staticmethod
    def _unlink_block_files(blk: Block) -> None:
        blk.path.unlink(missing_ok=True)
        blk.idx_path.unlink(missing_ok=True)

    # -- reading ---------------------------------------------------------
    def load(self, seq: int) -> StoredMsg | None:
        if self._wbuf:
            self.write_out()
        blk, i = self._locate(seq)
        if blk is None:
            return None
        off = blk.offs[i]
        if not off:
            return None
        n = rec_len(blk.lens[i])
        c_blk, c_off, c_end, chunk = self._chunk
        if c_blk is blk and c_off <= off and off + n <= c_end:
            buf = chunk[off - c_off : off - c_off + n]
        elif abs(seq - self._last_load) == 1 and n < _READ_AHEAD:
            # reading in order (a consumer catching up, a rebuild): one pread
            # serves the next few hundred loads
            c_off = max(off + n - _READ_AHEAD, HEADER_SIZE) if seq < self._last_load else off
            # (never past the records: the active block's preallocated zeros
            # would be served for records written there later)
            chunk = os.pread(self._rfd(blk), min(_READ_AHEAD, blk.size - c_off), c_off)
            self._chunk = (blk, c_off, c_off + len(chunk), chunk)
            buf = chunk[off - c_off : off - c_off + n]
        else:
            buf = os.pread(self._rfd(blk), n, off)
        self._last_load = seq
        sm = _unpack_record(buf, seq)
        if sm is not None:
            return sm
        self._warn(f"{blk.path.name}: record for seq {seq} at offset {off} is corrupt; message lost")
        self._dlog_append(_pack_drec(_D_DELETE, seq))
        self._drop(blk, i, seq, True)
        return None

    def _next_live(self, start: int) -> int:
        """First live seq >= start, 0 if none."""
        k = max(bisect_right(self._firsts, start) - 1, 0)
        for blk in self._blocks[k:]:
            if not blk.live:
                continue
            p = blk.live_map.find(1, max(start - blk.first, 0))
            if p >= 0:
                return blk.first + p
        return 0

    @staticmethod
    def _live_from(blk: Block, j: int) -> int:
        """Live slots of blk at index >= j."""
        live_map = blk.live_map
        n = len(live_map)
        if j >= n:
            return 0
        p = live_map.find(1)
        if blk.live == n - p:  # holes only at the front (the common case): no counting
            return n - max(j, p)
        if j * 2 > n:
            return live_map.count(1, j)
        return blk.live - live_map.count(1, 0, j)

    def _prev_live(self, start: int) -> int:
        """Last live seq <= start, 0 if none."""
        k = bisect_right(self._firsts, start) - 1
        for blk in reversed(self._blocks[: k + 1]):
            if not blk.live:
                continue
            p = blk.live_map.rfind(1, 0, max(start - blk.first + 1, 0))
            if p >= 0:
                return blk.first + p
        return 0

    def load_next(self, start_seq: int, subject_filter: str | None = None) -> StoredMsg | None:
        while True:
            s = max(start_seq, self._first)
            if not self._msgs or s > self._last:
                return None
            if subject_filter in _ALL:
                seq = self._next_live(s)
            elif is_literal(subject_filter):
                sid = self._sid.get(subject_filter)
                seq = self._sseqs[sid].first_ge(s) if sid is not None else 0
            else:
                seq = self._next_matching(s, subject_filter)
            if not seq:
                return None
            sm = self.load(seq)
            if sm is not None:
                return sm
            start_seq = seq + 1  # that record was corrupt: look further

    def load_batch(self, start_seq: int, subject_filter: str | None, limit: int) -> list[tuple]:
        if subject_filter not in _ALL:
            if not is_literal(subject_filter):
                return super().load_batch(start_seq, subject_filter, limit)
            # one subject: its own sequence list, in order
            sid = self._sid.get(subject_filter)
            if sid is None:
                return []
            ss = self._sseqs[sid]
            seqs = ss.seqs
            i = bisect_left(seqs, start_seq, ss.head)
            want = seqs[i : i + limit]
            out = []
            k = 0
            while k < len(want):  # a run of them per block, read at once
                blk, j = self._locate(want[k])
                end = bisect_left(want, blk.first + len(blk.offs), k)
                first = blk.first
                out += self._load_many(blk, [s - first for s in want[k:end]])
                k = end
            return out
        # every message: walk the blocks' live maps instead of a search per message
        out = []
        s = max(start_seq, self._first)
        while len(out) < limit and s <= self._last:
            seq = self._next_live(s)
            if not seq:
                break
            blk, j = self._locate(seq)
            live_map = blk.live_map
            end = min(len(live_map), j + limit - len(out))
            out += self._load_many(blk, list(compress(range(j, end), live_map[j:end])))
            s = blk.first + end
        return out

    def _load_many(self, blk: Block, idxs: list[int]) -> list[tuple]:
        """``load`` for live records of one block (ascending indexes), read
        with one pread, as (seq, subject, hdr, data, ts) rows; anything odd
        goes through ``load`` itself."""
        if not idxs:
            return []
        if self._wbuf:
            self.write_out()
        offs, lens = blk.offs, blk.lens
        start = offs[idxs[0]]
        end = offs[idxs[-1]] + rec_len(lens[idxs[-1]])
        first = blk.first
        if not start or not start < end <= start + _BATCH_READ_MAX:
            return [(sm.seq, sm.subject, sm.hdr, sm.data, sm.ts)
                    for sm in map(self.load, [first + j for j in idxs]) if sm is not None]
        buf = os.pread(self._rfd(blk), end - start, start)
        i0, k = idxs[0], len(idxs)
        if k > 1 and idxs[-1] - i0 == k - 1:
            # one record length, back to back (no deleted message among
            # them): maybe a uniform run, cut up at once
            lens_run = lens[i0 : i0 + k]
            n = rec_len(lens_run[0])
            if lens_run.count(lens_run[0]) == k and offs[i0 : i0 + k] == array("I", range(start, end, n)):
                out = fb.unpack_uniform_run(buf, n, first + i0)
                if out is not None:
                    self._last_load = first + idxs[-1]
                    return out
        view = memoryview(buf)
        size = len(buf)
        out = []
        subj_b = subj_s = None  # a run of one subject decodes it once
        for j in idxs:
            seq = first + j
            off = offs[j] - start
            n = rec_len(lens[j])
            if _MIN_REC <= n and 0 <= off and off + n <= size:
                reclen, kind, rseq, ts, sl, hl = _REC_UNPACK(buf, off)
                # (a small record's checksum is faster over a copy than a view)
                if (reclen == n and rseq == seq and kind == _KIND_MSG and _MIN_REC + sl + hl <= reclen
                        and _crc32(buf[off : off + n] if n < 4096 else view[off : off + n]) == _CRC_RESIDUE):
                    p = off + 27 + sl
                    sb = buf[off + 27 : p]
                    if sb != subj_b:
                        subj_b, subj_s = sb, sb.decode()
                    out.append((seq, subj_s, buf[p : p + hl] if hl else None, buf[p + hl : off + reclen - 4], ts))
                    continue
            sm = self.load(seq)  # damaged: load reports it and drops the record
            if sm is not None:
                out.append((sm.seq, sm.subject, sm.hdr, sm.data, sm.ts))
        self._last_load = first + idxs[-1]
        return out

    def _next_matching(self, s: int, flt: str) -> int:
        sids = self.subjects.matching(flt)
        if len(sids) > _LINEAR_PROBE:
            # many subjects match: the next few messages are likely to
            wanted = set(sids)
            seq = s
            for _ in range(_LINEAR_PROBE):
                seq = self._next_live(seq)
                if not seq:
                    return 0
                blk, i = self._locate(seq)
                if blk.sids[i] in wanted:
                    return seq
                seq += 1
        best = 0
        for sid in sids:
            f = self._sseqs[sid].first_ge(s)
            if f and (not best or f < best):
                best = f
        return best

    def load_last(self, subject_filter: str | None = None) -> StoredMsg | None:
        sid = self._sid.get(subject_filter)
        if sid is not None and sid not in self.subjects.wild:  # one stored (literal) subject: a KV get
            return self.load_last_many([subject_filter])[0]
        if not self._msgs:
            return None
        if subject_filter in _ALL:
            seq = self._prev_live(self._last)
        elif is_literal(subject_filter):  # a KV get: one subject
            seq = self.last_seq_for_subject(subject_filter)
        else:
            seq = max((self._sseqs[sid].last() for sid in self.subjects.matching(subject_filter)), default=0)
        return self.load(seq) if seq else None

    def load_last_many(self, subjects: list[str]) -> list[StoredMsg | None]:
        # the one path for the newest message of a stored subject (load_last
        # comes here for it): KV gets, one loop per run of them
        get, sseqs, wild, load = self._sid.get, self._sseqs, self.subjects.wild, self.load
        out = []
        append = out.append
        for subject in subjects:
            sid = get(subject)
            if sid is None or sid in wild:
                append(self.load_last(subject))
                continue
            ss = sseqs[sid]
            seqs = ss.seqs
            append(load(seqs[-1]) if len(seqs) > ss.head else None)
        return out

    def last_seq_for_subject(self, subject: str) -> int:
        sid = self._sid.get(subject)
        return self._sseqs[sid].last() if sid is not None else 0

    def subject_seqs(self, subject: str) -> list[int]:
        sid = self._sid.get(subject)
        return self._sseqs[sid].live() if sid is not None else []

    def subject_count(self, subject: str) -> int:
        sid = self._sid.get(subject)
        return self._sseqs[sid].count() if sid is not None else 0

    def oldest_for_subject(self, subject: str, n: int) -> list[int]:
        sid = self._sid.get(subject)
        if sid is None:
            return []
        ss = self._sseqs[sid]
        return ss.seqs[ss.head:ss.head + n].tolist()

    def totals(self) -> tuple[int, int, int]:
        return self._msgs, self._bytes, self._first

    def subjects_state(self, subject_filter: str | None = None) -> dict[str, int]:
        out = {}
        for sid in self.subjects.matching(subject_filter):
            n = self._sseqs[sid].count()
            if n:
                out[self.subjects.names[sid]] = n
        return out

    def num_pending(self, start_seq: int, subject_filter: str | None = None, last_per_subject: bool = False) -> int:
        if not self._msgs or start_seq > self._last:
            return 0
        if last_per_subject:
            start = max(start_seq, 1)  # last() is 0 for a subject with nothing left
            return sum(1 for sid in self.subjects.matching(subject_filter) if self._sseqs[sid].last() >= start)
        if subject_filter in _ALL:
            if start_seq <= self._first:
                return self._msgs
            k = bisect_right(self._firsts, start_seq) - 1
            n = 0
            for blk in self._blocks[k:]:
                j = start_seq - blk.first
                if j <= 0:
                    n += blk.live
                elif blk.live:
                    n += self._live_from(blk, j)
            return n
        return sum(self._sseqs[sid].count_ge(start_seq) for sid in self.subjects.matching(subject_filter))

    def deleted(self) -> list[int]:
        if not self._msgs:
            return []
        out: list[int] = []
        expect = self._first
        for blk in self._blocks:
            if not blk.live:
                continue
            n = len(blk.offs)
            if blk.live == n and blk.first >= expect:
                out.extend(range(expect, blk.first))
                expect = blk.first + n
                continue
            for seq in compress(range(blk.first, blk.first + n), blk.live_map):
                if seq > expect:
                    out.extend(range(expect, seq))
                expect = seq + 1
        out.extend(range(expect, self._last + 1))
        return out

    def state(self) -> StoreState:
        first_ts = 0
        if self._msgs:
            first = self._first
            cached_seq, cached_ts = self._first_ts_cache
            if cached_seq == first:
                first_ts = cached_ts
            else:
                first_ts = self._read_ts(first)
                self._first_ts_cache = (first, first_ts)
            num_deleted = self._last - first + 1 - self._msgs
        else:
            first = self._last + 1 if self._last or self._floor else 0
            num_deleted = 0
        return StoreState(
            messages=self._msgs,
            bytes=self._bytes,
            first_seq=first,
            first_ts=first_ts,
            last_seq=self._last,
            last_ts=self._last_ts,
            num_subjects=self.subjects.live,
            num_deleted=num_deleted,
        )

    def iter_seqs(self, start_seq: int = 0) -> Iterator[int]:
        k = max(bisect_right(self._firsts, start_seq) - 1, 0)
        for blk in list(self._blocks[k:]):
            if not blk.live:
                continue
            j = max(start_seq - blk.first, 0)
            yield from compress(range(blk.first + j, blk.first + len(blk.offs)), blk.live_map[j:])

    def seqs_with_headers(self, start_seq: int = 0) -> list[int]:
        out: list[int] = []
        k = max(bisect_right(self._firsts, start_seq) - 1, 0)
        has_hdr = HDR_FLAG.__le__  # deleted entries have lens 0
        for blk in self._blocks[k:]:
            if not blk.live:
                continue
            j = max(start_seq - blk.first, 0)
            out.extend(compress(range(blk.first + j, blk.first + len(blk.lens)), map(has_hdr, blk.lens[j:])))
        return out

    # -- durability and space reclamation (reclaim.py) ----------------------
    def flush(self) -> None:
        """fsync what was written since the last call, then reclaim space
        (``Reclaim.flush``); JetStream's sync timer calls it."""
        self.reclaim.flush()

    def dirs_durable(self) -> None:
        """The owner has made the store's directories durable (JetStream's
        create: with meta.json and the streams directory)."""
        self.recovery.dirs_durable()

    # -- lifecycle -------------------------------------------------------
    def close(self) -> None:
        if self._closed:
            return
        self.flush()
        if self._active is not None:
            self.reclaim.trim_prealloc()
            if self._active.size > HEADER_SIZE:
                self._write_index(self._active, self.subjects.names)
        self._note_last(sync=True)
        if self._lfd >= 0:
            os.close(self._lfd)
            self._lfd = -1
        if self._wfd >= 0:
            os.close(self._wfd)
            self._wfd = -1
        if self._dfd >= 0:
            os.close(self._dfd)
            self._dfd = -1
        # last sequence file (see blocks)
        self._lfd = -1
        self._lslot = 0
        self._noted_last = 0  # what it holds
        for blk in list(self._read_fds.values()):
            self._close_rfd(blk)
        self._closed = True

    def delete(self) -> None:
        """Close and remove the store's files (``msgs/``), and the directory
        itself when nothing else is left in it."""
        self.close()
        shutil.rmtree(self.msgs_dir, ignore_errors=True)
        try:
            self.dir.rmdir()
        except OSError:
            pass
