"""The store interface, run over both the memory store and the file store, then
the file store's own promises: restart, SIGKILL, torn tails, corruption in
the middle, space reclamation. No broker involved; all of it runs in seconds."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from natslab.server.jetstream.store.file import blocks as fb
from natslab.server.jetstream.store.file.store import FileStore
from natslab.server.jetstream.store.base import Store, file_msg_size, memory_msg_size

try:
    from natslab.server.jetstream.store.memory import MemoryStore
except ImportError:  # pragma: no cover - only while store/memory.py is being written
    MemoryStore = None

HDR = b"NATS/1.0\r\nNats-Msg-Id: abc\r\n\r\n"  # 30 bytes, as in the seed


@pytest.fixture(params=["memory", "file"])
def make(request, tmp_path):
    """A factory of empty stores of one kind: make(first_seq=N) as a stream configured with first_seq N (0: not configured)."""
    stores: list[Store] = []

    def factory(first_seq: int = 0) -> Store:
        if request.param == "memory":
            if MemoryStore is None:
                pytest.skip("server/jetstream/store/memory.py (MemoryStore) does not exist yet")
            st = MemoryStore(first_seq=first_seq)
        else:
            st = FileStore(tmp_path / f"s{len(stores)}", first_seq=first_seq, block_size=4096)
        stores.append(st)
        return st

    factory.kind = request.param
    yield factory
    for st in stores:
        st.close()


def fill(st: Store, subjects: list[str], ts0: int = 1_000) -> list[int]:
    return [st.store_msg(s, None, f"m{i}".encode(), ts0 + i) for i, s in enumerate(subjects)]


# -- the interface, both stores ------------------------------------------------


def test_new_store_state(make):
    st = make()
    s = st.state()
    assert (s.messages, s.bytes, s.first_seq, s.last_seq, s.first_ts, s.last_ts) == (0, 0, 0, 0, 0, 0)
    assert st.load(1) is None and st.load_next(1) is None and st.load_last() is None
    assert st.deleted() == [] and st.num_pending(1) == 0


def test_first_seq_at_creation(make):
    st = make(first_seq=100)
    s = st.state()
    assert (s.first_seq, s.last_seq, s.messages) == (100, 99, 0)
    assert st.store_msg("a", None, b"x", 1) == 100
    assert (st.state().first_seq, st.state().last_seq) == (100, 100)


def test_byte_accounting_matches_the_real_server(make):
    st = make()
    for p in (b"a" * 15, b"b" * 15, b"c" * 15):
        st.store_msg("orders.new", None, p, 1)
    st.store_msg("orders.eu", None, b"d" * 18, 2)
    s = st.state()
    assert s.messages == 4 and s.num_subjects == 2
    assert s.bytes == (222 if make.kind == "file" else 166)
    st.store_msg("orders.new", HDR, b"12345", 3)
    assert st.state().bytes - s.bytes == (79 if make.kind == "file" else 16 + 10 + 30 + 5)
    assert st.msg_size("orders.new", HDR, b"12345") == (file_msg_size if make.kind == "file" else memory_msg_size)("orders.new", HDR, b"12345")
    st.remove(5)
    assert st.state().bytes == s.bytes


def test_store_and_load(make):
    st = make()
    assert st.store_msg("a.b", HDR, b"payload", 123) == 1
    assert st.store_msg("a.c", None, b"", 456) == 2
    m = st.load(1)
    assert (m.seq, m.subject, m.hdr, m.data, m.ts) == (1, "a.b", HDR, b"payload", 123)
    m = st.load(2)
    assert (m.subject, m.hdr, m.data, m.ts) == ("a.c", None, b"", 456)
    assert st.load(3) is None and st.load(0) is None
    s = st.state()
    assert (s.first_seq, s.first_ts, s.last_seq, s.last_ts) == (1, 123, 2, 456)


def test_load_next_and_last_with_wildcards(make):
    st = make()
    fill(st, ["orders.new", "orders.eu", "billing.x", "orders.new", "orders.us.west", "billing.y"])
    assert st.load_next(1).seq == 1
    assert st.load_next(2, "orders.new").seq == 4
    assert st.load_next(1, "billing.*").seq == 3
    assert st.load_next(4, "billing.*").seq == 6
    assert st.load_next(1, "orders.>").seq == 1
    assert st.load_next(5, "orders.*") is None
    assert st.load_next(5, "orders.>").seq == 5
    assert st.load_next(7) is None
    assert st.load_last().seq == 6
    assert st.load_last("orders.*").seq == 4
    assert st.load_last("orders.>").seq == 5
    assert st.load_last("nothing.here") is None
    st.remove(6)
    assert st.load_last().seq == 5
    assert st.load_last("billing.>").seq == 3


def test_remove_and_deleted(make):
    st = make()
    fill(st, ["a"] * 6)
    assert st.remove(3) and st.remove(5)
    assert not st.remove(3) and not st.remove(99)
    assert st.deleted() == [3, 5]
    s = st.state()
    assert (s.messages, s.first_seq, s.last_seq, s.num_deleted) == (4, 1, 6, 2)
    assert st.remove(1) and st.remove(2)
    s = st.state()
    assert (s.first_seq, s.num_deleted, s.first_ts) == (4, 1, 1_003)
    assert st.deleted() == [5]
    assert list(st.iter_seqs()) == [4, 6] and list(st.iter_seqs(5)) == [6]
    assert st.remove(6)
    # the real server keeps last_seq, so a removed newest message is a gap too
    assert st.deleted() == [5, 6]
    assert (st.state().last_seq, st.state().num_deleted) == (6, 2)


def test_removing_everything_leaves_first_after_last(make):
    st = make()
    fill(st, ["a", "b", "c"])
    for seq in (2, 1, 3):
        assert st.remove(seq)
    s = st.state()
    assert (s.messages, s.bytes, s.first_seq, s.last_seq, s.last_ts, s.first_ts, s.num_deleted) == (0, 0, 4, 3, 1_002, 0, 0)
    assert st.store_msg("d", None, b"", 9) == 4
    assert st.state().first_seq == 4


def test_purge_all(make):
    st = make()
    fill(st, ["a", "b", "a"])
    assert st.purge() == 3
    s = st.state()
    assert (s.messages, s.bytes, s.first_seq, s.last_seq, s.last_ts, s.num_subjects) == (0, 0, 4, 3, 1_002, 0)
    assert st.subjects_state() == {} and st.load_last() is None
    assert st.store_msg("a", None, b"x", 5) == 4


def test_purge_by_subject_keep_and_seq(make):
    st = make()
    fill(st, ["kv.a", "kv.b", "kv.a", "kv.a", "kv.b", "kv.a"])
    assert st.purge("kv.a", keep=1) == 3
    assert st.subject_seqs("kv.a") == [6]
    assert st.purge("kv.b", seq=5) == 1
    assert st.subject_seqs("kv.b") == [5]
    assert st.purge("kv.*") == 2
    s = st.state()
    assert (s.messages, s.first_seq, s.last_seq) == (0, 7, 6)


def test_purge_keep_applies_to_the_whole_filter(make):
    st = make()
    fill(st, ["x.1", "x.2", "x.1", "x.2", "y"])
    assert st.purge("x.*", keep=3) == 1
    assert st.subjects_state() == {"x.1": 1, "x.2": 2, "y": 1}
    assert st.purge(keep=2) == 2
    assert list(st.iter_seqs()) == [4, 5]
    assert st.purge(keep=5) == 0


def test_purge_up_to_seq_and_compact(make):
    st = make()
    fill(st, ["a", "b"] * 5)
    assert st.purge(seq=1) == 0
    assert st.purge(seq=4) == 3
    assert st.state().first_seq == 4
    assert st.compact(4) == 0
    st.remove(6)
    assert st.compact(7) == 2
    s = st.state()
    assert (s.first_seq, s.messages, s.num_deleted) == (7, 4, 0)
    assert st.compact(20) == 4
    s = st.state()
    assert (s.messages, s.first_seq, s.last_seq) == (0, 20, 19)
    assert st.store_msg("a", None, b"", 1) == 20


def test_subject_queries(make):
    st = make()
    fill(st, ["kv.a", "kv.b", "kv.a", "other", "kv.c.d"])
    assert st.subjects_state() == {"kv.a": 2, "kv.b": 1, "other": 1, "kv.c.d": 1}
    assert st.subjects_state("kv.*") == {"kv.a": 2, "kv.b": 1}
    assert st.subjects_state("kv.>") == {"kv.a": 2, "kv.b": 1, "kv.c.d": 1}
    assert st.subjects_state("kv.a") == {"kv.a": 2}
    assert st.last_seq_for_subject("kv.a") == 3 and st.last_seq_for_subject("nope") == 0
    assert st.subject_seqs("kv.a") == [1, 3] and st.subject_seqs("nope") == []
    assert st.subject_count("kv.a") == 2 and st.subject_count("nope") == 0
    assert st.oldest_for_subject("kv.a", 1) == [1] and st.oldest_for_subject("kv.a", 5) == [1, 3]
    assert st.oldest_for_subject("nope", 1) == []
    s = st.state()
    assert st.totals() == (s.messages, s.bytes, s.first_seq) == (5, s.bytes, 1)
    st.remove(1)
    assert st.subject_seqs("kv.a") == [3] and st.subject_count("kv.a") == 1
    st.remove(2)
    assert "kv.b" not in st.subjects_state() and st.state().num_subjects == 3


def test_num_pending(make):
    st = make()
    fill(st, ["a.1", "a.2", "a.1", "b", "a.1", "a.2"])
    assert st.num_pending(1) == 6
    assert st.num_pending(4) == 3
    assert st.num_pending(7) == 0
    assert st.num_pending(1, "a.1") == 3 and st.num_pending(4, "a.1") == 1
    assert st.num_pending(2, "a.*") == 4
    assert st.num_pending(1, ">") == 6
    assert st.num_pending(1, "a.*", last_per_subject=True) == 2
    assert st.num_pending(6, "a.*", last_per_subject=True) == 1
    assert st.num_pending(1, last_per_subject=True) == 3
    st.remove(5)
    assert st.num_pending(4) == 2 and st.num_pending(4, "a.1") == 0


def test_many_messages_across_blocks(make):
    """4 KiB blocks for the file store: crosses many block boundaries."""
    st = make()
    n = 2_000
    for i in range(n):
        st.store_msg(f"s.{i % 7}", HDR if i % 5 == 0 else None, b"%06d" % i, i)
    for seq in range(1, n + 1, 3):
        st.remove(seq)
    live = [s for s in range(1, n + 1) if (s - 1) % 3]
    assert list(st.iter_seqs()) == live
    assert st.state().messages == len(live)
    assert st.load(n).data == b"%06d" % (n - 1)
    assert st.load_next(1).seq == 2
    assert st.num_pending(1000) == len([s for s in live if s >= 1000])
    assert sum(st.subjects_state().values()) == len(live)
    assert st.deleted() == list(range(4, n + 1, 3))  # 1 went first, so it is no gap
    assert st.state().num_deleted == len(st.deleted())


# -- the file store ------------------------------------------------------------


def snapshot(st: Store) -> tuple:
    msgs = [st.load(s) for s in st.iter_seqs()]
    return (st.state(), st.deleted(), st.subjects_state(), [(m.seq, m.subject, m.hdr, m.data, m.ts) for m in msgs])


def test_load_batch_is_load_next_in_a_row(make):
    """load_batch (the pull fast path reads with it) gives exactly what
    load_next called again and again gives: across blocks, around deletes and
    purges, with and without a filter, up to the limit."""
    import random

    rnd = random.Random(7)
    st = make()
    for i in range(600):
        st.store_msg(f"lb.{rnd.choice('abc')}", HDR if i % 7 == 0 else None, b"d" * rnd.randrange(80), 1000 + i)
    for seq in rnd.sample(range(1, 601), 150):
        st.remove(seq)
    st.remove(300)  # a whole run of deletes in one place too
    for seq in range(301, 340):
        st.remove(seq)
    st.purge("lb.c", seq=100)

    def by_load_next(start: int, flt, limit: int) -> list:
        out = []
        while len(out) < limit:
            sm = st.load_next(start, flt)
            if sm is None:
                break
            out.append((sm.seq, sm.subject, sm.hdr, sm.data, sm.ts))  # the rows load_batch gives
            start = sm.seq + 1
        return out

    for _ in range(200):
        start, flt, limit = rnd.randrange(0, 620), rnd.choice([None, ">", "lb.a", "lb.*"]), rnd.randrange(1, 300)
        assert st.load_batch(start, flt, limit) == by_load_next(start, flt, limit), (start, flt, limit)


def test_reopen_after_close_keeps_everything(tmp_path):
    st = FileStore(tmp_path / "s", block_size=4096)
    for i in range(500):
        st.store_msg(f"t.{i % 3}", HDR if i % 2 else None, os.urandom(i % 40), 10_000 + i)
    st.remove(7)
    st.remove(300)
    st.purge("t.1", keep=10)
    st.compact(5)
    before = snapshot(st)
    st.close()
    st2 = FileStore(tmp_path / "s", block_size=4096)
    assert snapshot(st2) == before
    assert st2.warnings == []
    assert st2.store_msg("t.0", None, b"after", 1) == 501
    st2.close()
    st3 = FileStore(tmp_path / "s", block_size=4096)
    assert st3.load(501).data == b"after"
    assert snapshot(st3)[0].messages == before[0].messages + 1
    st3.close()


def test_reopen_without_index_files_rescans(tmp_path):
    st = FileStore(tmp_path / "s", block_size=4096)
    fill(st, [f"x.{i % 4}" for i in range(400)])
    st.remove(100)
    before = snapshot(st)
    st.close()
    for idx in (tmp_path / "s" / "msgs").glob("*.idx"):
        idx.unlink()
    st2 = FileStore(tmp_path / "s", block_size=4096)
    assert snapshot(st2) == before and st2.warnings == []
    st2.close()


def test_reopen_uses_block_index_files(tmp_path, monkeypatch):
    st = FileStore(tmp_path / "s", block_size=4096)
    fill(st, ["a"] * 300)
    st.close()
    calls = []
    real = fb.scan_block
    monkeypatch.setattr(fb, "scan_block", lambda *a: calls.append(a[2]) or real(*a))
    st2 = FileStore(tmp_path / "s", block_size=4096)
    assert calls == [] and st2.state().messages == 300
    st2.close()


def test_empty_store_state_survives_restart(tmp_path):
    st = FileStore(tmp_path / "s")
    fill(st, ["a", "b"])
    st.purge()
    st.close()
    st = FileStore(tmp_path / "s")
    s = st.state()
    assert (s.messages, s.first_seq, s.last_seq, s.last_ts) == (0, 3, 2, 1_001)
    st.close()
    st = FileStore(tmp_path / "t", first_seq=50)
    st.close()
    st = FileStore(tmp_path / "t")
    assert (st.state().first_seq, st.state().last_seq) == (50, 49)
    assert st.store_msg("a", None, b"", 1) == 50
    st.close()


def test_removed_everything_one_by_one_survives_restart(tmp_path):
    st = FileStore(tmp_path / "s", block_size=4096)
    fill(st, ["a"] * 200)
    for s in range(1, 201):
        st.remove(s)
    st.close()
    st = FileStore(tmp_path / "s", block_size=4096)
    s = st.state()
    assert (s.messages, s.first_seq, s.last_seq, s.last_ts) == (0, 201, 200, 1_199)
    assert list((tmp_path / "s" / "msgs").glob("*.blk")) == []
    st.close()


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from natslab.server.jetstream.store.file.store import FileStore
    st = FileStore(Path(sys.argv[1]), block_size=16384)
    out = sys.stdout
    i = 0
    while True:
        i += 1
        seq = st.store_msg("crash.%d" % (i % 5), None, b"payload-%d" % i, i)
        out.write("S %d %d\\n" % (seq, i))
        out.flush()
        if i % 7 == 0:
            out.write("r %d\\n" % (seq - 3))  # about to remove
            out.flush()
            st.remove(seq - 3)
            out.write("R %d\\n" % (seq - 3))  # removed
            out.flush()
        if i % 500 == 0:
            st.flush()
    """
)


