"""``natslab server`` without the ssl module when nothing can need TLS.

asyncio imports ``ssl`` at its own import (it is optional there: a Python
built without ssl runs asyncio without TLS). Loading it initialises OpenSSL:
about a seventh of a start's instructions and 4.5 MB of the process's
resident memory, for nothing on a server without TLS. The command line
decides, before asyncio is imported: with no ``--tls*`` flag and no config
file (which may have a ``tls {}`` or ``websocket {}`` block) nothing in the
broker can start TLS, so ``ssl`` is marked as absent (``sys.modules["ssl"]
= None``, the import system's documented way to make an import fail) and
asyncio takes the path it takes on a Python without ssl. Any flag that
might mean TLS keeps ssl. Only the headless command does this; a program
that embeds the broker (the workbench) imports what it likes.
"""

from __future__ import annotations

import sys


def may_need_tls(argv: list[str]) -> bool:
    """Could these ``natslab server`` arguments configure TLS? (A config
    file, any flag spelled with "tls", or a flag we cannot read.)"""
    for arg in argv:
        if not arg.startswith("-"):
            continue  # a flag's value
        name = arg.lstrip("-").split("=", 1)[0].lower()
        if name in ("c", "config") or "tls" in name:
            return True
    return False


def skip_ssl_unless_needed(argv: list[str]) -> None:
    """Call before anything imports asyncio."""
    if "ssl" not in sys.modules and not may_need_tls(argv):
        sys.modules["ssl"] = None
