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
from textual.widgets import Footer, Label, Static

from ..client.survival import Snapshot, StreamMarks, fault_marks, promise_verdict, redelivery_lines, take_snapshot
from ..widgets.footer import KeysFooter
from .faultforms import Amount, AmountPrompt, PickClient


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
    Fault("d", "drop_client", "Drop a client (pick it from a list)",
          "Cut this client's connection (nothing more is sent to it; the others go on)?"),
    Fault("z", "freeze", "Freeze the whole broker for N s",
          "Freeze the broker: nothing is sent to any client for a while."),
    Fault("u", "freeze_consumer", "Freeze one consumer's delivery for N s",
          "Freeze one consumer: it delivers nothing for a while (the rest goes on)."),
    Fault("s", "slow_disk", "Slow disk (each fsync +N ms)",
          "Make each fsync of the store slower (until the disk is made normal)."),
    Fault("f", "disk_full", "Disk full (the store refuses writes)",
          "Fill the disk: the store refuses writes until it is released?"),
    Fault("n", "normal", "Make the disk normal and thaw",
          "Release the disk, end slow disk and thaw every freeze?"),
)
AMOUNTS = {
    "freeze": Amount("Freeze for how many seconds?", "s", FREEZE_SECONDS, 0.1, 3600),
    "freeze_consumer": Amount("Freeze for how many seconds?", "s", FREEZE_SECONDS, 0.1, 3600, consumer=True),
    "slow_disk": Amount("Each fsync takes how many ms longer?", "ms", SLOW_DISK_MS, 1, 60000),
}
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
        yield KeysFooter()  # the menu's keys, not those of the pane beneath it

    def action_pick(self, name: str) -> None:
        self.dismiss(name)

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

    def __init__(self, fault: Fault, before: Snapshot, after: Snapshot, note: str,
                 marks: dict[str, StreamMarks] | None = None, verdict: tuple[bool, str] | None = None):
        super().__init__()
        self.fault, self.before, self.after, self.note = fault, before, after, note
        self.marks, self.verdict = marks or {}, verdict

    def compose(self) -> ComposeResult:
        yield Label(f"After: {self.fault.title}", id="report-title")
        yield Label(self.note, id="report-note")
        yield Label("› consumer: delivered, ack floor, unacked (stream seqs), redelivered, pending", id="report-legend")
        with VerticalScroll():
            yield Static(report_table(self.before, self.after), id="report-table")
            if self.verdict is not None:
                kept, said = self.verdict
                yield Static(Text(said, style="green" if kept else "bold red"), id="report-verdict")
            lines = redelivery_lines(self.marks)
            if lines:
                yield Static("\n".join(lines) + "\n(drawn on the stream ruler: Consumers tab)", id="report-marks")
            problems = self.before.problems + self.after.problems
            if problems:
                yield Static(Text("\n".join(problems), style="red"), id="report-problems")
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)


