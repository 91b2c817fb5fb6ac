"""nats CLI contexts and natslab, both ways: a context the real CLI v0.5.0
writes (`nats context add` / `select`) is what the workbench's `--context`
reads and connects with, on both servers with credentials; and the CLI
works through a context against the workbench's embedded broker
(ServerThread, the broker `natslab` starts in-process)."""

from __future__ import annotations

import json

import pytest

from conftest import ServerProcess
from natscli import field, nats_cli  # noqa: F401 (a fixture)
from natslab.server import ServerThread
from natslab.tui.cli import build_parser, resolve
from natslab.tui.client.core import NatsClient

AUTH = {
    "user": ("authorization { user: dev, password: s3cret }\n", ["--user", "dev", "--password", "s3cret"]),
    # natscli 0.5.0's `context add` ignores --token: a --user without a
    # --password is what it saves as the context's token
    "token": ("authorization { token: t0k3n }\n", ["--user", "t0k3n"]),
}


@pytest.mark.parametrize("auth", list(AUTH))
async def test_workbench_reads_a_cli_context(server_kind, tmp_path, nats_cli, monkeypatch, auth):
    conf_text, flags = AUTH[auth]
    conf = tmp_path / "auth.conf"
    conf.write_text(conf_text)
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(conf)])
    srv.start()
    try:
        made = nats_cli.run(None, "context", "add", "lab", "--server", srv.url, *flags, "--description", "the lab")
        assert made.returncode == 0, made.stdout + made.stderr
        saved = json.loads((nats_cli.config_home / "nats" / "context" / "lab.json").read_text())
        assert (saved["user"], saved["token"]) == (("dev", "") if auth == "user" else ("", "t0k3n"))
        assert nats_cli.run(None, "context", "select", "lab").returncode == 0
        # the CLI itself gets in with it
        assert nats_cli.run(None, "--context", "lab", "stream", "add", "CTX", "--subjects", "ctx.>", "--defaults").returncode == 0
        monkeypatch.setenv("XDG_CONFIG_HOME", str(nats_cli.config_home))
        for argv in (["--context", "lab"], ["--context"]):  # named, and the selected one
            options, spec = resolve(build_parser().parse_args(argv))
            assert spec is None and options.url == srv.url
            client = await NatsClient.connect(options)
            try:
                await client.nc.request("ctx.a", b"through the workbench's client", timeout=3)
                info = json.loads((await client.nc.request("$JS.API.STREAM.INFO.CTX", b"", timeout=3)).data)
            finally:
                await client.nc.close()
            assert info["config"]["name"] == "CTX"
        assert info["state"]["messages"] == 2
    finally:
        nats_cli.run(None, "context", "rm", "lab", "-f")
        srv.stop()


def test_cli_context_on_the_embedded_broker(tmp_path, nats_cli):
    broker = ServerThread(port=0, store_dir=tmp_path / "store").start()
    try:
        made = nats_cli.run(None, "context", "add", "embedded", "--server", broker.client_url)
        assert made.returncode == 0, made.stdout + made.stderr
        run = lambda *a: nats_cli.run(None, "--context", "embedded", *a)  # noqa: E731
        assert run("stream", "add", "EMB", "--subjects", "emb.>", "--defaults").returncode == 0
        assert run("pub", "emb.x", "hello {{Count}}", "--count", "3").returncode == 0
        info = run("stream", "info", "EMB").stdout
        assert field(info, "Messages") == "3"
        view = run("stream", "get", "EMB", "3").stdout
        assert "hello 3" in view and "on Subject emb.x" in view
        assert "Connected URL" in run("account", "info").stdout
    finally:
        nats_cli.run(None, "context", "rm", "embedded", "-f")
        broker.stop()
