"""ReferencePath: analytic curvature, projection, corner rounding, bad input, real tracks."""
from __future__ import annotations

import re

import numpy as np
import pytest

from mpc_tracking import PathError, ReferencePath, wrap_angle
from mpc_tracking.paths.io import load_path, read_tum
from tests._shared import SKIP_TRACKS as SKIP
from tests._shared import TRACKS


def circle(R=10.0, n=200, ds=0.1, start=0.3):
    a = start + np.linspace(0, 2 * np.pi, n, endpoint=False)
    return ReferencePath(R * np.cos(a), R * np.sin(a), ds=ds, closed=True)


def test_circle_curvature_everywhere_including_seam():
    p = circle()
    assert np.max(np.abs(p.kappa - 0.1)) / 0.1 < 1e-4
    q = p.interpolate(np.array([p.length - 1e-6, 0.0, 1e-6, p.length - 0.5 * p.ds]))
    assert np.max(np.abs(q["kappa"] - 0.1)) / 0.1 < 1e-4
    assert abs(p.length - 2 * np.pi * 10) < 1e-6
    # heading continuous over the seam: next heading after the last waypoint is the first one + 2 pi
    assert abs(p.psi[0] + 2 * np.pi - (p.psi[-1] + p.kappa[-1] * p.ds)) < 1e-6


def test_straight_line_zero_curvature():
    p = ReferencePath(np.linspace(0, 10, 11), 0.5 * np.linspace(0, 10, 11), ds=0.1)
    assert np.max(np.abs(p.kappa)) < 1e-9
    assert np.allclose(p.psi, np.arctan(0.5))
    assert abs(p.length - np.hypot(10, 5)) < 1e-9


def test_clothoid_curvature():
    from scipy.special import fresnel

    c = 0.02  # kappa = c s
    s = np.linspace(0, 20, 400)
    k = np.sqrt(np.pi / c)
    S, C = fresnel(s / k)
    p = ReferencePath(k * C, k * S, ds=0.1)
    inner = (p.s > 2) & (p.s < 18)
    rel = np.abs(p.kappa[inner] - c * p.s[inner]) / (c * p.s[inner])
    assert rel.max() < 1e-3


@pytest.mark.parametrize("offset", [-1.5, -0.2, 0.0, 0.7, 2.0])
def test_projection_of_offset_circle_points(offset):
    R = 10.0
    p = circle(R)
    ang = np.linspace(0.05, 2 * np.pi - 0.05, 37)
    x, y = (R - offset) * np.cos(ang), (R - offset) * np.sin(ang)  # left of a CCW circle is inward
    s_true = np.mod((ang - 0.3) * R, p.length)
    out = p.project(x, y, psi=ang + np.pi / 2)
    assert np.allclose(out.e_y, offset, atol=1e-4)
    assert np.allclose((out.s - s_true + 0.5 * p.length) % p.length - 0.5 * p.length, 0.0, atol=1e-4)
    assert np.allclose(out.e_psi, 0.0, atol=1e-4)
    # scalar fast path with hint gives the same numbers
    for i in range(0, 37, 6):
        sc = p.project(float(x[i]), float(y[i]), float(ang[i] + np.pi / 2), s_hint=float(s_true[i]) + 0.8)
        assert isinstance(sc.s, float)
        assert sc.s == pytest.approx(float(out.s[i]), abs=1e-5)
        assert sc.e_y == pytest.approx(float(out.e_y[i]), abs=1e-5)


def test_projection_seam_and_open_ends():
    p = circle()
    s, e_y, _ = p.project(10.0 * np.cos(0.3 - 1e-4), 10.0 * np.sin(0.3 - 1e-4), s_hint=0.05)
    assert s == pytest.approx(p.length - 1e-3, abs=1e-5)
    line = ReferencePath([0, 10], [0, 0], ds=0.5)
    assert line.project(-2.0, 1.0, s_hint=0.0).s == pytest.approx(0.0)
    assert line.project(12.0, -1.0, s_hint=9.0).s == pytest.approx(10.0)
    assert line.project(12.0, -1.0).e_y == pytest.approx(-1.0)


def test_figure_eight_hint_keeps_branch():
    p = load_path("figure_eight", ds=0.5)
    # the crossing at the origin is visited twice; headings differ there
    i = np.argsort(np.hypot(p.x, p.y))[:6]
    s_cross = np.sort(p.s[i])
    s_a, s_b = s_cross[0], s_cross[-1]
    assert s_b - s_a > 0.25 * p.length
    for s_hint in (s_a, s_b):
        for dx in (-0.2, 0.0, 0.3):
            sc = p.project(dx, 0.1, s_hint=s_hint - 1.0)
            assert abs((sc.s - s_hint + 0.5 * p.length) % p.length - 0.5 * p.length) < 3.0
            vec = p.project(np.array([dx]), np.array([0.1]), s_hint=np.array([s_hint - 1.0]))
            assert vec.s[0] == pytest.approx(sc.s, abs=1e-5)


