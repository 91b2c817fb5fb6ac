"""The values of ``cluster {}``, ``gateway {}``, ``leafnodes {}`` and
``mqtt {}``, checked as nats-server's parseCluster, parseGateway(s),
parseLeafNodes, parseRemoteLeafNodes and parseMQTT check them.

natslab has no use for these blocks on one node (confcheck accepts them and
logs them as unused), but a file nats-server refuses is refused here too,
with nats-server's words at its ``file:line:col``: a route URL Go's
url.Parse refuses, a port that is not a number, a value of the wrong type
(nats-server's ``v.(int64)`` panics: ``interface conversion: ...``), an
unknown key, a bad ``tls {}`` or ``authorization {}``, a leafnode remote or
a gateway entry that is not a map...

nats-server's parse functions recover from a panic and return, so the keys
its map order had not reached then are not checked; natslab reads a block's
keys in the file's order (Go's order for a small map most runs) and stops
where nats-server would then.
"""

from __future__ import annotations

import re

from .conf import ConfigError, ConfList, ConfMap, PlacedError, go_duration, go_quote, go_type, go_value, item_where
from .confurl import URLError, go_url, trim_space, url_parses

NIL = "runtime error: invalid memory address or nil pointer dereference"
ROUTE_MAX_PING = 30.0  # routeMaxPingInterval


class _Panic(Exception):
    """nats-server's parse function panicked (and recovered): its scope
    ends. ``lines``: the panic's error, placed."""

    def __init__(self, line: str):
        super().__init__(line)
        self.line = line


class _Stop(Exception):
    """A parse function returned an error before its other keys (its scope
    ends without a panic: the caller goes on)."""

    def __init__(self, line: str):
        super().__init__(line)
        self.line = line


class Report:
    def __init__(self):
        self.errors: list[str] = []
        self.warnings: list[str] = []


# -- the values' checks, each a nats-server expression --------------------------------

class _Block:
    """One parse function's map: ``where(key)``, the panics of Go's type
    assertions (``v.(int64)``) at the key."""

    def __init__(self, m: ConfMap, source: str, rep: Report):
        self.m, self.source, self.rep = m, source, rep

    def at(self, key: str) -> str:
        return self.m.where(key, self.source)

    def err(self, key: str, what: str) -> None:
        self.rep.errors.append(f"{self.at(key)}: {what}")

    def warn(self, key: str, what: str) -> None:
        self.rep.warnings.append(f"{self.at(key)}: {what}")

    def want(self, key: str, typ: str):
        v = self.m[key]
        if go_type(v) != typ:
            raise _Panic(f"{self.at(key)}: interface conversion: interface {{}} is {go_type(v)}, not {typ}")
        return v

    def unknown(self, key: str) -> None:
        if key not in self.m.used:
            self.err(key, f'unknown field "{key}"')


def _run(m: ConfMap, source: str, rep: Report, handle) -> str:
    """``handle(block, key, low)`` for each key in file order, as one Go
    parse function with its deferred recover: a value of the wrong type
    (_Panic) is reported and ends the function, as does a key whose check
    returns the function's error (_Stop). nats-server reads the keys in Go's
    map order, which for a small map is the file's order most runs (an
    export's stream and service: 33 runs in 40); natslab always reads them
    in file order. Returns "panic", "stop" or ""."""
    for key in list(m):
        mine = Report()
        b = _Block(m, source, mine)
        state = ""
        try:
            handle(b, key, key.lower())
        except _Panic as p:
            state = "panic"
            mine.errors.append(p.line)
        except _Stop as s:
            state = "stop"
            mine.errors.append(s.line)
        rep.errors += mine.errors
        rep.warnings += mine.warnings
        if state:
            return state
    return ""


def _normalized(m: ConfMap, block, source: str, rep: Report) -> ConfMap:
    """``m`` under natslab's names (confcheck's table for that block: its
    unknown keys are nats-server's errors there too)."""
    from .confcheck import _check

    problems: list = []
    out = _check(m, block, "", problems, [], source)
    rep.errors += [f"{w}: {what}" for _, w, what in sorted(problems) if "is not supported by natslab" not in what]
    return out


