"""The spatial LTV-MPC: settings, the controller (OSQP, set up once) and the cvxpy reference backend."""
from __future__ import annotations

from mpc_tracking.mpc.controller import SpatialMPC
from mpc_tracking.mpc.settings import MPCSettings, MPCSolution, Status

__all__ = ["SpatialMPC", "MPCSettings", "MPCSolution", "Status"]
