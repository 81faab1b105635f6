"""Reference paths: uniform arc-length waypoints with heading, curvature and track widths.

A :class:`ReferencePath` is built from either a dense centre line (optionally with
left/right track widths) or from a handful of corner points that are filled and smoothed;
the construction (resampling, smoothing, the width and geometry checks, the fit report) is
:mod:`mpc_tracking.paths.builder`'s. This module is the query object: interpolation at any
``s``, projection (:mod:`mpc_tracking.paths.projection`), widths and points at an offset.

Conventions: SI units, heading 0 along +x and counter-clockwise positive, lateral error
``e_y`` positive to the left of the path, arc length ``s`` in metres from the first waypoint.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from mpc_tracking.errors import PathError
from mpc_tracking.paths import builder
from mpc_tracking.paths._checks import _check_positive
from mpc_tracking.paths.builder import fit_tolerance
from mpc_tracking.paths.corners import corner_path
from mpc_tracking.paths.geometry import offset_point
from mpc_tracking.paths.interpolation import LinearTable
from mpc_tracking.paths.projection import ProjectionMixin
from mpc_tracking.paths.summary import describe_path, fit_smoothing, format_description

__all__ = ["ReferencePath", "fit_tolerance"]


class ReferencePath(ProjectionMixin):
    """Uniform-s waypoints along a smooth curve.

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Dense centre-line points [m]. Duplicate consecutive points are removed; for a
        closed path a last point equal to the first is dropped.
    width_left, width_right : array_like of shape (n,) or float, optional
        Distance from the centre line to the left/right drivable edge [m], > 0.
        ``None`` means no lateral limit (infinite corridor).
    ds : float
        Target waypoint spacing [m], > 0. The actual spacing ``self.ds`` divides the
        length exactly (closed: ``length / n``; open: ``length / (n - 1)``).
    closed : bool
        Whether the path is a loop; closed paths wrap in ``s``.
    smoothing : float
        RMS distance [m] the smoothed points may move from the input points (periodic
        Whittaker smoother, :mod:`mpc_tracking.paths.smoothing`), then an interpolating cubic
        spline; 0 interpolates the input. About 0.25 m suits GPS-derived full-size tracks.
    v_ref : array_like, shape (n,), optional
        Speed profile at the input points [m/s]; resampled like the widths.
    name : str
        Label used in plots and summaries.

    Attributes
    ----------
    s, x, y, psi, kappa, width_left, width_right : ndarray, shape (n_waypoints,)
        Arc length [m], position [m], continuous (unwrapped) heading [rad], curvature [1/m],
        widths [m] (``inf`` when none were given).
    v_ref : ndarray or None
        Speed profile [m/s] (see :mod:`mpc_tracking.paths.speed_profile`).
    length : float
        Total arc length [m] (for a closed path including the closing segment).
    fit_deviation : float
        Largest distance [m] between the fitted centre line and the polyline through the input
        points (either way round); logged, and a warning beyond :func:`fit_tolerance`.
    fit_deviation_index : int
        The input point (index into ``x, y`` as given) nearest to where that deviation is.
    input_points : ndarray, shape (n, 2), or None
        The points the path was fitted to, as given (the corners for :meth:`from_corners`;
        None for :meth:`from_waypoints`); plots draw them against the path.
    obstacles : tuple
        Obstacles that came with the path (YAML courses), for
        :class:`mpc_tracking.environment.ObstacleCorridor`; empty by default, set only through
        :meth:`with_obstacles`.
    """

    obstacles: tuple = ()
    #: the points the path was fitted to, shape (n, 2) [m], as given (None for ``from_waypoints``)
    input_points: np.ndarray | None = None
    # the waypoint arrays and figures the builder (:mod:`mpc_tracking.paths.builder`) fills
    name: str
    closed: bool
    smoothing: float
    s: np.ndarray
    x: np.ndarray
    y: np.ndarray
    psi: np.ndarray
    kappa: np.ndarray
    width_left: np.ndarray
    width_right: np.ndarray
    v_ref: np.ndarray | None
    raw_kappa: np.ndarray | None
    length: float
    ds: float
    input_spacing: float
    fit_deviation: float
    fit_deviation_index: int
    _tck: Any

    def __init__(
        self,
        x: Any,
        y: Any,
        *,
        width_left: Any = None,
        width_right: Any = None,
        ds: float = 0.1,
        closed: bool = False,
        smoothing: float = 0.0,
        v_ref: Any = None,
        name: str = "path",
    ) -> None:
        builder.init_from_points(self, x, y, width_left=width_left, width_right=width_right, ds=ds, closed=closed,
                                 smoothing=smoothing, v_ref=v_ref, name=name)

    @classmethod
    def from_corners(
        cls,
        points: Any,
        *,
        ds: float | None = None,
        closed: bool | None = None,
        radius: Any = None,
        blend: float = 0.5,
        smoothing: float | None = None,
        width_left: Any = None,
        width_right: Any = None,
        name: str = "corners",
        fit_radius: bool = False,
    ) -> ReferencePath:
        """Build a path from corner points: straight edges, corners rounded by clothoid-arc blends.

        Straight edges stay straight (curvature exactly 0) and every corner keeps the sign of its
        turn; the curvature is continuous (piecewise linear) for ``blend > 0``. See
        :mod:`mpc_tracking.paths.corners`.

        Parameters
        ----------
        points : array_like, shape (n, 2)
            Corner points [m] (n >= 2; n >= 3 when closed). Duplicate consecutive points are
            removed. Closed paths start (``s = 0``) in the middle of the first edge's straight.
        ds : float, optional
            Waypoint spacing [m]. Default :func:`~mpc_tracking.paths.defaults.default_ds`: 0.5 m,
            finer on polygons shorter than 50 m (the same default as files and scenarios).
        closed : bool, optional
            Whether the polygon is a loop. Default: decided from the points
            (:func:`~mpc_tracking.paths.defaults.closure`: a typed rectangle is a loop, an
            out-and-back route is not), logged as a warning naming this argument.
        radius : float or array_like of shape (n,), optional
            Minimum radius of each rounded corner [m]; reduced where neighbouring corners do not
            fit on their common edge. Default: a quarter of the median edge length
            (:func:`~mpc_tracking.paths.defaults.default_corner_radius`).
        blend : float
            Share of each corner's turning done in clothoids (0 = circular arc only, 1 = clothoids
            only). Default 0.5.
        smoothing : float, optional
            If > 0, the rounded polygon is additionally smoothed with this RMS deviation [m]
            (as in the main constructor). Default: no extra smoothing.
        width_left, width_right : float or array_like of shape (n,), optional
            Widths at the corners [m], interpolated along the polygon edges.
        fit_radius : bool
            A given ``radius`` that does not fit on an edge is reduced to fit (logged) instead of
            being an error naming the largest that fits (for default radii chosen by a caller).
        """
        return corner_path(cls, points, ds=ds, closed=closed, radius=radius, blend=blend, smoothing=smoothing,
                           width_left=width_left, width_right=width_right, name=name, fit_radius=fit_radius)

    @classmethod
    def from_waypoints(
        cls,
        s: Any,
        x: Any,
        y: Any,
        psi: Any,
        kappa: Any,
        *,
        width_left: Any = None,
        width_right: Any = None,
        v_ref: Any = None,
        closed: bool = False,
        length: float | None = None,
        name: str = "path",
    ) -> ReferencePath:
        """Wrap already uniform waypoints (e.g. a file written by :func:`mpc_tracking.paths.io.write_path`) as is.

        No resampling or smoothing is done, so writing and reading back is lossless.
        ``length`` is the total length for closed paths (default: ``s[-1] + (s[1] - s[0])``).
        """
        self = cls.__new__(cls)
        builder.init_from_waypoints(self, s, x, y, psi, kappa, width_left=width_left, width_right=width_right,
                                    v_ref=v_ref, closed=closed, length=length, name=name)
        return self

    @classmethod
    def with_target_noise(cls, x: Any, y: Any, target_noise: float, *, noise_window: float | None = None,
                          max_smoothing: float = 5.0, **kwargs: Any) -> ReferencePath:
        """Like the constructor, with the least ``smoothing`` [m] that brings the curvature noise
        (:meth:`describe`) down to ``target_noise`` [1/m] (bisection, about a dozen fits)."""
        target = _check_positive(target_noise, "target_noise")
        return fit_smoothing(lambda sm: cls(x, y, smoothing=sm, **kwargs), target,
                             noise_window=noise_window, max_smoothing=max_smoothing)

    # ------------------------------------------------------------------ query tables
    def _finish(self) -> None:
        """Derived arrays used by interpolation and projection."""
        n = self.s.size
        self.n = n
        if self.closed:
            # extension by the closing segment (psi continues by the path's total turning)
            turn = self.psi[-1] + self.kappa[-1] * self.ds - self.psi[0]
            turns = 2.0 * np.pi * np.round(turn / (2.0 * np.pi))
            self._s_ext = np.append(self.s, self.length)
            self._x_ext = np.append(self.x, self.x[0])
            self._y_ext = np.append(self.y, self.y[0])
            self._psi_ext = np.append(self.psi, self.psi[0] + turns)
            self._idx_ext = np.append(np.arange(n), 0)
        else:
            self._s_ext = self.s
            self._x_ext, self._y_ext, self._psi_ext = self.x, self.y, self.psi
            self._idx_ext = np.arange(n)
        seg_dx = np.diff(self._x_ext)
        seg_dy = np.diff(self._y_ext)
        self._seg_len2 = np.maximum(seg_dx**2 + seg_dy**2, 1e-300)
        self._seg_d = np.column_stack([seg_dx, seg_dy])
        self._n_seg = seg_dx.size
        from scipy.spatial import cKDTree  # here, not at import: scipy.spatial costs ~0.1 s

        self._tree = cKDTree(np.column_stack([self.x, self.y]))
        self._build_linear()
        self._cache_projection()

    def _build_linear(self) -> None:
        """The linear part of :meth:`interpolate`: curvature, widths, speed profile on the extended grid."""
        v = self.v_ref if self.v_ref is not None else np.zeros(self.n)
        cols = np.column_stack([self.kappa, self.width_left, self.width_right, v])[self._idx_ext]
        self._linear = LinearTable(self._s_ext, cols)

    # ------------------------------------------------------------------ basics
    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        kind = "closed" if self.closed else "open"
        return f"ReferencePath({self.name!r}, {kind}, length={self.length:.2f} m, n={self.n}, ds={self.ds:.3f} m)"

    @property
    def xy(self) -> np.ndarray:
        """Waypoint positions, shape (n, 2) [m]."""
        return np.column_stack([self.x, self.y])

    @property
    def has_widths(self) -> bool:
        """True when the path carries finite track widths."""
        return bool(np.all(np.isfinite(self.width_left)) and np.all(np.isfinite(self.width_right)))

    def wrap_s(self, s: Any) -> np.ndarray:
        """Map arc length onto the path's domain: modulo length (closed) or clipped (open)."""
        s = np.asarray(s, dtype=float)
        if self.closed:
            return np.mod(s, self.length)
        return np.clip(s, 0.0, self.length)

    def interpolate(self, s: Any) -> dict[str, np.ndarray]:
        """Path quantities at arbitrary arc lengths (vectorized).

        Parameters
        ----------
        s : array_like, shape (k,)
            Arc lengths [m]; wrapped (closed) or clipped (open).

        Returns
        -------
        dict with keys ``x, y, psi, kappa, width_left, width_right, v_ref`` (arrays of shape (k,);
        ``v_ref`` is ``None`` when the path has no speed profile). Position and heading use the
        local curvature (second-order accurate); the rest is linear between waypoints.
        """
        s_raw = np.asarray(s, dtype=float)
        sw = self.wrap_s(s_raw).reshape(-1)
        i, w = self._linear.segment(sw)
        lin = self._linear.at(i, w)
        sig = sw - self._s_ext[i]
        j = self._idx_ext[i + 1]
        ii = self._idx_ext[i]
        seg = np.maximum(self._s_ext[i + 1] - self._s_ext[i], 1e-300)
        psi0 = self._psi_ext[i]
        # heading/position on a local arc with the waypoint's curvature
        k0 = self.kappa[ii]
        psi = psi0 + k0 * sig + 0.5 * (self.kappa[j] - k0) / seg * sig**2
        if self.closed:
            laps = np.floor(s_raw.reshape(-1) / self.length)
            psi = psi + laps * (self._psi_ext[-1] - self._psi_ext[0])
        c, sn = np.cos(psi0), np.sin(psi0)
        half = 0.5 * k0 * sig**2
        x = self.x[ii] + c * sig - sn * half
        y = self.y[ii] + sn * sig + c * half
        shape = s_raw.shape
        out = {
            "x": x.reshape(shape),
            "y": y.reshape(shape),
            "psi": psi.reshape(shape),
            "kappa": lin[:, 0].reshape(shape),
            "width_left": lin[:, 1].reshape(shape),
            "width_right": lin[:, 2].reshape(shape),
            "v_ref": None if self.v_ref is None else lin[:, 3].reshape(shape),
        }
        return out

    def widths_at(self, s: float) -> tuple[float, float]:
        """``(width_left, width_right)`` [m] at one finite arc length ``s`` [m]: the values of
        :meth:`interpolate` (wrapped or clipped alike), without its numpy calls (the closed loop
        checks the corridor every control step)."""
        s = float(s)
        s = s % self.length if self.closed else min(max(s, 0.0), self.length)
        row = self._linear.row(s)
        return row[1], row[2]

    def point_at(self, s: Any, e_y: Any = 0.0) -> np.ndarray:
        """World position of the point at arc length ``s`` and lateral offset ``e_y``.

        Returns
        -------
        ndarray, shape (..., 2) [m]
        """
        q = self.interpolate(s)
        return offset_point(q["x"], q["y"], q["psi"], e_y)

    def describe(self, noise_window: float | None = None) -> dict[str, Any]:
        """Summary: length, closed, min radius, max ``|kappa|``, curvature noise, widths, waypoint count.

        ``curvature_noise`` is the RMS of kappa minus kappa smoothed with a Gaussian of standard
        deviation ``noise_window`` [m] along s (default: max(3 ds, 2 x input point spacing)).
        Returns a dict; :meth:`summary` formats it as text.
        """
        return describe_path(self, noise_window)

    def summary(self, noise_window: float | None = None) -> str:
        """Text form of :meth:`describe`."""
        return format_description(self.describe(noise_window))

    def with_obstacles(self, obstacles: Any) -> ReferencePath:
        """Return a shallow copy carrying ``obstacles`` (a sequence of obstacle objects) as :attr:`obstacles`."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.obstacles = tuple(obstacles)
        return new

    def with_speed_profile(self, v_ref: Any = None, **limits: Any) -> ReferencePath:
        """Return a shallow copy carrying a speed profile.

        Either ``v_ref`` (shape (n,), m/s) or the limits of
        :func:`mpc_tracking.paths.speed_profile.speed_profile` (``v_max, a_y_max, a_max, a_brake, ...``).
        """
        if v_ref is None:
            from mpc_tracking.paths.speed_profile import speed_profile

            v_ref = speed_profile(self, **limits)
        elif limits:
            raise PathError(f"with_speed_profile: give v_ref or limits, not both (got {sorted(limits)})")
        v = np.asarray(v_ref, dtype=float).reshape(-1)
        if v.size != self.n or not np.all(np.isfinite(v)) or np.any(v < 0):
            raise PathError(f"v_ref: expected {self.n} finite speeds >= 0 m/s")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.v_ref = v
        new._build_linear()
        return new
