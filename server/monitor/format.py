"""Go's wire conventions for the monitoring JSON and nats-server's query
rules: "uptime" strings, MarshalIndent with
HTML-safe escaping, and ParseBool/Atoi parameters with the real server's
error texts (a bad value is a 400 with that text)."""

from __future__ import annotations

import json
import re

from ..gowire import NS  # noqa: F401 (imported from here by the monitor's modules)

DEFAULT_LIMIT = 1024


class BadRequest(Exception):
    """A query the real server answers with 400 and this text."""


# -- nats-server's conventions (Go's times and durations are in gowire) --------
def uptime(seconds: float) -> str:
    """nats-server's myUptime: whole seconds as "1y2d3h4m5s"."""
    s = max(0, int(seconds))
    m, h, d = s // 60, s // 3600, s // 86400
    y = d // 365
    if y:
        return f"{y}y{d % 365}d{h % 24}h{m % 60}m{s % 60}s"
    if d:
        return f"{d}d{h % 24}h{m % 60}m{s % 60}s"
    if h:
        return f"{h}h{m % 60}m{s % 60}s"
    if m:
        return f"{m}m{s % 60}s"
    return f"{s}s"


def go_number(x):
    """Go prints a float64 with no fraction as an integer (1, not 1.0)."""
    return int(x) if isinstance(x, float) and x.is_integer() else x


def to_json(obj) -> bytes:
    """json.MarshalIndent(obj, "", "  ") with Go's HTML-safe escaping."""
    s = json.dumps(obj, indent=2, ensure_ascii=False)
    return s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


# -- query parameters, with the real server's error texts -----------------------
_INT = re.compile(r"[+-]?\d+")
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def q_bool(q: dict, name: str) -> bool:
    v = q.get(name, "")
    if v == "" or v in _FALSE:
        return False
    if v in _TRUE:
        return True
    raise BadRequest(f"Error decoding boolean for '{name}': strconv.ParseBool: parsing {json.dumps(v)}: invalid syntax")


def q_int(q: dict, name: str) -> int:
    v = q.get(name, "")
    if v == "":
        return 0
    if not _INT.fullmatch(v):
        raise BadRequest(f"Error decoding int for '{name}': strconv.Atoi: parsing {json.dumps(v)}: invalid syntax")
    n = int(v)
    if abs(n) >= 2**63:
        raise BadRequest(f"Error decoding int for '{name}': strconv.Atoi: parsing {json.dumps(v)}: value out of range")
    return n


def page(items: list, offset: int, limit: int) -> tuple[list, int, int]:
    """nats-server's paging: a negative offset is 0, a limit <= 0 the default."""
    offset = max(0, offset)
    limit = limit if limit > 0 else DEFAULT_LIMIT
    return items[offset : offset + limit], offset, limit