def test_sigkill_mid_writes_loses_nothing_acknowledged(tmp_path):
    d = tmp_path / "s"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(d)], stdout=subprocess.PIPE)
    out = []
    for line in proc.stdout:
        out.append(line)
        if len(out) >= 3_000:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    out.append(proc.stdout.read())  # what the child wrote before it died
    proc.stdout.close()
    stored: dict[int, int] = {}
    removing: set[int] = set()
    removed: set[int] = set()
    for line in b"".join(out).split(b"\n")[:-1]:  # a torn last line claims nothing
        kind, seq, *rest = line.split()
        if kind == b"S":
            stored[int(seq)] = int(rest[0])
        elif kind == b"r":
            removing.add(int(seq))
        else:
            removed.add(int(seq))
    assert len(stored) >= 2_000

    st = FileStore(d, block_size=16384)
    seqs = list(st.iter_seqs())
    assert len(seqs) == len(set(seqs)), "a sequence came back twice"
    present = set(seqs)
    for seq, i in stored.items():
        if seq in removed:
            assert seq not in present
        elif seq not in removing:
            m = st.load(seq)
            assert m is not None, f"acknowledged seq {seq} lost"
            assert m.data == b"payload-%d" % i and m.ts == i
    assert st.state().messages == len(present)
    assert st.state().last_seq >= max(stored)
    nxt = st.store_msg("after", None, b"", 0)
    assert nxt == st.state().last_seq and nxt not in stored
    st.close()


