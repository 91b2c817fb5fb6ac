"""Client ids as a client sees them (INFO's client_id, `nats account info`),
differential: nats-server gives its own internal clients ids from the same
counter (the system account's, its send queue's, one per account, three per
stream, two per consumer, two for the consumer a mirror or source makes on
its origin), so the ids connections get depend on them."""

from __future__ import annotations

import json
import socket

import pytest
from nats.js import api

from conftest import ServerProcess, connect, eventually
from test_js_streams import req


def read_client_id(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        assert chunk, "closed before INFO"
        data += chunk
    line = data.split(b"\r\n", 1)[0]
    assert line.startswith(b"INFO ")
    return json.loads(line[5:])["client_id"]


def client_id(srv) -> int:
    """The client_id of the INFO a new connection reads (the connection takes it)."""
    with socket.create_connection((srv.host, srv.port), timeout=5) as s:
        return read_client_id(s)


class Probed(ServerProcess):
    """A broker whose start-up probe (the first connection after each start)
    notes the client id it was given."""

    def __init__(self, *a, jetstream: bool = True, **kw):
        super().__init__(*a, **kw)
        self.jetstream = jetstream
        self.first_ids: list[int] = []

    def argv(self) -> list[str]:
        cmd = super().argv()
        if not self.jetstream:
            i = cmd.index("-js")
            cmd = cmd[:i] + cmd[i + 4:]  # without -js -sd <dir>
        return cmd

    def ready(self, sock: socket.socket) -> bool:
        self.first_ids.append(read_client_id(sock))
        return True


@pytest.fixture
def probed(server_kind, tmp_path):
    servers = []

    def make(**kw) -> Probed:
        srv = Probed(server_kind, tmp_path / "store", **kw)
        servers.append(srv)
        srv.start()
        return srv

    yield make
    for srv in servers:
        srv.stop()


@pytest.mark.parametrize("jetstream", [False, True])
def test_first_client_ids(probed, jetstream):
    srv = probed(jetstream=jetstream)
    assert srv.first_ids == [5]
    assert [client_id(srv) for _ in range(2)] == [6, 7]


ACCOUNTS = {
    "two": """
accounts {
  A { users = [ {user: a, password: a} ], jetstream: enabled }
  C { users = [ {user: c, password: c} ] }
}
""",
    "system": """
accounts {
  A { users = [ {user: a, password: a} ], jetstream: enabled }
  B { users = [ {user: b, password: b} ], jetstream: enabled }
  C { users = [ {user: c, password: c} ] }
  SYS { users = [ {user: s, password: s} ] }
}
system_account: SYS
""",
    "imports": """
accounts {
  A { users = [ {user: a, password: a} ], exports: [ {service: "svc.>"} ] }
  B { users = [ {user: b, password: b} ], imports: [ {service: {account: A, subject: "svc.>"}} ] }
}
""",
}


@pytest.mark.parametrize("conf,first", [("two", 7), ("system", 8), ("imports", 7)])
def test_first_client_id_counts_each_account(probed, tmp_path, conf, first):
    path = tmp_path / "acc.conf"
    path.write_text(ACCOUNTS[conf])
    srv = probed(extra=["-c", str(path)])
    assert srv.first_ids + [client_id(srv)] == [first, first + 1]


async def test_client_ids_after_streams_and_consumers(probed):
    server = probed()
    assert server.first_ids == [5]
    nc = await connect(server.url)
    assert nc._client_id == 6
    js = nc.jetstream()

    async def settled() -> int:
        await nc.flush()  # (what the API did is done when its answer is here)
        return client_id(server)

    await js.add_stream(name="S", subjects=["s"])
    await js.publish("s", b"one")
    assert await settled() == 6 + 3 + 1  # the file stream's three
    await js.add_stream(name="M", subjects=["m"], storage="memory")
    assert await settled() == 10 + 3 + 1
    await js.add_consumer("S", api.ConsumerConfig(durable_name="C", ack_policy="explicit"))
    assert await settled() == 14 + 2 + 1
    await js.add_consumer("S", api.ConsumerConfig(durable_name="P", deliver_subject="dp"))
    assert await settled() == 17 + 2 + 1
    await js.create_key_value(bucket="kv")
    assert await settled() == 20 + 3 + 1
    await js.add_stream(name="SRC", sources=[api.StreamSource(name="S")])
    # the source's consumer on S is made once the stream is, on its own
    assert await eventually(lambda: _copied(nc, "SRC", 1), timeout=10)
    assert await settled() == 24 + 3 + 2 + 1
    await js.delete_consumer("S", "P")  # (ids are never given back)
    assert await settled() == 31
    # (after a restart nats-server makes a source's consumer a while after
    # the first connections: which id they get is a matter of timing there)
    await js.delete_stream("SRC")
    assert await settled() == 32
    await nc.close()
    server.restart()
    # the file streams (S, KV_kv: 3 each) and S's durable C (2) come back
    # before the first connection
    assert server.first_ids == [5, 4 + 6 + 2 + 1]


async def _copied(nc, stream: str, n: int) -> bool:
    return (await req(nc, f"$JS.API.STREAM.INFO.{stream}"))["state"]["messages"] >= n
