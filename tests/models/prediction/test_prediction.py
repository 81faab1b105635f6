"""The MPC with any prediction model: sizes and roles from the model, the dynamic model in closed loop."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import InputError, SettingsError
from mpc_tracking.models.prediction import (
    DynamicPrediction,
    KinematicPrediction,
    dynamic_params_from_ackermann3d,
)
from mpc_tracking.models.prediction import spatial_dynamic as sd
from mpc_tracking.mpc.qp import ELLIPSE_CUT_ANGLES

SEDAN = mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)


@pytest.fixture(scope="module")
def sedan_params():
    return dynamic_params_from_ackermann3d(mt.create_model("ackermann3d", {"preset": "sedan"}).vehicle)


def _settings(**kw):
    base = dict(horizon=30, v_max=15.0, a_y_max=6.0, decel_max=6.0, accel_max=3.0, delta_max=0.6,
                delta_rate_max=0.8, prediction_model="dynamic", discretization="rk4")
    base.update(kw)
    return mt.MPCSettings(**base)


def test_layout_and_solution_take_their_sizes_from_the_model(sedan_params):
    path = mt.load_path("oval", ds=0.5)
    mpc = mt.SpatialMPC(path, SEDAN, _settings(), prediction=DynamicPrediction(sedan_params))
    lay = mpc.layout
    # the model's 6 states; the QP's stage leaves out t (no cost outside the time-optimal mode: SPEED-D3)
    assert (lay.nx_model, lay.nx, lay.nu, lay.nXB) == (6, 5, 2, 30)
    assert lay.n == 5 * 31 + 2 * 30 + 4 * 31
    sol = mpc.solve((0.0, 0.3, 0.0), measured={"v_x": 10.0, "v_y": 0.0, "r": 0.0})
    assert sol.status == "solved" and sol.x.shape == (31, 6) and sol.u.shape == (30, 2)
    # the speed is a state: the speed bound rows hold the planned v_x (k = 1..N)
    speed_hi = mpc.data.u[lay.r_xbox:lay.r_corr]
    assert np.all(sol.x[1:, 3] <= speed_hi + 1e-4)
    kin = mt.SpatialMPC(path, SEDAN, mt.MPCSettings(horizon=30))
    assert (kin.layout.nx, kin.layout.nu, kin.layout.nXB) == (3, 2, 0)
    assert isinstance(kin.model, KinematicPrediction)


def test_bad_model_choices_are_named():
    with pytest.raises(SettingsError, match=r"prediction_model: expected one of \['auto', 'dynamic', 'kinematic'\]"):
        mt.MPCSettings(prediction_model="dynamc")
    with pytest.raises(SettingsError, match=r"MPCSettings\.Q: expected 3 or 6 weights for the dynamic prediction"):
        _settings(Q=(1, 2, 0, 1))
    with pytest.raises(SettingsError, match="delay"):
        mt.SpatialMPC(mt.load_path("oval", ds=0.5), SEDAN, _settings(delay=0.05))
    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), SEDAN, _settings())
    with pytest.raises(InputError, match="measured: the dynamic prediction model needs"):
        mpc.solve((0.0, 0.0, 0.0))
    with pytest.raises(InputError, match="speed_lag"):
        DynamicPrediction(sd.DynamicParams.bmw_320i(), speed_lag=-1.0)


def test_substeps_compose_to_the_exact_discrete_map():
    """At low speed a step is split; the composed (A, B, f) is exact at the operating point and
    A is the derivative of the composed nonlinear map (finite differences)."""
    p = sd.DynamicParams.bmw_320i()
    model = DynamicPrediction(p)
    rng = np.random.default_rng(3)
    n = 4
    x = np.column_stack([rng.normal(0, .3, n), rng.normal(0, .05, n), np.zeros(n), rng.uniform(3, 6, n),
                         rng.normal(0, .1, n), rng.normal(0, .1, n)])
    u = np.column_stack([rng.normal(0, 1, n), rng.normal(0, .05, n)])
    kap, ds = rng.normal(0, .02, n), np.full(n, 1.0)
    m = model.substeps(x, ds, "rk4")
    assert m > 1

    def F(xv):
        for _ in range(m):
            xv = sd.discrete_step(xv, u, kap, 1.0 / m, p, "rk4")
        return xv

    A, B, f = model.linearize(x, u, kap, ds, "rk4")
    np.testing.assert_allclose(np.einsum("nij,nj->ni", A, x) + np.einsum("nij,nj->ni", B, u) + f, F(x), atol=1e-12)
    for j in range(6):
        e = np.zeros(6)
        e[j] = 1e-6
        np.testing.assert_allclose((F(x + e) - F(x - e)) / 2e-6, A[:, :, j], atol=1e-6)


def test_parameters_read_off_the_3d_sedan_give_its_steady_state_yaw_rate(sedan_params):
    """Steady cornering of the plant (its own speed PI, constant steering) against the model's
    steady state at the same speed: yaw rate within 3 % (measured 0.7-1.2 % at 1.8-3.5 m/s^2)."""
    plant = mt.create_model("ackermann3d", {"preset": "sedan"}, info={"speed": 10.0})
    act = mt.make_actuator("wheel_torque_pi")
    act.reset(plant)
    t, dt = 0.0, 0.01
    for _ in range(800):
        plant.step(t, dt, act(t, dt, 10.0, 0.08, plant))
        t += dt
    yaw, vel = plant.pose.yaw, plant.velocity
    v_x = vel.linear[0] * np.cos(yaw) + vel.linear[1] * np.sin(yaw)
    x = np.array([0.0, 0.0, 0.0, v_x, 0.0, 0.0])
    for _ in range(3000):
        d = sd.temporal_derivatives(x, [0.0, 0.08], 0.0, sedan_params)
        d[3] = 0.0
        x = x + 0.002 * d
    assert x[5] == pytest.approx(vel.angular[2], rel=0.03)
    assert act.speed_lag == pytest.approx(1 / 3)


def test_friction_ellipse_shrinks_the_acceleration_bounds_in_a_corner(sedan_params):
    th = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    path = mt.ReferencePath(40 * np.cos(th), 40 * np.sin(th), closed=True, ds=0.5, width_left=4, width_right=4)
    st = _settings(friction_ellipse=True, v_max=14.0, grip_estimation=False)  # the bounds at the limits as set
    mpc = mt.SpatialMPC(path, SEDAN, st, prediction=DynamicPrediction(sedan_params))
    v = 14.0
    sol = mpc.solve((0.0, 0.0, 0.0), measured={"v_x": v, "v_y": 0.0, "r": v / 40})
    assert sol.success
    lay = mpc.layout
    a_hi = mpc.data.u[lay.r_box:lay.r_rate].reshape(30, 2)[:, 0]
    a_lo = mpc.data.l[lay.r_box:lay.r_rate].reshape(30, 2)[:, 0]
    share = np.sqrt(max(1 - (v * v / 40 / 6.0) ** 2, 0.3**2))  # a_y 4.9 of 6 m/s^2
    assert a_hi[0] == pytest.approx(3.0 * share, rel=0.05) and a_lo[0] == pytest.approx(-6.0 * share, rel=0.05)
    straight = mt.SpatialMPC(path, SEDAN, _settings(friction_ellipse=False, grip_estimation=False),
                             prediction=DynamicPrediction(sedan_params))
    straight.solve((0.0, 0.0, 0.0), measured={"v_x": v, "v_y": 0.0, "r": v / 40})
    assert straight.data.u[lay.r_box] == pytest.approx(3.0)


def _cut_value(ax, ay, a_x_axis=(3.0, 6.0), a_y_max=6.0):
    """Largest left-hand side of the friction-ellipse cuts (<= 1 inside the polygon)."""
    th = np.radians(ELLIPSE_CUT_ANGLES)
    axis = np.where(np.cos(th) >= 0, *a_x_axis)
    return float((np.cos(th)[None] * ax[:, None] / axis + np.sin(th)[None] * ay[:, None] / a_y_max).max())


def test_friction_ellipse_cuts_hold_the_plan_inside_the_polygon(sedan_params):
    """``ellipse_cuts``: braking into a corner (14 m/s on R 40 m: a_y 4.9 of 6 m/s^2, the speed limit 10 m/s):
    with the cuts the plan brakes on the polygon's edge (measured max cut 1.0001 after the
    operating point has converged, |(a_x, a_y)| on the ellipse scale 1.07 = the circumscribed
    polygon's corners); without them it brakes at 5.5 m/s^2 while turning (ellipse scale 1.73)."""
    th = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    path = mt.ReferencePath(40 * np.cos(th), 40 * np.sin(th), closed=True, ds=0.5, width_left=4, width_right=4)
    measured = {"v_x": 14.0, "v_y": 0.0, "r": 14.0 / 40}
    out = {}
    for ellipse in (True, False):
        mpc = mt.SpatialMPC(path, SEDAN, _settings(friction_ellipse=ellipse, ellipse_cuts=True, v_max=10.0,
                                                   linearization="previous", grip_estimation=False),
                            prediction=DynamicPrediction(sedan_params))
        for _ in range(4):  # the operating point converges onto the plan
            sol = mpc.solve((0.0, 0.0, 0.0), measured=measured)
        assert sol.success
        ax, ay = sol.u[:, 0], sol.x[:-1, 3] * sol.x[:-1, 5]
        out[ellipse] = (_cut_value(ax, ay), float(np.max((ax / 6) ** 2 + (ay / 6) ** 2)), float(ax.min()))
        lay = mpc.layout
        assert lay.n_cuts == (len(ELLIPSE_CUT_ANGLES) if ellipse else 0)
        assert lay.n == 5 * 31 + 2 * 30 + 4 * 31 + (30 if ellipse else 0)  # (no t in the QP: SPEED-D3)
    assert out[True][0] == pytest.approx(1.0, abs=2e-3)
    assert out[True][1] < 1.08
    assert out[False][0] > 1.2 and out[False][1] > 1.6
    # the first step's cut rows hold the measured state exactly: braking limited by the polygon
    # at a_y 4.9 (cut at 120 deg: a_x >= -6 (1 - sin 60 4.9/6) / cos 60 = -3.51)
    assert out[True][2] > out[False][2] + 0.5


