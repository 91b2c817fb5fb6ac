"""``$JS.API.>`` dispatch: one handler per API subject, JSON in and out in the
real server's shapes (``shapes.py``), errors from ``errors.py``.

As on the real server: a request without a reply is ignored; an unknown
subject or a wrong token count gets no answer at all; every answered request
counts in ``api.total`` and every error answer in ``api.errors``;
``CONSUMER.MSG.NEXT`` and ``DIRECT.GET`` are not API calls (they are answered
by the consumer / stream) and get the no-responders status when nothing
serves them, if the requester's CONNECT asked for no_responders. Request
bodies are read the three ways the real server reads them (see ``_Req``).

What only some requests need is imported by the first of them (consumers,
snapshots, mirrors, MSG.GET's fields): a server starts with the dispatcher
and the request shapes, not with every subsystem (jetstream.py)."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Callable

from .. import advisories, errors, fields, gojson, headers
from ..errors import ApiError
from ..gojson import GoJSONError
from ..jetstream import DIRECT_GET_PREFIX, direct_get_key
from ..shapes import API_LEVEL, ZERO_TIME, api_response, now_ns, parse_rfc3339, rfc3339, with_dynamic_metadata
from ...subjects import subjects_overlap

if TYPE_CHECKING:
    from ..jetstream import JetStream
    from ..stream.stream import Stream

log = logging.getLogger("natslab.jetstream")

PREFIX = "$JS.API."
NAMES_LIMIT = 1024
LIST_LIMIT = 256
SUBJECT_DETAILS_LIMIT = 100_000  # nats-server's JSMaxSubjectDetails: subjects a STREAM.INFO page holds

# the API calls that change nothing (their answers wait for no fsync)
READ_ONLY = frozenset({"INFO", "STREAM.INFO", "STREAM.NAMES", "STREAM.LIST", "STREAM.MSG.GET",
                       "CONSUMER.INFO", "CONSUMER.NAMES", "CONSUMER.LIST"})


class _Req:
    __slots__ = ("subject", "tokens", "reply", "hdr", "payload", "lenient")

    def __init__(self, subject, tokens, reply, hdr, payload, lenient=False):
        self.subject, self.tokens, self.reply, self.hdr, self.payload = subject, tokens, reply, hdr, payload
        self.lenient = lenient  # jetstream { strict: false }

    # The real server reads request bodies in three ways (by handler):
    def decode(self, struct: gojson.Struct) -> dict:
        """The API's strict decoder (s.unmarshalRequest: a json.Decoder with
        unknown fields disallowed) into the Go request struct; an empty body
        is an empty request. ApiError 10025 with Go's message if it fails."""
        try:
            return gojson.unmarshal_request(self.payload, struct)
        except GoJSONError as e:
            if not self.lenient:
                raise errors.invalid_json(str(e)) from None
        # jetstream { strict: false }: what the strict decoder refused is read
        # again with json.Unmarshal (unknown fields ignored), as nats-server does
        try:
            return gojson.unmarshal_request(self.payload, struct, strict=False, stream=False)
        except GoJSONError as e:
            raise errors.invalid_json(str(e)) from None

    def optional_decode(self, struct: gojson.Struct) -> dict:
        """Decoded only when the body looks like a JSON object or array (the
        real server's isJSONObjectOrArray); anything else is ignored."""
        if self.payload.lstrip(b" \t\r\n")[:1] not in (b"{", b"["):
            return {}
        return self.decode(struct)

    def is_empty(self) -> bool:
        """The real server's isEmptyRequest: no body, or an empty JSON object."""
        if not self.payload:
            return True
        if b'"' in self.payload:
            return False  # a key, or a string: not an empty object (saves a decode per MSG.GET)
        try:
            v = json.loads(self.payload)
        except ValueError:
            return False
        return isinstance(v, dict) and not v

    def require_empty(self) -> None:
        if not self.is_empty():
            raise errors.not_empty_request()


