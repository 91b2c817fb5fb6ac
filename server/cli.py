"""``natslab server``: the broker headless, with nats-server's flag spellings.

Flags take one or two dashes and a value after a space or ``=``, as Go's flag
package allows. The default address is loopback (unlike nats-server).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import sys
import time
from pathlib import Path

from . import accounts
from .conf import ConfigError, ConfMap, OptionsError, config_duration, go_type, go_value, parse_file
from .lameduck import MIN_LAME_DUCK_DURATION, lame_duck
from .flags import USAGE, UsageError, early_listener_fits, parse_args  # noqa: F401 (their home is flags.py)
from .server import NATS_VERSION, Server, ServerOptions, StartFailed

class ConfigFileError(Exception):
    """The configuration file cannot be used: the server does not start
    (exit status 1, as nats-server)."""


def _int(v, what: str) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        raise UsageError(f"invalid value {v!r} for {what}") from None


def build_options(flags: dict) -> ServerOptions:
    o = ServerOptions()
    conf: dict = {}
    if flags.get("config"):
        path = flags["config"]
        try:
            parsed = parse_file(path)
        except OSError as e:
            why = (e.strerror or str(e))
            op = "read" if isinstance(e, IsADirectoryError) else "open"
            raise ConfigFileError(f"{op} {path}: {why[:1].lower()}{why[1:]}") from None
        except ConfigError as e:  # nats-server's words (they name the line where it does)
            raise ConfigFileError(str(e)) from None
        from . import confcheck  # (only a start with a config file needs it)

        # every problem at once, warnings first, as nats-server's processConfigFile reports them
        errors: list[str] = []
        warnings: list[str] = []
        conf = confcheck.check(parsed, path, errors)
        warnings += conf.warnings  # (cluster {}, gateway {}, leafnodes {}, mqtt {}: confnodes)
        after: list[str] = []  # (validateOptions' errors: for the start, not for -t)
        _apply_config(o, conf, path, errors, warnings, after)
        if errors or (warnings and flags.get("check_config")):
            raise ConfigFileError("\n".join(warnings + sorted(errors, key=_position)))
        if after and not flags.get("check_config"):  # (the first, as validateOptions returns it)
            if warnings:
                print("\n".join(warnings), file=sys.stderr)
            raise ConfigFileError(after[0])
        if warnings:  # (a start goes on, as nats-server's: the warnings on stderr, as they are)
            print("\n".join(warnings), file=sys.stderr)
        o.unused_config = list(conf.unused)
        # what the file says of logging and the pid file, unless a flag says otherwise
        for key, flag in (("debug", "debug"), ("trace", "trace"), ("logfile", "log"), ("pidfile", "pid")):
            if key in conf:
                flags.setdefault(flag, conf[key] if isinstance(conf[key], bool) else str(conf[key]))
        for key in ("trace_verbose", "trace_headers"):  # (each sets trace too, as in nats-server)
            if conf.get(key) is True:
                flags.setdefault("trace", True)
    o.unused_config += [f"-{k[1:]}" for k in flags if k.startswith("~")]
    # command-line flags override the file, as with nats-server
    if "host" in flags:
        o.host = flags["host"]
    if "port" in flags:
        o.port = _int(flags["port"], "port")
    if "server_name" in flags:
        o.server_name = flags["server_name"]
    if "http_port" in flags:
        o.http_port = _int(flags["http_port"], "http_port")
    if flags.get("jetstream"):
        o.jetstream = True
    if "store_dir" in flags:
        o.store_dir = flags["store_dir"]
        o.jetstream = o.jetstream or bool(flags.get("jetstream"))
    if "max_payload" in flags:
        o.max_payload = _int(flags["max_payload"], "max_payload")
    if "user" in flags:
        o.user = flags["user"]
    if "password" in flags:
        o.password = flags["password"]
    if "token" in flags:
        o.token = flags["token"]
    if flags.get("trace") or flags.get("debug_trace"):
        o.trace = True
    # any --tls* flag replaces the file's tls block; --tls=false drops it
    if flags.get("tls") is False:
        o.tls = None
    elif any(k in flags for k in ("tls", "tlsverify", "tlscert", "tlskey", "tlscacert")):
        from . import tls

        try:
            o.tls = tls.from_flags(flags)
        except ConfigError as e:
            raise UsageError(str(e)) from None
    if o.port < -1 or o.port > 65535:
        raise UsageError(f"invalid port {o.port}")
    return o


# keys whose value nats-server takes as a Go type (v.(int64), v.(bool)): any other is its panic's error
_INT_KEYS = ("port", "max_payload", "max_pending", "max_connections", "ping_max", "max_control_line", "max_subs",
             "max_sub_tokens", "max_closed_clients")
_BOOL_KEYS = ("debug", "trace", "logtime", "logtime_utc", "no_system_account", "allow_non_tls",
              "trace_verbose", "trace_headers", "no_header_support")


_BCRYPT = re.compile(r"\$2[abxy]\$\d{2}\$")  # nats-server's isBcrypt


def _apply_config(o: ServerOptions, c: ConfMap, path: str, errors: list[str], warnings: list[str],
                  after: list[str] | None = None) -> None:
    """Apply a checked file (confcheck: natslab's key names); its problems
    go to ``errors`` and ``warnings`` (each ``file:line:col: what``), every
    key handled whatever the others' problems."""
    def problem(block: ConfMap, key: str, what: str) -> ConfigFileError:
        line, col = block.pos.get(key, (0, 0))
        return ConfigFileError(f"{path}:{line}:{col}: {what}")

    def duration(block: ConfMap, key: str, error: str = "{}", numbers: tuple = (int,), wrong: str | None = None,
                 at: tuple | None = None) -> float:
        """``block[key]`` read as a duration (conf.config_duration), its
        error at the key (or at ``at``: (block, key); (None, None): none)."""
        try:
            return config_duration(block[key], error, numbers, wrong)
        except ConfigError as e:
            where = at or (block, key)
            raise (problem(*where, str(e)) if where[0] is not None else ConfigFileError(str(e))) from None

    def string(block: ConfMap, key: str, at: tuple | None = None) -> str:
        """``block[key]``, a string as nats-server's ``v.(string)`` takes it:
        anything else its panic's error, at the key (or at ``at``)."""
        v = block[key]
        if not isinstance(v, str):
            raise problem(*(at or (block, key)), f"interface conversion: interface {{}} is {go_type(v)}, not string")
        return v

    def parse_duration_warning(block: ConfMap, key: str) -> None:
        """nats-server's parseDuration: a number of seconds is taken, with its warning."""
        if key in block and not isinstance(block[key], str):
            field = block.written.get(key, key)
            warnings.append(str(problem(block, key, f'invalid use of field "{field}": {field} should be converted '
                                                    "to a duration")))

    collect = _Collect(path, errors, after if after is not None else errors)
    bad: set[str] = set()  # keys whose value failed a check: not applied (no second complaint)
    for key in _INT_KEYS + _BOOL_KEYS:
        want = "int64" if key in _INT_KEYS else "bool"
        if key in c and go_type(c[key]) != want:
            bad.add(key)
            errors.append(str(problem(c, key, f"interface conversion: interface {{}} is {go_type(c[key])}, "
                                              f"not {want}")))
    for key in ("max_payload", "max_control_line"):
        if key in c and key not in bad and c[key] > (1 << 31) - 1:
            bad.add(key)
            errors.append(str(problem(c, key, f"{key} value is too big")))
    if " " in str(c.get("server_name", "")):
        bad.add("server_name")
        errors.append(str(problem(c, "server_name", "server name cannot contain spaces")))
    for key in ("ping_interval", "write_deadline"):  # parseDuration: a Go duration, or seconds
        if key in c:
            parse_duration_warning(c, key)
            try:
                duration(c, key, f"error parsing {key}: {{}}")
            except ConfigFileError as e:
                bad.add(key)
                errors.append(str(e))
    for key in ("listen", "http", "https"):  # parseListen: a port, or host:port
        if isinstance(c.get(key), str):
            h, sep, pt = c[key].rpartition(":")
            if not sep:
                bad.add(key)
                errors.append(str(problem(c, key, f'could not parse address string "{c[key]}"')))
            elif not re.fullmatch(r"[+-]?[0-9]+", pt):
                bad.add(key)
                errors.append(str(problem(c, key, f'could not parse port "{pt}"')))
    for key in bad:
        del c[key]
    with collect:
        if isinstance(c.get("listen"), int):  # a port alone
            o.port = c["listen"]
        elif "host" in c or "listen" in c:
            listen = str(c.get("listen", ""))
            if listen and ":" in listen:
                h, _, pt = listen.rpartition(":")
                if h.startswith("[") and h.endswith("]"):  # [::1]:4222, as net.SplitHostPort reads it
                    h = h[1:-1]
                o.host, o.port = h or o.host, int(pt)
            else:
                o.host = str(c.get("host", listen or o.host))
    with collect:
        if "port" in c:
            o.port = int(c["port"])
    with collect:
        for key in ("server_name",):
            if key in c:
                setattr(o, key, str(c[key]))
    for attr, keys in (("https_port", ("https_port", "https")), ("http_port", ("http_port", "http"))):
        with collect:
            for key in keys:
                if key in c:  # (a port, or "host:port")
                    v = str(c[key])
                    if ":" in v:
                        h, _, pt = v.rpartition(":")
                        o.http_host = h or None
                        setattr(o, attr, int(pt))
                    else:
                        setattr(o, attr, int(v))
    with collect:
        for key in ("max_payload", "max_pending", "max_connections", "ping_max"):
            if key in c:
                setattr(o, key, int(c[key]))
    with collect:
        if "ping_interval" in c:
            o.ping_interval = duration(c, "ping_interval")
    with collect:
        if "max_control_line" in c:
            o.max_control_line = int(c["max_control_line"])
    with collect:
        for key in ("logtime", "logtime_utc", "no_system_account", "allow_non_tls"):
            if key in c:
                setattr(o, key, c[key])
    with collect:
        if "max_subs" in c:
            o.max_subs = int(c["max_subs"])
    with collect:
        if "max_sub_tokens" in c and "max_sub_tokens" not in bad:
            n = c["max_sub_tokens"]
            if n > 255:
                raise problem(c, "max_sub_tokens", f"max_sub_tokens value is too big")
            if n <= 0:
                raise problem(c, "max_sub_tokens", f"max_sub_tokens value can not be negative")
            o.max_sub_tokens = n
    with collect:
        if "max_closed_clients" in c and "max_closed_clients" not in bad:
            o.max_closed_clients = c["max_closed_clients"] or 10000  # (0: nats-server's default)
    with collect:
        for key in ("no_header_support", "trace_verbose", "trace_headers"):
            if key in c and key not in bad:
                setattr(o, key, c[key])
    with collect:
        if "ports_file_dir" in c:
            o.ports_file_dir = string(c, "ports_file_dir")
    with collect:
        if "write_timeout" in c:  # (for clients "default" is "close")
            v = string(c, "write_timeout")
            if v not in ("default", "close", "retry"):
                raise problem(c, "write_timeout", "write_timeout must be 'default', 'close' or 'retry'")
            o.write_timeout_retry = v == "retry"
    with collect:
        if "client_advertise" in c:
            o.client_advertise = string(c, "client_advertise")
    with collect:
        if "server_tags" in c:
            v = c["server_tags"]
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list):
                raise problem(c, "server_tags", f"error parsing tags: unsupported type {go_type(v)}")
            for t in v:
                if not isinstance(t, str):
                    raise problem(c, "server_tags", "error parsing tags: unsupported type *conf.token "
                                                    "where string is expected")
                t = t.strip().lower()  # (jwt.TagList's Add)
                if t and t not in o.server_tags:
                    o.server_tags.append(t)
    with collect:
        if "write_deadline" in c:
            o.write_deadline = duration(c, "write_deadline")
    with collect:
        if "authorization" in c:
            a = c["authorization"]
            if not isinstance(a, dict):  # (nats-server's panic, at the key)
                raise problem(c, "authorization", f"interface conversion: interface {{}} is {go_type(a)}, "
                                                  "not map[string]interface {}")
            if "users" in a and not isinstance(a["users"], list):
                raise problem(a, "users", f"Expected users field to be an array, got {a['users']}")
            o.user = a.get("user") or o.user  # (set first: accounts checks them whatever the checks below say)
            o.password = a.get("password") or o.password
            o.token = a.get("token") or o.token
            # nats-server's checks, in its order (at the block's key)
            if (a.get("user") or a.get("password")) and a.get("token"):
                raise problem(c, "authorization", "Cannot have a user/pass and token")
            if "users" in a:
                if a.get("user"):
                    raise problem(c, "authorization", "Can not have a single user/pass and a users array")
                if a.get("token"):
                    raise problem(c, "authorization", "Can not have a token and a users array")
                seen = set()
                for u in a["users"] if isinstance(a["users"], list) else ():
                    name = u.get("user") if isinstance(u, dict) else None
                    if name is None:  # (not a user entry, or an nkey's: its problem is its own)
                        continue
                    if name in seen:
                        raise problem(c, "authorization", f'Duplicate user "{name}" detected')
                    seen.add(name)
            # bcrypt hashes are checked with the system's crypt(3) (server/auth.py): without
            # one they are refused here rather than started with logins that cannot succeed
            from .auth import bcrypt_available

            for block in [a] + [u for u in a.get("users", []) if isinstance(u, ConfMap)] if not bcrypt_available() else ():
                for key in ("password", "token"):
                    if isinstance(block.get(key), str) and _BCRYPT.match(block[key]):
                        raise problem(block, key, "bcrypt hashed passwords and tokens are not supported by natslab")
            from .confcheck import permissions_problems, user_problems

            # (parseUsers: every entry's problems at their places, all reported at once)
            placed = user_problems(a["users"]) if isinstance(a.get("users"), list) else []
            for u in a.get("users", []) if isinstance(a.get("users"), list) else ():
                if isinstance(u, ConfMap) and u.get("nkey") is not None:
                    from . import nkeys

                    if not nkeys.is_user_key(str(u["nkey"])):
                        placed.append(str(problem(u, "nkey", "Not a valid public nkey for a user")))
                        break  # (parseUsers returns there)
            default = a.get("default_permissions")
            if default is not None and not isinstance(default, dict):
                placed.append(str(problem(a, "default_permissions",
                                          f"Expected permissions to be a map/struct, got {go_value(default)}")))
            if isinstance(default, ConfMap):  # (applyDefaultPermissions: users without permissions of their own)
                placed += permissions_problems(default)
                for u in a.get("users", []) if isinstance(a.get("users"), list) else ():
                    if isinstance(u, ConfMap) and "permissions" not in u:
                        u["permissions"] = default
            if placed:
                raise ConfigFileError("\n".join(placed))
            o.user = a.get("user") or o.user
            o.password = a.get("password") or o.password
            o.token = a.get("token") or o.token
            o.users = [u for u in a.get("users", []) if isinstance(u, dict)]
            if "timeout" in a:
                o.auth_timeout = duration(a, "timeout", "error parsing authorization config, 'timeout' {}",
                                          (int, float), "error parsing authorization config, 'timeout' wrong type")
                if o.auth_timeout > 60:  # (nats-server's warning, with Go's %v and %f)
                    t = a["timeout"]
                    shown = go_value(t)
                    warnings.append(str(problem(a, "timeout", f'invalid use of field "{a.written.get("timeout", "timeout")}"'
                                                f": timeout of {shown} ({o.auth_timeout:f} seconds) is high, consider "
                                                "keeping it under 60 seconds. possibly caused by unquoted duration; "
                                                "use '1m' instead of 1m, for example")))
    with collect:
        if "store_dir" in c:
            o.store_dir = string(c, "store_dir")
    with collect:
        if "tls" in c:
            from . import tls

            if not isinstance(c["tls"], dict):
                raise problem(c, "tls", f"interface conversion: interface {{}} is {go_type(c['tls'])}, "
                                        "not map[string]interface {}")
            o.tls = tls.parse_tls_block(c["tls"], c.where("tls", path))
            try:  # (nats-server's GenTLSConfig loads the files as it reads the block: at its key)
                o.tls.context()
            except ConfigError as e:
                raise problem(c, "tls", str(e)) from None
    before = len(errors)
    with collect:
        if "operator" in c or "trusted" in c or "resolver" in c or "resolver_preload" in c:
            from . import resolver  # operator mode: its accounts join o.accounts

            resolver.configure(o, c)
    operator_failed = len(errors) > before  # (its accounts are not known: no second complaint about them)
    with collect:
        if "mappings" in c:
            from . import mappings

            if not isinstance(c["mappings"], dict):
                raise problem(c, "mappings", f"interface conversion: interface {{}} is {go_type(c['mappings'])}, "
                                             "not map[string]interface {}")

            o.mappings = mappings.parse(c["mappings"], lambda b, k: b.where(k, path), c.where("mappings", path))
    with collect:
        if "accounts" in c:
            o.accounts.update(accounts.parse_accounts(c["accounts"], o))
            # (checked once every account is known, at the block's place, as nats-server)
            errors += [str(problem(c, "accounts", p)) for p in accounts.link_problems(o.accounts)]
    with collect:
        if "system_account" in c and not isinstance(c["system_account"], str):
            raise problem(c, "system_account", "system account name must be a string")
        if "system_account" in c and not operator_failed:
            try:
                o.system_account = accounts.parse_system_account(c["system_account"], o)
            except ConfigError as e:  # (validateOptions: the account is looked up at the start)
                raise OptionsError(str(e)) from None
    with collect:
        if "no_auth_user" in c:
            o.no_auth_user = string(c, "no_auth_user")
    with collect:
        if "websocket" in c:
            from . import websocket

            if not isinstance(c["websocket"], dict):
                raise problem(c, "websocket", f"Expected websocket to be a map, got {go_type(c['websocket'])}")
            o.websocket = websocket.parse_websocket_block(c["websocket"], warnings)
    for key in ("lame_duck_duration", "lame_duck_grace_period"):
        with collect:  # (each as nats-server: time.ParseDuration of a string, at the key)
            if key in c:
                d = duration(c, key, f"error parsing {key}: {{}}", numbers=())
                if key == "lame_duck_duration" and d < MIN_LAME_DUCK_DURATION:
                    raise problem(c, key, f"invalid lame_duck_duration of {_go_dur(d)}, minimum is 30 seconds")
                if d < 0:
                    raise problem(c, key, "invalid lame_duck_grace_period, needs to be positive")
                setattr(o, key, d)
    with collect:
        if o.lame_duck_grace_period >= o.lame_duck_duration:
            raise OptionsError(f"lame duck grace period ({_go_dur(o.lame_duck_grace_period)}) should be "
                              f"strictly lower than lame duck duration ({_go_dur(o.lame_duck_duration)})")
    with collect:
        js = c.get("jetstream")
    with collect:
        if isinstance(js, dict):
            o.jetstream = True
            if "enabled" in js:
                if not isinstance(js["enabled"], bool):
                    raise problem(js, "enabled", f"Expected 'true' or 'false' for bool value, got '{js['enabled']}'")
                o.jetstream = js["enabled"]
            if "disabled" in js:
                if not isinstance(js["disabled"], bool):
                    raise problem(js, "disabled", f"Expected 'true' or 'false' for bool value, got '{js['disabled']}'")
                o.jetstream = not js["disabled"]
            if "strict" in js:
                if not isinstance(js["strict"], bool):
                    raise problem(js, "strict", f"Expected 'true' or 'false' for bool value, got '{js['strict']}'")
                o.js_strict = js["strict"]
            if "store_dir" in js:
                o.store_dir = string(js, "store_dir", at=(c, "jetstream"))  # (the panic: at the block's key)
            for key, attr in (("max_memory_store", "js_max_memory"), ("max_file_store", "js_max_store")):
                if key in js:
                    from .internal import jetstream

                    try:
                        setattr(o, attr, jetstream().storage_size(js[key]))
                    except jetstream().LimitsConfigError as e:
                        raise problem(js, key, f"{key.replace('memory', 'mem')} {e}") from None
            if "max_buffered_size" in js:  # (getStorageSize, as the store limits)
                from .internal import jetstream

                try:
                    o.js_max_buffered_size = jetstream().storage_size(js["max_buffered_size"])
                except jetstream().LimitsConfigError as e:
                    raise problem(js, "max_buffered_size", f"max_buffered_size {e}") from None
            if "max_buffered_msgs" in js:
                v = js["max_buffered_msgs"]
                if isinstance(v, bool) or not isinstance(v, int):
                    shown = str(v).lower() if isinstance(v, bool) else v  # (Go's %v)
                    raise problem(js, "max_buffered_msgs", f'Expected a parseable size for "max_buffered_msgs", '
                                                           f'got {shown}')
                o.js_max_buffered_msgs = v
            if "limits" in js and not isinstance(js["limits"], dict):
                raise problem(js, "limits", f"Expected a map to define JetStreamLimits, got {go_type(js['limits'])}")
            if "domain" in js:
                string(js, "domain", at=(c, "jetstream"))
            if js.get("domain"):
                from .internal import jetstream

                try:
                    o.js_domain = jetstream().check_domain(str(js["domain"]))
                except ConfigError as e:  # (validateOptions)
                    raise OptionsError(str(e)) from None
            si = js.get("sync_interval")
            if si is not None:
                if str(si).lower() == "always":
                    o.sync_always = True
                else:
                    parse_duration_warning(js, "sync_interval")
                    o.sync_interval = duration(js, "sync_interval",
                                               f"error parsing {js.written.get('sync_interval', 'sync_interval')}: {{}}")
            batch = (js.get("limits") or {}).get("batch") or {}
            for key, v in batch.items():  # (nats-server's v.(int64) panics: at the jetstream key)
                if key != "timeout" and (isinstance(v, bool) or not isinstance(v, int)):
                    raise problem(c, "jetstream", f"interface conversion: interface {{}} is {go_type(v)}, not int64")
            for key, attr in (("max_inflight_per_stream", "batch_max_inflight_per_stream"),
                              ("max_inflight_total", "batch_max_inflight_total"), ("max_msgs", "batch_max_msgs")):
                if int(batch.get(key) or 0) > 0:  # as in nats-server, 0 keeps the default
                    setattr(o, attr, int(batch[key]))
            if batch.get("timeout"):  # (v.(string): the panic at the jetstream key; its parse error has no place)
                o.batch_timeout = duration(batch, "timeout", numbers=(),
                                           at=(None, None) if isinstance(batch["timeout"], str) else (c, "jetstream"))
        elif isinstance(js, str):
            # as nats-server: "enabled" / "disabled" (any case), or nothing
            if js.lower() not in ("enabled", "enable", "disabled", "disable"):
                raise problem(c, "jetstream", f"Expected 'enabled' or 'disabled' for string value, got '{js}'")
            o.jetstream = js.lower() in ("enabled", "enable")
        elif js is not None:
            o.jetstream = bool(js)



