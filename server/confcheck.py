"""The configuration file checked key by key as nats-server checks it.

Every block natslab reads has a table of the keys nats-server 2.15 knows
there (with its aliases, matched case-insensitively as nats-server matches
them): each names the key natslab applies it as, or ``None`` when natslab
does not implement it. A key nats-server does not know is nats-server's
error (``unknown field "x"``, or the permissions blocks' own wording); a key
it knows that natslab does not serve stops the start-up too (``"jetstream.
domain" is not supported by natslab``) rather than being ignored, so a
client never meets a broker configured other than its file says. ``check``
returns the file with aliases resolved to one spelling, for ``cli`` to
apply, or raises ``ConfigError`` with every problem as
``<file>:<line>:<column>: <what>``, one a line, in file order.
"""

from __future__ import annotations

import re

from . import confnodes
from .conf import ConfigError, ConfList, ConfMap, config_duration, go_type, go_value, item_where

UNKNOWN = 'unknown field "{}"'


class Block:
    """The keys of one block: ``keys[alias] = natslab's name or None``;
    ``children[natslab's name]``: the block checked inside that key's value
    (a map, or each map of a list)."""

    def __init__(self, keys: dict[str, str | None], children: dict[str, "Block"] | None = None,
                 unknown: str = UNKNOWN, each: "Block | None" = None, keep_case: bool = False,
                 in_lists: bool = True):
        self.keys = keys
        self.in_lists = in_lists  # also checked in each map of a list (users [...]); else only as a value
        self.keep_case = keep_case  # keys stay as written (their reader names them in its errors)
        self.children = children or {}
        self.unknown = unknown
        self.each = each  # a block of names (accounts {}): every key's map is checked as ``each``


def _known(*names: str) -> dict[str, None]:
    """Keys nats-server knows and natslab does not implement."""
    return dict.fromkeys(names)


def _alias(name: str, *aliases: str) -> dict[str, str]:
    return {a: name for a in (name, *aliases)}


UNUSED = "~"  # the value of a key natslab accepts and has no use for on one node


def _unused(*names: str) -> dict[str, str]:
    """Keys that only mean something to a cluster, a gateway, a leafnode or
    MQTT: accepted (a production file runs unchanged) and logged once each."""
    return dict.fromkeys(names, UNUSED)


SUBJECT_PERMISSION = Block(
    {**_alias("allow"), **_alias("deny")},
    unknown="Unknown field name \"{}\" parsing subject permissions, only 'allow' or 'deny' are permitted",
    in_lists=False)  # (a map in a list of subjects is no permission block: "cannot be cast to string")

PERMISSIONS = Block(
    {**_alias("publish", "pub", "import"), **_alias("subscribe", "sub", "export"),
     **_alias("publish_allow_responses"), **_alias("allow_responses")},
    {"publish": SUBJECT_PERMISSION, "subscribe": SUBJECT_PERMISSION},
    unknown='Unknown field "{}" parsing permissions')

USER = Block(
    {**_alias("user", "username"), **_alias("password", "pass"),
     **_alias("permissions", "permission", "authorization"),
     **_alias("nkey"), **_alias("allowed_connection_types"), **_alias("connection_types"), **_alias("clients"),
     **_known("proxy_required")},
    {"permissions": PERMISSIONS})

AUTHORIZATION = Block(
    {**_alias("user", "username"), **_alias("password", "pass"), **_alias("token"), **_alias("timeout"),
     **_alias("users"), **_alias("default_permissions", "default_permission", "permissions"),
     **_known("auth_callout", "auth_hook", "proxy_required")},
    {"users": USER, "default_permissions": PERMISSIONS})

# accounts { NAME { limits { ... } } } (nats-server's parseAccountLimits)
ACCOUNT_LIMITS = Block(
    {**_alias("max_connections", "max_conn"), **_alias("max_subscriptions", "max_subs"),
     **_alias("max_payload", "max_pay"), **_unused("max_leafnodes", "max_leafs")},
    unknown='Unknown field "{}" parsing account limits')

# accounts { NAME { jetstream { ... } } } (nats-server's parseJetStreamForAccount; jetstream/limits.py
# reads the values): an unknown key is reported at its place with the file's others
ACCOUNT_JETSTREAM = Block({k: k for k in ("max_memory", "max_mem", "mem", "memory", "max_store", "max_file", "max_disk", "store", "disk",
     "max_streams", "streams", "max_consumers", "consumers", "max_bytes_required", "max_stream_bytes", "max_bytes",
     "mem_max_stream_bytes", "memory_max_stream_bytes", "disk_max_stream_bytes", "store_max_stream_bytes",
     "max_ack_pending", "cluster_traffic")}, keep_case=True)

