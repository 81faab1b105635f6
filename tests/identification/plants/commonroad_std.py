"""A plant from outside the project: CommonRoad's single-track drift model as a MotionModel plugin.

``vehicle_dynamics_std`` of ``commonroad-vehicle-models`` (PyPI, module ``vehiclemodels``, 3.0.2):
state ``(x, y, delta, v, psi, psi_dot, beta, omega_f, omega_r)`` (CG position [m], steering angle [rad],
CG speed [m/s], yaw [rad], yaw rate [rad/s], CG sideslip [rad], wheel spin [rad/s]), inputs steering
*rate* [rad/s] and longitudinal acceleration [m/s^2], Pacejka combined-slip tyres, engine torque on
the rear axle (``T_se = 0``) and an acceleration limit that falls as ``a_max v_switch / v`` above
``v_switch`` (a power limit). Written the way ``mpc-tracking new-model`` says (class attributes
names / units / PARAMS, ``default_actuator``, the declared geometry identification reads), with
its own actuator ``steer_rate_accel_pi`` mapping the MPC's ``(v, delta)`` to ``(delta_dot, a)``.

:func:`register` makes both available by name (``commonroad_std``, ``steer_rate_accel_pi``); the
module imports without the package and :class:`CommonroadStd` then raises a ModelError naming it.
"""
from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from mpc_tracking.actuation import Actuator, SteeringLimiter, register_actuator
from mpc_tracking.errors import InputError, ModelError
from mpc_tracking.models import MotionModel, Pose, Velocity, register_model

__all__ = ["CommonroadStd", "SteerRateAccelPI", "register", "available"]

_VEHICLES = ("parameters_vehicle1", "parameters_vehicle2", "parameters_vehicle3", "parameters_vehicle4")


def available() -> bool:
    """Whether ``commonroad-vehicle-models`` is installed."""
    try:
        import vehiclemodels  # noqa: F401
    except ImportError:
        return False
    return True


def _vehicle(n: int) -> Any:
    try:
        import importlib

        mod = importlib.import_module(f"vehiclemodels.{_VEHICLES[n - 1]}")
    except ImportError:
        raise ModelError("commonroad_std needs the package commonroad-vehicle-models "
                         "(pip install commonroad-vehicle-models)") from None
    return getattr(mod, _VEHICLES[n - 1])()


class CommonroadStd(MotionModel):
    """CommonRoad single-track drift model (``vehicle_dynamics_std``), vehicle 1-4 (default 2, a BMW 320i)."""

    name = "commonroad_std"
    STATE_NAMES = ("x", "y", "delta", "v", "psi", "psi_dot", "beta", "omega_f", "omega_r")
    INPUT_NAMES = ("delta_dot", "a")
    STATE_UNITS = ("m", "m", "rad", "m/s", "rad", "rad/s", "rad", "rad/s", "rad/s")
    INPUT_UNITS = ("rad/s", "m/s^2")
    PARAMS: ClassVar[dict[str, tuple[Any, str]]] = {
        "vehicle": (2, "CommonRoad vehicle id 1-4 (parameters_vehicleN) [-]"),
        "max_substep": (0.002, "longest RK4 substep [s]"),
    }
    integrator = "rk4"
    default_actuator: ClassVar[str] = "steer_rate_accel_pi"

    def _check_params(self, p: dict[str, Any]) -> None:
        super()._check_params(p)
        if p["vehicle"] not in (1, 2, 3, 4):
            raise ModelError(f"{self.name}: parameter vehicle must be 1, 2, 3 or 4, got {p['vehicle']!r}")
        self._require_positive(p, "max_substep")
        from vehiclemodels.vehicle_dynamics_std import vehicle_dynamics_std  # after _vehicle: named error

        self.vp = _vehicle(int(p["vehicle"]))
        self._f = vehicle_dynamics_std
        self.max_substep = float(p["max_substep"])
        # the plant contract: what identification reads (the model's load transfer uses h_s)
        vp = self.vp
        self.mass, self.yaw_inertia, self.l_f, self.l_r = float(vp.m), float(vp.I_z), float(vp.a), float(vp.b)
        self.cg_height = float(vp.h_s)
        self.driven_axle = "rear" if vp.T_se == 0 else "front" if vp.T_se == 1 else "all"
        self.reference_offset = float(vp.b)  # pose at the CG, the rear axle b behind it

    def _initial_state(self, info: dict[str, float]) -> np.ndarray:
        self._z = info["z"]
        v = info["speed"]
        R = self.vp.R_w
        return np.array([info["x"], info["y"], 0.0, v, info["yaw"], 0.0, 0.0, v / R, v / R])

    def xdot(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.array(self._f(list(map(float, x)), [float(u[0]), float(u[1])], self.vp))

    @property
    def pose(self) -> Pose:
        x = self._state
        return Pose(float(x[0]), float(x[1]), float(self._z), 0.0, 0.0, float(x[4]))

    @property
    def velocity(self) -> Velocity:
        x = self._state
        head = x[4] + x[6]
        return Velocity(np.array([x[3] * math.cos(head), x[3] * math.sin(head), 0.0]), np.array([0.0, 0.0, x[5]]))

    @property
    def steering_angle(self) -> float:
        """Front wheel angle [rad] (a state of this model)."""
        return float(self._state[2])


class SteerRateAccelPI(Actuator):
    """(v, delta) -> (steering rate, acceleration): a proportional steering servo ``k_steer (delta - delta_now)``
    (the plant clips it to its steering-rate limit) and a speed PI whose acceleration command is clipped to
    ``accel_max`` / ``decel_max`` [m/s^2] (a driver's traction control: the model's engine puts the whole
    command on the rear wheels, 11.5 m/s^2 spins them and the car)."""

    name = "steer_rate_accel_pi"

    def __init__(self, k_steer: float = 20.0, kp: float = 3.0, ki: float = 1.0, accel_max: float = 4.0,
                 decel_max: float = 8.0) -> None:
        from mpc_tracking.actuation import _SpeedPI

        if not (isinstance(k_steer, (int, float)) and k_steer > 0):
            raise InputError(f"actuator {self.name}: k_steer must be > 0 1/s, got {k_steer!r}")
        self.k_steer = float(k_steer)
        self.pi = _SpeedPI(kp, ki, accel_max, decel_max)
        self.steer = SteeringLimiter()

    def reset(self, plant: Any) -> None:
        self.pi.reset()

    def __call__(self, t: float, dt: float, v_cmd: float, delta_cmd: float, plant: Any) -> np.ndarray:
        d_now = float(getattr(plant, "steering_angle", 0.0))
        return np.array([self.k_steer * (float(delta_cmd) - d_now), self.pi(dt, v_cmd, float(plant.speed))])


def register() -> None:
    """Register the plant and its actuator by name (``commonroad_std``, ``steer_rate_accel_pi``)."""
    register_model(CommonroadStd)
    register_actuator(SteerRateAccelPI.name, SteerRateAccelPI)
