"""More than one account with JetStream, on both servers through nats-py:
each account's streams, consumers, KV buckets, limits, ``$JS.API.INFO`` and
store directory (``<store_dir>/jetstream/<account>/streams/<stream>``) are
its own; an account without JetStream gets 10039; /jsz lists each account.
And (natslab only: nats-server never had the older layout) a store written
the way earlier natslab builds wrote it, one JetStream account's streams
under ``jetstream/$G``, still opens."""

from __future__ import annotations

import json
import urllib.request

import nats.js.api
import pytest
from nats.js.errors import APIError

from conftest import ServerProcess, connect

TWO = """
accounts {
  A { users = [ {user: a, password: a} ], jetstream: enabled }
  B { users = [ {user: b, password: b} ], jetstream: { max_streams: 2, max_ack_pending: 7 } }
  C { users = [ {user: c, password: c} ] }
}
"""


def start(kind, tmp_path, conf: str, http: bool = False) -> ServerProcess:
    path = tmp_path / "acc.conf"
    path.write_text(conf)
    srv = ServerProcess(kind, tmp_path / "store", http=http, extra=["-c", str(path)])
    srv.start()
    return srv


def user(srv, name: str) -> str:
    return srv.url.replace("nats://", f"nats://{name}:{name}@")


async def info(nc) -> dict:
    return json.loads((await nc.request("$JS.API.INFO", b"", timeout=2)).data)


async def test_two_jetstream_accounts_are_apart(server_kind, tmp_path):
    srv = start(server_kind, tmp_path, TWO, http=True)
    try:
        a, b, c = [await connect(user(srv, n)) for n in "abc"]
        ja, jb = a.jetstream(), b.jetstream()
        await ja.add_stream(name="ORDERS", subjects=["orders.>"])
        await jb.add_stream(name="ORDERS", subjects=["orders.>"], storage=nats.js.api.StorageType.MEMORY)
        for i in range(3):
            await ja.publish("orders.a", b"a%d" % i)
        ack = await jb.publish("orders.b", b"b0")
        assert (ack.stream, ack.seq) == ("ORDERS", 1)
        sa, sb = await ja.stream_info("ORDERS"), await jb.stream_info("ORDERS")
        assert (sa.state.messages, sa.config.storage) == (3, nats.js.api.StorageType.FILE)
        assert (sb.state.messages, sb.config.storage) == (1, nats.js.api.StorageType.MEMORY)
        # consumers: pull and push, each on its account's stream
        pull = await jb.pull_subscribe("orders.>", "work")
        msgs = await pull.fetch(1, timeout=2)
        assert [m.data for m in msgs] == [b"b0"]
        await msgs[0].ack_sync()
        assert (await jb.consumer_info("ORDERS", "work")).config.max_ack_pending == 7  # B's limit
        push = await ja.subscribe("orders.>", durable="watch")
        assert (await push.next_msg(timeout=2)).data == b"a0"
        assert (await ja.consumer_info("ORDERS", "watch")).config.max_ack_pending == 1000
        assert await ja.consumers_info("ORDERS") and len(await jb.consumers_info("ORDERS")) == 1
        # a KV bucket in B only
        kv = await jb.create_key_value(bucket="cfg")
        await kv.put("k", b"v")
        assert (await kv.get("k")).value == b"v"
        with pytest.raises(Exception):
            await ja.key_value("cfg")
        # each account's API: its own counts and limits
        ia, ib = await info(a), await info(b)
        assert (ia["streams"], ia["consumers"], ib["streams"], ib["consumers"]) == (1, 1, 2, 1)
        assert ia["limits"]["max_streams"] == -1 and ib["limits"]["max_streams"] == 2
        with pytest.raises(APIError) as e:
            await jb.add_stream(name="MORE", subjects=["more"])
        assert e.value.err_code == 10027
        await ja.add_stream(name="MORE", subjects=["more"])  # A has no such limit
        assert (await info(c))["error"]["err_code"] == 10039
        # deleting one account's ORDERS leaves the other's
        await jb.delete_stream("ORDERS")
        assert (await ja.stream_info("ORDERS")).state.messages == 3
        assert sorted(await ja.streams_info(), key=lambda s: s.config.name)[0].config.name == "MORE"
        # /jsz: both accounts
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.http_port}/jsz?accounts=true", timeout=5) as r:
            jsz = json.loads(r.read())
        assert (jsz["accounts"], jsz["streams"], jsz["consumers"], jsz["messages"]) == (2, 3, 1, 4)
        details = {d["name"]: d for d in jsz["account_details"]}
        assert sorted(details) == ["A", "B"]
        assert details["A"]["reserved_storage"] == details["B"]["reserved_memory"] == 2**64 - 1  # no such limits
        # A's API since its INFO above: that INFO, MORE's create, ORDERS' info, the stream list;
        # B's errors: the KV bucket's lookup before it was made (10059), the stream count (10027)
        assert (details["A"]["api"]["total"], details["B"]["api"]["errors"]) == (ia["api"]["total"] + 4, 2)
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.http_port}/jsz?acc=B&streams=true", timeout=5) as r:
            jsz = json.loads(r.read())
        assert [d["name"] for d in jsz["account_details"]] == ["B"]
        assert [s["name"] for s in jsz["account_details"][0]["stream_detail"]] == ["KV_cfg"]
        with urllib.request.urlopen(f"http://127.0.0.1:{srv.http_port}/varz", timeout=5) as r:
            assert json.loads(r.read())["jetstream"]["stats"]["accounts"] == 2
        for nc in (a, b, c):
            await nc.close()
        # each account's streams in its own directory, restored after a restart
        srv.restart()
        assert sorted(p.name for p in (srv.store_dir / "jetstream" / "A" / "streams").iterdir()) == ["MORE", "ORDERS"]
        assert sorted(p.name for p in (srv.store_dir / "jetstream" / "B" / "streams").iterdir()) == ["KV_cfg"]
        a, b = await connect(user(srv, "a")), await connect(user(srv, "b"))
        assert (await a.jetstream().stream_info("ORDERS")).state.messages == 3
        assert (await (await b.jetstream().key_value("cfg")).get("k")).value == b"v"
        assert (await info(a))["streams"] == 2 and (await info(b))["streams"] == 1
        await a.close()
        await b.close()
    finally:
        srv.stop()


