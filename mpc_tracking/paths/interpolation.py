"""The one piecewise-linear interpolator for path quantities (used by the path and the MPC).

Every linear interpolation of per-waypoint arrays (curvature, widths, speed profile, the MPC's
speed ceilings and body-reduced widths) goes through :class:`LinearTable`: one index search for
all columns, clamped at the grid ends, and safe for infinite entries -- a path without widths
carries ``inf`` widths, and ``inf`` must stay ``inf`` between two waypoints instead of becoming
``inf - inf = nan``.

>>> import numpy as np
>>> table = LinearTable(np.array([0.0, 1.0, 2.0]), np.array([[0.0, np.inf], [2.0, np.inf], [4.0, 1.0]]))
>>> table(np.array([0.5, 1.0, 1.25, 9.0])).tolist()
[[1.0, inf], [2.0, inf], [2.5, inf], [4.0, 1.0]]
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np

__all__ = ["LinearTable"]


class LinearTable:
    """Piecewise-linear interpolation of the columns of ``table`` on the increasing grid ``s``.

    Parameters
    ----------
    s : ndarray, shape (n,)
        Grid [m], non-decreasing, n >= 2 (a repeated value gives a zero-length segment).
    table : ndarray, shape (n, m)
        Values at the grid points; ``inf`` entries are allowed (see the module doc).
    """

    def __init__(self, s: np.ndarray, table: np.ndarray) -> None:
        self.s = np.asarray(s, dtype=float)
        self.table = np.asarray(table, dtype=float)
        if self.table.ndim != 2 or self.table.shape[0] != self.s.size or self.s.size < 2:
            raise ValueError(f"LinearTable: expected s (n,) with n >= 2 and table (n, m), got {self.s.shape}, "
                             f"{self.table.shape}")
        with np.errstate(invalid="ignore"):
            delta = np.diff(self.table, axis=0)
        self._has_inf = not bool(np.all(np.isfinite(self.table)))
        if self._has_inf:
            delta[np.isnan(delta)] = 0.0  # inf -> inf (same sign): the value stays inf along the segment
        self.delta = delta
        self._inv_len = 1.0 / np.maximum(np.diff(self.s), 1e-12)
        self._n_seg = self.s.size - 1
        self._lists: tuple[list, list, list, list] | None = None  # the arrays as flat lists, for :meth:`row`

    def segment(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Segment index ``i`` (k,) and weight ``w`` in [0, 1] (k,) of each query ``s`` (k,), clamped."""
        i = np.searchsorted(self.s, s, side="right") - 1
        np.minimum(np.maximum(i, 0, out=i), self._n_seg - 1, out=i)
        w = (s - self.s[i]) * self._inv_len[i]
        np.minimum(np.maximum(w, 0.0, out=w), 1.0, out=w)
        return i, w

    def at(self, i: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Values (k, m) on segments ``i`` at weights ``w`` (from :meth:`segment`)."""
        lo = self.table[i]
        if not self._has_inf:
            out = self.delta[i] * w[:, None]
            out += lo
            return out
        with np.errstate(invalid="ignore"):
            out = self.delta[i] * w[:, None] + lo
            # finite <-> inf segments give 0 * inf or inf - inf: take the nearer end
            bad = np.isnan(out)
            if bad.any():
                near = np.where((w < 0.5)[:, None], lo, self.table[i + 1])
                out[bad] = near[bad]
        return out

    def row(self, s: float) -> list[float]:
        """Values (m,) at one finite arc length ``s`` [m]: the numbers of ``self(np.array([s]))[0]``,
        computed on Python floats (one query costs less without numpy calls)."""
        if self._lists is None:  # flat lists of floats: no container per row for the garbage collector
            self._lists = (self.s.tolist(), self.table.ravel().tolist(), self.delta.ravel().tolist(),
                           self._inv_len.tolist())
        grid, table, delta, inv_len = self._lists
        i = min(max(bisect_right(grid, s) - 1, 0), self._n_seg - 1)
        w = min(max((s - grid[i]) * inv_len[i], 0.0), 1.0)
        m = self.table.shape[1]
        a = i * m
        lo = table[a:a + m]
        out = [d * w + v for d, v in zip(delta[a:a + m], lo, strict=True)]
        if self._has_inf:  # as :meth:`at`: a NaN from inf takes the nearer end
            near = lo if w < 0.5 else table[a + m:a + 2 * m]
            out = [b if v != v else v for v, b in zip(out, near, strict=True)]
        return out

    def __call__(self, s: np.ndarray) -> np.ndarray:
        """Values (k, m) at the arc lengths ``s`` (k,) [m]."""
        return self.at(*self.segment(np.asarray(s, dtype=float)))