def test_hairpin_point_between_branches_follows_hint():
    p = load_path("hairpin_slalom")
    out_s = p.project(60.0, 0.0).s
    back_s = p.project(60.0, 16.0).s
    for hint, want in ((out_s - 2.0, out_s), (back_s - 2.0, back_s)):
        sc = p.project(60.0, 8.0, s_hint=hint)  # 8 m from both branches
        assert abs(sc.s - want) < 0.5 and abs(abs(sc.e_y) - 8.0) < 1e-6
        vec = p.project(np.array([60.0, 60.0]), np.array([8.0, 8.0]), s_hint=np.array([hint, hint]))
        assert np.allclose(vec.s, sc.s, atol=1e-6)


def test_stale_hint_falls_back_to_global_search():
    p = load_path("oval")
    far = p.interpolate(np.array([120.0]))
    sc = p.project(float(far["x"][0]), float(far["y"][0]), s_hint=0.0, window=10.0)
    assert sc.s == pytest.approx(120.0, abs=1e-3)


def test_from_corners_rectangle_keeps_sign_on_straights():
    r = ReferencePath.from_corners([[0, 0], [5, 0], [5, 3], [0, 3]], closed=True, ds=0.05, radius=0.8)
    assert r.kappa.min() >= -1e-12  # a CCW rectangle never turns right
    assert r.kappa.max() == pytest.approx(1 / 0.8, rel=1e-6)
    straight = (np.abs(r.y) < 1e-9) & (r.x > 1.5) & (r.x < 3.5)
    assert straight.sum() > 10 and np.all(r.kappa[straight] == 0.0)
    assert r.psi[-1] + r.kappa[-1] * r.ds == pytest.approx(r.psi[0] + 2 * np.pi, abs=1e-3)
    # heading matches the geometry
    chord = np.arctan2(np.diff(r.y), np.diff(r.x))
    assert np.max(np.abs(wrap_angle(chord - r.psi[:-1] - 0.5 * r.kappa[:-1] * r.ds))) < 1e-3
    steps = np.hypot(np.diff(r.x), np.diff(r.y))
    assert np.allclose(steps, r.ds, rtol=1e-3)


def test_from_corners_open_keeps_ends_and_shrinks_default_radius():
    pts = [[0, 0], [5, 0], [5, 1], [10, 1]]
    o = ReferencePath.from_corners(pts, ds=0.05, width_left=[1, 2, 3, 4])  # default radius 1.25 m
    assert (o.x[0], o.y[0]) == (0.0, 0.0) and o.x[-1] == pytest.approx(10) and o.y[-1] == pytest.approx(1)
    assert np.max(np.abs(o.kappa)) > 1 / 1.25  # radius reduced to fit the 1 m edge
    assert o.width_left[0] == pytest.approx(1) and o.width_left[-1] == pytest.approx(4)
    assert np.all(np.abs(o.kappa[o.x < 2]) == 0)


def test_from_corners_explicit_radius_too_large_names_the_largest_that_fits():
    pts = [[0, 0], [5, 0], [5, 1], [10, 1]]
    with pytest.raises(PathError, match=r"corner 1 at \(5, 0\) fits a radius of at most ([0-9.]+) m") as info:
        ReferencePath.from_corners(pts, ds=0.05, radius=3.0)
    assert "got 3 m" in str(info.value)
    largest = float(re.search(r"at most ([0-9.]+) m", str(info.value)).group(1))
    # two 90° corners share the 1 m edge: each takes half of it, R (tan 45° + clothoid shift) = 0.5 m
    assert 0.3 < largest < 0.5
    o = ReferencePath.from_corners(pts, ds=0.01, radius=0.99 * largest)  # the named radius fits
    assert np.max(np.abs(o.kappa)) == pytest.approx(1 / (0.99 * largest), rel=1e-3)


def test_duplicates_removed_and_closing_point_dropped():
    x = [0, 1, 1, 2, 2, 0, 0]
    y = [0, 0, 0, 1, 1, 1, 0]
    p = ReferencePath(x, y, closed=True, ds=0.05)
    assert np.all(np.isfinite(p.kappa)) and p.closed


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(x=[1, 1, 1], y=[2, 2, 2]), "at least 2 distinct points"),
        (dict(x=[0, 1, np.nan], y=[0, 1, 2]), "finite"),
        (dict(x=[0, 1, np.inf], y=[0, 1, 2]), "finite"),
        (dict(x=[0, 1], y=[0]), "equal lengths"),
        (dict(x=[0, 1, 2], y=[0, 1, 0], closed=True, ds=0.0), "ds"),
        (dict(x=[0, 1, 2], y=[0, 1, 0], ds=-1.0), "ds"),
        (dict(x=[0, 1, 2], y=[0, 1, 0], width_left=-1.0), "width"),
        (dict(x=[0, 1, 2], y=[0, 1, 0], width_right=[1, 0, 1]), "width"),
        (dict(x=[0, 1], y=[0, 1], closed=True), "at least 3 distinct points"),
        (dict(x=[0, 1, 2], y=[0, 1, 0], smoothing=-1), "smoothing"),
    ],
)
def test_bad_input(kwargs, match):
    x, y = kwargs.pop("x"), kwargs.pop("y")
    with pytest.raises(PathError, match=match):
        ReferencePath(x, y, **kwargs)


