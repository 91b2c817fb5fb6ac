"""The ``prioritized`` priority policy (nats-server 2.12+), differential: the
same assertions hold on natslab's broker and on nats-server 2.15.1. Waiting
pull requests are served by the ``priority`` in their request (0 first), in
turns among requests of the same priority. Raw pull requests (nats-py sends
no priority)."""

from __future__ import annotations

import asyncio
import json

from conftest import eventually, settled


async def req(nc, subject: str, body=None) -> dict:
    data = b"" if body is None else json.dumps(body).encode()
    return json.loads((await nc.request(subject, data, timeout=2)).data)


async def test_prioritized_config(nc, js):
    await js.add_stream(name="P", subjects=["p.>"])

    async def create(name: str, **cfg) -> dict:
        r = await req(nc, f"$JS.API.CONSUMER.CREATE.P.{name}", {"stream_name": "P", "config": {
            "name": name, "ack_policy": "explicit", **cfg}})
        return r.get("error") or r["config"]

    assert (await create("A", priority_policy="prioritized"))["err_code"] == 10159
    assert (await create("H", priority_policy="prioritized", priority_groups=["g"], deliver_subject="dh"))["err_code"] \
        == 10178
    cfg = await create("C", priority_policy="prioritized", priority_groups=["g"])
    assert (cfg["priority_policy"], cfg["priority_groups"]) == ("prioritized", ["g"])
    assert "priority_timeout" not in cfg
    info = await req(nc, "$JS.API.CONSUMER.INFO.P.C")
    assert info["config"]["priority_policy"] == "prioritized"


async def test_prioritized_pull_request_refusals(nc, js, raw):
    await js.add_stream(name="P", subjects=["p.>"])
    r = await req(nc, "$JS.API.CONSUMER.CREATE.P.C", {"stream_name": "P", "config": {
        "name": "C", "ack_policy": "explicit", "priority_policy": "prioritized", "priority_groups": ["g"]}})
    assert "error" not in r
    c = await raw()
    await c.send("SUB r.> 1\r\n")
    await c.read_until_pong()

    async def pull(reply: str, body: dict) -> None:
        data = json.dumps(body)
        await c.send(f"PUB $JS.API.CONSUMER.MSG.NEXT.P.C {reply} {len(data)}\r\n{data}\r\n")

    long = 5_000_000_000
    # refusals as for the other policies
    await pull("r.bad", {"batch": 1, "expires": long, "group": "g", "priority": 10})
    await pull("r.none", {"batch": 1, "expires": long})
    lines = []
    for _ in range(10):  # the answers come from the consumer, after the PONG on nats-server
        lines += await c.read_until_pong()
        if "NATS/1.0 400 Bad Request - Priority Group missing" in lines:
            break
        await asyncio.sleep(0.05)
    assert "NATS/1.0 400 Bad Request - Priority must be between 0 and 9" in lines
    assert "NATS/1.0 400 Bad Request - Priority Group missing" in lines


async def test_prioritized_delivery_order(nc, js):
    """Which waiting request each message goes to, read from the inbox it arrives on."""
    await js.add_stream(name="P", subjects=["p.>"])
    r = await req(nc, "$JS.API.CONSUMER.CREATE.P.C", {"stream_name": "P", "config": {
        "name": "C", "ack_policy": "explicit", "priority_policy": "prioritized", "priority_groups": ["g"]}})
    assert "error" not in r
    got: list[str] = []

    def on_msg(name: str):
        async def cb(msg):
            if msg.data:
                got.append(name)
        return cb

    for name in ("low", "hi1", "hi2", "zero"):
        await nc.subscribe(f"r.{name}", cb=on_msg(name))
    await nc.flush()
    await nc.flush()
    long = 5_000_000_000
    for reply, batch, prio in (("low", 3, 5), ("hi1", 3, 1), ("hi2", 1, 1), ("zero", 1, None)):
        body = {"batch": batch, "expires": long, "group": "g"}
        if prio is not None:
            body["priority"] = prio
        await nc.publish("$JS.API.CONSUMER.MSG.NEXT.P.C", json.dumps(body).encode(), reply=f"r.{reply}")
    await nc.flush()

    async def waiting():
        return (await req(nc, "$JS.API.CONSUMER.INFO.P.C", {}))["num_waiting"]
    assert await settled(waiting, 4) == 4
    for i in range(8):
        await js.publish("p.x", b"m%d" % i)
        # one message at a time: each goes to the request first in line
        assert await eventually(lambda: len(got) > i, 5), got
    # zero (priority 0) first; then hi1 and hi2 (priority 1) take turns; then low (5)
    assert got == ["zero", "hi1", "hi2", "hi1", "hi1", "low", "low", "low"]
