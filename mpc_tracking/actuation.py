"""Low-level actuation: maps MPC commands (v, delta) to each plant's own inputs.

An actuator is called once per simulation step (possibly several times per control step)::

    u = actuator(t, dt, v_cmd, delta_cmd, plant)

and may keep internal state (integrators, rate limiters); :meth:`Actuator.reset` clears it.
Plant and actuation are chosen independently of the MPC; :func:`default_actuator` picks the
natural one for a plant (a plant may name it in its ``default_actuator`` class attribute).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError
from mpc_tracking.models.base import MotionModel

__all__ = [
    "Actuator", "DirectActuator", "SteeringLimiter", "UnicyclePI", "WheelTorquePI",
    "ACTUATORS", "register_actuator", "default_actuator", "make_actuator",
]


class Actuator:
    """Base class: passes (v, delta) through unchanged."""

    name = "direct"

    @property
    def speed_lag(self) -> float:
        """Time constant [s] of the speed response to a speed command (0: the plant gets the speed
        at once). A controller that predicts accelerations uses it to lead its speed command."""
        pi = getattr(self, "pi", None)
        return 1.0 / pi.kp if isinstance(pi, _SpeedPI) and pi.kp > 0 else 0.0

    @property
    def accel_limits(self) -> tuple[float, float]:
        """``(accel_max, decel_max)`` [m/s^2] the speed loop can command (inf: not limited), for
        default controller limits (:func:`mpc_tracking.scenario.build`)."""
        pi = getattr(self, "pi", None)
        return (pi.a_max, pi.d_max) if isinstance(pi, _SpeedPI) else (float("inf"), float("inf"))

    def reset(self, plant: Any) -> None:
        """Clear internal state before a run on ``plant``."""

    def set_plan(self, speed: float | None, accel: float = 0.0) -> None:
        """The plan of this control step: speed now [m/s] and planned acceleration [m/s^2] (feed-forward).

        Called by :func:`mpc_tracking.simulate` once per control step when the prediction model plans
        an acceleration (the dynamic model); ``speed=None`` drops the plan (the speed command rules
        again). The base class ignores it; the PI speed loops use it (see :class:`_SpeedPI`).
        """
        pi = getattr(self, "pi", None)
        if isinstance(pi, _SpeedPI):
            pi.plan(speed, accel)

    def held_command_stepper(self, plant: Any) -> Callable[[float, float, int, float, float], float] | None:
        """``advance(t, dt, n, v_cmd, delta_cmd) -> t_end`` [s]: ``n`` plant steps of ``dt`` [s] through this
        actuator with the command held, in one call, when the pair has that (the same numbers as ``n`` calls
        of ``plant.step(t, dt, self(t, dt, v_cmd, delta_cmd, plant))``); None: step one call at a time (the
        base class). :func:`mpc_tracking.simulate` uses it for each control period."""
        return None

    def __call__(self, t: float, dt: float, v_cmd: float, delta_cmd: float, plant: Any) -> np.ndarray:
        return np.array([v_cmd, delta_cmd], dtype=float)


class SteeringLimiter:
    """Steering-angle saturation ``|delta| <= delta_max`` [rad] and rate limit ``|delta'| <= rate_max`` [rad/s]."""

    def __init__(self, delta_max: float = float("inf"), rate_max: float = float("inf")) -> None:
        for k, v in (("delta_max", delta_max), ("delta_rate_max", rate_max)):
            if not (isinstance(v, (int, float)) and v > 0):
                raise InputError(f"actuator: {k} must be > 0, got {v!r}")
        self.delta_max, self.rate_max = float(delta_max), float(rate_max)
        self.delta = 0.0

    def reset(self, delta: float = 0.0) -> None:
        """Set the current angle [rad]."""
        self.delta = float(delta)

    def __call__(self, dt: float, delta_cmd: float) -> float:
        """Limited angle after ``dt`` [s] towards ``delta_cmd`` [rad]."""
        if self.rate_max == math.inf and self.delta_max == math.inf:  # no limits: the numbers below, fewer calls
            self.delta += float(delta_cmd) - self.delta
            return self.delta
        target = min(max(float(delta_cmd), -self.delta_max), self.delta_max)
        step = self.rate_max * dt
        self.delta += min(max(target - self.delta, -step), step)
        return self.delta


def check_commands(name: str, v_cmd: float, delta_cmd: float) -> None:
    """Raise :class:`~mpc_tracking.errors.InputError` naming actuator ``name`` unless both commands are finite."""
    try:
        ok = math.isfinite(v_cmd) and math.isfinite(delta_cmd)
    except TypeError:
        ok = False
    if not ok:
        raise InputError(f"actuator {name}: commands must be finite, got {(v_cmd, delta_cmd)}")