ONE_LEGACY = """
accounts { A { users = [ {user: a, password: a} ], jetstream: enabled } }
"""


@pytest.mark.parametrize("server_kind", ["natslab"])
async def test_store_of_earlier_builds_still_opens(server_kind, tmp_path):
    """Earlier natslab builds kept the streams of their one JetStream
    account in jetstream/$G/streams whichever account it was (as $G's
    streams still are): with one JetStream account they move to its
    directory, messages and consumers with them; with two, nobody can say
    whose they are: left where they are, the log says so."""
    srv = ServerProcess(server_kind, tmp_path / "store")  # no accounts: $G's JetStream
    srv.start()
    nc = await connect(srv.url)
    js = nc.jetstream()
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    for i in range(4):
        await js.publish("orders.x", b"%d" % i)
    await js.add_consumer("ORDERS", durable_name="d", ack_policy="explicit")
    await nc.close()
    srv.stop()
    legacy = srv.store_dir / "jetstream" / "$G" / "streams" / "ORDERS"
    assert legacy.is_dir()

    conf = tmp_path / "two.conf"
    conf.write_text(TWO)
    two = ServerProcess(server_kind, srv.store_dir, extra=["-c", str(conf)])
    two.start()
    nc = await connect(user(two, "a"))
    assert (await info(nc))["streams"] == 0
    await nc.close()
    two.stop()
    assert legacy.is_dir() and "no account serves now" in two.log()

    conf = tmp_path / "one.conf"
    conf.write_text(ONE_LEGACY)
    one = ServerProcess(server_kind, srv.store_dir, extra=["-c", str(conf)])
    one.start()
    try:
        nc = await connect(user(one, "a"))
        js = nc.jetstream()
        si = await js.stream_info("ORDERS")
        assert (si.state.messages, si.state.last_seq) == (4, 4)
        assert (await js.consumer_info("ORDERS", "d")).num_pending == 4
        assert (one.store_dir / "jetstream" / "A" / "streams" / "ORDERS").is_dir() and not legacy.exists()
        await nc.close()
    finally:
        one.stop()


async def test_domain_in_each_account(server_kind, tmp_path):
    """jetstream { domain } with two JetStream accounts: each account's
    $JS.<domain>.API answers for its own JetStream."""
    srv = start(server_kind, tmp_path, "jetstream { domain: hub }\n" + TWO)
    try:
        a, b = await connect(user(srv, "a")), await connect(user(srv, "b"))
        await a.jetstream(domain="hub").add_stream(name="ONLY_A", subjects=["x"])
        ra = json.loads((await a.request("$JS.hub.API.INFO", b"", timeout=2)).data)
        rb = json.loads((await b.request("$JS.hub.API.INFO", b"", timeout=2)).data)
        assert (ra["streams"], ra["domain"], rb["streams"], rb["domain"]) == (1, "hub", 0, "hub")
        assert rb["limits"]["max_streams"] == 2
        names = json.loads((await b.request("$JS.hub.API.STREAM.NAMES", b"", timeout=2)).data)
        assert names["streams"] is None and names["total"] == 0
        await a.close()
        await b.close()
    finally:
        srv.stop()


async def test_pub_ack_carries_the_domain(server_kind, tmp_path):
    """With jetstream { domain: ABC } every PubAck says "domain":"ABC",
    between the stream and the seq as nats-server writes it (clients such as
    the C client read it), also for a duplicate, a counter and after a
    restart; an error PubAck has none."""
    srv = start(server_kind, tmp_path, "jetstream { domain: ABC }\n")
    try:
        nc = await connect(srv.url)
        js = nc.jetstream()
        await js.add_stream(name="D", subjects=["d.>"])
        await nc.request("$JS.API.STREAM.CREATE.CNT", json.dumps(
            {"name": "CNT", "subjects": ["cnt"], "allow_msg_counter": True}).encode(), timeout=2)

        async def pub(subject, headers=None) -> bytes:
            return (await nc.request(subject, b"" if subject == "cnt" else b"x", timeout=2, headers=headers)).data

        assert await pub("d.a") == b'{"stream":"D","domain":"ABC","seq":1}'
        assert await pub("d.a", {"Nats-Msg-Id": "m"}) == b'{"stream":"D","domain":"ABC","seq":2}'
        assert await pub("d.a", {"Nats-Msg-Id": "m"}) == b'{"stream":"D","domain":"ABC","seq":2,"duplicate": true}'
        assert await pub("cnt", {"Nats-Incr": "5"}) == b'{"stream":"CNT","domain":"ABC","seq":1,"val":"5"}'
        ack = await js.publish("d.b", b"y")
        assert (ack.stream, ack.seq, ack.domain) == ("D", 3, "ABC")
        bad = json.loads(await pub("d.a", {"Nats-Expected-Last-Sequence": "1"}))
        assert bad == {"error": {"code": 400, "err_code": 10071, "description": "wrong last sequence: 3"},
                       "stream": "D", "seq": 0}
        await nc.close()
        srv.restart()
        nc = await connect(srv.url)
        assert (await nc.request("d.c", b"z", timeout=2)).data == b'{"stream":"D","domain":"ABC","seq":4}'
        await nc.close()
    finally:
        srv.stop()
