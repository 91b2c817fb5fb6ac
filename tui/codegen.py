"""'Copy as code': the nats CLI line and nats-py snippet equivalent to an action."""

from __future__ import annotations

import shlex


def publish_code(req) -> str:
    cli = ["nats", "pub", req.subject, req.payload]
    for k, v in req.headers.items():
        cli += ["-H", f"{k}:{v}"]
    if req.count > 1:
        cli += ["--count", str(req.count)]
    hdrs = dict(req.headers)
    if req.msg_id:
        hdrs["Nats-Msg-Id"] = req.msg_id
    if req.expected_last_seq is not None:
        hdrs["Nats-Expected-Last-Sequence"] = str(req.expected_last_seq)
    if req.expected_stream:
        hdrs["Nats-Expected-Stream"] = req.expected_stream
    if req.jetstream:
        py = f"ack = await nc.jetstream().publish({req.subject!r}, {req.payload.encode()!r}, headers={hdrs or None!r})"
        if req.msg_id:
            cli += ["-H", f"Nats-Msg-Id:{req.msg_id}"]
        cli += ["--jetstream"]
    else:
        py = f"await nc.publish({req.subject!r}, {req.payload.encode()!r}, headers={hdrs or None!r})"
    return f"$ {shlex.join(cli)}\n{py}"


def request_code(subject: str, payload: str, headers: dict, timeout: float) -> str:
    cli = ["nats", "request", subject, payload, "--timeout", f"{timeout:g}s"]
    for k, v in headers.items():
        cli += ["-H", f"{k}:{v}"]
    py = f"msg = await nc.request({subject!r}, {payload.encode()!r}, timeout={timeout:g}, headers={headers or None!r})"
    return f"$ {shlex.join(cli)}\n{py}"