def test_dynamic_model_drives_the_3d_sedan_round_the_oval(sedan_params):
    """The dynamic model with the speed-loop lead on the 3D sedan at a_y 6 m/s^2, v_max 15 m/s.
    Measured (linearization "auto" = about the reference for the dynamic model): lap 20.65 s (the
    kinematic plant under the kinematic MPC: 20.24 s, +2.0 %), RMS e_y 6.9 cm, max 15.9 cm, no body
    overshoot; about the shifted previous plan 2.0 / 6.7 cm here (but see MPCSettings.linearization:
    at the limit of a full-size track that one oscillates); the kinematic model on the same plant:
    RMS 59 cm, lap 22.9 s."""
    path = mt.load_path("oval", ds=0.5)
    out = {}
    for lin in ("auto", "previous"):
        plant = mt.create_model("ackermann3d", {"preset": "sedan"})
        act = mt.make_actuator("wheel_torque_pi")
        mpc = mt.SpatialMPC(path, SEDAN, _settings(ds=0.5, linearization=lin),
                            prediction=DynamicPrediction(sedan_params, act.speed_lag))
        res = mt.simulate(path, mpc, plant, act)
        m = out[lin] = res.metrics
        assert res.reason == "completed" and m["infeasible_steps"] == 0
        assert 20.24 < m["lap_time"] < 20.24 * 1.03 and m["max_body_overshoot"] == 0.0
    assert out["auto"]["rms_e_y"] < 0.1 and out["auto"]["max_abs_e_y"] < 0.25
    assert out["previous"]["rms_e_y"] < 0.04 and out["previous"]["max_abs_e_y"] < 0.12


