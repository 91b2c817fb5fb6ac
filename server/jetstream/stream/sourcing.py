"""Mirrors and sources: a stream that copies messages from other streams of
this server.

A ``Link`` is one mirror or one source of a stream (nats-server's
sourceInfo). nats-server feeds each through an internal push consumer on
the origin; here the origin is in the same process, so a link reads the
origin's store directly from the last origin sequence it copied (``sseq``),
woken when the origin stores a message (``Stream.followers``) and by a one
second tick (nats-server's source heartbeat, which keeps ``active`` fresh).
Copying runs from the event loop in bounded runs, so a large catch-up does
not hold up clients.

A mirror keeps the origin's sequence numbers and timestamps (gaps where the
origin has none, or where its filter skips), no dedupe, and the origin's
headers less ``Nats-Expected-*``. A source appends with the stream's own
sequence, de-duplicates by ``Nats-Msg-Id`` within the stream's window and
adds ``Nats-Stream-Source: <origin> <origin seq> <filters> <destinations>
<subject> <origin identity>``; where a source picks up after a restart is
read back from those headers, as nats-server's startingSequenceForSources
does."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ... import transform
from .. import errors, headers
from ..errors import ApiError
from ..shapes import now_ns, parse_rfc3339, rfc3339
from ...subjects import subject_matches
from .topoconfig import get_hash, source_iname

if TYPE_CHECKING:
    from ..jetstream import JetStream
    from .stream import Stream

log = logging.getLogger("natslab.jetstream")

RUN = 512  # messages copied per turn of the event loop
TICK = 1.0  # seconds: nats-server's source heartbeat
SOURCE_HDR = "Nats-Stream-Source"


def identity(created_ns: int) -> str:
    """nats-server's stream identity: getHash of the creation time in
    RFC 3339 (8 base-62 characters of its sha256)."""
    return get_hash(rfc3339(created_ns))


def strip_prefixed(hdr: bytes | None, *prefixes: bytes) -> bytes | None:
    """The header block without the headers whose names start with one of
    ``prefixes``; None when no header is left."""
    if not hdr or not any(p in hdr for p in prefixes):
        return hdr
    lines = hdr.split(b"\r\n")
    kept = [ln for ln in lines[1:] if ln and not ln.startswith(prefixes)]
    if not kept:
        return None
    return lines[0] + b"\r\n" + b"\r\n".join(kept) + b"\r\n\r\n"


class Link:
    """One mirror or one source of ``target``."""

    def __init__(self, target: "Stream", cfg: dict, mirror: bool):
        self.target = target
        self.cfg = cfg
        self.mirror = mirror
        self.name = cfg["name"]
        self.iname = source_iname(cfg)
        self._hdr_name, self._hdr_filters, self._hdr_dests = self.iname.split(" ", 2)
        # a source through a durable consumer of the origin (nats-server
        # 2.14+): it copies what that consumer delivers to its deliver
        # subject, and only from one acked by flow control (ack_policy
        # flow_control); while the consumer is missing or acks otherwise it
        # waits, with no error shown, as nats-server's does
        self.durable = cfg.get("consumer") is not None
        self.cname = (cfg.get("consumer") or {}).get("name") or ""
        self._consumer = None  # the origin's consumer it copies through
        self._sub = None  # on that consumer's deliver subject
        self._inbox: list = []  # deliveries taken off the subscription, stored from the loop
        self.dseq = 0  # the consumer sequence of the last message stored
        trs = cfg.get("subject_transforms") or []
        if trs:
            self.filters = [t.get("src") or ">" for t in trs]
            self.trs = [transform.new(t.get("src") or ">", t.get("dest") or "") for t in trs]
        else:
            flt = cfg.get("filter_subject") or ""
            self.filters = [flt] if flt and flt != ">" else []
            self.trs = []
        if ">" in self.filters:
            self.filters = []
        self.sseq = 0  # the last origin sequence copied (or passed over)
        self.lag = 0
        self.last = 0  # when the origin was last heard from (ns), 0: never
        self.err: ApiError | None = None
        self.origin: "Stream | None" = None
        self.ident = ""
        self._scheduled = False
        self._blocked = False  # the target refused a message: retried on the tick
        self._timer = None
        self.closed = False

    # -- lifecycle -------------------------------------------------------------
    def start(self, sseq: int) -> None:
        self.sseq = sseq
        self._attach()
        self._arm_tick()

    def stop(self) -> None:
        self.closed = True
        self._detach()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _attach(self) -> None:
        if self.durable:
            self._attach_durable()
            return
        origin = self.target.js.streams.get(self.name)
        if origin is None or origin is self.target:
            self.err = errors.stream_not_found()
            return
        self.origin = origin
        self.err = None
        origin.js.messaging.internal_clients(2)  # (nats-server makes a consumer on the origin for it)
        ident = identity(origin.created)
        if self.ident and ident != self.ident and not self.mirror:
            self.sseq = 0  # the origin was deleted and made anew: its sequences start over
        self.ident = ident
        if self not in origin.followers:
            origin.followers.append(self)
        if not self.sseq:
            self.sseq = self._start_seq()
        self.origin_stored()

    def _detach(self) -> None:
        if self.durable:
            self._detach_durable()
            return
        origin = self.origin
        self.origin = None
        if origin is not None and self in origin.followers:
            origin.followers.remove(self)
            if not origin.closed:
                origin.check_interest_all()  # what only this link held goes

    def wants(self, subject: str) -> bool:
        """Does this link copy ``subject`` (its filters)?"""
        return not self.filters or any(subject_matches(f, subject) for f in self.filters)

    def origin_gone(self) -> None:
        self._detach()
        self.err = errors.stream_not_found()

    def origin_back(self) -> None:
        if self.origin is None and not self.closed:
            self._attach()

    def _start_seq(self) -> int:
        """Where copying starts when nothing was copied yet: the configured
        start sequence or time, else the origin's beginning."""
        opt = self.cfg.get("opt_start_seq") or 0
        if opt:
            return opt - 1
        t = self.cfg.get("opt_start_time")
        if t:
            try:
                ns = parse_rfc3339(t)
            except ValueError:
                return 0
            return max(self.origin.store.seq_for_time(ns) - 1, 0)
        return 0

    def _arm_tick(self) -> None:
        loop = self.target.js.messaging.loop
        if loop is not None and not self.closed:
            self._timer = loop.call_later(TICK, self._on_tick)

    def _on_tick(self) -> None:
        self._timer = None
        if self.closed:
            return
        if self.origin is None:
            self.origin_back()
        elif self.origin.closed:
            self.origin_gone()
        elif self.durable:
            if self._consumer is None or self._consumer.closed:
                self._detach_durable()  # (its consumer went: wait for one again)
        else:
            self.last = now_ns()  # the heartbeat
            if self._blocked:
                self._blocked = False
                self.origin_stored()
        self._arm_tick()

    # -- copying ---------------------------------------------------------------
    def origin_stored(self) -> None:
        """The origin stored a message (or there may be some to catch up on)."""
        if self._scheduled or self.closed or self._blocked:
            return
        loop = self.target.js.messaging.loop
        self._scheduled = True
        if loop is None:
            self._pump()
        else:
            loop.call_soon(self._pump)

    def _next(self, after: int):
        store = self.origin.store
        if not self.filters:
            return store.load_next(after + 1)
        best = None
        for f in self.filters:
            sm = store.load_next(after + 1, f)
            if sm is not None and (best is None or sm.seq < best.seq):
                best = sm
        return best

    def _pending(self) -> int:
        store = self.origin.store
        if not self.filters:
            return store.num_pending(self.sseq + 1)
        return sum(store.num_pending(self.sseq + 1, f) for f in self.filters)

    def _pump(self) -> None:
        self._scheduled = False
        origin, target = self.origin, self.target
        if origin is None or self.closed or target.closed or origin.closed:
            return
        try:
            for _ in range(RUN):
                sm = self._next(self.sseq)
                if sm is None:
                    break
                self.last = now_ns()
                if not self._copy(sm):
                    self._blocked = True
                    break
                self.sseq = sm.seq
            else:
                self.origin_stored()  # more to do: next turn
        except Exception:
            log.exception("stream %s: copying from %s failed", target.name, self.name)

    def _subject(self, subject: str) -> str:
        for tr in self.trs:
            if tr is not None:
                out = tr.match(subject)
                if out is not None:
                    return out
        return subject

    def _copy(self, sm) -> bool:
        from .stream import MIRRORED, SOURCED

        target = self.target
        subject = self._subject(sm.subject)
        if self.mirror:
            hdr = strip_prefixed(sm.hdr, b"Nats-Expected-")
            if not self._position(sm.seq):
                return True  # the mirror has it already
            kind, ts = MIRRORED, sm.ts
        else:
            hdr = strip_prefixed(sm.hdr, b"Nats-Stream-Source:", b"Nats-Expected-", b"Nats-Batch-")
            value = f"{self._hdr_name} {sm.seq} {self._hdr_filters} {self._hdr_dests} {sm.subject} {self.ident}"
            hdr = headers.append(hdr, [(SOURCE_HDR, value)])
            kind, ts = SOURCED, 0
        try:
            target.process_msg(subject, b"", hdr, sm.data, sourced=kind, ts=ts)
        except ApiError as e:
            # nats-server logs it and tries that message again later
            # (a full discard-new stream, a message too big for it)
            log.warning("stream %s: can not store message %d from %s: %s", target.name, sm.seq, self.name,
                        e.description)
            return False
        return True

    def _position(self, seq: int) -> bool:
        """Make the mirror's next sequence ``seq`` (gaps where the origin has
        none); False if it is already past it."""
        if seq <= self.target.store.state().last_seq:
            return False
        skip_to(self.target.store, seq)
        return True

    # -- through a durable consumer (a source's or a mirror's) ----------------------
    def _attach_durable(self) -> None:
        """Take the origin's consumer if it is there and acks by flow control:
        subscribe to its deliver subject and reset it to its ack floor (the
        CONSUMER.RESET nats-server sends), so what was not acked comes again."""
        origin = self.target.js.streams.get(self.name)
        if origin is None or origin is self.target or origin.closed:
            return
        c = origin.consumers.get(self.cname)
        if c is None or c.closed or c.config["ack_policy"] != "flow_control" or not c.config.get("deliver_subject"):
            return
        ident = identity(origin.created)
        if self.ident and ident != self.ident:
            self.sseq = 0  # the origin was deleted and made anew: its sequences start over
        self.origin, self._consumer, self.ident, self.err = origin, c, ident, None
        self.dseq = 0
        self._sub = self.target.js.messaging.subscribe(c.config["deliver_subject"], self._on_delivery)
        self.last = now_ns()
        c.delivery.source = self  # (an internal subscription is no interest of its own)
        c.delivery.update_push_subject()
        c.reset(0)

    def _detach_durable(self) -> None:
        if self._sub is not None:
            self.target.js.messaging.unsubscribe(self._sub)
            c = self._consumer
            if c is not None and c.delivery.source is self:
                c.delivery.source = None
                if not c.closed:
                    c.delivery.update_push_subject()
        self._sub = self._consumer = self.origin = None
        self._inbox.clear()

    def _on_delivery(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        # (called while the consumer's delivery is routed: stored from the loop)
        self._inbox.append((subject, reply, hdr, payload))
        if len(self._inbox) == 1:
            loop = self.target.js.messaging.loop
            if loop is None:
                self._drain()
            else:
                loop.call_soon(self._drain)

    def _drain(self) -> None:
        inbox, self._inbox = self._inbox, []
        messaging = self.target.js.messaging
        for subject, reply, hdr, payload in inbox:
            if self._sub is None or self.closed or self.target.closed:
                return
            self.last = now_ns()
            if hdr and hdr.startswith(b"NATS/1.0 100"):
                if reply:  # a flow control request: the reply acks what was stored
                    messaging.publish(reply, "", b"NATS/1.0\r\nNats-Last-Consumer: %d\r\nNats-Last-Stream: %d\r\n\r\n"
                                         % (self.dseq, self.sseq), b"")
                continue
            # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>
            t = reply.split(".")
            if len(t) != 9 or not all(x.isdigit() for x in t[4:]):
                continue
            sseq, dseq, pending = int(t[5]), int(t[6]), int(t[8])
            if sseq <= self.sseq:
                self.dseq = dseq  # (had it already: delivered again after a reset)
                continue
            # (a mirror keeps the origin's timestamp, which the ack subject carries)
            if not self._copy(_Delivered(subject, sseq, hdr, payload, int(t[7]))):
                # not stored: start over from the consumer's ack floor later
                self._detach_durable()
                return
            self.sseq, self.dseq, self.lag = sseq, dseq, pending

    # -- info ------------------------------------------------------------------
    def info(self) -> dict:
        """StreamSourceInfo."""
        if self.last and self.origin is not None and not self.origin.closed and not self.durable:
            # what is left to copy, as nats-server reads it off its consumer's
            # num_pending (counted here when asked, not per message)
            pending = self._pending()
            self.lag = pending - 1 if pending > 0 else 0
        d = {"name": self.name, "lag": self.lag}
        if not self.mirror and self.sseq:
            d["seq"] = self.sseq  # the highest origin sequence sourced
        d["active"] = now_ns() - self.last if self.last else -1
        if self.err is not None:
            d["error"] = self.err.to_dict()
        if self.cfg.get("filter_subject"):
            d["filter_subject"] = self.cfg["filter_subject"]
        if self.cfg.get("subject_transforms"):
            d["subject_transforms"] = [dict(t) for t in self.cfg["subject_transforms"]]
        return d


class _Delivered:
    """A message as a durable source's consumer delivered it (what _copy reads)."""

    __slots__ = ("subject", "seq", "hdr", "data", "ts")

    def __init__(self, subject: str, seq: int, hdr, data: bytes, ts: int):
        self.subject, self.seq, self.hdr, self.data, self.ts = subject, seq, hdr, data, ts


def skip_to(store, seq: int) -> None:
    """Make ``seq`` the store's next sequence, leaving what lies between as
    deleted (a mirror's gaps, a restored stream's): the floor moves when the
    store holds nothing, else the gaps are made one by one."""
    st = store.state()
    if seq <= st.last_seq + 1:
        return
    if not st.messages:
        store.compact(seq)
        return
    for _ in range(seq - st.last_seq - 1):
        store.remove(store.store_msg("_gap", None, b"", 0))


class Links:
    """A stream's mirror or sources, kept in step with its config."""

    def __init__(self, stream: "Stream"):
        self.stream = stream
        self.mirror: Link | None = None
        self.sources: dict[str, Link] = {}

    def start(self) -> None:
        cfg = self.stream.config
        if cfg.get("mirror") is not None:
            self.mirror = Link(self.stream, cfg["mirror"], True)
            self.mirror.start(self.stream.store.state().last_seq)
        found = self._source_positions([source_iname(s) for s in cfg.get("sources") or []])
        for s in cfg.get("sources") or []:
            link = Link(self.stream, s, False)
            self.sources[link.iname] = link
            link.start(found.get(link.iname, 0))

    def update(self) -> None:
        cfg = self.stream.config
        if cfg.get("mirror") is None and self.mirror is not None:
            self.mirror.stop()  # promoted: a stream of its own from now on
            self.mirror = None
        wanted = {source_iname(s): s for s in cfg.get("sources") or []}
        for iname in [i for i in self.sources if i not in wanted]:
            self.sources.pop(iname).stop()
        new = [i for i in wanted if i not in self.sources]
        found = self._source_positions(new) if new else {}
        for iname in new:
            link = Link(self.stream, wanted[iname], False)
            self.sources[iname] = link
            link.start(found.get(iname, 0))
        for iname, link in self.sources.items():
            link.cfg = wanted[iname]

    def stop(self) -> None:
        if self.mirror is not None:
            self.mirror.stop()
        for link in self.sources.values():
            link.stop()

    def info(self) -> dict:
        """The ``mirror`` / ``sources`` of a StreamInfo."""
        if self.mirror is not None:
            return {"mirror": self.mirror.info()}
        if self.sources:
            return {"sources": [link.info() for link in self.sources.values()]}
        return {}

    def all(self) -> list[Link]:
        return ([self.mirror] if self.mirror else []) + list(self.sources.values())

    def _source_positions(self, inames: list[str]) -> dict[str, int]:
        """The origin sequence each source got to, read back from the
        Nats-Stream-Source headers of the stream's newest messages."""
        out: dict[str, int] = {}
        todo = set(inames)
        store = self.stream.store
        st = store.state()
        seq = st.last_seq
        while todo and seq >= st.first_seq and st.messages:
            sm = store.load(seq)
            seq -= 1
            if sm is None or not sm.hdr or b"Nats-Stream-Source" not in sm.hdr:
                continue
            fields = headers.value(sm.hdr, b"Nats-Stream-Source").split(" ")
            if len(fields) < 4:
                continue
            iname = " ".join((fields[0], fields[2], fields[3]))
            if iname in todo and fields[1].isdigit():
                out[iname] = int(fields[1])
                todo.discard(iname)
        return out


# -- the account's view: streams come and go --------------------------------------

def stream_started(js: "JetStream", st: "Stream") -> None:
    """A stream was created or restored: start its links, and let the links
    waiting for it as their origin attach."""
    if st.config.get("mirror") is not None or st.config.get("sources"):
        st.links = Links(st)
        st.links.start()
    for other in js.streams.values():
        if other is not st and other.links is not None:
            for link in other.links.all():
                if link.name == st.name:
                    link.origin_back()


def stream_updated(st: "Stream") -> None:
    if st.links is None and (st.config.get("mirror") is not None or st.config.get("sources")):
        st.links = Links(st)
        st.links.start()
    elif st.links is not None:
        st.links.update()


def stream_stopped(st: "Stream") -> None:
    if st.links is not None:
        st.links.stop()
    for link in list(st.followers):
        link.origin_gone()


def mirror_for_direct(js: "JetStream", name: str) -> "Stream | None":
    """A mirror with mirror_direct that answers direct gets for ``name``."""
    for st in js.streams.values():
        m = st.config.get("mirror")
        if m is not None and m.get("name") == name and st.config.get("mirror_direct"):
            return st
    return None

