"""``python -m mpc_tracking``: the ``mpc-tracking`` command line.

The guard lets process pools (sweeps) re-import this module in their workers without running
the command again.
"""
import sys

from mpc_tracking.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