def _blocks(d: Path) -> list[Path]:
    return sorted((d / "msgs").glob("*.blk"), key=lambda p: int(p.stem))


def test_torn_tail_is_cut_with_a_warning(tmp_path, caplog):
    d = tmp_path / "s"
    st = FileStore(d)
    fill(st, ["a"] * 10)
    st.close()
    blk = _blocks(d)[-1]
    size = blk.stat().st_size
    os.truncate(blk, size - 5)  # the last record loses its tail
    with caplog.at_level(logging.WARNING, logger="natslab.server.filestore"):
        st = FileStore(d)
    assert any("torn" in w for w in st.warnings)
    assert any("torn" in r.message for r in caplog.records)
    s = st.state()
    # the lost message's sequence was handed out: it is not handed out again
    assert (s.messages, s.last_seq) == (9, 10)
    assert st.store_msg("a", None, b"new", 1) == 11
    st.close()
    st = FileStore(d)
    assert st.warnings == [] and st.load(11).data == b"new" and st.load(10) is None
    st.close()


def _crash_copy(d: Path, dst: Path) -> Path:
    """The store directory as a SIGKILL would leave it (the store still open)."""
    import shutil

    shutil.copytree(d, dst)
    return dst


def test_preallocated_tail_is_the_clean_end_after_a_crash(tmp_path, caplog):
    """A store that syncs every write (sync_always, or group commit under a
    stream) writes zeros ahead of its records, so the syncs that follow
    commit no metadata; after a crash those zeros are the end of the block,
    not damage: no warning, cut off, and appending goes on where the records end."""
    d = tmp_path / "s"
    st = FileStore(d, sync_always=True)
    fill(st, ["a", "b"] * 20)
    blk = _blocks(d)[-1]
    end = st._active.size
    assert blk.stat().st_size >= 64 * 1024 > end  # preallocated
    assert blk.read_bytes()[end:].count(0) == blk.stat().st_size - end
    crashed = _crash_copy(d, tmp_path / "crashed")
    st.close()
    assert blk.stat().st_size == end  # closing cuts the zeros
    with caplog.at_level(logging.WARNING, logger="natslab.server.filestore"):
        st2 = FileStore(crashed, sync_always=True)
    assert st2.warnings == [] and not caplog.records
    assert _blocks(crashed)[-1].stat().st_size == end
    assert [st2.load(q).data for q in (1, 40)] == [b"m0", b"m39"]
    assert st2.store_msg("a", None, b"new", 1) == 41
    st2.close()
    st2 = FileStore(crashed)
    assert st2.warnings == [] and st2.load(41).data == b"new" and st2.state().messages == 41
    st2.close()


