"""The Faults menu and the before / after report at 80x24. Pinned display on
nats-server (the pictures do not depend on the broker); the report is drawn
from two fixed snapshots, the shape a crash leaves (acked stays acked, the 2
unacked come back, judged: the promise kept, 2 to be redelivered). Update with ``--snapshot-update``; look at them."""

from __future__ import annotations

from natslab.tui.client.survival import ConsumerState, Snapshot, StreamState, fault_marks, promise_verdict
from natslab.tui.screens.faults import BY_NAME, FaultReport, FaultsMenu

from .test_snapshots import app_for, finish, ready

SIZE = (80, 24)


def test_faults_menu(snap_compare, nats_server_url):
    async def run_before(pilot):
        await ready(pilot, 0)
        pilot.app.push_screen(FaultsMenu())
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)


def test_fault_report(snap_compare, nats_server_url):
    before = Snapshot(streams={"FAULTDEMO": StreamState(5, 1, 5), "KV_cfg": StreamState(3, 1, 3)},
                      consumers={("FAULTDEMO", "FD"): ConsumerState(3, 1, 2, 0, 2)}, kv={"cfg": 3})
    after = Snapshot(streams={"FAULTDEMO": StreamState(5, 1, 5), "KV_cfg": StreamState(3, 1, 3)},
                     consumers={("FAULTDEMO", "FD"): ConsumerState(1, 1, 0, 0, 4)}, kv={"cfg": 3})

    async def run_before(pilot):
        await ready(pilot, 0)
        marks = fault_marks(before, after)
        pilot.app.push_screen(FaultReport(BY_NAME["crash"], before, after, "took 0.4 s · the workbench reconnected",
                                          marks, promise_verdict(before, after, marks)))
        await finish(pilot)

    assert snap_compare(app_for(nats_server_url), terminal_size=SIZE, run_before=run_before)
