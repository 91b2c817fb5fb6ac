"""Accounts from the config file: separate subject spaces, joined only where
one account exports a stream or a service and another imports it.

As in nats-server, each ``accounts { NAME { users, exports, imports } }``
entry is its own subject space: a user of account A never sees what a user
of B publishes, unless A exports the subject and B imports it. Users of the
``authorization {}`` block (and every client when no accounts are
configured) are in the global account ``$G``, which is the server's own
subject index and JetStream's home; configured accounts have their own index
here. A message published in an account goes to that account's
subscriptions, to every account that imports it as a stream (under a
``prefix`` or renamed ``to``), and to the exporter of a service it was
imported from (the reply is replaced by a ``_R_.`` subject the exporter
answers on, which brings the answer back to the requester's reply subject).
Every delivery goes through ``Client.deliver``, the one delivery path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import router
from .conf import ConfigError
from .subjects import SubjectIndex, is_subset, subject_matches, valid_subject

GLOBAL = "$G"
MAX_RESPONSES = 10_000  # pending service replies kept per account (oldest dropped first)
SYSTEM = "$SYS"  # nats-server's default system account, there even when no account is configured
_RESERVED = ("$G",)
_ACCOUNT_KEYS = ("users", "imports", "exports", "jetstream", "default_permissions", "nkey", "mappings", "limits")


@dataclass
class AccountConfig:
    name: str
    users: list[dict] = field(default_factory=list)
    exports: list[dict] = field(default_factory=list)
    imports: list[dict] = field(default_factory=list)
    jetstream: object = None  # None: no JetStream; else its limits (jetstream.limits.AccountLimits)
    mappings: object = None  # its mappings {} (server/mappings.py Mappings), or None
    limits: tuple | None = None  # its limits {}: (connections, subscriptions, payload), -1 for none


def parse_accounts(block, opts) -> dict[str, AccountConfig]:
    """The ``accounts {}`` block, checked as nats-server's parseAccounts
    checks it; the account users join ``opts.users`` with their account."""
    if isinstance(block, list):
        block = {str(n): {} for n in block}
    if not isinstance(block, dict):
        raise ConfigError("Expected map entries for accounts")
    out: dict[str, AccountConfig] = {}
    seen = {str(u.get("user") or u.get("nkey")) for u in opts.users}
    placed: list[str] = []  # the nkey errors, each at its place: all reported at once, as nats-server
    def at(m, key: str) -> str:  # nats-server's place of a key ("" where the block does not know it)
        return f"{m.where(key)}: " if hasattr(m, "where") else ""

    for name, spec in block.items():
        if not isinstance(spec, dict):
            placed.append(f"{at(block, name)}Expected map entries for accounts")
            continue
        if name in _RESERVED:
            placed.append(f'{at(block, name)}"{name}" is a Reserved Account')
            continue
        acc = AccountConfig(name)
        default_perms = None
        for k, v in spec.items():
            key = k.lower()
            if key not in _ACCOUNT_KEYS:
                raise ConfigError(f'unknown field "{k}" in account {name} (natslab supports: users, imports, exports; '
                                  'per-account jetstream, limits and mappings are not supported)')
            if key == "jetstream":
                try:
                    acc.jetstream = _jetstream_flag(v)
                except ConfigError as e:
                    placed += str(e).split("\n")
                continue
            if key == "nkey":  # the account's public nkey: checked, as nats-server checks it (no other use here)
                from . import nkeys

                try:
                    nkeys.decode_public_key(str(v), nkeys.PREFIX_ACCOUNT)
                except nkeys.InvalidKey:
                    where = spec.where(k) + ": " if hasattr(spec, "where") else ""
                    placed.append(f'{where}Not a valid public nkey for an account: "{v}"')
                continue
            if key == "default_permissions":
                if not isinstance(v, dict):
                    placed.append(f"{at(spec, k)}Expected permissions to be a map/struct, got {v}")
                    continue
                from .confcheck import permissions_problems

                placed += permissions_problems(v) if hasattr(v, "where") else []
                default_perms = v
                continue
            if key == "limits":
                if not isinstance(v, dict):
                    placed.append(f"{at(spec, k)}Expected account limits to be a map/struct, got {v}")
                    continue
                acc.limits = _limits(v, name)
                continue
            if key == "mappings":
                from . import mappings

                try:
                    acc.mappings = mappings.parse(v, (lambda b, k: b.where(k)) if hasattr(v, "where") else None,
                                                  spec.where(k) if hasattr(spec, "where") else "")
                except ConfigError as e:
                    placed += str(e).split("\n")
                continue
            if not isinstance(v, list):
                from .conf import go_type

                if key == "users":  # (parseUsers: no place)
                    raise ConfigError(f"Expected users field to be an array, got {v}")
                placed.append(f"{at(spec, k)}{key.capitalize()} should be an array, got {go_type(v)}")
                continue
            entries = [x for x in v if isinstance(x, dict)]
            if key == "users":  # (parseUsers: each entry's problems at their places)
                from .confcheck import user_problems

                placed += user_problems(v)
                entries = [u for u in entries if u.get("permissions") is None or isinstance(u["permissions"], dict)]
            else:  # (parseExportStreamOrService, parseImportStreamOrService: an entry is a map, at the entry)
                from .conf import go_type, item_where

                placed += [f"{item_where(v, i, at(spec, k).rstrip(': '))}: {key[:-1].capitalize()} Items should be a "
                           f"map with type entry, got {go_type(x)}" for i, x in enumerate(v) if not isinstance(x, dict)]
            for x in entries if key in ("imports", "exports") else ():
                _entry_types(x, placed, at)
            if key == "exports":  # (parseExportStreamOrService's checks of an entry's values)
                entries = [x for x in entries if _export_ok(x, placed, at)]
            if key == "imports":  # (parseImportStreamOrService: a bad entry is refused at its kind's key)
                entries = [x for x in entries if _import_ok(x, placed, at)]
            setattr(acc, key, entries)
        if default_perms is not None:  # the account's users without permissions of their own
            for u in acc.users:
                u.setdefault("permissions", default_perms)
        for u in list(acc.users):
            if u.get("nkey") is not None and hasattr(u, "where"):
                from . import nkeys

                if not nkeys.is_user_key(str(u["nkey"])):  # (nats-server's parseUsers, at the key)
                    placed.append(f"{u.where('nkey')}: Not a valid public nkey for a user")
                    acc.users.remove(u)
        for conflict, what in ((opts.user, "a single user/pass"), (opts.token, "a token")):
            if acc.users and conflict:
                if not hasattr(spec, "where"):
                    raise ConfigError(f"Can not have {what} and accounts")
                placed.append(f"{spec.where(next(k for k in spec if k.lower() == 'users'))}: "
                              f"Can not have {what} and accounts")
                acc.users = []
        for u in acc.users:
            ident = str(u.get("user") or u.get("nkey") or "")
            if ident in seen:
                kind = "nkey" if u.get("nkey") else "user"
                users_key = next((k for k in spec if k.lower() == "users"), "users")
                raise ConfigError(f'{at(spec, users_key)}Duplicate {kind} "{ident}" detected')
            seen.add(ident)
            u["account"] = name
            if "pass" in u and "password" not in u:
                u["password"] = u["pass"]
            opts.users.append(u)
        out[name] = acc
    if placed:
        raise ConfigError("\n".join(placed))
    return out


def _entry_types(entry, placed: list[str], at) -> None:
    """An export's ``accounts`` is a list and an import's ``prefix``/``to``
    strings, else nats-server's panic at the key (and the key is dropped)."""
    from .conf import go_type

    for key in list(entry):
        v, low = entry[key], key.lower()
        want = {"accounts": (list, "[]interface {}"), "prefix": (str, "string"), "to": (str, "string")}.get(low)
        if want is not None and not isinstance(v, want[0]):
            placed.append(f"{at(entry, key)}interface conversion: interface {{}} is {go_type(v)}, not {want[1]}")
            del entry[key]
        elif low == "accounts" and not all(isinstance(n, str) for n in v):  # (mv.(string): at the element)
            from .conf import element_error

            i = next(i for i, n in enumerate(v) if not isinstance(n, str))
            placed.append(str(element_error(v, i, f"interface conversion: interface {{}} is {go_type(v[i])}, "
                                                  "not string")))
            del entry[key]


