"""The broker's history: a bounded ring of what happened to streams and
consumers, with its time, for the workbench's time slider (issue #30).

Off unless asked for (``EmbeddedServer(history_mb=50)`` / ``ServerThread``;
the workbench's own broker turns it on). When off, ``server.journal`` is
None and each hook is one ``is not None`` test per run of deliveries or acks
(and per stored message). When on, each hook adds one tuple to the ring.

An event is a plain tuple (``FIELDS`` names its slots):

    (t, kind, stream, consumer, seqs, dseq, dc,
     dlv_dseq, dlv_sseq, flr_dseq, flr_sseq, ack_pending, redelivered, extra, account)

- ``t``: wall clock (``time.time_ns()``, the clock consumer info's ``ts`` is on);
- ``kind``: ``deliver`` (a run of deliveries: ``seqs`` their stream seqs, the
  first with consumer seq ``dseq``, the rest after it, each with delivery
  count ``dc``), ``ack`` (the stream seqs a run of acks was for), ``nak``
  (``extra``: the delay in ns, 0 for none), ``progress`` (+WPI), ``term``
  (``extra``: the reason), ``expired`` (the ack wait ran out: queued for
  redelivery), ``max_deliveries``, ``putback`` (taken and not delivered),
  ``floor`` (the floor moved by itself: messages gone from the stream),
  ``purge``, ``reset``, ``create``, ``restore``, ``update``, ``pause``,
  ``delete`` (API changes of a consumer; ``create``/``restore``: ``extra``
  is ``(created ns, stream last seq, filtered, retention, stream first seq,
  stream messages)``), ``pub`` (a
  message stored: ``seqs`` its seq; consumer ""), ``stream`` (``extra``:
  ``create``, ``modify``, ``delete``, ``purge``, or ``remove`` of the
  message in ``seqs``; consumer "");
- the consumer's counters *after* the event, as consumer info reports them:
  delivered (consumer, stream seq), ack floor (consumer, stream seq),
  num_ack_pending, num_redelivered;
- ``account``: the account the stream is in (``$G`` when no accounts are
  configured): stream names are per account, so two accounts' ORDERS are
  two histories.

Carrying the counters makes the state at any time exact without replaying
the consumer's rules: it is the last event at or before that time. The
per-sequence states (which message is out, acked, expired, terminated) come
from replaying ``seqs`` (natslab.tui.history does both).

The ring is bounded by an estimate of the memory its tuples take
(``_BASE`` bytes an event plus ``_PER_SEQ`` a sequence in ``seqs``): the
oldest go first. It is kept per stream, keyed (account, stream) (a reader of
one stream copies only its events), with the order of all for eviction. Appends happen on the
broker's loop; ``events()`` may be called from any thread (it copies a deque
in one C call, under the GIL).
"""

from __future__ import annotations

import heapq
from collections import deque
from operator import itemgetter
from time import time_ns

FIELDS = ("t", "kind", "stream", "consumer", "seqs", "dseq", "dc", "dlv_dseq", "dlv_sseq",
          "flr_dseq", "flr_sseq", "ack_pending", "redelivered", "extra", "account")
GLOBAL = "$G"  # the account when none are configured
DEFAULT_MB = 50
_BASE = 240  # a 15-slot tuple, its ints, the seqs tuple's header, the deque's slot
_PER_SEQ = 40  # a pointer in seqs and its int
_PUB = 136  # a publish: (ts, key, seq), its two ints, the deque's slot (the key is the deque's)


