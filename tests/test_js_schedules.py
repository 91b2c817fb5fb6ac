"""Message schedules (ADR-51, ``allow_msg_schedules``), differential: the same
assertions hold on natslab's broker and on nats-server 2.15.1. Schedules are
published as plain requests with the ``Nats-Schedule*`` headers. What a
schedule produces is stored in the stream only (nats-server does not route it
to core subscribers), so the tests read it back with MSG.GET and compare its
stored time with the time it was due."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from datetime import datetime, timedelta, timezone

import pytest

from conftest import connect, eventually

T = "Nats-Schedule-Target"


async def req(nc, subject: str, body=b"", headers=None) -> dict:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    msg = await nc.request(subject, data, timeout=2, headers=headers)
    return json.loads(msg.data)


def err(r: dict) -> tuple[int, int, str]:
    e = r["error"]
    return e["code"], e["err_code"], e["description"]


def at(dt: datetime, frac: bool = True) -> str:
    return "@at " + dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if frac else "%Y-%m-%dT%H:%M:%SZ")


def parse_time(s: str) -> datetime:
    """An RFC 3339 time with up to nanoseconds (datetime keeps micro)."""
    s = s.rstrip("Z")
    if "." in s:
        head, frac = s.split(".")
        s = f"{head}.{frac[:6]:0<6}"
    return datetime.fromisoformat(s).replace(tzinfo=timezone.utc)


async def last(nc, stream: str, subject: str) -> dict | None:
    r = await req(nc, f"$JS.API.STREAM.MSG.GET.{stream}", {"last_by_subj": subject})
    if "error" in r:
        return None
    m = r["message"]
    return {"seq": m["seq"], "hdrs": base64.b64decode(m.get("hdrs", "")), "data": base64.b64decode(m.get("data", "")),
            "time": parse_time(m["time"])}


async def wait_stored(nc, stream: str, subject: str, after_seq: int = 0, timeout: float = 5.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = await last(nc, stream, subject)
        if m and m["seq"] > after_seq:
            return m
        await asyncio.sleep(0.02)
    raise AssertionError(f"nothing stored on {subject} within {timeout}s")


async def settled_subjects(nc, stream: str, want: dict, timeout: float = 5.0) -> dict:
    """subjects() once it is ``want``, or as it is when ``timeout`` runs out:
    nats-server purges a fired schedule on the stream's goroutine."""
    got = {}

    async def holds():
        got.clear()
        got.update(await subjects(nc, stream))
        return got == want
    await eventually(holds, timeout)
    return got


async def subjects(nc, stream: str) -> dict:
    return (await req(nc, f"$JS.API.STREAM.INFO.{stream}", {"subjects_filter": ">"}))["state"].get("subjects") or {}


SCHED = {"name": "S", "subjects": ["s.>"], "allow_msg_schedules": True}


async def test_allow_msg_schedules_config(nc, js):
    """The essence of nats.py's test_stream_allow_msg_schedules, and the
    config rules nats-server applies."""
    await js.add_stream(name="SCHEDULES", subjects=["test"], allow_msg_schedules=True)
    assert (await js.stream_info("SCHEDULES")).config.allow_msg_schedules is True
    await js.add_stream(name="NOSCHEDULES", subjects=["foo"], allow_msg_schedules=False)
    assert (await js.stream_info("NOSCHEDULES")).config.allow_msg_schedules is not True
    await js.add_stream(name="DEFAULT", subjects=["bar"])
    assert (await js.stream_info("DEFAULT")).config.allow_msg_schedules is not True
    r = await req(nc, "$JS.API.STREAM.CREATE.S", dict(SCHED, discard="new"))
    assert err(r) == (500, 10052, "message scheduling cannot use discard new")
    r = await req(nc, "$JS.API.STREAM.CREATE.S", dict(SCHED, allow_msg_counter=True))
    assert err(r) == (500, 10052, "counter stream cannot use message schedules")
    r = await req(nc, "$JS.API.STREAM.CREATE.S", SCHED)
    cfg = r["config"]
    # schedules are rollups of their subject: roll-ups are turned on
    assert (cfg["allow_rollup_hdrs"], cfg["deny_purge"], cfg["metadata"]["_nats.req.level"]) == (True, False, "2")
    r = await req(nc, "$JS.API.STREAM.UPDATE.S", {"name": "S", "subjects": ["s.>"]})
    assert err(r) == (500, 10052, "message schedules can not be disabled")
    r = await req(nc, "$JS.API.STREAM.UPDATE.NOSCHEDULES", {"name": "NOSCHEDULES", "subjects": ["foo"],
                                                            "allow_msg_schedules": True})
    assert r["config"]["allow_msg_schedules"] is True