def _export_ok(entry, placed: list[str], at) -> bool:
    """An export's stream or service name is a string, its response type
    one nats-server knows and only on a service, else nats-server's error at
    that key (an entry whose name is not a string is dropped)."""
    from .conf import go_type

    ok = True
    kinds = [k for k in entry if k.lower() in ("stream", "service")]
    for key in kinds:
        if not isinstance(entry[key], str):
            placed.append(f"{at(entry, key)}Expected {key.lower()} name to be string, got {go_type(entry[key])}")
            ok = False
    if ok and {k.lower() for k in kinds} == {"stream", "service"}:  # both: nats-server refuses the one its map
        from .conf import go_quote  # order reads second; natslab the second written (its answer 4 runs in 5)

        order = sorted(kinds, key=lambda k: getattr(entry, "pos", {}).get(k, (0, 0)))
        first = order[0]
        second = next(k for k in order if k.lower() != first.lower())
        placed.append(f"{at(entry, second)}Detected {second.lower()} {go_quote(entry[second])} but already saw a "
                      f"{first.lower()}")
        ok = False
    for key in [k for k in entry if k.lower() in ("response", "response_type")]:
        v = entry[key]
        if not isinstance(v, str):
            placed.append(f"{at(entry, key)}Expected response type to be string, got {go_type(v)}")
        elif v.lower() not in ("single", "singleton", "stream", "chunk", "chunked"):
            placed.append(f'{at(entry, key)}Unknown response type: "{v}"')
        elif any(k.lower() == "stream" for k in kinds):
            placed.append(f"{at(entry, key)}Detected response directive on non-service")
    return ok


