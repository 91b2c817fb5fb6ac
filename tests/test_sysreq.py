"""What a connection learns about itself, on both servers: its client id (the
first outside connection is client 5: nats-server's internal clients take
1-4) and `$SYS.REQ.USER.INFO`, which any connection may ask (`nats account
info` shows its answer): user, account, permissions."""

from __future__ import annotations

import json

import pytest

from conftest import RawClient, ServerProcess, connect


async def test_first_client_is_five(server):
    # the fixture's readiness probe (it reads INFO and hangs up) was client 5
    a = await RawClient.open(server)
    b = await RawClient.open(server)
    try:
        assert [json.loads(c.info[5:])["client_id"] for c in (a, b)] == [6, 7]
    finally:
        a.close()
        b.close()


async def user_info(url: str, **kw) -> dict:
    nc = await connect(url, **kw)
    try:
        msg = await nc.request("$SYS.REQ.USER.INFO", b"", timeout=2)
    finally:
        await nc.close()
    body = json.loads(msg.data)
    for side in body["data"].get("permissions", {}).values():
        for k in side:
            side[k].sort()  # nats-server's order varies from run to run (a set)
    assert set(body["server"]) >= {"name", "host", "id", "ver", "jetstream", "flags", "seq", "time"}
    assert body["server"]["jetstream"] is True and body["server"]["flags"] == 7
    return body["data"]


async def test_user_info_without_auth(server):
    assert await user_info(server.url) == {"user": "", "account": "$G", "account_name": "$G"}


USERS = """authorization { users: [
  {user: a, password: pa, permissions: {publish: {allow: [">"]}, subscribe: {deny: ["x.>", "y"]}}}
  {user: b, password: pb, permissions: {publish: ["$SYS.REQ.USER.INFO", "only.this"]}}
  {user: c, password: pc}
] }
"""


@pytest.mark.parametrize("conf,creds,data", [
    (USERS, {"user": "a", "password": "pa"}, {"user": "a", "account": "$G", "account_name": "$G", "permissions": {
        "publish": {"allow": [">"]}, "subscribe": {"deny": ["x.>", "y"]}}}),
    (USERS, {"user": "b", "password": "pb"}, {"user": "b", "account": "$G", "account_name": "$G", "permissions": {
        "publish": {"allow": ["$SYS.REQ.USER.INFO", "only.this"]}, "subscribe": {}}}),
    (USERS, {"user": "c", "password": "pc"}, {"user": "c", "account": "$G", "account_name": "$G"}),
    ("authorization { token: t0k }\n", {"token": "t0k"}, {"user": "[REDACTED]", "account": "$G", "account_name": "$G"}),
], ids=["perms", "publish-only", "no-perms", "token"])
async def test_user_info_with_auth(server_kind, tmp_path, conf, creds, data):
    path = tmp_path / "auth.conf"
    path.write_text(conf)
    srv = ServerProcess(server_kind, tmp_path / "store", extra=["-c", str(path)])
    srv.start()
    try:
        assert await user_info(srv.url, **creds) == data
    finally:
        srv.stop()
