"""The one road from a match result to its subscriptions.

nats-server routes every message, a client's or one of its own subsystems',
through ``processMsgResults`` -> ``deliverMsg``. Here that is ``deliver_results``:
given what a subject matched (``(plain subscriptions, queue groups)``, from
the subject index) and a run of messages that all matched it, every plain
subscription takes the run at once, each queue group gives each message to
one member (``pick`` for one message, ``shares`` for a run: the one queue
pick), and a publisher that asked for no echo gets none of its own. Its
callers: the parser's fast path (runs of PUBs, and runs of identical PUB
lines as their payloads), ``Server.route_matched`` and ``Accounts`` (one
message), message tracing (with its own ``to``), and through
``Server.deliver_matched(_run)`` JetStream's push and pull deliveries and
its replies (PubAcks, direct gets); the deny filter's "another member" pick
(``Client._to_other_member``) is ``pick`` too. What a connection does with a run (echo aside: permissions,
auto-unsubscribe, framing, flushing) is ``Client.deliver_run``.
"""

from __future__ import annotations

import random
from operator import attrgetter

_randrange = random.randrange
_choices = random.choices
_client = attrgetter("client")


def pick(group, pub=None):
    """The member of a queue group that gets one message from ``pub``: one
    at random, never ``pub``'s own when it asked for no echo (None when only
    its own are there)."""
    sub = group[_randrange(len(group))] if len(group) > 1 else group[0]
    if pub is not None and sub.client is pub and not pub.echo:
        others = [s for s in group if s.client is not pub]
        return others[_randrange(len(others))] if others else None
    return sub


def shares(group, pub, msgs):
    """The queue pick for a run of two or more messages: [(member, its
    messages)], each message of ``msgs`` to one member at random (never
    ``pub``'s own without echo), each member's share in order. Members on
    one connection get theirs message by message, so that connection sees
    the run's order."""
    if pub is not None and not pub.echo:
        group = [s for s in group if s.client is not pub]
        if len(group) < 2:
            return [(group[0], msgs)] if group else ()
    picks = _choices(group, k=len(msgs))
    if len(set(map(_client, group))) < len(group):
        return [(sub, [msg]) for sub, msg in zip(picks, msgs)]
    got: dict = {}
    for sub, msg in zip(picks, msgs):
        share = got.get(sub)
        if share is None:
            got[sub] = [msg]
        else:
            share.append(msg)
    return got.items()


def deliver_results(srv, pub, r: tuple, msgs, alike: tuple | None = None, to=None) -> int:
    """Deliver a run of messages that all matched ``r`` (in order) from
    ``pub`` (None: nobody to leave out): every plain subscription takes the
    run at once, each queue group gives each message to one member
    (``pick``; a run shared out by ``shares``), a publisher without echo
    gets none of its own. The messages are (subject, reply, hdr, payload),
    or with ``alike`` (subject, reply, size) the payloads of a run that
    shares those and has no headers (what a run of identical PUB lines
    brings: ``Client.deliver_run`` frames it with one MSG line).

    With ``srv`` (the server whose index matched), ``pub`` is its
    ``current_publisher`` meanwhile (internal subscribers ask who sent what
    they handle), and when nothing took the run each of its requests gets
    the no-responders answer, if ``pub`` asked for those. ``to(sub, msgs)``,
    when given, is called instead of the subscription's client (message
    tracing). Returns how many deliveries were taken (not: a client whose
    deny filter kept all of a run, ``to`` returning False)."""
    if srv is not None:
        srv.current_publisher = pub
    psubs, qgroups = r
    n = 0
    for sub in psubs:
        c = sub.client
        if c is pub and not c.echo:
            continue
        if (c.deliver_run(sub, msgs, alike) if to is None else to(sub, msgs)) is not False:
            n += 1
    for group in qgroups:
        if len(msgs) == 1 or len(group) == 1:
            sub = pick(group, pub)
            if sub is None:
                continue
            if (sub.client.deliver_run(sub, msgs, alike) if to is None else to(sub, msgs)) is not False:
                n += 1
            continue
        for sub, share in shares(group, pub, msgs):
            if (sub.client.deliver_run(sub, share, alike) if to is None else to(sub, share)) is not False:
                n += 1
    if not n and srv is not None and alike is None and pub.no_responders:
        for subject, reply, _, _ in msgs:
            if reply:
                no_responders(srv.index, pub, subject, reply)
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
