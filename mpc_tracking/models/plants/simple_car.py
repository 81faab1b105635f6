"""Simple car with a minimum turning radius, integrated with an adaptive ODE solver.

State ``(x, y, z, theta)``; input ``(v, delta)`` (forward velocity [m/s], wheel angle [rad]). The
wheel angle is saturated just inside +-pi/4 (``max_wheel_angle``), so the minimum turning radius is
``L / tan(max_wheel_angle)``::

    x' = v cos(theta),  y' = v sin(theta),  z' = 0,  theta' = v tan(delta) / L

Each step is one :func:`scipy.integrate.solve_ivp` call (adaptive RK45); the velocity output is the
position change over the last step divided by its length, as simulator motion-model plugins do.
The pose origin is the rear axle (``reference_offset = 0``).
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from mpc_tracking.errors import ModelError, NonFiniteStateError
from mpc_tracking.models.base import MotionModel, Pose, Velocity
from mpc_tracking.models.integrators import solve_ivp_step

__all__ = ["SimpleCar"]


class SimpleCar(MotionModel):
    """Dubins-like car with saturated wheel angle; adaptive scipy integration."""

    name = "simple_car"
    STATE_NAMES = ("x", "y", "z", "theta")
    INPUT_NAMES = ("v", "delta")
    STATE_UNITS = ("m", "m", "m", "rad")
    INPUT_UNITS = ("m/s", "rad")
    PARAMS: ClassVar[dict[str, tuple[Any, str]]] = {
        "wheelbase": (2.7, "distance rear to front axle L [m]"),
        "max_wheel_angle": (np.pi / 4 - 1e-3, "wheel-angle saturation, must be < pi/4 [rad]"),
        "rtol": (1e-8, "solve_ivp relative tolerance"),
        "atol": (1e-10, "solve_ivp absolute tolerance"),
        "method": ("RK45", "solve_ivp method"),
    }
    integrator = "solve_ivp"
    max_substep = None
    reference_offset = 0.0

    def _check_params(self, p: dict) -> None:
        super()._check_params(p)
        self._require_positive(p, "wheelbase", "max_wheel_angle", "rtol", "atol")
        if not p["max_wheel_angle"] < np.pi / 4:
            raise ModelError(f"{self.name}: parameter max_wheel_angle must be < pi/4 rad, got {p['max_wheel_angle']!r}")

    @property
    def min_turning_radius(self) -> float:
        """L / tan(max_wheel_angle) [m]."""
        return self.params["wheelbase"] / np.tan(self.params["max_wheel_angle"])

    def _initial_state(self, info: dict[str, float]) -> np.ndarray:
        th = info["yaw"]
        self._vel = np.array([info["speed"] * np.cos(th), info["speed"] * np.sin(th), 0.0])
        self._yaw_rate = 0.0
        return np.array([info["x"], info["y"], info["z"], th])

    def saturate(self, delta: float) -> float:
        """Wheel angle clipped to +-max_wheel_angle."""
        m = self.params["max_wheel_angle"]
        return float(np.clip(delta, -m, m))

    def xdot(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        v, delta = u[0], self.saturate(u[1])
        return np.array([v * np.cos(x[3]), v * np.sin(x[3]), 0.0, v * np.tan(delta) / self.params["wheelbase"]])

    def step(self, t: float, dt: float, u) -> np.ndarray:
        u = self.check_input(u)
        if not (np.isfinite(dt) and dt > 0):
            raise ModelError(f"{self.name}.step: dt must be a positive number of seconds, got {dt}")
        p = self.params
        x0 = self._state
        x = solve_ivp_step(self.xdot, x0, u, dt, method=p["method"], rtol=p["rtol"], atol=p["atol"])
        if not np.all(np.isfinite(x)):
            raise NonFiniteStateError(f"{self.name}.step: the state became non-finite at t = {t + dt:.3f} s")
        self._vel = (x[:3] - x0[:3]) / dt
        self._yaw_rate = (x[3] - x0[3]) / dt
        self._state = x
        self.t = t + dt
        return x.copy()

    @property
    def pose(self) -> Pose:
        x = self._state
        return Pose(float(x[0]), float(x[1]), float(x[2]), 0.0, 0.0, float(x[3]))

    @property
    def velocity(self) -> Velocity:
        return Velocity(self._vel.copy(), np.array([0.0, 0.0, self._yaw_rate]))