def _duration(b: _Block, key: str, field: str) -> float:
    """parseDuration: a Go duration string; a number of seconds with a
    warning (anything else: the warning, then v.(int64)'s panic)."""
    v = b.m[key]
    if isinstance(v, str):
        try:
            return go_duration(v)
        except ConfigError as e:
            b.err(key, f"error parsing {field}: {e}")
            return 0.0
    b.warn(key, f'invalid use of field "{field}": {field} should be converted to a duration')
    return float(b.want(key, "int64"))


def _listen(b: _Block, key: str) -> None:
    """parseListen: a port, or host:port (Go's net.SplitHostPort, strconv.Atoi)."""
    v = b.m[key]
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        b.err(key, f"expected port or host:port, got {go_type(v)}")
        return
    if isinstance(v, int):
        return
    i = v.rfind(":")
    ok = i >= 0
    if ok and v[:1] == "[":
        end = v.find("]")
        ok = end >= 0 and end + 1 == i
        j, k = 1, end + 1
    elif ok:
        ok = ":" not in v[:i]
        j, k = 0, 0
    if ok:
        ok = "[" not in v[j:] and "]" not in v[k:]
    if not ok:
        b.err(key, f"could not parse address string {go_quote(v)}")
        return
    port = v[i + 1:]
    if not re.fullmatch(r"[+-]?[0-9]+", port) or not -(1 << 63) <= int(port) < (1 << 63):
        b.err(key, f"could not parse port {go_quote(port)}")


def _write_timeout(b: _Block, key: str) -> None:
    if b.want(key, "string") not in ("default", "close", "retry"):
        b.err(key, "write_timeout must be 'default', 'close' or 'retry'")


def _compression(b: _Block, key: str) -> None:
    """parseCompression (its own recover: a panic is its error, no more)."""
    v = b.m[key]
    if isinstance(v, (str, bool)):
        return
    if not isinstance(v, dict):
        b.err(key, f'field "{key}" should be a boolean or a structure, got {go_type(v)}')
        return
    inner = _Block(v, b.source, b.rep) if isinstance(v, ConfMap) else None
    if inner is None:
        return
    for k in list(v):
        low = k.lower()
        try:
            if low == "mode":
                inner.want(k, "string")
            elif low in ("rtt_thresholds", "thresholds", "rtts", "rtt"):
                items = inner.want(k, "[]interface {}")
                for i, x in enumerate(items):
                    if not isinstance(x, str):
                        raise _Panic(f"{item_where(items, i, inner.at(k))}: interface conversion: interface {{}} is "
                                     f"{go_type(x)}, not string")
                    try:
                        go_duration(x)
                    except ConfigError as e:
                        raise _Panic(f"{inner.at(k)}: {e}") from None  # (returned: the rest not read)
            elif k not in v.used:
                raise _Panic(f'{inner.at(k)}: unknown field "{k}"')
        except _Panic as p:
            b.rep.errors.append(p.line)
            return


def _urls(b: _Block, items: list, typ: str) -> None:
    """parseURLs: each a string (else the panic, at the element: no more
    read), a duplicate a warning, one url.Parse refuses an error."""
    seen = set()
    for i, u in enumerate(items):
        where = item_where(items, i, "")
        if not isinstance(u, str):
            b.rep.errors.append(f"{where}: interface conversion: interface {{}} is {go_type(u)}, not string")
            return
        if u in seen:
            b.rep.warnings.append(f'{where}: invalid use of field "{u}": Duplicate {typ} entry detected')
            continue
        seen.add(u)
        if not url_parses(u):
            b.rep.errors.append(f"{where}: error parsing {typ} url [{go_quote(trim_space(u))}]")


def _url(b: _Block, key: str, typ: str, value: str) -> None:
    if not url_parses(value):
        b.err(key, f"error parsing {typ} url [{go_quote(trim_space(value))}]")


def _tls(b: _Block, key: str) -> None:
    """parseTLS (at its own places) and GenTLSConfig (at the key)."""
    from . import tls

    v = b.m[key]
    if not isinstance(v, dict):  # (parseTLS's v.(map[string]any), returned as its error)
        b.err(key, f"interface conversion: interface {{}} is {go_type(v)}, not map[string]interface {{}}")
        return
    if isinstance(v, ConfMap):  # (the keys natslab refuses on its own ports are nats-server's here)
        taken = ConfMap({k: x for k, x in v.items() if k.lower() not in tls._REFUSED})
        taken.pos, taken.files, taken.file, taken.used = v.pos, v.files, v.file, v.used
        v = taken
    try:
        opts = tls.parse_tls_block(v, b.at(key))
    except PlacedError as e:
        b.rep.errors += str(e).split("\n")
        return
    except ConfigError as e:
        text = str(e)
        b.rep.errors.append(text if re.match(r".*?:\d+:\d+: ", text) else f"{b.at(key)}: {text}")
        return
    try:
        opts.context()
    except ConfigError as e:
        b.err(key, str(e))


