"""Message schedules (ADR-51, ``allow_msg_schedules``, nats-server 2.12+).

A message with ``Nats-Schedule`` (``@at <RFC3339>``, ``@every <duration>``,
a six-field cron pattern or ``@hourly``/``@daily``/...) and
``Nats-Schedule-Target`` is a schedule: it is stored on its own subject
(with ``Nats-Rollup: sub``, so a subject holds one schedule) and, when due,
the stream stores a new message on the target subject: the schedule's body
(or, with ``Nats-Schedule-Source``, the source subject's last message),
without the scheduling headers, plus ``Nats-Scheduler`` (the schedule's
subject) and ``Nats-Schedule-Next`` (``purge`` for a one-off, which removes
the schedule as it is stored, else the next time it fires). Optional
``Nats-Schedule-TTL`` and ``Nats-Schedule-Rollup`` become the produced
message's ``Nats-TTL`` and ``Nats-Rollup``.

The schedules derive from the stored messages (the last schedule on each
subject, and the ``Nats-Schedule-Next`` of what it produced), so they come
back after a restart, clean or not. As in nats-server, a timer never fires
sooner than 250 ms after it was set, and a repeating schedule that missed
runs while the server was down fires once, not once per missed run.

The publish checks and their order follow nats-server's processJetStreamMsg."""

from __future__ import annotations

import heapq
import logging
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from ...gowire import rfc3339
from . import cron
from .. import errors, headers
from ..errors import ApiError
from .expiry import parse_ttl
from ...subjects import subjects_overlap

if TYPE_CHECKING:
    from .stream import Stream

log = logging.getLogger("natslab.jetstream")

NS = 10**9
PATTERN = b"Nats-Schedule"
TIME_ZONE = b"Nats-Schedule-Time-Zone"
SCHED_TTL = b"Nats-Schedule-TTL"
SCHED_ROLLUP = b"Nats-Schedule-Rollup"
TARGET = b"Nats-Schedule-Target"
SOURCE = b"Nats-Schedule-Source"
SCHEDULER = b"Nats-Scheduler"
NEXT = b"Nats-Schedule-Next"
MIN_FIRE = 0.25  # seconds: nats-server's floor for its schedule timer


# -- patterns -----------------------------------------------------------------
_UNITS = {"ns": 1, "us": 1000, "µs": 1000, "μs": 1000, "ms": 10**6, "s": NS, "m": 60 * NS, "h": 3600 * NS}


def go_duration(s: str) -> int | None:
    """time.ParseDuration, in ns; None when Go would refuse it."""
    import re
    m = re.fullmatch(r"([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+|0)", s)
    if not m:
        return None
    if m.group(2) == "0":
        return 0
    total = 0.0
    for num, unit in re.findall(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)", m.group(2)):
        total += float(num) * _UNITS[unit]
    return int(-total if m.group(1) == "-" else total)


def rfc3339_ns(s: str) -> int | None:
    """time.Parse(time.RFC3339, s): a date, T, a time (optional fraction) and
    Z or an offset; ns since the epoch."""
    import re
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})", s)
    if not m:
        return None
    try:
        zone = m.group(8)
        tz = timezone.utc if zone == "Z" else datetime.strptime(zone.replace(":", ""), "%z").tzinfo
        dt = datetime(*(int(m.group(i)) for i in range(1, 7)), tzinfo=tz)
    except ValueError:
        return None
    frac = m.group(7) or ""
    return int(dt.timestamp()) * NS + (int((frac[1:] + "000000000")[:9]) if frac else 0)


