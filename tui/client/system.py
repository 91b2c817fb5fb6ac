"""Who the workbench is on the server, and the system account's view of a
cluster: `$SYS.REQ.USER.INFO` (user and account, any connection may ask),
whether they are the system account's, the TLS version of the connection,
and `$SYS.REQ.SERVER.PING.CONNZ`, which every server of a cluster answers
for a system-account user, so the Connections pane can list the
connections of all of them over NATS alone.
"""

from __future__ import annotations

import asyncio
import json
import time

from .errors import NatsError, _plain
from .monitor import Connection

USER_INFO = "$SYS.REQ.USER.INFO"
PING_CONNZ = "$SYS.REQ.SERVER.PING.CONNZ"
PING_IDZ = "$SYS.REQ.SERVER.PING.IDZ"  # answered to the system account only (not imported elsewhere)
SETTLE = 0.3  # a cluster ping is over when no answer came for this long (as natscli waits)


async def user_info(client, timeout: float = 2.0) -> dict:
    """USER.INFO's data ({"user", "account", ...}); {} when the server does not answer it."""
    try:
        msg = await client.nc.request(USER_INFO, b"", timeout=timeout)
    except Exception as exc:  # nats-py's timeout / no responders (a server that does not answer it), or a lost link
        if type(exc).__name__ in ("TimeoutError", "NoRespondersError"):
            return {}
        raise _plain(exc) from exc
    try:
        data = json.loads(msg.data).get("data")
    except (ValueError, AttributeError):
        return {}
    return data if isinstance(data, dict) else {}


async def is_system_user(client, timeout: float = 1.5) -> bool:
    """Are the credentials the system account's? Only there does PING.IDZ
    get an answer (PING.CONNZ answers everywhere: an account's own
    connections)."""
    try:
        await client.nc.request(PING_IDZ, b"", timeout=timeout)
    except Exception as exc:  # no responders / timeout: not the system account
        if type(exc).__name__ in ("TimeoutError", "NoRespondersError"):
            return False
        raise _plain(exc) from exc
    return True


def tls_version(client) -> str:
    """'TLS 1.3' when the connection is encrypted, else ''."""
    transport = getattr(client.nc, "_transport", None)
    writer = getattr(transport, "_io_writer", None)
    ssl_object = writer.get_extra_info("ssl_object") if writer is not None else None
    if ssl_object is None:
        return ""
    return (ssl_object.version() or "TLS").replace("TLSv", "TLS ")


async def cluster_connz(client, timeout: float = 2.0) -> list[Connection] | None:
    """The connections of every server that answers PING.CONNZ, each with its
    server's name; None when nothing answers. For a system-account user
    that is every connection; for others their own account's."""
    nc = client.nc
    inbox = nc.new_inbox()
    answers: list[dict] = []
    refused = asyncio.Event()
    last = [time.monotonic()]

    async def got(msg) -> None:
        if msg.headers and msg.headers.get("Status") == "503":
            refused.set()
            return
        try:
            answers.append(json.loads(msg.data))
        except ValueError:
            return  # not an answer we can read: the others still count
        last[0] = time.monotonic()

    try:
        sub = await nc.subscribe(inbox, cb=got)
        try:
            await nc.publish(PING_CONNZ, json.dumps({"auth": True, "limit": 1024}).encode(), reply=inbox)
            await nc.flush(timeout=timeout)
            start = time.monotonic()
            while time.monotonic() - start < timeout and not refused.is_set():
                if answers and time.monotonic() - last[0] >= SETTLE:
                    break
                await asyncio.sleep(0.05)
        finally:
            await sub.unsubscribe()
    except NatsError:
        raise
    except Exception as exc:  # nats-py's own errors (a lost connection): the pane says it and polls again
        raise _plain(exc) from exc
    if not answers:
        return None
    out: list[Connection] = []
    for a in answers:
        server = a.get("server") or {}
        data = a.get("data") or {}
        out.extend(Connection.from_json(c, server.get("id", ""), server.get("name", ""))
                   for c in data.get("connections") or [])
    out.sort(key=lambda c: (c.server_name, c.cid))
    return out
