"""Building a :class:`~mpc_tracking.paths.ReferencePath`: input checks, smoothing, the spline fit,
uniform arc-length resampling, widths and speeds, the geometry checks and the fit report.

The query object (:mod:`mpc_tracking.paths.reference_path`: interpolate, project, widths_at,
point_at) keeps the constructors of its public API (``ReferencePath(x, y)``,
:meth:`~mpc_tracking.paths.ReferencePath.from_waypoints`,
:meth:`~mpc_tracking.paths.ReferencePath.from_corners`) and calls the functions here; they fill
the waypoint arrays of the path under construction (``s, x, y, psi, kappa, width_left,
width_right, v_ref, length, ds`` ...) and then let it derive its query tables (``_finish``).

Both the centre-line constructor and the corner constructor go through one parametric cubic
smoothing spline (periodic for closed paths), from which heading and curvature are taken
analytically, so curvature is smooth and has no seam artefact on closed loops.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc_tracking.errors import PathError
from mpc_tracking.paths._checks import (
    _as_points,
    _as_widths,
    _check_count,
    _check_ds,
    _check_ds_fits,
    _check_length,
    _check_not_collinear_loop,
    _check_reversal,
    _check_waypoint_budget,
    _distinct_mask,
    _warn_corridor,
)
from mpc_tracking.paths.polyline import corner_vertices, polyline_distance
from mpc_tracking.paths.smoothing import smooth_points

__all__ = ["fit_tolerance", "init_from_points", "init_from_waypoints", "report_fit", "check_geometry",
           "InputSource", "input_source", "FIT_TOLERANCE"]

#: the builder logs as the path module it builds for (the logger name users filter on stays as it was)
logger = logging.getLogger("mpc_tracking.paths.reference_path")

#: the name of the centre-line constructor in the messages
_CENTRE_LINE = "ReferencePath(x, y)"


#: largest distance [m] a fit may move the path from its input points without a warning
FIT_TOLERANCE = 0.25
#: ... or this many times the smoothing RMS a caller asked for, when that is larger (smoothing
#: noise moves the worst of a thousand points by about 2.6 x the RMS)
FIT_TOLERANCE_RMS = 3.0


def fit_tolerance(smoothing: float, *, asked: bool = True) -> float:
    """Largest deviation [m] of a fitted centre line from its input polyline before a warning:
    :data:`FIT_TOLERANCE` (0.25 m), or :data:`FIT_TOLERANCE_RMS` x the smoothing RMS when the
    caller ``asked`` for that smoothing and it is larger. A smoothing the reader chose itself (from
    the measured noise of a trace) gets no allowance: the user did not ask for the move.

    >>> fit_tolerance(0.0), fit_tolerance(1.0), fit_tolerance(1.0, asked=False)
    (0.25, 3.0, 0.25)
    """
    return max(FIT_TOLERANCE, FIT_TOLERANCE_RMS * float(smoothing)) if asked else FIT_TOLERANCE


@dataclass(frozen=True)
class InputSource:
    """Where the points of the path being built come from, for the messages of :func:`report_fit`.

    Attributes
    ----------
    name : str
        The file (or argument) the points were read from.
    lines : ndarray of int, shape (n,), optional
        The file line of each input point (index as given to the constructor).
    smoothing_chosen : bool
        The smoothing was chosen by the reader (measured noise), not asked for by the user.
    """

    name: str
    lines: np.ndarray | None = None
    smoothing_chosen: bool = False

    def at(self, index: int) -> str:
        """``"file:line"`` of input point ``index`` (``"file"`` when its line is not known)."""
        if self.lines is not None and 0 <= index < len(self.lines):
            return f"{self.name}:{int(self.lines[index])}"
        return self.name


_SOURCE: ContextVar[InputSource | None] = ContextVar("mpc_tracking_path_input_source", default=None)


@contextmanager
def input_source(name: Any, lines: Any = None, *, smoothing_chosen: bool = False) -> Iterator[InputSource]:
    """Name the file (and the line of each input point) of the paths built inside the block, so that a
    fit that moves the path is warned about with ``file:line`` (readers: :mod:`mpc_tracking.paths.io`)."""
    src = InputSource(str(name), None if lines is None else np.asarray(lines, dtype=int),
                      bool(smoothing_chosen))
    token = _SOURCE.set(src)
    try:
        yield src
    finally:
        _SOURCE.reset(token)


def _warn_irregular_spacing(pts: np.ndarray, closed: bool, input_index: np.ndarray, name: str) -> None:
    """Warn when one gap between input points is over 20× their median spacing (a missing stretch,
    or two paths in one file): the spline bridges it with a free-form curve."""
    if len(pts) < 8:
        return
    ring = np.vstack([pts, pts[:1]]) if closed else pts
    step = np.hypot(*np.diff(ring, axis=0).T)
    med = float(np.median(step))
    i = int(np.argmax(step))
    if step[i] > 20.0 * med:
        j = (i + 1) % len(pts)
        src = _SOURCE.get()
        at = f" ({src.at(int(input_index[i]))})" if src is not None else ""
        logger.warning("%s: the input points are spaced very irregularly: %.4g m between input points %d and %d%s, "
                       "%.0f× the median spacing %.4g m; the spline bridges the gap with a free-form curve",
                       name, step[i], int(input_index[i]), int(input_index[j]), at, step[i] / med, med)


# ---------------------------------------------------------------------- the centre-line constructor
def _check_speeds(v_ref: Any, n: int) -> np.ndarray | None:
    """``v_ref`` as ``n`` finite speeds >= 0 [m/s], or None."""
    if v_ref is None:
        return None
    vr = np.asarray(v_ref, dtype=float).reshape(-1)
    if vr.size != n or not np.all(np.isfinite(vr)) or np.any(vr < 0):
        raise PathError(f"v_ref: expected {n} finite speeds >= 0 m/s")
    return vr


def init_from_points(path: Any, x: Any, y: Any, *, width_left: Any, width_right: Any, ds: float, closed: bool,
                     smoothing: float, v_ref: Any, name: str) -> None:
    """Fill ``path`` from a dense centre line (the arguments of ``ReferencePath(x, y, ...)``)."""
    pts = _as_points(x, y, _CENTRE_LINE)
    ds = _check_ds(ds, "ds")
    if not np.isfinite(smoothing) or smoothing < 0:
        raise PathError(f"smoothing: expected a finite RMS deviation >= 0 m, got {smoothing}")
    wl = _as_widths(width_left, len(pts), "width_left")
    wr = _as_widths(width_right, len(pts), "width_right")
    vr = _check_speeds(v_ref, len(pts))
    path.name = str(name)
    path.closed = bool(closed)
    path.smoothing = float(smoothing)
    path.input_points = pts.copy()
    _build(path, pts, wl, wr, vr, ds)


@dataclass
class _Spline:
    """The parametric spline through the (smoothed) input points, parameter ``u`` in [0, 1]."""

    tck: Any
    u_in: np.ndarray  # parameter of each input point (and the closing one)
    degree: int
    chord: float  # length of the polyline through the points [m]
    scale: float  # largest coordinate [m], for the length checks


def _fit_spline(pts: np.ndarray, closed: bool, ds: float, scale: float) -> _Spline:
    """The interpolating cubic (or lower) spline through ``pts``, chord-length parametrized
    (``scale``: the largest input coordinate [m], for the length checks)."""
    ring = np.vstack([pts, pts[:1]]) if closed else pts
    chord = np.hypot(*np.diff(ring, axis=0).T)
    u_in = np.concatenate([[0.0], np.cumsum(chord)])
    total_chord = float(u_in[-1])
    _check_length(total_chord, scale, _CENTRE_LINE)
    _check_waypoint_budget(ds, total_chord, "ds")  # before allocating the arc-length grid
    u_in = u_in / total_chord
    k = min(3, len(ring) - 1)
    from scipy import interpolate  # here, not at import: SciPy's spline stack costs ~0.3 s

    try:
        tck, _ = interpolate.splprep([ring[:, 0], ring[:, 1]], u=u_in, k=k, s=0.0, per=int(closed), quiet=2)
    except Exception as exc:  # FITPACK reports malformed input with bare errors
        raise PathError(f"{_CENTRE_LINE}: spline fit failed ({exc})") from exc
    return _Spline(tck, u_in, k, total_chord, scale)


def _arc_length_table(spline: _Spline, n_in: int, ds: float) -> tuple[np.ndarray, np.ndarray]:
    """Arc length ``s(u)`` [m] on a fine grid of ``u`` (Simpson's rule): ``(u, s)``."""
    m = int(max(16 * n_in, 4000, 8 * spline.chord / ds))
    m += m % 2 == 0  # odd count for Simpson
    uf = np.linspace(0.0, 1.0, m)
    from scipy import interpolate
    from scipy.integrate import cumulative_simpson

    dx, dy = interpolate.splev(uf, spline.tck, der=1)
    return uf, cumulative_simpson(np.hypot(dx, dy), x=uf, initial=0.0)


def _uniform_s(length: float, ds: float, closed: bool) -> np.ndarray:
    """Waypoint arc lengths [m] whose spacing divides ``length`` exactly (closed: no point at ``length``)."""
    if closed:
        n = max(3, round(length / ds))
        return np.arange(n) * (length / n)
    return np.linspace(0.0, length, max(2, round(length / ds) + 1))


def _sample_spline(path: Any, spline: _Spline, u_new: np.ndarray) -> None:
    """Position, continuous heading and curvature of the waypoints at the spline parameters ``u_new``."""
    from scipy import interpolate

    x, y = interpolate.splev(u_new, spline.tck)
    d1x, d1y = interpolate.splev(u_new, spline.tck, der=1)
    if spline.degree >= 2:
        d2x, d2y = interpolate.splev(u_new, spline.tck, der=2)
    else:
        d2x = d2y = np.zeros_like(u_new)
    path.x, path.y = np.asarray(x), np.asarray(y)
    path.psi = np.unwrap(np.arctan2(d1y, d1x))
    path.kappa = (d1x * d2y - d1y * d2x) / np.hypot(d1x, d1y) ** 3


def _resample(closed: bool, u_src: np.ndarray, values: np.ndarray | None, u_new: np.ndarray,
              default: float) -> np.ndarray:
    """Values given at the input points, linear in the spline parameter at ``u_new``; ``default`` when None."""
    if values is None:
        return np.full(u_new.shape, default)
    if closed:
        return np.interp(u_new, u_src, np.append(values, values[0]))
    return np.interp(u_new, u_src, values)


def _build(path: Any, pts: np.ndarray, wl: np.ndarray | None, wr: np.ndarray | None, vr: np.ndarray | None,
           ds: float) -> None:
    """Fit, resample and check the centre line ``pts`` (n, 2) [m] with widths and speeds at its points."""
    keep = _distinct_mask(pts, path.closed)
    pts = pts[keep]
    input_points = pts.copy()
    wl, wr, vr = (None if a is None else a[keep] for a in (wl, wr, vr))
    _check_count(pts, path.closed, _CENTRE_LINE)
    if path.closed:
        _check_not_collinear_loop(pts, _CENTRE_LINE)
    input_index = np.flatnonzero(keep)
    scale = float(np.abs(pts).max())
    path.input_spacing = float(np.median(np.hypot(*np.diff(pts, axis=0).T)))
    _warn_irregular_spacing(pts, path.closed, input_index, _CENTRE_LINE)
    if path.smoothing > 0:
        pts = smooth_points(pts, path.closed, path.smoothing)
    spline = _fit_spline(pts, path.closed, ds, scale)
    path._tck = spline.tck
    uf, sf = _arc_length_table(spline, len(pts), ds)
    length = float(sf[-1])
    _check_length(length, spline.scale, _CENTRE_LINE)
    _check_ds_fits(ds, length, path.closed, "ds")
    s_new = _uniform_s(length, ds, path.closed)
    u_new = np.interp(s_new, sf, uf)
    path.s = s_new
    _sample_spline(path, spline, u_new)
    path.length = length
    path.ds = float(s_new[1] - s_new[0])
    path.width_left = _resample(path.closed, spline.u_in, wl, u_new, np.inf)
    path.width_right = _resample(path.closed, spline.u_in, wr, u_new, np.inf)
    path.v_ref = None if vr is None else _resample(path.closed, spline.u_in, vr, u_new, np.nan)
    path.raw_kappa = None  # curvature of the interpolating polyline of the input, for noise reporting

    def near(i: int) -> str:
        j = int(np.clip(np.searchsorted(spline.u_in, u_new[i]), 0, len(input_index) - 1))
        return f"near input point {int(input_index[j])}"

    check_geometry(path, _CENTRE_LINE, near)
    path._finish()
    report_fit(path, input_points, input_index, _CENTRE_LINE)


# ---------------------------------------------------------------------- uniform waypoints as they are
def _waypoint_arrays(s: Any, x: Any, y: Any, psi: Any, kappa: Any, length: float | None) -> list[np.ndarray]:
    """``s, x, y, psi, kappa`` as finite 1-D arrays of one length >= 2, ``s`` strictly increasing."""
    arrays = [np.asarray(a, dtype=float).reshape(-1) for a in (s, x, y, psi, kappa)]
    n = arrays[0].size
    if any(a.size != n for a in arrays) or n < 2:
        raise PathError("from_waypoints: s, x, y, psi, kappa must have the same length >= 2")
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise PathError("from_waypoints: s, x, y, psi, kappa must be finite")
    span = float(arrays[0][-1] - arrays[0][0])
    if length is not None and not (np.isfinite(length) and length >= span * (1.0 - 1e-12)):
        raise PathError(f"from_waypoints: length: expected a finite total length >= s[-1] - s[0] = {span:.6g} m, "
                        f"got {length!r}")
    if np.any(np.diff(arrays[0]) <= 0):
        raise PathError("from_waypoints: s must be strictly increasing")
    return arrays


def init_from_waypoints(path: Any, s: Any, x: Any, y: Any, psi: Any, kappa: Any, *, width_left: Any,
                        width_right: Any, v_ref: Any, closed: bool, length: float | None, name: str) -> None:
    """Fill ``path`` with already uniform waypoints as they are (the arguments of ``from_waypoints``)."""
    arrays = _waypoint_arrays(s, x, y, psi, kappa, length)
    sa = arrays[0]
    n = sa.size
    path.name = str(name)
    path.closed = bool(closed)
    path.smoothing = 0.0
    path.s = sa - sa[0]
    path.x, path.y, path.psi, path.kappa = arrays[1:]
    path.ds = float(np.mean(np.diff(sa)))
    path.input_spacing = path.ds
    path.length = float(length) if length is not None else float(path.s[-1] + (path.ds if closed else 0.0))
    wl = _as_widths(width_left, n, "width_left")
    wr = _as_widths(width_right, n, "width_right")
    path.width_left = np.full(n, np.inf) if wl is None else wl
    path.width_right = np.full(n, np.inf) if wr is None else wr
    path.v_ref = None if v_ref is None else np.asarray(v_ref, dtype=float).reshape(-1)
    path.raw_kappa = path.kappa.copy()
    path._tck = None
    path.fit_deviation, path.fit_deviation_index = 0.0, 0
    check_geometry(path, "from_waypoints")
    path._finish()


# ---------------------------------------------------------------------- checks and the fit report
def check_geometry(path: Any, name: str, near: Callable[[int], str] | None = None) -> None:
    """Reversal (error) and corridor-vs-curvature (warning) checks on the waypoints of ``path``."""
    if path.closed and len(path.s) >= 3:
        _check_not_collinear_loop(np.column_stack([path.x, path.y]), name)
    _check_length(path.length, float(max(np.abs(path.x).max(), np.abs(path.y).max())), name)
    _check_reversal(path.s, path.x, path.y, path.length, path.closed, name, near)
    _warn_corridor(path.s, path.kappa, path.width_left, path.width_right, f"path {path.name!r}")


def _largest_deviation(wp: np.ndarray, pts: np.ndarray, closed: bool) -> tuple[float, int]:
    """The largest distance [m] between the waypoint polyline and the input polyline (either way
    round) and the input point nearest to where it is (index into ``pts``)."""
    d_path = polyline_distance(wp, pts, closed)  # waypoints -> input polyline
    d_pts = polyline_distance(pts, wp, closed)  # input points -> waypoints polyline
    i_path, i_pts = int(np.argmax(d_path)), int(np.argmax(d_pts))
    if d_path[i_path] >= d_pts[i_pts]:
        return float(d_path[i_path]), int(np.argmin(np.hypot(*(pts - wp[i_path]).T)))
    return float(d_pts[i_pts]), i_pts


def report_fit(path: Any, pts: np.ndarray, input_index: np.ndarray, name: str, *, warn: bool = True) -> None:
    """Measure how far the waypoints of ``path`` stray from the input polyline (``pts``) and say so.

    Sets ``path.fit_deviation`` and ``path.fit_deviation_index``; a warning beyond
    :func:`fit_tolerance` (with ``warn``) names the input point (and its file and line inside
    :func:`input_source`) and the amount, and when the points look like the corners of a
    polygon, says how to round them instead; when the reader chose the smoothing, how to keep the
    points.
    """
    dev, j = _largest_deviation(path.xy, pts, path.closed)
    path.fit_deviation = dev
    path.fit_deviation_index = int(input_index[j])
    src = _SOURCE.get()
    where = f"input point {path.fit_deviation_index} ({pts[j, 0]:.6g}, {pts[j, 1]:.6g})"
    if src is not None:
        where += f" at {src.at(path.fit_deviation_index)}"
    chosen = src is not None and src.smoothing_chosen and path.smoothing > 0
    tol = fit_tolerance(path.smoothing, asked=not chosen)
    if not warn or dev <= tol:
        logger.info("path %r: the fit strays at most %.3g m from the input polyline (near %s)", path.name, dev, where)
        return
    hint = ""
    if chosen:
        hint = (f"; the smoothing ({path.smoothing:.3g} m RMS) was chosen from the measured noise: pass smoothing=0 "
                "to keep the points, or a smaller value")
    elif corner_vertices(pts, path.closed) is not None:
        hint = ("; the points look like the corners of a polygon: round them with "
                "ReferencePath.from_corners(points, radius=...) (files: load_path(..., corner_radius=...))")
    label = name if name != _CENTRE_LINE else f"path {path.name!r}"
    if src is not None:
        label = f"{src.name}: {label}"
    logger.warning("%s: the fitted centre line strays %.3g m from the polyline through the input points, near %s "
                   "(tolerance %.3g m)%s", label, dev, where, tol, hint)
