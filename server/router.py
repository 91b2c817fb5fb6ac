"""The one road from a match result to its subscriptions.

nats-server routes every message, a client's or one of its own subsystems',
through ``processMsgResults`` -> ``deliverMsg``. Here that is ``deliver``:
given what a subject matched (``(plain subscriptions, queue groups)``, from
the subject index) and a run of messages that all matched it, every plain
subscription takes the run at once, each queue group gives each message to
one member (``shares``: the one queue pick), and a publisher that asked for
no echo gets none of its own. Its callers: the parser's fast path (runs of
PUBs, and runs of identical PUB lines as a ``PayloadRun``), ``Server.route``
and ``Accounts`` (one message or a run), message tracing (with its own
``to``), JetStream's push and pull deliveries and its replies (PubAcks,
direct gets). What a connection does with a run (echo aside: permissions,
auto-unsubscribe, framing, flushing) is ``Client.deliver_run``.
"""

from __future__ import annotations

import random

_randrange = random.randrange
_choices = random.choices


class PayloadRun(list):
    """A run of messages that share ``subject`` and ``reply``, carry no
    headers and are ``size`` bytes each: the payloads (what a run of
    identical PUB lines brings). ``Client.deliver_run`` frames it with one
    MSG line."""

    __slots__ = ("subject", "reply", "size")

    def __init__(self, subject: bytes, reply: bytes, size: int, payloads) -> None:
        super().__init__(payloads)
        self.subject = subject
        self.reply = reply
        self.size = size

    def part(self, payloads) -> "PayloadRun":
        return PayloadRun(self.subject, self.reply, self.size, payloads)

    def messages(self) -> list:
        """The run as (subject, reply, hdr, payload) messages."""
        s, r = self.subject, self.reply
        return [(s, r, None, pl) for pl in self]


def pick(group, pub=None):
    """The member of a queue group that gets one message from ``pub``: one
    at random, never ``pub``'s own when it asked for no echo (None when only
    its own are there)."""
    sub = group[_randrange(len(group))] if len(group) > 1 else group[0]
    if pub is not None and sub.client is pub and not pub.echo:
        others = [s for s in group if s.client is not pub]
        return others[_randrange(len(others))] if others else None
    return sub


def shares(group, pub, msgs) -> list:
    """The queue pick for a run: [(member, its messages)], each message of
    ``msgs`` to one member at random (never ``pub``'s own without echo), each
    member's share in order. Members on one connection get their shares
    message by message, so that connection sees the run's order."""
    if len(msgs) == 1 or len(group) == 1:
        sub = pick(group, pub)
        return [] if sub is None else [(sub, msgs)]
    if pub is not None and not pub.echo:
        group = [s for s in group if s.client is not pub]
        if not group:
            return []
        if len(group) == 1:
            return [(group[0], msgs)]
    picks = _choices(group, k=len(msgs))
    batch = msgs.part if msgs.__class__ is PayloadRun else list
    if len({s.client for s in group}) < len(group):
        out: list = []
        for sub, msg in zip(picks, msgs):
            out.append((sub, batch((msg,))))
        return out
    got: dict = {}
    for sub, msg in zip(picks, msgs):
        share = got.get(sub)
        if share is None:
            got[sub] = [msg]
        else:
            share.append(msg)
    return [(sub, batch(share)) for sub, share in got.items()]


def deliver(pub, r: tuple, msgs, to=None) -> int:
    """Deliver a run of messages that all matched ``r`` (in order) from
    ``pub`` (None: nobody to leave out): every plain subscription takes the
    run at once, each queue group shares it out. ``to(sub, msgs)``, when
    given, is called instead of the subscription's client (message tracing
    does). Returns how many deliveries were taken (a client whose deny
    filter kept all of a run, ``to`` returning False: not), for the
    no-responders answer."""
    psubs, qgroups = r
    n = 0
    for sub in psubs:
        c = sub.client
        if c is pub and not c.echo:
            continue
        if (c.deliver_run(sub, msgs) if to is None else to(sub, msgs)) is not False:
            n += 1
    for group in qgroups:
        for sub, share in shares(group, pub, msgs):
            if (sub.client.deliver_run(sub, share) if to is None else to(sub, share)) is not False:
                n += 1
    return n


def no_responders(index, pub, subject: bytes, reply: bytes) -> None:
    """A request from ``pub`` that nothing took: nats-server's 503 status to
    ``pub``'s own subscription on the reply subject (in ``index``, the
    publisher's subject space)."""
    hdr = b"NATS/1.0 503\r\nNats-Subject: " + subject + b"\r\n\r\n"
    psubs, qgroups = index.match(reply)
    for sub in psubs:
        if sub.client is pub:
            pub.deliver_run(sub, ((reply, b"", hdr, b""),))
            return
    for group in qgroups:
        for sub in group:
            if sub.client is pub:
                pub.deliver_run(sub, ((reply, b"", hdr, b""),))
                return
