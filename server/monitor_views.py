"""The monitoring endpoints' JSON, built from the broker's live state in the
shapes (field names and order) of nats-server's Varz, Connz/ConnInfo and
Subsz/SubDetail, plus the query-parameter rules and error texts of its
monitor, so tools written against nats-server read natslab unchanged.

Each view takes the ``Monitor`` and the query (first value per key) and
returns ``(content_type, body)``; it raises ``BadRequest`` for a bad query.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time

from . import protocol as p
from .subjects import subject_matches, valid_literal_subject

DEFAULT_LIMIT = 1024
NS = 1_000_000_000


class BadRequest(Exception):
    """A query the real server answers with 400 and this text."""


# -- Go's wire conventions ------------------------------------------------------
def go_time(ns: int) -> str:
    """time.Time as Go marshals it (RFC 3339, trimmed nanoseconds, UTC)."""
    sec, frac = divmod(int(ns), NS)
    s = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
    if frac:
        s += "." + f"{frac:09d}".rstrip("0")
    return s + "Z"


def _frac(v: int, unit: int) -> str:
    whole, rest = divmod(v, unit)
    if not rest:
        return str(whole)
    return f"{whole}." + f"{rest:0{len(str(unit)) - 1}d}".rstrip("0")


def go_duration(ns: int) -> str:
    """time.Duration.String(): "0s", "850µs", "1.191304ms", "2m3.5s"."""
    ns = int(ns)
    if ns == 0:
        return "0s"
    sign, u = ("-", -ns) if ns < 0 else ("", ns)
    if u < 1000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        return f"{sign}{_frac(u, 1000)}µs"
    if u < NS:
        return f"{sign}{_frac(u, 1_000_000)}ms"
    h, rem = divmod(u, 3600 * NS)
    m, rem = divmod(rem, 60 * NS)
    s = _frac(rem, NS) + "s"
    if h:
        return f"{sign}{h}h{m}m{s}"
    if m:
        return f"{sign}{m}m{s}"
    return sign + s


def uptime(seconds: float) -> str:
    """nats-server's myUptime: whole seconds as "1y2d3h4m5s"."""
    s = max(0, int(seconds))
    m, h, d = s // 60, s // 3600, s // 86400
    y = d // 365
    if y:
        return f"{y}y{d % 365}d{h % 24}h{m % 60}m{s % 60}s"
    if d:
        return f"{d}d{h % 24}h{m % 60}m{s % 60}s"
    if h:
        return f"{h}h{m % 60}m{s % 60}s"
    if m:
        return f"{m}m{s % 60}s"
    return f"{s}s"


def _num(x):
    """Go prints a float64 with no fraction as an integer (1, not 1.0)."""
    return int(x) if isinstance(x, float) and x.is_integer() else x


def to_json(obj) -> bytes:
    """json.MarshalIndent(obj, "", "  ") with Go's HTML-safe escaping."""
    s = json.dumps(obj, indent=2, ensure_ascii=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


# -- query parameters, with the real server's error texts -----------------------
_INT = re.compile(r"[+-]?\d+")
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def q_bool(q: dict, name: str) -> bool:
    v = q.get(name, "")
    if v == "" or v in _FALSE:
        return False
    if v in _TRUE:
        return True
    raise BadRequest(f"Error decoding boolean for '{name}': strconv.ParseBool: parsing {json.dumps(v)}: invalid syntax")


def q_int(q: dict, name: str) -> int:
    v = q.get(name, "")
    if v == "":
        return 0
    if not _INT.fullmatch(v):
        raise BadRequest(f"Error decoding int for '{name}': strconv.Atoi: parsing {json.dumps(v)}: invalid syntax")
    n = int(v)
    if abs(n) >= 2**63:
        raise BadRequest(f"Error decoding int for '{name}': strconv.Atoi: parsing {json.dumps(v)}: value out of range")
    return n


def page(items: list, offset: int, limit: int) -> tuple[list, int, int]:
    """nats-server's paging: a negative offset is 0, a limit <= 0 the default."""
    offset = max(0, offset)
    limit = limit if limit > 0 else DEFAULT_LIMIT
    return items[offset : offset + limit], offset, limit


# -- /varz ---------------------------------------------------------------------
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
    from .monitor_jsz import varz_jetstream

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
        "http_port": mon.port,
        "http_base_path": "",
        "https_port": 0,
        "auth_timeout": _num(float(o.auth_timeout)),
        "max_control_line": p.MAX_CONTROL_LINE,
        "max_payload": o.max_payload,
        "max_pending": o.max_pending,
        "cluster": {},
        "gateway": {},
        "leaf": {},
        "mqtt": {},
        "websocket": {},
        "jetstream": varz_jetstream(srv),
        "tls_timeout": 2,
        "write_deadline": 10 * NS,
        "start": go_time(start),
        "now": go_time(now),
        "uptime": uptime((now - start) / NS),
        "mem": _rss(),
        "cores": os.cpu_count() or 1,
        "gomaxprocs": 1,
        "cpu": _num(_cpu_percent(mon)),
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
        "config_load_time": go_time(start),
        "config_digest": "",
        "system_account": "$SYS",
        "slow_consumer_stats": {"clients": srv.slow_consumers, "routes": 0, "gateways": 0, "leafs": 0},
        "stale_connection_stats": {"clients": 0, "routes": 0, "gateways": 0, "leafs": 0},
        # nats-server 2.15's defaults; natslab implements none of these toggles
        "feature_flags": {"js_ack_fc_v2": False, "js_api_reply_v2": False,
                          "js_raft_delete_range": True, "js_snapshot_sources": False},
        "disk_io_wait_stats": {"waiters": 0, "waits": 0, "wait_time": 0, "max_wait_time": 0},
    })
    return "application/json", to_json(d)


