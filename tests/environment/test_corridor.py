"""Corridors: track widths, circles, polygons, moving circles, occupancy grids, gap choice, car bounds."""
from __future__ import annotations

import numpy as np
import pytest

from mpc_tracking import InputError, PathFormatError, ReferencePath
from mpc_tracking.environment import (
    CircleObstacle,
    MovingCircle,
    ObstacleCorridor,
    OccupancyGrid,
    PolygonObstacle,
    TrackCorridor,
    car_bounds,
    choose_gaps,
)
from mpc_tracking.paths.io import load_path


@pytest.fixture
def line():
    return ReferencePath([0, 60], [0, 0], ds=0.5, width_left=3.0, width_right=2.0)


def test_track_corridor(line):
    lb, ub = TrackCorridor(line).bounds(np.array([0.0, 10.0, 59.0]))
    assert np.allclose(lb, -2.0) and np.allclose(ub, 3.0)


def test_circle_splits_and_side_follows_car(line):
    c = ObstacleCorridor(line, [CircleObstacle((20.0, 0.5), 1.0)])
    s = np.arange(15.0, 26.0, 0.5)
    lb, ub = c.bounds(s, e_y0=-1.0)
    at = s == 20.0
    assert ub[at][0] == pytest.approx(-0.5) and lb[at][0] == pytest.approx(-2.0)
    lb2, ub2 = c.bounds(s, e_y0=2.5)
    assert lb2[at][0] == pytest.approx(1.5) and ub2[at][0] == pytest.approx(3.0)
    # exact chord of the circle at s = 19.5: half-chord sqrt(1 - 0.25)
    k = np.flatnonzero(s == 19.5)[0]
    assert lb2[k] == pytest.approx(0.5 + np.sqrt(0.75))
    assert np.all(lb2 < ub2)


def test_gap_is_followed_not_widest():
    # the car's gap narrows while the other one widens: stay in the continuing gap
    free = [[(-3, 3)], [(-3, -1), (0.5, 3)], [(-3, -2.5), (0.2, 3)], [(-3, -2.8), (0.0, 3)]]
    lb, ub = choose_gaps(free, e_y0=-2.0)
    assert np.allclose(lb, -3) and np.allclose(ub, [3, -1, -2.5, -2.8])
    lb, ub = choose_gaps([[(-1, 1)], [], [(2, 3)]], e_y0=0.0)
    assert lb[1] == ub[1] == 0.0 and (lb[2], ub[2]) == (2, 3)


def test_polygon_obstacle_exact(line):
    sq = PolygonObstacle([[30, -1], [32, -1], [32, 1.5], [30, 1.5]])
    lb, ub = ObstacleCorridor(line, [sq]).bounds(np.array([31.0]), e_y0=2.5)
    assert (lb[0], ub[0]) == (pytest.approx(1.5), pytest.approx(3.0))
    # non-convex U shape opening up: the line x = 31 crosses it twice -> two blocked pieces
    u = PolygonObstacle([[29, -1.5], [33, -1.5], [33, 2], [32, 2], [32, -0.5], [30, -0.5], [30, 2], [29, 2]])
    lo, hi = u.blocked(np.array([29.5, 31.0]), np.zeros(2), np.zeros(2), np.ones(2), None)
    assert np.allclose(np.sort(lo[0][np.isfinite(lo[0])]), [-1.5]) and np.allclose(hi[0][np.isfinite(hi[0])], [2.0])
    assert np.allclose(lo[1][np.isfinite(lo[1])], [-1.5]) and np.allclose(hi[1][np.isfinite(hi[1])], [-0.5])


def test_moving_circle_uses_predicted_time(line):
    mc = MovingCircle((40.0, -10.0), 1.0, velocity=(0.0, 2.0))  # reaches the path at t = 5 s
    c = ObstacleCorridor(line, [mc])
    s = np.full(3, 40.0)
    lb, ub = c.bounds(s, t=np.array([0.0, 5.0, 10.0]), e_y0=-1.5)
    assert (lb[0], ub[0]) == (-2.0, 3.0)
    assert ub[1] == pytest.approx(-1.0)
    assert (lb[2], ub[2]) == (-2.0, 3.0)


def test_occupancy_grid_from_array_and_png(tmp_path, line):
    res = 0.1
    occ = np.ones((80, 700))  # y in [-4, 4), x in [-5, 65)
    occ[45:50, 240:260] = 0  # blocked: y in [0.5, 1.0), x in [19, 21)
    g = OccupancyGrid.from_array(occ, origin=(-5.0, -4.0), resolution=res, free_value=1)
    assert g.is_free(0.0, 0.0) and not g.is_free(20.0, 0.7) and not g.is_free(100.0, 0.0)
    lb, ub = ObstacleCorridor(line, grid=g).bounds(np.array([10.0, 20.0, 30.0]), e_y0=2.0)
    assert lb[1] >= 1.0 - 1e-9 and lb[1] <= 1.0 + res and ub[1] == pytest.approx(3.0)
    assert lb[0] == pytest.approx(-2.0) and ub[0] == pytest.approx(3.0)
    from PIL import Image

    img = (occ[::-1] * 255).astype(np.uint8)  # image rows go downwards
    Image.fromarray(img).save(tmp_path / "map.png")
    g2 = OccupancyGrid.from_image(tmp_path / "map.png", origin=(-5.0, -4.0), resolution=res)
    assert np.array_equal(g2.free, g.free)
    assert g2.extent == (-5.0, 65.0, -4.0, 4.0)


def test_grid_and_obstacles_on_bundled_course():
    p = load_path("rc_course")
    c = ObstacleCorridor(p, p.obstacles)
    s = np.linspace(0, p.length, 200, endpoint=False)
    lb, ub = c.bounds(s, e_y0=0.0)
    assert np.all(lb <= ub) and np.all(ub - lb <= 0.6 + 1e-9)
    assert (ub - lb).min() < 0.45  # obstacles narrow it somewhere


def test_car_bounds():
    lo, hi = car_bounds(np.array([-2.0]), np.array([3.0]), 0.9, 0.0, margin=0.1)
    assert (lo[0], hi[0]) == (-1.0, 2.0)
    lo, hi = car_bounds(-2.0, 3.0, 0.9, np.pi / 2, l_front=3.6, l_rear=0.9)
    assert lo == pytest.approx(1.6) and hi == pytest.approx(-0.6)  # does not fit sideways


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: CircleObstacle((0, 0), 0.0), "radius"),
        (lambda: CircleObstacle((0, np.nan), 1.0), "center"),
        (lambda: PolygonObstacle([[0, 0], [1, 0]]), "vertices"),
        (lambda: MovingCircle((0, 0), 1.0, (1,)), "velocity"),
        (lambda: OccupancyGrid.from_array(np.ones((2, 2, 3))), "2-D"),
        (lambda: OccupancyGrid(np.ones((3, 3)), resolution=0), "resolution"),
        (lambda: OccupancyGrid(np.ones((3, 3)), origin=(1,)), "origin"),
        (lambda: ObstacleCorridor(ReferencePath([0, 1], [0, 0]), [object()]), r"obstacles\[0\]"),
    ],
)
def test_bad_input(make, match):
    with pytest.raises(InputError, match=match):
        make()


def test_image_that_is_not_a_grid(tmp_path):
    f = tmp_path / "map.png"
    f.write_text("this is not an image")
    with pytest.raises(PathFormatError, match=r"map\.png: not an occupancy-grid image"):
        OccupancyGrid.from_image(f)
    with pytest.raises(PathFormatError, match="no such file"):
        OccupancyGrid.from_image(tmp_path / "missing.png")
