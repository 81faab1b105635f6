"""Realistic random race circuits: closed, non-self-intersecting loops of 2-7 km.

A circuit is a loop of corners joined by straights, as real circuits are: hairpins (radius 13-25 m,
150-195 deg), slow and medium corners (20-90 m), fast sweepers (100-300 m) and fast kinks (150-450 m,
5-20 deg), some of them right-handers and chicanes (two opposite turns close together). Every corner
is a constant-radius arc entered and left through a clothoid (curvature ramping linearly over 15-40 %
of the arc), so the curvature is continuous as on a surveyed track. The corners' turning angles are
scaled so the loop turns once (2 pi); the straights' lengths are then lengthened by a non-negative
least-squares step until the loop closes. The centre line goes through :class:`mpc_tracking.ReferencePath`
(the same spline fit as a track file) with widths of 10-15 m that vary slowly along the lap. A draw that
overlaps itself (two stretches of the track closer than their half widths plus 3 m, far apart along it)
or falls outside the length range or the straight share of real circuits (35-70 % of the lap) is
drawn again.

    from circuits import generate_circuit, generate_circuits
    path = generate_circuit(np.random.default_rng(7))          # one ReferencePath
    paths = generate_circuits(30, seed=0)                       # 30 circuits, reproducible

``python benchmarks/circuits.py --n 5 [--plot out.png]`` prints the summary of each (length, corners,
tightest radius, share of straight).
"""
from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

import numpy as np
from scipy.optimize import nnls
from scipy.spatial import cKDTree

import mpc_tracking as mt

__all__ = ["generate_circuit", "generate_circuits", "start_on_longest_straight", "self_overlap", "CircuitError",
           "LENGTH_RANGE", "WIDTH_RANGE", "MIN_RADIUS", "STRAIGHT_SHARE", "STRAIGHT_KAPPA"]

#: total length of a generated circuit [m]
LENGTH_RANGE = (2000.0, 7000.0)
#: total track width (left + right) [m]
WIDTH_RANGE = (10.0, 15.0)
#: tightest corner radius of the centre line [m] (a hairpin)
MIN_RADIUS = 13.0
#: a point of a circuit counts as straight below this curvature [1/m] (radius 1 km)
STRAIGHT_KAPPA = 1.0 / 1000.0
#: share of the lap that is straight (|kappa| < STRAIGHT_KAPPA); the six shared tracks have 0.39-0.65
STRAIGHT_SHARE = (0.35, 0.7)
#: corner types: (probability, radius range [m], turning angle range [deg])
CORNER_TYPES = {
    "hairpin": (0.12, (13.0, 25.0), (150.0, 195.0)),
    "slow": (0.18, (20.0, 45.0), (60.0, 120.0)),
    "medium": (0.25, (45.0, 90.0), (35.0, 100.0)),
    "fast": (0.22, (100.0, 300.0), (25.0, 90.0)),
    "kink": (0.23, (150.0, 450.0), (5.0, 20.0)),
}
_FINE = 0.5  # integration step of the centre line [m]


class CircuitError(RuntimeError):
    """No valid circuit after the allowed number of draws."""


@dataclass
class _Segment:
    kind: str  # "straight" or "corner"
    length: float  # straight: its length; corner: arc length at full curvature [m]
    kappa: float = 0.0  # signed full curvature [1/m]
    ramp: float = 0.0  # clothoid length on each side [m]


def _corners(rng: np.random.Generator, n: int) -> list[tuple[float, float]]:
    """``n`` corners as (radius [m], signed angle [rad]), their angles summing to 2 pi."""
    names = list(CORNER_TYPES)
    prob = np.array([CORNER_TYPES[k][0] for k in names])
    kinds = rng.choice(len(names), size=n, p=prob / prob.sum())
    if not np.any(kinds == 0):  # every real circuit has at least one hairpin
        kinds[rng.integers(n)] = 0
    out = []
    for k in kinds:
        _, (r0, r1), (a0, a1) = CORNER_TYPES[names[k]]
        radius = float(np.exp(rng.uniform(np.log(r0), np.log(r1))))
        angle = np.radians(rng.uniform(a0, a1))
        sign = -1.0 if rng.random() < 0.3 else 1.0
        out.append((radius, sign * angle))
    return out


