"""Deep and long subjects, as nats-server handles them: a subscription of
999 ``*`` tokens and ``>`` matches subjects of 1,000 to 2,000+ tokens (the
trie walk has no recursion limit), JetStream stores, filters and finds them,
and a control line is measured as nats-server measures it against
max_control_line (4096): its arguments, without the operation's name, so an
argument of 4096 bytes is fine and one of 4097 gets -ERR 'maximum control
line exceeded' and the connection closed. Differential: the same assertions
on natslab's broker and on nats-server."""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import RawClient, connect

STARS = ".".join(["*"] * 999) + ".>"
MAX_LINE_ERR = "-ERR 'maximum control line exceeded'"


def deep(n: int, prefix: str = "") -> str:
    return prefix + ".".join(["a"] * (n - (1 if prefix else 0)))


async def received(sub: RawClient, pub: RawClient) -> list[str]:
    """The sids of the MSGs (payloads of one byte) that reach ``sub`` up to
    a marker ``pub`` sends on "end" (sid 9): messages from one publisher
    arrive in order."""
    await pub.send("PUB end 1\r\nx\r\n")
    sids = []
    while True:
        line = await sub.readline()
        if line.startswith("MSG "):
            await sub.read_exactly(3)
            subject, sid = line.split()[1:3]
            if sid == "9":
                return sids
            if subject != "end":  # (the ">" subscription's copy of the marker)
                sids.append(sid)


async def test_deep_subjects_are_delivered(server):
    sub = await RawClient.open(server)
    await sub.send(f"SUB {STARS} 1\r\nSUB > 2\r\nSUB {'a.' * 1500}> 3\r\nSUB end 9\r\n")
    assert await sub.read_until_pong() == []
    pub = await RawClient.open(server)
    got = {}
    for n in (990, 999, 1000, 1001, 1500, 1501, 2000, 2040):
        await pub.send(f"PUB {deep(n)} 1\r\nx\r\n")
        assert await pub.read_until_pong() == []  # the publisher is still served
        got[n] = sorted(await received(sub, pub))
    assert got == {990: ["2"], 999: ["2"], 1000: ["1", "2"], 1001: ["1", "2"], 1500: ["1", "2"],
                   1501: ["1", "2", "3"], 2000: ["1", "2", "3"], 2040: ["1", "2", "3"]}
    # a deep queue subscription and an unsubscribe of the deep ones
    await sub.send(f"UNSUB 1\r\nUNSUB 3\r\nUNSUB 2\r\nSUB > 2\r\nSUB {STARS} workers 4\r\n")
    assert await sub.read_until_pong() == []
    await pub.send(f"PUB {deep(1200)} 1\r\nx\r\n")
    assert await pub.read_until_pong() == []
    assert sorted(await received(sub, pub)) == ["2", "4"]


@pytest.mark.parametrize("op", ["PUB", "HPUB", "SUB"])
async def test_control_line_limit_counts_the_arguments(server, op):
    def line(arg_len: int) -> str:
        tail = {"PUB": " 1", "HPUB": " 12 13", "SUB": " 1"}[op]
        body = "\r\nNATS/1.0\r\n\r\nx\r\n" if op == "HPUB" else ("\r\nx\r\n" if op == "PUB" else "\r\n")
        return f"{op} {'a' * (arg_len - len(tail))}{tail}{body}"

    ok = await RawClient.open(server)
    await ok.send(line(4096))
    assert await ok.read_until_pong() == []
    bad = await RawClient.open(server)
    await bad.send(line(4097))
    assert await bad.readline() == MAX_LINE_ERR
    assert await bad.closed()
    assert await ok.read_until_pong() == []  # the others keep being served


async def test_control_line_limit_on_a_line_still_being_read(server):
    c = await RawClient.open(server)
    await c.send("PUB " + "a" * 3000)
    await asyncio.sleep(0.2)  # pacing, not a wait: so the server reads the line's start on its own
    await c.send("a" * 1200)  # no end of line yet, 4200 bytes of argument
    assert await c.readline() == MAX_LINE_ERR
    assert await c.closed()


async def test_jetstream_stores_filters_and_finds_deep_subjects(server):
    nc = await connect(server.url)
    js = nc.jetstream()
    await js.add_stream(name="D", subjects=["d.>"])
    await js.add_consumer("D", durable_name="C", filter_subject="d." + STARS, ack_policy="explicit")
    seqs = [(await js.publish(deep(n, "d."), b"x")).seq for n in (990, 1001, 2000)]
    assert seqs == [1, 2, 3]
    psub = await js.pull_subscribe_bind("C", "D")
    msgs = await psub.fetch(5, timeout=2)
    assert [len(m.subject.split(".")) for m in msgs] == [1001, 2000]  # 990 tokens is too short for the filter
    for m in msgs:
        await m.ack_sync()
    info = await js.stream_info("D", subjects_filter="d." + STARS)
    assert info.state.messages == 3 and len(info.state.subjects) == 2
    r = await nc.request("$JS.API.STREAM.MSG.GET.D", json.dumps({"last_by_subj": deep(2000, "d.")}).encode(), timeout=3)
    assert json.loads(r.data)["message"]["seq"] == 3
    await nc.close()
