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
