"""The compiled step kernels (:mod:`mpc_tracking.mpc.kernels`) against the numpy path they replace."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

import mpc_tracking as mt
from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc import kernels

needs_numba = pytest.mark.skipif(not kernels.numba_available(), reason="numba is not installed (extra 'fast')")
TOL = 1e-12
#: closed loops: the QP numbers agree to rounding (1e-12), which OSQP's iterations and the plant amplify a little
LOOP_TOL = 1e-9


def _controllers(model: str, corridor: object = None, **changes: object) -> tuple[mt.SpatialMPC, mt.SpatialMPC]:
    path = mt.load_path("oval", ds=0.5)
    st = mt.MPCSettings(horizon=25, v_max=12.0, prediction_model=model, **changes)
    return (mt.SpatialMPC(path, mt.VehicleParams(), st.replace(compiled="python"), corridor=corridor),
            mt.SpatialMPC(path, mt.VehicleParams(), st.replace(compiled="numba"), corridor=corridor))


class Blocked:
    """An obstacle on the centre line and the left side (the lateral reference moves aside), and a gap
    narrower than the car further on (the corridor rows meet in the middle)."""

    def bounds(self, s: np.ndarray, t: object = None, e_y0: object = None) -> tuple[np.ndarray, np.ndarray]:
        phase = np.mod(s, 20.0)  # repeats every 20 m: every grid of 12.5 m meets both
        lb = np.where((phase > 10) & (phase < 11), 1.0, -4.0)
        ub = np.where((phase > 3) & (phase < 7), -0.5, 4.0)
        return lb, ub


def _close(a: np.ndarray, b: np.ndarray, tol: float = TOL) -> None:
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_resolve_choices(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kernels.resolve("python") == "python"
    with pytest.raises(SettingsError, match="compiled"):
        kernels.resolve("fortran")
    monkeypatch.setattr(kernels, "numba_available", lambda: False)
    assert kernels.resolve("auto") == "python"
    with pytest.raises(SettingsError, match="needs numba"):
        kernels.resolve("numba")


@pytest.mark.parametrize("model", ["kinematic", "dynamic"])
def test_auto_falls_back_to_numpy_without_numba(monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    monkeypatch.setattr(kernels, "numba_available", lambda: False)
    st = mt.MPCSettings(horizon=10, prediction_model=model, discretization="rk4", friction_ellipse=True)
    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(), st)
    assert mpc.qp.kernels is None
    assert mpc.safeguards._kernels is None
    assert not mpc.qp.compiled_reference and not mpc.qp._compiled_dynamic_model
    assert mpc.solve((3.0, 0.5, 0.0), measured={"v_x": 5.0, "v_y": 0.0, "r": 0.0}).success


@needs_numba
def test_settings_select_the_compiled_path() -> None:
    py, nb = _controllers("kinematic")
    assert py.qp.kernels is None and py.safeguards._kernels is None
    assert nb.qp.kernels is not None and nb.safeguards._kernels is not None
    assert nb.qp._compiled_dynamics and not py.qp._compiled_dynamics
    assert kernels.compile_seconds() is not None


@needs_numba
def test_kernel_layout_matches_the_packing() -> None:
    kern = kernels.load()
    for i, name in enumerate(kernels.PRM_NAMES):
        assert getattr(kern, "P_" + {"inv_wheelbase": "INV_L", "a_y_max": "AY", "v_min": "VMIN", "v_max": "VMAX",
                                     "control_period": "DT0", "accel_max": "ACC", "decel_max": "DEC",
                                     "half_width": "HALF_W", "ref_inset": "INSET", "ref_slope": "SLOPE",
                                     "time_weight": "TIME_W", "inf": "INF", "v_now": "VNOW"}[name]) == i
    for i, name in enumerate(kernels.FLG_NAMES):
        assert getattr(kern, "F_" + {"r_box": "RBOX", "r_rate": "RRATE", "r_corr": "RCORR", "nX": "NX",
                                     "has_v_box": "VBOX", "has_u_prev": "UPREV", "finite_accel": "FIN_ACC",
                                     "finite_decel": "FIN_DEC"}[name]) == i


CASES = {
    "default": {},
    "obstacle and a narrow gap": {"corridor": Blocked()},
    "time optimal": {"mode": "time_optimal", "accel_max": 2.0},
    "unlimited accel": {"accel_max": float("inf"), "decel_max": 4.0},
    "unlimited decel": {"decel_max": float("inf")},
}


@needs_numba
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("state", [(3.0, 0.5, 0.1), (40.0, -0.8, -0.2), (120.0, 1.5, 0.3), (7.5, 0.0, 0.0)])
def test_kinematic_qp_numbers_equal(state: tuple[float, float, float], case: str) -> None:
    """Every number of the QP (A/B/f, the CSC data, q, l, u, the lateral reference) from the kernels equals
    numpy's to 1e-12, before the first solve (no previous command) and after it."""
    py, nb = _controllers("kinematic", **CASES[case])
    assert nb.qp._compiled_rest
    a, b = py.prepare_qp(state), nb.prepare_qp(state)
    for name in ("q", "l", "u", "A_data"):
        _close(getattr(py.data, name), getattr(nb.data, name))
    _close(a.e_ref, b.e_ref)
    for mpc in (py, nb):  # a previous plan: the operating point is the shifted solution (not the reference)
        mpc.solve((state[0] - 1.0, state[1], state[2]))
    a, b = py.prepare_qp(state), nb.prepare_qp(state)
    for name in ("A", "B", "f", "e_ref", "u_lo", "u_hi", "rate_lo", "rate_hi", "corr_lo", "corr_hi", "u_prev"):
        _close(getattr(a, name), getattr(b, name))
    for name in ("q", "l", "u", "A_data"):
        _close(getattr(py.data, name), getattr(nb.data, name))
    if case == "obstacle and a narrow gap":
        assert np.any(b.e_ref != 0.0) and np.any(b.corr_lo == b.corr_hi)


