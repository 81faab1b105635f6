"""The brake test (issue 21): while the grip estimate is unconfirmed, one hard braking on the first straight
(:mod:`mpc_tracking.mpc.grip_probe`) -- when it runs, what it commands, when it stops, that it runs once."""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.models.prediction import DynamicPrediction
from mpc_tracking.models.prediction import spatial_dynamic as sd
from mpc_tracking.mpc import grip_probe

T = 0.05  # control period [s]
STRAIGHT = 300.0  # [m] of straight before the turn


@pytest.fixture(scope="module")
def params() -> sd.DynamicParams:
    return sd.DynamicParams.bmw_320i()


def _path() -> mt.ReferencePath:
    """A straight of 300 m into a left turn of radius 40 m."""
    th = np.linspace(0.0, np.pi, 126)[1:]
    x = np.concatenate([np.linspace(0.0, STRAIGHT, 301), STRAIGHT + 40.0 * np.sin(th)])
    y = np.concatenate([np.zeros(301), 40.0 - 40.0 * np.cos(th)])
    return mt.ReferencePath(x, y, closed=False, ds=1.0, width_left=5.0, width_right=5.0)


def _mpc(params, **settings) -> mt.SpatialMPC:
    st = mt.MPCSettings(prediction_model="dynamic", horizon=20, ds=1.0, v_max=30.0, a_y_max=8.0, decel_max=8.0,
                        accel_max=3.0, friction_ellipse=True, brake_decel=6.0, grip_estimation=True, grip_mu=1.0,
                        **settings)
    return mt.SpatialMPC(_path(), mt.VehicleParams(wheelbase=params.wheelbase), st, prediction=DynamicPrediction(params))


def _cruise(v: float) -> dict[str, float]:
    return {"v_x": v, "v_y": 0.0, "r": 0.0, "speed": v}


def test_the_first_straight_step_brakes_at_decel_max_and_the_command_follows(params):
    mpc = _mpc(params)
    probe = mpc.grip.probe
    assert probe is not None and probe.armed  # on by default with grip estimation
    sol = mpc.solve((20.0, 0.0, 0.0), t=0.0, measured=_cruise(20.0))
    i = mpc.model.I_ACCEL
    assert probe.started == 0.0 and not probe.armed
    d = mpc.settings.decel_max  # the limit in use: 8 less the plan's confidence margin until grip is confirmed
    assert 7.8 < d <= 8.0 and sol.u[0, i] == -d
    assert (sol.v, sol.delta) == mpc.model.command(sol.x, sol.u)  # the speed command brakes with it
    assert sol.x[1, 3] == pytest.approx(np.sqrt(20.0**2 - 2.0 * d * (sol.s[1] - sol.s[0])))  # braked over one step
    assert sol.v == sol.x[1, 3]  # no speed lag to lead: the command is the plan's next speed
    assert mpc._u_prev[i] == -d and mpc._accel_cmd() == -d  # what the estimate compares the car's a_x to
    np.testing.assert_array_equal(mpc._cmd_prev, [sol.v, sol.delta])


def test_it_runs_for_grip_probe_time_then_never_again_until_reset(params):
    mpc = _mpc(params, grip_probe_time=0.3)
    i = mpc.model.I_ACCEL
    braked = []
    v = 20.0
    for k in range(30):  # the car brakes as commanded: the road gives it, nothing slides or confirms
        sol = mpc.solve((20.0 + k * v * T, 0.0, 0.0), t=k * T, measured=_cruise(v))
        braked.append(sol.u[0, i] == -mpc.settings.decel_max)
    assert braked[:6] == [True] * 6 and not any(braked[6:])  # 0, 0.05, ..., 0.25 s: 0.3 s
    assert mpc.grip.probe.done == (0.0, pytest.approx(0.3))
    mpc.reset()
    assert mpc.grip.probe.armed and mpc.grip.probe.done is None
    sol = mpc.solve((20.0, 0.0, 0.0), t=0.0, measured=_cruise(20.0))
    assert sol.u[0, i] == -mpc.settings.decel_max