async def test_schedule_refusals(nc):
    await req(nc, "$JS.API.STREAM.CREATE.S", SCHED)
    await req(nc, "$JS.API.STREAM.CREATE.P", {"name": "P", "subjects": ["p.>"]})
    soon = at(datetime.now(timezone.utc) + timedelta(hours=1), frac=False)
    disabled = (400, 10188, "message schedules is disabled")
    pattern = (400, 10189, "message schedules pattern is invalid")
    target = (400, 10190, "message schedules target is invalid")
    source = (400, 10203, "message schedules source is invalid")
    scheduler = (400, 10212, "message schedules invalid scheduler")
    cases = [
        ("p.a", {"Nats-Schedule": soon, T: "p.b"}, disabled),
        ("p.a", {"Nats-Schedule": "bad"}, disabled),
        ("p.a", {"Nats-Schedule-Next": "purge", "Nats-Scheduler": "p.x"}, disabled),
        ("p.a", {"Nats-Scheduler": "p.x"}, scheduler),
        ("s.a", {"Nats-Schedule": "bad", T: "s.b"}, pattern),
        ("s.a", {"Nats-Schedule": "@at 2020-01-01", T: "s.b"}, pattern),
        ("s.a", {"Nats-Schedule": "@every 500ms", T: "s.b"}, pattern),  # at least a second
        ("s.a", {"Nats-Schedule": "@every 1x", T: "s.b"}, pattern),
        ("s.a", {"Nats-Schedule": "* * * * *", T: "s.b"}, pattern),  # cron needs six fields
        ("s.a", {"Nats-Schedule": "61 * * * * *", T: "s.b"}, pattern),
        ("s.a", {"Nats-Schedule": "0 0 0 30 feb *", T: "s.b"}, pattern),  # never
        ("s.a", {"Nats-Schedule": soon}, target),
        ("s.a", {"Nats-Schedule": soon, T: "s.a"}, target),
        ("s.a", {"Nats-Schedule": soon, T: "x.b"}, target),  # not a subject of the stream
        ("s.a", {"Nats-Schedule": soon, T: "s.*"}, target),
        ("s.a", {"Nats-Schedule": soon, T: "s.b", "Nats-Schedule-TTL": "x"},
         (400, 10191, "message schedules invalid per-message TTL")),
        ("s.a", {"Nats-Schedule": soon, T: "s.b", "Nats-Schedule-TTL": "5s"}, (400, 10166, "per-message TTL is disabled")),
        ("s.a", {"Nats-Schedule": soon, T: "s.b", "Nats-Schedule-Rollup": "all"},
         (400, 10192, "message schedules invalid rollup")),
        ("s.a", {"Nats-Schedule": soon, T: "s.b", "Nats-Rollup": "all"}, (400, 10192, "message schedules invalid rollup")),
        ("s.a", {"Nats-Schedule": soon, T: "s.b", "Nats-Schedule-Source": "s.b"}, source),
        ("s.a", {"Nats-Schedule": soon, T: "s.b", "Nats-Schedule-Source": "x.c"}, source),
        ("s.a", {"Nats-Schedule": soon, T: "s.b", "Nats-Schedule-Time-Zone": "Europe/Amsterdam"}, pattern),
        ("s.a", {"Nats-Schedule": "0 0 * * * *", T: "s.b", "Nats-Schedule-Time-Zone": "Nope/Zone"},
         (400, 10223, "message schedules time zone is invalid")),
        ("s.x", {"Nats-Schedule-Next": "later", "Nats-Scheduler": "s.a"}, scheduler),
        ("s.x", {"Nats-Schedule-Next": "purge", "Nats-Scheduler": "s.x"}, scheduler),
        ("s.x", {"Nats-Scheduler": "s.a"}, scheduler),
    ]
    for subject, hdrs, want in cases:
        r = await req(nc, subject, b"payload", headers=hdrs)
        assert "error" in r and err(r) == want, (subject, hdrs, r)
    assert await subjects(nc, "S") == {}
    # what is accepted: cron with a time zone, the predefined forms
    for pat, tz in (("0 0 * * * *", "Europe/Amsterdam"), ("@daily", None), ("0 30 9 * * mon-fri", None),
                    ("@hourly", None), ("*/10 * * * * *", None)):
        h = {"Nats-Schedule": pat, T: "s.b"}
        if tz:
            h["Nats-Schedule-Time-Zone"] = tz
        assert "error" not in await req(nc, "s.a", b"p", headers=h), pat
    # each replaced the one before (a schedule is a rollup of its subject)
    assert await subjects(nc, "S") == {"s.a": 1}
    # a client may purge a schedule with Nats-Schedule-Next: purge; not a subject holding something else
    await req(nc, "s.plain", b"x")
    r = await req(nc, "s.x", b"", headers={"Nats-Schedule-Next": "purge", "Nats-Scheduler": "s.plain"})
    assert err(r) == scheduler
    assert "error" not in await req(nc, "s.x", b"", headers={"Nats-Schedule-Next": "purge", "Nats-Scheduler": "s.a"})
    assert await subjects(nc, "S") == {"s.plain": 1, "s.x": 1}


