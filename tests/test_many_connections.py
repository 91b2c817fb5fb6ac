"""Many clients at once: 500 connections opened together are all accepted,
greeted and served (a SUB each, one PUB fanned out to all of them, a
request each answered), counted in /connz, and the broker serves a new
client as before once they are gone. Differential: the same assertions on
natslab's broker and on nats-server. Bounded: every step has a timeout."""

from __future__ import annotations

import asyncio
import json
import urllib.request

from conftest import RawClient

N = 500


def connz_total(srv) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{srv.http_port}/connz?limit=1", timeout=5) as r:
        return json.loads(r.read())["total"]


async def test_500_connections_at_once(http_server):
    srv = http_server
    clients = await asyncio.wait_for(asyncio.gather(*(RawClient.open(srv) for _ in range(N))), 30)
    try:
        assert all(c.info.startswith("INFO {") for c in clients)
        for i, c in enumerate(clients):
            c.writer.write(f"SUB all 1\r\nSUB one.{i} 2\r\n".encode())
        # each confirms its subscriptions before anyone publishes
        await asyncio.wait_for(asyncio.gather(*(c.read_until_pong() for c in clients)), 30)
        loop = asyncio.get_running_loop()
        assert await loop.run_in_executor(None, connz_total, srv) == N
        pub = clients[0]
        await pub.send("PUB all 5\r\nhello\r\n" + "".join(f"PUB one.{i} 2\r\n{i % 100:02d}\r\n" for i in range(N)))

        async def inbox(i: int, c: RawClient) -> list[str]:
            got = []
            for _ in range(2):
                line = await c.readline(10)
                payload = (await c.read_exactly(int(line.split()[-1]) + 2))[:-2].decode()
                got.append(f"{line.split()[1]}={payload}")
            return sorted(got)

        got = await asyncio.wait_for(asyncio.gather(*(inbox(i, c) for i, c in enumerate(clients))), 30)
        assert got == [sorted(["all=hello", f"one.{i}={i % 100:02d}"]) for i in range(N)]
    finally:
        for c in clients:
            c.close()
    # they are gone, and a newcomer is served as before
    for _ in range(100):
        total = await asyncio.get_running_loop().run_in_executor(None, connz_total, srv)
        if total == 0:
            break
        await asyncio.sleep(0.05)
    assert total == 0
    late = await RawClient.open(srv)
    await late.send("SUB x 1\r\nPUB x 2\r\nok\r\n")
    assert await late.read_until_pong() == ["MSG x 1 2", "ok"]
    late.close()
