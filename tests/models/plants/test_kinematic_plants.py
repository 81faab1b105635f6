"""Unicycle, simple car, kinematic bicycle: analytic truths, registry, bad input, laps under the MPC."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from mpc_tracking import ModelError, MPCSettings, SpatialMPC, UnknownModelError, VehicleParams, load_path, simulate
from mpc_tracking.actuation import make_actuator
from mpc_tracking.models import Unicycle, available_models, create_model
from mpc_tracking.models.plants.kinematic_bicycle import KinematicBicycle


def _circle_radius(xy: np.ndarray) -> float:
    """Least-squares circle fit radius (Kasa) of points (k, 2)."""
    A = np.c_[2 * xy, np.ones(len(xy))]
    b = np.sum(xy**2, axis=1)
    cx, cy, c = np.linalg.lstsq(A, b, rcond=None)[0]
    return float(np.sqrt(c + cx**2 + cy**2))


def test_registry_lists_builtins():
    assert {"kinematic_bicycle", "unicycle", "simple_car", "ackermann3d"} <= set(available_models())


@pytest.mark.parametrize("u_omega, u_a", [(0.4, 0.3), (-0.7, 0.0), (0.0, 1.0), (0.25, -0.2)])
def test_unicycle_matches_closed_form(u_omega, u_a):
    car = create_model("unicycle", info={"x": 1.0, "y": -2.0, "yaw": np.deg2rad(30.0), "speed": 2.0})
    x0 = car.state
    ts = np.arange(1, 31) * 0.1
    traj = []
    for k in range(30):
        traj.append(car.step(0.1 * k, 0.1, [u_omega, u_a]))
    exact = Unicycle.closed_form(x0, u_omega, u_a, ts)
    np.testing.assert_allclose(np.array(traj), exact, atol=1e-8)
    p, v = car.pose, car.velocity
    assert p.yaw == pytest.approx(exact[-1, 2]) and v.angular[2] == pytest.approx(u_omega)
    assert np.hypot(*v.linear[:2]) == pytest.approx(abs(exact[-1, 3]))


@pytest.mark.parametrize("model, params", [("simple_car", {"wheelbase": 2.5}),
                                           ("kinematic_bicycle", {"wheelbase": 2.5, "delta_max": 0.7})])
@pytest.mark.parametrize("delta", [0.3, -0.2])
def test_turning_radius_L_over_tan_delta(model, params, delta):
    car = create_model(model, params, info={"speed": 3.0})
    pts = []
    for k in range(40):
        car.step(0.05 * k, 0.05, [3.0, delta])
        pts.append([car.pose.x, car.pose.y])
    assert _circle_radius(np.array(pts)) == pytest.approx(2.5 / np.tan(abs(delta)), rel=1e-6)
    # turns left for delta > 0
    assert np.sign(car.pose.yaw) == np.sign(delta)


def test_simple_car_saturation_and_velocity_output():
    car = create_model("simple_car", {"wheelbase": 2.0})
    assert car.min_turning_radius == pytest.approx(2.0 / np.tan(np.pi / 4 - 1e-3))
    assert car.params["max_wheel_angle"] < np.pi / 4
    pts = []
    for k in range(40):
        car.step(0.05 * k, 0.05, [2.0, 1.2])  # far beyond pi/4: saturates
        pts.append([car.pose.x, car.pose.y])
    assert _circle_radius(np.array(pts)) == pytest.approx(car.min_turning_radius, rel=1e-6)
    assert car.pose.z == 0.0 and car.state[2] == 0.0
    # velocity = chord / dt: slightly less than v on a curve (chord < arc)
    v = np.linalg.norm(car.velocity.linear)
    R, dth = car.min_turning_radius, 2.0 * 0.05 / car.min_turning_radius
    assert v == pytest.approx(2 * R * np.sin(dth / 2) / 0.05, rel=1e-7)


def test_kinematic_bicycle_actuator_dynamics():
    # first-order speed lag: v(t) = v_cmd (1 - exp(-t / T))
    car = create_model("kinematic_bicycle", {"speed_time_constant": 0.5})
    for k in range(10):
        car.step(0.1 * k, 0.1, [4.0, 0.0])
    assert car.state[3] == pytest.approx(4.0 * (1 - np.exp(-1.0 / 0.5)), rel=1e-5)
    # steering rate limit: 0.2 rad/s -> after 1 s at most 0.2 rad
    car = create_model("kinematic_bicycle", {"steering_rate_max": 0.2})
    for k in range(10):
        car.step(0.1 * k, 0.1, [1.0, 0.5])
    assert car.state[4] == pytest.approx(0.2, abs=1e-6)
    # dead time 0.3 s: the command reaches the plant 0.3 s late
    car = create_model("kinematic_bicycle", {"dead_time": 0.3}, info={"speed": 0.0})
    seen = []
    for k in range(6):
        car.step(0.1 * k, 0.1, [2.0, 0.0])
        seen.append(car.state[3])
    assert seen[:3] == [0.0, 0.0, 0.0] and seen[3] == pytest.approx(2.0)
    # a second run (init again) starts from its own initial speed and steering, not from the last
    # command of the first run, until its first queued command arrives
    car.init({"speed": 1.0})
    seen = []
    for k in range(4):
        car.step(0.1 * k, 0.1, [3.0, 0.2])
        seen.append((car.state[3], car.state[4]))
    assert seen[:3] == [(1.0, 0.0)] * 3 and seen[3] == pytest.approx((3.0, 0.2))


@pytest.mark.parametrize("call, exc, match", [
    (lambda: create_model("no_such_car"), UnknownModelError, "known models: .*unicycle"),
    (lambda: create_model("simple_car", {"wheelbas": 2.0}), ModelError, "unknown parameter 'wheelbas'.*did you mean 'wheelbase'"),
    (lambda: create_model("simple_car", {"wheelbase": 0.0}), ModelError, "wheelbase must be > 0"),
    (lambda: create_model("kinematic_bicycle", {"wheelbase": -1.0}), ModelError, "wheelbase must be > 0"),
    (lambda: create_model("simple_car", {"max_wheel_angle": 0.8}), ModelError, "max_wheel_angle must be < pi/4"),
    (lambda: create_model("unicycle", info={"x": float("nan")}), ModelError, "initial x must be finite"),
    (lambda: create_model("unicycle", info={"heading_deg": 3}), ModelError, "unknown initial-condition key"),
    (lambda: create_model("unicycle").step(0.0, 0.1, [np.inf, 0.0]), ModelError, "input must be finite"),
    (lambda: create_model("simple_car").step(0.0, 0.1, [1.0]), ModelError, "expected 2 inputs"),
    (lambda: create_model("unicycle").step(0.0, -0.1, [0.0, 0.0]), ModelError, "dt must be a positive"),
    (lambda: setattr(create_model("unicycle"), "state", [0.0, np.nan, 0.0, 0.0]), ModelError, "4 finite values"),
    (lambda: setattr(create_model("simple_car"), "state", [0.0, 0.0]), ModelError, "4 finite values"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


@pytest.mark.parametrize("model, params, actuator", [
    ("unicycle", {}, ("unicycle_pi", {"wheelbase": 2.7})),
    ("simple_car", {"wheelbase": 2.7}, None),
    ("kinematic_bicycle", {"wheelbase": 2.7, "speed_time_constant": 0.2, "steering_rate_max": 1.0, "dead_time": 0.02}, None),
])
def test_lap_of_bundled_path(model, params, actuator, caplog):
    caplog.set_level(logging.ERROR, logger="mpc_tracking")  # restored after the test
    path = load_path("oval", ds=0.5)
    settings = MPCSettings(horizon=20, v_max=12.0, a_y_max=4.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0)
    mpc = SpatialMPC(path, VehicleParams(), settings)
    act = make_actuator(actuator[0], **actuator[1]) if actuator else None
    res = simulate(path, mpc, create_model(model, params), act, control_period=0.05, sim_dt=0.025)
    assert res.reason == "completed" and res.laps_completed == 1
    # measured max |e_y|: unicycle 0.014, simple_car 0.015, kinematic bicycle with lag and dead time 0.048
    assert np.max(np.abs(res.e_y)) < {"unicycle": 0.05, "simple_car": 0.05, "kinematic_bicycle": 0.2}[model]


class _GenericKinematic(KinematicBicycle):
    """The same model through the base class's integrator (the plant's float RK4 is skipped when
    a subclass has its own xdot)."""

    def xdot(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return super().xdot(x, u)


@pytest.mark.parametrize("params", [
    {},
    {"speed_time_constant": 0.3, "steering_time_constant": 0.1, "steering_rate_max": 1.0},
    {"steering_rate_max": 0.4, "dead_time": 0.03, "max_substep": 0.004, "delta_max": 0.3},
])
def test_kinematic_float_rk4_matches_generic_integrator(params):
    fast = create_model("kinematic_bicycle", params, info={"x": 1.0, "y": -2.0, "yaw": 0.3, "speed": 4.0})
    generic = _GenericKinematic(params, info={"x": 1.0, "y": -2.0, "yaw": 0.3, "speed": 4.0})
    rng = np.random.default_rng(3)
    for k in range(60):
        u = [4.0 + rng.uniform(-1.0, 1.0), rng.uniform(-0.5, 0.5)]
        np.testing.assert_allclose(fast.step(0.01 * k, 0.01, u), generic.step(0.01 * k, 0.01, u), rtol=1e-12,
                                   atol=1e-12)
    assert fast.speed == pytest.approx(float(np.hypot(*fast.velocity.linear[:2])), rel=1e-12)


def test_kinematic_step_rejects_bad_dt():
    car = create_model("kinematic_bicycle")
    for dt in (0.0, -0.1, float("nan"), float("inf")):
        with pytest.raises(ModelError, match="dt must be a positive"):
            car.step(0.0, dt, [1.0, 0.0])


@pytest.mark.parametrize("params", [{}, {"speed_time_constant": 0.4, "steering_time_constant": 0.1},
                                    {"steering_rate_max": 0.3, "max_substep": 0.004}])
def test_compiled_substeps_equal_python(params):
    """The RK4 substeps in compiled code (numba) give the Python substeps' states to 1e-12, with and without the
    actuator dynamics (speed and steering lags, rate limit, several substeps per step)."""
    pytest.importorskip("numba", reason="numba is not installed (extra 'fast')")
    cars = []
    for compiled in ("python", "numba"):
        car = create_model("kinematic_bicycle", params, info={"speed": 4.0, "yaw": 0.3})
        car.compiled = compiled
        cars.append(car)
    rng = np.random.default_rng(5)
    for k in range(300):
        u = [rng.uniform(0.0, 15.0), rng.uniform(-0.7, 0.7)]
        a, b = (car.step(0.01 * k, 0.01, u) for car in cars)
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12)
    assert cars[1]._kernel is not None and cars[0]._kernel is None


def test_compiled_choice_is_checked(monkeypatch):
    """A bad choice is a ModelError naming the attribute; ``"auto"`` runs in Python without numba, ``"numba"`` then
    says how to install it."""
    import importlib.util

    from mpc_tracking.models.plants import kinematic_bicycle as kb

    car = create_model("kinematic_bicycle")
    with pytest.raises(ModelError, match="compiled: expected one of"):
        car.compiled = "fast"
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "numba" else real(name, *a))
    monkeypatch.setattr(kb, "_KERNEL", None)
    car.compiled = "auto"
    car.step(0.0, 0.01, [1.0, 0.0])
    assert car._kernel is None
    car.compiled = "numba"
    with pytest.raises(ModelError, match="needs numba"):
        car.step(0.01, 0.01, [1.0, 0.0])
