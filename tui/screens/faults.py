"""The Faults room (embedded broker only): a menu of broker faults, each one
key and a confirmation, and a "before / after" report of what survived.

The fault calls go through the broker handle (``EmbeddedBroker.fault`` in
tui/broker.py) on a thread; the snapshots go through nats-py
(tui/client/survival.py). Not offered at all when attached to a remote
server: the app hides the key and the palette entry.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, Label, Static

from ..client.survival import Snapshot, take_snapshot


@dataclass(frozen=True)
class Fault:
    key: str
    name: str  # the broker handle's call
    title: str
    question: str
    args: tuple = ()


FREEZE_SECONDS = 10
SLOW_DISK_MS = 200

FAULTS = (
    Fault("r", "restart", "Restart the broker cleanly",
          "Restart the embedded broker cleanly (everything written and synced)?"),
    Fault("c", "crash", "Crash it (what a SIGKILL leaves)",
          "Crash the embedded broker as a SIGKILL would, then start it again from the store?"),
    Fault("p", "power_cut", "Power cut (unsynced writes lost)",
          "Cut the power: every write not yet fsynced is lost, then the broker starts again?"),
    Fault("d", "drop_client", "Drop a client (by name or id)",
          "Cut this client's connection (nothing more is sent to it; the others go on)?"),
    Fault("z", "freeze", f"Freeze the whole broker for {FREEZE_SECONDS} s",
          f"Freeze the broker: nothing is sent to any client for {FREEZE_SECONDS} s?", (FREEZE_SECONDS,)),
    Fault("s", "slow_disk", f"Slow disk (each fsync +{SLOW_DISK_MS} ms)",
          f"Make each fsync of the store take {SLOW_DISK_MS} ms longer (until the disk is made normal)?",
          (SLOW_DISK_MS,)),
    Fault("f", "disk_full", "Disk full (the store refuses writes)",
          "Fill the disk: the store refuses writes until it is released?"),
    Fault("n", "normal", "Make the disk normal and thaw",
          "Release the disk, end slow disk and thaw every freeze?"),
)
BY_NAME = {f.name: f for f in FAULTS}
# the faults after which the broker starts again: the report waits for the reconnect
RESTARTS = {"restart", "crash", "power_cut"}


class FaultsMenu(ModalScreen[str | None]):
    """One key per fault; the app asks for confirmation before running it."""

    BINDINGS = [Binding("escape", "close", "Close", id="faults.close"),
                *(Binding(f.key, f"pick('{f.name}')", f.title, id=f"faults.{f.name}", show=False) for f in FAULTS)]
    DEFAULT_CSS = """
    FaultsMenu { align: center middle; }
    FaultsMenu > Vertical {
        width: 62; height: auto; max-height: 100%; padding: 1 2;
        border: thick $warning; background: $surface;
    }
    FaultsMenu .title { text-style: bold; margin-bottom: 1; }
    FaultsMenu .hint { color: $text-muted; margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Faults — the embedded broker", classes="title")
            for f in FAULTS:
                yield Label(Text.assemble((f" {f.key} ", "bold reverse"), "  ", f.title), id=f"fault-{f.name}")
            yield Label("each asks first, then shows before → after · esc: close", classes="hint")

    def action_pick(self, name: str) -> None:
        self.dismiss(name)

    def action_close(self) -> None:
        self.dismiss(None)


class PickClient(ModalScreen[str | None]):
    """Which connection to drop: its client name or its id (the Connections pane lists both)."""

    BINDINGS = [Binding("escape", "close", "Cancel", id="faults.pick.close")]
    DEFAULT_CSS = """
    PickClient { align: center middle; }
    PickClient > Vertical { width: 60; height: auto; padding: 1 2; border: thick $warning; background: $surface; }
    """

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Drop which client? Its name or connection id (see the Connections pane):")
            yield Input(placeholder="name or cid", id="faults-client")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_close(self) -> None:
        self.dismiss(None)


def _delta(before: int | None, after: int | None) -> Text:
    if before is None:
        return Text(f"— → {after}", style="green")
    if after is None:
        return Text(f"{before} → gone", style="bold red")
    if before == after:
        return Text(str(after))
    return Text(f"{before} → {after}", style="bold yellow")


def report_table(before: Snapshot, after: Snapshot) -> Table:
    """One row per stream, consumer and bucket: before → after where it changed."""
    table = Table(expand=True, box=None, pad_edge=False, header_style="bold")
    table.add_column("", no_wrap=True, ratio=3)
    for col in ("msgs|deliv", "1st|floor", "last|unack", "redel", "pending"):
        table.add_column(col, no_wrap=True, ratio=2)
    for name in sorted(before.streams.keys() | after.streams.keys()):
        b, a = before.streams.get(name), after.streams.get(name)
        table.add_row(Text(f"stream {name}", style="bold"),
                      _delta(b and b.messages, a and a.messages),
                      _delta(b and b.first_seq, a and a.first_seq),
                      _delta(b and b.last_seq, a and a.last_seq), "", "")
        for key in sorted(k for k in before.consumers.keys() | after.consumers.keys() if k[0] == name):
            cb, ca = before.consumers.get(key), after.consumers.get(key)
            table.add_row(f"  › {key[1]}",
                          _delta(cb and cb.delivered, ca and ca.delivered),
                          _delta(cb and cb.ack_floor, ca and ca.ack_floor),
                          _delta(cb and cb.ack_pending, ca and ca.ack_pending),
                          _delta(cb and cb.redelivered, ca and ca.redelivered),
                          _delta(cb and cb.pending, ca and ca.pending))
    for bucket in sorted(before.kv.keys() | after.kv.keys()):
        table.add_row(f"kv {bucket} rev", _delta(before.kv.get(bucket), after.kv.get(bucket)), "", "", "", "")
    return table


class FaultReport(Screen):
    """What survived: before / after, side by side."""

    BINDINGS = [Binding("escape", "close", "Back", id="faultreport.close"),
                Binding("q", "close", "Back", id="faultreport.q", show=False)]
    DEFAULT_CSS = """
    FaultReport #report-title { text-style: bold; padding: 0 1; }
    FaultReport #report-note { color: $text-muted; padding: 0 1; }
    FaultReport #report-legend { color: $text-muted; padding: 0 1; }
    FaultReport VerticalScroll { padding: 0 1; }
    """

    def __init__(self, fault: Fault, before: Snapshot, after: Snapshot, note: str):
        super().__init__()
        self.fault, self.before, self.after, self.note = fault, before, after, note

    def compose(self) -> ComposeResult:
        yield Label(f"After: {self.fault.title}", id="report-title")
        yield Label(self.note, id="report-note")
        yield Label("› consumer: delivered, ack floor, unacked (stream seqs), redelivered, pending", id="report-legend")
        with VerticalScroll():
            yield Static(report_table(self.before, self.after), id="report-table")
            problems = self.before.problems + self.after.problems
            if problems:
                yield Static(Text("\n".join(problems), style="red"), id="report-problems")
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)


