"""SpatialMPC: settings validation, closed-loop convergence, cross-checks (cvxpy, LQR), fallback policy.

The controller tests take the ``backend`` fixture (tests/conftest.py): each runs once per registered
QP back end (``mpc_tracking.mpc.backends.available()``).
"""
from __future__ import annotations

import logging

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import InputError, SettingsError
from mpc_tracking.models.prediction import spatial_bicycle as sb
from mpc_tracking.mpc.backends import FaultInjection
from mpc_tracking.mpc.cvxpy_ref import CvxpyMPC


def circle_path(R=20.0, ds=0.5, width=3.0):
    th = np.linspace(0, 2 * np.pi, 400, endpoint=False)
    return mt.ReferencePath(R * np.cos(th), R * np.sin(th), closed=True, ds=ds, width_left=width, width_right=width)


# ---------------------------------------------------------------- settings
@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"horizon": 0}, "horizon"),
        ({"horizon": 2.5}, "horizon"),
        ({"v_min": 5.0, "v_max": 2.0}, "v_min"),
        ({"Q": (1.0, -1.0, 0.0)}, "positive semi-definite"),
        ({"R": [[1.0, 2.0], [2.0, 1.0]]}, "positive semi-definite"),
        ({"R_rate": (1.0, 2.0, 3.0)}, "R_rate"),
        ({"delta_rate_max": -1.0}, "delta_rate_max"),
        ({"accel_max": 0.0}, "accel_max"),
        ({"mode": "racing"}, "mode"),
        ({"linearization": "nominal"}, "linearization"),
        ({"discretization": "trapezoid"}, "discretization"),
        ({"delta_max": 2.0}, "delta_max"),
        ({"slack_weight": 0.0}, "slack_weight"),
    ],
)
def test_settings_errors(kwargs, match):
    with pytest.raises(SettingsError, match=match):
        mt.MPCSettings(**kwargs)
    assert issubclass(SettingsError, ValueError)


def test_settings_replace_validates_and_suggests():
    s = mt.MPCSettings().replace(horizon=12)
    assert s.horizon == 12
    with pytest.raises(SettingsError, match="did you mean 'horizon'"):
        mt.MPCSettings().replace(horizn=12)


# ---------------------------------------------------------------- closed loop
def test_closed_loop_on_circle_converges_from_offset(backend):
    path = circle_path()
    veh = mt.VehicleParams()
    mpc = mt.SpatialMPC(path, veh, mt.MPCSettings(horizon=30, v_max=8.0, solver=backend))
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})
    res = mt.simulate(path, mpc, plant, e_y0=0.5, laps=1)
    assert res.reason == "completed"
    assert abs(res.e_y[0]) == pytest.approx(0.5, abs=1e-6)
    t = res.t
    assert np.all(np.abs(res.e_y[t > 5.0]) < 0.01)
    assert res.metrics["infeasible_steps"] == 0


def test_open_path_shorter_than_horizon_finishes_gracefully(backend):
    x = np.linspace(0, 30, 61)
    path = mt.ReferencePath(x, 0.02 * x**2 / 30, ds=0.5, width_left=3, width_right=3)
    veh = mt.VehicleParams()
    mpc = mt.SpatialMPC(path, veh, mt.MPCSettings(horizon=100, v_max=5.0, solver=backend))  # 50 m horizon on a 30 m path
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})
    res = mt.simulate(path, mpc, plant, e_y0=0.3)
    assert res.reason == "end_of_path"
    assert res.metrics["infeasible_steps"] == 0
    assert abs(res.e_y[-1]) < 0.05


def test_state_outside_domain_is_reported_without_rejoin(backend):
    path = circle_path(R=5.0, width=20.0)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=10, rejoin=False, solver=backend))
    with pytest.raises(InputError, match="horizon index 0"):
        mpc.solve((1.0, 5.5, 0.0))
    with pytest.raises(InputError, match="e_psi"):
        mpc.solve((1.0, 0.0, 2.0))
    with pytest.raises(InputError, match="finite"):
        mpc.solve((np.nan, 0.0, 0.0))


# ---------------------------------------------------------------- cross-checks
def _random_path(rng, closed):
    if closed:
        th = np.linspace(0, 2 * np.pi, 300, endpoint=False)
        r = rng.uniform(15, 30) * (1 + 0.15 * np.sin(rng.integers(2, 4) * th + rng.uniform(0, 6)))
        x, y = r * np.cos(th), r * np.sin(th)
    else:
        s = np.linspace(0, 80, 300)
        k = rng.uniform(-0.06, 0.06) * np.sin(s / rng.uniform(8, 20))
        psi = np.cumsum(k) * (s[1] - s[0])
        x, y = np.cumsum(np.cos(psi)) * (s[1] - s[0]), np.cumsum(np.sin(psi)) * (s[1] - s[0])
    return mt.ReferencePath(x, y, closed=closed, ds=0.5, width_left=rng.uniform(1.2, 2.5), width_right=rng.uniform(1.2, 2.5))


