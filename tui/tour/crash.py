"""The guided tour's crash chapter, offered on the embedded broker only (it
crashes the broker): pull a message, do not ack it, crash the broker as the
Faults menu's crash does, see it come back. Its own names (``DEMO_CRASH``,
consumer ``CRASHER``), never the user's."""

from __future__ import annotations

from ..demos import NS
from .run import Look, Reading, Run, consumer_readings, stream_readings
from .steps import STEPS, Step, hand_ack, hand_fetch, make_stream, past_ack_wait, publish_all

CRASH = "DEMO_CRASH"
CRASHER = "CRASHER"


async def crash_setup(run: Run) -> list[Reading]:
    await make_stream(run, {"name": CRASH, "subjects": ["demo.crash.>"]})
    await publish_all(run, [("demo.crash.job", f"job-{i}".encode()) for i in (1, 2, 3)])
    await run.client.create_consumer(CRASH, {"durable_name": CRASHER, "ack_policy": "explicit",
                                             "deliver_policy": "all", "ack_wait": int(run.timing.ack_wait * NS)})
    return [*stream_readings(await run.stream(CRASH), messages="3", first="1", last="3"),
            *consumer_readings(await run.consumer(CRASH, CRASHER), ack_pending="0", pending="3")]


async def crash_pull(run: Run) -> list[Reading]:
    fm = await hand_fetch(run, CRASH, CRASHER)
    run.crashed = fm
    c = await run.consumer(CRASH, CRASHER)
    return [Reading("tries", str(fm.num_delivered), "1"), Reading("str seq", str(fm.stream_seq), "1"),
            *consumer_readings(c, ack_pending="1", ack_floor="0/0", pending="2")]


async def crash_broker(run: Run) -> list[Reading]:
    """The Faults menu's crash (F c), run by the tour; the ruler marks what comes back."""
    import asyncio

    from ..client.survival import fault_marks, take_snapshot

    app = run.app
    if app.embedded is None:
        from ..client import NatsError

        raise NatsError("only on the embedded broker (it crashes the broker)")
    before = await take_snapshot(run.client)
    generation = app.client_generation
    run.progress("crashing the broker …")
    await asyncio.to_thread(app.embedded.fault, "crash")

    async def back() -> bool:
        return app.client_generation > generation and app.client is not None and app.client.connected
    await run.until(back, 20.0)
    after = await take_snapshot(run.client)
    app.fault_marks = marks = fault_marks(before, after)
    mine = marks.get(CRASH)
    again = mine.redeliver.get(CRASHER) if mine is not None else None
    s, c = await run.stream(CRASH), await run.consumer(CRASH, CRASHER)
    # (a delivery not yet written when the broker died is owed all the same: it is
    # pending again instead of outstanding, and comes back as a first try)
    return [Reading("the workbench reconnected", "yes" if await back() else "no", "yes"),
            *stream_readings(s, messages="3"),
            Reading("will be redelivered (str seq)", ", ".join(map(str, again or ())) or "none", "1"),
            *consumer_readings(c, ack_floor="0/0")]


async def crash_comes_back(run: Run) -> list[Reading]:
    first = run.crashed
    if first is None:
        from ..client import NatsError

        raise NatsError("CRASHER has no delivery in the hand yet: run 'Pull one, do not ack' first")
    await past_ack_wait(run, first, "the ack wait running out")
    fm = await hand_fetch(run, CRASH, CRASHER)
    await hand_ack(run, fm)
    c = await run.consumer(CRASH, CRASHER)
    return [Reading("str seq", str(fm.stream_seq), str(first.stream_seq)),
            Reading("payload", fm.data.decode(errors="replace"), first.data.decode(errors="replace")),
            Reading("tries", str(fm.num_delivered)),  # 2, or 1 if the crash came before its delivery was written
            Reading("ack floor str seq", str(c.ack_floor_stream_seq), "1", group=f"{CRASH} › {CRASHER}"),
            *consumer_readings(c, ack_pending="0", pending="2")]


CRASH_HAND = Look("pull", f"Pull hand › {CRASH} › {CRASHER}: the card's tries", CRASH, CRASHER)
CRASH_RULER = Look("consumers", f"Consumers › {CRASH} › {CRASHER}: the ruler's ↻ (will be redelivered)", CRASH,
                   CRASHER, ("ack_pending", "ack_floor"))
CRASH_STEPS: tuple[Step, ...] = (
    Step("Crash the broker", "A job queue to crash",
         f"Creates {CRASH} (demo.crash.>), publishes job-1/2/3 with JetStream acks (each PubAck means it is on "
         f"disk) and the pull consumer {CRASHER} (explicit acks, ack wait {{ack_wait}}).",
         crash_setup, (Look("streams", f"Streams › {CRASH}: Messages 3", stream=CRASH, cells=("messages",)),),
         creates=(CRASH,)),
    Step("Crash the broker", "Pull one, do not ack",
         "The pull hand takes job-1 and does not ack it: Outstanding Acks 1, the ack floor still 0.",
         crash_pull, (CRASH_HAND,)),
    Step("Crash the broker", "Crash it (what a SIGKILL leaves)",
         "Crashes the embedded broker as F c does: connections cut, memory gone, it starts again from its files. "
         "The workbench reconnects: the 3 jobs are there, the ack floor still 0, and the unacked job-1 is owed: "
         "the ruler marks it ↻, will be redelivered.",
         crash_broker, (CRASH_RULER,)),
    Step("Crash the broker", "It comes back",
         "Once its ack wait runs out, a pull gets job-1 again — the same stream sequence, tries 2 (1 if the "
         "broker died before it wrote the delivery down) — and acks it: nothing unacked was lost in the crash.",
         crash_comes_back, (CRASH_HAND, CRASH_RULER)),
)


def steps_for(app) -> tuple[Step, ...]:
    """The tour on this app: the crash chapter only on the embedded broker."""
    return STEPS + CRASH_STEPS if getattr(app, "embedded", None) is not None else STEPS