def _string_array(b: _Block, key: str, field: str) -> None:
    v = b.m[key]
    if isinstance(v, str):
        return
    if isinstance(v, list):
        for i, x in enumerate(v):
            if not isinstance(x, str):
                b.rep.errors.append(f"{item_where(v, i, b.at(key))}: error parsing {field}: unsupported type in "
                                    f"array {go_type(x)}")
        return
    b.err(key, f"error parsing {field}: unsupported type {go_type(v)}")


def _perm_subjects(b: _Block, key: str) -> None:
    from .confcheck import _perm_subjects_problem

    why = _perm_subjects_problem(b.m[key], False, b.at(key), True)
    if why:
        b.rep.errors.append(why)


def _nested(b: _Block, key: str) -> ConfMap | None:
    """A map a parse function asserts (``v.(map[string]any)``): its panic
    in that function, then the caller's nil dereference, both at the key."""
    v = b.m[key]
    if not isinstance(v, dict):
        b.rep.errors.append(f"{b.at(key)}: interface conversion: interface {{}} is {go_type(v)}, not "
                            "map[string]interface {}")
        raise _Panic(f"{b.at(key)}: {NIL}")
    return v if isinstance(v, ConfMap) else None


def _auth_timeout(inner: _Block, k: str, what: str) -> None:
    """authorization's timeout: seconds (int or float) or a duration; the
    warning above 60 s; another type or a bad duration ends the block."""
    v = inner.m[k]
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise _Stop(f"{inner.at(k)}: error parsing {what} config, 'timeout' wrong type")
    if isinstance(v, str):
        try:
            secs = go_duration(v)
        except ConfigError as e:
            raise _Stop(f"{inner.at(k)}: error parsing {what} config, 'timeout' {e}") from None
    else:
        secs = float(v)
    if secs > 60:
        inner.warn(k, f'invalid use of field "{k}": timeout of {go_value(v)} ({secs:f} seconds) is high, consider '
                      "keeping it under 60 seconds. possibly caused by unquoted duration; use '1m' instead of 1m, "
                      "for example")


def _authorization(b: _Block, key: str, kind: str) -> None:
    """parseAuthorization inside cluster {} or gateway {} (``kind``:
    "Cluster" or "Gateway"), then the block's own checks at the key."""
    from .confcheck import PERMISSIONS, USER, permissions_problems, user_problems

    m = _nested(b, key)
    if m is None:
        return
    found: dict[str, bool] = {}

    def handle(inner: _Block, k: str, low: str) -> None:
        if low in ("user", "username", "pass", "password", "token"):
            inner.want(k, "string")
            found[low] = True
        elif low == "timeout":
            _auth_timeout(inner, k, "authorization")
        elif low == "users":
            v = inner.m[k]
            if not isinstance(v, list):
                inner.err(k, f"Expected users field to be an array, got {go_value(v)}")
                return
            users = [_normalized(u, USER, inner.source, inner.rep) if isinstance(u, ConfMap) else u for u in v]
            inner.rep.errors += user_problems(v.like(users) if isinstance(v, ConfList) else users)
            found["users"] = True
        elif low in ("default_permission", "default_permissions", "permissions"):
            v = inner.m[k]
            if not isinstance(v, dict):
                inner.err(k, f"Expected permissions to be a map/struct, got {go_value(v)}")
                return
            if isinstance(v, ConfMap):
                mine = Report()
                perms = _normalized(v, PERMISSIONS, inner.source, mine)
                mine.errors += permissions_problems(perms)
                inner.rep.errors += mine.errors
                if kind == "Cluster":  # (the permissions parsed, whatever their subjects' errors)
                    found["permissions"] = (not mine.errors and _route_subjects_problem(perms)) or True
        elif low in ("auth_callout", "auth_hook"):
            found["callout"] = True
        elif low == "proxy_required":
            inner.want(k, "bool")
        else:
            inner.unknown(k)

    state = _run(m, b.source, b.rep, handle)
    if state == "panic":
        raise _Panic(f"{b.at(key)}: {NIL}")
    if state == "stop":  # (the function returned its error: the block's own checks are not made)
        return
    if "users" in found:
        b.err(key, f"{kind} authorization does not allow multiple users")
    elif "token" in found:
        b.err(key, f"{kind} authorization does not support tokens")
    elif "callout" in found:
        b.err(key, f"{kind} authorization does not support callouts")
    elif isinstance(found.get("permissions"), str):
        b.err(key, found["permissions"])
    elif "permissions" in found:
        b.warn(key, f'invalid use of field "{key}": setting "permissions" within cluster authorization block is '
                    "deprecated")