def test_torn_record_in_preallocated_space_is_reported(tmp_path):
    """A record torn inside the zeros (its first page on disk, the rest not)
    is damage: reported and set aside as any torn tail, zeros and all."""
    d = tmp_path / "s"
    st = FileStore(d, sync_always=True)
    fill(st, ["a"] * 10)
    blk = _blocks(d)[-1]
    end = st._active.size
    crashed = _crash_copy(d, tmp_path / "crashed")
    st.close()
    rec = fb.pack_record(11, 1, b"a", b"", b"x" * 100)
    cblk = _blocks(crashed)[-1]
    with open(cblk, "r+b") as f:
        f.seek(end)
        f.write(rec[:40])  # the rest stays zeros
    st2 = FileStore(crashed)
    assert any("torn" in w for w in st2.warnings)
    assert list(crashed.glob("msgs/*.torn-*")) and st2.state().messages == 10
    # kept as private as the rest of the store (nats-server's files are 0600)
    assert [p.stat().st_mode & 0o777 for p in crashed.glob("msgs/*.torn-*")] == [0o600]
    st2.close()


def test_group_commit_syncs_records_before_the_deletes_they_made(tmp_path, monkeypatch):
    """A write-out holding no reply (publishes that asked for no PubAck) is
    synced by the periodic flush, unless it made deletes (a KV put without
    a reply replacing a key's revision): then the new record is on disk
    before the delete is even written, so a power cut can lose the new
    revision or keep both, never lose both."""
    from powercut import PowerCut

    d = tmp_path / "s"
    cut = PowerCut(d)
    cut.install(monkeypatch)
    st = FileStore(d, group_commit=True)
    st.write_behind = lambda store: None  # (the server's: write_out is called below instead)
    st.store_msg("k", None, b"rev1", 1)  # (starting the block fsyncs the directory)
    opened = cut.calls.copy()
    st.write_out()
    assert cut.calls == opened  # nothing to order: left to flush()
    st.store_msg("k", None, b"rev2", 2)
    assert st.trim_subject("k", 1) == [1]
    st.write_out()
    assert cut.calls - opened == {"fdatasync": 1}  # (the first sync of a block: the preallocating one)
    image = cut.image(tmp_path / "cut")
    st.close()
    monkeypatch.undo()
    st2 = FileStore(image)
    assert st2.load(2).data == b"rev2" and st2.load(1).data == b"rev1"  # (the delete was not synced)
    st2.close()