def open_faults(app) -> None:
    """The Faults menu, then what the fault needs (a client from the list, a
    number), the confirmation, then the fault and the report."""
    if app.embedded is None:  # attached to a remote server: there is no such menu
        return
    from ..widgets.confirm import ConfirmDialog

    # record the syncs from the first opening on (a power cut needs them)
    app.run_worker(asyncio.to_thread(app.embedded.arm_power_cut), group="faults-arm", exit_on_error=False)

    def picked(name: str | None) -> None:
        if not name:
            return
        fault = BY_NAME[name]
        if name == "drop_client":
            app.run_worker(pick_client(fault), group="faults-pick", exclusive=True, exit_on_error=False)
        elif name in AMOUNTS:
            app.run_worker(ask_amount(fault), group="faults-pick", exclusive=True, exit_on_error=False)
        else:
            confirm(fault)

    async def pick_client(fault: Fault) -> None:
        try:
            clients = await asyncio.to_thread(app.embedded.clients)
        except Exception as exc:
            app.notify(f"{fault.title}: {exc}", severity="error", timeout=8)
            return
        own = app.client.client_id if app.client is not None else None

        def client_picked(cid: int | None) -> None:
            if cid is None:
                return
            who = next((c for c in clients if c.cid == cid), None)
            label = f"{who.name or '(no name)'} (cid {cid}, {who.ip}:{who.port})" if who else f"cid {cid}"
            mine = " — that is this workbench's own connection (it reconnects)" if cid == own else ""
            confirm(Fault(fault.key, fault.name, f"Drop client {label}", f"Cut client {label}'s connection?{mine}",
                          (cid,)))
        app.push_screen(PickClient(clients, own), client_picked)

    async def ask_amount(fault: Fault) -> None:
        amount = AMOUNTS[fault.name]
        consumers: list[str] = []
        if amount.consumer and app.client is not None:
            try:
                for st in await app.client.list_streams():
                    if st.consumer_count and not st.offline:
                        consumers += [f"{st.name}/{c.name}" for c in await app.client.list_consumers(st.name)]
            except Exception as exc:
                app.notify(f"{fault.title}: {exc}", severity="error", timeout=8)
                return

        def answered(args: tuple | None) -> None:
            if args is None:
                return
            unit = f"{args[0]:g} {amount.unit}"
            title = {"freeze": f"Freeze the whole broker for {unit}",
                     "freeze_consumer": f"Freeze {args[1] if len(args) > 1 else ''} for {unit}",
                     "slow_disk": f"Slow disk (each fsync +{unit})"}[fault.name]
            run(Fault(fault.key, fault.name, title, fault.question, args))
        app.push_screen(AmountPrompt(fault, amount, consumers), answered)

    def run(fault: Fault) -> None:
        app.run_worker(run_fault(app, fault), group="faults", exclusive=True, exit_on_error=False)

    def confirm(fault: Fault) -> None:
        app.push_screen(ConfirmDialog(fault.question, confirm_label="Do it"), lambda yes: yes and run(fault))

    app.push_screen(FaultsMenu(), picked)


async def _call(app, name: str, *args):
    return await asyncio.to_thread(app.embedded.fault, name, *args)


def _seen(app, snapshot: Snapshot) -> dict:
    """What the app saw of each consumer's sequences (the ruler's lane states)."""
    from ..widgets.ruler import delivery_log, seen_states

    log = delivery_log(app)
    now = time.monotonic()
    return {key: seen_states(log[key], 0, now) for key in snapshot.consumers if key in log}


async def run_fault(app, fault: Fault) -> None:
    client = app.client
    if app.embedded is None or client is None:
        return
    if fault.name == "power_cut":  # recording for sure (the menu's arming may still run)
        await asyncio.to_thread(app.embedded.arm_power_cut)
    # the state just before the fault, taken once it is confirmed: the report
    # and the durability promise judge against this, not the menu's opening
    before = await take_snapshot(client)
    started = time.monotonic()
    cut = None
    try:
        if fault.name == "normal":
            for name in ("release_disk", "thaw"):
                await _call(app, name)
            await _call(app, "slow_disk", 0)
        elif fault.name == "freeze_consumer":
            cut = await _call(app, "freeze", fault.args[0], fault.args[1])
        else:
            cut = await _call(app, fault.name, *fault.args)
    except Exception as exc:  # the broker refused: say so, the app goes on
        app.notify(f"{fault.title}: {exc}", severity="error", timeout=8)
        return
    if fault.name in RESTARTS:  # the broker started again: wait for our reconnect (bounded)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (app.client is not None and app.client.connected):
            await asyncio.sleep(0.05)
    if fault.name in ("freeze", "freeze_consumer", "slow_disk"):
        # a frozen broker answers nothing: no report; the menu's n ends it early
        app.notify(f"{fault.title} · F n: make normal and thaw", title="Fault", timeout=8)
        return
    after = await take_snapshot(app.client)
    reconnected = app.client is not None and app.client.connected
    note = (f"took {time.monotonic() - started:.1f} s · "
            + ("the workbench reconnected" if reconnected else "NOT reconnected")
            if fault.name in RESTARTS
            else f"cut connection(s) {', '.join(map(str, cut or ()))}" if fault.name == "drop_client"
            else "the broker keeps running")
    marks = fault_marks(before, after, _seen(app, after))
    verdict = promise_verdict(before, after, marks) if fault.name in RESTARTS else None
    app.fault_marks = marks
    app.push_screen(FaultReport(fault, before, after, note, marks, verdict))
