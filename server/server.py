"""The broker: listening socket, client registry and core pub/sub routing.
The internal messaging JetStream is built on is ``internal.Messaging``: the
server's own (``Server.messaging``) and one per account with a subject space
of its own."""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING

from . import protocol as p
from .conf import ConfigError
from .accounts import Accounts, apply_limits
from .auth import Authenticator
from .client import Client, Subscription, TracingClient
from .internal import InternalClient, Messaging, jetstream
from .lameduck import LAME_DUCK_DURATION, LAME_DUCK_GRACE_PERIOD
from .parser import READ_BUFFER_SIZE
from . import router
from .subjects import SubjectIndex
from .sysreq import SysRequests

if TYPE_CHECKING:  # (imported only when configured: start-up pays for what the flags need)
    from .tls import TLSOptions
    from .websocket import WebsocketOptions

# The nats-server release whose behaviour natslab implements; clients gate
# features on it (nats-py needs >= 2.9 for the named consumer-create API).
NATS_VERSION = "2.15.1"

logger = logging.getLogger("natslab.server")



@dataclass
class ServerOptions:
    host: str = p.DEFAULT_HOST
    port: int = p.DEFAULT_PORT
    jetstream: bool = False
    store_dir: str | None = None
    http_port: int = 0
    http_host: str | None = None
    https_port: int = 0  # https / https_port: the monitor over TLS (the tls {} block's certificate)
    server_name: str = ""
    max_payload: int = p.DEFAULT_MAX_PAYLOAD
    max_pending: int = p.DEFAULT_MAX_PENDING
    max_control_line: int = p.MAX_CONTROL_LINE  # bytes of a control line's arguments (the config key max_control_line)
    # seconds one socket read may take before the rest of it waits for the
    # other connections' reads (Parser._put_off); 0: never (bench_inproc,
    # which reads what a read produced right after it)
    read_budget: float = 0.01
    max_connections: int = 64 * 1024
    ping_interval: float = p.DEFAULT_PING_INTERVAL
    ping_max: int = p.DEFAULT_PING_MAX
    auth_timeout: float = p.AUTH_TIMEOUT
    user: str | None = None
    password: str | None = None
    token: str | None = None
    users: list[dict] = field(default_factory=list)  # [{"user":..,"password":..}] or [{"nkey":..}]
    no_auth_user: str = ""  # the user a client without credentials is (server/auth.py)
    accounts: dict = field(default_factory=dict)  # name -> AccountConfig (server/accounts.py)
    system_account: str = "$SYS"  # its users may ask $SYS.REQ.SERVER.* (server/sysreq.py)
    operator: object = None  # operator mode: trusted operators, resolver, JWT users (server/resolver.py)
    trace: bool = False
    sync_always: bool = False
    sync_interval: float | None = None  # None: fsync before each PubAck (group commit); else lazy, every N s
    tls: "TLSOptions | None" = None  # the tls {} block or --tls* flags (server/tls.py)
    lame_duck_duration: float = LAME_DUCK_DURATION  # server/lameduck.py
    lame_duck_grace_period: float = LAME_DUCK_GRACE_PERIOD
    websocket: "WebsocketOptions | None" = None  # the websocket {} block (server/websocket.py)
    # jetstream { limits { batch { ... } } }: batch publish limits; 0 keeps nats-server's
    # defaults, which differ for atomic (jetstream/stream/batch.py) and fast (fastbatch.py) batches
    batch_max_inflight_per_stream: int = 0
    batch_max_inflight_total: int = 0
    batch_max_msgs: int = 0
    batch_timeout: float = 0.0
    js_domain: str = ""  # jetstream { domain }: $JS.<domain>.API.> answered too (jetstream/domain.py)
    js_max_memory: int = -1  # jetstream { max_mem, max_file }: the server's limits (jetstream/limits.py);
    js_max_store: int = -1  # -1: not configured
    max_control_line: int = p.MAX_CONTROL_LINE  # max_control_line (the parser's limit on a protocol line)
    max_subs: int = 0  # max_subscriptions: a connection's subscriptions; 0: no limit
    write_deadline: float = 10.0  # write_deadline: a connection whose socket takes nothing this long is cut
    # write_timeout: "retry" keeps a client whose socket took part of its data by the deadline (a
    # slow consumer, counted; cut when it took nothing); "default" and "close" cut it (nats-server's)
    write_timeout_retry: bool = False
    js_max_buffered_size: int = 0  # jetstream { max_buffered_size, max_buffered_msgs }: a stream's ingest
    js_max_buffered_msgs: int = 0  # queue limits (0: nats-server's defaults; jetstream/stream/stream.py)
    mappings: object = None  # the top-level mappings {}: the global account's (server/mappings.py)
    client_advertise: str = ""  # client_advertise: the host:port INFO names
    ports_file_dir: str = ""  # ports_file_dir: where the .ports file goes (server/cli.py)
    max_sub_tokens: int = 0  # max_sub_tokens: the most tokens a SUB's subject may have; 0: no limit
    no_header_support: bool = False  # no_header_support: INFO says headers false, no client gets them
    server_tags: list = field(default_factory=list)  # server_tags: /varz tags (lower case, as jwt.TagList)
    max_closed_clients: int = 10000  # max_closed_clients: /connz?state=closed keeps this many (nats-server's default)
    js_strict: bool = True  # jetstream { strict }: API requests with unknown fields refused (nats-server's default)
    no_system_account: bool = False  # no_system_account: no $SYS.REQ service at all (server/sysreq.py)
    allow_non_tls: bool = False  # allow_non_tls: with tls {}, plain clients too (server/tls.py sniffs)
    logtime: bool = True  # logtime / logtime_utc: the log's timestamps (server/cli.py)
    logtime_utc: bool = False
    unused_config: list[str] = field(default_factory=list)  # keys and flags taken that one node has no use for
    # the history ring (jetstream/journal.py), kept across restarts by the
    # embedding (EmbeddedServer/ServerThread history_mb); None: not recorded
    journal: object = None