def test_torn_tail_garbage_appended(tmp_path):
    d = tmp_path / "s"
    st = FileStore(d)
    fill(st, ["a"] * 5)
    st.close()
    with open(_blocks(d)[-1], "ab") as f:
        f.write(fb.REC.pack(500, 1, 6, 0, 1, 0) + b"a")  # a header promising more than is there
    st = FileStore(d)
    assert st.warnings and st.state().messages == 5
    assert st.store_msg("a", None, b"", 1) == 6
    st.close()


def test_corruption_in_the_middle_loses_only_that_record(tmp_path):
    d = tmp_path / "s"
    st = FileStore(d)
    fill(st, ["a"] * 20)
    off = st._locate(10)[0].offs[9]
    st.close()
    blk = _blocks(d)[-1]
    raw = bytearray(blk.read_bytes())
    raw[off + 30] ^= 0xFF  # a byte of the subject / payload
    blk.write_bytes(bytes(raw))
    st = FileStore(d)
    assert any("corrupt" in w for w in st.warnings)
    assert list(st.iter_seqs()) == [s for s in range(1, 21) if s != 10]
    assert st.load(11).data == b"m10"
    st.close()


def test_corrupt_length_field_resyncs(tmp_path):
    d = tmp_path / "s"
    st = FileStore(d)
    fill(st, ["a"] * 20)
    off = st._locate(5)[0].offs[4]
    st.close()
    blk = _blocks(d)[-1]
    raw = bytearray(blk.read_bytes())
    raw[off : off + 4] = b"\xff\xff\x00\x00"  # reclen now points far away
    blk.write_bytes(bytes(raw))
    st = FileStore(d)
    assert st.warnings
    assert list(st.iter_seqs()) == [s for s in range(1, 21) if s != 5]
    st.close()


