"""Publishes with random combinations of the counter, schedule, batch and
related ``Nats-*`` headers to counter, schedule and fast-batch streams, sent
to natslab's broker and to nats-server side by side: the same answers (the
PubAck's keys or the error code) and the same stream sizes. Fixed seeds, so
a failure names the exact publish to replay."""

from __future__ import annotations

import json
import random

import nats
import pytest

from test_api_fuzz import assert_same_on_both

VALUES = ["", "1", "-1", "+1", "0", "x", "1.5", " 1", "@at 2020-01-01T00:00:00Z", "@every 1s", "@every 0s",
          "* * * * * *", "@daily", "purge", "c.a", "c.b", "c.*", "s.b", "eob", "2", "99999999999999999999", "sub",
          "all", "5s", "1_0", "UTC", "Nope", "\u00e9"]
HEADERS = ["Nats-Incr", "Nats-Schedule", "Nats-Schedule-Target", "Nats-Schedule-Source", "Nats-Schedule-TTL",
           "Nats-Schedule-Rollup", "Nats-Schedule-Time-Zone", "Nats-Schedule-Next", "Nats-Scheduler",
           "Nats-Batch-Id", "Nats-Batch-Sequence", "Nats-Batch-Commit", "Nats-Rollup", "Nats-Msg-Id", "Nats-TTL",
           "Nats-Expected-Last-Sequence"]
STREAMS = {"C": {"allow_msg_counter": True, "allow_atomic": True},
           "S": {"allow_msg_schedules": True, "allow_atomic": True, "allow_msg_ttl": True},
           "P": {"allow_batched": True}}


def plan(seed: int, n: int) -> list:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        hdrs = {k: rng.choice(VALUES) for k in rng.sample(HEADERS, rng.randint(1, 4))}
        hdrs = {k: v for k, v in hdrs.items() if v or rng.random() < 0.5}
        out.append((rng.choice(["c.a", "c.b", "s.a", "s.b", "p.a"]), hdrs, rng.choice([b"", b"x"])))
    return out


async def transcript(srv, publishes: list) -> list[str]:
    nc = await nats.connect(srv.url, max_reconnect_attempts=1, connect_timeout=3)
    for name, cfg in STREAMS.items():
        await nc.request(f"$JS.API.STREAM.CREATE.{name}",
                         json.dumps({"name": name, "subjects": [name.lower() + ".>"], **cfg}).encode(), timeout=2)
    out = []
    for subject, hdrs, body in publishes:
        try:
            data = (await nc.request(subject, body, timeout=1, headers=hdrs or None)).data
            r = json.loads(data) if data else ""
            if isinstance(r, dict):
                r = r["error"]["err_code"] if "error" in r else sorted(r)
        except Exception as e:  # the same failure on both is fine
            r = type(e).__name__
        out.append(f"{subject} {hdrs} {body!r} -> {r}")
    for name in STREAMS:
        info = json.loads((await nc.request(f"$JS.API.STREAM.INFO.{name}", b"", timeout=2)).data)
        out.append(f"{name}: {info['state']['messages']} messages")
    await nc.close()
    return out


@pytest.mark.parametrize("seed", [1, 2])
async def test_new_publish_headers_answered_like_nats_server(tmp_path, seed):
    await assert_same_on_both(tmp_path, transcript, plan(seed, 300))
