"""/connz and /subsz: the client connections and the subscription index in
the shapes of nats-server's Connz/ConnInfo and Subsz/SubDetail, with its
paging, sorting and filtering rules."""

from __future__ import annotations

import time

from ..gowire import go_duration, rfc3339
from .format import (
    DEFAULT_LIMIT, NS, BadRequest, go_number, page, q_bool, q_int, to_json, uptime,
)
from ..subjects import subject_matches, valid_literal_subject

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
        "start": rfc3339(int(c.start * NS)),
        "last_activity": rfc3339(int(c.last_activity * NS)),
    }
    if closed is not None:
        now = c.stop  # a closed connection's clock stopped when it closed
        d["stop"] = rfc3339(int(now * NS))
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
    ws = getattr(c, "ws", None)
    if ws is not None:
        d["type"] = "websocket"
    st = getattr(c, "tls_state", None)
    if st is not None:
        from .. import tls  # (a server without TLS never loads it, nor the ssl module)

        d.update(tls.connz_fields(st, getattr(c, "tls_first", False)))
    account = getattr(c, "account", None)
    if auth:
        if getattr(c, "user", ""):
            d["authorized_user"] = c.user
        if account is not None:
            d["account"] = account.name
        # what nats-server 2.15 prints for the global account, or the account's name
        d["name_tag"] = account.name if account is not None else "$G"
    if subs == "list" and c.subs:
        d["subscriptions_list"] = [s.subject.decode(errors="replace") for s in c.subs.values()]
    elif subs == "detail" and c.subs:
        d["subscriptions_list_detail"] = [sub_detail(s, False) for s in c.subs.values()]
    return d


def _account_name(c) -> str:
    account = getattr(c, "account", None)
    return account.name if account is not None else "$G"


class _ClosedConn:
    """A closed connection as far as the broker remembers it."""

    def __init__(self, rec: dict):
        client = rec.get("client")
        self.rec = rec
        self.cid = rec.get("cid", getattr(client, "cid", 0))
        for key, default in (("host", ""), ("port", 0), ("start", 0.0), ("last_activity", 0.0), ("rtt", 0.0),
                             ("in_msgs", 0), ("out_msgs", 0), ("in_bytes", 0), ("out_bytes", 0),
                             ("name", ""), ("lang", ""), ("version", ""), ("user", ""), ("account", None)):
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
    if q.get("acc", ""):
        conns = [x for x in conns if _account_name(x[0]) == q["acc"]]
    if q.get("user", ""):
        conns = [x for x in conns if getattr(x[0], "user", "") == q["user"]]
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
        "now": rfc3339(time.time_ns()),
        "num_connections": len(items),
        "total": total,
        "offset": offset,
        "limit": limit,
        "connections": [conn_info(c, now, subs, rec, auth) for c, rec in items],
    }
    return "application/json", to_json(d)


# -- /subsz --------------------------------------------------------------------
def sublist_stats(idx) -> dict:
    """The subscription index's counters, as /subsz (and each /routez
    route's) reports them."""
    fanouts = [len(r[0]) + len(r[1]) for r in list(idx.cache.values())]
    return {
        "num_subscriptions": idx.count,
        "num_cache": len(idx.cache),
        "num_inserts": idx.inserts,
        "num_removes": idx.removes,
        "num_matches": idx.matches,
        "cache_hit_rate": go_number(idx.cache_hits / idx.matches) if idx.matches else 0,
        "max_fanout": max(fanouts, default=0),
        "avg_fanout": go_number(sum(fanouts) / len(fanouts)) if fanouts else 0,
    }


def subsz(mon, q: dict):
    srv = mon.server
    idx = srv.index
    want_subs = q_bool(q, "subs")
    offset, limit = q_int(q, "offset"), q_int(q, "limit")
    test = q.get("test", "")
    if test and not valid_literal_subject(test):
        raise BadRequest(f"invalid test subject, must be valid publish subject: {test}")
    d = {"server_id": srv.server_id, "now": rfc3339(time.time_ns())} | sublist_stats(idx)
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
