"""3D Ackermann sedan at the limit (issue 11): circle held to >= 0.9 mu g then runs wide, understeer
gradient ~1 deg/g, friction brakes that hold, static equilibrium with an off-centre CG, batch = single car."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mpc_tracking.actuation import make_actuator
from mpc_tracking.models import Ackermann3DBatch, Ackermann3DParams, create_model

R_CIRCLE = 50.0


def _circle_run(v0: float, ramp: float, T: float, dt: float = 0.02, delta_max: float = 0.2) -> np.ndarray:
    """Sedan on a 50 m left circle (centre (0, R)): course-angle + lateral-error (PI) steering with the
    kinematic feed-forward L/R, limited to ``delta_max`` (a driver adds steering but does not crank to
    lock), speed v0 + ramp t through the plant's speed controller ``wheel_torque_pi``.

    Rows: t, speed, e (distance from the centre - R, > 0 outside), delta, yaw rate, CG sideslip [rad].
    """
    car = create_model("ackermann3d", {"preset": "sedan"})
    car.init({"speed": v0})
    act = make_actuator("wheel_torque_pi")
    act.reset(car)
    L = car.vehicle.wheelbase
    integ = 0.0
    rows = []
    for k in range(round(T / dt)):
        t = k * dt
        st = car.state
        e = math.hypot(st[0], st[1] - R_CIRCLE) - R_CIRCLE
        chi = math.atan2(st[13], st[12])  # course angle (not the heading: independent of the sideslip)
        tangent = math.atan2(st[1] - R_CIRCLE, st[0]) + 0.5 * math.pi
        integ += dt * e
        d = L / R_CIRCLE + 0.02 * e + 0.004 * integ + 0.8 * math.remainder(tangent - chi, 2 * math.pi)
        u = act(t, dt, v0 + ramp * t, max(-delta_max, min(delta_max, d)), car)
        car.step(t, dt, u)
        vb = car.rotation.T @ st[12:15]
        rows.append((t, math.hypot(st[12], st[13]), e, u[0], st[17], math.atan2(vb[1], vb[0])))
    return np.array(rows)


def test_sedan_holds_circle_to_090_mu_g_then_runs_wide_without_spinning():
    P = Ackermann3DParams.sedan()
    mu_g = P.mu * P.gravity
    a = _circle_run(8.0, 0.1, 150.0)  # 8 -> 23 m/s: a_y demand 1.3 -> 10.6 m/s^2 (> mu g = 8.83)
    t, v, e, delta, r, beta = a.T
    a_y = v * v / (R_CIRCLE + e)
    on = np.abs(e) < 0.5
    leave = int(np.argmax(~on))
    assert leave > 0 and np.all(on[:leave])
    held = float(np.max(a_y[:leave]))
    # measured 8.08 m/s^2 = 0.915 mu g (before issue 11: 8.04, then a spin at 20 m/s)
    assert held >= 0.9 * mu_g
    # past the limit: runs wide (radius grows, yaw rate below v / R) and does not spin
    after = slice(leave, None)
    assert e[-1] > 10.0 and np.all(np.diff(e[leave + 100:]) > -0.05)  # measured e(150 s) = 21 m
    assert np.all(r[-500:] < v[-500:] / R_CIRCLE)
    assert np.max(np.abs(beta[after])) < np.radians(5.0)  # measured 2.7 deg
    assert np.max(np.abs(r)) < 0.45  # no yaw-rate runaway (steady limit ~v/R = 0.40 rad/s)
    assert np.max(np.abs(beta)) < np.radians(5.0)


def test_sedan_understeer_gradient_linear_range():
    # constant radius, constant speeds (a_y = 1.3, 2.4, 3.4 m/s^2): steady steering vs lateral acceleration
    ay, delta = [], []
    for v in (8.0, 11.0, 13.0):
        a = _circle_run(v, 0.0, 20.0)
        last = a[-100:]
        assert np.max(np.abs(last[:, 2])) < 0.05 and np.ptp(last[:, 3]) < 2e-4  # on the circle, steady
        ay.append(float(np.mean(last[:, 1] ** 2 / (R_CIRCLE + last[:, 2]))))
        delta.append(float(np.mean(last[:, 3])))
    slope, icept = np.polyfit(ay, delta, 1)
    K = math.degrees(slope) * 9.81  # [deg/g]
    L = Ackermann3DParams.sedan().wheelbase
    assert icept == pytest.approx(L / R_CIRCLE, rel=0.05)  # delta -> L / R at zero a_y (Ackermann)
    assert 0.75 < K < 1.25  # measured 0.87 deg/g (before issue 11: 1.03)


def test_friction_brakes_stop_and_hold():
    car = create_model("ackermann3d", {"preset": "sedan"})
    car.init({"speed": 10.0})
    v = []
    for k in range(round(16.0 / 0.05)):  # stops after 12.4 s
        car.step(0.05 * k, 0.05, [0.0, -100.0, -100.0, -100.0, -100.0])
        v.append(car.speed)
    v = np.array(v)
    stop = int(np.argmax(v < 0.01))
    assert 0 < stop < len(v) - 60  # stopped, with >= 3 s left
    assert np.min(v[stop:]) >= -0.05 and np.max(np.abs(v[stop:])) < 0.01  # before: reversed to -5.4 m/s
    assert np.max(np.abs(car.state[18:22])) < 1e-9  # wheels locked by the brake
    # the reference preset keeps its signed-torque semantics (negative torque reverses the car)
    ref = create_model("ackermann3d", {"preset": "rc_car_reference"})
    ref.init({"speed": 0.2})
    for k in range(2000):
        ref.step(1e-3 * k, 1e-3, [0.0, 0.0, 0.0, -0.02, -0.02])
    assert ref.speed < -0.1


@pytest.mark.parametrize("preset", ["sedan", "rc_car"])
def test_starts_at_static_equilibrium(preset):
    car = create_model("ackermann3d", {"preset": preset})
    P = car.vehicle
    z_rest, pitch = P.static_pose()
    p0 = car.pose
    assert p0.z == pytest.approx(z_rest, abs=1e-15) and p0.pitch == pytest.approx(pitch, abs=1e-15)
    if preset == "sedan":
        assert pitch > 0  # nose down: the CG is ahead of mid-wheelbase
        Fz = car.tire_forces()["Fz"]
        W = P.mass * P.gravity
        assert np.sum(Fz) == pytest.approx(W, rel=1e-12)
        # static shares m g b / 2L front, m g a / 2L rear, up to the lever arms of the pitched contact points
        np.testing.assert_allclose(Fz, W / (2 * P.wheelbase) * np.array([P.cg_to_rear] * 2 + [P.cg_to_front] * 2),
                                   rtol=0.01)
    else:
        assert pitch == 0.0 and z_rest == P.z0 + P.cg_height - P.mass * P.gravity / (4 * P.k_n)
    zs, pitches, rolls = [], [], []
    for k in range(100):  # 1 s standing still
        car.step(0.01 * k, 0.01, [0.0, 0.0, 0.0, 0.0, 0.0])
        p = car.pose
        zs.append(p.z)
        pitches.append(p.pitch)
        rolls.append(p.roll)
    assert np.max(np.abs(np.array(zs) - z_rest)) < 1e-4  # measured 7e-7 m (before: started 3.5 mm off, 5.4 mm transient)
    assert np.max(np.abs(np.array(pitches) - pitch)) < 1e-4 and np.max(np.abs(rolls)) < 1e-4
    # the batch starts at the same equilibrium
    batch = Ackermann3DBatch(P, 2)
    np.testing.assert_allclose(batch.p[2], z_rest, atol=1e-15)
    np.testing.assert_allclose(batch.R[:, :, 0].reshape(-1), create_model(
        "ackermann3d", {"preset": preset}).rotation.reshape(-1), atol=1e-15)


@pytest.mark.parametrize("preset", ["sedan", "rc_car"])
def test_batch_matches_single_car_with_load_sensitivity_bars_and_brakes(preset):
    P = getattr(Ackermann3DParams, preset)()
    if preset == "rc_car":  # every new option on (both bars, load-sensitive tires)
        P = P.replace(fz_nominal=3.0, c_alpha_peak_load=1.8, mu_load=0.1, arb_front=800.0, arb_rear=300.0)
    scale = 100.0 if preset == "sedan" else 0.02
    speeds, yaws, deltas = np.array([0.0, 5.0, 10.0]), np.array([0.0, 1.0, -2.0]), np.array([0.0, 0.2, -0.3])
    if preset == "rc_car":
        speeds = speeds / 5.0
    batch = Ackermann3DBatch(P, 3)
    batch.reset(speed=speeds, yaw=yaws)
    cars = []
    for i in range(3):
        c = create_model("ackermann3d", {"preset": preset, **{f: getattr(P, f) for f in (
            "fz_nominal", "c_alpha_peak_load", "mu_load", "arb_front", "arb_rear", "brake_model", "brakes")}})
        c.init({"speed": float(speeds[i]), "yaw": float(yaws[i])})
        cars.append(c)
    dt = 0.01
    for k in range(150):  # drive (cornering: load transfer, bars, load-sensitive tires), then brake to a stop
        tau = scale * (np.array([0.0, 0.0, 1.0, 1.0]) if k < 80 else np.array([-2.0, -2.0, -1.0, -1.0]))
        batch.step(dt, deltas, tau[:, None])
        for i, c in enumerate(cars):
            c.step(dt * k, dt, [deltas[i], *tau])
    for i, c in enumerate(cars):
        st = c.state
        np.testing.assert_allclose(batch.p[:, i], st[:3], rtol=0, atol=1e-12)
        np.testing.assert_allclose(batch.R[:, :, i].reshape(-1), st[3:12], rtol=0, atol=1e-12)
        np.testing.assert_allclose(batch.v[:, i], st[12:15], rtol=0, atol=1e-12)
        np.testing.assert_allclose(batch.omega[:, i], st[18:22], rtol=0, atol=1e-10)
    assert np.min(batch.omega) >= 0.0  # the brakes did not reverse any wheel
    # continuous-time right-hand sides agree too (xdot includes -T_b sign(omega))
    tau = scale * np.array([-2.0, -2.0, -1.0, -1.0])
    f = batch.forces(deltas, tau[:, None])
    for i, c in enumerate(cars):
        xd = c.xdot(c.state, [deltas[i], *tau])
        np.testing.assert_allclose(xd[12:15], f["dv"][:, i], atol=1e-9)
        np.testing.assert_allclose(xd[15:18], f["dw"][:, i], atol=1e-9)
        np.testing.assert_allclose(xd[18:22], f["domega"][:, i], rtol=1e-9, atol=1e-6)
