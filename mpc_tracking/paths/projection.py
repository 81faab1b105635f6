"""Projection of poses onto a :class:`~mpc_tracking.paths.reference_path.ReferencePath`.

Two code paths give the same answer:

* a scalar fast path (pure Python on cached lists, no numpy call) for the one pose per
  control step the closed loop projects; with a hint it walks along the polyline from the
  hinted segment to the nearest local minimum of the distance, so it costs a few segments,
  not a window of hundreds. Once numba is loaded in the process (the MPC's compiled kernels
  load it) the walk runs as one compiled call (:mod:`._projection_kernels`, the same numbers;
  a path's ``projection_code = "python"`` keeps it in Python); a path alone never imports numba;
* a vectorized path for many points (walks all points at once; KD-tree candidates without
  a hint).

Both finish with two Newton steps on the local arc (waypoint heading + curvature), so the
result is the true projection between waypoints, not the nearest waypoint. A walk that
leaves the search window (the hint was stale or wrong) falls back to the global search.
"""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mpc_tracking.errors import PathError
from mpc_tracking.paths._walk import walk

__all__ = ["Projection", "wrap_angle", "ProjectionMixin"]

_TWO_PI = 2.0 * math.pi
#: the compiled walk (:func:`._projection_kernels.project_walk`): None not looked for yet, False not available
_WALK: list[Any] = [None]


def compiled_walk() -> Any:
    """The compiled scalar walk once numba is loaded in this process (the MPC's compiled kernels load it; a
    path alone never pays numba's import), else None."""
    walk = _WALK[0]
    if walk is None:
        if "numba" not in sys.modules:
            return None
        try:
            from mpc_tracking.paths import _projection_kernels
            walk = _projection_kernels.project_walk
        except ImportError:  # pragma: no cover - numba is loaded, so its kernel imports
            walk = False
        _WALK[0] = walk
    return walk or None


def wrap_angle(angle: Any) -> Any:
    """Wrap angles to [-pi, pi).

    Parameters
    ----------
    angle : float or ndarray
        Angles in radians.
    """
    return (np.asarray(angle) + np.pi) % (2.0 * np.pi) - np.pi


@dataclass(frozen=True)
class Projection:
    """Result of projecting poses onto a path (arrays, or floats for a single pose).

    Attributes
    ----------
    s : arc length of the nearest path point [m]
    e_y : signed lateral distance, positive to the left of the path [m]
    e_psi : heading error ``psi - psi_path(s)`` wrapped to [-pi, pi) [rad] (0 if no heading given)
    """

    s: Any
    e_y: Any
    e_psi: Any

    def __iter__(self):
        return iter((self.s, self.e_y, self.e_psi))


_SCALARS = (float, int, np.floating, np.integer)


def _is_scalar(v: Any) -> bool:
    """Cheap scalar test (``np.ndim`` costs microseconds on the hot path)."""
    return isinstance(v, _SCALARS) or (isinstance(v, np.ndarray) and v.ndim == 0)


