"""One client connection: per-client state, the protocol operations, and the
outbound buffer with its slow-consumer limit.

Reading is ``parser.Parser``'s (a connection is one): everything one socket
read holds is parsed in a single pass. Every message to this client, from
the router or from a subsystem, goes through ``deliver_run`` (``deliver`` is
a run of one): framed as MSG/HMSG onto the outbound list, which is joined and
written once per read (see ``Server.flush_dirty``). Nothing outside this
module touches ``out``, ``out_size`` or ``dirty``.
"""

from __future__ import annotations

import asyncio
import json
import time

from . import protocol as p
from . import router
from .protocol import CRLF
from .parser import READ_BUFFER_SIZE, Parser
from .permissions import violation
from .subjects import valid_subject

TRACE = 5  # logging level of -V protocol traces, shown as [TRC]

# payloads shorter than this are copied into their frame (one string in the
# outbound list instead of three); longer ones are joined without the copy
_COPY_MAX = 16 * 1024

# longest a producer waits for a backed-up reader before it is read again
STALL_MAX = 0.05


class Subscription:
    __slots__ = ("client", "subject", "queue", "sid", "max", "msgs")

    def __init__(self, client, subject: bytes, queue: bytes | None, sid: bytes):
        self.client = client
        self.subject = subject
        self.queue = queue
        self.sid = sid
        self.max = 0
        self.msgs = 0


# The CONNECT fields nats-server reads (ClientOpts) and their Go types; others
# are ignored. Go's json matches the names without regard to case and leaves
# a field alone for a null.
_CONNECT_FIELDS = {
    **dict.fromkeys(("echo", "verbose", "pedantic", "tls_required", "new_account", "headers", "no_responders"), bool),
    **dict.fromkeys(("nkey", "jwt", "sig", "auth_token", "user", "pass", "name", "lang", "version", "account",
                     "remote_account"), str),
    "protocol": int,
}
_JSON_KINDS = {bool: "bool", str: "string", int: "number", float: "number", list: "array", dict: "object"}


def connect_fields(opts: dict) -> tuple[dict, str]:
    """The CONNECT options under their field names, and the error Go's json
    would give for the first field of the wrong type ('' when none is)."""
    out = {}
    for k, v in opts.items():
        name = k if k in _CONNECT_FIELDS else k.lower()
        want = _CONNECT_FIELDS.get(name)
        if want is None:
            out[k] = v
            continue
        if v is None:
            continue
        got = type(v)
        if want is int and got is int and -(1 << 63) <= v < (1 << 63):
            pass
        elif got is not want:
            kind = _JSON_KINDS.get(got, "value")
            if kind == "number" and want is int:
                kind = "number " + json.dumps(v)
            gotype = {bool: "bool", str: "string", int: "int"}[want]
            return out, f"json: cannot unmarshal {kind} into Go struct field ClientOpts.{k} of type {gotype}"
        out[name] = v
    return out, ""


def _filters(sub: Subscription, subject: bytes) -> bool:
    """Does the deny filter of ``sub``'s client keep ``subject`` from it?
    (Internal clients have none.)"""
    gate = getattr(sub.client, "gate", None)
    return gate is not None and gate.filtering and gate.denies(subject, sub.queue)


class _NoLines(dict):
    """Parser.lines for a client whose publish permissions change as it
    receives requests (allow_responses): nothing is kept."""

    def __setitem__(self, key, value) -> None:
        pass


