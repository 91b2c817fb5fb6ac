"""Opening a file store: load or rebuild each block's index, cut torn tails,
skip damage, replay the delete log, and build the totals and subject index.
One per ``FileStore`` (``store.recovery``).

Each block is taken from its index file when that still describes the block
file (same size and mtime), otherwise scanned record by record with every
checksum verified; a scanned block gets a fresh index file. After SIGKILL
that means only the block that was being appended to is scanned.

Opening never destroys what it could not read: a torn block tail is copied to
``<n>.blk.torn-<offset>`` before it is cut off (and left in place when that
copy cannot be written), a delete log with a bad header is renamed aside. A
store that cannot write (a full disk, a read-only file system) still opens
with everything it could read: index files it cannot write are skipped (the
block is scanned again next time), and when the delete log or the last block
cannot be opened for writing the store opens read-only (``read_only`` says
why), serves what it has and tries again at the next write.

A new store costs no sync (issue #16 asks that a stream whose CREATE was
answered survive a power cut, with as few syncs as the ordering needs): its
directories, ``last.seq`` and ``deletes.log`` are written without one and
hold only what opening assumes when they are missing (last 0 or the floor's,
the floor 0 or the configured first sequence). JetStream makes the stream
directory durable with meta.json (``JetStream.create_stream``, the commit
point) and calls ``dirs_durable``; the files' bytes and their directory
entries are synced when the first block is made (``_aux_durable``), before
the first record they stand beside can be acknowledged. So a power cut
between two steps of a create leaves, for a store with no block:
``msgs/`` or the two files missing, empty or zeros (never synced) -- taken
as missing, no damage reported, the files made again; a store with a block
has had both synced, so anything wrong with them there is damage and said so.
A block file created just before a cut and never synced is empty: dropped,
nothing lost."""

from __future__ import annotations

import os
import time
from array import array
from itertools import compress
from pathlib import Path

from . import blocks as fb
from .blocks import HEADER_SIZE, SIZE_MASK, Block
from ...persist import FILE_MODE, fsync_dir, make_dirs


def _blank(path) -> bool:
    """Missing, empty or all zeros: a file whose bytes never reached the disk."""
    try:
        return not path.read_bytes().strip(b"\0")
    except FileNotFoundError:
        return False


