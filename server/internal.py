"""The server's own subsystems as NATS clients: the internal client identity
they publish and subscribe as, their subscriptions, how a subsystem takes
runs of messages on subjects it owns, and ``Messaging``, the one face of the
core that JetStream sees.

An internal subscription's callback runs synchronously during routing. One
with a ``RunSpec`` also gets, in one call, the PUBs that follow one of its
messages in the same socket read and have the shape it names (the parser
finds them, see ``parser.Parser``): a consumer takes the plain acks of a
pull batch so, the API the direct gets of a KV client.

The seam between the core and JetStream
---------------------------------------
JetStream (``server/jetstream/``) never holds the ``Server``: each
account's JetStream gets a ``Messaging``, the core as one account's
subject space sees it, and reaches the core through it alone. nats-server
gives each account's JetStream internal clients of that account, so its
subscriptions (``$JS.API.>``, each stream's subjects, ack subjects) and
everything it sends (API answers, PubAcks, deliveries, advisories) live in
that account: a stream ORDERS of account A and one of account B never
meet. The server has one ``Messaging`` on its own index (``$G``'s, or the
first configured account's: ``Server.messaging``, which the core's own
subsystems use too) and makes one per other account with JetStream; the
functions are the same, the index, the internal client and the account
whose importers see deliveries are the face's.

What JetStream uses, grouped:

- subscribing: ``subscribe(subject, callback, queue, raw, run)``,
  ``unsubscribe(sub)``; ``route_by_prefix(prefix, tokens)`` (the index
  matches ack subjects by prefix, never caches them one by one);
- sending: ``publish(subject, reply, hdr, payload)`` (routed as any
  message of the account: its subscribers and whoever imports it),
  ``reply(reply, payload, hdr)`` and ``reply_run(answers)`` (PubAcks,
  direct gets: answers to reply subjects already in bytes),
  ``no_responders(subject, reply)`` (a request it declines),
  ``reroute(pub, subject, reply, hdr, payload)`` (a client's message
  again under another subject, counted once: domain mapping);
- delivering (consumers): ``deliver(deliver_subject, subject, reply, hdr,
  payload)`` (one message routed on the deliver subject or pull reply, the
  MSG line carrying the stream subject), ``match_deliver(subject)`` and
  ``match(subject)`` (what a deliver subject or a pull reply reaches),
  ``deliver_run(match, msgs)`` (a run to what was matched);
- interest: ``has_interest(subject, literal_only)``,
  ``interest_listeners`` (told of client subscriptions: push consumers),
  ``publisher()`` (who sent the message being handled);
- writing: ``write_behind(store)`` (a store with buffered records writes
  them before any client output), ``schedule_flush()``;
- the server's facts: ``loop``, ``logger``, ``options`` (the
  ``ServerOptions``), ``journal`` (the history ring, or None),
  ``version``, ``server_name``, ``jetstreams`` (every account's JetStream,
  for the server-wide limits), ``internal_clients(n)`` (client ids that
  nats-server's internal clients take).

The hot path pays nothing for the face: the core's functions it forwards to
(``deliver_run``, ``schedule_flush``, ``write_behind``, the index's
``match``) are bound once as attributes, and the rest are the
implementations themselves, as ``Server`` methods were.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .client import Subscription


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Runs of messages a subsystem takes at once.

    ``key(subject, reply, payload)`` (bytes; reply None for none) says
    whether a message starts a run: the subject prefix, ending in ".", that
    the run's members share, or None. Members are the PUBs right behind it
    with a subject under that prefix, no headers, a payload among
    ``payloads`` and a reply when ``reply`` (none otherwise), that reach this
    subscription alone. ``handler(key, [(subject, reply, payload), ...])``
    gets the run, the first message included, in order.

    ``payloads`` None takes any body (a stream's publishes): a run is the
    plain PUBs, with a reply or without, behind one with a reply whose
    subjects matched exactly what it matched (this subscription alone);
    ``key`` is not asked and ``handler`` gets b"" for it, only for runs of
    two or more (a lone message goes to the subscription's callback)."""

    key: Callable[[bytes, bytes | None, bytes], bytes | None]
    handler: Callable[[bytes, list], None]
    payloads: tuple[bytes, ...] | None = (b"",)
    reply: bool = False


