"""The system account, on both servers: `system_account` (or nats-server's
default `$SYS`) in the config, its users asking the `$SYS.REQ.SERVER.*`
monitoring requests through nats-py, and the nats CLI's `server ls`, `info`,
`report connections`, `report jetstream` and `ping` with system credentials.
Other accounts get no responders for them, except PING.CONNZ (their own
connections); USER.INFO answers in every account."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess

import nats.errors
import pytest

from conftest import ServerProcess, connect
from natscli import nats_cli  # noqa: F401 (a fixture)

CONF = """server_name: sysacc
accounts {
  APP { jetstream: enabled, users: [{user: app, password: app}] }
  SYS { users: [{user: admin, password: admin}] }
}
system_account: SYS
"""
ADMIN = {"user": "admin", "password": "admin"}
APP = {"user": "app", "password": "app"}


@pytest.fixture
def sysserver(server_kind, tmp_path):
    path = tmp_path / "sys.conf"
    path.write_text(CONF)
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(path)])
    srv.start()
    yield srv
    srv.stop()


async def ask(nc, subject: str, body: dict | bytes = b"", timeout: float = 2) -> dict:
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    msg = await nc.request(subject, payload, timeout=timeout)
    return json.loads(msg.data)


async def test_requests_of_the_system_account(sysserver):
    admin = await connect(sysserver.url, **ADMIN)
    app = await connect(sysserver.url, **APP)
    try:
        await app.subscribe("app.>")
        await app.flush()
        ping = await ask(admin, "$SYS.REQ.SERVER.PING")
        assert set(ping) == {"server", "statsz"}
        server = ping["server"]
        assert server["name"] == "sysacc" and server["jetstream"] is True and len(server["id"]) == 56
        stats = ping["statsz"]
        assert stats["connections"] == 2 and stats["active_accounts"] == 2 and stats["active_servers"] == 1
        for key in ("start", "mem", "cores", "cpu", "total_connections", "subscriptions", "sent", "received",
                    "sent_to_clients", "received_from_clients", "slow_consumers", "jetstream"):
            assert key in stats, key
        assert "store_dir" not in stats["jetstream"]["config"]
        assert set((await ask(admin, "$SYS.REQ.SERVER.PING.STATSZ"))["statsz"]) == set(stats)

        varz = await ask(admin, "$SYS.REQ.SERVER.PING.VARZ", {"server_name": "sysacc", "exact_match": True})
        assert varz["data"]["system_account"] == "SYS" and varz["data"]["server_name"] == "sysacc"
        byid = await ask(admin, f"$SYS.REQ.SERVER.{server['id']}.VARZ")
        assert byid["data"]["server_id"] == server["id"]

        connz = await ask(admin, "$SYS.REQ.SERVER.PING.CONNZ", {"auth": True, "subscriptions": True})
        conns = {c["authorized_user"]: c for c in connz["data"]["connections"]}
        assert {u: c["account"] for u, c in conns.items()} == {"app": "APP", "admin": "SYS"}
        assert conns["app"]["subscriptions_list"] == ["app.>"]
        only_app = await ask(admin, "$SYS.REQ.ACCOUNT.APP.CONNZ", {"auth": True})
        assert [c["account"] for c in only_app["data"]["connections"]] == ["APP"]

        assert (await ask(admin, "$SYS.REQ.SERVER.PING.HEALTHZ"))["data"] == {"status": "ok", "status_code": 200}
        jsz = await ask(admin, "$SYS.REQ.SERVER.PING.JSZ", {"raft": True, "exact_match": True})
        assert jsz["data"]["streams"] == 0 and jsz["data"]["api"]["level"] >= 1
        accountz = (await ask(admin, "$SYS.REQ.SERVER.PING.ACCOUNTZ"))["data"]
        assert accountz["system_account"] == "SYS" and {"$G", "SYS", "APP"} <= set(accountz["accounts"])
        subsz = await ask(admin, "$SYS.REQ.SERVER.PING.SUBSZ")
        assert subsz["data"]["num_subscriptions"] >= 2
        assert await ask(admin, "$SYS.REQ.SERVER.PING.IDZ") == {"name": "sysacc", "host": server["host"], "id": server["id"]}

        bad = await ask(admin, "$SYS.REQ.SERVER.PING.CONNZ", b"garbage")
        assert bad["error"]["code"] == 400 and "data" not in bad
        # a filter that leaves this server out: no answer (a cluster-wide ping collects whoever answers)
        with pytest.raises(nats.errors.TimeoutError):
            await admin.request("$SYS.REQ.SERVER.PING.VARZ", json.dumps({"server_name": "other"}).encode(), timeout=0.5)

        # another account: none of these are there, but its own connections are (as
        # nats-server imports PING.CONNZ into every account), and USER.INFO, in its own account
        for subject in ("$SYS.REQ.SERVER.PING", "$SYS.REQ.SERVER.PING.VARZ", "$SYS.REQ.SERVER.PING.IDZ",
                        "$SYS.REQ.ACCOUNT.APP.CONNZ"):
            with pytest.raises(nats.errors.NoRespondersError):
                await app.request(subject, b"", timeout=2)
        for subject in ("$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.ACCOUNT.PING.CONNZ"):
            own = await ask(app, subject, {"auth": True})
            assert [(c["authorized_user"], c["account"]) for c in own["data"]["connections"]] == [("app", "APP")]
        for nc, user, acc in ((app, "app", "APP"), (admin, "admin", "SYS")):
            info = await ask(nc, "$SYS.REQ.USER.INFO")
            assert info["data"] == {"user": user, "account": acc, "account_name": acc}
    finally:
        await app.close()
        await admin.close()


async def test_default_system_account(server_kind, tmp_path):
    """`$SYS` is the system account when none is named, and may be given users."""
    path = tmp_path / "sys.conf"
    path.write_text("accounts { $SYS { users: [{user: admin, password: admin}] } }\n")
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(path)])
    srv.start()
    try:
        nc = await connect(srv.url, **ADMIN)
        try:
            varz = await ask(nc, "$SYS.REQ.SERVER.PING.VARZ")
            assert varz["data"]["system_account"] == "$SYS"
            assert (await ask(nc, "$SYS.REQ.USER.INFO"))["data"]["account"] == "$SYS"
        finally:
            await nc.close()
    finally:
        srv.stop()


def test_missing_system_account_stops_the_start(server_kind, tmp_path):
    path = tmp_path / "sys.conf"
    path.write_text("accounts { A { users: [{user: a, password: a}] } }\nsystem_account: NOPE\n")
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(path)])
    with pytest.raises(RuntimeError, match="error resolving system account: account missing"):
        srv.start()


def _cli(cli, srv, *args) -> str:
    url = f"nats://admin:admin@127.0.0.1:{srv.port}"
    out = cli.run(url, *args, timeout=30)
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def test_nats_server_commands(sysserver, nats_cli):
    app = subprocess.Popen(nats_cli.argv(f"nats://app:app@127.0.0.1:{sysserver.port}", "sub", "app.>"),
                           env=nats_cli.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ls = _cli(nats_cli, sysserver, "server", "ls")
        assert "Server Overview" in ls and re.search(r"│ sysacc +│", ls)
        info = _cli(nats_cli, sysserver, "server", "info")
        assert "Server information for sysacc" in info and "Version: 2.15.1" in info
        assert "Auth Required: true" in info and "API Support Level:" in info
        for _ in range(50):  # the subscriber connects in the background
            conns = _cli(nats_cli, sysserver, "server", "report", "connections")
            if "Top 2 Connections" in conns:
                break
        rows = [r for r in conns.splitlines() if "NATS CLI Version" in r]
        assert sorted(re.split(r"\s*│\s*", r)[6] for r in rows) == ["APP", "SYS"], conns
        assert all("sysacc" in r for r in rows)
        only = _cli(nats_cli, sysserver, "server", "report", "connections", "--account", "APP")
        assert [re.split(r"\s*│\s*", r)[6] for r in only.splitlines() if "NATS CLI Version" in r] == ["APP"], only
        # an APP user asks for the connections of its own account (PING.CONNZ, imported)
        out = nats_cli.run(f"nats://app:app@127.0.0.1:{sysserver.port}", "account", "report", "connections", timeout=30)
        accounts = [re.split(r"\s*│\s*", r)[6] for r in out.stdout.splitlines() if "NATS CLI Version" in r]
        assert out.returncode == 0 and accounts == ["APP", "APP"], out.stdout + out.stderr
        js = _cli(nats_cli, sysserver, "server", "report", "jetstream")
        assert "JetStream Summary" in js and re.search(r"│ sysacc +│", js)
        account = _cli(nats_cli, sysserver, "account", "info")
        assert re.search(r"Account: SYS \(SYS\)\n\s+System Account: true", account), account
        ping = _cli(nats_cli, sysserver, "server", "ping")
        assert re.search(r"^sysacc +rtt=", ping, re.M) and "1 replies" in ping
    finally:
        app.terminate()
        app.wait(10)


async def test_global_account_sees_its_own_connections(server):
    """Without accounts every client is in $G: PING.CONNZ lists them (no
    "account" field, name_tag $G); the system requests have no responders."""
    a = await connect(server.url, name="a")
    b = await connect(server.url, name="b")
    try:
        # (the fixture's readiness probe, a bare TCP connect that never sent
        # CONNECT, can still be listed for a moment under load: nameless)
        for _ in range(50):
            own = await ask(a, "$SYS.REQ.SERVER.PING.CONNZ", {"auth": True})
            conns = own["data"]["connections"]
            if all("name" in c for c in conns):
                break
            await asyncio.sleep(0.05)
        assert sorted(c.get("name", "") for c in conns) == ["a", "b"]
        assert all(c["name_tag"] == "$G" and "account" not in c for c in conns)
        with pytest.raises(nats.errors.NoRespondersError):
            await a.request("$SYS.REQ.SERVER.PING.IDZ", b"", timeout=2)
    finally:
        await a.close()
        await b.close()
