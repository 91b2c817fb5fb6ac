"""JSON shapes of the JetStream API, in one place and named after the real
server's Go types (StreamConfig, StreamState, ConsumerConfig, ...), plus the
wire conventions of the API's JSON (Go's time and duration formats and
encoding/json's bytes are in server/gowire.py)."""

from __future__ import annotations

import time

# (re-exported to the API's modules)
from ..gowire import NS, ZERO_TIME, dumps, dumps_plain, parse_go_duration, parse_rfc3339, rfc3339  # noqa: F401
from . import fields
from .headers import API_LEVEL  # noqa: F401 (imported from here by the API's modules)


def now_ns() -> int:
    return time.time_ns()




def api_response(type_name: str, body: dict) -> bytes:
    d = {"type": f"io.nats.jetstream.api.v1.{type_name}"}
    d.update(body)
    return dumps(d).encode()


# -- StreamConfig --------------------------------------------------------------

class FieldList(list):
    """(json key, default echoed, omitempty) in the Go struct's order, from
    the type's table in fields.py; ``nested``: the tables of its struct-valued
    fields, so those are written in Go order too."""

    nested: dict = {}


def _fields(table, nested: dict | None = None) -> FieldList:
    out = FieldList((key, default, omitempty) for key, _, default, omitempty in table)
    keys = {key for key, _, _ in out}
    out.nested = {k: _fields(t, nested) for k, t in (nested or {}).items() if k in keys}
    return out


STREAM_CONFIG_FIELDS = _fields(fields.STREAM_CONFIG, fields.NESTED)
STREAM_CONFIG_KEYS = {k for k, _, _ in STREAM_CONFIG_FIELDS}


def ordered(cfg: dict, table) -> dict:
    """The config in Go field order, omitting empty omitempty fields (and so
    the struct-valued fields the table knows the fields of)."""
    out = {}
    nested = getattr(table, "nested", None) or {}
    for key, default, omitempty in table:
        v = cfg.get(key, default)
        if omitempty and (v is None or v is False or v == 0 or v == "" or v == [] or v == {}):
            continue
        if v is None:
            v = {} if key == "consumer_limits" else v
        elif key == "metadata":
            v = dict(sorted(v.items()))  # Go writes map keys sorted
        elif key in nested:
            sub = nested[key]
            v = [ordered(x, sub) if isinstance(x, dict) else x for x in v] if isinstance(v, list) else (
                ordered(v, sub) if isinstance(v, dict) else v)
        out[key] = v
    return out


def with_dynamic_metadata(cfg: dict, version: str) -> dict:
    """Add the server's ``_nats.ver`` / ``_nats.level`` keys as on output."""
    md = dict(cfg.get("metadata") or {})
    md["_nats.ver"] = version
    md["_nats.level"] = str(API_LEVEL)
    out = dict(cfg)
    out["metadata"] = dict(sorted(md.items()))
    return out


# -- ConsumerConfig -------------------------------------------------------------

CONSUMER_CONFIG_FIELDS = _fields(fields.CONSUMER_CONFIG)
CONSUMER_CONFIG_KEYS = {k for k, _, _ in CONSUMER_CONFIG_FIELDS}


def stream_state(st, consumer_count: int, subjects: dict | None = None, deleted: list | None = None) -> dict:
    """StreamState from a store.StoreState."""
    d = {
        "messages": st.messages,
        "bytes": st.bytes,
        "first_seq": st.first_seq,
        "first_ts": rfc3339(st.first_ts),
        "last_seq": st.last_seq,
        "last_ts": rfc3339(st.last_ts),
    }
    if st.num_subjects:
        d["num_subjects"] = st.num_subjects
    if subjects is not None and subjects:
        d["subjects"] = subjects
    if st.num_deleted:
        d["num_deleted"] = st.num_deleted
    if deleted:
        d["deleted"] = deleted
    d["consumer_count"] = consumer_count
    return d


def sequence_info(consumer_seq: int, stream_seq: int, last_active: int = 0) -> dict:
    d = {"consumer_seq": consumer_seq, "stream_seq": stream_seq}
    if last_active:
        d["last_active"] = rfc3339(last_active)
    return d
