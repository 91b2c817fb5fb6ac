"""A bounded soak, on both servers: pipelined publishes to a limited stream
(it keeps rolling over), a pull consumer acking everything, ephemeral
consumers coming and going, KV puts and purges, for a few seconds (60 with
``NATSLAB_FAULTS=long``). At the end the invariants hold: every publish was
answered with consecutive sequences, the stream holds exactly the newest
``max_msgs``, the consumer has acked everything it was given with nothing
pending, the broker still answers and logged no traceback. The broker's
RSS at start, peak and end is printed (``pytest -s``)."""

from __future__ import annotations

import asyncio
import json
import time

from conftest import connect
from faultkit import LONG


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def test_soak_keeps_its_invariants(server):
    duration = 60.0 if LONG else 3.0
    max_msgs = 2000
    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="SOAK", subjects=["soak.>"], max_msgs=max_msgs)
    kv = await js.create_key_value(bucket="SOAKKV", history=2)
    sub = await js.pull_subscribe("soak.>", "W", stream="SOAK")
    pid = server.proc.pid
    rss = [rss_kb(pid)]
    seqs: list[int] = []
    errors: list = []
    acked = 0
    stop = time.monotonic() + duration

    async def publish() -> None:
        i = 0
        while time.monotonic() < stop:
            answers = await asyncio.gather(*(nc.request(f"soak.{(i + j) % 7}", b"x" * (64 + (i + j) % 500), timeout=5)
                                             for j in range(50)))
            i += 50
            for a in answers:
                body = json.loads(a.data)
                if "error" in body:
                    errors.append(body["error"])
                else:
                    seqs.append(body["seq"])

    async def consume() -> None:
        nonlocal acked
        while time.monotonic() < stop:
            try:
                msgs = await sub.fetch(100, timeout=0.5)
            except asyncio.TimeoutError:
                continue
            for m in msgs:
                await m.ack()
            acked += len(msgs)

    async def churn() -> None:
        n = 0
        while time.monotonic() < stop:
            ci = await js.add_consumer("SOAK", ack_policy="none", inactive_threshold=5.0)
            await js.delete_consumer("SOAK", ci.name)
            await kv.put(f"k{n % 20}", b"v%d" % n)
            n += 1
            await asyncio.sleep(0.02)

    async def sample() -> None:
        while time.monotonic() < stop:
            rss.append(rss_kb(pid))
            await asyncio.sleep(0.2)

    await asyncio.gather(publish(), consume(), churn(), sample())
    rss.append(rss_kb(pid))
    # drain: everything published within the limit is delivered and acked
    st = (await js.stream_info("SOAK")).state
    assert not errors, errors[:3]
    assert seqs == list(range(1, len(seqs) + 1)), "PubAck sequences are not consecutive"
    assert st.last_seq == len(seqs) and st.messages == min(max_msgs, len(seqs))
    assert st.first_seq == max(1, len(seqs) - max_msgs + 1)
    for _ in range(50):
        try:
            msgs = await sub.fetch(500, timeout=0.5)
        except asyncio.TimeoutError:
            break
        for m in msgs:
            await m.ack_sync()
    ci = await js.consumer_info("SOAK", "W")
    assert ci.num_ack_pending == 0 and ci.num_pending == 0
    assert ci.ack_floor.stream_seq == ci.delivered.stream_seq == st.last_seq
    assert (await kv.get("k0")).value.startswith(b"v")
    await nc.close()
    print(f"\n[{server.kind}] soak {duration:.0f} s: {len(seqs)} published, {acked} acked in flight; "
          f"RSS start {rss[0] / 1024:.1f} MiB, peak {max(rss) / 1024:.1f} MiB, end {rss[-1] / 1024:.1f} MiB")
    if server.kind == "natslab":
        assert "Traceback" not in server.log()
