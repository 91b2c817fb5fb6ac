"""A consumer's delivery state on disk: cheap enough to write before every
``ack_sync`` is answered.

The state (next sequences, ack floors, pending acks, redelivery counts) is
rewritten whole, alternately into two files ``state.0`` and ``state.1`` in
the consumer's directory, in place (``pwrite``, then ``ftruncate`` when it
shrank): no new file and no rename per write, which on ext4 costs
milliseconds (a rename over a file flushes its data). Each write carries a
generation number and a checksum; the reader takes the valid file with the
higher generation, so a torn write (a power cut) leaves the previous state.

Between two such writes, acks that must survive a crash (those answered to
an ``ack_sync``) are appended to ``acks.log`` as ``<Q generation><Q stream
seq><Q consumer seq><I crc32>`` records: when nothing was delivered since
the last state was written, that is all an answered ack needs (a few bytes
instead of the whole pending map). The reader returns, with the state, the
acks logged against its generation, to be applied again in order; records of
other generations are stale and ignored.

Power cuts (``sync``). A write is durable once ``sync`` returns: it syncs
the state file written since the last sync, then the ack log (in that
order: acks logged against a generation count only when that state is on
disk too). Until then a write may reach the disk torn, or not at all, so
it never goes over the slot holding the last durable state: writes between
two syncs all go to the other slot, and a torn one leaves the durable state
to be read. The ack log is emptied only once a state newer than all its
records is durable (emptying it earlier could outrun the state write and
lose acks that were answered).

    header  <4s magic "NLCS"><B version 2><3x><Q generation><I json length>
            <I pending count><I redelivered count><I crc32 of the header before it and the body>

The checksum covers the header too: a write torn after its first few bytes
(the new generation) over an older state of the same length would otherwise
read back as that older body under the new generation, outranking the
durable state (version 1, of earlier builds, checked only the body; its
files are still read).
    body    small JSON object (sseq, dseq, ack floors, lss), then pending as
            <q sseq><q dseq><q ts> triples and redelivered as <q sseq><q count> pairs

Use::

    slots = StateSlots(consumer_dir)
    slots.write(state_dict, sync=False)     # OSError when it cannot
    slots.log_acks([(sseq, dseq), ...])     # acks since that state
    slots.sync()                            # both durable
    state = slots.read()                    # None: no state written yet; CorruptStateError: both damaged
    state["acks"]                           # [(sseq, dseq), ...] logged since it
"""

from __future__ import annotations

import json
import os
import struct
import sys
from array import array
from itertools import chain
from pathlib import Path
from zlib import crc32

from ..persist import FILE_MODE, CorruptStateError, fsync_dir, make_dirs

MAGIC = b"NLCS"
VERSION = 2
_HEAD = struct.Struct("<4sB3xQIIII")
_CRC_AT = _HEAD.size - 4  # the checksum is the header's last field
_LITTLE = sys.byteorder == "little"
NAMES = ("state.0", "state.1")
ACK_LOG = "acks.log"
_ACK = struct.Struct("<QQQ")
_ACK_SIZE = _ACK.size + 4


def encode(state: dict, generation: int) -> bytes:
    pending, rdc = state["pending"], state["redelivered"]
    small = {k: v for k, v in state.items() if k not in ("pending", "redelivered")}
    js = json.dumps(small, separators=(",", ":")).encode()
    pend = array("q", chain.from_iterable((s, p[0], p[1]) for s, p in pending.items()))
    red = array("q", chain.from_iterable(rdc.items()))
    if not _LITTLE:
        pend.byteswap()
        red.byteswap()
    body = b"".join((js, pend.tobytes(), red.tobytes()))
    head = _HEAD.pack(MAGIC, VERSION, generation, len(js), len(pending), len(rdc), 0)[:_CRC_AT]
    return head + struct.pack("<I", crc32(body, crc32(head))) + body


def decode(data: bytes) -> tuple[int, dict] | None:
    """(generation, state) or None when the bytes are not a whole state."""
    if len(data) < _HEAD.size:
        return None
    magic, version, gen, jl, npend, nrdc, crc = _HEAD.unpack_from(data)
    body = data[_HEAD.size:]
    if magic != MAGIC or version not in (1, VERSION) or len(body) != jl + 24 * npend + 16 * nrdc:
        return None
    if crc32(body, 0 if version == 1 else crc32(data[:_CRC_AT])) != crc:
        return None
    try:
        state = json.loads(body[:jl])
    except ValueError:
        return None
    pend = array("q")
    pend.frombytes(body[jl : jl + 24 * npend])
    red = array("q")
    red.frombytes(body[jl + 24 * npend :])
    if not _LITTLE:
        pend.byteswap()
        red.byteswap()
    state["pending"] = {pend[i]: [pend[i + 1], pend[i + 2]] for i in range(0, len(pend), 3)}
    state["redelivered"] = {red[i]: red[i + 1] for i in range(0, len(red), 2)}
    return gen, state


