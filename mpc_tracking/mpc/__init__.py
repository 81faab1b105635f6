"""The spatial LTV-MPC: settings, the step type, the controller, its QP back ends (registered by
name, :mod:`mpc_tracking.mpc.backends`), its safeguards and the cvxpy reference backend."""
from __future__ import annotations

from mpc_tracking.mpc.controller import SpatialMPC
from mpc_tracking.mpc.safeguards import Safeguards
from mpc_tracking.mpc.settings import MPCSettings, MPCSolution, Status
from mpc_tracking.mpc.step import StepInput

__all__ = ["SpatialMPC", "MPCSettings", "MPCSolution", "Status", "StepInput", "Safeguards"]
