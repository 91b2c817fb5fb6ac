"""Backup and restore from the streams pane against a real broker: a stream
with a consumer goes to a directory, is deleted, comes back from it with the
same messages and the consumer where it was; progress is reported on the way;
a restore over an existing stream shows the server's refusal."""

from __future__ import annotations

import json
from pathlib import Path

from nats.js import api
from textual.widgets import Input

from natslab.tui.widgets.form import FormField

from natscli import nats_cli  # noqa: F401 (a fixture: natscli v0.5.0, or a skip)

from .conftest import connected, wait_for


async def seed(js) -> list:
    await js.add_stream(name="BK", subjects=["bk.>"])
    for i in range(40):
        await js.publish(f"bk.{i % 3}", b"payload-%d " % i * 50, headers={"Nats-Msg-Id": str(i)})
    await js.add_consumer("BK", api.ConsumerConfig(durable_name="dur", ack_policy="explicit", ack_wait=60))
    psub = await js.pull_subscribe_bind("dur", "BK")
    for m in (await psub.fetch(6, timeout=2))[:4]:
        await m.ack_sync()
    return [await js.get_msg("BK", seq) for seq in range(1, 41)]


def dialog_of(app, cls: str):
    return app.screen if type(app.screen).__name__ == cls else None


async def submit_folder(app, pilot, key: str, cls: str, folder: Path) -> list[tuple[int, int]]:
    """``key`` opens dialog ``cls`` (backup or restore), which is given
    ``folder`` and submitted; returns the list its progress reports
    (done, total) go to as it works."""
    await pilot.press(key)
    await wait_for(pilot, lambda: dialog_of(app, cls) and app.screen.query("#directory"), what=f"{cls} open")
    seen: list[tuple[int, int]] = []
    dialog = app.screen
    report = dialog.report
    dialog.report = lambda done, total: (seen.append((done, total)), report(done, total))
    app.screen.query_one("#directory", Input).value = str(folder)
    await pilot.pause(0.2)  # let the layout settle (an error line moves the button)
    await pilot.click("#form-submit")
    return seen


async def test_backup_delete_restore_round_trip(make_app, outside, tmp_path):
    js = outside.jetstream()
    before = await seed(js)
    ci0 = await js.consumer_info("BK", "dur")
    folder = tmp_path / "bk"
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        app.jump_to_stream("BK")
        await wait_for(pilot, lambda: app.screen.query_one("StreamsPane").selected == "BK", what="BK selected")
        seen = await submit_folder(app, pilot, "b", "BackupDialog", folder)
        await wait_for(pilot, lambda: dialog_of(app, "BackupDialog") is None, timeout=10, what="backup done")
        meta = json.loads((folder / "backup.json").read_text())
        assert meta["config"]["name"] == "BK" and meta["state"]["messages"] == 40
        assert meta["state"]["consumer_count"] == 1
        size = (folder / "stream.arc.s2").stat().st_size
        assert seen and seen[-1] == (size, size) and size > 0
        assert not (folder / "stream.arc.s2.partial").exists()

        await js.delete_stream("BK")
        await wait_for(pilot, lambda: "BK" not in app.screen.query_one("StreamsPane").streams, what="BK gone")
        seen = await submit_folder(app, pilot, "R", "RestoreDialog", folder)
        await wait_for(pilot, lambda: dialog_of(app, "RestoreDialog") is None, timeout=10, what="restore done")
        assert seen[-1] == (size, size)
        await wait_for(pilot, lambda: app.screen.query_one("StreamsPane").selected == "BK", what="BK back and selected")

        after = [await js.get_msg("BK", seq) for seq in range(1, 41)]
        assert [(m.seq, m.subject, m.data, m.headers) for m in after] == [
            (m.seq, m.subject, m.data, m.headers) for m in before]
        ci = await js.consumer_info("BK", "dur")
        assert (ci.delivered.stream_seq, ci.ack_floor.stream_seq, ci.num_ack_pending, ci.num_pending) == (
            ci0.delivered.stream_seq, ci0.ack_floor.stream_seq, ci0.num_ack_pending, ci0.num_pending)

        # the stream is back: restoring it again is refused, and the dialog says why
        await submit_folder(app, pilot, "R", "RestoreDialog", folder)
        field = app.screen.query_one("#field-directory", FormField)
        await wait_for(pilot, lambda: "already in use" in field.error_text, what="the server's refusal")
        # a directory that holds no backup is the dialog's own error
        app.screen.query_one("#directory", Input).value = str(tmp_path)
        await pilot.pause(0.2)  # let the layout settle (an error line moves the button)
        await pilot.click("#form-submit")
        await wait_for(pilot, lambda: "not a stream backup" in field.error_text, what=f"not a backup: {field.error_text!r}")
        await pilot.press("escape")


async def test_backups_move_between_the_workbench_and_the_nats_cli(make_app, outside, broker_url, tmp_path, nats_cli):
    """A `nats stream backup` restores in the workbench, and the workbench's backup
    restores with `nats stream restore` (natscli v0.5.0; skipped without it)."""
    import asyncio

    js = outside.jetstream()
    before = await seed(js)
    run = lambda *a: nats_cli.run(broker_url, *a, timeout=30)  # noqa: E731
    cli_dir = tmp_path / "by-cli"
    done = await asyncio.to_thread(run, "stream", "backup", "BK", str(cli_dir), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    await js.delete_stream("BK")

    from natslab.tui.client.backup import backup_stream, restore_stream

    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await connected(app, pilot)
        restored = await restore_stream(app.client, cli_dir)
        assert (restored.name, restored.messages, restored.consumer_count) == ("BK", 40, 1)
        assert [(m.seq, m.data) for m in [await js.get_msg("BK", s) for s in (1, 40)]] == [
            (before[0].seq, before[0].data), (before[-1].seq, before[-1].data)]
        ours = tmp_path / "by-workbench"
        await backup_stream(app.client, "BK", ours)
    await js.delete_stream("BK")
    done = await asyncio.to_thread(run, "stream", "restore", str(ours), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    info = await js.stream_info("BK")
    assert (info.state.messages, info.state.consumer_count) == (40, 1)
    assert (await js.consumer_info("BK", "dur")).ack_floor.stream_seq == 4