@needs_numba
@pytest.mark.parametrize("state", [(3.0, 0.5, 0.1), (120.0, -1.5, 0.3)])
def test_dynamic_qp_numbers_equal(state: tuple[float, float, float]) -> None:
    """The dynamic model's QP (its path sample, clamped operating point) from the compiled path equals numpy's."""
    py, nb = _controllers("dynamic")
    meas = {"v_x": 8.0, "v_y": 0.1, "r": 0.05, "speed": 8.0}
    for mpc in (py, nb):
        mpc.solve((state[0] - 1.0, state[1], state[2]), measured=meas)
    a, b = (m.build_qp(m._prepare(state, meas)) and m.step_problem() for m in (py, nb))
    for name in ("A", "B", "f", "e_ref", "u_lo", "u_hi", "rate_lo", "rate_hi", "corr_lo", "corr_hi"):
        _close(getattr(a, name), getattr(b, name))
    for name in ("q", "l", "u", "A_data"):
        _close(getattr(py.data, name), getattr(nb.data, name))


@needs_numba
def test_kinematic_linearization_kernel_at_random_operating_points() -> None:
    """The kernel against spatial_bicycle.linearize + QPLayout.fill_dynamics at operating points away from 0."""
    from mpc_tracking.models.prediction import spatial_bicycle as sb

    rng = np.random.default_rng(3)
    _py, nb = _controllers("kinematic")
    qp, lay, N = nb.qp, nb.layout, nb.N
    x_op = np.column_stack([rng.uniform(-2, 2, N + 1), rng.uniform(-1, 1, N + 1), rng.uniform(0, 9, N + 1)])
    u_op = np.column_stack([rng.uniform(1, 20, N), rng.uniform(-0.5, 0.5, N)])
    kappa = rng.uniform(-0.05, 0.05, N + 1)
    s_grid = np.cumsum(rng.uniform(0.2, 0.8, N + 1))
    s_grid[3] = s_grid[2]  # a zero-length step
    data, lower, upper = np.zeros(lay.nnz), np.zeros(lay.m), np.zeros(lay.m)
    out = (np.empty((N, 3, 3)), np.empty((N, 3, 2)), np.empty((N, 3)))
    kernels.kinematic_linearize_fill(qp.kernels, x_op, u_op, kappa[::1], s_grid, 2.7, x_op[0].copy(), data,
                                     qp._pos_A, qp._pos_B, lower, upper, out)
    A, B, f = sb.linearize(x_op[:-1], u_op, kappa[:-1], np.maximum(np.diff(s_grid), 0.0), sb.VehicleParams())
    ref = np.zeros(lay.nnz)
    lay.fill_dynamics(ref, A, B)
    for got, want in zip(out, (A, B, f), strict=True):
        _close(got, want)
    _close(data, ref)
    _close(lower[: lay.nX], np.concatenate([x_op[0], -f.ravel()]))
    _close(upper[: lay.nX], lower[: lay.nX])