def _store_with_a_damaged_record(d, count: int, seq: int) -> FileStore:
    """A file store of ``count`` messages on "a" with one byte of message
    ``seq`` overwritten in its block file while the store is open."""
    st = FileStore(d)
    fill(st, ["a"] * count)
    blk, i = st._locate(seq)
    with open(_blocks(d)[-1], "r+b") as f:
        f.seek(blk.offs[i] + 28)
        f.write(b"Z")
    return st


def test_corruption_found_on_read_is_reported(tmp_path):
    """With a valid index file the record is checked when read instead."""
    st = _store_with_a_damaged_record(tmp_path / "s", 5, 3)
    assert st.load(3) is None
    assert st.warnings and st.state().messages == 4
    assert st.load_next(3).seq == 4
    st.close()


@pytest.mark.parametrize("flt", [None, "a"])
def test_corruption_found_by_a_batch_read_is_reported(tmp_path, flt):
    """load_batch reads a block's run at once: a damaged record in the middle
    is reported and dropped as load would, and the batch goes on past it
    (filling up to the limit; a one-subject batch comes back one shorter)."""
    st = _store_with_a_damaged_record(tmp_path / "s", 8, 3)
    assert [row[0] for row in st.load_batch(1, flt, 5)] == [1, 2, 4, 5] + ([6] if flt is None else [])
    assert st.warnings and st.state().messages == 7
    assert [row[0] for row in st.load_batch(1, flt, 10)] == [1, 2, 4, 5, 6, 7, 8]
    st.close()


def test_deleted_blocks_are_removed_and_sparse_blocks_rewritten(tmp_path):
    d = tmp_path / "s"
    st = FileStore(d, block_size=4096)
    for i in range(2_000):
        st.store_msg("a", None, b"x" * 100, i)
    used = sum(p.stat().st_size for p in _blocks(d))
    st.purge(seq=1_000)  # whole blocks below 1000 go at once
    assert sum(p.stat().st_size for p in _blocks(d)) < used * 0.55
    for seq in range(1_000, 1_900):
        if seq % 10:
            st.remove(seq)  # 90% deleted
    before = snapshot(st)
    for _ in range(40):
        st.flush()
    after_bytes = sum(p.stat().st_size for p in _blocks(d))
    assert after_bytes < used * 0.2
    assert snapshot(st) == before
    st.close()
    st = FileStore(d, block_size=4096)
    assert snapshot(st) == before and st.warnings == []
    st.close()


