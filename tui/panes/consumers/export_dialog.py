"""Where to write a consumer's history report (``E`` in Consumers): a path,
the user data dir's offered; Enter writes, Esc cancels."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from ...widgets.footer import KeysFooter


class ExportHistoryDialog(ModalScreen[Path | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="export_history.cancel"),
    ]
    DEFAULT_CSS = """
    ExportHistoryDialog { align: center middle; }
    ExportHistoryDialog > Vertical {
        width: 76; max-width: 100%; height: auto; padding: 1 2;
        border: thick $primary; background: $surface;
    }
    ExportHistoryDialog Label { width: 100%; margin-bottom: 1; }
    """

    def __init__(self, what: str, path: Path):
        super().__init__()
        self.what, self.path = what, path

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Write the history of {self.what} as text to (Enter; Esc cancels):")
            yield Input(str(self.path), id="export-history-path")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        self.dismiss(Path(value).expanduser() if value else None)

    def action_cancel(self) -> None:
        self.dismiss(None)