@needs_numba
@pytest.mark.parametrize("model", ["kinematic", "dynamic"])
def test_closed_loop_equal(model: str) -> None:
    """A closed loop of each prediction model gives numpy's run (errors, commands, iterations) to 1e-9."""
    path = mt.load_path("oval", ds=0.5)
    runs = []
    for mpc in _controllers(model):
        plant = mt.create_model("kinematic_bicycle", {"wheelbase": 2.7})
        runs.append(mt.simulate(path, mpc, plant, t_max=6.0, e_y0=0.8))
    a, b = runs
    for name in ("e_y", "e_psi", "v_cmd", "delta_cmd", "iterations"):
        _close(np.asarray(a.series[name], dtype=float), np.asarray(b.series[name], dtype=float), LOOP_TOL)


@needs_numba
def test_all_finite_equals_numpy() -> None:
    """The QP data's check before a solve: ``np.isfinite(a).all() and np.isfinite(b).all()``, NaN and +-inf anywhere."""
    kern = kernels.load()
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=17), rng.normal(size=5)
    assert kern.all_finite(a, b) and kern.all_finite(a, np.empty(0))
    for bad in (np.nan, np.inf, -np.inf):
        for arr, i in ((a, 0), (a, 16), (b, 3)):
            arr2 = arr.copy()
            arr2[i] = bad
            x, y = (arr2, b) if arr is a else (a, arr2)
            assert not kern.all_finite(x, y)
            assert bool(np.isfinite(x).all() and np.isfinite(y).all()) is False


@needs_numba
def test_tail_max_equals_numpy() -> None:
    """The largest corridor slack: ``z[start:].max()``, NaN when one of them is NaN (not when one before ``start`` is)."""
    kern = kernels.load()
    z = np.random.default_rng(4).normal(size=23)
    for start in (0, 5, 22):
        assert kern.tail_max(z, start) == z[start:].max()
    z[10] = np.nan
    assert np.isnan(kern.tail_max(z, 3)) and kern.tail_max(z, 11) == z[11:].max()


@needs_numba
def test_store_plan_equals_numpy() -> None:
    """The last plan's table for the next shift: X, U side by side, U's last row repeated at N."""
    kern = kernels.load()
    rng = np.random.default_rng(6)
    X, U = rng.normal(size=(13, 4)), rng.normal(size=(12, 2))
    table, ref = np.full((13, 6), np.nan), np.empty((13, 6))
    ref[:, :4], ref[:-1, 4:], ref[-1, 4:] = X, U, U[-1]
    kern.store_plan(X, U, table)
    assert np.array_equal(table, ref)


@needs_numba
def test_finish_step_equals_its_parts() -> None:
    """The end of a solved step in one call: the plan's points in the world, the stored table, the largest slack."""
    from mpc_tracking.paths.geometry import offset_point

    kern = kernels.load()
    rng = np.random.default_rng(8)
    X, U = rng.normal(size=(13, 3)), rng.normal(size=(12, 2))
    x, y, psi, z = rng.normal(size=13), rng.normal(size=13), rng.normal(size=13), rng.normal(size=60)
    xy, table, ref = np.empty((13, 2)), np.empty((13, 5)), np.empty((13, 5))
    ref[:, :3], ref[:-1, 3:], ref[-1, 3:] = X, U, U[-1]
    assert kern.finish_step(x, y, psi, X[:, 0], xy, z, 51, X, U, table) == z[51:].max()
    assert np.array_equal(table, ref)
    np.testing.assert_allclose(xy, offset_point(x, y, psi, X[:, 0]), rtol=TOL, atol=TOL)