@pytest.mark.parametrize(
    "points, kwargs, match",
    [
        ([[0, 0]], {}, "at least 2"),
        ([[0, 0], [1, 0], [0, 0.0]], dict(), "reverses"),
        ([[0, 0], [1, 0], [1, 1]], dict(radius=-1), "radius"),
        ([[0, 0], [1, 0], [1, 1]], dict(blend=2), "blend"),
        ([0, 1, 2], {}, "shape"),
    ],
)
def test_bad_corners(points, kwargs, match):
    with pytest.raises(PathError, match=match):
        ReferencePath.from_corners(points, **kwargs)


def test_smoothing_reduces_noise_monotonically():
    rng = np.random.default_rng(0)
    a = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    x = 50 * np.cos(a) + 0.05 * rng.standard_normal(a.size)
    y = 50 * np.sin(a) + 0.05 * rng.standard_normal(a.size)
    noise = [ReferencePath(x, y, closed=True, ds=0.5, smoothing=sm).describe()["curvature_noise"] for sm in (0, 0.03, 0.1)]
    assert noise[0] > noise[1] > noise[2]
    p = ReferencePath(x, y, closed=True, ds=0.5, smoothing=0.07)  # about the noise's RMS
    assert np.max(np.abs(p.kappa - 0.02)) < 0.002


def test_target_noise_picks_least_smoothing():
    rng = np.random.default_rng(2)
    a = np.linspace(0, 2 * np.pi, 300, endpoint=False)
    x = 40 * np.cos(a) + 0.05 * rng.standard_normal(a.size)
    y = 40 * np.sin(a) + 0.05 * rng.standard_normal(a.size)
    p = ReferencePath.with_target_noise(x, y, 2e-3, closed=True, ds=0.5)
    assert p.describe()["curvature_noise"] <= 2e-3 and p.smoothing > 0
    less = ReferencePath(x, y, closed=True, ds=0.5, smoothing=0.8 * p.smoothing)
    assert less.describe()["curvature_noise"] > 2e-3
    with pytest.raises(PathError, match="target_noise"):
        ReferencePath.with_target_noise(x, y, 0.0, closed=True)


def test_describe_and_summary():
    d = circle().describe()
    assert d["closed"] and d["min_radius"] == pytest.approx(10, rel=1e-4)
    assert d["curvature_noise"] < 1e-5 and d["n_waypoints"] == 628
    assert "min radius 10 m" in circle().summary()


def _tracks():
    if not TRACKS.is_dir():
        pytest.skip(SKIP)
    files = sorted(TRACKS.glob("*.csv"))
    if not files:
        pytest.skip(SKIP)
    return files


def test_real_tracks_seam_heading_and_projection():
    for f in _tracks():
        p = read_tum(f, ds=2.0, smoothing=0.25)
        # heading continuous across the seam
        jump = wrap_angle(p.psi[0] - (p.psi[-1] + p.kappa[-1] * (p.length - p.s[-1])))
        assert abs(jump) < 0.02, f.name
        assert np.max(np.abs(np.diff(p.psi))) < 0.2, f.name
        # projection of points off the centre line, with hints slightly behind, from the scalar and vector path
        s = np.linspace(0, p.length, 60, endpoint=False)
        rng = np.random.default_rng(1)
        off = rng.uniform(-3, 3, s.size)
        pts = p.point_at(s, off)
        vec = p.project(pts[:, 0], pts[:, 1], s_hint=s - 3.0)
        ds_err = (vec.s - s + 0.5 * p.length) % p.length - 0.5 * p.length
        assert np.max(np.abs(ds_err)) < 0.05, f.name
        assert np.allclose(vec.e_y, off, atol=0.05), f.name
        glob = p.project(pts[:, 0], pts[:, 1])
        assert np.allclose(glob.e_y, off, atol=0.05), f.name
        for k in range(0, s.size, 7):
            sc = p.project(float(pts[k, 0]), float(pts[k, 1]), s_hint=float(s[k] - 3.0))
            assert sc.s == pytest.approx(float(vec.s[k]), abs=1e-4) and sc.e_y == pytest.approx(float(vec.e_y[k]), abs=1e-4)
