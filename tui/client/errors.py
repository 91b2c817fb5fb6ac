"""Failures in plain words: every nats-py exception the panes see becomes a NatsError."""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger(__name__)


class NatsError(Exception):
    """A failure in plain words, with the server's codes when there are any."""

    def __init__(self, description: str, code: int = 0, err_code: int = 0):
        super().__init__(description)
        self.description = description
        self.code = code
        self.err_code = err_code

    def __str__(self) -> str:
        return self.description


async def quietly(awaitable, what: str) -> None:
    """Await a clean-up (unsubscribe, stop a watcher, close) whose failure
    changes nothing: the connection is closing or the subscription is gone.
    nats-py's own errors and a timeout are logged, anything else propagates."""
    from nats.errors import Error as NatsPyError

    try:
        await awaitable
    except (NatsPyError, asyncio.TimeoutError) as exc:
        log.debug("%s: %s", what, exc)


def _nats_errors():
    from nats.errors import NoRespondersError, TimeoutError as NatsTimeoutError

    return NoRespondersError, NatsTimeoutError


def _plain(exc: BaseException) -> NatsError:
    NoRespondersError, NatsTimeoutError = _nats_errors()
    if isinstance(exc, NatsError):
        return exc
    if isinstance(exc, NoRespondersError):
        return NatsError("no responders: nothing is listening on that subject (is JetStream enabled?)", 503)
    if exc.__class__.__name__ == "DigestMismatchError":
        return NatsError("digest mismatch: the object's SHA-256 does not match what was stored")
    if isinstance(exc, (NatsTimeoutError, asyncio.TimeoutError)):
        return NatsError("timed out waiting for the server", 408)
    desc = getattr(exc, "description", None)
    if desc:
        return NatsError(desc, getattr(exc, "code", 0) or 0, getattr(exc, "err_code", 0) or 0)
    return NatsError(str(exc) or exc.__class__.__name__)