def _normalise_turn(corners: list[tuple[float, float]]) -> list[tuple[float, float]] | None:
    """Scale the left-handers so the loop turns exactly 2 pi (None when they would need >40 % change)."""
    left = sum(a for _, a in corners if a > 0)
    right = sum(a for _, a in corners if a < 0)
    if left <= 0:
        return None
    factor = (2.0 * np.pi - right) / left
    if not 0.6 <= factor <= 1.4:
        return None
    out = [(r, a * factor if a > 0 else a) for r, a in corners]
    if max(abs(a) for _, a in out) > np.radians(200.0):
        return None
    return out


def _segments(rng: np.random.Generator, corners: list[tuple[float, float]]) -> list[_Segment]:
    segs: list[_Segment] = []
    for i, (radius, angle) in enumerate(corners):
        nxt = corners[(i + 1) % len(corners)][1]
        chicane = np.sign(nxt) != np.sign(angle) and rng.random() < 0.5
        if chicane:
            straight = rng.uniform(0.0, 40.0)
        elif rng.random() < 0.15:
            straight = rng.uniform(250.0, 700.0)
        else:
            straight = rng.uniform(20.0, 150.0)
        arc = radius * abs(angle)
        ramp = rng.uniform(0.15, 0.4) * arc
        # a clothoid pair turns kappa * ramp, so the full-curvature part is arc - ramp long
        segs.append(_Segment("corner", arc - ramp, np.sign(angle) / radius, ramp))
        segs.append(_Segment("straight", straight))
    return segs


def _kappa_profile(segs: list[_Segment], step: float) -> np.ndarray:
    """Curvature at a grid of spacing ``step`` over the whole lap (piecewise linear in s)."""
    knots_s, knots_k = [0.0], [0.0]
    s = 0.0
    for g in segs:
        if g.kind == "straight":
            s += g.length
            knots_s.append(s)
            knots_k.append(0.0)
        else:
            for ds, k in ((g.ramp, g.kappa), (g.length, g.kappa), (g.ramp, 0.0)):
                s += ds
                knots_s.append(s)
                knots_k.append(k)
    n = max(round(s / step), 8)
    grid = (np.arange(n) + 0.5) * (s / n)
    return np.interp(grid, knots_s, knots_k), s / n