def _checked_stepper(name: str, inner: Callable[[float, float, int, float, float], float]
                     ) -> Callable[[float, float, int, float, float], float]:
    """``inner`` (a plant's held-command steps) with the commands checked first, as actuator ``name``'s
    ``__call__`` checks them (:func:`check_commands`)."""

    def advance(t: float, dt: float, n: int, v_cmd: float, delta_cmd: float) -> float:
        check_commands(name, v_cmd, delta_cmd)
        return inner(t, dt, n, v_cmd, delta_cmd)

    return advance


class DirectActuator(Actuator):
    """The plant takes (v, delta) itself (kinematic bicycle, simple car); optional steering limits."""

    def __init__(self, delta_max: float = float("inf"), delta_rate_max: float = float("inf")) -> None:
        self.steer = SteeringLimiter(delta_max, delta_rate_max)

    def reset(self, plant: Any) -> None:
        self.steer.reset()

    def held_command_stepper(self, plant: Any) -> Callable[[float, float, int, float, float], float] | None:
        """The plant's own held-command steps behind :attr:`steer` (``plant.held_command_stepper``: the kinematic
        bicycle in compiled code), the commands checked as :meth:`__call__` checks them; None for a subclass
        (it may change the command) or a plant without them."""
        held = getattr(plant, "held_command_stepper", None)
        inner = held(self.steer) if type(self) is DirectActuator and held is not None else None
        if inner is None:
            return None
        return _checked_stepper(self.name, inner)

    def __call__(self, t: float, dt: float, v_cmd: float, delta_cmd: float, plant: Any) -> np.ndarray:
        check_commands(self.name, v_cmd, delta_cmd)
        return np.array([v_cmd, self.steer(dt, delta_cmd)], dtype=float)


class _SpeedPI:
    """PI on speed error -> acceleration command [m/s^2], clamped, with conditional-integration anti-windup.

    Without a plan it acts on ``v_cmd - v``. With a plan (:meth:`plan`: the speed ``v_0`` and the
    acceleration ``a_plan`` of this control step, ``feedforward`` on) the planned acceleration is fed
    forward and the PI acts only on the error relative to the planned trajectory,
    ``v_0 + a_plan tau - v`` (tau: time since the plan): ``a = a_plan + kp e + ki I``. A speed
    command that leads the plant (``v + lag a_plan``) is then not integrated (it made the integral
    keep braking after the plan wanted to accelerate), and the integral is cleared whenever its
    action opposes the planned acceleration, so it can never fight the plan.
    """

    #: speed [m/s] below which braking fades out (brakes stop the car without driving it backwards)
    v_stop = 0.05

    def __init__(self, kp: float, ki: float, accel_max: float, decel_max: float, feedforward: bool = True) -> None:
        for k, v in (("kp", kp), ("ki", ki)):
            if not (isinstance(v, (int, float)) and np.isfinite(v) and v >= 0):
                raise InputError(f"actuator: {k} must be a finite number >= 0, got {v!r}")
        for k, v in (("accel_max", accel_max), ("decel_max", decel_max)):
            if not (isinstance(v, (int, float)) and v > 0):
                raise InputError(f"actuator: {k} must be > 0 m/s^2, got {v!r}")
        if not isinstance(feedforward, bool):
            raise InputError(f"actuator: feedforward must be True or False, got {feedforward!r}")
        self.kp, self.ki, self.a_max, self.d_max = float(kp), float(ki), float(accel_max), float(decel_max)
        self.feedforward = feedforward
        self.integral = 0.0
        self._plan: tuple[float, float] | None = None
        self._tau = 0.0

    def reset(self) -> None:
        """Clear the integral and the plan."""
        self.integral = 0.0
        self._plan = None

    def plan(self, speed: float | None, accel: float = 0.0) -> None:
        """Set (or with ``speed=None`` drop) the plan: speed now [m/s], planned acceleration [m/s^2]."""
        if speed is None or not self.feedforward:
            self._plan = None
            return
        speed, accel = float(speed), float(accel)
        if not (math.isfinite(speed) and math.isfinite(accel)):
            self._plan = None
            return
        self._plan, self._tau = (speed, accel), 0.0
        if self.integral * accel < 0.0:  # anti-windup against the plan: the integral may not oppose it
            self.integral = 0.0

    def __call__(self, dt: float, v_cmd: float, v: float) -> float:
        """Acceleration for speed command ``v_cmd`` at speed ``v`` (or for the plan, when one is set);
        braking fades out below :attr:`v_stop` [m/s] so that brakes stop the car without driving it
        backwards (for ``v_cmd >= 0``)."""
        a_ff = 0.0
        if self._plan is not None:
            v0, a_ff = self._plan
            err = v0 + a_ff * self._tau - v
            self._tau += dt
        else:
            err = v_cmd - v
        cand = self.integral + err * dt
        a = a_ff + self.kp * err + self.ki * cand
        a_sat = min(max(a, -self.d_max), self.a_max)
        if a_sat == a:
            self.integral = cand
        v_stop = self.v_stop
        if v_cmd >= 0.0 and a_sat < 0.0 and v < v_stop:
            a_sat *= max(v, 0.0) / v_stop
            self.integral = max(self.integral, 0.0)
        return a_sat


