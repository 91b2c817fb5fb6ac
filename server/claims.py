"""Claim updates over ``$SYS`` in operator mode (server/resolver.py).

nats-server's account claim update handlers: ``$SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE``
(and the old ``$SYS.ACCOUNT.<key>.CLAIMS.UPDATE``) update an account the
server knows (``jwt update skipped`` for another, with the MEMORY resolver);
with the full directory resolver they, and ``$SYS.REQ.CLAIMS.UPDATE`` for
any account, store the JWT in the directory first (whoever signed it, as
nats-server does: trust is checked at login), and ``$SYS.REQ.CLAIMS.LIST``
and ``$SYS.REQ.ACCOUNT.<key>.CLAIMS.LOOKUP`` answer from it. Every answer
is nats-server's ServerAPIClaimUpdateResponse. An accepted update replaces
the account's claims: users it revokes, or beyond its connection limit,
are dropped; the limits of the others follow; the JWT accounts' imports
and exports are wired again; an account new to the server is served at once.
"""

from __future__ import annotations

import json

from . import jwt
from .resolver import ERR_ACCOUNT_CONNS, ERR_MAX_SUBS, ERR_REVOKED


class ClaimUpdates:
    """The claim update requests of one server's OperatorMode."""

    def __init__(self, mode, server):
        self.server = server
        # the operator mode's own state (shared, not copied: an update changes it there)
        self.resolver = mode.resolver
        self.accounts = mode.accounts
        self.trusted = mode.trusted
        self.strict = mode.strict
        self.operator_keys = mode.operator_keys
        self.account_config = mode.account_config
        self._limits = mode._limits

    def start(self) -> None:
        """Subscribe the claim update requests in the system account."""
        server = self.server
        sysreq = server.sys_requests
        index = server.accounts.system.index
        for subject in ("$SYS.REQ.ACCOUNT.*.CLAIMS.UPDATE", "$SYS.ACCOUNT.*.CLAIMS.UPDATE"):
            sysreq.subscribe(index, subject, self._account_update)
        if self.resolver.tracking:
            sysreq.subscribe(index, "$SYS.REQ.CLAIMS.UPDATE", self._claims_update)
            sysreq.subscribe(index, "$SYS.REQ.CLAIMS.LIST", self._list)
        if self.resolver.dir is not None:
            sysreq.subscribe(index, "$SYS.REQ.ACCOUNT.*.CLAIMS.LOOKUP", self._lookup)

    def _respond(self, reply: str, acc: str, message: str, err: str | None = None) -> None:
        if not reply:
            return
        srv = self.server
        client = srv.current_publisher
        body: dict = {"server": srv.sys_requests.server_block()}
        if err is None:
            body["data"] = {"account": acc, "code": 200, "message": message}
        else:
            body["error"] = {"account": acc, "code": 500, "description": f"{message} - {err}"}
        srv.sys_requests.reply(client, reply, json.dumps(body).encode())

    def _account_update(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        toks = subject.split(".")
        key = toks[2] if len(toks) == 5 else toks[3] if len(toks) == 6 else ""
        if not key:
            return
        if not payload:
            self._respond(reply, key, "jwt update error", "request body is empty")
            return
        token = payload.decode("utf-8", "replace").strip()
        try:
            claims = jwt.decode(token, "account")
        except jwt.JWTError as e:
            self._respond(reply, key if not self.resolver.tracking else "n/a", "jwt update resulted in error", str(e))
            return
        if claims["sub"] != key:
            self._respond(reply, key, "jwt update resulted in error", "subject does not match jwt content")
            return
        if self.resolver.tracking and self._strict_refused(claims, reply):
            return
        if self.resolver.tracking:
            self._store(claims, token, reply)
        elif key not in self.accounts:
            self._respond(reply, key, "jwt update skipped")
        else:
            self._apply(claims, token, reply)

    def _claims_update(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        token = payload.decode("utf-8", "replace").strip()
        try:
            claims = jwt.decode(token, "account")
        except jwt.JWTError as e:
            self._respond(reply, "n/a", "jwt update resulted in error", str(e))
            return
        if self._strict_refused(claims, reply):
            return
        self._store(claims, token, reply)

    def _strict_refused(self, claims: dict, reply: str) -> bool:
        if claims["iss"] in self.operator_keys and claims["iss"] in self.strict:
            self._respond(reply, claims["sub"], "jwt update resulted in error",
                          "operator requires issuer to be a signing key")
            return True
        return False

    def _store(self, claims: dict, token: str, reply: str) -> None:
        key = claims["sub"]
        try:  # (stored whoever signed it, as nats-server stores it; trusted or not is checked at login)
            self.resolver.save(key, token)
        except OSError as e:
            self._respond(reply, key, "jwt update resulted in error", str(e))
            return
        if key in self.accounts:
            self._apply(claims, token, None)
        elif claims["iss"] in self.trusted:
            self._add_account(claims)
        self._respond(reply, key, "jwt updated")

    def _list(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        """The keys of the stored accounts (``nsc push --prune`` asks)."""
        if not reply:
            return
        srv = self.server
        body = {"server": srv.sys_requests.server_block(), "data": sorted(self.resolver.stored())}
        srv.sys_requests.reply(srv.current_publisher, reply, json.dumps(body).encode())

    def _lookup(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        if not reply:
            return
        toks = subject.split(".")
        token = self.resolver.stored().get(toks[3], "") if len(toks) == 6 else ""
        self.server.sys_requests.reply(self.server.current_publisher, reply, token.encode())

    def _apply(self, claims: dict, token: str, reply: str | None) -> None:
        """A newer JWT of a known account: its claims replace the old ones;
        connected users it revokes, or over its connection limit, go."""
        key = claims["sub"]
        if claims["iss"] not in self.trusted:
            if reply is not None:
                self._respond(reply, key, "jwt update resulted in error", "account not signed by a trusted operator")
            return
        self.accounts[key] = claims
        an = claims["nats"]
        srv = self.server
        acc = srv.accounts.by_name.get(key)
        if acc is not None:
            lim = an.get("limits") or {}
            conns = jwt.limit(claims, lim, "conn")
            count = 0
            for client in sorted((c for c in list(srv.clients.values()) if c.account is acc and not c.closed),
                                 key=lambda c: c.cid):
                uc = getattr(client, "jwt_user", None)
                if 0 <= conns <= count:
                    client.protocol_error(ERR_ACCOUNT_CONNS)
                    continue
                count += 1
                if uc is None:
                    continue
                if uc["nats"].get("bearer_token") and lim.get("disallow_bearer"):
                    client.protocol_error(b"-ERR 'Authorization Violation'\r\n")
                elif jwt.revoked(an.get("revocations"), uc["sub"], uc.get("iat") or 0):
                    client.protocol_error(ERR_REVOKED)
                else:
                    self._limits(client, uc, claims)
                    if 0 <= client.max_subs <= len(client.subs):
                        client.protocol_error(ERR_MAX_SUBS)
            self._rewire_exports(acc, key)
            self._rewire_imports()
            self._remap(acc, key)
            srv.schedule_flush()
        if reply is not None:
            self._respond(reply, key, "jwt updated")

    def _add_account(self, claims: dict) -> None:
        """An account that first comes by an update (full resolver): served
        at once, as nats-server serves it (without JetStream: the accounts
        with JetStream are those known at start)."""
        from .accounts import Account
        from .sysreq import OWN_CONNZ, USER_INFO

        key = claims["sub"]
        self.accounts[key] = claims
        srv = self.server
        acc = srv.accounts.by_name[key] = Account(key)
        sysreq = srv.sys_requests
        sysreq.subscribe(acc.index, USER_INFO, sysreq.user_info)
        for subject in OWN_CONNZ:
            sysreq.subscribe(acc.index, subject, sysreq.monitor.own_account_connz)
        self._rewire_exports(acc, key)
        self._rewire_imports()
        acc.mappings = self.account_config(key).mappings

    def _remap(self, acc, key: str) -> None:
        """The account's mappings from its new claims, for its clients too."""
        acc.mappings = self.account_config(key).mappings
        for client in list(self.server.clients.values()):
            if client.account is acc:
                client.mappings = acc.mappings

    def _rewire_imports(self) -> None:
        """Every JWT account's imports again from its claims, after an
        account came or changed (an import its exporter no longer allows
        goes; one waiting for its exporter comes). The entries are those
        server/accounts.py routes by: ``(importer, subject, prefix, to)``
        on the exporter for a stream, ``(local, exporter, subject)`` on the
        importer for a service."""
        by_name = self.server.accounts.by_name
        accs = {k: by_name[k] for k in self.accounts if k in by_name}
        for acc in accs.values():
            acc.importers = [t for t in acc.importers if t[0].name not in accs]
            acc.service_imports = []
        for key, acc in accs.items():
            for spec in self.account_config(key).imports:
                kind = "stream" if "stream" in spec else "service"
                src = accs.get(spec[kind]["account"])
                if src is None:
                    continue
                subject = spec[kind]["subject"].encode()
                if kind == "stream":
                    prefix = str(spec.get("prefix") or "").rstrip(".").encode()
                    src.importers.append((acc, subject, prefix, str(spec.get("to") or "").encode()))
                else:
                    acc.service_imports.append((str(spec.get("to") or spec[kind]["subject"]).encode(), src, subject))

    def _rewire_exports(self, acc, key: str) -> None:
        """The account's exports from its new claims (imports others made
        of it stay as they were authorized)."""
        cfg = self.account_config(key)
        acc.stream_exports = [(e["stream"].encode(), set(e["accounts"]) if "accounts" in e else None)
                              for e in cfg.exports if "stream" in e]
        acc.service_exports = [(e["service"].encode(), set(e["accounts"]) if "accounts" in e else None)
                               for e in cfg.exports if "service" in e]
