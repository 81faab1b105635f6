"""Drivable corridors along a path: track widths, static and moving obstacles, occupancy grids.

Every corridor implements the protocol the MPC uses (:class:`Corridor`)::

    lb, ub = corridor.bounds(s, t=None, e_y0=None)

giving the RAW free space on the lateral offset ``e_y`` [m] (positive left) at the arc lengths
``s`` (shape (K,)) and predicted times ``t``; the MPC itself shrinks it by the car's half width,
margin and footprint swing (:func:`car_bounds` does the same for analysis). Where obstacles split
the corridor, the gap containing (or nearest to) ``e_y0`` is chosen at the first point and that gap is
followed along ``s`` (see :func:`choose_gaps`) -- not the widest gap per point.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

# CircleObstacle, PolygonObstacle: still importable from here (they lived here before obstacles.py split off)
from mpc_tracking.environment.obstacles import CircleObstacle, MovingCircle, PolygonObstacle  # noqa: F401
from mpc_tracking.environment.occupancy_grid import OccupancyGrid
from mpc_tracking.errors import InputError

__all__ = ["Corridor", "TrackCorridor", "ObstacleCorridor", "choose_gaps", "car_bounds"]


class Corridor(Protocol):
    """Anything that gives lateral bounds along the path (the protocol the MPC queries)."""

    def bounds(
        self, s: np.ndarray, t: np.ndarray | None = None, e_y0: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Raw lower/upper bound on e_y [m] of the free space at arc lengths ``s`` and times ``t``.

        An optional attribute ``time_varying = False`` tells the MPC the bounds do not depend on
        ``t`` (it then queries once per step instead of twice).

        ``e_y0`` is the car's current lateral position: where an obstacle splits the corridor the
        provider picks the gap that contains (or is nearest to) it and follows that gap along ``s``.
        The bounds are not shrunk by the car; the MPC adds half width, margin and footprint swing.
        """
        ...


