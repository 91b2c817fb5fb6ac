import sys

from natslab.server.nossl import skip_ssl_unless_needed

skip_ssl_unless_needed(sys.argv[1:])  # before anything imports asyncio

from natslab.server.flags import listen_early  # noqa: E402

listener = listen_early(sys.argv[1:])  # (clients wait in the backlog from here: flags.py)

from natslab.server.cli import main  # noqa: E402

sys.exit(main(listener=listener))
