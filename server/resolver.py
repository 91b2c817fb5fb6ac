"""Operator mode: ``operator:`` JWTs, an account resolver, and JWT users.

With ``operator: op.jwt`` (a file, or the JWT inline) the server trusts the
operator's key and its signing keys. Accounts are account JWTs the
operator signed, found by the resolver: ``resolver: MEMORY`` with
``resolver_preload { <account key>: <jwt> }``, or the directory resolver
``resolver { type: full, dir: ... }`` (also ``cache``), whose store is a
file ``<dir>/<account key>.jwt`` per account. Every account known at start
becomes a natslab account (server/accounts.py) named by its public key, its
exports, imports and JetStream limits taken from the claims, so routing,
imports and JetStream are that module's.

A client logs in with a user JWT and the nonce of its INFO signed by the
user's seed (``jwt`` and ``sig`` in CONNECT; a bearer JWT needs no
signature), as nats-server's processClientOrLeafAuthentication checks it:
the user JWT signed by its account (or one of the account's signing keys,
``issuer_account`` naming the account), the account signed by a trusted
operator key, neither expired, the user not revoked. The user's
permissions (``pub``/``sub`` allow and deny) and limits (``subs``,
``payload``, the account's ``conn``) apply as nats-server applies them.

Claim updates (server/claims.py): ``$SYS.REQ.ACCOUNT.<key>.CLAIMS.UPDATE`` (and the old
``$SYS.ACCOUNT.<key>.CLAIMS.UPDATE``) update a known account; with the full
resolver also ``$SYS.REQ.CLAIMS.UPDATE``, and the JWT is stored in the
directory (a new account is served at once; every update re-wires the
imports and exports of the JWT accounts). An update replaces the account's
claims, and drops connected users it revokes (``User Authentication
Revoked``) or that exceed its connection limit. The ``cache`` directory
resolver is read as ``full`` at start and takes updates as MEMORY does
(known accounts only, not stored).

Not done (an error at start-up rather than a server that behaves otherwise):
URL resolvers, ``resolver_tls``. Not done
silently: activation tokens on imports, ``resp`` permissions, user
``src``/``times``/``data`` limits, scoped signing key templates, account ``data``/``imports``/``exports``
limits, and JetStream for an account that first comes by an update (it is
served at once, without JetStream until the next start).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from . import jwt
from .conf import ConfigError, go_type

OPERATOR_KEYS = ("operator", "operators", "roots", "root", "root_operators", "root_operator")
RESOLVER_KEYS = ("resolver", "account_resolver", "accounts_resolver")
_JWT_RE = re.compile(r"eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+")

ERR_ACCOUNT_CONNS = b"-ERR 'maximum account active connections exceeded'\r\n"
ERR_MAX_SUBS = b"-ERR 'maximum subscriptions exceeded'\r\n"
ERR_REVOKED = b"-ERR 'User Authentication Revoked'\r\n"
ERR_EXPIRED = b"-ERR 'User Authentication Expired'\r\n"


def _read_jwt(value: str) -> str:
    """nats-server's readOperatorJWT: a file holding the JWT (perhaps in a
    decorated ``-----BEGIN NATS OPERATOR JWT-----`` block), or the JWT."""
    text = value
    if not value.startswith("eyJ"):
        try:
            text = Path(value).read_text()
        except OSError as e:
            raise ConfigError(f"error parsing operator JWT: open {value}: {(e.strerror or str(e)).lower()}") from None
    m = _JWT_RE.search(text)
    if m is None:
        raise ConfigError("error parsing operator JWT: no JWT found")
    return m.group(0)


class Resolver:
    """Where account JWTs come from: ``memory`` (the preloads) or a
    directory (``full`` or ``cache``)."""

    def __init__(self, kind: str, directory: str | None = None, allow_delete: bool = False):
        self.kind = kind
        self.dir = Path(directory) if directory else None
        self.allow_delete = allow_delete
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)

    @property
    def tracking(self) -> bool:
        """Does it take ``$SYS.REQ.CLAIMS.UPDATE`` and store updates?"""
        return self.kind == "full"

    def stored(self) -> dict[str, str]:
        out = {}
        if self.dir is not None:
            for f in sorted(self.dir.glob("*.jwt")):
                try:
                    out[f.stem] = f.read_text().strip()
                except OSError:
                    continue
        return out

    def save(self, key: str, token: str) -> None:
        if self.dir is None:
            return
        tmp = self.dir / f".{key}.jwt.tmp"
        tmp.write_text(token)
        tmp.replace(self.dir / f"{key}.jwt")


def _parse_resolver(v) -> Resolver:
    if isinstance(v, str):
        if re.match(r"(?i)\s*(MEM|MEMORY)\s*", v):
            return Resolver("memory")
        if re.match(r"(?i)\s*URL", v):
            raise ConfigError('"resolver: URL(...)" is not supported by natslab')
    elif isinstance(v, dict):
        low = {str(k).lower(): x for k, x in v.items()}
        kind = str(low.get("type", "")).upper()
        if kind in ("MEM", "MEMORY"):
            return Resolver("memory")
        if kind in ("FULL", "CACHE"):
            d = low.get("dir")
            if not d:
                raise ConfigError("dir has no value and needs to point to a directory")
            p = Path(str(d))
            if p.exists() and not p.is_dir():
                raise ConfigError("dir needs to point to an accessible directory")
            if kind == "CACHE":
                for key in ("interval", "allow_delete", "hard_delete"):
                    if key in low:
                        raise ConfigError(f"CACHE does not accept {'sync' if key == 'interval' else key}")
            elif "ttl" in low:
                raise ConfigError("FULL does not accept ttl")
            return Resolver(kind.lower(), str(p), bool(low.get("allow_delete")))
    else:
        raise ConfigError(f"error parsing operator resolver, wrong type {go_type(v)}")
    raise ConfigError('error parsing account resolver, should be MEM or  URL("url") or a map containing dir '
                      "and type state=[FULL|CACHE])")


def configure(o, c) -> None:
    """The operator-mode keys of a checked config file (``c``) onto the
    options ``o``: ``o.operator`` becomes an OperatorMode, and every
    account the resolver has joins ``o.accounts``. Run before the file's
    ``accounts`` and ``system_account`` are applied."""
    keys = [k for k in c if k in OPERATOR_KEYS]
    res_keys = [k for k in c if k in RESOLVER_KEYS]

    def at(key: str, e) -> ConfigError:  # (an error nats-server's option parsing gives at the key)
        from .conf import PlacedError

        if isinstance(e, PlacedError):  # (already at its element)
            return e
        return ConfigError(f"{c.where(key)}: {e}" if hasattr(c, "where") else str(e))

    # (each key's problems noted and the next key read, as nats-server's processConfigFileLine: all at once)
    problems: list[str] = []
    try:
        trusted = _trusted_keys(c["trusted"]) if "trusted" in c else []
    except ConfigError as e:
        problems.append(str(at("trusted", e)))
        trusted = []
    ops: list[str] = []
    for k in keys:  # (read as the file is parsed, whatever else it says)
        v = c[k]
        for item in v if isinstance(v, list) else [v]:
            if not isinstance(item, str):  # (an element is a *conf.token to nats-server's check)
                what = "*conf.token where string is expected" if isinstance(v, list) else go_type(item)
                problems.append(str(at(k, f"error parsing operators: unsupported type {what}")))
                break
            try:
                ops.append(_read_jwt(item))
            except ConfigError as e:
                problems.append(str(at(k, e)))
                break
    resolver = None
    if res_keys:
        try:
            resolver = _parse_resolver(c[res_keys[-1]])
        except ConfigError as e:
            if not str(e).startswith('"resolver: URL(...)"'):  # (natslab's own refusal: only with an operator)
                problems.append(str(at(res_keys[-1], e)))
            elif keys or trusted:
                problems.append(str(e))
    preload = c.get("resolver_preload") or {}
    if not isinstance(preload, dict):
        problems.append(str(at("resolver_preload", "preload should be a map of account_public_key:account_jwt")))
        preload = {}
    for key, token in preload.items():
        where = f"{preload.where(key)}: " if hasattr(preload, "where") else ""
        if not isinstance(token, str):
            problems.append(f"{where}preload map value should be a string JWT")
            continue
        try:
            jwt.decode(token, "account")
        except jwt.JWTError:
            problems.append(f"{where}invalid account JWT")
    if problems:
        raise ConfigError("\n".join(problems))
    if keys and trusted:
        raise ConfigError("conflicting options for 'TrustedKeys' and 'TrustedOperators'")
    if not keys and not trusted:
        return  # (a resolver without an operator trusts nothing: nats-server ignores it too)
    if "accounts" in c:
        raise ConfigError("operators do not allow Accounts to be configured directly")
    sys_name = c.get("system_account")
    if sys_name is not None and not jwt.is_key(str(sys_name), "A"):
        raise ConfigError("error resolving system account: will only fetch valid account keys")
    if resolver is None:
        raise ConfigError(f'"{"operator" if keys else "trusted"}" without a "resolver": natslab supports resolver '
                          "MEMORY and full/cache directories, not the operator's account server URL")
    if not keys and resolver.kind != "memory":  # (the directory resolvers want an operator JWT)
        raise ConfigError("Could not start resolver: no operator key found")
    mode = OperatorMode(ops, resolver, trusted)
    for key, token in preload.items():
        mode.add_jwt(str(key), token, preload=True)
    for key, token in resolver.stored().items():
        mode.add_jwt(key, token)
    o.operator = mode
    pinned = c.get("resolver_pinned_accounts")
    if pinned is not None:
        mode.pinned = _pinned_accounts(pinned, sys_name or mode.system_account)
    if sys_name is None and mode.system_account:  # (the file's system_account comes after, and wins)
        if mode.system_account not in mode.accounts:
            raise ConfigError("error resolving system account: account missing")
        o.system_account = mode.system_account
    for key in mode.accounts:
        o.accounts[key] = mode.account_config(key)


class OperatorMode:
    def __init__(self, operator_jwts: list[str], resolver: Resolver, trusted_keys: list[str] = ()):
        self.operators = []
        # trusted / trusted_keys: operator keys without their JWTs (no signing keys, no system account)
        self.trusted: set[str] = set(trusted_keys)
        self.strict: set[str] = set()  # the keys of operators with strict_signing_key_usage
        self.operator_keys: set[str] = set(trusted_keys)  # the operators' own keys (not their signing keys)
        for token in operator_jwts:
            try:
                claims = jwt.decode(token, "operator")
            except jwt.JWTError as e:
                raise ConfigError(f"error parsing operator JWT: {e}") from None
            if claims.get("iss") != claims.get("sub"):
                raise ConfigError("error parsing operator JWT: operator JWT must be self-signed")
            self.operators.append(claims)
            self.trusted.add(claims["sub"])
            self.operator_keys.add(claims["sub"])
            self.trusted.update(jwt.signing_keys(claims["nats"]))
            if claims["nats"].get("strict_signing_key_usage"):
                self.strict.update(jwt.signing_keys(claims["nats"]))
                self.strict.add(claims["sub"])
        self.system_account = self.operators[0]["nats"].get("system_account") if len(self.operators) == 1 else None
        self.resolver = resolver
        self.accounts: dict[str, dict] = {}  # account key -> its claims (the newest we accept)
        self.server = None
        self.pinned: set[str] | None = None  # resolver_pinned_accounts (and the system account): none other logs in
        self.pinned_fails = 0  # /varz pinned_account_fails

    # -- accounts ----------------------------------------------------------------
    def add_jwt(self, key: str, token: str, preload: bool = False) -> dict | None:
        try:
            claims = jwt.decode(token, "account")
        except jwt.JWTError:
            return None
        if claims["sub"] != key or claims["iss"] not in self.trusted:
            return None
        old = self.accounts.get(key)
        if old is None or (claims.get("iat") or 0) >= (old.get("iat") or 0):
            self.accounts[key] = claims
        return self.accounts[key]

    def account_config(self, key: str):
        """The account's claims as an accounts.py AccountConfig."""
        from .accounts import AccountConfig

        claims = self.accounts[key]
        nats = claims["nats"]
        cfg = AccountConfig(key)
        for e in nats.get("exports") or ():
            kind = e.get("type", "stream")
            if kind not in ("stream", "service") or not e.get("subject"):
                continue
            spec = {kind: e["subject"]}
            if e.get("token_req"):
                spec["accounts"] = []  # activation tokens: not supported, so no importer is authorized
            cfg.exports.append(spec)
        for i in nats.get("imports") or ():
            kind = i.get("type", "stream")
            src = i.get("account")
            if kind not in ("stream", "service") or not src or not i.get("subject") or src not in self.accounts:
                continue
            if not self._exported(src, kind, i["subject"], key):
                continue
            spec = {kind: {"account": src, "subject": i["subject"]}}
            local = i.get("local_subject") or ("" if kind == "stream" else i.get("to"))
            if local:
                spec["to"] = local
            elif kind == "stream" and i.get("to"):
                spec["prefix"] = i["to"]
            cfg.imports.append(spec)
        cfg.mappings = _mappings(nats.get("mappings"))
        lim = nats.get("limits") or {}
        mem, disk = lim.get("mem_storage", 0) or 0, lim.get("disk_storage", 0) or 0
        if mem or disk:
            from .internal import jetstream

            cfg.jetstream = jetstream().AccountLimits(
                # (an absent streams/consumer limit is Go's 0, no limit, as nats-server's account info says)
                max_memory=mem, max_storage=disk, max_streams=jwt.limit(claims, lim, "streams"),
                max_consumers=jwt.limit(claims, lim, "consumer"), max_ack_pending=lim.get("max_ack_pending", -1),
                memory_max_stream_bytes=lim.get("mem_max_stream_bytes", -1),
                storage_max_stream_bytes=lim.get("disk_max_stream_bytes", -1),
                max_bytes_required=bool(lim.get("max_bytes_required", False)))
        return cfg

    def _exported(self, src: str, kind: str, subject: str, importer: str) -> bool:
        """Does account ``src`` export ``subject`` (as ``kind``) to
        ``importer`` without an activation token? (An import nats-server
        cannot authorize is dropped, not an error.)"""
        from .subjects import is_subset, subject_matches

        for e in self.accounts[src]["nats"].get("exports") or ():
            if e.get("type", "stream") != kind or e.get("token_req") or not e.get("subject"):
                continue
            pat, sub = e["subject"].encode(), subject.encode()
            if pat == sub or subject_matches(pat, sub) or is_subset(sub, pat):
                return True
        return False

    # -- login --------------------------------------------------------------------
    def check(self, client, c: dict):
        """The user entry (a dict) of a CONNECT with a user JWT, or False."""
        try:
            return self._check(client, c)
        except (TypeError, ValueError, AttributeError, KeyError) as e:  # (a JWT of a shape decode let through)
            client.server.logger.error("cid:%d - user JWT not usable: %s", client.cid, e)
            return False

    def _check(self, client, c: dict):
        token = str(c.get("jwt") or "")
        if not token:
            return False
        try:
            uc = jwt.decode(token, "user")
        except jwt.JWTError:
            return False
        if jwt.expired(uc):
            return False
        nats = uc["nats"]
        acc_key = nats.get("issuer_account") or uc["iss"]
        if self.pinned is not None and acc_key not in self.pinned:  # ("not listed as operator pinned account")
            self.pinned_fails += 1
            return False
        ac = self.accounts.get(acc_key)
        if ac is None or ac["iss"] not in self.trusted:
            return False
        an = ac["nats"]
        if uc["iss"] != acc_key and uc["iss"] not in jwt.signing_keys(an):
            return False  # "User JWT issuer is not known"
        if uc["iss"] == acc_key and ac["iss"] in self.strict:
            return False  # (a strict operator's accounts sign users with signing keys only)
        if jwt.expired(ac):
            return False
        lim = an.get("limits") or {}
        if nats.get("bearer_token"):
            if lim.get("disallow_bearer"):
                return False
        else:
            from .auth import _signed

            if not _signed(uc["sub"], client.nonce, str(c.get("sig") or "")):
                return False
        if jwt.revoked(an.get("revocations"), uc["sub"], uc.get("iat") or 0):
            return False
        types = nats.get("allowed_connection_types")
        if types:
            kind = "WEBSOCKET" if getattr(client, "ws", None) is not None else "STANDARD"
            if kind not in [str(t).upper() for t in types]:
                return False
        entry: dict = {"user": uc["sub"], "account": acc_key, "jwt_claims": uc}
        perms = _permissions(nats) or _permissions(an.get("default_permissions") or {})  # (the account's for none)
        if perms:
            entry["permissions"] = perms
        server = client.server
        acc = server.accounts.by_name.get(acc_key)
        conns = jwt.limit(ac, lim, "conn")
        if conns >= 0 and acc is not None:
            n = sum(1 for x in server.clients.values() if x.account is acc and x is not client and x.connected)
            if n >= conns:
                entry["reject"] = ERR_ACCOUNT_CONNS
        if type(client) not in _JWT_CLASSES.values():
            client.__class__ = jwt_user_class(type(client))
        client.jwt_user = uc
        self._limits(client, uc, ac)
        if client.max_subs == 0 and "reject" not in entry:
            entry["reject"] = ERR_MAX_SUBS  # (nats-server: at its limit from the start)
        exp = uc.get("exp") or 0
        if exp:
            self._expire_at(client, exp)
        return entry

    def user_info(self, client) -> dict:
        """What ``$SYS.REQ.USER.INFO`` adds for a JWT user, as nats-server:
        the account's and the user's names, the time left until the user
        JWT expires (ns, whole seconds)."""
        uc = client.jwt_user
        ac = self.accounts.get(client.account.name) if client.account is not None else None
        out: dict = {}
        if ac is not None and ac.get("name"):
            out["account_name"] = ac["name"]
        if uc.get("name"):
            out["user_name"] = uc["name"]
        if uc.get("exp"):
            out["expires"] = max(int(uc["exp"] - time.time()), 0) * 10**9
        return out

    @staticmethod
    def _limits(client, uc: dict, ac: dict) -> None:
        """The connection's subscription and payload limits: the smaller of
        the user's and the account's (nats-server's applyAccountLimits)."""
        lim = ac["nats"].get("limits") or {}
        client.max_subs = _min_limit(jwt.limit(uc, uc["nats"], "subs"), jwt.limit(ac, lim, "subs"))
        pay = _min_limit(jwt.limit(uc, uc["nats"], "payload"), jwt.limit(ac, lim, "payload"))
        client.max_payload = pay  # (-1: the server's; _op_pub checks both)

    def _expire_at(self, client, exp: float) -> None:
        loop = client.server.loop

        def expire():
            if not client.closed:
                client.protocol_error(ERR_EXPIRED)

        loop.call_later(max(exp - time.time(), 0), expire)

    # -- claim updates over $SYS (server/claims.py) ------------------------------------
    def start(self, server) -> None:
        from .claims import ClaimUpdates

        self.server = server
        self.claims = ClaimUpdates(self, server)
        self.claims.start()