class TrackCorridor:
    """Corridor from the path's own widths: ``lb = -width_right(s)``, ``ub = width_left(s)``."""

    #: bounds do not depend on time (the MPC then queries once per step)
    time_varying = False

    def __init__(self, path) -> None:
        self.path = path

    def bounds(self, s: Any, t: Any = None, e_y0: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        q = self.path.interpolate(np.asarray(s, dtype=float))
        return -q["width_right"], q["width_left"].copy()


def choose_gaps(free: Sequence[Sequence[tuple[float, float]]],
                e_y0: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pick one free gap per point, consistently along s.

    Parameters
    ----------
    free : sequence of K lists of (lo, hi)
        Free intervals of ``e_y`` at each point [m].
    e_y0 : float, optional
        The car's lateral position (default 0).

    Returns
    -------
    lb, ub : ndarray, shape (K,)
        A tracked position starts at ``e_y0``; each point takes the gap containing it (else the
        nearest gap) and the position is then clipped into that gap, so a gap that drifts sideways
        is followed and a split keeps the side the car is on. A point with no free space gets
        ``lb = ub`` = the tracked position.
    """
    K = len(free)
    lb, ub = np.empty(K), np.empty(K)
    c = 0.0 if e_y0 is None or not np.isfinite(e_y0) else float(e_y0)
    for k, gaps in enumerate(free):
        if not gaps:
            lb[k] = ub[k] = c
            continue
        g = min(gaps, key=lambda iv: 0.0 if iv[0] <= c <= iv[1] else min(abs(iv[0] - c), abs(iv[1] - c)))
        lb[k], ub[k] = g
        c = min(max(c, g[0]), g[1])
    return lb, ub


class ObstacleCorridor:
    """Corridor from a base corridor (default: track widths) minus obstacles, optionally within a grid's free space.

    Parameters
    ----------
    path : ReferencePath
    obstacles : sequence of CircleObstacle / MovingCircle / PolygonObstacle
        Anything with ``blocked(px, py, nx, ny, t) -> (lo, hi)`` of shape (K, q).
    grid : OccupancyGrid, optional
        Only the grid's free cells along each normal are drivable.
    base : corridor, optional
        Outer limits (default :class:`TrackCorridor`); infinite limits are cut to ``max_range``.
    max_range : float
        Largest lateral offset searched when the base corridor is unbounded [m].
    grid_step : float, optional
        Sampling step along the normals in the grid [m] (default: half a cell).
    """

    def __init__(self, path, obstacles: Sequence[Any] = (), *, grid: OccupancyGrid | None = None,
                 base: Any = None, max_range: float = 10.0, grid_step: float | None = None) -> None:
        self.path = path
        self.obstacles = list(obstacles)
        for i, ob in enumerate(self.obstacles):
            if not hasattr(ob, "blocked"):
                raise InputError(f"obstacles[{i}]: expected an obstacle with a blocked() method, "
                                 f"got {type(ob).__name__}")
        self.grid = grid
        self.base = base if base is not None else TrackCorridor(path)
        self.max_range = float(max_range)
        self.grid_step = grid_step
        #: True when an obstacle moves (the MPC then checks both ends of the car's passage)
        self.time_varying = any(isinstance(ob, MovingCircle) for ob in self.obstacles) or bool(
            getattr(self.base, "time_varying", True)
        )

    def free_intervals(self, s: Any, t: Any = None) -> list[list[tuple[float, float]]]:
        """Free intervals of ``e_y`` at each ``s`` (at times ``t``), before the gap choice."""
        s = np.atleast_1d(np.asarray(s, dtype=float))
        t = np.zeros_like(s) if t is None else np.broadcast_to(np.asarray(t, dtype=float), s.shape)
        q = self.path.interpolate(s)
        px, py = q["x"], q["y"]
        nx, ny = -np.sin(q["psi"]), np.cos(q["psi"])
        lb0, ub0 = self.base.bounds(s, t)
        lb0 = np.maximum(np.asarray(lb0, dtype=float), -self.max_range)
        ub0 = np.minimum(np.asarray(ub0, dtype=float), self.max_range)
        if self.grid is not None:
            free = self.grid.free_intervals(px, py, nx, ny, lb0, ub0, self.grid_step)
        else:
            free = [[(a, b)] if a <= b else [] for a, b in zip(lb0.tolist(), ub0.tolist(), strict=True)]
        if self.obstacles:
            blocks = [ob.blocked(px, py, nx, ny, t) for ob in self.obstacles]
            lo = np.hstack([b[0] for b in blocks])
            hi = np.hstack([b[1] for b in blocks])
            for k in np.flatnonzero(np.any(np.isfinite(lo), axis=1)).tolist():
                ok = np.isfinite(lo[k])
                free[k] = _subtract(free[k], sorted(zip(lo[k][ok].tolist(), hi[k][ok].tolist(), strict=True)))
        return free

    def bounds(self, s: Any, t: Any = None, e_y0: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Raw free bounds (lb, ub) on e_y [m] at ``s``, following one gap (see :func:`choose_gaps`)."""
        return choose_gaps(self.free_intervals(s, t), e_y0)


def _subtract(free: list[tuple[float, float]], blocked: list[tuple[float, float]]) -> list[tuple[float, float]]:
    out = []
    for a, b in free:
        cur = a
        for lo, hi in blocked:
            if hi <= cur or lo >= b:
                continue
            if lo > cur:
                out.append((cur, lo))
            cur = max(cur, hi)
            if cur >= b:
                break
        if cur < b:
            out.append((cur, b))
    return out


def car_bounds(lb: Any, ub: Any, half_width: float, e_psi: Any = 0.0, *, l_front: float = 0.0,
               l_rear: float = 0.0, margin: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on the reference point's e_y that keep the whole car body inside ``[lb, ub]``.

    The car's lateral extent is ``half_width cos(e_psi) + max(l_front, l_rear) |sin(e_psi)| + margin``
    (a rectangle reaching ``l_front`` ahead of and ``l_rear`` behind the reference point, rotated
    by the heading error). Where the result has ``lo > hi`` the car does not fit.

    Parameters
    ----------
    lb, ub : array_like, shape (K,)
        Raw free bounds [m].
    half_width : float
        Half the car's width [m].
    e_psi : float or array_like, shape (K,)
        Heading error [rad].
    """
    e_psi = np.asarray(e_psi, dtype=float)
    ext = half_width * np.cos(e_psi) + max(l_front, l_rear) * np.abs(np.sin(e_psi)) + margin
    return np.asarray(lb, dtype=float) + ext, np.asarray(ub, dtype=float) - ext
