"""What a list of points is: corners of a polygon or samples of a smooth curve, and how far a fit strays.

A user's own x/y table is either a centre line sampled along a smooth curve (a GPS trace, a
digitised track) or the corners of a polygon (a city block typed as four points, or densely
sampled with true 90° corners). A spline through polygon corners bulges far outside the
polygon (four block corners become an ellipse), so the loaders round corner polygons with
clothoid-arc blends instead (:mod:`mpc_tracking.paths.corners`). These helpers make that
decision and measure the result.

>>> import numpy as np
>>> block = np.array([[0, 0], [100, 0], [100, 60], [0, 60]], float)
>>> corner_vertices(block, closed=True).tolist()
[0, 1, 2, 3]
>>> t = np.linspace(0, 2 * np.pi, 200, endpoint=False)
>>> corner_vertices(np.column_stack([50 * np.cos(t), 50 * np.sin(t)]), closed=True) is None
True
"""
from __future__ import annotations

import numpy as np

__all__ = ["simplify_collinear", "deflections", "corner_vertices", "polyline_distance", "estimate_noise",
           "CORNER_MIN_TURN_DEG", "CORNER_SHARP_TURN_DEG"]

#: every kept vertex of a corner polygon turns by at least this much [deg] ...
CORNER_MIN_TURN_DEG = 30.0
#: ... and at least one by this much [deg]; an octagon sampled from a circle (45°) stays a curve
CORNER_SHARP_TURN_DEG = 60.0


def simplify_collinear(pts: np.ndarray, closed: bool, tol: float) -> np.ndarray:
    """Indices of the vertices left when points within ``tol`` of a straight run are dropped.

    Ramer–Douglas–Peucker on the open polyline (closed: split at the point farthest from the
    first, so both halves are open).

    Parameters
    ----------
    pts : ndarray, shape (n, 2)
        Distinct consecutive points [m].
    closed : bool
        Whether the points form a loop (the last connects back to the first).
    tol : float
        Largest distance [m] of a dropped point from the chord that replaces it.

    Returns
    -------
    ndarray of int, shape (k,)
        Sorted indices into ``pts`` (open paths keep both ends).
    """
    n = len(pts)
    if n <= 2:
        return np.arange(n)
    if closed:
        far = int(np.argmax(np.hypot(*(pts - pts[0]).T)))
        first = _rdp(pts[: far + 1], tol)
        second = _rdp(np.vstack([pts[far:], pts[:1]]), tol) + far
        keep = np.union1d(first, second[second < n])
        return keep
    return _rdp(pts, tol)


def _rdp(pts: np.ndarray, tol: float) -> np.ndarray:
    keep = np.zeros(len(pts), bool)
    keep[[0, -1]] = True
    stack = [(0, len(pts) - 1)]
    while stack:
        i, j = stack.pop()
        if j <= i + 1:
            continue
        a, b = pts[i], pts[j]
        seg = b - a
        inner = pts[i + 1: j] - a
        length = float(np.hypot(*seg))
        if length > 0:
            dist = np.abs(seg[0] * inner[:, 1] - seg[1] * inner[:, 0]) / length
        else:
            dist = np.hypot(inner[:, 0], inner[:, 1])
        k = int(np.argmax(dist))
        if dist[k] > tol:
            m = i + 1 + k
            keep[m] = True
            stack += [(i, m), (m, j)]
    return np.flatnonzero(keep)


def deflections(pts: np.ndarray, closed: bool) -> np.ndarray:
    """Turning angle [rad] at each vertex, signed (left positive), in (-π, π].

    Open paths have no turn at their ends (0 there). Shape (n,).
    """
    ring = np.vstack([pts, pts[:1]]) if closed else pts
    ang = np.arctan2(*np.diff(ring, axis=0)[:, ::-1].T)
    turn = np.zeros(len(pts))
    if closed:
        d = ang - np.roll(ang, 1)
        turn[:] = d
    elif len(pts) > 2:
        turn[1:-1] = np.diff(ang)
    return np.angle(np.exp(1j * turn))


