"""3D Ackermann car: contact, slip, symmetry, energy, standstill, reference data, batch, closed loop."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from mpc_tracking import ModelError, MPCSettings, ReferencePath, SpatialMPC, VehicleParams, simulate
from mpc_tracking.actuation import make_actuator
from mpc_tracking.models import Ackermann3D, Ackermann3DBatch, Ackermann3DParams, create_model
from mpc_tracking.models.plants.ackermann3d import batch_numba, scalar
from mpc_tracking.models.plants.ackermann3d.batch import ackermann_angles
from tests._shared import SHARED as _SHARED_ROOT

SHARED = _SHARED_ROOT / "plants" / "ackermann3d"


def _run(car: Ackermann3D, u, T: float, dt: float, log_every: int = 1) -> np.ndarray:
    rows = []
    n = round(T / dt)
    for k in range(n + 1):
        if k % log_every == 0:
            rows.append(np.r_[car.state, car.pose.yaw])
        if k < n:
            car.step(k * dt, dt, u)
    return np.array(rows)


def test_settles_at_static_height_with_weight_on_the_wheels():
    car = create_model("ackermann3d", info={"z": 0.02})  # dropped 2 cm
    P = car.vehicle
    _run(car, [0, 0, 0, 0, 0], 2.0, 0.05)  # a 50 ms control period is stable (internal substeps)
    assert P.static_height == pytest.approx(0.06 - 1.5 * 9.81 / (4 * 2000.0))
    assert car.pose.z == pytest.approx(P.static_height, abs=1e-7)
    assert np.sum(car.tire_forces()["Fz"]) == pytest.approx(P.mass * P.gravity, rel=1e-6)
    assert P.stable_substep() == pytest.approx(0.0121, abs=1e-4)


def test_ackermann_angles_both_directions():
    L, W, d = 0.26, 0.16, 0.3
    fl, fr = ackermann_angles(np.array([d, -d]), L, W)
    assert fl[0] > d > fr[0] > 0  # left turn: inner (left) wheel turns more
    assert fl[1] == pytest.approx(-fr[0]) and fr[1] == pytest.approx(-fl[0])  # mirror image
    # both wheels point at the same turn centre on the rear-axle line
    R = L / np.tan(d)
    assert np.tan(fl[0]) == pytest.approx(L / (R - W / 2)) and np.tan(fr[0]) == pytest.approx(L / (R + W / 2))


def _steady_circle_radius(v: float, delta: float) -> tuple[float, float]:
    # no bearing drag: with b_w > 0 the drive and drag forces scale with v like the low-speed (viscous,
    # |v_t| < eps_v) tire law, which leaves a speed-independent ~1 % slip offset in the limit
    car = create_model("ackermann3d", {"wheel_damping": 0.0})
    act = make_actuator("wheel_torque_pi")
    act.reset(car)
    pts = []
    for k in range(int(2.5 / v / 0.05) + 100):  # settle 5 s, then ~2.5 m of arc
        car.step(0.05 * k, 0.05, act(0.05 * k, 0.05, v, delta, car))
        p = car.pose
        if k >= 100:
            pts.append([p.x - car.reference_offset * np.cos(p.yaw), p.y - car.reference_offset * np.sin(p.yaw)])
    xy = np.array(pts)
    A = np.c_[2 * xy, np.ones(len(xy))]
    cx, cy, c = np.linalg.lstsq(A, np.sum(xy**2, axis=1), rcond=None)[0]
    return float(np.sqrt(c + cx**2 + cy**2)), car.speed


def test_low_speed_circle_radius_tends_to_L_over_tan_delta():
    delta = 0.25
    kin = 0.26 / np.tan(delta)
    r_slow, v_slow = _steady_circle_radius(0.05, delta)
    r_fast, _ = _steady_circle_radius(0.4, delta)
    assert v_slow == pytest.approx(0.05, rel=0.02)
    assert r_slow == pytest.approx(kin, rel=1e-4)  # rear-axle path radius -> L / tan(delta)
    assert kin < r_slow < r_fast  # tire slip grows with lateral acceleration: understeer


def test_straight_acceleration_matches_wheel_chassis_balance():
    car = create_model("ackermann3d")
    P, tau = car.vehicle, 0.03
    u = [0.0, 0.0, 0.0, tau, tau]
    _run(car, u, 1.0, 0.01)
    v0, om0 = car.speed, car.state[18:22]
    _run(car, u, 0.1, 0.01)
    a_sim = (car.speed - v0) / 0.1
    om = 0.5 * (om0 + car.state[18:22])
    # m a = sum F_x and I_w a / r = tau_i - r F_x,i - b_w omega_i (rolling wheels, omega' = a / r)
    a_1d = (2 * tau / P.wheel_radius - P.wheel_damping * om.sum() / P.wheel_radius) / (
        P.mass + 4 * P.wheel_inertia / P.wheel_radius**2)
    assert a_sim > 0.1 and a_sim == pytest.approx(a_1d, rel=0.002)
    assert abs(car.pose.y) < 1e-12 and abs(car.pose.yaw) < 1e-12


def test_mirror_symmetry():
    out = []
    for d in (0.2, -0.2):
        car = create_model("ackermann3d", info={"speed": 1.0})
        out.append(_run(car, [d, 0, 0, 0.02, 0.02], 2.0, 0.02))
    left, right = out
    np.testing.assert_allclose(left[:, 0], right[:, 0], atol=1e-9)  # x
    np.testing.assert_allclose(left[:, 1], -right[:, 1], atol=1e-9)  # y
    np.testing.assert_allclose(left[:, 22], -right[:, 22], atol=1e-9)  # yaw
    np.testing.assert_allclose(left[:, [18, 20]], right[:, [19, 21]], atol=1e-8)  # omega FL <-> FR, RL <-> RR
    assert left[-1, 1] > 0.1  # it did turn left


def test_no_energy_gain_when_coasting():
    car = create_model("ackermann3d", info={"speed": 1.5})
    E = []
    for k in range(100):
        car.step(0.05 * k, 0.05, [0.15, 0, 0, 0, 0])
        E.append(car.energy())
    E = np.array(E)
    assert E[-1] < E[0]
    assert np.max(E - np.minimum.accumulate(E)) < 1e-5 * E[0]


def test_standstill_no_creep_no_chatter():
    car = create_model("ackermann3d")
    st = _run(car, [0.3, 0, 0, 0, 0], 5.0, 0.05)
    assert np.max(np.abs(st[:, :2])) < 1e-12 and np.max(np.abs(st[:, 18:22])) < 1e-12
    # stop from speed with the speed controller: settles to rest without oscillating
    car = create_model("ackermann3d", info={"speed": 1.0})
    act = make_actuator("wheel_torque_pi")
    act.reset(car)
    v = []
    for k in range(200):
        car.step(0.05 * k, 0.05, act(0.05 * k, 0.05, 0.0, 0.0, car))
        v.append(car.speed)
    v = np.array(v)
    assert abs(v[-1]) < 5e-3 and np.max(np.abs(car.state[18:22])) < 0.2
    assert np.min(v) > -1e-3  # brakes do not drive it backwards
    assert np.all(np.isfinite(car.state))


@pytest.mark.parametrize("fname, z, delta, tau, T", [
    ("ref_settle.csv", 0.08, 0.0, 0.0, 2.0),
    ("ref_straight_accel_freefront.csv", 0.058160625, 0.0, 0.05, 3.0),
    ("ref_circle_freefront.csv", 0.058160625, 0.2, 0.02, 5.0),
])
def test_reference_trajectories(fname, z, delta, tau, T):
    if not SHARED.is_dir():
        pytest.skip("../shared/plants/ackermann3d not found: reference-trajectory tests need the shared data folder")
    ref = np.genfromtxt(SHARED / fname, delimiter=",", names=True)
    om_ref = np.c_[ref["omega_FL"], ref["omega_FR"], ref["omega_RL"], ref["omega_RR"]]
    err = {}
    for preset in ("rc_car_reference", "rc_car"):
        car = create_model("ackermann3d", {"preset": preset, "max_substep": 1e-3, "drive": "awd"})
        car.init({"z": z - car.vehicle.static_height})
        sim = _run(car, [delta, 0, 0, tau, tau], T, 1e-3, log_every=10)
        err[preset] = (np.max(np.abs(sim[:, :3] - np.c_[ref["x"], ref["y"], ref["z"]])),
                       np.max(np.abs(sim[:, 22] - ref["yaw"])), np.max(np.abs(sim[:, 18:22] - om_ref)))
    pos, yaw, om = err["rc_car_reference"]
    assert pos < 1e-4 and yaw < 1e-3 and om < 1e-2
    # our textbook choices (hard friction clip, no slip squashing, eps = 0.1 m/s, damping both ways,
    # implicit wheels) differ measurably but stay in the same regime
    pos, yaw, om = err["rc_car"]
    assert pos < 5e-3 and yaw < 5e-3 and om < 1.0


def test_batch_matches_scalar_path():
    P = Ackermann3DParams.rc_car()
    batch = Ackermann3DBatch(P, 3)
    batch.reset(speed=np.array([0.0, 0.5, 1.0]), yaw=np.array([0.0, 1.0, -2.0]))
    deltas, tau = np.array([0.0, 0.2, -0.3]), np.array([0.0, 0.0, 0.03, 0.03])
    cars = []
    for i in range(3):
        c = create_model("ackermann3d", info={"speed": [0.0, 0.5, 1.0][i], "yaw": [0.0, 1.0, -2.0][i]})
        cars.append(c)
    for k in range(20):
        batch.step(0.05, deltas, tau[:, None])
        for i, c in enumerate(cars):
            c.step(0.05 * k, 0.05, [deltas[i], *tau])
    for i, c in enumerate(cars):
        st = c.state
        np.testing.assert_allclose(batch.p[:, i], st[:3], atol=1e-10)
        np.testing.assert_allclose(batch.R[:, :, i].reshape(-1), st[3:12], atol=1e-10)
        np.testing.assert_allclose(batch.omega[:, i], st[18:22], atol=1e-8)
    # xdot (scalar path) agrees with the batch accelerations at the same state
    f = batch.forces(deltas, tau[:, None])
    for i, c in enumerate(cars):
        x = c.state
        xd = c.xdot(x, [deltas[i], *tau])
        np.testing.assert_allclose(xd[:3], x[12:15])
        np.testing.assert_allclose(xd[3:12], (c.rotation @ np.array([[0, -x[17], x[16]], [x[17], 0, -x[15]],
                                                                      [-x[16], x[15], 0]])).reshape(-1), atol=1e-12)
        np.testing.assert_allclose(xd[12:15], f["dv"][:, i], atol=1e-9)
        np.testing.assert_allclose(xd[15:18], f["dw"][:, i], atol=1e-9)
        np.testing.assert_allclose(xd[18:22], f["domega"][:, i], atol=1e-6)


def test_rotation_stays_orthonormal():
    car = create_model("ackermann3d", info={"speed": 1.0})
    for k in range(200):
        car.step(0.01 * k, 0.01, [0.3 * np.sin(k / 10), 0, 0, 0.02, 0.02])
    R = car.rotation
    assert np.max(np.abs(R.T @ R - np.eye(3))) < 1e-14 and np.linalg.det(R) == pytest.approx(1.0)


@pytest.mark.parametrize("params, match", [
    ({"preset": "truck"}, "unknown preset 'truck'"),
    ({"mass": 0.0}, "mass must be > 0"),
    ({"mass": -1.0}, "mass must be > 0"),
    ({"wheelbase": 0.0}, "wheelbase must be > 0"),
    ({"mu": -0.1}, "mu must be >= 0"),
    ({"cg_to_front": 0.3}, "cg_to_front must lie in"),
    ({"drive": "4wd"}, "drive must be one of"),
    ({"inertia": (1.0, -1.0, 1.0)}, "inertia must be 3 positive"),
    ({"k_n": float("nan")}, "k_n must be finite"),
    ({"masss": 1.0}, "unknown parameter 'masss'.*did you mean 'mass'"),
    ({"brake_model": "abs"}, "brake_model must be one of"),
    ({"mu_load": -0.1}, "mu_load must be >= 0"),
    ({"arb_front": -1.0}, "arb_front must be >= 0"),
])
def test_bad_parameters(params, match):
    with pytest.raises(ModelError, match=match):
        create_model("ackermann3d", params)


def test_bad_state_and_input():
    car = create_model("ackermann3d")
    with pytest.raises(ModelError, match="input must be finite"):
        car.step(0.0, 0.05, [np.nan, 0, 0, 0, 0])
    with pytest.raises(ModelError, match="expected 5 numeric inputs"):
        car.step(0.0, 0.05, [0.0, 1.0])
    with pytest.raises(ModelError, match="22 finite values"):
        car.state = np.full(22, np.inf)
    with pytest.raises(ModelError, match="must be Ackermann3DParams"):
        Ackermann3DBatch({"mass": 1.0}, 3)
    batch = Ackermann3DBatch(Ackermann3DParams.rc_car(), 3)
    with pytest.raises(ModelError, match="inputs must be finite"):
        batch.step(0.01, np.array([0.0, np.nan, 0.0]), 0.0)
    with pytest.raises(ModelError, match="tau must broadcast"):
        batch.step(0.01, 0.0, np.ones((3, 3)))
    with pytest.raises(ModelError, match="n must be an integer"):
        Ackermann3DBatch(Ackermann3DParams.rc_car(), 0)


@pytest.mark.parametrize("drive", ["rwd", "fwd", "awd"])
def test_rc_car_lap_under_mpc(drive, caplog):
    caplog.set_level(logging.ERROR, logger="mpc_tracking")  # restored after the test
    th = np.linspace(0, 2 * np.pi, 80, endpoint=False)
    path = ReferencePath(2.5 * np.cos(th), 1.5 * np.sin(th), closed=True, ds=0.05, width_left=0.5, width_right=0.5,
                         name="rc_ellipse")
    veh = VehicleParams.rc_car()
    settings = MPCSettings(horizon=20, ds=0.1, v_max=1.2, a_y_max=2.0, delta_max=0.5, accel_max=2.0, decel_max=3.0)
    mpc = SpatialMPC(path, veh, settings)
    plant = create_model("ackermann3d", {"drive": drive})
    res = simulate(path, mpc, plant, control_period=0.05)
    assert res.reason == "completed", res.reason
    assert np.max(np.abs(res.e_y)) < 0.15  # measured 0.026 (fwd) .. 0.061 (rwd)


def test_sedan_lap_of_bundled_path(caplog):
    caplog.set_level(logging.ERROR, logger="mpc_tracking")  # restored after the test
    from mpc_tracking import load_path

    path = load_path("oval", ds=0.5)
    settings = MPCSettings(horizon=20, v_max=12.0, a_y_max=4.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0)
    plant = create_model("ackermann3d", {"preset": "sedan"})
    mpc = SpatialMPC(path, VehicleParams(wheelbase=plant.vehicle.wheelbase), settings)
    res = simulate(path, mpc, plant, control_period=0.05)
    assert res.reason == "completed" and np.max(np.abs(res.e_y)) < 1.0  # measured 0.30 (model mismatch)


def test_rc_preset_matches_scenarios_json():
    if not SHARED.is_dir():
        pytest.skip("../shared/plants/ackermann3d not found: reference-trajectory tests need the shared data folder")
    import json

    prm = json.loads((SHARED / "scenarios.json").read_text())["parameters"]
    P = Ackermann3DParams.rc_car()
    g, ch, wh, ti, co = prm["geometry"], prm["chassis"], prm["wheels"], prm["tires"], prm["contact"]
    assert (P.wheelbase, P.track, P.cg_to_front, P.cg_to_rear, P.cg_height, P.wheel_radius) == pytest.approx(
        (g["L_wheelbase_m"], g["W_track_m"], g["a_cg_to_front_axle_m"], g["b_cg_to_rear_axle_m"],
         g["h_cg_above_contact_point_m"], g["wheel_radius_m"]))
    assert P.mass == ch["mass_kg"] and P.inertia == pytest.approx(np.diag(ch["I_body_kgm2"]), rel=1e-7)
    assert (P.wheel_inertia, P.wheel_damping) == pytest.approx((wh["I_w_kgm2"], wh["b_w_Nms_per_rad"]))
    assert (P.mu, P.c_kappa, P.c_alpha) == pytest.approx((ti["mu"], ti["C_kappa_N_per_unit_slip"], ti["C_alpha_N_per_rad"]))
    assert (P.k_n, P.c_n, P.z0) == pytest.approx((co["k_n_N_per_m"], co["c_n_Ns_per_m"], co["z0_ground_m"]))
    assert P.static_height == pytest.approx(json.loads((SHARED / "scenarios.json").read_text())["static_ride_height_cg_z_m"])
    assert Ackermann3DParams.rc_car_reference().eps_v == ti["eps_v_mps"]


@pytest.mark.parametrize("preset, extra", [("rc_car", {}), ("sedan", {}), ("sedan", {"contact_damping": "compression"}),
                                           ("rc_car_reference", {})])
def test_normal_loads_and_wheel_speeds_are_the_tire_forces_and_state(preset, extra):
    """``normal_loads()`` (what the wheel-torque actuator reads every substep) is ``tire_forces()["Fz"]``
    exactly, at any steering; ``wheel_speeds`` the last four states."""
    car = create_model("ackermann3d", {"preset": preset, **extra}, {"speed": 3.0})
    rng = np.random.default_rng(8)
    base = car.state
    for _ in range(40):
        st = base.copy()
        st[2] += rng.uniform(-0.03, 0.01)  # into the ground or partly off it
        st[12:18] += rng.normal(scale=[1.0, 1.0, 0.3, 0.5, 0.5, 0.5])
        st[18:22] += rng.normal(scale=2.0, size=4)
        car.state = st
        assert car.normal_loads() == car.tire_forces(rng.uniform(-0.5, 0.5))["Fz"].tolist()
        assert car.wheel_speeds == car.state[18:22].tolist()


@pytest.mark.skipif(not batch_numba.numba_available(), reason="numba is not installed")
@pytest.mark.parametrize("preset, extra", [("sedan", {}), ("sedan", {"contact_damping": "compression"}),
                                           ("rc_car", {})])
def test_compiled_normal_loads_after_steps_are_the_scalar_contact(preset, extra):
    """With the numba backend ``normal_loads()`` is compiled and reads the array of the last step: after every
    step it equals the pure-Python :func:`scalar.contact` of the state exactly, also when the caller changed the
    returned state array, and after the state is set."""
    car = create_model("ackermann3d", {"preset": preset, "backend": "numba", **extra}, {"speed": 3.0})
    rng = np.random.default_rng(5)
    for k in range(60):
        out = car.step(0.01 * k, 0.01, [rng.uniform(-0.4, 0.4), *rng.uniform(-30.0, 60.0, 4)])
        out[:] = 0.0  # the caller's array: not what the car reads
        assert car.normal_loads() == scalar.contact(car._st, car._K)[1]
    st = car.state
    st[2] -= 0.01
    car.state = st
    assert car.normal_loads() == scalar.contact(car._st, car._K)[1]