def _import_ok(entry, placed: list[str], at) -> bool:
    """An import's ``stream``/``service`` is an account map with an account
    and a subject, else nats-server's error at that key (and the entry is
    dropped)."""
    from .conf import go_type

    for kind in ("stream", "service"):
        key = next((k for k in entry if k.lower() == kind), None)
        if key is None:
            continue
        spec = entry[key]
        if not isinstance(spec, dict):
            placed.append(f"{at(entry, key)}{kind.capitalize()} entry should be an account map, got {go_type(spec)}")
            return False
        if not spec.get("account") or not spec.get("subject"):
            placed.append(f"{at(entry, key)}Expect an account name and a subject")
            return False
    return True


def parse_system_account(value, opts) -> str:
    """``system_account`` (after ``accounts``): a configured account, or
    ``$SYS``, which nats-server always has."""
    name = str(value)
    if name == GLOBAL:
        raise ConfigError("natslab: the global account $G cannot be the system account")
    if name != SYSTEM and name not in opts.accounts:
        raise ConfigError("error resolving system account: account missing")
    return name


def _limits(block, account: str) -> tuple[int, int, int]:
    """An account's ``limits {}``: (max_connections, max_subscriptions,
    max_payload), -1 for a limit not given (nats-server's NoLimit)."""
    if not isinstance(block, dict):
        raise ConfigError(f"Expected account limits to be a map/struct, got {block}")
    out = {"max_connections": -1, "max_subscriptions": -1, "max_payload": -1}
    for k, v in block.items():
        if k not in out:
            continue  # (max_leafnodes: no leafnodes on one node)
        if isinstance(v, bool) or not isinstance(v, int):
            from .conf import go_type

            where = f"{block.where(k)}: " if hasattr(block, "where") else ""
            raise ConfigError(f"{where}interface conversion: interface {{}} is {go_type(v)}, not int64")
        out[k] = v
    return out["max_connections"], out["max_subscriptions"], out["max_payload"]


