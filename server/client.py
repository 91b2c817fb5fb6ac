"""One client connection: the protocol parse loop, per-client state, and the
outbound buffer with its slow-consumer limit.

``data_received`` parses everything one socket read holds in a single pass and
routes each message; deliveries to other clients are appended to their
outbound lists and written once per read (see ``Server.flush_dirty``).
"""

from __future__ import annotations

import asyncio
import json
import re
import time

from . import protocol as p
from .protocol import CRLF
from . import tls
from .permissions import violation
from .subjects import EMPTY_RESULT, valid_subject

# A PUB as clients write it: tokens between spaces (nats-py writes two before
# the size when there is no reply), no trailing blanks. Anything else (tabs,
# odd whitespace) does not match and goes to the general parser, so a match
# is always the same parse; \S is the quickest class for the regex engine.
_PUB_RE = re.compile(rb"PUB (\S+) +(?:(\S+) +)?(\d+)\r\n")
# data_received parses a read of more than _READ_SLICE bytes in slices,
# sending what each produced before the next: the first is a third of the
# read, the next ones double in size up to _READ_SLICE_MAX. A client waiting
# on a batch of requests works on the first replies while the rest are made
# (with 64 KV operations in flight through nats-py, a first third did better
# than a fixed 4 KB or 2 KB, or a half or a quarter).
_READ_SLICE = 2 * 1024
_READ_SLICE_MAX = 32 * 1024
# Sockets are read into one buffer per server (asyncio.BufferedProtocol)
# and each read copied out at its length. A plain Protocol gets a fresh
# 256 KiB bytes from every recv, which glibc maps and unmaps (three system
# calls and a page fault per read; a lone KV put paid them on every round
# trip). 256 KiB is what asyncio reads at most at a time either way.
READ_BUFFER_SIZE = 256 * 1024
_ACK_RUNS: dict[bytes, tuple] = {}  # per ack prefix: the patterns of _ack_run


def _ack_run(prefix: bytes) -> tuple:
    """Patterns for a run of plain acks (no reply, empty payload) to v1 ack
    subjects under ``prefix`` ("$JS.ACK.<stream>.<consumer>."): the whole
    run, and each subject in it."""
    r = _ACK_RUNS.get(prefix)
    if r is None:
        item = rb"PUB (%s\d{1,20}(?:\.\d{1,20}){4}) +0\r\n\r\n" % re.escape(prefix)
        if len(_ACK_RUNS) >= 1024:
            _ACK_RUNS.clear()
        r = _ACK_RUNS[prefix] = (re.compile(rb"(?:%s)+" % item.replace(b"(", b"(?:", 1)), re.compile(item))
    return r


_GET_RUNS: dict[bytes, tuple] = {}  # per direct-get prefix: the patterns of _get_run


def _get_run(prefix: bytes) -> tuple:
    """Patterns for a run of body-less direct gets under ``prefix``
    ("$JS.API.DIRECT.GET.<stream>.") as clients write them (single spaces):
    the whole run, and each (subject, reply) in it. A subject or reply token
    is at most 1024 bytes, so a line stays under the control-line limit
    (longer ones are left to the parser loop, which gives its error)."""
    r = _GET_RUNS.get(prefix)
    if r is None:
        pre = re.escape(prefix)
        whole = rb"(?:PUB %s\S{1,1024} \S{1,1024} 0\r\n\r\n)+" % pre
        item = rb"PUB (%s\S{1,1024}) (\S{1,1024}) 0\r\n\r\n" % pre
        if len(_GET_RUNS) >= 1024:
            _GET_RUNS.clear()
        r = _GET_RUNS[prefix] = (re.compile(whole), re.compile(item))
    return r


# nats-server splits arguments on spaces, tabs, CR and LF only: a vertical tab
# or form feed is part of a token (bytes.split() would split on them too)
_ARG_RE = re.compile(rb"[^ \t\r\n]+")

TRACE = 5  # logging level of -V protocol traces, shown as [TRC]
_ARG_OPS = (b"SUB", b"PUB", b"HPUB", b"UNSUB")  # operations that must have arguments

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