def test_backend_matches_cvxpy_on_50_random_instances(backend):
    rng = np.random.default_rng(2026)
    N = 15
    veh = mt.VehicleParams()
    settings = mt.MPCSettings(
        horizon=N, v_max=12.0, a_y_max=3.0, delta_rate_max=0.4, accel_max=2.0, decel_max=4.0,
        eps_abs=1e-7, eps_rel=1e-7, max_iter=20000, slack_weight=50.0, solver=backend,
    )
    worst = 0.0
    active = {"corridor": 0, "rate": 0, "speed": 0}
    for i in range(10):
        path = _random_path(rng, closed=bool(i % 2))
        st_i = settings.replace(mode="time_optimal" if i % 3 == 0 else "tracking")
        mpc = mt.SpatialMPC(path, veh, st_i)
        ref = CvxpyMPC(path, veh, st_i)  # built from path, vehicle and settings, not from the OSQP data
        s = rng.uniform(0, 0.5 * path.length)
        prev = mpc.solve((s, 0.0, 0.0))  # sets the previous command (rate bounds become active)
        for _ in range(5):
            state = (s + rng.uniform(0, 2), rng.uniform(-1.2, 1.2), rng.uniform(-0.3, 0.3))
            cv = ref.solve(state, previous=prev)
            sol = prev = mpc.solve(state)
            assert sol.success
            assert cv["status"] == "optimal"
            sp = cv["data"]
            worst = max(worst, float(np.abs(sol.u - cv["u"]).max()))
            active["corridor"] += int(sol.corridor_violation > 1e-4)
            du = np.diff(np.vstack([sp["u_prev"], sol.u]), axis=0)
            active["rate"] += int(np.any(np.abs(du[:, 1]) >= np.abs(sp["rate_hi"][:, 1]) - 1e-6))
            active["speed"] += int(np.any(sol.u[:, 0] >= sp["v_hi"] - 1e-6))
    assert worst < 2e-4, worst  # measured 3.6e-5 (OSQP)
    # the instances really exercise the constraints
    assert all(v > 0 for v in active.values()), active


def _tv_lqr_first_input(sp):
    """Finite-horizon LQR on the MPC's own affine LTV model (state augmented with a constant 1)."""
    N = sp.A.shape[0]
    Qa = np.zeros((4, 4))
    Qa[:3, :3] = sp.Q
    QNa = np.zeros((4, 4))
    QNa[:3, :3] = sp.QN
    V = QNa
    K = None
    for k in range(N - 1, -1, -1):
        Aa = np.eye(4)
        Aa[:3, :3] = sp.A[k]
        Aa[:3, 3] = sp.f[k] + sp.B[k] @ sp.u_ref[k]
        Ba = np.vstack([sp.B[k], np.zeros((1, 2))])
        K = np.linalg.solve(sp.R + Ba.T @ V @ Ba, Ba.T @ V @ Aa)
        V = (Qa if k > 0 else 0) + Aa.T @ V @ (Aa - Ba @ K)
    z0 = np.append(sp.x0, 1.0)
    return sp.u_ref[0] - K @ z0


@pytest.mark.parametrize("kappa_R", [30.0, 1e9])
def test_unconstrained_mpc_equals_finite_horizon_lqr(kappa_R, backend):
    """No constraint active: the MPC's first input is the (TV) LQR feedback on the same linearization.

    On a straight line (R = 1e9) the model is LTI and this is the textbook finite-horizon LQR.
    """
    path = circle_path(R=kappa_R, width=50.0) if kappa_R < 1e6 else mt.ReferencePath(
        [0, 500], [0, 0], ds=0.5, width_left=50, width_right=50)
    veh = mt.VehicleParams()
    st = mt.MPCSettings(horizon=20, v_max=8.0, a_y_max=100.0, R_rate=(0.0, 0.0), linearization="reference",
                        Q=(2.0, 1.0, 0.0), R=(0.5, 3.0), terminal_weight=4.0, eps_abs=1e-9, eps_rel=1e-9,
                        max_iter=50000, solver=backend)
    mpc = mt.SpatialMPC(path, veh, st)
    state = (10.0, 0.3, -0.05)
    sp = mpc.prepare_qp(state)
    sol = mpc.solve(state)
    assert sol.status == "solved"
    assert sol.corridor_violation < 1e-6
    u_lqr = _tv_lqr_first_input(sp)
    np.testing.assert_allclose([sol.v, sol.delta], u_lqr, atol=1e-6)
    if kappa_R > 1e6:
        # LTI: the same gain from the textbook Riccati recursion on the reference linearization
        A, B, _ = sb.linearize(np.zeros(3), np.array([8.0, 0.0]), 0.0, mpc.ds, veh)
        Q, R = st.Q_matrix, st.R_matrix
        P = st.terminal_weight * Q
        for _ in range(st.horizon - 1):
            K = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
            P = Q + A.T @ P @ (A - B @ K)
        K0 = np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
        # the MPC linearizes step 0 at the measured state: agreement to second order in the offset
        np.testing.assert_allclose(sol.delta, -(K0 @ np.array([0.3, -0.05, 0.0]))[1], rtol=0.05)


