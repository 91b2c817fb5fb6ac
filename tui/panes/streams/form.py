"""Create or edit a stream: the common fields, validated inline."""

from __future__ import annotations

import re
from typing import Iterable

from textual import work
from textual.widgets import Input, Select

from ...client import NatsError, StreamSummary, name_error, subject_error
from ...format import fmt_duration, parse_duration, parse_int
from ...widgets.form import ConfigForm, FormField

NS = 1_000_000_000


def _limit(value: int | None) -> str:
    return "" if value is None or value < 0 else str(value)


class StreamForm(ConfigForm):
    """Returns the stream name on success, None on cancel."""

    ERROR_FIELDS = [
        (r"subject", "subjects"),
        (r"stream name|name is required|invalid name|name must", "name"),
        (r"storage", "storage"),
        (r"retention|work ?queue|interest", "retention"),
        (r"max.?age", "max_age"),
        (r"duplicate", "duplicate_window"),
        (r"discard", "discard"),
        (r"per.?subject", "max_msgs_per_subject"),
        (r"max.?(msgs|messages)", "max_msgs"),
        (r"max.?bytes", "max_bytes"),
        (r"replica|cluster|peers", "num_replicas"),
        (r"placement|tags", "placement"),
    ]

    def error_fields(self) -> list[tuple[str, str]]:
        from .links import ERROR_FIELDS as LINK_FIELDS  # the mirror and source fields' patterns go first

        return LINK_FIELDS + self.ERROR_FIELDS

    def __init__(self, existing: StreamSummary | None = None):
        super().__init__()
        self.existing = existing
        self.TITLE_TEXT = f"Edit stream {existing.name}" if existing else "New stream"
        self.SUBMIT_LABEL = "Save" if existing else "Create"

    def fields(self) -> Iterable[FormField]:
        c = self.existing.config if self.existing else {}
        yield FormField("Name", Input(c.get("name", ""), placeholder="e.g. ORDERS", disabled=bool(self.existing), id="name"), field_id="name")
        yield FormField(
            "Subjects (comma separated, wildcards ok; empty = the stream's name)",
            Input(" ".join(c.get("subjects") or []), placeholder="e.g. orders.>", id="subjects"),
            field_id="subjects",
        )
        yield FormField("Storage", Select([("file", "file"), ("memory", "memory")], value=c.get("storage", "file"), allow_blank=False, id="storage", disabled=bool(self.existing)), field_id="storage")
        # next to Storage, as `nats stream add` asks it: it was the 11th field, ten Tabs
        # from Name, and a user counting Tabs typed the 3 into Sources (docs/walkthrough.md)
        yield FormField("Replicas (1-5; more than 1 needs a cluster)", Input(str(c.get("num_replicas") or 1), id="num_replicas"), field_id="num_replicas")
        yield FormField("Retention", Select([(r, r) for r in ("limits", "interest", "workqueue")], value=c.get("retention", "limits"), allow_blank=False, id="retention"), field_id="retention")
        yield FormField("Discard", Select([("old", "old"), ("new", "new")], value=c.get("discard", "old"), allow_blank=False, id="discard"), field_id="discard")
        yield FormField("Max messages (empty = unlimited)", Input(_limit(c.get("max_msgs")), id="max_msgs"), field_id="max_msgs")
        yield FormField("Max bytes (empty = unlimited)", Input(_limit(c.get("max_bytes")), id="max_bytes"), field_id="max_bytes")
        yield FormField("Max messages per subject", Input(_limit(c.get("max_msgs_per_subject")), id="max_msgs_per_subject"), field_id="max_msgs_per_subject")
        age = c.get("max_age", 0) / NS
        yield FormField("Max age (e.g. 24h, 8s; empty = forever)", Input(fmt_duration(age) if age else "", id="max_age"), field_id="max_age")
        dupe = c.get("duplicate_window", 0) / NS
        yield FormField("Duplicate window (e.g. 2m)", Input(fmt_duration(dupe) if dupe else "", id="duplicate_window"), field_id="duplicate_window")
        tags = ", ".join((c.get("placement") or {}).get("tags") or [])
        yield FormField("Placement tags (servers with all of them hold the replicas)",
                        Input(tags, placeholder="e.g. region:eu, ssd", id="placement"), field_id="placement")
        from .links import link_fields

        yield from link_fields(c)

    def build_config(self) -> dict | None:
        ok = True
        config: dict = dict(self.existing.config) if self.existing else {}
        name = self.value("name")
        if (err := name_error(name, "stream name")) is not None:
            self.show_error("name", err)
            ok = False
        subjects = [s for s in re.split(r"[,\s]+", self.value("subjects")) if s]
        for s in subjects:
            if (err := subject_error(s, wildcards=True)) is not None:
                self.show_error("subjects", f"{s}: {err}")
                ok = False
                break
        config.update(
            name=name,
            subjects=subjects or [name] if not self.existing else subjects,
            storage=self.value("storage") or "file",
            retention=self.value("retention") or "limits",
            discard=self.value("discard") or "old",
        )
        for field_id, what in (("max_msgs", "max messages"), ("max_bytes", "max bytes"), ("max_msgs_per_subject", "max per subject")):
            try:
                v = parse_int(self.value(field_id), what, minimum=-1)
                config[field_id] = -1 if v is None else v
            except ValueError as exc:
                self.show_error(field_id, str(exc))
                ok = False
        for field_id in ("max_age", "duplicate_window"):
            try:
                config[field_id] = int(parse_duration(self.value(field_id)) * NS)
            except ValueError as exc:
                self.show_error(field_id, str(exc))
                ok = False
        if not config.get("duplicate_window"):
            config.pop("duplicate_window", None)
        try:
            replicas = parse_int(self.value("num_replicas"), "replicas", minimum=1) or 1
            if replicas > 5:
                raise ValueError("a stream has at most 5 replicas")
            config["num_replicas"] = replicas
        except ValueError as exc:
            self.show_error("num_replicas", str(exc))
            ok = False
        tags = [t for t in re.split(r"[,\s]+", self.value("placement")) if t]
        if tags:
            config["placement"] = {**(config.get("placement") or {}), "tags": tags}
        elif (config.get("placement") or {}).get("tags"):
            config["placement"] = {k: v for k, v in config["placement"].items() if k != "tags"}
        from .links import apply_links

        ok = apply_links(self, config) and ok
        return config if ok else None

    def config_code(self, config: dict) -> str:
        from ...codegen import stream_code

        from .links import code_note

        return stream_code(config, edit=bool(self.existing)) + code_note(config)

    @work(exclusive=True, group="stream-form", exit_on_error=False)
    async def save(self, config: dict) -> None:
        client = getattr(self.app, "client", None)
        if client is None:
            self.show_form_error("not connected")
            return
        try:
            if self.existing:
                await client.update_stream(config)
            else:
                await client.create_stream(config)
        except NatsError as exc:
            self.show_server_error(exc.description)
            return
        if not self.existing and not self.value("subjects") and config.get("subjects"):
            self.app.notify(f"No subjects given: {config['name']} stores what is published to the "
                            f"subject {config['name']} (its name)", timeout=8)
        self.dismiss(config["name"])