def apply_limits(client, acc: "Account", entry):
    """A client of ``acc`` logging in: the account's ``limits {}`` as
    nats-server applies them (the connection refused at max_connections;
    the connection's subscription and payload limits the smaller of the
    account's and the server's, checked as for JWT users by resolver.py's
    connection class, so other connections carry nothing more). Returns the
    entry, a copy with ``reject`` when refused."""
    from .resolver import ERR_ACCOUNT_CONNS, ERR_MAX_SUBS, jwt_user_class

    conns, subs, payload = acc.limits
    server = client.server
    if conns >= 0:
        n = sum(1 for x in server.clients.values() if x.account is acc and x is not client and x.connected)
        if n >= conns:
            return {**(entry if isinstance(entry, dict) else {}), "reject": ERR_ACCOUNT_CONNS}
    if subs < 0 and payload < 0:
        return entry
    client.__class__ = jwt_user_class(type(client))
    client.max_subs, client.max_payload = subs, payload  # (the plain class checks the server's own after)
    if client.max_subs == 0:
        return {**(entry if isinstance(entry, dict) else {}), "reject": ERR_MAX_SUBS}
    return entry


def _jetstream_flag(v):
    """An account's ``jetstream``: ``None`` (disabled) or its limits
    (jetstream/limits.py; every limit -1 for ``enabled``). Its errors are
    nats-server's: at the key inside the block, none for a value given
    directly (parseJetStreamForAccount has no token for it then)."""
    from .conf import go_type
    from .internal import jetstream

    js = jetstream()
    if not isinstance(v, (bool, str, dict)):
        raise ConfigError(f"Expected map, bool or string to define JetStream, got {go_type(v)}")
    try:
        return js.parse_limits(v)
    except js.LimitsConfigError as e:
        # (each of its messages about a key names it in quotes: that key's place)
        key = re.search(r'"([^"]*)"', str(e))
        if isinstance(v, dict) and hasattr(v, "where") and key and key.group(1) in v:
            raise ConfigError(f"{v.where(key.group(1))}: {e}") from None
        raise ConfigError(str(e)) from None


class Account:
    def __init__(self, name: str):
        self.name = name
        self.index = SubjectIndex()
        self.stream_exports: list[tuple[bytes, set | None]] = []  # (subject, accounts allowed or None: all)
        self.service_exports: list[tuple[bytes, set | None]] = []
        self.importers: list[tuple["Account", bytes, bytes, bytes]] = []  # streams others take from here
        self.stream_sources: list[tuple["Account", bytes, bytes, bytes]] = []  # streams this one takes (exporter first)
        self.service_imports: list[tuple[bytes, "Account", bytes, bool]] = []  # (local subject, exporter, its subject, share)
        self.responses: list = []  # the _R_ reply subscriptions waiting for an answer, oldest first
        self.jetstream_limits = None  # its jetstream {} (jetstream.limits.AccountLimits) when it has JetStream
        self.jetstream = None  # its JetStream, once the server started it
        self.interest_listeners: list = []  # told of client subscriptions here (push consumers' interest)
        self.mappings = None  # its subject mappings (server/mappings.py): its clients' publishes go through them
        self.limits = None  # its limits {} (connections, subscriptions, payload), config accounts only

    def exports(self, kind: str, subject: bytes, importer: str) -> bool:
        for pattern, allowed in (self.stream_exports if kind == "stream" else self.service_exports):
            if (allowed is None or importer in allowed) and (pattern == subject or subject_matches(pattern, subject)
                                                             or is_subset(subject, pattern)):
                return True
        return False


def _map(subject: bytes, pattern: bytes, to: bytes) -> bytes:
    """``subject`` (matching ``pattern``) renamed to ``to``, as nats-server's
    import transforms rename it: literal to literal, or each wildcard of
    ``to`` filled, in order, with what the wildcards of ``pattern`` matched
    (``fromA.>`` to ``$JS.API.>``: the tokens may differ in number)."""
    if not to or to == pattern:
        return subject
    if b"*" not in pattern and b">" not in pattern:
        return to
    st = subject.split(b".")
    stars = []
    tail = None
    for i, p in enumerate(pattern.split(b".")):
        if p == b">":
            tail = b".".join(st[i:])
            break
        if p == b"*":
            stars.append(st[i])
    out = []
    k = 0
    for t in to.split(b"."):
        if t == b"*" and k < len(stars):
            out.append(stars[k])
            k += 1
        elif t == b">" and tail is not None:
            out.append(tail)
        else:
            out.append(t)
    return b".".join(out)