def _go_dur(seconds: float) -> str:
    from .gowire import go_duration as text

    return text(round(seconds * 1e9))


def _position(line: str) -> tuple:
    """An error line's place (file, line, column) for the order of the
    report; one without a place comes last."""
    m = re.match(r"(.*?):(\d+):(\d+): ", line)
    return (0, m.group(1), int(m.group(2)), int(m.group(3))) if m else (1, "", 0, 0)


class _Collect:
    """``with collect:`` around the handling of one key: its problem is
    noted and the next key handled (nats-server's processConfigFileLine
    collects errors the same way)."""

    def __init__(self, path: str, errors: list[str], after: list[str]):
        self.path, self.errors, self.after = path, errors, after

    def __enter__(self):
        return self

    def __exit__(self, typ, e, tb) -> bool:
        if typ is None:
            return False
        if issubclass(typ, OptionsError):  # (a check of validateOptions: apart, for the start only)
            self.after.append(str(e))
            return True
        if issubclass(typ, ConfigFileError):
            self.errors += str(e).split("\n")
            return True
        if issubclass(typ, (TypeError, ValueError)):
            # (nats-server's text as it is: at its place when it has one, else bare, as its
            # checks of the options after the file give theirs)
            self.errors += str(e).split("\n")
            return True
        return False