def _round_s(ts: int) -> int:
    """time.Round(time.Second): halves away from zero."""
    return (ts + NS // 2) // NS * NS


def next_run(pattern: str, tz, ts: int) -> tuple[int, bool] | None:
    """parseMsgSchedule: (when it next fires in ns, repeats?) after ``ts``;
    None when the pattern is not valid. An empty pattern is no schedule (0)."""
    if not pattern:
        return 0, False
    if pattern.startswith("@at "):
        if tz is not None:
            return None
        at = rfc3339_ns(pattern[4:])
        return None if at is None else (at, False)
    if pattern.startswith("@every "):
        if tz is not None:
            return None
        d = go_duration(pattern[7:])
        if d is None or d < NS:
            return None
        nxt = _round_s(ts) + d
        now = _now()
        if nxt < now:
            nxt = _round_s(now) + d
        return nxt, True
    pattern = cron.PREDEFINED.get(pattern, pattern)
    try:
        nxt = cron.next_fire(pattern, tz, ts)
        now = _now()
        if nxt < now:
            nxt = cron.next_fire(pattern, tz, _round_s(now))
    except (cron.CronError, ValueError, OverflowError):
        return None
    return nxt, True


def _now() -> int:
    from time import time_ns
    return time_ns()


def _zone(hdr: bytes):
    """The Nats-Schedule-Time-Zone as a tzinfo; None when absent."""
    if hdr.find(TIME_ZONE) < 0:
        return None
    name = headers.value(hdr, TIME_ZONE)
    if not name:
        # present but empty is refused like an unknown zone
        raise errors.msg_schedules_tz_invalid()
    if name == "UTC":
        return timezone.utc
    try:
        from zoneinfo import ZoneInfo
        return ZoneInfo(name)
    except Exception:  # zoneinfo raises several kinds for a bad name
        raise errors.msg_schedules_tz_invalid() from None


def schedule_of(hdr: bytes | None, ts: int) -> tuple[int, bool] | None:
    """nextMessageSchedule: the message's schedule (0 when it has none), or
    None when it is not a valid one."""
    if not hdr:
        return 0, False
    try:
        tz = _zone(hdr)
    except ApiError:
        return None
    return next_run(headers.value(hdr, PATTERN), tz, ts)


def _valid_publish_subject(s: str) -> bool:
    return bool(s) and all(t and t not in ("*", ">") for t in s.split(".")) and not any(c in s for c in " \t\r\n")


# -- the publish checks -----------------------------------------------------------
def check_publish(stream: "Stream", subject: str, hdr: bytes, inflight: dict | None) -> tuple[bytes, bool]:
    """The schedule headers of a message being published (only called when
    one is there). Returns the headers to store (a schedule gets
    ``Nats-Rollup: sub``) and whether it is a schedule. ``inflight``: the
    subjects an atomic batch wrote before this message."""
    allowed = bool(stream.config.get("allow_msg_schedules"))
    value = headers.value
    is_schedule = False
    try:
        tz = _zone(hdr)
        run = next_run(value(hdr, PATTERN), tz, _now())
        if run is None:
            raise errors.msg_schedules_pattern_invalid()
    except ApiError:
        if not allowed:
            raise errors.msg_schedules_disabled() from None
        raise
    if run[0]:
        is_schedule = True
        if not allowed:
            raise errors.msg_schedules_disabled()
        ttl = value(hdr, SCHED_TTL)
        if ttl:
            try:
                parse_ttl(ttl)
            except ApiError:
                raise errors.msg_schedules_ttl_invalid() from None
        srollup = value(hdr, SCHED_ROLLUP)
        if srollup and srollup != "sub":
            raise errors.msg_schedules_rollup_invalid()
        if ttl and not stream.config["allow_msg_ttl"]:
            raise errors.msg_ttl_disabled()
        target = value(hdr, TARGET)
        if not _valid_publish_subject(target) or target == subject:
            raise errors.msg_schedules_target_invalid()
        source = value(hdr, SOURCE)
        if source and (source == target or source == subject or not _valid_publish_subject(source)):
            raise errors.msg_schedules_source_invalid()
        subjects = stream.config["subjects"]
        if not any(subjects_overlap(s, target) for s in subjects):
            raise errors.msg_schedules_target_invalid()
        if source and not any(subjects_overlap(s, source) for s in subjects):
            raise errors.msg_schedules_source_invalid()
        rollup = value(hdr, b"Nats-Rollup")
        if not rollup:
            hdr = headers.append(hdr, [("Nats-Rollup", "sub")])
        elif rollup != "sub":
            raise errors.msg_schedules_rollup_invalid()
    nxt = value(hdr, NEXT)
    if nxt:
        # a client may only use Nats-Schedule-Next to purge a schedule
        scheduler = value(hdr, SCHEDULER)
        if nxt != "purge" or not _valid_publish_subject(scheduler) or scheduler == subject:
            raise errors.msg_schedules_scheduler_invalid()
        if not allowed:
            raise errors.msg_schedules_disabled()
        if inflight and scheduler in inflight:
            invalid = not inflight[scheduler][1]
        else:
            sm = stream.store.load_last(scheduler)
            invalid = sm is not None and not value(sm.hdr or b"", PATTERN)
        if invalid:
            raise errors.msg_schedules_scheduler_invalid()
    elif value(hdr, SCHEDULER):
        raise errors.msg_schedules_scheduler_invalid()
    return hdr, is_schedule


# -- running them ---------------------------------------------------------------------
class Scheduler:
    """One stream's schedules: subject -> (sequence of the schedule message,
    when it next fires), and one timer for the earliest."""

    def __init__(self, stream: "Stream") -> None:
        self.stream = stream
        self.by_subject: dict[str, tuple[int, int]] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._timer = None
        self._deadline = 0.0

    def rebuild(self) -> None:
        """At start-up: every subject's schedule from the stored messages."""
        store = self.stream.store
        for seq in store.seqs_with_headers():
            sm = store.load(seq)
            if sm is None or not sm.hdr:
                continue
            self.on_stored(seq, sm.subject, sm.hdr, sm.ts, arm=False)
        self._arm()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def on_stored(self, seq: int, subject: str, hdr: bytes | None, ts: int, arm: bool = True) -> None:
        if not hdr and subject not in self.by_subject:
            return
        """A message was stored: a schedule (re)sets its subject's; anything
        else on a schedule's subject replaces it; a produced message moves
        its scheduler's next run."""
        run = schedule_of(hdr, ts) if hdr and hdr.find(PATTERN) >= 0 else None
        if run is not None and run[0]:
            self._set(subject, seq, run[0])
        elif subject in self.by_subject and not (hdr and headers.value(hdr, SCHEDULER)):
            del self.by_subject[subject]
        if hdr and hdr.find(NEXT) >= 0:
            nxt = headers.value(hdr, NEXT)
            scheduler = headers.value(hdr, SCHEDULER)
            if nxt and nxt != "purge" and scheduler in self.by_subject:
                at = rfc3339_ns(nxt)
                if at is not None:
                    self._set(scheduler, self.by_subject[scheduler][0], at)
        if arm:
            self._arm()

    def _set(self, subject: str, seq: int, at: int) -> None:
        if self.by_subject.get(subject) == (seq, at):
            return  # already on the heap
        self.by_subject[subject] = (seq, at)
        heapq.heappush(self._heap, (at, seq, subject))

    def _arm(self) -> None:
        heap = self._heap
        while heap and self.by_subject.get(heap[0][2]) != (heap[0][1], heap[0][0]):
            heapq.heappop(heap)  # stale: the subject's schedule changed since
        if not heap:
            return
        loop = self.stream.js.messaging.loop
        now = loop.time()
        delay = max(MIN_FIRE, (heap[0][0] - _now()) / NS)
        deadline = now + delay
        if self._timer is not None:
            if deadline >= self._deadline:
                return  # already set to fire sooner
            self._timer.cancel()
        self._deadline = deadline
        self._timer = loop.call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        stream = self.stream
        if stream.closed:
            return
        now = _now()
        due = []
        heap = self._heap
        seen = set()
        while heap and heap[0][0] <= now:
            at, seq, subject = heapq.heappop(heap)
            if self.by_subject.get(subject) == (seq, at) and subject not in seen:
                seen.add(subject)
                due.append((seq, subject, at))
        for seq, subject, at in sorted(due):
            try:
                self._produce(seq, subject, at)
            except ApiError as e:
                log.warning("stream %s: scheduled message from %s not stored: %s", stream.name, subject,
                            e.description)
            except Exception:  # never let one schedule stop the others
                log.exception("stream %s: schedule %s failed", stream.name, subject)
        self._arm()

    def _produce(self, seq: int, subject: str, at: int) -> None:
        stream = self.stream
        store = stream.store
        sm = store.load(seq)
        if sm is None or not sm.hdr:
            self.by_subject.pop(subject, None)
            return
        hdr = sm.hdr
        value = headers.value
        try:
            tz = _zone(hdr)
        except ApiError:
            tz = False
        run = None if tz is False else next_run(value(hdr, PATTERN), tz, at)
        target = value(hdr, TARGET)
        ttl = value(hdr, SCHED_TTL)
        if run is None or not run[0] or not target or (ttl and _bad_ttl(ttl)):
            self.by_subject.pop(subject, None)
            return
        rollup = value(hdr, SCHED_ROLLUP)
        body_hdr, body = hdr, sm.data
        source = value(hdr, SOURCE)
        if source:
            src = store.load_last(source)
            if src is not None:
                body_hdr, body = src.hdr, src.data
        out = _strip(body_hdr)
        extra = [("Nats-Scheduler", subject)]
        if run[1]:
            extra.append(("Nats-Schedule-Next", rfc3339(run[0])))
        else:
            extra.append(("Nats-Schedule-Next", "purge"))
        if ttl:
            extra.append(("Nats-TTL", ttl))
        if rollup:
            extra.append(("Nats-Rollup", rollup))
        out = headers.append(out, extra)
        if not run[1]:
            self.by_subject.pop(subject, None)  # a one-off runs once
        else:
            self._set(subject, seq, run[0])  # (storing the produced message sets the same)
        process_scheduled(stream, target, out, body)


def _bad_ttl(ttl: str) -> bool:
    try:
        parse_ttl(ttl)
        return False
    except ApiError:
        return True


_STRIP_PREFIXES = (b"nats-schedule", b"nats-expected-")
_STRIP_NAMES = (b"nats-msg-id", b"nats-ttl", b"nats-rollup")


def _strip(hdr: bytes | None) -> bytes | None:
    """The scheduling headers (Nats-Schedule*, Nats-Scheduler) and those that
    could stop the produced message being stored come off."""
    if not hdr:
        return None
    lines = hdr.split(b"\r\n")
    kept = []
    for ln in lines[1:]:
        if not ln:
            continue
        name = ln.split(b":", 1)[0].strip().lower()
        if name.startswith(_STRIP_PREFIXES) or name in _STRIP_NAMES:
            continue
        kept.append(ln)
    if not kept:
        return None
    return lines[0] + b"\r\n" + b"\r\n".join(kept) + b"\r\n\r\n"


# -- the stream's side ------------------------------------------------------------------
def after_store(stream: "Stream", seq: int, subject: str, hdr: bytes | None, ts: int) -> None:
    """Called by the stream after it stored a message carrying headers: a
    produced one-off (Nats-Schedule-Next: purge) removes its schedule, and
    the scheduler hears of schedules set, replaced or moved."""
    if hdr and hdr.find(NEXT) >= 0 and headers.value(hdr, NEXT) == "purge":
        scheduler = headers.value(hdr, SCHEDULER)
        if scheduler:
            stream._purge(scheduler, 0, 0)
    stream._scheduler.on_stored(seq, subject, hdr, ts)


def process_scheduled(stream: "Stream", subject: str, hdr: bytes, payload: bytes) -> None:
    """Store what a schedule produced, as nats-server stores it (as a sourced
    message: the client-side header checks were made when the schedule was
    published)."""
    if stream.config["sealed"]:
        raise errors.stream_sealed()
    mms = stream.config["max_msg_size"]
    if mms >= 0 and len(hdr) + len(payload) > mms:
        raise errors.stream_msg_too_big()
    value = headers.value
    ttl = 0
    t = value(hdr, b"Nats-TTL")
    if t:
        ttl = parse_ttl(t)
    rollup = value(hdr, b"Nats-Rollup").lower()
    stream.store_checked(subject, b"", hdr, payload, "", ttl, False, rollup)
