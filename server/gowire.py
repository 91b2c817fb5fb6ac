"""Go's wire conventions shared by the monitor and JetStream: time.Time as
encoding/json writes it (RFC 3339 with trimmed nanoseconds, UTC), RFC 3339
parsing, time.Duration's String() and ParseDuration, and encoding/json's
bytes (``dumps``: every API reply, PubAck and $SYS answer). One copy of each,
so an /connz "rtt" and a JetStream 409 text print a duration the same way."""

from __future__ import annotations

import json
import re
import time

NS = 1_000_000_000
ZERO_TIME = "0001-01-01T00:00:00Z"  # Go's zero time.Time

_last_second: tuple = (None, "")  # rfc3339: the last whole second formatted (one tuple: thread-safe)


def rfc3339(ns: int) -> str:
    """time.Time (UTC) as Go marshals it: RFC 3339, trailing zero digits of
    the nanoseconds trimmed, ``Z``; 0 is Go's zero time."""
    if not ns:
        return ZERO_TIME
    sec, frac = divmod(int(ns), NS)
    global _last_second
    last_sec, base = _last_second
    if last_sec != sec:
        base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
        _last_second = (sec, base)
    if frac:
        base += "." + f"{frac:09d}".rstrip("0")
    return base + "Z"


_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")


def parse_rfc3339(s: str) -> int:
    """RFC 3339 (as Go writes it) to ns since the epoch; ValueError if bad."""
    m = _TS.match(s.strip())
    if not m:
        raise ValueError(f"bad time {s!r}")
    base, frac, tz = m.groups()
    if base.startswith("0001-01-01T00:00:00"):
        return 0
    from datetime import datetime  # (a big module, not loaded at start-up for this rare parse)

    dt = datetime.fromisoformat(base + ("+00:00" if tz == "Z" else tz))
    return int(dt.timestamp()) * NS + int((frac or "0").ljust(9, "0"))


def _frac(v: int, unit: int) -> str:
    """v/unit with Go's fmtFrac: every digit of the fraction, trailing zeros trimmed."""
    whole, rest = divmod(v, unit)
    if not rest:
        return str(whole)
    return f"{whole}." + f"{rest:0{len(str(unit)) - 1}d}".rstrip("0")


def go_duration(ns: int) -> str:
    """time.Duration.String(): "0s", "999ns", "1.5µs", "1.234567ms",
    "1m30.000000001s", "2562047h47m16.854775807s". A Duration is an int64,
    so a value outside it wraps as it would in Go."""
    ns = int(ns)
    if not -(1 << 63) <= ns < (1 << 63):
        ns = (ns + (1 << 63)) % (1 << 64) - (1 << 63)
    if ns == 0:
        return "0s"
    sign, u = ("-", -ns) if ns < 0 else ("", ns)
    if u < 1000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        return f"{sign}{_frac(u, 1000)}µs"
    if u < NS:
        return f"{sign}{_frac(u, 1_000_000)}ms"
    h, rem = divmod(u, 3600 * NS)
    m, rem = divmod(rem, 60 * NS)
    s = _frac(rem, NS) + "s"
    if h:
        return f"{sign}{h}h{m}m{s}"
    if m:
        return f"{sign}{m}m{s}"
    return sign + s


_DUR = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)")
_UNIT = {"ns": 1, "us": 1000, "µs": 1000, "μs": 1000, "ms": 1_000_000, "s": NS, "m": 60 * NS, "h": 3600 * NS}


def parse_go_duration(s: str) -> int:
    """Go's time.ParseDuration, in ns (the whole part exact, the fraction
    scaled in float64 as Go does); ValueError if bad."""
    s = s.strip()
    if s == "0":
        return 0
    if s == "":
        raise ValueError("empty duration")
    neg = s[0] == "-"
    if s[0] in "+-":
        s = s[1:]
    pos, total = 0, 0
    while pos < len(s):
        m = _DUR.match(s, pos)
        if not m or (not m.group(1) and not m.group(2)):
            raise ValueError(f"bad duration {s!r}")
        whole, frac, unit = m.group(1), m.group(2) or "", _UNIT[m.group(3)]
        total += int(whole or "0") * unit
        if frac:
            total += int(float(int(frac)) * (unit / 10 ** len(frac)))
        pos = m.end()
    if total >= 1 << 63 and not (neg and total == 1 << 63):
        raise ValueError(f"invalid duration {s!r}")
    return -total if neg else total


_json_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def dumps_plain(obj) -> str:
    """Compact JSON without the HTML-safe escapes (for bytes the real server
    builds by hand, such as the PubAck prefix)."""
    return _json_encode(obj)


def dumps(obj) -> str:
    """JSON as Go's encoding/json writes it (the bytes of every API reply and
    PubAck): compact, UTF-8 kept, and HTML-safe escapes for <, > and & plus
    U+2028/U+2029. Those characters can only occur inside JSON strings, so
    replacing them in the dumped text is exact."""
    s = _json_encode(obj)
    if "<" in s or ">" in s or "&" in s:
        s = s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    if "\u2028" in s or "\u2029" in s:
        s = s.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return s
