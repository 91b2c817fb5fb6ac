"""The `$SYS.REQ.*` requests nats-server answers for any connection, not only
the system account's: today `$SYS.REQ.USER.INFO`, which `nats account info`
(and nats.go's tooling) asks to show who the connection is. natslab has one
account, `$G`, as a nats-server without accounts does. `server_block` is the
"server" part of these answers and of message-trace events.
"""

from __future__ import annotations

import time

USER_INFO = "$SYS.REQ.USER.INFO"
# nats-server's ServerInfo.Flags: JetStream enabled (1), binary stream
# snapshots (2), accounts with msg trace (4), as 2.15 sets them with -js
FLAGS_JETSTREAM = 7
# nats-server 2.15's defaults; natslab implements none of these toggles
FEATURE_FLAGS = {"js_ack_fc_v2": False, "js_api_reply_v2": False, "js_raft_delete_range": True, "js_snapshot_sources": False}


class SysRequests:
    def __init__(self, server):
        self.server = server
        self.seq = 0
        self.sub = server.subscribe_internal(USER_INFO, self.user_info)

    def server_block(self) -> dict:
        from .jetstream.shapes import rfc3339  # (not at start-up: it loads all of JetStream)

        srv = self.server
        self.seq += 1
        js = srv.jetstream is not None
        return {"name": srv.server_name, "host": srv.opts.host, "id": srv.server_id, "ver": srv.version,
                "feature_flags": dict(FEATURE_FLAGS), "jetstream": js, "flags": FLAGS_JETSTREAM if js else 0, "seq": self.seq,
                "time": rfc3339(time.time_ns())}

    def user_info(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> None:
        client = self.server.current_publisher
        if not reply or client is None or client.internal:
            return
        srv = self.server
        if srv.opts.token:
            user = "[REDACTED]"  # nats-server never shows a token
        else:
            user = getattr(client, "user", "") or ""
        data: dict = {"user": user, "account": "$G", "account_name": "$G"}
        perms = getattr(client, "perms", None)
        if perms is not None:
            data["permissions"] = perms.as_config()
        from .jetstream.shapes import dumps

        body = {"server": self.server_block(), "data": data}
        srv.reply_internal(reply.encode(), dumps(body).encode())

    def close(self) -> None:
        self.server.unsubscribe_internal(self.sub)
