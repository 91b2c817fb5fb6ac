"""The stream-topology parts of a StreamConfig as nats-server's
checkStreamCfg validates and defaults them: ``mirror``, ``sources``,
``subject_transform`` and ``republish``. ``config.normalize`` calls the
checks that need only the config, in nats-server's order; ``check_streams``
has the ones that look at other streams (origin sizes, inherited
mirror_direct, source cycles) and runs when a stream is created or updated."""

from __future__ import annotations

import hashlib
import re
from typing import Callable

from ... import transform
from .. import errors
from ..names import is_valid_asset_name
from ..shapes import STREAM_CONFIG_FIELDS, ordered
from ...subjects import is_literal, is_subset, subjects_overlap, valid_config_subject
from ...transform import MappingError


def _valid_name(name) -> bool:
    return is_valid_asset_name(name)


_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def get_hash(name: str) -> str:
    """nats-server's getHash: 8 base-62 characters of the name's sha256."""
    d = hashlib.sha256(name.encode()).digest()
    return "".join(_B62[b % 62] for b in d[:8])


def source_iname(src: dict) -> str:
    """composeIName: how nats-server tells sources apart ("<name> <filters>
    <destinations>", filters and destinations joined by \\x07; a durable
    consumer's source is "<name>:C=<hash of the consumer name> ...")."""
    name = src.get("name", "")
    if src.get("consumer") is not None:
        name += ":C=" + get_hash((src["consumer"] or {}).get("name") or "")
    trs = src.get("subject_transforms") or []
    if not trs:
        return f"{name} {src.get('filter_subject') or '>'} >"
    srcs = [t.get("src") or ">" for t in trs]
    dests = [t.get("dest") or ">" for t in trs]
    return f"{name} {chr(7).join(srcs)} {chr(7).join(dests)}"


_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")


def go_time_echo(s: str) -> str:
    """A time.Time as Go writes it back (RFC 3339 with the fraction's
    trailing zeros trimmed, the offset kept, a zero offset as Z)."""
    m = _TS.match(s)
    if not m:
        return s
    base, frac, tz = m.groups()
    frac = (frac or "").rstrip("0")
    if tz in ("+00:00", "-00:00"):
        tz = "Z"
    return base + ("." + frac if frac else "") + tz


def _canonical_source(src: dict | None) -> dict | None:
    """A StreamSource as nats-server holds it: Go field order, its omitempty
    fields dropped when empty, its time as Go echoes it (so two configs
    compare as nats-server compares them)."""
    if src is None:
        return None
    out = ordered(src, STREAM_CONFIG_FIELDS.nested["sources"])
    if src.get("consumer") == {}:
        out["consumer"] = {}  # (a pointer to an empty struct is not nil: checked, and refused, as given)
    if out.get("opt_start_time"):
        out["opt_start_time"] = go_time_echo(out["opt_start_time"])
    return out


def normalize_sources(cfg: dict) -> None:
    if cfg.get("mirror") is not None:
        cfg["mirror"] = _canonical_source(cfg["mirror"])
    if cfg.get("sources"):
        cfg["sources"] = [_canonical_source(s) for s in cfg["sources"]]
    elif "sources" in cfg:
        del cfg["sources"]


def _check_transforms(trs: list, bad_src: Callable, bad_dest: Callable) -> None:
    for t in trs:
        src, dest = t.get("src", ""), t.get("dest", "")
        if src and not transform.is_valid_subject(src):
            raise bad_src(f"invalid subject {src}")
        try:
            transform.validate_mapping(src, dest)
        except MappingError as e:
            raise bad_dest(str(e)) from None


def check_mirror(cfg: dict) -> None:
    m = cfg.get("mirror")
    if m is None:
        return
    if cfg.get("first_seq"):
        raise errors.mirror_with_first_seq()
    if cfg.get("subjects"):
        raise errors.mirror_with_subjects()
    if cfg.get("sources"):
        raise errors.mirror_with_sources()
    # a mirror keeps its origin's messages as they are: no stream-side publish features
    for flag, err in (("allow_msg_counter", errors.mirror_with_counters), ("allow_atomic", errors.mirror_with_atomic),
                      ("allow_batched", errors.mirror_with_batched),
                      ("allow_msg_schedules", errors.mirror_with_schedules)):
        if cfg.get(flag):
            raise err()
    _refuse_unsupported(m)
    if m.get("consumer") is not None:
        _check_durable_consumer(m, errors.mirror_durable_consumer_cfg_invalid)
    trs = m.get("subject_transforms") or []
    if m.get("filter_subject") and trs:
        raise errors.mirror_multiple_filters()
    if (cfg.get("subject_delete_marker_ttl") or 0) > 0:
        raise errors.stream_invalid_config("subject delete markers forbidden on mirrors")
    _check_transforms(trs, errors.mirror_invalid_subject_filter, errors.mirror_invalid_transform_destination)
    for i, a in enumerate(trs):
        for j, b in enumerate(trs):
            if i != j and subjects_overlap(a.get("src") or ">", b.get("src") or ">"):
                raise errors.mirror_overlapping_filters()
    if not _valid_name(m.get("name", "")):
        raise errors.mirror_invalid_stream_name()


