"""The header: embedded or remote, the URL for other programs, TLS, store
dir, server version, monitoring port, the account, JetStream usage and
connection state.

Two lines that never wrap: when the terminal is narrow the less important
parts shorten, then go (the store path first), so the connection state and
the URL stay in sight at 80 columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
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
    usage_age: int | None = None  # seconds since ``usage`` was read, when the last read failed (stale)
    monitor: str = ""  # the monitoring endpoint's URL, when known
    read_only: bool = False
    server_name: str = ""  # on a cluster: the node the client is on
    cluster: str = ""
    meta_leader: str = ""  # the JetStream meta leader (from /jsz), "?" when not known
    # the poll after it was read failed (its node may be the one that died): not current
    meta_leader_stale: bool = False
    domain: str = ""
    tls: str = ""  # "TLS 1.3" when the connection is encrypted
    account: str = ""  # the account the credentials are in ($SYS.REQ.USER.INFO)


# A part of a line: its variants from longest to shortest ("" drops it), its
# style, and its rank: the highest rank gives way first.
Part = tuple[list[str], str, int]


def fit(parts: list[Part], width: int) -> Text:
    """One line of ``parts`` at most ``width`` cells wide, shortening the
    highest-ranked parts first; cut with an ellipsis if even that is too long."""
    chosen = [0] * len(parts)

    def length() -> int:
        return sum(len(p[0][i]) for p, i in zip(parts, chosen))

    for rank in sorted({p[2] for p in parts}, reverse=True):
        for n, (variants, _style, r) in enumerate(parts):
            while r == rank and length() > width and chosen[n] < len(variants) - 1:
                chosen[n] += 1
    line = Text(no_wrap=True, overflow="ellipsis", end="")
    for (variants, style, _r), i in zip(parts, chosen):
        line.append(variants[i], style=style)
    line.truncate(width, overflow="ellipsis")
    return line


def _short_path(path: str) -> str:
    tail = path.rstrip("/").rsplit("/", 1)[-1]
    return f"…/{tail}" if tail != path else path


class StatusHeader(Static):
    # Two lines whatever they say (app.tcss: height 2): a new usage every
    # second must not lay the screen out again (~15-40 ms on a busy machine)
    info: reactive[HeaderInfo] = reactive(HeaderInfo)
    _text: Text | None = None

    def on_mount(self) -> None:
        # what the app knew before this header existed (remote or embedded, the URL)
        self.info = getattr(self.app, "header_info", self.info)

    def watch_info(self, info: HeaderInfo) -> None:
        for state in ("starting", "connected", "disconnected", "failed"):
            self.set_class(info.state == state, f"-{state}")
        self.set_class(info.read_only, "-read-only")
        self._show(self._render_info(info))

    def on_resize(self, event: events.Resize) -> None:
        self._show(self._render_info(self.info))

    def _show(self, text: Text) -> None:
        if text != self._text:  # (the API counters move every second; the line does not)
            self._text = text
            self.update(text, layout=False)

    def _render_info(self, info: HeaderInfo) -> Text:
        width = max(20, self.size.width or 200)
        line1: list[Part] = [
            ([" natslab "], "bold reverse", 0),
            ([f"  {info.mode}  ", f" {info.mode} "], "bold", 1),
        ]
        if info.read_only:
            line1.append(([" READ-ONLY ", " RO "], "bold reverse", 0))
        line1.append(([info.url or "…"], "bold underline", 0))
        if info.tls:
            line1.append(([f"  {info.tls}", f" {info.tls}"], "bold", 1))
        if info.cluster:
            line1.append(([f"   {info.server_name} in cluster {info.cluster}", f"  {info.server_name}@{info.cluster}"],
                          "bold", 1))
        if info.domain:
            line1.append(([f"   domain {info.domain}", f" dom {info.domain}"], "", 2))
        if info.version:
            line1.append(([f"   server {info.version}", f" {info.version}", ""], "", 3))
        if info.monitor:
            mon = info.monitor.removeprefix("http://")
            port = mon.rsplit(":", 1)[-1]
            line1.append(([f"   monitor {mon}", f"  monitor :{port}", f" m:{port}", ""], "", 2))
        if info.store_dir:
            line1.append(([f"   store {info.store_dir}", f"   store {_short_path(info.store_dir)}", ""], "", 4))

        state = {"connected": "● connected", "disconnected": "○ disconnected — reconnecting",
                 "starting": "◌ starting", "failed": "✕ not connected"}.get(info.state, info.state)
        line2: list[Part] = [([" " + state], "bold", 0)]
        if info.account and info.account != "$G":  # $G: no accounts configured, nothing to tell
            line2.append(([f"   account {info.account}", f"  acct {info.account}"], "bold", 1))
        if info.meta_leader == "?":  # only the monitoring port's /jsz names it: say how to get it
            line2.append((["   meta leader ? (no /jsz: --monitor URL)", "   meta leader ?", "  leader ?"], "bold", 1))
        elif info.meta_leader and info.meta_leader_stale:
            line2.append(([f"   meta leader {info.meta_leader}? (not confirmed)", f"   meta leader {info.meta_leader}?",
                           f"  leader {info.meta_leader}?"], "dim", 1))
        elif info.meta_leader:
            line2.append(([f"   meta leader {info.meta_leader}", f"  leader {info.meta_leader}"], "bold", 1))
        if info.detail:
            line2.append(([f"  {info.detail}"], "", 1))
        if info.usage is not None and info.usage_age is not None:
            # could not be refreshed (the reason is in detail, "JetStream: ..."): dimmed, with its age
            u, age = info.usage, f"{info.usage_age}s ago"
            line2.append(([
                f"   last known ({age}) {u.streams} streams · {u.consumers} consumers · "
                f"storage {fmt_bytes(u.storage)} · memory {fmt_bytes(u.memory)}",
                f"   last known ({age}) {u.streams} str · {u.consumers} cons",
                f"  ({age}) {u.streams} str",
                "",
            ], "dim", 2))
        elif info.usage is not None:
            u = info.usage
            line2.append(([
                f"   JetStream: {u.streams} streams · {u.consumers} consumers · "
                f"storage {fmt_bytes(u.storage)} · memory {fmt_bytes(u.memory)}",
                f"   JS {u.streams} streams · {u.consumers} consumers · "
                f"{fmt_bytes(u.storage)} file · {fmt_bytes(u.memory)} mem",
                f"  JS {u.streams} str · {u.consumers} cons",
                "",
            ], "", 2))
        return Text("\n", no_wrap=True, end="").join([fit(line1, width), fit(line2, width)])
