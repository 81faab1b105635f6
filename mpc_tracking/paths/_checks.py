"""Input checks shared by the reference-path constructors (messages name the argument)."""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

from mpc_tracking.errors import PathError

logger = logging.getLogger("mpc_tracking.paths.reference_path")  # messages read as the path builder's


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


def _check_positive(value: Any, name: str, what: str = "a positive number",
                    what_finite: str = "a positive finite number") -> float:
    """``value`` as a finite float > 0; otherwise PathError naming ``name`` and ``what`` was expected."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PathError(f"{name}: expected {what}, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise PathError(f"{name}: expected {what_finite}, got {value!r}")
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
        kind = "a closed" if closed else "an open"
        raise PathError(f"{name}: {kind} path needs at least {need} distinct points, got {len(pts)}")


# ---------------------------------------------------------------- geometry sanity (issue 12)
#: fewest waypoints a path may be sampled to; ``ds`` larger than about length / MIN_WAYPOINTS is refused
MIN_WAYPOINTS = 8
#: most waypoints a path may have (2 million: ~100 MB of arrays); a smaller ``ds`` is refused
MAX_WAYPOINTS = 2_000_000
#: absolute floor of a path's total length [m]
MIN_LENGTH = 1e-3
#: relative floor of a path's total length, times the largest |coordinate|: below it the coordinates'
#: float64 rounding (~1e-16 relative) is no longer small against the waypoint spacing, and
#: heading/curvature become rounding noise (e.g. 0.5 m at UTM northings of 5e6 m)
MIN_LENGTH_REL = 1e-7
#: a closed loop whose points lie within COLLINEAR_REL x its extent of one line encloses no area
COLLINEAR_REL = 1e-6
#: consecutive waypoint segments whose directions have a dot product below this turn by > ~154 deg
REVERSAL_COS = -0.9
#: ... and it is a reversal (not a tight hairpin) when the outgoing leg is less than this share of
#: the spacing away from the incoming leg's line (a turning radius of < 2.5 % of ds)
REVERSAL_GAP = 0.05


def _check_ds(value: Any, name: str = "ds") -> float:
    """A waypoint spacing: finite and > 0 m."""
    return _check_positive(value, name, "a waypoint spacing > 0 m", "a finite waypoint spacing > 0 m")


def _check_ds_fits(ds: float, length: float, closed: bool, name: str = "ds") -> None:
    """``ds`` must leave at least MIN_WAYPOINTS and at most MAX_WAYPOINTS waypoints on a path of ``length``."""
    _check_waypoint_budget(ds, length, name)
    n = round(length / ds) if closed else round(length / ds) + 1
    if n < MIN_WAYPOINTS:
        kind = "closed" if closed else "open"
        limit = length / (MIN_WAYPOINTS if closed else MIN_WAYPOINTS - 1)
        raise PathError(
            f"{name}: {ds:g} m gives {n} waypoints on this {kind} path of length {length:.6g} m; "
            f"at least {MIN_WAYPOINTS} are needed, so ds must be <= {limit:.4g} m"
        )


def _check_waypoint_budget(ds: float, length: float, name: str = "ds") -> None:
    """At most MAX_WAYPOINTS waypoints of ``ds`` on ``length`` (checked before any allocation)."""
    n = length / ds
    if not n <= MAX_WAYPOINTS:
        raise PathError(
            f"{name}: {ds:g} m would make {n:.3g} waypoints on a path of length {length:.6g} m; at most "
            f"{MAX_WAYPOINTS:,} are allowed, so ds must be >= {length / MAX_WAYPOINTS:.4g} m (or the "
            "coordinates are not in metres)"
        )


def _check_length(length: float, scale: float, name: str) -> None:
    """Total length above MIN_LENGTH and MIN_LENGTH_REL x the largest |coordinate| ``scale``."""
    floor = max(MIN_LENGTH, MIN_LENGTH_REL * scale)
    if not np.isfinite(length) or length < floor:
        why = (f"{MIN_LENGTH:g} m" if floor == MIN_LENGTH else
               f"{MIN_LENGTH_REL:g} x the largest coordinate {scale:.6g} m = {floor:.3g} m")
        raise PathError(f"{name}: the path is {length:.3g} m long; a path must be at least {why} long")


def _check_not_collinear_loop(pts: np.ndarray, name: str) -> None:
    """A closed loop must enclose an area: its points may not all lie on one line."""
    c = pts - pts.mean(axis=0)
    _, sv, vt = np.linalg.svd(c, full_matrices=False)
    along = c @ vt[0]
    extent = float(along.max() - along.min())
    off = float(np.abs(c @ vt[1]).max()) if len(sv) > 1 else 0.0
    if off <= COLLINEAR_REL * extent:
        raise PathError(
            f"{name}: closed=True but all {len(pts)} points lie on one line (largest distance from it "
            f"{off:.3g} m over {extent:.6g} m); a closed loop must enclose an area (points off the line "
            f"by more than {COLLINEAR_REL:g} x the extent) -- use closed=False for a line"
        )


def _check_reversal(s: np.ndarray, x: np.ndarray, y: np.ndarray, length: float, closed: bool, name: str,
                    near: Any = None) -> None:
    """Refuse a path that goes forward and then back along itself.

    At waypoint i the segments in and out turn by more than ``arccos(REVERSAL_COS)`` (~154 deg)
    and the outgoing leg stays within ``REVERSAL_GAP`` x its length of the incoming leg's line
    (turning radius ~0); a tight hairpin sampled coarsely turns as much but its legs lie apart
    and only gets a log message. ``near(i)`` may return text locating waypoint i in the input.
    """
    p = np.column_stack([x, y])
    if closed:
        p = np.vstack([p, p[:1]])
    d = np.diff(p, axis=0)
    if len(d) < 2:
        return
    seg = np.hypot(d[:, 0], d[:, 1])
    u = d / np.maximum(seg, 1e-300)[:, None]
    a_in, a_out = (u, np.roll(u, -1, axis=0)) if closed else (u[:-1], u[1:])
    d_out = np.roll(d, -1, axis=0) if closed else d[1:]
    dot = np.einsum("ij,ij->i", a_in, a_out)
    gap = np.abs(a_in[:, 0] * d_out[:, 1] - a_in[:, 1] * d_out[:, 0])
    seg_out = np.roll(seg, -1) if closed else seg[1:]
    sharp = dot < REVERSAL_COS
    rev = sharp & (gap < REVERSAL_GAP * np.maximum(seg_out, 1e-300))
    if rev.any():
        k = int(np.flatnonzero(rev)[0])
        i = (k + 1) % len(s)  # waypoint between segment k and k+1
        where = f", {near(i)}" if near is not None else ""
        raise PathError(
            f"{name}: the path reverses onto itself at s = {s[i]:.6g} m (waypoint {i} of {len(s)}, "
            f"({x[i]:.6g}, {y[i]:.6g}){where}): it turns by {np.degrees(np.arccos(np.clip(dot[k], -1, 1))):.1f} deg "
            f"and comes back within {gap[k]:.3g} m of its own line; allowed are turns < "
            f"{np.degrees(np.arccos(REVERSAL_COS)):.0f} deg between waypoints or legs >= {REVERSAL_GAP:g} x ds apart"
        )
    if sharp.any():
        k = int(np.flatnonzero(sharp)[0])
        i = (k + 1) % len(s)
        logger.info("%s: turns by %.0f deg between waypoints at s = %.4g m; ds = %.3g m is coarse for this hairpin",
                    name, np.degrees(np.arccos(np.clip(dot[k], -1, 1))), s[i], float(np.median(seg)))


def _warn_corridor(s: np.ndarray, kappa: np.ndarray, wl: np.ndarray, wr: np.ndarray, name: str) -> int:
    """Log a warning where the inside width reaches the local radius (width_inside x |kappa| >= 1).

    The inside of a left turn (kappa > 0) is the left edge. Not an error: measured tracks have
    noisy curvature. Returns the number of offending waypoints.
    """
    inside = np.where(kappa > 0, wl, np.where(kappa < 0, wr, 0.0))
    ratio = inside * np.abs(kappa)
    bad = np.isfinite(ratio) & (ratio >= 1.0)
    if not bad.any():
        return 0
    i = int(np.flatnonzero(bad)[0])
    side = "width_left" if kappa[i] > 0 else "width_right"
    logger.warning(
        "%s: the corridor is wider than the radius of curvature on the inside of the curve at s = %.4g m: "
        "%s = %.4g m >= radius %.4g m (|kappa| = %.4g 1/m); allowed is width_inside x |kappa| < 1; "
        "%d of %d waypoints (%.4g..%.4g m) are affected",
        name, s[i], side, inside[i], 1.0 / abs(kappa[i]), abs(kappa[i]),
        int(bad.sum()), len(s), s[bad].min(), s[bad].max(),
    )
    return int(bad.sum())
