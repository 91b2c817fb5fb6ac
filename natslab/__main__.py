import sys

from natslab.cli import main

sys.exit(main())