def _server_id() -> str:
    # nats-server ids are 56-char base32 nkeys starting with N
    raw = base64.b32encode(os.urandom(35)).decode().rstrip("=")
    return ("N" + raw)[:56]


class Server:
    def __init__(self, opts: ServerOptions | None = None):
        self.opts = opts or ServerOptions()
        self.server_id = _server_id()
        self.server_name = self.opts.server_name or self.server_id
        self.version = NATS_VERSION
        self.logger = logger
        self.journal = self.opts.journal  # jetstream/journal.py; None: no history is kept
        self.loop: asyncio.AbstractEventLoop | None = None
        self.read_buffer = memoryview(bytearray(READ_BUFFER_SIZE))  # every client's socket reads (Client.get_buffer)
        self.index = SubjectIndex()
        self._match_cache = self.index.cache  # read directly on the hot path
        self.index.lookups = lambda: self.in_msgs
        self.clients: dict[int, Client] = {}
        self.internal_client = InternalClient(self)
        # the connection whose message is being routed right now; internal
        # callbacks read it (e.g. to honour the requester's no_responders)
        self.current_publisher = self.internal_client
        self.interest_listeners: list = []
        self._dirty: list[Client] = []
        self._writers: list = []  # stores with buffered records (write_behind)
        self.reading = False  # a client's data_received is running (it ends with flush_dirty)
        self.backed_up: list[Client] = []  # filled by Client.flush for the current producer
        self._flush_scheduled = False
        self._tcp: asyncio.base_events.Server | None = None
        self.port = 0
        self.start_time = time.time()
        self.jetstream = None  # the JetStream on the server's own index ($G's, or the first account's)
        self.jetstreams: dict = {}  # account name -> its JetStream
        self.monitor = None
        self.total_connections = 0
        # client traffic, as nats-server counts it: what clients send (in) and
        # what they receive (out); hops through internal subscriptions don't count
        self.in_msgs = self.in_bytes = 0
        self._gone_out_msgs = self._gone_out_bytes = 0  # of closed connections
        self.slow_consumers = 0
        self.closed_conns: list[dict] = []
        o = self.opts
        self.accounts = Accounts(self, o.accounts)
        # nats-server's own internal clients take the first client ids (tools
        # show the id: `nats account info`): the system account's client, its
        # send queue's, and one of each account ($G and the system account
        # among them), so with no accounts configured the first outside
        # connection is client 5; JetStream's take theirs later
        # (internal_clients)
        self._next_cid = 2 + self.accounts.count()
        self.auth = Authenticator(o)
        self.auth_required = self.auth.required
        # made here, so a certificate that does not load stops the start
        self.tls_context = o.tls.context() if o.tls is not None else None
        self.ldm = False  # in lame duck mode (server/lameduck.py)
        self.websocket = None
        if o.websocket is not None and o.websocket.port:
            from .websocket import WebsocketListener

            self.websocket = WebsocketListener(self, o.websocket)

    @cached_property
    def msg_trace(self):
        """Messages with a Nats-Trace-Dest header (Server.route; msgtrace.py),
        made for the first of them: most servers never see one."""
        from .msgtrace import MsgTrace

        return MsgTrace(self)

    # -- lifecycle -----------------------------------------------------------
    async def start(self, listener: socket.socket | None = None) -> None:
        """``listener``: a socket already bound and listening on the client
        address (``natslab server`` binds it as soon as its flags are read:
        flags.py); its connections are accepted here, at the same point."""
        self.loop = asyncio.get_running_loop()
        # the internal messaging on the server's own index (its JetStream's
        # and the core subsystems'; internal.Messaging)
        self.messaging = Messaging(self, self.index, self.internal_client, self.accounts.home, self.interest_listeners)
        o = self.opts
        log = self.logger
        log.info("Starting nats-server")
        log.info("  Version:  %s (natslab)", self.version)
        log.info("  Name:     %s", self.server_name)
        log.info("  ID:       %s", self.server_id)
        # (StartMonitoring's checks, fatal, before anything is started: nats-server starts its
        # monitor before JetStream)
        if o.http_port and o.https_port:
            self._fatal(f"Can't start monitoring: can't specify both HTTP ({o.http_port}) and HTTPs "
                        f"({o.https_port}) ports")
        if o.https_port and o.tls is None:
            self._fatal("Can't start monitoring: TLS cert and key required for HTTPS")
        if o.jetstream:
            try:
                JetStream = jetstream().JetStream
            except ImportError as e:  # JetStream is still being built
                log.error("JetStream not available: %s", e)
                JetStream = None
            store_dir = Path(o.store_dir) if o.store_dir else default_store_dir()
            if JetStream is not None:
                log.info("Starting JetStream")
                await self._start_jetstreams(JetStream, store_dir)
        self.sys_requests = SysRequests(self)
        if o.operator is not None:
            o.operator.start(self)  # claim updates over $SYS (server/resolver.py)
        if o.http_port or o.https_port:
            from .monitor.http import Monitor

            ctx = None
            if o.https_port:  # https: the tls {} block's certificate, no client certificates asked for
                import ssl

                ctx = o.tls.context()
                ctx.verify_mode = ssl.CERT_NONE
            self.monitor = Monitor(self)
            host, mport = o.http_host or o.host, o.http_port or o.https_port
            try:
                await self.monitor.start(host, mport, ssl=ctx)
            except OSError as e:  # (nats-server's startMonitoring: fatal, with Go's net.Listen error)
                why = os.strerror(e.errno) if e.errno else str(e)
                hp = f"[{host}]:{mport}" if ":" in host else f"{host}:{mport}"
                self._fatal(f"Can't start monitoring: can't listen to the monitor port: listen tcp {hp}: bind: "
                            f"{why[:1].lower()}{why[1:]}")
        if self.websocket is not None:
            # before the client port serves, as nats-server's Start() does:
            # a client served there finds the websocket port up too
            await self.websocket.start()
        port = 0 if o.port in (0, -1) else o.port
        client_cls = TracingClient if o.trace else Client
        if listener is not None:
            self._tcp = await self.loop.create_server(lambda: client_cls(self), sock=listener, backlog=1024)
        else:
            self._tcp = await self.loop.create_server(
                lambda: client_cls(self), o.host, port, reuse_address=True, backlog=1024
            )
        for s in self._tcp.sockets:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.port = self._tcp.sockets[0].getsockname()[1]
        if o.client_advertise:  # (nats-server's setInfoHostPort, once the port is known: fatal)
            try:
                advertised_host_port(o.client_advertise, self.port)
            except ValueError as e:
                self._tcp.close()
                self._fatal(f"Error setting server INFO with ClientAdvertise value of {o.client_advertise}, err={e}")
        log.info("Listening for client connections on %s:%d", o.host, self.port)
        if self.tls_context is not None:
            log.info("TLS required for client connections")
        log.info("Server is ready")

    def _fatal(self, why: str) -> None:
        """nats-server's Fatalf during the start: the log line, then the end (StartFailed)."""
        self.logger.critical("%s", why)
        raise StartFailed(why)

    async def _start_jetstreams(self, JetStream, store_dir: Path) -> None:
        """A JetStream for each account that has it (or for $G when none
        does); ``self.jetstream`` is the one on the server's own index."""
        sufficient_resources = jetstream().sufficient_resources
        accounts = self.accounts.with_jetstream()
        if not accounts:
            self.jetstreams["$G"] = self.jetstream = JetStream(self.messaging, store_dir)
            await self.jetstream.start()
            return
        for acc in accounts:
            why = sufficient_resources(self.messaging, acc.jetstream_limits)
            if why:  # the account's limits do not fit in the server's: no start, as nats-server
                await self.stop_jetstreams()
                raise ConfigError(f"Can't start JetStream: Error enabling jetstream on configured accounts: {why}")
            if acc.index is self.index:
                face = self.messaging
            else:  # the account's own subject space, and an internal client of the account
                face = Messaging(self, acc.index, InternalClient(self, acc), acc, acc.interest_listeners)
            js = JetStream(face, store_dir, acc.jetstream_limits, account=acc.name,
                           legacy_store=len(accounts) == 1)
            await js.start()
            acc.jetstream = self.jetstreams[acc.name] = js
        self.jetstream = accounts[0].jetstream

    async def stop_jetstreams(self) -> None:
        for js in list(self.jetstreams.values()):
            await js.stop()
        self.jetstreams.clear()
        for acc in self.accounts.with_jetstream():
            acc.jetstream = None
        self.jetstream = None

    def stop_listening(self) -> None:
        """Accept no more connections (lame duck mode, shutdown)."""
        if self._tcp is not None:
            self._tcp.close()
        if self.websocket is not None:
            self.websocket.close()

    async def stop(self) -> None:
        self.stop_listening()
        for c in list(self.clients.values()):
            c.close("Server Shutdown")
        if self.monitor is not None:
            await self.monitor.stop()
            self.monitor = None
        await self.stop_jetstreams()
        if self._tcp is not None:
            try:
                await asyncio.wait_for(self._tcp.wait_closed(), 2)
            except asyncio.TimeoutError:
                pass
            self._tcp = None
        if self.websocket is not None:
            await self.websocket.wait_closed()
        self.logger.info("Server Exiting..")

    # -- clients ---------------------------------------------------------------
    def register(self, client: Client) -> int:
        self._next_cid += 1
        self.total_connections += 1
        self.clients[self._next_cid] = client
        if len(self.clients) > self.opts.max_connections:
            client.queue_out(p.ERR_MAX_CONNECTIONS)
            self.loop.call_soon(client.close, "Maximum Connections Exceeded")
        return self._next_cid

    def internal_clients(self, n: int) -> None:
        """nats-server gives each of its internal clients a client id from the
        counter connections take theirs from (a stream makes 3, a consumer 2,
        and a mirror or source a consumer on its origin): as many ids go by,
        so a connection gets the id it would get there."""
        self._next_cid += n

    def unregister(self, client: Client) -> None:
        if self.clients.pop(client.cid, None) is None:
            return
        subs = dict(client.subs)
        for sub in subs.values():
            self.remove_sub(sub)
        client.subs.clear()
        self._gone_out_msgs += client.out_msgs
        self._gone_out_bytes += client.out_bytes
        client.drop_output()
        # /connz?state=closed shows these, as nats-server keeps its closed ring
        self.closed_conns.append(
            {"client": client, "cid": client.cid, "name": client.name, "subs": subs,
             "reason": client.close_reason or "Client Closed", "stop": time.time()}
        )
        del self.closed_conns[:-self.opts.max_closed_clients or len(self.closed_conns)]

    def client_info(self, client: Client, connect_info: bool = False) -> dict:
        info = {
            "server_id": self.server_id,
            "server_name": self.server_name,
            "version": self.version,
            "proto": 1,
            "go": "natslab (python)",
            "host": self.opts.host,
            "port": self.port,
            "headers": not self.opts.no_header_support,
        }
        if self.opts.client_advertise:  # (nats-server's setInfoHostPort)
            info["host"], info["port"] = _advertised(self.opts.client_advertise, self.port)
        # (in nats-server's order)
        if self.auth_required and not self.auth.no_auth_user or \
                client.ws is not None and self.auth.ws_override:  # (a websocket auth override says so)
            info["auth_required"] = True
        if self.tls_context is not None:
            o = self.opts
            if not o.allow_non_tls or o.tls.handshake_first:  # (handshake_first requires TLS all the same)
                info["tls_required"] = True
            if o.tls.verify:
                info["tls_verify"] = True
            if o.allow_non_tls:  # TLS and plain clients on one port: the client chooses
                info["tls_available"] = True
        if client.ws is not None:
            client.ws.adjust_info(info)
        info["max_payload"] = self.opts.max_payload
        if self.jetstream is not None:
            info["jetstream"] = True
        info["client_id"] = client.cid
        info["client_ip"] = client.host
        if client.nonce and not connect_info:
            info["nonce"] = client.nonce.decode()
        if self.jetstream is not None and self.opts.js_domain:
            info["domain"] = self.opts.js_domain
        if self.jetstream is not None:
            info["api_lvl"] = self.jetstream.api_level
        if connect_info:
            info["connect_info"] = True
            info["remote_account"] = client.account.name if client.account is not None else "$G"
            if client.account is not None and client.account is self.accounts.system:
                info["acc_is_sys"] = True  # (nats account info: "System Account: true")
        info["natslab"] = True
        return info

    def check_auth(self, opts: dict, client=None):
        """False when the credentials are wrong; otherwise the matched user's
        entry (a dict, possibly with ``permissions``) or True (server/auth.py)."""
        entry = self.auth.check(client, opts)
        if entry and client is not None:
            # a configured account, or $G when another account has the server's index
            client.account = self.accounts.get(entry.get("account") if isinstance(entry, dict) else None)
            mappings = client.account.mappings if client.account is not None else self.opts.mappings
            if mappings is not client.mappings:
                client.mappings = mappings
            if client.account is not None and client.account.limits is not None:
                entry = apply_limits(client, client.account, entry)
        return entry

    # -- subscriptions ---------------------------------------------------------
    def add_sub(self, sub: Subscription) -> None:
        acc = sub.client.account
        if acc is not None and acc.stream_sources and not sub.client.internal:
            self.loop.call_soon(self.accounts.notify_exporters, acc, sub.subject, True)
        if acc is not None and acc.index is not self.index:  # a configured account's own subject space
            acc.index.insert(sub)
            if acc.interest_listeners and not sub.client.internal:
                self._notify_interest(sub.subject.decode(), True, acc.interest_listeners)
            return
        self.index.insert(sub)
        if self.interest_listeners and not sub.client.internal:
            self._notify_interest(sub.subject.decode(), True)

    def remove_sub(self, sub: Subscription) -> None:
        acc = sub.client.account
        if acc is not None and acc.stream_sources and not sub.client.internal and self.loop is not None:
            self.loop.call_soon(self.accounts.notify_exporters, acc, sub.subject, False)
        if acc is not None and acc.index is not self.index:
            if acc.index.remove(sub) and acc.interest_listeners and not sub.client.internal:
                self._notify_interest(sub.subject.decode(), False, acc.interest_listeners)
            return
        if self.index.remove(sub) and self.interest_listeners and not sub.client.internal:
            self._notify_interest(sub.subject.decode(), False)

    def _notify_interest(self, subject: str, added: bool, listeners: list | None = None) -> None:
        """Tell the listeners (the server's, or an account's) of a client subscription."""
        for fn in list(self.interest_listeners if listeners is None else listeners):
            try:
                fn(subject, added)
            except Exception:
                self.logger.exception("interest listener failed")

    @staticmethod
    def deliver_matched(r: tuple, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        """A consumer delivery to what its deliver subject matched (``r``)."""
        router.deliver_results(None, None, r, ((subject, reply, hdr, payload),))

    # deliver_matched for each (subject, reply, hdr, payload) of a run:
    # deliver_matched_run(r, msgs), the road itself (a partial: no frame of its own)
    deliver_matched_run = staticmethod(partial(router.deliver_results, None, None))

    def write_behind(self, store) -> None:
        """A file store holds records (and the replies that wait for them):
        have it write them out before anything is next written to a client."""
        self._writers.append(store)
        self.schedule_flush()

    def schedule_flush(self) -> None:
        """Write what internal producers queued, once the loop comes round
        (during a client's read, its end does it: no extra turn)."""
        if not self._flush_scheduled and not self.reading and (self._dirty or self._writers):
            self._flush_scheduled = True
            self.loop.call_soon(self._flush_from_loop)

    # -- routing (the hot path) ------------------------------------------------
    def route(self, pub, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        if pub.account is not None:  # a client of a configured account (server/accounts.py)
            self.accounts.route(pub, subject, reply, hdr, payload)
            return
        r = self._match_cache.get(subject)
        if r is None:
            r = self.index.match_miss(subject)
        self.route_matched(pub, r, subject, reply, hdr, payload)

    def route_matched(self, pub, r: tuple, subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes) -> None:
        """route for a subject already matched (``r``)."""
        if not pub.internal:
            self.in_msgs += 1
            self.in_bytes += len(payload) + (len(hdr) if hdr else 0)
        if hdr is not None and b"Nats-Trace-Dest:" in hdr:
            self.current_publisher = pub
            if self.msg_trace.route(pub, subject, reply, hdr, payload, r):
                return  # traced (server/msgtrace.py)
        router.deliver_results(self, pub, r, ((subject, reply, hdr, payload),))

    def _no_responders(self, pub: Client, subject: bytes, reply: bytes, index: SubjectIndex | None = None) -> None:
        router.no_responders(index or self.index, pub, subject, reply)

    def mark_dirty(self, client: Client) -> None:
        self._dirty.append(client)

    def _flush_from_loop(self) -> None:
        # internal producers (timers) are not stalled, so forget back-ups here
        self.flush_dirty()
        self.backed_up.clear()

    def flush_dirty(self) -> None:
        """Write buffered store records, then every client's queued output
        (stores first: a PubAck leaves only after its message is written).
        What is queued while this runs is written by it too, so nothing
        schedules another turn for it meanwhile."""
        self._flush_scheduled = True
        try:
            while self._writers or self._dirty:
                if self._writers:
                    writers, self._writers = self._writers, []
                    for store in writers:
                        store.write_out()
                dirty, self._dirty = self._dirty, []
                for c in dirty:
                    c.flush()
        finally:
            self._flush_scheduled = False

    def flush_between_slices(self) -> None:
        """flush_dirty between two slices of one big read
        (parser.Parser.data_received): a store whose held replies wait for
        a sync (group commit) waits for the read's end, so one read costs
        one sync however it is sliced; the rest is written now."""
        later = [w for w in self._writers if w.sync_owed()]
        if later:
            self._writers = [w for w in self._writers if w not in later]
        try:
            self.flush_dirty()
        finally:
            if later:
                self._writers[:0] = later

    # -- stats -----------------------------------------------------------------
    @property
    def out_msgs(self) -> int:
        return self._gone_out_msgs + sum(c.out_msgs for c in self.clients.values())

    @property
    def out_bytes(self) -> int:
        return self._gone_out_bytes + sum(c.out_bytes for c in self.clients.values())

    @property
    def num_subscriptions(self) -> int:
        return self.index.count


def default_store_dir() -> Path:
    from platformdirs import user_data_dir

    return Path(user_data_dir("natslab")) / "store"


class StartFailed(Exception):
    """The start failed, and said why in its log (nats-server's Fatalf):
    the process ends with status 1 and nothing more."""


def _advertised(spec: str, port: int) -> tuple[str, int]:
    """client_advertise as INFO's host and port (nats-server's parseHostPort:
    the listen port when the value has none, or has 0 or -1); a value it
    refuses (the start refuses it: ``cli``) keeps the host and port given."""
    try:
        return advertised_host_port(spec, port)
    except ValueError:
        return spec, port


def _split_host_port(hp: str) -> tuple[str, str]:
    """Go's net.SplitHostPort, with its AddrError texts."""
    def err(why: str):
        return ValueError(f"address {hp}: {why}" if hp else why)

    i = hp.rfind(":")
    if i < 0:
        raise err("missing port in address")
    j = k = 0
    if hp.startswith("["):
        end = hp.find("]")
        if end < 0:
            raise err("missing ']' in address")
        if end + 1 == len(hp):
            raise err("missing port in address")
        if end + 1 != i:
            raise err("too many colons in address" if hp[end + 1] == ":" else "missing port in address")
        host, j, k = hp[1:end], 1, end + 1
    else:
        host = hp[:i]
        if ":" in host:
            raise err("too many colons in address")
    if "[" in hp[j:]:
        raise err("unexpected '[' in address")
    if "]" in hp[k:]:
        raise err("unexpected ']' in address")
    return host, hp[i + 1:]


def advertised_host_port(spec: str, port: int) -> tuple[str, int]:
    """nats-server's parseHostPort of client_advertise: (host, port), the
    listen port when the value has none (or 0, -1); ValueError with the
    text nats-server's start fails with."""
    import re

    try:
        host, p = _split_host_port(spec)
    except ValueError as e:
        if "missing port" not in str(e):
            raise
        host, p = _split_host_port(f"{spec}:{port}")
    q = p.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", q):
        raise ValueError(f'strconv.Atoi: parsing "{q}": invalid syntax')
    n = int(q)
    if not -(1 << 63) <= n < (1 << 63):
        raise ValueError(f'strconv.Atoi: parsing "{q}": value out of range')
    return host.strip(), port if n in (0, -1) else n
