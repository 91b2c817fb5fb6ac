"""The workbench's reading of schedule patterns ("when does it fire next?",
shown in the composer's answer and the message browser) agrees with the
broker's own cron (server/jetstream/stream/cron.py, itself tested against
nats-server in tests/test_js_schedules.py), and the composer's +10s shorthand
becomes the @at the server takes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from natslab.server.jetstream.stream import cron
from natslab.tui.client import schedules

PATTERNS = ["0 */5 * * * *", "*/10 * * * * *", "0 30 9 * * mon-fri", "0 0 0 1 * *", "0 0 12 * * sun",
            "15,45 0 8-10 * jan,jul *", "0 0 0 29 2 *", "0 0 6 13 * fri", "@daily", "@hourly", "@weekly",
            "@monthly", "@yearly", "0 0 0 1-7 * mon"]
STARTS = [datetime(2026, 12, 1, 12, 0, 0, 400000, tzinfo=timezone.utc),
          datetime(2026, 12, 31, 23, 59, 59, tzinfo=timezone.utc),
          datetime(2027, 2, 28, 9, 30, 0, tzinfo=timezone.utc)]


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("zone", [None, "Europe/Amsterdam", "America/New_York"])
def test_cron_next_fire_agrees_with_the_broker(pattern, zone):
    tz = ZoneInfo(zone) if zone else None
    for start in STARTS:
        ours = schedules.next_fire(pattern, start, tz)
        ns = int(start.timestamp()) * 10**9 + start.microsecond * 1000
        theirs = cron.next_fire(cron.PREDEFINED.get(pattern, pattern), tz, ns)
        assert ours is not None and int(ours.timestamp()) * 10**9 == theirs, (pattern, zone, start)


@pytest.mark.parametrize("pattern", ["* * * * *", "61 * * * * *", "0 0 0 30 feb *", "bad", "@every 500ms",
                                     "@every 1x", "@at 2026-12-01"])
def test_patterns_the_server_refuses_have_no_next_fire(pattern):
    assert schedules.next_fire(pattern, STARTS[0]) is None


def test_every_and_at():
    start = STARTS[0]
    assert schedules.next_fire("@every 5s", start) == datetime(2026, 12, 1, 12, 0, 5, tzinfo=timezone.utc)
    assert schedules.next_fire("@every 1m30s", start) == datetime(2026, 12, 1, 12, 1, 30, tzinfo=timezone.utc)
    assert schedules.next_fire("@at 2026-12-01T12:03:05+01:00", start) == \
        datetime(2026, 12, 1, 11, 3, 5, tzinfo=timezone.utc)
    # stored 12 s ago, every 5 s: the runs were at -7 s and -2 s, the next is in 3 s
    assert schedules.every_next("@every 5s", start - timedelta(seconds=12), start) == \
        datetime(2026, 12, 1, 12, 0, 3, tzinfo=timezone.utc)


def test_shorthand():
    now = STARTS[0]
    assert schedules.expand_shorthand("+10s", now) == "@at 2026-12-01T12:00:10.400Z"
    assert schedules.expand_shorthand("in 1m", now.replace(microsecond=0)) == "@at 2026-12-01T12:01:00Z"
    assert schedules.expand_shorthand("@every 5s", now) == "@every 5s"
    assert schedules.expand_shorthand("+soon", now) == "+soon"  # not a duration: the server says why