def test_a_reading_ends_it_and_a_road_read_before_skips_it(params):
    """Braking short of the command (the road gives 4 of 8 m/s^2) is read within the test and ends it; an estimate
    that moved before the first straight (a slide read in a corner) leaves nothing to test."""
    mpc = _mpc(params, grip_probe_time=2.0)
    i = mpc.model.I_ACCEL
    v = 25.0
    n = 0
    for k in range(40):
        sol = mpc.solve((20.0 + k, 0.0, 0.0), t=k * T, measured=_cruise(v))
        if sol.u[0, i] != -mpc.settings.decel_max:
            break
        n += 1
        v -= 4.0 * T  # the road gives half the command
    est = mpc.grip.last
    assert est.decel_held == pytest.approx(4.0, abs=0.05) and mpc.grip.probe.done is not None
    assert 3 <= n <= 10  # ended at the reading (GRIP_SUSTAIN_SAMPLES steady samples), long before 2 s

    mpc = _mpc(params)
    for k in range(3):  # a slide in a corner: 7 m/s^2 at 0.2 rad of steering, where the model asks 11
        mpc.grip.step(k * T, {"v_x": 20.0, "v_y": 0.0, "r": 0.35}, 0.2, None)
    assert mpc.grip.last.sliding and mpc.grip.last.mu < 0.8
    sol = mpc.solve((20.0, 0.0, 0.0), t=3 * T, measured=_cruise(20.0))
    assert sol.u[0, i] != -mpc.settings.decel_max and not mpc.grip.probe.armed and mpc.grip.probe.done is None


@pytest.mark.parametrize("case", ["slow", "turn ahead", "braking plan", "off"])
def test_it_waits_for_speed_a_straight_and_a_plan_that_does_not_brake(params, case):
    mpc = _mpc(params, grip_probe=case != "off")
    i = mpc.model.I_ACCEL
    s0, meas = 20.0, _cruise(20.0)
    if case == "slow":
        meas = _cruise(grip_probe.PROBE_MIN_SPEED - 1.0)
    elif case == "turn ahead":  # the test's 0.8 s at 12 m/s reach the turn (3.6 m/s^2 there: not a straight)
        s0, meas = STRAIGHT - 6.0, _cruise(12.0)
    elif case == "braking plan":  # a car far too fast for the turn: the plan brakes already
        mpc.settings = mpc.qp.settings = mpc.safeguards.settings = mpc.settings.replace(v_max=40.0)
        s0, meas = STRAIGHT - 60.0, _cruise(30.0)
    sol = mpc.solve((s0, 0.0, 0.0), t=0.0, measured=meas)
    if case == "braking plan":
        assert sol.u[:, i].min() < -1.0
    elif case == "turn ahead":
        assert sol.u[:, i].min() > -1.0  # the turn alone holds it back: the plan does not brake for it
    assert sol.u[0, i] != -mpc.settings.decel_max
    probe = mpc.grip.probe
    assert probe is None if case == "off" else (probe.armed and probe.started is None)


def test_the_dynamic_model_s_defaults_run_it_and_the_kinematic_model_has_none(params):
    assert mt.MPCSettings().grip_probe and mt.MPCSettings().grip_probe_time == 0.6
    kin = mt.SpatialMPC(_path(), mt.VehicleParams(), mt.MPCSettings())
    assert kin.grip is None  # no tyres, nothing to estimate or test


@pytest.mark.parametrize("bad, match", [({"grip_probe_time": 0.0}, "grip_probe_time"),
                                        ({"grip_probe_time": float("nan")}, "grip_probe_time"),
                                        ({"grip_probe": "yes"}, "grip_probe")])
def test_bad_settings_name_the_field(bad, match):
    with pytest.raises(mt.SettingsError, match=match):
        mt.MPCSettings(**bad)


