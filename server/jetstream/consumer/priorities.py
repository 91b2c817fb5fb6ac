"""The ``prioritized`` priority policy (nats-server 2.12+): a pull consumer's
waiting requests are served in the order of the ``priority`` their pull
request gave (0 first, up to 9), first come first served within one
priority. A request that still wants messages goes back behind the others
of its priority, so equal ones take turns while a higher one waits (as
nats-server's insertAtPosition does)."""

from __future__ import annotations

from collections import deque

NO_PRIORITY = 2**31 - 1  # a request without a priority group goes last


def request_priority(d: dict | None) -> int:
    """The priority of a pull request's JSON body (None: not JSON)."""
    return NO_PRIORITY if d is None else (d.get("priority") or 0)


def enqueue(waiting: deque, wr) -> None:
    """Put ``wr`` after every waiting request of its priority or a higher one."""
    p = wr.priority
    for i, other in enumerate(waiting):
        if other.priority > p:
            waiting.insert(i, wr)
            return
    waiting.append(wr)
