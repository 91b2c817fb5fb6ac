"""Purge a stream: everything, one subject, or all but the newest N."""

from __future__ import annotations

from typing import Iterable

from textual import work
from textual.widgets import Input

from ...client import NatsError, subject_error
from ...format import parse_int
from ...widgets.form import FormField, ModalForm


class PurgeDialog(ModalForm):
    """Returns the number of messages purged, or None on cancel."""

    SUBMIT_LABEL = "Purge"

    def __init__(self, stream: str):
        super().__init__()
        self.stream = stream
        self.TITLE_TEXT = f"Purge stream {stream}"

    def fields(self) -> Iterable[FormField]:
        yield FormField("Only this subject (empty = all subjects)", Input(id="subject", placeholder="e.g. orders.eu"), field_id="subject")
        yield FormField("Keep the newest N messages (empty = keep none)", Input(id="keep"), field_id="keep")

    def submit(self) -> None:
        subject = self.value("subject")
        if subject and (err := subject_error(subject, wildcards=True)):
            self.show_error("subject", err)
            return
        try:
            keep = parse_int(self.value("keep"), "keep", minimum=0)
        except ValueError as exc:
            self.show_error("keep", str(exc))
            return
        self.purge(subject or None, keep)

    @work(exclusive=True, group="purge", exit_on_error=False)
    async def purge(self, subject: str | None, keep: int | None) -> None:
        try:
            purged = await self.app.client.purge_stream(self.stream, subject=subject, keep=keep)
        except NatsError as exc:
            self.show_form_error(f"server: {exc.description}")
            return
        self.dismiss(purged)