def _route_subjects_problem(perms: ConfMap) -> str | None:
    """checkClusterPermissionSubjects: a route's subjects (import: publish,
    export: subscribe) may not name a queue group."""
    from .confcheck import _valid_subject

    for key, what in (("publish", "import"), ("subscribe", "export")):
        v = perms.get(key)
        lists = (("allow", v.get("allow")), ("deny", v.get("deny"))) if isinstance(v, dict) else (("allow", v),)
        for kind, subjects in lists:
            for subj in [subjects] if isinstance(subjects, str) else subjects if isinstance(subjects, list) else ():
                if isinstance(subj, str) and not _valid_subject(subj):
                    return f"cluster {what} {kind}: subject {go_quote(subj)} is not a valid subject"
    return None


# -- cluster {} ----------------------------------------------------------------------

def _cluster_key(b: _Block, key: str, low: str) -> None:
    if low == "name":
        if " " in b.want(key, "string"):
            b.err(key, "cluster name cannot contain spaces")
    elif low == "listen":
        _listen(b, key)
    elif low in ("port", "connect_retries", "pool_size", "ping_max"):
        b.want(key, "int64")
    elif low in ("host", "net", "cluster_advertise", "advertise"):
        b.want(key, "string")
    elif low in ("no_advertise", "connect_backoff"):
        b.want(key, "bool")
    elif low == "authorization":
        _authorization(b, key, "Cluster")
    elif low == "routes":
        _urls(b, b.want(key, "[]interface {}"), "route")
    elif low == "tls":
        _tls(b, key)
    elif low == "permissions":
        from .confcheck import PERMISSIONS, permissions_problems

        v = b.m[key]
        if not isinstance(v, dict):  # (parseUserPermissions is handed the value without its token: no place)
            b.rep.errors.append(f"Expected permissions to be a map/struct, got {go_value(v)}")
            return
        if not isinstance(v, ConfMap):
            return
        mine = Report()
        perms = _normalized(v, PERMISSIONS, b.source, mine)
        problems = mine.errors + permissions_problems(perms)
        b.rep.errors += problems
        if any(x is True or isinstance(x, dict) for k, x in v.items()
               if k.lower() in ("allow_responses", "publish_allow_responses")):
            b.err(key, "Cluster permissions do not support dynamic responses")
        elif not problems and _route_subjects_problem(perms):
            b.err(key, _route_subjects_problem(perms))
    elif low == "accounts":
        _string_array(b, key, "accounts")
    elif low == "compression":
        _compression(b, key)
    elif low == "ping_interval":
        if _duration(b, key, "ping_interval") > ROUTE_MAX_PING:
            b.warn(key, "Cluster 'ping_interval' will reset to 30s which is the max for routes")
    elif low == "write_deadline":
        _duration(b, key, "write_deadline")
    elif low == "write_timeout":
        _write_timeout(b, key)
    else:
        b.unknown(key)


# -- gateway {} ----------------------------------------------------------------------

def _gateway_entry(b: _Block, key: str, low: str) -> None:
    if low == "name":
        b.want(key, "string")
    elif low == "tls":
        _tls(b, key)
    elif low == "url":
        _url(b, key, "gateway", b.want(key, "string"))
    elif low == "urls":
        _urls(b, b.want(key, "[]interface {}"), "gateway")
    else:
        b.unknown(key)


