"""The 3D rigid-body Ackermann car: parameters and presets, the single-car plant and a vectorized batch."""
from __future__ import annotations

from mpc_tracking.models.plants.ackermann3d.batch import Ackermann3DBatch
from mpc_tracking.models.plants.ackermann3d.car import Ackermann3D
from mpc_tracking.models.plants.ackermann3d.params import PRESETS, Ackermann3DParams

__all__ = ["Ackermann3D", "Ackermann3DBatch", "Ackermann3DParams", "PRESETS"]
