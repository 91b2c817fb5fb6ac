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
    creds: str | None = None
    name: str = "natslab"
    connect_timeout: float = 2.0
    max_reconnect_attempts: int = -1
    reconnect_time_wait: float = 1.0
    # --read-only: the client refuses every call that would change something
    read_only: bool = False
