"""The QP's equilibration computed once (mpc.backends.equilibration) and the OSQP back end solving in it."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

import mpc_tracking as mt
from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc import backends, kernels
from mpc_tracking.mpc.backends import equilibration
from mpc_tracking.mpc.backends import osqp as osqp_backend
from mpc_tracking.mpc.qp import INF

needs_numba = pytest.mark.skipif(not kernels.numba_available(), reason="numba is not installed (extra 'fast')")


def test_no_pass_is_no_scaling() -> None:
    eq = equilibration.ruiz(sparse.eye(3), sparse.csc_matrix(np.ones((2, 3))), np.ones(3), 0)
    assert (eq.D == 1).all() and (eq.E == 1).all() and eq.c == 1.0


def test_one_entry_is_scaled_to_one_in_one_pass() -> None:
    """A = [[16]], P = 0, q = 0: the column and the row are divided by sqrt(16) each, the cost is not scaled (its norm
    is below the smallest scaled); a second pass changes nothing."""
    for passes in (1, 2, 5):
        eq = equilibration.ruiz(sparse.csc_matrix((1, 1)), sparse.csc_matrix([[16.0]]), np.zeros(1), passes)
        assert eq.D[0] == 0.25 and eq.E[0] == 0.25 and eq.c == 1.0


def test_the_linear_cost_sets_the_cost_factor() -> None:
    """P = I, A = I, q = (1000, 0): the KKT columns are already 1; the first pass divides the cost by |q|_inf, after
    which |q|_inf is 1 and the cost is not scaled again."""
    for passes in (1, 3):
        eq = equilibration.ruiz(sparse.eye(2, format="csc"), sparse.eye(2, format="csc"), np.array([1000.0, 0.0]),
                                passes)
        np.testing.assert_array_equal(eq.D, [1.0, 1.0])
        np.testing.assert_array_equal(eq.E, [1.0, 1.0])
        assert eq.c == pytest.approx(1e-3, rel=1e-15)


def test_many_passes_equilibrate_the_kkt_columns() -> None:
    """After many passes every column of the equilibrated constraint matrix and every row has an infinity norm
    close to 1 (without a cost: Ruiz's fixed point), for a badly scaled random matrix."""
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(6, 4)) * np.logspace(-2, 2, 6)[:, None] * np.logspace(1, -1, 4)[None, :]
    A = sparse.csc_matrix(dense)
    eq = equilibration.ruiz(sparse.csc_matrix((4, 4)), A, np.zeros(4), 40)
    scaled = np.abs(eq.E[:, None] * dense * eq.D[None, :])
    np.testing.assert_allclose(scaled.max(axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(scaled.max(axis=0), 1.0, atol=1e-6)


def test_entry_factors_follow_the_csc_pattern() -> None:
    rng = np.random.default_rng(1)
    dense = rng.normal(size=(5, 4)) * (rng.random((5, 4)) < 0.6)
    A = sparse.csc_matrix(dense)
    eq = equilibration.Equilibration(rng.random(4) + 0.5, rng.random(5) + 0.5, 0.3)
    f = eq.entry_factors(A.indptr, A.indices)
    expect = sparse.csc_matrix(sparse.diags(eq.E) @ A @ sparse.diags(eq.D))
    np.testing.assert_allclose(f * A.data, expect.data, rtol=1e-15, atol=0)


def _step_arrays(rng: np.random.Generator, n: int = 7, m: int = 9, nnz: int = 12) -> tuple[np.ndarray, ...]:
    q, Ax = rng.normal(size=n), rng.normal(size=nnz)
    lo, hi = rng.normal(size=m) - 1.0, rng.normal(size=m) + 1.0
    lo[[1, 4]] = -INF
    hi[[2, 4]] = INF
    return q, lo, hi, Ax, rng.random(n) + 0.1, rng.random(m) * 3.0 + 1e-3, rng.random(nnz) + 0.1


def test_apply_scales_and_keeps_the_infinite_bounds() -> None:
    q, lo, hi, Ax, cD, E, fA = _step_arrays(np.random.default_rng(2))
    out = (np.empty_like(q), np.empty_like(lo), np.empty_like(hi), np.empty_like(Ax))
    equilibration.apply(q, lo, hi, Ax, cD, E, fA, INF, out)
    np.testing.assert_array_equal(out[0], q * cD)
    np.testing.assert_array_equal(out[3], Ax * fA)
    fin_l, fin_u = lo > -INF, hi < INF
    np.testing.assert_array_equal(out[1][fin_l], (lo * E)[fin_l])
    np.testing.assert_array_equal(out[2][fin_u], (hi * E)[fin_u])
    assert (out[1][~fin_l] == -INF).all() and (out[2][~fin_u] == INF).all()


@needs_numba
def test_compiled_step_equals_numpy() -> None:
    """``_kernels.equilibrate_step`` gives apply's numbers bit for bit; ``unscale_finite`` numpy's product and the
    finiteness of the solution."""
    kern = kernels.load()
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, lo, hi, Ax, cD, E, fA = _step_arrays(rng)
        ref = (np.empty_like(q), np.empty_like(lo), np.empty_like(hi), np.empty_like(Ax))
        got = tuple(np.full_like(a, np.nan) for a in ref)
        equilibration.apply(q, lo, hi, Ax, cD, E, fA, INF, ref)
        kern.equilibrate_step(q, lo, hi, Ax, cD, E, fA, INF, *got)
        for a, b in zip(ref, got, strict=True):
            np.testing.assert_array_equal(a, b)
    x, D, out = rng.normal(size=6), rng.random(6) + 0.5, np.empty(6)
    assert kern.unscale_finite(x, D, out)
    np.testing.assert_array_equal(out, x * D)
    for bad in (np.nan, np.inf):
        x[3] = bad
        assert not kern.unscale_finite(x, D, out)


def _controller_qp(horizon: int = 20) -> tuple[mt.SpatialMPC, backends.QPStructure]:
    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(),
                        mt.MPCSettings(horizon=horizon, v_max=12.0, delta_rate_max=0.6))
    mpc.prepare_qp((5.0, 0.4, 0.05))
    return mpc, backends.QPStructure(mpc.layout, mpc.P, mpc.data.A_data.copy(), mpc.qp.slack_quad, q=mpc.data.q.copy())


@pytest.mark.parametrize("compiled", ["python", "numba"])
def test_equilibrated_once_or_by_osqp_the_same_solution(compiled: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kinematic QP solved tightly in the fixed equilibration and with OSQP equilibrating itself: the same
    solution (1e-7), in the QP's own variables, on the numpy and the compiled path."""
    if compiled == "numba" and not kernels.numba_available():
        pytest.skip("numba is not installed (extra 'fast')")
    mpc, structure = _controller_qp()
    st = mpc.settings.replace(eps_abs=1e-10, eps_rel=1e-10, max_iter=100000, compiled=compiled)
    A, B, _f = mpc.qp.dynamics
    fixed = backends.get("osqp")(structure, st)
    monkeypatch.setattr(osqp_backend, "FIXED_EQUILIBRATION", False)
    own = backends.get("osqp")(structure, st)
    assert fixed.fixed_equilibration and not own.fixed_equilibration
    assert fixed.solver.settings.scaling == 0 and own.solver.settings.scaling == osqp_backend.SCALING_PASSES
    assert not (fixed.equilibration.E == 1).all() and (own.equilibration.E == 1).all()
    assert fixed.equilibration.c == pytest.approx(1e-3)  # the slack weight (1000) sets the cost factor
    a, b = fixed.solve(mpc.data, A, B), own.solve(mpc.data, A, B)
    assert a.success and b.success
    np.testing.assert_allclose(a.z, b.z, atol=1e-7, rtol=0)
    assert mpc.safeguards.check_solution(mpc.data, a.z) is None


def test_the_dynamic_qp_keeps_osqp_s_equilibration() -> None:
    """A QP that stops on the residuals alone (the dynamic model's) is equilibrated by OSQP on every update."""
    mpc, structure = _controller_qp()
    from dataclasses import replace

    be = backends.get("osqp")(replace(structure, check_duality_gap=False), mpc.settings)
    assert not be.fixed_equilibration and be.solver.settings.scaling == osqp_backend.SCALING_PASSES


def test_the_time_optimal_qp_keeps_osqp_s_equilibration() -> None:
    """In time-optimal mode OSQP equilibrates on every update (the cost factor would loosen the dual tolerance
    that decides the speed plan)."""
    mpc, structure = _controller_qp()
    be = backends.get("osqp")(structure, mpc.settings.replace(mode="time_optimal"))
    assert not be.fixed_equilibration and be.solver.settings.scaling == osqp_backend.SCALING_PASSES


@pytest.mark.parametrize("bad", ["wrong size", "a nan"])
def test_bad_representative_cost_is_a_settings_error(bad: str) -> None:
    mpc, structure = _controller_qp()
    from dataclasses import replace

    q = np.ones(3) if bad == "wrong size" else np.full(mpc.layout.n, np.nan)
    with pytest.raises(SettingsError, match=r"QPStructure\.q: expected"):
        backends.get("osqp")(replace(structure, q=q), mpc.settings)
