"""ConsumerConfig: defaults (setConsumerConfigDefaults), validation
(checkConsumerCfg) and the update rules of the real server. Configs are plain
dicts keyed by the JSON field names."""

from __future__ import annotations

import re
from typing import Callable

from .. import errors
from ..names import MAX_DESCRIPTION_LEN, byte_len, is_valid_asset_name
from ...gowire import go_duration
from ..shapes import CONSUMER_CONFIG_KEYS, NS, parse_rfc3339
from ...subjects import is_literal, is_subset, subjects_overlap, valid_config_subject

DEFAULT_ACK_WAIT = 30 * NS
DEFAULT_MAX_ACK_PENDING = 1000
DEFAULT_MAX_WAITING = 512
DEFAULT_INACTIVE_THRESHOLD = 5 * NS


def is_pull(cfg: dict) -> bool:
    return not cfg.get("deliver_subject")


def filters_of(cfg: dict) -> list[str]:
    if cfg.get("filter_subjects"):
        return list(cfg["filter_subjects"])
    if cfg.get("filter_subject"):
        return [cfg["filter_subject"]]
    return []


FLOW_CONTROL_HEARTBEAT = NS  # nats-server's sourceHealthHB: the only heartbeat an ack_policy flow_control consumer has


def required_api_level(cfg: dict, paused: bool) -> str:
    """setStaticConsumerMetadata's _nats.req.level: 1 for a pause, 4 for
    ack_policy flow_control (2.14)."""
    if cfg.get("ack_policy") == "flow_control":
        return "4"
    return "1" if paused else "0"


def normalize(raw: dict, stream_cfg: dict, durable: bool, account_max_ack_pending: int = -1) -> dict:
    """Defaults and validation; raises ApiError. ``raw`` is the config as
    gojson decoded it (types and enum spellings already checked);
    ``account_max_ack_pending``: the account's JetStream limit (-1: none)."""
    cfg = {k: v for k, v in raw.items() if k in CONSUMER_CONFIG_KEYS and v not in (None, "", [], {})}
    cfg.setdefault("deliver_policy", "all")
    cfg.setdefault("ack_policy", "none")
    cfg.setdefault("replay_policy", "instant")
    cfg["num_replicas"] = cfg.get("num_replicas", 0)
    limits = stream_cfg.get("consumer_limits") or {}
    # setConsumerConfigDefaults
    md = cfg.get("max_deliver", 0)
    if md == 0 or md < -1:
        cfg["max_deliver"] = -1
    for k in ("max_waiting", "max_batch", "max_expires", "max_bytes", "idle_heartbeat", "inactive_threshold"):
        if cfg.get(k, 0) < 0:
            cfg[k] = 0
    if cfg.get("max_ack_pending", 0) < -1:
        cfg["max_ack_pending"] = -1
    if is_pull(cfg) and not cfg.get("max_waiting"):
        cfg["max_waiting"] = DEFAULT_MAX_WAITING
    if not cfg.get("ack_wait") and cfg["ack_policy"] in ("explicit", "all"):
        cfg["ack_wait"] = DEFAULT_ACK_WAIT
    if cfg.get("backoff"):
        cfg["ack_wait"] = cfg["backoff"][0]
    if not cfg.get("max_ack_pending") and limits.get("max_ack_pending"):
        cfg["max_ack_pending"] = limits["max_ack_pending"]
    if not cfg.get("inactive_threshold") and limits.get("inactive_threshold"):
        cfg["inactive_threshold"] = limits["inactive_threshold"]
    if not cfg.get("max_ack_pending") and cfg["ack_policy"] != "none":
        cfg["max_ack_pending"] = DEFAULT_MAX_ACK_PENDING
        if 0 < account_max_ack_pending < DEFAULT_MAX_ACK_PENDING:
            cfg["max_ack_pending"] = account_max_ack_pending
    if not durable and not cfg.get("inactive_threshold"):
        cfg["inactive_threshold"] = DEFAULT_INACTIVE_THRESHOLD
    if cfg["ack_policy"] == "flow_control":
        # acked by the replies to flow control, which the heartbeat keeps going
        cfg["flow_control"] = True
        cfg["idle_heartbeat"] = FLOW_CONTROL_HEARTBEAT
    _check(cfg, stream_cfg, account_max_ack_pending)
    md = {k: v for k, v in (cfg.get("metadata") or {}).items() if k not in ("_nats.ver", "_nats.level")}
    # Go's zero time (what nats.go and the nats CLI send when not pausing) is
    # no pause, so it asks for no API level (nats-server: !PauseUntil.IsZero())
    pu = cfg.get("pause_until")
    md["_nats.req.level"] = required_api_level(cfg, paused=bool(pu) and not str(pu).startswith("0001-01-01T00:00:00"))
    cfg["metadata"] = md
    return cfg


