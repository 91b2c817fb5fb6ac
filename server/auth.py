"""Who a connecting client is: the checks nats-server makes on CONNECT.

In nats-server's order: a user named by its TLS client certificate (``verify_and_map``), a user and
password (or ``no_auth_user`` for a client that sends no credentials), a
token. ``check`` gives the matched user's entry (a dict, possibly with
``permissions``), True for a token, or False.
"""

from __future__ import annotations


class Authenticator:
    def __init__(self, opts):
        self.opts = opts
        self.users: dict[str, dict] = {}
        for u in opts.users:
            if u.get("user") is not None:
                self.users[str(u["user"])] = u
        if opts.user:
            self.users.setdefault(opts.user, {"user": opts.user, "password": opts.password or ""})
        self.tls_map = opts.tls is not None and opts.tls.map
        self.no_auth_user = getattr(opts, "no_auth_user", "") or ""

    @property
    def required(self) -> bool:
        """Must a client authenticate? (With no_auth_user it still must, but
        INFO says auth_required only when there is no such default user.)"""
        return bool(self.opts.token or self.users)

    def check(self, client, c: dict):
        import secrets  # (here: only a server with auth pays for hashlib and OpenSSL at start-up)

        from . import tls

        o = self.opts
        user = str(c.get("user") or "")
        pw = str(c.get("pass") or "")
        sent_nothing = not user and not pw and not c.get("auth_token")
        if self.users:
            if self.tls_map:
                entry = tls.map_user(client.tls_state, self.users)
                if entry is None:
                    return False
                if user and user != entry.get("user"):
                    client.server.logger.warning('User "%s" found in connect proto, but user required from cert', user)
                return entry
            if sent_nothing and self.no_auth_user in self.users:
                return self.users[self.no_auth_user]
            if user:
                entry = self.users.get(user)
                if entry is None:
                    return False
                if secrets.compare_digest(pw.encode(), str(entry.get("password", "")).encode()):
                    return entry
                return False
        if o.token:
            return secrets.compare_digest(str(c.get("auth_token") or "").encode(), o.token.encode())
        return False