class UnicyclePI(Actuator):
    """(v, delta) -> unicycle (u_omega, u_a): ``u_omega = v tan(delta_lim) / wheelbase``, ``u_a`` = speed PI.

    Parameters
    ----------
    wheelbase : float
        L [m] of the bicycle the MPC plans for (the unicycle itself has none).
    kp, ki : float
        Speed PI gains [1/s], [1/s^2].
    accel_max, decel_max : float
        Acceleration limits [m/s^2].
    delta_max, delta_rate_max : float
        Steering limits [rad], [rad/s].
    feedforward : bool
        Use the controller's plan (:meth:`Actuator.set_plan`) as feed-forward, the PI acting on the
        error relative to it (see :class:`_SpeedPI`); False: the PI follows the speed command only.
    """

    name = "unicycle_pi"

    def __init__(self, wheelbase: float = 2.7, kp: float = 4.0, ki: float = 1.0, accel_max: float = 5.0,
                 decel_max: float = 8.0, delta_max: float = float("inf"), delta_rate_max: float = float("inf"),
                 feedforward: bool = True) -> None:
        if not (isinstance(wheelbase, (int, float)) and np.isfinite(wheelbase) and wheelbase > 0):
            raise InputError(f"actuator unicycle_pi: wheelbase must be > 0 m, got {wheelbase!r}")
        self.wheelbase = float(wheelbase)
        self.pi = _SpeedPI(kp, ki, accel_max, decel_max, feedforward)
        self.steer = SteeringLimiter(delta_max, delta_rate_max)

    def reset(self, plant: Any) -> None:
        self.pi.reset()
        self.steer.reset()

    def __call__(self, t: float, dt: float, v_cmd: float, delta_cmd: float, plant: Any) -> np.ndarray:
        check_commands(self.name, v_cmd, delta_cmd)
        v = float(plant.speed)
        d = self.steer(dt, delta_cmd)
        return np.array([v * np.tan(d) / self.wheelbase, self.pi(dt, v_cmd, v)])


