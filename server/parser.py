"""The NATS client protocol parser: socket reads in, protocol operations out.

``Parser`` is the reading half of a client connection (``client.Client``
derives from it): it parses everything one socket read holds in a single
pass, routes each plain PUB through the server, and hands the other
operations to the connection's ``_op_*`` handlers. It knows the NATS
protocol only. A subsystem that wants the messages on subjects it owns in
runs (a consumer's acks, direct gets) says so with a ``RunSpec`` on its
internal subscription (see ``internal.py``): the parser gives it the run of
PUBs that follow one of its messages in the same read, in one call.
"""

from __future__ import annotations

import json
import re
import time
from itertools import repeat
from operator import itemgetter

from . import protocol as p
from . import router
from .permissions import violation
from .subjects import EMPTY_RESULT

# A PUB as clients write it: tokens between spaces (nats-py writes two before
# the size when there is no reply), no trailing blanks. Anything else (tabs,
# odd whitespace) does not match and goes to the general parser, so a match
# is always the same parse; \S is the quickest class for the regex engine.
_PUB_RE = re.compile(rb"PUB (\S+) +(?:(\S+) +)?(\d{1,9})\r\n")
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

# A command's operation as nats-server's parser reads it (case-insensitive,
# at the very start of the command: no blank, CR or LF before it). Those with
# arguments need a blank after their name (CONNECT and INFO do not); PING,
# PONG and +OK are done at their name, and whatever follows it up to the LF
# is ignored ("PINGX" is a PING). MSG and the route/leaf operations are not
# a client's: they, and anything else, are an unknown operation.
_OP_RE = re.compile(rb"(?:(PUB|HPUB|SUB|UNSUB|HMSG|-ERR)[ \t]+|(CONNECT|INFO)[ \t]*|(PING|PONG|\+OK))", re.I)
_OP_NAMES = (b"PUB", b"HPUB", b"SUB", b"UNSUB", b"HMSG", b"-ERR", b"CONNECT", b"INFO", b"PING", b"PONG", b"+OK")
# nats-server splits PUB/HPUB arguments on spaces and tabs only (a CR is part
# of a token), SUB/UNSUB arguments on spaces, tabs, CR and LF (splitArg)
_PUB_ARGS = re.compile(rb"[^ \t]+")
_SUB_ARGS = re.compile(rb"[^ \t\r\n]+")


