"""What the geometric baselines share: limits, the speed command and the steering limiter.

:class:`~mpc_tracking.control.pure_pursuit.PurePursuit` and :class:`~mpc_tracking.control.stanley.Stanley`
differ only in their steering law. Both take their speed from the path's forward-backward speed profile
(:func:`mpc_tracking.paths.speed_profile.speed_profile` with the limits of :class:`TrackingLimits`, the
same ones the MPC plans with, capped by the path's own ``v_ref``) and rate-limit the speed and steering
commands like the MPC's input rows do.
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from mpc_tracking.control.protocol import ControlCommand
from mpc_tracking.errors import InputError, SettingsError
from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
from mpc_tracking.paths.reference_path import ReferencePath
from mpc_tracking.paths.speed_profile import speed_profile

if TYPE_CHECKING:
    from mpc_tracking.paths.projection import Projection

__all__ = ["TrackingLimits", "GeometricController"]

_P = TypeVar("_P")


@dataclass(frozen=True)
class TrackingLimits:
    """The limits a geometric baseline commands within (the MPC's fields of the same names).

    Attributes
    ----------
    control_period : float
        Time between two commands [s], > 0 (the rate limits act over it).
    v_min, v_max : float
        Speed command bounds [m/s], 0 < v_min <= v_max.
    a_y_max : float
        Lateral acceleration of the speed profile [m/s^2], > 0.
    accel_max, decel_max : float
        Speed command rate bounds and the speed profile's acceleration and braking [m/s^2] (> 0, may be inf).
    delta_max : float
        Steering bound [rad], 0 < delta_max < pi/2.
    delta_rate_max : float
        Steering rate bound [rad/s] (> 0, may be inf).
    """

    control_period: float = 0.05
    v_min: float = 0.5
    v_max: float = 10.0
    a_y_max: float = 4.0
    accel_max: float = float("inf")
    decel_max: float = float("inf")
    delta_max: float = 0.5
    delta_rate_max: float = float("inf")

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v) or v <= 0:
                raise SettingsError(f"TrackingLimits.{f.name}: expected a number > 0, got {v!r}")
        for name in ("control_period", "v_min", "v_max", "a_y_max"):
            if not math.isfinite(getattr(self, name)):
                raise SettingsError(f"TrackingLimits.{name}: expected a finite number > 0, got {getattr(self, name)!r}")
        if self.v_min > self.v_max:
            raise SettingsError(f"TrackingLimits: expected v_min <= v_max, got {self.v_min} > {self.v_max} m/s")
        if not self.delta_max < 0.5 * math.pi:
            raise SettingsError(f"TrackingLimits.delta_max: expected 0 < delta_max < pi/2 rad, got {self.delta_max!r}")

    @classmethod
    def from_settings(cls, settings: Any) -> TrackingLimits:
        """The limits of an :class:`~mpc_tracking.mpc.settings.MPCSettings` (or anything with the same attributes)."""
        return cls(**{f.name: float(getattr(settings, f.name)) for f in fields(cls)})


def check_gain(value: Any, name: str, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """``value`` as a float, or :class:`SettingsError` naming ``name`` (> 0, or >= 0 with ``allow_zero``)."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
    if ok:
        ok = (value >= 0 if allow_zero else value > 0) and (allow_inf or math.isfinite(value))
    if not ok:
        want = ">= 0" if allow_zero else "> 0"
        raise SettingsError(f"{name}: expected a {'' if allow_inf else 'finite '}number {want}, got {value!r}")
    return float(value)


def params_or_default(params: Any, cls: type[_P]) -> _P:
    """``params`` when it is a ``cls``, ``cls()`` when it is None, else a :class:`SettingsError` naming ``cls``."""
    params = cls() if params is None else params
    if not isinstance(params, cls):
        raise SettingsError(f"params: expected {cls.__name__}, got {type(params).__name__}")
    return params


class GeometricController:
    """Base of the geometric baselines: the Controller protocol around a steering law :meth:`_steer`.

    Parameters
    ----------
    path : ReferencePath
    vehicle : VehicleParams, optional
        Geometry (the wheelbase of the steering law); default :class:`VehicleParams`.
    limits : TrackingLimits, optional
        Default :class:`TrackingLimits` (the MPC's default limits).
    """

    #: the type name in :meth:`describe` and in scenarios (``controller.type``)
    name = "geometric"

    def __init__(self, path: ReferencePath, vehicle: VehicleParams | None = None,
                 limits: TrackingLimits | None = None) -> None:
        if not isinstance(path, ReferencePath):
            raise InputError(f"path: expected a ReferencePath, got {type(path).__name__}")
        vehicle = VehicleParams() if vehicle is None else vehicle
        if not isinstance(vehicle, VehicleParams):
            raise InputError(f"vehicle: expected VehicleParams, got {type(vehicle).__name__}")
        limits = TrackingLimits() if limits is None else limits
        if not isinstance(limits, TrackingLimits):
            raise InputError(f"limits: expected TrackingLimits, got {type(limits).__name__}")
        self.path, self.vehicle, self.limits = path, vehicle, limits
        lim = limits
        v = speed_profile(path, v_max=lim.v_max, a_y_max=lim.a_y_max, a_max=lim.accel_max, a_brake=lim.decel_max)
        if path.v_ref is not None:
            v = np.minimum(v, path.v_ref)
        #: the speed profile [m/s] per waypoint (at least v_min)
        self.v_profile = np.maximum(v, lim.v_min)
        self._s_table = np.append(path.s, path.length) if path.closed else path.s
        self._v_table = np.append(self.v_profile, self.v_profile[0]) if path.closed else self.v_profile
        self.reset()

    # ------------------------------------------------------------------ the protocol
    @property
    def control_period(self) -> float:
        """``limits.control_period`` [s]."""
        return self.limits.control_period

    @property
    def measures(self) -> bool:
        """False: the speed is all the law needs (Stanley's yaw damping: True)."""
        return False

    @property
    def horizon(self) -> int:
        """0: nothing is predicted."""
        return 0

    @property
    def speed_range(self) -> tuple[float, float]:
        """``(limits.v_min, limits.v_max)`` [m/s]."""
        return self.limits.v_min, self.limits.v_max

    def reset(self) -> None:
        """Forget the last command (the next one is not rate-limited)."""
        self._cmd_prev: tuple[float, float] | None = None

    def speed_at(self, s: Any) -> np.ndarray:
        """The speed profile at arc lengths ``s`` [m] (wrapped or clipped), in m/s."""
        s = self.path.wrap_s(s)
        return np.interp(s, self._s_table, self._v_table)

    def reference_input(self, s0: float) -> np.ndarray:
        """``(v_ref [m/s], delta_ref [rad])`` at ``s0``: the speed profile and ``atan(L kappa)``."""
        kappa = float(self.path.interpolate(np.array([s0]))["kappa"][0])
        return np.array([float(self.speed_at(s0)), math.atan(self.vehicle.wheelbase * kappa)])

    def describe(self) -> dict[str, Any]:
        """``{"controller": name, "mode": name}`` (``"pure_pursuit"``, ``"stanley"``)."""
        return {"controller": self.name, "mode": self.name}

    def solve(self, state: Projection, t: float = 0.0, measured: Mapping[str, float] | None = None) -> ControlCommand:
        """The command for the projection of the rear axle onto the path.

        Parameters
        ----------
        state : Projection or (s, e_y, e_psi)
            Arc length [m], lateral error [m], heading error [rad] of the rear axle.
        t : float
            Time [s] (unused: the laws are static).
        measured : mapping, optional
            ``speed`` [m/s] (default: the last speed command, or the profile's speed at the start).
        """
        t0 = time.perf_counter()
        s, e_y, e_psi = (float(c) for c in (state.s, state.e_y, state.e_psi)) if hasattr(state, "e_psi") else (
            float(c) for c in state)
        if not (math.isfinite(s) and math.isfinite(e_y) and math.isfinite(e_psi)):
            raise InputError(f"state: expected finite (s, e_y, e_psi), got ({s}, {e_y}, {e_psi})")
        v_ref = float(self.speed_at(s))
        speed = self._measured_speed(measured, v_ref)
        v_cmd = self._speed_command(s, speed)
        delta_raw, target = self._steer(s, e_y, e_psi, max(speed, 0.0), measured or {})
        delta = self._limit_steering(delta_raw)
        self._cmd_prev = (v_cmd, delta)
        dt = time.perf_counter() - t0
        return ControlCommand(v=v_cmd, delta=delta, v_ref=v_ref, solve_time=dt, step_time=dt, target=target)

    # ------------------------------------------------------------------ shared pieces
    def _measured_speed(self, measured: Mapping[str, float] | None, v_ref: float) -> float:
        if measured and "speed" in measured and math.isfinite(float(measured["speed"])):
            return float(measured["speed"])
        return self._cmd_prev[0] if self._cmd_prev is not None else v_ref

    def _speed_command(self, s: float, speed: float) -> float:
        """The profile's speed over the coming period (the lower of now and one period ahead), rate-limited
        from the last command and clipped to ``[v_min, v_max]``."""
        lim = self.limits
        ahead = s + max(speed, lim.v_min) * lim.control_period
        v = float(min(self.speed_at(s), self.speed_at(ahead)))
        if self._cmd_prev is not None:
            v_prev, T = self._cmd_prev[0], lim.control_period
            v = min(max(v, v_prev - lim.decel_max * T), v_prev + lim.accel_max * T)
        return min(max(v, lim.v_min), lim.v_max)

    def _limit_steering(self, delta: float) -> float:
        lim = self.limits
        if self._cmd_prev is not None and math.isfinite(lim.delta_rate_max):
            step = lim.delta_rate_max * lim.control_period
            d_prev = self._cmd_prev[1]
            delta = min(max(delta, d_prev - step), d_prev + step)
        return min(max(delta, -lim.delta_max), lim.delta_max)

    def _pose(self, s: float, e_y: float, e_psi: float) -> tuple[float, float, float]:
        """World pose ``(x, y, yaw)`` of the rear axle from its projection."""
        x, y = self.path.point_at(np.array([s]), e_y)[0]
        psi = float(self.path.interpolate(np.array([s]))["psi"][0])
        return float(x), float(y), psi + e_psi

    def _steer(self, s: float, e_y: float, e_psi: float, speed: float,
               measured: Mapping[str, float]) -> tuple[float, np.ndarray]:  # pragma: no cover - abstract
        """The unlimited steering angle [rad] and the point it steers towards (world, [m])."""
        raise NotImplementedError
