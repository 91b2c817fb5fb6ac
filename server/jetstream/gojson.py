"""Request bodies decoded the way the real server decodes them: Go's
encoding/json into a typed struct with unknown fields disallowed (JetStream
strict mode, the default). The first problem in document order is reported
with Go's wording, e.g. ``json: unknown field "bogus"`` or
``json: cannot unmarshal string into Go struct field
JSApiMsgGetRequest.seq of type uint64``.

A struct is described by a dict of JSON field name -> Go type name: "int",
"int64", "uint64", "string", "bool", "[]string", "time" (time.Time), or a
nested struct as a (Go type name, dict) pair.
"""

from __future__ import annotations

from .shapes import parse_rfc3339

_INTS = {"int": (-(1 << 63), (1 << 63) - 1), "int64": (-(1 << 63), (1 << 63) - 1), "uint64": (0, (1 << 64) - 1)}
_RFC3339 = "2006-01-02T15:04:05Z07:00"


class GoJSONError(ValueError):
    """The message Go's decoder would give."""


def _kind(v) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _type_error(value: str, struct: str, path: str, go_type: str) -> GoJSONError:
    return GoJSONError(f"json: cannot unmarshal {value} into Go struct field {struct}.{path} of type {go_type}")


def _check(v, go_type, struct: str, path: str, strict: bool) -> None:
    if v is None:
        return  # null leaves the zero value
    if isinstance(go_type, tuple):
        name, fields = go_type
        if not isinstance(v, dict):
            raise _type_error(_kind(v), struct, path, f"server.{name}")
        _check_struct(v, name, fields, path + ".", strict)
        return
    if go_type in _INTS:
        lo, hi = _INTS[go_type]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise _type_error(_kind(v), struct, path, go_type)
        if isinstance(v, float) or not lo <= v <= hi:
            raise _type_error(f"number {v}", struct, path, go_type)
    elif go_type == "string":
        if not isinstance(v, str):
            raise _type_error(_kind(v), struct, path, "string")
    elif go_type == "bool":
        if not isinstance(v, bool):
            raise _type_error(_kind(v), struct, path, "bool")
    elif go_type == "[]string":
        if not isinstance(v, list):
            raise _type_error(_kind(v), struct, path, "[]string")
        for i, item in enumerate(v):
            if item is not None and not isinstance(item, str):
                # Go names the element by index, without "Go struct field"
                raise GoJSONError(f"json: cannot unmarshal {_kind(item)} into {struct}.{path}.{i} of type string")
    elif go_type == "time":
        if not isinstance(v, str):
            raise _type_error(_kind(v), struct, path, "time.Time")
        try:
            parse_rfc3339(v)
        except ValueError:
            raise GoJSONError(f'parsing time "{v}" as "{_RFC3339}": cannot parse "{v}" as "2006"') from None


def _check_struct(d: dict, name: str, fields: dict, prefix: str, strict: bool) -> None:
    for k, v in d.items():
        t = fields.get(k)
        if t is None:
            if strict:
                raise GoJSONError(f'json: unknown field "{k}"')
            continue
        _check(v, t, name, prefix + k, strict)


def decode(d, name: str, fields: dict, strict: bool = True) -> dict:
    """``d`` (already JSON-decoded) checked against the struct, unknown
    fields refused when ``strict`` (the API's decoder; plain json.Unmarshal
    ignores them); returned as is."""
    if not isinstance(d, dict):
        raise GoJSONError(f"json: cannot unmarshal {_kind(d)} into Go value of type server.{name}")
    _check_struct(d, name, fields, "", strict)
    return d


MSG_GET_REQUEST = {
    "seq": "uint64", "last_by_subj": "string", "next_by_subj": "string", "batch": "int", "max_bytes": "int",
    "start_time": "time", "multi_last": "[]string", "up_to_seq": "uint64", "up_to_time": "time", "no_hdr": "bool",
}
