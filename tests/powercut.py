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

Use (in a test, with pytest's monkeypatch)::

    cut = PowerCut(store_dir)
    cut.install(monkeypatch)
    ... run the broker, note what it acknowledged ...
    cut.image(tmp_path / "after-cut")   # the store as a power cut now would leave it
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from pathlib import Path


class PowerCut:
    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._gen: dict[tuple, int] = {}  # (dev, ino) -> times freed
        self.files: dict[tuple, bytes] = {}  # (dev, ino, gen) -> durable bytes
        self.dirs: dict[tuple, dict] = {}  # (dev, ino, gen) -> {name: ((dev, ino, gen), is_dir)}
        self.syncs = 0
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
                self.files[key] = f.read()

    def _range_synced(self, fd: int, off: int, n: int) -> None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or n <= 0:
            return
        key = self._key(st)
        self.syncs += 1
        data = os.pread(fd, n, off)
        old = self.files.get(key, b"")
        self.files[key] = old[:off].ljust(off, b"\0") + data + old[off + len(data):]

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
            return n

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
        monkeypatch.setattr(os, "open", open_)
        monkeypatch.setattr(os, "unlink", unlink)
        monkeypatch.setattr(os, "remove", unlink)
        monkeypatch.setattr(os, "rmdir", rmdir)
        monkeypatch.setattr(os, "replace", replace)
        monkeypatch.setattr(os, "rename", rename)

    # -- the image ---------------------------------------------------------------
    def image(self, dst: Path) -> Path:
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
