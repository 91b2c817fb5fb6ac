"""Mock responders: try a request before the real service exists.

Each kind answers requests on a subject the way a real service might:
echo, a fixed reply, an echo after a delay, an error status, or silence
(it subscribes and never answers, so the requester times out).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable

KINDS = {
    "echo": "echo the request back",
    "fixed": "reply with a fixed text",
    "delay": "echo after a delay (seconds)",
    "error": "reply with an error status",
    "silence": "never reply (requester times out)",
}


@dataclass
class MockResponder:
    subject: str
    kind: str
    param: str = ""
    handled: int = 0
    sub: Any = field(default=None, repr=False)

    @property
    def description(self) -> str:
        extra = f" {self.param}" if self.param and self.kind in ("fixed", "delay", "error") else ""
        return f"{self.kind}{extra}"

    async def handle(self, msg, on_request: Callable[["MockResponder"], None]) -> None:
        self.handled += 1
        on_request(self)
        if not msg.reply or self.kind == "silence":
            return
        if self.kind == "fixed":
            await msg.respond(self.param.encode())
        elif self.kind == "delay":
            await asyncio.sleep(float(self.param or 1))
            await msg.respond(msg.data)
        elif self.kind == "error":
            code = self.param or "500"
            await msg._client.publish(
                msg.reply, b"", headers={"Nats-Service-Error-Code": code, "Nats-Service-Error": "mock error"}
            )
        else:
            await msg._client.publish(msg.reply, msg.data, headers=msg.headers or None)


def responder_error(subject_err: str | None, kind: str, param: str) -> str | None:
    if subject_err:
        return subject_err
    if kind not in KINDS:
        return f"unknown responder kind '{kind}'"
    if kind == "delay":
        try:
            if float(param or 1) < 0:
                raise ValueError
        except ValueError:
            return f"delay must be a number of seconds, not '{param}'"
    if kind == "error" and param and not param.isdigit():
        return f"error status must be a number like 503, not '{param}'"
    return None