def test_scenario_chooses_the_dynamic_model_with_the_plants_parameters():
    sc = mt.default_scenario().with_overrides({
        "controller.prediction_model": "dynamic", "controller.discretization": "rk4",
        "plant.name": "ackermann3d", "plant.params": {"preset": "sedan"}, "simulation.t_max": 1.0,
    })
    from mpc_tracking.scenario.build import build

    _path, mpc, plant, actuator, _kw = build(sc)
    assert isinstance(mpc.model, DynamicPrediction)
    assert mpc.model.params.mass == plant.vehicle.mass and mpc.model.speed_lag == actuator.speed_lag > 0


def test_lag_aware_ceilings_hold_every_ceiling_earlier_by_the_lag_distance(sedan_params):
    """With a speed lag tau the whole-path ceilings are the minimum over the next
    (tau + control period) * v metres, v the ceiling there: each braking point moves earlier by
    the distance the car covers in that time at its speed there."""
    path = mt.load_path("oval", ds=0.5)
    plain = mt.SpatialMPC(path, SEDAN, _settings(), prediction=DynamicPrediction(sedan_params))
    lagged = mt.SpatialMPC(path, SEDAN, _settings(), prediction=DynamicPrediction(sedan_params, speed_lag=0.3))
    v0 = plain._sampler.table[:-1, 7]  # the v_box column of the sampler
    v1 = lagged._sampler.table[:-1, 7]
    w = np.ceil((0.3 + 0.05) * v0 / path.ds).astype(int) + 1
    expected = np.array([np.min(np.take(v0, np.arange(i, i + w[i]), mode="wrap")) for i in range(v0.size)])
    np.testing.assert_allclose(v1, expected)
    assert np.all(v1 <= v0) and np.any(v1 < v0 - 1.0)


