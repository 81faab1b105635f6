"""Issue 26 (item 2): every fit that moves the path more than a tolerance from an input point warns,
with the point, its file and line and the distance; a few sparse points are not called noise."""
from __future__ import annotations

import logging
import re

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.paths.builder import FIT_TOLERANCE, fit_tolerance


def _write(tmp_path, name, pts):
    f = tmp_path / name
    f.write_text("x,y\n" + "".join(f"{a:.6f},{b:.6f}\n" for a, b in pts))  # point i is on line i + 2
    return f


def _strays(caplog):
    return [r for r in caplog.records if "strays" in r.getMessage() and r.levelno == logging.WARNING]


def _parking_lot() -> np.ndarray:
    rng = np.random.default_rng(3)
    t = np.linspace(0, 2 * np.pi, 12, endpoint=False)
    return np.column_stack([25 * np.cos(t) + rng.normal(0, 1.0, 12), 15 * np.sin(t) + rng.normal(0, 1.0, 12)])


def test_twelve_sparse_points_are_interpolated_and_the_overshoot_is_warned_with_its_line(tmp_path, caplog):
    f = _write(tmp_path, "parking.csv", _parking_lot())
    with caplog.at_level(logging.WARNING, logger="mpc_tracking"):
        path = mt.load_path(f)
    assert path.smoothing == 0.0  # was: called "noisy 1.47 m" and smoothed 2.08 m RMS, 3.8 m off a point, silent
    assert "noisy" not in caplog.text
    (msg,) = [r.getMessage() for r in _strays(caplog)]
    i = path.fit_deviation_index
    assert f"input point {i} " in msg and f"{f}:{i + 2}" in msg  # the point, the file and its line
    assert f"{path.fit_deviation:.3g} m" in msg and path.fit_deviation > FIT_TOLERANCE  # the amount


def test_a_smoothing_chosen_from_the_noise_is_warned_when_it_moves_a_point(tmp_path, caplog):
    rng = np.random.default_rng(1)
    t = np.linspace(0, 2 * np.pi, 300, endpoint=False)
    trace = np.column_stack([50 * np.cos(t), 30 * np.sin(t)]) + rng.normal(0, 0.3, (300, 2))
    f = _write(tmp_path, "gps.csv", trace)
    with caplog.at_level(logging.WARNING, logger="mpc_tracking"):
        path = mt.load_path(f, closed=True)
    assert path.smoothing > 0  # measured noise: smoothed
    (msg,) = [r.getMessage() for r in _strays(caplog)]
    assert "chosen from the measured noise" in msg and "smoothing=0" in msg
    line = int(re.search(rf"{re.escape(str(f))}:(\d+)", msg).group(1))
    assert line == path.fit_deviation_index + 2
    # the distance named is the distance of that point from the path
    d = abs(path.project(*trace[path.fit_deviation_index]).e_y)
    assert d == pytest.approx(path.fit_deviation, abs=0.05)
    # a smoothing the caller asked for gets its allowance: no warning for the same fit
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mpc_tracking"):
        mt.load_path(f, closed=True, smoothing=path.smoothing)
    assert not _strays(caplog) and path.fit_deviation < fit_tolerance(path.smoothing)


def test_corners_recognised_from_the_data_warn_how_far_the_rounding_moves_the_path(tmp_path, caplog):
    f = _write(tmp_path, "block.csv", [[0, 0], [100, 0], [100, 60], [0, 60]])
    with caplog.at_level(logging.WARNING, logger="mpc_tracking"):
        path = mt.load_path(f)
    msg = next(r.getMessage() for r in caplog.records if "corners of a polygon" in r.getMessage())
    assert f"{path.fit_deviation:.3g} m" in msg and "corners=False" in msg
    assert f"{f}:{path.fit_deviation_index + 2}" in msg
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mpc_tracking"):
        mt.load_path(f, corner_radius=10.0, closed=True)  # asked for: no warning
    assert not caplog.records


def test_paths_keep_their_input_points():
    x = np.linspace(0, 50, 30)
    p = mt.ReferencePath(x, np.sin(x / 8), ds=0.5)
    assert np.array_equal(p.input_points, np.column_stack([x, np.sin(x / 8)]))
    assert mt.ReferencePath.from_waypoints(p.s, p.x, p.y, p.psi, p.kappa).input_points is None
