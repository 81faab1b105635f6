"""Temporal kinematic bicycle plant with optional actuator dynamics.

State ``(x, y, psi, v, delta)``: rear-axle position [m], heading [rad], actual speed [m/s] and
actual steering angle [rad]. Input ``(v_cmd, delta_cmd)``. Kinematics::

    x' = v cos(psi),  y' = v sin(psi),  psi' = v tan(delta) / L

Actuators (all off by default, so the plant follows the command exactly):
first-order speed lag (``speed_time_constant``), steering first-order lag and rate limit
(``steering_time_constant``, ``steering_rate_max``), steering saturation (``delta_max``) and a
dead time on both commands (``dead_time``).
"""
from __future__ import annotations

from collections import deque
from typing import Any, ClassVar

import numpy as np

from mpc_tracking.errors import ModelError
from mpc_tracking.models.base import MotionModel, Pose, Velocity

__all__ = ["KinematicBicycle"]


class KinematicBicycle(MotionModel):
    """Kinematic bicycle (rear-axle reference point) integrated with RK4 substeps."""

    name = "kinematic_bicycle"
    STATE_NAMES = ("x", "y", "psi", "v", "delta")
    INPUT_NAMES = ("v_cmd", "delta_cmd")
    STATE_UNITS = ("m", "m", "rad", "m/s", "rad")
    INPUT_UNITS = ("m/s", "rad")
    PARAMS: ClassVar[dict[str, tuple[Any, str]]] = {
        "wheelbase": (2.7, "distance rear to front axle L [m]"),
        "delta_max": (0.6, "steering saturation |delta| [rad]"),
        "speed_time_constant": (0.0, "first-order speed lag [s]; 0 = speed follows the command"),
        "steering_time_constant": (0.0, "first-order steering lag [s]; 0 = none"),
        "steering_rate_max": (float("inf"), "steering rate limit [rad/s]"),
        "dead_time": (0.0, "delay of both commands [s]"),
        "max_substep": (0.01, "longest RK4 substep [s]"),
    }
    #: always a number here (set from the parameter ``max_substep`` in :meth:`_check_params`)
    max_substep: float = 0.01

    def _check_params(self, p: dict[str, Any]) -> None:
        super()._check_params(p)
        self._require_positive(p, "wheelbase", "delta_max", "max_substep")
        for k in ("speed_time_constant", "steering_time_constant", "dead_time"):
            if not np.isfinite(p[k]) or p[k] < 0:
                raise self._err(f"parameter {k} must be >= 0 s, got {p[k]!r}")
        if not p["steering_rate_max"] > 0:
            raise self._err(f"parameter steering_rate_max must be > 0 rad/s, got {p['steering_rate_max']!r}")
        self.max_substep = float(p["max_substep"])
        # steering has its own dynamics (lag or rate limit); the substep bounds the lag's stiffness
        self._steer_dynamic = bool(p["steering_time_constant"] > 0 or np.isfinite(p["steering_rate_max"]))
        self._h = self.max_substep

    def _err(self, msg: str) -> ModelError:
        return ModelError(f"{self.name}: {msg}")

    def _initial_state(self, info: dict[str, float]) -> np.ndarray:
        self._queue: deque[tuple[float, np.ndarray]] = deque()  # (release time [s], command)
        self._z = info["z"]
        return np.array([info["x"], info["y"], info["yaw"], info["speed"], 0.0])

    def xdot(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        p = self.params
        psi, v, delta = x[2], x[3], x[4]
        tau_v = p["speed_time_constant"]
        dv = (u[0] - v) / tau_v if tau_v > 0 else 0.0
        if self._steer_dynamic:
            tau_d = max(p["steering_time_constant"], self._h)
            dd = np.clip((u[1] - delta) / tau_d, -p["steering_rate_max"], p["steering_rate_max"])
        else:
            dd = 0.0
        return np.array([v * np.cos(psi), v * np.sin(psi), v * np.tan(delta) / p["wheelbase"], dv, dd])

    def step(self, t: float, dt: float, u: Any) -> np.ndarray:
        u = self.check_input(u).copy()
        p = self.params
        u[1] = np.clip(u[1], -p["delta_max"], p["delta_max"])
        if p["dead_time"] > 0:
            self._queue.append((t + p["dead_time"], u))
            applied: np.ndarray | None = None
            while self._queue and self._queue[0][0] <= t + 1e-12:
                applied = self._queue.popleft()[1]
            if applied is not None:
                self._last_applied = applied
            u = getattr(self, "_last_applied", np.array([self._state[3], self._state[4]]))
        n = max(1, int(np.ceil(dt / self.max_substep - 1e-12)))
        self._h = dt / n
        if p["speed_time_constant"] == 0:
            self._state[3] = u[0]
        if not self._steer_dynamic:
            self._state[4] = u[1]
        return super().step(t, dt, u)

    @property
    def pose(self) -> Pose:
        return self._planar_pose()

    @property
    def velocity(self) -> Velocity:
        x = self._state
        psi, v, delta = x[2], x[3], x[4]
        return Velocity(
            np.array([v * np.cos(psi), v * np.sin(psi), 0.0]),
            np.array([0.0, 0.0, v * np.tan(delta) / self.params["wheelbase"]]),
        )
