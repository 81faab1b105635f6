"""Defaults that follow from the car (issue 20): grip_fraction, prediction_model auto, the dynamic
model's settings at the limit, and warnings for combinations known to be unsafe."""
from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pytest
import yaml

import mpc_tracking as mt
from mpc_tracking.errors import SettingsError
from mpc_tracking.models.prediction import DynamicPrediction, KinematicPrediction
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
from mpc_tracking.scenario.defaults import grip_defaults


@pytest.fixture
def vehicle_file():
    return mt.VehicleFile(params=DynamicParams.bmw_320i(), speed_lag=0.27, accel_max=3.8, decel_max=7.5,
                          a_y_max=7.9, source="car.yaml")


@pytest.fixture(scope="module")
def sedan():
    return mt.create_model("ackermann3d", {"preset": "sedan"})


@pytest.mark.parametrize("value", [0.0, -0.1, 1.2, float("nan"), "0.9", True])
def test_grip_fraction_must_be_a_share(value):
    with pytest.raises(SettingsError, match="grip_fraction"):
        mt.MPCSettings(grip_fraction=value)


def test_grip_defaults_must_be_a_flag():
    with pytest.raises(SettingsError, match="grip_defaults"):
        mt.MPCSettings(grip_defaults="yes")


@pytest.mark.parametrize("fraction", [0.85, 0.9, 0.95])
def test_limits_from_the_vehicle_file_scale_with_grip_fraction(vehicle_file, sedan, fraction):
    st = grip_defaults(mt.MPCSettings(grip_fraction=fraction), sedan, mt.make_actuator("wheel_torque_pi"),
                       vehicle_file)
    assert st.a_y_max == pytest.approx(fraction * 7.9)
    assert st.decel_max == pytest.approx(fraction * 7.5)
    assert st.accel_max == pytest.approx(fraction * 3.8)  # acceleration too, not a fixed cap


def test_explicit_limits_win(vehicle_file, sedan):
    st = grip_defaults(mt.MPCSettings(a_y_max=5.0, decel_max=6.0), sedan, None, vehicle_file)
    assert st.a_y_max == 5.0 and st.decel_max == 6.0 and st.accel_max == pytest.approx(0.9 * 3.8)


def test_the_braking_limit_of_the_grip_estimate_is_the_vehicle_files(vehicle_file, sedan):
    """grip_brake_limit comes from the vehicle file's decel_max (the car's braking through its own ABS, as
    identified); a value given wins; without a vehicle file (or with grip_defaults off) it stays unset: braking is
    read against the tyre peak, a lower bound the corners probe up."""
    assert grip_defaults(mt.MPCSettings(), sedan, None, vehicle_file).grip_brake_limit == vehicle_file.decel_max
    assert grip_defaults(mt.MPCSettings(grip_brake_limit=6.9), sedan, None, vehicle_file).grip_brake_limit == 6.9
    assert grip_defaults(mt.MPCSettings(), sedan).grip_brake_limit is None
    off = mt.MPCSettings(grip_defaults=False)
    assert grip_defaults(off, sedan, None, vehicle_file).grip_brake_limit is None


def test_the_drive_of_the_grip_estimate_is_the_plants(vehicle_file):
    """grip_drive comes from the 3D car's drive when left unknown; a value given wins; a plant without one (or
    none) leaves it unknown."""
    for drive in ("rwd", "fwd", "awd"):
        car = mt.create_model("ackermann3d", {"preset": "sedan", "drive": drive})
        assert grip_defaults(mt.MPCSettings(), car, None, vehicle_file).grip_drive == drive
    car = mt.create_model("ackermann3d", {"preset": "sedan"})
    assert grip_defaults(mt.MPCSettings(grip_drive="fwd"), car).grip_drive == "fwd"
    kin = mt.create_model("kinematic_bicycle", {"wheelbase": 2.7})
    assert grip_defaults(mt.MPCSettings(), kin, None, vehicle_file).grip_drive == "unknown"
    # no plant (a real car, the ROS node): the vehicle file's drive as identified
    assert grip_defaults(mt.MPCSettings(), None, None, replace(vehicle_file, drive="fwd")).grip_drive == "fwd"
    car = mt.create_model("ackermann3d", {"preset": "sedan", "drive": "awd"})
    assert grip_defaults(mt.MPCSettings(), car, None, replace(vehicle_file, drive="fwd")).grip_drive == "awd"


def test_actuator_clamp_caps_the_scaled_limit(vehicle_file, sedan):
    act = mt.make_actuator("wheel_torque_pi", decel_max=5.0)
    assert grip_defaults(mt.MPCSettings(), sedan, act, vehicle_file).decel_max == 5.0


