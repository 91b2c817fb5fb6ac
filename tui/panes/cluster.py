"""How a stream's or consumer's replicas stand on a cluster: the leader, and
per replica current or not, how far behind (lag), when last heard from,
offline. Shown in the stream info and the consumer details."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..format import fmt_duration


def replica_state(replica: dict) -> tuple[str, str]:
    """(words, style) for one replica of the API's cluster info."""
    if replica.get("offline"):
        return "offline", "bold reverse"
    words = "current" if replica.get("current") else "catching up"
    if replica.get("lag"):
        words += f", lag {replica['lag']:,}"
    active = (replica.get("active") or 0) / 1e9
    if active and not replica.get("current"):
        words += f", last seen {active:.1f}s ago" if active < 60 else f", last seen {fmt_duration(round(active))} ago"
    return words, "" if replica.get("current") else "bold"


def cluster_table(cluster: dict) -> Table | None:
    """None when the answer has no cluster part (a server that is not clustered)."""
    if not cluster or not (cluster.get("leader") or cluster.get("replicas")):
        return None
    grid = Table.grid(padding=(0, 1))
    grid.add_column(style="bold")
    grid.add_column()
    grid.add_row("cluster", Text(cluster.get("name", "")))
    leader = cluster.get("leader")
    grid.add_row("leader", Text(leader or "none — no leader elected", style="bold" if leader else "bold reverse"))
    for replica in cluster.get("replicas") or []:
        words, style = replica_state(replica)
        grid.add_row(f"replica {replica.get('name', '?')}", Text(words, style=style))
    return grid
