"""The monitoring port (-m), differentially: the same requests and the same
assertions against natslab and nats-server. Key sets are nats-server 2.15's;
values are checked where both servers must agree for the same state (counts
after a known publish pattern, JetStream totals after creating streams).
Absolute subscription counts differ (nats-server has $SYS subscriptions), so
those are compared as deltas."""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from conftest import ServerProcess, connect, eventually, free_port

VARZ_KEYS = {
    "server_id", "server_name", "version", "proto", "git_commit", "go", "host", "port",
    "max_connections", "ping_interval", "ping_max", "http_host", "http_port", "http_base_path",
    "https_port", "auth_timeout", "max_control_line", "max_payload", "max_pending", "cluster",
    "gateway", "leaf", "mqtt", "websocket", "jetstream", "tls_timeout", "write_deadline", "start",
    "now", "uptime", "mem", "cores", "gomaxprocs", "cpu", "connections", "total_connections",
    "routes", "remotes", "leafnodes", "in_msgs", "in_bytes", "in_client_msgs", "in_client_bytes",
    "out_msgs", "out_bytes", "out_client_msgs", "out_client_bytes", "slow_consumers",
    "stale_connections", "stalled_clients", "subscriptions", "http_req_stats", "config_load_time",
    "config_digest", "feature_flags", "system_account", "slow_consumer_stats",
    "stale_connection_stats", "disk_io_wait_stats",
}
JS_CONFIG_KEYS = {"max_memory", "max_storage", "store_dir", "sync_interval", "strict"}
JS_STATS_KEYS = {"memory", "storage", "reserved_memory", "reserved_storage", "accounts", "ha_assets", "api"}
CONNZ_KEYS = {"server_id", "now", "num_connections", "total", "offset", "limit", "connections"}
CONN_KEYS = {
    "cid", "kind", "type", "ip", "port", "start", "last_activity", "rtt", "uptime", "idle",
    "pending_bytes", "in_msgs", "out_msgs", "in_bytes", "out_bytes", "subscriptions", "name",
    "lang", "version",
}
SUBSZ_KEYS = {
    "server_id", "now", "num_subscriptions", "num_cache", "num_inserts", "num_removes",
    "num_matches", "cache_hit_rate", "max_fanout", "avg_fanout", "total", "offset", "limit",
}
SUB_KEYS = {"account", "account_tag", "subject", "sid", "msgs", "cid"}
JSZ_KEYS = JS_STATS_KEYS | {
    "server_id", "now", "config", "limits", "streams", "consumers", "messages", "bytes", "total",
}
ACCOUNT_KEYS = {"name", "id", "memory", "storage", "reserved_memory", "reserved_storage", "accounts", "ha_assets", "api"}
STREAM_DETAIL_KEYS = {"name", "created", "cluster", "state"}
CONSUMER_DETAIL_KEYS = {
    "stream_name", "name", "created", "delivered", "ack_floor", "num_ack_pending",
    "num_redelivered", "num_waiting", "num_pending", "ts",
}


