"""Round the corners of a polygon with clothoid-arc-clothoid blends (used by ``ReferencePath.from_corners``).

Each corner of deflection ``theta`` gets a symmetric blend: a clothoid whose curvature ramps
linearly from 0 to ``1/R``, a circular arc of radius ``R``, and the mirrored clothoid back to 0.
``blend`` is the share of the corner's turning done in the clothoids (0: pure arc with a
curvature step, 1: two clothoids, no arc). Straights stay exactly straight (kappa = 0, no
overshoot) and the curvature keeps the corner's sign, unlike a smoothing spline through the
filled polygon. Radii are reduced where two neighbouring corners would not fit on their edge.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

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
    _check_waypoint_budget,
    _distinct_mask,
)
from mpc_tracking.paths.builder import report_fit
from mpc_tracking.paths.defaults import decide_closed, default_corner_radius, resolve_ds

__all__ = ["round_corners", "corner_path"]

logger = logging.getLogger(__name__)
_N_TABLE = 801


@dataclass
class _Corner:
    theta: float  # |deflection| [rad]
    sign: float  # +1 left turn, -1 right turn
    lc: float  # clothoid length for R = 1 [m]
    la: float  # arc length for R = 1 [m]
    u: np.ndarray  # canonical table (R = 1, left turn): arc length
    X: np.ndarray
    Y: np.ndarray
    tangent: float  # vertex-to-tangency distance for R = 1 [m]

    @property
    def length(self) -> float:
        return 2.0 * self.lc + self.la


def _canonical(theta: float, blend: float) -> tuple[float, float, np.ndarray, np.ndarray, np.ndarray]:
    lc, la = blend * theta, (1.0 - blend) * theta
    u = np.linspace(0.0, 2.0 * lc + la, _N_TABLE)
    psi, _ = _heading_curvature(u, lc, la, theta)
    from scipy.integrate import cumulative_simpson  # here, not at import (SciPy's integrate stack)

    X = cumulative_simpson(np.cos(psi), x=u, initial=0.0)
    Y = cumulative_simpson(np.sin(psi), x=u, initial=0.0)
    return lc, la, u, X, Y


def _heading_curvature(u, lc, la, theta):
    """Heading and curvature along a canonical corner (R = 1, left turn)."""
    total = 2.0 * lc + la
    u = np.asarray(u, dtype=float)
    if lc <= 0.0:
        return u.copy(), np.ones_like(u)
    k = np.where(u < lc, u / lc, np.where(u > lc + la, (total - u) / lc, 1.0))
    psi = np.where(
        u < lc, 0.5 * u**2 / lc, np.where(u > lc + la, theta - 0.5 * (total - u) ** 2 / lc, 0.5 * lc + (u - lc))
    )
    return psi, k


def round_corners(points: np.ndarray, closed: bool, radius, blend: float, ds: float, widths=(), *,
                  strict: bool = False):
    """Sample a corner-rounded polygon at uniform arc length.

    Parameters
    ----------
    points : ndarray, shape (n, 2)
        Distinct corner points [m].
    closed : bool
        Whether the polygon is a loop (every vertex is a corner; ``s = 0`` is the middle of the
        first edge's straight part). Open polygons start at the first point and end at the last.
    radius : float or array_like, shape (n,)
        Corner radius [m] (minimum radius of each blend), reduced where corners do not fit.
    blend : float
        Share of each corner's turning done in clothoids, in [0, 1].
    ds : float
        Waypoint spacing target [m].
    widths : sequence of ndarray, shape (n,)
        Per-corner values (e.g. widths) interpolated along the polygon edges.
    strict : bool
        A radius that does not fit on its edges is an error naming the largest that does
        (for radii the user asked for); otherwise it is reduced to fit, and logged.

    Returns
    -------
    s, x, y, psi, kappa : ndarray, shape (m,)
    length : float
    values : list of ndarray, shape (m,)
        ``widths`` resampled.
    """
    n = len(points)
    ring = np.vstack([points, points[:1]]) if closed else points
    edge_vec = np.diff(ring, axis=0)
    edge_len = np.hypot(edge_vec[:, 0], edge_vec[:, 1])
    edge_ang = np.arctan2(edge_vec[:, 1], edge_vec[:, 0])
    n_edge = len(edge_len)
    _check_waypoint_budget(ds, float(edge_len.sum()), "ds")  # before any work on absurd sizes
    radius = np.broadcast_to(np.asarray(radius, dtype=float), (n,)).copy()
    if not np.all(np.isfinite(radius)) or np.any(radius <= 0):
        raise PathError(f"radius: expected corner radii > 0 m, got {radius}")
    if not 0.0 <= blend <= 1.0:
        raise PathError(f"blend: expected a share in [0, 1], got {blend}")
    # corner j sits at vertex j, between edge j-1 (in) and edge j (out)
    corner_ids = range(n) if closed else range(1, n - 1)
    corners: dict[int, _Corner] = {}
    for j in corner_ids:
        d = edge_ang[j % n_edge] - edge_ang[(j - 1) % n_edge]
        th = float((d + np.pi) % (2 * np.pi) - np.pi)
        if abs(th) < 1e-9:
            continue
        if abs(th) > np.pi - 1e-6:
            raise PathError(f"points: the path reverses at corner {j} {tuple(points[j])}; cannot round a cusp")
        a = abs(th)
        lc, la, u, X, Y = _canonical(a, blend)
        tangent = float(X[-1] - Y[-1] / np.tan(a))
        corners[j] = _Corner(a, float(np.sign(th)), lc, la, u, X, Y, tangent)
    # shrink radii that do not fit on their edges
    need = np.zeros(n_edge)
    for j, c in corners.items():
        need[(j - 1) % n_edge] += c.tangent * radius[j]
        need[j % n_edge] += c.tangent * radius[j]
    fit = np.minimum(1.0, edge_len / np.maximum(need, 1e-300))
    for j in corners:
        f = min(fit[(j - 1) % n_edge], fit[j % n_edge])
        if f < 1.0 - 1e-12 and strict:
            raise PathError(
                f"radius: corner {j} at ({points[j][0]:.6g}, {points[j][1]:.6g}) fits a radius of at most "
                f"{f * radius[j]:.4g} m (its edges are {edge_len[(j - 1) % n_edge]:.4g} m and "
                f"{edge_len[j % n_edge]:.4g} m long and shared with the neighbouring corners); got {radius[j]:.4g} m"
            )
        if f < 1.0 - 1e-12:
            logger.info("corner %d: radius reduced from %.3g m to %.3g m to fit its edges", j, radius[j], f * radius[j])
            radius[j] *= f * (1.0 - 1e-9)
    tang = {j: c.tangent * radius[j] for j, c in corners.items()}
    # pieces in driving order: ("line", edge) and ("corner", vertex)
    order = []
    for e in range(n_edge):
        order.append(("line", e))
        if (e + 1) in corners or (closed and (e + 1) % n in corners and e + 1 == n):
            order.append(("corner", (e + 1) % n))
    heading = float(edge_ang[0])
    pieces = []  # (kind, id, s0, length, p0, psi0, cum_param0, cum_param1)
    cum_vertex = np.concatenate([[0.0], np.cumsum(edge_len)])
    s0 = 0.0
    pos = ring[0] + (tang.get(0, 0.0) if closed else 0.0) * edge_vec[0] / edge_len[0]
    for kind, k in order:
        if kind == "line":
            a0 = tang.get(k, 0.0) if (closed or k > 0) else 0.0
            a1 = tang.get((k + 1) % n, 0.0) if (closed or k + 1 < n - 1) else 0.0
            length = max(0.0, edge_len[k] - a0 - a1)
            pieces.append(("line", k, s0, length, pos.copy(), heading, cum_vertex[k] + a0, cum_vertex[k] + a0 + length))
            pos = pos + length * np.array([np.cos(heading), np.sin(heading)])
        else:
            c, R = corners[k], radius[k]
            length = c.length * R
            cv = cum_vertex[k] if k > 0 else cum_vertex[-1]
            pieces.append(("corner", k, s0, length, pos.copy(), heading, cv - tang[k], cv + tang[k]))
            ca, sa = np.cos(heading), np.sin(heading)
            ex, ey = R * c.X[-1], R * c.sign * c.Y[-1]
            pos = pos + np.array([ca * ex - sa * ey, sa * ex + ca * ey])
            heading += c.sign * c.theta
        s0 += length
    total = s0
    _check_length(total, float(np.abs(points).max()), "points")
    _check_ds_fits(ds, total, closed, "ds")
    if closed:
        m = max(3, round(total / ds))
        s = np.arange(m) * (total / m)
        start = 0.5 * pieces[0][3]
        s_eval = s + start
        wrapped = s_eval >= total
        s_eval = np.where(wrapped, s_eval - total, s_eval)
    else:
        m = max(2, round(total / ds) + 1)
        s = np.linspace(0.0, total, m)
        s_eval, wrapped = s, np.zeros(m, bool)
    starts = np.array([p[2] for p in pieces])
    idx = np.clip(np.searchsorted(starts, s_eval, side="right") - 1, 0, len(pieces) - 1)
    x, y, psi, kap, cum = (np.zeros(m) for _ in range(5))
    for pi_, (kind, k, p_s0, length, p0, h0, c0, c1) in enumerate(pieces):
        sel = idx == pi_
        if not sel.any():
            continue
        sig = np.clip(s_eval[sel] - p_s0, 0.0, length)
        ca, sa = np.cos(h0), np.sin(h0)
        frac = sig / length if length > 0 else np.zeros_like(sig)
        cum[sel] = c0 + frac * (c1 - c0)
        if kind == "line":
            x[sel], y[sel], psi[sel] = p0[0] + ca * sig, p0[1] + sa * sig, h0
            continue
        c, R = corners[k], radius[k]
        u = sig / R
        lx = R * np.interp(u, c.u, c.X)
        ly = R * c.sign * np.interp(u, c.u, c.Y)
        hp, kk = _heading_curvature(u, c.lc, c.la, c.theta)
        x[sel] = p0[0] + ca * lx - sa * ly
        y[sel] = p0[1] + sa * lx + ca * ly
        psi[sel] = h0 + c.sign * hp
        kap[sel] = c.sign * kk / R
    psi = psi + np.where(wrapped, heading - float(edge_ang[0]), 0.0)
    values = []
    for w in widths:
        wr = np.append(w, w[0]) if closed else w
        values.append(np.interp(cum, cum_vertex[: len(wr)], wr))
    return s, x, y, psi, kap, total, values


def corner_path(cls, points, *, ds, closed, radius, blend, smoothing, width_left, width_right, name,
                fit_radius=False):
    """Body of :meth:`ReferencePath.from_corners` (``cls`` is the path class)."""
    pts = np.asarray(points, dtype=float) if points is not None else np.empty((0, 2))
    if pts.ndim != 2 or pts.shape[1] != 2:
        raise PathError(f"points: expected an array of shape (n, 2), got shape {pts.shape}")
    pts = _as_points(pts[:, 0], pts[:, 1], "points")
    given = pts.copy()
    if closed is None:
        closed = decide_closed(pts, f"ReferencePath.from_corners ({name!r})")
    ds = _check_ds(resolve_ds(ds, pts, closed), "ds")
    keep = _distinct_mask(pts, closed)
    wl = _as_widths(width_left, len(keep), "width_left")
    wr = _as_widths(width_right, len(keep), "width_right")
    pts = pts[keep]
    _check_count(pts, closed, "points")
    if closed:
        _check_not_collinear_loop(pts, "points")
    strict = radius is not None and not fit_radius
    if radius is None:
        radius = default_corner_radius(pts, closed)
    elif np.ndim(radius) > 0:
        radius = np.asarray(radius, dtype=float).reshape(-1)
        if radius.size != keep.size:
            raise PathError(f"radius: expected a scalar or {keep.size} radii (one per point), got {radius.size}")
        radius = radius[keep]
    widths = [w[keep] for w in (wl, wr) if w is not None]
    s, x, y, psi, kappa, length, vals = round_corners(pts, closed, radius, float(blend), ds, widths, strict=strict)
    it = iter(vals)
    wl_s = next(it) if wl is not None else None
    wr_s = next(it) if wr is not None else None
    if smoothing:
        path = cls(x, y, width_left=wl_s, width_right=wr_s, ds=ds, closed=closed,
                   smoothing=float(smoothing), name=name)
    else:
        path = cls.from_waypoints(s, x, y, psi, kappa, width_left=wl_s, width_right=wr_s,
                                  closed=closed, length=length, name=name)
    report_fit(path, pts, np.flatnonzero(keep), "points", warn=False)  # the corner cut, for the record
    path.input_points = given
    return path