async def test_at_schedule_fires_on_time(nc):
    await req(nc, "$JS.API.STREAM.CREATE.S", dict(SCHED, allow_msg_ttl=True))
    due = datetime.now(timezone.utc) + timedelta(seconds=1.2)
    hdrs = {"Nats-Schedule": at(due), T: "s.b", "X-Keep": "k", "Nats-Msg-Id": "mid", "Nats-Schedule-TTL": "5s",
            "Nats-Expected-Last-Sequence": "0"}
    assert await req(nc, "s.a", b"payload", headers=hdrs) == {"stream": "S", "seq": 1}
    stored = await last(nc, "S", "s.a")
    assert stored["hdrs"].endswith(b"\r\nNats-Rollup: sub\r\n\r\n")  # added to the schedule
    m = await wait_stored(nc, "S", "s.b")
    late = (m["time"] - due).total_seconds()
    # never early; on time within what a busy 2-core machine may pause a
    # process for (about 50 ms late on a quiet one: a bench figure, not a test's)
    assert 0 <= late < 1.0, late
    # the scheduling headers and those that could stop it being stored are gone; the TTL comes from the schedule
    assert m["hdrs"] == b"NATS/1.0\r\nX-Keep: k\r\nNats-Scheduler: s.a\r\nNats-Schedule-Next: purge\r\nNats-TTL: 5s\r\n\r\n"
    assert (m["seq"], m["data"]) == (2, b"payload")
    # a one-off schedule is purged when it fires (on nats-server, a moment after the target is stored)
    assert await settled_subjects(nc, "S", {"s.b": 1}) == {"s.b": 1}


def fired_on_the_second(m: dict, nxt: datetime, due: datetime | None) -> None:
    """A message of a schedule due every second: fired in the second it was due (a second whose
    start is when it was due: never early; late by less than a second, what
    a busy machine may take), and it names the next whole second as when it
    fires next."""
    assert nxt.microsecond == 0, nxt
    assert nxt == m["time"].replace(microsecond=0) + timedelta(seconds=1), (m["time"], nxt)
    if due is not None:  # (the one before said when: this is that one or, if the test looked late, a later one)
        assert m["time"] >= due and (nxt - due) >= timedelta(seconds=1), (m["time"], due, nxt)


async def test_every_and_cron_schedules_repeat(nc):
    await req(nc, "$JS.API.STREAM.CREATE.S", SCHED)
    assert "error" not in await req(nc, "s.e", b"tick", headers={"Nats-Schedule": "@every 1s", T: "s.f", "X-K": "k"})
    seq, due = 0, None
    for _ in range(3):
        m = await wait_stored(nc, "S", "s.f", seq)
        seq = m["seq"]
        nxt = m["hdrs"].split(b"Nats-Schedule-Next: ")[1].split(b"\r\n")[0].decode()
        fired_on_the_second(m, parse_time(nxt), due)
        due = parse_time(nxt)
        assert m["hdrs"] == b"NATS/1.0\r\nX-K: k\r\nNats-Scheduler: s.e\r\nNats-Schedule-Next: %s\r\n\r\n" % nxt.encode()
        assert m["data"] == b"tick"
    # a plain message on the schedule's subject replaces the schedule
    await req(nc, "s.e", b"plain")
    # a time to pass, not a state: a schedule that no longer fires shows only
    # as time goes by (from after the replacing message was stored)
    await asyncio.sleep(1.5)
    assert (await last(nc, "S", "s.f"))["seq"] <= seq + 1  # at most one already under way
    assert "error" not in await req(nc, "s.c", b"cron", headers={"Nats-Schedule": "* * * * * *", T: "s.d"})
    first = await wait_stored(nc, "S", "s.d")
    second = await wait_stored(nc, "S", "s.d", first["seq"])
    # each fires in the second it is due, and names the next (the test may look a second or more late)
    due = None
    for m in (first, second):
        nxt = m["hdrs"].split(b"Nats-Schedule-Next: ")[1].split(b"\r\n")[0].decode()
        fired_on_the_second(m, parse_time(nxt), due)
        due = parse_time(nxt)


