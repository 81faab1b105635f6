"""A user's own paths, as CSV files they might type or export, tracked end to end.

Each case is written as a plain x, y[, w_right, w_left] table and loaded with ``load_path``
(corner polygons recognised and rounded, noisy traces smoothed, loops recognised), then driven
by the kinematic MPC on the kinematic bicycle: every one completes its lap or path, with the body
inside the corridor where the file gives widths.
"""
from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import PathError
from mpc_tracking.paths.polyline import corner_vertices, estimate_noise, polyline_distance, simplify_collinear

BLOCK = np.array([[0, 0], [120, 0], [120, 80], [0, 80]], float)


def _dense(corners: np.ndarray, closed: bool, step: float = 1.0) -> np.ndarray:
    ring = np.vstack([corners, corners[:1]]) if closed else corners
    parts = []
    for a, b in itertools.pairwise(ring):
        n = max(1, int(np.hypot(*(b - a)) / step))
        parts.append(a + np.outer(np.arange(n) / n, b - a))
    if not closed:
        parts.append(ring[-1:])
    return np.vstack(parts)


def _zoo() -> dict[str, tuple[np.ndarray, float | None]]:
    rng = np.random.default_rng(3)
    t = np.linspace(0, 2 * np.pi, 240, endpoint=False)
    arc = np.linspace(0, np.pi, 40)
    hairpin = np.vstack([_dense(np.array([[0.0, 0], [80, 0]]), False)[:-1],
                         np.column_stack([80 + 12 * np.sin(arc), 12 * (1 - np.cos(arc))]),
                         _dense(np.array([[80.0, 24], [0, 24]]), False)[1:]])
    xs = np.linspace(0, 200, 201)
    th = np.linspace(0, 4 * np.pi, 400)
    return {  # points, half-width (None: no widths in the file)
        "figure_eight": (np.column_stack([60 * np.sin(t), 30 * np.sin(2 * t)]), 4.0),
        "block_sparse": (BLOCK, 4.0),
        "block_dense": (_dense(BLOCK, True), 4.0),
        "hairpin": (hairpin, 4.0),
        "s_curve": (np.column_stack([xs, 15 * np.tanh((xs - 100) / 25)]), 4.0),
        "gps_noisy": (np.column_stack([80 * np.cos(t), 50 * np.sin(t)]) + rng.normal(0, 0.3, (t.size, 2)), None),
        "spiral": (np.column_stack([(15 + 6 * th) * np.cos(th), (15 + 6 * th) * np.sin(th)]), None),
    }


ZOO = _zoo()


def _write(tmp_path, name: str, pts: np.ndarray, half_width: float | None):
    cols = [pts[:, 0], pts[:, 1]]
    if half_width is not None:
        cols += [np.full(len(pts), half_width)] * 2
    f = tmp_path / f"{name}.csv"
    np.savetxt(f, np.column_stack(cols), delimiter=",", fmt="%.4f")
    return f


@pytest.mark.parametrize("name", list(ZOO))
def test_own_path_is_tracked_end_to_end(tmp_path, name):
    pts, half_width = ZOO[name]
    path = mt.load_path(_write(tmp_path, name, pts, half_width))
    vehicle = mt.VehicleParams()
    mpc = mt.SpatialMPC(path, vehicle, mt.MPCSettings(horizon=30, v_max=12.0))
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
    result = mt.simulate(path, mpc, plant, laps=1)
    m = result.metrics
    assert m["reason"] == ("completed" if path.closed else "end_of_path"), result.summary()
    # measured: RMS 0.1-9 mm, max 0.2-38 mm (the hairpin's 12 m turn is the hardest)
    assert m["rms_e_y"] < 0.03 and m["max_abs_e_y"] < 0.12, result.summary()
    if half_width is not None:
        assert m["max_body_overshoot"] == 0.0
    assert path.closed == (name not in ("hairpin", "s_curve", "spiral"))


def test_block_corners_are_rounded_inside_the_block_not_fitted_by_an_ellipse(tmp_path):
    for pts in (BLOCK, _dense(BLOCK, True)):  # four typed corners, or 1 m points along the edges
        path = mt.load_path(_write(tmp_path, "block", pts, 4.0))
        # a spline through the corners bulges ~21 m outside; the rounded polygon stays inside
        assert path.x.min() > -1e-6 and path.x.max() < 120 + 1e-6
        assert path.y.min() > -1e-6 and path.y.max() < 80 + 1e-6
        assert np.max(np.abs(path.kappa)) == pytest.approx(1 / 25.0, rel=1e-3)  # default: a quarter of the edge
        assert np.sum(np.abs(path.kappa) < 1e-12) > 0.25 * path.n  # the straight parts stay straight (kappa 0)
        # the largest deviation from the input polyline is the corner cut of a 25 m blend
        assert 8.0 < path.fit_deviation < 15.0
    eight = mt.load_path(_write(tmp_path, "block", BLOCK, 4.0), corner_radius=8.0)
    assert np.max(np.abs(eight.kappa)) == pytest.approx(1 / 8.0, rel=1e-3)
    spline = mt.load_path(_write(tmp_path, "block", BLOCK, 4.0), corners=False)
    assert spline.fit_deviation > 15.0  # the ellipse the rounding avoids


