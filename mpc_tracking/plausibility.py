"""Checks that a closed-loop run's numbers are plausible, in one place each.

- :func:`nonfinite_outputs`: every plant output the loop reads (pose, speed, velocities) in one
  check, so a NaN speed ends the run like a NaN pose (``non_finite_state``), never a log of NaN.
- :func:`check_initial_speed`: ``v0`` within the controller's range (a start at 1e6 m/s is a typo).
- :func:`check_step_fits_path`: the MPC step ``ds`` is shorter than the path (a step longer than
  the whole path "solves" a problem that has nothing to do with the path).
- :func:`check_step_wall_limit` / :class:`StepWatch`: the wall-time budget of one loop step
  (observe, control, plant), so a plant plugin that stalls ends the run with the outcome
  ``step_wall_limit`` instead of running on unbounded.

Used by :func:`mpc_tracking.simulation.simulate` (and so by ``mpc-tracking check``); they take
plain numbers and objects with the attributes named, and import nothing above the paths.

Examples
--------
>>> nonfinite_outputs({"x": 1.0, "speed": float("nan")})
'speed = nan'
>>> nonfinite_outputs({"x": 1.0, "speed": 2.0}) is None
True
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Any

from mpc_tracking.errors import InputError, SettingsError

__all__ = ["nonfinite_outputs", "check_initial_speed", "check_step_fits_path", "check_step_wall_limit",
           "StepWatch", "V0_FACTOR"]

logger = logging.getLogger(__name__)

#: the fastest start allowed, as a multiple of the controller's ``v_max``
V0_FACTOR = 2.0


def nonfinite_outputs(outputs: Mapping[str, Any]) -> str | None:
    """``"name = value, ..."`` of the outputs that are not finite numbers; None when all are.

    Parameters
    ----------
    outputs : mapping of str -> float
        What the loop read from the plant this step (``x, y, yaw`` [m, m, rad], ``speed`` [m/s],
        ``v_x, v_y`` [m/s], ``r`` [rad/s]).
    """
    bad = []
    for name, value in outputs.items():
        try:
            ok = math.isfinite(float(value))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            bad.append(f"{name} = {value!r}" if not isinstance(value, float) else f"{name} = {value}")
    return ", ".join(bad) or None


def check_initial_speed(v0: Any, v_max: float) -> None:
    """``v0`` [m/s] must be finite with ``|v0| <= V0_FACTOR * v_max`` (None: the default, fine).

    Raises
    ------
    InputError
        Naming ``v0``, its value and the range allowed.
    """
    if v0 is None:
        return
    try:
        v = float(v0)
    except (TypeError, ValueError):
        raise InputError(f"v0: expected a finite number [m/s], got {v0!r}") from None
    limit = V0_FACTOR * float(v_max)
    if not math.isfinite(v) or abs(v) > limit:
        raise InputError(f"v0: {v0!r} m/s is outside the range the controller drives in; expected "
                         f"|v0| <= {V0_FACTOR:g} x controller.v_max = {limit:g} m/s")


def check_step_fits_path(ds: float, horizon: int, length: float, closed: bool, name: str = "path") -> None:
    """The MPC step ``ds`` [m] must be shorter than the path ``length`` [m]; a horizon that covers
    more than a whole closed path is logged (its reference repeats the lap).

    Raises
    ------
    SettingsError
        ``controller.ds`` longer than the path, naming both lengths.
    """
    if not ds < length:
        raise SettingsError(f"controller.ds: an MPC step of {ds:g} m is not shorter than the whole path {name!r} "
                            f"({length:.4g} m); expected ds < the path length (e.g. ds <= {length / 20:.3g} m: "
                            "20 steps per path)")
    if closed and ds * horizon > length:
        logger.warning("the horizon (%d steps of %.3g m = %.4g m) covers more than the closed path %r (%.4g m): "
                       "it plans more than a lap ahead", horizon, ds, ds * horizon, name, length)


def check_step_wall_limit(limit: Any) -> float | None:
    """``step_wall_limit`` [s]: None (no limit) or a positive number of seconds.

    Raises
    ------
    SettingsError
    """
    if limit is None:
        return None
    try:
        v = float(limit)
    except (TypeError, ValueError):
        v = math.nan
    if isinstance(limit, bool) or not math.isfinite(v) or v <= 0:
        raise SettingsError(f"step_wall_limit: expected a positive number of seconds (or None: no limit), "
                            f"got {limit!r}")
    return v


class StepWatch:
    """The wall time [s] of the current loop step and whether it is over ``limit``.

    :meth:`start` at the top of a step, :meth:`elapsed` any time after; :meth:`over` is the
    message for a step over its limit (None within it, or with no limit).
    """

    def __init__(self, limit: float | None) -> None:
        self.limit = limit
        self._t0 = time.perf_counter()

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def over(self, t: float, part: str = "the loop step") -> str | None:
        """A message naming ``part`` when the step so far took longer than the limit, else None."""
        if self.limit is None:
            return None
        took = self.elapsed()
        if took <= self.limit:
            return None
        return (f"{part} at t = {t:.2f} s took {took:.3g} s of wall time, more than step_wall_limit = "
                f"{self.limit:g} s (a stalled plant or controller); the run stopped there")