_JWT_CLASSES: dict[type, type] = {}


def jwt_user_class(cls: type) -> type:
    """The connection class of a JWT user: ``cls`` (Client, TracingClient,
    a websocket client, ...) with the user's subscription and payload
    limits checked on SUB and PUB. A connection becomes one when its user
    JWT is accepted (its ``__class__`` is set), so every other connection
    runs the plain class with nothing more to check or carry: measured,
    even one more attribute on Client costs the core publish path about 60
    callgrind instructions a message (bench/instructions.py core)."""
    sub = _JWT_CLASSES.get(cls)
    if sub is None:
        from .protocol import ERR_MAX_PAYLOAD
        from .subjects import valid_subject

        class JWTUser(cls):
            max_payload = -1  # the smaller of the user's and the account's limit; -1: none
            max_subs = -1
            jwt_user = None  # the user JWT's claims

            def _op_pub(self, args, with_headers):
                if self.max_payload >= 0:
                    try:
                        total = int(args[-1])
                    except ValueError:
                        total = -1  # (malformed: the plain class says so)
                    if total > self.max_payload:
                        self.protocol_error(ERR_MAX_PAYLOAD)
                        return
                super()._op_pub(args, with_headers)

            def _op_sub(self, args):
                # (nats-server: after the subject's and the permissions' checks, before the sid's)
                # (args: the SUB's arguments without its name, as the parser splits them)
                if 0 <= self.max_subs <= len(self.subs) and self.connected and len(args) in (2, 3) \
                        and valid_subject(args[0]) and (self.perms is None or self.perms.can_subscribe(args[0])):
                    self.queue_out(ERR_MAX_SUBS)
                    return
                super()._op_sub(args)

        JWTUser.__name__ = JWTUser.__qualname__ = f"JWTUser{cls.__name__}"
        sub = _JWT_CLASSES[cls] = JWTUser
    return sub