# accounts { NAME { exports [...], imports [...] } } (parseExportStreamOrService,
# parseImportStreamOrService): an unknown key of an entry is refused at its place
ACCOUNT_EXPORT = Block({k: k for k in (
    "stream", "service", "response", "response_type", "threshold", "response_threshold", "response_max_time",
    "response_time", "accounts", "latency", "account_token_position", "allow_trace")}, keep_case=True)
ACCOUNT_IMPORT = Block({k: k for k in ("stream", "service", "prefix", "to", "share", "allow_trace")},
                       keep_case=True)

# accounts { NAME { ... } } (accounts.py reads what is in them)
ACCOUNT = Block(
    {**_alias("users"), **_alias("imports"), **_alias("exports"), **_alias("jetstream"),
     **_alias("default_permissions"), **_alias("nkey"), **_alias("limits"),
     **_alias("mappings", "maps"), **_known("msg_trace", "trace_dest")},
    {"users": USER, "default_permissions": PERMISSIONS, "limits": ACCOUNT_LIMITS, "jetstream": ACCOUNT_JETSTREAM,
     "exports": ACCOUNT_EXPORT, "imports": ACCOUNT_IMPORT})

ACCOUNTS = Block({}, each=ACCOUNT)

JETSTREAM_BATCH = Block(
    {**_alias("max_inflight_per_stream"), **_alias("max_inflight_total"), **_alias("max_msgs"), **_alias("timeout")})

JETSTREAM_LIMITS = Block(
    {**_alias("batch"), **_unused("max_ha_assets"),  # (replicated assets: none on one node)
     **_known("max_ack_pending", "max_request_batch", "duplicate_window")},
    {"batch": JETSTREAM_BATCH})

JETSTREAM = Block(
    {**_alias("store_dir", "store", "storedir"), **_alias("sync_interval", "sync"),
     **_alias("enabled", "enable"), **_alias("limits"), **_alias("domain"),
     **_alias("max_memory_store", "max_mem_store", "max_mem"), **_alias("max_file_store", "max_file"),
     **_alias("strict"), **_alias("disabled", "disable"),
     **_alias("max_buffered_size"), **_alias("max_buffered_msgs"),
     **_unused("unique_tag", "max_outstanding_catchup",
               "meta_compact", "meta_compact_size", "meta_compact_sync",
               # queues and I/O concurrency of nats-server's own: natslab serves each API request as it
               # comes, from one thread, so there is no queue to bound
               "request_queue_limit", "info_queue_limit", "max_concurrent_io", "extension_hint"),
     **_known("key", "ek", "encryption_key", "prev_key", "prev_ek", "prev_encryption_key", "cipher", "tpm")},
    {"limits": JETSTREAM_LIMITS})

TOP = Block(
    {**_alias("listen"), **_alias("port"), **_alias("host", "net"), **_alias("server_name"),
     **_alias("http"), **_alias("http_port", "monitor_port"), **_alias("https"), **_alias("https_port"), **_alias("max_payload"), **_alias("max_pending"),
     **_alias("max_connections", "max_conn"), **_alias("ping_interval"), **_alias("ping_max"),
     **_alias("authorization"), **_alias("jetstream"), **_alias("store_dir", "storedir"),
     **_alias("debug"), **_alias("trace"), **_alias("logfile", "log_file"), **_alias("pidfile", "pid_file"),
     # blocks whose own parsers check their keys (tls.py, websocket.py, accounts.py)
     **_alias("tls"), **_alias("websocket", "ws"), **_alias("accounts"), **_alias("no_auth_user"),
     **_alias("system_account", "system"),
     **_alias("lame_duck_duration"), **_alias("lame_duck_grace_period"),
    # operator mode (server/resolver.py)
    **_alias("operator", "operators", "roots", "root", "root_operators", "root_operator"),
    **_alias("resolver", "account_resolver", "accounts_resolver"), **_alias("resolver_preload"),
    **_alias("resolver_pinned_accounts"), **_alias("trusted", "trusted_keys"),
     **_alias("allow_non_tls"), **_alias("max_control_line"), **_alias("max_subs", "max_subscriptions"), **_alias("write_deadline"),
     **_unused("cluster", "gateway", "leaf", "leafnodes", "mqtt", "connect_error_reports", "reconnect_error_reports",
               "default_js_domain",
               # where the log goes, profiling, metadata and flags no client sees the effect of:
               # accepted (nats-server's own test.conf has them all) and logged once each
               "syslog", "remote_syslog", "prof_port", "prof_block_rate", "server_metadata", "feature_flags",
               "http_base_path", "max_traced_msg_len", "logfile_size_limit", "log_size_limit",
               "logfile_max_num", "log_max_num"),
     **_alias("logtime"), **_alias("logtime_utc"), **_alias("no_system_account", "no_system", "no_sys_acc"),
     **_alias("mappings", "maps"), **_alias("client_advertise"), **_alias("trace_verbose"), **_alias("trace_headers"),
     **_alias("max_sub_tokens", "max_subscription_tokens"), **_alias("no_header_support"),
     **_alias("server_tags"), **_alias("max_closed_clients"),
     # the subject index's match cache is natslab's own and no client sees whether it is on
     **_unused("disable_sublist_cache", "no_sublist_cache"),
     **_alias("ports_file_dir"), **_alias("write_timeout"),
     **_known("default_sentinel",
              "proxy_protocol", "ocsp",
              "resolver_tls",
              "ocsp_cache",
              "no_fast_producer_stall", "proxies",
              # the parser's include directive, read here as a key
              "include")},
    {"authorization": AUTHORIZATION, "jetstream": JETSTREAM, "accounts": ACCOUNTS})


