"""The steering's rate limit: measured by identification's steering steps, carried by the vehicle file,
planned within by the controller's defaults (issue 20: the CommonRoad drift model, whose wheels turn at
most 0.4 rad/s, left the track at 36 m/s while the MPC planned steering it could not follow)."""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest
import yaml

import mpc_tracking as mt
from mpc_tracking.errors import IdentificationError, VehicleFileError
from mpc_tracking.identification import VehicleFile, identify, load_vehicle_file
from mpc_tracking.identification.manoeuvres import Recording
from mpc_tracking.identification.steering import RATE_RATIO, fit_steering, rise_time
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
from mpc_tracking.scenario.defaults import STEER_RATE_SHARE, grip_defaults
from tests.identification.plants import commonroad_std

L, V, DT, T_STEP = 2.5, 5.0, 0.005, 1.0


# ---------------------------------------------------------------------- the measurement on known responses
def _response(t: np.ndarray, amplitude: float, rate: float, lag: float) -> np.ndarray:
    """Wheel angle after a step of ``amplitude`` at T_STEP through a rate limit then a first-order lag
    (integrated finely; ``rate`` inf / ``lag`` 0: none)."""
    out = np.zeros_like(t)
    limited, wheel = 0.0, 0.0
    for i in range(1, t.size):
        h = t[i] - t[i - 1]
        target = amplitude if t[i - 1] >= T_STEP else 0.0
        limited += float(np.clip(target - limited, -rate * h, rate * h))
        wheel = limited if lag == 0 else wheel + (limited - wheel) * (1.0 - math.exp(-h / lag))
        out[i] = wheel
    return out


def _recording(amplitude: float, rate: float = math.inf, lag: float = 0.0, end: float = 4.0,
               name: str = "steering_step") -> Recording:
    """What a car rolling without slip at V shows for that wheel angle: r = V tan(delta) / L."""
    t = np.arange(0.0, end, DT)
    wheel = _response(t, amplitude, rate, lag)
    cmd = np.where(t >= T_STEP, amplitude, 0.0)
    return Recording(name, "steering", t, np.full(t.size, V), np.zeros(t.size), V * np.tan(wheel) / L,
                     np.full(t.size, V), cmd)


def test_rise_time_of_a_ramp_and_of_a_first_order_lag():
    t = np.arange(0.0, 3.0, 1e-4)
    ramp = np.clip((t - 0.5) / 0.8, 0.0, 1.0)
    assert rise_time(t, ramp, 0.5) == pytest.approx(0.4 * 0.8, abs=1e-6)
    tau = 0.2
    lag = np.where(t >= 0.5, 1.0 - np.exp(-(t - 0.5) / tau), 0.0)
    assert rise_time(t, lag, 0.5) == pytest.approx(tau * math.log(7.0 / 3.0), rel=1e-4)


@pytest.mark.parametrize("rate, lag", [(0.4, 0.0), (0.4, 0.03), (0.25, 0.05), (1.0, 0.01)])
def test_a_rate_limit_is_recovered_through_a_lag(rate, lag):
    fit = fit_steering(_recording(0.1, rate, lag), _recording(0.05, rate, lag, name="half"), 0.1, L)
    assert fit.rise_large > RATE_RATIO * fit.rise_small
    assert fit.rate_max == pytest.approx(rate, rel=0.02)


@pytest.mark.parametrize("lag", [0.03, 0.1])
def test_a_pure_lag_is_not_a_rate_limit(lag):
    fit = fit_steering(_recording(0.1, lag=lag), _recording(0.05, lag=lag, name="half"), 0.1, L)
    assert fit.rate_max is None
    assert fit.lag == pytest.approx(lag, rel=0.02)


def test_a_step_that_has_not_settled_is_named():
    slow = _recording(0.1, rate=0.04, end=3.0)  # needs 2.5 s of its 2 s
    with pytest.raises(IdentificationError, match="steering_step: the steering had not settled"):
        fit_steering(slow, _recording(0.05, name="half"), 0.1, L)


def test_a_car_that_does_not_turn_is_named():
    rec = _recording(0.1)
    rec.r[:] = 0.0
    with pytest.raises(IdentificationError, match="steering_step: the car did not turn"):
        fit_steering(rec, _recording(0.05, name="half"), 0.1, L)


@pytest.mark.parametrize("V, L, expect", [
    (17.6, 2.58, 0.3 * 17.6),  # 0.3 V: the full 0.1 rad step turns at 0.14 g
    (30.0, 2.58, math.sqrt(2.58 * 0.15 * 9.81 / math.tan(0.1))),  # capped: the full step at 0.15 g
    (1.6, 0.26, 0.3 * 1.6),  # the RC car at its lowered speed
])
def test_steering_steps_keep_their_full_amplitude(V, L, expect):
    from mpc_tracking.identification.core import STEER_STEP_MAX, steering_step_speed
    from mpc_tracking.identification.manoeuvres import Scale

    scale = Scale(L, V, 0.01, 9.81)
    v = steering_step_speed(scale)
    assert v == pytest.approx(expect, rel=1e-12)
    assert min(STEER_STEP_MAX, scale.steer_for(0.15 * 9.81, v)) == pytest.approx(STEER_STEP_MAX)


# ---------------------------------------------------------------------- vehicle file and defaults
def _file(tmp_path, **kw):
    vf = VehicleFile(DynamicParams.bmw_320i(), 0.3, 4.0, 7.0, a_y_max=8.0, **kw)
    return vf, vf.to_yaml(tmp_path / "car.yaml")


