"""The set-up checks of :func:`~mpc_tracking.simulation.simulate`: everything it verifies before the first step.

:func:`check_setup` takes simulate's arguments and returns what the loop runs with (the controller
seen through the :class:`~mpc_tracking.control.protocol.Controller` protocol, the wrapped start
arc length, the :class:`Timing` and the corridor tolerance), or raises the error that names the bad
argument: :class:`~mpc_tracking.errors.InputError` for the objects and the start,
:class:`~mpc_tracking.errors.SettingsError` for periods, steps, limits and laps.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc_tracking.control.adapters import CvxpyController, SpatialMPCController, as_controller
from mpc_tracking.control.protocol import Controller
from mpc_tracking.errors import InputError, SettingsError
from mpc_tracking.models.base import MotionModel
from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["Timing", "check_setup", "same_path"]

logger = logging.getLogger("mpc_tracking.simulation")  # the messages read as simulate's


@dataclass(frozen=True)
class Timing:
    """Control period ``T`` [s], plant step ``dt = T / n_sub`` [s] and time limit ``t_max`` [s]."""

    T: float
    dt: float
    n_sub: int
    t_max: float

    @classmethod
    def from_arguments(cls, controller: Controller, path: ReferencePath, control_period: float | None,
                       sim_dt: float | None, t_max: float | None, laps: int, s0: float) -> Timing:
        """The timing of a run: the controller's period unless given, ``sim_dt`` (default
        ``min(0.01, T)``, rounded so that it divides T) and ``t_max`` (default three times the time the
        goal takes at ``max(v_min, 0.2 v_max)``, plus 10 s)."""
        T = _positive_seconds(controller.control_period if control_period is None else control_period,
                              "control_period")
        dt = _positive_seconds(min(0.01, T) if sim_dt is None else sim_dt, "sim_dt")
        if dt > T * (1 + 1e-9):
            raise SettingsError(f"sim_dt = {dt} s must not exceed control_period = {T} s")
        n_sub = max(1, round(T / dt))
        if t_max is None:
            v_min, v_max = controller.speed_range
            goal = laps * path.length if path.closed else path.length - s0
            t_max = 3.0 * goal / max(v_min, 0.2 * v_max) + 10.0
        return cls(T, T / n_sub, n_sub, _positive_seconds(t_max, "t_max"))


def check_setup(path: Any, controller: Any, plant: Any, control_period: Any, sim_dt: Any, laps: Any, t_max: Any,
                s0: Any, e_y0: Any, e_psi0: Any, v0: Any, init_plant: bool, corridor_tolerance: Any,
                allow_outside_start: bool) -> tuple[Controller, float, Timing, float]:
    """Every check of :func:`~mpc_tracking.simulation.simulate` (same arguments, in its order).

    Returns
    -------
    controller : Controller
        ``controller`` through the protocol (:func:`~mpc_tracking.control.adapters.as_controller`).
    s0 : float
        The start arc length [m].
    timing : Timing
    tolerance : float
        How far [m] the reference point may be beyond a corridor edge.
    """
    ctrl = _check_objects(path, controller, plant, laps)
    _check_same_path(path, ctrl)
    _check_control_period(control_period, ctrl)
    s0 = _check_s0(path, s0)
    if init_plant:
        _check_start(path, s0, e_y0, e_psi0, v0, allow_outside_start)
    timing = Timing.from_arguments(ctrl, path, control_period, sim_dt, t_max, laps, s0)
    if isinstance(ctrl, SpatialMPCController):
        _warn_held_steps(ctrl, timing.T)
    return ctrl, s0, timing, _tolerance(corridor_tolerance, ctrl)


def _warn_held_steps(controller: SpatialMPCController, period: float) -> None:
    """Warn when, at ``v_max``, one control period covers more than 1.5 spatial steps of the MPC.

    The MPC plans one input per step ``ds`` but the car holds each command for ``v T`` metres;
    when that spans several steps the plan's quick corrections are applied for too long, and a
    light steering weight turns this into a small limit cycle (±0.1° of heading at 2 Hz on a
    full-size circuit at 40 m/s with ds = 1 m, T = 50 ms). ``ds >= v_max T`` removes it.
    """
    ds = controller.mpc.ds
    v_max = controller.speed_range[1]
    covered = v_max * period
    if covered > 1.5 * ds:
        logger.warning("at v_max = %.3g m/s one control period (%.3g s) covers %.3g m = %.1f MPC steps of ds = %.3g m, "
                       "but the MPC plans a new input every step: the held commands can make the steering ring; "
                       "choose ds >= v_max x control_period = %.3g m (with horizon x ds the same look-ahead) or a "
                       "shorter control period", v_max, period, covered, covered / ds, ds, covered)


def _check_objects(path: Any, controller: Any, plant: Any, laps: Any) -> Controller:
    if not isinstance(path, ReferencePath):
        raise InputError(f"path: expected a ReferencePath, got {type(path).__name__}")
    ctrl = as_controller(controller)
    if not isinstance(plant, MotionModel):
        raise InputError(f"plant: expected a MotionModel, got {type(plant).__name__}")
    if isinstance(laps, bool) or not isinstance(laps, (int, np.integer)) or laps < 1:
        raise SettingsError(f"laps: expected an integer >= 1, got {laps!r}")
    return ctrl


def same_path(a: ReferencePath, b: ReferencePath) -> bool:
    """True when two paths have the same geometry, widths and speed profile (e.g. a copy or a pickle)."""
    if a.closed != b.closed or not np.isclose(a.length, b.length, rtol=1e-9, atol=1e-12):
        return False
    for name in ("s", "x", "y", "psi", "kappa", "width_left", "width_right", "v_ref"):
        u, v = getattr(a, name, None), getattr(b, name, None)
        if u is None or v is None:
            if u is not v:
                return False
            continue
        u, v = np.asarray(u, dtype=float), np.asarray(v, dtype=float)
        if u.shape != v.shape or not np.allclose(u, v, rtol=1e-9, atol=1e-12, equal_nan=True):
            return False
    return True


def _check_same_path(path: ReferencePath, controller: Controller) -> None:
    own = controller.path
    if own is path or same_path(own, path):
        return
    raise InputError(f"controller: built for path {own.name!r} ({'closed' if own.closed else 'open'}, "
                     f"{own.length:.2f} m), but simulate got path {path.name!r} "
                     f"({'closed' if path.closed else 'open'}, {path.length:.2f} m); expected the path the "
                     f"controller was built on: build it with {_constructor(controller)}(path, ...) on this path")


def _constructor(controller: Controller) -> str:
    """The class a user builds for ``controller`` (the MPC behind an adapter)."""
    if isinstance(controller, SpatialMPCController):
        return "SpatialMPC"
    if isinstance(controller, CvxpyController):
        return type(controller.reference).__name__
    return type(controller).__name__


def _period_hint(controller: Controller, T: float) -> str:
    if isinstance(controller, (SpatialMPCController, CvxpyController)):
        return f"build the controller with MPCSettings(control_period={T:g})"
    return f"build the controller with TrackingLimits(control_period={T:g}) (or its own period setting)"


def _check_control_period(control_period: Any, controller: Controller) -> None:
    if control_period is None:
        return
    T = _positive_seconds(control_period, "control_period")
    own = float(controller.control_period)
    if not np.isclose(T, own, rtol=1e-9, atol=0.0):
        name = "MPCSettings.control_period" if isinstance(controller, (SpatialMPCController, CvxpyController)) \
            else "control_period"
        raise SettingsError(f"control_period: simulate got {control_period!r} s but the controller plans with "
                            f"{name} = {own:g} s; expected the same period (or leave it unset): "
                            f"{_period_hint(controller, T)}")


def _finite(value: Any, name: str, unit: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name}: expected a finite number [{unit}], got {value!r}") from None
    if not np.isfinite(v):
        raise InputError(f"{name}: expected a finite number [{unit}], got {value!r}")
    return v


def _check_s0(path: ReferencePath, s0: Any) -> float:
    s = _finite(s0, "s0", "m")
    if path.closed:
        return s
    end = path.length - 0.5 * path.ds
    if not 0.0 <= s < end:
        raise InputError(f"s0: {s0!r} m is outside the open path {path.name!r} of length {path.length:.3f} m; "
                         f"expected 0 <= s0 < {end:.3f} m (a start at the end would end the run at once)")
    return s


def _check_start(path: ReferencePath, s0: float, e_y0: Any, e_psi0: Any, v0: Any, allow_outside: bool) -> None:
    e_y = _finite(e_y0, "e_y0", "m")
    _finite(e_psi0, "e_psi0", "rad")
    if v0 is not None:
        _finite(v0, "v0", "m/s")
    if allow_outside:
        return
    wl, wr = path.widths_at(s0)
    if not -wr <= e_y <= wl:
        raise InputError(f"e_y0: {e_y0!r} m starts outside the corridor at s0 = {s0:g} m, which allows "
                         f"{-wr:g} <= e_y0 <= {wl:g} m (width_right {wr:g} m, width_left {wl:g} m); start "
                         "inside it, or pass allow_outside_start=True to start outside on purpose")


def _tolerance(corridor_tolerance: Any, controller: Controller) -> float:
    if corridor_tolerance is None:
        return float(controller.vehicle.width)
    try:
        tol = float(corridor_tolerance)
    except (TypeError, ValueError):
        tol = float("nan")
    if np.isnan(tol) or tol < 0:
        raise InputError(f"corridor_tolerance: expected a distance >= 0 [m] (or None for the vehicle width), "
                         f"got {corridor_tolerance!r}")
    return tol


def _positive_seconds(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SettingsError(f"{name}: expected a positive number of seconds, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise SettingsError(f"{name}: expected a positive number of seconds, got {value!r}")
    return v
