"""The system account's monitoring requests, answered as a single nats-server
answers them: what `nats server ls`, `info`, `report connections|jetstream`
and `ping` ask.

`$SYS.REQ.SERVER.PING` (and `.PING.STATSZ`) gets the server's statsz; the
`$SYS.REQ.SERVER.PING.<KIND>` requests every server of a cluster answers,
and `$SYS.REQ.SERVER.<id>.<KIND>` the one named, get the monitoring page of
that kind (VARZ, CONNZ, SUBSZ, JSZ, HEALTHZ, ACCOUNTZ, ROUTEZ, GATEWAYZ,
LEAFZ) wrapped as ``{"server": ..., "data": ...}``; `$SYS.REQ.ACCOUNT.<acc>.
CONNZ` the connections of one account. The request's JSON is the page's
options plus nats-server's server filter (server_name, host, cluster,
exact_match, tags, domain): a server the filter leaves out stays silent, as
nats-server does, because a cluster-wide ping collects whoever answers.

The pages themselves are the HTTP monitor's (monitor/varz, monitor/connz,
monitor/jsz, monitor/cluster): one builder per page, with the JSON options
turned into the query parameters those builders read. These subscriptions
live in the system account's subject space only.

The page builders are imported when a request first asks for one: every
server subscribes these at start-up, few are ever asked, and the monitoring
modules (with the TLS module connz reads) would otherwise be compiled and
loaded by every start (server/sysreq.py makes this at start).
"""

from __future__ import annotations

import importlib
import json
import os

PING = "$SYS.REQ.SERVER.PING"
SERVER = "$SYS.REQ.SERVER.{}.{}"
ACCOUNT_CONNZ = "$SYS.REQ.ACCOUNT.*.CONNZ"
_STATES = {0: "open", 1: "closed", 2: "any"}


def _flag(v) -> str:
    return "true" if v else ""