def _gateways(b: _Block, key: str) -> None:
    """parseGateways: an array of maps; a panic ends it (no more entries);
    not an array: parseGateway returns the error (the block ends)."""
    v = b.m[key]
    if not isinstance(v, list):
        # (parseGateway hands parseGateways the value without its token: no place)
        raise _Stop(f"Expected gateways field to be an array, got {go_type(v)}")
    for i, g in enumerate(v):
        if not isinstance(g, dict):
            b.rep.errors.append(f"{item_where(v, i, b.at(key))}: Expected gateway entry to be a map/struct, got "
                                f"{go_value(g)}")
            continue
        if isinstance(g, ConfMap) and _run(g, b.source, b.rep, _gateway_entry) == "panic":
            return


def _gateway_key(b: _Block, key: str, low: str) -> None:
    if low == "name":
        if " " in b.want(key, "string"):
            b.err(key, "gateway name cannot contain spaces")
    elif low == "listen":
        _listen(b, key)
    elif low in ("port", "connect_retries"):
        b.want(key, "int64")
    elif low in ("host", "net", "advertise"):
        b.want(key, "string")
    elif low in ("connect_backoff", "reject_unknown", "reject_unknown_cluster"):
        b.want(key, "bool")
    elif low == "authorization":
        _authorization(b, key, "Gateway")
    elif low == "tls":
        _tls(b, key)
    elif low == "gateways":
        _gateways(b, key)
    elif low == "write_deadline":
        _duration(b, key, "write_deadline")
    elif low == "write_timeout":
        _write_timeout(b, key)
    else:
        b.unknown(key)


# -- leafnodes {} --------------------------------------------------------------------

_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
                     r"(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")


def _leaf_users(b: _Block, key: str) -> list | None:
    """parseLeafUsers: the users' names (for the block's checks), None
    when it returned none (an error, or a panic it recovered from)."""
    v = b.m[key]
    if not isinstance(v, list):
        b.err(key, f"Expected users field to be an array, got {go_value(v)}")
        return None
    names: list[str] = []

    def user_key(u: _Block, k: str, low: str) -> None:
        if low in ("user", "username"):
            names[-1] = u.want(k, "string")
        elif low in ("pass", "password", "account"):
            u.want(k, "string")
        elif low == "proxy_required":
            u.want(k, "bool")
        else:
            u.unknown(k)

    for i, u in enumerate(v):
        if not isinstance(u, dict):
            b.rep.errors.append(f"{item_where(v, i, b.at(key))}: Expected user entry to be a map/struct, got "
                                f"{go_value(u)}")
            continue
        names.append("")
        if isinstance(u, ConfMap) and _run(u, b.source, b.rep, user_key) == "panic":
            return None
    return names


def _leaf_authorization(b: _Block, key: str) -> None:
    """parseLeafAuthorization, then validateLeafNodeAuthOptions at the key."""
    from . import nkeys

    m = _nested(b, key)
    if m is None:
        return
    single: dict[str, str] = {}
    users: list[str] = []

    def handle(inner: _Block, k: str, low: str) -> None:
        if low in ("user", "username"):
            single["user"] = inner.want(k, "string")
        elif low in ("pass", "password", "account"):
            inner.want(k, "string")
        elif low == "nkey":
            single["nkey"] = nk = inner.want(k, "string")
            if not nkeys.is_user_key(nk):
                inner.err(k, "Not a valid public nkey for leafnode authorization")
        elif low == "timeout":
            _auth_timeout(inner, k, "leafnode authorization")
        elif low == "users":
            users[:] = _leaf_users(inner, k) or []
        elif low == "proxy_required":
            inner.want(k, "bool")
        else:
            inner.unknown(k)

    state = _run(m, b.source, b.rep, handle)
    if state == "panic":
        raise _Panic(f"{b.at(key)}: {NIL}")
    if state == "stop" or not users:
        return
    if single.get("user"):  # (validateLeafNodeAuthOptions)
        b.err(key, "can not have a single user/pass and a users array")
    elif single.get("nkey"):
        b.err(key, "can not have a single nkey and a users array")
    else:
        seen = set()
        for name in users:
            if name in seen:
                b.err(key, f"duplicate user {go_quote(name)} detected in leafnode authorization")
                break
            seen.add(name)


