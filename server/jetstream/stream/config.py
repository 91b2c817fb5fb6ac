"""StreamConfig: defaults and validation as the real server applies them
(checkStreamCfg), and the rules for what an update may change
(configUpdateCheck). Configs are plain dicts keyed by the JSON field names."""

from __future__ import annotations

from .. import errors
from . import topoconfig
from ..names import MAX_DESCRIPTION_LEN, MAX_NAME_LEN, byte_len, is_valid_asset_name
from ..shapes import NS, STREAM_CONFIG_KEYS
from ...subjects import is_subset, subjects_overlap, valid_config_subject

DEFAULT_DUPLICATE_WINDOW = 120 * NS


def normalize(raw: dict) -> dict:
    """Return the fully defaulted config the server would echo, or raise.
    ``raw`` is the request as gojson decoded it (types already checked)."""
    if not isinstance(raw, dict):
        raise errors.stream_invalid_config("stream configuration invalid")
    cfg = {k: v for k, v in raw.items() if k in STREAM_CONFIG_KEYS}
    name = cfg.get("name", "")
    if not is_valid_asset_name(name):
        raise errors.stream_invalid_config("stream name is required and can not contain '.', '*', '>', '\\', '/'")
    if byte_len(name) > MAX_NAME_LEN:
        raise errors.stream_invalid_config(f"stream name is too long, maximum allowed is {MAX_NAME_LEN}")
    if byte_len(cfg.get("description") or "") > MAX_DESCRIPTION_LEN:
        raise errors.stream_invalid_config(f"stream description is too long, maximum allowed is {MAX_DESCRIPTION_LEN}")
    for k, d in (("retention", "limits"), ("discard", "old"), ("storage", "file"), ("compression", "none")):
        cfg[k] = cfg.get(k) or d
    reps = cfg.get("num_replicas") or 0
    if reps == 0:
        reps = 1
    if reps > 5:
        raise errors.stream_invalid_config("maximum replicas is 5")
    if reps < 0:
        raise errors.replicas_negative()
    cfg["num_replicas"] = reps
    for k in ("max_msgs", "max_msgs_per_subject", "max_bytes", "max_msg_size", "max_consumers"):
        v = cfg.get(k) or 0
        cfg[k] = -1 if v == 0 or v < -1 else v
    max_age = cfg.get("max_age") or 0
    if max_age < 0:
        raise errors.stream_invalid_config("max age can not be negative")
    if max_age and max_age < NS // 10:
        raise errors.stream_invalid_config("max age needs to be >= 100ms")
    cfg["max_age"] = max_age
    dup = cfg.get("duplicate_window") or 0
    # a mirror or a stream with sources gets no default window
    if dup == 0 and cfg.get("mirror") is None and not cfg.get("sources"):
        dup = max_age if max_age and max_age < DEFAULT_DUPLICATE_WINDOW else DEFAULT_DUPLICATE_WINDOW
    if dup < 0:
        raise errors.stream_invalid_config("duplicates window can not be negative")
    if max_age and dup > max_age:
        raise errors.stream_invalid_config("duplicates window can not be larger then max age")
    if 0 < dup < NS // 10:
        raise errors.stream_invalid_config("duplicates window needs to be >= 100ms")
    cfg["duplicate_window"] = dup
    if cfg.get("deny_purge") and cfg.get("allow_rollup_hdrs"):
        raise errors.stream_invalid_config("roll-ups require the purge permission")
    if cfg.get("allow_msg_counter"):
        # checked before a subject delete marker TTL turns on message TTLs, as nats-server does
        if cfg["discard"] == "new":
            raise errors.stream_invalid_config("counter stream cannot use discard new")
        if cfg.get("allow_msg_ttl"):
            raise errors.stream_invalid_config("counter stream cannot use message TTLs")
        if cfg.get("allow_msg_schedules"):
            raise errors.stream_invalid_config("counter stream cannot use message schedules")
        if cfg["retention"] != "limits":
            raise errors.stream_invalid_config("counter stream can only use limits retention")
    if cfg.get("discard_new_per_subject"):
        if cfg["discard"] != "new":
            raise errors.stream_invalid_config("discard new per subject requires discard new policy to be set")
        if cfg["max_msgs_per_subject"] <= 0:
            raise errors.stream_invalid_config("discard new per subject requires max msgs per subject > 0")
    smt = cfg.get("subject_delete_marker_ttl") or 0
    if smt > 0:
        if smt < NS:
            raise errors.stream_invalid_config("subject delete marker TTL must be at least 1 second")
        cfg["allow_msg_ttl"] = True
        if not cfg.get("allow_rollup_hdrs"):
            cfg["allow_rollup_hdrs"], cfg["deny_purge"] = True, False
    elif smt < 0:
        raise errors.stream_invalid_config("subject delete marker TTL must not be negative")
    if cfg.get("allow_msg_schedules"):
        if cfg["discard"] == "new":
            raise errors.stream_invalid_config("message scheduling cannot use discard new")
        if not cfg.get("allow_rollup_hdrs"):
            cfg["allow_rollup_hdrs"], cfg["deny_purge"] = True, False  # a schedule is a rollup of its subject
    topoconfig.normalize_sources(cfg)
    topoconfig.check_mirror(cfg)
    topoconfig.check_sources(cfg)
    subjects = cfg.get("subjects") or []
    if not subjects and cfg.get("mirror") is None and not cfg.get("sources"):
        subjects = [name]
    seen: set[str] = set()
    for i, subj in enumerate(subjects):
        if not valid_config_subject(subj):
            raise errors.stream_invalid_config("invalid subject")
        if subj in seen:
            raise errors.stream_invalid_config("duplicate subjects detected")
        if subj == ">" and not cfg.get("no_ack"):
            raise errors.stream_invalid_config("capturing all subjects requires no-ack to be true")
        if not cfg.get("no_ack"):
            for ns in ("$JS.>", "$JSC.>", "$NRG.>"):
                if subjects_overlap(subj, ns) and not is_subset(subj, "$JS.EVENT.>"):
                    raise errors.stream_invalid_config("subjects that overlap with jetstream api require no-ack to be true")
            if subjects_overlap(subj, "$SYS.>") and not is_subset(subj, "$SYS.ACCOUNT.>"):
                raise errors.stream_invalid_config("subjects that overlap with system api require no-ack to be true")
        for other in subjects[i + 1:]:
            if subjects_overlap(other, subj):
                raise errors.stream_invalid_config(f'subject "{subj}" overlaps with "{other}"')
        seen.add(subj)
    cfg["subjects"] = list(subjects)
    topoconfig.check_transform_and_republish(cfg)
    for k in ("allow_direct", "mirror_direct", "sealed", "deny_delete", "deny_purge", "allow_rollup_hdrs", "allow_msg_ttl"):
        cfg[k] = bool(cfg.get(k))
    cl = cfg.get("consumer_limits") or {}
    cfg["consumer_limits"] = {k: v for k, v in cl.items() if k in ("inactive_threshold", "max_ack_pending") and v}
    md = {k: v for k, v in (cfg.get("metadata") or {}).items() if k not in ("_nats.ver", "_nats.level")}
    level = 0
    if cfg.get("allow_msg_ttl") or smt > 0:
        level = 1
    if cfg.get("allow_msg_counter") or cfg.get("allow_atomic") or cfg.get("allow_msg_schedules"):
        level = 2
    md["_nats.req.level"] = str(level)
    cfg["metadata"] = md
    return cfg


