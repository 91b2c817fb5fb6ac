"""Durability and space reclamation for the file store: how records reach
the disk, periodic syncs, dropping emptied blocks, rewriting mostly-deleted
ones, and shrinking the delete log. One per ``FileStore`` (``store.reclaim``).

Writes that must be on disk before they return (group commit: the write-out
whose PubAcks wait; ``sync_always``: every record) cost one sync each. On
ext4 a sync that has to commit metadata as well (the file grew) costs about
40% more than one that only writes data (measured on virtio: append +
fdatasync 197 us, overwrite of written space + fdatasync 141 us, O_DSYNC /
RWF_DSYNC overwrite 113-135 us). So in those modes the active block is
preallocated: the write that passes the end of the file's allocated space
carries zeros after its records (64 KiB to 1 MiB, growing with the block)
and is synced with ``fdatasync``; the writes after it land in that space,
each one ``pwritev(RWF_DSYNC)``: one system call that writes and syncs just
its range, with no metadata to commit. RWF_DSYNC is used only when
everything before the write is already durable (else ``fdatasync``), so the
durable part of a block is always a prefix of it. A preallocated tail is
cut off when the block is sealed or the store closed; after a crash,
opening cuts it (``blocks.scan_block``: zeros after the last record
are the clean end of the block, not damage). ``tests/powercut.py`` models
exactly these calls (fsync, fdatasync, RWF_DSYNC; it refuses O_SYNC/O_DSYNC).

Every rewrite is crash-safe: the new file is written beside the old one,
fsynced, renamed over it, and the directory fsynced, so a crash leaves either
the old file or the new one (stray ``*.tmp`` files are removed at open)."""

from __future__ import annotations

import errno
import os
import time
from array import array

from . import blocks as fb
from .blocks import HEADER_SIZE, Block, rec_len
from ...persist import fsync_dir, write_tmp

FLUSH_INTERVAL = 1.0  # seconds between fsyncs when the store drives them itself
_PREALLOC_MIN = 64 * 1024  # zeros written ahead of the records (see the module docstring)
_PREALLOC_MAX = 1024 * 1024
_RWF_DSYNC = getattr(os, "RWF_DSYNC", 0)


