"""Type stub of an old module path: it imports the moved module (``mpc_tracking.models.MOVED_MODULES``)."""
from mpc_tracking.models.plants.ackermann3d.car import *  # noqa: F403
