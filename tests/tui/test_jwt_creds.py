"""The workbench's --creds FILE and --nkey FILE (as the nats CLI has them):
they reach the connection. The app logs in to a broker in operator mode
with a user's .creds (JWTs made by tests/test_jwt.py's Setup) and the
header names the user's account; --nkey logs an nkey user in. On natslab's
broker, or on nats-server with NATSLAB_TUI_BROKER=nats-server."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from natslab.tui.app import NatslabApp
from natslab.tui.cli import build_parser, resolve
from natslab.tui.client.core import NatsClient

from .conftest import ConfBroker, connected, wait_for

nkeys = pytest.importorskip("nkeys")


async def test_app_connects_with_creds_in_operator_mode(tmp_path):
    from test_jwt import Setup

    setup = Setup(tmp_path)
    srv = ConfBroker(tmp_path, setup.conf())
    creds = setup.user("a", "workbench")
    try:
        opts, spec = resolve(build_parser().parse_args(["--connect", srv.url, "--creds", creds]))
        assert spec is None and opts.creds == creds and opts.nkey is None
        app = NatslabApp(connect=replace(opts, connect_timeout=2, max_reconnect_attempts=2),
                         monitor_url=srv.monitor, remember_theme=False)
        async with app.run_test(size=(160, 40)) as pilot:
            await connected(app, pilot)
            # $SYS.REQ.USER.INFO: the account of the JWT's issuer, by the name in its JWT
            await wait_for(pilot, lambda: app.header_info.account == "A", what="the account in the header")
            assert "account A" in str(app.screen.query_one("#header").render())
    finally:
        srv.stop()


async def test_nkey_flag_logs_in_an_nkey_user(tmp_path):
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    public = nkeys.from_seed(seed).public_key.decode()
    seed_file = tmp_path / "user.nk"
    seed_file.write_bytes(seed + b"\n")
    srv = ConfBroker(tmp_path, f"authorization {{ users: [ {{ nkey: {public} }} ] }}\n", monitor=False)
    try:
        opts, _ = resolve(build_parser().parse_args(["--connect", srv.url, "--nkey", str(seed_file)]))
        assert opts.nkey == str(seed_file)
        client = await NatsClient.connect(replace(opts, connect_timeout=2, max_reconnect_attempts=1))
        try:
            assert client.connected
            await client.nc.flush()
        finally:
            await client.close()
        # without it the same server refuses the connection
        with pytest.raises(Exception, match="cannot connect"):  # (nats-py: "no servers available")
            plain, _ = resolve(build_parser().parse_args(["--connect", srv.url]))
            await NatsClient.connect(replace(plain, connect_timeout=2, max_reconnect_attempts=1))
    finally:
        srv.stop()


def test_missing_credential_files_are_said_at_once(tmp_path):
    for flag in ("--creds", "--nkey"):
        with pytest.raises(ValueError, match=f"{flag} .*missing"):
            resolve(build_parser().parse_args(["--connect", "nats://127.0.0.1:1", flag, str(tmp_path / "missing")]))
