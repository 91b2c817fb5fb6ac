"""A stream's full config and state, as two columns of name: value lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from ...format import fmt_bytes, fmt_duration
from ...widgets.settle import update_static
from ..cluster import cluster_table

if TYPE_CHECKING:
    from ...client import StreamSummary

NS = 1_000_000_000
DURATIONS = {"max_age", "duplicate_window", "first_ts", "inactive_threshold"}


def _value(key: str, value) -> str:
    if key in ("max_age", "duplicate_window") and isinstance(value, int):
        return fmt_duration(value / NS) if value else "forever" if key == "max_age" else "-"
    if key == "bytes" and isinstance(value, int):
        return f"{fmt_bytes(value)} ({value:,})"
    if isinstance(value, int) and value == -1:
        return "unlimited"
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "-"
    return str(value)


class StreamInfoView(Static):
    """Config on the left, state on the right."""

    DEFAULT_CSS = "StreamInfoView.-stale { color: $text-disabled; text-style: dim; }"

    _shown = None  # what show() drew last, for mark_stale
    _shown_for: tuple | None = None  # what it was drawn from

    def mark_stale(self, age: float) -> None:
        """The last info could not be refreshed: what it says, dimmed, under how old it is."""
        if self._shown is None:
            return
        self.add_class("-stale")
        self._shown_for = None
        self.update(Group(Text(f"as of {age:.0f}s ago: could not be refreshed", style="bold"), self._shown))

    def show(self, stream: StreamSummary | None, *, stable: bool = False, raw: bool = False) -> None:
        # called on every poll of the streams pane (once a second) and on every
        # j/k: the same stream as drawn is not drawn again, and new figures of
        # the same height do not lay the screen out again (widgets/settle.py)
        shown_for = (stream, None if stream is None else (stream.config, stream.state, stream.cluster, stream.raw
                                                           if raw else None), stable, raw)
        if shown_for == self._shown_for:
            return
        self._shown_for = shown_for
        self.remove_class("-stale")
        shown = self._render_info(stream, stable=stable, raw=raw)
        self._shown = shown if stream is not None else None
        update_static(self, shown)

    def _render_info(self, stream: StreamSummary | None, *, stable: bool = False, raw: bool = False):
        if stream is None:
            return Text("Select a stream to see its config and state.", style="italic")
        if raw:  # as `nats stream info -j` prints it
            import json

            from rich.syntax import Syntax

            return Syntax(json.dumps(stream.raw, indent=2), "json", word_wrap=True, background_color="default")
        if stream.offline:
            return Text(f"{stream.name} is offline: {stream.offline}. Its state cannot be read "
                        "until a server holding it is back.", style="bold")
        table = Table.grid(padding=(0, 2), expand=True)
        table.add_column(ratio=1)
        table.add_column(ratio=1)
        config = Table.grid(padding=(0, 1))
        config.add_column(style="bold")
        config.add_column()
        for key, value in stream.config.items():
            if key in ("metadata",) or value in (None, ""):
                continue
            config.add_row(key, Text(_value(key, value)))
        state = Table.grid(padding=(0, 1))
        state.add_column(style="bold")
        state.add_column()
        cluster = cluster_table(stream.cluster)
        for key, value in stream.state.items():
            if key in ("first_ts", "last_ts"):
                # an empty stream's times are Go's zero time: none, as natscli shows none
                value = "--:--:--" if stable else "-" if str(value).startswith("0001-01-01") else \
                    str(value)[:19].replace("T", " ")
            state.add_row(key, Text(_value(key, value)))
        table.add_row(Text("Config", style="bold underline"), Text("State", style="bold underline"))
        if cluster is not None:  # first on the right: on a cluster it is what changes
            table.add_row(config, Group(cluster, Text(""), state))
        else:
            table.add_row(config, state)
        return table
