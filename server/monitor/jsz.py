"""/jsz and the ``jetstream`` block of /varz, in nats-server's JSInfo /
JetStreamVarz shapes.

Everything JetStream-specific the monitor reads goes through ``JetStreamView``
so the coupling to the JetStream subsystem is one small adapter: the stream
registry (``js.streams``), each stream's ``config``/``created``/``state_json()``
and ``consumers``, each consumer's ``info_json()``, and the account totals of
``js.account_info()``. Unknown or missing pieces read as zero rather than
failing the page, because monitoring must keep answering while the broker is
in any state.
"""

from __future__ import annotations

import os
import shutil
import time

from ..gowire import rfc3339
from .format import NS, q_bool, to_json

# an account's "unlimited" reservation, as the real server prints it (uint64 max)
UNLIMITED_RESERVATION = 2**64 - 1
DEFAULT_MAX_CONSUMERS = 1000  # JSLimitOpts as nats-server 2.15 reports it
API_LEVEL = 5


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


class JetStreamView:
    """Read-only view of the JetStream subsystem for the monitoring pages."""

    def __init__(self, srv, js=None):
        self.srv = srv
        self.js = js if js is not None else getattr(srv, "jetstream", None)

    def accounts(self) -> list["JetStreamView"]:
        """A view of each account's JetStream, by account name."""
        jss = getattr(self.srv, "jetstreams", None) or ({"$G": self.js} if self.js is not None else {})
        return [JetStreamView(self.srv, jss[n]) for n in sorted(jss)]

    def name(self) -> str:
        return getattr(self.js, "account", "$G")

    def reserved_limits(self) -> tuple[int, int]:
        """/jsz's per-account reservations: the account's memory and file
        limits, or uint64 max when it has none."""
        lim = getattr(self.js, "limits", None)
        mem, store = (lim.max_memory, lim.max_storage) if lim is not None else (-1, -1)
        return (mem if mem >= 0 else UNLIMITED_RESERVATION, store if store >= 0 else UNLIMITED_RESERVATION)

    @property
    def enabled(self) -> bool:
        return self.js is not None

    def store_dir(self) -> str:
        d = getattr(self.js, "store_dir", None)
        if d is None:
            d = os.path.join(self.srv.opts.store_dir or "", "jetstream")
        return str(d)

    def config(self) -> dict:
        # nats-server's defaults when nothing is configured: 75% of physical
        # memory, 75% of the free space where the store lives
        store_dir = self.store_dir()
        try:
            free = shutil.disk_usage(store_dir if os.path.isdir(store_dir) else os.path.dirname(store_dir) or ".").free
        except OSError:
            free = 0
        o = self.srv.opts
        mem, store = getattr(o, "js_max_memory", -1), getattr(o, "js_max_store", -1)
        d = {
            "max_memory": mem if mem >= 0 else _physical_memory() * 3 // 4,
            "max_storage": store if store >= 0 else free * 3 // 4,
            "store_dir": store_dir,
            # the interval JetStream syncs at (natslab's default: 1 s, with
            # a PubAck waiting for its own sync; nats-server's 2 m, lazy);
            # with sync_interval: always, as nats-server: its default interval and sync_always
            "sync_interval": int((getattr(self.js, "sync_interval", None) or getattr(o, "sync_interval", None)
                                  or 1.0) * NS),
        }
        if getattr(self.js, "sync_always", False) or getattr(o, "sync_always", False):
            d["sync_always"] = True
        if getattr(o, "js_domain", ""):
            d["domain"] = o.js_domain
        d["strict"] = True
        return d

    def account(self) -> dict:
        try:
            info = self.js.account_info()
        except Exception:
            info = {}
        api = info.get("api") or {}
        return {
            "memory": info.get("memory", 0),
            "storage": info.get("storage", 0),
            "reserved_memory": info.get("reserved_memory", 0),
            "reserved_storage": info.get("reserved_storage", 0),
            "api_total": api.get("total", getattr(self.js, "api_total", 0)),
            "api_errors": api.get("errors", getattr(self.js, "api_errors", 0)),
        }

    def streams(self) -> list:
        return sorted(dict(getattr(self.js, "streams", {}) or {}).values(), key=lambda s: s.name)

    @staticmethod
    def stream_state(st) -> dict:
        return st.state_json()

    @staticmethod
    def stream_config(st) -> dict:
        return st.config_json()

    @staticmethod
    def consumers(st) -> list:
        return sorted(dict(getattr(st, "consumers", {}) or {}).values(), key=lambda c: c.name)