class ProjectionMixin:
    """``project`` for a path with the arrays set by ``ReferencePath._finish``."""

    # set by the path class (ReferencePath._finish); declared here for the type checker
    n: int
    ds: float
    length: float
    closed: bool
    kappa: np.ndarray
    _s_ext: np.ndarray  # waypoint s, x, y, psi, index with the closing waypoint appended on a loop
    _x_ext: np.ndarray
    _y_ext: np.ndarray
    _psi_ext: np.ndarray
    _idx_ext: np.ndarray
    _seg_d: np.ndarray  # (n_seg, 2) segment vectors
    _seg_len2: np.ndarray  # squared segment lengths
    _n_seg: int
    _tree: Any  # scipy.spatial.cKDTree of the waypoints

    if TYPE_CHECKING:
        def wrap_s(self, s: Any) -> np.ndarray: ...

    def _cache_projection(self) -> None:
        """The segment data of the scalar walk (:func:`._walk.walk`), rows ``ROW_*``: as eight lists of floats for
        Python and as one C-contiguous array for the compiled walk."""
        rows = (self._s_ext, self._x_ext, self._y_ext, self._psi_ext, self._seg_d[:, 0], self._seg_d[:, 1],
                self._seg_len2, self.kappa[self._idx_ext[:-1]])
        table = np.zeros((8, self._s_ext.size))
        for row, values in enumerate(rows):
            table[row, :values.size] = values
        self._projection_table = table
        self._projection_lists = tuple(values.tolist() for values in rows)
        #: where the scalar projection runs: "auto" (compiled once numba is loaded), "python"
        self.projection_code = "auto"

    def _default_window(self) -> float:
        return min(0.25 * self.length, max(50 * self.ds, 10.0))

    def project(
        self,
        x: Any,
        y: Any,
        psi: Any = None,
        s_hint: Any = None,
        *,
        window: float | None = None,
    ) -> Projection:
        """Project poses onto the path (true projection between waypoints).

        Parameters
        ----------
        x, y : float or array_like, shape (m,)
            Positions [m].
        psi : float or array_like, optional
            Headings [rad]; ``e_psi`` is 0 when omitted.
        s_hint : float or array_like, optional
            Previous arc length [m]. The search walks from it to the nearest local minimum of
            the distance (keeps the right branch where the path passes close to itself) and
            falls back to a global search when the walk goes further than ``window``.
        window : float, optional
            Largest distance along s [m] the walk may go from the hint. Default:
            ``min(length / 4, max(50 ds, 10 m))``.

        Returns
        -------
        Projection
            ``(s, e_y, e_psi)`` with the shape of the input (floats for scalar input).
        """
        if s_hint is not None and _is_scalar(x) and _is_scalar(y) and _is_scalar(s_hint):
            out = self._project_scalar(x, y, psi, s_hint, window)
            if out is not None:
                return out
        return self._project_array(x, y, psi, s_hint, window)

    # ------------------------------------------------------------------ scalar fast path
    def _project_scalar(self, x, y, psi, s_hint, window):
        try:
            px, py, hint = float(x), float(y), float(s_hint)
        except (TypeError, ValueError):
            return None
        if not (math.isfinite(px) and math.isfinite(py) and math.isfinite(hint)):
            return None  # the array path raises the error / handles it
        L, closed, n_seg = self.length, self.closed, self._n_seg
        compiled = compiled_walk() if self.projection_code == "auto" else None
        w = window if window is not None else self._default_window()
        args = (n_seg, closed, L, self.ds, px, py, hint, int(w / self.ds) + 2)
        if compiled is not None:  # the same function, in one compiled call
            found, s, e_y, psi_p = compiled(self._projection_table, *args)
        else:
            found, s, e_y, psi_p = walk(self._projection_lists, *args)
        if not found:
            return None  # walked out of the window: global search
        e_psi = 0.0 if psi is None else (float(psi) - psi_p + math.pi) % _TWO_PI - math.pi
        return Projection(s, e_y, e_psi)

    # ------------------------------------------------------------------ vectorized path
    def _project_array(self, x, y, psi, s_hint, window):
        scalar = np.ndim(x) == 0 and np.ndim(y) == 0
        px = np.atleast_1d(np.asarray(x, dtype=float)).ravel()
        py = np.atleast_1d(np.asarray(y, dtype=float)).ravel()
        if px.shape != py.shape:
            raise PathError(f"project: x has {px.size} values but y has {py.size}")
        if not (np.all(np.isfinite(px)) and np.all(np.isfinite(py))):
            raise PathError("project: x and y must be finite")
        m = px.size
        if s_hint is None:
            best, t = self._best_on_segments(px, py, self._global_candidates(px, py))
        else:
            hint = np.broadcast_to(np.asarray(s_hint, dtype=float), (m,))
            if not np.all(np.isfinite(hint)):
                raise PathError("project: s_hint must be finite")
            w = self._default_window() if window is None else float(window)
            best, t, lost = self._walk(px, py, self.wrap_s(hint), int(w / self.ds) + 2)
            if lost.any():
                b2, t2 = self._best_on_segments(px[lost], py[lost], self._global_candidates(px[lost], py[lost]))
                best[lost], t[lost] = b2, t2
        s, e_y, psi_p = self._refine(px, py, best, t)
        if psi is None:
            e_psi = np.zeros_like(s)
        else:
            e_psi = wrap_angle(np.broadcast_to(np.asarray(psi, dtype=float).ravel(), s.shape) - psi_p)
        if scalar:
            return Projection(float(s[0]), float(e_y[0]), float(e_psi[0]))
        shape = np.shape(x)
        return Projection(s.reshape(shape), e_y.reshape(shape), e_psi.reshape(shape))

    def _walk(self, px, py, hint, max_steps):
        """Walk every point from its hinted segment to the nearest local distance minimum."""
        n_seg = self._n_seg
        i = np.clip(np.searchsorted(self._s_ext, hint, side="right") - 1, 0, n_seg - 1)
        last = np.zeros(px.size, dtype=np.int8)
        moving = np.ones(px.size, bool)
        for _ in range(max_steps):
            d = self._seg_d[i]
            t = ((px - self._x_ext[i]) * d[:, 0] + (py - self._y_ext[i]) * d[:, 1]) / self._seg_len2[i]
            back = (t < 0.0) & (last != 1)
            fwd = (t > 1.0) & (last != -1)
            if not self.closed:
                back &= i > 0
                fwd &= i < n_seg - 1
            moving = back | fwd
            if not moving.any():
                break
            i = i - back + fwd
            if self.closed:
                i = np.mod(i, n_seg)
            last = np.where(back, -1, np.where(fwd, 1, last)).astype(np.int8)
        return i, np.clip(t, 0.0, 1.0), moving

    def _global_candidates(self, px, py):
        k = min(4, self.n)
        _, idx = self._tree.query(np.column_stack([px, py]), k=k)
        idx = np.asarray(idx).reshape(px.size, k)
        before = np.mod(idx - 1, self._n_seg) if self.closed else np.clip(idx - 1, 0, self._n_seg - 1)
        after = np.clip(idx, 0, self._n_seg - 1)
        return np.concatenate([after, before], axis=1)

    def _best_on_segments(self, px, py, cand):
        ax = self._x_ext[cand]
        ay = self._y_ext[cand]
        d = self._seg_d[cand]
        t = ((px[:, None] - ax) * d[..., 0] + (py[:, None] - ay) * d[..., 1]) / self._seg_len2[cand]
        t = np.clip(t, 0.0, 1.0)
        ex = ax + t * d[..., 0] - px[:, None]
        ey = ay + t * d[..., 1] - py[:, None]
        col = np.argmin(ex * ex + ey * ey, axis=1)
        rows = np.arange(px.size)
        return cand[rows, col].copy(), t[rows, col].copy()

    def _refine(self, px, py, seg, t):
        """Newton steps on a local arc (waypoint heading + curvature) from the chord projection."""
        i = self._idx_ext[seg]
        seg_len = np.sqrt(self._seg_len2[seg])
        x0, y0, psi0, k0 = self._x_ext[seg], self._y_ext[seg], self._psi_ext[seg], self.kappa[i]
        c, sn = np.cos(psi0), np.sin(psi0)
        sig = t * seg_len
        for _ in range(2):
            half = 0.5 * k0 * sig**2
            rx = x0 + c * sig - sn * half - px
            ry = y0 + sn * sig + c * half - py
            tx = c - sn * k0 * sig
            ty = sn + c * k0 * sig
            f = rx * tx + ry * ty
            fp = tx * tx + ty * ty + k0 * (c * ry - sn * rx)
            sig = sig - np.where(np.abs(fp) > 1e-12, f / np.where(fp == 0, 1.0, fp), 0.0)
            sig = np.clip(sig, -0.5 * seg_len, 1.5 * seg_len)
        if not self.closed:
            sig = np.clip(sig, -self._s_ext[seg], self.length - self._s_ext[seg])
        half = 0.5 * k0 * sig**2
        rx = x0 + c * sig - sn * half
        ry = y0 + sn * sig + c * half
        psi_p = psi0 + k0 * sig
        e_y = -(px - rx) * np.sin(psi_p) + (py - ry) * np.cos(psi_p)
        s = self._s_ext[seg] + sig
        if self.closed:
            s = np.mod(s, self.length)
        return s, e_y, psi_p