def open_faults(app) -> None:
    """The Faults menu, then the confirmation, then the fault and the report."""
    if app.embedded is None:  # attached to a remote server: there is no such menu
        return
    from ..widgets.confirm import ConfirmDialog

    app.run_worker(asyncio.to_thread(app.embedded.arm_power_cut), group="faults-arm", exit_on_error=False)

    def picked(name: str | None) -> None:
        if not name:
            return
        fault = BY_NAME[name]
        if name == "drop_client":
            def client_picked(who: str | None) -> None:
                if who:
                    arg = int(who) if who.isdigit() else who
                    confirm(Fault(fault.key, fault.name, f"Drop client {who}", f"Cut client {who}'s connection?", (arg,)))
            app.push_screen(PickClient(), client_picked)
            return
        confirm(fault)

    def confirm(fault: Fault) -> None:
        app.push_screen(ConfirmDialog(fault.question, confirm_label="Do it"),
                        lambda yes: yes and app.run_worker(run_fault(app, fault), group="faults",
                                                           exclusive=True, exit_on_error=False))

    app.push_screen(FaultsMenu(), picked)


async def _call(app, name: str, *args) -> None:
    await asyncio.to_thread(app.embedded.fault, name, *args)


async def run_fault(app, fault: Fault) -> None:
    client = app.client
    if app.embedded is None or client is None:
        return
    before = await take_snapshot(client)
    started = time.monotonic()
    cut = None
    try:
        if fault.name == "normal":
            for name in ("release_disk", "thaw"):
                await _call(app, name)
            await _call(app, "slow_disk", 0)
        else:
            cut = await asyncio.to_thread(app.embedded.fault, fault.name, *fault.args)
    except Exception as exc:  # the broker refused: say so, the app goes on
        app.notify(f"{fault.title}: {exc}", severity="error", timeout=8)
        return
    if fault.name in RESTARTS:  # the broker started again: wait for our reconnect (bounded)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (app.client is not None and app.client.connected):
            await asyncio.sleep(0.05)
    if fault.name == "freeze":
        after = before  # a frozen broker answers nothing: the report comes once it thaws
        app.notify(f"Broker frozen for {FREEZE_SECONDS} s", timeout=FREEZE_SECONDS)
        return
    after = await take_snapshot(app.client)
    reconnected = app.client is not None and app.client.connected
    note = (f"took {time.monotonic() - started:.1f} s · "
            + ("the workbench reconnected" if reconnected else "NOT reconnected")
            if fault.name in RESTARTS
            else f"cut connection(s) {', '.join(map(str, cut or ()))}" if fault.name == "drop_client"
            else "the broker keeps running")
    app.push_screen(FaultReport(fault, before, after, note))