class _NatsFormatter(logging.Formatter):
    _LEVELS = {5: "TRC", logging.DEBUG: "DBG", logging.INFO: "INF", logging.WARNING: "WRN",
               logging.ERROR: "ERR", logging.CRITICAL: "FTL"}

    def __init__(self, logtime: bool = True, utc: bool = False):
        super().__init__()
        self.logtime, self.utc = logtime, utc

    def format(self, record: logging.LogRecord) -> str:
        msg = record.getMessage()
        if record.exc_info:
            msg += "\n" + self.formatException(record.exc_info)
        level = self._LEVELS.get(record.levelno, "INF")
        if not self.logtime:  # logtime: false, as nats-server writes it
            return f"[{os.getpid()}] [{level}] {msg}"
        t = (time.gmtime if self.utc else time.localtime)(record.created)
        stamp = time.strftime("%Y/%m/%d %H:%M:%S", t) + f".{int((record.created % 1) * 1e6):06d}"
        return f"[{os.getpid()}] {stamp} [{level}] {msg}"


def setup_logging(log_file: str | None = None, debug: bool = False, trace: bool = False,
                  logtime: bool = True, logtime_utc: bool = False) -> None:
    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(_NatsFormatter(logtime, logtime_utc))
    root = logging.getLogger("natslab.server")
    root.handlers[:] = [handler]
    root.setLevel(5 if trace else logging.DEBUG if debug else logging.INFO)
    root.propagate = False