class InternalClient:
    """The publisher/subscriber identity of the server's own subsystems
    (JetStream), on the server's index or, with ``account``, in one
    configured account (its messages route in it). Deliveries call the
    subscription's callback synchronously."""

    internal = True
    echo = True
    closed = False
    headers = True
    no_responders = False
    cid = 0
    name = "$SYSTEM"

    def __init__(self, server, account=None):
        self.server = server
        self.account = account

    def deliver(self, sub, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        sub.msgs += 1
        try:
            if sub.raw:
                sub.callback(subject, reply, hdr, payload)
            else:
                sub.callback(subject.decode(), reply.decode() if reply else "", hdr, payload)
        except Exception:  # a bug in a subsystem must not take routing down
            self.server.logger.exception("internal subscription %s failed", sub.subject.decode())

    def deliver_run(self, sub, msgs, alike: tuple | None = None) -> None:
        if alike is not None:  # (payloads that share subject and reply: router.deliver_results)
            subject, reply, _ = alike
            msgs = [(subject, reply, None, pl) for pl in msgs]
        for subject, reply, hdr, payload in msgs:
            self.deliver(sub, subject, reply, hdr, payload)


class InternalSubscription(Subscription):
    __slots__ = ("callback", "raw", "run")

    def __init__(self, client, subject: bytes, queue: bytes | None, callback):
        super().__init__(client, subject, queue, b"")
        self.callback = callback
        self.raw = False  # callback gets bytes subject/reply (Messaging.subscribe)
        self.run: RunSpec | None = None  # runs taken at once (Messaging.subscribe)


class Messaging:
    """The core as one account's subject space sees it: what that account's
    JetStream subscribes, sends and delivers through (see the module
    docstring for the list). ``index`` is the subject space, ``client`` the
    internal client it sends as, ``account`` the account whose importers see
    its deliveries (None: no configured accounts), ``listeners`` the list
    told of client subscriptions there. Made once the server's loop runs."""

    def __init__(self, server, index, client, account, listeners: list):
        self._server = server
        self._index = index
        self.client = client
        self._account = account
        # reply subjects of internal answers (PubAcks, direct gets): mostly
        # under one client's inbox prefix, matched once while the index stays
        self._match_reply = index.reply_matcher()
        self._deliver_memo: tuple = ("", -1, None)  # deliver: last subject, index generation, match
        # the server's facts
        self.loop = server.loop
        self.logger = server.logger
        self.options = server.opts
        self.journal = server.journal
        self.version = server.version
        self.server_name = server.server_name
        self.jetstreams = server.jetstreams
        self.interest_listeners = listeners
        # the core's functions, bound once (no call added on the hot path)
        self.match = index.match
        self.route_by_prefix = index.route_by_prefix
        self.deliver_run = server.deliver_matched_run
        self._deliver_matched = server.deliver_matched
        self.write_behind = server.write_behind
        self.schedule_flush = server.schedule_flush
        self.internal_clients = server.internal_clients
        self._route = server.route

    # -- subscribing -------------------------------------------------------------
    def subscribe(self, subject: str, callback, queue: str | None = None,
                  raw: bool = False, run: RunSpec | None = None) -> InternalSubscription:
        """Subscribe a server subsystem: ``callback(subject, reply, hdr, payload)``
        runs synchronously during routing; reply is '' when there is none.
        With ``raw`` the subject and reply are passed as the bytes the router
        holds (b'' for no reply), saving a decode on hot paths. A raw
        subscription's ``run`` (see RunSpec) takes runs of messages that one
        read of a client brought for it at once."""
        sub = InternalSubscription(self.client, subject.encode(), queue.encode() if queue else None, callback)
        sub.raw = raw
        sub.run = run if raw else None
        self._index.insert(sub)
        return sub

    def unsubscribe(self, sub: InternalSubscription) -> None:
        self._index.remove(sub)

    # -- sending -----------------------------------------------------------------
    def publish(self, subject: str, reply: str = "", hdr: bytes | None = None, payload: bytes = b"") -> None:
        self._route(self.client, subject.encode(), reply.encode() if reply else b"", hdr, payload)
        self.schedule_flush()

    def publisher(self):
        """The connection whose message is being routed right now (an API
        request's requester; answering it publishes, which changes it)."""
        return self._server.current_publisher

    def no_responders(self, subject: bytes, reply: bytes, pub=None) -> None:
        """What a request gets when nothing answers it: a subsystem that
        declines a message it was handed (nats-server answers these from its
        core, so only a requester whose CONNECT asked for no_responders gets
        the 503). ``pub``: who sent it, when not the connection being routed
        now (a run handed over at once: answering its first ones changed it)."""
        if pub is None:
            pub = self._server.current_publisher
        if reply and pub is not None and not pub.internal and pub.no_responders:
            self._server._no_responders(pub, subject, reply, self._index)

    def reply(self, reply: bytes, payload: bytes, hdr: bytes | None = None) -> None:
        """publish for a reply subject already in bytes (PubAcks, direct
        gets): what routing does for the internal client, which echoes and
        never asks for no-responders, so only the matching and the delivery."""
        self._server.current_publisher = self.client
        self.deliver_run(self._match_reply(reply), ((reply, b"", hdr, payload),))
        self.schedule_flush()

    def reply_run(self, answers: list[tuple[bytes, bytes | None, bytes]]) -> None:
        """reply for each (reply, hdr, payload) of a run, in order (the
        PubAcks of one file write, a run of direct gets): consecutive
        answers to what one match found (mostly one client's inbox) go to
        its subscriptions as one run."""
        self._server.current_publisher = self.client
        match = self._match_reply
        deliver_run = self.deliver_run
        last = None
        run: list = []
        for r, hdr, payload in answers:
            m = match(r)
            if m is not last:
                if run:
                    deliver_run(last, run)
                    run = []
                last = m
            run.append((r, b"", hdr, payload))
        if run:
            deliver_run(last, run)
        self.schedule_flush()

    def reroute(self, pub, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        """A message ``pub`` sent, routed again under ``subject`` (a domain's
        API subject mapped): the route counts it again, so its first count
        is taken back (nats-server maps before counting once)."""
        srv = self._server
        if not pub.internal:
            srv.in_msgs -= 1
            srv.in_bytes -= len(payload) + (len(hdr) if hdr else 0)
        self._route(pub, subject, reply, hdr, payload)

    # -- delivering (consumers) --------------------------------------------------
    # consumer deliveries are routed on the deliver subject (or pull reply) but
    # the MSG line carries the message's stream subject, as on the real server
    def deliver(self, deliver_subject: str, subject: str, reply: str = "",
                hdr: bytes | None = None, payload: bytes = b"") -> None:
        ix = self._index
        gen = ix.inserts + ix.removes
        memo = self._deliver_memo
        if memo[0] == deliver_subject and memo[1] == gen:
            r = memo[2]
        else:
            # a batch of deliveries goes to one pull request's reply subject
            r = self.match_deliver(deliver_subject.encode())
            acc = self._account
            # (importers' subscriptions are not under this index's generation)
            self._deliver_memo = (deliver_subject, gen if acc is None or not acc.importers else -2, r)
        self._deliver_matched(r, subject.encode(), reply.encode() if reply else b"", hdr, payload)
        self.schedule_flush()

    def match_deliver(self, subject: bytes) -> tuple:
        """What a consumer delivery to ``subject`` reaches: the index's
        subscriptions and those of the accounts that import the subject as a
        stream (under its name there; the MSG line keeps the stream's
        subject, as nats-server's deliver-subject imports do)."""
        r = self._index.match(subject)
        acc = self._account
        if acc is not None and acc.importers:
            r = self._server.accounts.with_importers(acc, subject, r)
        return r

    # -- interest ------------------------------------------------------------------
    def has_interest(self, subject: str, literal_only: bool = False) -> bool:
        """Does any client (not internal) subscription match this subject?
        With ``literal_only``, only a subscription on exactly this subject
        counts (nats-server starts push delivery only for those)."""
        subj = subject.encode()
        psubs, qsubs = self._index.match(subj)
        for s in psubs:
            if not s.client.internal and (not literal_only or s.subject == subj):
                return True
        for g in qsubs:
            for s in g:
                if not s.client.internal and (not literal_only or s.subject == subj):
                    return True
        acc = self._account
        if acc is not None and acc.importers:
            return self._server.accounts.importer_interest(acc, subj, literal_only)
        return False


def jetstream():
    """JetStream's package (``jetstream/__init__.py`` lists what the core may
    use of it): the core's one import of JetStream, made by the start
    (``Server.start``) or by the configuration that names JetStream's limits
    or domain, so a server without either never loads it."""
    from . import jetstream as package

    return package
