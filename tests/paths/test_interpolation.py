"""The one path interpolator: linear, clamped, inf-safe; and a path without widths drives a lap."""
from __future__ import annotations

import numpy as np

import mpc_tracking as mt
from mpc_tracking.paths.interpolation import LinearTable


def test_linear_between_points_and_clamped_at_the_ends():
    table = LinearTable(np.array([0.0, 2.0, 4.0]), np.array([[0.0, 10.0], [4.0, 10.0], [8.0, 0.0]]))
    out = table(np.array([-1.0, 1.0, 3.0, 4.0, 7.0]))
    np.testing.assert_allclose(out, [[0, 10], [2, 10], [6, 5], [8, 0], [8, 0]], atol=1e-15)


def test_infinite_entries_stay_infinite_never_nan():
    inf = np.inf
    table = LinearTable(np.arange(4.0), np.array([[inf, -inf], [inf, -inf], [1.0, -inf], [1.0, 2.0]]))
    out = table(np.array([0.0, 0.5, 1.0, 1.25, 1.75, 2.0, 2.25, 3.0]))
    assert not np.any(np.isnan(out))
    # inf -> inf stays inf; inf -> finite takes the nearer end
    assert np.all(np.isposinf(out[:4, 0])) and np.all(out[4:, 0] == 1.0)
    assert np.all(out[:7, 1] == -inf) and out[7, 1] == 2.0


def test_path_without_widths_interpolates_infinite_widths():
    th = np.linspace(0, 2 * np.pi, 60, endpoint=False)
    path = mt.ReferencePath(20 * np.cos(th), 20 * np.sin(th), closed=True, ds=0.5)
    q = path.interpolate(np.linspace(0.1, path.length - 0.1, 50))
    assert np.all(np.isposinf(q["width_left"])) and np.all(np.isposinf(q["width_right"]))
    assert np.all(np.isfinite(q["kappa"]))


def test_path_without_widths_tracks_a_lap():
    """A user's own centre line without widths: an unbounded corridor that tracks fine."""
    th = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    path = mt.ReferencePath(30 * np.cos(th) + 5 * np.cos(3 * th), 20 * np.sin(th), closed=True, ds=0.5)
    veh = mt.VehicleParams()
    mpc = mt.SpatialMPC(path, veh, mt.MPCSettings(horizon=30, v_max=10.0))
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})
    res = mt.simulate(path, mpc, plant, e_y0=0.5)
    assert res.reason == "completed" and res.metrics["infeasible_steps"] == 0
    # measured: RMS e_y 8.5 cm (the 0.5 m start offset dominates), after 5 s at most 2.7 cm
    assert res.metrics["rms_e_y"] < 0.12
    assert np.max(np.abs(res.e_y[res.t > 5.0])) < 0.06


def test_row_is_the_vectorized_value_at_one_point():
    """``LinearTable.row`` (floats, one query) gives exactly the numbers of the vectorized call."""
    inf = np.inf
    rng = np.random.default_rng(5)
    s = np.array([0.0, 1.0, 1.0, 2.5, 3.0, 4.0])  # with a zero-length segment
    for table in (rng.normal(size=(6, 3)),
                  np.array([[inf, -inf], [inf, 1.0], [2.0, 1.0], [2.0, -inf], [inf, -inf], [1.0, 3.0]])):
        lt = LinearTable(s, table)
        queries = np.concatenate([[-1.0, 0.0, 1.0, 2.5, 4.0, 9.0, 0.75, 1.25, 2.0], rng.uniform(-0.5, 4.5, 200)])
        expected = lt(queries)
        got = np.array([lt.row(float(q)) for q in queries])
        np.testing.assert_array_equal(got, expected)


def test_widths_at_is_interpolate():
    """``ReferencePath.widths_at`` (the closed loop's corridor check) equals ``interpolate``: closed and
    open paths, varying and missing (infinite) widths, arc lengths outside the path."""
    th = np.linspace(0, 2 * np.pi, 60, endpoint=False)
    xy = (20 * np.cos(th), 20 * np.sin(th))
    paths = [mt.ReferencePath(*xy, closed=True, ds=0.5),
             mt.ReferencePath(*xy, closed=True, ds=0.5, width_left=2.0 + np.sin(th), width_right=3.0),
             mt.ReferencePath(np.linspace(0, 50, 30), np.zeros(30), closed=False, ds=0.5,
                              width_left=np.linspace(1, 4, 30), width_right=np.linspace(4, 1, 30))]
    rng = np.random.default_rng(6)
    for path in paths:
        s = np.concatenate([[0.0, path.length, -3.0, path.length + 3.0], path.s, rng.uniform(-10, path.length + 10, 300)])
        q = path.interpolate(s)
        got = np.array([path.widths_at(float(v)) for v in s])
        np.testing.assert_array_equal(got[:, 0], q["width_left"])
        np.testing.assert_array_equal(got[:, 1], q["width_right"])