def test_delete_log_is_shrunk(tmp_path):
    d = tmp_path / "s"
    st = FileStore(d, block_size=1 << 20)
    fill(st, ["a"] * 12_000)
    for s in range(1, 12_000, 2):
        st.remove(s)
    st.compact(11_000)
    log_path = d / "msgs" / "deletes.log"
    big = log_path.stat().st_size
    st.flush()
    assert log_path.stat().st_size < big / 4
    before = snapshot(st)
    st.close()
    st = FileStore(d, block_size=1 << 20)
    assert snapshot(st) == before
    st.close()


def test_sync_always_and_delete(tmp_path):
    d = tmp_path / "s"
    st = FileStore(d, sync_always=True)
    fill(st, ["a", "b"])
    st.remove(1)
    st.delete()
    assert not d.exists()


def test_seqs_with_headers(make):
    st = make()
    for i in range(10):
        st.store_msg("a", HDR if i % 3 == 0 else None, b"x", i)
    assert st.seqs_with_headers() == [1, 4, 7, 10]
    st.remove(4)
    assert st.seqs_with_headers(2) == [7, 10]


def test_compact_far_past_the_end_survives_restart(tmp_path):
    st = FileStore(tmp_path / "s")
    fill(st, ["a"] * 5)
    st.remove(5)
    assert st.compact(10**9) == 4
    assert st.store_msg("a", None, b"y", 7) == 10**9
    st.close()
    st = FileStore(tmp_path / "s")
    s = st.state()
    assert (s.messages, s.first_seq, s.last_seq, s.last_ts) == (1, 10**9, 10**9, 7)
    assert list(st.iter_seqs()) == [10**9] and st.load(10**9).data == b"y"
    st.close()


@pytest.mark.skipif(MemoryStore is None, reason="server/jetstream/store/memory.py (MemoryStore) does not exist yet")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_file_store_answers_like_the_memory_store(tmp_path, seed):
    """Random operations on both stores (reopening the file store now and
    then) must give the same answers, bytes aside."""
    import random

    rnd = random.Random(seed)
    mem = MemoryStore()
    path = tmp_path / "s"
    fs = FileStore(path, block_size=4096)
    subjects = ["a", "b.1", "b.2", "c.x.y"]
    filters = [None, ">", "a", "b.*", "b.>", "c.>", "nope"]

    def same(label):
        m, f = mem.state(), fs.state()
        assert (m.messages, m.first_seq, m.last_seq, m.first_ts, m.last_ts, m.num_subjects, m.num_deleted) == (
            f.messages, f.first_seq, f.last_seq, f.first_ts, f.last_ts, f.num_subjects, f.num_deleted
        ), label
        assert mem.deleted() == fs.deleted(), label
        assert list(mem.iter_seqs()) == list(fs.iter_seqs()), label
        msgs = [fs.load(q) for q in fs.iter_seqs()]
        expect = [mem.load(q) for q in mem.iter_seqs()]
        assert [(x.seq, x.subject, x.hdr or None, x.data, x.ts) for x in expect] == [
            (x.seq, x.subject, x.hdr, x.data, x.ts) for x in msgs
        ], label
        assert f.bytes == sum(file_msg_size(x.subject, x.hdr, x.data) for x in msgs), label
        assert m.bytes == sum(memory_msg_size(x.subject, x.hdr, x.data) for x in msgs), label
        assert fs.seqs_with_headers() == [x.seq for x in msgs if x.hdr], label
        start = rnd.randint(0, m.last_seq + 2)
        for flt in filters:
            assert mem.num_pending(start, flt) == fs.num_pending(start, flt), (label, start, flt)
            assert mem.num_pending(start, flt, True) == fs.num_pending(start, flt, True), (label, start, flt)
            a, b = mem.load_next(start, flt), fs.load_next(start, flt)
            assert (a and (a.seq, a.data)) == (b and (b.seq, b.data)), (label, start, flt)
            a, b = mem.load_last(flt), fs.load_last(flt)
            assert (a and a.seq) == (b and b.seq), (label, flt)
            assert mem.subjects_state(flt) == fs.subjects_state(flt), (label, flt)
        for subj in subjects:
            assert mem.subject_count(subj) == fs.subject_count(subj) == len(mem.subject_seqs(subj)), (label, subj)
            assert mem.oldest_for_subject(subj, 2) == fs.oldest_for_subject(subj, 2) == mem.subject_seqs(subj)[:2]
        if m.messages:
            assert (mem.totals(), fs.totals()) == ((m.messages, m.bytes, m.first_seq), (f.messages, f.bytes, f.first_seq))

    for step in range(1_500):
        op = rnd.random()
        if op < 0.6:
            subj = rnd.choice(subjects)
            data = rnd.randbytes(rnd.randint(0, 60))
            hdr = HDR if rnd.random() < 0.3 else None
            assert mem.store_msg(subj, hdr, data, step) == fs.store_msg(subj, hdr, data, step)
        elif op < 0.85:
            last = mem.state().last_seq
            seq = rnd.randint(max(1, last - 80), last + 1) if last else 1
            assert mem.remove(seq) == fs.remove(seq), (step, seq)
        elif op < 0.9:
            flt = rnd.choice(["a", "b.*", None])
            keep = rnd.choice([0, 0, 1, 3])
            seq = rnd.choice([0, 0, mem.state().last_seq - rnd.randint(0, 30)])
            seq = max(seq, 0)
            assert mem.purge(flt, seq=seq, keep=keep) == fs.purge(flt, seq=seq, keep=keep), (step, flt, seq, keep)
        elif op < 0.93:
            seq = mem.state().first_seq + rnd.randint(0, 20)
            assert mem.compact(seq) == fs.compact(seq), (step, seq)
        elif op < 0.97:
            fs.flush()
        else:
            fs.close()
            fs = FileStore(path, block_size=4096)
            assert fs.warnings == []
        if step % 25 == 0:
            same(step)
    same("end")
    fs.close()