async def http(srv, path: str = "/", raw: bytes | None = None, timeout: float = 5.0) -> tuple[int, dict, bytes]:
    """One request on its own connection; returns (status, headers, body)."""
    r, w = await asyncio.open_connection(srv.host, srv.http_port)
    try:
        w.write(raw if raw is not None else f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        await w.drain()
        data = b""
        while chunk := await asyncio.wait_for(r.read(65536), timeout):
            data += chunk
    finally:
        w.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    if headers.get("transfer-encoding") == "chunked":
        out, rest = b"", body
        while rest:
            size, _, rest = rest.partition(b"\r\n")
            n = int(size, 16)
            if n == 0:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        body = out
    return status, headers, body


async def get_json(srv, path: str) -> dict:
    status, headers, body = await http(srv, path)
    assert status == 200, (path, status, body)
    assert headers["content-type"] == "application/json"
    return json.loads(body)


async def poll_json(srv, path: str, cond, timeout: float = 5.0) -> dict:
    """The JSON at ``path`` once cond(it) holds, or the last one read when
    ``timeout`` runs out (the caller's asserts then show what differs):
    nats-server adds to its counters and closed-connection list on goroutines
    of its own, so a fixed sleep before reading them is a race under load."""
    last = {}

    async def holds():
        last.update(await get_json(srv, path))
        return cond(last)
    await eventually(holds, timeout)
    return last


async def test_healthz_index_and_unknown_path(http_server):
    # up as soon as the client port accepts: no retry here
    assert await get_json(http_server, "/healthz") == {"status": "ok"}
    status, headers, body = await http(http_server, "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert b"varz" in body and b"jsz" in body
    status, _, body = await http(http_server, "/nope")
    assert (status, body) == (404, b"404 page not found\n")
    status, _, body = await http(http_server, "/stacksz")  # a stack dump; its text is each server's own
    assert status == 200 and body


async def test_varz(http_server):
    srv = http_server
    nc = await connect(srv.url)
    v = await get_json(srv, "/varz")
    assert set(v) >= VARZ_KEYS
    assert v["server_id"] == nc._server_info["server_id"]
    assert v["version"] == "2.15.1" and v["proto"] == 1
    assert (v["host"], v["port"], v["http_port"]) == (srv.host, srv.port, srv.http_port)
    assert (v["max_payload"], v["max_control_line"], v["max_pending"]) == (1048576, 4096, 67108864)
    assert (v["max_connections"], v["ping_interval"], v["ping_max"], v["auth_timeout"]) == (65536, 120_000_000_000, 2, 2)
    assert v["connections"] == 1 and v["total_connections"] >= 1  # + the readiness probe
    assert v["uptime"].endswith("s") and v["start"].endswith("Z") and v["mem"] > 0
    js = v["jetstream"]
    assert set(js["config"]) == JS_CONFIG_KEYS and set(js["stats"]) == JS_STATS_KEYS
    assert js["config"]["store_dir"] == str(srv.store_dir / "jetstream")
    assert js["stats"]["api"]["level"] >= 1 and js["stats"]["accounts"] == 1
    await nc.close()


async def test_core_counts(http_server):
    """A known publish pattern: both servers must count it identically."""
    srv = http_server
    v0 = await get_json(srv, "/varz")
    s0 = await get_json(srv, "/subsz")
    a = await connect(srv.url, name="mon-a")
    b = await connect(srv.url, name="mon-b")
    await a.subscribe("mon.*")
    await b.subscribe("mon.q", queue="q1")
    await b.subscribe("mon.x")
    await a.flush()
    await b.flush()
    for _ in range(4):
        await b.publish("mon.x", b"0123456789")  # to a (mon.*) and b (mon.x)
    for _ in range(3):
        await b.publish("mon.q", b"abcde")  # to a (mon.*) and b's queue group
    await b.flush()
    await a.flush()

    v = await poll_json(srv, "/varz", lambda v: (
        v["in_msgs"] - v0["in_msgs"], v["in_bytes"] - v0["in_bytes"],
        v["out_msgs"] - v0["out_msgs"], v["out_bytes"] - v0["out_bytes"]) == (7, 55, 14, 110))
    assert v["connections"] == 2
    assert v["total_connections"] - v0["total_connections"] == 2
    assert v["subscriptions"] - v0["subscriptions"] == 3
    assert (v["in_msgs"] - v0["in_msgs"], v["in_bytes"] - v0["in_bytes"]) == (7, 55)
    assert (v["out_msgs"] - v0["out_msgs"], v["out_bytes"] - v0["out_bytes"]) == (14, 110)

    c = await get_json(srv, "/connz?subs=1")
    assert set(c) == CONNZ_KEYS
    assert (c["num_connections"], c["total"], c["offset"], c["limit"]) == (2, 2, 0, 1024)
    conns = {x["name"]: x for x in c["connections"]}
    for x in conns.values():
        assert set(x) - {"subscriptions_list"} == CONN_KEYS
        assert (x["kind"], x["type"], x["ip"], x["lang"]) == ("Client", "nats", "127.0.0.1", "python3")
    ca, cb = conns["mon-a"], conns["mon-b"]
    assert ca["cid"] < cb["cid"]
    assert (ca["subscriptions"], ca["subscriptions_list"]) == (1, ["mon.*"])
    assert (ca["in_msgs"], ca["in_bytes"], ca["out_msgs"], ca["out_bytes"]) == (0, 0, 7, 55)
    assert sorted(cb["subscriptions_list"]) == ["mon.q", "mon.x"]
    assert (cb["in_msgs"], cb["in_bytes"], cb["out_msgs"], cb["out_bytes"]) == (7, 55, 7, 55)

    c = await get_json(srv, "/connz?sort=msgs_from&limit=1")
    assert [x["name"] for x in c["connections"]] == ["mon-b"]
    assert (c["num_connections"], c["total"], c["limit"]) == (1, 2, 1)
    c = await get_json(srv, "/connz?offset=1")
    assert [x["name"] for x in c["connections"]] == ["mon-b"]
    c = await get_json(srv, f"/connz?cid={ca['cid']}&subs=detail")
    (only,) = c["connections"]
    assert only["subscriptions_list_detail"] == [{"subject": "mon.*", "sid": "1", "msgs": 7, "cid": ca["cid"]}]

    s = await get_json(srv, "/subsz")
    assert set(s) == SUBSZ_KEYS
    assert s["num_subscriptions"] - s0["num_subscriptions"] == 3
    assert s["num_inserts"] - s0["num_inserts"] == 3
    s = await get_json(srv, "/subsz?subs=1&test=mon.q")
    assert s["total"] == 2
    subs = sorted(s["subscriptions_list"], key=lambda d: d["subject"])
    assert all(set(d) - {"qgroup"} == SUB_KEYS for d in subs)
    assert [(d["subject"], d.get("qgroup"), d["msgs"], d["account"]) for d in subs] == [
        ("mon.*", None, 7, "$G"), ("mon.q", "q1", 3, "$G")]

    await a.close()
    c = await poll_json(srv, "/connz?state=closed", lambda c: any(x.get("name") == "mon-a" for x in c["connections"]))
    closed = [x for x in c["connections"] if x.get("name") == "mon-a"]
    assert closed and closed[0]["reason"] == "Client Closed" and "stop" in closed[0]
    await b.close()


async def test_jsz(http_server):
    srv = http_server
    nc = await connect(srv.url)
    js = nc.jetstream()
    v0 = await get_json(srv, "/varz")
    await js.add_stream(name="S1", subjects=["s1.>"])
    await js.add_stream(name="S2", subjects=["s2.>"], storage="memory")
    for _ in range(3):
        await js.publish("s1.a", b"x" * 10)
    for _ in range(2):
        await js.publish("s2.b", b"y" * 20)
    await js.add_consumer("S1", durable_name="D1")
    await js.add_consumer("S2", durable_name="D2", deliver_policy="last")

    # client traffic with JetStream counts once: 9 requests in, 9 replies out
    # (nats-server does not count the hops through its internal subscriptions)
    # (nats-server adds a read's counts to its totals after the reply may be out)
    v = await poll_json(srv, "/varz", lambda v: (v["in_msgs"] - v0["in_msgs"], v["out_msgs"] - v0["out_msgs"]) == (9, 9))
    assert (v["in_msgs"] - v0["in_msgs"], v["out_msgs"] - v0["out_msgs"]) == (9, 9)

    j = await get_json(srv, "/jsz")
    assert set(j) == JSZ_KEYS
    assert (j["streams"], j["consumers"], j["messages"]) == (2, 2, 5)
    assert j["api"] == {"level": 5, "total": 4, "errors": 0}
    assert j["storage"] == 3 * (30 + 4 + 10)  # file store: 30 + subject + payload per message
    assert j["memory"] == 2 * (16 + 4 + 20)  # memory store: 16 + subject + payload
    assert j["bytes"] == j["storage"] + j["memory"]
    assert set(j["config"]) == JS_CONFIG_KEYS and j["accounts"] == 1

    with pytest.raises(Exception):
        await js.stream_info("NOPE")
    j = await get_json(srv, "/jsz?accounts=1")
    assert j["api"]["total"] == 5 and j["api"]["errors"] == 1
    (acct,) = j["account_details"]
    assert set(acct) == ACCOUNT_KEYS and (acct["name"], acct["id"]) == ("$G", "$G")
    assert (acct["storage"], acct["memory"]) == (j["storage"], j["memory"])

    j = await get_json(srv, "/jsz?streams=1")
    details = sorted(j["account_details"][0]["stream_detail"], key=lambda d: d["name"])
    assert [set(d) for d in details] == [STREAM_DETAIL_KEYS] * 2
    assert [(d["name"], d["state"]["messages"], d["state"]["consumer_count"]) for d in details] == [("S1", 3, 1), ("S2", 2, 1)]

    j = await get_json(srv, "/jsz?consumers=1&config=1")
    details = sorted(j["account_details"][0]["stream_detail"], key=lambda d: d["name"])
    assert details[0]["config"]["name"] == "S1" and details[1]["config"]["storage"] == "memory"
    cons = [d["consumer_detail"][0] for d in details]
    assert all(set(c) == CONSUMER_DETAIL_KEYS | {"config"} for c in cons)
    assert [(c["stream_name"], c["name"], c["num_pending"], c["config"]["durable_name"]) for c in cons] == [
        ("S1", "D1", 3, "D1"), ("S2", "D2", 1, "D2")]
    j = await get_json(srv, "/jsz?consumers=1")
    assert "config" not in j["account_details"][0]["stream_detail"][0]["consumer_detail"][0]

    # a pull of 3 and their acks (sent together): 1 + 3 in, 3 out
    v = await get_json(srv, "/varz")
    psub = await js.pull_subscribe_bind("D1", "S1")
    for m in await psub.fetch(3, timeout=2):
        await m.ack()
    await nc.flush()
    v2 = await poll_json(srv, "/varz", lambda v2: (v2["in_msgs"] - v["in_msgs"], v2["out_msgs"] - v["out_msgs"]) == (4, 3))
    assert (v2["in_msgs"] - v["in_msgs"], v2["out_msgs"] - v["out_msgs"]) == (4, 3)

    # direct gets sent together (natslab answers a run of them at once): one in, one out each
    await js.add_stream(name="DG", subjects=["dg.>"], allow_direct=True)
    await js.publish("dg.a", b"a")
    v = await get_json(srv, "/varz")
    for _ in range(2):
        got = await asyncio.gather(*(nc.request(f"$JS.API.DIRECT.GET.DG.dg.{k}", b"", timeout=2) for k in "aaaab"))
        assert [m.data for m in got] == [b"a"] * 4 + [b""]
    v2 = await get_json(srv, "/varz")
    assert (v2["in_msgs"] - v["in_msgs"], v2["out_msgs"] - v["out_msgs"]) == (10, 10)
    await nc.close()


BAD_QUERIES = [
    ("/connz?limit=x", "Error decoding int for 'limit': strconv.Atoi: parsing \"x\": invalid syntax"),
    ("/connz?subs=maybe", "Error decoding boolean for 'subs': strconv.ParseBool: parsing \"maybe\": invalid syntax"),
    ("/connz?sort=bogus", "invalid sorting option: bogus"),
    ("/connz?sort=stop", "sort by stop only valid on closed connections"),
    ("/connz?state=sideways", "Error decoding state for sideways"),
    ("/subsz?test=foo.*", "invalid test subject, must be valid publish subject: foo.*"),
    ("/jsz?streams=2", "Error decoding boolean for 'streams': strconv.ParseBool: parsing \"2\": invalid syntax"),
]


async def test_bad_requests(http_server):
    """Bad query values get the real server's 400 texts; malformed requests
    get an HTTP error; nothing takes the monitor down."""
    srv = http_server
    for path, text in BAD_QUERIES:
        status, _, body = await http(srv, path)
        assert (status, body.decode().strip()) == (400, text), path
    status, _, _ = await http(srv, raw=b"GARBAGE\r\n\r\n")
    assert status == 400
    status, _, _ = await http(srv, raw=b"GET /varz HTTP/1.1\r\n\r\n")  # HTTP/1.1 requires Host
    assert status == 400
    huge = b"GET /varz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1100 * 1024) + b"\r\n\r\n"
    status, _, _ = await http(srv, raw=huge)
    assert status == 431
    # keep-alive: two requests on one connection
    two = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    r, w = await asyncio.open_connection(srv.host, srv.http_port)
    w.write(two)
    data = b""
    while chunk := await asyncio.wait_for(r.read(65536), 5):
        data += chunk
    w.close()
    assert data.count(b"HTTP/1.1 200 OK") == 2
    assert await get_json(srv, "/healthz") == {"status": "ok"}


async def test_slow_http_clients_do_not_block(http_server):
    srv = http_server
    stalled = []
    for partial in (b"", b"GET /va", b"GET /varz HTTP/1.1\r\nHost: x\r\n"):
        r, w = await asyncio.open_connection(srv.host, srv.http_port)
        w.write(partial)
        await w.drain()
        stalled.append(w)
    nc = await connect(srv.url)
    sub = await nc.subscribe("still.alive")
    await nc.publish("still.alive", b"yes")
    assert (await sub.next_msg(timeout=2)).data == b"yes"
    v = await asyncio.wait_for(get_json(srv, "/varz"), 2)
    assert v["connections"] == 1
    for w in stalled:
        w.close()
    await nc.close()


async def test_auth_shows_in_varz_and_connz(server_kind, tmp_path):
    srv = ServerProcess(server_kind, tmp_path / "store", http=True, extra=["--user", "mon", "--pass", "pw"])
    srv.start()
    try:
        nc = await connect(srv.url, user="mon", password="pw", name="authed")
        assert (await get_json(srv, "/varz"))["auth_required"] is True
        (c,) = (await get_json(srv, "/connz"))["connections"]
        assert "authorized_user" not in c
        (c,) = (await get_json(srv, "/connz?auth=1"))["connections"]
        assert (c["name"], c["authorized_user"]) == ("authed", "mon")
        assert len((await get_json(srv, "/connz?user=mon"))["connections"]) == 1
        assert (await get_json(srv, "/connz?user=other"))["connections"] == []
        assert len((await get_json(srv, "/connz?acc=$G"))["connections"]) == 1
        await nc.close()
    finally:
        srv.stop()


async def test_connection_details(http_server, request):
    """RTT is measured as soon as a client connects, and a closed connection
    keeps its details (address, counters, subscriptions) in /connz?state=closed."""
    srv = http_server
    nc = await connect(srv.url, name="brief")
    await nc.subscribe("brief.x")
    await nc.publish("brief.x", b"12345")
    await nc.flush()
    cz = await poll_json(srv, "/connz", lambda cz: [x["rtt"] != "0s" for x in cz["connections"]] == [True])
    (c,) = cz["connections"]
    assert c["rtt"] != "0s"
    await nc.close()
    cz = await poll_json(srv, "/connz?state=closed", lambda cz: any(x.get("name") == "brief" for x in cz["connections"]))
    closed = [x for x in cz["connections"] if x.get("name") == "brief"]
    (x,) = closed
    assert (x["ip"], x["port"], x["start"]) == (c["ip"], c["port"], c["start"])
    assert (x["in_msgs"], x["out_msgs"], x["in_bytes"], x["subscriptions"]) == (1, 1, 5, 1)


def _shape(x, path: str = "", out: dict | None = None) -> dict:
    """Every JSON path (list items merged) with the kind of value found there."""
    out = {} if out is None else out
    if isinstance(x, dict):
        for k, v in x.items():
            _shape(v, f"{path}.{k}", out)
    elif isinstance(x, list):
        for v in x:
            _shape(v, f"{path}[]", out)
    else:
        out[path] = "number" if isinstance(x, (int, float)) and not isinstance(x, bool) else type(x).__name__
    return out


# paths whose values legitimately differ between two servers in the same state
_VOLATILE = {"server_id", "server_name", "now", "start", "created", "ts", "first_ts", "last_ts", "last_activity",
             "uptime", "idle", "rtt", "port", "mem", "cpu", "leader", "store_dir", "max_storage", "max_memory",
             "config_load_time", "http_port", "go", "git_commit", "cid", "sid", "gomaxprocs", "sync_interval",
             "out_bytes", "out_client_bytes"}  # out_bytes: Go escapes '>' in JSON replies as \u003e


def _normalized(x):
    """Drop the fields that cannot agree, blank random inboxes, sort lists."""
    if isinstance(x, str):
        return re.sub(r"_INBOX\.[A-Za-z0-9]+", "_INBOX.<nuid>", x)
    if isinstance(x, dict):
        return {k: _normalized(v) for k, v in x.items() if k not in _VOLATILE}
    if isinstance(x, list):
        return sorted((_normalized(v) for v in x), key=lambda v: json.dumps(v, sort_keys=True))
    return x


def _values(x, path: str = "", out: dict | None = None) -> dict:
    """Every JSON path of the normalized document with its value."""
    out = {} if out is None else out
    if not path:
        x = _normalized(x)
    if isinstance(x, dict):
        for k, v in x.items():
            _values(v, f"{path}.{k}", out)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            _values(v, f"{path}[{i}]", out)
    else:
        out[path or "."] = x
    return out


async def test_same_json_as_nats_server(tmp_path):
    """Both servers side by side, driven into the same state: every field path
    of /varz, /connz, /jsz (and /subsz's header) has the same kind of value,
    and the values agree except where they cannot (ids, clocks, paths).
    natslab goes first; nats-server's pages are read until they agree with
    natslab's (up to 10 s: nats-server counts some of it on goroutines of its
    own, after the PONG), and a difference left then is the failure."""
    paths = ["/varz", "/connz?subs=detail", "/subsz", "/jsz?accounts=1&streams=1&consumers=1&config=1",
             "/routez", "/gatewayz", "/leafz", "/accountz", "/accstatz"]
    got = {}
    for kind in ("natslab", "nats-server"):
        srv = ServerProcess(kind, tmp_path / kind, http=True)
        srv.start()
        try:
            nc = await connect(srv.url, name="same")
            await nc.subscribe("same.*")
            await nc.subscribe("same.q", queue="workers")
            for _ in range(3):
                await nc.publish("same.x", b"hello")
            js = nc.jetstream()
            kv = await js.create_key_value(bucket="CONFIG", history=5)
            await kv.put("region", b"eu")
            await kv.put("region", b"us")
            await js.add_stream(name="ORDERS", subjects=["orders.*"], storage="memory")
            await js.publish("orders.new", b"{}")
            await js.add_consumer("ORDERS", durable_name="ship", ack_policy="explicit")
            await nc.flush()

            async def pages_agree() -> bool:
                got[kind] = {p: await get_json(srv, p) for p in paths}
                return kind == "natslab" or not _differences(got["nats-server"], got["natslab"], paths)
            await eventually(pages_agree, timeout=10)
            await nc.close()
        finally:
            srv.stop()
    diffs = _differences(got["nats-server"], got["natslab"], paths)
    assert not diffs, "\n".join(diffs)


def _differences(ref: dict, ours: dict, paths: list[str]) -> list[str]:
    """What differs between nats-server's pages and natslab's, beyond what
    cannot agree between two servers."""
    out = []
    for p in paths:
        a, b = _shape(ref[p]), _shape(ours[p])
        if p == "/subsz":  # internal subscriptions differ, so do the index statistics
            a = {k: v for k, v in a.items() if k.startswith((".server_id", ".now", ".total", ".offset", ".limit"))} | {
                k: "number" for k in a if k.startswith(".num_") or k.endswith("_fanout") or k == ".cache_hit_rate"}
            b = {k: v for k, v in b.items() if k in a}
        if p == "/varz":  # (which pages it counts depends on how often nats-server's were read)
            a, b = ({k: v for k, v in x.items() if not k.startswith(".http_req_stats.") or k.endswith("/varz")}
                    for x in (a, b))
        if b != a:
            out.append(f"{p} shape: nats-server {a}\nnatslab {b}")
    for p in ("/connz?subs=detail", "/jsz?accounts=1&streams=1&consumers=1&config=1", "/routez", "/gatewayz",
              "/leafz", "/accountz"):
        va, vb = _values(ref[p]), _values(ours[p])
        if vb != va:
            out.append(f"{p}: nats-server {sorted(set(va.items()) - set(vb.items()), key=str)}"
                       f"\nnatslab {sorted(set(vb.items()) - set(va.items()), key=str)}")
    v_ref, v_ours = _values(ref["/varz"]), _values(ours["/varz"])
    for k in (".connections", ".total_connections", ".in_msgs", ".in_bytes", ".out_msgs", ".slow_consumers",
              ".max_payload", ".jetstream.stats.storage", ".jetstream.stats.memory", ".jetstream.stats.api.total"):
        if v_ours.get(k) != v_ref.get(k):
            out.append(f"/varz {k}: nats-server {v_ref.get(k)}, natslab {v_ours.get(k)}")
    (acc_ref,), (acc_ours,) = ref["/accstatz"]["account_statz"], ours["/accstatz"]["account_statz"]
    for k in ("acc", "conns", "total_conns", "slow_consumers"):
        if acc_ours[k] != acc_ref[k]:
            out.append(f"/accstatz {k}: nats-server {acc_ref[k]}, natslab {acc_ours[k]}")
    if acc_ours["received"]["msgs"] != acc_ref["received"]["msgs"]:
        out.append(f"/accstatz received.msgs: nats-server {acc_ref['received']['msgs']}, natslab {acc_ours['received']['msgs']}")
    return out


def test_go_wire_formats():
    """Go's Duration.String, nats-server's uptime strings, time.Time JSON and
    HTML-safe MarshalIndent, as the monitor writes them."""
    from natslab.server.gowire import NS, go_duration, rfc3339 as go_time
    from natslab.server.monitor.format import to_json, uptime

    assert [go_duration(n) for n in (0, 999, 1500, 850_000, 1_191_304, 2 * NS, 90 * NS, 3723 * NS + NS // 2)] == [
        "0s", "999ns", "1.5µs", "850µs", "1.191304ms", "2s", "1m30s", "1h2m3.5s"]
    assert [uptime(s) for s in (0, 59.9, 61, 3601, 2 * 86400 + 5, 365 * 86400)] == [
        "0s", "59s", "1m1s", "1h0m1s", "2d0h0m5s", "1y0d0h0m0s"]
    assert go_time(1_700_000_000_123_000_000) == "2023-11-14T22:13:20.123Z"
    assert go_time(1_700_000_000 * NS) == "2023-11-14T22:13:20Z"
    assert to_json({"s": "a.>", "e": []}) == b'{\n  "s": "a.\\u003e",\n  "e": []\n}'


@pytest.mark.parametrize("form", ["http_port: {port}", 'http: "127.0.0.1:{port}"', "monitor_port: {port}"])
async def test_monitor_port_from_config(server_kind, tmp_path, form):
    port = free_port()
    conf = tmp_path / "mon.conf"
    conf.write_text(form.format(port=port) + "\n")
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf)])
    try:
        srv.start()
    except RuntimeError as e:
        pytest.fail(f"did not start: {str(e)[-300:]}")
    srv.http_port = port  # set by the file, not by -m
    try:
        assert await get_json(srv, "/healthz") == {"status": "ok"}
    finally:
        srv.stop()


