"""Create or edit a consumer (durable; pull or push)."""

from __future__ import annotations

from typing import Iterable

from textual import work
from textual.widgets import Input, Select

from ...client import ConsumerSummary, NatsError, name_error, subject_error
from ...format import fmt_duration, parse_duration, parse_int
from ...widgets.form import ConfigForm, FormField

NS = 1_000_000_000


class ConsumerForm(ConfigForm):
    """Returns the consumer name on success, None on cancel."""

    ERROR_FIELDS = [
        (r"deliver subject|push", "deliver_subject"),
        (r"filter", "filter_subject"),
        (r"ack wait", "ack_wait"),
        (r"ack policy|ack_policy|acknowledg", "ack_policy"),
        (r"max deliver", "max_deliver"),
        (r"max ack pending", "max_ack_pending"),
        (r"replica", "num_replicas"),
        (r"deliver policy|start seq|start time", "deliver_policy"),
        (r"durable|consumer name|name", "name"),
    ]

    def __init__(self, stream: str, existing: ConsumerSummary | None = None):
        super().__init__()
        self.stream = stream
        self.existing = existing
        self.TITLE_TEXT = f"Edit consumer {stream} › {existing.name}" if existing else f"New consumer on {stream}"
        self.SUBMIT_LABEL = "Save" if existing else "Create"

    def fields(self) -> Iterable[FormField]:
        c = self.existing.config if self.existing else {}
        fixed = bool(self.existing)
        yield FormField("Durable name", Input(c.get("durable_name") or c.get("name", ""), placeholder="e.g. WORKER", id="name", disabled=fixed), field_id="name")
        kind = "push" if c.get("deliver_subject") else "pull"
        yield FormField("Kind", Select([("pull", "pull"), ("push", "push")], value=kind, allow_blank=False, id="kind", disabled=fixed), field_id="kind")
        yield FormField("Deliver subject (push only)", Input(c.get("deliver_subject", ""), id="deliver_subject", disabled=fixed), field_id="deliver_subject")
        yield FormField("Ack policy", Select([(p, p) for p in ("explicit", "all", "none")], value=c.get("ack_policy", "explicit"), allow_blank=False, id="ack_policy", disabled=fixed), field_id="ack_policy")
        wait = (c.get("ack_wait") or 30 * NS) / NS
        yield FormField("Ack wait (e.g. 4s, 30s, 1m)", Input(fmt_duration(wait), id="ack_wait"), field_id="ack_wait")
        md = c.get("max_deliver", -1)
        yield FormField("Max deliver (empty = unlimited)", Input("" if md in (None, -1, 0) else str(md), id="max_deliver"), field_id="max_deliver")
        yield FormField("Filter subject (empty = whole stream)", Input(c.get("filter_subject", ""), id="filter_subject"), field_id="filter_subject")
        yield FormField("Deliver policy", Select([(p, p) for p in ("all", "new", "last", "last_per_subject")], value=c.get("deliver_policy", "all"), allow_blank=False, id="deliver_policy", disabled=fixed), field_id="deliver_policy")
        yield FormField("Max ack pending", Input(str(c.get("max_ack_pending", 1000)), id="max_ack_pending"), field_id="max_ack_pending")
        yield FormField("Replicas (empty = as many as the stream)", Input(str(c.get("num_replicas") or ""), id="num_replicas"), field_id="num_replicas")

    def build_config(self) -> dict | None:
        ok = True
        config: dict = dict(self.existing.config) if self.existing else {}
        name = self.value("name")
        if (err := name_error(name, "consumer name")) is not None:
            self.show_error("name", err)
            ok = False
        if not self.existing:
            config.update(durable_name=name, ack_policy=self.value("ack_policy") or "explicit",
                          deliver_policy=self.value("deliver_policy") or "all")
            if self.value("kind") == "push":
                deliver = self.value("deliver_subject")
                if (err := subject_error(deliver, wildcards=False)) is not None:
                    self.show_error("deliver_subject", f"a push consumer needs a deliver subject: {err}")
                    ok = False
                config["deliver_subject"] = deliver
        try:
            config["ack_wait"] = int(parse_duration(self.value("ack_wait") or "30s") * NS)
            if config["ack_wait"] <= 0:
                raise ValueError("ack wait must be more than 0")
        except ValueError as exc:
            self.show_error("ack_wait", str(exc))
            ok = False
        try:
            md = parse_int(self.value("max_deliver"), "max deliver", minimum=-1)
            config["max_deliver"] = -1 if md in (None, 0) else md
        except ValueError as exc:
            self.show_error("max_deliver", str(exc))
            ok = False
        try:
            config["max_ack_pending"] = parse_int(self.value("max_ack_pending"), "max ack pending", minimum=-1) or 1000
        except ValueError as exc:
            self.show_error("max_ack_pending", str(exc))
            ok = False
        try:
            replicas = parse_int(self.value("num_replicas"), "replicas", minimum=0)
            if replicas:
                config["num_replicas"] = replicas
            else:
                config.pop("num_replicas", None)
        except ValueError as exc:
            self.show_error("num_replicas", str(exc))
            ok = False
        flt = self.value("filter_subject")
        if flt and (err := subject_error(flt, wildcards=True)) is not None:
            self.show_error("filter_subject", err)
            ok = False
        if flt:
            config["filter_subject"] = flt
        else:
            config.pop("filter_subject", None)
        return config if ok else None

    def config_code(self, config: dict) -> str:
        from ...codegen import consumer_code

        return consumer_code(self.stream, config, edit=bool(self.existing))

    @work(exclusive=True, group="consumer-form", exit_on_error=False)
    async def save(self, config: dict) -> None:
        client = getattr(self.app, "client", None)
        if client is None:
            self.show_form_error("not connected")
            return
        try:
            await client.create_consumer(self.stream, config, action="update" if self.existing else "create")
        except NatsError as exc:
            self.show_server_error(exc.description)
            return
        self.dismiss(config.get("durable_name") or config.get("name"))
