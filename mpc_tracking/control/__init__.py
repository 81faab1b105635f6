"""Controllers behind one protocol: what the closed loop needs from any of them, and the baselines.

* :class:`Controller` (:mod:`~mpc_tracking.control.protocol`): the members
  :func:`~mpc_tracking.simulation.simulate` uses; :class:`Command` what it reads from an answer;
  :class:`ControlCommand` the answer of a controller that predicts nothing.
* :func:`as_controller` (:mod:`~mpc_tracking.control.adapters`): a :class:`~mpc_tracking.mpc.controller.SpatialMPC`
  or a cvxpy reference controller seen through the protocol.
* :class:`PurePursuit` and :class:`Stanley`: the geometric baselines, with :class:`PurePursuitParams`,
  :class:`StanleyParams` and the shared :class:`TrackingLimits`.

Layering: ``simulation -> control -> mpc`` (the MPC does not know this package).
"""
from __future__ import annotations

from mpc_tracking.control.adapters import CvxpyController, SpatialMPCController, as_controller
from mpc_tracking.control.geometric import GeometricController, TrackingLimits
from mpc_tracking.control.protocol import Command, ControlCommand, Controller, reference_speed
from mpc_tracking.control.pure_pursuit import PurePursuit, PurePursuitParams
from mpc_tracking.control.stanley import Stanley, StanleyParams

__all__ = [
    "Controller", "Command", "ControlCommand", "reference_speed", "as_controller", "SpatialMPCController",
    "CvxpyController", "GeometricController", "TrackingLimits", "PurePursuit", "PurePursuitParams", "Stanley",
    "StanleyParams", "CONTROLLER_TYPES",
]

#: the controller types a scenario selects with ``controller.type``
CONTROLLER_TYPES = ("mpc", "pure_pursuit", "stanley")
