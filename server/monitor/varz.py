"""/varz, /healthz and the / index page: the server's identity, limits and
totals in the shape of nats-server's Varz."""

from __future__ import annotations

import os
import sys
import time

from ..gowire import rfc3339
from .format import NS, go_number, to_json, uptime
from .jsz import varz_jetstream


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _cpu_percent(mon) -> float:
    t = os.times()
    cpu, wall = t.user + t.system, time.monotonic()
    prev = mon._cpu_mark or (wall - max(1e-9, time.time() - mon.server.start_time), 0.0)
    mon._cpu_mark = (wall, cpu)
    span = wall - prev[0]
    return round(100 * (cpu - prev[1]) / span, 1) if span > 0 else 0.0


def varz(mon, q: dict):
    srv, o = mon.server, mon.server.opts
    now = time.time_ns()
    start = int(srv.start_time * NS)
    d = {
        "server_id": srv.server_id,
        "server_name": srv.server_name,
        "version": srv.version,
        "proto": 1,
        "git_commit": "",
        "go": f"natslab (python {sys.version_info[0]}.{sys.version_info[1]})",
        "host": o.host,
        "port": srv.port,
    }
    if srv.auth_required:
        d["auth_required"] = True
    d.update({
        "max_connections": o.max_connections,
        "ping_interval": int(o.ping_interval * NS),
        "ping_max": o.ping_max,
        "http_host": mon.host,
        "http_port": 0 if mon.secure else mon.port,
        "http_base_path": "",
        "https_port": mon.port if mon.secure else 0,
        "auth_timeout": go_number(float(o.auth_timeout)),
        "max_control_line": o.max_control_line,
        "max_payload": o.max_payload,
        "max_pending": o.max_pending,
        "cluster": {},
        "gateway": {},
        "leaf": {},
        "mqtt": {},
        "websocket": {},
        "jetstream": varz_jetstream(srv),
        "tls_timeout": 2,
        "write_deadline": int(o.write_deadline * NS),
        "start": rfc3339(start),
        "now": rfc3339(now),
        "uptime": uptime((now - start) / NS),
        "mem": _rss(),
        "cores": os.cpu_count() or 1,
        "gomaxprocs": 1,
        "cpu": go_number(_cpu_percent(mon)),
        "connections": len(srv.clients),
        "total_connections": srv.total_connections,
        "routes": 0,
        "remotes": 0,
        "leafnodes": 0,
        "in_msgs": srv.in_msgs,
        "in_bytes": srv.in_bytes,
        "in_client_msgs": srv.in_msgs,
        "in_client_bytes": srv.in_bytes,
        "out_msgs": srv.out_msgs,
        "out_bytes": srv.out_bytes,
        "out_client_msgs": srv.out_msgs,
        "out_client_bytes": srv.out_bytes,
        "slow_consumers": srv.slow_consumers,
        "stale_connections": 0,
        "stalled_clients": 0,
        "subscriptions": srv.num_subscriptions,
        "http_req_stats": dict(sorted(mon.req_stats.items())),
        "config_load_time": rfc3339(start),
        "config_digest": "",
        **({"tags": list(o.server_tags)} if getattr(o, "server_tags", None) else {}),
        **({} if o.no_system_account else {"system_account": getattr(o, "system_account", "$SYS")}),
        **({"pinned_account_fails": o.operator.pinned_fails} if getattr(getattr(o, "operator", None), "pinned_fails", 0)
           else {}),
        "slow_consumer_stats": {"clients": srv.slow_consumers, "routes": 0, "gateways": 0, "leafs": 0},
        "stale_connection_stats": {"clients": 0, "routes": 0, "gateways": 0, "leafs": 0},
        # nats-server 2.15's defaults; natslab implements none of these toggles
        "feature_flags": {"js_ack_fc_v2": False, "js_api_reply_v2": False,
                          "js_raft_delete_range": True, "js_snapshot_sources": False},
        "disk_io_wait_stats": {"waiters": 0, "waits": 0, "wait_time": 0, "max_wait_time": 0},
    })
    return "application/json", to_json(d)


# -- /healthz and / ------------------------------------------------------------
def healthz(mon, q: dict):
    return "application/json", b'{"status":"ok"}'


_INDEX = """<html lang="en">
  <head><title>natslab monitoring</title></head>
  <body>
    <h1>natslab v{version}</h1>
    <a href=./varz>General<span class="endpoint"> /varz</span></a><br/>
    <a href=./jsz>JetStream<span class="endpoint"> /jsz</span></a><br/>
    <a href=./connz>Connections<span class="endpoint"> /connz</span></a><br/>
    <a href=./subsz>Subscriptions<span class="endpoint"> /subsz</span></a><br/>
    <a href=./accountz>Accounts<span class="endpoint"> /accountz</span></a><br/>
    <a href=./accstatz>Account Stats<span class="endpoint"> /accstatz</span></a><br/>
    <a href=./routez>Routes<span class="endpoint"> /routez</span></a><br/>
    <a href=./leafz>Leaf Nodes<span class="endpoint"> /leafz</span></a><br/>
    <a href=./gatewayz>Gateways<span class="endpoint"> /gatewayz</span></a><br/>
    <a href=./healthz>Health Probe<span class="endpoint"> /healthz</span></a><br/>
    <a href=https://docs.nats.io/running-a-nats-service/nats_admin/monitoring>Help</a>
  </body>
</html>
"""


def index(mon, q: dict):
    return "text/html; charset=utf-8", _INDEX.format(version=mon.server.version).encode()
