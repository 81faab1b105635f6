"""The QP's variable scaling (``PredictionModel.variable_scale``, applied by the OSQP back end): the same QP."""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import SettingsError
from mpc_tracking.models.prediction import DynamicPrediction, KinematicPrediction, dynamic_params_from_ackermann3d
from mpc_tracking.mpc import backends
from mpc_tracking.mpc.cvxpy_dynamic import CvxpyDynamicMPC

SEDAN = mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)
BASE = mt.MPCSettings(horizon=20, v_max=16.0, a_y_max=6.0, decel_max=6.0, accel_max=3.0, delta_max=0.6,
                      delta_rate_max=0.8, prediction_model="dynamic", discretization="rk4", friction_ellipse=True,
                      ds=0.8, slack_weight=50.0,
                      grip_estimation=False)  # the QPs are compared at the limits as set (cvxpy has no estimate)


@pytest.fixture(scope="module")
def params():
    return dynamic_params_from_ackermann3d(mt.Ackermann3DParams.sedan())


def test_variable_scale_of_the_models(params) -> None:
    """Acceleration at its limit, the speed at the change it makes over one step at the top speed; the kinematic
    model is not scaled."""
    model = DynamicPrediction(params)
    x_s, u_s = model.variable_scale(BASE, 0.8)
    np.testing.assert_array_equal(x_s, [1, 1, 1, 3.0 * 0.8 / 16.0, 1, 1])
    np.testing.assert_array_equal(u_s, [3.0, 1.0])
    x_s, u_s = model.variable_scale(BASE.replace(accel_max=float("inf"), decel_max=float("inf")), 0.5)
    assert u_s[0] == 6.0 and x_s[3] == 6.0 * 0.5 / 16.0  # no finite longitudinal limit: a_y_max
    x_s, u_s = KinematicPrediction(SEDAN).variable_scale(BASE, 0.8)
    assert (x_s == 1).all() and (u_s == 1).all()
    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), SEDAN, BASE, prediction=model)
    struct = backends.QPStructure(mpc.layout, mpc.P, mpc.data.A_data.copy(), mpc.qp.slack_quad,
                                  mpc.layout.column_scale(*model.variable_scale(BASE, mpc.ds)))
    scale = backends.get("osqp")(struct, BASE).scale  # without the equilibration: the model's scale alone
    assert scale is not None and scale[mpc.layout.u_index(2, 0)] == 3.0
    assert scale[mpc.layout.x_index(4, 3)] == pytest.approx(0.15, rel=1e-15)
    assert mt.SpatialMPC(mt.load_path("oval", ds=0.5), SEDAN, BASE.replace(prediction_model="kinematic")).backend \
        .scale is None


def _step(mpc: mt.SpatialMPC, state: tuple[float, float, float], meas: dict) -> tuple:
    step = mpc._prepare(state, meas)
    d = mpc.build_qp(step)
    return d, mpc.qp.dynamics


@pytest.mark.parametrize("s0", [5.0, 60.0, 130.0])
def test_scaled_and_unscaled_osqp_solve_the_same_qp(params, s0: float) -> None:
    """One step's QP solved tightly in the scaled and in the original variables: the same solution (1e-6), and
    it satisfies the QP's rows in the original variables."""
    st = BASE.replace(eps_abs=1e-9, eps_rel=1e-9, max_iter=200000)
    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), SEDAN, st, prediction=DynamicPrediction(params))
    meas = {"v_x": 12.0, "v_y": 0.2, "r": 0.1}
    d, (A, B, _f) = _step(mpc, (s0, 0.4, 0.05), meas)
    plain = backends.get("osqp")(backends.QPStructure(mpc.layout, mpc.P, d.A_data.copy(), mpc.qp.slack_quad), st)
    assert plain.scale is None and mpc.backend.scale is not None
    a, b = mpc.backend.solve(d, A, B), plain.solve(d, A, B)
    assert a.success and b.success
    np.testing.assert_allclose(a.z, b.z, atol=1e-6, rtol=0)
    assert mpc.safeguards.check_solution(d, a.z) is None


