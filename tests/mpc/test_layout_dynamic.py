"""The dynamic model's QP without the time state t (issue 23, SPEED-D3).

Outside the time-optimal mode t feeds no other state and carries no cost, so the QP leaves it out
(:meth:`DynamicPrediction.qp_states <mpc_tracking.models.prediction.DynamicPrediction.qp_states>`) and the plan's
t is recomputed from its rows of the linearized dynamics (:meth:`QPLayout.expand_states
<mpc_tracking.mpc.layout.QPLayout.expand_states>`, compiled twin ``expand_states``). The time-optimal mode keeps t
and its cost.
"""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import InputError
from mpc_tracking.models.prediction import DynamicPrediction
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
from mpc_tracking.mpc import kernels
from mpc_tracking.mpc.layout import QPLayout

MEAS = {"v_x": 9.0, "v_y": 0.1, "r": 0.05}
N = 12


def _mpc(compiled: str = "python", **changes: object) -> mt.SpatialMPC:
    st = mt.MPCSettings(horizon=N, v_max=12.0, prediction_model="dynamic", grip_estimation=False,
                        compiled=compiled, **changes)  # type: ignore[arg-type]
    return mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(), st)


def _keep_t(model: DynamicPrediction) -> DynamicPrediction:
    """``model`` with t in the QP (the layout before SPEED-D3), on the instance: the controller keeps its compiled
    path (chosen for the class DynamicPrediction itself)."""
    model.qp_states = lambda settings: tuple(range(model.nx))  # type: ignore[method-assign]
    return model


@pytest.mark.parametrize("compiled", ["python", "numba"])
def test_tracking_qp_has_no_time_state(compiled: str) -> None:
    """Sizes of the dynamic model's QP in the tracking mode: 5 states per stage, no t column, no t dynamics row
    (fails when t is put back)."""
    if compiled == "numba" and not kernels.numba_available():
        pytest.skip("numba not installed")
    mpc = _mpc(compiled)
    lay, it = mpc.layout, mpc.model.I_T
    assert mpc.model.nx == 6 and lay.nx_model == 6
    assert lay.nx == 5 and lay.states == (0, 1, 3, 4, 5) and lay.dropped == (it,)
    assert lay.nX == 5 * (N + 1) and lay.r_box == lay.nX  # dynamics rows: 5 per stage
    assert lay.n == 5 * (N + 1) + 2 * N + lay.nE + 4 * (N + 1)  # states, inputs, ellipse slacks, corridor slacks
    assert lay.dyn_pos_A.size == N * 25 and lay.dyn_pos_B.size == N * 5 * 2
    with pytest.raises(ValueError, match="state index the QP holds"):
        lay.x_index(0, it)
    assert lay.x_index(3, mpc.model.I_SPEED) == 5 * 3 + 2
    assert mpc.P.shape == (lay.n, lay.n) and mpc.data.q.size == lay.n
    sol = mpc.solve((10.0, 0.3, 0.02), measured=MEAS)
    assert sol.success and sol.x.shape == (N + 1, 6)
    t = sol.x[:, it]  # recomputed: starts at 0 and grows by about ds / v per step
    assert t[0] == 0.0 and np.all(np.diff(t) > 0.0)
    np.testing.assert_allclose(np.diff(t), mpc.ds / sol.x[:-1, 3], rtol=0.1)  # (s_dot also has e_y, e_psi, v_y)


def test_time_optimal_mode_keeps_and_uses_t() -> None:
    """The time-optimal mode keeps t in the QP (6 states per stage) and puts its cost on t_N; so does a weight
    on t in Q."""
    mpc = _mpc(mode="time_optimal", time_weight=7.0)
    lay, it = mpc.layout, mpc.model.I_T
    assert lay.nx == 6 and lay.states == tuple(range(6)) and lay.dropped == ()
    d = mpc.build_qp(mpc._prepare((10.0, 0.3, 0.02), MEAS))
    col = lay.x_index(N, it)
    assert d.q[col] == 7.0  # (no state target on t)
    sol = mpc.solve((10.0, 0.3, 0.02), measured=MEAS)
    assert sol.success and sol.x[N, it] > 0.0
    weighted = _mpc(Q=[1.0, 1.0, 1e-3])
    assert weighted.layout.nx == 6 and weighted.P.tocsc()[:, weighted.layout.x_index(N, it)].nnz


