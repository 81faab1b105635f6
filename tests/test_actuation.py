"""Actuators: steering limits, speed PI (unicycle, wheel torque with torque/traction limits), registry."""
from __future__ import annotations

import numpy as np
import pytest

from mpc_tracking import InputError
from mpc_tracking.actuation import ACTUATORS, SteeringLimiter, default_actuator, make_actuator
from mpc_tracking.models import create_model


def test_registry_and_defaults():
    assert {"direct", "unicycle_pi", "wheel_torque_pi"} <= set(ACTUATORS)
    assert default_actuator(create_model("unicycle")).name == "unicycle_pi"
    assert default_actuator(create_model("ackermann3d")).name == "wheel_torque_pi"
    assert default_actuator(create_model("simple_car")).name == "direct"


def test_steering_limits():
    lim = SteeringLimiter(delta_max=0.4, rate_max=1.0)
    out = [lim(0.1, 1.0) for _ in range(6)]
    np.testing.assert_allclose(out, [0.1, 0.2, 0.3, 0.4, 0.4, 0.4])
    assert lim(0.05, -1.0) == pytest.approx(0.35)
    act = make_actuator("direct", delta_max=0.2)
    assert act(0.0, 0.1, 3.0, -0.9, None)[1] == pytest.approx(-0.2)


def test_unicycle_pi_maps_delta_to_yaw_rate_and_tracks_speed():
    car = create_model("unicycle", info={"speed": 2.0})
    act = make_actuator("unicycle_pi", wheelbase=2.0)
    act.reset(car)
    u = act(0.0, 0.05, 2.0, 0.3, car)
    assert u[0] == pytest.approx(2.0 * np.tan(0.3) / 2.0) and u[1] == pytest.approx(0.0)
    for k in range(200):
        car.step(0.05 * k, 0.05, act(0.05 * k, 0.05, 5.0, 0.0, car))
    assert car.speed == pytest.approx(5.0, rel=0.01)


def test_wheel_torque_pi_limits():
    car = create_model("ackermann3d")
    act = make_actuator("wheel_torque_pi", tau_max=0.02)
    act.reset(car)
    u = act(0.0, 0.05, 5.0, 0.0, car)
    assert np.all(u[1:3] == 0.0) and np.allclose(u[3:], 0.02)  # RWD, torque limit
    act = make_actuator("wheel_torque_pi", traction_fraction=0.5)
    act.reset(car)
    u = act(0.0, 0.05, 50.0, 0.0, car)
    Fz = car.tire_forces()["Fz"]
    lim = 0.5 * car.vehicle.mu * Fz[2:] * car.vehicle.wheel_radius
    np.testing.assert_allclose(u[3:], lim)  # traction limit binds
    # the 3D car reaches and holds the commanded speed
    act = make_actuator("wheel_torque_pi")
    act.reset(car)
    for k in range(200):
        car.step(0.05 * k, 0.05, act(0.05 * k, 0.05, 1.0, 0.0, car))
    assert car.speed == pytest.approx(1.0, rel=0.01)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
def test_the_traction_and_brake_limits_follow_the_road_under_the_car(backend):
    """An ABS / traction control holds the wheels near the peak of the road they are on: after the rain (or on a
    patch) the clip is ``traction_fraction * mu_road * F_z``, not the dry ``mu``; the held-step kernel agrees."""
    params = {"preset": "sedan", "backend": backend, "mu_schedule": [[1.0, 0.5]], "mu_patches": [[0.0, 0.0, 3.0, 0.3]]}
    car = create_model("ackermann3d", params, {"speed": 15.0})
    act = make_actuator("wheel_torque_pi", traction_fraction=0.9, decel_max=20.0, accel_max=20.0)
    act.reset(car)
    P, r = car.vehicle, car.vehicle.wheel_radius
    for t, mu in ((0.5, 0.3), (2.0, 0.5)):  # on the patch at the start; in the rain after t = 1 s (off the patch)
        if t > 1.0:
            car.step(0.0, 0.5, act(0.0, 0.5, 15.0, 0.0, car))  # 7.5 m: off the 3 m patch
        Fz = np.asarray(car.normal_loads())
        brake = act(t, 0.01, 0.0, 0.0, car)  # a hard stop: every wheel at the clip
        np.testing.assert_allclose(-brake[1:], 0.9 * mu * Fz * r, rtol=1e-12)
        drive = act(t, 0.01, 60.0, 0.0, car)
        np.testing.assert_allclose(drive[3:], 0.9 * mu * Fz[2:] * r, rtol=1e-12)
        assert mu < P.mu
    if backend == "numba":  # the compiled period steps on the same clip (bitwise, as n single steps)
        twin = create_model("ackermann3d", params, {"speed": 15.0})
        a2 = make_actuator("wheel_torque_pi", traction_fraction=0.9, decel_max=20.0, accel_max=20.0)
        a2.reset(twin)
        advance = a2.held_command_stepper(twin)
        assert advance is not None
        solo = create_model("ackermann3d", params, {"speed": 15.0})
        a1 = make_actuator("wheel_torque_pi", traction_fraction=0.9, decel_max=20.0, accel_max=20.0)
        a1.reset(solo)
        advance(0.8, 0.01, 40, 0.0, 0.0)
        t = 0.8
        for _ in range(40):
            solo.step(t, 0.01, a1(t, 0.01, 0.0, 0.0, solo))
            t += 0.01
        np.testing.assert_array_equal(np.asarray(twin.state), np.asarray(solo.state))


