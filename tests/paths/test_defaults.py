"""Issue 26 (item 1): a path is a loop only when its data say so unambiguously, the decision is
warned with the override, and one set of defaults (closed, ds, corner radius) holds for every way in."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.paths.defaults import (
    DEFAULT_DS,
    closure,
    default_corner_radius,
    default_ds,
)


def _out_and_back() -> np.ndarray:
    """The issue's reproducer: 20 points along y = 0, a half circle of radius 2 at x = 40, 20 points back along y = 4."""
    x = np.linspace(0.0, 40.0, 20)
    t = np.linspace(-np.pi / 2, np.pi / 2, 15)[1:-1]
    return np.vstack([np.column_stack([x, 0 * x]), np.column_stack([40 + 2 * np.cos(t), 2 + 2 * np.sin(t)]),
                      np.column_stack([x[::-1], 4 + 0 * x])])


def _write(tmp_path, name, pts):
    f = tmp_path / name
    f.write_text("x,y\n" + "".join(f"{a:.6f},{b:.6f}\n" for a, b in pts))
    return f


def test_the_out_and_back_route_stays_open_and_says_how_to_close_it(tmp_path, caplog):
    f = _write(tmp_path, "route.csv", _out_and_back())
    with caplog.at_level(logging.WARNING, logger="mpc_tracking"):
        path = mt.load_path(f)
    assert not path.closed
    warned = [r for r in caplog.records if "read as an open path" in r.getMessage()]
    assert warned and warned[0].levelno == logging.WARNING  # seen at the default log level
    assert "closed=True" in warned[0].getMessage() and str(f) in warned[0].getMessage()
    assert "90 deg" in warned[0].getMessage()  # why: the closing segment would cross over at right angles
    assert mt.load_path(f, closed=True).closed  # the override
    # the open route is the length of its points (no made-up closing arc)
    assert path.length == pytest.approx(2 * 40 + 2 * np.pi, rel=0.02)


def test_a_typed_loop_closes_with_a_warning_naming_the_override(tmp_path, caplog):
    th = np.linspace(0.0, 2 * np.pi, 40, endpoint=False)
    f = _write(tmp_path, "loop.csv", np.column_stack([30 * np.cos(th), 20 * np.sin(th)]))
    with caplog.at_level(logging.WARNING, logger="mpc_tracking"):
        assert mt.load_path(f).closed
    assert "read as a closed loop" in caplog.text and "closed=False" in caplog.text


@pytest.mark.parametrize("points, closed", [
    ([[0, 0], [80, 0], [80, 40], [0, 40]], True),          # a typed rectangle: every corner turns 90 deg
    ([[0, 0], [10, 0], [0, 10]], True),                    # a typed triangle
    ([[0, 0], [100, 0], [100, 100]], False),               # an L: the closing edge would turn 135 deg
    ([[0, 0], [50, 0], [50, 4], [0, 4]], True),            # a thin rectangle: ambiguous, closes like a typed one
    ([[0, 0], [50, 0], [100, 0]], False),                  # a line
])
def test_closure_of_corner_polygons(points, closed):
    assert closure(np.asarray(points, float)).closed is closed


def test_closure_of_dense_traces():
    th = np.linspace(0.0, 2 * np.pi, 200)
    circle = np.column_stack([np.cos(th), np.sin(th)]) * 50
    assert closure(circle).closed  # the first point repeated
    assert closure(circle[:-1]).closed  # not repeated
    assert not closure(circle[:-12]).closed  # a gap of 12 spacings
    assert not closure(_out_and_back()).closed
    # a loop whose last point overshoots past the first: the closing segment points backwards
    assert not closure(np.vstack([circle[:-1], circle[1:3]])).closed


def test_from_corners_defaults_are_those_of_files_and_scenarios():
    rect = [[0, 0], [80, 0], [80, 40], [0, 40]]
    p = mt.ReferencePath.from_corners(rect)
    assert p.closed and p.ds == pytest.approx(DEFAULT_DS, rel=1e-3)  # was: open, ds 0.1 (three sides driven)
    assert np.max(np.abs(p.kappa)) >= 1 / default_corner_radius(np.asarray(rect, float), True) - 1e-9
    three_sides = mt.ReferencePath.from_corners(rect, closed=False)
    assert not three_sides.closed and p.length > three_sides.length + 20  # the fourth side (40 m less its corners) is driven


def test_default_ds_is_finer_on_short_paths_only():
    assert default_ds(1000.0) == DEFAULT_DS
    assert default_ds(10.0) == pytest.approx(0.1)
    small = mt.ReferencePath.from_corners([[0, 0], [3, 0], [3, 2], [0, 2]])  # an RC course: 100 waypoints
    assert small.closed and 80 <= small.n <= 110
