"""The JetStream domain (``jetstream { domain: X }``): the API answered on
``$JS.X.API.>`` as well as on ``$JS.API.>``.

nats-server adds account subject mappings for a domain
(``generateJSMappingTable``): ``$JS.X.API.INFO`` to ``$JS.API.INFO``, the
STREAM, CONSUMER, DIRECT, META, SERVER and ACCOUNT subtrees to theirs under
``$JS.API``, and ``$JS.X.API.$KV.>`` / ``$JS.X.API.$OBJ.>`` to ``$KV.>`` /
``$OBJ.>``. natslab keeps mappings off the publish hot path: one internal
subscription on ``$JS.X.API.>`` takes what matches and routes it again,
from the same publisher, under the mapped subject, so the answer (or "no
responders") is exactly what the mapped request gets. A subject outside the
table is not mapped, as on nats-server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .jetstream import JetStream

# the suffixes after $JS.<domain>.API. that nats-server maps, and where to
_SUBTREES = (b"STREAM.", b"CONSUMER.", b"DIRECT.", b"META.", b"SERVER.", b"ACCOUNT.")
_INVALID = set(" \t\r\n\f.*>")


def check_domain(domain: str) -> str:
    """The domain as nats-server's validateOptions accepts it (ConfigError)."""
    from ..conf import ConfigError
    from ..subjects import valid_subject

    if not valid_subject(f"$JS.{domain}.API.>".encode()):
        raise ConfigError(f'invalid domain name: derived "$JS.{domain}.API.>" is not a valid subject')
    if _INVALID & set(domain):
        raise ConfigError("invalid domain name: may not contain ., * or >")
    return domain


def mapped(prefix: bytes, subject: bytes) -> bytes | None:
    """The subject a ``$JS.<domain>.API.`` request is mapped to, or None."""
    rest = subject[len(prefix):]
    if rest == b"INFO" or rest.startswith(_SUBTREES):
        return b"$JS.API." + rest
    if rest.startswith((b"$KV.", b"$OBJ.")):
        return rest
    return None


class DomainMapping:
    """The ``$JS.<domain>.API.>`` subscription of one account's JetStream."""

    def __init__(self, js: "JetStream", domain: str):
        self.js = js
        self.domain = domain
        self.prefix = f"$JS.{domain}.API.".encode()
        self._sub = None

    def start(self) -> None:
        self._sub = self.js.messaging.subscribe(f"$JS.{self.domain}.API.>", self._on_request, raw=True)

    def stop(self) -> None:
        if self._sub is not None:
            self.js.messaging.unsubscribe(self._sub)
            self._sub = None

    def _on_request(self, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        to = mapped(self.prefix, subject)
        messaging = self.js.messaging
        if to is None:
            messaging.no_responders(subject, reply)  # not mapped: nothing answers it
            return
        # one message, mapped: counted once (Messaging.reroute)
        messaging.reroute(messaging.publisher(), to, reply, hdr, payload)
