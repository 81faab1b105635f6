"""The condensed DAQP back end (``MPCSettings.solver = "daqp"``, :mod:`mpc_tracking.mpc.condensed`).

Its agreement with the independent cvxpy reference on every kind of constraint is in
``tests/mpc/test_cvxpy_ref.py``; here: the condensing itself against the sparse QP, agreement
with OSQP in closed loop (both prediction models, the disturbance observer), failures that take
the fallback path, and bad settings.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.environment.corridor import CircleObstacle, ObstacleCorridor
from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc import qp as qp_module
from mpc_tracking.mpc.condensed import CondensedDAQP

VEH = mt.VehicleParams()
# closed loops of OSQP (eps 1e-8) and DAQP, whole lap: measured worst command differences 1.4e-7 rad
# and 3.8e-6 m/s (N = 8 and 40); ~4x
DELTA_TOL = 5e-7
V_TOL = 1.5e-5
BASE = mt.MPCSettings(horizon=25, v_max=12.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0)


def _oval():
    return mt.load_path("oval", ds=0.5)


def _built(settings=BASE, state=(5.0, 0.4, 0.05), corridor=None):
    """A controller after one solve (its QP data and dynamics are this step's)."""
    mpc = mt.SpatialMPC(_oval(), VEH, settings, corridor=corridor)
    mpc.solve(state)
    return mpc


def test_condensed_cost_and_states_equal_the_sparse_qp():
    """For any inputs U: X = Theta U + c satisfies the dynamics rows, and the condensed cost equals the
    sparse QP's cost 1/2 z'Pz + q'z up to a constant (checked on differences between random U)."""
    mpc = _built()
    lay, d = mpc.layout, mpc.data
    A, B, _f = mpc.qp.dynamics
    dq = CondensedDAQP(lay, mpc.P, d.A_data, BASE.slack_weight, mpc.qp.slack_quad)
    H, f = dq.condense(A, B, d)
    T = dq._Th[:, : lay.nx, :].reshape(-1, 1 + lay.nU)
    P = (mpc.P + mpc.P.T).toarray() - np.diag(mpc.P.diagonal())
    Aq = d.A()
    rng = np.random.default_rng(3)

    def sparse_cost(U):
        z = np.zeros(lay.n)
        z[: lay.nX] = T[:, 1:] @ U + T[:, 0]
        z[lay.nX : lay.nX + lay.nU] = U
        dyn = Aq[: lay.nX] @ z
        np.testing.assert_allclose(dyn, d.l[: lay.nX], atol=1e-9)  # x_0 = x0 and the dynamics hold
        return 0.5 * z @ (P @ z) + d.q @ z

    U0 = rng.normal(size=lay.nU)
    for _ in range(5):
        U = rng.normal(size=lay.nU)
        expected = sparse_cost(U) - sparse_cost(U0)
        got = 0.5 * U @ H @ U + f @ U - (0.5 * U0 @ H @ U0 + f @ U0)
        assert got == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert np.allclose(H, H.T) and np.linalg.eigvalsh(H).min() > 0


@pytest.mark.parametrize("N", [8, 40])
def test_daqp_and_osqp_give_the_same_closed_loop(N):
    path = _oval()
    out = {}
    for solver in ("osqp", "daqp"):
        # OSQP at eps 1e-8: both solve each step's QP exactly, so the runs stay together
        st = BASE.replace(horizon=N, solver=solver, eps_abs=1e-8, eps_rel=1e-8, max_iter=50000)
        plant = mt.create_model("kinematic_bicycle", {"wheelbase": VEH.wheelbase})
        out[solver] = mt.simulate(path, mt.SpatialMPC(path, VEH, st), plant, laps=1, e_y0=1.0)
    a, b = out["osqp"], out["daqp"]
    assert a.reason == b.reason == "completed"
    assert np.all(np.asarray(b.series["status"]) == 0)  # every step solved
    n = min(len(a.series["t"]), len(b.series["t"]))
    assert np.abs(a.series["delta_cmd"][:n] - b.series["delta_cmd"][:n]).max() < DELTA_TOL
    assert np.abs(a.series["v_cmd"][:n] - b.series["v_cmd"][:n]).max() < V_TOL
    assert b.metrics["rms_e_y"] == pytest.approx(a.metrics["rms_e_y"], rel=1e-6)  # measured 8e-8
    assert b.lap_times[0] == pytest.approx(a.lap_times[0], rel=1e-7)  # measured 1e-8


def test_daqp_solves_the_dynamic_model_and_the_disturbance_observer_like_osqp():
    """Speed-as-state rows (the dynamic model) and the observer's shift of the affine terms."""
    path = _oval()
    st = BASE.replace(prediction_model="dynamic", horizon=20, eps_abs=1e-8, eps_rel=1e-8, max_iter=50000,
                      disturbance_observer=True)
    sols = {}
    for solver in ("osqp", "daqp"):
        mpc = mt.SpatialMPC(path, VEH, st.replace(solver=solver))
        meas = {"v_x": 8.0, "v_y": 0.1, "r": 0.05, "speed": 8.0}
        for k in range(4):
            sol = mpc.solve((5.0 + 0.4 * k, 0.3 - 0.05 * k, 0.02), t=0.05 * k, measured=meas)
        sols[solver] = sol
    assert sols["daqp"].status == mt.Status.SOLVED
    # OSQP stops at 3x the settings' tolerances for this model (DynamicPrediction.QP_TOLERANCE_FACTOR): at eps 1e-8
    # its plan stays within these of DAQP's exact solution
    np.testing.assert_allclose(sols["daqp"].u, sols["osqp"].u, atol=2e-5)
    np.testing.assert_allclose(sols["daqp"].x, sols["osqp"].x, atol=1e-5)


@pytest.mark.parametrize("slack_weight, slack_quad", [(BASE.slack_weight, None), (5.0, 20.0)])
def test_start_outside_the_corridor_uses_the_soft_corridor_like_osqp(slack_weight, slack_quad, monkeypatch):
    """The slacks recovered from the condensed solution are the corridor violation OSQP reports, and
    DAQP's soft rows weigh a violation as the sparse QP's slacks do (linear and quadratic part)."""
    if slack_quad is not None:
        monkeypatch.setattr(qp_module, "SLACK_QUAD", slack_quad)
    st = BASE.replace(eps_abs=1e-8, eps_rel=1e-8, max_iter=50000, slack_weight=slack_weight)
    state = (5.0, 3.6, 0.0)  # beyond the oval's left edge (4 m, less half the car's width)
    a = _built(st, state).solve(state)
    b = _built(st.replace(solver="daqp"), state).solve(state)
    assert a.corridor_violation > 0.5
    assert b.corridor_violation == pytest.approx(a.corridor_violation, abs=1e-5)
    np.testing.assert_allclose(b.u, a.u, atol=1e-4)


def test_hard_obstacle_qps_take_daqp_a_bounded_number_of_iterations():
    """The QPs that take ADMM thousands of iterations (a car beside an obstacle, long chains of
    active rows) are exact active-set solves of a few hundred iterations at most."""
    path = _oval()
    corridor = ObstacleCorridor(path, [CircleObstacle((15.0, -20.0), 1.0)])
    st = BASE.replace(horizon=30, corridor_margin=0.2, slack_weight=50.0)
    rng = np.random.default_rng(7)
    iters = {"osqp": [], "daqp": []}
    for solver in iters:
        mpc = mt.SpatialMPC(path, VEH, st.replace(solver=solver), corridor=corridor)
        rng = np.random.default_rng(7)
        for k in range(6):
            state = (30.6 + 0.6 * k, rng.uniform(-1.0, 1.0), rng.uniform(-0.2, 0.2))
            sol = mpc.solve(state, t=0.05 * k)
            iters[solver].append(sol.iterations if sol.success else st.max_iter)
    assert max(iters["daqp"]) < 500, iters
    assert max(iters["osqp"]) > 5 * max(iters["daqp"]), iters  # why the back end exists


def test_daqp_failure_takes_the_fallback_path(caplog):
    st = BASE.replace(solver="daqp", max_iter=1)
    mpc = _built(BASE.replace(solver="daqp"))
    failing = mt.SpatialMPC(_oval(), VEH, st)
    with caplog.at_level("WARNING", logger="mpc_tracking"):
        sol = failing.solve((5.0, 1.5, 0.3))
    assert not sol.success and sol.status in (mt.Status.SAFE_STOP, mt.Status.FALLBACK)
    assert "iteration limit" in sol.solver_status and "exit flag -4" in sol.solver_status
    assert any("DAQP iteration limit" in r.getMessage() for r in caplog.records)
    assert mpc.solve((5.3, 0.35, 0.04)).success


def test_daqp_time_limit_takes_the_fallback_path():
    mpc = mt.SpatialMPC(_oval(), VEH, BASE.replace(solver="daqp", horizon=50, max_solve_time=1e-9))
    sol = mpc.solve((5.0, 1.5, 0.3))
    assert not sol.success and "time limit" in sol.solver_status


def test_bad_solver_settings_are_named():
    with pytest.raises(SettingsError, match=r"MPCSettings.solver: expected one of \('osqp', 'daqp'\), got 'qpoases'"):
        mt.MPCSettings(solver="qpoases")
    st = BASE.replace(solver="daqp", prediction_model="dynamic", friction_ellipse=True, ellipse_cuts=True)
    with pytest.raises(SettingsError, match="friction-ellipse cuts"):
        mt.SpatialMPC(_oval(), VEH, st)


def test_missing_daqp_package_is_a_settings_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "daqp", None)  # import daqp raises ImportError
    with pytest.raises(SettingsError, match=r"needs the daqp package \(a dependency of mpc_tracking"):
        mt.SpatialMPC(_oval(), VEH, BASE.replace(solver="daqp"))


