"""``natslab [options]``: open the workbench on an embedded broker or an existing server."""

from __future__ import annotations

import argparse
import gc
import sys
from pathlib import Path

from .broker import BrokerSpec
from .client import ConnectOptions
from .config import load_context, selected_context_name

EPILOG = """\
With no options natslab starts its own JetStream broker on 127.0.0.1:4222 (the
next free port if that one is taken), stores data under the user data dir and
shows the URL other programs should use in the header.

--context NAME reads the nats CLI context $XDG_CONFIG_HOME/nats/context/NAME.json;
--context without a name uses the context selected with `nats context select`.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="natslab",
        description="A terminal workbench for NATS JetStream.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    emb = p.add_argument_group("embedded broker")
    emb.add_argument("--port", type=int, help="client port (default 4222, next free if taken); with --web the web page's port (default 8000)")
    emb.add_argument("--store-dir", type=Path, help="JetStream store directory (default: user data dir)")
    emb.add_argument("--memory", action="store_true", help="throwaway store, deleted on exit")
    emb.add_argument("--monitor-port", type=int, default=8222, metavar="PORT",
                     help="monitoring (HTTP) port of the embedded broker (default 8222, next free if taken; 0 = none)")
    emb.add_argument("--history-mb", type=float, default=50, metavar="MB",
                     help="history the embedded broker keeps for the time slider (default 50 MB; 0 = none)")
    rem = p.add_argument_group("existing server")
    rem.add_argument("--connect", metavar="URL", help="attach to this server instead of starting one")
    rem.add_argument("--context", nargs="?", const="", metavar="NAME", help="use a nats CLI context")
    rem.add_argument("--monitor", metavar="URL", help="monitoring endpoint for the Connections pane (default http://HOST:8222)")
    web = p.add_argument_group("in a browser (pip install 'natslab[web]')")
    web.add_argument("--web", action="store_true",
                     help="serve the workbench on http://127.0.0.1:8000 (--port) through textual-serve; "
                          "all viewers share one broker (the embedded one, on 4222 or the next free port)")
    web.add_argument("--web-host", default="127.0.0.1", metavar="HOST", help="address --web listens on (default 127.0.0.1)")
    p.add_argument("--read-only", action="store_true",
                   help="browse everything, change nothing (no create, delete, purge, publish, fetch or ack)")
    auth = p.add_argument_group("credentials (override the context's)")
    auth.add_argument("--user", help="user name")
    auth.add_argument("--password", help="password for --user")
    auth.add_argument("--token", help="authentication token")
    auth.add_argument("--creds", metavar="FILE", help="user credentials (.creds: a user JWT and its nkey seed)")
    auth.add_argument("--nkey", metavar="FILE", help="user nkey seed file")
    tls = p.add_argument_group("TLS (override the context's)")
    tls.add_argument("--tlscert", metavar="FILE", help="client certificate (PEM), with --tlskey")
    tls.add_argument("--tlskey", metavar="FILE", help="private key of --tlscert (PEM)")
    tls.add_argument("--tlscacert", metavar="FILE", help="CA certificate(s) to verify the server with (PEM)")
    tls.add_argument("--tlsfirst", action="store_true", help="TLS handshake before the server's INFO (handshake_first)")
    return p


def resolve(args: argparse.Namespace) -> tuple[ConnectOptions | None, BrokerSpec | None]:
    """Turn parsed flags into (connect options, broker spec). Raises ValueError."""
    opts: ConnectOptions | None = None
    if args.context is not None:
        name = args.context or selected_context_name()
        if not name:
            raise ValueError("--context given without a name and no nats context is selected")
        ctx = load_context(name)
        opts = ConnectOptions(
            url=args.connect or ctx.url or "nats://127.0.0.1:4222",
            user=ctx.user, password=ctx.password, token=ctx.token, creds=ctx.creds, nkey=ctx.nkey,
            tls_cert=ctx.cert, tls_key=ctx.key, tls_ca=ctx.ca, tls_first=ctx.tls_first,
        )
    elif args.connect:
        opts = ConnectOptions(url=args.connect)
    if opts is not None:
        opts.user = args.user or opts.user
        opts.password = args.password or opts.password
        opts.token = args.token or opts.token
        opts.creds = args.creds or opts.creds
        opts.nkey = args.nkey or opts.nkey
        opts.check_credential_files()  # (as the TLS files: a missing one is said now)
        opts.tls_cert = args.tlscert or opts.tls_cert
        opts.tls_key = args.tlskey or opts.tls_key
        opts.tls_ca = args.tlscacert or opts.tls_ca
        opts.tls_first = args.tlsfirst or opts.tls_first
        opts.ssl_context()  # a missing or unusable file is said now, not as a connect retry loop
        return opts, None
    if args.tlscert or args.tlskey or args.tlscacert or args.tlsfirst:
        raise ValueError("--tls* options are for --connect/--context (the embedded broker runs without TLS)")
    if args.memory and args.store_dir:
        raise ValueError("--memory and --store-dir exclude each other")
    if not 0 <= args.monitor_port <= 65535:
        raise ValueError(f"--monitor-port {args.monitor_port}: a port is 0-65535 (0 = no monitoring)")
    broker_port = 4222 if args.web or args.port is None else args.port  # (--web: --port is the page's)
    spec = BrokerSpec(port=broker_port, store_dir=args.store_dir, memory=args.memory, monitor_port=args.monitor_port,
                      history_mb=args.history_mb)
    creds = ConnectOptions(user=args.user, password=args.password, token=args.token, creds=args.creds, nkey=args.nkey)
    creds.check_credential_files()
    return creds, spec


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        options, spec = resolve(args)
    except ValueError as exc:
        print(f"natslab: {exc}", file=sys.stderr)
        return 2
    if args.web:
        from .web import run_web

        if args.port is None:
            args.port = 8000
        return run_web(args, spec)
    # Importing Textual and building the first screen allocate so many objects
    # that the cyclic collector ran ~130 times before the first frame (measured
    # ~0.1 s of the first paint). It is paused until the first frame is painted
    # (NatslabApp.first_frame_painted turns it back on).
    gc.disable()
    try:
        from .app import NatslabApp

        app = NatslabApp(connect=options, broker=spec, monitor_url=args.monitor, read_only=args.read_only)
        app.gc_paused_until_paint = True
        try:
            app.run()
        finally:
            app.stop_embedded_now()  # normally already stopped by quit
    finally:
        gc.enable()
    return app.return_code or 0
