"""Who a connecting client is: the checks nats-server makes on CONNECT.

In nats-server's order: an nkey user (the client signs the nonce its INFO
carried; server/ed25519.py checks the signature), a user named by its TLS
client certificate (``verify_and_map``), a user and password, a token. A
client that sends no credentials at all is taken as ``no_auth_user`` when
one is configured. ``check`` gives the matched user's entry (a dict, possibly with
``permissions``), True for a token, or False.
"""

from __future__ import annotations

import re

from .conf import ConfigError

BCRYPT = re.compile(r"\$2[abxy]\$\d{2}\$")  # nats-server's validBcryptPrefix
_crypt = None  # libcrypt's crypt(3), loaded on first use (False: none on this system)


def _libcrypt():
    """The system's crypt(3) (libxcrypt does bcrypt, ``$2a$``/``$2b$``/``$2y$``),
    through ctypes: no runtime dependency. None when there is none."""
    global _crypt
    if _crypt is None:
        _crypt = False
        try:
            import ctypes
            import ctypes.util

            name = ctypes.util.find_library("crypt")
            if name:
                fn = ctypes.CDLL(name).crypt
                fn.argtypes, fn.restype = (ctypes.c_char_p, ctypes.c_char_p), ctypes.c_char_p
                probe = b"$2a$04$abcdefghijklmnopqrstuu"
                if (fn(b"x", probe) or b"").startswith(b"$2a$04$"):
                    _crypt = fn
        except (OSError, AttributeError):
            pass
    return _crypt or None


def bcrypt_available() -> bool:
    return _libcrypt() is not None


def password_ok(given: str, stored: str) -> bool:
    """nats-server's comparePasswords: a bcrypt hash is checked as bcrypt
    (CompareHashAndPassword), anything else compared in constant time."""
    import secrets  # (hmac, OpenSSL's libcrypto: not loaded before a login needs it)

    if BCRYPT.match(stored):
        fn = _libcrypt()
        if fn is None or not given:
            return False
        out = fn(given.encode(), stored.encode()) or b""
        return secrets.compare_digest(out, stored.encode())
    return secrets.compare_digest(given.encode(), stored.encode())

# nats-server's connection types (jwt.ConnectionType*) a user may be limited to
CONNECTION_TYPES = ("STANDARD", "WEBSOCKET", "LEAFNODE", "LEAFNODE_WS", "MQTT", "MQTT_WS", "IN_PROCESS")
_CONNECTION_TYPE_KEYS = ("allowed_connection_types", "connection_types", "clients")


def connection_types(user: dict) -> frozenset | None:
    """A user's ``allowed_connection_types`` (or its aliases), upper-cased,
    checked as nats-server's config parse checks them; None: any."""
    for key, v in user.items():
        if str(key).lower() in _CONNECTION_TYPE_KEYS:
            values = [str(ct).upper() for ct in ([v] if isinstance(v, str) else list(v or ()))]
            unknown = [ct for ct in values if ct not in CONNECTION_TYPES]
            if unknown:  # (nats-server's convertAllowedConnectionTypes, Go's %q of the list)
                where = f"{user.where(key)}: " if hasattr(user, "where") else ""  # (at the key, as nats-server)
                raise ConfigError(where + "invalid connection types [" + " ".join(f'"{ct}"' for ct in unknown) + "]")
            return frozenset(values) or None
    return None


def connection_type(client) -> str:
    """What nats-server's connectionTypeAllowed asks for a client: natslab
    has plain TCP (STANDARD) and websocket clients."""
    return "WEBSOCKET" if getattr(client, "ws", None) is not None else "STANDARD"


