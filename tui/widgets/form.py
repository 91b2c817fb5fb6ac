"""Form building blocks: a field with its inline error, a modal form base, and
the base of the forms that build a JetStream config (stream, consumer).

Every form validates on submit: client-side problems and the server's error
both land next to the field they are about, never in a crash.
"""

from __future__ import annotations

import re
from typing import Iterable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, Select, Static

from .footer import KeysFooter


class FormField(Vertical):
    """A label, an input widget and a line for its error."""

    DEFAULT_CSS = """
    FormField { height: auto; margin-bottom: 0; }
    /* a label longer than the form wraps instead of being cut ("… a mirror has no subje") */
    FormField > .field-label { color: $text-muted; width: 100%; }
    FormField > .field-error { color: $text-error; display: none; }
    FormField.-invalid > .field-error { display: block; }
    FormField.-invalid Input, FormField.-invalid SelectCurrent { border: tall $error; }
    """

    def __init__(self, label: str, widget: Widget, *, field_id: str):
        super().__init__(id=f"field-{field_id}")
        self.label = label
        self.widget = widget
        self.field_id = field_id

    def compose(self) -> ComposeResult:
        yield Label(self.label, classes="field-label")
        yield self.widget
        yield Static("", classes="field-error", id=f"error-{self.field_id}")

    def set_error(self, message: str | None) -> None:
        self.set_class(bool(message), "-invalid")
        self.query_one(".field-error", Static).update(message or "")

    @property
    def error_text(self) -> str:
        return str(self.query_one(".field-error", Static).render()) if self.has_class("-invalid") else ""


class ModalForm(ModalScreen):
    """Base for dialogs with fields: ``fields()`` builds them, ``submit()`` acts."""

    TITLE_TEXT = "Form"
    SUBMIT_LABEL = "Save"
    FIELDS_MAX_HEIGHT = 26  # rows of fields in sight; fewer when the screen is short (_fit_fields)
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="form.cancel"),
        Binding("ctrl+s", "submit", "Save", id="form.submit"),
    ]
    DEFAULT_CSS = """
    ModalForm { align: center middle; }
    ModalForm > #form-box {
        width: 76; max-height: 95%; height: auto;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    ModalForm #form-title { text-style: bold; margin-bottom: 1; }
    ModalForm #form-fields { height: auto; max-height: 26; }
    ModalForm #form-error { color: $text-error; display: none; }
    ModalForm #form-error.-shown { display: block; }
    ModalForm #form-code { display: none; height: auto; color: $text-muted; padding: 0 1; border: round $panel; }
    /* docked: in a short terminal the fields scroll and the buttons stay in sight */
    ModalForm #form-buttons { height: auto; align-horizontal: right; dock: bottom; }
    ModalForm #form-buttons Button { margin-left: 1; }
    """

    def fields(self) -> Iterable[FormField]:
        return []

    def compose(self) -> ComposeResult:
        with Vertical(id="form-box"):
            yield Label(self.TITLE_TEXT, id="form-title")
            with VerticalScroll(id="form-fields"):
                yield from self.fields()
            yield Static("", id="form-error")
            yield Static("", id="form-code")
            with Horizontal(id="form-buttons"):
                yield Button("Cancel", id="form-cancel")
                yield Button(self.SUBMIT_LABEL, id="form-submit", variant="primary")
        yield KeysFooter()  # the dialog's keys, not those of the pane beneath it

    def on_mount(self) -> None:
        # typing goes to the first field at once, as in any dialog
        for field in self.query(FormField):
            if field.widget.focusable:
                field.widget.focus()
                break
        self.call_after_refresh(self._fit_fields)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit_fields)

    def _fit_fields(self) -> None:
        """Keep the fields above the docked buttons. The box is capped at 95% of
        the screen, but the fields (auto height, at most 26) were not: at 80x24
        they ran 11 rows under the buttons, and a field Tabbed to there (the
        stream form's Replicas) had the focus and its error out of sight, as
        the scroll thought it was shown."""
        try:
            box = self.query_one("#form-box")
            fields = self.query_one("#form-fields")
        except NoMatches:
            return
        footer = sum(w.outer_size.height for w in self.query(KeysFooter))
        room = box.styles.max_height
        if room is None or not self.size.height:
            return
        from textual.geometry import Size

        area = Size(self.size.width, max(0, self.size.height - footer))
        limit = int(room.resolve(area, area))
        others = sum(w.outer_size.height + w.styles.margin.height
                     for w in box.children if w is not fields and w.display)
        fitted = max(3, min(self.FIELDS_MAX_HEIGHT, limit - box.styles.gutter.height - others))
        current = fields.styles.max_height
        if current is None or current.value != fitted:
            fields.styles.max_height = fitted

    def value(self, field_id: str) -> str:
        widget = self.query_one(f"#field-{field_id}", FormField).widget
        if isinstance(widget, Select):
            return "" if widget.value is Select.BLANK else str(widget.value)
        if isinstance(widget, Input):
            return widget.value.strip()
        return str(getattr(widget, "value", ""))

    def clear_errors(self) -> None:
        for f in self.query(FormField):
            f.set_error(None)
        self.show_form_error(None)

    def show_error(self, field_id: str | None, message: str) -> None:
        if field_id:
            try:
                self.query_one(f"#field-{field_id}", FormField).set_error(message)
                return
            except NoMatches:  # an error about a field this form does not have
                pass
        self.show_form_error(message)

    def show_form_error(self, message: str | None) -> None:
        box = self.query_one("#form-error", Static)
        box.update(message or "")
        box.set_class(bool(message), "-shown")
        self.call_after_refresh(self._fit_fields)  # the fields make room for it

    def show_code(self, code: str) -> None:
        """Copy the equivalent code and show it under the form."""
        self.app.copy_to_clipboard(code)
        self.show_form_error(None)
        box = self.query_one("#form-code", Static)
        box.update(Text(code))
        box.display = True
        self.call_after_refresh(self._fit_fields)

    @on(Button.Pressed, "#form-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#form-submit")
    @on(Input.Submitted)
    def action_submit(self) -> None:
        self.clear_errors()
        self.submit()

    def submit(self) -> None:
        raise NotImplementedError


class ConfigForm(ModalForm):
    """A form that builds a JetStream config: ``build_config()`` reads the
    fields (None once it has shown their errors), ``save()`` sends it, and
    ctrl+y shows and copies it as code (``config_code()``)."""

    BINDINGS = ModalForm.BINDINGS + [
        Binding("ctrl+y", "copy_code", "Copy as code", id="form.code"),
    ]
    # (pattern, field id): which field a server error is about, judged from
    # its description; the first match wins
    ERROR_FIELDS: list[tuple[str, str]] = []

    def error_fields(self) -> list[tuple[str, str]]:
        return self.ERROR_FIELDS

    def show_server_error(self, description: str) -> None:
        """The server's refusal, next to the field it is about (under the form when none is)."""
        text = description.lower()
        field = next((field_id for pattern, field_id in self.error_fields() if re.search(pattern, text)), None)
        self.show_error(field, f"server: {description}")

    def build_config(self) -> dict | None:
        raise NotImplementedError

    def config_code(self, config: dict) -> str:
        raise NotImplementedError

    def save(self, config: dict) -> None:
        raise NotImplementedError

    def action_copy_code(self) -> None:
        """Show (and copy) the nats CLI line and nats-py call for what the form says."""
        self.clear_errors()
        config = self.build_config()
        if config is not None:
            self.show_code(self.config_code(config))

    def submit(self) -> None:
        config = self.build_config()
        if config is not None:
            self.save(config)
