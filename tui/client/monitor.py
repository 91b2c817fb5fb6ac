"""The server's HTTP monitoring endpoint (/varz, /connz): who is connected.

This is plain HTTP, not NATS, so it works against natslab's embedded broker
and any nats-server whose monitoring port (-m) is reachable.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlparse


@dataclass(frozen=True)
class Connection:
    cid: int
    name: str
    lang: str
    version: str
    address: str
    subscriptions: int
    in_msgs: int
    out_msgs: int
    in_bytes: int
    out_bytes: int
    pending_bytes: int
    idle: str
    uptime: str
    server_id: str = ""  # the server this connection is on (from /connz's server_id)
    account: str = ""  # (connz with auth)
    tls_version: str = ""  # "1.3"; "" for a plain connection
    server_name: str = ""  # known when the system account asked every server

    @classmethod
    def from_json(cls, c: dict, server_id: str = "", server_name: str = "") -> "Connection":
        return cls(
            cid=c.get("cid", 0), name=c.get("name", ""), lang=c.get("lang", ""), version=c.get("version", ""),
            address=f"{c.get('ip', '')}:{c.get('port', '')}", subscriptions=c.get("subscriptions", 0),
            in_msgs=c.get("in_msgs", 0), out_msgs=c.get("out_msgs", 0), in_bytes=c.get("in_bytes", 0),
            out_bytes=c.get("out_bytes", 0), pending_bytes=c.get("pending_bytes", 0),
            idle=c.get("idle", ""), uptime=c.get("uptime", ""), server_id=server_id,
            account=c.get("account") or c.get("name_tag", ""), tls_version=c.get("tls_version", ""), server_name=server_name,
        )


class MonitorUnreachable(Exception):
    pass


def default_monitor_url(client_url: str) -> str:
    """nats://host:4222 -> http://host:8222 (nats-server's usual monitoring port)."""
    u = urlparse(client_url.split(",")[0].strip())
    return f"http://{u.hostname or '127.0.0.1'}:8222"


def _get(url: str, timeout: float) -> dict:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise MonitorUnreachable(f"{url}: {reason}") from None


async def fetch_connz(base_urls: str, timeout: float = 1.5) -> list[Connection]:
    """Connections of every server given (one URL, or several comma separated:
    a cluster's nodes); a node that does not answer is skipped unless none does."""
    out: list[Connection] = []
    problems = []
    for base in monitor_urls(base_urls):
        try:
            data = await asyncio.to_thread(_get, f"{base}/connz?subs=0&auth=1", timeout)
        except MonitorUnreachable as exc:
            problems.append(str(exc))
            continue
        server = data.get("server_id", "")
        name = await _server_name(base, server, timeout) if server else ""
        out.extend(Connection.from_json(c, server, name) for c in data.get("connections") or [])
    if problems and not out and len(problems) == len(monitor_urls(base_urls)):
        raise MonitorUnreachable("; ".join(problems))
    return out


# monitoring URL -> (server_id, server_name): /connz names its server by id
# only, so each node's /varz is read once (again when the id changes: a node
# restarted is a new server id under the same name)
_NAMES: dict[str, tuple[str, str]] = {}


async def _server_name(base: str, server_id: str, timeout: float) -> str:
    known = _NAMES.get(base)
    if known is not None and known[0] == server_id:
        return known[1]
    try:
        varz = await asyncio.to_thread(_get, f"{base}/varz", timeout)
    except MonitorUnreachable:
        return ""  # named on the next poll
    name = varz.get("server_name", "") if varz.get("server_id") == server_id else ""
    if name == server_id:  # started without -n: nats-server's name is its id, no name to show
        name = ""
    if name:
        _NAMES[base] = (server_id, name)
    return name


def monitor_urls(value: str | None) -> list[str]:
    """--monitor takes one URL or several, comma separated (one per cluster node)."""
    return [u.strip().rstrip("/") for u in (value or "").split(",") if u.strip()]


async def fetch_meta_leader(base_urls: str, timeout: float = 1.5) -> str:
    """The JetStream meta leader's name from the first node whose /jsz names
    one; "none" when the nodes that answer are clustered but know no leader
    (quorum lost, or an election under way); '' when the server is not
    clustered. A node just restarted answers before it has heard of the
    leader: the next is asked (the header lost its "meta leader" for a while)."""
    problems = []
    clustered = answered = False
    for base in monitor_urls(base_urls):
        try:
            data = await asyncio.to_thread(_get, f"{base}/jsz", timeout)
        except MonitorUnreachable as exc:
            problems.append(str(exc))
            continue
        answered = True
        meta = data.get("meta_cluster")
        if meta:
            clustered = True
            if meta.get("leader"):
                return meta["leader"]
    if answered:
        return "none" if clustered else ""
    raise MonitorUnreachable("; ".join(problems) or "no monitoring URL")


async def fetch_varz(base_url: str, timeout: float = 1.5) -> dict:
    return await asyncio.to_thread(_get, f"{base_url.rstrip('/')}/varz", timeout)