def test_braking_uses_all_four_wheels_and_keeps_a_rwd_sedan_straight():
    out = {}
    for brakes in ("all", "driven"):
        car = create_model("ackermann3d", {"preset": "sedan", "brakes": brakes}, {"speed": 15.0})
        act = make_actuator("wheel_torque_pi", decel_max=6.0)
        act.reset(car)
        for k in range(20):  # settle on the springs at speed
            car.step(0.02 * k, 0.02, act(0.02 * k, 0.02, 15.0, 0.0, car))
        u = act(0.4, 0.02, 0.0, 0.0, car)
        if brakes == "all":
            assert np.all(u[1:] < 0)  # front (undriven) wheels brake too, by their loads
            Fz = car.tire_forces()["Fz"]
            np.testing.assert_allclose(u[1:] / u[1:].sum(), Fz / Fz.sum(), rtol=1e-9)
        else:
            assert np.all(u[1:3] == 0) and np.all(u[3:] < 0)
        t = 0.4
        while car.speed > 1.0 and t < 10.0:
            car.step(t, 0.02, act(t, 0.02, 0.0, 0.0, car))
            t += 0.02
        out[brakes] = (t, abs(car.pose.yaw))
    # four-wheel braking stops sooner (rear-only braking saturates the rear tyres at 6 m/s^2)
    assert out["all"][0] < out["driven"][0]
    assert out["all"][1] < 0.01  # and the car stays straight


@pytest.mark.parametrize("call, match", [
    (lambda: make_actuator("nope"), "unknown name 'nope'"),
    (lambda: make_actuator("unicycle_pi", wheelbase=0.0), "wheelbase must be > 0"),
    (lambda: make_actuator("unicycle_pi", kp=-1.0), "kp must be"),
    (lambda: make_actuator("wheel_torque_pi", tau_max=0.0), "tau_max must be > 0"),
    (lambda: make_actuator("wheel_torque_pi", traction_fraction=1.5), "traction_fraction"),
    (lambda: make_actuator("direct", delta_max=-1.0), "delta_max must be > 0"),
    (lambda: make_actuator("direct", bogus=1), "unexpected keyword"),
    (lambda: make_actuator("direct")(0.0, 0.1, np.nan, 0.0, None), "must be finite"),
    (lambda: make_actuator("wheel_torque_pi")(0.0, 0.1, 1.0, 0.0, create_model("unicycle")), "no wheel torques"),
])
def test_bad_input(call, match):
    with pytest.raises(InputError, match=match):
        call()


def _wheel_torque_numpy(act, car, t, dt, v_cmd, delta_cmd, steer_before, integral_before):
    """The wheel-torque actuator's law written with numpy arrays (as it was before it ran on floats)."""
    P = car.vehicle
    act.steer.delta, act.pi.integral = steer_before, integral_before
    v = float(car.speed)
    d = act.steer(dt, delta_cmd)
    omega = car.state[18:22]
    F = P.mass * act.pi(dt, v_cmd, v) + float(np.sum(P.wheel_damping * omega)) / P.wheel_radius
    Fz = car.tire_forces(d)["Fz"]
    by_load = F < 0 and P.brakes == "all" and Fz.sum() > 0
    Fi = F * Fz / Fz.sum() if by_load else P.drive_mask * F / P.drive_mask.sum()
    lim = act.traction_fraction * P.mu * Fz
    tau = np.clip(np.clip(Fi, -lim, lim) * P.wheel_radius, -act.tau_max, act.tau_max)
    return np.concatenate([[d], tau])


@pytest.mark.parametrize("params, act_params", [
    ({"preset": "sedan"}, {}),
    ({"preset": "sedan", "brakes": "driven", "drive": "awd"}, {"tau_max": 300.0, "traction_fraction": 0.5}),
    ({"preset": "rc_car"}, {"delta_max": 0.3, "delta_rate_max": 2.0}),
])
def test_wheel_torque_pi_is_its_numpy_law(params, act_params):
    """Driving, braking, traction and torque limits, a wheel off the ground: the same numbers as the
    numpy expression of the law."""
    car = create_model("ackermann3d", params, {"speed": 8.0})
    act = make_actuator("wheel_torque_pi", **act_params)
    act.reset(car)
    ref = make_actuator("wheel_torque_pi", **act_params)
    rng = np.random.default_rng(7)
    for k in range(150):
        t, v_cmd, delta_cmd = 0.01 * k, 8.0 + rng.uniform(-6.0, 6.0), rng.uniform(-0.4, 0.4)
        before = (act.steer.delta, act.pi.integral)
        u = act(t, 0.01, v_cmd, delta_cmd, car)
        np.testing.assert_array_equal(u, _wheel_torque_numpy(ref, car, t, 0.01, v_cmd, delta_cmd, *before))
        assert (ref.steer.delta, ref.pi.integral) == (act.steer.delta, act.pi.integral)
        car.step(t, 0.01, u)
        if k == 100:  # lift the car off the ground: no loads, no traction, until it lands again
            st = car.state
            st[2] += 0.3
            car.state = st
    assert np.all(car.normal_loads() == car.tire_forces()["Fz"])