class _SignalLatch:
    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.name = ""

    def set(self, name: str) -> None:
        self.name = self.name or name
        self._event.set()

    async def wait(self) -> str:
        await self._event.wait()
        return self.name


async def serve(opts: ServerOptions, pid_file: str | None = None, listener=None) -> int:
    srv = Server(opts)
    # handlers first: a signal during start-up still shuts down cleanly
    stop = _SignalLatch()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, stop.set, "interrupt")
    ldm_task = None

    def on_term() -> None:
        if srv.ldm:  # nats-server lets lame duck mode finish
            srv.logger.info('Trapped "terminated" signal')
        else:
            stop.set("terminated")

    def on_usr2() -> None:
        nonlocal ldm_task
        srv.logger.info('Trapped "user defined signal 2" signal')
        if ldm_task is None:
            ldm_task = loop.create_task(lame_duck(srv))
            ldm_task.add_done_callback(lambda _t: stop.set(""))

    loop.add_signal_handler(signal.SIGTERM, on_term)
    loop.add_signal_handler(signal.SIGUSR2, on_usr2)
    await srv.start(listener=listener)
    if pid_file:
        Path(pid_file).write_text(str(os.getpid()))
    ports_file = write_ports_file(srv) if opts.ports_file_dir else None
    signame = await stop.wait()
    if signame:
        srv.logger.info('Trapped "%s" signal', signame)
    srv.logger.info("Initiating Shutdown...")
    await srv.stop()
    for path in (pid_file, ports_file):
        if path:
            try:
                os.unlink(path)
            except OSError as e:
                if path == ports_file:
                    srv.logger.error("Error cleaning up ports file %s: %s", path, e)
    return 0


