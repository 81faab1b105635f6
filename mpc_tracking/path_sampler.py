"""Fast linear sampling of path quantities on the MPC's prediction grid (hot path)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .reference_path import ReferencePath

__all__ = ["PathSampler", "PathSample"]


class PathSample(NamedTuple):
    """Path quantities at grid points, each of shape (K,)."""

    kappa: np.ndarray
    width_left: np.ndarray
    width_right: np.ndarray
    v_ref: np.ndarray | None
    x: np.ndarray
    y: np.ndarray
    psi: np.ndarray


class PathSampler:
    """Piecewise-linear interpolation of a path's arrays with ``np.interp`` (wraps closed paths).

    Linear interpolation of x/y/psi is used only to place predictions in the world
    (plots); curvature and widths are exactly the waypoint values at waypoints.
    """

    def __init__(self, path: ReferencePath) -> None:
        self.closed = path.closed
        self.length = path.length
        s = path.s
        if path.closed:
            turn = path.psi[-1] + path.kappa[-1] * path.ds - path.psi[0]
            psi_end = path.psi[0] + 2.0 * np.pi * np.round(turn / (2.0 * np.pi))
            ext = lambda a, end=None: np.append(a, a[0] if end is None else end)  # noqa: E731
            self.s = np.append(s, path.length)
            self.psi = ext(path.psi, psi_end)
        else:
            ext = lambda a, end=None: a  # noqa: E731
            self.s = s
            self.psi = path.psi
        self.kappa = ext(path.kappa)
        self.wl = ext(path.width_left)
        self.wr = ext(path.width_right)
        self.x = ext(path.x)
        self.y = ext(path.y)
        self.v_ref = None if path.v_ref is None else ext(path.v_ref)
        self.lap_turn = float(self.psi[-1] - self.psi[0])

    def wrap(self, s: np.ndarray) -> np.ndarray:
        if self.closed:
            return np.mod(s, self.length)
        return np.minimum(np.maximum(s, 0.0), self.length)

    def sample(self, s: np.ndarray) -> PathSample:
        """Quantities at arc lengths ``s`` (K,) [m]."""
        sw = self.wrap(s)
        si = self.s
        interp = np.interp
        v = None if self.v_ref is None else interp(sw, si, self.v_ref)
        psi = interp(sw, si, self.psi)
        if self.closed:
            psi = psi + np.floor(s / self.length) * self.lap_turn
        return PathSample(
            interp(sw, si, self.kappa), interp(sw, si, self.wl), interp(sw, si, self.wr), v,
            interp(sw, si, self.x), interp(sw, si, self.y), psi,
        )