def check(conf: ConfMap, source: str, report: list[str] | None = None) -> ConfMap:
    """The file's settings under natslab's names; ConfigError listing every
    unknown or unsupported key (``source``: the file's name as given). The
    result's ``unused``: the keys accepted and not used (``cluster``,
    ``jetstream.unique_tag``), in file order, for the log."""
    problems: list[tuple] = []
    unused: list[tuple] = []
    warnings: list[str] = []
    out = _check(conf, TOP, "", problems, unused, source, warnings)
    out.warnings = warnings  # (nats-server's warnings about the blocks confnodes checks: the caller reports them)
    if problems and report is not None:  # (the caller reports them with its own)
        problems.sort()
        report += [f"{where}: {what}" if where else what for _, where, what in problems]
    elif problems:
        problems.sort()
        raise ConfigError("\n".join(f"{where}: {what}" if where else what for _, where, what in problems))
    out.unused = [name for _, name in sorted(unused)]
    return out


def _check(conf: ConfMap, block: Block, path: str, problems: list, unused: list, source: str,
           warnings: list | None = None) -> ConfMap:
    out = ConfMap()
    out.file = conf.file or source
    out.end = conf.end
    for key, value in conf.items():
        where = conf.where(key, source)
        order = (conf.files.get(key, ""),) + conf.pos.get(key, (0, 0))
        if block.each is not None:  # a name, not a key: its block is checked
            if isinstance(value, ConfMap) and key not in conf.used:
                value = _check(value, block.each, f"{path}{key}.", problems, unused, source)
            out[key] = value
            out.pos[key] = conf.pos.get(key, (0, 0))
            continue
        name = block.keys.get(key.lower(), KeyError)
        if name is KeyError:
            if key not in conf.used:  # (a key a $variable named is no field: nats-server lets it be)
                problems.append((order, where, block.unknown.format(key)))
            continue
        if name is None:
            problems.append((order, where, f'"{path}{key.lower()}" is not supported by natslab'))
            continue
        if name == UNUSED:
            unused.append((order, f"{path}{key.lower()}"))
            if not path and key.lower() in confnodes.BLOCKS:  # (their values checked as nats-server checks them)
                rep = confnodes.check_block(key, value, where, source)
                for line in rep.errors:
                    m = re.match(r"(.*?):(\d+):(\d+): (.*)", line, re.S)
                    problems.append(((m.group(1), int(m.group(2)), int(m.group(3))), line[:m.end(3)], m.group(4))
                                    if m else (("\uffff", 0, 0), "", line))  # (no place: nats-server gives none)
                if warnings is not None:
                    warnings += rep.warnings
            continue
        child = block.children.get(name)
        if child is not None:
            sub = f"{path}{name}."
            if isinstance(value, ConfMap):
                value = _check(value, child, sub, problems, unused, source)
            elif isinstance(value, list) and child.in_lists:
                checked = [_check(v, child, sub, problems, unused, source) if isinstance(v, ConfMap) else v
                           for v in value]
                value = value.like(checked) if isinstance(value, ConfList) else checked
        if block.keep_case:
            name = key
        out[name] = value
        out.pos[name] = conf.pos.get(key, (0, 0))
        out.written[name] = key
        if key in conf.files:
            out.files[name] = conf.files[key]
    return out


# -- users and their permissions (nats-server's parseUsers, parseUserPermissions, parsePermSubjects)

def _valid_subject(s: str) -> bool:
    """nats-server's IsValidSubject (what a permission may name)."""
    if not s:
        return False
    tokens = s.split(".")
    for i, t in enumerate(tokens):
        if not t or any(c in t for c in " \t\n\r\f") or (t == ">" and i != len(tokens) - 1):
            return False
    return True