def check_replicas(cfg: dict) -> None:
    if cfg.get("num_replicas", 1) > 1:
        raise errors.replicas_not_supported()


def check_update(old: dict, cfg: dict) -> dict:
    """Validate an update against the current config; returns the config to use."""
    if cfg["name"] != old["name"]:
        raise errors.stream_invalid_config("stream configuration name must match original")
    check_replicas(cfg)
    if cfg["storage"] != old["storage"]:
        raise errors.stream_invalid_config("stream configuration update can not change storage type")
    if cfg["retention"] != old["retention"] and "workqueue" in (cfg["retention"], old["retention"]):
        raise errors.stream_invalid_config("stream configuration update can not change retention policy to/from workqueue")
    if old["sealed"] and not cfg["sealed"]:
        raise errors.stream_invalid_config("stream configuration update can not unseal a sealed stream")
    if old["deny_delete"] and not cfg["deny_delete"]:
        raise errors.stream_invalid_config("stream configuration update can not cancel deny message deletes")
    if old["deny_purge"] and not cfg["deny_purge"]:
        raise errors.stream_invalid_config("stream configuration update can not cancel deny purge")
    if old["allow_msg_ttl"] and not cfg["allow_msg_ttl"]:
        raise errors.stream_invalid_config("message TTL status can not be disabled")
    if bool(old.get("allow_msg_counter")) != bool(cfg.get("allow_msg_counter")):
        raise errors.stream_invalid_config("stream configuration update can not change message counter setting")
    if old.get("allow_msg_schedules") and not cfg.get("allow_msg_schedules"):
        raise errors.stream_invalid_config("message schedules can not be disabled")
    if cfg["sealed"]:
        cfg = dict(cfg, max_age=0, discard="new", deny_delete=True, deny_purge=True, allow_rollup_hdrs=False)
    md = dict(cfg.get("metadata") or {})
    md["_nats.req.level"] = (old.get("metadata") or {}).get("_nats.req.level", "0")
    cfg["metadata"] = md
    return cfg