def _integrate(kappa: np.ndarray, h: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Heading and positions at the n+1 nodes of cells of length ``h`` with curvature ``kappa`` (n,)."""
    psi = np.concatenate(([0.0], np.cumsum(kappa * h)))
    mid = 0.5 * (psi[1:] + psi[:-1])
    x = np.concatenate(([0.0], np.cumsum(h * np.cos(mid))))
    y = np.concatenate(([0.0], np.cumsum(h * np.sin(mid))))
    return psi, x, y


def _close(segs: list[_Segment]) -> bool:
    """Lengthen straights (non-negative least squares) so the loop closes; False when it cannot."""
    straights = [i for i, g in enumerate(segs) if g.kind == "straight"]
    heading, pos = 0.0, np.zeros(2)
    dirs = np.zeros((2, len(straights)))
    j = 0
    for g in segs:
        if g.kind == "straight":
            d = np.array([np.cos(heading), np.sin(heading)])
            dirs[:, j] = d
            pos += g.length * d
            j += 1
        else:
            k_prof, h = _kappa_profile([g], _FINE)
            psi, x, y = _integrate(k_prof, h)
            c, s = np.cos(heading), np.sin(heading)
            pos += np.array([c * x[-1] - s * y[-1], s * x[-1] + c * y[-1]])
            heading += psi[-1]
    # spread the extra length over many straights (ridge rows), then close exactly on the rest
    m = len(straights)
    ridge = np.vstack([dirs, 0.5 * np.eye(m)])
    extra, _ = nnls(ridge, np.concatenate([-pos, np.zeros(m)]))
    rest, resid = nnls(dirs, -pos - dirs @ extra)
    if resid > 1e-6 * max(1.0, float(np.linalg.norm(pos))):
        return False
    for i, e in zip(straights, extra + rest, strict=True):
        segs[i].length += float(e)
    return True


def _widths(rng: np.random.Generator, s: np.ndarray, length: float) -> tuple[np.ndarray, np.ndarray]:
    """Left and right widths [m]: total 10-15 m varying over a few hundred metres, slightly asymmetric."""
    lo, hi = WIDTH_RANGE
    total = np.full(s.size, rng.uniform(lo + 1.0, hi - 1.0))
    asym = np.zeros(s.size)
    for _ in range(3):
        harmonic = rng.integers(1, max(2, int(length / 300.0)))
        phase = rng.uniform(0.0, 2.0 * np.pi)
        total += rng.uniform(0.3, 1.2) * np.sin(2.0 * np.pi * harmonic * s / length + phase)
        asym += rng.uniform(0.0, 0.3) * np.sin(2.0 * np.pi * harmonic * s / length + 2.0 * phase)
    total = np.clip(total, lo, hi)
    return 0.5 * total + asym, 0.5 * total - asym


def self_overlap(x: np.ndarray, y: np.ndarray, half_width: np.ndarray, closed: bool = True,
                 margin: float = 3.0) -> bool:
    """True when two stretches of a track far apart along it come closer than their half widths plus ``margin``.

    Parameters
    ----------
    x, y : ndarray, shape (n,)
        Centre line at (about) uniform spacing [m].
    half_width : ndarray, shape (n,)
        Largest half width at each point [m].
    """
    pts = np.column_stack([x, y])
    seg = np.hypot(np.diff(x, append=x[0] if closed else x[-1]), np.diff(y, append=y[0] if closed else y[-1]))
    s = np.concatenate(([0.0], np.cumsum(seg)[:-1]))
    length = float(seg.sum())
    reach = 2.0 * float(np.max(half_width)) + margin
    pairs = cKDTree(pts).query_pairs(reach, output_type="ndarray")
    if pairs.size == 0:
        return False
    i, j = pairs[:, 0], pairs[:, 1]
    d = np.hypot(x[i] - x[j], y[i] - y[j])
    along = np.abs(s[i] - s[j])
    if closed:
        along = np.minimum(along, length - along)
    near = d < half_width[i] + half_width[j] + margin
    # neighbours along the track (a corner turns at most ~200 deg: along <= 1.75 d) are not overlaps
    far = along > 2.5 * d + 2.0 * reach
    return bool(np.any(near & far))


def _one(rng: np.random.Generator, ds: float, length_range: tuple[float, float]) -> mt.ReferencePath | None:
    corners = _normalise_turn(_corners(rng, int(rng.integers(10, 23))))
    if corners is None:
        return None
    segs = _segments(rng, corners)
    if not _close(segs):
        return None
    kappa, h = _kappa_profile(segs, _FINE)
    kappa *= 2.0 * np.pi / float(np.sum(kappa * h))  # exactly one turn on the grid
    _psi, x, y = _integrate(kappa, h)
    length = h * kappa.size
    if not length_range[0] <= length <= length_range[1]:
        return None
    if not STRAIGHT_SHARE[0] <= float(np.mean(np.abs(kappa) < STRAIGHT_KAPPA)) <= STRAIGHT_SHARE[1]:
        return None
    # remove the tiny closure error of the discrete integration, spread along the lap
    frac = np.arange(x.size) / (x.size - 1)
    x, y = x - frac * x[-1], y - frac * y[-1]
    x, y = x[:-1], y[:-1]
    stride = max(1, round(2.0 / h))  # a 2 m polyline, as a surveyed track file
    xs, ys = x[::stride], y[::stride]
    s_pts = np.arange(xs.size) * stride * h
    wl, wr = _widths(rng, s_pts, length)
    if self_overlap(xs, ys, np.maximum(wl, wr)):
        return None
    theta = rng.uniform(0.0, 2.0 * np.pi)  # any orientation
    c, s = np.cos(theta), np.sin(theta)
    return mt.ReferencePath(c * xs - s * ys, s * xs + c * ys, width_left=wl, width_right=wr, ds=ds, closed=True,
                            name="circuit")


def generate_circuit(rng: np.random.Generator, *, ds: float = 1.0,
                     length_range: tuple[float, float] = LENGTH_RANGE, max_tries: int = 500,
                     name: str | None = None) -> mt.ReferencePath:
    """One random circuit.

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of randomness (the same state gives the same circuit).
    ds : float
        Waypoint spacing of the returned path [m].
    length_range : (float, float)
        Accepted total length [m].
    max_tries : int
        Draws before giving up.
    name : str, optional
        The path's name (default ``"circuit"``).

    Returns
    -------
    ReferencePath
        Closed, with widths; counter-clockwise.

    Raises
    ------
    CircuitError
        No draw in ``max_tries`` was closed, in the length range and free of overlaps.
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng: expected a numpy.random.Generator, got {type(rng).__name__}")
    for _ in range(max_tries):
        path = _one(rng, ds, length_range)
        if path is not None:
            if name is not None:
                path.name = name
            return path
    raise CircuitError(f"no valid circuit in {max_tries} draws (length range {length_range} m)")


def generate_circuits(n: int, seed: int = 0, ds: float = 1.0) -> list[mt.ReferencePath]:
    """``n`` circuits named ``gen<seed>_<i>``; circuit ``i`` depends only on ``(seed, i)``."""
    return [generate_circuit(np.random.default_rng([seed, i]), ds=ds, name=f"gen{seed}_{i}") for i in range(n)]


def start_on_longest_straight(path: mt.ReferencePath, into: float = 5.0) -> mt.ReferencePath:
    """The closed ``path`` started ``into`` [m] after the beginning of its longest straight (the longest run of
    points with ``|kappa| < STRAIGHT_KAPPA``), as real circuits start on their main straight: the same waypoints
    and widths, renumbered; named ``<name>s``. A generated lap otherwise starts wherever the construction began,
    often in or just before a corner."""
    if not path.closed:
        raise ValueError(f"start_on_longest_straight: path {path.name!r} is not closed")
    straight = np.abs(path.kappa) < STRAIGHT_KAPPA
    n = path.n
    if straight.all() or not straight.any():
        return path
    first_bend = int(np.argmin(straight))  # a point that is not straight: runs are counted from past it
    order = (np.arange(n) + first_bend) % n
    best_len, best_start, run_start = 0, 0, 0
    for j, i in enumerate(order):
        if not straight[i]:
            run_start = j + 1
        elif j + 1 - run_start > best_len:
            best_len, best_start = j + 1 - run_start, run_start
    i0 = int(order[best_start] + round(into / path.ds)) % n
    idx = (np.arange(n) + i0) % n
    return mt.ReferencePath(path.x[idx], path.y[idx], width_left=path.width_left[idx],
                            width_right=path.width_right[idx], ds=path.ds, closed=True, name=f"{path.name}s")


def describe(path: mt.ReferencePath) -> dict[str, float]:
    """Length, tightest radius, share of the lap that is straight (|kappa| < STRAIGHT_KAPPA) and widths."""
    k = np.abs(path.kappa)
    return {"length_m": round(path.length, 1), "min_radius_m": round(1.0 / float(k.max()), 1),
            "straight_share": round(float(np.mean(k < STRAIGHT_KAPPA)), 3),
            "hairpin_share": round(float(np.mean(k > 1.0 / 30.0)), 3),
            "width_min_m": round(float(np.min(path.width_left + path.width_right)), 2),
            "width_max_m": round(float(np.max(path.width_left + path.width_right)), 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plot", default=None, help="write a PNG of the circuits")
    args = ap.parse_args()
    paths = generate_circuits(args.n, args.seed)
    print(json.dumps({p.name: describe(p) for p in paths}, indent=1))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        cols = min(5, args.n)
        rows = int(np.ceil(args.n / cols))
        fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 3 * rows), squeeze=False)
        for ax, p in zip(axes.flat, paths, strict=False):
            ax.plot(p.x, p.y, lw=0.8)
            ax.set_aspect("equal")
            ax.set_title(f"{p.name} {p.length / 1000:.1f} km", fontsize=8)
            ax.axis("off")
        fig.savefig(args.plot, dpi=100)


if __name__ == "__main__":
    main()