def test_auto_picks_the_model_from_the_car(vehicle_file, sedan):
    kin = mt.create_model("kinematic_bicycle", {"wheelbase": 2.7})
    assert grip_defaults(mt.MPCSettings(), kin).prediction_model == "kinematic"
    assert grip_defaults(mt.MPCSettings(), kin, vehicle_file=vehicle_file).prediction_model == "dynamic"
    st = grip_defaults(mt.MPCSettings(), sedan)
    assert st.prediction_model == "dynamic"
    # the dynamic model gets what holds at the limit; without a vehicle file a_y_max stays
    assert st.friction_ellipse and st.discretization == "rk4" and st.a_y_max == 4.0
    assert grip_defaults(mt.MPCSettings(), sedan, path_ds=0.5).ds == 1.0  # 10 m/s x 50 ms = 0.5 m: the floor
    # at 40 m/s one 50 ms period covers 2 m: the step is that long (a shorter one makes the steering ring)
    assert grip_defaults(mt.MPCSettings(v_max=40.0), sedan, path_ds=1.0).ds == pytest.approx(2.0)
    assert grip_defaults(mt.MPCSettings(v_max=40.0, control_period=0.02), sedan, path_ds=0.5).ds == 1.0
    assert grip_defaults(mt.MPCSettings(ds=0.5), sedan, path_ds=0.5).ds == 0.5  # explicit wins


def test_grip_defaults_off_keeps_the_settings_and_warns(vehicle_file, sedan, caplog):
    st0 = mt.MPCSettings(prediction_model="dynamic", a_y_max=7.5, grip_defaults=False)
    with caplog.at_level(logging.WARNING):
        st = grip_defaults(st0, sedan, None, vehicle_file)
    assert st == st0 and not st.friction_ellipse
    assert "without the friction ellipse" in caplog.text and "friction_ellipse: true" in caplog.text


def test_kinematic_on_a_slipping_plant_at_speed_warns(sedan, caplog):
    with caplog.at_level(logging.WARNING):
        grip_defaults(mt.MPCSettings(prediction_model="kinematic", v_max=40.0), sedan)
    assert "kinematic model on a plant that slips" in caplog.text and "prediction_model: auto" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        grip_defaults(mt.MPCSettings(prediction_model="kinematic", v_max=10.0), sedan)
    assert "slips" not in caplog.text


def test_spatial_mpc_without_a_plant_uses_the_kinematic_model():
    path = mt.load_path("oval", ds=0.5)
    assert isinstance(mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings()).model, KinematicPrediction)


def test_scenario_with_a_vehicle_file_gets_the_limit_defaults(tmp_path, vehicle_file):
    vehicle_file.to_yaml(tmp_path / "car.yaml")
    sc = {"path": {"source": "oval", "ds": 0.5}, "vehicle": {"file": "car.yaml"},
          "plant": {"name": "ackermann3d", "params": {"preset": "sedan"}},
          "controller": {"v_max": 20.0, "grip_fraction": 0.95}}
    f = tmp_path / "sc.yaml"
    f.write_text(yaml.safe_dump(sc))
    from mpc_tracking.scenario.build import build

    _, mpc, _, _, _ = build(mt.load_scenario(f))
    st = mpc.settings
    assert isinstance(mpc.model, DynamicPrediction)
    assert st.a_y_max == pytest.approx(0.95 * 7.9) and st.accel_max == pytest.approx(0.95 * 3.8)
    assert st.friction_ellipse and st.discretization == "rk4" and mpc.ds == 1.0
    assert np.isfinite(st.decel_max)


# ---------------------------------------------------------------- braking within the friction budget
def test_braking_budget_ends():
    from mpc_tracking.mpc.reference import BRAKE_FLOOR, braking_budget

    b = braking_budget(np.array([0.0, 4.0, 8.0, 9.0]), a_y_max=8.0, decel_max=6.0)
    assert b[0] == 6.0  # straight: all of it
    assert b[1] == pytest.approx(6.0 * np.sqrt(0.75))
    assert b[2] == b[3] == pytest.approx(BRAKE_FLOOR * 6.0)  # at (and beyond) the lateral limit: the floor
    assert BRAKE_FLOOR < 0.3  # no longer the fixed 0.3 of decel_max while cornering


