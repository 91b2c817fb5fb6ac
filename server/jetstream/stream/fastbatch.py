"""Fast batch publish (ADR-50 "fast ingest", ``allow_batched``, nats-server
2.14+).

The batch lives in the reply subject of each message:
``<prefix>.<id>.<flow>.<ok|fail>.<batch seq>.<op>.$FI`` with op 0 start,
1 append, 2 commit (this message is the last), 3 end of batch (not stored),
4 ping. Unlike an atomic batch every message is stored as it comes; instead
of a PubAck per message the stream sends flow-control acks
(``{"type":"ack","seq":N,"msgs":M}``: stored up to N, the next ack after M
more), gap reports (``{"type":"gap","last_seq":E,"seq":C}``) and per-message
errors (``{"type":"err","seq":N,"error":{...}}``) to the reply; the commit
gets one PubAck with ``batch`` and ``count``. With gap mode ``fail`` a gap
or an error ends the batch there (committing what was stored); with ``ok``
the batch goes on.

This follows nats-server's processJetStreamFastBatchMsg and the fastBatch
helpers in jetstream_batching.go, for a single-node stream (every message
persisted before the next is looked at)."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from .. import errors, headers
from .batch import MAX_ID_LEN, TIMEOUT, Staged, api_level_too_high, check_message
from ..errors import ApiError
from ..shapes import dumps

if TYPE_CHECKING:
    from .stream import Stream

SUFFIX = b".$FI"
OP_START, OP_APPEND, OP_COMMIT, OP_EOB, OP_PING = range(5)
MAX_INFLIGHT_PER_STREAM = 1000  # nats-server's defaults (the batch limits in the config override both)
MAX_INFLIGHT_TOTAL = 50_000
FLOW_MAX = 500  # the most messages between two flow acks, shared among a stream's fast publishers

_inflight_total: "weakref.WeakKeyDictionary[object, int]" = weakref.WeakKeyDictionary()


class Parsed:
    __slots__ = ("id", "seq", "flow", "gap_ok", "op")


def parse_reply(reply: str) -> Parsed | None:
    """getFastBatch: None when the reply is not a valid fast-batch one."""
    parts = reply[:-len(SUFFIX)].split(".")
    if len(parts) < 6:
        return None
    batch_id, flow, gap, seq, op = parts[-5:]
    p = Parsed()
    if not (op.isascii() and op.isdigit()) or not OP_START <= int(op) <= OP_PING:
        return None
    p.op = int(op)
    if not (seq.isascii() and seq.isdigit()) or not 0 < int(seq) < (1 << 64) - 1:
        return None
    p.seq = int(seq)
    if p.seq == 1 and p.op == OP_EOB:
        return None
    if (p.op == OP_START and p.seq != 1) or (p.op == OP_APPEND and p.seq <= 1):
        return None
    if gap not in ("ok", "fail"):
        return None
    p.gap_ok = gap == "ok"
    f = int(flow) if flow.isascii() and flow.isdigit() else -1  # parseInt64: digits only, -1 otherwise
    p.flow = 10 if f <= 0 else min(f, 65535)
    p.id = batch_id
    return p


class _Fast:
    __slots__ = ("lseq", "sseq", "pseq", "fseq", "ack_messages", "max_ack", "gap_ok", "commit", "timer")

    def __init__(self, gap_ok: bool, max_ack: int) -> None:
        self.lseq = self.sseq = self.pseq = self.fseq = 0
        self.ack_messages = 0
        self.max_ack = max_ack
        self.gap_ok = gap_ok
        self.commit = False
        self.timer = None


def _flow_ack(seq: int, msgs: int) -> bytes:
    return b'{"type":"ack","seq":%d,"msgs":%d}' % (seq, msgs)


class FastBatches:
    """One stream's open fast batches."""

    def __init__(self, stream: "Stream") -> None:
        self.stream = stream
        self.open: dict[str, _Fast] = {}

    def _send(self, reply: bytes, payload: bytes) -> None:
        # in order with the PubAcks, and only once what came before is written
        self.stream._reply(reply, payload, False)

    def _pub_ack(self, batch_id: str, b: _Fast) -> bytes:
        return b'%s%d,"batch":%s,"count":%d}' % (self.stream._pub_ack, b.sseq, dumps(batch_id).encode(), b.lseq)

    def on_message(self, subject: str, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        stream = self.stream
        if not stream.config.get("allow_batched"):
            raise errors.batch_publish_disabled()
        p = parse_reply(reply.decode("utf-8", "replace"))
        if p is None:
            raise errors.batch_publish_invalid_pattern()
        if len(p.id.encode()) > MAX_ID_LEN:
            raise errors.batch_publish_invalid_id()
        can_respond = stream._ack
        opts = stream.js.messaging.options
        b = self.open.get(p.id)
        if b is None:
            if p.seq != 1:
                raise errors.batch_publish_unknown_id()
            per_stream = opts.batch_max_inflight_per_stream or MAX_INFLIGHT_PER_STREAM
            total_max = opts.batch_max_inflight_total or MAX_INFLIGHT_TOTAL
            total = _inflight_total.get(stream.js, 0)
            if len(self.open) + 1 > per_stream or total + 1 > total_max:
                raise errors.batch_publish_too_many_inflight()
            _inflight_total[stream.js] = total + 1
            b = self.open[p.id] = _Fast(p.gap_ok, p.flow)
            b.ack_messages = min(FLOW_MAX, b.max_ack) if len(self.open) == 1 else 1
        if hdr and headers.value(hdr, headers.REQUIRED_API_LEVEL.encode()):
            if api_level_too_high(hdr):
                self._drop(p.id)
                raise errors.required_api_level()
            hdr = headers.remove(hdr, headers.REQUIRED_API_LEVEL)
        if not b.commit:
            self._arm(p.id, b)
        if p.op == OP_PING:
            send_fc = True
            if p.seq > b.lseq:
                self._send(reply, b'{"type":"gap","last_seq":%d,"seq":%d}' % (b.lseq + 1, p.seq + 1))
                if b.gap_ok:
                    b.lseq = b.pseq = p.seq
                    send_fc = not self._check_flow(b, reply)
                else:
                    self._commit(p.id, b, reply)
                    send_fc = False
            if send_fc and can_respond:
                self._send(reply, _flow_ack(b.fseq, b.ack_messages))
            return
        if b.commit:
            return  # ending after an error: the PubAck is on its way
        b.lseq += 1
        if b.lseq != p.seq:
            if p.seq > b.lseq:
                self._send(reply, b'{"type":"gap","last_seq":%d,"seq":%d}' % (b.lseq, p.seq))
            if b.gap_ok and p.seq > b.lseq:
                b.lseq = p.seq
            else:
                b.lseq -= 1
                self._commit(p.id, b, reply)
                return
        commit = p.op in (OP_COMMIT, OP_EOB)
        if commit:
            if p.op == OP_EOB:
                b.lseq -= 1
                b.pseq = b.lseq
                self._commit(p.id, b, reply)
                return
            b.commit = True
        if p.seq == 1 and can_respond and not commit:
            self._send(reply, _flow_ack(0, b.ack_messages))
        try:
            subject, hdr, payload, msg_id, ttl, rollup = check_message(stream, Staged(), 0, subject, hdr, payload)
        except ApiError as e:
            self._refused(p, b, reply, hdr, e, commit)
            return
        b.sseq = stream.store_checked(subject, b"", hdr, payload, msg_id, ttl, False, rollup)
        b.pseq = b.lseq
        if b.commit:
            self._drop(p.id)
            if can_respond:
                self._send(reply, self._pub_ack(p.id, b))
            return
        self._check_flow(b, reply)

    def _refused(self, p: Parsed, b: _Fast, reply: bytes, hdr: bytes | None, e: ApiError, commit: bool) -> None:
        """A message of the batch failed its checks."""
        stream = self.stream
        dup = e.err_code == 10201  # a duplicate message id: skipped, not an error
        if dup:
            b.pseq = p.seq
            self._check_flow(b, reply)
            if not commit:
                return
        if not b.gap_ok and b.lseq == 1:
            # the first message: answered as a plain publish would be
            self._drop(p.id)
            if dup:
                dseq = stream._check_dup(headers.value(hdr, b"Nats-Msg-Id")) if hdr else 0
                self._send(reply, b'%s%d,"duplicate": true,"batch":%s,"count":%d}' % (
                    stream._pub_ack, dseq, dumps(p.id).encode(), p.seq))
            else:
                self._send(reply, stream._pub_error(e))
            return
        if not dup:
            self._send(reply, b'{"type":"err","seq":%d,"error":%s}' % (p.seq, dumps(e.to_dict()).encode()))
        if b.gap_ok and not commit:
            return
        if not dup:
            b.lseq -= 1
            b.pseq = b.lseq
        self._commit(p.id, b, reply)

    def _commit(self, batch_id: str, b: _Fast, reply: bytes) -> None:
        """End the batch: what was stored is committed (all of it is, here)."""
        b.commit = True
        self._drop(batch_id)
        if self.stream._ack:
            self._send(reply, self._pub_ack(batch_id, b))

    def _check_flow(self, b: _Fast, reply: bytes) -> bool:
        """A flow ack once ``ack_messages`` more are stored, with the rate
        moved toward this publisher's share of the stream's fast publishers."""
        am = b.ack_messages
        if b.pseq < b.fseq + am:
            return False
        b.fseq += (b.pseq - b.fseq) // am * am
        share = min(max(1, FLOW_MAX // max(1, len(self.open))), b.max_ack)
        if b.ack_messages < share:
            b.ack_messages = min(b.ack_messages * 2, share)
        elif b.ack_messages > share:
            b.ack_messages = max(b.ack_messages // 2, share)
        if self.stream._ack:
            self._send(reply, _flow_ack(b.fseq, b.ack_messages))
        return True

    def _arm(self, batch_id: str, b: _Fast) -> None:
        if b.timer is not None:
            b.timer.cancel()
        messaging = self.stream.js.messaging
        b.timer = messaging.loop.call_later(messaging.options.batch_timeout or TIMEOUT, self._drop, batch_id)

    def _drop(self, batch_id: str) -> None:
        b = self.open.pop(batch_id, None)
        if b is None:
            return
        if b.timer is not None:
            b.timer.cancel()
            b.timer = None
        js = self.stream.js
        _inflight_total[js] = max(0, _inflight_total.get(js, 0) - 1)

    def drop_all(self) -> None:
        for batch_id in list(self.open):
            self._drop(batch_id)
