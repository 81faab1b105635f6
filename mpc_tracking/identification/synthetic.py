"""A plant whose truth is the dynamic bicycle itself: the identification's known-answer test bench.

:class:`DynamicBicyclePlant` integrates :func:`~mpc_tracking.models.prediction.spatial_dynamic.temporal_derivatives`
in time (planar pose of the centre of gravity plus ``v_x, v_y, r``) behind a first-order speed loop
with saturated acceleration::

    a_x = clip((v_cmd - v_x) / tau, -decel_max, accel_max)

so every parameter :func:`~mpc_tracking.identification.identify` fits (``mu``, ``tyre_B_f``,
``tyre_B_r``, ``tau``, ``accel_max``, ``decel_max``, ``power_per_mass``) has a true value to compare with;
``speed_max`` makes a plant that reaches only part of the manoeuvre speed. It declares its geometry
(``mass``, ``yaw_inertia``, ``l_f``, ``l_r``, ``cg_height``: the plant contract). It takes the
MPC's ``(v, delta)`` directly (actuator ``"direct"``). It is not registered by name (it would show in
``mpc-tracking models``); create it with ``DynamicBicyclePlant(params)``.

Examples
--------
>>> plant = DynamicBicyclePlant({"tau": 0.4}, {"speed": 10.0})
>>> _ = plant.step(0.0, 0.1, [11.0, 0.0])
>>> round(plant.speed, 4)        # a first-order step response: 10 + 1 (1 - exp(-0.1 / 0.4))
10.2212
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from mpc_tracking.errors import ModelError
from mpc_tracking.models.base import MotionModel, Pose, Velocity
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams, temporal_derivatives

__all__ = ["DynamicBicyclePlant"]

_BMW = DynamicParams.bmw_320i()
_DYN_KEYS = ("mass", "I_z", "l_f", "l_r", "h_cg", "mu", "tyre_B_f", "tyre_C_f", "tyre_B_r", "tyre_C_r",
             "tyre_E_f", "tyre_E_r", "v_floor", "v_blend_low", "v_blend_high", "tau_kin", "g")


class DynamicBicyclePlant(MotionModel):
    """Single-track dynamic bicycle (Pacejka lateral tyres, ``DynamicParams``) with a first-order speed loop.

    State ``(x, y, psi, v_x, v_y, r)``: CG position [m], yaw [rad], body velocities of the CG [m/s]
    and yaw rate [rad/s]; input ``(v_cmd, delta)`` [m/s, rad]. Parameters: every field of
    :class:`~mpc_tracking.models.prediction.spatial_dynamic.DynamicParams` (default:
    :meth:`~mpc_tracking.models.prediction.spatial_dynamic.DynamicParams.bmw_320i`, tyre shape C = 1.3, E = 0)
    plus ``tau``, ``accel_max``, ``decel_max``, ``power_per_mass`` (0: none) and ``speed_max`` (0: none)
    of the speed loop. ``vehicle_params`` is the
    ``DynamicParams``. The pose origin is the CG, so ``reference_offset = l_r``.
    """

    name = "dynamic_bicycle_synthetic"
    STATE_NAMES = ("x", "y", "psi", "v_x", "v_y", "r")
    INPUT_NAMES = ("v_cmd", "delta")
    STATE_UNITS = ("m", "m", "rad", "m/s", "m/s", "rad/s")
    INPUT_UNITS = ("m/s", "rad")
    PARAMS: ClassVar[dict[str, tuple[Any, str]]] = {
        **{k: (getattr(_BMW, k), f"DynamicParams.{k}") for k in _DYN_KEYS},
        "tyre_C_f": (1.3, "Pacejka shape factor C front [-]"),
        "tyre_C_r": (1.3, "Pacejka shape factor C rear [-]"),
        "tyre_E_f": (0.0, "Pacejka curvature factor E front [-]"),
        "tyre_E_r": (0.0, "Pacejka curvature factor E rear [-]"),
        "tau": (0.3, "speed-loop time constant [s]"),
        "accel_max": (4.0, "largest acceleration of the speed loop [m/s^2]"),
        "decel_max": (7.0, "largest braking deceleration of the speed loop [m/s^2]"),
        "power_per_mass": (0.0, "power limit P/m [W/kg]: a_x <= P/m / v_x; 0 = not limited"),
        "speed_max": (0.0, "top speed [m/s]: the speed command is clipped to it (a governor); 0 = none"),
    }
    default_actuator: ClassVar[str] = "direct"
    integrator: ClassVar[str] = "rk4"
    max_substep = 0.01

    def _check_params(self, p: dict[str, Any]) -> None:
        super()._check_params(p)
        self._require_positive(p, "tau", "accel_max", "decel_max")
        self.vehicle_params = DynamicParams(**{k: float(p[k]) for k in _DYN_KEYS})
        self.reference_offset = self.vehicle_params.l_r
        self._tau, self._a, self._d = float(p["tau"]), float(p["accel_max"]), float(p["decel_max"])
        for k in ("power_per_mass", "speed_max"):
            if not p[k] >= 0:
                raise ModelError(f"{self.name}: parameter {k} must be >= 0 ({self.PARAMS[k][1]}), got {p[k]!r}")
        self._power, self._vtop = float(p["power_per_mass"]), float(p["speed_max"])
        # the contract identification reads (MotionModel's declared geometry)
        vp = self.vehicle_params
        self.mass, self.yaw_inertia, self.l_f, self.l_r, self.cg_height = vp.mass, vp.I_z, vp.l_f, vp.l_r, vp.h_cg

    def _initial_state(self, info: dict[str, float]) -> np.ndarray:
        self._z = info["z"]
        return np.array([info["x"], info["y"], info["yaw"], info["speed"], 0.0, 0.0])

    def acceleration_command(self, v_x: float, v_cmd: float) -> float:
        """The speed loop's ``a_x`` [m/s²] at speed ``v_x`` for the command ``v_cmd``."""
        if self._vtop > 0:
            v_cmd = min(v_cmd, self._vtop)
        top = min(self._a, self._power / max(v_x, 0.1)) if self._power > 0 else self._a
        return float(np.clip((v_cmd - v_x) / self._tau, -self._d, top))

    def xdot(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        psi, vx, vy, r = x[2], x[3], x[4], x[5]
        ax = self.acceleration_command(vx, u[0])
        body = temporal_derivatives(np.array([0.0, 0.0, 0.0, vx, vy, r]), np.array([ax, u[1]]), 0.0,
                                    self.vehicle_params)
        c, s = np.cos(psi), np.sin(psi)
        return np.array([vx * c - vy * s, vx * s + vy * c, r, body[3], body[4], body[5]])

    @property
    def pose(self) -> Pose:
        return self._planar_pose()

    @property
    def velocity(self) -> Velocity:
        x = self._state
        c, s = np.cos(x[2]), np.sin(x[2])
        return Velocity(np.array([x[3] * c - x[4] * s, x[3] * s + x[4] * c, 0.0]), np.array([0.0, 0.0, x[5]]))
