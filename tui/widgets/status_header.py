"""The header: embedded or remote, the URL for other programs, store dir,
server version, JetStream usage and connection state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from ..format import fmt_bytes

if TYPE_CHECKING:
    from ..client import AccountUsage


@dataclass(frozen=True)
class HeaderInfo:
    mode: str = "embedded"  # "embedded" | "remote"
    url: str = ""
    store_dir: str = ""
    version: str = ""
    state: str = "starting"  # starting | connected | disconnected | failed
    detail: str = ""
    usage: AccountUsage | None = None


class StatusHeader(Static):
    info: reactive[HeaderInfo] = reactive(HeaderInfo, layout=True)

    def on_mount(self) -> None:
        # what the app knew before this header existed (remote or embedded, the URL)
        self.info = getattr(self.app, "header_info", self.info)

    def watch_info(self, info: HeaderInfo) -> None:
        for state in ("starting", "connected", "disconnected", "failed"):
            self.set_class(info.state == state, f"-{state}")
        self.update(self._render_info(info))

    def _render_info(self, info: HeaderInfo) -> Text:
        line1 = Text()
        line1.append(" natslab ", style="bold reverse")
        line1.append(f"  {info.mode}  ", style="bold")
        line1.append(info.url or "…", style="bold underline")
        if info.store_dir:
            line1.append(f"   store {info.store_dir}")
        if info.version:
            line1.append(f"   server {info.version}")
        line2 = Text(" ")
        state = {"connected": "● connected", "disconnected": "○ disconnected — reconnecting",
                 "starting": "◌ starting", "failed": "✕ not connected"}.get(info.state, info.state)
        line2.append(state, style="bold")
        if info.detail:
            line2.append(f"  {info.detail}")
        if info.usage is not None:
            u = info.usage
            line2.append(
                f"   JetStream: {u.streams} streams · {u.consumers} consumers · "
                f"storage {fmt_bytes(u.storage)} · memory {fmt_bytes(u.memory)}"
            )
        return Text("\n").join([line1, line2])