def test_default_tolerance_plan_against_cvxpy(params) -> None:
    """At the default tolerances (eps 1e-5) the scaled QP's plans are about as close to the independent cvxpy
    reference (Clarabel, tight) as the unscaled QP's (within 2x; same stopping rule): the scaling changes the
    solver's path, not the answer."""
    path = mt.load_path("oval", ds=0.5)
    rng = np.random.default_rng(11)
    err = {"scaled": 0.0, "plain": 0.0}
    for s0 in (5.0, 40.0, 80.0, 120.0):
        model = DynamicPrediction(params)
        mpc = mt.SpatialMPC(path, SEDAN, BASE, prediction=model)
        ref = CvxpyDynamicMPC(path, SEDAN, BASE, model)
        plain = mt.SpatialMPC(path, SEDAN, BASE, prediction=model)
        plain.backend = backends.get("osqp")(  # the same stopping rule (the model's duality-gap check)
            backends.QPStructure(plain.layout, plain.P, plain.data.A_data.copy(), plain.qp.slack_quad,
                                 check_duality_gap=model.CHECK_DUALITY_GAP), BASE)
        state = (s0, rng.uniform(-0.5, 0.5), rng.uniform(-0.1, 0.1))
        meas = {"v_x": rng.uniform(9.0, 15.0), "v_y": rng.uniform(-0.3, 0.3), "r": rng.uniform(-0.3, 0.3)}
        cv = ref.solve(state, measured=meas)
        for name, ctrl in (("scaled", mpc), ("plain", plain)):
            sol = ctrl.solve(state, measured=meas)
            assert sol.success
            err[name] = max(err[name], float(np.abs(sol.u - cv["u"]).max()))
    assert err["scaled"] <= max(2.0 * err["plain"], 1e-4), err  # both stop on the residuals: 1.4e-3 vs 0.9e-3
    assert err["scaled"] < 1e-2, err


@pytest.mark.parametrize("bad", ["wrong size", "a zero", "a nan"])
def test_bad_scale_is_a_settings_error(params, bad: str) -> None:
    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), SEDAN, BASE, prediction=DynamicPrediction(params))
    scale = np.ones(3) if bad == "wrong size" else np.ones(mpc.layout.n)
    if bad != "wrong size":
        scale[7] = 0.0 if bad == "a zero" else np.nan
    with pytest.raises(SettingsError, match=r"QPStructure\.scale: expected"):
        backends.get("osqp")(backends.QPStructure(mpc.layout, mpc.P, mpc.data.A_data.copy(), mpc.qp.slack_quad,
                                                  scale), BASE)


@pytest.mark.parametrize("prediction_model", ["dynamic", "kinematic"])
def test_osqp_equilibration_passes_keep_the_answer(params, prediction_model: str, monkeypatch) -> None:
    """OSQP runs ``SCALING_PASSES`` Ruiz passes (fewer than its default 10: each is paid on every update), or none
    on the dynamic model's QP, equilibrated once (``EQUILIBRATE_ONCE``); at the default tolerances the plans of a
    dozen states along the oval stay as close to a tight solve of the same QPs as with OSQP's 10 passes at every
    update (within 2x, and 1e-2 in the inputs' units: m/s^2 or m/s, rad)."""
    from mpc_tracking.mpc.backends import osqp as osqp_backend
    from mpc_tracking.mpc.backends.osqp import SCALING_PASSES

    path = mt.load_path("oval", ds=0.5)
    st = BASE.replace(prediction_model=prediction_model)
    model = DynamicPrediction(params) if prediction_model == "dynamic" else None
    mpc = mt.SpatialMPC(path, SEDAN, st, prediction=model)
    once = prediction_model == "dynamic"
    assert mpc.model.EQUILIBRATE_ONCE is once and (mpc.backend.row_scale is not None) is once
    assert mpc.solver.settings.scaling == (0 if once else SCALING_PASSES) < 10
    var_scale = mpc.layout.column_scale(*mpc.model.variable_scale(st, mpc.ds))
    struct = backends.QPStructure(mpc.layout, mpc.P, mpc.data.A_data.copy(), mpc.qp.slack_quad,
                                  None if (var_scale == 1).all() else var_scale, mpc.model.CHECK_DUALITY_GAP)
    tight = backends.get("osqp")(struct, st.replace(eps_abs=1e-10, eps_rel=1e-10, max_iter=200000))
    monkeypatch.setattr(osqp_backend, "SCALING_PASSES", 10)
    ten = backends.get("osqp")(struct, st)
    assert ten.solver.settings.scaling == 10
    rng = np.random.default_rng(3)
    err = {"passes": 0.0, "ten": 0.0}
    for s0 in np.linspace(2.0, 150.0, 12):
        meas = {"v_x": rng.uniform(9.0, 15.0), "v_y": rng.uniform(-0.3, 0.3), "r": rng.uniform(-0.3, 0.3)}
        step = mpc._prepare((s0, rng.uniform(-0.5, 0.5), rng.uniform(-0.1, 0.1)), meas)
        d = mpc.build_qp(step)
        A, B, _f = mpc.qp.dynamics
        ref = tight.solve(d, A, B)
        u = slice(mpc.layout.nX, mpc.layout.nX + mpc.layout.nU)
        for name, backend in (("passes", mpc.backend), ("ten", ten)):
            res = backend.solve(d, A, B)
            assert res.z is not None and ref.z is not None
            err[name] = max(err[name], float(np.abs(res.z[u] - ref.z[u]).max()))
    assert err["passes"] <= max(2.0 * err["ten"], 1e-5) and err["passes"] < 1e-2, err


