"""The ``natslab`` console script: ``natslab server ...`` runs the headless
broker, anything else opens the workbench."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "server":
        from natslab.server.nossl import skip_ssl_unless_needed

        skip_ssl_unless_needed(argv[1:])  # before anything imports asyncio
        from natslab.server.flags import listen_early

        listener = listen_early(argv[1:])  # (clients wait in the backlog from here: server/flags.py)
        from natslab.server.cli import main as server_main

        return server_main(argv[1:], listener=listener)
    from natslab.tui.cli import main as tui_main

    return tui_main(argv)


if __name__ == "__main__":
    sys.exit(main())