# -- /connz --------------------------------------------------------------------
# sort option -> (key on a Client, descending); as nats-server orders them
_SORTS = {
    "cid": (lambda c, now: c.cid, False),
    "start": (lambda c, now: c.start, False),
    "subs": (lambda c, now: len(c.subs), True),
    "pending": (lambda c, now: c.pending_bytes, True),
    "msgs_to": (lambda c, now: c.out_msgs, True),
    "msgs_from": (lambda c, now: c.in_msgs, True),
    "bytes_to": (lambda c, now: c.out_bytes, True),
    "bytes_from": (lambda c, now: c.in_bytes, True),
    "last": (lambda c, now: c.last_activity, True),
    "idle": (lambda c, now: now - c.last_activity, True),
    "uptime": (lambda c, now: now - c.start, True),
    "rtt": (lambda c, now: c.rtt, True),
    "stop": (lambda c, now: getattr(c, "stop", 0), True),
    "reason": (lambda c, now: getattr(c, "close_reason", ""), False),
}
_STATES = {"open": "open", "closed": "closed", "any": "any", "all": "any"}


def sub_detail(sub, with_account: bool) -> dict:
    d = {}
    if with_account:
        d["account"] = d["account_tag"] = "$G"
    d["subject"] = sub.subject.decode(errors="replace")
    if sub.queue:
        d["qgroup"] = sub.queue.decode(errors="replace")
    d["sid"] = sub.sid.decode(errors="replace")
    d["msgs"] = sub.msgs
    if getattr(sub, "max", 0):
        d["max"] = sub.max
    d["cid"] = sub.client.cid
    return d


def conn_info(c, now: float, subs: str, closed: dict | None = None, auth: bool = False) -> dict:
    d = {
        "cid": c.cid,
        "kind": "Client",
        "type": "nats",
        "ip": c.host,
        "port": c.port,
        "start": go_time(int(c.start * NS)),
        "last_activity": go_time(int(c.last_activity * NS)),
    }
    if closed is not None:
        now = c.stop  # a closed connection's clock stopped when it closed
        d["stop"] = go_time(int(now * NS))
        d["reason"] = c.close_reason or "Client Closed"
    d.update({
        "rtt": go_duration(int(c.rtt * NS)),
        "uptime": uptime(now - c.start),
        "idle": uptime(now - c.last_activity),
        "pending_bytes": 0 if closed is not None else c.pending_bytes,
        "in_msgs": c.in_msgs,
        "out_msgs": c.out_msgs,
        "in_bytes": c.in_bytes,
        "out_bytes": c.out_bytes,
        "subscriptions": len(c.subs),
    })
    for key in ("name", "lang", "version"):
        if getattr(c, key, ""):
            d[key] = getattr(c, key)
    if auth:
        if getattr(c, "user", ""):
            d["authorized_user"] = c.user
        d["name_tag"] = "$G"  # what nats-server 2.15 prints for the global account
    if subs == "list" and c.subs:
        d["subscriptions_list"] = [s.subject.decode(errors="replace") for s in c.subs.values()]
    elif subs == "detail" and c.subs:
        d["subscriptions_list_detail"] = [sub_detail(s, False) for s in c.subs.values()]
    return d