def check_sources(cfg: dict) -> None:
    if cfg.get("sources") and cfg.get("allow_msg_schedules"):
        raise errors.source_with_schedules()
    seen = set()
    consumers = set()
    for src in cfg.get("sources") or []:
        if src is None or not _valid_name(src.get("name", "")):
            raise errors.source_invalid_stream_name()
        iname = source_iname(src)
        if iname in seen:
            raise errors.source_duplicate()
        seen.add(iname)
        _refuse_unsupported(src)
        trs = src.get("subject_transforms") or []
        if src.get("filter_subject") and trs:
            raise errors.source_multiple_filters()
        _check_transforms(trs, errors.source_invalid_subject_filter, errors.source_invalid_transform_destination)
        for i, a in enumerate(trs):
            for j, b in enumerate(trs):
                if i != j and is_subset(a.get("src") or ">", b.get("src") or ">"):
                    raise errors.source_overlapping_filters()
        if src.get("consumer") is not None:
            _check_durable_consumer(src, errors.source_durable_consumer_cfg_invalid)
            # one durable consumer feeds one source of the stream (composeCName)
            key = (src.get("name", ""), src["consumer"].get("name") or "")
            if key in consumers:
                raise errors.source_durable_consumer_duplicate()
            consumers.add(key)


def _check_durable_consumer(src: dict, invalid) -> None:
    """A durable consumer to source through (nats-server 2.14+): a valid
    name, a literal deliver subject, and the consumer's own start and filter
    (none on the source)."""
    c = src["consumer"] or {}
    ds = c.get("deliver_subject") or ""
    if not _valid_name(c.get("name") or ""):
        raise invalid()
    if not ds or not is_literal(ds) or not valid_config_subject(ds):
        raise invalid()
    if src.get("opt_start_seq") or src.get("opt_start_time") is not None:
        raise invalid()
    if src.get("filter_subject"):
        raise invalid()


def _refuse_unsupported(src: dict) -> None:
    # natslab is one server with one account: there is no other domain or
    # account to reach
    if src.get("external"):
        raise errors.stream_invalid_config("external stream sources are not supported by this server")


def check_transform_and_republish(cfg: dict) -> None:
    """After the subjects are settled, as in checkStreamCfg."""
    st = cfg.get("subject_transform")
    if st is not None:
        src, dest = st.get("src", ""), st.get("dest", "")
        if src and not transform.is_valid_subject(src):
            raise errors.stream_transform_invalid_source(f"invalid subject {src}")
        try:
            transform.validate_mapping(src, dest)
        except MappingError as e:
            raise errors.stream_transform_invalid_destination(str(e)) from None
        cfg["subject_transform"] = {"src": src, "dest": dest}
    rp = cfg.get("republish")
    if rp is not None:
        rp = dict(rp)
        if not rp.get("src"):
            rp["src"] = ">"
        dest = rp.get("dest", "")
        subjects = cfg.get("subjects") or []
        # '>' to '>' would republish onto the stream's own subjects; with a
        # transform of the only subject it means "the transformed subject"
        if dest == ">" and rp["src"] == ">" and st is not None and len(subjects) == 1 and st.get("src", "") == subjects[0]:
            rp["src"] = rp["dest"] = st.get("dest", "")
        dest = rp.get("dest", "")
        if any(subjects_overlap(dest, s) for s in subjects if dest):
            raise errors.stream_invalid_config("stream configuration for republish destination forms a cycle")
        try:
            transform.new(rp["src"], dest)
        except MappingError:
            raise errors.stream_invalid_config(
                f"stream configuration for republish with transform from '{rp['src']}' to '{dest}' not valid") from None
        cfg["republish"] = {"src": rp["src"], "dest": dest}
        if rp.get("headers_only"):
            cfg["republish"]["headers_only"] = True


def check_streams(cfg: dict, streams: dict) -> dict:
    """The checks against the other streams of the account; returns the
    config with ``mirror_direct`` inherited from a mirror's origin."""
    m = cfg.get("mirror")
    mms = cfg.get("max_msg_size", -1)
    if m is not None:
        origin = streams.get(m.get("name", ""))
        if origin is not None:
            omms = origin.config.get("max_msg_size", -1)
            if mms > 0 and omms > 0 and mms < omms:
                raise errors.mirror_max_msg_size_too_big()
            cfg = dict(cfg, mirror_direct=bool(origin.config.get("allow_direct")))
    for src in cfg.get("sources") or []:
        origin = streams.get(src.get("name", ""))
        if origin is not None:
            omms = origin.config.get("max_msg_size", -1)
            if mms > 0 and omms > 0 and mms < omms:
                raise errors.source_max_msg_size_too_big()
    _check_cycle(cfg, streams)
    return cfg


def _check_cycle(cfg: dict, streams: dict) -> None:
    """A stream that (through sources or mirrors) would feed itself."""
    to_visit = [cfg]
    visited: set[str] = set()
    while to_visit:
        c = to_visit.pop(0)
        visited.add(c["name"])
        for src in c.get("sources") or []:
            name = src.get("name", "")
            if name in visited:
                flt = src.get("filter_subject") or ""
                if not flt or any(subjects_overlap(s, flt) for s in c.get("subjects") or []):
                    raise errors.stream_invalid_config("detected cycle")
            elif name in streams:
                to_visit.append(_live_config(name, cfg, streams))
        m = c.get("mirror")
        if m is not None:
            name = m.get("name", "")
            if name in visited:
                raise errors.stream_invalid_config("detected cycle")
            if name in streams:
                to_visit.append(_live_config(name, cfg, streams))


def _live_config(name: str, cfg: dict, streams: dict) -> dict:
    # the stream being updated is seen with its new config
    return cfg if name == cfg["name"] else streams[name].config


def check_update(old: dict, cfg: dict) -> None:
    """A mirror's config can not change; it can only be removed (promotion)."""
    if cfg.get("mirror") is not None and cfg.get("mirror") != old.get("mirror"):
        raise errors.mirror_not_updatable()
