"""The workbench on a broker with TLS and accounts, and on a 3-node cluster
with a system account: the --tls* options (and the nats context's TLS
settings), the header's TLS version and account, the Connections pane's
Account / TLS / Server columns, and with system-account credentials the
connections of every server via $SYS.REQ.SERVER.PING.CONNZ (no monitoring
URL given). The single-broker tests run on natslab's broker, or on
nats-server with NATSLAB_TUI_BROKER=nats-server."""

from __future__ import annotations

import json

import nats
import pytest

from natslab.tui.app import NatslabApp
from natslab.tui.cli import build_parser, resolve
from natslab.tui.client import ConnectOptions
from natslab.tui.widgets.live_table import LiveTable

from .cluster import Cluster
from .conftest import ConfBroker, connected, show_tab, wait_for

ACCOUNTS = """accounts {
  APP { jetstream: enabled, users: [{user: app, password: app}] }
  SYS { users: [{user: admin, password: admin}] }
}
system_account: SYS
"""


def header(app) -> str:
    return str(app.screen.query_one("#header").render())


def rows(table: LiveTable) -> list[dict]:
    cols = ("name", "account", "tls", "server")
    return [{c: table.value(k, c) for c in cols} for k in table._order]


def test_tls_options_from_flags_and_context(tmp_path, monkeypatch):
    from pki import make_pki

    pki = make_pki(tmp_path / "pki")
    cert, key = pki.client("app")
    args = build_parser().parse_args(["--connect", "tls://127.0.0.1:4443", "--tlscert", str(cert),
                                      "--tlskey", str(key), "--tlscacert", str(pki.ca)])
    opts, spec = resolve(args)
    assert spec is None and (opts.tls_cert, opts.tls_key, opts.tls_ca) == (str(cert), str(key), str(pki.ca))
    assert opts.ssl_context() is not None

    ctxdir = tmp_path / "config" / "nats" / "context"
    ctxdir.mkdir(parents=True)
    (ctxdir / "prod.json").write_text(json.dumps({"url": "tls://127.0.0.1:4443", "cert": str(cert), "key": str(key),
                                                  "ca": str(pki.ca), "tls_first": True}))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    opts, _ = resolve(build_parser().parse_args(["--context", "prod"]))
    assert (opts.tls_cert, opts.tls_ca, opts.tls_first) == (str(cert), str(pki.ca), True)
    opts, _ = resolve(build_parser().parse_args(["--context", "prod", "--tlscacert", str(cert)]))
    assert opts.tls_ca == str(cert)  # the flag wins over the context

    with pytest.raises(ValueError, match="cannot use the TLS files"):
        resolve(build_parser().parse_args(["--connect", "tls://x:1", "--tlscacert", str(tmp_path / "missing.pem")]))
    with pytest.raises(ValueError, match="go together"):
        resolve(build_parser().parse_args(["--connect", "tls://x:1", "--tlscert", str(cert)]))
    with pytest.raises(ValueError, match="for --connect"):
        resolve(build_parser().parse_args(["--tlscacert", str(pki.ca)]))


async def test_tls_broker_with_accounts(tmp_path):
    """A TLS broker that verifies client certificates, users in accounts: the
    header says TLS and the account, the pane each connection's."""
    from pki import make_pki

    pki = make_pki(tmp_path / "pki")
    cert, key = pki.client("app")
    conf = (f'tls {{ cert_file: "{pki.server_cert}", key_file: "{pki.server_key}", ca_file: "{pki.ca}", verify: true }}\n'
            + ACCOUNTS)
    srv = ConfBroker(tmp_path, conf)
    app = NatslabApp(connect=ConnectOptions(url=srv.url, user="app", password="app", tls_cert=str(cert),
                                            tls_key=str(key), tls_ca=str(pki.ca), connect_timeout=2,
                                            max_reconnect_attempts=2),
                     monitor_url=srv.monitor, remember_theme=False)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            await connected(app, pilot)
            await wait_for(pilot, lambda: app.header_info.account == "APP", what="the account in the header")
            assert app.header_info.tls == "TLS 1.3" and "TLS 1.3" in header(app) and "account APP" in header(app)
            assert app.system_user is False
            await show_tab(app, pilot, "connections")
            table = app.screen.query_one("#conn-table", LiveTable)
            await wait_for(pilot, lambda: any("you" in (r["name"] or "") for r in rows(table)), what="listed")
            me = next(r for r in rows(table) if "you" in r["name"])
            assert (me["account"], me["tls"]) == ("APP", "1.3")
    finally:
        srv.stop()


async def test_system_account_lists_connections_over_nats(tmp_path):
    srv = ConfBroker(tmp_path, "server_name: solo\n" + ACCOUNTS)
    outside = await nats.connect(srv.url, user="app", password="app", name="outside", connect_timeout=2,
                                 max_reconnect_attempts=2)
    # no monitoring URL: with system credentials the pane needs none
    app = NatslabApp(connect=ConnectOptions(url=srv.url, user="admin", password="admin", connect_timeout=2,
                                            max_reconnect_attempts=2),
                     monitor_url="http://127.0.0.1:9", remember_theme=False)
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            await connected(app, pilot)
            await wait_for(pilot, lambda: app.system_user, what="system credentials known")
            assert "account SYS (system)" in header(app) and app.header_info.tls == ""
            await show_tab(app, pilot, "connections")
            table = app.screen.query_one("#conn-table", LiveTable)
            want = [("natslab delivery tap", "SYS", "-", "solo"), ("natslab ◀ you", "SYS", "-", "solo"),
                    ("outside", "APP", "-", "solo")]

            def got():
                return sorted((r["name"], r["account"], r["tls"], r["server"]) for r in rows(table))
            # a connection still on its way in is listed for a poll with no name,
            # in $G: wait for the three as they settle (seen in a loaded run)
            try:
                await wait_for(pilot, lambda: got() == want, timeout=10, what="the three connections")
            finally:
                assert got() == want
            status = str(app.screen.query_one("#conn-status").render())
            assert "PING.CONNZ of 1 server (system account)" in status
    finally:
        await outside.close()
        srv.stop()


async def test_cluster_connections_of_every_server(tmp_path):
    """A 3-node nats-server cluster: the app (system account, on n1) lists
    the connections of all three servers, each row naming its server."""
    cluster = Cluster(tmp_path / "cluster", conf=ACCOUNTS, probe={"user": "app", "password": "app"})
    others = []
    try:
        for node in cluster.nodes[1:]:
            others.append(await nats.connect(node.url, user="app", password="app", name=f"on-{node.name}",
                                             connect_timeout=2, max_reconnect_attempts=2))
        app = NatslabApp(connect=ConnectOptions(url=cluster.node("n1").url, user="admin", password="admin",
                                                connect_timeout=2, max_reconnect_attempts=2),
                         remember_theme=False)
        async with app.run_test(size=(160, 40)) as pilot:
            await connected(app, pilot)
            await wait_for(pilot, lambda: app.system_user, what="system credentials known")
            await show_tab(app, pilot, "connections")
            table = app.screen.query_one("#conn-table", LiveTable)

            def listed() -> set:
                return {(r["name"], r["account"], r["server"]) for r in rows(table)}

            want = {("natslab ◀ you", "SYS", "n1"), ("on-n2", "APP", "n2"), ("on-n3", "APP", "n3")}
            await wait_for(pilot, lambda: want <= listed(), timeout=10, what=f"connections of n1, n2, n3 ({listed()})")
            assert "of 3 servers (system account)" in str(app.screen.query_one("#conn-status").render())
    finally:
        for nc in others:
            await nc.close()
        cluster.stop()
