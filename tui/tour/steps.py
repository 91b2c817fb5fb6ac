"""The walkthrough in /work/shared/seed, one step at a time, as data plus the
nats-py actions that replay it on the connected broker.

Everything a step makes is named ``DEMO_...`` / ``demo....`` (the palette
demos' own streams, reused from ``demos.py``), so a user's ORDERS or CONFIG is
never touched. Where the walkthrough's figure depends on a name's length (a
stream's bytes count each message's subject), the demo name is as long as the
walkthrough's: ``demo.o.new`` for ``orders.new``, bucket ``DEMO_C`` whose
``$KV.DEMO_C.region`` is as long as ``$KV.CONFIG.region``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable

from ..demos import DEMOS, NS, REDELIVERY
from .run import WALKTHROUGH, Look, Reading, Run, consumer_readings, secs, stream_readings

if TYPE_CHECKING:
    from ..client import FetchedMessage

ORDERS = REDELIVERY.stream["name"]  # DEMO_ORDERS on demo.o.>
TTL = DEMOS["max-age"].stream
LIMITS = DEMOS["limits"].stream
EVENTS = DEMOS["interest"].stream
JOBS = DEMOS["workqueue"].stream
BUCKET = "DEMO_C"
SERVICE = "demo.svc.upper"
WORKER = {"durable_name": "WORKER", "ack_policy": "explicit", "deliver_policy": "all", "ack_wait": 60 * NS,
          "max_ack_pending": 1000}


@dataclass(frozen=True)
class Step:
    chapter: str
    title: str
    says: str  # what will happen; {ack_wait} {max_age}, and {ack_note} {age_note} when they are not the walkthrough's
    action: Callable[[Run], Awaitable[list[Reading]]]
    looks: tuple[Look, ...]
    creates: tuple[str, ...] = ()  # the DEMO_ streams it makes (asked before one is replaced)
    stands_alone: bool = False  # needs nothing from the steps before it (it can run again by itself)

    @property
    def starts_over(self) -> bool:
        """Running it again needs no earlier step: it makes its own streams, or needs none."""
        return bool(self.creates) or self.stands_alone


def shortened(timing, what: str) -> str:
    """The tour's text when its wait is not the walkthrough's."""
    ours, theirs = getattr(timing, what), getattr(WALKTHROUGH, what)
    return "" if ours == theirs else f" (the walkthrough used {secs(theirs)}; {secs(ours)} here)"


# ---- the pull hand: the tour's fetches show there as the user's would -----
async def hand_fetch(run: Run, stream: str, consumer: str) -> "FetchedMessage":
    from ..panes.pull.card import HandCard
    from ..panes.pull.hand import PullHand

    hand = await run.pane("pull")
    hand.set_target(stream, consumer, True)
    got = await run.client.fetch(stream, consumer, 1, timeout=2.0)
    if not got:
        from ..client import NatsError

        raise NatsError(f"{consumer} handed out nothing (is another program consuming {stream}?)")
    hand.post_message(PullHand.Fetched(stream, consumer, got))
    await run.until(lambda: _true(any(c.fm is got[0] for c in hand.query(HandCard))), 3.0)
    return got[0]


async def _true(value: bool) -> bool:
    return value


async def hand_ack(run: Run, fm: "FetchedMessage") -> None:
    from ..panes.pull.card import HandCard

    hand = await run.pane("pull")
    card = next((c for c in hand.query(HandCard) if c.fm is fm), None)
    if card is None:  # the user cleared it: ack it all the same
        await run.client.ack(fm)
        return
    await hand.act(card, "ack").wait()
    await run.until(lambda: _true(card.state == "acked"), 3.0)


async def fetch_and_ack(run: Run, stream: str, consumer: str, count: int) -> list["FetchedMessage"]:
    """``nats consumer next --count N --ack``: delivered and acked at once."""
    got = await run.client.fetch(stream, consumer, count, timeout=2.0)
    for fm in got:
        await run.client.ack(fm)
    return got


async def past_ack_wait(run: Run, fm: "FetchedMessage", why: str) -> None:
    """Wait until ``fm``'s ack wait ran out, and half as long again (the walkthrough: 6 s for 4 s)."""
    import time

    left = fm.received_at + fm.ack_wait * 1.5 - time.monotonic()
    if left > 0:
        await run.wait(left, why)


