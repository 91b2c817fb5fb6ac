"""A yes/no dialog for destructive actions (delete stream, delete consumer ...)."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label

from .footer import KeysFooter


class ConfirmDialog(ModalScreen[bool]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="confirm.cancel"),
        Binding("y", "confirm", "Yes", id="confirm.yes"),
    ]
    DEFAULT_CSS = """
    ConfirmDialog { align: center middle; }
    ConfirmDialog > Vertical {
        width: 64; height: auto; padding: 1 2;
        border: thick $error; background: $surface;
    }
    ConfirmDialog .question { width: 100%; margin-bottom: 1; }
    ConfirmDialog Horizontal { height: auto; align-horizontal: right; }
    ConfirmDialog Button { margin-left: 1; }
    """

    def __init__(self, question: str, confirm_label: str = "Delete"):
        super().__init__()
        self.question = question
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.question, classes="question")
            with Horizontal():
                yield Button("Cancel", id="cancel")
                yield Button(self.confirm_label, id="confirm", variant="error")
        yield KeysFooter()  # the dialog's keys, not those of the pane beneath it

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    @on(Button.Pressed, "#confirm")
    def action_confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)