class Recovery:
    """Opening one file store (``store.recovery``): it fills the store's
    blocks, totals, floor, last sequence and subject index (``store.subjects``)
    from the files, and opens the files appended to (the active block, the
    delete log, ``last.seq``), again whenever a read-only store tries to
    write. It reads and sets the store's state directly (it is the store's
    opening, in a room of its own), and uses the store's damage reports,
    look-ups and index writes.

    It owns what a new store has not synced yet: ``unsynced_dirs`` (the
    directories made without a sync) and ``aux_pending`` (``last.seq`` and
    the delete log), made durable by ``aux_durable`` before the first block
    (see the module docstring)."""

    __slots__ = ("fs", "unsynced_dirs", "aux_pending")

    def __init__(self, store) -> None:
        self.fs = store
        self.unsynced_dirs: list[Path] = []  # made without a sync: synced with the first block
        self.aux_pending = False  # last.seq / deletes.log not synced yet

    def open(self, first_seq: int) -> None:
        fs = self.fs
        self.unsynced_dirs = make_dirs(fs.msgs_dir, sync=False)
        for tmp in fs.msgs_dir.glob("*.tmp"):
            tmp.unlink(missing_ok=True)
        nums = sorted(int(p.stem) for p in fs.msgs_dir.glob("*.blk") if p.stem.isdigit())
        dlog_path = fs.msgs_dir / "deletes.log"
        fs._next_num = (nums[-1] + 1) if nums else 1
        phys_last = 0
        for n in nums:
            blk = Block(n, fs.msgs_dir / f"{n}.blk")
            res = fb.read_index(blk)
            if res is None:
                res = self._scan(blk, phys_last)
                if res is None:
                    continue
                if res.offs:
                    blk.first, blk.offs, blk.lens = res.first, res.offs, res.lens
                    blk.sids = res.sids
                    fs._write_index(blk, res.subjects)
            blk.size = res.end
            if res.offs and res.first <= phys_last:  # overlaps an earlier block: keep the first copy
                fs._warn(f"{blk.path.name}: sequences up to {phys_last} already held by an earlier block; skipped")
                cut = min(phys_last - res.first + 1, len(res.offs))
                res.offs[:cut] = fb.zeros(cut)
            if not res.offs:  # nothing in it (e.g. created just before a crash)
                fs._unlink_block_files(blk)
                continue
            sid_get = fs.subjects.ids.get
            gmap = list(map(sid_get, res.subjects))
            if None in gmap:
                gmap = [fs.subjects.id_for(s) if g is None else g for s, g in zip(res.subjects, gmap)]
            blk.first, blk.offs, blk.lens = res.first, res.offs, res.lens
            if gmap != list(range(len(gmap))):
                blk.sids = array("I", map(gmap.__getitem__, res.sids))
            else:
                blk.sids = res.sids
            if any(blk.offs):
                phys_last = self._last_phys(blk)
            fs._blocks.append(blk)
            fs._firsts.append(blk.first)

        # deletes and the floor
        if not fs._blocks and _blank(dlog_path):
            dlog_path.unlink()  # made by a create whose bytes were not synced yet: holds nothing
        floor, floor_ts, dels = 0, 0, set()
        if dlog_path.exists():
            data = dlog_path.read_bytes()
            floor, floor_ts, dels, good, warns = fb.read_dlog(data, "deletes.log")
            for w in warns:
                fs._warn(w)
            if good == 0 and data:
                aside = dlog_path.with_name(f"deletes.log.corrupt-{time.time_ns()}")
                fs._warn(f"deletes.log kept as {aside.name}")
                os.rename(dlog_path, aside)
            elif good != len(data):
                os.truncate(dlog_path, good)  # a torn record: less than one whole record
            fs._dlog_records = max(0, (good - HEADER_SIZE) // fb.DREC_SIZE)
        if not fs._blocks and floor < first_seq:  # configured (0: not), even 1: reported from the start
            # (a new store's delete log holds it, but may have been cut
            # before its record was synced: the floor never goes below it)
            floor = first_seq
        fs._floor = floor
        if phys_last:
            fs._last = phys_last
            fs._last_ts = fs._read_ts(phys_last)
        if floor - 1 > fs._last:
            fs._last, fs._last_ts = floor - 1, floor_ts
        noted = self._read_last_file()
        if noted is not None and noted[0] > fs._last:
            # records at the tail are gone (a lost tail, writes that failed):
            # their sequences were handed out and stay used
            if phys_last:
                fs._warn(f"messages {max(phys_last, floor - 1) + 1}..{noted[0]} are not in the blocks;"
                         " their sequences stay used")
            fs._last, fs._last_ts = noted

        for blk in fs._blocks:
            offs, lens = blk.offs, blk.lens
            if floor > blk.first:
                cut = min(floor - blk.first, len(offs))
                offs[:cut] = fb.zeros(cut)
                lens[:cut] = fb.zeros(cut)
        for seq in dels:
            blk, i = fs._locate(seq)
            if blk is not None and blk.offs[i]:
                blk.dels[seq] = (blk.offs[i], blk.lens[i])
                blk.offs[i] = 0
                blk.lens[i] = 0
        appends = [ss.seqs.append for ss in fs.subjects.seqs]
        for blk in fs._blocks:
            self._index_block(blk, appends)
        fs.subjects.live = sum(1 for ss in fs.subjects.seqs if ss.seqs)
        fs._first = fs._next_live(0) if fs._msgs else fs._last + 1

        try:
            self.open_for_writes()
        except OSError as e:
            fs.read_only = str(e)
            fs._warn(f"opened read-only: {e}")

    def _read_last_file(self) -> tuple[int, int] | None:
        fs = self.fs
        path = fs.msgs_dir / "last.seq"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            fs._warn(f"last.seq: unreadable ({e}); the last sequence comes from the blocks")
            return None
        noted = fb.read_last(data)
        if noted is None and not fs._blocks and not data.strip(b"\0"):
            return None  # a new store's, cut before it was synced: holds nothing
        if noted is None:
            fs._warn("last.seq: damaged; the last sequence comes from the blocks")
        return noted

    def open_for_writes(self) -> None:
        """Open the delete log (start one, with the floor, when missing), the
        last-sequence file and the last block for appending; raises OSError
        when it cannot."""
        fs = self.fs
        if fs._lfd < 0:
            path = fs.msgs_dir / "last.seq"
            fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
            try:
                if os.fstat(fd).st_size != fb.LAST_FILE_SIZE or fb.read_last(os.pread(fd, 64, 0)) is None:
                    rec = fb.pack_last(fs._last, fs._last_ts)
                    os.pwrite(fd, fb.LAST_HEADER + rec + rec, 0)
                    os.ftruncate(fd, fb.LAST_FILE_SIZE)
                    if fs._blocks:  # (without: synced with the first block, see the docstring)
                        os.fsync(fd)
                        fsync_dir(fs.msgs_dir)
            except OSError:
                os.close(fd)
                raise
            fs._lfd, fs._noted_last = fd, fs._last
        dlog_path = fs.msgs_dir / "deletes.log"
        if fs._dfd < 0:
            if not fs._blocks and not dlog_path.exists():
                # new: written in place, synced with the first block
                recs = fb.DLOG_HEADER
                if fs._floor:
                    recs += fb.pack_drec(fb.D_FLOOR, fs._floor, fs._last_ts)
                fd = os.open(dlog_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, FILE_MODE)
                try:
                    fs._write_all(fd, recs)
                except OSError:
                    os.close(fd)
                    dlog_path.unlink(missing_ok=True)
                    raise
                fs._dfd, fs._dlog_records = fd, (len(recs) - HEADER_SIZE) // fb.DREC_SIZE
            elif not dlog_path.exists() or dlog_path.stat().st_size < HEADER_SIZE:
                fs.reclaim.rewrite_dlog()
            else:
                fs._dfd = os.open(dlog_path, os.O_WRONLY | os.O_APPEND)
        self.aux_pending = not fs._blocks  # (see aux_durable)
        if fs._blocks and fs._active is None:
            last = fs._blocks[-1]
            if last.size < fs.block_size and last.size == last.path.stat().st_size:
                fd = os.open(last.path, os.O_RDWR)
                fs._active, fs._wfd = last, fd
                # (what the crash left in the page cache may not be on disk yet)
                fs.reclaim.alloc_end, fs.reclaim.synced_to = last.size, 0
        fs.read_only = None

    def aux_durable(self) -> None:
        """Before a store's first block: sync ``last.seq``, the delete log
        and the directories made without a sync (see the docstring)."""
        fs = self.fs
        if self.aux_pending:
            if fs._lfd >= 0:
                os.fdatasync(fs._lfd)
            if fs._dfd >= 0:
                os.fdatasync(fs._dfd)
            self.aux_pending = False
        fsync_dir(fs.msgs_dir)
        for d in reversed(self.unsynced_dirs):
            fsync_dir(d.parent)
        self.unsynced_dirs = []

    def dirs_durable(self) -> None:
        """The owner has made the store's directories durable (JetStream's
        create: with meta.json and the streams directory)."""
        self.unsynced_dirs = []

    def _scan(self, blk: Block, after_seq: int) -> fb.ScanResult | None:
        fs = self.fs
        try:
            data = blk.path.read_bytes()
            res = fb.scan_block(data, after_seq, blk.path.name)
        except (OSError, ValueError) as e:
            fs._warn(f"{blk.path.name}: unreadable, ignored: {e}")
            return None
        for w in res.warnings:
            fs._warn(w)
        if res.zeros:  # preallocated space after the records (a crash before it was cut)
            try:
                os.truncate(blk.path, res.end)
            except OSError as e:  # left as it is: not appended to (its size is not res.end), a new block is started
                fs._warn(f"{blk.path.name}: could not cut {res.zeros} preallocated bytes after its records ({e})")
        if res.truncate_at >= 0:
            cut = max(res.truncate_at, HEADER_SIZE)
            res.end = cut
            aside = blk.path.with_name(f"{blk.path.name}.torn-{cut}")
            try:  # the bytes cut off are kept, in case someone can make more of them
                if not aside.exists():
                    with open(os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE), "wb") as f:
                        f.write(data[cut:])
                os.truncate(blk.path, cut)
            except OSError as e:
                aside.unlink(missing_ok=True)
                # left as it is: the block is not appended to (its size on
                # disk is not res.end), new messages go to a new block
                fs._warn(f"{blk.path.name}: could not set aside its torn tail ({e}); left in place")
        if res.offs and data[:HEADER_SIZE] != fb.BLOCK_HEADER:
            try:
                with open(blk.path, "r+b") as f:  # records are fine, the header was not
                    f.write(fb.BLOCK_HEADER)
            except OSError as e:
                fs._warn(f"{blk.path.name}: could not repair its header ({e})")
        return res

    @staticmethod
    def _last_phys(blk: Block) -> int:
        raw = blk.offs.tobytes().rstrip(b"\0")
        return blk.first + (len(raw) + 3) // 4 - 1

    def _index_block(self, blk: Block, appends: list) -> None:
        """Add a freshly loaded block's live records to the totals and the
        subject index (``appends``: each subject's seqs.append; the caller
        counts subjects afterwards)."""
        fs = self.fs
        offs, lens, sids = blk.offs, blk.lens, blk.sids
        n = len(offs)
        blk.live_map = live_map = bytearray(map(bool, offs))
        live = live_map.count(1)
        blk.live = live
        blk.live_bytes = sum(lens) & SIZE_MASK if live else 0
        if not live:
            return
        fs._msgs += live
        fs._bytes += blk.live_bytes
        first = blk.first
        s0 = sids[0]
        seqs_of = fs.subjects.seqs
        if sids.count(s0) == n:
            ss = seqs_of[s0]
            if live == n:
                ss.seqs.extend(range(first, first + n))
            else:
                ss.seqs.extend(compress(range(first, first + n), live_map))
            return
        distinct = set(sids)
        if live == n and len(distinct) <= 16:
            # a few subjects, nothing deleted: one C-speed pass per subject
            for s in sorted(distinct):
                seqs_of[s].seqs.extend(compress(range(first, first + n), map(s.__eq__, sids)))
            return
        rng = range(first, first + n)
        if live == n:
            for seq, s in zip(rng, sids):
                appends[s](seq)
        else:
            for seq, s in zip(compress(rng, live_map), compress(sids, live_map)):
                appends[s](seq)
