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

from .conf import ConfigError, ConfMap

UNKNOWN = 'unknown field "{}"'


class Block:
    """The keys of one block: ``keys[alias] = natslab's name or None``;
    ``children[natslab's name]``: the block checked inside that key's value
    (a map, or each map of a list)."""

    def __init__(self, keys: dict[str, str | None], children: dict[str, "Block"] | None = None,
                 unknown: str = UNKNOWN):
        self.keys = keys
        self.children = children or {}
        self.unknown = unknown


def _known(*names: str) -> dict[str, None]:
    """Keys nats-server knows and natslab does not implement."""
    return dict.fromkeys(names)


def _alias(name: str, *aliases: str) -> dict[str, str]:
    return {a: name for a in (name, *aliases)}


SUBJECT_PERMISSION = Block(
    {**_alias("allow"), **_alias("deny")},
    unknown="Unknown field name \"{}\" parsing subject permissions, only 'allow' or 'deny' are permitted")

PERMISSIONS = Block(
    {**_alias("publish", "pub", "import"), **_alias("subscribe", "sub", "export"),
     **_known("publish_allow_responses", "allow_responses")},
    {"publish": SUBJECT_PERMISSION, "subscribe": SUBJECT_PERMISSION},
    unknown='Unknown field "{}" parsing permissions')

USER = Block(
    {**_alias("user", "username"), **_alias("password", "pass"),
     **_alias("permissions", "permission", "authorization"),
     **_alias("nkey"), **_known("allowed_connection_types", "connection_types", "clients", "proxy_required")},
    {"permissions": PERMISSIONS})

AUTHORIZATION = Block(
    {**_alias("user", "username"), **_alias("password", "pass"), **_alias("token"), **_alias("timeout"),
     **_alias("users"),
     **_known("default_permission", "default_permissions", "permissions", "auth_callout", "auth_hook",
              "proxy_required")},
    {"users": USER})

JETSTREAM_BATCH = Block(
    {**_alias("max_inflight_per_stream"), **_alias("max_inflight_total"), **_alias("max_msgs"), **_alias("timeout")})

JETSTREAM_LIMITS = Block(
    {**_alias("batch"), **_known("max_ack_pending", "max_ha_assets", "max_request_batch", "duplicate_window")},
    {"batch": JETSTREAM_BATCH})

JETSTREAM = Block(
    {**_alias("store_dir", "store", "storedir"), **_alias("sync_interval", "sync"),
     **_alias("enabled", "enable"), **_alias("limits"), **_alias("domain"),
     **_alias("max_memory_store", "max_mem_store", "max_mem"), **_alias("max_file_store", "max_file"),
     **_known("strict",
              "key", "ek", "encryption_key", "prev_key", "prev_ek", "prev_encryption_key", "cipher",
              "extension_hint", "tpm", "unique_tag", "max_outstanding_catchup", "max_buffered_size",
              "max_buffered_msgs", "request_queue_limit", "info_queue_limit", "meta_compact", "meta_compact_size",
              "meta_compact_sync", "max_concurrent_io")},
    {"limits": JETSTREAM_LIMITS})

TOP = Block(
    {**_alias("listen"), **_alias("port"), **_alias("host", "net"), **_alias("server_name"),
     **_alias("http"), **_alias("http_port", "monitor_port"), **_alias("max_payload"), **_alias("max_pending"),
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
     **_known("client_advertise", "trace_verbose", "trace_headers", "logtime", "logtime_utc", "mappings", "maps",
              "disable_sublist_cache", "no_sublist_cache", "default_sentinel", "https", "https_port",
              "http_base_path", "cluster", "gateway", "leaf", "leafnodes", "logfile_size_limit", "log_size_limit",
              "logfile_max_num", "log_max_num", "syslog", "remote_syslog", "ports_file_dir", "prof_port",
              "prof_block_rate", "max_control_line", "proxy_protocol", "max_traced_msg_len", "max_subscriptions",
              "max_subs", "max_sub_tokens", "max_subscription_tokens", "ocsp", "allow_non_tls",
              "write_deadline", "write_timeout",
              "resolver_tls", "resolver_pinned_accounts",
              "no_system_account", "no_system", "no_sys_acc", "no_header_support",
              "trusted", "trusted_keys", "connect_error_reports", "reconnect_error_reports",
              "mqtt", "server_tags", "server_metadata", "feature_flags", "default_js_domain", "ocsp_cache",
              "no_fast_producer_stall", "max_closed_clients", "proxies",
              # the parser's include directive, read here as a key
              "include")},
    {"authorization": AUTHORIZATION, "jetstream": JETSTREAM})


def check(conf: ConfMap, source: str) -> ConfMap:
    """The file's settings under natslab's names; ConfigError listing every
    unknown or unsupported key (``source``: the file's name as given)."""
    problems: list[tuple[int, int, str]] = []
    out = _check(conf, TOP, "", problems)
    if problems:
        problems.sort()
        raise ConfigError("\n".join(f"{source}:{line}:{col}: {what}" for line, col, what in problems))
    return out


def _check(conf: ConfMap, block: Block, path: str, problems: list) -> ConfMap:
    out = ConfMap()
    for key, value in conf.items():
        line, col = conf.pos.get(key, (0, 0))
        name = block.keys.get(key.lower(), KeyError)
        if name is KeyError:
            problems.append((line, col, block.unknown.format(key)))
            continue
        if name is None:
            problems.append((line, col, f'"{path}{key.lower()}" is not supported by natslab'))
            continue
        child = block.children.get(name)
        if child is not None:
            where = f"{path}{name}."
            if isinstance(value, ConfMap):
                value = _check(value, child, where, problems)
            elif isinstance(value, list):
                value = [_check(v, child, where, problems) if isinstance(v, ConfMap) else v for v in value]
        out[name] = value
        out.pos[name] = (line, col)
    return out