def _perm_subjects_problem(v, queue: bool, key_at: str, placed: bool) -> str | None:
    """parsePermSubjects: a subject or a list of them, each valid (for
    subscribe also "subject queue"). ``key_at``: the place of the value's
    key; ``placed``: whether nats-server names it for errors about the value
    (an allow/deny list) or names none (a list given directly). An element
    that is not a string is placed at the element."""
    where = f"{key_at}: " if placed else ""
    if isinstance(v, str):
        subjects = [v]
    elif isinstance(v, list):
        for i, x in enumerate(v):
            if not isinstance(x, str):
                return f"{item_where(v, i, key_at)}: Subject in permissions array cannot be cast to string"
        subjects = v
    else:
        return f"{where}Expected subject permissions to be a subject, or array of subjects, got {go_type(v)}"
    for subj in subjects:
        if _valid_subject(subj):
            continue
        parts = subj.split()
        if not queue or len(parts) != 2 or not _valid_subject(parts[0]):
            return f'{where}subject "{parts[0] if queue and len(parts) == 2 else subj}" is not a valid subject'
        if not _valid_subject(parts[1]):
            return f'{where}queue "{parts[1]}" is not a valid queue'
    return None


def permissions_problems(perms: ConfMap) -> list[str]:
    """A user's (or an account's default) publish/subscribe permissions,
    refused as nats-server refuses them: an ``allow``/``deny`` list at its
    key, a list given directly without a place (nats-server has none for
    it), an element that is not a string at the element."""
    out = []
    for key in ("publish", "subscribe"):
        v = perms.get(key)
        if v is None:
            continue
        queue = key == "subscribe"
        if isinstance(v, ConfMap):
            for k in ("allow", "deny"):
                if k in v:
                    why = _perm_subjects_problem(v[k], queue, v.where(k), True)
                    if why:
                        out.append(why)
            continue
        why = _perm_subjects_problem(v, queue, perms.where(key), False)
        if why:
            out.append(why)
    for key in ("allow_responses", "publish_allow_responses"):  # (parseAllowResponses)
        v = perms.get(key)
        if v is None or isinstance(v, bool):
            continue
        if not isinstance(v, ConfMap):
            out.append(f"{perms.where(key)}: error parsing response permissions, expected a boolean or a map")
            continue
        for k, x in v.items():
            low = k.lower()
            if low in ("max", "max_msgs", "max_messages", "max_responses"):
                if isinstance(x, bool) or not isinstance(x, int):  # (v.(int64): the panic, at the key)
                    out.append(f"{v.where(k)}: interface conversion: interface {{}} is {go_type(x)}, not int64")
            elif low in ("expires", "expiration", "ttl"):
                try:
                    config_duration(x, "error parsing expires: {}", (), "error parsing expires, not a duration string")
                except ConfigError as e:
                    out.append(f"{v.where(k)}: {e}")
            elif k not in v.used:
                out.append(f'{v.where(k)}: Unknown field "{k}" parsing permissions')
    return out


def _string_array(field: str, v, where: str, problems: list[str]) -> list[str] | None:
    """nats-server's parseStringArray: a string or a list of strings; an
    element of another type is an error at the element, a value of another
    type at the key (``where``)."""
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        out = []
        for i, x in enumerate(v):
            if isinstance(x, str):
                out.append(x)
            else:
                problems.append(f"{item_where(v, i, where)}: error parsing {field}: unsupported type in array "
                                f"{go_type(x)}")
        return out
    problems.append(f"{where}: error parsing {field}: unsupported type {go_type(v)}")
    return None


def user_problems(users: list) -> list[str]:
    """The entries of a ``users`` array (authorization's or an account's),
    checked as nats-server's parseUsers checks them, each problem at its
    place: an entry that is not a map at the entry, the rest at their keys
    (or elements)."""
    from .auth import CONNECTION_TYPES

    problems: list[str] = []
    for i, u in enumerate(users):
        if not isinstance(u, dict):
            problems.append(f"{item_where(users, i)}: Expected user entry to be a map/struct, got {go_value(u)}")
            continue
        if not isinstance(u, ConfMap):
            continue
        perms = u.get("permissions")
        if perms is not None and not isinstance(perms, dict):
            problems.append(f"{u.where('permissions')}: Expected permissions to be a map/struct, got {go_value(perms)}")
        elif isinstance(perms, ConfMap):
            problems += permissions_problems(perms)
        for key in [k for k in u if str(k).lower() in ("allowed_connection_types", "connection_types", "clients")]:
            cts = _string_array("allowed connection types", u[key], u.where(key), problems)
            unknown = [ct.upper() for ct in cts or () if ct.upper() not in CONNECTION_TYPES]
            if unknown:  # (convertAllowedConnectionTypes, Go's %q of the list)
                problems.append(f"{u.where(key)}: invalid connection types [" + " ".join(f'"{ct}"' for ct in unknown)
                                + "]")
    return problems
