"""The controller node's run log: the same series, lap counting and outcomes as
:func:`mpc_tracking.simulate`, so a run over ROS 2 gives a :class:`~mpc_tracking.SimulationResult`
(``mpc-tracking ros-sim`` prints and writes it as ``run`` does).

It mirrors the in-process loop: every step the odometry pose is projected with the previous arc
length as hint; the lap counter accumulates the wrapped progress and interpolates the crossing time
within the step; a run ends on the requested laps (closed path), the end of an open path, the
reference point more than ``corridor_tolerance`` past a corridor edge, ``t_max``, or a safe stop
once the car is slower than :data:`STOPPED_SPEED`.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from mpc_tracking.mpc.settings import MPCSolution, Status
from mpc_tracking.paths.projection import Projection
from mpc_tracking.paths.reference_path import ReferencePath
from mpc_tracking.results import SERIES, Outcome, SimulationResult

__all__ = ["RunRecord", "STOPPED_SPEED", "start_pose"]

#: a safe stop ends the run once the car is slower than this [m/s] (as in the in-process loop)
STOPPED_SPEED = 0.05


def start_pose(path: ReferencePath, s0: float, e_y0: float, e_psi0: float) -> tuple[float, float, float]:
    """World pose ``(x, y, yaw)`` [m, m, rad] of the reference point at ``(s0, e_y0)`` with heading
    error ``e_psi0`` (how the simulation places the car at the start).

    Examples
    --------
    >>> p = ReferencePath([0.0, 10.0], [0.0, 0.0], ds=0.5)
    >>> [round(float(c), 6) for c in start_pose(p, 2.0, 1.0, 0.1)]
    [2.0, 1.0, 0.1]
    """
    q = path.interpolate(np.array([float(s0)]))
    psi = float(q["psi"][0])
    return (float(q["x"][0]) - e_y0 * math.sin(psi), float(q["y"][0]) + e_y0 * math.cos(psi), psi + e_psi0)


class RunRecord:
    """Per-step log, lap counter and run outcome of a controller fed over ROS 2.

    Parameters
    ----------
    path : ReferencePath
    laps : int
        Laps to drive on a closed path.
    t_max : float
        Time limit [s] (``inf``: none).
    tolerance : float
        How far [m] the reference point may go past a corridor edge.
    s0 : float
        Arc length [m] of the start (the lap counter's origin).
    """

    def __init__(self, path: ReferencePath, laps: int, t_max: float, tolerance: float, s0: float) -> None:
        self.path, self.laps, self.t_max, self.tolerance = path, int(laps), float(t_max), float(tolerance)
        self.s_prev = float(s0)
        self.progress = 0.0
        self.laps_done = 0
        self.lap_times: list[float] = []
        self._lap_start = 0.0
        self._t_prev: float | None = None
        self.rows: list[tuple[float, ...]] = []
        self.horizons: list[np.ndarray] = []
        self.outcome: Outcome | None = None
        self.message = ""
        self._end = path.length - 0.5 * path.ds

    @property
    def finished(self) -> bool:
        """True once the run has an outcome."""
        return self.outcome is not None

    def finish(self, outcome: Outcome, message: str = "") -> None:
        """End the run (the first outcome stays)."""
        if self.outcome is None:
            self.outcome, self.message = outcome, message

    def observe(self, proj: Projection, t: float) -> bool:
        """Count the progress to ``proj`` at time ``t`` [s]; False when the run ends here."""
        self._count(proj.s, t)
        if self.path.closed and self.laps_done >= self.laps:
            self.finish(Outcome.COMPLETED)
        elif not self.path.closed and proj.s >= self._end:
            self.finish(Outcome.END_OF_PATH)
        else:
            wl, wr = self.path.widths_at(proj.s)
            if proj.e_y > wl + self.tolerance or proj.e_y < -wr - self.tolerance:
                self.finish(Outcome.LEFT_CORRIDOR, f"e_y = {proj.e_y:.3f} m at s = {proj.s:.1f} m, t = {t:.2f} s")
            elif t >= self.t_max:
                self.finish(Outcome.TIME_LIMIT)
        return not self.finished

    def _count(self, s: float, t: float) -> None:
        L = self.path.length
        ds = s - self.s_prev
        if self.path.closed:
            ds = (ds + 0.5 * L) % L - 0.5 * L
        self.s_prev = s
        self.progress += ds
        t_prev, self._t_prev = self._t_prev, t
        if not self.path.closed:
            return
        while self.progress >= (self.laps_done + 1) * L:
            self.laps_done += 1
            before = self.progress - ds
            frac = (self.laps_done * L - before) / ds if ds > 0 else 1.0
            t_cross = t if t_prev is None else t_prev + frac * (t - t_prev)
            self.lap_times.append(t_cross - self._lap_start)
            self._lap_start = t_cross

    def record(self, t: float, xy: tuple[float, float], yaw: float, speed: float, proj: Projection,
               sol: MPCSolution) -> None:
        """Log one step (the series of :data:`mpc_tracking.results.SERIES`) and end the run on a
        safe stop at standstill."""
        wl, wr = self.path.widths_at(proj.s)
        ok = sol.success
        row = {
            "t": t, "x": xy[0], "y": xy[1], "yaw": yaw, "s": proj.s, "e_y": proj.e_y, "e_psi": proj.e_psi,
            "v": speed, "v_cmd": sol.v, "delta_cmd": sol.delta, "v_ref": float(sol.u[0, 0]) if ok else np.nan,
            "lb": float(sol.lb[0]) if sol.lb is not None else -wr,
            "ub": float(sol.ub[0]) if sol.ub is not None else wl,
            "status": sol.status.code, "solve_time": sol.solve_time, "step_time": sol.step_time,
            "iterations": sol.iterations, "corridor_violation": sol.corridor_violation,
        }
        self.rows.append(tuple(float(row[name]) for name in SERIES))
        self.horizons.append(np.asarray(sol.xy, dtype=float))
        if sol.status == Status.SAFE_STOP and abs(speed) < STOPPED_SPEED:
            self.finish(Outcome.SAFE_STOP)

    def result(self, N: int, info: dict[str, Any], vehicle: Any = None) -> SimulationResult:
        """The run as a :class:`~mpc_tracking.SimulationResult` (outcome ``time_limit`` if none yet)."""
        table = np.array(self.rows, dtype=float).reshape(-1, len(SERIES)).T
        series = {name: table[i].copy() for i, name in enumerate(SERIES)}
        horizons = np.asarray(self.horizons) if self.horizons else np.zeros((0, N + 1, 2))
        return SimulationResult(series=series, horizon_xy=horizons, reason=self.outcome or Outcome.TIME_LIMIT,
                                message=self.message, laps_completed=self.laps_done, lap_times=list(self.lap_times),
                                info=info, path=self.path, vehicle=vehicle)