def tries(fm: "FetchedMessage", walkthrough: int, cons_seq: int) -> list[Reading]:
    """The card's head, as `nats consumer next` prints it: tries, str seq, cons seq."""
    return [Reading("tries", str(fm.num_delivered), str(walkthrough)),
            Reading("str seq / cons seq", f"{fm.stream_seq} / {fm.consumer_seq}", f"2 / {cons_seq}")]


async def make_stream(run: Run, config: dict) -> None:
    await run.client.create_stream({**config, "storage": config.get("storage", "file")})


async def publish_all(run: Run, messages) -> None:
    for subject, data in messages:
        await run.client.js_publish(subject, data)


# ---- the steps' actions ---------------------------------------------------
async def create_orders(run: Run) -> list[Reading]:
    await make_stream(run, REDELIVERY.stream)
    s = await run.stream(ORDERS)
    return [Reading("Retention / Storage", f"{s.retention} / {s.storage}", "limits / file", group=s.name),
            Reading("Maximum Messages / Per Subject", f"{s.config.get('max_msgs'):,} / {s.config.get('max_msgs_per_subject')}",
                    "1,000 / 100", group=s.name),
            *stream_readings(s, messages="0")]


async def publish_orders(run: Run) -> list[Reading]:
    await publish_all(run, REDELIVERY.messages)
    s = await run.stream(ORDERS)
    return [*stream_readings(s, messages="4", bytes="222 B", first="1", last="4"),
            Reading("Number of Subjects", str(s.num_subjects), "2", group=s.name)]


async def core_forgets(run: Run) -> list[Reading]:
    before = await run.client.list_streams()
    payload = b"this subject has no stream and no subscriber"
    await run.client.publish("demo.core.plain", payload)
    after = await run.client.list_streams()
    return [Reading("published to demo.core.plain", f"{len(payload)} bytes", "44 bytes"),
            Reading("streams before / after", f"{len(before)} / {len(after)}", None),
            Reading("streams that took it", str(sum(any(sub.startswith("demo.core") for sub in s.subjects)
                                                    for s in after)), "0"),
            *stream_readings(await run.stream(ORDERS), messages="4")]


async def durable_worker(run: Run) -> list[Reading]:
    await run.client.create_consumer(ORDERS, WORKER)
    got = await fetch_and_ack(run, ORDERS, "WORKER", 2)
    c = await run.consumer(ORDERS, "WORKER")
    return [Reading("delivered and acked (stream seqs)", ", ".join(str(fm.stream_seq) for fm in got), "1, 2"),
            *consumer_readings(c, ack_pending="0", ack_floor="2/2", pending="2")]


async def rdl_no_ack(run: Run) -> list[Reading]:
    await run.client.create_consumer(ORDERS, {**REDELIVERY.consumer, "ack_wait": int(run.timing.ack_wait * NS)})
    # "delivery #1 was consumed and acked in an earlier step": in the hand too, so
    # its timeline does not show that ack as another program's
    await hand_ack(run, await hand_fetch(run, ORDERS, "RDL"))
    fm = await hand_fetch(run, ORDERS, "RDL")
    run.rdl = fm
    return [*tries(fm, 1, 2), Reading("payload", fm.data.decode(errors="replace"), "order-2 payload")]


def last_rdl(run: Run) -> "FetchedMessage":
    if run.rdl is None:
        from ..client import NatsError

        raise NatsError("RDL has no delivery in the hand yet: run 'RDL: pull one, do not ack' first")
    return run.rdl


async def rdl_expired(run: Run) -> list[Reading]:
    fm = last_rdl(run)
    run.point(STEPS_BY_ACTION[rdl_expired].looks[0])  # the countdown runs out on the ruler
    await past_ack_wait(run, fm, f"ack wait {secs(fm.ack_wait)} running out")
    c = await run.consumer(ORDERS, "RDL")
    return consumer_readings(c, ack_pending="1", redelivered="0", pending="2", ack_floor="1/1", delivered="2/2")


