"""The embedded broker's history (server/jetstream/journal.py) and the
reconstruction of a consumer's past state from it (tui/history.py).

natslab only: nats-server keeps no such history (its remote counterpart, the
app's own observations, is tests/tui/test_time_travel.py's). The
reconstruction is checked against real recorded states: consumer info taken
at several moments, each compared with ``state_at`` at the info's own ``ts``
(the broker's clock, the one its events are stamped with)."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone

import nats
import pytest

from natslab.server import EmbeddedServer, ServerThread
from natslab.server.jetstream.journal import FIELDS, Journal
from natslab.tui.history import Event, Scrub, after, as_events, report, state_at, stream_range_at
from natslab.tui.widgets.ruler import ACKED, EXPIRED, OUTSTANDING, TERMED

from conftest import eventually


def ts_ns(s: str) -> int:
    """RFC 3339 with nanoseconds -> ns since the epoch."""
    head, _, frac = s.rstrip("Z").partition(".")
    base = datetime.fromisoformat(head).replace(tzinfo=timezone.utc)
    return int(base.timestamp()) * 1_000_000_000 + int((frac + "000000000")[:9])


async def info(nc, stream: str, name: str) -> dict:
    r = await nc.request(f"$JS.API.CONSUMER.INFO.{stream}.{name}", b"", timeout=5)
    return json.loads(r.data)


def expect(d: dict) -> dict:
    return {"delivered": d["delivered"]["stream_seq"], "delivered_c": d["delivered"]["consumer_seq"],
            "floor": d["ack_floor"]["stream_seq"], "floor_c": d["ack_floor"]["consumer_seq"],
            "ack_pending": d["num_ack_pending"], "redelivered": d["num_redelivered"],
            "pending": d["num_pending"]}


def got(st) -> dict:
    return {"delivered": st.delivered_stream_seq, "delivered_c": st.delivered_consumer_seq,
            "floor": st.ack_floor_stream_seq, "floor_c": st.ack_floor_consumer_seq,
            "ack_pending": st.num_ack_pending, "redelivered": st.num_redelivered,
            "pending": st.num_pending}


async def test_history_is_off_unless_asked(tmp_path):
    async with EmbeddedServer(port=0, store_dir=tmp_path) as srv:
        assert srv.server.journal is None and not srv.history_enabled
        nc = await nats.connect(srv.client_url, max_reconnect_attempts=1, connect_timeout=2)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        await js.publish("s.1", b"x")
        assert srv.history() == []
        await nc.close()


async def test_past_states_equal_recorded_consumer_info(tmp_path):
    async with EmbeddedServer(port=0, store_dir=tmp_path, history_mb=1) as srv:
        nc = await nats.connect(srv.client_url, max_reconnect_attempts=1, connect_timeout=2)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        for i in range(8):
            await js.publish(f"s.{i}", b"order")
        await js.add_consumer("S", durable_name="W", ack_policy="explicit", ack_wait=1.0, max_deliver=3)
        sub = await js.pull_subscribe_bind("W", "S")
        snaps = [await info(nc, "S", "W")]  # just created
        first = await sub.fetch(4, timeout=5)
        assert [m.metadata.sequence.stream for m in first] == [1, 2, 3, 4]
        snaps.append(await info(nc, "S", "W"))
        await first[1].ack_sync()
        await first[0].nak()
        await first[2].term()
        snaps.append(await info(nc, "S", "W"))  # (acks arrive before this request on one connection)
        seen_c = ts_ns(snaps[-1]["ts"])
        again = await sub.fetch(2, timeout=5)
        assert [(m.metadata.sequence.stream, m.metadata.num_delivered) for m in again] == [(1, 2), (5, 1)]
        snaps.append(await info(nc, "S", "W"))
        for m in again:
            await m.ack_sync()
        snaps.append(await info(nc, "S", "W"))
        redelivered = []

        async def seq4_back():  # its 1 s ack wait runs out: the next pull brings it back
            try:
                msgs = await sub.fetch(1, timeout=0.3)
            except nats.errors.TimeoutError:
                return False
            redelivered.extend(msgs)
            return any(m.metadata.sequence.stream == 4 for m in msgs)
        assert await eventually(seq4_back, timeout=15)
        snaps.append(await info(nc, "S", "W"))
        for m in redelivered:
            await m.ack_sync()
        await js.publish("s.9", b"late")
        await js.publish("s.10", b"late")
        snaps.append(await info(nc, "S", "W"))
        events = as_events(srv.history(stream="S", consumer="W"))
        assert events and all(len(e) == len(FIELDS) for e in events)
        for snap in snaps:
            assert got(state_at(events, "S", "W", ts_ns(snap["ts"]))) == expect(snap), snap
        # the time slider's index says the same, stepping back from the present
        scrub = Scrub(as_events(srv.history(stream="S")), "S")
        for snap in reversed(snaps):
            assert got(scrub.state_at("W", ts_ns(snap["ts"]))) == expect(snap), snap
        # which sequence was in which state, as the ruler draws it, after the ack / nak / term
        assert state_at(events, "S", "W", seen_c).seen == {
            1: (EXPIRED, 1), 2: (ACKED, 1), 3: (TERMED, 1), 4: (OUTSTANDING, 1)}
        # the numbers moved: the reconstruction does not just repeat one state
        assert len({json.dumps(expect(s)) for s in snaps}) == len(snaps)
        # before the consumer existed
        assert not state_at(events, "S", "W", events[0].t - 1).exists
        text = report(events, "S", "W", events[0].t - 1, ts_ns(snaps[-1]["ts"]))
        assert "W acked seq 2" in text and "W terminated seq 3" in text
        last = snaps[-1]
        assert text.splitlines()[-1] == (
            f"end    delivered {last['delivered']['consumer_seq']}/{last['delivered']['stream_seq']} · "
            f"ack floor {last['ack_floor']['consumer_seq']}/{last['ack_floor']['stream_seq']} · "
            f"ack pending {last['num_ack_pending']} · redelivered {last['num_redelivered']} · "
            f"pending {last['num_pending']}")
        await nc.close()


def test_ring_is_bounded_by_bytes():
    j = Journal(max_bytes=10_000)
    for i in range(1000):
        j.published(("$G", "S"), i + 1, i)
    assert 0 < j.bytes <= 10_000 and j.dropped > 0
    evs = j.events()
    assert evs[-1][4] == (1000,) and evs[0][4][0] == 1000 - len(evs) + 1  # the oldest went first
    assert j.events(since=evs[-2][0]) == evs[-2:]


def test_server_thread_reads_history_from_another_thread(tmp_path):
    t = ServerThread(port=0, store_dir=tmp_path, history_mb=1).start()
    try:
        async def go():
            nc = await nats.connect(t.client_url, max_reconnect_attempts=1, connect_timeout=2)
            js = nc.jetstream()
            await js.add_stream(name="T", subjects=["t"])
            await js.publish("t", b"x")
            await nc.close()
        asyncio.run(go())
        kinds = [e[1] for e in t.history(stream="T")]
        assert kinds == ["stream", "pub"]
        t.restart()  # one ring for the embedding's life
        assert [e[1] for e in t.history(stream="T")][:2] == ["stream", "pub"]
    finally:
        t.stop()


async def test_same_named_streams_in_two_accounts_have_two_histories(tmp_path):
    """Stream names are per account: A's ORDERS and B's ORDERS are two
    streams, and each history holds only its own (it once mixed them)."""
    from natslab.server.cli import build_options

    conf = tmp_path / "srv.conf"
    conf.write_text(f'port: -1\njetstream {{ store_dir: "{tmp_path / "store"}" }}\n'
                    "accounts { A { jetstream: enabled, users: [{user: a, password: a}] }\n"
                    "           B { jetstream: enabled, users: [{user: b, password: b}] } }\n")
    opts = build_options({"config": str(conf)})
    opts.port = 0
    async with EmbeddedServer(opts=opts, history_mb=1) as srv:
        for user, count in (("a", 2), ("b", 3)):
            nc = await nats.connect(f"nats://{user}:{user}@127.0.0.1:{srv.port}",
                                    max_reconnect_attempts=1, connect_timeout=2)
            js = nc.jetstream()
            await js.add_stream(name="ORDERS", subjects=["orders.>"])
            for i in range(count):
                await js.publish("orders.new", b"x")
            await nc.close()
        pubs = {acc: [e[4] for e in srv.history(stream="ORDERS", account=acc) if e[1] == "pub"] for acc in "AB"}
        assert pubs == {"A": [(1,), (2,)], "B": [(1,), (2,), (3,)]}
        assert {e[14] for e in srv.history(stream="ORDERS", account="A")} == {"A"}
        assert srv.history(stream="ORDERS") == []  # no ORDERS in $G
        assert len([e for e in srv.history(account=None) if e[1] == "pub"]) == 5


def E(t, kind, seqs=(), dc=1, counters=None, extra=None, consumer="W"):
    c = counters or (None,) * 6
    return Event(t, kind, "S", consumer, tuple(seqs), 0, dc, *c, extra)


def test_state_at_replays_sequences():
    evs = [
        E(1, "pub", (1,), consumer=""), E(2, "pub", (2,), consumer=""), E(3, "pub", (3,), consumer=""),
        E(10, "create", counters=(0, 0, 0, 0, 0, 0), extra=(0, 3, False, "limits", 1, 3)),
        E(20, "deliver", (1, 2, 3), counters=(3, 3, 0, 0, 3, 0)),
        E(30, "nak", (2,), counters=(3, 3, 0, 0, 3, 0), extra=5),
        E(40, "ack", (1,), counters=(3, 3, 1, 1, 2, 0)),
        E(50, "expired", (3,), counters=(3, 3, 1, 1, 2, 0)),
        E(55, "pub", (4,), consumer=""),
        E(60, "deliver", (3,), dc=2, counters=(4, 3, 1, 1, 2, 1)),
        E(70, "delete", counters=(4, 3, 1, 1, 2, 1)),
    ]
    st = state_at(evs, "S", "W", 32)
    assert st.seen == {1: (OUTSTANDING, 1), 2: (OUTSTANDING, 1), 3: (OUTSTANDING, 1)}  # nak delay not over
    assert st.num_pending == 0
    assert state_at(evs, "S", "W", 36).seen[2] == (EXPIRED, 1)  # its 5 ns delay is over
    st = state_at(evs, "S", "W", 55)
    assert st.ack_floor_stream_seq == 1 and st.seen == {2: (EXPIRED, 1), 3: (EXPIRED, 1)} and st.num_pending == 1
    st = state_at(evs, "S", "W", 65)
    assert st.seen[3] == (OUTSTANDING, 2) and st.num_redelivered == 1
    assert not state_at(evs, "S", "W", 70).exists and not state_at(evs, "S", "W", 5).exists
    # a filtered consumer's num_pending cannot be derived
    filtered = [evs[3]._replace(extra=(0, 3, True, "limits", 1, 3)), evs[4]]
    assert state_at(filtered, "S", "W", 25).num_pending is None


def test_observed_history_of_a_remote_server():
    """--connect: the app's polls carry the counters, the delivery log the lanes."""
    from types import SimpleNamespace as NS_

    from natslab.tui.client.models import DeliveryEvent
    from natslab.tui.history import Observed

    obs = Observed()
    c = NS_(stream="S", name="W", delivered_consumer_seq=2, delivered_stream_seq=2, ack_floor_consumer_seq=0,
            ack_floor_stream_seq=0, num_ack_pending=2, num_redelivered=0, num_pending=3)
    obs.info(c, at=100.0)
    obs.seen(DeliveryEvent("S", "W", 1, "deliver", 1, 99.0, "inbox-tap"))  # seen before the poll: kept in order
    obs.seen(DeliveryEvent("S", "W", 2, "deliver", 1, 99.5, "inbox-tap"))
    obs.seen(DeliveryEvent("S", "W", 1, "ack", 1, 101.0, "app"))
    obs.seen(DeliveryEvent("S", "W", 1, "ack", 1, 101.1, "ack-tap"))  # the same ack seen twice: once
    evs = obs.history(stream="S")
    assert [e.kind for e in evs] == ["deliver", "deliver", "info", "ack"]
    st = state_at(evs, "S", "W", obs.wall(100.5))
    assert (st.delivered_stream_seq, st.num_ack_pending, st.num_pending) == (2, 2, 3)
    assert st.seen == {1: (OUTSTANDING, 1), 2: (OUTSTANDING, 1)}
    assert state_at(evs, "S", "W", obs.wall(102)).seen[1] == (ACKED, 1)
    assert not state_at(evs, "S", "W", obs.wall(98)).exists


