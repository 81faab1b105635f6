"""Geometry sanity of reference paths (issue 12): bad ds, degenerate, tiny, reversing paths and too wide corridors.

Every refused input raises a PathError (an InputError, exit 2 in the CLI) naming the argument, the
value and what is allowed; a corridor wider than the inside radius only logs a warning.
"""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.cli.main import main
from mpc_tracking.errors import InputError, PathError, PathFormatError
from mpc_tracking.paths import ReferencePath, load_path
from mpc_tracking.paths._checks import MIN_LENGTH, MIN_WAYPOINTS

LOGGER = "mpc_tracking.paths.reference_path"
SQUARE = [[0, 0], [10, 0], [10, 10], [0, 10]]


def circle(R, n=100, center=(0.0, 0.0), cw=False):
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    if cw:
        a = -a
    return center[0] + R * np.cos(a), center[1] + R * np.sin(a)


# ---------------------------------------------------------------- ds must be finite and > 0
BAD_DS = [0, 0.0, -1.0, float("nan"), float("inf"), "abc"]


@pytest.mark.parametrize("ds", BAD_DS)
def test_load_path_refuses_bad_ds(ds):
    with pytest.raises(PathError, match=r"^ds: expected a (finite )?waypoint spacing > 0 m, got "):
        load_path("oval", ds=ds)


def test_load_path_ds_zero_is_not_one_metre():
    # used to be read as "ds or 1.0" and give a 1 m path
    with pytest.raises(PathError, match=r"ds: .*> 0 m, got 0"):
        mt.load_path("oval", ds=0)


@pytest.mark.parametrize("ds", BAD_DS)
def test_constructors_refuse_bad_ds(ds):
    x, y = circle(10.0)
    with pytest.raises(PathError, match=r"^ds: "):
        ReferencePath(x, y, ds=ds, closed=True)
    with pytest.raises(PathError, match=r"^ds: "):
        ReferencePath.from_corners(SQUARE, ds=ds, closed=True)


# ---------------------------------------------------------------- ds vs path length
def test_ds_larger_than_the_path_allows():
    with pytest.raises(PathFormatError, match=r"oval\.\w+: ds: 1000 m gives 0 waypoints on this closed path of "
                                              r"length 245\.66\d* m; at least 8 are needed, so ds must be <= 30\.7"):
        load_path("oval", ds=1000)
    with pytest.raises(PathError, match=r"ds: 5 m gives 5 waypoints on this open path of length 18\.8"):
        ReferencePath.from_corners([[0, 0], [10, 0], [10, 10]], ds=5)
    with pytest.raises(PathError, match=r"ds: 3 m gives 4 waypoints on this open path of length 10 m"):
        ReferencePath([0, 10], [0, 0], ds=3)


def test_ds_at_the_limit_is_accepted():
    p = ReferencePath([0, 14], [0, 0], ds=2.0)  # 8 waypoints
    assert p.n == MIN_WAYPOINTS
    x, y = circle(10.0)
    length = ReferencePath(x, y, closed=True, ds=0.5).length
    assert ReferencePath(x, y, closed=True, ds=length / MIN_WAYPOINTS).n == MIN_WAYPOINTS


# ---------------------------------------------------------------- degenerate geometry
def test_fewer_than_two_distinct_points():
    with pytest.raises(PathError, match=r"ReferencePath\(x, y\): an open path needs at least 2 distinct points, got 1"):
        ReferencePath([1, 1, 1], [2, 2, 2])
    with pytest.raises(PathError, match=r"points: a closed path needs at least 3 distinct points, got 2"):
        ReferencePath.from_corners([[0, 0], [1, 0], [1, 0]], closed=True)


@pytest.mark.parametrize("eps", [0.0, 1e-9])
def test_collinear_closed_loop(eps):
    with pytest.raises(PathError, match=r"ReferencePath\(x, y\): closed=True but all 3 points lie on one line"):
        ReferencePath([0, 1, 2], [0, eps, 0], closed=True)
    with pytest.raises(PathError, match=r"points: closed=True but all 4 points lie on one line.*closed=False"):
        ReferencePath.from_corners([[0, 0], [1, 0], [2, eps], [3, 0]], closed=True)


def test_collinear_open_line_is_fine():
    p = ReferencePath([0, 1, 2], [0, 0, 0], ds=0.1)
    assert p.n == 21 and math.isclose(p.length, 2.0)


def test_tiny_loop_absolute_floor():
    x, y = circle(0.6e-3 / (2 * np.pi), n=50)  # a 0.6 mm loop
    with pytest.raises(PathError, match=r"the path is 0\.0006 m long; a path must be at least 0\.001 m long"):
        ReferencePath(x, y, closed=True, ds=1e-5)
    assert MIN_LENGTH == 1e-3
    x, y = circle(1.2e-3 / (2 * np.pi), n=50)  # 1.2 mm: allowed
    assert ReferencePath(x, y, closed=True, ds=1e-4).length > MIN_LENGTH


def test_tiny_loop_relative_floor():
    x, y = circle(0.5 / (2 * np.pi), n=40, center=(1e7, 0.0))  # 0.5 m loop at 1e7 m coordinates
    with pytest.raises(PathError, match=r"0\.499 m long; a path must be at least 1e-07 x the largest coordinate 1e\+07 m = 1 m long"):
        ReferencePath(x, y, closed=True, ds=0.01)


def test_tiny_corner_path():
    with pytest.raises(PathError, match=r"points: the path is 0\.000188 m long; a path must be at least 0\.001 m"):
        ReferencePath.from_corners([[0, 0], [1e-4, 0], [1e-4, 1e-4]], ds=1e-5)