def _num(v) -> str:
    return str(int(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else ""


def _connz_q(o: dict) -> dict:
    subs = "detail" if o.get("subscriptions_detail") else _flag(o.get("subscriptions"))
    return {"sort": str(o.get("sort") or ""), "auth": _flag(o.get("auth")), "subs": subs,
            "offset": _num(o.get("offset")), "limit": _num(o.get("limit")), "cid": _num(o.get("cid")),
            "state": _STATES.get(o.get("state") or 0, "open"), "user": str(o.get("user") or ""),
            "acc": str(o.get("acc") or "")}


def _subsz_q(o: dict) -> dict:
    return {"subs": _flag(o.get("subscriptions")), "offset": _num(o.get("offset")), "limit": _num(o.get("limit")),
            "test": str(o.get("test") or "")}


def _jsz_q(o: dict) -> dict:
    return {"accounts": _flag(o.get("accounts")), "streams": _flag(o.get("streams")),
            "consumers": _flag(o.get("consumer")), "config": _flag(o.get("config"))}


def _accountz_q(o: dict) -> dict:
    return {"acc": str(o.get("account") or "")}


# kind -> (the module and name of its page builder, JSON options -> its query parameters)
PAGES = {
    "VARZ": ("varz", "varz", lambda o: {}),
    "CONNZ": ("connz", "connz", _connz_q),
    "SUBSZ": ("connz", "subsz", _subsz_q),
    "JSZ": ("jsz", "jsz", _jsz_q),
    "HEALTHZ": ("varz", "healthz", lambda o: {}),
    "ACCOUNTZ": ("cluster", "accountz", _accountz_q),
    "ROUTEZ": ("cluster", "routez", lambda o: {}),
    "GATEWAYZ": ("cluster", "gatewayz", lambda o: {}),
    "LEAFZ": ("cluster", "leafz", lambda o: {}),
}


def _builder(kind: str):
    """The page builder of a kind, its module imported on first use."""
    module, name, _ = PAGES[kind]
    return getattr(importlib.import_module(f".monitor.{module}", __package__), name)


class SysMonitor:
    def __init__(self, sysreq, account):
        self.sysreq = sysreq
        self.server = sysreq.server
        index = account.index
        sid = self.server.server_id
        sysreq.subscribe(index, PING, self.statsz)
        for target in ("PING", sid):
            sysreq.subscribe(index, SERVER.format(target, "STATSZ"), self.statsz)
            sysreq.subscribe(index, SERVER.format(target, "IDZ"), self.idz)
            for kind in PAGES:
                sysreq.subscribe(index, SERVER.format(target, kind), self._page_handler(kind))
        sysreq.subscribe(index, ACCOUNT_CONNZ, self.account_connz)

    def _monitor(self):
        """The HTTP monitor when it runs (its request counts and CPU mark are
        the server's), else one that never listens: the pages read only
        ``server``, ``host``/``port`` (0: no monitoring port) and counters."""
        srv = self.server
        if srv.monitor is not None:
            return srv.monitor
        mon = getattr(self, "_idle_monitor", None)
        if mon is None:
            from .monitor.http import Monitor

            mon = self._idle_monitor = Monitor(srv)
        return mon

    # -- the request envelope -------------------------------------------------
    def _options(self, reply: str, payload: bytes) -> dict | None:
        """The request's options, or None when it is not for this server
        (filtered out, or answered already with a decoding error)."""
        if not payload.strip():
            return {}
        try:
            o = json.loads(payload)
            if not isinstance(o, dict):
                raise ValueError(f"cannot unmarshal {type(o).__name__} into the options")
        except (ValueError, UnicodeDecodeError) as e:
            self._send(reply, {"server": self.sysreq.server_block(), "error": {"code": 400, "description": str(e)}})
            return None
        return None if self._filtered(o) else o

    def _filtered(self, o: dict) -> bool:
        """nats-server's filterRequest: name, host and cluster must match
        (exactly with exact_match, else as substrings), every tag be ours,
        the domain be ours."""
        srv = self.server
        mine = {"server_name": srv.server_name, "host": srv.opts.host, "cluster": ""}
        for key, value in mine.items():
            want = o.get(key) or ""
            if want and (want != value if o.get("exact_match") else want not in value):
                return True
        if o.get("tags"):
            return True  # natslab has no server tags
        domain = getattr(srv.opts, "jetstream_domain", "") or ""
        return bool(o.get("domain")) and o["domain"] != domain

    def _send(self, reply: str, body: dict) -> None:
        client = self.server.current_publisher
        if reply and client is not None and not client.internal:
            from .gowire import dumps

            self.sysreq.reply(client, reply, dumps(body).encode())

    # -- handlers -----------------------------------------------------------------
    def _page_handler(self, kind: str):
        def handle(subject: str, reply: str, hdr, payload: bytes) -> None:
            if reply:
                o = self._options(reply, payload)
                if o is not None:
                    self._answer(reply, kind, o)
        return handle

    def _answer(self, reply: str, kind: str, o: dict) -> None:
        from .monitor.format import BadRequest

        to_query = PAGES[kind][2]
        body: dict = {"server": self.sysreq.server_block()}
        try:
            data = json.loads(_builder(kind)(self._monitor(), to_query(o))[1])
        except BadRequest as e:
            body["error"] = {"code": 500, "description": str(e)}
        else:
            if kind == "HEALTHZ":
                data["status_code"] = 200  # the HTTP page says it in the status line instead
            body["data"] = data
        self._send(reply, body)

    def account_connz(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        if not reply:
            return
        o = self._options(reply, payload)
        if o is not None:
            o["acc"] = subject.split(".")[3]
            self._answer(reply, "CONNZ", o)

    def own_account_connz(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        """PING.CONNZ from outside the system account: that account's connections."""
        client = self.server.current_publisher
        if not reply or client is None or client.internal:
            return
        o = self._options(reply, payload)
        if o is not None:
            o["acc"] = client.account.name if client.account is not None else "$G"
            self._answer(reply, "CONNZ", o)

    def idz(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        srv = self.server
        self._send(reply, {"name": srv.server_name, "host": srv.opts.host, "id": srv.server_id})

    def statsz(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        if not reply:
            return  # nats-server broadcasts on $SYS.SERVER.<id>.STATSZ then; a lone server has nobody to tell
        if self._options(reply, payload) is not None:
            self._send(reply, {"server": self.sysreq.server_block(), "statsz": self.stats()})

    def stats(self) -> dict:
        """nats-server's ServerStats for this server."""
        from .gowire import rfc3339
        from .monitor.format import go_number
        from .monitor.jsz import varz_jetstream
        from .monitor.varz import _cpu_percent, _rss

        srv = self.server
        out_msgs, out_bytes = srv.out_msgs, srv.out_bytes
        d = {
            "start": rfc3339(int(srv.start_time * 1e9)),
            "mem": _rss(),
            "cores": os.cpu_count() or 1,
            "cpu": go_number(_cpu_percent(self._monitor())),
            "connections": len(srv.clients),
            "total_connections": srv.total_connections,
            "active_accounts": len({c.account.name if c.account is not None else "$G" for c in srv.clients.values()}),
            "subscriptions": srv.num_subscriptions,
            "sent": {"msgs": out_msgs, "bytes": out_bytes},
            "sent_to_clients": {"msgs": out_msgs, "bytes": out_bytes},
            "received": {"msgs": srv.in_msgs, "bytes": srv.in_bytes},
            "received_from_clients": {"msgs": srv.in_msgs, "bytes": srv.in_bytes},
            "slow_consumers": srv.slow_consumers,
            "active_servers": 1,
        }
        js = varz_jetstream(srv)
        if js:
            js["config"].pop("store_dir", None)  # statsz leaves it out
            d["jetstream"] = js
        d["gomaxprocs"] = 1
        return d