def _request_info(hdr: bytes | None, pub, acc: Account, share: bool, server) -> bytes:
    """The request's headers with the requester's ``Nats-Request-Info``
    (nats-server's ClientInfo: account and RTT, and with ``share: true``
    on the import the connection's details too), replacing one it sent."""
    import json

    if share:
        from .client import client_info

        info = client_info(pub, server.server_name)
        info["acc"] = acc.name
        # (in ClientInfo's field order: start host id acc user name lang ver rtt server kind client_type)
        order = ("start", "host", "id", "acc", "user", "name", "lang", "ver", "rtt", "server", "kind", "client_type")
        info = {k: info[k] for k in order if k in info}
    else:
        info = {"acc": acc.name, "rtt": int((pub.rtt or 0) * 1e9)}
    if not info.get("rtt"):
        info.pop("rtt", None)  # (omitempty)
    line = b"Nats-Request-Info: " + json.dumps(info, separators=(",", ":")).encode() + b"\r\n"
    if not hdr:
        return b"NATS/1.0\r\n" + line + b"\r\n"
    lines = [ln for ln in hdr[:-2].split(b"\r\n")[1:] if ln and not ln.lower().startswith(b"nats-request-info:")]
    head = hdr.split(b"\r\n", 1)[0]
    return b"\r\n".join([head, *lines]) + b"\r\n" + line + b"\r\n"


def _subject(spec, what: str) -> tuple[str, str]:
    if not isinstance(spec, dict) or not spec.get("account") or not spec.get("subject"):
        raise ConfigError("Expect an account name and a subject")
    return str(spec["account"]), str(spec["subject"])


def link_problems(configs: dict[str, AccountConfig]) -> list[str]:
    """What is wrong with the accounts' exports and imports, every problem in
    nats-server's words and order (its parseAccounts, once all accounts are
    known: stream exports, service exports, stream imports, service imports;
    each problem noted and the next checked). The config file reports them
    at the ``accounts`` key's place, as nats-server does."""
    problems: list[str] = []
    exports = {"stream": [], "service": []}
    for cfg in configs.values():
        for e in cfg.exports:
            kind = "stream" if "stream" in e else "service" if "service" in e else None
            if kind is None:  # (nats-server makes nothing of it; an unknown key in it was reported)
                continue
            exports[kind].append((cfg, e))
    for kind in ("stream", "service"):
        for cfg, e in exports[kind]:
            for n in e.get("accounts") or []:
                if n not in configs:
                    problems.append(f'"{n}" account not defined for {kind} export')
            subj = str(e[kind])
            if not valid_subject(subj.encode()):
                problems.append(f'Error adding {kind} export "{subj}": subject is not valid')
    known = {name: Account(name) for name in configs}
    for cfg in configs.values():
        for e in cfg.exports:
            kind = "stream" if "stream" in e else "service" if "service" in e else None
            if kind is not None and valid_subject(str(e[kind]).encode()):
                names = e.get("accounts")
                target = known[cfg.name].stream_exports if kind == "stream" else known[cfg.name].service_exports
                target.append((str(e[kind]).encode(), set(names) if names else None))
    imports = {"stream": [], "service": []}
    for cfg in configs.values():
        for i in cfg.imports:
            kind = "stream" if "stream" in i else "service" if "service" in i else None
            if kind is None:
                continue
            imports[kind].append((cfg, i))
    for kind in ("stream", "service"):
        for cfg, i in imports[kind]:
            src_name, subj = _subject(i[kind], kind)
            src = known.get(src_name)
            if src is None:
                problems.append(f'"{src_name}" account not defined for {kind} import')
            elif kind == "stream" and i.get("prefix") and i.get("to"):
                problems.append("Stream import can not have a 'prefix' and a 'to' property")
            elif not src.exports(kind, subj.encode(), cfg.name):
                problems.append(f'Error adding {kind} import "{subj}": {kind} import not authorized')
    return problems


