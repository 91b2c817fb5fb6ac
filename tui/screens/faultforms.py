"""The Faults menu's small forms: which client to drop (a list of the
broker's connections) and a fault's number (seconds, ms) with its default,
checked as typed (tui/screens/faults.py opens them)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Label, Select

from ..widgets.footer import KeysFooter


@dataclass(frozen=True)
class Amount:
    """The number a fault asks for first (a small form with a default)."""

    label: str
    unit: str
    default: float
    low: float
    high: float
    consumer: bool = False  # also asks which consumer



class PickClient(ModalScreen[int | None]):
    """Which connection to drop: a list of the broker's clients (name, id,
    ip:port, lang), the workbench's own marked; Enter drops the one under
    the cursor (after the confirmation). Dismissed with its cid."""

    BINDINGS = [Binding("escape", "close", "Cancel", id="faults.pick.close")]
    DEFAULT_CSS = """
    PickClient { align: center middle; }
    PickClient > Vertical { width: 76; height: auto; max-height: 100%; padding: 0 1;
                            border: thick $warning; background: $surface; }
    PickClient DataTable { height: auto; max-height: 14; }
    PickClient #pick-note { color: $text-muted; }
    """

    def __init__(self, clients: list, own_cid: int | None):
        super().__init__()
        self.clients, self.own_cid = clients, own_cid

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Drop which client? ↑↓ pick, enter drops it (asks first):")
            yield DataTable(id="faults-clients", cursor_type="row", zebra_stripes=True)
            yield Label("", id="pick-note")
        yield KeysFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("name", "cid", "ip:port", "lang")
        for c in self.clients:
            name = c.name or "(no name)"
            if c.cid == self.own_cid:
                name += " (this workbench)"
            table.add_row(name, str(c.cid), f"{c.ip}:{c.port}", f"{c.lang} {c.version}".strip(), key=str(c.cid))
        self.query_one("#pick-note", Label).update(
            f"{len(self.clients)} connection(s)" if self.clients else "no client is connected")
        others = [i for i, c in enumerate(self.clients) if c.cid != self.own_cid]
        if others:  # the cursor starts on someone else's connection
            table.move_cursor(row=others[0])
        table.focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.dismiss(int(event.row_key.value))

    def action_close(self) -> None:
        self.dismiss(None)


class AmountPrompt(ModalScreen[tuple | None]):
    """The fault's number (seconds, ms) with its default, checked as typed:
    a bad number is said inline and Enter does nothing; Enter on a good one
    runs the fault (this form is the confirmation). For a consumer freeze,
    which consumer too. Dismissed with the fault's arguments."""

    BINDINGS = [Binding("escape", "close", "Cancel", id="faults.amount.close")]
    DEFAULT_CSS = """
    AmountPrompt { align: center middle; }
    AmountPrompt > Vertical { width: 64; height: auto; padding: 1 2; border: thick $warning; background: $surface; }
    AmountPrompt #amount-error { color: $error; height: auto; }
    AmountPrompt .hint { color: $text-muted; }
    AmountPrompt .question { width: 100%; margin-bottom: 1; }
    """

    def __init__(self, fault, amount: Amount, consumers: list[str] = ()):
        super().__init__()
        self.fault, self.amount, self.consumers = fault, amount, list(consumers)

    def compose(self) -> ComposeResult:
        a = self.amount
        with Vertical():
            yield Label(self.fault.question, classes="question")
            if a.consumer and self.consumers:
                yield Label("Which consumer?")
                yield Select([(c, c) for c in self.consumers], allow_blank=False, value=self.consumers[0],
                             id="amount-consumer")
            elif a.consumer:
                yield Label("There is no consumer yet: make one first.", id="amount-none")
            yield Label(f"{a.label} ({a.unit}, default {a.default:g})")
            yield Input(f"{a.default:g}", id="amount-value")
            yield Label("", id="amount-error")
            yield Label("enter: do it · esc: cancel", classes="hint")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#amount-value", Input).focus()
        self.query_one("#amount-error", Label).update(self.problem())

    def problem(self) -> str:
        """What is wrong with the form ('' when nothing)."""
        a, text = self.amount, self.query_one("#amount-value", Input).value.strip()
        try:
            value = float(text)
        except ValueError:
            return f"not a number: {text!r}" if text else f"a number of {a.unit}, please"
        if value != value or not a.low <= value <= a.high:  # (NaN too)
            return f"between {a.low:g} and {a.high:g} {a.unit}"
        if a.consumer and not self.consumers:
            return "no consumer to freeze (make one first)"
        return ""

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#amount-error", Label).update(self.problem())

    def on_input_submitted(self, event: Input.Submitted) -> None:
        wrong = self.problem()
        self.query_one("#amount-error", Label).update(wrong)
        if wrong:
            return
        value = float(event.value)
        if self.amount.consumer:
            self.dismiss((value, self.query_one("#amount-consumer", Select).value))
        else:
            self.dismiss((value,))

    def action_close(self) -> None:
        self.dismiss(None)
