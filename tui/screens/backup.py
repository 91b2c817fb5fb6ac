"""Back a stream up to a directory, or restore one from it, with a progress bar.

The directory is what `nats stream backup` writes (``backup.json`` and
``stream.arc.s2``), so backups move between natslab and the nats CLI. The
transfer runs in a named worker that reports progress with messages; the
server's refusal (a stream of that name exists, a damaged archive) shows in
the dialog, next to the directory it is about.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from textual import on, work
from textual.message import Message
from textual.widgets import Input, ProgressBar, Select

from ..client import NatsError
from ..config import data_dir
from ..format import fmt_bytes
from ..widgets.form import FormField, ModalForm


def default_backup_dir(stream: str) -> str:
    return str(data_dir() / "backups" / f"{stream}-{datetime.now():%Y%m%d-%H%M%S}")


class TransferForm(ModalForm):
    """What backup and restore share: a directory field and a progress bar."""

    @dataclass
    class Progress(Message):
        done: int
        total: int  # 0: not known yet

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, TransferForm.Progress)

    def progress_field(self) -> FormField:
        # hidden until the transfer starts: an indeterminate bar moves, and a
        # bar moving in a form nobody submitted yet says something is going on
        field = FormField("Progress", ProgressBar(total=None, show_eta=False, id="transfer-progress"),
                          field_id="progress")
        field.display = False
        return field

    def report(self, done: int, total: int) -> None:
        self.post_message(self.Progress(done, total))

    @on(Progress)
    def show_progress(self, event: Progress) -> None:
        event.stop()
        self.query_one("#field-progress", FormField).display = True
        bar = self.query_one("#transfer-progress", ProgressBar)
        if event.total:
            bar.update(total=event.total, progress=event.done)
        self.query_one("#field-progress", FormField).query_one(".field-label").update(
            f"Progress — {fmt_bytes(event.done)}" + (f" of {fmt_bytes(event.total)}" if event.total else ""))


class BackupDialog(TransferForm):
    """Returns the BackupResult, or None on cancel."""

    SUBMIT_LABEL = "Back up"

    def __init__(self, stream: str, directory: str | None = None):
        super().__init__()
        self.stream = stream
        self.directory = directory or default_backup_dir(stream)
        self.TITLE_TEXT = f"Back up stream {stream}"

    def fields(self) -> Iterable[FormField]:
        yield FormField("Into directory (created; as `nats stream backup` writes it)",
                        Input(self.directory, id="directory"), field_id="directory")
        yield FormField("Consumers", Select([("included", "yes"), ("left out", "no")], value="yes",
                                            allow_blank=False, id="consumers"), field_id="consumers")
        yield self.progress_field()

    def submit(self) -> None:
        if not self.value("directory"):
            self.show_error("directory", "a directory is required")
            return
        self.run_backup(self.value("directory"), self.value("consumers") != "no")

    @work(exclusive=True, group="backup", exit_on_error=False)
    async def run_backup(self, directory: str, consumers: bool) -> None:
        from ..client.backup import backup_stream

        client = getattr(self.app, "client", None)
        if client is None:
            self.show_form_error("not connected")
            return
        self.report(0, 0)  # the bar shows from now on
        try:
            result = await backup_stream(client, self.stream, directory, consumers=consumers, progress=self.report)
        except NatsError as exc:
            self.show_error("directory", f"server: {exc.description}" if exc.code else str(exc))
            return
        self.dismiss(result)


class RestoreDialog(TransferForm):
    """Returns the restored stream's name, or None on cancel."""

    SUBMIT_LABEL = "Restore"
    TITLE_TEXT = "Restore a stream from a backup"

    def __init__(self, directory: str = ""):
        super().__init__()
        self.directory = directory

    def fields(self) -> Iterable[FormField]:
        yield FormField("From directory (backup.json and stream.arc.s2; the stream must not exist)",
                        Input(self.directory, placeholder=str(data_dir() / "backups" / "NAME-…"), id="directory"),
                        field_id="directory")
        yield self.progress_field()

    def submit(self) -> None:
        if not self.value("directory"):
            self.show_error("directory", "a directory is required")
            return
        self.run_restore(self.value("directory"))

    @work(exclusive=True, group="restore", exit_on_error=False)
    async def run_restore(self, directory: str) -> None:
        from ..client.backup import restore_stream

        client = getattr(self.app, "client", None)
        if client is None:
            self.show_form_error("not connected")
            return
        self.report(0, 0)  # the bar shows from now on
        try:
            stream = await restore_stream(client, directory, progress=self.report)
        except NatsError as exc:
            self.show_error("directory", f"server: {exc.description}" if exc.code else str(exc))
            return
        self.dismiss(stream.name)