@pytest.mark.parametrize("prediction_model", ["dynamic", "kinematic"])
def test_duality_gap_check_of_the_models(params, prediction_model: str) -> None:
    """The dynamic model's QP stops on OSQP's residuals alone (``CHECK_DUALITY_GAP = False``), the kinematic one's
    waits for the duality gap too; at the default tolerances the first inputs of both stay within 1e-2
    (m/s^2 or m/s, rad) of a tight solve of the same QPs (measured: 1.2e-3 and 1.3e-5)."""
    path = mt.load_path("oval", ds=0.5)
    st = BASE.replace(prediction_model=prediction_model)
    model = DynamicPrediction(params) if prediction_model == "dynamic" else None
    mpc = mt.SpatialMPC(path, SEDAN, st, prediction=model)
    gap = prediction_model == "kinematic"
    assert mpc.model.CHECK_DUALITY_GAP is gap and bool(mpc.solver.settings.check_dualgap) is gap
    tight = backends.get("osqp")(backends.QPStructure(mpc.layout, mpc.P, mpc.data.A_data.copy(), mpc.qp.slack_quad,
                                                      mpc.backend.scale),
                                 st.replace(eps_abs=1e-10, eps_rel=1e-10, max_iter=200000))
    rng = np.random.default_rng(4)
    err = 0.0
    u0 = slice(mpc.layout.nX, mpc.layout.nX + mpc.nu)
    for s0 in np.linspace(2.0, 150.0, 12):
        meas = {"v_x": rng.uniform(9.0, 15.0), "v_y": rng.uniform(-0.3, 0.3), "r": rng.uniform(-0.3, 0.3)}
        step = mpc._prepare((s0, rng.uniform(-0.5, 0.5), rng.uniform(-0.1, 0.1)), meas)
        d = mpc.build_qp(step)
        A, B, _f = mpc.qp.dynamics
        ref, res = tight.solve(d, A, B), mpc.backend.solve(d, A, B)
        assert ref.z is not None and res.z is not None
        err = max(err, float(np.abs(res.z[u0] - ref.z[u0]).max()))
    assert err < 1e-2, err


def test_equilibrate_balances_the_kkt_matrix() -> None:
    """After the passes every column of ``[[P, A'], [A, 0]]`` and every row of ``A`` has its largest entry near 1
    (Ruiz converges to it); a given variable scale is applied first and kept as a factor; the scales of a
    column or row without entries stay 1."""
    from scipy import sparse

    from mpc_tracking.mpc.backends.equilibration import equilibrate

    rng = np.random.default_rng(2)
    n, m = 12, 9
    M = rng.normal(size=(n, n)) * 10.0 ** rng.uniform(-3, 3, size=n)
    P = M @ M.T  # symmetric, badly scaled
    P[:, 4] = P[4, :] = 0.0
    A = rng.normal(size=(m, n)) * 10.0 ** rng.uniform(-3, 3, size=(m, 1)) * (rng.uniform(size=(m, n)) < 0.5)
    A[:, 4] = 0.0
    A[6, :] = 0.0
    given = 10.0 ** rng.uniform(-1, 1, size=n)
    col, row = equilibrate(sparse.triu(sparse.csc_matrix(P)), sparse.csc_matrix(A), given, passes=60)
    Ps, As = np.outer(col, col) * P, np.outer(row, col) * A
    cn = np.maximum(np.abs(Ps).max(axis=0), np.abs(As).max(axis=0))
    rn = np.abs(As).max(axis=1)
    live = np.arange(n) != 4
    np.testing.assert_allclose(cn[live], 1.0, rtol=1e-3)
    np.testing.assert_allclose(np.delete(rn, 6), 1.0, rtol=1e-3)
    assert col[4] == given[4] and row[6] == 1.0
    # the same from the upper triangle or the whole matrix, and a scale is a change of variables: the product
    # col is what equilibrating the scaled matrices gives
    col2, row2 = equilibrate(sparse.csc_matrix(P), sparse.csc_matrix(A), given, passes=60)
    np.testing.assert_allclose(col2, col, rtol=1e-12)
    np.testing.assert_allclose(row2, row, rtol=1e-12)