@pytest.mark.parametrize("compiled", ["python", "numba"])
@pytest.mark.parametrize("changes", [{}, {"discretization": "rk4", "disturbance_observer": True},
                                     {"friction_ellipse": True, "ellipse_cuts": True}])
def test_plan_equals_the_plan_with_t_in_the_qp(compiled: str, changes: dict) -> None:
    """A short closed loop without t in the QP gives the plans (t included) of the QP that holds t, to OSQP's
    tolerance; the iterations are the same."""
    if compiled == "numba" and not kernels.numba_available():
        pytest.skip("numba not installed")
    path = mt.load_path("oval", ds=0.5)
    st = mt.MPCSettings(horizon=N, v_max=12.0, prediction_model="dynamic", grip_estimation=False, compiled=compiled,
                        eps_abs=1e-9, eps_rel=1e-9, max_iter=100000, **changes)  # type: ignore[arg-type]
    params = DynamicParams.bmw_320i()
    a = mt.SpatialMPC(path, mt.VehicleParams(), st, prediction=DynamicPrediction(params))
    b = mt.SpatialMPC(path, mt.VehicleParams(), st, prediction=_keep_t(DynamicPrediction(params)))
    assert a.layout.nx == 5 and b.layout.nx == 6
    assert a.qp._compiled_dynamic_model == b.qp._compiled_dynamic_model == (compiled == "numba")
    rng = np.random.default_rng(5)
    for k in range(5):
        state = (8.0 + 1.5 * k, rng.uniform(-0.4, 0.4), rng.uniform(-0.05, 0.05))
        meas = {"v_x": rng.uniform(7.0, 11.0), "v_y": rng.uniform(-0.2, 0.2), "r": rng.uniform(-0.2, 0.2)}
        sa, sb = a.solve(state, t=0.1 * k, measured=meas), b.solve(state, t=0.1 * k, measured=meas)
        assert sa.success and sb.success
        np.testing.assert_allclose(sa.x, sb.x, atol=1e-5)
        np.testing.assert_allclose(sa.u, sb.u, atol=1e-5)
        # the recomputed t satisfies the t rows of the QP's dynamics exactly (b's to its tolerance)
        A, B, f = a.qp.dynamics
        it = a.model.I_T
        rows = np.einsum("kj,kj->k", A[:, it], sa.x[:-1]) + np.einsum("kj,kj->k", B[:, it], sa.u) + f[:, it]
        np.testing.assert_allclose(sa.x[1:, it], rows, rtol=0, atol=1e-12)


def test_expand_states_compiled_equals_numpy() -> None:
    """The compiled ``expand_states`` gives numpy's numbers (1e-12), with unit and non-unit diagonals."""
    if not kernels.numba_available():
        pytest.skip("numba not installed")
    kern = kernels.load()
    rng = np.random.default_rng(2)
    for unit in (True, False):
        lay = QPLayout(N, 3.5, 1.0, 6, 2, i_speed_state=3, states=(0, 1, 3, 4, 5))
        A = rng.normal(size=(N, 6, 6))
        A[:, [0, 1, 3, 4, 5], 2] = 0.0
        if unit:
            A[:, 2, 2] = 1.0
        B, f = rng.normal(size=(N, 6, 2)), rng.normal(size=(N, 6))
        zx, U, x0 = rng.normal(size=lay.nX), rng.normal(size=(N, 2)), rng.normal(size=6)
        ref = lay.expand_states(zx, U, x0, A, B, f)
        out = np.empty((N + 1, 6))
        kern.expand_states(zx, U, x0, A, B, f, np.ascontiguousarray(lay.x_col), out)
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(ref[:, [0, 1, 3, 4, 5]], zx.reshape(N + 1, 5))
        # the dropped state follows its rows of the dynamics
        want = np.empty(N + 1)
        want[0] = x0[2]
        for k in range(N):
            want[k + 1] = A[k, 2] @ ref[k] + B[k, 2] @ U[k] + f[k, 2]
        np.testing.assert_allclose(ref[:, 2], want, rtol=1e-12, atol=1e-12)


def test_layout_rejects_bad_states() -> None:
    with pytest.raises(ValueError, match="states"):
        QPLayout(N, 3.5, 1.0, 6, 2, states=(0, 3, 1))
    with pytest.raises(ValueError, match="i_speed_state"):
        QPLayout(N, 3.5, 1.0, 6, 2, i_speed_state=2, states=(0, 1, 3, 4, 5))
    with pytest.raises((ValueError, InputError)):
        QPLayout(N, 3.5, 1.0, 6, 2, states=(0, 1, 6))