async def rdl_again(run: Run) -> list[Reading]:
    await past_ack_wait(run, last_rdl(run), "the ack wait is still running")
    fm = await hand_fetch(run, ORDERS, "RDL")
    run.rdl = fm
    c = await run.consumer(ORDERS, "RDL")
    return [*tries(fm, 2, 3), *consumer_readings(c, redelivered="1", ack_pending="1", pending="2", delivered="3/2")]


async def rdl_ack(run: Run) -> list[Reading]:
    await past_ack_wait(run, last_rdl(run), "waiting for the ack wait to run out once more")
    fm = await hand_fetch(run, ORDERS, "RDL")
    await hand_ack(run, fm)
    c = await run.consumer(ORDERS, "RDL")
    return [*tries(fm, 3, 4), *consumer_readings(c, ack_pending="0", ack_floor="4/2", pending="2")]


async def max_age(run: Run) -> list[Reading]:
    await make_stream(run, {**TTL, "max_age": int(run.timing.max_age * NS)})
    await publish_all(run, DEMOS["max-age"].messages)
    first = await run.stream(TTL["name"])
    run.point(STEPS_BY_ACTION[max_age].looks[0])  # watch Messages drop while it waits
    await run.wait(run.timing.max_age * 1.5, f"max age {secs(run.timing.max_age)}: waiting")

    async def gone() -> bool:
        return (await run.stream(TTL["name"])).messages == 0

    await run.until(gone, run.timing.max_age + 2.0)  # the broker expires on its own timer
    later = await run.stream(TTL["name"])
    return [Reading("Messages after publishing", str(first.messages), "3", group=TTL["name"]),
            Reading(f"Messages after {secs(run.timing.max_age * 1.5)}", str(later.messages), "0", group=TTL["name"])]


async def max_msgs(run: Run) -> list[Reading]:
    await make_stream(run, LIMITS)
    await publish_all(run, DEMOS["limits"].messages)
    return stream_readings(await run.stream(LIMITS["name"]), messages="2", first="3", last="4")


async def interest_nobody(run: Run) -> list[Reading]:
    await make_stream(run, EVENTS)
    await publish_all(run, (("demo.events.signup", b"nobody-listening"), ("demo.events.logout", b"nobody-listening")))
    return stream_readings(await run.stream(EVENTS["name"]), messages="0", first="3", last="2")


async def interest_held(run: Run) -> list[Reading]:
    name = EVENTS["name"]
    await run.client.create_consumer(name, DEMOS["interest"].consumer)
    await publish_all(run, DEMOS["interest"].messages)  # demo.events.login "kept-until-acked"
    held = await run.stream(name)
    got = await fetch_and_ack(run, name, "LIVE", 1)

    async def removed() -> bool:
        return (await run.stream(name)).messages == 0

    await run.until(removed, 2.0)
    return [Reading("Messages before the ack", str(held.messages), "1", group=name),
            Reading("fetched str seq", ", ".join(str(fm.stream_seq) for fm in got), "3"),
            *stream_readings(await run.stream(name), messages="0")]


async def workqueue(run: Run) -> list[Reading]:
    name = JOBS["name"]
    await make_stream(run, JOBS)
    await run.client.create_consumer(name, DEMOS["workqueue"].consumer)
    await publish_all(run, DEMOS["workqueue"].messages)
    two = await run.stream(name)
    got = await fetch_and_ack(run, name, "WQ", 1)

    async def one_left() -> bool:
        return (await run.stream(name)).messages == 1

    await run.until(one_left, 2.0)
    return [Reading("Messages after publishing 2", str(two.messages), "2", group=name),
            Reading("fetched str seq", ", ".join(str(fm.stream_seq) for fm in got), "1"),
            *stream_readings(await run.stream(name), messages="1")]


async def request_reply(run: Run) -> list[Reading]:
    from textual.widgets import Input, Static, TextArea

    from ..client.responders import MockResponder

    pane = await run.pane("request")
    if SERVICE not in pane.responders:
        await pane.run_mock(MockResponder(SERVICE, "echo")).wait()
    pane.query_one("#req-subject", Input).value = SERVICE
    pane.query_one("#req-payload", TextArea).text = "shipped order 4711"
    replies = len(pane.latencies)
    pane.action_send()
    await run.until(lambda: _true(len(pane.latencies) > replies), 3.0)
    if len(pane.latencies) == replies:
        return [Reading("reply", str(pane.query_one("#req-result", Static).content), "shipped order 4711")]
    body = str(pane.query_one("#req-result", Static).content).split("\n", 1)[-1]
    return [Reading("reply", body, "shipped order 4711"),
            Reading("round trip", f"{pane.latencies[-1]:.3f} ms", "1.117 ms", exact=False)]


