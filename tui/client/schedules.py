"""Message schedule patterns as the workbench reads them: when one fires next.

A ``Nats-Schedule`` value is ``@at <RFC 3339>`` (once), ``@every <duration>``
(at least a second), a six-field cron pattern (seconds first) or one of the
``@hourly``/``@daily``-style names. The server decides when a schedule really
fires and refuses a pattern it cannot read; this module only answers "when
next?" for the composer's answer and the message browser, so it never has to
be stricter than the server (a pattern it cannot read gives ``None``).

The composer's shorthand ``+10s`` (or ``in 10s``) is turned into an ``@at``
with the time it means, in UTC: typing an RFC 3339 time by hand is slow.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone, tzinfo

PREDEFINED = {"@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
              "@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *",
              "@hourly": "0 0 * * * *"}
_MONTHS = {n: i + 1 for i, n in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {n: i for i, n in enumerate("sun mon tue wed thu fri sat".split())}
# (lowest, highest, names) of second, minute, hour, day of month, month, day of week
_FIELDS = ((0, 59, None), (0, 59, None), (0, 23, None), (1, 31, None), (1, 12, _MONTHS), (0, 6, _DAYS))
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_DURATION = re.compile(r"(?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|ms|s|m|h))+")
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|ms|s|m|h)")
LOOKAHEAD_DAYS = 5 * 366  # a cron pattern that does not fire within this never does, for us


def duration_seconds(text: str) -> float | None:
    """A Go duration (``5s``, ``1m30s``, ``250ms``) in seconds; None if it is not one."""
    text = text.strip()
    if not _DURATION.fullmatch(text):
        return None
    return sum(float(n) * _UNITS[u] for n, u in _PART.findall(text))


def parse_rfc3339(text: str) -> datetime | None:
    """``2026-12-01T12:03:05Z`` or with an offset and a fraction; None if it is not one."""
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})", text.strip())
    if not m:
        return None
    frac = (m.group(2) or "")[:7]  # Python reads at most microseconds
    zone = "+00:00" if m.group(3) == "Z" else m.group(3)
    try:
        return datetime.fromisoformat(m.group(1) + frac + zone)
    except ValueError:
        return None


def format_rfc3339(when: datetime) -> str:
    """UTC, to the millisecond when there is a fraction: what ``@at`` takes."""
    when = when.astimezone(timezone.utc)
    if when.microsecond:
        return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def expand_shorthand(text: str, now: datetime | None = None) -> str:
    """``+10s`` / ``in 1m30s`` becomes ``@at <now + that>``; anything else is returned as typed."""
    text = text.strip()
    m = re.fullmatch(r"(?:\+|in\s+)(\S+)", text)
    if not m:
        return text
    seconds = duration_seconds(m.group(1))
    if seconds is None:
        return text
    now = now or datetime.now(timezone.utc)
    return "@at " + format_rfc3339(now + timedelta(seconds=seconds))


def zone(name: str) -> tzinfo | None:
    """A Nats-Schedule-Time-Zone as a tzinfo (UTC when empty); None for a name this machine does not know."""
    if not name or name == "UTC":
        return timezone.utc
    try:
        from zoneinfo import ZoneInfo
        return ZoneInfo(name)
    except (ValueError, KeyError, OSError):  # zoneinfo's ways of not knowing a zone
        return None


def repeats(pattern: str) -> bool:
    return not pattern.strip().startswith("@at ")


def next_fire(pattern: str, after: datetime, tz: tzinfo | None = None) -> datetime | None:
    """The first time after ``after`` the pattern fires (for ``@at``: its
    time, even when past); None when it is not a pattern this module reads."""
    pattern = pattern.strip()
    if pattern.startswith("@at "):
        return parse_rfc3339(pattern[4:])
    if pattern.startswith("@every "):
        seconds = duration_seconds(pattern[7:])
        if seconds is None or seconds < 1:
            return None
        # the server counts from the second the schedule was stored (rounded)
        base = after.replace(microsecond=0) + timedelta(seconds=1 if after.microsecond >= 500_000 else 0)
        return base + timedelta(seconds=seconds)
    return _next_cron(PREDEFINED.get(pattern, pattern), after, tz or timezone.utc)


def every_next(pattern: str, stored: datetime, now: datetime) -> datetime | None:
    """An ``@every`` schedule stored at ``stored``: its first run after ``now``."""
    seconds = duration_seconds(pattern.strip()[7:])
    first = next_fire(pattern, stored)
    if first is None or seconds is None:
        return None
    if first > now:
        return first
    missed = int((now - first).total_seconds() // seconds) + 1
    return first + timedelta(seconds=missed * seconds)


# -- cron ------------------------------------------------------------------------------
def _values(expr: str, lo: int, hi: int, names) -> set[int] | None:
    def number(word: str) -> int | None:
        if names and word.lower() in names:
            return names[word.lower()]
        return int(word) if word.isdigit() else None

    out: set[int] = set()
    for part in expr.split(","):
        rng, _, step_text = part.partition("/")
        step = int(step_text) if step_text.isdigit() else (1 if not step_text else 0)
        if rng in ("*", "?"):
            start, end = lo, hi
        else:
            first, _, last = rng.partition("-")
            start = number(first)
            end = number(last) if last else (hi if step_text else start)
            if start is None or end is None:
                return None
        if step < 1 or start < lo or end > hi or start > end:
            return None
        out.update(range(start, end + 1, step))
    return out


def _next_cron(pattern: str, after: datetime, tz: tzinfo) -> datetime | None:
    fields = pattern.split()
    if len(fields) != 6:
        return None
    parsed = [_values(f, *bounds) for f, bounds in zip(fields, _FIELDS)]
    if any(p is None for p in parsed):
        return None
    secs, mins, hours, doms, months, dows = (sorted(p) for p in parsed)  # type: ignore[arg-type]
    # as cron (and nats-server): with both day fields restricted, either one matching will do
    any_day = fields[3] in ("*", "?") or fields[5] in ("*", "?")
    start = after.astimezone(tz).replace(microsecond=0)
    day = start.replace(hour=0, minute=0, second=0)
    for _ in range(LOOKAHEAD_DAYS):
        dom_ok, dow_ok = day.day in doms, (day.weekday() + 1) % 7 in dows
        if day.month in months and ((dom_ok and dow_ok) if any_day else (dom_ok or dow_ok)):
            for h in hours:
                if day.date() == start.date() and h < start.hour:
                    continue
                for mi in mins:
                    for s in secs:
                        when = day.replace(hour=h, minute=mi, second=s)
                        if when > start:
                            return when
        day = (day.replace(tzinfo=None) + timedelta(days=1)).replace(tzinfo=tz)
    return None
