"""Durability and space reclamation for the file store: periodic fsync,
dropping emptied blocks, rewriting mostly-deleted ones, and shrinking the
delete log. Mixed into ``FileStore``.

Every rewrite is crash-safe: the new file is written beside the old one,
fsynced, renamed over it, and the directory fsynced, so a crash leaves either
the old file or the new one (stray ``*.tmp`` files are removed at open)."""

from __future__ import annotations

import os
import time
from array import array

from . import filestore_blocks as fb
from .filestore_blocks import HEADER_SIZE, Block, rec_len
from .persist import fsync_dir, write_tmp

FLUSH_INTERVAL = 1.0  # seconds between fsyncs when the store drives them itself


class Reclaim:
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
                os.fsync(self._wfd)
            if self._dfd >= 0:
                os.fsync(self._dfd)
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
        self._dlog_records = n