class StateSlots:
    """The two state files of one consumer directory."""

    def __init__(self, directory: Path):
        self.dir = Path(directory)
        self._fds = [-1, -1]
        self._sizes = [0, 0]
        self._afd = -1
        self._alog = 0  # bytes in acks.log
        self._gen = 0  # the last generation written (or read)
        self._created = False
        self._durable = -1  # the slot holding the last state known durable (-1: none)
        self._written = -1  # the slot written since the last sync (-1: none)
        self._log_dirty = False  # acks.log written since the last sync
        self._cur_start = 0  # where acks.log's records of the current generation start

    def read(self) -> dict | None:
        best = None
        found = False
        for name in NAMES:
            try:
                data = (self.dir / name).read_bytes()
            except FileNotFoundError:
                continue
            found = True
            got = decode(data)
            if got is not None and (best is None or got[0] > best[0]):
                best = got + (NAMES.index(name),)
        if best is None:
            if found:
                raise CorruptStateError(f"{self.dir}: both state files are damaged")
            return None
        self._durable = best[2]
        self._gen, state = best[0], best[1]
        state["acks"] = self._read_acks(best[0])
        return state

    def _read_acks(self, gen: int) -> list[tuple[int, int]]:
        try:
            data = (self.dir / ACK_LOG).read_bytes()
        except FileNotFoundError:
            return []
        out = []
        for pos in range(0, len(data) - _ACK_SIZE + 1, _ACK_SIZE):
            rec = data[pos : pos + _ACK_SIZE]
            if crc32(rec[:24]) != struct.unpack_from("<I", rec, 24)[0]:
                break  # a torn tail: what follows was not written whole
            g, sseq, dseq = _ACK.unpack_from(rec)
            if g == gen:
                out.append((sseq, dseq))
        return out

    def log_acks(self, acks: list[tuple[int, int]]) -> None:
        """Append acks made since the last ``write`` (one write); OSError
        when it cannot."""
        if self._afd < 0:
            self._open()
        gen = self._gen
        recs = []
        for sseq, dseq in acks:
            body = _ACK.pack(gen, sseq, dseq)
            recs.append(body + struct.pack("<I", crc32(body)))
        data = b"".join(recs)
        os.pwrite(self._afd, data, self._alog)
        self._alog += len(data)
        self._log_dirty = True

    def write(self, state: dict, sync: bool = False) -> None:
        """Write a new generation of the state (``sync``: and ``sync``)."""
        gen = self._gen + 1
        data = encode(state, gen)
        # never over the last durable state (see the module docstring)
        i = 1 - self._durable if self._durable >= 0 else gen & 1
        fd = self._fds[i]
        if fd < 0:
            self._open()
            fd = self._fds[i]
        os.pwrite(fd, data, 0)
        if len(data) < self._sizes[i]:
            os.ftruncate(fd, len(data))
        self._sizes[i] = len(data)
        self._gen = gen
        self._written = i
        self._cur_start = self._alog  # (the log's records so far are of older generations)
        if sync:
            self.sync()

    def sync(self) -> None:
        """Make what was written durable: the state, then the acks logged
        against it; OSError when it cannot."""
        i = self._written
        if i >= 0:
            os.fdatasync(self._fds[i])
            self._durable, self._written = i, -1
        if self._cur_start == self._alog:
            if self._alog:  # only records older than the durable state: not needed any more
                os.ftruncate(self._afd, 0)
                self._alog = self._cur_start = 0
            self._log_dirty = False
        elif self._log_dirty:
            os.fdatasync(self._afd)
            self._log_dirty = False

    @property
    def unsynced(self) -> bool:
        return self._written >= 0 or self._log_dirty

    def _open(self) -> None:
        make_dirs(self.dir)
        new = False
        for i, name in enumerate(NAMES):
            if self._fds[i] < 0:
                path = self.dir / name
                new |= not path.exists()
                self._fds[i] = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
                self._sizes[i] = os.fstat(self._fds[i]).st_size
        if self._afd < 0:
            path = self.dir / ACK_LOG
            new |= not path.exists()
            self._afd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
            self._alog = os.fstat(self._afd).st_size
        if new:
            fsync_dir(self.dir)

    @property
    def generation(self) -> int:
        return self._gen

    def close(self) -> None:
        for i, fd in enumerate(self._fds):
            if fd >= 0:
                os.close(fd)
                self._fds[i] = -1
        if self._afd >= 0:
            os.close(self._afd)
            self._afd = -1