def test_steering_rate_round_trip_and_older_files(tmp_path):
    _, f = _file(tmp_path, steering_rate_max=0.4)
    data = yaml.safe_load(f.read_text())
    assert data["steering_rate_max"] == 0.4
    assert load_vehicle_file(f).steering_rate_max == 0.4
    del data["steering_rate_max"]  # a file from before the steering steps: not limited
    f.write_text(yaml.safe_dump(data))
    assert load_vehicle_file(f).steering_rate_max is None


@pytest.mark.parametrize("value, match", [(-0.4, r"'steering_rate_max' must be a number > 0"),
                                          ("fast", r"'steering_rate_max'")])
def test_a_bad_steering_rate_is_named(tmp_path, value, match):
    _, f = _file(tmp_path)
    data = yaml.safe_load(f.read_text())
    data["steering_rate_max"] = value
    f.write_text(yaml.safe_dump(data))
    with pytest.raises(VehicleFileError, match=match) as info:
        load_vehicle_file(f)
    assert str(f) in str(info.value)


def test_defaults_plan_within_the_steering_rate(tmp_path, caplog):
    vf, _ = _file(tmp_path, steering_rate_max=0.4)
    with caplog.at_level(logging.INFO, logger="mpc_tracking.scenario.defaults"):
        st = grip_defaults(mt.MPCSettings(grip_fraction=0.9), None, None, vf)
    assert st.delta_rate_max == pytest.approx(STEER_RATE_SHARE * 0.4)
    assert "delta_rate_max not given" in caplog.text
    # the user's value wins; a file without a limit leaves it unlimited
    assert grip_defaults(mt.MPCSettings(delta_rate_max=1.0), None, None, vf).delta_rate_max == 1.0
    assert math.isinf(grip_defaults(mt.MPCSettings(), None, None, _file(tmp_path)[0]).delta_rate_max)
    assert math.isinf(grip_defaults(mt.MPCSettings(grip_defaults=False), None, None, vf).delta_rate_max)


# ---------------------------------------------------------------------- the plant from outside
needs_commonroad = pytest.mark.skipif(not commonroad_std.available(), reason="commonroad-vehicle-models is not installed")


@pytest.fixture(scope="module")
def commonroad():
    commonroad_std.register()
    car = mt.create_model("commonroad_std")
    return car, identify(car, holdout=False)


@needs_commonroad
def test_commonroad_steering_rate_measured(commonroad):
    car, vf = commonroad
    assert vf.steering_rate_max == pytest.approx(car.vp.steering.v_max, rel=0.03)  # 0.4 rad/s
    assert "steering rate max [rad/s]" in vf.summary()


def _corner_sequence() -> mt.ReferencePath:
    """A 200 m straight, a 40 m clothoid into a 172 m right-hander held for 300 m, out through a clothoid:
    at 0.9 of the CommonRoad car's limits it corners at 36 m/s and 0.8 g (10 m wide)."""
    h, k = 0.5, [0.0]
    for length, k_end in ((200.0, 0.0), (40.0, -0.0058), (300.0, -0.0058), (40.0, 0.0), (100.0, 0.0)):
        k += list(np.linspace(k[-1], k_end, round(length / h) + 1)[1:])
    kappa = np.array(k)
    psi = np.concatenate([[0.0], np.cumsum(0.5 * (kappa[1:] + kappa[:-1]) * h)])
    mid = psi[:-1] + 0.5 * np.diff(psi)
    x = np.concatenate([[0.0], np.cumsum(np.cos(mid) * h)])[::4]
    y = np.concatenate([[0.0], np.cumsum(np.sin(mid) * h)])[::4]
    return mt.ReferencePath(x, y, width_left=np.full(x.size, 5.0), width_right=np.full(x.size, 5.0), ds=1.0,
                            closed=False)


def _drive(vf, path):
    from mpc_tracking.models.prediction import DynamicPrediction

    car = mt.create_model("commonroad_std")
    act = mt.actuation.default_actuator(car)
    st = grip_defaults(mt.MPCSettings(v_max=40.0, grip_fraction=0.9), car, act, vf, path.ds)
    body = mt.VehicleParams(wheelbase=vf.params.l_f + vf.params.l_r, length=4.508, width=1.61, rear_overhang=0.95)
    mpc = mt.SpatialMPC(path, body, st, prediction=DynamicPrediction(vf.params, speed_lag=act.speed_lag))
    return st, mt.simulate(path, mpc, car, act, v0=35.0)


@needs_commonroad
def test_commonroad_fast_corner_at_0_9_of_its_identified_limits(commonroad):
    """Closed-loop regression: the identified file alone, grip_fraction 0.9, a fast corner entered at 35 m/s.
    Without the steering rate (the vehicle file before the steering steps) the plan's corrections outran the
    wheels and the car left the track (6.6 m off the line, body 2.4 m past the edge); within it, 0.3 m at most."""
    _, vf = commonroad
    path = _corner_sequence()
    st, res = _drive(vf, path)
    assert st.delta_rate_max < commonroad[0].vp.steering.v_max
    assert res.success, res.message
    m = res.metrics
    assert m["max_body_overshoot"] == 0.0 and m["infeasible_steps"] == 0
    assert m["max_abs_e_y"] < 0.5
    assert float(np.max(res.series["v"])) > 33.0  # it did corner fast: not a slow way round