def _hairpin(straight: float = 400.0, radius: float = 25.0, half_width: float = 4.0) -> mt.ReferencePath:
    """A straight into a hairpin and a straight back (open)."""
    th = np.linspace(0.0, np.pi, int(np.pi * radius))[1:]
    x = np.concatenate([np.linspace(0.0, straight, int(straight) + 1), straight + radius * np.sin(th),
                        np.linspace(straight, straight - 300.0, 301)[1:]])
    y = np.concatenate([np.zeros(int(straight) + 1), radius - radius * np.cos(th), np.full(300, 2.0 * radius)])
    return mt.ReferencePath(x, y, closed=False, ds=1.0, width_left=half_width, width_right=half_width)


@pytest.mark.parametrize("probe", [True, False])
def test_the_dry_file_on_a_wet_road_reads_it_before_the_first_braking_zone(identified_sedan, probe):
    """The sedan's dry vehicle file (mu 0.9) on a mu 0.6 road, at the dry pace (40 m/s) down a 400 m straight into
    a hairpin of 25 m (default settings as a scenario resolves them). The brake test reads the road 0.15-0.35 s into
    the run and the car brakes for the hairpin at the wet pace: 0.1 m off the line. Without it the braking zone reads
    the road only once the car brakes at the dry pace, too late: 3.4 m off the line, 0.55 m past the edge."""
    from mpc_tracking.scenario.defaults import grip_defaults

    path, ident = _hairpin(), identified_sedan
    car = mt.create_model("ackermann3d", {"preset": "sedan", "mu": 0.6})
    act = mt.actuation.default_actuator(car)
    st = grip_defaults(mt.MPCSettings(v_max=40.0, grip_mu=0.9), car, act, ident, path.ds, "test")
    mpc = mt.SpatialMPC(path, mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95),
                        st.replace(grip_probe=probe), prediction=DynamicPrediction(ident.params, speed_lag=act.speed_lag))
    res = mt.simulate(path, mpc, car, act)
    assert res.reason == "end_of_path" and res.series["v"][0] == pytest.approx(40.0, abs=0.01)
    if probe:
        start, end = mpc.grip.probe.done
        assert start < 0.5 and end - start < 0.5  # read within the test, long before its 0.6 s
        assert res.metrics["max_body_overshoot"] == 0.0 and res.metrics["max_abs_e_y"] < 0.5
        # read against the car's braking through its ABS (grip_brake_limit: the vehicle file's decel_max)
        after = res.series["mu_est"][np.searchsorted(res.series["t"], end)]
        assert after == pytest.approx(0.6, rel=0.05)
    else:
        assert res.metrics["max_abs_e_y"] > 2.0  # ran wide in the hairpin


def test_read_against_the_cars_braking_limit_the_test_reads_the_road(identified_sedan):
    """The same run with grip_brake_limit at its default, the vehicle file's decel_max (the car's braking through
    its own ABS, which holds the wheels at 0.9 of their peak on every road), against it unset (the tyre peak): the
    brake test reads the road within 5 % instead of 0.52, and the lap is no slower."""
    from mpc_tracking.scenario.defaults import grip_defaults

    path, ident = _hairpin(), identified_sedan
    out = {}
    for limit in (None, ident.decel_max):
        car = mt.create_model("ackermann3d", {"preset": "sedan", "mu": 0.6})
        act = mt.actuation.default_actuator(car)
        st = grip_defaults(mt.MPCSettings(v_max=40.0, grip_mu=0.9), car, act, ident, path.ds, "test")
        assert st.grip_brake_limit == ident.decel_max
        st = st.replace(grip_brake_limit=limit)
        mpc = mt.SpatialMPC(path, mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95), st,
                            prediction=DynamicPrediction(ident.params, speed_lag=act.speed_lag))
        res = out[limit] = mt.simulate(path, mpc, car, act)
        assert res.reason == "end_of_path" and res.metrics["max_body_overshoot"] == 0.0
        after = res.series["mu_est"][np.searchsorted(res.series["t"], mpc.grip.probe.done[1])]
        assert (after == pytest.approx(0.6, rel=0.05)) if limit else (0.5 < after < 0.55)
    # the tyre peak's low reading is a lower bound: the hairpin probes it up, and the lap is hardly slower
    assert out[ident.decel_max].series["t"][-1] <= out[None].series["t"][-1]
