"""Obstacles in the plane: circles, convex/concave polygons and circles moving at constant velocity.

Each obstacle answers ``blocked(s, t, path)`` style queries used by
:class:`mpc_tracking.environment.corridor.ObstacleCorridor`; coordinates in m, velocities in m/s.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from mpc_tracking.errors import InputError

__all__ = ["CircleObstacle", "MovingCircle", "PolygonObstacle", "obstacle_record"]


def _xy(value: Any, name: str) -> np.ndarray:
    a = np.asarray(value, dtype=float).reshape(-1)
    if a.size != 2 or not np.all(np.isfinite(a)):
        raise InputError(f"{name}: expected a finite (x, y) pair in m, got {value!r}")
    return a


class CircleObstacle:
    """Static disc of ``radius`` [m] at ``center`` (x, y) [m]."""

    def __init__(self, center: Any, radius: float) -> None:
        self.center = _xy(center, "center")
        self.radius = float(radius)
        if not np.isfinite(self.radius) or self.radius <= 0:
            raise InputError(f"radius: expected a circle radius > 0 m, got {radius!r}")

    def center_at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Centre at times ``t`` (shape (K,)) [m]."""
        t = np.asarray(t, dtype=float)
        return np.full(t.shape, self.center[0]), np.full(t.shape, self.center[1])

    def blocked(self, px, py, nx, ny, t) -> tuple[np.ndarray, np.ndarray]:
        """Blocked stretch ``[lo, hi]`` of each normal line ``p + e n`` (NaN where missed), shape (K, 1)."""
        cx, cy = self.center_at(t)
        dx, dy = px - cx, py - cy
        b = dx * nx + dy * ny
        disc = b * b - (dx * dx + dy * dy - self.radius**2)
        root = np.sqrt(np.where(disc > 0, disc, np.nan))
        return (-b - root)[:, None], (-b + root)[:, None]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(center={self.center.tolist()}, radius={self.radius})"


class MovingCircle(CircleObstacle):
    """Disc moving with constant ``velocity`` (vx, vy) [m/s]; at ``center`` at time ``t0`` [s]."""

    def __init__(self, center: Any, radius: float, velocity: Any, t0: float = 0.0) -> None:
        super().__init__(center, radius)
        self.velocity = _xy(velocity, "velocity")
        self.t0 = float(t0)

    def center_at(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dt = np.asarray(t, dtype=float) - self.t0
        return self.center[0] + self.velocity[0] * dt, self.center[1] + self.velocity[1] * dt


class PolygonObstacle:
    """Static simple polygon with ``vertices`` of shape (m, 2) [m] (any orientation, may be non-convex)."""

    def __init__(self, vertices: Any) -> None:
        v = np.asarray(vertices, dtype=float)
        if v.ndim != 2 or v.shape[1] != 2 or len(v) < 3 or not np.all(np.isfinite(v)):
            raise InputError(f"vertices: expected >= 3 finite (x, y) points, got shape {v.shape}")
        self.vertices = v

    def blocked(self, px, py, nx, ny, t) -> tuple[np.ndarray, np.ndarray]:
        """Blocked stretches of each normal line (even-odd pairing of edge crossings), shape (K, m // 2)."""
        a = self.vertices
        b = np.roll(a, -1, axis=0)
        ex, ey = (b - a).T  # (m,)
        denom = nx[:, None] * ey[None, :] - ny[:, None] * ex[None, :]  # cross(n, edge)
        wx = a[None, :, 0] - px[:, None]
        wy = a[None, :, 1] - py[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            e = (wx * ey[None, :] - wy * ex[None, :]) / denom  # offset along the normal
            tau = (wx * ny[:, None] - wy * nx[:, None]) / denom  # position along the edge
        hit = (np.abs(denom) > 1e-15) & (tau >= 0.0) & (tau < 1.0)
        e = np.sort(np.where(hit, e, np.nan), axis=1)  # NaN sort last
        q = len(a) // 2
        return e[:, 0 : 2 * q : 2], e[:, 1 : 2 * q : 2]

    def __repr__(self) -> str:
        return f"PolygonObstacle({len(self.vertices)} vertices)"


def obstacle_record(obstacle: CircleObstacle | PolygonObstacle) -> dict[str, Any]:
    """An obstacle as a plain record (saved with runs, read by the plots).

    Keys: ``type`` (``"circle"`` or ``"polygon"``), ``center`` [m] + ``radius`` [m] or ``points``
    [m], ``velocity`` [m/s] (None when static), ``t0`` [s] (when a moving circle is at ``center``),
    ``name`` (None).

    >>> obstacle_record(CircleObstacle((1.0, 2.0), 0.5))["center"]
    [1.0, 2.0]
    """
    vel = getattr(obstacle, "velocity", None)
    rec: dict[str, Any] = {"velocity": None if vel is None else [float(c) for c in vel],
                           "t0": float(getattr(obstacle, "t0", 0.0)), "name": None}
    if isinstance(obstacle, CircleObstacle):
        rec.update(type="circle", center=[float(c) for c in obstacle.center], radius=float(obstacle.radius),
                   points=None)
    else:
        rec.update(type="polygon", points=np.asarray(obstacle.vertices, dtype=float).tolist(), center=None,
                   radius=None)
    return rec
