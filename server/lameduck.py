"""Lame duck mode: a graceful goodbye, as nats-server's lameDuckMode.

On SIGUSR2 (``natslab server --signal ldm=<pid|pidfile>`` sends it) the
server stops accepting connections, stops JetStream, tells its clients with
an INFO carrying ``"ldm": true`` (so a client can move elsewhere before it is
pushed), waits ``lame_duck_grace_period``, then closes the clients one after
another spread over the rest of ``lame_duck_duration`` (at most a second
apart), and shuts down. SIGTERM is ignored meanwhile, as by nats-server.
"""

from __future__ import annotations

import asyncio
import random

from . import protocol as p

LAME_DUCK_DURATION = 120.0  # nats-server's defaults
LAME_DUCK_GRACE_PERIOD = 10.0
MIN_LAME_DUCK_DURATION = 30.0  # what a config file may set at the least


def ldm_info(srv, client) -> bytes:
    """The async INFO a client gets on entering lame duck mode: the usual
    fields (as on connect, without nonce) plus ``ldm``."""
    info = srv.client_info(client)
    info.pop("nonce", None)
    out = {}
    for k, v in info.items():
        if k in ("api_lvl", "natslab") and "ldm" not in out:
            out["ldm"] = True
        out[k] = v
    out.setdefault("ldm", True)
    return p.info_line(out)


async def lame_duck(srv) -> None:
    """Run lame duck mode to its end; the caller then shuts the server down."""
    if srv.ldm:
        return
    log = srv.logger
    o = srv.opts
    log.info("Entering lame duck mode, stop accepting new clients")
    srv.ldm = True
    srv.stop_listening()
    await srv.stop_jetstreams()
    clients = [c for c in srv.clients.values() if not c.closed]
    if not clients:
        return
    grace = o.lame_duck_grace_period
    dur = o.lame_duck_duration - grace
    if dur <= 0:
        dur = 1.0
    # a pause between two closes, spread over the duration (at most 1 s);
    # with more clients than the duration has nanoseconds they go in batches
    si = min(dur / len(clients), 1.0)
    for c in clients:
        # only to clients that take async INFO (protocol 1, first PONG sent)
        if c.connected and not c.closed and c.takes_async_info():
            c.queue_out(ldm_info(srv, c))
    srv.flush_dirty()
    await asyncio.sleep(grace)
    log.info("Closing existing clients")
    for i, c in enumerate(clients):
        c.close("Server Shutdown")
        srv.flush_dirty()
        if i == len(clients) - 1:
            break
        await asyncio.sleep(max(random.uniform(0, si), si / 2))
