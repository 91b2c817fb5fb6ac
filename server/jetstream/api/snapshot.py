"""Stream backup and restore: ``$JS.API.STREAM.SNAPSHOT.<stream>`` and
``$JS.API.STREAM.RESTORE.<stream>``, in nats-server 2.15's snapshot format,
so `nats stream backup` / `restore` and nats.go work and a snapshot moves
between natslab and nats-server in either direction.

The snapshot is an S2 stream (``s2.py``) of a NATSARC1 archive: the magic
bytes, then entries (uvarint name length, varint timestamp, uvarint
sequence, uvarint header size, uvarint payload size, name, payload):
``state.json`` (the StreamState, ``consumer_count`` the consumers included),
one ``consumers/<name>`` entry per consumer ({config, state} as the Go
ConsumerState), one entry per message (name: its subject), and an all-zero
entry that marks the end, so a truncated backup is told from a complete one.

SNAPSHOT answers with the config and state, then sends the archive to the
request's deliver subject in chunks, each with a reply subject
(``$JS.SNAPSHOT.ACK.<stream>.<id>.<size>.<n>``) the receiver answers to
free a window slot; the last short chunk has no reply, and a final empty
message ends it (status 204 once a full chunk went out, 408 when the
receiver stops acking or goes away). RESTORE answers with a subject to send
the chunks to (each acked with an empty message); an empty chunk ends the
upload, and the reply to that one gets the stream info, or
``restore failed: ...`` (500 / 10062) for a damaged or hostile archive, in
which case nothing of the stream is left behind."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from typing import TYPE_CHECKING

from .. import errors, fields, gojson, headers
from . import s2
from ..stream import config as streamconfig
from ..errors import ApiError
from ..shapes import (CONSUMER_CONFIG_FIELDS, STREAM_CONFIG_FIELDS, dumps, now_ns, ordered, parse_rfc3339, rfc3339,
                      with_dynamic_metadata)
from ...subjects import is_literal, valid_config_subject
from ...transform import is_valid_subject

if TYPE_CHECKING:
    from ..jetstream import JetStream
    from ..stream.stream import Stream

log = logging.getLogger("natslab.jetstream")

MAGIC = b"NATSARC1"
CHUNK_SIZE, WINDOW_SIZE = 128 * 1024, 8 * 1024 * 1024
ACK_TIMEOUT = 5.0
INTEREST_WAIT = 2.0
RESTORE_IDLE = 5.0
MAX_PAYLOAD = 1024 * 1024

SNAPSHOT_REQUEST = gojson.Struct("JSApiStreamSnapshotRequest", {
    "deliver_subject": gojson.STRING, "no_consumers": gojson.BOOL, "chunk_size": gojson.INT,
    "window_size": gojson.INT, "jsck": gojson.BOOL,
})


class ArchiveError(ValueError):
    pass


def _nuid() -> str:
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    return "".join(secrets.choice(alphabet) for _ in range(22))


# -- the NATSARC1 archive ------------------------------------------------------------

def _uvarint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _varint(v: int) -> bytes:
    return _uvarint((v << 1) ^ (v >> 63) if v >= 0 else ((-v - 1) << 1) | 1)


def _entry(name: bytes, ts: int, seq: int, hdr: bytes, payload: bytes) -> bytes:
    return b"".join((_uvarint(len(name)), _varint(ts), _uvarint(seq), _uvarint(len(hdr)), _uvarint(len(payload)),
                     name, hdr, payload))


class _Reader:
    def __init__(self, data: bytes):
        if data[:len(MAGIC)] != MAGIC:
            raise ArchiveError("archive: invalid archive stream")
        self.b, self.i = data, len(MAGIC)

    def _uv(self) -> int:
        v = shift = 0
        b = self.b
        while True:
            if self.i >= len(b) or shift > 63:
                raise ArchiveError("archive: invalid archive stream")
            c = b[self.i]
            self.i += 1
            v |= (c & 0x7F) << shift
            if c < 0x80:
                return v
            shift += 7

    def next(self) -> tuple[str, int, int, bytes, bytes]:
        """(name, timestamp, sequence, header, payload) of the next entry."""
        if self.i >= len(self.b):
            raise ArchiveError("backup was truncated")
        nlen = self._uv()
        zz = self._uv()
        ts = (zz >> 1) ^ -(zz & 1)
        seq, hsize, psize = self._uv(), self._uv(), self._uv()
        if nlen > 1 << 20 or hsize + psize > len(self.b):
            raise ArchiveError("archive: invalid archive stream")
        end = self.i + nlen + hsize + psize
        if end > len(self.b):
            raise ArchiveError("archive: invalid archive stream")
        name = self.b[self.i:self.i + nlen]
        self.i += nlen
        hdr = self.b[self.i:self.i + hsize]
        payload = self.b[self.i + hsize:end]
        self.i = end
        try:
            return name.decode(), ts, seq, hdr, payload
        except UnicodeDecodeError:
            raise ArchiveError("unexpected content") from None


def _consumer_state(c) -> dict:
    """The Go ConsumerState of a natslab consumer."""
    return c.acks.go_state()


def build_archive(st: "Stream", include_consumers: bool) -> tuple[bytes, dict]:
    """The stream's archive (before S2) and the state it was taken at."""
    state = st.state_json()
    consumers = list(st.consumers.values()) if include_consumers else []
    # the archive's state counts the consumers it holds (the answer shows the stream's)
    now = now_ns()
    parts = [MAGIC, _entry(b"state.json", now, 0, b"", dumps(dict(state, consumer_count=len(consumers))).encode())]
    last = state["last_seq"]
    for c in consumers:
        cs = _consumer_state(c)
        # bound to the snapshot, as nats-server does
        cs["delivered"]["stream_seq"] = min(cs["delivered"]["stream_seq"], last)
        cs["ack_floor"]["stream_seq"] = min(cs["ack_floor"]["stream_seq"], last)
        body = {"config": ordered(c.config, CONSUMER_CONFIG_FIELDS), "state": cs}
        parts.append(_entry(f"consumers/{c.name}".encode(), now, 0, b"", dumps(body).encode()))
    store = st.store
    seq = state["first_seq"]
    while seq and seq <= last:
        sm = store.load_next(seq)
        if sm is None or sm.seq > last:
            break
        parts.append(_entry(sm.subject.encode(), sm.ts, sm.seq, sm.hdr or b"", sm.data))
        seq = sm.seq + 1
    parts.append(_entry(b"", 0, 0, b"", b""))
    return b"".join(parts), state


