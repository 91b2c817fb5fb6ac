"""DIRECT.GET: a stream with ``allow_direct`` answers message reads itself,
with the raw message (its headers plus Nats-Stream, Nats-Subject,
Nats-Sequence and Nats-Time-Stamp) instead of an API JSON reply.

Two subjects, as on the real server:

- ``$JS.API.DIRECT.GET.<stream>`` with a JSON body: ``seq``,
  ``next_by_subj``, ``last_by_subj`` or ``start_time`` for one message, plus
  ``batch`` (and ``max_bytes``) for a run of messages that ends with a
  ``204 EOB`` status, or ``multi_last`` (with ``up_to_seq``/``up_to_time``)
  for the newest message of every matching subject. Batch replies add
  Nats-Num-Pending and Nats-Last-Sequence; ``no_headers`` sends payloads only.
- ``$JS.API.DIRECT.GET.<stream>.<subject>`` with an empty (or option-free
  JSON) body: the newest message on that subject; what nats.go and the nats
  CLI use for KV gets.

Errors are status replies: 408 Empty / Malformed / Bad Request, 404 Message
Not Found / No Results, 413 Too Many Results, 412 Required Api Level.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from typing import TYPE_CHECKING

from .. import gojson, headers
from ..gojson import GoJSONError
from ..shapes import API_LEVEL, parse_rfc3339, rfc3339

if TYPE_CHECKING:
    from .stream import Stream

MAX_MULTI_RESULTS = 1024  # maxAllowedResponses in the real server
_PREFIX_TOKENS = 5  # $JS.API.DIRECT.GET.<stream>

EMPTY_REQUEST = headers.status(408, "Empty Request")
MALFORMED_REQUEST = headers.status(408, "Malformed Request")
BAD_REQUEST = headers.status(408, "Bad Request")
NOT_FOUND = headers.status(404, "Message Not Found")
NO_RESULTS = headers.status(404, "No Results")
TOO_MANY = headers.status(413, "Too Many Results")
API_LEVEL_TOO_HIGH = headers.status(412, "Required Api Level")


def parse_request(body: bytes, strict: bool = False) -> dict:
    """The request as the real server's JSApiMsgGetRequest; raises
    GoJSONError (with Go's message) where its JSON decoding would fail.
    DIRECT.GET decodes leniently (unknown fields ignored), MSG.GET strictly."""
    try:
        d = json.loads(body)
    except ValueError as e:
        raise GoJSONError(str(e)) from None
    return request_fields(d, strict)


def request_fields(d, strict: bool) -> dict:
    """parse_request for a body already decoded from JSON."""
    d = gojson.decode(d, "JSApiMsgGetRequest", gojson.MSG_GET_REQUEST, strict)
    g = d.get
    return {
        "seq": g("seq") or 0,
        "last_by_subj": g("last_by_subj") or "",
        "next_by_subj": g("next_by_subj") or "",
        "batch": g("batch") or 0,
        "max_bytes": g("max_bytes") or 0,
        "start_time": parse_rfc3339(d["start_time"]) if g("start_time") is not None else None,
        "multi_last": [s or "" for s in g("multi_last") or []],
        "up_to_seq": g("up_to_seq") or 0,
        "up_to_time": parse_rfc3339(d["up_to_time"]) if g("up_to_time") is not None else None,
        "no_headers": bool(g("no_hdr")),
    }


def _api_level_too_high(hdr: bytes | None) -> bool:
    if not hdr or hdr.find(headers.REQUIRED_API_LEVEL.encode()) < 0:
        return False
    lvl = headers.parse(hdr).get(headers.REQUIRED_API_LEVEL, "")
    if not lvl:
        return False
    return not lvl.isdigit() or int(lvl) > API_LEVEL


def _conflicting(r: dict) -> bool:
    seq, lbs, nbs, st, ml = r["seq"], r["last_by_subj"], r["next_by_subj"], r["start_time"], r["multi_last"]
    return bool((seq and lbs) or (seq and st is not None) or (st is not None and lbs) or (lbs and nbs)
                or (lbs and r["batch"] > 0) or (lbs and ml) or (nbs and ml)
                or (r["up_to_seq"] and r["up_to_time"] is not None))


class DirectGet:
    """The DIRECT.GET responder of one stream."""

    def __init__(self, stream: Stream):
        self.stream = stream

    def reply(self, reply: str, hdr: bytes | None, payload: bytes = b"") -> None:
        self.stream.js.messaging.reply(reply.encode(), payload, hdr)

    def on_request(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> None:
        if not reply:
            return
        if _api_level_too_high(hdr):
            self.reply(reply, API_LEVEL_TOO_HIGH)
            return
        tokens = subject.split(".", _PREFIX_TOKENS)
        if len(tokens) > _PREFIX_TOKENS:
            self._last_by_subject(tokens[_PREFIX_TOKENS], reply, payload)
            return
        if not payload:
            self.reply(reply, EMPTY_REQUEST)
            return
        try:
            req = parse_request(payload)
        except GoJSONError:
            self.reply(reply, MALFORMED_REQUEST)
            return
        if not (req["seq"] or req["last_by_subj"] or req["next_by_subj"] or req["multi_last"]
                or req["start_time"] is not None):
            self.reply(reply, EMPTY_REQUEST)
            return
        if _conflicting(req):
            self.reply(reply, BAD_REQUEST)
            return
        if req["multi_last"]:
            self._multi_last(req, reply)
        else:
            self._get(req, reply)

    def _last_by_subject(self, key: str, reply: str, payload: bytes) -> None:
        req = {"no_headers": False}
        if payload:
            try:
                req = parse_request(payload)
            except GoJSONError:
                self.reply(reply, MALFORMED_REQUEST)
                return
            if (req["last_by_subj"] or req["next_by_subj"] or req["multi_last"] or req["seq"] or req["batch"]
                    or req["start_time"] is not None or req["up_to_seq"] or req["up_to_time"] is not None):
                self.reply(reply, BAD_REQUEST)
                return
        if not key:
            self.reply(reply, BAD_REQUEST)
            return
        self.last_by_subject(key, reply.encode(), req["no_headers"])

    def last_by_subject(self, subject: str, reply: bytes, no_headers: bool = False) -> None:
        """The newest message on ``subject`` (a filter may have wildcards), or
        404: the answer to a valid ``DIRECT.GET.<stream>.<subject>``."""
        sm = self.stream.store.load_last(subject)
        if sm is None:
            self.stream.js.messaging.reply(reply, b"", NOT_FOUND)
        else:
            self.stream.js.messaging.reply(reply, sm.data, None if no_headers else self._headers(sm))

    def last_by_subjects(self, items: list[tuple[bytes, bytes, bytes]], skip: int) -> None:
        """last_by_subject for each (request subject, reply, payload) of a run, in
        order, the message's subject taken from byte ``skip`` on."""
        headers_of = self._headers
        answers = []
        sms = self.stream.store.load_last_many([subject[skip:].decode("utf-8", "surrogateescape") for subject, _, _ in items])
        for (_, reply, _), sm in zip(items, sms):
            if sm is None:
                answers.append((reply, NOT_FOUND, b""))
            else:
                answers.append((reply, headers_of(sm), sm.data))
        self.stream.js.messaging.reply_run(answers)

    def _headers(self, sm, extra: list[tuple[str, str]] | None = None) -> bytes:
        # headers.append(sm.hdr, [...]), written out: this runs per KV read
        block = (f"Nats-Stream: {self.stream.name}\r\nNats-Subject: {sm.subject}\r\n"
                 f"Nats-Sequence: {sm.seq}\r\nNats-Time-Stamp: {rfc3339(sm.ts)}\r\n")
        if extra:
            block += "".join(f"{k}: {v}\r\n" for k, v in extra)
        return (sm.hdr[:-2] if sm.hdr else headers.HDR_LINE) + block.encode() + headers.CRLF

    def _send(self, reply: str, sm, no_headers: bool, extra: list[tuple[str, str]] | None = None) -> None:
        self.reply(reply, None if no_headers else self._headers(sm, extra), sm.data)

    def _max_bytes(self, req: dict) -> int:
        return req["max_bytes"] or self.stream.js.messaging.options.max_pending

    def _get(self, req: dict, reply: str) -> None:
        """getDirectRequest: one message, or a batch that ends in EOB."""
        store = self.stream.store
        seq = store.seq_for_time(req["start_time"]) if req["start_time"] is not None else req["seq"]
        nbs = req["next_by_subj"]
        batch = req["batch"]
        is_batch = batch != 0
        if not is_batch:
            batch = 1
        np = store.num_pending(seq, nbs or None) if is_batch else 0
        mb = self._max_bytes(req)
        sent_bytes = lseq = 0
        for i in range(batch):
            if seq > 0 and not nbs:
                sm = store.load(seq) if i == 0 and not is_batch else store.load_next(seq)
            elif nbs:
                sm = store.load_next(seq, nbs)
            else:
                sm = store.load_last(req["last_by_subj"])
            if sm is None:
                if batch > 1 and i > 0:
                    break
                self.reply(reply, NOT_FOUND)
                return
            seq = sm.seq + 1
            if is_batch:
                if np > 0:
                    np -= 1
                self._send(reply, sm, req["no_headers"], [("Nats-Num-Pending", str(np)), ("Nats-Last-Sequence", str(lseq))])
            else:
                self._send(reply, sm, req["no_headers"])
            lseq = sm.seq
            sent_bytes += len(sm.subject) + len(sm.hdr or b"") + len(sm.data)
            if sent_bytes >= mb:
                break
        if is_batch:
            self.reply(reply, headers.status(204, "EOB", [("Nats-Num-Pending", str(np)),
                                                          ("Nats-Last-Sequence", str(lseq))]))

    def _multi_last(self, req: dict, reply: str) -> None:
        """getDirectMulti: the newest message per subject matching any of the
        filters, at or below up_to_seq (or up_to_time), oldest first."""
        store = self.stream.store
        st = store.state()
        up_to = req["up_to_seq"]
        if req["up_to_time"] is not None:
            up_to = store.seq_for_time(req["up_to_time"])
            if up_to <= st.first_seq:
                self.reply(reply, NO_RESULTS)
                return
            up_to -= 1
        if not up_to:
            up_to = st.last_seq
        seqs = self._multi_last_seqs(req["multi_last"], up_to) if st.messages else []
        if seqs is None:
            self.reply(reply, TOO_MANY)
            return
        if not seqs:
            self.reply(reply, NO_RESULTS)
            return
        mb = self._max_bytes(req)
        min_seq = req["seq"]
        np = len(seqs)
        sent = sent_bytes = lseq = 0
        for seq in seqs:
            if np > 0:
                np -= 1
            if seq < min_seq:
                continue
            sm = store.load(seq)
            if sm is None:
                self.reply(reply, NOT_FOUND)
                return
            self._send(reply, sm, req["no_headers"], [("Nats-Num-Pending", str(np)), ("Nats-Last-Sequence", str(lseq))])
            lseq = sm.seq
            sent_bytes += len(sm.subject) + len(sm.hdr or b"") + len(sm.data)
            if sent_bytes >= mb:
                break
            sent += 1
            if req["batch"] > 0 and sent >= req["batch"]:
                break
        self.reply(reply, headers.status(204, "EOB", [("Nats-Num-Pending", str(np)), ("Nats-Last-Sequence", str(lseq)),
                                                      ("Nats-UpTo-Sequence", str(up_to))]))

    def _multi_last_seqs(self, filters: list[str], up_to: int) -> list[int] | None:
        """Sorted last sequences, None when more than MAX_MULTI_RESULTS."""
        store = self.stream.store
        seen: set[int] = set()
        for flt in filters:
            for subj in store.subjects_state(flt):
                last = store.last_seq_for_subject(subj)
                if last <= up_to:
                    seen.add(last)
                else:
                    seqs = store.subject_seqs(subj)
                    i = bisect_right(seqs, up_to)
                    if i:
                        seen.add(seqs[i - 1])
            if len(seen) > MAX_MULTI_RESULTS:
                return None
        return sorted(seen)