class Parser:
    """The protocol parse loop of a connection. It reads and sets the
    connection's parse state (``buf``, ``pending``), reads its CONNECT
    state (``connected``, ``verbose``, ``pedantic``, ``perms``) and calls its
    operation handlers (``_op_pub``, ``_op_sub``, ``_op_unsub``,
    ``_op_connect``, ``queue_out``, ``protocol_error``, ``stall``)."""

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.server.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        # the buffer is the server's, shared by every connection: copy this
        # read out of it before anything else can read into it
        self.data_received(self.server.read_buffer[:nbytes].tobytes())

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        if self.backlog is not None:
            self.backlog.append(data)  # (behind the rest of a read put off: see _put_off)
            return
        self.last_activity = time.time()
        skip = None
        buf = self.buf
        if buf:
            # an unfinished command from earlier reads, kept in a bytearray
            # (appended to, never copied per read): a payload is parsed once
            # it is all in, a control line once its LF is (or when it is over
            # the limit: its error); input is looked at once however it is cut
            buf += data
            pend = self.pending
            if pend is not None:
                if len(buf) <= pend[3]:  # (with its CR in, a wrong byte there is an error at once)
                    return
            else:
                at = self.arg_at
                if at and data.find(b"\n") < 0 and (
                        len(buf) - at - (buf[-1] == 13) <= self.server.opts.max_control_line):
                    return
            data = bytes(buf)
            self.buf = b""
        elif self.skip is not None:
            # the rest of a PING, PONG or +OK line: nothing counts up to its LF
            eol = data.find(b"\n")
            if eol < 0:
                return
            skip, self.skip = self.skip, None
            data = data[eol + 1 :]
        srv = self.server
        srv.reading = True
        try:
            if skip is not None:
                self._simple(skip)
            n = len(data)
            if n <= _READ_SLICE:
                # (a read of PUBs only, one request or answer mostly, needs
                # no trip through the general loop)
                pos = self._fast_pubs(data, 0, n) if self.fast_path and self.pending is None else 0
                if pos < n and not self.closed:
                    pos = self._parse(data, pos, n)
            else:
                # a big read is parsed a slice at a time with what it produced
                # sent in between, so a client with many requests in flight
                # gets its first replies (and refills its window) while the
                # rest is parsed. Slices are bounds on the one buffer, not
                # copies: a command cut by a slice's end is parsed again from
                # its start by the next (inside a payload, the rest goes at
                # once: a big message is not looked at again for every slice)
                pos = limit = 0
                step = min(max(n // 3, 1024), _READ_SLICE_MAX)
                while True:
                    limit = n if self.pending is not None else min(limit + step, n)
                    step = min(step * 2, _READ_SLICE_MAX)
                    pos = self._parse(data, pos, limit)
                    if limit >= n or self.closed:
                        break
                    srv.reading = False
                    srv.flush_between_slices()
                    srv.reading = True
                    budget = srv.opts.read_budget
                    if budget and time.time() - self.last_activity > budget:
                        # this read has had its share of the loop: the rest
                        # waits behind the other connections' reads
                        self._put_off(data, pos)
                        pos = n
                        break
            if pos < n and not self.closed:
                self.buf = bytearray(data[pos:])  # (a payload still coming)
        finally:
            srv.reading = False
            srv.flush_dirty()
            if srv.backed_up:
                backed_up, srv.backed_up = srv.backed_up, []
                others = [c for c in backed_up if c is not self]
                if others:
                    self.stall(others)

    def _put_off(self, data: bytes, pos: int) -> None:
        """Parse ``data[pos:]`` on a later turn of the event loop, after what
        the other connections' reads bring (whatever one connection sends,
        the others wait for one slice of it at most). Reads that come
        meanwhile queue behind it; the socket is not read until it is done."""
        self.backlog = [data[pos:]]
        self.transport.pause_reading()
        self.server.loop.call_soon(self._take_up)

    def _take_up(self) -> None:
        parts, self.backlog = self.backlog, None
        if self.closed:
            return
        if not self.is_stalled:
            self.transport.resume_reading()
        self.data_received(b"".join(parts))

    # -- parsing -----------------------------------------------------------
    def _parse(self, data: bytes, pos: int, n: int) -> int:
        """Parse the commands in ``data[pos:n]``; return where the first one
        that is not complete by ``n`` starts (``n`` when none is)."""
        srv = self.server
        # the common case, a plain PUB from a connected non-verbose,
        # non-pedantic client, is routed by _fast_pubs (whether this client
        # is one changes with CONNECT only: kept in ``fast_path``)
        fast = self.fast_path
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
                    if end < n and data[end] != 13 and n == len(data):
                        self.protocol_error(p.ERR_UNKNOWN_OP)  # (nats-server wants the CR right there)
                        return n
                    break
                if data[end : end + 2] != b"\r\n":
                    self.protocol_error(p.ERR_UNKNOWN_OP)
                    return n
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
                if self.mappings is not None:  # (its account's mappings {}: server/mappings.py)
                    subject = self.mappings.select(subject)
                    if not subject:
                        continue  # (the weights chose no destination: lost, as they asked)
                if self.perms is not None and not self.perms.can_publish(subject):
                    self.queue_out(violation("Publish", subject))
                    if hdr is not None and b"Nats-Trace-Dest:" in hdr:
                        srv.msg_trace.denied(self, subject, hdr, payload)  # its trace says so too
                    continue
                if self.verbose:
                    self.queue_out(p.OK)
                srv.route(self, subject, reply, hdr, payload)
                continue
            q = self._control(data, pos, n)
            if q < 0:
                break  # (cut by a slice's end: parsed again from its start by the next)
            pos = q
            if self.fast_path is not fast:
                fast = self.fast_path  # (a CONNECT)
        return pos

    def _control(self, data: bytes, pos: int, n: int) -> int:
        """Read the command at ``pos`` (not a payload) as nats-server's parser
        does, byte for byte, and carry it out; return where the next one
        starts. A command not complete by ``n`` is kept in ``buf`` when ``n``
        ends the read (return ``n``), or left to the next slice (-1). A
        control line is held to max_control_line as it comes in: its
        arguments (after the operation and its blanks, without the CR before
        the LF) may not be longer, complete or not."""
        if not self.connected and self.must_authenticate() and data[pos] not in b"Cc" \
                and not self.server.auth.no_auth_user_of(self):
            # before its CONNECT a client that must authenticate may send
            # nothing else: nats-server refuses at the first byte
            self.protocol_error(p.ERR_AUTH_VIOLATION)
            return n
        m = _OP_RE.match(data, pos, n)
        if m is None:
            if n - pos < 7:
                head = data[pos:n].upper()
                if any(op.startswith(head) for op in _OP_NAMES):
                    return self._unfinished(data, pos, n, None)  # (the start of a name)
            self.protocol_error(p.ERR_UNKNOWN_OP)
            return n
        name, bare, simple = m.groups()
        at = m.end()
        if simple is not None:
            eol = data.find(b"\n", at, n)
            if eol < 0:
                if n < len(data):
                    return -1
                self.skip = simple.upper()  # (the rest of its line goes unread)
                return n
            self._simple(simple.upper())
            return eol + 1
        if at >= n:
            return self._unfinished(data, pos, n, None)
        # the first byte after the blanks starts the arguments whatever it is
        # (even an LF), and a CR anywhere after it makes the line end one
        # byte early (nats-server's "drop"): usually the CR before the LF
        eol = data.find(b"\n", at + 1, n)
        mcl = self.server.opts.max_control_line
        if eol < 0:
            if n - at - (data[n - 1] == 13) > mcl:
                self.protocol_error(p.ERR_MAX_CONTROL_LINE)
                return n
            return self._unfinished(data, pos, n, at - pos)
        arg = data[at : eol - 1] if data.find(b"\r", at + 1, eol) >= 0 else data[at:eol]
        if len(arg) > mcl:
            self.protocol_error(p.ERR_MAX_CONTROL_LINE)
            return n
        op = (name or bare).upper()
        if op == b"PUB":
            self._op_pub(_PUB_ARGS.findall(arg), False)
        elif op == b"SUB":
            self._op_sub(_SUB_ARGS.findall(arg))
        elif op == b"UNSUB":
            self._op_unsub(_SUB_ARGS.findall(arg))
        elif op == b"HPUB":
            self._op_pub(_PUB_ARGS.findall(arg), True)
        elif op == b"CONNECT":
            self._op_connect(arg)
            self.fast_path = (self.connected and not self.verbose and not self.pedantic
                              and self.account is None and self.mappings is None)
        elif op == b"INFO":
            # a client's INFO is read (it must be a JSON object, or null) and
            # ignored; anything else closes the connection without a word
            try:
                info = json.loads(arg)
            except ValueError:
                info = 0
            if info is not None and not isinstance(info, dict):
                self.close("Protocol Violation")
        elif op == b"HMSG":
            # not a client's operation, but nats-server's parser takes its
            # line (and does nothing with it) and then wants a CRLF at once
            if not data.startswith(b"\r\n", eol + 1):
                if eol + 3 > n and data.startswith(b"\r\n"[: n - eol - 1], eol + 1):
                    return self._unfinished(data, pos, n, 0)
                self.protocol_error(p.ERR_UNKNOWN_OP)
                return n
            return eol + 3
        else:  # -ERR from a client: nats-server logs it and closes
            self.server.logger.error("%s:%d - cid:%d - Client Error %s", self.host, self.port, self.cid,
                                     arg.decode("utf-8", "replace"))
            self.close("Parse Error")
        return eol + 1

    def _unfinished(self, data: bytes, pos: int, n: int, at: int | None) -> int:
        """Keep the unfinished command ``data[pos:n]`` for the next read, or
        leave it to the next slice (-1) when ``n`` does not end the read.
        ``at``: where its arguments start (reads that bring no LF are only
        added to it, up to the limit), 0 to parse it again on every read (it
        is short), None when only an operation's name has come."""
        if n < len(data):
            return -1
        if at is not None:
            self.buf = bytearray(data[pos:n])
        else:
            # an operation's name and its blanks: only the name counts (the
            # blanks are not kept, so however many come it stays short)
            m = _OP_RE.match(data, pos, n)
            self.buf = bytearray(data[pos:n] if m is None else (m.group(1) or m.group(2) or b"") + b" ")
        self.arg_at = at or 0
        return n

    def _simple(self, op: bytes) -> None:
        """PING, PONG or +OK, read to its LF."""
        if op == b"PING":
            self.queue_out(p.PONG)
            if self._connect_info_due:
                # like nats-server: one more INFO after the first PONG
                self._connect_info_due = False
                self.queue_out(p.info_line(self.server.client_info(self, connect_info=True)))
        elif op == b"PONG":
            self.pings_out = 0
            if self._ping_sent_at:
                self.rtt = time.monotonic() - self._ping_sent_at
                self._ping_sent_at = 0.0

    def _fast_pubs(self, data: bytes, pos: int, n: int) -> int:
        """Route plain PUBs from ``pos`` on; return where they end. Anything
        unusual (a partial line, an oversized payload, another op) is left to
        the general loop, which gives the real server's errors.

        A PUB line without a reply whose subject the index caches is looked
        up whole in the connection's control-line cache (``lines``): its entry
        holds the payload size and everything routing needs, valid while the
        index's generation stays. The identical lines right behind it (the
        shape of telemetry and of every benchmark) join it, and the run goes
        to the road (``router.deliver_results``) with their shared line. Other PUBs (with a
        reply, to one-off subjects) are matched one at a time; consecutive ones
        that matched the same client subscriptions (requests to one service,
        replies to one requester's inbox prefix) go to them as one run
        (``router.deliver_results``)."""
        srv = self.server
        index = srv.index
        deliver = router.deliver_results
        cache_get = srv._match_cache.get
        match_miss = index.match_miss
        pub_match = _PUB_RE.match
        startswith = data.startswith
        max_payload = srv.opts.max_payload
        max_line = srv.opts.max_control_line
        lines = self.lines
        perms = self.perms
        msgs = nbytes = 0
        routed = routed_bytes = 0  # (route counts those for the server itself)
        batch_r = None  # what the messages of ``batch`` matched (client subscriptions only)
        batch: list = []
        while pos < n:  # (a regex call at the end of a read costs what a short PUB's does)
            m = pub_match(data, pos, n)
            if m is None:
                break
            subject, reply, size = m.groups()
            total = int(size)
            start = m.end()
            if total > max_payload or start - pos > max_line:
                break
            r = e = None
            if reply is None:
                line = data[pos:start]
                e = lines.get(line)
                if e is None or e[0] != index.gen:
                    e = None
                    r = cache_get(subject)
                    if r is None:
                        r = match_miss(subject)
                        if cache_get(subject) is r:
                            e = self._line_entry(line, subject, total, r)
                    else:
                        e = self._line_entry(line, subject, total, r)
            if e is not None:
                # a run of this line: one entry, one call per target
                if batch:
                    deliver(srv, self, batch_r, batch)
                    batch = []
                    if self.closed:
                        break
                kind, targets = e[2], e[3]
                end = start + total
                if end + 2 > n:
                    self.pending = (subject, b"", 0, total)
                    pos = start
                    break
                if not startswith(b"\r\n", end):
                    break
                q = end + 2
                if startswith(line, q):
                    # the same line again: the run is found and its payloads
                    # taken by two regex calls (C loops, no Python per message)
                    whole, item = _line_run(line, total)
                    q = whole.match(data, pos, n).end()
                    k = (q - pos) // (end + 2 - pos)
                    payloads = item.findall(data, pos, q) if kind is not _NOBODY and kind is not _DENIED else None
                else:
                    k = 1
                    payloads = [data[start:end]]
                pos = q
                msgs += k
                nbytes += k * total
                if kind is _PLAIN:
                    deliver(None, None, targets, payloads, (subject, b"", total))
                elif kind is _NOBODY:
                    pass
                elif kind is _INTERNAL:
                    sub = targets
                    sub.msgs += k
                    srv.current_publisher = self
                    for payload in payloads:
                        try:
                            sub.callback(subject, b"", None, payload)
                        except Exception:
                            srv.logger.exception("internal subscription %s failed", sub.subject.decode())
                elif kind is _DENIED:
                    routed += k
                    routed_bytes += k * total
                    err = violation("Publish", subject)
                    for _ in range(k):
                        self.queue_out(err)
                else:  # _ROUTE: the router, message by message
                    routed += k
                    routed_bytes += k * total
                    for payload in payloads:
                        srv.route(self, subject, b"", None, payload)
                if self.closed:
                    break
                continue
            # one PUB, matched on its own
            end = start + total
            if end + 2 > n:
                self.pending = (subject, reply or b"", 0, total)
                pos = start
                break
            if not startswith(b"\r\n", end):
                break
            pos = end + 2
            msgs += 1
            nbytes += total
            if perms is not None and not perms.can_publish(subject):
                if batch:
                    deliver(srv, self, batch_r, batch)
                    batch = []
                routed += 1
                routed_bytes += total
                self.queue_out(violation("Publish", subject))
                continue
            if r is None:
                r = cache_get(subject)
                if r is None:
                    r = match_miss(subject)
            if r is EMPTY_RESULT and reply is None:
                continue
            if r is batch_r:
                batch.append((subject, reply or b"", None, data[start:end]))
                continue
            if batch:
                deliver(srv, self, batch_r, batch)
                batch = []
                if self.closed:
                    break
            # a run starts here (it ends at the first message that matched
            # something else): for client subscriptions only, each of which
            # is told no later of a message than a subsystem would be. The
            # verdict is kept for the last match (a requester's service, a
            # responder's inbox prefix) while the index's generation stays
            memo = self.plain_memo
            if memo[0] is r and memo[1] == index.gen:
                plain = memo[2]
            else:
                plain = _plain(r)
                self.plain_memo = (r, index.gen, plain)
            if plain:
                batch = [(subject, reply or b"", None, data[start:end])]
                batch_r = r
                continue
            psubs, qgroups = r
            if len(psubs) == 1 and not qgroups:
                sub = psubs[0]
                if sub.client is srv.internal_client and sub.raw:
                    # a subsystem's subject (a stream's, a consumer's acks,
                    # the API) with nothing else listening: handed over as the
                    # router (and InternalClient.deliver) would, minus the trip
                    sub.msgs += 1
                    srv.current_publisher = self
                    payload = data[start:end]
                    run = sub.run
                    try:
                        if run is None:
                            sub.callback(subject, reply or b"", None, payload)
                        elif run.payloads is None:
                            # (a stream's publishes: any body; see RunSpec)
                            if pos < n and startswith(b"PUB ", pos):
                                items = [(subject, reply or b"", payload)]
                                pos, kb = self._take_pubs(r, data, pos, n, items)
                                k = len(items) - 1
                                msgs += k
                                nbytes += kb
                                sub.msgs += k
                                if k:
                                    run.handler(b"", items)
                                else:
                                    sub.callback(subject, reply or b"", None, payload)
                            else:
                                sub.callback(subject, reply or b"", None, payload)
                        elif (key := run.key(subject, reply, payload)) is None:
                            sub.callback(subject, reply or b"", None, payload)
                        else:
                            items = [(subject, reply or b"", payload)]
                            if pos < n:  # (the read ends here: a run of one, a client with one request in flight)
                                pos = _take_run(index, sub, key, run, data, pos, n, items)
                                k = len(items) - 1
                                msgs += k
                                if run.payloads != _EMPTY_BODY:  # (the first one's bytes are counted above)
                                    nbytes += sum(map(len, map(_payload, items))) - total
                                sub.msgs += k
                            run.handler(key, items)
                    except Exception:
                        srv.logger.exception("internal subscription %s failed", sub.subject.decode())
                    if self.closed:
                        break
                    continue
            deliver(srv, self, r, ((subject, reply or b"", None, data[start:end]),))
            if self.closed:
                break
        if batch:
            deliver(srv, self, batch_r, batch)
        self.in_msgs += msgs
        self.in_bytes += nbytes
        srv.in_msgs += msgs - routed
        srv.in_bytes += nbytes - routed_bytes
        return pos

    def _take_pubs(self, r: tuple, data: bytes, pos: int, n: int, items: list) -> tuple[int, int]:
        """Append to ``items`` the (subject, reply, payload) of the plain PUBs
        at ``pos`` on whose subjects matched what ``r`` holds (the run of a subsystem
        that takes any body: a stream's publishes, see RunSpec); return where
        they end and their payload bytes. A PUB that is cut off, too big,
        matched otherwise (or not cached) or denied ends the run: the loop
        takes it as it would have."""
        srv = self.server
        pub_match = _PUB_RE.match
        startswith = data.startswith
        cache_get = srv._match_cache.get
        max_payload = srv.opts.max_payload
        max_line = srv.opts.max_control_line
        perms = self.perms
        append = items.append
        nbytes = 0
        while pos < n:
            m = pub_match(data, pos, n)
            if m is None:
                break
            subject, reply, size = m.groups()
            total = int(size)
            start = m.end()
            end = start + total
            if (total > max_payload or start - pos > max_line or end + 2 > n or not startswith(b"\r\n", end)
                    or (q := cache_get(subject)) is not r and q != r or (perms is not None and not perms.can_publish(subject))):
                break
            append((subject, reply or b"", data[start:end]))
            nbytes += total
            pos = end + 2
        return pos, nbytes

    def _line_entry(self, line: bytes, subject: bytes, size: int, r: tuple) -> tuple | None:
        """The control-line cache entry for a PUB line without a reply (with
        its CRLF), from what its subject matched (``r``): (index generation,
        payload size, kind, targets). None for a subsystem that takes runs
        itself."""
        index = self.server.index
        perms = self.perms
        psubs, qgroups = r
        if perms is not None and not perms.can_publish(subject):
            kind, targets = _DENIED, None
        elif not psubs and not qgroups:
            kind, targets = _NOBODY, None
        elif any(s.client.internal for s in psubs) or any(s.client.internal for g in qgroups for s in g):
            if len(psubs) == 1 and not qgroups and psubs[0].raw:
                if psubs[0].run is not None and psubs[0].run.payloads is not None:
                    return None  # (a subsystem that takes runs of bodies it names: the loop's way)
                kind, targets = _INTERNAL, psubs[0]
            else:
                kind, targets = _ROUTE, None
        else:
            echo = self.echo
            plain = tuple(s for s in psubs if echo or s.client is not self)
            groups = tuple(g for g in (tuple(s for s in g if echo or s.client is not self) for g in qgroups) if g)
            kind, targets = (_PLAIN, (plain, groups)) if plain or groups else (_NOBODY, None)
        e = (index.gen, size, kind, targets)
        lines = self.lines
        if len(lines) >= _LINES_MAX:
            lines.clear()
        lines[line] = e
        return e


# kinds of control-line cache entries (compared by identity)
_PLAIN = "plain"  # client subscriptions and queue groups only: runs go to each
_NOBODY = "nobody"  # nothing listens (and no reply to answer)
_INTERNAL = "internal"  # one subsystem's subscription alone (a stream's subject)
_DENIED = "denied"  # the publisher may not publish there
_ROUTE = "route"  # a mix of clients and subsystems: the router, message by message
_LINES_MAX = 1024  # control lines cached per connection


def _plain(r: tuple) -> bool:
    """Did a match (``r``) find client subscriptions only, none of them
    ending after a count and no two on one connection? Messages to those may
    be handed over in runs: each connection still sees them in the order
    they were sent. (A count set by UNSUB moves the index's generation, so
    a verdict kept under one generation holds.)"""
    psubs, qgroups = r
    clients = set()
    for sub in psubs:
        if sub.client.internal or sub.max:
            return False
        clients.add(sub.client)
    k = len(psubs)
    for group in qgroups:
        for sub in group:
            if sub.client.internal or sub.max:
                return False
            clients.add(sub.client)
        k += len(group)
    return len(clients) == k


def _line_run(line: bytes, size: int) -> tuple:
    """Patterns for a run of PUBs that all have control line ``line`` (with
    its CRLF) and ``size``-byte payloads: the whole run (possessive: it never
    backtracks), and one member with its payload as the group (for findall)."""
    r = _LINE_RUNS.get(line)
    if r is None:
        head = re.escape(line)
        if len(_LINE_RUNS) >= _LINES_MAX:
            _LINE_RUNS.clear()
        r = _LINE_RUNS[line] = (re.compile(b"(?:%s.{%d}\r\n)++" % (head, size), re.S),
                                re.compile(b"%s(.{%d})\r\n" % (head, size), re.S))
    return r


_LINE_RUNS: dict[bytes, tuple] = {}  # per control line: the patterns of _line_run


def _run_patterns(key: bytes, with_reply: bool, payloads: tuple[bytes, ...], strict: bool = False) -> tuple:
    """Patterns for the PUBs of a run under ``key`` as clients write them
    (single spaces, no headers): the whole run, and each member in it
    (groups: subject, the reply when ``with_reply``, the size line and body
    when more than one body is allowed). Subjects and replies are short
    enough that a line stays under the control-line limit (anything else is
    left to the parser loop); whether their tokens are valid is checked by
    _take_run (a token pattern here cost more than the rest of a KV get).
    A token is "not a space" ([^ ], which the regex engine scans several
    times faster than \\S) unless ``strict`` (or a body holds other white
    space): _take_run makes sure the run it took has no other white space
    than its line ends, and takes it again with ``strict`` if it has."""
    k = (key, with_reply, payloads, strict)
    r = _RUNS.get(k)
    if r is None:
        strict = strict or any(c in b for b in payloads for c in _WHITE)
        tail = rb"\S{1,1024}" if strict else rb"[^ ]{1,1024}"
        reply = (rb" (\S{1,1024})" if strict else rb" ([^ ]{1,1024})") if with_reply else b""
        bodies = b"|".join(b"%d\r\n%s" % (len(b), re.escape(b)) for b in payloads)
        body = b"(%s)" % bodies if len(payloads) > 1 else bodies
        item = rb"PUB (%s%s)%s +%s\r\n" % (re.escape(key), tail, reply, body)
        whole = rb"(?:%s)+" % item.replace(b"(", b"(?:").replace(b"(?:?:", b"(?:")
        if len(_RUNS) >= 1024:
            _RUNS.clear()
        r = _RUNS[k] = (re.compile(whole), re.compile(item), {b"%d\r\n%s" % (len(b), b): b for b in payloads},
                        strict)
    return r


_EMPTY_BODY = (b"",)
_payload = itemgetter(2)  # of a run's (subject, reply, payload)
_RUNS: dict[tuple, tuple] = {}  # per (key, with reply, bodies, strict asked for): the patterns of _run_patterns
_WHITE = (b"\t", b"\r", b"\n", b"\x0b", b"\x0c")  # white space that \S excludes, besides the space


def _take_run(index, sub, key: bytes, run, data: bytes, pos: int, n: int, items: list, strict: bool = False) -> int:
    """Append to ``items`` the (subject, reply, payload) of the PUBs in
    ``data[pos:n]`` right at ``pos`` that belong to the run under ``key``: of
    the shape ``run`` takes, and reaching ``sub`` alone. Return where they end."""
    whole, item, body_of, strict = _run_patterns(key, run.reply, run.payloads, strict)
    m = whole.match(data, pos, n)
    if m is None:
        return pos
    end = m.end()
    alone = ((sub,), ())
    alike = None if strict or run.reply else _alike(data, pos, end, item, run, body_of)
    if alike is not None:
        names, one_body = alike
    else:
        one_body = None
        found = item.findall(data, pos, end)
        names = found if type(found[0]) is bytes else [f[0] for f in found]
    if not strict:
        # the only other white space in the run is its members' two line
        # ends each (no body holds any): else a token took some, and the
        # run is taken again as \S tokens
        k = 2 * len(names)
        find = data.find
        if (data.count(b"\r", pos, end) != k or data.count(b"\n", pos, end) != k
                or find(b"\t", pos, end) >= 0 or find(b"\x0b", pos, end) >= 0 or find(b"\x0c", pos, end) >= 0):
            return _take_run(index, sub, key, run, data, pos, n, items, True)
    joined = b" ".join(names) + b" "
    if b".." not in joined and b". " not in joined and index.tail_match(key[:-1]) == alone:
        # whatever (valid tokens) follows key reaches sub alone: the run is
        # taken whole
        if one_body is not None:
            items += zip(names, repeat(b""), repeat(one_body))
        elif run.reply:
            items += [(s, r, b"") for s, r in found]
        elif len(body_of) > 1:
            items += [(s, b"", body_of[b]) for s, b in found]
        else:
            body = run.payloads[0]
            items += [(s, b"", body) for s in found]
        return end
    # where a member goes depends on its tokens (or it has an empty one):
    # each is matched, up to the first that reaches someone else too
    multi = len(body_of) > 1
    while pos < end:
        mm = item.match(data, pos)
        s = mm.group(1)
        if index.match(s) != alone:
            break
        if run.reply:
            items.append((s, mm.group(2), b""))
        else:
            items.append((s, b"", body_of[mm.group(2)] if multi else run.payloads[0]))
        pos = mm.end()
    return pos


def _alike(data: bytes, pos: int, end: int, item, run, body_of: dict) -> tuple[list, bytes] | None:
    """The subjects, and their one body, of a run of PUBs without reply
    ``data[pos:end]`` (that ``whole`` matched with [^ ] tokens) when every
    member is written like the first after its subject (the same spaces,
    size and body: how a client writes a batch of acks), cut apart by one
    split on that tail and the next "PUB "; None when they are not alike
    (findall takes them)."""
    first = item.match(data, pos)
    tail = data[first.end(1) : first.end()]
    if not data.startswith(tail, end - len(tail)):
        return None
    region = data[pos + 4 : end - len(tail)]
    sep = tail + b"PUB "
    names = region.split(sep)
    # a member written otherwise leaves a space in what the split made of
    # it (every tail starts with one, and no token holds one)
    if region.count(b" ") != (len(names) - 1) * sep.count(b" "):
        return None
    return names, (body_of[first.group(2)] if len(body_of) > 1 else run.payloads[0])
