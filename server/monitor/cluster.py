"""The topology and account endpoints, answered as a lone nats-server with
only the global account answers them: /routez, /gatewayz and /leafz are
empty, /accountz and /accstatz describe ``$G``. Scrapers such as the
Prometheus exporter poll these next to /varz and must not get a 404."""

from __future__ import annotations

import time

from ..gowire import rfc3339
from .connz import sublist_stats
from .format import NS, q_bool, to_json

GLOBAL_ACCOUNT = "$G"
SYSTEM_ACCOUNT = "$SYS"


def _head(srv) -> dict:
    return {"server_id": srv.server_id, "now": rfc3339(time.time_ns())}


def routez(mon, q: dict):
    srv = mon.server
    d = {"server_id": srv.server_id, "server_name": srv.server_name, "now": rfc3339(time.time_ns()),
         "num_routes": 0, "routes": []}
    return "application/json", to_json(d)


def gatewayz(mon, q: dict):
    d = _head(mon.server) | {"outbound_gateways": {}, "inbound_gateways": {}}
    return "application/json", to_json(d)


def leafz(mon, q: dict):
    d = _head(mon.server) | {"leafnodes": 0, "leafs": []}
    return "application/json", to_json(d)


def accountz(mon, q: dict):
    srv = mon.server
    system = getattr(srv.opts, "system_account", SYSTEM_ACCOUNT)
    d = _head(srv) | {"system_account": system}
    acc = q.get("acc", "")
    if not acc:
        names = [GLOBAL_ACCOUNT, system] + list(getattr(srv.opts, "accounts", {}) or {})
        d["accounts"] = list(dict.fromkeys(names))
    elif acc == GLOBAL_ACCOUNT:
        d["account_detail"] = {
            "account_name": GLOBAL_ACCOUNT,
            "update_time": rfc3339(int(srv.start_time * NS)),
            "expired": False,
            "complete": True,
            "jetstream_enabled": srv.jetstream is not None,
            "leafnode_connections": 0,
            "client_connections": len(srv.clients),
            "subscriptions": srv.index.count,
            "name_tag": GLOBAL_ACCOUNT,
            "sublist_stats": sublist_stats(srv.index),
        }
    return "application/json", to_json(d)


def _traffic(msgs: int, nbytes: int) -> dict:
    zero = {"msgs": 0, "bytes": 0}
    return {"msgs": msgs, "bytes": nbytes, "gateways": dict(zero), "routes": dict(zero), "leafs": dict(zero)}


def accstatz(mon, q: dict):
    srv = mon.server
    stats = []
    if srv.clients or q_bool(q, "unused"):
        stats.append({
            "acc": GLOBAL_ACCOUNT,
            "name": GLOBAL_ACCOUNT,
            "conns": len(srv.clients),
            "leafnodes": 0,
            "total_conns": len(srv.clients),
            "num_subscriptions": srv.index.count,
            "sent": _traffic(srv.out_msgs, srv.out_bytes),
            "received": _traffic(srv.in_msgs, srv.in_bytes),
            "slow_consumers": srv.slow_consumers,
        })
    return "application/json", to_json(_head(srv) | {"account_statz": stats})