async def kv_is_a_stream(run: Run) -> list[Reading]:
    client = run.client
    await client.create_bucket(BUCKET, 5, None, None, "file")
    for value in (b"eu", b"us"):
        await client.kv_op(BUCKET, "put", "region", value)
    latest = (await client.kv_history(BUCKET, "region"))[-1]
    s = await run.stream(f"KV_{BUCKET}")
    return [Reading("get region", f"{latest.value.decode()} (revision {latest.revision})", "us (revision 2)"),
            Reading("Subjects", ", ".join(s.subjects), f"$KV.{BUCKET}.>", group=s.name),
            Reading("Retention / Storage", f"{s.retention} / {s.storage}", "limits / file", group=s.name),
            *stream_readings(s, messages="2", bytes="98 B")]


# ---- the tour ---------------------------------------------------------------
def _stream_look(name: str, cells: tuple[str, ...], what: str) -> Look:
    return Look("streams", f"Streams › {name}: {what}", stream=name, cells=cells)


def _consumer_look(consumer: str, cells: tuple[str, ...], what: str) -> Look:
    return Look("consumers", f"Consumers › {ORDERS} › {consumer}: {what}", ORDERS, consumer, cells)


HAND = Look("pull", f"Pull hand › {ORDERS} › RDL: the card's tries, and the timeline (one bar per delivery)",
            ORDERS, "RDL")
RULER = Look("consumers", f"Consumers › {ORDERS} › RDL: the ruler under the table (RDL's lane)", ORDERS, "RDL",
             ("ack_pending", "redelivered", "pending"))