def test_qp_brakes_with_what_the_tyres_have_left():
    """The dynamic model's acceleration bounds at each step are the braking budget at the operating
    point's lateral acceleration (a circle near the limit: share below the old fixed floor 0.3), the first
    step's at least FIRST_STEP_FLOOR of the limit (its operating point is the measured state)."""
    from mpc_tracking.models.prediction import DynamicPrediction
    from mpc_tracking.mpc.qp import FIRST_STEP_FLOOR
    from mpc_tracking.mpc.reference import braking_budget

    t = np.linspace(0.0, 2.0 * np.pi, 400, endpoint=False)
    path = mt.ReferencePath(60.0 * np.cos(t), 60.0 * np.sin(t), width_left=5.0, width_right=5.0, ds=1.0,
                            closed=True)
    st = mt.MPCSettings(horizon=10, v_max=30.0, a_y_max=6.0, accel_max=3.0, decel_max=6.0, ds=1.0,
                        prediction_model="dynamic", discretization="rk4", friction_ellipse=True,
                        grip_estimation=False)  # the QP's bounds at the limits as set
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), st, prediction=DynamicPrediction(DynamicParams.bmw_320i()))
    v = float(np.sqrt(0.995 * 6.0 * 60.0))
    sol = mpc.solve(path.project(60.0, 0.0, 0.5 * np.pi), measured={"v_x": v, "v_y": 0.0, "r": v / 60.0})
    assert sol.success
    prob = mpc.qp.problem()
    x_op, _ = mpc._reference_op(mpc._sampler.sample(sol.s))
    a_y = np.abs(x_op[:-1, 3] * x_op[:-1, 5])
    budget = braking_budget(a_y, 6.0, 6.0)
    budget[0] = max(budget[0], FIRST_STEP_FLOOR * 6.0)
    np.testing.assert_allclose(-prob.u_lo[:, 0], budget, rtol=1e-9)
    assert np.all(-prob.u_lo[1:, 0] < 0.3 * 6.0) and -prob.u_lo[0, 0] == pytest.approx(3.0)


def test_whole_path_ceilings_use_the_same_budget():
    from mpc_tracking.mpc import qp
    from mpc_tracking.mpc.reference import BRAKE_FLOOR, path_speed_ceilings
    from mpc_tracking.paths.speed_profile import speed_profile

    assert qp.ELLIPSE_FLOOR == BRAKE_FLOOR
    path = mt.load_path("oval", ds=0.5)
    st = mt.MPCSettings(v_max=30.0, a_y_max=6.0, accel_max=3.0, decel_max=6.0, friction_ellipse=True)
    _, v_box = path_speed_ceilings(path, st)
    kw = {"v_max": 30.0, "a_y_max": 6.0, "a_max": np.inf, "a_brake": 0.95 * 6.0, "friction_ellipse": True}
    np.testing.assert_allclose(v_box, speed_profile(path, ellipse_floor=BRAKE_FLOOR, **kw))
    with pytest.raises(SettingsError, match="ellipse_floor"):
        speed_profile(path, ellipse_floor=1.5, **kw)


def test_power_limit_from_the_vehicle_file_scales_with_grip_fraction(sedan):
    vf = mt.VehicleFile(params=DynamicParams.bmw_320i(), speed_lag=0.27, accel_max=3.8, decel_max=7.5, a_y_max=7.9,
                        power_per_mass=80.0, source="car.yaml")
    st = grip_defaults(mt.MPCSettings(grip_fraction=0.85), sedan, None, vf)
    assert st.power_per_mass == pytest.approx(0.85 * 80.0)
    assert grip_defaults(mt.MPCSettings(power_per_mass=50.0), sedan, None, vf).power_per_mass == 50.0  # explicit
    assert grip_defaults(mt.MPCSettings(grip_defaults=False), sedan, None, vf).power_per_mass == float("inf")
    # a file without a power limit leaves the acceleration bound as it was
    plain = mt.VehicleFile(params=DynamicParams.bmw_320i(), speed_lag=0.27, accel_max=3.8, decel_max=7.5)
    assert grip_defaults(mt.MPCSettings(), sedan, None, plain).power_per_mass == float("inf")


def test_qp_acceleration_bound_follows_the_power_limit():
    """The dynamic model's acceleration bound at each step is min(accel_max, P/m / v_op) (a straight:
    the ellipse's share is 1 with or without it)."""
    from mpc_tracking.models.prediction import DynamicPrediction

    x = np.linspace(0.0, 600.0, 601)
    path = mt.ReferencePath(x, np.zeros_like(x), width_left=5.0, width_right=5.0, ds=1.0)
    base = mt.MPCSettings(horizon=10, v_max=40.0, a_y_max=6.0, accel_max=3.0, decel_max=6.0, ds=1.0,
                          prediction_model="dynamic", discretization="rk4",
                          grip_estimation=False)  # the QP's bounds at the limits as set
    power = 60.0
    for st in (base.replace(power_per_mass=power), base.replace(power_per_mass=power, friction_ellipse=True)):
        mpc = mt.SpatialMPC(path, mt.VehicleParams(), st, prediction=DynamicPrediction(DynamicParams.bmw_320i()))
        state, measured = path.project(100.0, 0.0, 0.0), {"v_x": 30.0, "v_y": 0.0, "r": 0.0}
        step = mpc._prepare(state, measured)
        mpc.build_qp(step)
        expected = np.minimum(3.0, power / step.x_op[:-1, 3])  # at the operating point's speeds
        np.testing.assert_allclose(mpc.qp.problem().u_hi[:, 0], expected, rtol=1e-9)
        assert np.all(expected < 3.0)  # 60 W/kg at >= 20 m/s is below accel_max
        sol = mpc.solve(state, measured=measured)
        assert sol.success and np.all(sol.u[:, 0] <= expected + 1e-3)