class WheelTorquePI(Actuator):
    """(v, delta) -> 3D car (delta, 4 wheel torques): speed PI to a force, split over the driven wheels.

    ``F = m a_PI + sum b_w omega_i / r`` (PI plus bearing-drag feedforward), per driven wheel
    ``F_i = F / n_driven`` clipped to ``traction_fraction * mu * F_z,i`` (traction limit, from the
    current normal loads), then ``tau_i = r F_i`` clipped to ``+-tau_max`` (torque limit). ``mu`` is the
    friction of the road under the car (the plant's ``road_friction(t)`` where it has one, else the vehicle's
    ``mu``): the clip stands for an ABS and a traction control, which hold each wheel near the peak of the road
    it is on, wet or dry, as real ones do by reading the wheels' slip. Braking
    (F < 0) is spread over all four wheels in proportion to their normal loads when the car's
    ``brakes`` are ``"all"`` (the default), else it goes through the driven wheels. Needs a plant
    with ``vehicle`` (Ackermann3DParams) and ``tire_forces()``, i.e.
    :class:`~mpc_tracking.models.plants.ackermann3d.car.Ackermann3D`. With ``feedforward`` (default) the
    planned acceleration of a controller that plans one (the dynamic model, through
    :meth:`Actuator.set_plan`) is fed forward and the PI acts only on the error relative to the
    plan (:class:`_SpeedPI`); ``feedforward=False`` keeps the PI on the speed command alone.
    """

    name = "wheel_torque_pi"

    def __init__(self, kp: float = 3.0, ki: float = 1.0, accel_max: float = 6.0, decel_max: float = 8.0,
                 tau_max: float = float("inf"), traction_fraction: float = 0.9, delta_max: float = float("inf"),
                 delta_rate_max: float = float("inf"), feedforward: bool = True) -> None:
        if not (isinstance(tau_max, (int, float)) and tau_max > 0):
            raise InputError(f"actuator wheel_torque_pi: tau_max must be > 0 N m, got {tau_max!r}")
        if not (isinstance(traction_fraction, (int, float)) and 0 < traction_fraction <= 1):
            raise InputError(
                f"actuator wheel_torque_pi: traction_fraction must be in (0, 1], got {traction_fraction!r}")
        self.pi = _SpeedPI(kp, ki, accel_max, decel_max, feedforward)
        self.steer = SteeringLimiter(delta_max, delta_rate_max)
        self.tau_max, self.traction_fraction = float(tau_max), float(traction_fraction)
        self._car: tuple | None = None  # (vehicle parameters, the constants taken from them)

    def reset(self, plant: Any) -> None:
        self.pi.reset()
        self.steer.reset()

    def held_command_stepper(self, plant: Any) -> Callable[[float, float, int, float, float], float] | None:
        """The plant's held-command steps behind this actuator in one compiled call (``plant.held_torque_stepper``:
        the 3D car on the numba backend), the commands checked as :meth:`__call__` checks them; None for a subclass
        (it may change the torques), a replaced speed loop or limiter, or a plant without them."""
        held = getattr(plant, "held_torque_stepper", None)
        if (held is None or type(self) is not WheelTorquePI or type(self.pi) is not _SpeedPI
                or type(self.steer) is not SteeringLimiter):
            return None
        inner = held(self)
        if inner is None:
            return None
        return _checked_stepper(self.name, inner)

    def _constants(self, P: Any) -> tuple:
        """Mass, wheel damping and radius, drive mask and its sum, braking on all wheels, friction
        coefficient of the vehicle parameters ``P`` (kept while the plant keeps the same parameter object)."""
        if self._car is None or self._car[0] is not P:
            mask = [float(m) for m in P.drive_mask]
            self._car = (P, (float(P.mass), float(P.wheel_damping), float(P.wheel_radius), mask, sum(mask),
                             getattr(P, "brakes", "driven") == "all", P.mu))
        return self._car[1]

    def __call__(self, t: float, dt: float, v_cmd: float, delta_cmd: float, plant: Any) -> np.ndarray:
        check_commands(self.name, v_cmd, delta_cmd)
        P = getattr(plant, "vehicle", None)
        if P is None or not hasattr(plant, "tire_forces"):
            raise InputError(f"actuator {self.name}: plant {getattr(plant, 'name', plant)!r} has no wheel torques")
        mass, b_w, radius, mask, n_driven, brake_all, mu = self._constants(P)
        v = float(plant.speed)
        d = self.steer(dt, delta_cmd)
        # floats in the order of operations of the numpy expressions they replace (sums left to right)
        o0, o1, o2, o3 = plant.wheel_speeds if hasattr(plant, "wheel_speeds") else plant.state[18:22].tolist()
        F = mass * self.pi(dt, v_cmd, v) + (b_w * o0 + b_w * o1 + b_w * o2 + b_w * o3) / radius
        Fz = plant.normal_loads() if hasattr(plant, "normal_loads") else plant.tire_forces(d)["Fz"].tolist()
        total = Fz[0] + Fz[1] + Fz[2] + Fz[3]
        by_load = F < 0 and brake_all and total > 0  # friction brakes on every wheel, balanced by the normal loads
        Fi = [F * f / total for f in Fz] if by_load else [m * F / n_driven for m in mask]
        if getattr(P, "varying_friction", False) and hasattr(plant, "road_friction"):
            mu = plant.road_friction(t)  # the road the wheels are on (what the plant steps on from t)
        tau_max, grip = self.tau_max, self.traction_fraction * mu
        out = [d]
        for f, fz in zip(Fi, Fz, strict=True):
            lim = grip * fz
            f = f if f > -lim else -lim  # np.clip's order: max, then min
            f = (f if f < lim else lim) * radius
            f = f if f > -tau_max else -tau_max
            out.append(f if f < tau_max else tau_max)
        return np.array(out)


ACTUATORS: dict[str, Callable[..., Actuator]] = {
    "direct": DirectActuator, "unicycle_pi": UnicyclePI, "wheel_torque_pi": WheelTorquePI,
}


def register_actuator(name: str, factory: Callable[..., Actuator]) -> None:
    """Make an actuator available by name (for scenario files)."""
    ACTUATORS[name] = factory


def make_actuator(name: str, **params: Any) -> Actuator:
    """Create a registered actuator by name with keyword parameters."""
    try:
        factory = ACTUATORS[name]
    except KeyError:
        raise InputError(f"actuator: unknown name {name!r}; known: {sorted(ACTUATORS)}") from None
    try:
        return factory(**params)
    except TypeError as exc:
        raise InputError(f"actuator {name!r}: {exc}") from None


def default_actuator(plant: Any) -> Actuator:
    """The natural actuator for ``plant``: its ``default_actuator`` attribute, else direct."""
    name = plant.default_actuator if isinstance(plant, MotionModel) else "direct"
    return make_actuator(name)