def _user_seed_ok(seed: str) -> bool:
    """nkeys.DecodeSeed gives a user's seed."""
    import base64

    from .nkeys import _crc16

    try:
        raw = base64.b32decode(seed + "=" * (-len(seed) % 8))
    except (ValueError, TypeError):
        return False
    if len(raw) < 4 or _crc16(raw[:-2]) != int.from_bytes(raw[-2:], "little"):
        return False
    raw = raw[:-2]
    if raw[0] & 0xF8 != 18 << 3:  # PrefixByteSeed
        return False
    return ((raw[0] & 7) << 5 | (raw[1] & 0xF8) >> 3) == 20 << 3 and len(raw) == 34


def _remote_key(b: _Block, key: str, low: str) -> None:
    v = b.m[key]
    if low in ("no_randomize", "dont_randomize", "hub", "ws_compress", "ws_compression", "websocket_compress",
               "websocket_compression", "ws_no_masking", "websocket_no_masking", "isolate_leafnode_interest",
               "isolate", "request_isolation", "disabled", "ignore_discovered_servers"):
        b.want(key, "bool")
    elif low in ("url", "urls"):
        if isinstance(v, list):
            _urls(b, v, "leafnode")
        elif isinstance(v, str):
            _url(b, key, "leafnode", v)
        else:
            b.err(key, f"Expected remote leafnode url to be an array or string, got {go_value(v)}")
    elif low in ("account", "local"):
        b.want(key, "string")
    elif low in ("creds", "credentials"):
        b.want(key, "string")
        if any(k.lower() in ("nkey", "seed") and list(b.m).index(k) < list(b.m).index(key)
               and _user_seed_ok(str(b.m[k])) for k in b.m):
            b.err(key, "Remote leafnode can not have both creds and nkey defined")
    elif low in ("nkey", "seed"):
        if not _user_seed_ok(b.want(key, "string")):
            b.err(key, f"Remote leafnode nkey is not a valid seed: {go_quote(v)}")
        elif any(k.lower() in ("creds", "credentials") and list(b.m).index(k) < list(b.m).index(key)
                 and isinstance(b.m[k], str) for k in b.m):
            b.err(key, "Remote leafnode can not have both creds and nkey defined")
    elif low == "tls":
        _tls(b, key)
    elif low in ("deny_imports", "deny_import", "deny_exports", "deny_export"):
        _perm_subjects(b, key)
    elif low in ("jetstream_cluster_migrate", "js_cluster_migrate"):
        if isinstance(v, dict):
            if "leader_migrate_delay" in v and isinstance(v, ConfMap):
                _duration(_Block(v, b.source, b.rep), "leader_migrate_delay", "leader_migrate_delay")
        elif not isinstance(v, bool):
            # (its token is unwrapped a second time: nil, no place)
            b.rep.errors.append(f"Expected boolean or map for jetstream_cluster_migrate, got {go_type(v)}")
    elif low == "compression":
        _compression(b, key)
    elif low in ("first_info_timeout", "dial_timeout"):
        _duration(b, key, key)
    elif low == "proxy":
        if not isinstance(v, dict):
            b.err(key, f"Expected proxy to be a map, got {go_type(v)}")
            return
        if not isinstance(v, ConfMap):
            return
        inner = _Block(v, b.source, b.rep)
        for k in v:
            pl = k.lower()
            if pl in ("url", "username", "password"):
                inner.want(k, "string")
            elif pl == "timeout":
                _duration(inner, k, "proxy timeout")
            else:
                inner.unknown(k)
    else:
        b.unknown(key)


def _remotes(b: _Block, key: str) -> None:
    """parseRemoteLeafNodes: an array of maps; a panic ends it (the
    entries after it are not read)."""
    v = b.m[key]
    if not isinstance(v, list):
        b.err(key, f"Expected remotes field to be an array, got {go_type(v)}")
        return
    names: set[str] = set()
    for i, r in enumerate(v):
        if not isinstance(r, dict):
            b.rep.errors.append(f"{item_where(v, i, b.at(key))}: Expected remote leafnode entry to be a map/struct, "
                                f"got {go_value(r)}")
            continue
        if not isinstance(r, ConfMap):
            continue
        if _run(r, b.source, b.rep, _remote_key) == "panic":
            return
        if _proxy_problem(r, b):
            continue
        name, safe = _remote_name(r)
        if name in names and r:  # (at the token its loop read last: the last key, or the last of its proxy's)
            last = list(r)[-1]
            where = r.where(last, b.source)
            if last.lower() == "proxy" and isinstance(r[last], ConfMap) and r[last]:
                where = r[last].where(list(r[last])[-1], b.source)
            b.rep.errors.append(f"{where}: duplicate remote {safe}")
            continue
        names.add(name)