# ---------------------------------------------------------------- modes
def test_time_optimal_is_faster_than_tracking_and_cuts_corners(backend):
    path = mt.load_path("oval", ds=1.0)
    veh = mt.VehicleParams()
    base = mt.MPCSettings(horizon=30, ds=1.0, v_max=15.0, a_y_max=5.0, delta_rate_max=0.8, accel_max=4.0, decel_max=6.0,
                          solver=backend)
    out = {}
    for mode, extra in (("tracking", {}), ("time_optimal", {"Q": (0.05, 1.0, 0.0), "time_weight": 20.0})):
        mpc = mt.SpatialMPC(path, veh, base.replace(mode=mode, **extra))
        plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})
        out[mode] = mt.simulate(path, mpc, plant, laps=1)
        assert out[mode].reason == "completed"
    lt_track = out["tracking"].lap_times[0]
    lt_opt = out["time_optimal"].lap_times[0]
    assert lt_opt < lt_track
    r = out["time_optimal"]
    kappa = np.interp(r.s, path.s, path.kappa)
    turns = np.abs(kappa) > 0.02
    # inside of the turn: e_y has the sign of kappa
    assert np.mean(r.e_y[turns] * np.sign(kappa[turns])) > 0.2
    # and stays inside the corridor (footprint)
    assert r.metrics["corridor_violation_steps"] == 0


# ---------------------------------------------------------------- failure policy
def test_injected_failures_follow_the_fallback_policy(backend):
    path = circle_path()
    st = mt.MPCSettings(horizon=20, v_max=8.0, max_fallback_steps=3, brake_decel=2.0, control_period=0.1,
                        solver=backend)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), st)
    mpc.backend = FaultInjection(mpc.backend, fail=[2, 3, 4, 5, 6], corrupt=[8])
    statuses, vs = [], []
    for k in range(10):
        sol = mpc.solve((0.4 * k, 0.0, 0.0))
        statuses.append(sol.status)
        vs.append(sol.v)
    assert statuses[:2] == ["solved", "solved"]
    assert statuses[2:5] == ["fallback"] * 3
    assert statuses[5:7] == ["safe_stop"] * 2
    assert statuses[7] == "solved"
    assert statuses[8] == "fallback"  # NaN solution with a 'solved' status is a failure too
    assert statuses[9] == "solved"
    # fallback uses the previous plan; safe stop brakes at brake_decel (and steers along the path)
    assert vs[5] == pytest.approx(vs[4] - 2.0 * 0.1)
    assert vs[6] == pytest.approx(vs[5] - 2.0 * 0.1)


def test_a_finite_garbage_solved_solution_is_not_applied(backend):
    path = circle_path()
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=20, v_max=8.0, solver=backend))
    mpc.backend = FaultInjection(mpc.backend, corrupt=[1], corrupt_value=1e3)
    assert mpc.solve((0.0, 0.0, 0.0)).status == "solved"
    bad = mpc.solve((0.4, 0.0, 0.0))
    assert bad.status == "fallback" and "violates" in bad.solver_status
    assert abs(bad.v) <= 8.0 + 1e-9 and abs(bad.delta) <= 0.5  # the previous plan, not 1e3


