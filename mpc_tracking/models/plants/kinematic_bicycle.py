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

import logging
import math
from collections import deque
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from mpc_tracking._optional import numba_available
from mpc_tracking.errors import ModelError, NonFiniteStateError
from mpc_tracking.models.base import MotionModel, Pose, Velocity
from mpc_tracking.models.integrators import substeps

__all__ = ["KinematicBicycle", "COMPILED_CHOICES", "substep_kernel"]

logger = logging.getLogger(__name__)

#: the values of :attr:`KinematicBicycle.compiled`
COMPILED_CHOICES = ("auto", "numba", "python")
_KERNEL: Any = None  # the compiled substeps once looked for (False: numba is not installed)


def substep_kernel(choice: str = "auto", where: str = "kinematic_bicycle") -> Callable[..., tuple[float, ...]] | None:
    """The compiled RK4 substeps (:func:`._kinematic_kernels.rk4_substeps`) for ``compiled = choice``, or None
    (``"python"``, or ``"auto"`` without numba); compiled or loaded from numba's cache on the first call."""
    global _KERNEL
    if choice not in COMPILED_CHOICES:
        raise ModelError(f"{where}.compiled: expected one of {COMPILED_CHOICES}, got {choice!r}")
    if choice == "python":
        return None
    if _KERNEL is None:
        _KERNEL = False
        if numba_available():
            from mpc_tracking.models.plants import _kinematic_kernels

            _KERNEL = _kinematic_kernels.rk4_substeps
            logger.debug("%s: RK4 substeps in compiled code (numba)", where)
    if _KERNEL is False and choice == "numba":
        raise ModelError(f'{where}.compiled: "numba" needs numba, which is not installed; '
                         'pip install "mpc_tracking[fast]" or use "auto"')
    return _KERNEL or None


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
    _compiled = "auto"
    _substeps_of: tuple[float, int] = (math.nan, 1)  # (dt, its substeps), for the last dt
    _kernel: Callable[..., tuple[float, ...]] | None = None
    _kernel_ready = False

    @property
    def compiled(self) -> str:
        """Where the RK4 substeps run: ``"auto"`` (default: compiled with numba when it is installed, the optional
        extra ``mpc_tracking[fast]``, else Python), ``"numba"`` (a :class:`~mpc_tracking.errors.ModelError` at the
        first step without numba) or ``"python"``; the same numbers (1e-12)."""
        return self._compiled

    @compiled.setter
    def compiled(self, choice: str) -> None:
        if choice not in COMPILED_CHOICES:
            raise ModelError(f"{self.name}.compiled: expected one of {COMPILED_CHOICES}, got {choice!r}")
        self._compiled, self._kernel_ready = choice, False

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
        #: what the compiled substeps read: wheelbase, speed lag, steering dynamics, steering lag, rate limit
        self._kernel_params = (float(p["wheelbase"]), float(p["speed_time_constant"]), self._steer_dynamic,
                               float(p["steering_time_constant"]), float(p["steering_rate_max"]))
        self._substeps_of = (math.nan, 1)  # max_substep may have changed

    def _err(self, msg: str) -> ModelError:
        return ModelError(f"{self.name}: {msg}")

    def _initial_state(self, info: dict[str, float]) -> np.ndarray:
        self._queue: deque[tuple[float, tuple[float, float]]] = deque()  # (release time [s], command)
        # the command in force under a dead time; until the first queued one is released, the
        # initial speed and steering (never a previous run's last command)
        self._last_applied: tuple[float, float] = (float(info["speed"]), 0.0)
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
        self._check_dt(dt)
        if type(u) is np.ndarray and u.shape == (2,) and u.dtype == np.float64:  # (an actuator's output)
            u0, u1 = u.tolist()
            if not (math.isfinite(u0) and math.isfinite(u1)):
                self.check_input(u)  # its error
        else:
            u0, u1 = self.check_input(u).tolist()
        p = self.params
        d_max = p["delta_max"]
        u1 = min(max(u1, -d_max), d_max)
        if p["dead_time"] > 0:
            self._queue.append((t + p["dead_time"], (u0, u1)))
            applied: tuple[float, float] | None = None
            while self._queue and self._queue[0][0] <= t + 1e-12:
                applied = self._queue.popleft()[1]
            if applied is not None:
                self._last_applied = applied
            u0, u1 = self._last_applied
        last_dt, n = self._substeps_of
        if dt != last_dt:
            n = substeps(dt, self.max_substep)
            self._substeps_of = (dt, n)
        self._h = dt / n
        if type(self).xdot is not KinematicBicycle.xdot or self.integrator != "rk4":  # a subclass's own model
            if p["speed_time_constant"] == 0:
                self._state[3] = u0
            if not self._steer_dynamic:
                self._state[4] = u1
            return self._advance(t, dt, np.array([u0, u1]))
        x0 = self._state.tolist()
        if p["speed_time_constant"] == 0:  # the speed follows the command
            x0[3] = u0
        if not self._steer_dynamic:  # and so does the steering
            x0[4] = u1
        if not self._kernel_ready:
            self._kernel, self._kernel_ready = substep_kernel(self._compiled, self.name), True
        kern = self._kernel
        x: list[float] | tuple[float, ...]
        if kern is not None:  # the same numbers in one compiled call
            L, tau_v, steer, tau_d, r_max = self._kernel_params
            x = kern(*x0, u0, u1, self._h, n, L, tau_v, steer, max(tau_d, self._h), r_max)
        else:
            x = self._rk4(x0, u0, u1, self._h, n)
        if not all(map(math.isfinite, x)):
            raise NonFiniteStateError(f"{self.name}.step: the state became non-finite at t = {t + dt:.3f} s")
        self._state = state = np.array(x)
        self.t = t + dt
        return state

    def held_command_stepper(self, limiter: Any) -> Callable[[float, float, int, float, float], float] | None:
        """``advance(t, dt, n, v_cmd, delta_cmd) -> t_end``: ``n`` steps of ``dt`` [s] with the command held, behind
        the steering ``limiter``, in one compiled call (:func:`._kinematic_kernels.held_command_steps`; see
        :meth:`MotionModel.held_command_stepper <mpc_tracking.models.base.MotionModel.held_command_stepper>`).

        None unless every step would run the compiled substeps anyway (numba, this class's own model,
        integrator and :meth:`step`, not replaced on the object; no dead time): then the same floating-point
        operations as ``n`` calls of :meth:`step` after the limiter's, bitwise.
        """
        if (type(self).step is not KinematicBicycle.step or "step" in self.__dict__  # (replaced on this object)
                or type(self).xdot is not KinematicBicycle.xdot or self.integrator != "rk4"
                or self.params["dead_time"] > 0):
            return None
        if not self._kernel_ready:
            self._kernel, self._kernel_ready = substep_kernel(self._compiled, self.name), True
        if self._kernel is None:
            return None
        from mpc_tracking.models.plants._kinematic_kernels import held_command_steps

        p = self.params
        L, tau_v, steer_dyn, tau_d, r_max = self._kernel_params
        d_max = float(p["delta_max"])

        def advance(t: float, dt: float, n_steps: int, v_cmd: float, delta_cmd: float) -> float:
            self._check_dt(dt)
            last_dt, n = self._substeps_of
            if dt != last_dt:
                n = substeps(dt, self.max_substep)
                self._substeps_of = (dt, n)
            h = self._h = dt / n
            x = self._state.copy()  # a state returned by an earlier step stays as it was
            done, limiter.delta = held_command_steps(x, limiter.delta, float(v_cmd), float(delta_cmd), dt, n_steps,
                                                     h, n, L, tau_v, steer_dyn, max(tau_d, h), r_max, d_max,
                                                     limiter.delta_max, limiter.rate_max)
            self._state = x
            for _ in range(done):  # the times as n calls of step() add them
                self.t = t + dt
                t += dt
            if done < n_steps:
                raise NonFiniteStateError(f"{self.name}.step: the state became non-finite at t = {t + dt:.3f} s", t)
            return t

        return advance

    def _rk4(self, x: list[float], u0: float, u1: float, h: float, n: int) -> list[float]:
        """``n`` RK4 substeps of :meth:`xdot` of length ``h`` on the state list ``x`` (the same
        operations as :func:`~mpc_tracking.models.integrators.rk4` on :meth:`xdot`, on floats: the
        numpy calls cost more than the arithmetic of five states)."""
        p = self.params
        L = p["wheelbase"]
        tau_v = p["speed_time_constant"]
        steer = self._steer_dynamic
        tau_d = max(p["steering_time_constant"], self._h)
        r_max = p["steering_rate_max"]
        cos, sin, tan = math.cos, math.sin, math.tan
        h2, h6 = 0.5 * h, h / 6.0
        px, py, psi, v, d = x

        def deriv(psi: float, v: float, d: float) -> tuple[float, float, float, float, float]:
            """xdot at (psi, v, delta): x, y, yaw rates, speed and steering rates."""
            dv = (u0 - v) / tau_v if tau_v > 0 else 0.0
            dd = min(max((u1 - d) / tau_d, -r_max), r_max) if steer else 0.0
            return v * cos(psi), v * sin(psi), v * tan(d) / L, dv, dd

        for _ in range(n):
            a1, b1, c1, e1, f1 = deriv(psi, v, d)
            a2, b2, c2, e2, f2 = deriv(psi + h2 * c1, v + h2 * e1, d + h2 * f1)
            a3, b3, c3, e3, f3 = deriv(psi + h2 * c2, v + h2 * e2, d + h2 * f2)
            a4, b4, c4, e4, f4 = deriv(psi + h * c3, v + h * e3, d + h * f3)
            px = px + h6 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
            py = py + h6 * (b1 + 2.0 * b2 + 2.0 * b3 + b4)
            psi = psi + h6 * (c1 + 2.0 * c2 + 2.0 * c3 + c4)
            v = v + h6 * (e1 + 2.0 * e2 + 2.0 * e3 + e4)
            d = d + h6 * (f1 + 2.0 * f2 + 2.0 * f3 + f4)
        return [px, py, psi, v, d]

    @property
    def speed(self) -> float:
        """Speed along the heading [m/s] (the base class's formula, without building a pose and a velocity)."""
        psi, v = self._state[2:4].tolist()
        c, s = math.cos(psi), math.sin(psi)
        return v * c * c + v * s * s

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