# -- SNAPSHOT ------------------------------------------------------------------------

def snapshot_request(api, req) -> dict:
    """STREAM.SNAPSHOT: check the request, answer with config and state,
    and send the archive from a task."""
    if req.is_empty():
        raise errors.bad_request()
    st = api.js.lookup(req.tokens[0])
    body = req.decode(SNAPSHOT_REQUEST)
    deliver = body.get("deliver_subject") or ""
    if not deliver or not valid_config_subject(deliver) or not is_literal(deliver) or not is_valid_subject(deliver):
        raise errors.snapshot_deliver_subject_invalid()
    archive, state = build_archive(st, not body.get("no_consumers"))
    data = s2.encode(archive)
    chunk = min(max(1024, body.get("chunk_size") or CHUNK_SIZE), 1024 * 1024)
    window = max(min(max(1024, body.get("window_size") or WINDOW_SIZE), 32 * 1024 * 1024), chunk)
    sender = _SnapshotSender(api.js, st.name, deliver, data, chunk, window // chunk)
    api.messaging.loop.call_soon(sender.start)  # after the response below has gone out
    return {"config": ordered(st.config, STREAM_CONFIG_FIELDS), "state": state}


class _SnapshotSender:
    def __init__(self, js: "JetStream", stream: str, deliver: str, data: bytes, chunk: int, slots: int):
        self.js, self.stream, self.deliver, self.data = js, stream, deliver, data
        self.chunk, self.slots = chunk, slots
        self._freed = asyncio.Event()

    def start(self) -> None:
        self.js.messaging.loop.create_task(self._run())

    def _on_ack(self, subject, reply, hdr, payload) -> None:
        self.slots += 1
        self._freed.set()

    async def _run(self) -> None:
        messaging = self.js.messaging
        deadline = messaging.loop.time() + INTEREST_WAIT
        # interest in exactly the deliver subject (nats-server's sublist
        # notification): a client's request mux (_INBOX.x.*) that happens to
        # match is not the receiver, which subscribes once it has the answer
        while not messaging.has_interest(self.deliver, literal_only=True) and messaging.loop.time() < deadline:
            await asyncio.sleep(0.02)
        ack = f"$JS.SNAPSHOT.ACK.{self.stream}.{_nuid()}"
        sub = messaging.subscribe(ack + ".>", self._on_ack)
        end_hdr = None
        try:
            data, size, pos, index = self.data, self.chunk, 0, 1
            while pos < len(data):
                while self.slots <= 0:
                    self._freed.clear()
                    try:
                        await asyncio.wait_for(self._freed.wait(), ACK_TIMEOUT)
                    except asyncio.TimeoutError:
                        end_hdr = b"NATS/1.0 408 No Flow Response\r\n\r\n"
                        return
                if not messaging.has_interest(self.deliver, literal_only=True):
                    end_hdr = b"NATS/1.0 408 No Interest\r\n\r\n"
                    return
                part = data[pos:pos + size]
                pos += len(part)
                if len(part) < size:  # the last, short chunk: no ack wanted
                    messaging.publish(self.deliver, "", None, part)
                    break
                self.slots -= 1
                messaging.publish(self.deliver, f"{ack}.{len(part)}.{index}", None, part)
                end_hdr = b"NATS/1.0 204\r\n\r\n"
                index += 1
                await asyncio.sleep(0)  # let the acks and other clients in
        finally:
            messaging.unsubscribe(sub)
            messaging.publish(self.deliver, "", end_hdr, b"")


# -- RESTORE -------------------------------------------------------------------------

_U64S = gojson.Slice(gojson.UINT64, "[]uint64")
RESTORE_REQUEST = gojson.Struct("JSApiStreamRestoreRequest", {
    "config": fields.struct("StreamConfig", fields.STREAM_CONFIG),
    # read as nats-server reads it, and not needed: the archive carries the state
    "state": gojson.Struct("StreamState", {
        "messages": gojson.UINT64, "bytes": gojson.UINT64, "first_seq": gojson.UINT64, "first_ts": gojson.TIME,
        "last_seq": gojson.UINT64, "last_ts": gojson.TIME, "num_subjects": gojson.INT, "num_deleted": gojson.INT,
        "deleted": _U64S, "lost": gojson.Ptr(gojson.Struct("LostStreamData", {"msgs": _U64S, "bytes": gojson.UINT64})),
        "consumer_count": gojson.INT,
    }),
})


def restore_request(api, req) -> dict:
    if req.is_empty():
        raise errors.bad_request()
    try:
        body = gojson.unmarshal_request(req.payload, RESTORE_REQUEST)
    except gojson.GoJSONError as e:
        raise errors.invalid_json(str(e)) from None
    name = req.tokens[0]
    raw = dict(body.get("config") or {})
    if not raw.get("name"):
        raw["name"] = name
    if raw["name"] != name:
        raise errors.stream_name_mismatch()
    if "/" in name or "\\" in name:
        raise errors.stream_name_path_separators()
    streamconfig.normalize(raw)  # the config's own errors, before anything is sent
    if name in api.js.streams:
        raise errors.stream_name_exist_restore_failed()
    subject = f"$JS.SNAPSHOT.RESTORE.{name}.{_nuid()}"
    _Restore(api.js, name, raw, subject)
    return {"deliver_subject": subject}


class _Restore:
    """One upload: collects the chunks, then builds the stream."""

    def __init__(self, js: "JetStream", name: str, raw_cfg: dict, subject: str):
        self.js, self.name, self.raw = js, name, raw_cfg
        self.buf = bytearray()
        self.messaging = js.messaging
        self.sub = self.messaging.subscribe(subject, self._on_chunk)
        self._idle = None
        self._arm_idle()

    def _arm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        self._idle = self.messaging.loop.call_later(RESTORE_IDLE, self._stalled)

    def _stalled(self) -> None:
        log.warning("restore for stream '$G > %s' is stalled", self.name)
        self._end()

    def _end(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self.sub is not None:
            self.messaging.unsubscribe(self.sub)
            self.sub = None

    def _on_chunk(self, subject: str, reply: str, hdr, payload: bytes) -> None:
        if not reply:
            log.warning("restore for stream '$G > %s' requires reply subject for each chunk", self.name)
            self._end()
            return
        if payload:
            self.buf += payload
            self._arm_idle()
            self.messaging.publish(reply, "", None, b"")
            return
        self._end()
        try:
            st = self._build()
            body = {"type": "io.nats.jetstream.api.v1.stream_create_response",
                    "config": ordered(with_dynamic_metadata(st.config, self.messaging.version), STREAM_CONFIG_FIELDS),
                    "created": rfc3339(st.created), "state": st.state_json(), "ts": rfc3339(now_ns())}
        except ApiError as e:
            body = {"type": "io.nats.jetstream.api.v1.stream_create_response", "error": e.to_dict()}
        self.messaging.publish(reply, "", None, dumps(body).encode())

    def _build(self) -> "Stream":
        try:
            data = s2.decode(bytes(self.buf))
        except s2.S2Error as e:
            raise errors.stream_restore(str(e)) from None
        finally:
            self.buf = bytearray()
        try:
            r = _Reader(data)
            name, _, _, _, payload = r.next()
            if name != "state.json":
                raise ArchiveError("expected state.json first")
            try:
                state = json.loads(payload)
                n_consumers = int(state.get("consumer_count") or 0)
                first, last = int(state.get("first_seq") or 0), int(state.get("last_seq") or 0)
            except (ValueError, TypeError, AttributeError) as e:
                raise ArchiveError(f"error in state.json: {e}") from None
            consumers = []
            for _ in range(n_consumers):
                name, _, _, _, payload = r.next()
                if not name.startswith("consumers/"):
                    raise ArchiveError(f'expected consumer, found "{name}"')
                try:
                    consumers.append((name[len("consumers/"):], json.loads(payload)))
                except ValueError as e:
                    raise ArchiveError(f"failed to decode consumer state: {e}") from None
            msgs = []
            lseq = first - 1 if first else 0
            while True:
                subj, ts, seq, hdr, payload = r.next()
                if seq == 0:
                    if ts == 0 and not hdr and not payload:
                        break
                    raise ArchiveError("expected message sequence")
                if seq <= lseq:
                    raise ArchiveError(f"message sequence {seq} out of order")
                if len(hdr) + len(payload) > MAX_PAYLOAD:
                    raise ArchiveError(f"message sequence {seq} exceeds maximum payload size")
                if not valid_config_subject(subj) or not is_literal(subj):
                    raise ArchiveError(f"message sequence {seq} has an invalid subject")
                lseq = seq
                msgs.append((subj, ts, seq, hdr or None, payload))
        except ArchiveError as e:
            raise errors.stream_restore(str(e)) from None
        if self.name in self.js.streams:
            raise errors.stream_name_exist_restore_failed()
        st, _ = self.js.create_stream(self.raw)
        try:
            self._fill(st, msgs, first, max(last, lseq))
            self.js.stored_bytes[st.config["storage"]].forget()  # bytes not stored by a publish
            for cname, cs in consumers:
                self._add_consumer(st, cname, cs)
        except ApiError as e:
            self.js.delete_stream(st.name)
            raise errors.stream_restore(e.description) from None
        except (ArchiveError, KeyError, TypeError, ValueError) as e:
            self.js.delete_stream(st.name)
            raise errors.stream_restore(str(e)) from None
        return st

    def _fill(self, st: "Stream", msgs: list, first: int, last: int) -> None:
        from ..stream.sourcing import skip_to

        store = st.store
        mms = st.config["max_msg_size"]
        if first > 1:
            store.compact(first)
        now = now_ns()
        for subj, ts, seq, hdr, payload in msgs:
            if mms >= 0 and len(hdr or b"") + len(payload) > mms:
                raise ArchiveError(f"message sequence {seq} exceeds maximum message size")
            ttl = headers.value(hdr, b"Nats-TTL") if hdr else ""
            skip_to(store, seq)
            if ttl and ttl.isdigit() and ts + int(ttl) * 10**9 < now:
                skip_to(store, seq + 1)  # expired: only its sequence is kept
                continue
            store.store_msg(subj, hdr, payload, ts)
        if last:
            skip_to(store, last + 1)
        # message TTLs run from the restored messages; the dedupe window starts
        # empty, as on nats-server (a restart rebuilds it from the messages)
        st.expiry.rebuild()
        st.expiry.arm_age()

    def _add_consumer(self, st: "Stream", name: str, cs: dict) -> None:
        from ..consumer.consumer import create_consumer

        cfg, state = dict(cs["config"]), cs["state"]
        if "opt_start_time" in cfg and isinstance(cfg["opt_start_time"], str):
            parse_rfc3339(cfg["opt_start_time"])  # ValueError if it is not a time
        c = create_consumer(st, cfg, subject_name=name, subject_filter=None, durable_api=False, action="")
        d, a = state.get("delivered") or {}, state.get("ack_floor") or {}
        pending = state.get("pending") or {}
        c.load_state({
            "sseq": int(d.get("stream_seq", 0)) + 1, "dseq": int(d.get("consumer_seq", 0)) + 1,
            "ack_floor": [int(a.get("consumer_seq", 0)), int(a.get("stream_seq", 0))],
            "pending": [[int(s), int(p["Sequence"]), int(p["Timestamp"])] for s, p in pending.items()],
            "redelivered": [[int(s), int(n)] for s, n in (state.get("redelivered") or {}).items()],
        })
        c.save_state()
