"""Live connections: client name, account, TLS version, server, language,
address, subscriptions, traffic and rates.

With system-account credentials the list comes over NATS from every server
of a cluster (`$SYS.REQ.SERVER.PING.CONNZ`, each row naming its server);
otherwise from the monitoring port's /connz (one URL, or one per node)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Label

from ...client.monitor import Connection, MonitorUnreachable, fetch_connz, monitor_urls
from ...client.system import cluster_connz
from ...format import fmt_bytes, fmt_count
from ...widgets.live_table import LiveTable
from ..base import LivePane

COLUMNS = [
    ("CID", "cid"), ("Name", "name"), ("Account", "account"), ("TLS", "tls"), ("Server", "server"), ("Lang", "lang"), ("Version", "version"), ("Address", "address"),
    ("Subs", "subs"), ("Msgs in", "in_msgs"), ("Msgs out", "out_msgs"), ("In/s", "in_rate"), ("Out/s", "out_rate"),
    ("Bytes in", "in_bytes"), ("Bytes out", "out_bytes"), ("Pending", "pending"), ("Idle", "idle"),
]


class ConnectionsPane(LivePane):
    POLL_SECONDS = 1.0

    @dataclass
    class Polled(Message):
        connections: list[Connection]
        error: str = ""
        source: str = ""  # where the list came from, when not the monitoring port

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ConnectionsPane.Polled)

    def __init__(self, **kw):
        super().__init__(**kw)
        self._last: dict[tuple[str, int], tuple[float, int, int]] = {}

    def compose(self) -> ComposeResult:
        yield Label("Connections", id="conn-status", classes="pane-status")
        yield LiveTable(COLUMNS, id="conn-table", repaint_on_resize=True)

    async def fetch(self, client) -> None:
        if getattr(self.app, "system_user", False):  # every server of a cluster, over NATS
            conns = await cluster_connz(client)
            if conns is None:
                self.post_message(self.Polled([], "no server answered $SYS.REQ.SERVER.PING.CONNZ this time"))
                return
            servers = len({c.server_id for c in conns})
            self.post_message(self.Polled(conns, source=f"$SYS.REQ.SERVER.PING.CONNZ of {servers} "
                                                        f"server{'s' if servers != 1 else ''} (system account)"))
            return
        url = getattr(self.app, "monitor_url", None)
        if not url:
            self.post_message(self.Polled([], "no monitoring URL known (start with --monitor http://host:8222)"))
            return
        try:
            self.post_message(self.Polled(await fetch_connz(url)))
        except MonitorUnreachable as exc:  # HTTP, not NATS: said here rather than in poll_failed
            self.post_message(self.Polled([], f"monitoring endpoint not reachable — {exc}. "
                                              "Start nats-server with -m 8222, or pass --monitor URL."))

    @on(Polled)
    def show(self, event: Polled) -> None:
        status = self.query_one("#conn-status", Label)
        table = self.query_one(LiveTable)
        if event.error:
            status.update(event.error)
            table.sync({})
            return
        now = time.monotonic()
        stable = getattr(self.app, "stable_display", False)
        rows = {}
        client = getattr(self.app, "client", None)
        me = (client.client_id, client.server_id) if client is not None else None
        several = len({c.server_id for c in event.connections}) > 1
        names = {c.server_id: c.server_name for c in event.connections if c.server_name}
        for c in event.connections:
            last = self._last.get((c.server_id, c.cid))
            in_rate = out_rate = ""
            if last and now > last[0]:
                in_rate = f"{(c.in_msgs - last[1]) / (now - last[0]):.0f}"
                out_rate = f"{(c.out_msgs - last[2]) / (now - last[0]):.0f}"
            self._last[(c.server_id, c.cid)] = (now, c.in_msgs, c.out_msgs)
            counters = (fmt_count(c.in_msgs), fmt_count(c.out_msgs), in_rate, out_rate,
                        fmt_bytes(c.in_bytes), fmt_bytes(c.out_bytes), fmt_bytes(c.pending_bytes))
            if stable:  # pictures: the app's own polls move these with timing
                counters = ("-",) * len(counters)
            you = me is not None and c.cid == me[0] and (not c.server_id or c.server_id == me[1])
            server = names.get(c.server_id) or (c.server_id[:8] if several else "")
            rows[f"{c.server_id[:8]}:{c.cid}" if several else str(c.cid)] = (
                "-" if stable else c.cid, f"{c.name or '-'} ◀ you" if you else c.name or "-",
                c.account or "-", c.tls_version or "-", server or "-",
                c.lang, c.version, "-" if stable else c.address, c.subscriptions,
                *counters, "-" if stable else c.idle,
            )
        table.sync(rows)
        urls = monitor_urls(getattr(self.app, "monitor_url", ""))
        source = event.source or ((f"{urls[0]}/connz" if len(urls) == 1 else f"/connz of {len(urls)} servers")
                                  if not stable else "http://127.0.0.1:8222/connz")
        more = " · ← → more columns" if table.virtual_size.width > table.scrollable_content_region.width else ""
        text = f"Connections ({len(rows)}){more} — from {source}, refreshed every second"
        if text != str(status.content):  # every second: the same line would cost a layout each time
            status.update(text)
