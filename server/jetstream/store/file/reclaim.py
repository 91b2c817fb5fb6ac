"""Durability and space reclamation for the file store: how records reach
the disk, periodic syncs, dropping emptied blocks, rewriting mostly-deleted
ones, and shrinking the delete log. Mixed into ``FileStore``.

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
    _dsync = _RWF_DSYNC  # 0 once the kernel or file system refused it

    # -- writing records -------------------------------------------------------
    def _block_write(self, data: bytes, off: int, durable: bool) -> None:
        """Write records at ``off`` of the active block; ``durable``: on
        disk before this returns. Raises OSError (the caller cuts the file
        back to ``off``)."""
        fd = self._wfd
        end = off + len(data)
        if not durable:
            self._pwrite_all(fd, data, off)
        elif end <= self._alloc_end and self._synced_to >= off and self._dsync:
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
                    self._prealloc = False
                    fill = 0
                    os.ftruncate(fd, max(self._alloc_end, off))
                    self._pwrite_all(fd, data, off)
            else:
                self._pwrite_all(fd, data, off)
            os.fdatasync(fd)
            end += fill
        if end > self._alloc_end:
            self._alloc_end = end
        if durable:
            self._synced_to = off + len(data)

    def _prealloc_fill(self, end: int) -> int:
        """Zeros to write after records that end at ``end`` (0: none)."""
        if not self._prealloc or end < self._alloc_end:
            return 0
        want = end + min(max(_PREALLOC_MIN, end), _PREALLOC_MAX)
        want = min((want + 4095) & ~4095, self.block_size)
        return max(0, want - end)

    @staticmethod
    def _pwrite_all(fd: int, data: bytes, off: int) -> None:
        n = os.pwrite(fd, data, off)
        while n < len(data):  # short writes only happen on odd filesystems or a full disk
            k = os.pwrite(fd, data[n:], off + n)
            if k <= 0:
                raise OSError("short write to the message block")
            n += k

    def _cut_active(self, off: int) -> None:
        """A write at ``off`` failed: the active block's file ends there."""
        os.ftruncate(self._wfd, off)
        self._alloc_end = off
        self._synced_to = min(self._synced_to, off)

    def _trim_prealloc(self) -> None:
        """Cut the zeros after the active block's records (sealing, closing)."""
        blk = self._active
        if self._wfd >= 0 and blk is not None and self._alloc_end > blk.size:
            os.ftruncate(self._wfd, blk.size)
            self._alloc_end = blk.size

    # -- syncing and reclaiming ------------------------------------------------
    def _maybe_flush(self) -> None:
        if time.monotonic() - self._last_flush >= FLUSH_INTERVAL:
            self.flush()

    def flush(self) -> None:
        """fsync what was written since the last call, then reclaim space:
        drop emptied blocks, rewrite mostly-deleted ones, shrink the delete
        log. JetStream's sync timer calls this every ``sync_interval``; a busy
        store also calls it itself every 1024 writes/removes when a second has
        passed, but only the timer covers a store that has gone quiet."""
        if self._closed:
            return
        self.write_out()
        self._last_flush = time.monotonic()
        if self._dirty:
            if self._wfd >= 0:
                os.fdatasync(self._wfd)
                self._synced_to = self._active.size
            if self._dfd >= 0:
                os.fdatasync(self._dfd)
                self._dlog_owed = False
            self._dirty = False
            self._note_last(sync=True)
        if self.read_only is not None:
            return  # nothing to reclaim with: a rewrite needs space
        try:
            self._reclaim()
        except OSError as e:  # a full disk: the old files are whole; said once until it works again
            if self._reclaim_error != str(e):
                self._reclaim_error = str(e)
                self._warn(f"reclaiming space failed ({e}); will try again")
        else:
            self._reclaim_error = None

    def _reclaim(self, max_rewrites: int = 2) -> None:
        if not self._msgs and self._blocks:
            self._set_floor(self._last + 1)
            self._reset()
            return
        # The block being appended to and the newest block holding a record
        # (see _tail_block) are left alone.
        tail = self._tail_block()
        for blk in self._blocks[:-1]:
            if blk is tail:
                continue
            if not blk.live:
                self._remove_block(blk)
            elif max_rewrites and blk.dead * 2 > blk.size and blk.dead > min(65536, self.block_size // 4):
                self._rewrite_block(blk)
                max_rewrites -= 1
        live_dels = sum(len(b.dels) for b in self._blocks)
        if self._dlog_records > 2 * live_dels + 4096:
            self._rewrite_dlog()

    def _rewrite_block(self, blk: Block) -> None:
        """Copy a sealed block's live records to a new file and swap it in
        (write, fsync, rename: a crash leaves the old block or the new one)."""
        data = os.pread(self._rfd(blk), blk.size, 0)
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
        self._close_rfd(blk)
        self._chunk = (None, 0, 0, b"")  # offsets change
        os.replace(tmp, blk.path)
        fsync_dir(self.msgs_dir)
        k = self._blocks.index(blk)
        blk.first, blk.offs, blk.lens, blk.sids = first, offs, lens, sids
        blk.live_map = bytearray(map(bool, offs))
        self._firsts[k] = first
        blk.size = pos
        blk.dels.clear()
        self._write_index(blk, self._subjects)

    def _rewrite_dlog(self) -> None:
        """Replace the delete log with the floor and the deletes still needed
        (those of records still in some block file); deletes waiting to be
        logged are in it already."""
        self._dbuf.clear()
        recs = [fb.DLOG_HEADER]
        if self._floor:
            recs.append(fb.pack_drec(fb.D_FLOOR, self._floor, self._last_ts))
        n = len(recs) - 1
        for blk in self._blocks:
            for seq in sorted(blk.dels):
                if seq >= self._floor:
                    recs.append(fb.pack_drec(fb.D_DELETE, seq))
                    n += 1
        path = self.msgs_dir / "deletes.log"
        tmp = path.with_suffix(".log.tmp")
        write_tmp(tmp, b"".join(recs))  # raises with the old log whole
        if self._dfd >= 0:
            os.close(self._dfd)
        os.replace(tmp, path)
        fsync_dir(self.msgs_dir)
        self._dfd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self._dbuf_owed = self._dlog_owed = False  # (all in the new log, durable)
        self._dlog_records = n
