"""The `$SYS.REQ.*` requests a single nats-server answers.

Any connection may ask `$SYS.REQ.USER.INFO` (who am I: user, account,
permissions; `nats account info` shows it), in whichever account it is, so
it is subscribed in every account's subject space and answered in the
requester's; so are `$SYS.REQ.SERVER.PING.CONNZ` and `$SYS.REQ.ACCOUNT.PING.
CONNZ`, which outside the system account list the requester's own
account's connections, as nats-server's imports of them into every account do. The system account's users (``system_account``, or nats-server's
default ``$SYS``) also get the monitoring requests `nats server ls/info/
report/ping` use (server/sysmon.py). `server_block` is the "server" part of
these answers and of message-trace events.
"""

from __future__ import annotations

import time

from .internal import InternalSubscription
from .sysmon import SysMonitor

USER_INFO = "$SYS.REQ.USER.INFO"
OWN_CONNZ = ("$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.ACCOUNT.PING.CONNZ")
# nats-server's ServerInfo.Flags: JetStream enabled (1), binary stream
# snapshots (2), accounts with msg trace (4), as 2.15 sets them with -js
FLAGS_JETSTREAM = 7
# nats-server 2.15's defaults; natslab implements none of these toggles
FEATURE_FLAGS = {"js_ack_fc_v2": False, "js_api_reply_v2": False, "js_raft_delete_range": True, "js_snapshot_sources": False}


class SysRequests:
    def __init__(self, server):
        self.server = server
        self.seq = 0
        self.subs: list[tuple[object, InternalSubscription]] = []  # (subject index, subscription)
        accounts = server.accounts
        spaces = [server.index] + [a.index for a in accounts.by_name.values()]
        if accounts.global_account is not None:
            spaces.append(accounts.global_account.index)
        spaces.append(accounts.system.index)
        self.monitor = SysMonitor(self, accounts.system)
        seen: set[int] = set()
        for index in spaces:
            if id(index) not in seen:
                seen.add(id(index))
                self.subscribe(index, USER_INFO, self.user_info)
                if index is not accounts.system.index:
                    # as nats-server imports them into every account: its own connections
                    for subject in OWN_CONNZ:
                        self.subscribe(index, subject, self.monitor.own_account_connz)

    def subscribe(self, index, subject: str, callback) -> InternalSubscription:
        """An internal subscription in one account's subject space."""
        sub = InternalSubscription(self.server.internal_client, subject.encode(), None, callback)
        if not self.server.opts.no_system_account:  # (no_system_account: nothing answers $SYS.REQ)
            index.insert(sub)
            self.subs.append((index, sub))
        return sub

    def reply(self, client, reply: str, payload: bytes) -> None:
        """Answer ``client`` on ``reply`` in its own account."""
        srv = self.server
        acc = client.account
        if acc is None or acc.index is srv.index:
            srv.messaging.reply(reply.encode(), payload)
            return
        srv.accounts._deliver(acc, srv.internal_client, reply.encode(), b"", None, payload)
        srv.schedule_flush()

    def server_block(self) -> dict:
        from .gowire import rfc3339

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
        account = client.account.name if client.account is not None else "$G"
        data: dict = {"user": user, "account": account, "account_name": account}
        if getattr(client, "jwt_user", None) is not None:
            data.update(srv.opts.operator.user_info(client))  # names and expiry of a JWT user (resolver.py)
        perms = getattr(client, "perms", None)
        if perms is not None:
            data["permissions"] = perms.as_config()
        from .gowire import dumps

        body = {"server": self.server_block(), "data": data}
        self.reply(client, reply, dumps(body).encode())

    def close(self) -> None:
        for index, sub in self.subs:
            index.remove(sub)
        self.subs.clear()
