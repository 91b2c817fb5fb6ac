"""``natslab server``'s command line, read before anything heavy is imported:
the flags (nats-server's spellings) and the client listener bound as soon
as they are read.

A start spends most of its time importing (the interpreter, asyncio, the
broker) and starting JetStream, recovering its streams. nats-server opens
its client port only once JetStream is up (server.go Start(): JetStream is
enabled, then websocket, leafnodes, routes, then AcceptLoop), so no client
ever talks to a half-started JetStream. ``listen_early`` binds and listens
on the client port right after the command line is read, before asyncio is
imported: from then on a client's connect() is taken into the kernel's
backlog instead of being refused, and the broker accepts it, sends INFO
and serves it at the same point as before, once everything is up. A client
that connects while the broker starts waits for its INFO a little longer;
one that would have been refused (a test that sleeps half a second after
spawning a server and connects once) is served. The broker then serves on
this very socket (Server.start(listener=...)), so what it listens on is
unchanged.

Only a start whose client address the flags alone decide is bound early:
no config file (it may set the host and port, or TLS), a host that is an
IP address (a name may resolve to several), a port that reads as one. Any
other start, and one whose bind fails (the port taken: the error is the
start's own, reported where nats-server reports it), listens where it
always did.
"""

from __future__ import annotations

import socket

from .protocol import DEFAULT_HOST, DEFAULT_PORT

USAGE = """\
Usage: natslab server [options]

Server Options:
    -a, --addr, --net <host>         Bind to host address (default: 127.0.0.1)
    -p, --port <port>                Use port for clients (default: 4222; -1 or 0 picks a free port)
    -n, --server_name <server_name>  Server name (default: auto)
    -P, --pid <file>                 File to store PID
    -sl, --signal <signal>[=<pid>]   Send signal to a natslab server process (ldm, stop, quit, term,
                                     reopen, reload); <pid> may be a PID file (default: the -P file)
    -m, --http_port <port>           Use port for http monitoring
    -c, --config <file>              Configuration file
    -t                               Test configuration and exit
    -l, --log <file>                 File to redirect log output
    -D, --debug                      Enable debugging output
    -V, --trace                      Trace the raw protocol
    -DV                              Debug and trace
        --max_payload <size>         Maximum message payload in bytes

Cluster Options (accepted and unused: natslab is a single node):
        --routes, --cluster, --cluster_name, --cluster_advertise, --cluster_listen,
        --connect_retries, --no_advertise

JetStream Options:
    -js, --jetstream                 Enable JetStream functionality
    -sd, --store_dir <dir>           Set the storage directory (default: the user data dir)

Authorization Options:
        --user <user>                User required for connections
        --pass <password>            Password required for connections
        --auth <token>               Authorization token required for connections

TLS Options:
        --tls                        Enable TLS, do not verify clients (default: false)
        --tlscert <file>             Server certificate file
        --tlskey <file>              Private key for server certificate
        --tlsverify                  Enable TLS, verify client certificates
        --tlscacert <file>           Client certificate CA for verification

Common Options:
    -h, --help                       Show this message
    -v, --version                    Show version
"""

# name -> (option key, takes a value)
_FLAGS = {
    "a": ("host", True), "addr": ("host", True), "net": ("host", True),
    "p": ("port", True), "port": ("port", True),
    "n": ("server_name", True), "server_name": ("server_name", True), "name": ("server_name", True),
    "P": ("pid", True), "pid": ("pid", True),
    "sl": ("signal", True), "signal": ("signal", True),
    "m": ("http_port", True), "http_port": ("http_port", True),
    "c": ("config", True), "config": ("config", True),
    "t": ("check_config", False),
    "l": ("log", True), "log": ("log", True),
    "D": ("debug", False), "debug": ("debug", False),
    "V": ("trace", False), "trace": ("trace", False),
    "DV": ("debug_trace", False),
    "js": ("jetstream", False), "jetstream": ("jetstream", False),
    "sd": ("store_dir", True), "store_dir": ("store_dir", True),
    "max_payload": ("max_payload", True),
    "user": ("user", True), "pass": ("password", True), "auth": ("token", True),
    "tls": ("tls", False), "tlsverify": ("tlsverify", False), "tlscert": ("tlscert", True),
    "tlskey": ("tlskey", True), "tlscacert": ("tlscacert", True),
    # a cluster's flags: taken (a production command line runs unchanged) and logged as unused
    "cluster": ("~cluster", True), "cluster_name": ("~cluster_name", True), "routes": ("~routes", True),
    "cluster_advertise": ("~cluster_advertise", True), "cluster_listen": ("~cluster_listen", True),
    "connect_retries": ("~connect_retries", True), "no_advertise": ("~no_advertise", False),
    "h": ("help", False), "help": ("help", False),
    "v": ("version", False), "version": ("version", False),
}


class UsageError(Exception):
    pass


def parse_args(argv: list[str]) -> dict:
    out: dict = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if not arg.startswith("-") or arg in ("-", "--"):
            raise UsageError(f"unexpected argument: {arg}")
        name = arg[2:] if arg.startswith("--") else arg[1:]
        value = None
        if "=" in name:
            name, value = name.split("=", 1)
        spec = _FLAGS.get(name)
        if spec is None:
            raise UsageError(f"flag provided but not defined: {arg.split('=')[0]}")
        key, takes_value = spec
        if takes_value:
            if value is None:
                if i >= len(argv):
                    raise UsageError(f"flag needs an argument: {arg}")
                value = argv[i]
                i += 1
            out[key] = value
        else:
            if value is not None and value.lower() not in ("true", "1", "false", "0"):
                raise UsageError(f"invalid boolean value {value!r} for flag {arg.split('=')[0]}")
            out[key] = value is None or value.lower() in ("true", "1")
    return out


def listen_early(argv: list[str]) -> socket.socket | None:
    """The client listener, bound and listening, for a ``natslab server``
    start whose flags alone say where it listens; None for any other start
    (and for ``-h``, ``-v``, ``-t``, ``--signal``, which start nothing)."""
    try:
        flags = parse_args(argv)
    except UsageError:
        return None  # (reported by the start)
    if any(k in flags for k in ("config", "help", "version", "signal", "check_config")):
        return None
    host = flags.get("host", DEFAULT_HOST)
    try:
        port = int(flags.get("port", DEFAULT_PORT))
    except ValueError:
        return None
    if not -1 <= port <= 65535:
        return None
    family = _ip_family(host)
    if family is None:
        return None
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # as asyncio's create_server(reuse_address=True) binds
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, max(port, 0)))
        sock.listen(1024)
    except OSError:
        sock.close()
        return None
    return sock


def early_listener_fits(sock: socket.socket, host: str, port: int) -> bool:
    """Is ``sock`` (from listen_early) the listener these final options ask
    for? (With no config file they always agree; this keeps it so.)"""
    bound_host, bound_port = sock.getsockname()[:2]
    return _ip_family(host) == sock.family and socket.inet_pton(sock.family, host) == \
        socket.inet_pton(sock.family, bound_host) and port in (bound_port, 0, -1)


def _ip_family(host: str):
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return family
        except (OSError, ValueError):
            pass
    return None