def _check(cfg: dict, scfg: dict, account_max_ack_pending: int = -1) -> None:
    """checkConsumerCfg, in the real server's order."""
    if cfg.get("name") and not is_valid_asset_name(cfg["name"]):
        raise errors.stream_invalid_config("consumer name can not contain '.', '*', '>', '\\', '/'")
    if cfg.get("durable_name") and not is_valid_asset_name(cfg["durable_name"]):
        raise errors.stream_invalid_config("consumer durable name can not contain '.', '*', '>', '\\', '/'")
    if cfg["num_replicas"] < 0:
        raise errors.replicas_negative()
    for b in cfg.get("backoff") or ():
        if not isinstance(b, int) or b < 0:
            raise errors.consumer_backoff_negative()
    if cfg.get("ack_wait", 0) < 0:
        raise errors.consumer_ack_wait_negative()
    if cfg["ack_policy"] == "flow_control":
        # a flow-controlled push consumer acked by the flow control replies
        # (a durable source feeds through one), with no ack wait or redelivery limit
        if is_pull(cfg):
            raise errors.ApiError(400, 10218, "flow control ack policy requires a push based consumer")
        if not cfg.get("flow_control"):
            raise errors.ApiError(400, 10219, "flow control ack policy requires flow control")
        if cfg.get("idle_heartbeat") != FLOW_CONTROL_HEARTBEAT:
            raise errors.stream_invalid_config("flow control ack policy heartbeat needs to be 1s")
        if cfg.get("max_ack_pending", 0) <= 0:
            raise errors.ApiError(400, 10220, "flow control ack policy requires max ack pending")
        if cfg.get("ack_wait") or cfg.get("backoff"):
            raise errors.ApiError(400, 10221, "flow control ack policy requires unset ack wait")
        if cfg["max_deliver"] > 0:
            raise errors.ApiError(400, 10222, "flow control ack policy requires unset max deliver")
    lbo = len(cfg.get("backoff") or ())
    if lbo and cfg["max_deliver"] != -1 and lbo > cfg["max_deliver"]:
        raise errors.consumer_max_deliver_backoff()
    if byte_len(cfg.get("description") or "") > MAX_DESCRIPTION_LEN:
        raise errors.consumer_description_too_long(MAX_DESCRIPTION_LEN)
    ds = cfg.get("deliver_subject")
    if ds:
        if not is_literal(ds):
            raise errors.consumer_deliver_wildcards()
        if not valid_config_subject(ds):
            raise errors.ApiError(400, 10112, "invalid push consumer deliver subject")
        if any(subjects_overlap(ds, s) for s in scfg["subjects"]):
            raise errors.consumer_deliver_cycle()
        if cfg.get("max_waiting"):
            raise errors.consumer_push_max_waiting()
        if cfg.get("max_ack_pending", 0) > 0 and cfg["ack_policy"] == "none":
            raise errors.ApiError(400, 10082, "consumer requires ack policy for max ack pending")
        if 0 < cfg.get("idle_heartbeat", 0) < NS // 10:
            raise errors.consumer_small_heartbeat()
    else:
        if cfg["ack_policy"] == "none" and scfg["retention"] == "workqueue":
            raise errors.consumer_pull_requires_ack()
        if cfg.get("rate_limit_bps"):
            raise errors.ApiError(400, 10086, "consumer in pull mode can not have rate limit set")
        if cfg.get("idle_heartbeat"):
            raise errors.consumer_hb_requires_push()
        if cfg.get("flow_control"):
            raise errors.consumer_fc_requires_push()
        if 0 < cfg.get("max_expires", 0) < 1_000_000:
            raise errors.consumer_max_request_expires_small()
    if account_max_ack_pending > 0 and cfg.get("max_ack_pending", 0) > account_max_ack_pending:
        raise errors.ApiError(400, 10121, f"consumer max ack pending exceeds system limit of {account_max_ack_pending}")
    limits = scfg.get("consumer_limits") or {}
    if limits.get("max_ack_pending") and cfg.get("max_ack_pending", 0) > limits["max_ack_pending"]:
        raise errors.ApiError(400, 10121, f"consumer max ack pending exceeds system limit of {limits['max_ack_pending']}")
    if limits.get("inactive_threshold") and cfg.get("inactive_threshold", 0) > limits["inactive_threshold"]:
        raise errors.ApiError(400, 10153, "consumer inactive threshold exceeds system limit of "
                              + go_duration(limits["inactive_threshold"]))
    if cfg.get("filter_subject") and cfg.get("filter_subjects"):
        raise errors.consumer_duplicate_filters()
    if cfg.get("filter_subject") and not valid_config_subject(cfg["filter_subject"]):
        raise errors.stream_invalid_config("invalid subject")
    fs = cfg.get("filter_subjects") or []
    for i, f in enumerate(fs):
        if not f:
            raise errors.consumer_empty_filter()
        if not valid_config_subject(f):
            raise errors.stream_invalid_config("invalid subject")
        for j, g in enumerate(fs):
            if i != j and is_subset(f, g):
                raise errors.consumer_overlapping_filters()
    dp = cfg["deliver_policy"]
    has_seq, has_time = bool(cfg.get("opt_start_seq")), bool(cfg.get("opt_start_time"))
    names = {"all": "all", "last": "last", "last_per_subject": "last per subject", "new": "new"}
    if dp in names:
        if has_seq:
            raise errors.consumer_invalid_policy(f"consumer delivery policy is deliver {names[dp]}, but optional start sequence is also set")
        if has_time:
            raise errors.consumer_invalid_policy(f"consumer delivery policy is deliver {names[dp]}, but optional start time is also set")
        if dp == "last_per_subject" and not filters_of(cfg):
            raise errors.consumer_invalid_policy("consumer delivery policy is deliver last per subject, but optional filter subject is not set")
    elif dp == "by_start_sequence":
        if not has_seq:
            raise errors.consumer_invalid_policy("consumer delivery policy is deliver by start sequence, but optional start sequence is not set")
        if has_time:
            raise errors.consumer_invalid_policy("consumer delivery policy is deliver by start sequence, but optional start time is also set")
    elif dp == "by_start_time":
        if not has_time:
            raise errors.consumer_invalid_policy("consumer delivery policy is deliver by start time, but optional start time is not set")
        if has_seq:
            raise errors.consumer_invalid_policy("consumer delivery policy is deliver by start time, but optional start sequence is also set")
    if has_time:
        try:
            parse_rfc3339(cfg["opt_start_time"])
        except (ValueError, AttributeError):
            raise errors.invalid_json("parsing time") from None
    why = sample_freq_problem(cfg.get("sample_freq") or "")
    if why:
        raise errors.consumer_invalid_sampling(why)
    if cfg.get("flow_control") and not cfg.get("idle_heartbeat"):
        raise errors.consumer_fc_needs_heartbeat()
    if cfg.get("durable_name") and cfg.get("name") and cfg["name"] != cfg["durable_name"]:
        raise errors.consumer_durable_name_mismatch()
    _check_priority(cfg)