async def test_runs_of_pubs_in_one_write_are_counted_exactly(http_server):
    """One big write of identical PUB lines (to nobody, to a subscriber, one
    with a reply between them), as a raw client pipelines it: /varz and
    /connz count every message and byte as nats-server does."""
    srv = http_server
    v0 = await get_json(srv, "/varz")
    s = await connect(srv.url, name="runs-sub")
    await s.subscribe("runs.x")
    await s.flush()
    await s.flush()
    r, w = await asyncio.open_connection(srv.host, srv.port)
    await r.readline()
    data = (b'CONNECT {"verbose":false,"pedantic":false,"name":"runs-pub","protocol":1}\r\n'
            + b"PUB runs.none 10\r\n0123456789\r\n" * 1500
            + b"PUB runs.x 5\r\nabcde\r\n" * 1200
            + b"PUB runs.x _INBOX.r 3\r\nabc\r\n"
            + b"PUB runs.x 5\r\nabcde\r\n" * 300 + b"PING\r\n")
    w.write(data)
    await w.drain()
    while (await asyncio.wait_for(r.readline(), 10)) != b"PONG\r\n":
        pass
    await s.flush()
    n, nb = 1500 + 1200 + 1 + 300, 1500 * 10 + 1500 * 5 + 3
    v = await poll_json(srv, "/varz", lambda v: (
        v["in_msgs"] - v0["in_msgs"], v["in_bytes"] - v0["in_bytes"],
        v["out_msgs"] - v0["out_msgs"], v["out_bytes"] - v0["out_bytes"]) == (n, nb, 1501, 1500 * 5 + 3))
    assert (v["in_msgs"] - v0["in_msgs"], v["in_bytes"] - v0["in_bytes"]) == (n, nb)
    assert (v["out_msgs"] - v0["out_msgs"], v["out_bytes"] - v0["out_bytes"]) == (1501, 1500 * 5 + 3)
    conns = {x["name"]: x for x in (await get_json(srv, "/connz"))["connections"]}
    assert (conns["runs-pub"]["in_msgs"], conns["runs-pub"]["in_bytes"]) == (n, nb)
    assert (conns["runs-sub"]["out_msgs"], conns["runs-sub"]["out_bytes"]) == (1501, 1500 * 5 + 3)
    w.close()
    await s.close()


