"""Message tracing, as nats-server 2.11+ does it for `nats trace`: a message
published with a `Nats-Trace-Dest: <subject>` header is routed as usual and
the server then publishes, to that subject, one JSON event describing what
became of it: where it came in ("in"), each client subscription it went out
to ("eg", with the queue group), and each stream that took it ("js": stored,
`nointerest` for an interest stream nobody wants it for, or the error).
With `Nats-Trace-Only` true (1, true or on, any case) the message goes
nowhere and only the event is sent. A stream stores a traced message with
its `Nats-Trace-Dest` set to "trace disabled", so a replay is not traced.

A publish the connection may not make is reported too (``denied``: the
ingress with the permissions error). Single server: no routes, gateways or
leaf nodes to report, so no hop headers. Server.route hands a message here only when its
headers name a trace destination; everything else keeps the fast path.
"""

from __future__ import annotations

import json
import re
import time

from . import router
from .subjects import valid_literal_subject

DEST = b"Nats-Trace-Dest:"
TRACE_ONLY = "Nats-Trace-Only"
KIND_CLIENT = 0  # nats-server's ClientKind CLIENT
_DEST_LINE = re.compile(rb"(\r\nNats-Trace-Dest:)[^\r]*")


def has_trace_header(hdr: bytes) -> bool:
    return b"\r\n" + DEST in hdr


def _headers(hdr: bytes) -> dict[str, list[str]]:
    """Every header and all its values, as the trace event's request shows them."""
    out: dict[str, list[str]] = {}
    for line in hdr.decode("utf-8", "replace").split("\r\n")[1:]:
        k, sep, v = line.partition(":")
        if sep and k:
            out.setdefault(k, []).append(v.strip())
    return out


def _now() -> str:
    from .gowire import rfc3339

    return rfc3339(time.time_ns())


class MsgTrace:
    def __init__(self, server):
        self.server = server

    @staticmethod
    def _wanted(pub, hdr: bytes) -> tuple[dict, str, bool] | None:
        """(headers, destination, trace-only) of a message to trace; None when
        it is not traced after all (no destination)."""
        if pub.internal:
            return None
        headers = _headers(hdr)
        dest = (headers.get("Nats-Trace-Dest") or [""])[0]
        if not dest:
            return None
        return headers, dest, (headers.get(TRACE_ONLY) or [""])[0].strip().lower() in ("1", "true", "on")

    @staticmethod
    def _ingress(pub, subject: bytes) -> dict:
        ingress = {"type": "in", "ts": _now(), "kind": KIND_CLIENT, "cid": pub.cid}
        if pub.name:
            ingress["name"] = pub.name
        ingress.update({"acc": pub.account.name if pub.account is not None else "$G",
                        "subj": subject.decode("utf-8", "replace")})
        return ingress

    def _send(self, dest: str, headers: dict, hdr: bytes, payload: bytes, events: list) -> None:
        event = {"server": self.server.sys_requests.server_block(),
                 "request": {"header": headers, "msgsize": len(hdr) + len(payload)},
                 "events": events}
        self.server.messaging.publish(dest, "", None, json.dumps(event, separators=(",", ":")).encode())

    def denied(self, pub, subject: bytes, hdr: bytes, payload: bytes) -> None:
        """A traced publish the connection may not make: the event has the
        ingress only, with the permissions error (as nats-server's)."""
        wanted = self._wanted(pub, hdr)
        if wanted is None or not valid_literal_subject(wanted[1]):
            return
        headers, dest, _ = wanted
        ingress = self._ingress(pub, subject)
        ingress["error"] = f'Permissions Violation for Publish to "{ingress["subj"]}"'
        self._send(dest, headers, hdr, payload, [ingress])

    def route(self, pub, subject: bytes, reply: bytes, hdr: bytes, payload: bytes, match) -> bool:
        """Route a message whose headers name a trace destination, with its
        event; False when it is not traced after all (no destination), so
        the caller routes it the plain way."""
        wanted = self._wanted(pub, hdr)
        if wanted is None:
            return False
        headers, dest, only = wanted
        if not valid_literal_subject(dest):
            return only  # nats-server drops a trace-only message it cannot report on
        srv = self.server
        ingress = self._ingress(pub, subject)
        js_events: list[dict] = []
        egress: list[dict] = []

        def to(sub, msgs) -> bool:
            c = sub.client
            if c.internal:
                return self._internal(sub, subject, reply, hdr, payload, only, js_events) > 0
            egress.append(self._egress(sub, sub.queue))
            if not only:
                c.deliver_run(sub, msgs)
            return True

        n = router.deliver_results(None, pub, match, ((subject, reply, hdr, payload),), to=to)
        if not n and reply and pub.no_responders and not only:
            srv._no_responders(pub, subject, reply)
        self._send(dest, headers, hdr, payload, [ingress, *js_events, *egress])
        return True

    @staticmethod
    def _egress(sub, queue: bytes | None) -> dict:
        c = sub.client
        e = {"type": "eg", "ts": _now(), "kind": KIND_CLIENT, "cid": c.cid}
        if c.name:
            e["name"] = c.name
        e["sub"] = sub.subject.decode()
        if queue:
            e["queue"] = queue.decode()
        return e

    def _internal(self, sub, subject: bytes, reply: bytes, hdr: bytes, payload: bytes, only: bool, events: list) -> int:
        """A subsystem's subscription: a stream's is reported ("js") and
        given the message with its trace turned off unless trace-only; any
        other (the JetStream API) just gets it, unless trace-only."""
        stream = self._stream_of(sub)
        if stream is None:
            if not only:
                sub.client.deliver_run(sub, ((subject, reply, hdr, payload),))
            return 1
        subj = subject.decode("utf-8", "replace")
        e = {"type": "js", "ts": _now(), "stream": stream.name}
        if stream.drops_unwanted(subj):
            e.update(subject=subj, nointerest=True)
            if not only:
                sub.client.deliver_run(sub, ((subject, reply, _DEST_LINE.sub(rb"\1 trace disabled", hdr), payload),))
        else:
            if not only:
                sub.msgs += 1
            # the stream checks the headers (trace-only: and stops there);
            # the subject is reported once the checks passed, an error that
            # comes from storing with it, as nats-server's
            error, checked = stream.traced_publish(subject, reply, _DEST_LINE.sub(rb"\1 trace disabled", hdr),
                                                   payload, only)
            if checked:
                e["subject"] = subj
            if error:
                e["error"] = error
        events.append(e)
        return 1

    @staticmethod
    def _stream_of(sub):
        # (a stream's subscriptions call its methods; it says it is one)
        owner = getattr(sub.callback, "__self__", None)
        return owner if getattr(owner, "traced_as_stream", False) else None