def test_failures_in_closed_loop_are_logged_and_run_ends_with_safe_stop(backend):
    path = circle_path()
    st = mt.MPCSettings(horizon=20, v_max=4.0, max_fallback_steps=2, brake_decel=8.0, control_period=0.1,
                        solver=backend)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), st)
    # simulate() resets the controller but keeps its back end
    mpc.backend = FaultInjection(mpc.backend, fail=lambda k: k >= 5)
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": 2.7})
    res = mt.simulate(path, mpc, plant)
    assert res.reason == "safe_stop"
    codes = res.status.astype(int)
    assert list(codes[:5]) == [0] * 5
    assert list(codes[5:7]) == [2, 2]
    assert np.all(codes[7:] == 3)
    assert res.metrics["infeasible_steps"] == len(codes) - 5
    assert abs(res.v[-1]) < 0.05


# ---------------------------------------------------------------- options
@pytest.mark.parametrize("warm", ["solver", "shift", "none"])
def test_warm_start_options_give_the_same_plan(warm, backend):
    path = circle_path()
    st = mt.MPCSettings(horizon=20, v_max=8.0, warm_start=warm, eps_abs=1e-7, eps_rel=1e-7, solver=backend)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), st)
    mpc.solve((0.0, 0.3, 0.0))
    sol = mpc.solve((0.4, 0.25, 0.01))
    ref = mt.SpatialMPC(path, mt.VehicleParams(), st.replace(warm_start="none"))
    ref.solve((0.0, 0.3, 0.0))
    np.testing.assert_allclose(sol.u, ref.solve((0.4, 0.25, 0.01)).u, atol=1e-4)


@pytest.mark.parametrize("disc", ["euler", "rk4"])
def test_discretizations_and_iterations_track(disc, backend):
    path = circle_path()
    veh = mt.VehicleParams()
    mpc = mt.SpatialMPC(path, veh, mt.MPCSettings(horizon=20, v_max=8.0, discretization=disc, iterations=2,
                                                  solver=backend))
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})
    res = mt.simulate(path, mpc, plant, e_y0=0.5, t_max=8.0)
    assert np.abs(res.e_y[res.t > 5]).max() < 0.02


def test_delay_compensation_predicts_forward(backend):
    path = circle_path()
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=20, v_max=8.0, delay=0.2, solver=backend))
    first = mpc.solve((5.0, 0.0, 0.0))
    second = mpc.solve((5.0, 0.0, 0.0))
    assert first.s[0] == pytest.approx(5.0)
    assert second.s[0] == pytest.approx(5.0 + first.v * 0.2, rel=1e-6)


def test_corridor_provider_moves_reference_into_free_gap(backend):
    path = circle_path(R=40.0, width=4.0)

    class Blocked:
        def bounds(self, s, t=None, e_y0=None):
            lb = np.full(s.shape, -4.0)
            ub = np.where((s > 14) & (s < 20), -0.5, 4.0)  # obstacle on the centre line and left side
            return lb, ub

    veh = mt.VehicleParams()
    mpc = mt.SpatialMPC(path, veh, mt.MPCSettings(horizon=50, v_max=6.0, solver=backend), corridor=Blocked())
    sol = mpc.solve((0.0, 0.0, 0.0))
    # the whole body (rear overhang .. front bumper) stays right of the blocked part
    body_overlaps = (sol.s + veh.front_extent > 14.5) & (sol.s - veh.rear_overhang < 19.5)
    assert body_overlaps.sum() > 5
    assert np.all(sol.x[body_overlaps, 0] < -0.5 - veh.width / 2 + 0.05)
    assert sol.corridor_violation < 1e-3


def test_corridor_is_evaluated_at_the_predicted_time(backend):
    path = circle_path(R=40.0, width=4.0)
    seen = []

    class Recorder:
        def bounds(self, s, t=None, e_y0=None):
            seen.append((np.array(s), np.array(t), e_y0))
            return np.full(s.shape, -4.0), np.full(s.shape, 4.0)

    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=20, v_max=6.0, solver=backend),
                        corridor=Recorder())
    mpc.solve((0.0, 0.3, 0.0), t=10.0)
    mpc.solve((0.3, 0.3, 0.0), t=10.05)
    assert len(seen) == 4  # time-varying provider: asked twice per step (front arrives, rear leaves)
    veh = mpc.vehicle
    s0, horizon_end = 0.3, 0.3 + mpc.N * mpc.ds
    for (s, t, e_y0), shift in zip(seen[2:], (-veh.front_extent, veh.rear_overhang), strict=False):
        assert e_y0 == pytest.approx(0.3)
        # time at which the body covers s: predicted time grows by ds / v (v ~ 6 m/s) along the horizon
        at = s + shift
        inside = (at >= s0) & (at <= horizon_end)
        assert inside.sum() > 10
        np.testing.assert_allclose(t[inside], 10.05 + (at[inside] - s0) / 6.0, rtol=0, atol=0.01)
        assert np.all(t[at < s0] == pytest.approx(10.05))