class Client(asyncio.BufferedProtocol):
    """A NATS client connection (``kind`` "Client" in monitoring)."""

    internal = False

    def __init__(self, server):
        self.server = server
        self.max_pending = server.opts.max_pending
        self.cid = 0
        self.transport: asyncio.Transport | None = None
        self.host = ""
        self.port = 0
        self.buf = b""
        self.pending = None  # (subject, reply, hdr_len, total) while waiting for a payload
        self.subs: dict[bytes, Subscription] = {}
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
        self.close_reason = ""
        self.tls_state = None  # the ssl.SSLObject once a TLS handshake is done
        self.nonce = b""  # the INFO nonce an nkey user signs
        self.ws = None  # the WebsocketListener of a websocket client (server/websocket.py)

    # -- asyncio.Protocol --------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        transport.set_write_buffer_limits(high=min(self.server.opts.max_pending // 4, 4 * 1024 * 1024))
        peer = transport.get_extra_info("peername") or ("", 0)
        self.host, self.port = peer[0], peer[1]
        srv = self.server
        self.cid = srv.register(self)
        info = p.info_line(srv.client_info(self))
        if srv.tls_context is not None and self.ws is None and not self.closed:
            tls.start(self, srv.tls_context, srv.opts.tls, info)  # tls_ready() follows the handshake
            return
        transport.write(info)
        self.tls_ready()

    def tls_ready(self) -> None:
        """The connection is ready for the protocol (after the TLS
        handshake, if any): the keepalive and authentication timers start."""
        srv = self.server
        loop = srv.loop
        self._ping_timer = loop.call_later(srv.opts.ping_interval, self._send_ping)
        if srv.auth_required:
            self._auth_timer = loop.call_later(srv.opts.auth_timeout, self._auth_timeout)

    def takes_async_info(self) -> bool:
        """Does this client take INFO updates (protocol 1, and its first PING
        answered, as nats-server requires)?"""
        return self._connect_opts.get("protocol", 0) >= 1 and not self._connect_info_due

    def connection_lost(self, exc) -> None:
        self.closed = True
        self._cancel_timers()
        self.server.unregister(self)
        self.resume_writing()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.server.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        # the buffer is the server's, shared by every connection: copy this
        # read out of it before anything else can read into it
        self.data_received(self.server.read_buffer[:nbytes].tobytes())

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.last_activity = time.time()
        if self.buf:
            data = self.buf + data
            self.buf = b""
        srv = self.server
        srv.reading = True
        try:
            n = len(data)
            if n <= _READ_SLICE:
                self._parse(data)
            else:
                # a big read is parsed a slice at a time with what it produced
                # sent in between, so a client with many requests in flight
                # gets its first replies (and refills its window) while the
                # rest is parsed; a command cut by a slice is finished by the next
                # (inside a payload, the rest goes at once: a big message
                # is not copied again for every slice)
                i = 0
                step = min(max(n // 3, 1024), _READ_SLICE_MAX)
                while i < n and not self.closed:
                    j = i + step if self.pending is None else n
                    step = min(step * 2, _READ_SLICE_MAX)
                    piece = data[i:j]
                    if self.buf:
                        piece = self.buf + piece
                        self.buf = b""
                    self._parse(piece)
                    i = j
                    if i < n:
                        srv.reading = False
                        srv.flush_dirty()
                        srv.reading = True
        finally:
            srv.reading = False
            srv.flush_dirty()
            if srv.backed_up:
                backed_up, srv.backed_up = srv.backed_up, []
                others = [c for c in backed_up if c is not self]
                if others:
                    self.stall(others)

    # -- parsing -----------------------------------------------------------
    def _parse(self, data: bytes) -> None:
        srv = self.server
        n = len(data)
        pos = 0
        # the common case, a plain PUB from a connected non-verbose,
        # non-pedantic client, is matched by one C-level regex and routed here
        fast = self.connected and not self.verbose and not self.pedantic and self.perms is None
        while pos < n and not self.closed:
            pend = self.pending
            if fast and pend is None:
                pos = self._fast_pubs(data, pos, n)
                if pos >= n or self.closed:
                    break
                pend = self.pending
            if pend is not None:
                subject, reply, hlen, total = pend
                end = pos + total
                if end + 2 > n:
                    break
                if data[end : end + 2] != b"\r\n":
                    self.protocol_error(p.ERR_UNKNOWN_OP)
                    return
                self.pending = None
                if hlen:
                    hdr = data[pos : pos + hlen]
                    payload = data[pos + hlen : end]
                else:
                    hdr = None
                    payload = data[pos:end]
                pos = end + 2
                self.in_msgs += 1
                self.in_bytes += total
                if self.perms is not None and not self.perms.can_publish(subject):
                    self.queue_out(violation("Publish", subject))
                    continue
                if self.verbose:
                    self.queue_out(p.OK)
                srv.route(self, subject, reply, hdr, payload)
                continue
            eol = data.find(b"\n", pos)
            if eol < 0:
                if n - pos > p.MAX_CONTROL_LINE:
                    self.protocol_error(p.ERR_MAX_CONTROL_LINE)
                    return
                break
            line = data[pos:eol]
            pos = eol + 1
            if len(line) > p.MAX_CONTROL_LINE:
                self.protocol_error(p.ERR_MAX_CONTROL_LINE)
                return
            args = _ARG_RE.findall(line) if b"\x0b" in line or b"\x0c" in line else line.split()
            if not args:
                continue
            op = args[0].upper()
            if len(args) == 1 and op in _ARG_OPS and line.rstrip(b"\r") == args[0]:
                # the keyword alone, not even a space after it: nats-server's
                # parser stops at an unknown operation (with a space and no
                # arguments it closes without a word, as the handlers do)
                self.protocol_error(p.ERR_UNKNOWN_OP)
                return
            if op == b"PUB":
                self._op_pub(args, False)
            elif op == b"HPUB":
                self._op_pub(args, True)
            elif op == b"MSG" or op == b"HMSG":
                self.protocol_error(p.ERR_UNKNOWN_OP)
            elif op == b"PING":
                self.queue_out(p.PONG)
                if self._connect_info_due:
                    # like nats-server: one more INFO after the first PONG
                    self._connect_info_due = False
                    self.queue_out(p.info_line(srv.client_info(self, connect_info=True)))
            elif op == b"PONG":
                self.pings_out = 0
                if self._ping_sent_at:
                    self.rtt = time.monotonic() - self._ping_sent_at
                    self._ping_sent_at = 0.0
            elif op == b"SUB":
                self._op_sub(args)
            elif op == b"UNSUB":
                self._op_unsub(args)
            elif op == b"CONNECT":
                self._op_connect(line[len(args[0]) :].strip())
                fast = self.connected and not self.verbose and not self.pedantic and self.perms is None
            else:
                self.protocol_error(p.ERR_UNKNOWN_OP)
        if pos < n and not self.closed:
            self.buf = data[pos:]

    def _fast_pubs(self, data: bytes, pos: int, n: int) -> int:
        """Route a run of plain PUBs; return where the run ends. Anything
        unusual (a partial line, an oversized payload, another op) is left to
        the general loop, which gives the real server's errors."""
        srv = self.server
        route = srv.route
        cache_get = srv._match_cache.get
        index = srv.index
        match_ack = index.match_ack
        ack_prefix = ack_r = None  # the last ack's "$JS.ACK.<stream>.<consumer>." and its match
        ack_gen = 0
        internal = srv.internal_client
        pub_match = _PUB_RE.match
        max_payload = srv.opts.max_payload
        max_line = p.MAX_CONTROL_LINE
        msgs = nbytes = 0
        routed = routed_bytes = 0  # (route counts those for the server itself)
        batch_sub = None  # plain acks for one consumer, handed over together
        batch: list[bytes] = []
        while True:
            m = pub_match(data, pos)
            if m is None:
                break
            subject, reply, size = m.groups()
            total = int(size)
            start = m.end()
            end = start + total
            if total > max_payload or start - pos > max_line:
                break
            if end + 2 > n:
                self.pending = (subject, reply or b"", 0, total)
                pos = start
                break
            if data[end : end + 2] != b"\r\n":
                break
            pos = end + 2
            msgs += 1
            nbytes += total
            r = cache_get(subject)
            is_ack = False
            if r is None:
                if subject.startswith(b"$JS.ACK."):
                    is_ack = True
                    # acks are never cached (see match_ack); a run of them for
                    # one consumer is matched once while the index stays as it was
                    if (ack_prefix is not None and subject.startswith(ack_prefix) and subject.find(b"..") < 0
                            and subject[-1] != 46 and index.inserts + index.removes == ack_gen):
                        r = ack_r
                    else:
                        r = match_ack(subject)
                        i = subject.find(b".", 8)  # "$JS.ACK.<stream>.<consumer>." as _match_ack cuts it
                        j = subject.find(b".", i + 1) if i > 8 else -1
                        ack_prefix = subject[: j + 1] if j > i + 1 else None
                        ack_r, ack_gen = r, index.inserts + index.removes
            elif r is EMPTY_RESULT and reply is None:
                continue
            if r is not None:
                psubs, qgroups = r
                if len(psubs) == 1 and not qgroups:
                    sub = psubs[0]
                    if sub.client is internal and sub.raw:
                        # a stream's subject or a consumer's ack subject, with
                        # nothing else listening: hand it over as the router
                        # (and InternalClient.deliver) would, minus the trip
                        sub.msgs += 1
                        if (is_ack and reply is None and sub.batch is not None
                                and (total == 0 or data[start:end] == b"+ACK")):
                            if sub is not batch_sub:
                                if batch:
                                    self._ack_batch(batch_sub, batch)
                                    batch = []
                                batch_sub = sub
                            batch.append(subject)
                            if ack_prefix is not None and subject.startswith(ack_prefix):
                                # the plain acks right behind it for the same
                                # consumer (v1 subjects, as the memo above would
                                # match them), taken in one go
                                run = _ack_run(ack_prefix)
                                m = run[0].match(data, pos)
                                if m is not None:
                                    more = run[1].findall(data, pos, m.end())
                                    k = len(more)
                                    batch += more
                                    pos = m.end()
                                    msgs += k
                                    sub.msgs += k
                            continue
                        if batch:
                            self._ack_batch(batch_sub, batch)
                            batch = []
                        if (total == 0 and reply is not None and sub.gets is not None
                                and subject.startswith(b"$JS.API.DIRECT.GET.")):
                            i = subject.find(b".", 19)
                            if i > 19 and i + 1 < len(subject):
                                # a KV get (DIRECT.GET.<stream>.<subject>, no
                                # body), and the ones right behind it for the
                                # same stream that reach the API alone: one run
                                prefix = subject[: i + 1]
                                items = [(subject, reply)]
                                run = _get_run(prefix)
                                m = run[0].match(data, pos)
                                if m is not None:
                                    more = run[1].findall(data, pos, m.end())
                                    run_end = m.end()
                                    for k, (s, rp) in enumerate(more):
                                        r2 = cache_get(s)
                                        if r2 is None or r2[0] != psubs or r2[1]:
                                            # (a subject not matched yet, or
                                            # with another listener: the loop's)
                                            more = more[:k]
                                            run_end = pos + sum(len(s) + len(rp) + 11 for s, rp in more)
                                            break
                                    items += more
                                    pos = run_end
                                    msgs += len(more)
                                    sub.msgs += len(more)
                                srv.current_publisher = self
                                try:
                                    sub.gets(prefix, items)
                                except Exception:
                                    srv.logger.exception("internal subscription %s failed", sub.subject.decode())
                                if self.closed:
                                    break
                                continue
                        srv.current_publisher = self
                        try:
                            sub.callback(subject, reply or b"", None, data[start:end])
                        except Exception:
                            srv.logger.exception("internal subscription %s failed", sub.subject.decode())
                        if self.closed:
                            break
                        continue
            if batch:
                self._ack_batch(batch_sub, batch)
                batch = []
            routed += 1
            routed_bytes += total
            route(self, subject, reply or b"", None, data[start:end])
            if self.closed:
                break
        if batch:
            self._ack_batch(batch_sub, batch)
        self.in_msgs += msgs
        self.in_bytes += nbytes
        srv.in_msgs += msgs - routed
        srv.in_bytes += nbytes - routed_bytes
        return pos

    def _ack_batch(self, sub, subjects: list[bytes]) -> None:
        self.server.current_publisher = self
        try:
            sub.batch(subjects)
        except Exception:
            self.server.logger.exception("internal subscription %s failed", sub.subject.decode())

    def _require_connect(self) -> bool:
        if not self.connected and self.server.auth_required:
            self.protocol_error(p.ERR_AUTH_VIOLATION)
            return False
        return True

    def _op_pub(self, args: list[bytes], with_headers: bool) -> None:
        if not self._require_connect():
            return
        try:
            if with_headers:
                if not self.headers:
                    self.close("headers not supported")
                    return
                if len(args) == 4:
                    subject, reply, hlen, total = args[1], b"", int(args[2]), int(args[3])
                elif len(args) == 5:
                    subject, reply, hlen, total = args[1], args[2], int(args[3]), int(args[4])
                else:
                    raise ValueError
                if hlen < 0 or total < hlen:
                    raise ValueError
            else:
                if len(args) == 3:
                    subject, reply, total = args[1], b"", int(args[2])
                elif len(args) == 4:
                    subject, reply, total = args[1], args[2], int(args[3])
                else:
                    raise ValueError
                hlen = 0
                if total < 0:
                    raise ValueError
        except ValueError:
            # the real server closes on a malformed PUB line without an -ERR
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
        if not self._require_connect():
            return
        if len(args) == 3:
            subject, queue, sid = args[1], None, args[2]
        elif len(args) == 4:
            subject, queue, sid = args[1], args[2], args[3]
        else:
            self.close("malformed subscribe")
            return
        if not valid_subject(subject):
            self.queue_out(p.ERR_INVALID_SUBJECT)
            return
        if self.perms is not None and not self.perms.can_subscribe(subject):
            self.queue_out(violation("Subscription", subject))
            return
        if sid in self.subs:
            # re-using a sid keeps the existing subscription (as nats-server does)
            if self.verbose:
                self.queue_out(p.OK)
            return
        sub = Subscription(self, subject, queue, sid)
        self.subs[sid] = sub
        self.server.add_sub(sub)
        if self.verbose:
            self.queue_out(p.OK)

    def _op_unsub(self, args: list[bytes]) -> None:
        if not self._require_connect():
            return
        if len(args) not in (2, 3):
            self.close("malformed unsubscribe")  # closed without an -ERR, as nats-server does
            return
        sid = args[1]
        mx = 0
        if len(args) == 3:
            try:
                mx = int(args[2])
            except ValueError:
                self.protocol_error(p.ERR_UNKNOWN_OP)
                return
        sub = self.subs.get(sid)
        if sub is not None:
            if mx > 0 and sub.msgs < mx:
                sub.max = mx
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
            self.close("bad CONNECT json")
            return
        proto = opts.get("protocol", 0)
        if not isinstance(proto, int) or proto < 0 or proto > 1:
            self.protocol_error(p.ERR_BAD_PROTOCOL)
            return
        # a later CONNECT changes only the options it names (nats-server
        # unmarshals it into the options it already has)
        opts = self._connect_opts = {**self._connect_opts, **opts}
        self.verbose = bool(opts.get("verbose", True))
        self.pedantic = bool(opts.get("pedantic", True))
        self.echo = bool(opts.get("echo", True))
        self.headers = bool(opts.get("headers", False))
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
        if srv.auth_required:
            entry = srv.check_auth(opts, self)
            if not entry:
                srv.logger.error("%s:%d - cid:%d - authentication error", self.host, self.port, self.cid)
                self.protocol_error(p.ERR_AUTH_VIOLATION)
                return
            # (a certificate or no_auth_user may name the user, not CONNECT)
            self.user = str(entry.get("user") or entry.get("nkey") or "") if isinstance(entry, dict) else str(opts.get("user") or "")
            if isinstance(entry, dict) and entry.get("permissions"):
                from .permissions import Permissions

                self.perms = Permissions(entry["permissions"])
            if self._auth_timer:
                self._auth_timer.cancel()
                self._auth_timer = None
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

    def deliver_run(self, sub: Subscription, msgs) -> None:
        """Queue a MSG/HMSG for ``sub`` for each (subject, reply, hdr,
        payload) of ``msgs``, in order: the one way any message reaches a
        client (core routing, internal replies, PubAcks, JetStream delivery,
        direct gets). A client that did not ask for headers gets the payload
        only; auto-unsubscribe stops the run at its count. The counters, the
        dirty mark and the slow-consumer check are taken once per run."""
        if self.closed:
            return
        mx = sub.max
        if mx:
            left = mx - sub.msgs
            if left <= 0:
                return  # (reached by a run matched before the removal)
            if left < len(msgs):
                msgs = msgs[:left]
        sid = sub.sid
        out = self.out
        headers = self.headers
        size = nbytes = 0
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
        k = len(msgs)
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
            if t.get_write_buffer_size() > self.server.opts.max_pending:
                self.slow_consumer()
            else:
                self.server.backed_up.append(self)

    # Backpressure: asyncio calls these around the transport's high-water
    # mark. A producer whose messages land on a backed-up connection stops
    # being read for a moment (see ``stall``), so a reader that keeps up is
    # never cut; one that does not read runs into max_pending and is.
    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
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
        if not self.closed:
            self.transport.resume_reading()

    def slow_consumer(self) -> None:
        srv = self.server
        srv.slow_consumers += 1
        srv.logger.warning(
            "%s:%d - cid:%d - Slow Consumer Detected: WriteDeadline of 10s exceeded with %d chars pending",
            self.host, self.port, self.cid, self.transport.get_write_buffer_size(),
        )
        self.closed = True
        self.close_reason = "Slow Consumer (Pending Bytes)"
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
        self._ping_timer = self.server.loop.call_later(opts.ping_interval, self._send_ping)

    def _auth_timeout(self) -> None:
        if not self.connected and not self.closed:
            self.queue_out(p.ERR_AUTH_TIMEOUT)
            self.close("Authentication Timeout")
            self.server.flush_dirty()

    @property
    def pending_bytes(self) -> int:
        t = self.transport
        return (t.get_write_buffer_size() if t and not self.closed else 0) + self.out_size


class InternalClient:
    """The publisher/subscriber identity of the server's own subsystems
    (JetStream). Deliveries call the subscription's callback synchronously."""

    internal = True
    echo = True
    closed = False
    headers = True
    no_responders = False
    cid = 0
    name = "$SYSTEM"

    def __init__(self, server):
        self.server = server

    def deliver(self, sub, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        sub.msgs += 1
        try:
            if sub.raw:
                sub.callback(subject, reply, hdr, payload)
            else:
                sub.callback(subject.decode(), reply.decode() if reply else "", hdr, payload)
        except Exception:  # a bug in a subsystem must not take routing down
            self.server.logger.exception("internal subscription %s failed", sub.subject.decode())

    def deliver_run(self, sub, msgs) -> None:
        for subject, reply, hdr, payload in msgs:
            self.deliver(sub, subject, reply, hdr, payload)


class InternalSubscription(Subscription):
    __slots__ = ("callback", "raw", "batch", "gets")

    def __init__(self, client, subject: bytes, queue: bytes | None, callback):
        super().__init__(client, subject, queue, b"")
        self.callback = callback
        self.raw = False  # callback gets bytes subject/reply (Server.subscribe_internal)
        self.batch = None  # takes a run of plain acks at once (Server.subscribe_internal)
        self.gets = None  # takes a run of direct gets at once (Server.subscribe_internal)


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