class Journal:
    """The ring of events (see the module docstring)."""

    def __init__(self, max_bytes: int = DEFAULT_MB * 1_000_000):
        self.max_bytes = max(int(max_bytes), _BASE)
        self.bytes = 0
        self.dropped = 0  # events that left the ring to make room
        # one deque of events per (account, stream) (a reader copies only its
        # stream's), and the keys in the order their events came: the oldest
        # event of all is the first of the first stream named here
        self._streams: dict[tuple[str, str], deque] = {}
        self._order: deque[tuple[str, str]] = deque()

    # -- recording (the broker's loop) -----------------------------------------------
    # Only the broker's loop appends and evicts; a reader copies a deque
    # (deque.copy runs in C under the GIL: it never sees half an append), so
    # recording takes no lock.
    def _of(self, key: tuple[str, str]) -> deque:
        d = self._streams[key] = deque()
        return d

    def add(self, ev: tuple) -> None:
        key = (ev[14], ev[2])
        (self._streams.get(key) or self._of(key)).append(ev)
        self._order.append(key)
        self.bytes += _BASE + _PER_SEQ * len(ev[4])
        if self.bytes > self.max_bytes:
            self._evict()

    def _evict(self) -> None:
        order, streams = self._order, self._streams
        while self.bytes > self.max_bytes and len(order) > 1:
            name = order.popleft()
            d = streams[name]
            old = d.popleft()
            if not d:
                del streams[name]
            self.bytes -= _PUB if len(old) == 3 else _BASE + _PER_SEQ * len(old[4])
            self.dropped += 1

    def consumer(self, c, kind: str, seqs: tuple = (), dseq: int = 0, dc: int = 0, extra=None) -> None:
        """An event of consumer ``c`` with its counters as they are now."""
        a = c.acks
        rd = 0 if c.config["max_deliver"] == 1 else len(a.rdc)
        stream = c.stream
        self.add((time_ns(), kind, stream.name, c.name, seqs, dseq, dc, a.dseq - 1, a.sseq - 1,
                  a.sfloor[0], a.sfloor[1], len(a.pending), rd, extra, stream.js.account))

    def incarnation(self, c, kind: str) -> None:
        """``create`` or ``restore``: where the consumer starts, and what the
        reader needs to derive num_pending (the stream's last seq, whether
        the consumer is filtered, the retention)."""
        st = c.stream.store.state()
        self.consumer(c, kind, extra=(c.created, st.last_seq, bool(c.filters),
                                      c.stream.config["retention"], st.first_seq, st.messages))

    def published(self, key: tuple[str, str], seq: int, ts: int) -> None:
        """A message stored at ``ts`` (its timestamp) in the stream ``key``
        (account, stream name). Once per message, so kept short: a 3-tuple,
        made a full event when read."""
        (self._streams.get(key) or self._of(key)).append((ts, key, seq))
        self._order.append(key)
        self.bytes += _PUB
        if self.bytes > self.max_bytes:
            self._evict()

    def stream(self, key: tuple[str, str], action: str, seq: int = 0) -> None:
        """A stream (``key``: account, name) ``create``d, ``modify``d,
        ``delete``d, ``purge``d, or a message ``remove``d (``seq``; a limit, a
        delete, an expiry, an ack under interest or workqueue retention)."""
        self.add((time_ns(), "stream", key[1], "", (seq,) if seq else (), 0, 0, 0, 0, 0, 0, 0, 0, action, key[0]))

    # -- reading (any thread) -------------------------------------------------------------
    def events(self, since: int | None = None, until: int | None = None,
               stream: str | None = None, consumer: str | None = None,
               account: str | None = GLOBAL) -> list[tuple]:
        """The events with ``since <= t <= until`` (ns, None: open), oldest
        first; ``stream``: of that stream only (its ``pub`` and ``stream``
        events included); ``consumer``: of that consumer only, and of its
        stream's ``pub`` and ``stream`` events; ``account``: of that
        account's streams (None: of every account)."""
        if stream is not None and account is not None:
            d = self._streams.get((account, stream))
            evs = d.copy() if d is not None else ()
        else:
            evs = list(heapq.merge(*(d.copy() for key, d in list(self._streams.items())
                                     if (account is None or key[0] == account)
                                     and (stream is None or key[1] == stream)), key=itemgetter(0)))
        if since is not None:
            evs = [e for e in evs if e[0] >= since]
        if until is not None:
            evs = [e for e in evs if e[0] <= until]
        evs = [e if len(e) > 3 else (e[0], "pub", e[1][1], "", (e[2],), 0, 0, 0, 0, 0, 0, 0, 0, None, e[1][0])
               for e in evs]
        if consumer is not None:
            evs = [e for e in evs if e[3] == consumer or e[3] == ""]
        return evs

    def __len__(self) -> int:
        return len(self._order)
