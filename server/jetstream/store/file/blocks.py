"""The file store's on-disk formats: message blocks, block index files and the
delete log. ``store.py`` holds the store logic; this module only knows how
bytes are laid out, how to scan them back and how to survive damage.

Message block ``msgs/<n>.blk`` (append-only)::

    file header  8 bytes   b"NLMB" + version (1) + 3 reserved zero bytes
    record       27-byte header  <I reclen><B kind=1><Q seq><q ts ns><H subject len><I hdr len>
                 subject, header block, payload
                 <I crc32 of everything above in the record>

``reclen`` counts the whole record (header, body and crc). Zeros after
the last record are space preallocated for the next ones (see
``reclaim``), the clean end of the block; a record never starts
with a zero length. Sequences rise
strictly within a block and from block to block. In memory a record is found
through per-block arrays indexed by ``seq - block.first``: offset (0 = no
record), the real server's charged size (``file_msg_size``) with bit 31 set
when the message has headers, and a subject id. The on-disk record length
follows from the charged size: ``size + 1`` without headers, ``size - 3``
with headers (the record header is 27 + 4 crc bytes, the real server charges
30 or 34).

Block index ``msgs/<n>.idx`` (derived data, written through ``persist``, so
checksummed and atomic): the physical contents of a block (deleted records
included) so opening does not re-read every record. It is trusted only when
the block file's size and mtime match what it recorded; otherwise the block is
scanned.

Delete log ``msgs/deletes.log`` (append-only)::

    file header  8 bytes   b"NLDL" + version (1) + 3 zero bytes
    record       <B kind><Q seq><q ts><I crc32 of the 17 bytes before>

kind 1 deletes one sequence; kind 2 moves the floor: every sequence below
``seq`` is gone (purge / compact), and ``ts`` is the last timestamp at that
moment, so an emptied store still knows its last_seq/last_ts after restart.
The log is rewritten (atomically) when it is mostly stale.

Last sequence ``msgs/last.seq`` (rewritten in place, never grows)::

    file header  8 bytes   b"NLLS" + version (1) + 3 zero bytes
    two slots    <Q seq><q ts><I crc32 of the 16 bytes before>, each 20 bytes

The last sequence handed out and its timestamp, kept apart from the records
(as nats-server keeps it) so that a lost block tail, or publishes whose
records could not be written, never make the last sequence go back and a
sequence be handed out twice. Updates overwrite the older slot in place (no
new space is needed, so it works on a full disk); a torn update leaves the
other slot.
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from zlib import crc32

from ...persist import CorruptStateError, read_bytes_checked, write_bytes_atomic
from ..base import StoredMsg

BLOCK_MAGIC = b"NLMB"
BLOCK_VERSION = 1
BLOCK_HEADER = BLOCK_MAGIC + bytes([BLOCK_VERSION, 0, 0, 0])
HEADER_SIZE = len(BLOCK_HEADER)

REC = struct.Struct("<IBQqHI")
CRC = struct.Struct("<I")
_REC_UNPACK = REC.unpack_from
_CRC_PACK = CRC.pack
KIND_MSG = 1
MIN_REC = REC.size + CRC.size  # 31
CRC_RESIDUE = 0x2144DF1C  # crc32(x + crc32(x) as <I), for every x
HDR_FLAG = 1 << 31
SIZE_MASK = HDR_FLAG - 1

DLOG_MAGIC = b"NLDL"
DLOG_VERSION = 1
DLOG_HEADER = DLOG_MAGIC + bytes([DLOG_VERSION, 0, 0, 0])
DREC = struct.Struct("<BQq")
_DREC_PACK = DREC.pack
DREC_SIZE = DREC.size + CRC.size  # 21
D_DELETE = 1
D_FLOOR = 2

IDX_VERSION = 1
_IDX_HEAD = struct.Struct("<4sBQqQQI")  # magic, version, size, mtime_ns, first, count, subjects bytes
_LITTLE = sys.byteorder == "little"


def pack_record(seq: int, ts: int, subj: bytes, hdr: bytes, data: bytes) -> bytes:
    body = b"".join((REC.pack(MIN_REC + len(subj) + len(hdr) + len(data), KIND_MSG, seq, ts, len(subj), len(hdr)), subj, hdr, data))
    return body + CRC.pack(crc32(body))


def rec_len(sizeval: int) -> int:
    """On-disk record length from a lens-array entry."""
    return (sizeval & SIZE_MASK) - 3 if sizeval & HDR_FLAG else sizeval + 1


def unpack_record(buf: bytes, seq: int) -> StoredMsg | None:
    """The message in one whole record read from disk, or None when its
    checksum, length or sequence is wrong. This runs per message loaded."""
    n = len(buf)
    if n < MIN_REC:
        return None
    reclen, kind, rseq, ts, sl, hl = _REC_UNPACK(buf)
    if reclen != n or rseq != seq or kind != KIND_MSG or MIN_REC + sl + hl > reclen or crc32(buf) != CRC_RESIDUE:
        return None
    p = 27 + sl
    return StoredMsg(seq, buf[27:p].decode(), buf[p : p + hl] if hl else None, buf[p + hl : reclen - 4], ts)


def unpack_uniform_run(buf: bytes, n: int, first_seq: int) -> list[tuple] | None:
    """The (seq, subject, hdr, data, ts) rows of the records of ``n`` bytes
    each that fill ``buf`` back to back, from ``first_seq`` on in sequence
    order, when they are whole and share the first one's subject and header
    lengths (a run of one subject's messages of one size, what a stream
    mostly holds); None when anything does not check out (unpack_record then
    finds which).

    Such a run is cut up by one struct in one C loop, and its checksums are
    checked at once: the crc32 of k whole records of n bytes back to back is
    a constant (``run_crc``), as crc32 is affine in its input and each whole
    record leaves CRC_RESIDUE. Damage within one record changes it exactly
    when it changes that record's own crc32 (what follows multiplies the
    error by a power of x, which the CRC-32 polynomial does not divide);
    damage in several records at once could cancel out, with a 2^-32
    chance, as any one CRC-32 can miss damage."""
    k = len(buf) // n
    if k * n != len(buf) or n < MIN_REC:
        return None
    reclen, kind, seq, ts, sl, hl = _REC_UNPACK(buf)
    dl = n - MIN_REC - sl - hl
    if dl < 0 or crc32(buf) != run_crc(n, k):
        return None
    key = (sl, hl, dl)
    st = _RUN_STRUCTS.get(key)
    if st is None:
        if len(_RUN_STRUCTS) >= 256:
            _RUN_STRUCTS.clear()
        st = _RUN_STRUCTS[key] = struct.Struct(f"<IBQqHI{sl}s{hl}s{dl}s4x")
    reclens, kinds, seqs, tss, sls, hls, subjects, hdrs, datas = zip(*st.iter_unpack(buf))
    if (reclens.count(n) != k or kinds.count(KIND_MSG) != k or sls.count(sl) != k or hls.count(hl) != k
            or seqs != tuple(range(first_seq, first_seq + k))):
        return None
    names = {sb: sb.decode() for sb in set(subjects)}  # one str per subject
    return list(zip(seqs, map(names.__getitem__, subjects), hdrs if hl else repeat(None, k), datas, tss))


def run_crc(n: int, k: int) -> int:
    """crc32 of k whole records of n bytes each, back to back: each record
    (crc32 0 -> CRC_RESIDUE on its own) carries the crc32 so far through its
    n bytes as n zero bytes would (crc32's linearity), so the value depends
    on n and k only. Kept per n for the run lengths asked so far."""
    vals = _RUN_CRCS.get(n)
    if vals is None:
        if len(_RUN_CRCS) >= 64:
            _RUN_CRCS.clear()
        vals = _RUN_CRCS[n] = [0]
    if len(vals) <= k:
        z = bytes(n)
        step = crc32(z) ^ CRC_RESIDUE
        e = vals[-1]
        while len(vals) <= k:
            e = crc32(z, e) ^ step
            vals.append(e)
    return vals[k]


_RUN_STRUCTS: dict[tuple, struct.Struct] = {}  # per (subject, header, payload length)
_RUN_CRCS: dict[int, list[int]] = {}  # per record length: run_crc for k = 0, 1, 2, ...


def zeros(n: int) -> array:
    return array("I", bytes(4 * n))


@dataclass(slots=True)
class Block:
    """One block file and the in-memory index of its records."""

    num: int
    path: Path
    first: int = 0  # seq of index 0 in the arrays
    offs: array = field(default_factory=lambda: array("I"))
    lens: array = field(default_factory=lambda: array("I"))
    sids: array = field(default_factory=lambda: array("I"))
    # 1 per live slot: counting and finding live messages with bytearray's
    # C-speed count/find/rfind instead of Python loops over the arrays
    live_map: bytearray = field(default_factory=bytearray)
    size: int = HEADER_SIZE  # bytes in the file
    live: int = 0
    live_bytes: int = 0  # charged bytes of live messages
    # seq -> (offset, lens entry) of records deleted one by one (not by the
    # floor) that are still in the file: needed to write the physical index
    # and to rewrite the delete log.
    dels: dict = field(default_factory=dict)
    rfd: int = -1

    @property
    def last(self) -> int:
        return self.first + len(self.offs) - 1

    @property
    def dead(self) -> int:
        """On-disk bytes of records no longer live, for compaction to weigh:
        derived from the live totals, so removing a message has nothing to
        count (approximate: it takes a live record to be its charged size + 1
        bytes long, 4 more than one with headers is)."""
        return max(0, self.size - HEADER_SIZE - self.live_bytes - self.live)

    @property
    def idx_path(self) -> Path:
        return self.path.with_suffix(".idx")


@dataclass(slots=True)
class ScanResult:
    first: int = 0
    offs: array = field(default_factory=lambda: array("I"))
    lens: array = field(default_factory=lambda: array("I"))
    sids: array = field(default_factory=lambda: array("I"))
    subjects: list = field(default_factory=list)
    end: int = HEADER_SIZE  # end of the last good record
    truncate_at: int = -1  # where a torn / unreadable tail starts, -1 if none
    zeros: int = 0  # bytes of zeros after the last record (preallocated space)
    warnings: list = field(default_factory=list)


def _record_ok(buf: bytes, mv: memoryview, pos: int, end: int, after_seq: int) -> int:
    """Length of a valid record at pos, or 0."""
    if end - pos < MIN_REC:
        return 0
    reclen, kind, seq, _ts, sl, hl = REC.unpack_from(buf, pos)
    if kind != KIND_MSG or seq <= after_seq or reclen > end - pos or MIN_REC + sl + hl > reclen:
        return 0
    if crc32(mv[pos : pos + reclen - 4]) != CRC.unpack_from(buf, pos + reclen - 4)[0]:
        return 0
    return reclen


def _resync(buf: bytes, mv: memoryview, pos: int, after_seq: int) -> int:
    """Offset of the next valid record at or after pos, or -1. Slow (tries
    every position whose kind byte fits), but it only runs on damage."""
    end = len(buf)
    kind = bytes([KIND_MSG])
    while pos <= end - MIN_REC:
        p = buf.find(kind, pos + 4)
        if p < 0:
            return -1
        pos = p - 4
        if _record_ok(buf, mv, pos, end, after_seq):
            return pos
        pos += 1
    return -1


def scan_block(buf: bytes, after_seq: int, name: str) -> ScanResult:
    """Rebuild a block's index from its bytes. Records at or below after_seq
    (already held by an earlier block) are skipped. Damage is skipped over and
    reported; a damaged tail is marked for truncation."""
    res = ScanResult()
    if not buf:  # created, then a power cut before anything in it was synced: nothing lost
        return res
    if buf[:4] != BLOCK_MAGIC:
        res.warnings.append(f"{name}: bad block header; scanning for records anyway")
    elif buf[4] != BLOCK_VERSION:
        raise ValueError(f"{name}: unsupported block version {buf[4]}")
    mv = memoryview(buf)
    end = len(buf)
    pos = HEADER_SIZE
    offs, lens, sids, subjects = res.offs, res.lens, res.sids, res.subjects
    sid_of: dict[bytes, int] = {}
    unpack = REC.unpack_from
    startswith = buf.startswith
    last = after_seq
    first = 0
    prev_subj, prev_sid, prev_sl = b"", -1, -1
    oappend, lappend, sappend = offs.append, lens.append, sids.append
    while pos < end:
        # CRC-32 over a record including its own little-endian crc always
        # gives the same residue, which saves unpacking the stored crc.
        if end - pos >= MIN_REC:
            reclen, kind, seq, _ts, sl, hl = unpack(buf, pos)
            ok = (
                kind == KIND_MSG
                and seq > last
                and MIN_REC + sl + hl <= reclen <= end - pos
                and crc32(mv[pos : pos + reclen]) == CRC_RESIDUE
            )
        else:
            ok = False
        if not ok:
            if buf.count(0, pos) == end - pos:  # preallocated space: the end of the records
                res.zeros = end - pos
                break
            nxt = _resync(buf, mv, pos + 1, last)
            if nxt < 0:
                res.truncate_at = pos
                res.warnings.append(f"{name}: torn or unreadable record at offset {pos}; {end - pos} bytes cut off")
                break
            res.warnings.append(f"{name}: corrupt record at offset {pos}; {nxt - pos} bytes skipped")
            pos = nxt
            continue
        if seq != last + 1:
            if not first:
                first = seq
            else:
                gap = zeros(seq - first - len(offs))
                offs.extend(gap)
                lens.extend(gap)
                sids.extend(gap)
        elif not first:
            first = seq
        if sl == prev_sl and startswith(prev_subj, pos + 27):
            sid = prev_sid
        else:
            subj = buf[pos + 27 : pos + 27 + sl]
            sid = sid_of.get(subj)
            if sid is None:
                sid = sid_of[subj] = len(subjects)
                subjects.append(subj.decode())
            prev_subj, prev_sid, prev_sl = subj, sid, sl
        oappend(pos)
        lappend((reclen + 3) | HDR_FLAG if hl else reclen - 1)
        sappend(sid)
        last = seq
        pos += reclen
    res.end = pos if res.truncate_at < 0 else res.truncate_at
    res.first = first
    return res


# -- block index files ----------------------------------------------------


def _native(a: array) -> bytes:
    if _LITTLE:
        return a.tobytes()
    b = array(a.typecode, a)
    b.byteswap()
    return b.tobytes()


def _from_le(data: bytes | memoryview, typecode: str = "I") -> array:
    a = array(typecode)
    a.frombytes(data)
    if not _LITTLE:
        a.byteswap()
    return a


def write_index(blk: Block, subjects: list[str]) -> None:
    """Write blk's physical index; ``subjects`` maps blk.sids to names.
    Records deleted one by one are put back (they are still in the file)."""
    offs, lens = blk.offs, blk.lens
    if blk.dels:
        offs, lens = array("I", offs), array("I", lens)
        for seq, (o, ln) in blk.dels.items():
            i = seq - blk.first
            if 0 <= i < len(offs):
                offs[i], lens[i] = o, ln
    # Local subject ids keep the file independent of the store's global table.
    used = sorted(set(blk.sids))
    names = [subjects[s] for s in used]
    if used == list(range(len(used))):
        lsids = blk.sids
    else:
        local = {s: i for i, s in enumerate(used)}
        lsids = array("I", map(local.__getitem__, blk.sids))
    st = os.stat(blk.path)
    subj_blob = "\n".join(names).encode()
    head = _IDX_HEAD.pack(b"NLIX", IDX_VERSION, st.st_size, st.st_mtime_ns, blk.first, len(offs), len(subj_blob))
    body = b"".join((head, subj_blob, _native(offs), _native(lens), _native(lsids)))
    write_bytes_atomic(blk.idx_path, body, sync=False)


def read_index(blk: Block) -> ScanResult | None:
    """The block's index when it exists and still describes the block file."""
    try:
        body = read_bytes_checked(blk.idx_path)
        st = os.stat(blk.path)
    except (OSError, CorruptStateError):
        return None
    if len(body) < _IDX_HEAD.size:
        return None
    magic, version, size, mtime, first, count, sblen = _IDX_HEAD.unpack_from(body)
    if magic != b"NLIX" or version != IDX_VERSION or size != st.st_size or mtime != st.st_mtime_ns:
        return None
    p = _IDX_HEAD.size
    if len(body) != p + sblen + 12 * count:
        return None
    mv = memoryview(body)
    res = ScanResult(first=first, end=size)
    blob = bytes(mv[p : p + sblen]).decode()
    res.subjects = blob.split("\n") if blob else []
    p += sblen
    res.offs = _from_le(mv[p : p + 4 * count])
    res.lens = _from_le(mv[p + 4 * count : p + 8 * count])
    res.sids = _from_le(mv[p + 8 * count : p + 12 * count])
    if count and not res.subjects:
        return None
    return res


# -- delete log -----------------------------------------------------------


def pack_drec(kind: int, seq: int, ts: int = 0) -> bytes:
    """One delete log record (this runs per removed message)."""
    body = _DREC_PACK(kind, seq, ts)
    return body + _CRC_PACK(crc32(body))


def read_dlog(data: bytes, name: str) -> tuple[int, int, set[int], int, list[str]]:
    """(floor, floor_ts, deleted seqs, end of last good record, warnings)."""
    warnings: list[str] = []
    floor = floor_ts = 0
    dels: set[int] = set()
    if len(data) < HEADER_SIZE or data[:4] != DLOG_MAGIC:
        if data:
            warnings.append(f"{name}: bad header; delete log ignored")
        return 0, 0, dels, 0, warnings
    if data[4] != DLOG_VERSION:
        warnings.append(f"{name}: unsupported version {data[4]}; delete log ignored")
        return 0, 0, dels, 0, warnings
    pos, end, bad = HEADER_SIZE, len(data), 0
    while pos + DREC_SIZE <= end:
        kind, seq, ts = DREC.unpack_from(data, pos)
        if crc32(data[pos : pos + 17]) != CRC.unpack_from(data, pos + 17)[0]:
            bad += 1
        elif kind == D_DELETE:
            dels.add(seq)
        elif kind == D_FLOOR:
            if seq >= floor:
                floor, floor_ts = seq, ts
        else:
            bad += 1
        pos += DREC_SIZE
    if bad:
        warnings.append(f"{name}: {bad} corrupt delete record(s) skipped")
    if pos != end:
        warnings.append(f"{name}: torn record at the tail ({end - pos} bytes) cut off")
    return floor, floor_ts, dels, pos, warnings


# -- last sequence ----------------------------------------------------------

LAST_MAGIC = b"NLLS"
LAST_VERSION = 1
LAST_HEADER = LAST_MAGIC + bytes([LAST_VERSION, 0, 0, 0])
LAST = struct.Struct("<Qq")
LAST_SLOT = LAST.size + CRC.size  # 20
LAST_FILE_SIZE = HEADER_SIZE + 2 * LAST_SLOT


def pack_last(seq: int, ts: int) -> bytes:
    body = LAST.pack(seq, ts)
    return body + CRC.pack(crc32(body))


def read_last(data: bytes) -> tuple[int, int] | None:
    """(seq, ts) of the newer valid slot, None when neither is valid."""
    if data[:HEADER_SIZE] != LAST_HEADER:
        return None
    best = None
    for pos in (HEADER_SIZE, HEADER_SIZE + LAST_SLOT):
        rec = data[pos : pos + LAST_SLOT]
        if len(rec) == LAST_SLOT and crc32(rec[:16]) == CRC.unpack_from(rec, 16)[0]:
            seq, ts = LAST.unpack_from(rec)
            if best is None or seq > best[0]:
                best = (seq, ts)
    return best

