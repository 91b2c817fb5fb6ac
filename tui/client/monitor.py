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

    @classmethod
    def from_json(cls, c: dict) -> "Connection":
        return cls(
            cid=c.get("cid", 0), name=c.get("name", ""), lang=c.get("lang", ""), version=c.get("version", ""),
            address=f"{c.get('ip', '')}:{c.get('port', '')}", subscriptions=c.get("subscriptions", 0),
            in_msgs=c.get("in_msgs", 0), out_msgs=c.get("out_msgs", 0), in_bytes=c.get("in_bytes", 0),
            out_bytes=c.get("out_bytes", 0), pending_bytes=c.get("pending_bytes", 0),
            idle=c.get("idle", ""), uptime=c.get("uptime", ""),
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


async def fetch_connz(base_url: str, timeout: float = 1.5) -> list[Connection]:
    data = await asyncio.to_thread(_get, f"{base_url.rstrip('/')}/connz?subs=0", timeout)
    return [Connection.from_json(c) for c in data.get("connections") or []]


async def fetch_varz(base_url: str, timeout: float = 1.5) -> dict:
    return await asyncio.to_thread(_get, f"{base_url.rstrip('/')}/varz", timeout)
