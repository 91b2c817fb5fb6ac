"""natslab's broker: a single-node NATS server with JetStream, in pure Python.

Embedding::

    async with EmbeddedServer(port=0, jetstream=True, store_dir=path) as srv:
        nc = await nats.connect(srv.client_url)

``ServerThread`` runs the same broker on its own thread and event loop, so a
busy broker never stalls the caller's loop (the workbench uses it).
"""

from __future__ import annotations

__all__ = ["EmbeddedServer", "ServerThread", "Server", "ServerOptions", "NATS_VERSION"]

# The names are imported when first asked for (PEP 562): importing the
# package imports neither asyncio nor the broker, so ``python -m
# natslab.server`` can decide what to load before it does (server/nossl.py).
_WHERE = {"EmbeddedServer": "embedded", "ServerThread": "embedded",
          "Server": "server", "ServerOptions": "server", "NATS_VERSION": "server"}


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