def test_lateral_reference_moves_aside_early_with_bounded_slope():
    from mpc_tracking.mpc.reference import feasible_speed_profile, lateral_reference

    s = np.arange(0, 40, 0.5)
    lo = np.full(s.shape, -3.0)
    hi = np.where((s > 20) & (s < 25), -1.0, 3.0)  # blocked on the left from 20 to 25 m
    ref = lateral_reference(lo, hi, s, 0.2)
    assert np.all(ref <= hi + 1e-12) and np.all(ref >= lo - 1e-12)
    assert np.abs(np.diff(ref) / np.diff(s)).max() <= 0.2 + 1e-12
    assert ref[0] == 0.0 and ref[-1] == 0.0
    assert ref[np.searchsorted(s, 20.5)] == pytest.approx(-1.0)
    assert ref[np.searchsorted(s, 17.0)] == pytest.approx(-1.0 + 0.2 * 3.5, abs=0.11)  # already moving aside
    # 0 inside every bound: the centre line itself, whatever the bounds' shape
    rng = np.random.default_rng(1)
    assert not lateral_reference(-rng.uniform(0, 2, s.size), rng.uniform(0, 2, s.size), s, 0.2).any()
    # speed profile: braking into a slow section and accelerating out of it, within the limits
    v = feasible_speed_profile(np.where((s > 20) & (s < 25), 5.0, 15.0), s, 4.0, 2.0, 15.0, 0.5)
    dv2 = np.diff(v**2) / np.diff(s)
    assert dv2.min() >= -2 * 4.0 - 1e-9 and dv2.max() <= 2 * 2.0 + 1e-9
    assert v[np.searchsorted(s, 22.0)] == pytest.approx(5.0)
    assert v[0] == pytest.approx(min(15.0, np.sqrt(25 + 2 * 4.0 * 20.5)), rel=1e-6)


def test_a_path_tighter_than_the_turning_radius_is_reported_where(caplog):
    """The bundled rc_course has 0.15 m corners; the RC car turns no tighter than 0.26 / tan(0.6)
    = 0.38 m: the warning names the radius, where, the vehicle's radius and how much is affected."""
    path = mt.load_path("rc_course")
    with caplog.at_level(logging.WARNING, logger="mpc_tracking"):
        mt.SpatialMPC(path, mt.VehicleParams.rc_car(), mt.MPCSettings(delta_max=0.6, horizon=10))
    msg = caplog.text
    assert "radius 0.15 m at s =" in msg and "minimum turning radius 0.38 m" in msg
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mpc_tracking"):
        mt.SpatialMPC(mt.load_path("oval"), mt.VehicleParams(), mt.MPCSettings(delta_max=0.6, horizon=10))
    assert "turning radius" not in caplog.text


def test_horizon_has_an_upper_bound():
    with pytest.raises(mt.SettingsError, match="horizon: expected at most 10000"):
        mt.MPCSettings(horizon=100_000_000)


def test_shifted_operating_point_is_the_linear_interpolation_of_the_last_plan(backend):
    """The uniform-grid shortcut gives the numbers of LinearTable on the last plan, for any shift
    within the horizon, and steps aside where the grids are not uniform (an open path's end)."""
    from mpc_tracking.paths.interpolation import LinearTable

    st = mt.MPCSettings(horizon=10, v_max=12.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0, solver=backend)
    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(), st)
    mpc.solve((3.0, 0.5, 0.0))
    prev = mpc.safeguards.last_plan
    for shift in (0.0, 0.1, 0.49, 0.5, 0.77, 1.3, 4.99, 5.0):
        s_new = mpc._grid(prev.s[0] + shift)
        fast = mpc._shift_uniform(prev.s, s_new)
        assert fast is not None
        np.testing.assert_allclose(fast, LinearTable(prev.s, mpc._prev_table)(s_new), rtol=0, atol=1e-12)
    assert mpc._shift_uniform(prev.s, mpc._grid(prev.s[0] + 5.2)) is None  # beyond the old horizon
    assert mpc._shift_uniform(prev.s, mpc._grid(prev.s[0] - 0.1)) is None  # backwards
    line = mt.ReferencePath([0.0, 30.0], [0.0, 0.0], ds=0.5, width_left=3.0, width_right=3.0)
    end = mt.SpatialMPC(line, mt.VehicleParams(), st)
    end.solve((26.0, 0.0, 0.0))
    assert end._shift_uniform(end.safeguards.last_plan.s, end._grid(26.2)) is None  # the grid is clamped at 30 m
    assert end.solve((26.2, 0.0, 0.0)).success
