"""The selected consumer in detail, laid out as ``nats consumer info`` shows
it (Configuration, then State with "Last delivery: 6.37s ago"), or its raw
JSON as ``nats consumer info -j`` prints it."""

from __future__ import annotations

import json
from datetime import datetime

from rich.console import Group
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ...client import ConsumerSummary
from ...format import fmt_duration
from ..cluster import cluster_table

NS = 1_000_000_000


def ago(when: datetime | None, now: datetime | None) -> str:
    """'6.37s ago' / '2m3s ago', as the nats CLI says it; '' when never."""
    if when is None or now is None:
        return ""
    seconds = max(0.0, (now - when).total_seconds())
    return f"{seconds:.2f}s ago" if seconds < 60 else f"{fmt_duration(seconds)} ago"


def _count(n: int) -> str:
    return "unlimited" if n in (-1, 0) else f"{n:,}"


def raw_json(data: dict) -> Syntax:
    return Syntax(json.dumps(data, indent=2), "json", word_wrap=True, background_color="default")


def consumer_info(c: ConsumerSummary, *, stable: bool = False) -> Group:
    cfg = c.config
    config = Table.grid(padding=(0, 1))
    config.add_column(style="bold", justify="right")
    config.add_column()
    rows = [
        ("Name", c.name),
        ("Pull Mode" if c.pull else "Deliver Subject", "true" if c.pull else cfg.get("deliver_subject", "")),
        ("Filter", c.filter_subject),
        ("Deliver Policy", str(cfg.get("deliver_policy", "")).replace("_", " ").title()),
        ("Ack Policy", c.ack_policy.title()),
        ("Ack Wait", fmt_duration(c.ack_wait) if c.ack_wait else ""),
        ("Replay Policy", str(cfg.get("replay_policy", "")).title()),
        ("Maximum Deliveries", _count(c.max_deliver)),
        ("Max Ack Pending", _count(cfg.get("max_ack_pending", 0))),
        ("Max Waiting Pulls", _count(cfg.get("max_waiting", 0)) if c.pull else ""),
        ("Inactive Threshold", fmt_duration(cfg["inactive_threshold"] / NS) if cfg.get("inactive_threshold") else ""),
    ]
    if cfg.get("backoff"):
        rows.append(("Backoff", ", ".join(fmt_duration(b / NS) for b in cfg["backoff"])))
    for name, value in rows:
        if value:
            config.add_row(f"{name}:", Text(str(value)))

    state = Table.grid(padding=(0, 1))
    state.add_column(style="bold", justify="right")
    state.add_column()
    now = c.server_time
    delivered = f"Consumer sequence: {c.delivered_consumer_seq} Stream sequence: {c.delivered_stream_seq}"
    if last := ("-" if stable and c.last_delivery else ago(c.last_delivery, now)):
        delivered += f" Last delivery: {last}"
    floor = f"Consumer sequence: {c.ack_floor_consumer_seq} Stream sequence: {c.ack_floor_stream_seq}"
    if last := ("-" if stable and c.last_ack else ago(c.last_ack, now)):
        floor += f" Last Ack: {last}"
    max_pending = cfg.get("max_ack_pending", 0)
    state.add_row("Last Delivered Message:", Text(delivered))
    state.add_row("Acknowledgment Floor:", Text(floor))
    state.add_row("Outstanding Acks:", Text(f"{c.num_ack_pending} out of maximum {_count(max_pending)}"))
    state.add_row("Redelivered Messages:", Text(f"{c.num_redelivered:,}"))
    state.add_row("Unprocessed Messages:", Text(f"{c.num_pending:,}"))
    if c.pull:
        state.add_row("Waiting Pulls:", Text(f"{c.num_waiting} of maximum {_count(cfg.get('max_waiting', 0))}"))
    if c.paused:
        state.add_row("Paused:", Text("yes"))

    title = Text(f"Information for Consumer {c.stream} > {c.name}", style="bold")
    if c.created and not stable:
        title.append(f" created {c.created.astimezone().strftime('%Y-%m-%d %H:%M:%S')}", style="")
    title.append("   J raw JSON", style="dim")
    columns = Table.grid(padding=(0, 3), expand=True)
    columns.add_column(ratio=2)
    columns.add_column(ratio=3)
    columns.add_row(Text("Configuration:", style="bold underline"), Text("State:", style="bold underline"))
    cluster = cluster_table(c.cluster)
    columns.add_row(config, Group(cluster, state) if cluster is not None else state)
    return Group(title, columns)