class Authenticator:
    def __init__(self, opts):
        self.opts = opts
        self.users: dict[str, dict] = {}
        for u in opts.users:
            if u.get("user") is not None:
                self.users[str(u["user"])] = u
        if opts.user:
            self.users.setdefault(opts.user, {"user": opts.user, "password": opts.password or ""})
        self.nkeys: dict[str, dict] = {}
        for u in opts.users:
            if u.get("nkey") is not None:
                from . import nkeys  # (only with nkey users configured)

                key = str(u["nkey"])
                if not nkeys.is_user_key(key):
                    raise ConfigError("Not a valid public nkey for a user")
                self.nkeys[key] = u
        self.conn_types: dict[int, frozenset] = {}  # id(user entry) -> its allowed connection types
        for u in opts.users:
            types = connection_types(u)
            if types is not None:
                self.conn_types[id(u)] = types
            if u.get("permissions"):
                # refused at start-up as nats-server's parse refuses them (not
                # at the user's first CONNECT)
                from .permissions import Permissions

                try:
                    Permissions(u["permissions"])
                except (ValueError, TypeError) as e:
                    raise ConfigError(str(e)) from None
        self.tls_map = opts.tls is not None and opts.tls.map
        self.no_auth_user = opts.no_auth_user
        # websocket { no_auth_user }: the websocket clients' own (nats-server's auth override)
        ws = getattr(opts, "websocket", None)
        self.ws_no_auth_user = getattr(ws, "no_auth_user", "") if ws is not None else ""
        # websocket { authorization { user, password, token } }: checked for websocket clients
        # instead of the server's (nats-server's wsConfigAuth: any of them, or no_auth_user, is the
        # websocket port's auth override, and makes its clients authenticate)
        self.ws_user = getattr(ws, "user", "") if ws is not None else ""
        self.ws_password = getattr(ws, "password", "") if ws is not None else ""
        self.ws_token = getattr(ws, "token", "") if ws is not None else ""
        self.ws_override = bool(self.ws_user or self.ws_token or self.ws_no_auth_user)
        jwt_cookie = next((n for n, f in getattr(ws, "cookies", {}).items() if f == "jwt"), "")
        if jwt_cookie and getattr(opts, "operator", None) is None:
            raise ConfigError("trusted operators or trusted keys configuration is required for JWT "
                              f'authentication via cookie "{jwt_cookie}"')
        if opts.users and (self.ws_user or self.ws_token):  # (validateWebsocketOptions)
            which = "username" if self.ws_user else "token"
            raise ConfigError(f"websocket authentication {which} not compatible with presence of users/nkeys")
        self.operator = getattr(opts, "operator", None)  # operator mode: JWT users (server/resolver.py)
        for name in (self.no_auth_user, self.ws_no_auth_user):
            if not name:
                continue
            if not self.users and not self.nkeys:
                raise ConfigError(f'no_auth_user: "{name}" present, but users/nkeys are not defined')
            if name not in self.users and name not in self.nkeys:
                raise ConfigError(f'no_auth_user: "{name}" not present as user or nkey in '
                                  'authorization block or account configuration')

    def no_auth_user_of(self, client) -> str:
        """The user a client without credentials is: the websocket block's
        for a websocket client when it names one, else the server's."""
        if self.ws_no_auth_user and getattr(client, "ws", None) is not None:
            return self.ws_no_auth_user
        return self.no_auth_user

    @property
    def required(self) -> bool:
        """Must a client authenticate? (With no_auth_user it still must, but
        INFO says auth_required only when there is no such default user.)"""
        return bool(self.opts.token or self.users or self.nkeys or self.operator)

    @property
    def nonce_required(self) -> bool:
        return bool(self.nkeys or self.operator)

    def check(self, client, c: dict):
        entry = self._check(client, c)
        if isinstance(entry, dict) and self.conn_types:
            types = self.conn_types.get(id(entry))
            if types is not None and connection_type(client) not in types:
                return False  # an Authorization Violation, as nats-server's
        return entry

    def _check(self, client, c: dict):
        import secrets  # (here: only a server with auth pays for hashlib and OpenSSL at start-up)

        o = self.opts
        if self.operator is not None:
            return self.operator.check(client, c)
        if (self.ws_user or self.ws_token) and getattr(client, "ws", None) is not None:
            if self.ws_token:  # (the websocket block's, in place of the server's user/pass or token)
                return password_ok(str(c.get("auth_token") or ""), self.ws_token)
            return str(c.get("user") or "") == self.ws_user and \
                password_ok(str(c.get("pass") or ""), self.ws_password)
        user = str(c.get("user") or "")
        pw = str(c.get("pass") or "")
        nkey = str(c.get("nkey") or "")
        sent_nothing = not user and not pw and not c.get("auth_token") and not nkey
        no_auth_user = self.no_auth_user_of(client) if self.ws_no_auth_user else self.no_auth_user
        if self.nkeys:
            if sent_nothing and no_auth_user in self.nkeys:
                return self.nkeys[no_auth_user]
            if nkey:
                entry = self.nkeys.get(nkey)
                if entry is None or not _signed(nkey, client.nonce, str(c.get("sig") or "")):
                    return False
                return entry
        if self.users:
            # verify_and_map of the listener the client came in on
            ws = getattr(client, "ws", None)
            tls_map = (ws.opts.tls is not None and ws.opts.tls.map) if ws is not None else self.tls_map
            if tls_map:
                from . import tls  # (only with TLS: a server without it runs without the ssl module, nossl.py)

                entry = tls.map_user(client.tls_state, self.users)
                if entry is None:
                    return False
                if user and user != entry.get("user"):
                    client.server.logger.warning('User "%s" found in connect proto, but user required from cert', user)
                return entry
            if sent_nothing and no_auth_user in self.users:
                return self.users[no_auth_user]
            if user:
                entry = self.users.get(user)
                if entry is None:
                    return False
                if password_ok(pw, str(entry.get("password", entry.get("pass", "")))):
                    return entry
                return False
        if o.token:
            return password_ok(str(c.get("auth_token") or ""), o.token)
        return False


def _signed(public_key: str, nonce: bytes, sig: str) -> bool:
    """Does ``sig`` (base64, URL-safe or standard, as nats-server takes it)
    sign ``nonce`` with the key of the user nkey ``public_key``?"""
    import base64

    from . import nkeys
    from .ed25519 import verify

    try:
        raw = nkeys.decode_public_key(public_key)
        s = sig.strip()
        sig_bytes = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    except (nkeys.InvalidKey, ValueError):
        return False
    return bool(nonce) and verify(raw, nonce, sig_bytes)