class Accounts:
    """The configured accounts of a server, and routing inside them."""

    def __init__(self, server, configs: dict[str, AccountConfig]):
        self.server = server
        self.by_name: dict[str, Account] = {n: Account(n) for n in configs}
        # every account with jetstream enabled has a JetStream of its own (the
        # server makes them); the first of them has the server's own index,
        # or $G has it when none does
        js = [c.name for c in configs.values() if c.jetstream]
        for name in js:
            self.by_name[name].jetstream_limits = configs[name].jetstream
        self.home = self.by_name[js[0]] if js else None
        self.global_account = None  # $G as an account of its own, once another one has the server's index
        if self.home is not None:
            self.home.index = server.index
            self.global_account = Account(GLOBAL)
        # the system account: the $SYS.REQ requests' subject space (server/sysreq.py)
        sys_name = getattr(server.opts, "system_account", SYSTEM)
        self.system = self.by_name.get(sys_name) or Account(sys_name)
        self._count = len(self.by_name) + (GLOBAL not in self.by_name) + (sys_name not in self.by_name)
        problems = link_problems(configs)
        if problems:
            raise ConfigError("\n".join(problems))
        for cfg in configs.values():
            self.by_name[cfg.name].mappings = cfg.mappings
            self.by_name[cfg.name].limits = cfg.limits
        if self.global_account is not None:  # (the file's top-level mappings are $G's)
            self.global_account.mappings = getattr(server.opts, "mappings", None)
        for cfg in configs.values():
            acc = self.by_name[cfg.name]
            for e in cfg.exports:
                kind = "stream" if "stream" in e else "service"
                names = e.get("accounts")
                target = acc.stream_exports if kind == "stream" else acc.service_exports
                target.append((str(e[kind]).encode(), set(names) if names else None))
        for cfg in configs.values():
            acc = self.by_name[cfg.name]
            for i in cfg.imports:
                if "stream" in i:
                    src_name, subj = _subject(i["stream"], "stream")
                    src = self.by_name[src_name]
                    prefix = str(i.get("prefix") or "").rstrip(".").encode()
                    src.importers.append((acc, subj.encode(), prefix, str(i.get("to") or "").encode()))
                    acc.stream_sources.append((src, subj.encode(), prefix, str(i.get("to") or "").encode()))
                else:
                    src_name, subj = _subject(i["service"], "service")
                    local = str(i.get("to") or subj).encode()
                    acc.service_imports.append((local, self.by_name[src_name], subj.encode(), i.get("share") is True))

    def count(self) -> int:
        """How many accounts nats-server has: the configured ones, $G and the
        system account (each has an internal client there)."""
        return self._count

    def with_jetstream(self) -> list[Account]:
        """The accounts with JetStream, in the config's order."""
        return [a for a in self.by_name.values() if a.jetstream_limits is not None]

    def get(self, name: str | None) -> Account | None:
        """A client's account: a configured one, or $G (None while $G has
        the server's index)."""
        return self.by_name.get(name) if name else self.global_account

    # -- stream imports of deliver subjects -------------------------------------
    @staticmethod
    def _imported(importer, pattern: bytes, prefix: bytes, to: bytes, subject: bytes) -> bytes:
        return prefix + b"." + subject if prefix else _map(subject, pattern, to)

    def with_importers(self, acc: Account, subject: bytes, r: tuple) -> tuple:
        """A match in ``acc`` (``r``) with the subscriptions of the accounts
        that import ``subject`` as a stream, under its name there."""
        psubs, qgroups = r
        more_p: list = []
        more_q: list = []
        for importer, pattern, prefix, to in acc.importers:
            if subject == pattern or subject_matches(pattern, subject):
                p, q = importer.index.match(self._imported(importer, pattern, prefix, to, subject))
                more_p += [s for s in p if not s.client.internal]
                more_q += q
        if not more_p and not more_q:
            return r
        return (tuple(psubs) + tuple(more_p), tuple(qgroups) + tuple(more_q))

    def importer_interest(self, acc: Account, subject: bytes, literal_only: bool) -> bool:
        """Does a client of an account that imports ``subject`` from ``acc``
        subscribe to it (exactly, with ``literal_only``)?"""
        for importer, pattern, prefix, to in acc.importers:
            if subject == pattern or subject_matches(pattern, subject):
                mapped = self._imported(importer, pattern, prefix, to, subject)
                psubs, qgroups = importer.index.match(mapped)
                for s in list(psubs) + [s for g in qgroups for s in g]:
                    if not s.client.internal and (not literal_only or s.subject == mapped):
                        return True
        return False

    def notify_exporters(self, acc: Account, subject: bytes, added: bool) -> None:
        """A client subscription in ``acc`` that a stream import reaches:
        the exporter's interest listeners (push consumers) hear of it under
        the exporter's subject."""
        srv = self.server
        for src, pattern, prefix, to in acc.stream_sources:
            if prefix:
                if not subject.startswith(prefix + b"."):
                    continue
                theirs = subject[len(prefix) + 1:]
            else:
                theirs = _map(subject, to, pattern) if to else subject
            if not (theirs == pattern or subject_matches(pattern, theirs)):
                continue
            listeners = srv.interest_listeners if src.index is srv.index else src.interest_listeners
            if listeners:
                srv._notify_interest(theirs.decode(), added, listeners)

    # -- routing ---------------------------------------------------------------
    def route(self, pub, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        """A message a client of a configured account published."""
        srv = self.server
        srv.current_publisher = pub
        if not pub.internal:  # an account's JetStream publishes here too
            srv.in_msgs += 1
            srv.in_bytes += len(payload) + (len(hdr) if hdr else 0)
        acc = pub.account
        n = self._deliver(acc, pub, subject, reply, hdr, payload)
        for importer, pattern, prefix, to in acc.importers:
            if subject == pattern or subject_matches(pattern, subject):
                mapped = prefix + b"." + subject if prefix else _map(subject, pattern, to)
                n += self._deliver(importer, pub, mapped, reply, hdr, payload)
        for local, src, remote, share in acc.service_imports:
            if subject == local or subject_matches(local, subject):
                to = _map(subject, local, remote)
                if src.mappings is not None:  # (the exporter's mappings, as processServiceImport applies them)
                    to = src.mappings.select(to)
                    if not to:
                        continue  # (its weights chose no destination)
                r = self._response(src, acc, reply) if reply else b""
                h = hdr if pub.internal else _request_info(hdr, pub, acc, share, srv)
                n += self._deliver(src, pub, to, r, h, payload)
        if not n and reply and subject.startswith(b"$JS.API.") and srv.jetstream is not None and acc.jetstream is None:
            n = self._js_not_enabled(acc, pub, subject, reply)
        if not n and reply and pub.no_responders:
            router.no_responders(acc.index, pub, subject, reply)

    def _response(self, src: Account, acc: Account, reply: bytes) -> bytes:
        """A ``_R_.`` reply subject in the exporting account whose first
        message goes to ``reply`` in the requesting account. It is a real
        subscription in the exporter's index, so an answer finds it by
        whatever path it takes (a client's PUB, JetStream's replies)."""
        import secrets  # (here: a server without service imports does not load hashlib at start)

        from .internal import InternalSubscription

        srv = self.server
        r = b"_R_." + secrets.token_urlsafe(9).encode()

        def answer(subject, _reply, hdr, payload):
            self._drop(src, sub)
            self._deliver(acc, srv.internal_client, reply, b"", hdr, payload)

        sub = InternalSubscription(srv.internal_client, r, None, answer)
        sub.raw = True
        src.index.insert(sub)
        src.responses.append(sub)
        if len(src.responses) > MAX_RESPONSES:
            self._drop(src, src.responses[0])
        return r

    @staticmethod
    def _drop(src: Account, sub) -> None:
        try:
            src.responses.remove(sub)
        except ValueError:
            return  # answered already
        src.index.remove(sub)

    def _js_not_enabled(self, acc: Account, pub, subject: bytes, reply: bytes) -> int:
        """A JetStream API request from an account without JetStream: the
        API's answer, 10039 "JetStream not enabled for account", as
        nats-server gives it (the server's JetStream says it)."""
        answer = self.server.jetstream.not_enabled_answer(subject)
        if answer is None:
            return 0  # silence (and no responders for direct gets and pulls), as on the real server
        return self._deliver(acc, self.server.internal_client, reply, b"", None, answer) or 1

    @staticmethod
    def _deliver(acc: Account, pub, subject: bytes, reply: bytes, hdr, payload) -> int:
        """Deliver in one account: every plain subscription, one member of
        each queue group (the publisher's own only when it echoes)."""
        return router.deliver_results(None, pub, acc.index.match(subject), ((subject, reply, hdr, payload),))