def test_corner_radius_larger_than_the_edges_allow_names_the_largest(tmp_path):
    f = _write(tmp_path, "small_block", BLOCK / 10, 0.5)  # 12 m x 8 m
    with pytest.raises(PathError, match=r"small_block.csv: radius: corner \d .* fits a radius of at most [0-9.]+ m"):
        mt.load_path(f, corner_radius=10.0)
    with pytest.raises(PathError, match="corner_radius: expected a finite corner radius > 0 m, got -1"):
        mt.load_path(f, corner_radius=-1)
    with pytest.raises(PathError, match="only x/y tables"):
        mt.load_path("oval", corner_radius=5.0)


def test_spline_fit_far_from_the_points_warns_and_names_the_point(caplog):
    caplog.set_level(logging.WARNING)
    p = mt.ReferencePath(BLOCK[:, 0], BLOCK[:, 1], closed=True, ds=1.0, name="typed")
    assert p.fit_deviation > 15.0
    msg = [r.getMessage() for r in caplog.records if "strays" in r.getMessage()]
    assert len(msg) == 1 and "near input point" in msg[0] and "from_corners" in msg[0]
    caplog.clear()
    t = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    q = mt.ReferencePath(50 * np.cos(t), 50 * np.sin(t), closed=True, ds=1.0)
    assert q.fit_deviation < 0.01 and not [r for r in caplog.records if "strays" in r.getMessage()]


def test_noisy_trace_is_smoothed_by_its_measured_noise(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    pts, _ = ZOO["gps_noisy"]
    f = _write(tmp_path, "gps", pts, None)
    smooth = mt.load_path(f)
    assert any("noisy" in r.getMessage() and "smoothing=0" in r.getMessage() for r in caplog.records)
    assert smooth.smoothing == pytest.approx(np.sqrt(2) * 0.3, rel=0.2)
    raw = mt.load_path(f, smoothing=0)  # asked for the raw points: kept, and their curvature is wild
    assert raw.smoothing == 0.0
    assert np.max(np.abs(raw.kappa)) > 10 * np.max(np.abs(smooth.kappa))
    clean = _write(tmp_path, "clean", ZOO["figure_eight"][0], 4.0)
    assert mt.load_path(clean).smoothing == 0.0


def test_irregular_spacing_warns_with_the_points(caplog):
    caplog.set_level(logging.WARNING)
    x = np.concatenate([np.linspace(0, 10, 11), np.linspace(300, 310, 11)])
    mt.ReferencePath(x, 0.01 * x**1.5, ds=1.0, name="gap")
    msg = [r.getMessage() for r in caplog.records if "irregular" in r.getMessage()]
    assert len(msg) == 1 and "input points 10 and 11" in msg[0]


def test_identical_points_are_an_error_naming_the_file(tmp_path):
    f = tmp_path / "same.csv"
    f.write_text("5,5\n5,5\n5,5\n5,5\n")
    with pytest.raises(PathError, match=r"same\.csv"):
        mt.load_path(f)


# ------------------------------------------------------------------ the polyline helpers themselves
@pytest.mark.parametrize("sides, expect", [(3, True), (4, True), (6, True), (8, False), (200, False)])
def test_regular_polygons_are_corners_up_to_hexagons(sides, expect):
    t = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    pts = np.column_stack([50 * np.cos(t), 50 * np.sin(t)])
    assert (corner_vertices(pts, closed=True) is not None) is expect


def test_dense_polygon_reduces_to_its_corners_and_noise_does_not():
    assert corner_vertices(_dense(BLOCK, True), True).tolist() == [0, 120, 200, 320]
    open_l = _dense(np.array([[0.0, 0], [50, 0], [50, 40]]), False)
    assert corner_vertices(open_l, False).tolist() == [0, 50, 90]
    assert corner_vertices(ZOO["gps_noisy"][0], True) is None
    line = np.column_stack([np.linspace(0, 10, 11), np.zeros(11)])
    assert simplify_collinear(line, False, 1e-6).tolist() == [0, 10]


def test_polyline_distance_matches_brute_force():
    rng = np.random.default_rng(1)
    poly = np.cumsum(rng.normal(0, 3, (40, 2)), axis=0)
    q = rng.uniform(poly.min(0) - 5, poly.max(0) + 5, (300, 2))
    for closed in (False, True):
        ring = np.vstack([poly, poly[:1]]) if closed else poly
        a, b = ring[:-1], ring[1:]
        d = b - a
        t = np.clip(np.einsum("mkj,kj->mk", q[:, None] - a, d) / np.einsum("kj,kj->k", d, d), 0, 1)
        brute = np.min(np.linalg.norm(q[:, None] - (a + t[..., None] * d), axis=2), axis=1)
        # the k-d tree preselects segments near the 4 nearest samples; exact where it finds the nearest
        got = polyline_distance(q, poly, closed)
        assert np.all(got >= brute - 1e-9)
        assert np.quantile(got - brute, 0.99) < 1e-9


def test_noise_estimate_recovers_sigma():
    rng = np.random.default_rng(2)
    t = np.linspace(0, 2 * np.pi, 3000, endpoint=False)
    p = np.column_stack([200 * np.cos(t), 120 * np.sin(t)])
    for sigma in (0.05, 0.3, 1.0):
        assert estimate_noise(p + rng.normal(0, sigma, p.shape), True) == pytest.approx(sigma, rel=0.1)
    assert estimate_noise(p, True) < 1e-3