STEPS: tuple[Step, ...] = (
    Step("Core NATS vs JetStream", "A durable stream",
         f"Creates {ORDERS}, the walkthrough's ORDERS: subjects demo.o.> (as long as orders.>, so the byte "
         "count comes out the same), file storage, limits retention, discard old, at most 1,000 messages, "
         "100 per subject, 24 h, a 2 m duplicate window.",
         create_orders, (_stream_look(ORDERS, ("retention", "storage"), "Retention, Storage; the Info tab below"),),
         creates=(ORDERS,)),
    Step("Core NATS vs JetStream", "Publish four orders",
         "Publishes order-1/2/3 to demo.o.new and order-eu-1 to demo.o.eu with JetStream acks. "
         "The walkthrough: Messages 4, Bytes 222 B, First Sequence 1, Last Sequence 4, 2 subjects.",
         publish_orders, (_stream_look(ORDERS, ("messages", "bytes", "first", "last"), "Messages, Bytes, First/Last seq"),)),
    Step("Core NATS vs JetStream", "Core NATS forgets",
         "Publishes 44 bytes to demo.core.plain with plain core NATS: no stream takes that subject and "
         "nobody listens, so it evaporates. No new stream, DEMO_ORDERS still holds 4.",
         core_forgets, (_stream_look(ORDERS, ("messages",), "Messages still 4"),)),
    Step("The durable consumer", "WORKER and its three numbers",
         "Creates the durable pull consumer WORKER (explicit acks, deliver all, ack wait 1m) and takes two "
         "messages with acks, as `nats consumer next --count 2 --ack`. Three numbers tell the story: "
         "Outstanding Acks 0, ack floor at stream seq 2, Unprocessed 2 (orders 3 and 4 still waiting).",
         durable_worker, (_consumer_look("WORKER", ("ack_pending", "ack_floor", "pending"), "Ack pend, Ack floor, Pending"),)),
    Step("Redelivery", "RDL: pull one, do not ack",
         "Creates RDL, identical but with an ack wait of {ack_wait}{ack_note}. Delivery #1 is taken and acked "
         "first (the walkthrough's 'earlier step'), then the pull hand fetches one without acking: str seq 2, tries 1.",
         rdl_no_ack, (HAND,)),
    Step("Redelivery", "The ack wait runs out",
         "Waits past RDL's ack wait (the walkthrough looked six seconds later). The timer expires but nothing "
         "is redelivered yet: Outstanding Acks 1, Redelivered 0. The message is only eligible; "
         "a pull consumer redelivers when asked again.",
         rdl_expired, (_consumer_look("RDL", ("ack_pending", "redelivered", "pending"), "Ack pend 1, Redlv 0"), RULER, HAND)),
    Step("Redelivery", "Pull again: tries 2",
         "The pull hand fetches again, still without acking: the same str seq 2 payload comes back with "
         "tries 2, and now num_redelivered 1, num_ack_pending 1, num_pending 2.",
         rdl_again, (HAND, _consumer_look("RDL", ("redelivered", "ack_pending", "pending"), "Redlv 1, Ack pend 1"), RULER)),
    Step("Redelivery", "Acked three deliveries deep",
         "Lets the ack wait run out once more, fetches (tries 3) and acks: the floor advances, outstanding back to 0.",
         rdl_ack, (HAND, _consumer_look("RDL", ("ack_pending", "ack_floor"), "Ack pend 0, Ack floor"))),
    Step("Retention", "Limits: max age",
         "Creates DEMO_TTL with a max age of {max_age}{age_note}, publishes three messages and waits: "
         "the broker itself discards them. Messages 3, then 0.",
         max_age, (_stream_look(TTL["name"], ("messages",), "Messages"),), creates=(TTL["name"],)),
    Step("Retention", "Limits: max 2 messages, discard old",
         "Creates DEMO_LIMITS (max 2 messages, discard old) and publishes four: the newest two stay and "
         "First Sequence moves to 3.",
         max_msgs, (_stream_look(LIMITS["name"], ("messages", "first", "last"), "Messages, First/Last seq"),),
         creates=(LIMITS["name"],)),
    Step("Retention", "Interest: nobody listening",
         "Creates DEMO_EVENTS with interest retention and publishes two events while no consumer exists: "
         "dropped on arrival, yet the sequence advances — First Sequence 3 while Last Sequence 2.",
         interest_nobody, (_stream_look(EVENTS["name"], ("messages", "first", "last"), "First seq 3, Last seq 2"),),
         creates=(EVENTS["name"],)),
    Step("Retention", "Interest: held until acked",
         "Adds consumer LIVE and publishes kept-until-acked to demo.events.login: held (Messages 1) until "
         "LIVE takes it (str seq 3) and acks; then it is removed at once (Messages 0).",
         interest_held, (_stream_look(EVENTS["name"], ("messages",), "Messages 0"),)),
    Step("Retention", "Workqueue: deleted as acked",
         "Creates DEMO_JOBS with workqueue retention and consumer WQ, publishes two jobs, takes one and acks "
         "it: the stream keeps one.",
         workqueue, (_stream_look(JOBS["name"], ("messages",), "Messages 1"),), creates=(JOBS["name"],)),
    Step("Request-reply", "Request-reply is built in",
         f"Starts an echo service on {SERVICE} in the Request pane (the walkthrough's `nats reply` printed "
         "the body back) and sends 'shipped order 4711': the reply and its round trip.",
         request_reply, (Look("request", f"Request › the reply from {SERVICE}, its round trip, the mock's count"),),
         stands_alone=True),
    Step("KV as a stream", "The KV store is a stream",
         f"Creates bucket {BUCKET} (history 5; its subject $KV.{BUCKET}.region is as long as the walkthrough's "
         "$KV.CONFIG.region), puts region eu then us, gets region: us, revision 2. The bucket is the stream "
         f"KV_{BUCKET}: 2 messages, 98 B.",
         kv_is_a_stream, (_stream_look(f"KV_{BUCKET}", ("messages", "bytes"), "Messages 2, Bytes 98 B"),
                          Look("kv", f"KV › {BUCKET} › region", bucket=BUCKET)),
         creates=(f"KV_{BUCKET}",)),
)


def step_text(step: Step, timing) -> str:
    return step.says.format(ack_wait=secs(timing.ack_wait), max_age=secs(timing.max_age),
                            ack_note=shortened(timing, "ack_wait"), age_note=shortened(timing, "max_age"))


STEPS_BY_ACTION = {step.action: step for step in STEPS}
ALL_CREATES: tuple[str, ...] = tuple(name for step in STEPS for name in step.creates)
