"""A power-cut simulator for a broker running in this process (natslab's
``EmbeddedServer``): it records what each fsync made durable and rebuilds
the store directory as only that would survive a power cut.

The model is the worst case POSIX allows. A file's durable contents are its
bytes at its last ``fsync``/``fdatasync`` (read back through /proc at that
moment; never synced: empty), with the ranges written since by
``pwritev(..., RWF_DSYNC or RWF_SYNC)`` laid over them (such a write makes
just its own range durable, and the size it needs; a gap before it that was
not durable reads as zeros). Opening a file with ``O_SYNC``/``O_DSYNC`` is
refused: those writes are not modelled, and a store that made data durable
through a call the model does not know would pass for safe. A directory's durable entries are those at its
last fsync (never synced: none, except the root, taken as it was when
recording began). So a write that was not fsynced is lost, a file created or
renamed into a directory that was not fsynced afterwards is not there, and a
rename or unlink that was not made durable is undone. Inodes freed by an
unlink or a rename over them are told apart from later files that reuse
their numbers.

Writes that were not synced can reach the disk too, in part and in any
order (the page cache writes back when it likes). The simulator records
every write to a regular file since that file's last full sync (``write``,
``pwrite``, ``pwritev``, ``ftruncate``, ``truncate``), and ``image`` can lay
some of them over the durable bytes: ``torn=True`` keeps every unsynced
write of each file but cuts the last one to a random prefix (the write in
flight when the power went); ``reorder=True`` keeps a random subset of them
(a later write without an earlier one). Both together: a random subset,
the last kept one torn. ``tear=n`` cuts that last write to its first ``n``
bytes instead of a random prefix, for a test that tries every cut. Writes through Python file objects (``open()``) are
not recorded; natslab uses them only for files it fsyncs before it renames
them into place. Directories always keep their durable entries.

Use (in a test, with pytest's monkeypatch)::

    cut = PowerCut(store_dir)
    cut.install(monkeypatch)
    ... run the broker, note what it acknowledged ...
    cut.image(tmp_path / "after-cut")   # the store as a power cut now would leave it
    cut.image(tmp_path / "torn", rng=random.Random(1), torn=True, reorder=True)
"""

from __future__ import annotations

import fcntl
import os
import random
import stat
from collections import Counter
from pathlib import Path


