"""The JetStream advisories about the API and the assets it changes, as
nats-server publishes them (what `nats events --js-advisory` shows):

- `$JS.EVENT.ADVISORY.API` (api_audit) for every API answer the API counts
  in `api.total`: the requester, the request and the response;
- `$JS.EVENT.ADVISORY.STREAM.CREATED|UPDATED|DELETED.<stream>`
  (stream_action: create, modify, delete);
- `$JS.EVENT.ADVISORY.CONSUMER.CREATED|DELETED.<stream>.<consumer>`
  (consumer_action: create, delete, also for the consumers of a stream
  being deleted; an update of a consumer sends none).

Each is built only when a client listens on its subject. The delivery
advisories (naks, terms, max deliveries, pins) live with the acks and
deliveries that cause them.
"""

from __future__ import annotations

import time

from ..client import client_info
from .shapes import dumps, rfc3339

API_AUDIT = "$JS.EVENT.ADVISORY.API"


def _id() -> str:
    """An advisory's id, as the consumer advisories make them (consumer/acks.py is
    the consumers' module: a server with none has not loaded it)."""
    from .consumer.acks import _nuid

    return _nuid()


def _publish(messaging, subject: str, body: dict) -> None:
    messaging.publish(subject, "", None, dumps(body).encode())


def stream_action(js, stream: str, action: str) -> None:
    verb = {"create": "CREATED", "modify": "UPDATED", "delete": "DELETED"}[action]
    if js.messaging.journal is not None:  # (the history: jetstream/journal.py)
        js.messaging.journal.stream((js.account, stream), action)
    subject = f"$JS.EVENT.ADVISORY.STREAM.{verb}.{stream}"
    if js.messaging.has_interest(subject):
        _publish(js.messaging, subject, {"type": "io.nats.jetstream.advisory.v1.stream_action", "id": _id(),
                                      "timestamp": rfc3339(time.time_ns()), "stream": stream, "action": action})


def consumer_action(js, stream: str, consumer: str, action: str) -> None:
    verb = {"create": "CREATED", "delete": "DELETED"}[action]
    subject = f"$JS.EVENT.ADVISORY.CONSUMER.{verb}.{stream}.{consumer}"
    if js.messaging.has_interest(subject):
        _publish(js.messaging, subject, {"type": "io.nats.jetstream.advisory.v1.consumer_action", "id": _id(),
                                      "timestamp": rfc3339(time.time_ns()), "stream": stream, "consumer": consumer,
                                      "action": action})


def api_audit(js, client, subject: str, request: bytes, response: bytes) -> None:
    messaging = js.messaging
    if client is None or client.internal or not messaging.has_interest(API_AUDIT):
        return
    body = {"type": "io.nats.jetstream.advisory.v1.api_audit", "id": _id(), "timestamp": rfc3339(time.time_ns()),
            "server": messaging.server_name, "client": client_info(client, messaging.server_name), "subject": subject}
    if request:
        body["request"] = request.decode("utf-8", "replace")
    body["response"] = response.decode("utf-8", "replace")
    _publish(messaging, API_AUDIT, body)