def test_an_unsuitable_warm_start_falls_back_to_a_cold_start():
    """A last active set that does not fit this QP must not fail the step: here every row starts
    active, which takes DAQP 68 iterations to undo against 42 from a cold start, so with an
    iteration limit of 50 only the cold retry solves it."""
    st = BASE.replace(solver="daqp", max_iter=50)
    mpc = _built(st)
    cold = _built(st.replace(warm_start="none"))
    state = (5.3, 0.35, 0.04)
    mpc.solver._prev_active = np.arange(mpc.solver._sense0.size)  # the back end's CondensedDAQP
    sol, ref = mpc.solve(state), cold.solve(state)
    assert sol.status == mt.Status.SOLVED
    np.testing.assert_allclose(sol.u, ref.u, atol=1e-9)


def test_a_path_without_widths_tracks_with_daqp_as_with_osqp():
    """No widths: infinite corridor bounds (DAQP's 1e30 'no bound') on every soft row."""
    th = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    path = mt.ReferencePath(30 * np.cos(th), 18 * np.sin(th), closed=True, ds=0.5)
    res = {}
    for solver in ("osqp", "daqp"):
        mpc = mt.SpatialMPC(path, VEH, BASE.replace(horizon=30, v_max=10.0, solver=solver))
        plant = mt.create_model("kinematic_bicycle", {"wheelbase": VEH.wheelbase})
        res[solver] = mt.simulate(path, mpc, plant, laps=1, e_y0=0.5)
    assert res["daqp"].reason == "completed" and res["daqp"].metrics["infeasible_steps"] == 0
    # OSQP at eps 1e-5 against the exact solve: measured 5e-6 relative
    assert res["daqp"].metrics["rms_e_y"] == pytest.approx(res["osqp"].metrics["rms_e_y"], rel=2e-5)
