"""``natslab --web``: the workbench in a browser, through textual-serve.

textual-serve runs one command per browser session. A room of viewers should
see one broker, so ``--web`` starts the embedded broker once, here (headless,
on its own thread as ``natslab server`` runs it), and every session runs the
workbench attached to it with ``--connect``. With ``--connect``/``--context``
no broker is started and each session attaches to that server. Stopping
``--web`` (Ctrl+C, SIGTERM) stops the broker.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from .broker import BrokerSpec, EmbeddedBroker

# flags a session passes on unchanged (the workbench's own, not the broker's)
_SESSION_FLAGS = ("user", "password", "token", "creds", "nkey", "tlscert", "tlskey", "tlscacert")


def session_argv(args: argparse.Namespace, connect_url: str | None, monitor_url: str | None) -> list[str]:
    """The workbench arguments of one browser session."""
    argv: list[str] = []
    if args.context is not None:
        argv += ["--context", args.context] if args.context else ["--context"]
    if connect_url:
        argv += ["--connect", connect_url]
    if monitor_url:
        argv += ["--monitor", monitor_url]
    for name in _SESSION_FLAGS:
        value = getattr(args, name)
        if value is not None:
            argv += [f"--{name}", str(value)]
    if args.tlsfirst:
        argv.append("--tlsfirst")
    if args.read_only:
        argv.append("--read-only")
    return argv


def _server_class():
    from aiohttp import web
    from textual_serve.server import Server

    class WebServer(Server):
        """textual-serve's Server, ending its sessions when it stops: aiohttp's
        shutdown otherwise waits for every open websocket (a browser tab left
        open) before the sessions' workbenches are told to quit."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.sockets: set[web.WebSocketResponse] = set()

        async def _process_messages(self, websocket, app_service) -> None:
            self.sockets.add(websocket)
            try:
                await super()._process_messages(websocket, app_service)
            finally:
                self.sockets.discard(websocket)

        async def on_shutdown(self, app: web.Application) -> None:
            for websocket in list(self.sockets):
                await websocket.close()

    return WebServer


def run_web(args: argparse.Namespace, spec: BrokerSpec | None) -> int:
    """Serve the workbench on http://HOST:PORT until interrupted."""
    try:
        Server = _server_class()
    except ImportError:
        print("natslab: --web needs textual-serve: pip install 'natslab[web]'", file=sys.stderr)
        return 2
    broker: EmbeddedBroker | None = None
    connect_url, monitor_url = args.connect, args.monitor
    try:
        if spec is not None:
            broker = EmbeddedBroker(spec)
            connect_url = broker.start()
            monitor_url = broker.monitor_url or None
            print(f"natslab: broker on {connect_url} (store {broker.store_dir})", flush=True)
        command = shlex.join([sys.executable, "-m", "natslab", *session_argv(args, connect_url, monitor_url)])
        server = Server(command, host=args.web_host, port=args.port, title="natslab")
        print(f"natslab: open {server.public_url} in a browser (Ctrl+C stops)", flush=True)
        server.serve()
    finally:
        if broker is not None:
            broker.stop()
    return 0