def test_rates_until_keeps_only_the_samples_up_to_then():
    from natslab.tui.panes.consumers.travel import rates_until
    from natslab.tui.widgets.chart import ConsumerRates

    r = ConsumerRates()
    for i in range(5):
        r.record(float(i), i * 10, i, 1, 2)
    past = rates_until(r, 2.5)
    assert [s[0] for s in past.samples] == [0.0, 1.0, 2.0] and len(r.samples) == 5


def test_observed_keeps_time_order_and_its_bound():
    from natslab.tui.history import Observed

    obs = Observed(max_events=4)
    for t in (10, 20, 30, 40):
        obs._add(Event(t, "info", "S", "W"))
    obs._add(Event(25, "deliver", "S", "W", (1,), 0, 1))  # late: in its place, the oldest dropped
    assert [e.t for e in obs.events] == [20, 25, 30, 40]


def test_scrub_says_what_state_at_says_wherever_it_steps():
    """The slider's index (Scrub: marks every few hundred events, on from the
    last step) against a replay from the start, at moments visited in a
    shuffled order, on a history of two consumers long enough for many marks,
    with re-creations, nak delays, expiries and a reset; then with the
    history read in two parts (``extend``)."""
    import random

    rnd = random.Random(29)
    evs, t, seq = [], 0, 0
    counters = {"A": [0, 0, 0, 0, 0, 0], "B": [0, 0, 0, 0, 0, 0]}
    for name in counters:
        evs.append(E(t, "create", consumer=name, counters=(0, 0, 0, 0, 0, 0), extra=(0, 0, False, "limits", 0, 0)))
    for _ in range(6000):
        t += rnd.randint(1, 20)
        name = rnd.choice("AB")
        c = counters[name]
        r = rnd.random()
        if r < 0.3:
            seq += 1
            evs.append(E(t, "pub", (seq,), consumer=""))
            continue
        if r < 0.6 and c[1] < seq:
            c[0] += 1
            c[1] += 1
            c[4] += 1
            evs.append(E(t, "deliver", (c[1],), dc=rnd.choice((1, 1, 2)), consumer=name, counters=tuple(c)))
            continue
        if c[1] <= c[3]:
            continue
        s_ = rnd.randint(c[3] + 1, c[1])
        if r < 0.8:
            c[2], c[3], c[4] = c[2] + 1, max(c[3], s_ if s_ == c[3] + 1 else c[3]), max(0, c[4] - 1)
            evs.append(E(t, "ack", (s_,), consumer=name, counters=tuple(c)))
        elif r < 0.88:
            evs.append(E(t, "nak", (s_,), consumer=name, counters=tuple(c), extra=rnd.choice((0, 50))))
        elif r < 0.95:
            evs.append(E(t, "expired", (s_,), consumer=name, counters=tuple(c)))
        elif r < 0.985:
            evs.append(E(t, "term", (s_,), consumer=name, counters=tuple(c)))
        elif r < 0.995:
            evs.append(E(t, "reset", consumer=name, counters=tuple(c)))
        else:
            counters[name] = c = [0, 0, 0, 0, 0, 0]
            evs.append(E(t, "create", consumer=name, counters=(0, 0, 0, 0, 0, 0), extra=(0, seq, False, "limits", 1, seq)))
    moments = [rnd.randint(-5, t + 5) for _ in range(150)] + [e.t for e in evs[::400]]
    rnd.shuffle(moments)
    whole = Scrub(evs, "S")
    half = Scrub(evs[:len(evs) // 2], "S")
    for m in moments[:20]:  # marks and steps made on the first half only
        half.state_at("A", min(m, half.last_t))
    half.extend(evs[len(evs) // 2:])
    for m in moments:
        for name in "AB":
            want = state_at(evs, "S", name, m)
            assert whole.state_at(name, m) == want, (name, m)
            assert half.state_at(name, m) == want, (name, m)
        assert whole.range_at(m, 1, seq) == stream_range_at(evs, "S", m, 1, seq)
        assert whole.after(m, "A", 4) == after(evs, m, "S", "A", 4)
    # the history has what the assertions need to mean something
    assert len({whole.state_at("A", m).num_ack_pending for m in moments}) > 5
    assert any(v[0] == OUTSTANDING for m in moments for v in whole.state_at("A", m).seen.values())
    assert any(v[0] == TERMED for m in moments for v in whole.state_at("B", m).seen.values())