async def test_schedule_source_and_rollup(nc):
    await req(nc, "$JS.API.STREAM.CREATE.S", SCHED)
    await req(nc, "s.src", b"from source", headers={"Y": "1"})
    for _ in range(2):
        await req(nc, "s.h", b"old")
    due = datetime.now(timezone.utc) + timedelta(seconds=1)
    r = await req(nc, "s.g", b"own", headers={"Nats-Schedule": at(due), T: "s.h", "Nats-Schedule-Source": "s.src",
                                              "Nats-Schedule-Rollup": "sub"})
    assert "error" not in r
    m = await wait_stored(nc, "S", "s.h", 3)
    # the source's last message is what is produced; the schedule's rollup replaces the target's messages
    assert m["data"] == b"from source"
    assert m["hdrs"] == b"NATS/1.0\r\nY: 1\r\nNats-Scheduler: s.g\r\nNats-Schedule-Next: purge\r\nNats-Rollup: sub\r\n\r\n"
    assert await settled_subjects(nc, "S", {"s.src": 1, "s.h": 1}) == {"s.src": 1, "s.h": 1}


async def test_batch_with_a_schedule(nc):
    await req(nc, "$JS.API.STREAM.CREATE.S", dict(SCHED, allow_atomic=True))
    due = datetime.now(timezone.utc) + timedelta(seconds=1)
    b = {"Nats-Batch-Id": "b"}
    assert (await nc.request("s.a", b"x", timeout=2, headers={**b, "Nats-Batch-Sequence": "1",
                                                               "Nats-Schedule": at(due), T: "s.t"})).data == b""
    r = await req(nc, "s.x", b"", headers={**b, "Nats-Batch-Sequence": "2", "Nats-Batch-Commit": "1",
                                           "Nats-Schedule-Next": "purge", "Nats-Scheduler": "s.a"})
    assert r == {"stream": "S", "seq": 2, "batch": "b", "count": 2}
    # the batch's own purge removed the schedule it set: nothing fires (a
    # time to pass, not a state: half a second past when it was due)
    await asyncio.sleep(max(0.0, (due - datetime.now(timezone.utc)).total_seconds() + 0.5))
    assert await subjects(nc, "S") == {"s.x": 1}


@pytest.mark.parametrize("how", ["restart", "kill"])
async def test_schedules_survive_restart(server, how):
    nc = await connect(server.url)
    await req(nc, "$JS.API.STREAM.CREATE.S", SCHED)
    # the repeating one in a stream of its own: within one stream a schedule due less than 250 ms
    # after another fired waits for nats-server's timer floor
    await req(nc, "$JS.API.STREAM.CREATE.R", {"name": "R", "subjects": ["r.>"], "allow_msg_schedules": True})
    # due well after the restart (a loaded machine can take a second or two to start a Python
    # process): a schedule found already due at start fires after the 250 ms floor on both
    due = datetime.now(timezone.utc) + timedelta(seconds=4)
    assert "error" not in await req(nc, "s.a", b"later", headers={"Nats-Schedule": at(due), T: "s.b"})
    assert "error" not in await req(nc, "r.e", b"tick", headers={"Nats-Schedule": "@every 1s", T: "r.f"})
    await wait_stored(nc, "R", "r.f")
    await nc.close()
    server.restart() if how == "restart" else (server.kill(), server.start())
    nc = await connect(server.url)
    try:
        m = await wait_stored(nc, "S", "s.b", timeout=6)
        late = (m["time"] - due).total_seconds()
        # a restart (SIGKILL and start) on a loaded machine: due schedules fire once the stream is back
        assert 0 <= late < 0.5, late
        assert m["data"] == b"later"
        # the repeating one goes on after the restart
        seq = (await last(nc, "R", "r.f"))["seq"]
        assert (await wait_stored(nc, "R", "r.f", seq, timeout=3))["data"] == b"tick"
    finally:
        await nc.close()