class Api:
    def __init__(self, js: "JetStream"):
        self.js = js
        self.messaging = js.messaging
        self.lenient = not js.messaging.options.js_strict  # jetstream { strict: false }
        # (first tokens, exact token count or -min) -> (handler, response type)
        self.routes: dict[str, tuple[Callable, str, int]] = {
            "INFO": (self.account_info, "account_info_response", 0),
            "STREAM.CREATE": (self.stream_create, "stream_create_response", 1),
            "STREAM.UPDATE": (self.stream_update, "stream_update_response", 1),
            "STREAM.DELETE": (self.stream_delete, "stream_delete_response", 1),
            "STREAM.INFO": (self.stream_info, "stream_info_response", 1),
            "STREAM.PURGE": (self.stream_purge, "stream_purge_response", 1),
            "STREAM.NAMES": (self.stream_names, "stream_names_response", 0),
            "STREAM.LIST": (self.stream_list, "stream_list_response", 0),
            "STREAM.MSG.GET": (self.msg_get, "stream_msg_get_response", 1),
            "STREAM.MSG.DELETE": (self.msg_delete, "stream_msg_delete_response", 1),
            "CONSUMER.CREATE": (self.consumer_create, "consumer_create_response", -1),
            "CONSUMER.DURABLE.CREATE": (self.consumer_durable_create, "consumer_create_response", 2),
            "CONSUMER.INFO": (self.consumer_info, "consumer_info_response", 2),
            "CONSUMER.DELETE": (self.consumer_delete, "consumer_delete_response", 2),
            "CONSUMER.NAMES": (self.consumer_names, "consumer_names_response", 1),
            "CONSUMER.LIST": (self.consumer_list, "consumer_list_response", 1),
            "CONSUMER.PAUSE": (self.consumer_pause, "consumer_pause_response", 2),
            "CONSUMER.RESET": (self.consumer_reset, "consumer_reset_response", 2),
            "CONSUMER.UNPIN": (self.consumer_unpin, "consumer_unpin_response", 2),
        }
        self._decode_first = {self.consumer_create, self.consumer_durable_create, self.consumer_pause}
        # error answers carry these extra keys, as the Go response structs do
        self.error_extras = {
            "stream_info_response": {"total": 0, "offset": 0, "limit": 0},
            "stream_purge_response": {"purged": 0},
            "consumer_reset_response": {"reset_seq": 0},
            "stream_names_response": {"total": 0, "offset": 0, "limit": 0, "streams": None},
            "stream_list_response": {"total": 0, "offset": 0, "limit": 0, "streams": []},
            "consumer_names_response": {"total": 0, "offset": 0, "limit": 0, "consumers": []},
            "consumer_list_response": {"total": 0, "offset": 0, "limit": 0, "consumers": []},
        }
        # STREAM.SNAPSHOT / STREAM.RESTORE (api/snapshot.py)
        self.routes["STREAM.SNAPSHOT"] = (self.stream_snapshot, "stream_snapshot_response", 1)
        self.routes["STREAM.RESTORE"] = (self.stream_restore, "stream_restore_response", 1)
        self.error_extras["stream_restore_response"] = {"deliver_subject": ""}

    # -- dispatch ---------------------------------------------------------------
    def on_request(self, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        """The ``$JS.API.>`` subscription (raw: subject and reply as bytes)."""
        if not reply:
            return
        try:
            if not payload and hdr is None:
                key = direct_get_key(subject, reply, payload)
                if key is not None:
                    # a get of a subject's newest message, as nats.go, the nats
                    # CLI and nats-py send KV gets: a run of one
                    self.on_direct_gets(key, [(subject, reply, payload)])
                    return
            self._request(subject, reply, hdr, payload)
        except Exception:
            log.exception("JetStream API request on %r failed", subject)

    def _request(self, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        try:
            # (a name that is not UTF-8 names no stream or consumer, as on nats-server)
            self._dispatch(subject.decode("utf-8", "surrogateescape"), reply.decode(), hdr, payload)
        except UnicodeDecodeError:
            log.warning("JetStream API request on %r: reply subject %r is not UTF-8; not answered", subject, reply)
        except Exception:
            log.exception("JetStream API request on %r failed", subject)

    def on_direct_gets(self, prefix: bytes, items: list[tuple[bytes, bytes, bytes]]) -> None:
        """A run of body-less ``DIRECT.GET.<stream>.<subject>`` requests for
        one stream (``prefix``: "$JS.API.DIRECT.GET.<stream>."), as (subject,
        reply, payload): each answered as on_request answers it, in order."""
        st = self.js.streams.get(prefix[len(DIRECT_GET_PREFIX):-1].decode("utf-8", "surrogateescape"))
        if st is not None and st.config.get("allow_direct"):
            st.direct_get_run(items, len(prefix))
            return
        for subject, reply, _ in items:
            self._request(subject, reply, None, b"")

    def _no_responders(self, subject: str, reply: str) -> None:
        self.messaging.no_responders(subject.encode("utf-8", "surrogateescape"), reply.encode())

    def _dispatch(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> None:
        if not reply:
            return
        # nats-server hands anything that merely starts with these two prefixes
        # (as bytes; the second with its dot) only to a stream's or consumer's
        # own subscription, never to its API layer: without a responder the
        # requester gets no responders
        if subject.startswith("$JS.API.DIRECT.GET"):  # first: the KV read path of nats.go and the CLI
            st = self.js.streams.get(subject[19:].split(".", 1)[0]) if subject[18:19] == "." else None
            if st is None or not st.config.get("allow_direct"):
                from ..stream import sourcing

                # a mirror with mirror_direct answers for its origin
                st = sourcing.mirror_for_direct(self.js, subject[19:].split(".", 1)[0]) if subject[18:19] == "." else None
            if st is not None:
                st.on_direct_get(subject, reply, hdr, payload)
            else:
                self._no_responders(subject, reply)
            return
        tokens = subject[len(PREFIX):].split(".")
        if subject.startswith("$JS.API.CONSUMER.MSG.NEXT."):
            if len(tokens) == 5:
                st = self.js.streams.get(tokens[3])
                c = st.consumers.get(tokens[4]) if st else None
                if c is not None:
                    c.on_pull_request(reply, payload)
                    return
            self._no_responders(subject, reply)
            return
        route = None
        for n in (3, 2, 1):
            name = ".".join(tokens[:n])
            route = self.routes.get(name)
            if route:
                args = tokens[n:]
                break
        if route is None:
            return  # silence, as on the real server
        handler, rtype, nargs = route
        if (nargs >= 0 and len(args) != nargs) or (nargs < 0 and len(args) < -nargs):
            return
        req = _Req(subject, args, reply, hdr, payload, self.lenient)
        requester = self.messaging.publisher()  # answering it publishes, which changes that
        audited = True
        try:
            # consumer create and pause decode their body first (a bad body
            # wins over a too-high Required-Api-Level); the others check first
            if handler not in self._decode_first:
                self._check_api_level(req)
            body = handler(req)
            # counted once answered (INFO does not see itself); a successful
            # MSG.GET is answered outside the API layer and not counted
            if rtype != "stream_msg_get_response":
                self.js.api_total += 1
            else:
                audited = False  # nor audited
        except (ApiError, OSError) as e:
            if isinstance(e, OSError):
                # the store could not write (a full disk): the request is
                # answered with the OS error, as a failed publish is
                log.error("JetStream API request on %s: %s", subject, e)
                e = errors.stream_store_failed(str(e))
            self.js.api_total += 1
            if e.counted:
                self.js.api_errors += 1
            body = {"error": e.to_dict()}
            body.update(self.error_extras.get(rtype, {}))
        if body is not None:
            response = api_response(rtype, body)
            # a change is answered only once it is durable (a purge, a
            # delete, the removals a consumer's deletion makes): the stream
            # the call is about commits what it owes; a call that changes
            # nothing waits for no sync
            if name not in READ_ONLY:
                self.js.commit(args[0] if args else None)
            self.messaging.publish(reply, "", None, response)
            if audited:
                advisories.api_audit(self.js, requester, subject, payload, response)

    @staticmethod
    def _check_api_level(req: _Req) -> None:
        hdr = req.hdr
        if hdr and headers.REQUIRED_API_LEVEL.encode() in hdr:
            lvl = headers.parse(hdr).get(headers.REQUIRED_API_LEVEL, "")
            if not lvl.isdigit() or int(lvl) > API_LEVEL:
                raise errors.required_api_level()

    # -- snapshots ----------------------------------------------------------------
    def stream_snapshot(self, req: _Req) -> dict:
        from . import snapshot

        return snapshot.snapshot_request(self, req)

    def stream_restore(self, req: _Req) -> dict:
        from . import snapshot

        return snapshot.restore_request(self, req)

    # -- account ----------------------------------------------------------------
    def account_info(self, req: _Req) -> dict:
        return self.js.account_info()

    # -- streams ----------------------------------------------------------------
    def _stream_info(self, st: "Stream", subjects_filter=None, deleted_details=False, cluster=True, dynamic=True) -> dict:
        cfg = with_dynamic_metadata(st.config, self.messaging.version) if dynamic else st.config
        d = {"config": _ordered_stream_config(cfg), "created": rfc3339(st.created),
             "state": st.state_json(subjects_filter, deleted_details)}
        if cluster:
            d["cluster"] = {"leader": self.messaging.server_name}
        if st.links is not None:
            d.update(st.links.info())
        d["ts"] = rfc3339(now_ns())
        return d

    def stream_create(self, req: _Req) -> dict:
        body = req.decode(fields.STREAM_CONFIG_REQUEST)
        if body.get("name", "") != req.tokens[0]:
            raise errors.stream_name_mismatch()
        if "/" in req.tokens[0] or "\\" in req.tokens[0]:
            raise errors.stream_name_path_separators()
        # checked by the API handler before the config itself
        if body.get("sealed"):
            raise errors.stream_invalid_config("stream configuration for create can not be sealed")
        if body.get("mirror_direct") and not body.get("mirror"):
            raise errors.stream_invalid_config("stream has no mirror but does have mirror direct")
        st, _ = self.js.create_stream(body)
        d = self._stream_info(st, cluster=False)
        d["did_create"] = True
        return d

    def stream_update(self, req: _Req) -> dict:
        from ..stream import config as streamconfig

        body = req.decode(fields.STREAM_CONFIG_REQUEST)
        # an update has its config checked (checkStreamCfg) before the name
        streamconfig.normalize(body)
        if body.get("name", "") != req.tokens[0]:
            raise errors.stream_name_mismatch()
        st = self.js.update_stream(body)
        advisories.stream_action(self.js, st.name, "modify")
        return self._stream_info(st, cluster=False)

    def stream_delete(self, req: _Req) -> dict:
        req.require_empty()
        self.js.delete_stream(req.tokens[0])
        advisories.stream_action(self.js, req.tokens[0], "delete")
        return {"success": True}

    def stream_info(self, req: _Req) -> dict:
        body = req.optional_decode(gojson.STREAM_INFO_REQUEST)
        st = self.js.lookup(req.tokens[0])
        sf = body.get("subjects_filter") or None
        d = {"total": 0, "offset": 0, "limit": 0}
        info = self._stream_info(st, sf, bool(body.get("deleted_details")))
        if sf and (subjects := info["state"].get("subjects")):
            # nats-server pages the subjects when asked for an offset or when
            # there are more than one page holds: sorted, SUBJECT_DETAILS_LIMIT
            # a page, the offset echoed as asked (a page past the end is empty)
            offset = max(body.get("offset") or 0, 0)
            d = {"total": len(subjects), "offset": offset, "limit": SUBJECT_DETAILS_LIMIT}
            if offset or len(subjects) > SUBJECT_DETAILS_LIMIT:
                page = sorted(subjects)[offset:offset + SUBJECT_DETAILS_LIMIT]
                if page:
                    info["state"]["subjects"] = {k: subjects[k] for k in page}
                else:
                    del info["state"]["subjects"]
        d.update(info)
        return d

    def stream_purge(self, req: _Req) -> dict:
        body = req.optional_decode(gojson.STREAM_PURGE_REQUEST)
        st = self.js.lookup(req.tokens[0])
        n = st.purge(body)
        return {"success": True, "purged": n}

    def _filtered_streams(self, body: dict) -> list["Stream"]:
        subj = body.get("subject") or ""
        out = []
        for name in sorted(self.js.streams):
            st = self.js.streams[name]
            if subj and not any(subjects_overlap(subj, s) for s in st.config["subjects"]):
                continue
            out.append(st)
        return out

    def stream_names(self, req: _Req) -> dict:
        body = req.optional_decode(gojson.STREAM_NAMES_REQUEST)
        sts = self._filtered_streams(body)
        off = max(0, int(body.get("offset") or 0))
        names = [s.name for s in sts[off:off + NAMES_LIMIT]]
        return {"total": len(sts), "offset": off, "limit": NAMES_LIMIT, "streams": names or None}

    def stream_list(self, req: _Req) -> dict:
        body = req.optional_decode(gojson.STREAM_LIST_REQUEST)
        sts = self._filtered_streams(body)
        off = max(0, int(body.get("offset") or 0))
        infos = [self._stream_info(s, cluster=False, dynamic=False) for s in sts[off:off + LIST_LIMIT]]
        return {"total": len(sts), "offset": off, "limit": LIST_LIMIT, "streams": infos}

    def msg_get(self, req: _Req) -> dict:
        from ..stream import directget

        if req.is_empty():
            raise errors.bad_request()
        try:
            r = directget.request_fields(req.decode(gojson.MSG_GET_REQUEST), strict=True)
        except GoJSONError as e:
            raise errors.invalid_json(str(e)) from None
        if r["batch"] > 0 or r["max_bytes"] > 0:
            raise errors.bad_request()
        seq, lbs, nbs, t = r["seq"], r["last_by_subj"], r["next_by_subj"], r["start_time"]
        if ((seq and lbs) or (not seq and not lbs and not nbs and t is None) or (seq and t is not None)
                or (t is not None and lbs) or (lbs and nbs)):
            raise errors.bad_request()
        st = self.js.lookup(req.tokens[0])
        store = st.store
        if t is not None:
            seq = store.seq_for_time(t)
        if seq and not nbs:
            sm = store.load(seq)
        elif nbs:
            sm = store.load_next(seq, nbs)
        else:
            sm = store.load_last(lbs)
        if sm is None:
            raise errors.no_message_found()
        return {"message": st.stored_message_json(sm, with_headers=not r["no_headers"])}

    def msg_delete(self, req: _Req) -> dict:
        if req.is_empty():
            raise errors.bad_request()
        body = req.decode(gojson.MSG_DELETE_REQUEST)
        seq = body.get("seq", 0)
        st = self.js.lookup(req.tokens[0])
        cfg = st.config
        if cfg["sealed"]:
            raise errors.stream_sealed()
        if cfg["deny_delete"]:
            raise errors.stream_msg_delete_failed("message delete not permitted")
        if not seq:
            # the real stores: the file store finds nothing below its first
            # sequence, the memory store reports the sequence
            if cfg["storage"] == "file":
                raise errors.stream_msg_delete_failed("no message found").uncounted()
            raise errors.sequence_not_found(0).uncounted()
        try:
            st.delete_msg(seq, body.get("no_erase", False))
        except ApiError as e:
            # what the store says (10043 not found, 10057 failed) nats-server
            # sends as a plain response: not in api.errors; sealed and
            # deny_delete above are
            raise e.uncounted() from None
        return {"success": True}

    # -- consumers ------------------------------------------------------------------
    def _consumer_body(self, req: _Req) -> tuple["Stream", dict, dict]:
        body = req.decode(fields.CREATE_CONSUMER_REQUEST)
        self._check_api_level(req)
        if body.get("stream_name", "") != req.tokens[0]:
            raise errors.stream_name_mismatch()
        cfg = body.get("config", {})  # none: nats-server creates a consumer with the default config
        # the real server checks the names and filters in the request before
        # it looks the stream up: a missing stream is reported when first used
        st = self.js.streams.get(req.tokens[0])
        if st is None:
            st = _MissingStream()
        return st, body, cfg

    def consumer_create(self, req: _Req) -> dict:
        from ..consumer.consumer import create_consumer

        st, body, cfg = self._consumer_body(req)
        name = req.tokens[1] if len(req.tokens) > 1 else None
        flt = ".".join(req.tokens[2:]) if len(req.tokens) > 2 else None
        c = create_consumer(st, cfg, subject_name=name, subject_filter=flt, durable_api=False,
                            action=body.get("action") or "")
        return c.info_json()

    def consumer_durable_create(self, req: _Req) -> dict:
        from ..consumer.consumer import create_consumer

        st, body, cfg = self._consumer_body(req)
        c = create_consumer(st, cfg, subject_name=req.tokens[1], subject_filter=None, durable_api=True,
                            action=body.get("action") or "")
        return c.info_json()

    def _consumer(self, req: _Req):
        st = self.js.lookup(req.tokens[0])
        c = st.consumers.get(req.tokens[1])
        if c is None:
            raise errors.consumer_not_found()
        return c

    def consumer_info(self, req: _Req) -> dict:
        req.require_empty()
        return self._consumer(req).info_json()

    def consumer_delete(self, req: _Req) -> dict:
        req.require_empty()
        self._consumer(req).delete()
        return {"success": True}

    def consumer_names(self, req: _Req) -> dict:
        body = req.optional_decode(gojson.CONSUMERS_REQUEST)
        st = self.js.lookup(req.tokens[0])
        off = max(0, int(body.get("offset") or 0))
        names = sorted(st.consumers)
        return {"total": len(names), "offset": off, "limit": NAMES_LIMIT, "consumers": names[off:off + NAMES_LIMIT]}

    def consumer_list(self, req: _Req) -> dict:
        body = req.optional_decode(gojson.CONSUMERS_REQUEST)
        st = self.js.lookup(req.tokens[0])
        off = max(0, int(body.get("offset") or 0))
        names = sorted(st.consumers)
        infos = [st.consumers[n].info_json(dynamic=False) for n in names[off:off + LIST_LIMIT]]
        return {"total": len(names), "offset": off, "limit": LIST_LIMIT, "consumers": infos}

    def consumer_pause(self, req: _Req) -> dict:
        body = req.optional_decode(gojson.CONSUMER_PAUSE_REQUEST)
        self._check_api_level(req)
        c = self._consumer(req)
        until, shown = 0, ZERO_TIME
        pu = body.get("pause_until")
        if pu:
            try:
                until = parse_rfc3339(pu)
            except ValueError:
                raise errors.bad_request() from None
            # any time but Go's zero time is kept, even one in the past
            # (nats.js resumes with the epoch); the zero time resumes
            if until or not pu.startswith("0001-01-01T00:00:00"):
                shown = "1970-01-01T00:00:00Z" if until == 0 else rfc3339(until)
        c.pause(until, None if shown == ZERO_TIME else shown)
        d = {"paused": c.is_paused(), "pause_until": shown}
        if c.is_paused():
            d["pause_remaining"] = until - now_ns()
        return d


    def consumer_unpin(self, req: _Req) -> dict:
        """Take the pin from a pinned_client consumer's group (json.Unmarshal body)."""
        self._check_api_level(req)
        try:
            body = gojson.unmarshal_request(req.payload, gojson.CONSUMER_UNPIN_REQUEST, strict=False, stream=False)
        except GoJSONError as e:
            raise errors.invalid_json(str(e)) from None
        group = body.get("group") or ""
        if not group:
            raise errors.invalid_json("consumer group not specified")
        from ..consumer import config as consumerconfig

        if not consumerconfig.valid_group_name(group):
            raise errors.consumer_invalid_group_name()
        c = self._consumer(req)
        if group not in (c.config.get("priority_groups") or ()):
            raise errors.consumer_invalid_priority_group()
        c.unpin(group, "admin")
        return {}

    def consumer_reset(self, req: _Req) -> dict:
        # json.Unmarshal, only when there is a body: unknown fields are ignored
        try:
            body = (gojson.unmarshal_request(req.payload, gojson.CONSUMER_RESET_REQUEST, strict=False, stream=False)
                    if req.payload else {})
        except GoJSONError as e:
            raise errors.invalid_json(str(e)) from None
        c = self._consumer(req)
        seq = int(body.get("seq") or 0)
        reset_seq = c.reset(seq)
        d = c.info_json()
        d["reset_seq"] = reset_seq
        return d


class _MissingStream:
    """Stands in for a stream that does not exist: any use of it is the
    stream-not-found error."""

    def __getattr__(self, name):
        raise errors.stream_not_found()


def _ordered_stream_config(cfg: dict) -> dict:
    from ..shapes import STREAM_CONFIG_FIELDS, ordered

    return ordered(cfg, STREAM_CONFIG_FIELDS)