class Client(Parser, asyncio.BufferedProtocol):
    """A NATS client connection (``kind`` "Client" in monitoring)."""

    internal = False
    # its account's subject mappings (server/mappings.py): set on the connection only when there
    # are some, so a connection of a server without mappings carries no attribute more
    mappings = None
    # a websocket client's credentials from its upgrade's cookies (jwt_cookie, ...: CONNECT field ->
    # value), set only when the websocket block names cookies and the request had them
    ws_cookies = None

    def __init__(self, server):
        self.server = server
        self.max_pending = server.opts.max_pending
        self.cid = 0
        self.transport: asyncio.Transport | None = None
        self.host = ""
        self.port = 0
        self.buf = b""  # an unfinished command: a bytearray (see Parser.data_received)
        self.arg_at = 0  # ...where its arguments start in buf (0: not yet)
        self.skip = None  # PING, PONG or +OK whose line is read to its LF (anything may follow them)
        self.backlog = None  # the rest of a read put off, and reads since (Parser._put_off)
        self.pending = None  # (subject, reply, hdr_len, total) while waiting for a payload
        self.subs: dict[bytes, Subscription] = {}
        self.lines: dict[bytes, tuple] = {}  # the control-line cache (see Parser._fast_pubs)
        self.fast_path = False  # Parser._parse: connected, not verbose or pedantic, in the global account
        self.plain_memo: tuple = (None, -1, False)  # Parser._fast_pubs: last match, index generation, _plain of it
        self.out: list[bytes] = []
        self.out_size = 0
        self.dirty = False
        self.closed = False
        # CONNECT options; before CONNECT the real server behaves as verbose
        self.connected = False
        self.verbose = True
        self.pedantic = False
        self.echo = True
        self.headers = False
        self.no_responders = False
        self.name = ""
        self.lang = ""
        self.version = ""
        self.user = ""
        self.perms = None  # Permissions of the authenticated user, if any
        # its Permissions once deliveries to it must pass them (a subscribe deny
        # filter is on, or allow_responses notes replies): Permissions.admit
        self.gate = None
        self._connect_opts: dict = {}  # every CONNECT so far, merged
        # stats
        self.start = time.time()
        self.last_activity = self.start
        self.in_msgs = self.out_msgs = self.in_bytes = self.out_bytes = 0
        self.pings_out = 0
        self.rtt = 0.0
        self._ping_sent_at = 0.0
        self._ping_timer = None
        self._auth_timer = None
        self._connect_info_due = False
        self.write_paused = False
        self.stalled: list[Client] = []  # producers waiting for this one to drain
        self.is_stalled = False
        self._stall_timer = None
        self._deadline_timer = None  # write_deadline: runs while the socket takes nothing more
        self.close_reason = ""
        self.tls_state = None  # the ssl.SSLObject once a TLS handshake is done
        self.tls_first = False  # ...and it came before INFO (handshake_first)
        self.nonce = b""  # the INFO nonce an nkey user signs
        self.ws = None  # the WebsocketListener of a websocket client (server/websocket.py)
        self.account = None  # a configured Account (server/accounts.py); None: the global account
        if server.opts.mappings is not None:
            self.mappings = server.opts.mappings

    # -- asyncio.Protocol --------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.set_write_buffer_limits(high=min(self.server.opts.max_pending // 4, 4 * 1024 * 1024))
        peer = transport.get_extra_info("peername") or ("", 0)
        self.host, self.port = peer[0], peer[1]
        srv = self.server
        self.cid = srv.register(self)
        if srv.auth.nonce_required:
            from . import nkeys  # (only with nkey users configured)

            self.nonce = nkeys.nonce().encode()
        info = p.info_line(srv.client_info(self))
        if srv.tls_context is not None and self.ws is None and not self.closed:
            from . import tls  # (imported only with TLS configured)

            tls.start(self, srv.tls_context, srv.opts.tls, info)  # tls_ready() follows the handshake
            return
        transport.write(info)
        self.tls_ready()

    def tls_ready(self) -> None:
        """The connection is ready for the protocol (after the TLS
        handshake, if any): the keepalive and authentication timers start."""
        srv = self.server
        loop = srv.loop
        self._ping_timer = loop.call_later(self._ping_interval(), self._send_ping)
        if self.must_authenticate():
            ws = self.ws
            timeout = ws.opts.auth_timeout if ws is not None and ws.opts.auth_timeout else srv.opts.auth_timeout
            self._auth_timer = loop.call_later(timeout, self._auth_timeout)

    def takes_async_info(self) -> bool:
        """Does this client take INFO updates (protocol 1, and its first PING
        answered, as nats-server requires)?"""
        return self._connect_opts.get("protocol", 0) >= 1 and not self._connect_info_due

    def connection_lost(self, exc) -> None:
        self.closed = True
        self._cancel_timers()
        self.server.unregister(self)
        self.resume_writing()

    def must_authenticate(self) -> bool:
        """Must this client authenticate? The server's auth, or for a
        websocket client the websocket block's override (nats-server's
        wsConfigAuth)."""
        srv = self.server
        return srv.auth_required or self.ws is not None and srv.auth.ws_override

    def _require_connect(self) -> bool:
        if not self.connected and self.must_authenticate():
            if self._no_auth_login():
                return True
            self.protocol_error(p.ERR_AUTH_VIOLATION)
            return False
        return True

    def _no_auth_login(self) -> bool:
        """A command before CONNECT on a server with ``no_auth_user``: as
        nats-server's parser does, the client is logged in as that user
        (when it is a user, not an nkey, and may use this connection type)
        with its account and permissions; a later CONNECT authenticates
        again with what it names."""
        srv = self.server
        auth = srv.auth
        name = auth.no_auth_user_of(self)
        if not name or name not in auth.users:
            return False
        entry = srv.check_auth({}, self)
        if not entry:
            return False
        self._logged_in(entry, {})
        self.connected = True
        return True

    def _logged_in(self, entry, opts: dict) -> None:
        """The authenticated user's name and permissions, and no more
        authentication timer."""
        # (a certificate or no_auth_user may name the user, not CONNECT)
        self.user = str(entry.get("user") or entry.get("nkey") or "") if isinstance(entry, dict) else str(opts.get("user") or "")
        self.perms = self.gate = None
        if isinstance(self.lines, _NoLines):
            self.lines = {}
        if isinstance(entry, dict) and entry.get("permissions"):
            from .permissions import Permissions

            self.perms = Permissions(entry["permissions"])
            if self.perms.responses is not None:
                # what it may publish changes with what it receives: PUB
                # lines are not cached as allowed or denied (Parser.lines)
                self.gate = self.perms
                self.lines = _NoLines()
        if self._auth_timer:
            self._auth_timer.cancel()
            self._auth_timer = None

    def _op_pub(self, args: list[bytes], with_headers: bool) -> None:
        """PUB/HPUB with its arguments (split on blanks only, as nats-server's
        processPub does: a CR is part of a token)."""
        if not self._require_connect():
            return
        size = p.parse_size
        if with_headers:
            if not self.headers:
                self.close("headers not supported")
                return
            k = len(args)
            if k == 3:
                subject, reply, hlen, total = args[0], b"", size(args[1]), size(args[2])
            elif k == 4:
                subject, reply, hlen, total = args[0], args[1], size(args[2]), size(args[3])
            else:
                hlen = total = -1
            bad = hlen < 0 or total < hlen
        else:
            hlen = 0
            k = len(args)
            if k == 2:
                subject, reply, total = args[0], b"", size(args[1])
            elif k == 3:
                subject, reply, total = args[0], args[1], size(args[2])
            else:
                total = -1
            bad = total < 0
        if bad:
            # the real server closes on a malformed PUB line without an -ERR
            # (a size is 1 to 9 digits: longer ones are malformed too)
            self.close("malformed publish")
            return
        if total > self.server.opts.max_payload:
            self.protocol_error(p.ERR_MAX_PAYLOAD)
            return
        if self.pedantic and not valid_subject(subject, wildcards=False):
            # nats-server reports it and still routes the message; a subject
            # with empty tokens matches no subscription anyway
            self.queue_out(p.ERR_INVALID_PUB_SUBJECT)
        self.pending = (subject, reply, hlen, total)

    def _op_sub(self, args: list[bytes]) -> None:
        """SUB with its arguments (split on blanks, CR and LF: splitArg)."""
        if not self._require_connect():
            return
        if len(args) == 2:
            subject, queue, sid = args[0], None, args[1]
        elif len(args) == 3:
            subject, queue, sid = args[0], args[1], args[2]
        else:
            self.close("malformed subscribe")
            return
        # in nats-server's order: permissions, then a sid in use (which
        # keeps the existing subscription, whatever this one's subject), then
        # the subject's validity (the sublist's insert)
        perms = self.perms
        if perms is not None and not perms.can_subscribe(subject, queue):
            # (nats-server's log line: subPermissionViolation)
            where = f'Subject "{subject.decode(errors="replace")}"'
            if queue:
                where += f', Queue: "{queue.decode(errors="replace")}"'
            self.server.logger.error('%s:%d - cid:%d - Subscription Violation - User "%s", %s, SID %s',
                                     self.host, self.port, self.cid, self.user, where, sid.decode(errors="replace"))
            self.queue_out(violation("Subscription", subject, queue))
            return
        max_tokens = self.server.opts.max_sub_tokens
        if max_tokens and subject.count(b".") >= max_tokens:
            name = subject.decode(errors="replace")
            self.server.logger.error('%s:%d - cid:%d - Subscription Violation Too Many Tokens - Subject "%s", SID %s',
                                     self.host, self.port, self.cid, name, sid.decode(errors="replace"))
            self.queue_out(f"-ERR 'Permissions Violation for Subscription to \"{name}\", too many tokens'\r\n".encode())
            return
        max_subs = self.server.opts.max_subs
        if max_subs > 0 and len(self.subs) >= max_subs:  # (nats-server's check, before the sid's)
            self.queue_out(p.ERR_MAX_SUBS)
            return
        if sid in self.subs:
            if self.verbose:
                self.queue_out(p.OK)
            return
        if not valid_subject(subject):
            self.queue_out(p.ERR_INVALID_SUBJECT)
            return
        if perms is not None and perms.gates_delivery:
            self.gate = perms
        sub = Subscription(self, subject, queue, sid)
        self.subs[sid] = sub
        self.server.add_sub(sub)
        if self.verbose:
            self.queue_out(p.OK)

    def _op_unsub(self, args: list[bytes]) -> None:
        """UNSUB with its arguments (split as SUB's). A count that is not a
        size (``UNSUB 1 B``) unsubscribes at once, as nats-server's does."""
        if not self._require_connect():
            return
        if len(args) not in (1, 2):
            self.close("malformed unsubscribe")  # closed without an -ERR, as nats-server does
            return
        sid = args[0]
        mx = p.parse_size(args[1]) if len(args) == 2 else 0
        sub = self.subs.get(sid)
        if sub is not None:
            if mx > 0 and sub.msgs < mx:
                sub.max = mx
                self.server.index.gen += 1  # (routing decisions kept under a generation depend on counts)
            else:
                self.remove_sub(sub)
        if self.verbose:
            self.queue_out(p.OK)

    def _op_connect(self, raw: bytes) -> None:
        try:
            opts = json.loads(raw)
            if not isinstance(opts, dict):
                raise ValueError
        except ValueError:
            self.close("Read Error")
            return
        opts, wrong = connect_fields(opts)
        if wrong:
            # nats-server's json.Unmarshal into ClientOpts fails: it logs the
            # error and closes without a word (closed state: Read Error)
            self.server.logger.error("%s:%d - cid:%d - %s", self.host, self.port, self.cid, wrong)
            self.close("Read Error")
            return
        if self.connected and self.subs:
            # a second CONNECT drops every subscription made so far, as
            # nats-server's does (clearAccountSubs: it may change the account)
            for sub in list(self.subs.values()):
                self.remove_sub(sub)
        proto = opts.get("protocol", 0)
        if not isinstance(proto, int) or proto < 0 or proto > 1:
            self.protocol_error(p.ERR_BAD_PROTOCOL)
            return
        # a later CONNECT changes only the options it names (nats-server
        # unmarshals it into the options it already has)
        opts = self._connect_opts = {**self._connect_opts, **opts}
        self.lines.clear()  # (echo and permissions are in its entries)
        self.verbose = bool(opts.get("verbose", True))
        self.pedantic = bool(opts.get("pedantic", True))
        self.echo = bool(opts.get("echo", True))
        self.headers = bool(opts.get("headers", False)) and not self.server.opts.no_header_support
        self.no_responders = bool(opts.get("no_responders", False))
        if self.no_responders and not self.headers:
            self.protocol_error(p.ERR_NO_RESPONDERS_HEADERS)
            return
        self.name = str(opts.get("name") or "")
        self.lang = str(opts.get("lang") or "")
        self.version = str(opts.get("version") or "")
        if not self.rtt:
            # like nats-server: a first estimate from INFO sent to CONNECT read
            self.rtt = max(time.time() - self.start, 1e-6)
        srv = self.server
        if self.must_authenticate():
            if self.ws_cookies:  # (what CONNECT leaves out, from the upgrade's cookies: nats-server's)
                opts = {**opts, **{f: v for f, v in self.ws_cookies.items() if not opts.get(f)}}
            entry = srv.check_auth(opts, self)
            if not entry:
                srv.logger.error("%s:%d - cid:%d - authentication error", self.host, self.port, self.cid)
                self.protocol_error(p.ERR_AUTH_VIOLATION)
                return
            if isinstance(entry, dict) and entry.get("reject"):  # e.g. an account's connection limit (resolver.py)
                self.protocol_error(entry["reject"])
                return
            self._logged_in(entry, opts)
        self._connect_info_due = not self.connected and proto >= 1
        self.connected = True
        if self.verbose:
            self.queue_out(p.OK)

    # -- outbound ------------------------------------------------------------
    def queue_out(self, data: bytes) -> None:
        self.out.append(data)
        self.out_size += len(data)
        if not self.dirty:
            self.dirty = True
            self.server.mark_dirty(self)

    def deliver(self, sub: Subscription, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        """Queue one MSG/HMSG for ``sub`` (the router's call): a run of one."""
        self.deliver_run(sub, ((subject, reply, hdr, payload),))

    def deliver_run(self, sub: Subscription, msgs, alike: tuple | None = None) -> None:
        """Queue a MSG/HMSG for ``sub`` for each (subject, reply, hdr,
        payload) of ``msgs``, in order: the one way any message reaches a
        client (core routing, internal replies, PubAcks, JetStream delivery,
        direct gets). Its batch case: with ``alike`` (subject, reply, size),
        ``msgs`` are the payloads of a run that shares those and has no
        headers (what a run of identical PUB lines brings), framed with one
        MSG line and list operations. A client
        that did not ask for headers gets the payload only; auto-unsubscribe
        stops the run at its count. The counters, the dirty mark and the
        slow-consumer check are taken once per run."""
        if self.closed:
            return
        if self.gate is not None:
            if alike is not None:
                admitted = self._admit_alike(sub, msgs, alike)
                if admitted is not True:
                    return admitted  # (None: moved to another member; False: denied)
            else:
                admitted = self.gate.admit(sub.queue, msgs)
                if admitted is not msgs:
                    moved = self._denied(sub, msgs, admitted)
                    if not admitted:
                        # nothing delivered (the router counts it for no-responders)
                        return None if moved else False
                    msgs = admitted
        sid = sub.sid
        out = self.out
        if alike is not None:
            subject, reply, n = alike
            if reply:
                line = b"MSG %b %b %b %d\r\n" % (subject, sid, reply, n)
            else:
                line = b"MSG %b %b %d\r\n" % (subject, sid, n)
        mx = sub.max
        if mx:
            left = mx - sub.msgs
            if left <= 0:
                return  # (reached by a run matched before the removal)
            if left < len(msgs):
                msgs = msgs[:left]
        k = len(msgs)
        if alike is not None:
            if k == 1:
                out += (line, msgs[0], CRLF)
            else:
                frames = [line, b"", CRLF] * k
                frames[1::3] = msgs
                out += frames
            size = k * (len(line) + n + 2)
            nbytes = k * n
            msgs = ()
        else:
            headers = self.headers
            size = nbytes = 0
            if k > 2:
                size, nbytes = self._frame_uniform(sid, msgs)
            if size:
                msgs = ()  # framed whole above
        for subject, reply, hdr, payload in msgs:
            if hdr is None or not headers:
                n = len(payload)
                if n < _COPY_MAX:
                    # a small message framed in one piece: one format, one
                    # string to join (cheaper than a line and three pieces)
                    if reply:
                        frame = b"MSG %b %b %b %d\r\n%b\r\n" % (subject, sid, reply, n, payload)
                    else:
                        frame = b"MSG %b %b %d\r\n%b\r\n" % (subject, sid, n, payload)
                    out.append(frame)
                    size += len(frame)
                    nbytes += n
                    continue
                if reply:
                    line = b"MSG %b %b %b %d\r\n" % (subject, sid, reply, n)
                else:
                    line = b"MSG %b %b %d\r\n" % (subject, sid, n)
                out += (line, payload, CRLF)
            else:
                h = len(hdr)
                n = h + len(payload)
                if n < _COPY_MAX:
                    if reply:
                        frame = b"HMSG %b %b %b %d %d\r\n%b%b\r\n" % (subject, sid, reply, h, n, hdr, payload)
                    else:
                        frame = b"HMSG %b %b %d %d\r\n%b%b\r\n" % (subject, sid, h, n, hdr, payload)
                    out.append(frame)
                    size += len(frame)
                    nbytes += n
                    continue
                if reply:
                    line = b"HMSG %b %b %b %d %d\r\n" % (subject, sid, reply, h, n)
                else:
                    line = b"HMSG %b %b %d %d\r\n" % (subject, sid, h, n)
                out += (line, hdr, payload, CRLF)
            size += len(line) + n + 2
            nbytes += n
        self.out_size += size
        self.out_msgs += k
        self.out_bytes += nbytes
        sub.msgs += k
        if not self.dirty:
            self.dirty = True
            self.server.mark_dirty(self)
        if mx and sub.msgs >= mx:
            self.remove_sub(sub)
        if self.out_size > self.max_pending:
            self.flush()

    def _admit_alike(self, sub: Subscription, payloads, alike: tuple) -> bool | None:
        """Does the deny filter let a run of payloads (deliver_run's
        ``alike``) through to ``sub``? True; or None when it went to another
        member of the queue group (nats-server tries the group's next
        member), False when denied."""
        subject, reply, _ = alike
        gate = self.gate
        if gate.filtering and gate.denies(subject, sub.queue):
            if sub.queue is not None and self._to_other_member(
                    sub, [(subject, reply, None, pl) for pl in payloads]):
                return None
            return False
        if reply and gate.responses is not None:
            gate.admit(None, ((subject, reply, None, b""),))
        return True

    def _denied(self, sub: Subscription, msgs, admitted) -> int:
        """Messages of a run the deny filter kept from ``sub``: a queue
        group's go to another member that may take them (nats-server tries
        the group's next member when one is denied). Returns how many did."""
        if sub.queue is None:
            return 0
        kept = set(map(id, admitted))
        return self._to_other_member(sub, [m for m in msgs if id(m) not in kept])

    def _to_other_member(self, sub: Subscription, msgs) -> int:
        moved = 0
        srv = self.server
        acc = self.account
        index = acc.index if acc is not None else srv.index
        pub = srv.current_publisher
        for m in msgs:
            for group in index.match(m[0])[1]:
                if sub not in group:
                    continue
                others = [s for s in group if s is not sub and not (s.client is pub and not pub.echo)
                          and not _filters(s, m[0])]
                if others:
                    other = router.pick(others)
                    other.client.deliver_run(other, (m,))
                    moved += 1
                break
        return moved

    def _frame_uniform(self, sid: bytes, msgs) -> tuple[int, int]:
        """Frame a run of deliver_run's messages that share the subject and
        the payload size, with no headers to send (what JetStream deliveries
        and PubAck runs mostly are), with list operations instead of a format
        per message: the parts that change (reply, payload) are sliced into
        a list of the constant ones. Returns (bytes queued, payload bytes),
        or (0, 0) having queued nothing when the run is not uniform."""
        first, last = msgs[0], msgs[-1]
        if first[0] != last[0] or len(first[3]) != len(last[3]):
            return 0, 0  # (PubAcks to per-request inboxes: told apart cheaply)
        subjects, replies, hdrs, payloads = zip(*msgs)
        k = len(msgs)
        subject = subjects[0]
        n = len(payloads[0])
        if (subjects.count(subject) != k or (self.headers and hdrs.count(None) != k)
                or len(set(map(len, payloads))) != 1):
            return 0, 0
        tail = b" %d\r\n" % n
        if all(replies):
            pre = b"MSG %b %b " % (subject, sid)
            frames = [pre, b"", tail, b"", CRLF] * k
            frames[1::5] = replies
            frames[3::5] = payloads
            size = k * (len(pre) + len(tail) + n + 2) + sum(map(len, replies))
        elif not any(replies):
            line = b"MSG %b %b%b" % (subject, sid, tail)
            frames = [line, b"", CRLF] * k
            frames[1::3] = payloads
            size = k * (len(line) + n + 2)
        else:
            return 0, 0
        self.out += frames
        return size, k * n

    def drop_output(self) -> None:
        """Forget what is queued (the connection is gone)."""
        self.out.clear()
        self.out_size = 0

    def flush(self) -> None:
        self.dirty = False
        if not self.out or self.closed:
            self.out.clear()
            self.out_size = 0
            return
        data = b"".join(self.out)
        self.out.clear()
        self.out_size = 0
        t = self.transport
        t.write(data)
        if self.write_paused:
            self._queued_paused += len(data)  # (write_timeout: retry asks what the socket took meanwhile)
            if t.get_write_buffer_size() > self.server.opts.max_pending:
                self.slow_consumer()
            else:
                self.server.backed_up.append(self)

    # Backpressure: asyncio calls these around the transport's high-water
    # mark. A producer whose messages land on a backed-up connection stops
    # being read for a moment (see ``stall``), so a reader that keeps up is
    # never cut; one that does not read runs into max_pending and is.
    _queued_paused = 0  # bytes written to the transport since the write deadline's timer started
    _deadline_mark = 0  # the transport's buffer then
    _deadline_state = "Detected"  # nats-server's word for a slow consumer's first deadline, then "State"

    def pause_writing(self) -> None:
        self.write_paused = True
        self._arm_write_deadline()

    def _arm_write_deadline(self) -> None:
        deadline = self.server.opts.write_deadline
        if deadline > 0 and self._deadline_timer is None:
            if self.server.opts.write_timeout_retry:
                self._deadline_mark, self._queued_paused = self.transport.get_write_buffer_size(), 0
            self._deadline_timer = self.server.loop.call_later(deadline, self._write_deadline_passed)

    def resume_writing(self) -> None:
        self.write_paused = False
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None
        stalled, self.stalled = self.stalled, []
        for producer in stalled:
            producer.unstall()

    def stall(self, on: list["Client"]) -> None:
        if self.closed or self.is_stalled:
            return
        self.is_stalled = True
        self.transport.pause_reading()
        for c in on:
            c.stalled.append(self)
        self._stall_timer = self.server.loop.call_later(STALL_MAX, self.unstall)

    def unstall(self) -> None:
        if not self.is_stalled:
            return
        self.is_stalled = False
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        if not self.closed and self.backlog is None:  # (else the put-off rest resumes reading when done)
            self.transport.resume_reading()

    def _write_deadline_passed(self) -> None:
        """The socket has taken nothing below the high-water mark for
        write_deadline: nats-server's slow consumer on a write deadline."""
        self._deadline_timer = None
        if not self.write_paused or self.closed:
            return
        srv = self.server
        if srv.opts.write_timeout_retry and \
                self._deadline_mark + self._queued_paused > self.transport.get_write_buffer_size():
            # the socket took some (nats-server's handleWriteTimeout: with "retry" only a write
            # that took nothing closes): a slow consumer, kept, and the deadline runs again
            srv.slow_consumers += 1
            srv.logger.info("%s:%d - cid:%d - Slow Consumer %s: WriteDeadline of %s exceeded",
                            self.host, self.port, self.cid, self._deadline_state, f"{srv.opts.write_deadline:g}s")
            self._deadline_state = "State"
            self._arm_write_deadline()
            return
        self.slow_consumer(deadline=True)

    def slow_consumer(self, deadline: bool = False) -> None:
        srv = self.server
        srv.slow_consumers += 1
        # what happened, in nats-server's words (a notice, as there)
        if deadline:
            srv.logger.info("%s:%d - cid:%d - Slow Consumer Detected: WriteDeadline of %s exceeded",
                            self.host, self.port, self.cid, f"{srv.opts.write_deadline:g}s")
        else:
            srv.logger.info("%s:%d - cid:%d - Slow Consumer Detected: MaxPending of %d Exceeded",
                            self.host, self.port, self.cid, srv.opts.max_pending)
        self.closed = True
        self.close_reason = "Slow Consumer (Write Deadline)" if deadline else "Slow Consumer (Pending Bytes)"
        # drop what the socket has not taken; the connection is cut
        self.transport.abort()
        srv.unregister(self)
        self.resume_writing()

    # -- lifecycle -----------------------------------------------------------
    def remove_sub(self, sub: Subscription) -> None:
        if self.subs.pop(sub.sid, None) is not None:
            self.server.remove_sub(sub)

    def protocol_error(self, msg: bytes) -> None:
        """Send an -ERR that ends the connection, then close it."""
        self.server.logger.error("%s:%d - cid:%d - %s", self.host, self.port, self.cid, msg[5:-2].decode())
        self.queue_out(msg)
        self.close(msg[6:-3].decode())

    def close(self, reason: str = "Client Closed") -> None:
        if self.closed:
            return
        self.close_reason = reason
        self.flush()
        self.closed = True
        self._cancel_timers()
        if self.transport is not None:
            self.transport.close()
        self.server.unregister(self)

    def _cancel_timers(self) -> None:
        for t in (self._ping_timer, self._auth_timer):
            if t is not None:
                t.cancel()
        self._ping_timer = self._auth_timer = None

    def _send_ping(self) -> None:
        if self.closed:
            return
        opts = self.server.opts
        if self.pings_out + 1 > opts.ping_max:
            self.server.logger.debug("%s:%d - cid:%d - Stale Client Connection - Closing", self.host, self.port, self.cid)
            self.queue_out(p.ERR_STALE)
            self.close("Stale Connection")
            self.server.flush_dirty()
            return
        self.pings_out += 1
        self._ping_sent_at = time.monotonic()
        self.queue_out(p.PING)
        self.server.flush_dirty()
        self._ping_timer = self.server.loop.call_later(self._ping_interval(), self._send_ping)

    def _ping_interval(self) -> float:
        """The server's ping_interval, or the websocket block's for a websocket client."""
        ws = self.ws
        if ws is not None and ws.opts.ping_interval > 0:
            return ws.opts.ping_interval
        return self.server.opts.ping_interval

    def _auth_timeout(self) -> None:
        if not self.connected and not self.closed:
            self.queue_out(p.ERR_AUTH_TIMEOUT)
            self.close("Authentication Timeout")
            self.server.flush_dirty()

    @property
    def pending_bytes(self) -> int:
        t = self.transport
        return (t.get_write_buffer_size() if t and not self.closed else 0) + self.out_size


class TracingClient(Client):
    """A client whose inbound protocol lines are logged, for ``-V``/``-DV``
    (a subclass, so the untraced hot path pays nothing for it)."""

    def data_received(self, data: bytes) -> None:
        log = self.server.logger
        for line in data.split(b"\r\n"):
            head = line[:6].upper()
            if head.startswith((b"PUB ", b"HPUB ", b"SUB ", b"UNSUB ", b"PING", b"PONG", b"CONNEC")):
                log.log(TRACE, '%s:%d - cid:%d - "<<- [%s]"', self.host, self.port, self.cid,
                          line[:200].decode("utf-8", "replace"))
        super().data_received(data)


def client_info(client, server_name: str) -> dict:
    """nats-server's ClientInfo for a connection, as JetStream's advisories
    and a shared service import's Nats-Request-Info carry it."""
    from .gowire import rfc3339

    info = {"start": rfc3339(int(client.start * 1e9)), "host": client.host, "id": client.cid, "acc": "$G"}
    if getattr(client, "user", ""):
        info["user"] = client.user
    if client.name:
        info["name"] = client.name
    if client.lang:
        info["lang"] = client.lang
    if client.version:
        info["ver"] = client.version
    info.update({"rtt": int((client.rtt or 0) * 1e9), "server": server_name, "kind": "Client", "client_type": "nats"})
    return info
