"""`?`: every key binding active where you pressed it, with its description."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..widgets.footer import KeysFooter

# one paragraph, wrapped to the box (line breaks in it broke every line in two at 80 columns)
INTRO = (
    "natslab talks to the broker only through nats-py, so everything here works on the "
    "embedded broker and on any nats-server. ctrl+p opens the command palette: jump to a "
    "stream or consumer by name, switch theme, run a demo. T walks through the whole "
    "walkthrough (core vs JetStream, consumers, redelivery, retention, KV) as a guided tour."
)


def _works(node, action: str) -> bool:
    """False for a key its node turns off (check_action False: --read-only's
    write keys): help lists only what works, as the footer does."""
    from textual.actions import parse

    try:
        _, name, params = parse(action)
    except Exception:  # an action string textual cannot parse is listed as it is
        return True
    return node.check_action(name, params) is not False


class HelpScreen(ModalScreen):
    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close help", id="help.close")]
    FOOTER_PINS = ("q",)  # ? closes the help it would open: only the way to quit is pinned

    def __init__(self, bindings: list[tuple[str, str, str]]):
        super().__init__()
        self.bindings = bindings

    @classmethod
    def for_bindings(cls, active: dict) -> "HelpScreen":
        """The keys active where ``?`` was pressed (Screen.active_bindings):
        natslab's own (they all have ids) first, generic widget keys after."""
        rows: list[list] = []
        seen = set()
        same: dict[tuple, list] = {}  # one row for the keys of one action (`?` and f1: Help)
        for key, found in active.items():
            b = found.binding
            if not b.description or (b.description, key) in seen or not _works(found.node, b.action):
                continue
            seen.add((b.description, key))
            where = type(found.node).__name__.replace("Pane", "").replace("NatslabApp", "everywhere").replace("MainScreen", "everywhere")
            shown = b.key_display or key
            if (row := same.get((b.action, b.description, where))) is not None:
                row[1] += f", {shown}"
                continue
            row = same[(b.action, b.description, where)] = [bool(b.id), shown, b.description, where]
            rows.append(row)
        rows.sort(key=lambda r: not r[0])
        return cls([tuple(r[1:]) for r in rows])

    def compose(self) -> ComposeResult:
        table = Table(show_header=True, header_style="bold", expand=True, box=None)
        table.add_column("Key", no_wrap=True)
        table.add_column("What it does")
        table.add_column("Where", style="dim")
        for key, description, where in self.bindings:
            table.add_row(Text(key), Text(description), Text(where))
        with VerticalScroll(id="help-box"):
            yield Static(Text("natslab — keys", style="bold"), id="help-title")
            yield Static(Text(INTRO), id="help-intro")
            yield Static(table, id="help-table")
        yield KeysFooter()  # how to close it, not the keys of the pane beneath

    def action_dismiss(self) -> None:
        self.dismiss()