def _min_limit(a: int, b: int) -> int:
    """The smaller of two limits, -1 being none."""
    vals = [x for x in (a, b) if x >= 0]
    return min(vals) if vals else -1


def _permissions(nats: dict) -> dict:
    """A user JWT's pub/sub permissions in the config file's form
    (server/permissions.py)."""
    out = {}
    for side, name in (("pub", "publish"), ("sub", "subscribe")):
        p = nats.get(side) or {}
        spec = {k: list(p[k]) for k in ("allow", "deny") if p.get(k)}
        if spec:
            out[name] = spec
    return out


def _mappings(claim):
    """An account JWT's ``mappings`` ({source: [{subject, weight, cluster}]})
    as server/mappings.py's, as nats-server adds them from the claims: a
    weight of 0 (left out) is 100, and a mapping it cannot add is dropped."""
    if not isinstance(claim, dict) or not claim:
        return None
    from .transform import MappingError
    from .mappings import Mappings

    out = Mappings()
    for src, dests in claim.items():
        try:
            out.add(str(src), [(str(d.get("subject", "")), int(d.get("weight") or 100), str(d.get("cluster") or ""))
                               for d in dests or () if isinstance(d, dict)])
        except (MappingError, ValueError, TypeError):
            continue
    return out if out.mappings else None