def _sum_accounts(views: list[JetStreamView]) -> dict:
    total = {"memory": 0, "storage": 0, "reserved_memory": 0, "reserved_storage": 0, "api_total": 0, "api_errors": 0}
    for v in views:
        for k, n in v.account().items():
            total[k] += n
    return total


def _stats(acct: dict, accounts: int) -> dict:
    return {
        "memory": acct["memory"],
        "storage": acct["storage"],
        "reserved_memory": acct["reserved_memory"],
        "reserved_storage": acct["reserved_storage"],
        "accounts": accounts,
        "ha_assets": 0,
        "api": {"level": API_LEVEL, "total": acct["api_total"], "errors": acct["api_errors"]},
    }


def varz_jetstream(srv) -> dict:
    v = JetStreamView(srv)
    if not v.enabled:
        return {}
    return {
        "config": v.config(),
        "stats": _stats(_sum_accounts(v.accounts()), len(v.accounts())),
        "limits": {"default_max_consumers": DEFAULT_MAX_CONSUMERS},
    }


def _stream_detail(v: JetStreamView, st, leader: str, with_config: bool, with_consumers: bool) -> dict:
    d = {"name": st.name, "created": rfc3339(st.created), "cluster": {"leader": leader}}
    if with_config:
        d["config"] = v.stream_config(st)
    d["state"] = v.stream_state(st)
    if with_consumers:
        details = []
        for c in v.consumers(st):
            info = dict(c.info_json(dynamic=False))
            if not with_config:
                info.pop("config", None)
            details.append(info)
        if details:
            d["consumer_detail"] = details
    return d


def jsz(mon, q: dict):
    srv = mon.server
    v = JetStreamView(srv)
    want_accounts, want_streams = q_bool(q, "accounts"), q_bool(q, "streams")
    want_consumers, want_config = q_bool(q, "consumers"), q_bool(q, "config")
    for name in ("leader-only", "raft", "stream-leader-only"):
        q_bool(q, name)  # validated like the real server, no meaning on one node
    now = rfc3339(time.time_ns())
    if not v.enabled:
        d = _stats({"memory": 0, "storage": 0, "reserved_memory": 0, "reserved_storage": 0,
                    "api_total": 0, "api_errors": 0}, 0)
        d["api"]["level"] = 0
        d.update({"server_id": srv.server_id, "now": now, "disabled": True,
                  "config": {"max_memory": 0, "max_storage": 0},
                  "streams": 0, "consumers": 0, "messages": 0, "bytes": 0, "total": 0})
        return "application/json", to_json(d)

    views = v.accounts()
    per = [(a, a.streams()) for a in views]
    states = [a.stream_state(st) for a, streams in per for st in streams]
    d = _stats(_sum_accounts(views), len(views))
    d.update({
        "server_id": srv.server_id,
        "now": now,
        "config": v.config(),
        "limits": {"default_max_consumers": DEFAULT_MAX_CONSUMERS},
        "streams": sum(len(streams) for _, streams in per),
        "consumers": sum(len(a.consumers(st)) for a, streams in per for st in streams),
        "messages": sum(s.get("messages", 0) for s in states),
        "bytes": sum(s.get("bytes", 0) for s in states),
    })
    # one account asked for by name (acc=) comes alone; else all, when
    # accounts (or streams, or consumers) are asked for
    want_streams = want_streams or want_consumers
    chosen = [(a, streams) for a, streams in per if a.name() == q.get("acc", "")]
    if not chosen and (want_accounts or (want_streams and not q.get("acc"))):
        chosen = per
    if chosen:
        d["account_details"] = []
        for a, streams in chosen:
            acct = a.account()
            mem, store = a.reserved_limits()
            detail = {
                "name": a.name(),
                "id": a.name(),
                "memory": acct["memory"],
                "storage": acct["storage"],
                "reserved_memory": mem,
                "reserved_storage": store,
                "accounts": 0,
                "ha_assets": 0,
                "api": {"level": 0, "total": acct["api_total"], "errors": acct["api_errors"]},
            }
            if (want_streams or want_consumers) and streams:
                detail["stream_detail"] = [
                    _stream_detail(a, st, srv.server_name, want_config, want_consumers) for st in streams
                ]
            d["account_details"].append(detail)
    d["total"] = len(views)
    return "application/json", to_json(d)