def test_3d_plant_preset_follows_the_vehicle_when_not_given(caplog):
    """A full-size scenario with the 3D plant and no preset gets the sedan, not the RC car."""
    from mpc_tracking.scenario.build import build

    full = mt.default_scenario().with_overrides({"plant.name": "ackermann3d", "plant.params": {}})
    with caplog.at_level("INFO", logger="mpc_tracking.scenario.build"):
        _p, _m, plant, _a, _k = build(full)
    assert plant.vehicle.wheelbase == pytest.approx(2.68) and "using 'sedan'" in caplog.text
    rc = full.with_overrides({"vehicle.preset": "rc_car"})
    assert build(rc)[2].vehicle.wheelbase == pytest.approx(mt.Ackermann3DParams.rc_car().wheelbase)
    mismatch = full.with_overrides({"plant.params": {"preset": "rc_car"}})
    caplog.clear()
    with caplog.at_level("WARNING", logger="mpc_tracking.scenario.build"):
        build(mismatch)
    assert "plant preset 'rc_car' has a 0.26 m wheelbase but the vehicle the controller plans for has 2.70 m" in caplog.text


def test_axle_curves_of_the_3d_car_with_lateral_load_transfer():
    """Without load sensitivity an axle peaks at exactly mu F_z whatever the load transfer; with the
    sedan's, at the fixed point mu(F_in) F_in + mu(F_out) F_out < mu F_z, lower on the front axle
    (its anti-roll bar takes 63 % of the roll moment), so the fitted D_f < D_r."""
    from mpc_tracking.models.prediction.apriori import axle_curves_ackermann3d

    P = mt.Ackermann3DParams.sedan()
    flat = dataclasses.replace(P, mu_load=0.0, c_alpha_peak_load=0.0)
    W, L = P.mass * P.gravity, P.wheelbase
    fz = np.array([W * P.cg_to_rear / L, W * P.cg_to_front / L])
    big = np.array([0.6])
    for F, f in zip(axle_curves_ackermann3d(flat, big), fz, strict=True):
        assert F[0] == pytest.approx(P.mu * f, rel=1e-9)
    peaks = [F[0] / (P.mu * f) for F, f in zip(axle_curves_ackermann3d(P, big), fz, strict=True)]
    assert peaks[0] == pytest.approx(0.977, abs=0.002) and peaks[1] == pytest.approx(1.003, abs=0.002)  # measured
    dyn = dynamic_params_from_ackermann3d(P)
    assert dyn.tyre_D_f < dyn.tyre_D_r and dyn.tyre_C_f == 1.3


def _steady_lateral_acceleration(v, delta, params=None):
    """a_y = v_x r after 8 s at constant steer and speed: the 3D sedan, or the dynamic model."""
    if params is None:
        car = mt.create_model("ackermann3d", {"preset": "sedan"})
        car.init({"x": 0.0, "y": 0.0, "yaw": 0.0, "speed": v})
        act = mt.actuation.default_actuator(car)
        t, dt = 0.0, 0.002
        for _ in range(4000):
            car.step(t, dt, act(t, dt, v, delta, car))
            t += dt
        yaw, vel = car.pose.yaw, car.velocity
        return (vel.linear[0] * np.cos(yaw) + vel.linear[1] * np.sin(yaw)) * vel.angular[2]
    x = np.array([0.0, 0.0, 0.0, v, 0.0, 0.0])
    for _ in range(4000):
        d = sd.temporal_derivatives(x, [0.0, delta], 0.0, params)
        d[3] = 0.0
        x = x + 0.002 * d
    return x[3] * x[5]