def _remote_urls(r: ConfMap) -> list[str]:
    """RemoteLeafOpts.URLs: the remote's urls nats-server took."""
    urls: list[str] = []
    for k, v in r.items():
        if k.lower() in ("url", "urls"):
            if isinstance(v, str) and url_parses(v):
                urls.append(trim_space(v))
            elif isinstance(v, list) and all(isinstance(u, str) for u in v) and all(url_parses(u) for u in v):
                urls = list(dict.fromkeys(trim_space(u) for u in v))
    return urls


def _seconds(v) -> float:
    """What parseDuration made of ``v`` (0 when it was refused)."""
    if isinstance(v, str):
        try:
            return go_duration(v)
        except ConfigError:
            return 0.0
    return float(v) if isinstance(v, int) and not isinstance(v, bool) else 0.0


def _proxy_problem(r: ConfMap, b: _Block) -> bool:
    """validateLeafNodeProxyOptions, at the ``proxy`` key: its error (True)
    or its warnings."""
    key = next((k for k in r if k.lower() == "proxy" and isinstance(r[k], ConfMap)), None)
    if key is None:
        return False
    proxy = r[key]
    got = {pk.lower(): pv for pk, pv in proxy.items() if isinstance(pv, str)}
    url = got.get("url", "")
    if not url:
        return False
    where = r.where(key, b.source)
    timeout = next((pv for pk, pv in proxy.items() if pk.lower() == "timeout"), None)
    try:
        scheme, host = go_url(url)
        why = ""
    except URLError as e:
        why = f"invalid proxy URL: {e}"
    if not why and scheme not in ("http", "https"):
        why = f"proxy URL scheme must be http or https, got: {scheme}"
    elif not why and not host:
        why = "proxy URL must specify a host"
    elif not why and _seconds(timeout) < 0:
        why = "proxy timeout must be >= 0"
    elif not why and (not got.get("username")) != (not got.get("password")):
        why = "proxy username and password must both be specified or both be empty"
    if why:
        b.rep.errors.append(f"{where}: {why}")
        return True
    urls = _remote_urls(r)
    if not urls:
        return False
    schemes = [u.partition(":")[0].lower() for u in urls]
    tls = any(k.lower() == "tls" for k in r)
    for u, sc in zip(urls, schemes):
        if sc == "wss" and not tls:
            b.rep.errors.append(f"{where}: proxy is configured but remote URL {u} requires TLS and no TLS "
                                "configuration is provided. When using proxy with TLS endpoints, ensure TLS is "
                                "properly configured for the leafnode remote")
            return True
    # (nats-server 2.15.1 gives no warning for a proxy beside nats:// urls, though its source has one)
    return False


def _remote_name(r: ConfMap) -> tuple[str, str]:
    """RemoteLeafOpts.name() and safeName(): its URLs, account and
    credentials (or nkey), as nats-server tells two remotes apart."""
    urls = _remote_urls(r)
    acc, creds, nkey = "", "", ""
    for k, v in r.items():
        low = k.lower()
        if low in ("account", "local") and isinstance(v, str):
            acc = v
        elif low in ("creds", "credentials") and isinstance(v, str) and not nkey:
            creds = v
        elif low in ("nkey", "seed") and isinstance(v, str) and _user_seed_ok(v) and not creds:
            nkey = v

    def shown(u: str, redact: bool) -> str:
        scheme, sep, rest = u.partition("://")
        if sep:
            u = scheme.lower() + sep + rest
        if redact:
            u = re.sub(r"^([^:/?#]+://[^:@/]*):[^@/]*@", r"\1:xxxxx@", u)
        return go_quote(u)

    def name(redact: bool) -> str:
        extra = f", credentials={go_quote(creds)}" if creds else \
            (', nkey="[REDACTED]"' if redact else f", nkey={go_quote(nkey)}") if nkey else ""
        return (f"urls=[{' '.join(shown(u, redact) for u in urls)}], account={go_quote(acc or '$G')}{extra}")

    return name(False), name(True)


