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
    scale = mpc.backend.scale
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
                                 check_duality_gap=model.CHECK_DUALITY_GAP, q=plain.data.q.copy(),
                                 tolerance_factor=model.QP_TOLERANCE_FACTOR), BASE)
        state = (s0, rng.uniform(-0.5, 0.5), rng.uniform(-0.1, 0.1))
        meas = {"v_x": rng.uniform(9.0, 15.0), "v_y": rng.uniform(-0.3, 0.3), "r": rng.uniform(-0.3, 0.3)}
        cv = ref.solve(state, measured=meas)
        for name, ctrl in (("scaled", mpc), ("plain", plain)):
            sol = ctrl.solve(state, measured=meas)
            assert sol.success
            err[name] = max(err[name], float(np.abs(sol.u - cv["u"]).max()))
    assert err["scaled"] <= max(2.0 * err["plain"], 1e-4), err  # the same rule: 3.6e-3 vs 3.8e-3
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
    """The QP is equilibrated with ``SCALING_PASSES`` Ruiz passes (fewer than OSQP's default 10; once at set-up, for
    both models: their QPs stop on the duality gap too); at the default tolerances the plans of a dozen
    states along the oval stay as close to a tight solve of the same QPs as with 10 passes (within 2x, and 1e-2 in
    the inputs' units: m/s^2 or m/s, rad)."""
    from mpc_tracking.mpc.backends import osqp as osqp_backend
    from mpc_tracking.mpc.backends.osqp import SCALING_PASSES

    path = mt.load_path("oval", ds=0.5)
    st = BASE.replace(prediction_model=prediction_model)
    model = DynamicPrediction(params) if prediction_model == "dynamic" else None
    mpc = mt.SpatialMPC(path, SEDAN, st, prediction=model)
    fixed = True  # both QPs' stopping rules include the duality gap
    assert mpc.backend.fixed_equilibration is fixed and SCALING_PASSES < 10
    assert mpc.solver.settings.scaling == (0 if fixed else SCALING_PASSES)
    struct = backends.QPStructure(mpc.layout, mpc.P, mpc.data.A_data.copy(), mpc.qp.slack_quad,
                                  mpc.backend.scale, mpc.model.CHECK_DUALITY_GAP,
                                  tolerance_factor=mpc.model.QP_TOLERANCE_FACTOR)
    tight = backends.get("osqp")(struct, st.replace(eps_abs=1e-10, eps_rel=1e-10, max_iter=200000))
    monkeypatch.setattr(osqp_backend, "SCALING_PASSES", 10)
    ten = backends.get("osqp")(struct, st)  # the same equilibration (once or by OSQP) with 10 passes
    assert ten.solver.settings.scaling == (0 if fixed else 10)
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
    """Both models' QPs wait for the duality gap too (``CHECK_DUALITY_GAP``), the dynamic one's at 3x the settings'
    tolerances (``QP_TOLERANCE_FACTOR``); at the default tolerances the first inputs of both stay within 1e-2
    (m/s^2 or m/s, rad) of a tight solve of the same QPs."""
    path = mt.load_path("oval", ds=0.5)
    st = BASE.replace(prediction_model=prediction_model)
    model = DynamicPrediction(params) if prediction_model == "dynamic" else None
    mpc = mt.SpatialMPC(path, SEDAN, st, prediction=model)
    assert mpc.model.CHECK_DUALITY_GAP and bool(mpc.solver.settings.check_dualgap)
    factor = 3.0 if prediction_model == "dynamic" else 1.0
    assert factor == mpc.model.QP_TOLERANCE_FACTOR
    assert mpc.solver.settings.eps_abs == factor * st.eps_abs and mpc.solver.settings.eps_rel == factor * st.eps_rel
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
