"""Closed loop: a full lap of the default path, stop reasons, partial results, save/load, bad input."""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import InputError, SettingsError
from mpc_tracking.paths.bundled import DEFAULT_PATH


@pytest.fixture(scope="module")
def default_run():
    path = mt.load_path(DEFAULT_PATH, ds=0.5)
    veh = mt.VehicleParams()
    st = mt.MPCSettings(horizon=30, v_max=12.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0)
    mpc = mt.SpatialMPC(path, veh, st)
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})
    return path, mt.simulate(path, mpc, plant, laps=1, e_y0=1.0)


def test_full_lap_of_default_path(default_run):
    path, res = default_run
    assert res.reason == "completed" and res.success
    assert res.laps_completed == 1
    m = res.metrics
    assert m["lap_completed"] and m["infeasible_steps"] == 0
    # lap time is consistent with the distance driven at the logged speeds
    dt = np.diff(res.t).mean()
    # measured: lap time 2.4e-4 and distance 3.1e-4 relative off (the speed is logged per control step)
    assert res.lap_times[0] == pytest.approx(path.length / np.mean(res.v), rel=1e-3)
    assert abs(np.sum(res.v) * dt - path.length) < 1.5e-3 * path.length
    # converges from the 1 m offset and stays near the centre line
    assert np.abs(res.e_y[res.t > 10]).max() < 0.05  # measured 0.013
    # commands respect the controller's limits
    assert np.abs(res.delta_cmd).max() <= 0.5 + 1e-9
    assert np.all(np.abs(np.diff(res.delta_cmd[1:])) <= 0.6 * 0.05 + 1e-4)  # solver tolerance
    assert res.horizon_xy.shape == (len(res), 31, 2)


def test_result_save_load_roundtrip(default_run, tmp_path):
    _, res = default_run
    f = res.save(tmp_path / "run.npz")
    back = mt.SimulationResult.load(f)
    assert back.reason == res.reason and back.lap_times == res.lap_times
    for k in res.series:
        np.testing.assert_array_equal(back.series[k], res.series[k])
    np.testing.assert_array_equal(back.horizon_xy, res.horizon_xy)
    np.testing.assert_allclose(back.path.x, res.path.x)
    assert back.metrics == res.metrics
    with pytest.raises(InputError, match="no such result file"):
        mt.SimulationResult.load(tmp_path / "missing.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a simulation result"):
        mt.SimulationResult.load(bad)


def _circle(width=3.0):
    th = np.linspace(0, 2 * np.pi, 300, endpoint=False)
    return mt.ReferencePath(20 * np.cos(th), 20 * np.sin(th), closed=True, ds=0.5, width_left=width, width_right=width)


def test_leaving_the_corridor_stops_the_run_with_partial_results():
    path = _circle()
    veh = mt.VehicleParams()
    mpc = mt.SpatialMPC(path, veh, mt.MPCSettings(horizon=20, v_max=8.0))
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})

    class Broken(mt.actuation.Actuator):
        def __call__(self, t, dt, v, delta, plant):
            return np.array([v, -0.4])  # steers the wrong way

    res = mt.simulate(path, mpc, plant, Broken())
    assert res.reason == "left_corridor" and not res.success
    assert len(res) > 5
    assert res.e_y[-1] < -2.0  # drifted out to the right (outside of a left turn)


def test_time_limit_and_plant_failure_reasons():
    path = _circle()
    veh = mt.VehicleParams()
    mpc = mt.SpatialMPC(path, veh, mt.MPCSettings(horizon=20, v_max=8.0))
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})
    res = mt.simulate(path, mpc, plant, t_max=2.0)
    assert res.reason == "time_limit" and res.t[-1] == pytest.approx(2.0, abs=0.06)

    class NaNActuator(mt.actuation.Actuator):
        def __call__(self, t, dt, v, delta, plant):
            return np.array([v, np.nan]) if t > 1.0 else np.array([v, delta])

    res = mt.simulate(path, mpc, plant, NaNActuator())
    assert res.reason == mt.Outcome.ERROR and "finite" in res.message
    assert res.t[-1] >= 1.0


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"laps": 0}, SettingsError, "laps"),
        ({"control_period": -0.1}, SettingsError, "control_period"),
        ({"sim_dt": 0.2}, SettingsError, "sim_dt"),  # more than the controller's 0.05 s period
        ({"control_period": 0.1}, SettingsError, r"MPCSettings\(control_period=0.1\)"),
    ],
)
def test_simulate_bad_input(kwargs, err, match):
    path = _circle()
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=5))
    plant = mt.create_model("kinematic_bicycle")
    with pytest.raises(err, match=match):
        mt.simulate(path, mpc, plant, **kwargs)
    with pytest.raises(InputError, match="plant"):
        mt.simulate(path, mpc, object())


def test_result_plot_kinds_and_animate(default_run, tmp_path):
    _, res = default_run
    for kind in ("track", "timeseries", "path"):
        fig = res.plot(kind)[0]
        assert fig.axes
    with pytest.raises(InputError, match="kind"):
        res.plot("polar")
    short = mt.SimulationResult(
        series={k: v[:40] for k, v in res.series.items()}, horizon_xy=res.horizon_xy[:40], reason=res.reason,
        info=res.info, path=res.path, vehicle=res.vehicle,
    )
    out = short.animate(tmp_path / "run.gif", every=4)
    assert out.stat().st_size > 1000