@pytest.mark.parametrize("args", [{}, {"subject": "x.y"}, {"keep": 1}, {"seq": 1}, {"subject": "a", "seq": 3}])
def test_purge_on_a_new_store(make, args):
    """nats-server: any purge of a store that never held anything makes it
    report first_seq 1 (not 0); the file store keeps that across a reopen."""
    st = make()
    assert st.purge(**args) == 0
    s = st.state()
    assert (s.first_seq, s.last_seq, s.messages) == (1, 0, 0)
    assert st.store_msg("a", None, b"", 1) == 1


def test_purged_new_file_store_reopens_with_first_seq_1(tmp_path):
    st = FileStore(tmp_path / "s")
    st.purge()
    st.close()
    st = FileStore(tmp_path / "s")
    assert (st.state().first_seq, st.state().last_seq) == (1, 0)
    st.close()


def test_compact_on_a_new_store(make):
    """As nats-server's compact -> purge(seq): first = seq, last = seq - 1."""
    st = make()
    assert st.compact(4) == 0
    s = st.state()
    assert (s.first_seq, s.last_seq, s.messages) == (4, 3, 0)
    assert st.store_msg("a", None, b"", 1) == 4


def test_torn_delete_log_tail(tmp_path):
    d = tmp_path / "s"
    st = FileStore(d)
    fill(st, ["a"] * 5)
    st.remove(2)
    st.remove(3)
    st.close()
    log_path = d / "msgs" / "deletes.log"
    os.truncate(log_path, log_path.stat().st_size - 4)  # the delete of 3 is torn
    st = FileStore(d)
    assert any("torn" in w for w in st.warnings)
    assert list(st.iter_seqs()) == [1, 3, 4, 5]  # the torn delete was never acknowledged whole
    assert st.remove(4)
    st.close()
    st = FileStore(d)
    assert st.warnings == [] and list(st.iter_seqs()) == [1, 3, 5]
    st.close()


def test_damaged_index_file_falls_back_to_a_scan(tmp_path):
    d = tmp_path / "s"
    st = FileStore(d, block_size=4096)
    fill(st, ["a", "b"] * 200)
    before = snapshot(st)
    st.close()
    for idx in (d / "msgs").glob("*.idx"):
        raw = bytearray(idx.read_bytes())
        raw[-1] ^= 0x55
        idx.write_bytes(bytes(raw))
    st = FileStore(d, block_size=4096)
    assert snapshot(st) == before and st.warnings == []
    st.close()


def test_unreadable_blocks_never_stop_the_store(tmp_path):
    d = tmp_path / "s"
    st = FileStore(d, block_size=4096)
    fill(st, ["a"] * 400)
    st.close()
    blocks = _blocks(d)
    assert len(blocks) >= 3
    raw = bytearray(blocks[1].read_bytes())
    raw[4] = 99  # a block version from the future: left alone, reported
    blocks[1].write_bytes(bytes(raw))
    blocks[1].with_suffix(".idx").unlink()
    (d / "msgs" / f"{int(blocks[-1].stem) + 1}.blk").write_bytes(b"")  # created, then the crash
    st = FileStore(d, block_size=4096)
    assert any("version" in w for w in st.warnings)
    assert st.state().messages < 400 and st.load(1).data == b"m0"
    assert st.store_msg("a", None, b"new", 1) == 401
    st.close()
    assert blocks[1].exists()
