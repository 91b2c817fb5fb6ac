"""The disk faults of the embedded broker's fault API (``faults.py``,
``embedded.py``): a slow disk, a full disk, and the record of what each
fsync made durable that a power cut keeps.

The store's I/O is not rewritten for this. While a disk fault is armed on a
store directory, a few functions of the ``os`` module are wrapped
process-wide (and ``open`` in ``jetstream/persist.py``, the one module that
writes through a file object); each wrapper first asks whether the file
descriptor or path lies under an armed store directory and otherwise calls
the real function. When nothing is armed, ``os`` is untouched: the publish
path costs exactly what it costs without this module.

- **slow disk**: every ``fsync``/``fdatasync`` (and ``pwritev`` with
  ``RWF_DSYNC``) of a file under the store takes ``ms`` more (a blocking
  sleep: natslab fsyncs on its event loop, as a slow disk would stall it).
- **full disk**: every write, growing truncate and file write under the store
  fails with ``ENOSPC``, as the kernel's would, until released.
- **power cut** (``DurableImage``): what each sync made durable is recorded
  (the worst case POSIX allows: a file's durable bytes are those it had at its
  last ``fsync``/``fdatasync``, plus the ranges written since with
  ``RWF_DSYNC``; a directory's durable entries those it had at its last
  fsync), and ``build()`` writes the store as a power cut now would leave it.
  Whatever was in the store when recording began counts as durable. Files are
  told apart by inode, and an inode freed by an unlink or rename is told apart
  from a later file that reuses its number.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path

__all__ = ["DiskFaults", "DurableImage"]

_RWF_SYNC = getattr(os, "RWF_DSYNC", 0) | getattr(os, "RWF_SYNC", 0)
_ENOSPC = os.strerror(errno.ENOSPC)


class DurableImage:
    """What a power cut would leave of the files under ``root``."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._gen: dict[tuple, int] = {}  # (dev, ino) -> times freed
        self.files: dict[tuple, bytearray] = {}  # (dev, ino, gen) -> durable bytes
        self.dirs: dict[tuple, dict] = {}  # (dev, ino, gen) -> {name: ((dev, ino, gen), is_dir)}
        self.syncs = 0
        # files whose every change since their last sync went through the
        # wrappers below: key -> [lowest size truncated to, [(offset, length) written]];
        # a sync of one of these reads only those ranges, of any other file
        # the whole file (the first sync of each, and after a write not seen)
        self.pending: dict[tuple, list] = {}
        self._root_key = self._key(os.stat(self.root))
        self._take_all(self.root, self._root_key)

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

    def _take_all(self, path: Path, key: tuple) -> None:
        """Count everything under ``path`` as durable (recording begins)."""
        entries = self.dirs[key] = self._entries(path)
        for name, (k, is_dir) in entries.items():
            if is_dir:
                self._take_all(path / name, k)
            else:
                try:
                    self.files[k] = bytearray((path / name).read_bytes())
                    self.pending[k] = [len(self.files[k]), []]
                except OSError:
                    pass

    def synced(self, fd: int) -> None:
        st = os.fstat(fd)
        key = self._key(st)
        self.syncs += 1
        if stat.S_ISDIR(st.st_mode):
            self.dirs[key] = self._entries(f"/proc/self/fd/{fd}")
        elif stat.S_ISREG(st.st_mode):
            p = self.pending.get(key)
            if p is None:
                with open(f"/proc/self/fd/{fd}", "rb") as f:
                    self.files[key] = bytearray(f.read())
            else:  # in place: the durable copy of a growing block is not copied per sync
                low, ranges = p
                data = self._buf(key)
                del data[min(low, st.st_size):]
                data.extend(bytes(st.st_size - len(data)))  # (what a truncate and no write since left: zeros)
                if ranges:
                    rfd = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)  # (fd may be write-only)
                    try:
                        for off, n in ranges:
                            if off < st.st_size:
                                data[off:off + n] = os.pread(rfd, min(n, st.st_size - off), off)
                    finally:
                        os.close(rfd)
            self.pending[key] = [st.st_size, []]

    def _buf(self, key: tuple) -> bytearray:
        data = self.files.get(key)
        if not isinstance(data, bytearray):
            data = self.files[key] = bytearray(data or b"")
        return data

    def wrote(self, fd: int, off: int, n: int) -> None:
        """``n`` bytes were written at ``off`` (not yet durable)."""
        if n <= 0:
            return
        p = self.pending.get(self._key(os.fstat(fd)))
        if p is not None:
            r = p[1]
            if r and r[-1][0] + r[-1][1] == off:
                r[-1] = (r[-1][0], r[-1][1] + n)  # appends: one range
            else:
                r.append((off, n))
                if len(r) > 4096:  # rewritten in many places: read it whole at the sync
                    self.pending.pop(self._key(os.fstat(fd)), None)

    def truncated(self, st: os.stat_result, length: int) -> None:
        p = self.pending.get(self._key(st))
        if p is not None:
            p[0] = min(p[0], length)

    def unseen_write(self, fd: int) -> None:
        """The file is written by a way the wrappers do not see."""
        self.pending.pop(self._key(os.fstat(fd)), None)

    def range_synced(self, fd: int, off: int, n: int) -> None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or n <= 0:
            return
        key = self._key(st)
        self.syncs += 1
        rfd = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
        try:
            data = os.pread(rfd, n, off)
        finally:
            os.close(rfd)
        buf = self._buf(key)
        if len(buf) < off:
            buf.extend(bytes(off - len(buf)))
        buf[off:off + len(data)] = data

    def freeing(self, st: os.stat_result) -> None:
        """A name of this inode is about to go: if it was its last, the
        number is free for a later file."""
        if stat.S_ISDIR(st.st_mode) or st.st_nlink <= 1:
            k = (st.st_dev, st.st_ino)
            self._gen[k] = self._gen.get(k, 0) + 1

    def build(self, dst: Path) -> Path:
        """Write the store as a power cut now would leave it under ``dst``."""
        dst = Path(dst)
        dst.mkdir(parents=True)
        self._build(self._root_key, dst)
        return dst

    def _build(self, key: tuple, dst: Path) -> None:
        for name, (k, is_dir) in self.dirs.get(key, {}).items():
            if is_dir:
                (dst / name).mkdir()
                self._build(k, dst / name)
            else:
                (dst / name).write_bytes(self.files.get(k, b""))

    def keys_by_path(self) -> dict[str, tuple]:
        """Every file and directory under the root, by relative path."""
        out = {"": self._key(os.stat(self.root))}
        for d, dirs, files in os.walk(self.root):
            for n in dirs + files:
                p = os.path.join(d, n)
                out[os.path.relpath(p, self.root)] = self._key(os.stat(p, follow_symlinks=False))
        return out

    def moved(self, before: dict[str, tuple]) -> None:
        """The tree was replaced by a copy (same paths, same contents, new
        inodes; ``before``: ``keys_by_path()`` of the old one): what was
        durable of each old file is now what is durable of its copy."""
        for k in before.values():  # the old inodes are freed
            self._gen[k[:2]] = self._gen.get(k[:2], 0) + 1
        after = self.keys_by_path()
        remap = {before[p]: after[p] for p in before if p in after}
        self.files = {remap.get(k, k): v for k, v in self.files.items()}
        self.dirs = {remap.get(k, k): {n: (remap.get(c, c), d) for n, (c, d) in e.items()}
                     for k, e in self.dirs.items()}
        self._root_key = after[""]