def _key_list(v, what: str) -> list[str]:
    """A key or a list of keys, with nats-server's type errors for ``what``."""
    from .conf import go_type

    if isinstance(v, str):
        return [v]
    if not isinstance(v, list):
        raise ConfigError(f"error parsing {what}: unsupported type {go_type(v)}")
    from .conf import element_error

    for i, item in enumerate(v):
        if not isinstance(item, str):  # (at the element)
            raise element_error(v, i, f"error parsing {what}: unsupported type in array {go_type(item)}")
    return list(v)


def _pinned_accounts(v, system_account: str | None) -> set[str] | None:
    """resolver_pinned_accounts (a key or a list of keys) as nats-server reads
    and checks it; the system account is always pinned. None: none given."""
    keys = _key_list(v, "resolver_pinned_accounts")
    if not keys:
        return None
    for key in keys:
        if not jwt.is_key(key, "A"):
            raise ConfigError(f'pinned account key "{key}" is not a valid public account nkey')
    if system_account:
        keys.append(system_account)
    return set(keys)


def _trusted_keys(v) -> list[str]:
    """trusted / trusted_keys (an operator key or a list of them), checked as
    nats-server checks them."""
    from .conf import element_error

    keys = _key_list(v, "trusted")
    bad = [f'trust key "{key}" required to be a valid public operator nkey' for key in keys if not jwt.is_key(key, "O")]
    if bad:  # (every one, at nats-server's token then: the list's last element's)
        raise element_error(v, len(v) - 1, "\n".join(bad)) if isinstance(v, list) else ConfigError("\n".join(bad))
    return keys
