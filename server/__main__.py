import sys

from natslab.server.cli import main

sys.exit(main())