def write_ports_file(srv) -> str | None:
    """ports_file_dir: ``<dir>/natslab_<pid>.ports``, the listeners' URLs as
    JSON, as nats-server's logPorts writes ``nats-server_<pid>.ports`` (a
    listener on every address is named by this host's addresses)."""
    o = srv.opts
    path = os.path.join(o.ports_file_dir, f"natslab_{os.getpid()}.ports")

    def urls(scheme: str, host: str, port: int) -> list[str]:
        hosts = [host]
        if host in ("", "0.0.0.0", "::"):
            import socket

            hosts = sorted({ai[4][0] for ai in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
                           | {"127.0.0.1"})
        return [f"{scheme}://{h}:{port}" for h in hosts]

    ports = {"nats": urls("tls" if srv.tls_context is not None else "nats", o.host, srv.port)}
    if srv.monitor is not None:
        ports["monitoring"] = urls("https" if o.https_port else "http", o.http_host or o.host, srv.monitor.port)
    if srv.websocket is not None:
        ws = srv.websocket
        ports["websocket"] = urls("wss" if getattr(ws.opts, "tls", None) is not None else "ws", ws.host, ws.port)
    try:
        with open(path, "w") as f:
            json.dump(ports, f, separators=(",", ":"))
    except OSError as e:
        srv.logger.error("Error writing ports file (%s): %s", path, e)
        return None
    return path


def check_loads(opts: ServerOptions) -> None:
    """-t: what nats-server's option parsing loads besides the file (the
    certificates and keys of the tls blocks), loaded here as the start
    would load them; a file that does not load is the start's error."""
    try:
        for tls in (opts.tls, getattr(opts.websocket, "tls", None)):
            if tls is not None:
                tls.context()
    except ConfigError as e:
        raise ConfigFileError(str(e)) from None


def main(argv: list[str] | None = None, listener=None) -> int:
    """``listener``: the client socket flags.listen_early bound for these
    arguments, if it did."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _main(argv, listener)
    finally:
        if listener is not None:
            listener.close()  # (a start that ended before serving on it: refused from now on)


def _main(argv: list[str], listener) -> int:
    try:
        flags = parse_args(argv)
        if flags.get("help"):
            print(USAGE)
            return 0
        if flags.get("version"):
            print(f"natslab server: v{NATS_VERSION} (natslab)")
            return 0
        if "signal" in flags:
            return send_signal(flags["signal"], flags.get("pid"))
        if flags.get("check_config") and not flags.get("config"):
            raise ConfigFileError("must specify [-c, --config] option to check configuration file syntax")
        opts = build_options(flags)
        if listener is not None and not early_listener_fits(listener, opts.host, opts.port):
            listener.close()  # (not where these options listen: the start binds its own)
            listener = None
        if flags.get("check_config"):
            check_loads(opts)
            # (nats-server adds a sha256 digest of its parsed tree; natslab has no such digest)
            print(f"natslab server: configuration file {flags['config']} is valid", file=sys.stderr)
            return 0
    except UsageError as e:
        print(f"natslab server: {e}\n", file=sys.stderr)
        print(USAGE, file=sys.stderr)
        return 2
    except ConfigFileError as e:
        print(f"natslab server: {e}\n", file=sys.stderr)
        return 1
    setup_logging(flags.get("log"), bool(flags.get("debug") or flags.get("debug_trace")),
                  bool(flags.get("trace") or flags.get("debug_trace")), opts.logtime, opts.logtime_utc)
    for name in dict.fromkeys(opts.unused_config):  # once each
        logging.getLogger("natslab.server").warning("%s is not used by natslab (a single node): ignored", name)
    try:
        return asyncio.run(serve(opts, flags.get("pid"), listener))
    except ConfigError as e:  # e.g. a certificate that does not load
        print(f"natslab server: {e}", file=sys.stderr)
        return 1
    except StartFailed:  # (logged, as nats-server's fatal log line)
        return 1
    except OSError as e:
        logging.getLogger("natslab.server").critical("Error listening on port: %s", e)
        return 1
    except KeyboardInterrupt:
        return 0


# nats-server's --signal commands
_SIGNALS = {"stop": signal.SIGKILL, "quit": signal.SIGINT, "term": signal.SIGTERM,
            "reopen": signal.SIGUSR1, "reload": signal.SIGHUP, "ldm": signal.SIGUSR2}


def send_signal(spec: str, pid_file: str | None) -> int:
    """``--signal <command>[=<pid|pidfile>]``: signal a running server and
    exit, as ``nats-server --signal``. Without a pid the -P file is read
    (nats-server would look for a single nats-server process instead)."""
    command, _, target = spec.partition("=")
    if "=" in target:
        print(f"natslab server: invalid signal parameters: {target.split('=')[1:]}", file=sys.stderr)
        return 1
    sig = _SIGNALS.get(command)
    if sig is None:
        print(f'natslab server: unknown signal "{command}"', file=sys.stderr)
        return 1
    target = target or pid_file or ""
    if not target:
        print("natslab server: unable to resolve pid, try providing one", file=sys.stderr)
        return 1
    try:
        target = Path(target).read_text().strip()  # a PID file, as nats-server allows
    except OSError:
        pass
    try:
        pid = int(target)
    except ValueError:
        print(f"natslab server: invalid pid: {target}", file=sys.stderr)
        return 1
    try:
        os.kill(pid, sig)
    except OSError as e:
        print(f'natslab server: signal "{command}" {pid}: {e.strerror or e}', file=sys.stderr)
        return 1
    return 0
