import sys

from mpc_tracking.cli.main import main

sys.exit(main())