_ATOI = re.compile(r"[+-]?[0-9]+")


def sample_freq_problem(freq: str) -> str:
    """What the real server says of sample_freq ('' when fine): an integer
    percentage, '%' optional, parsed by Go's strconv.Atoi; a negative one is
    refused with a nil error."""
    if not freq:
        return ""
    s = freq[:-1] if freq.endswith("%") else freq
    quoted = '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if not _ATOI.fullmatch(s):
        return f"strconv.Atoi: parsing {quoted}: invalid syntax"
    n = int(s)
    if not -(1 << 63) <= n < (1 << 63):
        return f"strconv.Atoi: parsing {quoted}: value out of range"
    return "<nil>" if n < 0 else ""


_GROUP_NAME = re.compile(r"[a-zA-Z0-9/_=-]{1,16}")
PINNED_TTL_DEFAULT = 120 * NS  # how long a pinned client may go without pulling


def valid_group_name(group: str) -> bool:
    return bool(_GROUP_NAME.fullmatch(group))


def _check_priority(cfg: dict) -> None:
    """Priority groups: overflow, pinned_client (2.11) and prioritized (2.12)."""
    policy = cfg.get("priority_policy") or "none"
    if policy == "none":
        cfg.pop("priority_policy", None)
        if cfg.get("priority_groups"):
            raise errors.consumer_priority_group_with_policy_none()
        if cfg.get("priority_timeout", 0) > 0:
            raise errors.consumer_pinned_ttl_without_policy()
        return
    if cfg.get("deliver_subject"):
        raise errors.consumer_push_with_priority_group()
    groups = cfg.get("priority_groups") or []
    if not groups:
        raise errors.consumer_priority_policy_without_group()
    for g in groups:
        if not g:
            raise errors.consumer_empty_group_name()
        if not _GROUP_NAME.fullmatch(g):
            raise errors.consumer_invalid_group_name()
    if policy == "pinned_client" and not cfg.get("priority_timeout"):
        cfg["priority_timeout"] = PINNED_TTL_DEFAULT


def check_update(old: dict, new: dict, has_interest: Callable[[str], bool]) -> None:
    """What an update may not change (500/10012 with the real texts).
    ``has_interest(subject)``: does any subscription match it (a push
    consumer is moved to another deliver subject only while nobody listens on
    its current one: otherwise another worker owns it, 400/10013)."""
    def same(k, default=None):
        return old.get(k, default) == new.get(k, default)

    rules = [
        ("deliver_policy", "deliver policy can not be updated"),
        ("mem_storage", "storage type can not be updated"),
        ("opt_start_seq", "start sequence can not be updated"),
        ("opt_start_time", "start time can not be updated"),
        ("ack_policy", "ack policy can not be updated"),
        ("replay_policy", "replay policy can not be updated"),
        ("idle_heartbeat", "heart beats can not be updated"),
        ("flow_control", "flow control can not be updated"),
    ]
    for k, msg in rules:
        if not same(k, False if k in ("mem_storage", "flow_control") else 0):
            raise errors.consumer_create(msg)
    if old.get("deliver_subject", "") != new.get("deliver_subject", ""):
        if not old.get("deliver_subject"):
            raise errors.consumer_create("can not update pull consumer to push based")
        if not new.get("deliver_subject"):
            raise errors.consumer_create("can not update push consumer to pull based")
        if has_interest(old["deliver_subject"]):
            raise errors.consumer_name_in_use()
    if not same("max_waiting", 0):
        raise errors.consumer_create("max waiting can not be updated")
