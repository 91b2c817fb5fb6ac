"""Cron patterns for message schedules: the six-field form (seconds first)
nats-server takes in ``Nats-Schedule`` (its cron.go, after robfig/cron),
and the next time such a pattern fires."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone, tzinfo

_STAR = 1 << 63  # set when a field was written with * or ?
_MONTHS = {n: i + 1 for i, n in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {n: i for i, n in enumerate("sun mon tue wed thu fri sat".split())}
_BOUNDS = [(0, 59, None), (0, 59, None), (0, 23, None), (1, 31, None), (1, 12, _MONTHS), (0, 6, _DAYS)]

PREDEFINED = {"@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
              "@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *",
              "@hourly": "0 0 * * * *"}


class CronError(ValueError):
    pass


def _int(expr: str) -> int:
    # strconv.Atoi: an optional sign and decimal digits
    body = expr[1:] if expr[:1] in "+-" else expr
    if not body.isascii() or not body.isdigit():
        raise CronError(f"failed to parse int from {expr}")
    n = int(expr)
    if n < 0:
        raise CronError(f"negative number ({n}) not allowed: {expr}")
    return n


def _int_or_name(expr: str, names) -> int:
    if names and expr.lower() in names:
        return names[expr.lower()]
    return _int(expr)


def _range(expr: str, lo: int, hi: int, names) -> int:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    extra = 0
    if low_high[0] in ("*", "?"):
        start, end, extra = lo, hi, _STAR
    else:
        start = _int_or_name(low_high[0], names)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _int_or_name(low_high[1], names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _int(range_and_step[1])
        if len(low_high) == 1:  # "N/step" means "N-max/step"
            end = hi
        if step > 1:
            extra = 0
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < lo or end > hi or start > end or step == 0:
        raise CronError(f"bad range: {expr}")
    bits = 0
    for i in range(start, end + 1, step):
        bits |= 1 << i
    return bits | extra


def _field(field: str, bounds) -> int:
    bits = 0
    for expr in (p for p in field.split(",") if p):
        bits |= _range(expr, *bounds)
    return bits


def _day_matches(dom: int, dow: int, t: datetime) -> bool:
    dom_match = bool(1 << t.day & dom)
    dow_match = bool(1 << ((t.weekday() + 1) % 7) & dow)  # Go: Sunday is 0
    if dom & _STAR or dow & _STAR:
        return dom_match and dow_match
    return dom_match or dow_match


def next_fire(pattern: str, tz: tzinfo | None, ts_ns: int) -> int:
    """The first time after ``ts_ns`` (ns since the epoch) the six-field
    pattern fires, in ns; CronError when the pattern is not one."""
    fields = pattern.split()
    if len(fields) != 6:
        raise CronError(f"pattern requires 6 fields, got {len(fields)}")
    sec, minute, hour, dom, month, dow = (_field(f, b) for f, b in zip(fields, _BOUNDS))
    tz = tz or timezone.utc
    t = datetime.fromtimestamp(ts_ns // 10**9, tz) + timedelta(seconds=1)  # the upcoming second
    truncated = False
    year_limit = t.year + 5
    while True:
        if t.year > year_limit:
            raise CronError("pattern exceeds maximum range")
        wrapped = False
        while not (1 << t.month & month):
            if not truncated:
                truncated = True
                t = t.replace(day=1, hour=0, minute=0, second=0)
            y, m = (t.year + 1, 1) if t.month == 12 else (t.year, t.month + 1)
            t = t.replace(year=y, month=m)
            if t.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not _day_matches(dom, dow, t):
            if not truncated:
                truncated = True
                t = t.replace(hour=0, minute=0, second=0)
            t = (t.replace(tzinfo=None) + timedelta(days=1)).replace(tzinfo=tz)
            if t.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.hour & hour):
            if not truncated:
                truncated = True
                t = t.replace(minute=0, second=0)
            t = datetime.fromtimestamp(t.timestamp() + 3600, tz)
            if t.hour == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.minute & minute):
            if not truncated:
                truncated = True
                t = t.replace(second=0)
            t = datetime.fromtimestamp(t.timestamp() + 60, tz)
            if t.minute == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.second & sec):
            truncated = True
            t = datetime.fromtimestamp(t.timestamp() + 1, tz)
            if t.second == 0:
                wrapped = True
                break
        if wrapped:
            continue
        return int(t.timestamp()) * 10**9