# ---------------------------------------------------------------- reversals
def test_reversal_is_refused_with_its_place():
    with pytest.raises(PathError, match=r"ReferencePath\(x, y\): the path reverses onto itself at s = 3\.0\d* m "
                                        r"\(waypoint 30 of 51, .*near input point 4\).*turns by 180\.0 deg"):
        ReferencePath([0, 1, 2, 3, 2, 1], [0, 0, 0, 0, 0, 0], ds=0.1)


def test_reversal_with_a_tiny_sideways_offset():
    with pytest.raises(PathError, match=r"reverses onto itself at s = 3\.0"):
        ReferencePath([0, 1, 2, 3, 2.5, 2, 1.5], [0, 0, 0, 0, 1e-3, 0, 0], ds=0.1)


def test_reversal_in_stored_waypoints():
    s = np.arange(11.0)
    x = np.r_[np.arange(6.0), 4.0 - np.arange(5.0)]  # forward to 5, then back to 0
    with pytest.raises(PathError, match=r"from_waypoints: the path reverses onto itself at s = 5 m \(waypoint 5"):
        ReferencePath.from_waypoints(s, x, np.zeros(11), np.zeros(11), np.zeros(11))


def test_reversal_in_a_file_names_the_file(tmp_path):
    f = tmp_path / "back.csv"
    f.write_text("x,y\n0,0\n1,0\n2,0\n3,0\n2,0\n1,0\n")
    with pytest.raises(PathFormatError, match=r"back\.csv: ReferencePath\(x, y\): the path reverses onto itself"):
        load_path(f, ds=0.1, closed=False)


def test_hairpins_are_not_reversals():
    # a real hairpin (legs 1 m apart), also sampled coarsely
    p = ReferencePath([0, 1, 2, 3, 3.5, 3, 2, 1, 0], [0, 0, 0, 0, 0.5, 1, 1, 1, 1], ds=0.1)
    assert np.ptp(p.psi) > 3.0
    ReferencePath([0, 10, 20, 30, 30.5, 30, 20, 10, 0], [0, 0, 0, 0, 0.5, 1, 1, 1, 1], ds=1.0)
    ReferencePath.from_corners([[0, 0], [20, 0], [20, 1], [0, 1]], closed=True, radius=0.35, ds=0.5)
    load_path("hairpin_slalom")


# ---------------------------------------------------------------- corridor vs curvature (warning)
def test_corridor_wider_than_the_inside_radius_warns(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    x, y = circle(20.0)  # counter-clockwise: the inside is the left
    p = ReferencePath(x, y, closed=True, ds=0.5, width_left=30.0, width_right=30.0, name="ring")
    assert p.has_widths
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(msgs) == 1, msgs
    m = msgs[0]
    assert "path 'ring'" in m and "s = 0 m" in m and "width_left = 30 m >= radius 19.99 m" in m
    assert "width_inside x |kappa| < 1" in m and f"{p.n} of {p.n} waypoints" in m


def test_corridor_inside_of_a_right_turn_is_the_right_width(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    x, y = circle(20.0, cw=True)
    ReferencePath(x, y, closed=True, ds=0.5, width_left=30.0, width_right=5.0)  # outside: fine
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    ReferencePath(x, y, closed=True, ds=0.5, width_left=5.0, width_right=25.0)
    [rec] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "width_right = 25 m >= radius 19.99 m" in rec.getMessage()


def test_corridor_warning_on_stored_waypoints(caplog):
    caplog.set_level(logging.WARNING, logger=LOGGER)
    p = ReferencePath(*circle(20.0), closed=True, ds=0.5)
    ReferencePath.from_waypoints(p.s, p.x, p.y, p.psi, p.kappa, width_left=10.0, width_right=10.0,
                                 closed=True, length=p.length)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    ReferencePath.from_waypoints(p.s, p.x, p.y, p.psi, p.kappa, width_left=21.0, width_right=10.0,
                                 closed=True, length=p.length, name="w")
    [rec] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "path 'w'" in rec.getMessage() and "width_left = 21 m" in rec.getMessage()


# ---------------------------------------------------------------- CLI and scenario
@pytest.mark.parametrize(
    "ds, match",
    [("0", r"ds: expected a finite waypoint spacing > 0 m, got 0"),
     ("-2", r"ds: expected a finite waypoint spacing > 0 m, got -2"),
     ("nan", r"--ds: expected a finite number m, got 'nan'"),  # the flag's type (argparse, exit 2)
     ("1000", r"ds: 1000 m gives 0 waypoints .* ds must be <= 30\.7")],
)
def test_cli_path_show_bad_ds_exit_2(ds, match, capsys, tmp_path):
    try:
        code = main(["path", "show", "oval", "--ds", ds, "--out", str(tmp_path / "p.png")])
    except SystemExit as exc:  # a usage error of the flag
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    import re

    assert re.search(match, err), err
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("path_yaml", [
    "{source: oval, ds: 0}",
    "{corners: [[0, 0], [10, 0], [10, 10], [0, 10]], closed: true, ds: 0}",
])
def test_scenario_path_ds_zero_exit_2(path_yaml, capsys, tmp_path):
    sc = tmp_path / "sc.yaml"
    sc.write_text(f"path: {path_yaml}\n")
    assert main(["run", str(sc), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "ds: expected a finite waypoint spacing > 0 m, got 0" in err


def test_errors_are_input_errors():
    with pytest.raises(InputError):
        load_path("oval", ds=0)
    with pytest.raises(ValueError):
        ReferencePath([0, 1, 2], [0, 0, 0], closed=True)
