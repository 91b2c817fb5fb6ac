"""The consumers pane's time slider (issue #30): the table's counters, the
ruler's lanes and the details as they were at a past moment, and what
happened next.

``[`` / ``]`` step one second back / forward, ``{`` / ``}`` jump to the
previous / next event of the selected consumer (the state just after it),
``L`` goes back to live, ``E`` writes the text report of the range from the
moment shown to now (the whole history when live) to a file (the user data
dir's ``history/`` offered, or a path typed). The history is the embedded broker's own (exact) or, on a remote
server, what the app observed since it connected (``app.history``); the
views do not care which. Consumers that did not exist at that moment are
left out of the table and the ruler.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_left, bisect_right
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from rich.text import Text

from ...history import NS, PastState, Scrub, clock, describe, lane_of, report, state_at, state_line, stream_range_at

SECOND = NS


def past_row(c, st: PastState, row_of) -> tuple:
    """A table row (``row_of``: consumer_row) with the counters of ``st``."""
    pc = replace(c, delivered_consumer_seq=st.delivered_consumer_seq, delivered_stream_seq=st.delivered_stream_seq,
                 ack_floor_consumer_seq=st.ack_floor_consumer_seq, ack_floor_stream_seq=st.ack_floor_stream_seq,
                 num_ack_pending=st.num_ack_pending, num_redelivered=st.num_redelivered,
                 num_pending=st.num_pending or 0, num_waiting=0)
    row = list(row_of(pc, ""))
    if st.num_pending is None:
        row[3] = "?"  # not derivable from the history (filtered, or not a limits stream)
    row[4] = "-"  # waiting pulls are not in the history
    return tuple(row)


def marker(t: int, now: int, stable: bool = False) -> str:
    """``⏪ 12:03:05.2 (-41 s) · L live``."""
    if stable:  # snapshots: the wall clock would differ on every run
        return "⏪ hh:mm:ss.s · L live"
    return f"⏪ {clock(t)} (-{(now - t) / NS:.0f} s) · L live"


_AXIS_KINDS = ("deliver", "ack", "nak", "term", "progress", "expired", "max_deliveries")


def delivery_log_at(scrub: Scrub, name: str, t: int, newest: int | None = None) -> tuple[dict[int, list], float | None, int]:
    """The consumer's events up to ``t`` as the pull hand's delivery log keeps
    them (seq -> DeliveryEvents, ``at`` in seconds on the history's clock),
    for the time axis; a new incarnation starts it afresh. With ``newest``
    only the newest that many sequences are made into DeliveryEvents (the
    axis draws no more: with a full ring each step made ~40,000 of them);
    also returned: the first event's time and how many sequences were left out."""
    from ...client.models import DeliveryEvent

    mine = [e for e in scrub.incarnation_upto(name, t) if e.kind in _AXIS_KINDS]
    if not mine:
        return {}, None, 0
    keep, left_out = None, 0
    if newest is not None:
        seqs = {s for e in mine for s in e.seqs}
        if len(seqs) > newest:
            keep = set(sorted(seqs)[-newest:])
            left_out = len(seqs) - newest
    log: dict[int, list] = {}
    stream = scrub.stream
    for e in mine:
        delay = int(e.extra) / NS if e.kind == "nak" and e.extra else None
        for s in e.seqs:
            if keep is None or s in keep:
                log.setdefault(s, []).append(DeliveryEvent(stream, name, s, e.kind, e.dc or 1, e.t / NS, "app", delay))
    return log, min(e.t for e in mine) / NS, left_out


def past_details(scrub: Scrub, name: str, st: PastState, t: int, stable: bool = False,
                 consumer=None, width: int = 76) -> Text:
    """The selected consumer at ``t``, the next events after it and (with
    ``consumer``, its ConsumerSummary) its deliveries on a time axis up to ``t``."""
    text = Text()
    text.append(f"{name} at {'this moment' if stable else clock(t)}\n", style="bold")
    text.append(state_line(st) + "\n")
    nxt = scrub.after(t, name, 6)
    text.append("What happened next:\n", style="bold")
    if not nxt:
        text.append("  nothing more (this is the present)\n")
    for e in nxt:
        when = "" if stable else f"+{(e.t - t) / NS:.1f} s  "
        text.append(f"  {when}{describe(e)}\n")
    if consumer is not None:
        from ...widgets.timeline import render_time_axis

        from ...widgets.timeline import MAX_ROWS

        log, first_at, left_out = delivery_log_at(scrub, name, t, newest=MAX_ROWS)
        if log:
            text.append("\n")
            text.append(render_time_axis(f"{name} until then", log, consumer.ack_wait, t / NS, width,
                                         seconds_per_cell=10.0 if stable else 1.0,
                                         backoff=[b / NS for b in (consumer.config.get("backoff") or [])],
                                         max_deliver=consumer.max_deliver, first_at=first_at, not_drawn=left_out))
    return text


def step_target(scrub: Scrub, name: str | None, t: int | None, now: int, how: str) -> int | None:
    """Where a key moves the slider from ``t`` (None: live); None again: live."""
    if how in ("back", "forward"):
        start = now if t is None else t
        target = start - SECOND if how == "back" else start + SECOND
        if scrub.events:
            target = max(target, scrub.events[0].t)
        return None if target >= now else target
    mine = scrub.times_of(name) if name else []
    if how == "prev":
        start = now + 1 if t is None else t
        i = bisect_left(mine, start)
        return mine[i - 1] if i else (mine[0] if mine else t)
    if t is None:
        return None
    i = bisect_right(mine, t)
    return mine[i] if i < len(mine) else None


def default_report_path(directory: Path, stream: str, name: str, now: int) -> Path:
    stamp = datetime.fromtimestamp(now / NS).strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{stream}-{name}")
    return directory / f"history-{safe}-{stamp}.txt"


def export_report(events, stream: str, name: str, t0: int | None, now: int, path: Path) -> Path:
    """Write the report of ``t0``..``now`` (``t0`` None: from the first event) to ``path``."""
    start = t0 if t0 is not None else (min((e.t for e in events), default=now) - 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report(events, stream, name, start, now))
    return path


def now_ns() -> int:
    return time.time_ns()


def rates_until(rates, t_mono: float):
    """A copy of the pane's rates (ConsumerRates / StreamRates, sampled by its
    own polls, on the monotonic clock) with only the samples up to ``t_mono``:
    the charts as they were then."""
    if rates is None:
        return None
    past = type(rates)(rates.keep)
    past.samples.extend(x for x in rates.samples if x[0] <= t_mono)
    return past


def monotonic_at(t: int) -> float:
    """The monotonic clock's reading at wall-clock ``t`` (ns)."""
    return time.monotonic() - (time.time_ns() - t) / NS


__all__ = ["Scrub", "rates_until", "monotonic_at", "past_row", "marker", "past_details", "step_target", "export_report", "default_report_path", "lane_of",
           "state_at",
           "stream_range_at", "now_ns"]