class PowerCut:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._gen: dict[tuple, int] = {}  # (dev, ino) -> times freed
        self.files: dict[tuple, bytes] = {}  # (dev, ino, gen) -> durable bytes
        # (dev, ino, gen) -> bytes at its last full sync, and every write since:
        # ("w", offset, data, durable) or ("t", size); durable: a RWF_DSYNC write
        self.base: dict[tuple, bytes] = {}
        self.pending: dict[tuple, list] = {}
        self.dirs: dict[tuple, dict] = {}  # (dev, ino, gen) -> {name: ((dev, ino, gen), is_dir)}
        self.syncs = 0
        self._tear: int | None = None
        self.calls: Counter = Counter()  # syncs by kind: fsync, fdatasync, rwf_dsync
        self._root_key = self._key(os.stat(self.root))
        self.dirs[self._root_key] = self._entries(self.root)

    # -- bookkeeping -----------------------------------------------------------
    def _key(self, st: os.stat_result) -> tuple:
        k = (st.st_dev, st.st_ino)
        return k + (self._gen.get(k, 0),)

    def _entries(self, path) -> dict:
        out = {}
        with os.scandir(path) as it:
            for e in it:
                st = e.stat(follow_symlinks=False)
                out[e.name] = (self._key(st), stat.S_ISDIR(st.st_mode))
        return out

    def _synced(self, fd: int) -> None:
        st = os.fstat(fd)
        key = self._key(st)
        self.syncs += 1
        if stat.S_ISDIR(st.st_mode):
            self.dirs[key] = self._entries(f"/proc/self/fd/{fd}")
        elif stat.S_ISREG(st.st_mode):
            with open(f"/proc/self/fd/{fd}", "rb") as f:
                self.files[key] = self.base[key] = f.read()
            self.pending.pop(key, None)

    def _range_synced(self, fd: int, off: int, n: int) -> None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or n <= 0:
            return
        key = self._key(st)
        self.syncs += 1
        data = os.pread(fd, n, off)
        self.files[key] = _overlay(self.files.get(key, b""), off, data)
        self.pending.setdefault(key, []).append(("w", off, data, True))

    def _written(self, fd: int, off: int, data) -> None:
        """An unsynced write of ``data`` at ``off`` (already done)."""
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and len(data):
            self.pending.setdefault(self._key(st), []).append(("w", off, bytes(data), False))

    def _truncated(self, fd: int, size: int) -> None:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            self.pending.setdefault(self._key(st), []).append(("t", size))

    def _freeing(self, path, dir_fd=None) -> None:
        """``path`` is about to lose a name: if that was its last, its inode
        is freed and a later file may get the same number."""
        try:
            st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
        except OSError:
            return
        if stat.S_ISDIR(st.st_mode) or st.st_nlink <= 1:
            k = (st.st_dev, st.st_ino)
            self._gen[k] = self._gen.get(k, 0) + 1

    def install(self, monkeypatch) -> None:
        real_fsync, real_fdatasync, real_pwritev, real_open = os.fsync, os.fdatasync, os.pwritev, os.open
        sync_flags = getattr(os, "RWF_DSYNC", 0) | getattr(os, "RWF_SYNC", 0)
        sync_opens = getattr(os, "O_DSYNC", 0) | getattr(os, "O_SYNC", 0)
        real_unlink, real_rmdir, real_replace, real_rename = os.unlink, os.rmdir, os.replace, os.rename
        real_write, real_pwrite, real_ftruncate, real_truncate = os.write, os.pwrite, os.ftruncate, os.truncate

        def fsync(fd):
            real_fsync(fd)
            self.calls["fsync"] += 1
            self._synced(fd if isinstance(fd, int) else fd.fileno())

        def fdatasync(fd):
            real_fdatasync(fd)
            self.calls["fdatasync"] += 1
            self._synced(fd)

        def pwritev(fd, buffers, offset, flags=0):
            n = real_pwritev(fd, buffers, offset, flags)
            if flags & sync_flags:
                self.calls["rwf_dsync"] += 1
                self._range_synced(fd, offset, n)
            else:
                self._written(fd, offset, b"".join(bytes(b) for b in buffers)[:n])
            return n

        def write(fd, data):
            if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_APPEND:
                off = os.fstat(fd).st_size
            else:
                try:
                    off = os.lseek(fd, 0, os.SEEK_CUR)
                except OSError:  # a pipe or a socket: not a file
                    return real_write(fd, data)
            n = real_write(fd, data)
            self._written(fd, off, memoryview(data)[:n])
            return n

        def pwrite(fd, data, offset):
            n = real_pwrite(fd, data, offset)
            self._written(fd, offset, memoryview(data)[:n])
            return n

        def ftruncate(fd, size):
            real_ftruncate(fd, size)
            self._truncated(fd, size)

        def truncate(path, size):
            if isinstance(path, int):
                return ftruncate(path, size)
            fd = real_open(path, os.O_WRONLY)
            try:
                ftruncate(fd, size)
            finally:
                os.close(fd)

        def open_(path, flags, mode=0o777, *, dir_fd=None):
            if flags & sync_opens:
                raise AssertionError(f"powercut: {path} opened with O_SYNC/O_DSYNC, which the model does not cover")
            return real_open(path, flags, mode, dir_fd=dir_fd)

        def unlink(path, *, dir_fd=None):
            self._freeing(path, dir_fd)
            return real_unlink(path, dir_fd=dir_fd)

        def rmdir(path, *, dir_fd=None):
            self._freeing(path, dir_fd)
            return real_rmdir(path, dir_fd=dir_fd)

        def replace(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
            self._freeing(dst, dst_dir_fd)
            return real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

        def rename(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
            self._freeing(dst, dst_dir_fd)
            return real_rename(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "fdatasync", fdatasync)
        monkeypatch.setattr(os, "pwritev", pwritev)
        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "pwrite", pwrite)
        monkeypatch.setattr(os, "ftruncate", ftruncate)
        monkeypatch.setattr(os, "truncate", truncate)
        monkeypatch.setattr(os, "open", open_)
        monkeypatch.setattr(os, "unlink", unlink)
        monkeypatch.setattr(os, "remove", unlink)
        monkeypatch.setattr(os, "rmdir", rmdir)
        monkeypatch.setattr(os, "replace", replace)
        monkeypatch.setattr(os, "rename", rename)

    # -- the image ---------------------------------------------------------------
    def image(self, dst: Path, rng: random.Random | None = None, torn: bool = False,
              reorder: bool = False, tear: int | None = None) -> Path:
        """Write the store as a power cut now would leave it under ``dst``:
        only what was synced, or (``torn``, ``reorder``, drawn from ``rng``)
        with some of the unsynced writes as well (see the module docstring;
        ``tear``: torn, the last write cut to that many bytes)."""
        dst = Path(dst)
        dst.mkdir(parents=True)
        torn = torn or tear is not None
        if (torn or reorder) and rng is None:
            rng = random.Random(0)
        self._tear = tear
        self._build(self._root_key, dst, rng if torn or reorder else None, torn, reorder)
        return dst

    def unsynced(self) -> int:
        """How many writes are not durable yet (over every file)."""
        return sum(1 for ops in self.pending.values() for op in ops if op[0] == "t" or not op[3])

    def _contents(self, key: tuple, rng, torn: bool, reorder: bool) -> bytes:
        ops = self.pending.get(key)
        if rng is None or not ops:
            return self.files.get(key, b"")
        kept = [op for op in ops if (op[0] == "w" and op[3]) or not reorder or rng.random() < 0.5]
        cut = None
        if torn:
            loose = [i for i, op in enumerate(kept) if op[0] == "w" and not op[3]]
            if loose:
                cut = loose[-1]
        data = self.base.get(key, b"")
        for i, op in enumerate(kept):
            if op[0] == "t":
                data = data[: op[1]].ljust(op[1], b"\0")
            else:
                if i == cut:
                    n = rng.randrange(len(op[2])) if self._tear is None else min(self._tear, len(op[2]) - 1)
                    chunk = op[2][:n]
                else:
                    chunk = op[2]
                data = _overlay(data, op[1], chunk)
        return data

    def _build(self, key: tuple, dst: Path, rng, torn: bool, reorder: bool) -> None:
        for name, (k, is_dir) in self.dirs.get(key, {}).items():
            if is_dir:
                (dst / name).mkdir()
                self._build(k, dst / name, rng, torn, reorder)
            else:
                (dst / name).write_bytes(self._contents(k, rng, torn, reorder))


def _overlay(old: bytes, off: int, data: bytes) -> bytes:
    """``old`` with ``data`` written at ``off`` (a gap before it reads as zeros)."""
    return old[:off].ljust(off, b"\0") + data + old[off + len(data):]