@needs_numba
def test_offset_points_equal_numpy() -> None:
    """The plan's points in the world: the numbers of ``paths.geometry.offset_point`` on strided columns."""
    from mpc_tracking.paths.geometry import offset_point

    kern = kernels.load()
    rng = np.random.default_rng(5)
    table = rng.normal(0.0, 50.0, size=(31, 4))
    table[:, 2] = rng.uniform(-20.0, 20.0, 31)  # headings over several turns
    out = np.empty((31, 2))
    kern.offset_points(table[:, 0], table[:, 1], table[:, 2], table[:, 3], out)
    _close(out, offset_point(table[:, 0], table[:, 1], table[:, 2], table[:, 3]))


@needs_numba
def test_constraint_excess_equals_numpy() -> None:
    """Row, amount and scale of the worst violation: scipy's A @ z, np.maximum and np.argmax, NaN first."""
    rng = np.random.default_rng(7)
    A = sparse.random(40, 30, density=0.2, random_state=11, format="csc")
    A.sort_indices()
    kern = kernels.load()
    z = rng.normal(size=30)
    Az_ref = A @ z
    lower, upper = Az_ref - rng.uniform(0, 1, 40), Az_ref + rng.uniform(0, 1, 40)
    lower[5], upper[9], lower[12] = Az_ref[5] + 0.3, Az_ref[9] - 0.7, -np.inf
    scratch = np.empty(40)
    for zz in (z, 1e3 * z):
        Az = A @ zz
        excess = np.maximum(lower - Az, Az - upper)
        i, e, scale = kernels.constraint_excess(kern, A.indptr, A.indices, A.data, zz, lower, upper, scratch)
        assert i == int(np.argmax(excess))
        _close(e, excess[i])
        _close(scale, max(np.abs(Az).max(), np.abs(zz).max(), 1.0))
        _close(scratch, Az)
    z_nan = z.copy()
    assert A.indptr[5] > A.indptr[4]  # column 4 has entries: its rows become NaN
    z_nan[4] = np.nan
    excess = np.maximum(lower - A @ z_nan, A @ z_nan - upper)
    i, e, _scale = kernels.constraint_excess(kern, A.indptr, A.indices, A.data, z_nan, lower, upper, scratch)
    assert i == int(np.argmax(excess)) and np.isnan(e)


@needs_numba
@pytest.mark.parametrize("value", [np.nan, 1e6, 0.0])
def test_solution_check_equal(value: float) -> None:
    """The controller's solution check gives the same verdict (row and amount) on both paths."""
    py, nb = _controllers("kinematic")
    for mpc in (py, nb):
        mpc.solve((3.0, 0.5, 0.1))
    z = py.backend.solve(py.data, *py.qp.dynamics[:2]).z.copy()  # the last QP's solution in its variables
    results = []
    for mpc in (py, nb):
        results.append(mpc.safeguards.check_solution(mpc.data, z))
        bad = z.copy()
        bad[7] = value
        results.append(mpc.safeguards.check_solution(mpc.data, bad))
    assert results[0] is None and results[2] is None
    if results[1] is None:
        assert results[3] is None
    else:
        assert results[1][0] == results[3][0]
        np.testing.assert_allclose(results[1][1], results[3][1], rtol=TOL, atol=TOL, equal_nan=True)