@pytest.mark.parametrize("bad", ["passes", "shape", "scale"])
def test_equilibrate_bad_input_is_a_settings_error(bad: str) -> None:
    from scipy import sparse

    from mpc_tracking.mpc.backends.equilibration import equilibrate

    P, A = sparse.eye(3, format="csc"), sparse.eye(2, 3, format="csc")
    with pytest.raises(SettingsError, match=r"equilibrate: " + {"passes": "passes", "shape": "P", "scale": "scale"}[bad]):
        if bad == "passes":
            equilibrate(P, A, passes=0)
        elif bad == "shape":
            equilibrate(sparse.eye(2, format="csc"), A)
        else:
            equilibrate(P, A, np.array([1.0, 0.0, 1.0]))


def test_equilibrated_once_over_a_range_of_speeds(params) -> None:
    """The dynamic model's QP rows are equilibrated on the first step's matrices (at the reference speed from
    s = 0) and keep that scaling at every later step: QPs at 4-30 m/s solved (from a cold start) at the default
    tolerances are as close to a tight solve of the same QP (within 2x, and 2e-2 in m/s^2, rad) as with OSQP's own
    passes at every update; the columns keep the model's variable scale."""
    path = mt.load_path("oval", ds=0.5)
    st = BASE.replace(v_max=32.0, a_y_max=9.0)
    mpc = mt.SpatialMPC(path, SEDAN, st, prediction=DynamicPrediction(params))
    assert mpc.backend.row_scale is not None
    struct = backends.QPStructure(mpc.layout, mpc.P, mpc.data.A_data.copy(), mpc.qp.slack_quad,
                                  mpc.layout.column_scale(*mpc.model.variable_scale(st, mpc.ds)), False)
    tight = backends.get("osqp")(struct, st.replace(eps_abs=1e-10, eps_rel=1e-10, max_iter=200000))
    each = backends.get("osqp")(struct, st)  # OSQP's own passes at every update
    rng = np.random.default_rng(5)
    u0 = slice(mpc.layout.nX, mpc.layout.nX + mpc.nu)
    err = {"once": 0.0, "each": 0.0}
    for s0, v in zip(np.linspace(2.0, 150.0, 10), np.linspace(4.0, 30.0, 10), strict=True):
        meas = {"v_x": v, "v_y": rng.uniform(-0.2, 0.2), "r": rng.uniform(-0.2, 0.2)}
        step = mpc._prepare((s0, rng.uniform(-0.5, 0.5), rng.uniform(-0.1, 0.1)), meas)
        d = mpc.build_qp(step)
        A, B, _f = mpc.qp.dynamics
        ref = tight.solve(d, A, B)
        assert ref.z is not None
        for name, backend in (("once", mpc.backend), ("each", each)):
            backend.solver.warm_start(x=np.zeros(mpc.layout.n), y=np.zeros(mpc.layout.m))  # (states far apart)
            res = backend.solve(d, A, B)
            assert res.z is not None and mpc.safeguards.check_solution(d, res.z) is None
            err[name] = max(err[name], float(np.abs(res.z[u0] - ref.z[u0]).max()))
    np.testing.assert_array_equal(mpc.backend.scale, struct.scale)
    assert err["once"] <= max(2.0 * err["each"], 1e-4) and err["once"] < 2e-2, err


def test_equilibrate_powers_of_two() -> None:
    """With ``powers_of_two`` each factor is the nearest power of two of the plain one (within sqrt 2), a given
    variable scale is kept exactly, and matrices that differ by rounding get the same factors."""
    from scipy import sparse

    from mpc_tracking.mpc.backends.equilibration import equilibrate

    rng = np.random.default_rng(8)
    n, m = 10, 7
    M = rng.normal(size=(n, n)) * 10.0 ** rng.uniform(-2, 2, size=n)
    P = sparse.csc_matrix(M @ M.T)
    A = sparse.csc_matrix(rng.normal(size=(m, n)) * 10.0 ** rng.uniform(-2, 2, size=(m, 1)))
    given = 10.0 ** rng.uniform(-1, 1, size=n)
    col, row = equilibrate(P, A, given)
    col2, row2 = equilibrate(P, A, given, powers_of_two=True)
    for plain, rounded in ((col / given, col2 / given), (row, row2)):
        k = np.log2(rounded)
        np.testing.assert_array_equal(k, np.round(k))
        assert (np.abs(np.log2(plain) - k) <= 0.5 + 1e-12).all()
    col3, row3 = equilibrate(P * (1.0 + 1e-15), A * (1.0 - 1e-15), given, powers_of_two=True)
    np.testing.assert_array_equal(col3, col2)
    np.testing.assert_array_equal(row3, row2)