class Reclaim:
    """How one file store's records reach the disk and how its space is
    taken back (``store.reclaim``).

    It owns the active block's file extents: ``alloc_end`` (where the
    file's written space ends: the records, then preallocated zeros) and
    ``synced_to`` (how far it is known durable), ``prealloc`` (whether the
    next write that grows the file carries zeros ahead), and when the store
    last flushed itself. It reads the store's files and write state (the
    active block and its fd, the delete log, ``_dirty``) and its blocks;
    it rewrites blocks and the delete log in place of the store's and asks
    the store to write out, note its last sequence, drop a block or reset
    (``flush``). The store calls ``block_write`` for every write of records
    (bound once as the store's ``_block_write``)."""

    __slots__ = ("fs", "alloc_end", "synced_to", "prealloc", "last_flush", "error")
    _dsync = _RWF_DSYNC  # 0 once the kernel or file system refused it (for every store)

    def __init__(self, store, prealloc: bool) -> None:
        self.fs = store
        self.alloc_end = 0
        self.synced_to = 0
        self.prealloc = prealloc  # (modes that sync per write: see the module docstring)
        self.last_flush = time.monotonic()
        self.error: str | None = None  # the reclaiming error said last, while it goes on

    # -- writing records -------------------------------------------------------
    def block_write(self, data: bytes, off: int, durable: bool) -> None:
        """Write records at ``off`` of the active block; ``durable``: on
        disk before this returns. Raises OSError (the caller cuts the file
        back to ``off``)."""
        fs = self.fs
        fd = fs._wfd
        end = off + len(data)
        if not durable:
            self._pwrite_all(fd, data, off)
        elif end <= self.alloc_end and self.synced_to >= off and self._dsync:
            # inside written, durable space: nothing but the data to commit
            try:
                n = os.pwritev(fd, (data,), off, self._dsync)
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                Reclaim._dsync = 0  # not on this kernel: pwrite + fdatasync from now on
                n = 0
            if n < len(data):  # (short, or refused)
                self._pwrite_all(fd, data[n:], off + n)
                os.fdatasync(fd)
        else:
            fill = self._prealloc_fill(end)
            if fill:
                try:
                    self._pwrite_all(fd, data + bytes(fill), off)
                except OSError:  # a full disk: no zeros ahead until the next block
                    self.prealloc = False
                    fill = 0
                    os.ftruncate(fd, max(self.alloc_end, off))
                    self._pwrite_all(fd, data, off)
            else:
                self._pwrite_all(fd, data, off)
            os.fdatasync(fd)
            end += fill
        if end > self.alloc_end:
            self.alloc_end = end
        if durable:
            self.synced_to = off + len(data)

    def _prealloc_fill(self, end: int) -> int:
        """Zeros to write after records that end at ``end`` (0: none)."""
        fs = self.fs
        if not self.prealloc or end < self.alloc_end:
            return 0
        want = end + min(max(_PREALLOC_MIN, end), _PREALLOC_MAX)
        want = min((want + 4095) & ~4095, fs.block_size)
        return max(0, want - end)

    @staticmethod
    def _pwrite_all(fd: int, data: bytes, off: int) -> None:
        n = os.pwrite(fd, data, off)
        while n < len(data):  # short writes only happen on odd filesystems or a full disk
            k = os.pwrite(fd, data[n:], off + n)
            if k <= 0:
                raise OSError("short write to the message block")
            n += k

    def cut_active(self, off: int) -> None:
        """A write at ``off`` failed: the active block's file ends there."""
        fs = self.fs
        os.ftruncate(fs._wfd, off)
        self.alloc_end = off
        self.synced_to = min(self.synced_to, off)

    def trim_prealloc(self) -> None:
        """Cut the zeros after the active block's records (sealing, closing)."""
        fs = self.fs
        blk = fs._active
        if fs._wfd >= 0 and blk is not None and self.alloc_end > blk.size:
            os.ftruncate(fs._wfd, blk.size)
            self.alloc_end = blk.size

    # -- syncing and reclaiming ------------------------------------------------
    def maybe_flush(self) -> None:
        if time.monotonic() - self.last_flush >= FLUSH_INTERVAL:
            self.flush()

    def flush(self) -> None:
        """fsync what was written since the last call, then reclaim space:
        drop emptied blocks, rewrite mostly-deleted ones, shrink the delete
        log. JetStream's sync timer calls this every ``sync_interval``; a busy
        store also calls it itself every 1024 writes/removes when a second has
        passed, but only the timer covers a store that has gone quiet."""
        fs = self.fs
        if fs._closed:
            return
        fs.write_out()
        self.last_flush = time.monotonic()
        if fs._dirty:
            if fs._wfd >= 0:
                os.fdatasync(fs._wfd)
                self.synced_to = fs._active.size
            if fs._dfd >= 0:
                os.fdatasync(fs._dfd)
                fs._dlog_owed = False
            fs._dirty = False
            fs._note_last(sync=True)
        if fs.read_only is not None:
            return  # nothing to reclaim with: a rewrite needs space
        try:
            self._reclaim()
        except OSError as e:  # a full disk: the old files are whole; said once until it works again
            if self.error != str(e):
                self.error = str(e)
                fs._warn(f"reclaiming space failed ({e}); will try again")
        else:
            self.error = None

    def _reclaim(self, max_rewrites: int = 2) -> None:
        fs = self.fs
        if not fs._msgs and fs._blocks:
            fs._set_floor(fs._last + 1)
            fs._reset()
            return
        # The block being appended to and the newest block holding a record
        # (see _tail_block) are left alone.
        tail = fs._tail_block()
        for blk in fs._blocks[:-1]:
            if blk is tail:
                continue
            if not blk.live:
                fs._remove_block(blk)
            elif max_rewrites and blk.dead * 2 > blk.size and blk.dead > min(65536, fs.block_size // 4):
                self._rewrite_block(blk)
                max_rewrites -= 1
        live_dels = sum(len(b.dels) for b in fs._blocks)
        if fs._dlog_records > 2 * live_dels + 4096:
            self.rewrite_dlog()

    def _rewrite_block(self, blk: Block) -> None:
        """Copy a sealed block's live records to a new file and swap it in
        (write, fsync, rename: a crash leaves the old block or the new one)."""
        fs = self.fs
        data = os.pread(fs._rfd(blk), blk.size, 0)
        parts = [fb.BLOCK_HEADER]
        pos = HEADER_SIZE
        offs, lens, sids = array("I"), array("I"), array("I")
        first = 0
        for j, o in enumerate(blk.offs):
            if not o:
                if first:
                    offs.append(0)
                    lens.append(0)
                    sids.append(0)
                continue
            if not first:
                first = blk.first + j
            n = rec_len(blk.lens[j])
            parts.append(data[o : o + n])
            offs.append(pos)
            lens.append(blk.lens[j])
            sids.append(blk.sids[j])
            pos += n
        # trailing holes carry no information
        while offs and not offs[-1]:
            offs.pop()
            lens.pop()
            sids.pop()
        tmp = blk.path.with_suffix(".blk.tmp")
        write_tmp(tmp, b"".join(parts))  # raises with the old block whole
        fs._close_rfd(blk)
        fs._chunk = (None, 0, 0, b"")  # offsets change
        os.replace(tmp, blk.path)
        fsync_dir(fs.msgs_dir)
        k = fs._blocks.index(blk)
        blk.first, blk.offs, blk.lens, blk.sids = first, offs, lens, sids
        blk.live_map = bytearray(map(bool, offs))
        fs._firsts[k] = first
        blk.size = pos
        blk.dels.clear()
        fs._write_index(blk, fs.subjects.names)

    def rewrite_dlog(self) -> None:
        """Replace the delete log with the floor and the deletes still needed
        (those of records still in some block file); deletes waiting to be
        logged are in it already."""
        fs = self.fs
        fs._dbuf.clear()
        recs = [fb.DLOG_HEADER]
        if fs._floor:
            recs.append(fb.pack_drec(fb.D_FLOOR, fs._floor, fs._last_ts))
        n = len(recs) - 1
        for blk in fs._blocks:
            for seq in sorted(blk.dels):
                if seq >= fs._floor:
                    recs.append(fb.pack_drec(fb.D_DELETE, seq))
                    n += 1
        path = fs.msgs_dir / "deletes.log"
        tmp = path.with_suffix(".log.tmp")
        write_tmp(tmp, b"".join(recs))  # raises with the old log whole
        if fs._dfd >= 0:
            os.close(fs._dfd)
        os.replace(tmp, path)
        fsync_dir(fs.msgs_dir)
        fs._dfd = os.open(path, os.O_WRONLY | os.O_APPEND)
        fs._dbuf_owed = fs._dlog_owed = False  # (all in the new log, durable)
        fs._dlog_records = n