@needs_numba
@pytest.mark.parametrize("closed", [True, False])
def test_path_sample_equal(closed: bool) -> None:
    """The compiled sampler gives numpy's columns at, between and beyond the waypoints (laps, the ends, inf widths)."""
    from mpc_tracking.mpc.sampler import PathSampler

    th = np.linspace(0.0, 1.5 * np.pi, 300, endpoint=False)
    path = mt.ReferencePath(30 * np.cos(th), 30 * np.sin(th), closed=closed, ds=0.5, width_right=2.0)  # left: inf
    v_box = np.where(np.arange(path.n) % 50 < 20, np.inf, 8.0)  # finite <-> inf segments: the nearer end
    a = PathSampler(path, v_box=v_box, body=(0.9, 3.6))
    b = PathSampler(path, v_box=v_box, body=(0.9, 3.6))
    b.use_kernels(kernels.load())
    rng = np.random.default_rng(5)
    grids = [np.sort(rng.uniform(-20.0, 2.5 * path.length, 40)), np.arange(0.0, 30.0, 0.5),
             path.length - 5.0 + np.arange(0.0, 12.0, 0.5), np.array([-3.0, 0.0])]
    for s in grids:
        qa, qb = a.sample(s), b.sample(s)
        for name in qa._fields:
            x, y = getattr(qa, name), getattr(qb, name)
            if x is None:
                assert y is None
                continue
            np.testing.assert_allclose(x, y, rtol=TOL, atol=TOL)
            np.testing.assert_array_equal(np.isinf(x), np.isinf(y))


@needs_numba
@pytest.mark.parametrize("changes", [{}, {"mode": "time_optimal"}, {"accel_max": float("inf")},
                                     {"decel_max": float("inf"), "accel_max": 2.0}])
def test_reference_operating_point_equal(changes: dict) -> None:
    """The compiled reference operating point (speed reference + reference_op) against numpy's, before and after a
    first command (the forward pass then starts from it)."""
    py, nb = _controllers("kinematic", **changes)
    assert nb.qp.compiled_reference and not py.qp.compiled_reference
    for _ in range(2):
        for s0 in (0.0, 33.3, 140.0, 240.2):
            qa, qb = py._sampler.sample(py._grid(s0)), nb._sampler.sample(nb._grid(s0))
            for got, want in zip(nb._reference_op(qb), py._reference_op(qa), strict=True):
                _close(got, want)
        for mpc in (py, nb):
            mpc.solve((3.0, 0.2, 0.0))


def _step_arrays(step: object) -> dict[str, np.ndarray]:
    q = step.q  # type: ignore[attr-defined]
    out = {name: getattr(step, name) for name in ("x0", "x_op", "u_op", "u_ref", "x_ref", "s_grid", "e_y_limit")}
    out.update({f"q.{k}": v for k, v in q._asdict().items() if v is not None})
    return out


@needs_numba
@pytest.mark.parametrize("changes", [{}, {"mode": "time_optimal"}, {"linearization": "reference"},
                                     {"decel_max": float("inf"), "accel_max": 2.0}, {"delay": 0.08}])
@pytest.mark.parametrize("closed", [True, False])
def test_compiled_prepare_equals_numpy(changes: dict, closed: bool) -> None:
    """The kinematic model's step data in one compiled call (``_prepare_kinematic``: grid, path sample, reference,
    shifted last plan, clamp) equal numpy's ``_prepare`` to 1e-12: the first step, later steps along the path (a
    shift by a fraction of ``ds``, a lap's wrap), an open path's end (the grids are not uniform there: the shift
    interpolates), a state far enough out to clamp the operating point; and the same domain errors."""
    if closed:
        path = mt.load_path("oval", ds=0.5)
        starts = [0.2, 0.45, 3.0, path.length - 0.3, 0.1]
    else:
        th = np.linspace(0.0, 0.8 * np.pi, 200)
        path = mt.ReferencePath(40 * np.cos(th), 40 * np.sin(th), closed=False, ds=0.5, width_left=3.0,
                                width_right=3.0)
        starts = [0.0, 1.3, path.length - 8.0, path.length - 5.1, path.length - 0.2]
    st = mt.MPCSettings(horizon=25, v_max=12.0, **changes)
    py, nb = (mt.SpatialMPC(path, mt.VehicleParams(), st.replace(compiled=c)) for c in ("python", "numba"))
    assert nb._prepare_args is not None and py._prepare_args is None
    for i, s0 in enumerate(starts):
        state = (s0, (-1.0) ** i * 0.6, 0.1 * i)
        a, b = _step_arrays(py._prepare(state)), _step_arrays(nb._prepare(state))
        assert a.keys() == b.keys()
        for name in a:
            _close(b[name], a[name])
        for mpc in (py, nb):
            mpc.solve(state)
    i = int(np.argmax(np.abs(path.kappa)))
    for bad in ((10.0, 0.0, 1.7), (float(path.s[i]), 2.0 / float(path.kappa[i]), 0.0)):
        for mpc in (py, nb):
            with pytest.raises(mt.errors.InputError, match=r"e_psi|beyond the centre"):
                mpc._prepare(bad)