def _leafnodes_key(b: _Block, key: str, low: str) -> None:
    if low == "listen":
        _listen(b, key)
    elif low == "port":
        b.want(key, "int64")
    elif low in ("host", "net", "leafnode_advertise", "advertise"):
        b.want(key, "string")
    elif low in ("no_advertise", "isolate_leafnode_interest", "isolate"):
        b.want(key, "bool")
    elif low == "authorization":
        _leaf_authorization(b, key)
    elif low == "remotes":
        _remotes(b, key)
    elif low in ("reconnect", "reconnect_delay", "reconnect_interval"):
        _duration(b, key, "reconnect")
    elif low == "dial_timeout":
        _duration(b, key, "dial_timeout")
    elif low == "tls":
        _tls(b, key)
    elif low in ("min_version", "minimum_version"):
        m = _SEMVER.match(b.want(key, "string"))
        if not m:
            b.err(key, "invalid leafnode's minimum version: invalid semver")
        elif tuple(int(x) for x in m.groups()[:3]) < (2, 8, 0):
            b.err(key, "the minimum version should be at least 2.8.0")
    elif low == "compression":
        _compression(b, key)
    elif low == "write_deadline":
        _duration(b, key, "write_deadline")
    elif low == "write_timeout":
        _write_timeout(b, key)
    else:
        b.unknown(key)


# -- mqtt {} -------------------------------------------------------------------------

def _simple_auth(b: _Block, key: str) -> None:
    """parseSimpleAuth: user, password, token (strings), timeout (anything)."""
    m = _nested(b, key)
    if m is None:
        return

    def handle(inner: _Block, k: str, low: str) -> None:
        if low in ("user", "username", "pass", "password", "token"):
            inner.want(k, "string")
        elif low != "timeout":
            inner.unknown(k)

    if _run(m, b.source, b.rep, handle) == "panic":
        raise _Panic(f"{b.at(key)}: {NIL}")


def _mqtt_key(b: _Block, key: str, low: str) -> None:
    if low == "listen":
        _listen(b, key)
    elif low in ("port", "stream_replicas"):
        b.want(key, "int64")
    elif low in ("host", "net", "no_auth_user", "js_domain"):
        b.want(key, "string")
    elif low == "tls":
        _tls(b, key)
    elif low in ("authorization", "authentication"):
        _simple_auth(b, key)
    elif low in ("ack_wait", "ackwait"):
        _duration(b, key, "ack_wait")
    elif low in ("js_api_timeout", "api_timeout"):
        _duration(b, key, "js_api_timeout")
    elif low in ("max_ack_pending", "max_pending", "max_inflight"):
        n = b.want(key, "int64")
        if not 0 <= n <= 0xFFFF:  # (Go's int(): the int64 as it is)
            b.err(key, f"invalid value {n}, should in [0..65535] range")
    elif low == "consumer_replicas":
        b.warn(key, f'invalid use of field "{key}": consumer replicas setting ignored in this server version')
    elif low in ("consumer_memory_storage", "reject_qos2_publish", "downgrade_qos2_subscribe"):
        b.want(key, "bool")
    elif low in ("consumer_inactive_threshold", "consumer_auto_cleanup"):
        _duration(b, key, "consumer_inactive_threshold")
    else:
        b.unknown(key)


_BLOCKS = {"cluster": ("Expected map to define cluster, got {}", _cluster_key),
           "gateway": ("Expected gateway to be a map, got {}", _gateway_key),
           "leaf": ("Expected map to define a leafnode, got {}", _leafnodes_key),
           "leafnodes": ("Expected map to define a leafnode, got {}", _leafnodes_key),
           "mqtt": ("Expected mqtt to be a map, got {}", _mqtt_key)}


def check_block(key: str, value, where: str, source: str) -> Report:
    """The problems of one top-level ``cluster``/``gateway``/``leaf(nodes)``/
    ``mqtt`` value (``where``: its key's place), nats-server's errors and
    warnings, each ``file:line:col: what``."""
    rep = Report()
    wrong, handle = _BLOCKS[key.lower()]
    if not isinstance(value, dict):
        rep.errors.append(f"{where}: {wrong.format(go_type(value))}")
    elif isinstance(value, ConfMap):
        _run(value, source, rep, handle)
    return rep


BLOCKS = tuple(_BLOCKS)
