"""Seeded SIGKILL rounds, on both servers: pipelined publishes go on while a
purge, an ack storm or consumer creation runs; the broker is killed at a
seeded moment and started again. After every round: each acknowledged
message not purged is there with its payload, no sequence was handed out
twice, every consumer whose CREATE was answered exists, and (natslab only,
docs/durability.md: nats-server answers first) every ack confirmed by ack_sync is kept.

Quick by default (3 rounds); ``NATSLAB_FAULTS=long`` runs 30 and
``pytest -s`` prints the figures."""

from __future__ import annotations

import asyncio
import json
import random

from nats.js.api import AckPolicy, ConsumerConfig

from conftest import connect
from faultkit import scale


class Tally:
    def __init__(self):
        self.rounds = self.acked = self.lost = self.dup = 0
        self.consumers = self.consumers_lost = 0
        self.acks_confirmed = self.acks_lost = 0


async def _publisher(nc, k: int, acked: dict, stop: asyncio.Event, tally: Tally) -> None:
    i = 0
    while not stop.is_set():
        batch = [b"%d-%d-%d" % (tally.rounds, k, i + j) for j in range(20)]
        i += 20
        answers = await asyncio.gather(*(nc.request("k.%d" % k, p, timeout=2) for p in batch),
                                       return_exceptions=True)
        for p, a in zip(batch, answers):
            if isinstance(a, BaseException):
                continue
            body = json.loads(a.data)
            if "error" in body:
                continue
            seq = body["seq"]
            if seq in acked:
                tally.dup += 1  # a sequence handed out twice
            acked[seq] = p


async def _purger(js, floor: list, stop: asyncio.Event, rng: random.Random) -> None:
    while not stop.is_set():
        await asyncio.sleep(rng.uniform(0.01, 0.05))  # pacing of a load loop (bounded by stop), not a wait
        try:
            st = (await js.stream_info("K")).state
            target = st.first_seq + (st.last_seq - st.first_seq) // 3
            # asked: a purge the SIGKILL cuts off may have been done without
            # its answer reaching us, so what it may remove is noted first
            floor[1] = max(floor[1], target)
            await js.purge_stream("K", seq=target)
            floor[0] = max(floor[0], target)  # answered: everything below is gone
        except Exception:
            return


async def _acker(js, confirmed: list, stop: asyncio.Event, rnd: int) -> None:
    # a consumer of its own each round: acked in order, so every confirmed
    # ack is below the ack floor after the restart
    try:
        sub = await js.pull_subscribe("k.>", f"ACKER{rnd}", stream="K")
        while not stop.is_set():
            for m in await sub.fetch(50, timeout=1):
                await m.ack_sync()
                confirmed[0] = max(confirmed[0], m.metadata.sequence.stream)
    except Exception:
        return


async def _creator(js, made: list, stop: asyncio.Event, rnd: int) -> None:
    i = 0
    while not stop.is_set():
        name = f"R{rnd}C{i}"
        i += 1
        try:
            await js.add_consumer("K", ConsumerConfig(durable_name=name, ack_policy=AckPolicy.EXPLICIT))
        except Exception:
            return
        made.append(name)


async def _check(srv, acked: dict, floor: int, asked: int, made: list, confirmed: int, tally: Tally, rnd: int) -> None:
    """``floor``: the highest answered purge; ``asked``: the highest one sent
    (done or not: its answer may have died with the server)."""
    nc = await connect(srv.url)
    js = nc.jetstream()
    st = (await js.stream_info("K")).state
    want = [s for s in acked if s >= max(floor, st.first_seq)]
    # nothing acknowledged below the first sequence but what an answered purge removed
    # (below ``asked`` they may be gone by a purge that was done but not answered)
    tally.lost += sum(1 for s in acked if max(floor, asked) <= s < st.first_seq)
    for i in range(0, len(want), 200):
        part = want[i : i + 200]
        got = await asyncio.gather(*(js.get_msg("K", s) for s in part), return_exceptions=True)
        for s, m in zip(part, got):
            if isinstance(m, BaseException) or m.data != acked[s]:
                tally.lost += 1
    tally.acked += len(acked)
    names = {c.name for c in await js.consumers_info("K")}
    tally.consumers += len(made)
    tally.consumers_lost += len(set(made) - names)
    if confirmed:
        tally.acks_confirmed += 1
        floor_seq = (await js.consumer_info("K", f"ACKER{rnd}")).ack_floor.stream_seq
        if floor_seq < confirmed:
            tally.acks_lost += 1
    await nc.close()


async def test_sigkill_rounds(server):
    rng = random.Random(16)
    tally = Tally()
    acked: dict[int, bytes] = {}
    floor = [0, 0]  # [highest answered purge, highest purge sent]
    nc = await connect(server.url)
    await nc.jetstream().add_stream(name="K", subjects=["k.>"])
    await nc.close()
    for rnd in range(scale(3, 30)):
        tally.rounds = rnd
        closed = asyncio.Event()

        async def on_closed(closed=closed):
            closed.set()
        nc = await connect(server.url, closed_cb=on_closed)
        js = nc.jetstream()
        stop = asyncio.Event()
        made: list[str] = []
        confirmed = [0]
        side = ("purge", "acks", "consumers")[rnd % 3]  # each kind of work in turn; the moments seeded
        tasks = [asyncio.create_task(_publisher(nc, k, acked, stop, tally)) for k in range(3)]
        if side == "purge":
            tasks.append(asyncio.create_task(_purger(js, floor, stop, rng)))
        elif side == "acks":
            tasks.append(asyncio.create_task(_acker(js, confirmed, stop, rnd)))
        else:
            tasks.append(asyncio.create_task(_creator(js, made, stop, rnd)))
        # the side work has got going (bounded), then a seeded moment later: SIGKILL
        progress = {"purge": lambda: floor[0] > before, "acks": lambda: confirmed[0] > 0, "consumers": lambda: made}
        before = floor[0]
        for _ in range(100):
            if progress[side]():
                break
            await asyncio.sleep(0.02)
        await asyncio.sleep(rng.uniform(0.0, 0.2))  # pacing, not a wait: a seeded moment into the work
        server.kill()  # mid-flight
        stop.set()
        # the connection dies with the broker: what was answered before is
        # read to the EOF (closed), and a request still out never will be
        # answered (nats-py would leave it to its timeout, 2-5 s a round),
        # so the work is stopped there. (Past 3 s without the EOF read, it is
        # stopped anyway: an answer left unread is only a message unchecked.)
        try:
            await asyncio.wait_for(closed.wait(), 3)
        except asyncio.TimeoutError:
            pass
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await nc.close()
        server.start()
        await _check(server, acked, floor[0], floor[1], made, confirmed[0], tally, rnd)
    tally.rounds = rnd + 1
    print(f"\n[{server.kind}] SIGKILL rounds: {tally.rounds}, acked messages checked {tally.acked}, "
          f"lost {tally.lost}, duplicated {tally.dup}; consumers made {tally.consumers}, lost "
          f"{tally.consumers_lost}; ack_sync rounds {tally.acks_confirmed}, with a confirmed ack lost "
          f"{tally.acks_lost}")
    assert tally.acked > 0
    assert (tally.lost, tally.dup, tally.consumers_lost) == (0, 0, 0)
    if server.kind == "natslab":
        assert tally.acks_lost == 0
    assert "Traceback" not in server.log()
