"""A full disk, on a small tmpfs (needs root to mount; skipped, saying why,
elsewhere): publishes keep being answered, nothing acknowledged is lost,
a restart with the disk still full keeps the stream, and everything works
again when space returns.

nats-server refuses publishes once its own storage limit (75% of the free
space when it started) is reached, with ``10023 insufficient resources``, so
on it the file system never actually fills; natslab has no such limit and
answers with the OS error (``503 / 10077``, docs/durability.md). The checks here are what
both must give: an answer to every publish and every acknowledged message
kept."""

from __future__ import annotations

import json

from conftest import ServerProcess, connect
from faultkit import check_acked, publish_round, small_tmpfs, stream_dir


async def test_full_disk_then_restart_keeps_acknowledged(server_kind, tmp_path):
    with small_tmpfs(tmp_path / "disk", "4m") as disk:
        srv = ServerProcess(server_kind, disk / "store")
        srv.log_path = tmp_path / f"{server_kind}.log"  # not on the disk that fills
        srv.start()
        try:
            nc = await connect(srv.url)
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s"])
            acked, errs = {}, []
            for r in range(50):
                a, e, silent = await publish_round(nc, "s", [b"%03d-%04d" % (r, i) + b"x" * 1000 for i in range(100)])
                assert not silent, f"round {r}: {silent} publishes got no reply"
                acked.update(a)
                errs += e
                if len(errs) > 300:
                    break
            assert acked and errs, "the disk did not fill"
            codes = {(e["code"], e["err_code"]) for e in errs}
            if server_kind == "natslab":
                assert codes == {(503, 10077)}
                assert "No space left on device" in errs[0]["description"]
            await check_acked(js, "S", acked)
            await nc.close()
            srv.stop()
            # start again with the disk as full as it was
            srv.start()
            nc = await connect(srv.url)
            js = nc.jetstream()
            assert (await js.stream_info("S")).state.messages == len(acked)
            si = await js.add_stream(name="S", subjects=["s"])  # the application's usual start-up
            assert si.state.messages == len(acked)
            await check_acked(js, "S", acked)
            a, e, silent = await publish_round(nc, "s", [b"after" * 200] * 20)
            assert not silent
            await nc.close()
        finally:
            srv.stop()
        if server_kind == "natslab":
            msgs = stream_dir(srv, "S") / "msgs"
            empty = [p.name for p in msgs.glob("*.blk") if p.stat().st_size <= 8]
            assert not empty, f"empty blocks left behind: {empty}"
            assert "Traceback" not in srv.log()


def test_store_that_cannot_write_opens_read_only(tmp_path):
    """natslab's file store alone (nats-server's has no such mode to compare):
    on a file system remounted read-only, with its delete log gone, the store
    still opens with every message, says why it cannot write, refuses writes
    with the OS error, and writes again once it can."""
    import subprocess

    import pytest

    from natslab.server.jetstream.store.file.store import FileStore

    with small_tmpfs(tmp_path / "disk", "4m") as disk:
        fs = FileStore(disk / "S")
        for i in range(50):
            fs.store_msg("a", None, b"%d" % i, i + 1)
        fs.close()
        (disk / "S" / "msgs" / "deletes.log").unlink()  # must be written again at open
        r = subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"cannot remount read-only: {r.stderr.strip()}")
        try:
            fs = FileStore(disk / "S")
            assert fs.read_only and "Read-only file system" in fs.read_only
            assert fs.state().messages == 50 and fs.load(50).data == b"49"
            with pytest.raises(OSError, match="read-only"):
                fs.store_msg("a", None, b"x", 100)
            with pytest.raises(OSError):
                fs.remove(3)
            assert fs.load(3).data == b"2"
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)
        assert fs.store_msg("a", None, b"x", 100) == 51
        assert fs.read_only is None and fs.remove(3)
        fs.close()
        fs = FileStore(disk / "S")
        assert fs.state().messages == 50 and fs.load(3) is None and fs.load(51).data == b"x"
        fs.close()


async def test_full_disk_answers_everything_and_recovers(tmp_path):
    """The disk fills up under a running broker (a ballast file takes the
    space): every publish and STREAM.CREATE is answered, and once the space
    is back publishes are stored again; nothing acknowledged is lost.
    natslab only (docs/compatibility.md): nats-server 2.15.1 logs a
    critical write error and stops answering publishes to the stream."""
    from faultkit import fill

    server_kind = "natslab"

    with small_tmpfs(tmp_path / "disk", "4m") as disk:
        srv = ServerProcess(server_kind, disk / "store")
        srv.log_path = tmp_path / f"{server_kind}.log"  # not on the disk that fills
        srv.start()
        try:
            nc = await connect(srv.url)
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s"])
            acked, _, silent = await publish_round(nc, "s", [b"before-%03d" % i for i in range(50)])
            assert len(acked) == 50 and not silent
            ballast = fill(disk)
            answered = 0
            for r in range(3):  # several batches: the first failure must not silence the rest
                a, errs, silent = await publish_round(nc, "s", [b"%d-%03d" % (r, i) + b"y" * 2000 for i in range(40)])
                assert not silent, f"batch {r}: {silent} publishes got no reply"
                acked.update(a)
                answered += len(a) + len(errs)
                if server_kind == "natslab":
                    assert errs and {(e["code"], e["err_code"]) for e in errs} == {(503, 10077)}
            assert answered == 120
            r = await nc.request("$JS.API.STREAM.CREATE.T", json.dumps({"name": "T", "subjects": ["t"]}).encode(),
                                 timeout=5)
            body = json.loads(r.data)
            if server_kind == "natslab":
                assert body["error"]["err_code"] == 10049 and "No space left" in body["error"]["description"]
                assert not stream_dir(srv, "T").exists()
            ballast.unlink()  # space returns
            a, errs, silent = await publish_round(nc, "s", [b"after-%03d" % i for i in range(50)])
            assert len(a) == 50 and not errs and not silent
            acked.update(a)
            await check_acked(js, "S", acked)
            await nc.close()
            srv.restart()
            nc = await connect(srv.url)
            js = nc.jetstream()
            assert (await js.stream_info("S")).state.messages == len(acked)
            await check_acked(js, "S", acked)
            await nc.close()
        finally:
            srv.stop()
        if server_kind == "natslab":
            empty = [p.name for p in (stream_dir(srv, "S") / "msgs").glob("*.blk") if p.stat().st_size <= 8]
            assert not empty, f"empty blocks left behind: {empty}"
            log = srv.log()
            assert "Traceback" not in log and log.count("No space left on device") < 10
