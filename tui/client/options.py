"""How to reach a server: kept apart from the client so the command line and
the first frame need none of the client's code."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ConnectOptions:
    url: str = "nats://127.0.0.1:4222"
    user: str | None = None
    password: str | None = None
    token: str | None = None
    creds: str | None = None  # --creds FILE (or the context's creds): a user JWT and its seed
    nkey: str | None = None  # --nkey FILE (or the context's nkey): an nkey user's seed
    name: str = "natslab"
    connect_timeout: float = 2.0
    max_reconnect_attempts: int = -1
    reconnect_time_wait: float = 1.0
    # --read-only: the client refuses every call that would change something
    read_only: bool = False
    # TLS (--tlscert/--tlskey/--tlscacert, or the nats context's cert/key/ca/tls_first)
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_ca: str | None = None
    tls_first: bool = False

    def check_credential_files(self) -> None:
        """Raise ValueError in plain words when --creds or --nkey names a
        file that cannot be read."""
        for flag, path in (("--creds", self.creds), ("--nkey", self.nkey)):
            if path:
                try:
                    with open(path, "rb"):
                        pass
                except OSError as exc:
                    raise ValueError(f"{flag} {path}: {exc.strerror or exc}") from None

    @property
    def wants_tls(self) -> bool:
        return bool(self.tls_cert or self.tls_key or self.tls_ca or self.tls_first)

    def ssl_context(self):
        """The client's TLS context when any TLS option is given, else None
        (a tls:// URL alone gets nats-py's default one). Raises ValueError in
        plain words when a file cannot be used."""
        if not self.wants_tls:
            return None
        import ssl

        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("--tlscert and --tlskey go together (the client certificate and its key)")
        try:
            ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.tls_ca or None)
            if self.tls_cert:
                ctx.load_cert_chain(self.tls_cert, self.tls_key)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"cannot use the TLS files: {exc}") from None
        return ctx