class _ClosedConn:
    """A closed connection as far as the broker remembers it."""

    def __init__(self, rec: dict):
        client = rec.get("client")
        self.rec = rec
        self.cid = rec.get("cid", getattr(client, "cid", 0))
        for key, default in (("host", ""), ("port", 0), ("start", 0.0), ("last_activity", 0.0), ("rtt", 0.0),
                             ("in_msgs", 0), ("out_msgs", 0), ("in_bytes", 0), ("out_bytes", 0),
                             ("name", ""), ("lang", ""), ("version", ""), ("user", "")):
            setattr(self, key, rec.get(key, getattr(client, key, default)))
        self.subs = rec.get("subs", getattr(client, "subs", {})) or {}
        self.pending_bytes = 0
        self.close_reason = rec.get("reason", "") or getattr(client, "close_reason", "")
        # the broker may keep only cid/name/reason: then the times collapse to
        # the stop time rather than to the epoch
        self.stop = rec.get("stop", getattr(client, "stop", 0.0)) or self.last_activity or time.time()
        self.start = self.start or self.stop
        self.last_activity = self.last_activity or self.stop


def connz(mon, q: dict):
    srv = mon.server
    now = time.time()
    subs = q.get("subs", "")
    subs = "detail" if subs == "detail" else ("list" if q_bool(q, "subs") else "")
    offset, limit, cid = q_int(q, "offset"), q_int(q, "limit"), q_int(q, "cid")
    auth = q_bool(q, "auth")
    state = q.get("state", "") or "open"
    if state not in _STATES:
        raise BadRequest(f"Error decoding state for {state}")
    state = _STATES[state]
    sort = q.get("sort", "") or "cid"
    if sort not in _SORTS:
        raise BadRequest(f"invalid sorting option: {sort}")
    if sort in ("stop", "reason") and state != "closed":
        raise BadRequest(f"sort by {sort} only valid on closed connections")

    conns: list = []
    if state in ("open", "any"):
        conns += [(c, None) for c in srv.clients.values()]
    if state in ("closed", "any"):
        conns += [(cc, cc.rec) for cc in map(_ClosedConn, reversed(getattr(srv, "closed_conns", [])))]
    if cid > 0:
        total = len(conns)
        conns = [x for x in conns if x[0].cid == cid][:1]
        items, offset, limit = conns, 0, 1
    else:
        key, desc = _SORTS[sort]
        conns.sort(key=lambda x: key(x[0], now), reverse=desc)
        total = len(conns)
        items, offset, limit = page(conns, offset, limit)
    d = {
        "server_id": srv.server_id,
        "now": go_time(time.time_ns()),
        "num_connections": len(items),
        "total": total,
        "offset": offset,
        "limit": limit,
        "connections": [conn_info(c, now, subs, rec, auth) for c, rec in items],
    }
    return "application/json", to_json(d)


# -- /subsz --------------------------------------------------------------------
def subsz(mon, q: dict):
    srv = mon.server
    idx = srv.index
    want_subs = q_bool(q, "subs")
    offset, limit = q_int(q, "offset"), q_int(q, "limit")
    test = q.get("test", "")
    if test and not valid_literal_subject(test):
        raise BadRequest(f"invalid test subject, must be valid publish subject: {test}")
    cache = idx.cache
    fanouts = [len(r[0]) + len(r[1]) for r in list(cache.values())]
    d = {
        "server_id": srv.server_id,
        "now": go_time(time.time_ns()),
        "num_subscriptions": idx.count,
        "num_cache": len(cache),
        "num_inserts": idx.inserts,
        "num_removes": idx.removes,
        "num_matches": idx.matches,
        "cache_hit_rate": _num(idx.cache_hits / idx.matches) if idx.matches else 0,
        "max_fanout": max(fanouts, default=0),
        "avg_fanout": _num(sum(fanouts) / len(fanouts)) if fanouts else 0,
    }
    subs_list = None
    total = 0
    if want_subs:
        matched = idx.all()
        if test:
            t = test.encode()
            matched = [s for s in matched if subject_matches(s.subject, t)]
        total = len(matched)
        items, offset, limit = page(matched, offset, limit)
        subs_list = [sub_detail(s, True) for s in items]
    else:
        offset, limit = max(0, offset), limit if limit > 0 else DEFAULT_LIMIT
    d.update({"total": total, "offset": offset, "limit": limit})
    if subs_list:
        d["subscriptions_list"] = subs_list
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
    <a href=./healthz>Health Probe<span class="endpoint"> /healthz</span></a><br/>
    <a href=https://docs.nats.io/running-a-nats-service/nats_admin/monitoring>Help</a>
  </body>
</html>
"""


def index(mon, q: dict):
    return "text/html; charset=utf-8", _INDEX.format(version=mon.server.version).encode()


def _jsz(mon, q: dict):
    from .monitor_jsz import jsz

    return jsz(mon, q)


ROUTES = {
    "/": index,
    "/varz": varz,
    "/connz": connz,
    "/subsz": subsz,
    "/subscriptionsz": subsz,
    "/jsz": _jsz,
    "/healthz": healthz,
}