@needs_numba
def test_open_path_to_its_end_equal() -> None:
    """An open path driven to its end (grids clamped there: the shift falls back to interpolation) and a dynamic
    model's operating point clamped into the domain: the same run on both paths."""
    th = np.linspace(0.0, 0.8 * np.pi, 200)
    path = mt.ReferencePath(40 * np.cos(th), 40 * np.sin(th), closed=False, ds=0.5, width_left=3.0, width_right=3.0)
    for model in ("kinematic", "dynamic"):
        runs = []
        for compiled in ("python", "numba"):
            st = mt.MPCSettings(horizon=25, v_max=10.0, prediction_model=model, compiled=compiled)
            plant = mt.create_model("kinematic_bicycle", {"wheelbase": 2.7})
            runs.append(mt.simulate(path, mt.SpatialMPC(path, mt.VehicleParams(), st), plant, t_max=30.0, e_y0=1.5))
        a, b = runs
        assert a.success and len(a.series["s"]) == len(b.series["s"])
        for name in ("e_y", "e_psi", "v_cmd", "delta_cmd", "iterations"):
            _close(np.asarray(a.series[name], dtype=float), np.asarray(b.series[name], dtype=float), LOOP_TOL)


@needs_numba
@pytest.mark.parametrize("compiled", ["python", "numba"])
@pytest.mark.parametrize("where, bad", [("A_data", np.nan), ("q", np.inf), ("q", -np.inf)])
def test_non_finite_qp_data_is_not_solved_on_either_path(compiled: str, where: str, bad: float) -> None:
    """The check before the solve (compiled: one pass over A's data and q) catches a non-finite entry anywhere."""
    path = mt.load_path("oval", ds=0.5)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=15, v_max=12.0, compiled=compiled))
    assert mpc.solve((3.0, 0.3, 0.0)).status == "solved"
    build = mpc.build_qp

    def poisoned(step: object) -> object:
        d = build(step)  # type: ignore[arg-type]
        getattr(d, where)[-1] = bad
        return d

    mpc.build_qp = poisoned  # type: ignore[method-assign]
    sol = mpc.solve((3.3, 0.3, 0.0))
    assert sol.status == "fallback" and sol.solver_status == "non-finite QP data"


@needs_numba
@pytest.mark.parametrize("compiled", ["python", "numba"])
def test_a_non_finite_osqp_solution_is_not_used_on_either_path(compiled: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """OSQP reporting "solved" with a NaN in its solution: the back end's finiteness check (compiled or numpy)."""
    from mpc_tracking.mpc.backends import osqp as osqp_backend

    path = mt.load_path("oval", ds=0.5)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=15, v_max=12.0, compiled=compiled))
    assert (mpc.backend._kern is not None) == (compiled == "numba")  # type: ignore[attr-defined]
    real = osqp_backend._solve_native

    def nan_solution(*args: object) -> tuple:
        code, x, iters, stime, text = real(*args)  # type: ignore[arg-type]
        x = x.copy()
        x[len(x) // 2] = np.nan
        return code, x, iters, stime, text

    monkeypatch.setattr(osqp_backend, "_solve_native", nan_solution)
    res = mpc.backend.solve(mpc.build_qp(mpc._prepare((3.0, 0.3, 0.0))), *mpc.qp.dynamics[:2])
    assert res.z is None and res.status is None and res.message == "solved"