@pytest.mark.parametrize("setting", [None, "always", '"5s"'], ids=["default", "always", "5s"])
async def test_jsz_and_varz_report_the_sync_mode(server_kind, tmp_path, setting):
    """/jsz's and /varz's JetStream config say how the store syncs, as
    nats-server says it: ``sync_interval: always`` keeps the default interval
    (2 m) and adds ``sync_always: true``; a duration is that interval. With
    nothing set natslab reports its own 1 s timer (it also syncs each PubAck
    before it is sent; docs/compatibility.md), nats-server its 2 m."""
    conf = tmp_path / "js.conf"
    conf.write_text(f"jetstream {{ sync_interval: {setting} }}\n" if setting else "jetstream: enabled\n")
    srv = ServerProcess(server_kind, tmp_path / "store", http=True, extra=["-c", str(conf)])
    srv.start()
    try:
        interval = {None: 1 if server_kind == "natslab" else 120, "always": 120, '"5s"': 5}[setting]
        want = {"sync_interval": interval * 1_000_000_000}
        if setting == "always":
            want["sync_always"] = True
        keys = JS_CONFIG_KEYS | set(want)
        for cfg in ((await get_json(srv, "/jsz"))["config"], (await get_json(srv, "/varz"))["jetstream"]["config"]):
            assert set(cfg) == keys, cfg
            assert {k: cfg[k] for k in want} == want, cfg
            # nats-server's key order: sync_always right after sync_interval
            order = list(cfg)
            assert order.index("sync_interval") + (setting == "always") == order.index("strict") - 1, order
    finally:
        srv.stop()
