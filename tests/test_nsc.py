"""An operator-mode setup made by the real `nsc` (tests/nsc.py builds it),
run unchanged on both servers: an operator with a system account, two
accounts (APP exports a service, OTHER imports it), users, `nsc generate
config --mem-resolver` included by the server's file, and nats-py logging
in with the .creds nsc wrote."""

from __future__ import annotations

import json
import re

import pytest

from conftest import connect
from nsc import Nsc, find_nsc
from test_config_file import started


@pytest.fixture(scope="module")
def nsc_setup(tmp_path_factory):
    path, why = find_nsc()
    if path is None:
        pytest.skip(f"no nsc: {why}")
    d = tmp_path_factory.mktemp("nsc")
    nsc = Nsc(path, d / "home")
    nsc("add", "operator", "-n", "OP", "--sys")
    for account in ("APP", "OTHER"):
        nsc("add", "account", "-n", account)
    nsc("add", "export", "-a", "APP", "--service", "-s", "svc.>")
    app_key = re.search(r'"(A[A-Z2-7]{55})"', nsc("describe", "account", "APP", "--json", "--field", "sub")).group(1)
    nsc("add", "import", "-a", "OTHER", "--service", "--src-account", app_key, "--remote-subject", "svc.>")
    for user, account in (("alice", "APP"), ("bob", "OTHER")):
        nsc("add", "user", "-n", user, "-a", account)
        nsc("generate", "creds", "-a", account, "-n", user, "-o", str(d / f"{user}.creds"))
    nsc("generate", "config", "--mem-resolver", "--sys-account", "SYS", "--config-file", str(d / "resolver.conf"))
    return d


async def test_nsc_mem_resolver_setup(server_kind, tmp_path, nsc_setup):
    d = nsc_setup
    # (include names a file relative to the including one, on both servers even when absolute)
    srv = started(server_kind, tmp_path, "listen: 127.0.0.1:{port}\ninclude resolver.conf\n",
                  files={"resolver.conf": (d / "resolver.conf").read_text()})
    try:
        alice = await connect(srv.url, user_credentials=str(d / "alice.creds"))
        bob = await connect(srv.url, user_credentials=str(d / "bob.creds"))

        async def answer(m):
            await m.respond(b"from APP: " + m.subject.encode())

        await alice.subscribe("svc.>", cb=answer)
        seen = await alice.subscribe("local.>")
        await alice.flush()
        await alice.flush()
        # OTHER reaches APP's service through the import nsc made; its own subjects stay its own
        assert (await bob.request("svc.hello", b"", timeout=3)).data == b"from APP: svc.hello"
        await bob.publish("local.x", b"not for APP")
        await alice.publish("local.y", b"mine")
        await alice.flush()
        assert (await seen.next_msg(timeout=3)).data == b"mine"
        info = json.loads((await bob.request("$SYS.REQ.USER.INFO", b"", timeout=3)).data)["data"]
        assert info["user"].startswith("U") and info["account"].startswith("A")
        await alice.close()
        await bob.close()
    finally:
        srv.stop()
