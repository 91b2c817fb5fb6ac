"""How a stream's or consumer's replicas stand on a cluster: the leader, and
per replica current or not, how far behind (lag), when last heard from,
offline. Shown in the stream info and the consumer details."""

from __future__ import annotations

from datetime import datetime, timezone

from rich.table import Table
from rich.text import Text

from ..format import fmt_duration


# nats-server's raft heartbeat is 1 s: a replica not heard from for this many
# of them is likely down, whatever ``current: false`` (without ``offline``,
# which only a peer removed from the meta layer gets) would suggest
HEARTBEAT = 1.0
SILENT_HEARTBEATS = 5


def replica_state(replica: dict, leader_for: float | None = None) -> tuple[str, str]:
    """(words, style) for one replica of the API's cluster info. ``leader_for``:
    seconds since the leader took over (its ``leader_since``): a replica it
    has not heard from at all (``active`` 0, not current, e.g. the old leader,
    killed) is unseen for that long."""
    if replica.get("offline"):
        return "offline", "bold reverse"
    active = (replica.get("active") or 0) / 1e9
    if not active and not replica.get("current") and (leader_for or 0) >= HEARTBEAT * SILENT_HEARTBEATS:
        active = leader_for  # unheard of for as long as the leader has led
    ago = f"{active:.1f}s" if active < 60 else fmt_duration(round(active))
    lag = f", lag {replica['lag']:,}" if replica.get("lag") else ""
    if not replica.get("current") and active >= HEARTBEAT * SILENT_HEARTBEATS:
        # a killed node: the leader last heard from it many heartbeats ago
        return f"not seen for {ago} (down?){lag}", "bold reverse"
    if not active and not replica.get("current") and leader_for is not None:
        # the new leader has not heard from it at all yet: the old leader, killed,
        # read "catching up, lag 152" for the seconds before "not seen (down?)"
        return f"not heard from yet (leader for {leader_for:.1f}s){lag}", "bold"
    words = ("current" if replica.get("current") else "catching up") + lag
    if active and not replica.get("current"):
        words += f", last seen {ago} ago"
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
    from ..client.models import parse_time  # (loaded with the client, after the first frame)

    since = parse_time(cluster.get("leader_since"))
    leader_for = (datetime.now(timezone.utc) - since).total_seconds() if since else None
    for replica in cluster.get("replicas") or []:
        words, style = replica_state(replica, leader_for)
        grid.add_row(f"replica {replica.get('name', '?')}", Text(words, style=style))
    return grid