def corner_vertices(pts: np.ndarray, closed: bool, *, tol: float | None = None) -> np.ndarray | None:
    """The corners, if ``pts`` are the corners of a polygon (sparse, or dense along straight edges).

    The points are first reduced to the vertices that are not on a straight run (tolerance
    ``tol``, default 2 % of the median point spacing). They are a corner polygon when every
    remaining turning vertex turns by at least :data:`CORNER_MIN_TURN_DEG` and one by at least
    :data:`CORNER_SHARP_TURN_DEG`: a block (90°) or a triangle is, an octagon sampled from a
    circle (45°), a densely sampled curve or a noisy trace (many small turns) is not.

    Parameters
    ----------
    pts : ndarray, shape (n, 2)
        Distinct consecutive points [m].
    closed : bool
        Whether the points form a loop.
    tol : float, optional
        Straight-run tolerance [m].

    Returns
    -------
    ndarray of int or None
        Indices of the polygon's vertices in ``pts`` (open: including both ends), or None when
        the points are samples of a curve.
    """
    if len(pts) < 3:
        return None
    if tol is None:
        tol = 0.02 * float(np.median(np.hypot(*np.diff(pts, axis=0).T)))
    keep = simplify_collinear(pts, closed, tol)
    turn = np.abs(deflections(pts[keep], closed))
    inner = turn if closed else turn[1:-1]
    inner = inner[inner > 1e-9]
    if inner.size == 0:
        return None
    if inner.min() >= np.radians(CORNER_MIN_TURN_DEG) and inner.max() >= np.radians(CORNER_SHARP_TURN_DEG):
        return keep
    return None


def polyline_distance(query: np.ndarray, poly: np.ndarray, closed: bool) -> np.ndarray:
    """Distance [m] from each query point to the polyline through ``poly`` (exact, vectorized).

    The nearest vertex (k-d tree) names the candidate segments; the distance is the exact
    point-to-segment distance over the segments around the few nearest vertices.

    Parameters
    ----------
    query : ndarray, shape (m, 2)
    poly : ndarray, shape (n, 2)
        Polyline vertices [m]; ``closed`` adds the segment from the last to the first.

    Returns
    -------
    ndarray, shape (m,)
    """
    ring = np.vstack([poly, poly[:1]]) if closed else poly
    a, b = ring[:-1], ring[1:]
    n_seg = len(a)
    if n_seg == 0:
        return np.hypot(*(query - poly[0]).T)
    # sample the segments so that the nearest sample lies on (or next to) the nearest segment
    seg_len = np.hypot(*(b - a).T)
    step = max(float(np.median(seg_len[seg_len > 0])) if np.any(seg_len > 0) else 1.0, 1e-12) / 4.0
    # (at most 1000 samples per segment: a gap 1000x the median spacing is sampled more coarsely)
    counts = np.clip(np.ceil(np.minimum(seg_len / step, 1000.0)), 1, 1000).astype(int)
    seg_of = np.repeat(np.arange(n_seg), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)  # index of each segment's first sample
    frac = (np.arange(seg_of.size) - first) / np.repeat(counts, counts)  # 0, 1/c, ..., (c-1)/c per segment
    samples = a[seg_of] + frac[:, None] * (b - a)[seg_of]
    k = min(4, len(samples))
    from scipy.spatial import cKDTree  # here, not at import (scipy.spatial costs ~0.1 s)

    _, idx = cKDTree(samples).query(query, k=k)
    idx = np.atleast_2d(idx).reshape(len(query), k)
    cand = np.concatenate([seg_of[idx] + off for off in (-1, 0, 1)], axis=1)
    cand = np.mod(cand, n_seg) if closed else np.clip(cand, 0, n_seg - 1)
    pa, pb = a[cand], b[cand]
    d = pb - pa
    t = np.einsum("mkj,mkj->mk", query[:, None, :] - pa, d) / np.maximum(np.einsum("mkj,mkj->mk", d, d), 1e-300)
    foot = pa + np.clip(t, 0.0, 1.0)[..., None] * d
    return np.min(np.hypot(*(query[:, None, :] - foot).transpose(2, 0, 1)), axis=1)


def estimate_noise(pts: np.ndarray, closed: bool) -> float:
    """Robust estimate of the per-coordinate noise [m] on points sampled along a smooth curve.

    Third differences cancel a smooth curve up to ``h³ κ'`` (tiny at the usual spacings) but
    not white noise: with independent N(0, σ²) noise per coordinate, ``|Δ³p|² / (20 σ²)`` is
    χ² with 2 degrees of freedom, whose median is ``2 ln 2``; the median makes the estimate
    robust to a few genuine sharp features.

    Parameters
    ----------
    pts : ndarray, shape (n, 2)
        Roughly evenly spaced points [m].
    closed : bool
        Whether the points form a loop (differences wrap around).

    Returns
    -------
    float
        σ estimate [m]; 0 with fewer than 8 points.

    >>> rng = np.random.default_rng(0)
    >>> t = np.linspace(0, 2 * np.pi, 2000, endpoint=False)
    >>> p = np.column_stack([100 * np.cos(t), 100 * np.sin(t)])
    >>> round(estimate_noise(p + rng.normal(0, 0.2, p.shape), True), 1), estimate_noise(p, True) < 1e-3
    (0.2, True)
    """
    if len(pts) < 8:
        return 0.0
    ring = np.vstack([pts, pts[:3]]) if closed else pts
    d3 = np.diff(ring, n=3, axis=0)
    return float(np.sqrt(np.median(np.einsum("ij,ij->i", d3, d3)) / (20.0 * 2.0 * np.log(2.0))))
