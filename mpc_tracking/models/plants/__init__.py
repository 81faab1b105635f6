"""The built-in plants: what the car really does in a closed-loop run.

Each is a :class:`~mpc_tracking.models.base.MotionModel` registered by name in
:mod:`mpc_tracking.models` (``kinematic_bicycle``, ``unicycle``, ``simple_car``, ``ackermann3d``).
The MPC predicts with a spatial model of :mod:`mpc_tracking.models.prediction` instead.
"""
from __future__ import annotations

from mpc_tracking.models.plants.ackermann3d import PRESETS, Ackermann3D, Ackermann3DBatch, Ackermann3DParams
from mpc_tracking.models.plants.kinematic_bicycle import KinematicBicycle
from mpc_tracking.models.plants.simple_car import SimpleCar
from mpc_tracking.models.plants.unicycle import Unicycle

__all__ = ["KinematicBicycle", "Unicycle", "SimpleCar", "Ackermann3D", "Ackermann3DBatch", "Ackermann3DParams",
           "PRESETS"]