class DiskFaults:
    """The disk faults armed on one store directory (one per embedded broker)."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self._prefix = str(self.root) + os.sep
        self.slow_ms = 0.0
        self.full = False
        self.image: DurableImage | None = None
        self.slowed = 0  # syncs made slower
        self.refused = 0  # writes refused with ENOSPC

    @property
    def armed(self) -> bool:
        return bool(self.slow_ms or self.full or self.image is not None)

    def update(self) -> None:
        """Install or remove the wrappers after a change."""
        _hooks.update(self)

    def holds_fd(self, fd: int) -> bool:
        try:
            p = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return False
        return p == str(self.root) or p.startswith(self._prefix)

    def holds_path(self, path, dir_fd=None) -> bool:
        try:
            p = os.fspath(path)
            if isinstance(p, bytes):
                p = os.fsdecode(p)
            if dir_fd is not None and not os.path.isabs(p):
                p = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), p)
            p = os.path.abspath(p)
            p = os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p))
        except (OSError, TypeError):
            return False
        return p.startswith(self._prefix)

    def refuse(self) -> None:
        self.refused += 1
        raise OSError(errno.ENOSPC, _ENOSPC)


class _Hooks:
    """The wrappers over ``os``, installed while any store has a fault armed."""

    def __init__(self):
        self.armed: list[DiskFaults] = []
        self.real: dict[str, object] = {}  # the functions found at install
        self.ours: dict[str, object] = {}  # the wrappers put there
        self._opens: tuple = ()
        self._gen = 0  # installs so far

    def update(self, f: DiskFaults) -> None:
        if f.armed and f not in self.armed:
            self.armed.append(f)
        elif not f.armed and f in self.armed:
            self.armed.remove(f)
        if self.armed and not self.real:
            self._install()
        elif not self.armed and self.real:
            self._uninstall()

    def _by_fd(self, fd):
        for f in self.armed:
            if f.holds_fd(fd):
                return f
        return None

    def _by_path(self, path, dir_fd=None):
        for f in self.armed:
            if f.holds_path(path, dir_fd):
                return f
        return None

    def _install(self) -> None:
        names = ("fsync", "fdatasync", "write", "pwrite", "pwritev", "writev", "ftruncate", "truncate",
                 "unlink", "remove", "rmdir", "replace", "rename")
        real = self.real = {n: getattr(os, n) for n in names}
        gen = self._gen = self._gen + 1

        def by_fd(fd):  # (wrappers of an earlier install left in someone's chain: pass-through)
            return self._by_fd(fd) if self._gen == gen else None

        def by_path(path, dir_fd=None):
            return self._by_path(path, dir_fd) if self._gen == gen else None

        def sync(name):
            fn = real[name]

            def wrapper(fd):
                n = fd if isinstance(fd, int) else fd.fileno()
                f = by_fd(n)
                if f is not None and f.slow_ms:
                    f.slowed += 1
                    time.sleep(f.slow_ms / 1000)
                fn(fd)
                if f is not None and f.image is not None:
                    f.image.synced(n)
            return wrapper

        lseek = os.lseek

        def at_position(name):  # write, writev: at the file position (or the end, O_APPEND)
            fn = real[name]

            def wrapper(fd, data):
                f = by_fd(fd)
                if f is None:
                    return fn(fd, data)
                if f.full:
                    f.refuse()
                n = fn(fd, data)
                if f.image is not None:
                    f.image.wrote(fd, lseek(fd, 0, os.SEEK_CUR) - n, n)
                return n
            return wrapper

        def pwrite(fd, data, offset):
            f = by_fd(fd)
            if f is None:
                return real["pwrite"](fd, data, offset)
            if f.full:
                f.refuse()
            n = real["pwrite"](fd, data, offset)
            if f.image is not None:
                f.image.wrote(fd, offset, n)
            return n

        def pwritev(fd, buffers, offset, flags=0):
            f = by_fd(fd)
            if f is None:
                return real["pwritev"](fd, buffers, offset, flags)
            if f.full:
                f.refuse()
            if flags & _RWF_SYNC and f.slow_ms:
                f.slowed += 1
                time.sleep(f.slow_ms / 1000)
            n = real["pwritev"](fd, buffers, offset, flags)
            if f.image is not None:
                f.image.wrote(fd, offset, n)
                if flags & _RWF_SYNC:
                    f.image.range_synced(fd, offset, n)
            return n

        def ftruncate(fd, length):
            f = by_fd(fd)
            if f is None:
                return real["ftruncate"](fd, length)
            st = os.fstat(fd)
            if f.full and length > st.st_size:
                f.refuse()
            if f.image is not None:
                f.image.truncated(st, length)
            return real["ftruncate"](fd, length)

        def truncate(path, length):
            if isinstance(path, int):
                return ftruncate(path, length)
            f = by_path(path)
            if f is None:
                return real["truncate"](path, length)
            st = os.stat(path)
            if f.full and length > st.st_size:
                f.refuse()
            if f.image is not None:
                f.image.truncated(st, length)
            return real["truncate"](path, length)

        def freeing(path, dir_fd):
            f = by_path(path, dir_fd)
            if f is not None and f.image is not None:
                try:
                    f.image.freeing(os.stat(path, dir_fd=dir_fd, follow_symlinks=False))
                except OSError:
                    pass

        def unlink(path, *, dir_fd=None):
            freeing(path, dir_fd)
            return real["unlink"](path, dir_fd=dir_fd)

        def rmdir(path, *, dir_fd=None):
            freeing(path, dir_fd)
            return real["rmdir"](path, dir_fd=dir_fd)

        def moving(name):
            fn = real[name]

            def wrapper(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
                freeing(dst, dst_dir_fd)
                return fn(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)
            return wrapper

        os.fsync, os.fdatasync = sync("fsync"), sync("fdatasync")
        os.write, os.pwrite, os.writev = at_position("write"), pwrite, at_position("writev")
        os.pwritev, os.ftruncate, os.truncate = pwritev, ftruncate, truncate
        os.unlink, os.remove, os.rmdir = unlink, unlink, rmdir
        os.replace, os.rename = moving("replace"), moving("rename")
        self.ours = {n: getattr(os, n) for n in names}

        # the store modules that write through file objects (persist.write_tmp,
        # recovery's repairs), which the os wrappers do not see
        from .internal import jetstream

        def open_(file, mode="r", *a, **kw):
            f = by_path(file) if any(c in mode for c in "wax+") else None
            if f is not None and f.full:
                f.refuse()
            fo = open(file, mode, *a, **kw)
            if f is not None and f.image is not None:
                f.image.unseen_write(fo.fileno())
            return fo

        self._opens = jetstream().file_opening_modules()
        for m in self._opens:
            m.open = open_

    def _uninstall(self) -> None:
        self._gen += 1
        for n, fn in self.real.items():
            # (one that someone wrapped over ours stays: theirs calls ours,
            # which passes everything through while nothing is armed)
            if getattr(os, n) is self.ours.get(n):
                setattr(os, n, fn)
        self.real = {}
        for m in self._opens:
            m.__dict__.pop("open", None)
        self._opens = ()


_hooks = _Hooks()