# ---------------------------------------------------------------- the plan's feed-forward (issue 20)
def _braking_then_accelerating(pi, lead: float, feedforward: bool) -> list[float]:
    """A first-order point mass driven by ``pi``: 4 s of a plan braking at 6 m/s^2, then a plan
    accelerating at 2 m/s^2; the command leads the speed by ``lead * a_plan`` as the dynamic MPC's does.
    Returns the accelerations of the first 0.5 s after the switch."""
    v, dt, out = 40.0, 0.01, []
    for k in range(int(4.5 / dt)):
        a_plan = -6.0 if k * dt < 4.0 else 2.0
        if feedforward and k % 5 == 0:  # a control step every 50 ms: the plan starts at the measured speed
            pi.plan(v, a_plan)
        a = pi(dt, v + lead * a_plan, v)
        if k * dt >= 4.0:
            out.append(a)
        v += a * dt
    return out


def test_pi_with_a_plan_switching_to_accelerate_does_not_keep_braking():
    """Without the plan the integral of the lead (v_cmd - v = lead a_plan for 4 s) keeps braking
    after the plan wants to accelerate; with the plan's feed-forward the car accelerates at once."""
    from mpc_tracking.actuation import _SpeedPI

    old = _braking_then_accelerating(_SpeedPI(3.0, 1.0, 6.0, 8.0), 1 / 3, feedforward=False)
    new = _braking_then_accelerating(_SpeedPI(3.0, 1.0, 6.0, 8.0), 1 / 3, feedforward=True)
    assert max(old[:20]) < 0.5  # 0.2 s after the switch it still does not accelerate (the wound-up integral)
    assert all(a > 1.5 for a in new)  # delivers the planned 2 m/s^2 from the first step
    assert np.mean(new) == pytest.approx(2.0, abs=0.05)


def test_integral_never_opposes_the_plan():
    from mpc_tracking.actuation import _SpeedPI

    pi = _SpeedPI(3.0, 1.0, 6.0, 8.0)
    for _ in range(300):  # no plan: a long speed error winds the integral up (braking)
        pi(0.01, 19.0, 20.0)
    assert pi.integral < -1.0
    pi.plan(20.0, 1.5)
    assert pi.integral == 0.0
    assert pi(0.01, 0.0, 20.0) == pytest.approx(1.5)  # the plan, not the speed command
    pi.plan(None)
    assert pi(0.01, 19.0, 20.0) < 0.0  # the command rules again without a plan


def test_feedforward_off_ignores_the_plan():
    act = make_actuator("wheel_torque_pi", feedforward=False)
    act.set_plan(20.0, 3.0)
    assert act.pi._plan is None
    with pytest.raises(InputError, match="feedforward"):
        make_actuator("wheel_torque_pi", feedforward="yes")


def test_simulate_feeds_the_dynamic_plan_forward():
    """Closed loop on the 3D sedan with the dynamic model: the realized acceleration follows the plan
    more closely with the feed-forward than with the PI on the lead command alone."""
    import mpc_tracking as mt
    from mpc_tracking.models.prediction import DynamicPrediction, dynamic_params_from_ackermann3d

    path = mt.load_path("oval", ds=0.5)
    err = {}
    for ff in (False, True):
        car = create_model("ackermann3d", {"preset": "sedan"})
        act = make_actuator("wheel_torque_pi", feedforward=ff)
        st = mt.MPCSettings(horizon=20, v_max=14.0, a_y_max=5.0, accel_max=3.0, decel_max=5.0,
                            prediction_model="dynamic", discretization="rk4", friction_ellipse=True, ds=1.0)
        model = DynamicPrediction(dynamic_params_from_ackermann3d(car.vehicle), speed_lag=act.speed_lag)
        res = mt.simulate(path, mt.SpatialMPC(path, mt.VehicleParams(), st, prediction=model), car, act, t_max=12.0)
        t, v, a = (np.asarray(res.series[k]) for k in ("t", "v", "v_ref"))
        keep = t[:-1] > 1.0
        err[ff] = float(np.sqrt(np.mean((a[:-1] - np.diff(v) / np.diff(t))[keep] ** 2)))
    assert err[True] < 0.7 * err[False]
