"""Second-order unicycle plant.

State ``(x, y, theta, v)``; input ``(u_omega, u_a)`` (yaw rate [rad/s], acceleration [m/s^2])::

    x' = v cos(theta),  y' = v sin(theta),  theta' = u_omega,  v' = u_a

Heading 0 along +x, positive turns left. It has no wheelbase, so its pose origin is the
controller's reference point (``reference_offset = 0``) and the ``unicycle_pi`` actuator maps the
MPC's steering angle to a yaw rate ``u_omega = v tan(delta) / L`` with its own ``wheelbase``.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from mpc_tracking.models.base import MotionModel, Pose, Velocity

__all__ = ["Unicycle"]


class Unicycle(MotionModel):
    """Second-order unicycle integrated with RK4 substeps (exact for constant inputs up to O(h^4))."""

    name = "unicycle"
    STATE_NAMES = ("x", "y", "theta", "v")
    INPUT_NAMES = ("u_omega", "u_a")
    STATE_UNITS = ("m", "m", "rad", "m/s")
    INPUT_UNITS = ("rad/s", "m/s^2")
    PARAMS: ClassVar[dict[str, tuple[Any, str]]] = {"max_substep": (0.01, "longest RK4 substep [s]")}
    default_actuator = "unicycle_pi"
    reference_offset = 0.0

    def _check_params(self, p: dict) -> None:
        super()._check_params(p)
        self._require_positive(p, "max_substep")
        self.max_substep = float(p["max_substep"])

    def _initial_state(self, info: dict[str, float]) -> np.ndarray:
        self._z = info["z"]
        self._omega = 0.0
        return np.array([info["x"], info["y"], info["yaw"], info["speed"]])

    def xdot(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.array([x[3] * np.cos(x[2]), x[3] * np.sin(x[2]), u[0], u[1]])

    def step(self, t: float, dt: float, u) -> np.ndarray:
        ua = self.check_input(u)
        self._omega = float(ua[0])
        return self._advance(t, dt, ua)

    @staticmethod
    def closed_form(x0: np.ndarray, u_omega: float, u_a: float, t: np.ndarray) -> np.ndarray:
        """Exact solution for constant inputs (x, y, theta, v) at times ``t`` (k,) -> (k, 4).

        With ``theta = theta0 + w t`` and ``v = v0 + a t``:
        ``x = x0 + [v sin(theta) / w + a cos(theta) / w^2]_0^t``,
        ``y = y0 + [-v cos(theta) / w + a sin(theta) / w^2]_0^t`` (w != 0; the straight line otherwise).
        """
        x0 = np.asarray(x0, dtype=float)
        t = np.asarray(t, dtype=float)
        th = x0[2] + u_omega * t
        v = x0[3] + u_a * t
        if abs(u_omega) < 1e-12:
            d = x0[3] * t + 0.5 * u_a * t * t
            return np.stack([x0[0] + d * np.cos(x0[2]), x0[1] + d * np.sin(x0[2]), th, v], axis=-1)
        w = u_omega
        fx = lambda th_, v_: v_ * np.sin(th_) / w + u_a * np.cos(th_) / w**2  # noqa: E731
        fy = lambda th_, v_: -v_ * np.cos(th_) / w + u_a * np.sin(th_) / w**2  # noqa: E731
        x = x0[0] + fx(th, v) - fx(x0[2], x0[3])
        y = x0[1] + fy(th, v) - fy(x0[2], x0[3])
        return np.stack([x, y, th, v], axis=-1)

    @property
    def pose(self) -> Pose:
        return self._planar_pose()

    @property
    def velocity(self) -> Velocity:
        x = self._state
        return Velocity(np.array([x[3] * np.cos(x[2]), x[3] * np.sin(x[2]), 0.0]), np.array([0.0, 0.0, self._omega]))

    @property
    def speed(self) -> float:
        return float(self._state[3])
