"""Reference paths: uniform arc-length waypoints with heading, curvature and track widths.

A :class:`ReferencePath` is built from either a dense centre line (optionally with
left/right track widths) or from a handful of corner points that are filled and smoothed.
Both go through one parametric cubic smoothing spline (periodic for closed paths), from
which heading and curvature are taken analytically, so curvature is smooth and has no seam
artefact on closed loops.

Conventions: SI units, heading 0 along +x and counter-clockwise positive, lateral error
``e_y`` positive to the left of the path, arc length ``s`` in metres from the first waypoint.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import interpolate
from scipy.integrate import cumulative_simpson
from scipy.spatial import cKDTree

from .errors import PathError

__all__ = ["ReferencePath", "Projection", "wrap_angle"]

logger = logging.getLogger(__name__)


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


def _as_points(x: Any, y: Any, name: str) -> np.ndarray:
    try:
        xa = np.asarray(x, dtype=float).reshape(-1)
        ya = np.asarray(y, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise PathError(f"{name}: coordinates must be numeric arrays ({exc})") from None
    if xa.shape != ya.shape:
        raise PathError(f"{name}: x has {xa.size} values but y has {ya.size}; expected equal lengths")
    bad = ~(np.isfinite(xa) & np.isfinite(ya))
    if bad.any():
        raise PathError(
            f"{name}: coordinates must be finite; point {int(np.flatnonzero(bad)[0])} is "
            f"({xa[bad][0]}, {ya[bad][0]})"
        )
    return np.column_stack([xa, ya])


def _as_widths(w: Any, n: int, name: str) -> np.ndarray | None:
    if w is None:
        return None
    try:
        wa = np.asarray(w, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise PathError(f"{name}: widths must be numeric ({exc})") from None
    if wa.size == 1:
        wa = np.full(n, float(wa[0]))
    if wa.size != n:
        raise PathError(f"{name}: expected {n} widths (one per point) or a scalar, got {wa.size}")
    bad = ~np.isfinite(wa) | (wa <= 0.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PathError(f"{name}: widths must be finite and > 0 m; point {i} has {wa[i]}")
    return wa


class ReferencePath:
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
        RMS deviation [m] the smoothing spline may take from the input points; 0 interpolates.
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
        Speed profile [m/s] (see :mod:`mpc_tracking.speed_profile`).
    length : float
        Total arc length [m] (for a closed path including the closing segment).
    """

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
        pts = _as_points(x, y, "ReferencePath(x, y)")
        ds = _check_positive(ds, "ds")
        if not np.isfinite(smoothing) or smoothing < 0:
            raise PathError(f"smoothing: expected a finite RMS deviation >= 0 m, got {smoothing}")
        wl = _as_widths(width_left, len(pts), "width_left")
        wr = _as_widths(width_right, len(pts), "width_right")
        vr = None
        if v_ref is not None:
            vr = np.asarray(v_ref, dtype=float).reshape(-1)
            if vr.size != len(pts) or not np.all(np.isfinite(vr)) or np.any(vr < 0):
                raise PathError(f"v_ref: expected {len(pts)} finite speeds >= 0 m/s")
        self.name = str(name)
        self.closed = bool(closed)
        self.smoothing = float(smoothing)
        self._build(pts, wl, wr, vr, ds)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_corners(
        cls,
        points: Any,
        *,
        ds: float = 0.1,
        closed: bool = False,
        smoothing: float | None = None,
        width_left: Any = None,
        width_right: Any = None,
        name: str = "corners",
    ) -> "ReferencePath":
        """Build a path from corner points: fill the polygon densely, then smooth it.

        Parameters
        ----------
        points : array_like, shape (n, 2)
            Corner points [m] (n >= 2; n >= 3 when closed).
        smoothing : float, optional
            RMS deviation [m] the smoothed curve may take from the filled polygon. Larger
            values round the corners more. Default: 4 % of the median corner spacing.
        width_left, width_right : float or array_like of shape (n,), optional
            Widths at the corners [m], interpolated along the filled polygon.
        """
        pts = np.asarray(points, dtype=float) if points is not None else np.empty((0, 2))
        if pts.ndim != 2 or pts.shape[1] != 2:
            raise PathError(f"points: expected an array of shape (n, 2), got shape {pts.shape}")
        pts = _as_points(pts[:, 0], pts[:, 1], "points")
        ds = _check_positive(ds, "ds")
        keep = _distinct_mask(pts, closed)
        pts = pts[keep]
        wl = _as_widths(width_left, len(keep), "width_left")
        wr = _as_widths(width_right, len(keep), "width_right")
        wl = None if wl is None else wl[keep]
        wr = None if wr is None else wr[keep]
        _check_count(pts, closed, "points")
        ring = np.vstack([pts, pts[:1]]) if closed else pts
        seg = np.hypot(*np.diff(ring, axis=0).T)
        if smoothing is None:
            smoothing = 0.04 * float(np.median(seg))
        fill = min(ds, float(seg.min()) / 8.0)
        # fill every edge with points spaced <= fill, keeping each corner exactly once
        counts = np.maximum(1, np.ceil(seg / fill).astype(int))
        frac = np.concatenate([np.arange(c) / c for c in counts])
        edge = np.repeat(np.arange(len(seg)), counts)
        dense = ring[edge] + frac[:, None] * (ring[edge + 1] - ring[edge])
        if not closed:
            dense = np.vstack([dense, ring[-1:]])

        def fill_widths(w: np.ndarray | None) -> np.ndarray | None:
            if w is None:
                return None
            wring = np.append(w, w[0]) if closed else w
            out = wring[edge] + frac * (wring[edge + 1] - wring[edge])
            return out if closed else np.append(out, wring[-1])

        return cls(
            dense[:, 0],
            dense[:, 1],
            width_left=fill_widths(wl),
            width_right=fill_widths(wr),
            ds=ds,
            closed=closed,
            smoothing=float(smoothing),
            name=name,
        )

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
    ) -> "ReferencePath":
        """Wrap already uniform waypoints (e.g. a file written by :func:`path_io.write_path`) as is.

        No resampling or smoothing is done, so writing and reading back is lossless.
        ``length`` is the total length for closed paths (default: ``s[-1] + (s[1] - s[0])``).
        """
        arrays = [np.asarray(a, dtype=float).reshape(-1) for a in (s, x, y, psi, kappa)]
        n = arrays[0].size
        if any(a.size != n for a in arrays) or n < 2:
            raise PathError("from_waypoints: s, x, y, psi, kappa must have the same length >= 2")
        if not all(np.all(np.isfinite(a)) for a in arrays):
            raise PathError("from_waypoints: s, x, y, psi, kappa must be finite")
        sa = arrays[0]
        d = np.diff(sa)
        if np.any(d <= 0):
            raise PathError("from_waypoints: s must be strictly increasing")
        self = cls.__new__(cls)
        self.name = str(name)
        self.closed = bool(closed)
        self.smoothing = 0.0
        self.s = sa - sa[0]
        self.x, self.y, self.psi, self.kappa = arrays[1:]
        self.ds = float(np.mean(d))
        self.length = float(length) if length is not None else float(self.s[-1] + (self.ds if closed else 0.0))
        self.width_left = _as_widths(width_left, n, "width_left")
        self.width_right = _as_widths(width_right, n, "width_right")
        self.width_left = np.full(n, np.inf) if self.width_left is None else self.width_left
        self.width_right = np.full(n, np.inf) if self.width_right is None else self.width_right
        self.v_ref = None if v_ref is None else np.asarray(v_ref, dtype=float).reshape(-1)
        self.raw_kappa = self.kappa.copy()
        self._tck = None
        self._finish()
        return self

    # ------------------------------------------------------------------ construction
    def _build(self, pts, wl, wr, vr, ds):
        keep = _distinct_mask(pts, self.closed)
        pts = pts[keep]
        wl = None if wl is None else wl[keep]
        wr = None if wr is None else wr[keep]
        vr = None if vr is None else vr[keep]
        _check_count(pts, self.closed, "ReferencePath(x, y)")
        n_in = len(pts)
        ring = np.vstack([pts, pts[:1]]) if self.closed else pts
        chord = np.hypot(*np.diff(ring, axis=0).T)
        u_in = np.concatenate([[0.0], np.cumsum(chord)])
        total_chord = u_in[-1]
        if total_chord <= 0:
            raise PathError("ReferencePath(x, y): the path has zero total length")
        u_in = u_in / total_chord
        k = min(3, len(ring) - 1)
        s_fac = len(ring) * self.smoothing**2
        try:
            tck, _ = interpolate.splprep(
                [ring[:, 0], ring[:, 1]], u=u_in, k=k, s=s_fac, per=int(self.closed), quiet=2
            )
        except Exception as exc:  # FITPACK reports malformed input with bare errors
            raise PathError(f"ReferencePath(x, y): spline fit failed ({exc})") from exc
        self._tck = tck
        # arc length s(u) on a fine grid, Simpson's rule
        m = int(max(16 * n_in, 4000, 8 * total_chord / ds))
        m += m % 2 == 0  # odd count for Simpson
        uf = np.linspace(0.0, 1.0, m)
        dx, dy = interpolate.splev(uf, tck, der=1)
        speed = np.hypot(dx, dy)
        sf = cumulative_simpson(speed, x=uf, initial=0.0)
        length = float(sf[-1])
        if not np.isfinite(length) or length <= 0:
            raise PathError("ReferencePath(x, y): the path has zero total length")
        if self.closed:
            n = max(3, int(round(length / ds)))
            s_new = np.arange(n) * (length / n)
        else:
            n = max(2, int(round(length / ds)) + 1)
            s_new = np.linspace(0.0, length, n)
        u_new = np.interp(s_new, sf, uf)
        x, y = interpolate.splev(u_new, tck)
        d1x, d1y = interpolate.splev(u_new, tck, der=1)
        if k >= 2:
            d2x, d2y = interpolate.splev(u_new, tck, der=2)
        else:
            d2x = d2y = np.zeros_like(u_new)
        self.s = s_new
        self.x, self.y = np.asarray(x), np.asarray(y)
        self.psi = np.unwrap(np.arctan2(d1y, d1x))
        self.kappa = (d1x * d2y - d1y * d2x) / np.hypot(d1x, d1y) ** 3
        self.length = length
        self.ds = float(s_new[1] - s_new[0])
        u_src = u_in if self.closed else u_in
        self.width_left = self._resample(u_src, wl, u_new, np.inf)
        self.width_right = self._resample(u_src, wr, u_new, np.inf)
        self.v_ref = None if vr is None else self._resample(u_src, vr, u_new, np.nan)
        # curvature of the interpolating polyline of the input, for noise reporting
        self.raw_kappa = None
        self._finish()

    def _resample(self, u_src, values, u_new, default):
        if values is None:
            return np.full(u_new.shape, default)
        if self.closed:
            return np.interp(u_new, u_src, np.append(values, values[0]))
        return np.interp(u_new, u_src, values)

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
        self._tree = cKDTree(np.column_stack([self.x, self.y]))

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
        sw = self.wrap_s(s_raw)
        i = np.clip(np.searchsorted(self._s_ext, sw, side="right") - 1, 0, self._n_seg - 1)
        sig = sw - self._s_ext[i]
        j = self._idx_ext[i + 1]
        ii = self._idx_ext[i]
        seg = np.maximum(self._s_ext[i + 1] - self._s_ext[i], 1e-300)
        w = sig / seg
        kap = self.kappa[ii] + w * (self.kappa[j] - self.kappa[ii])
        psi0 = self._psi_ext[i]
        # heading/position on a local arc with the waypoint's curvature
        k0 = self.kappa[ii]
        psi = psi0 + k0 * sig + 0.5 * (self.kappa[j] - k0) / seg * sig**2
        if self.closed:
            laps = np.floor(s_raw / self.length)
            psi = psi + laps * (self._psi_ext[-1] - self._psi_ext[0])
        c, sn = np.cos(psi0), np.sin(psi0)
        half = 0.5 * k0 * sig**2
        x = self.x[ii] + c * sig - sn * half
        y = self.y[ii] + sn * sig + c * half
        out = {
            "x": x,
            "y": y,
            "psi": psi,
            "kappa": kap,
            "width_left": self.width_left[ii] + w * (self.width_left[j] - self.width_left[ii]),
            "width_right": self.width_right[ii] + w * (self.width_right[j] - self.width_right[ii]),
            "v_ref": None,
        }
        if self.v_ref is not None:
            out["v_ref"] = self.v_ref[ii] + w * (self.v_ref[j] - self.v_ref[ii])
        return out

    def point_at(self, s: Any, e_y: Any = 0.0) -> np.ndarray:
        """World position of the point at arc length ``s`` and lateral offset ``e_y``.

        Returns
        -------
        ndarray, shape (..., 2) [m]
        """
        q = self.interpolate(s)
        e_y = np.asarray(e_y, dtype=float)
        return np.stack([q["x"] - e_y * np.sin(q["psi"]), q["y"] + e_y * np.cos(q["psi"])], axis=-1)

    def with_speed_profile(self, v_ref: Any) -> "ReferencePath":
        """Return a shallow copy carrying the speed profile ``v_ref`` (shape (n,), m/s)."""
        v = np.asarray(v_ref, dtype=float).reshape(-1)
        if v.size != self.n or not np.all(np.isfinite(v)) or np.any(v < 0):
            raise PathError(f"v_ref: expected {self.n} finite speeds >= 0 m/s")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.v_ref = v
        return new

    # ------------------------------------------------------------------ projection
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
            Previous arc length [m]. The search looks only within ``window`` metres of it
            (keeps the right branch where the path passes close to itself) and falls back to
            a global search when the nearest point lies at the edge of that window.
        window : float, optional
            Half width of the local search [m]. Default: ``min(length / 4, max(50 ds, 10 m))``.

        Returns
        -------
        Projection
            ``(s, e_y, e_psi)`` with the shape of the input (floats for scalar input).
        """
        scalar = np.ndim(x) == 0 and np.ndim(y) == 0
        px = np.atleast_1d(np.asarray(x, dtype=float)).ravel()
        py = np.atleast_1d(np.asarray(y, dtype=float)).ravel()
        if px.shape != py.shape:
            raise PathError(f"project: x has {px.size} values but y has {py.size}")
        if not (np.all(np.isfinite(px)) and np.all(np.isfinite(py))):
            raise PathError("project: x and y must be finite")
        m = px.size
        if s_hint is None:
            cand = self._global_candidates(px, py)
            best, t, _ = self._best_on_segments(px, py, cand)
        else:
            hint = np.broadcast_to(np.asarray(s_hint, dtype=float), (m,))
            if window is None:
                window = min(0.25 * self.length, max(50 * self.ds, 10.0))
            w = max(2, int(np.ceil(window / self.ds)))
            i0 = np.clip(np.searchsorted(self._s_ext, self.wrap_s(hint), side="right") - 1, 0, self._n_seg - 1)
            offs = np.arange(-w, w + 1)
            cand = i0[:, None] + offs[None, :]
            if self.closed:
                cand = np.mod(cand, self._n_seg)
                at_edge_ok = np.zeros(m, bool)
            else:
                cand = np.clip(cand, 0, self._n_seg - 1)
            best, t, col = self._best_on_segments(px, py, cand)
            edge = (col == 0) | (col == cand.shape[1] - 1)
            if not self.closed:
                # clipped at the path ends is a genuine end, not a window edge
                at_edge_ok = ((col == 0) & (best == 0)) | ((col == cand.shape[1] - 1) & (best == self._n_seg - 1))
            redo = edge & ~at_edge_ok
            if redo.any():
                gc = self._global_candidates(px[redo], py[redo])
                b2, t2, _ = self._best_on_segments(px[redo], py[redo], gc)
                best[redo], t[redo] = b2, t2
        s, e_y, psi_p = self._refine(px, py, best, t)
        if psi is None:
            e_psi = np.zeros_like(s)
        else:
            e_psi = wrap_angle(np.broadcast_to(np.asarray(psi, dtype=float).ravel(), s.shape) - psi_p)
        if scalar:
            return Projection(float(s[0]), float(e_y[0]), float(e_psi[0]))
        shape = np.shape(x)
        return Projection(s.reshape(shape), e_y.reshape(shape), e_psi.reshape(shape))

    def _global_candidates(self, px, py):
        k = min(4, self.n)
        _, idx = self._tree.query(np.column_stack([px, py]), k=k)
        idx = np.asarray(idx).reshape(px.size, k)
        before = idx - 1
        if self.closed:
            before = np.mod(before, self._n_seg)
        else:
            before = np.clip(before, 0, self._n_seg - 1)
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
        dist2 = ex * ex + ey * ey
        col = np.argmin(dist2, axis=1)
        rows = np.arange(px.size)
        return cand[rows, col].copy(), t[rows, col].copy(), col

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
            fp = tx * tx + ty * ty + (rx * (-sn * k0) + ry * (c * k0))
            sig = sig - f / np.where(np.abs(fp) > 1e-12, fp, 1.0)
            sig = np.clip(sig, -0.5 * seg_len, 1.5 * seg_len)
        if not self.closed:
            s_lo = -self._s_ext[seg]
            s_hi = self.length - self._s_ext[seg]
            sig = np.clip(sig, s_lo, s_hi)
        half = 0.5 * k0 * sig**2
        rx = x0 + c * sig - sn * half
        ry = y0 + sn * sig + c * half
        psi_p = psi0 + k0 * sig
        e_y = -(px - rx) * np.sin(psi_p) + (py - ry) * np.cos(psi_p)
        s = self._s_ext[seg] + sig
        if self.closed:
            s = np.mod(s, self.length)
        return s, e_y, psi_p


def _check_positive(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PathError(f"{name}: expected a positive number, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise PathError(f"{name}: expected a positive finite number, got {value!r}")
    return v


def _distinct_mask(pts: np.ndarray, closed: bool) -> np.ndarray:
    """Mask dropping duplicate consecutive points (and a closing duplicate when closed)."""
    if len(pts) == 0:
        return np.zeros(0, bool)
    scale = max(1.0, float(np.abs(pts).max()))
    step = np.hypot(*np.diff(pts, axis=0).T)
    keep = np.concatenate([[True], step > 1e-9 * scale])
    if closed and keep.sum() > 1:
        last = np.flatnonzero(keep)[-1]
        if np.hypot(*(pts[last] - pts[0])) <= 1e-9 * scale:
            keep[last] = False
    if not keep.all():
        logger.debug("removed %d duplicate points", int((~keep).sum()))
    return keep


def _check_count(pts: np.ndarray, closed: bool, name: str) -> None:
    need = 3 if closed else 2
    if len(pts) < need:
        kind = "closed" if closed else "open"
        raise PathError(f"{name}: a {kind} path needs at least {need} distinct points, got {len(pts)}")