@pytest.mark.parametrize("v, delta, tol", [(15.0, 0.04, 0.02), (15.0, 0.08, 0.05), (25.0, 0.04, 0.14),
                                           (25.0, 0.08, 0.14)])
def test_a_priori_model_corners_like_the_plant(sedan_params, v, delta, tol):
    """Steady cornering of the dynamic model with the a-priori axle fit against the 3D sedan.
    Measured relative differences of a_y: +0.9 % (15 m/s, 0.04 rad, a_y 3.0), +2.6 % (15, 0.08,
    a_y 5.8), +9.3 % (25, 0.04, a_y 6.0: the degressive stiffness of the loaded outer wheel, which
    the static stiffness does not see), +8.1 % (25, 0.08, a_y 7.9: at the plant's limit). The
    mapping used before (D = 1, no load transfer) predicted 12.7 m/s^2 at 25 m/s / 0.08 rad, a
    model that spins, where the plant holds 7.9."""
    plant = _steady_lateral_acceleration(v, delta)
    model = _steady_lateral_acceleration(v, delta, sedan_params)
    assert model == pytest.approx(plant, rel=tol)


def test_fit_axle_curve_recovers_a_known_curve_and_refuses_bad_samples():
    from mpc_tracking.errors import InputError
    from mpc_tracking.models.prediction.tyre_fit import axle_curve, fit_axle_curve

    alpha = np.linspace(-0.3, 0.3, 81)
    y = axle_curve(alpha, 9.0, 1.45, 0.97, 0.3)
    np.testing.assert_allclose(fit_axle_curve(alpha, y), (9.0, 1.45, 0.97, 0.3), rtol=1e-5, atol=1e-6)
    B, C, D, E = fit_axle_curve(alpha, y, C=1.3, D=0.97)
    assert (C, D, E) == (1.3, 0.97, 0.0) and 5.0 < B < 15.0
    with pytest.raises(InputError, match="finite"):
        fit_axle_curve(alpha, np.full_like(alpha, np.nan))
    with pytest.raises(InputError, match="no slip angle"):
        fit_axle_curve(np.zeros(10), np.ones(10))


def test_auto_linearization_is_the_models_choice(sedan_params):
    path = mt.load_path("oval", ds=0.5)
    kin = mt.SpatialMPC(path, SEDAN, mt.MPCSettings())
    dyn = mt.SpatialMPC(path, SEDAN, _settings(), prediction=DynamicPrediction(sedan_params))
    assert mt.MPCSettings().linearization == "auto"
    assert (kin.linearization, dyn.linearization) == ("previous", "reference")
    forced = mt.SpatialMPC(path, SEDAN, _settings(linearization="previous"), prediction=DynamicPrediction(sedan_params))
    assert forced.linearization == "previous"


def test_near_standstill_the_command_moves_the_car_on(sedan_params):
    """At speed the dynamic model's command leads the plan by the speed loop's lag, v_0 + lag a_0, and feeds a_0
    forward. Near standstill (below twice its speed floor) the spatial model is not the dynamics and its first
    input no acceleration: a plan from 0.001 m/s to 0.5 m/s with a_0 = -1.2 m/s^2 (a car stopped beside a chicane
    after a slide) commands at least the next speed, 0.5 m/s -- not -0.4 -- and feeds forward what that asks of
    the speed loop."""
    lag = 1.0 / 3.0
    m = DynamicPrediction(sedan_params, speed_lag=lag)
    X = np.zeros((3, m.nx))
    U = np.array([[-1.2, 0.1], [2.0, 0.0]])
    X[:, 3] = [20.0, 19.9, 19.8]
    assert m.command(X, U) == (pytest.approx(20.0 - 1.2 * lag), 0.1)
    assert m.feedforward(X, U) == (20.0, -1.2)
    X[:, 3] = [0.001, 0.5, 0.6]
    assert 2.0 * sedan_params.v_floor > 0.001
    v, delta = m.command(X, U)
    assert v == pytest.approx(0.5) and delta == 0.1
    assert m.feedforward(X, U) == (0.001, pytest.approx((0.5 - 0.001) / lag))
    U[0, 0] = 3.0  # a plan that accelerates harder than that keeps its own lead
    assert m.command(X, U)[0] == pytest.approx(0.001 + 3.0 * lag)
