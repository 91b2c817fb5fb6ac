"""Create a KV bucket."""

from __future__ import annotations

from typing import Iterable

from textual import work
from textual.widgets import Input, Select

from ...client import NatsError, name_error
from ...format import parse_duration, parse_int
from ...widgets.form import FormField, ModalForm


class BucketForm(ModalForm):
    TITLE_TEXT = "New key-value bucket"
    SUBMIT_LABEL = "Create"

    def fields(self) -> Iterable[FormField]:
        yield FormField("Bucket name", Input(placeholder="e.g. CONFIG", id="name"), field_id="name")
        yield FormField("History (values kept per key, 1-64)", Input("1", id="history"), field_id="history")
        yield FormField("TTL (e.g. 1h; empty = forever)", Input(id="ttl"), field_id="ttl")
        yield FormField("Max value size in bytes (empty = unlimited)", Input(id="max_value_size"), field_id="max_value_size")
        yield FormField("Storage", Select([("file", "file"), ("memory", "memory")], value="file", allow_blank=False, id="storage"), field_id="storage")

    def submit(self) -> None:
        ok = True
        name = self.value("name")
        if err := name_error(name, "bucket name"):
            self.show_error("name", err)
            ok = False
        history = 1
        try:
            history = parse_int(self.value("history"), "history", minimum=1) or 1
            if history > 64:
                raise ValueError("history can be at most 64")
        except ValueError as exc:
            self.show_error("history", str(exc))
            ok = False
        ttl = None
        try:
            ttl = parse_duration(self.value("ttl")) or None
        except ValueError as exc:
            self.show_error("ttl", str(exc))
            ok = False
        size = None
        try:
            size = parse_int(self.value("max_value_size"), "max value size", minimum=1)
        except ValueError as exc:
            self.show_error("max_value_size", str(exc))
            ok = False
        if ok:
            self.create(name, history, ttl, size, self.value("storage") or "file")

    @work(exclusive=True, group="bucket-form", exit_on_error=False)
    async def create(self, name: str, history: int, ttl: float | None, size: int | None, storage: str) -> None:
        try:
            await self.app.client.create_bucket(name, history, ttl, size, storage)
        except (NatsError, AttributeError) as exc:
            self.show_form_error(f"server: {exc}")
            return
        self.dismiss(name)
