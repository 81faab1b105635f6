"""The compiled kinematic step before the solve in one call (``SpatialMPC._solve_fused``, ``_kernels.kinematic_step``)
against the general path of the same controller (``_prepare``, ``build_qp``: several compiled calls)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import InputError
from mpc_tracking.mpc import kernels

pytestmark = pytest.mark.skipif(not kernels.numba_available(), reason="numba is not installed (extra 'fast')")

SERIES = ("e_y", "e_psi", "v_cmd", "delta_cmd", "iterations", "lb", "ub", "corridor_violation")


def _open_path() -> mt.ReferencePath:
    x = np.linspace(0.0, 60.0, 121)
    return mt.ReferencePath(x, 2.0 * np.sin(x / 8.0), closed=False, ds=0.5, width_left=3.0, width_right=2.5)


def _pair(path: mt.ReferencePath, **changes: Any) -> tuple[mt.SpatialMPC, mt.SpatialMPC]:
    """Two controllers of the same settings: the fused step, and the general path (``_fused`` removed)."""
    st = mt.MPCSettings(horizon=20, v_max=10.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0, **changes)
    fused, general = (mt.SpatialMPC(path, mt.VehicleParams(), st) for _ in range(2))
    assert fused._fused is not None
    general._fused = None
    return fused, general


@pytest.mark.parametrize("case", ["oval", "open_path_end", "reference_linearization", "v_box"])
def test_closed_loop_equals_the_general_path(case: str) -> None:
    """The same closed loop, bit for bit: the fused call computes the general path's numbers in the same order
    (an open path's end: the grids stop being uniform and the fused step hands the step to the general path)."""
    path = _open_path() if case == "open_path_end" else mt.load_path("oval", ds=0.5)
    changes: dict[str, Any] = {"linearization": "reference"} if case == "reference_linearization" else {}
    if case == "v_box":
        changes = {"mode": "time_optimal"}
    a, b = _pair(path, **changes)
    runs = []
    for mpc in (a, b):
        plant = mt.create_model("kinematic_bicycle", {"wheelbase": mpc.vehicle.wheelbase})
        runs.append(mt.simulate(path, mpc, plant, t_max=12.0, e_y0=0.8))
    ra, rb = runs
    assert len(ra.series["e_y"]) > 100
    for name in SERIES:
        np.testing.assert_array_equal(np.asarray(ra.series[name], dtype=float),
                                      np.asarray(rb.series[name], dtype=float), err_msg=name)
    assert list(ra.series["status"]) == list(rb.series["status"])


def test_one_step_gives_the_general_qp_and_solution() -> None:
    """After one step from the same state both controllers hold the same QP (every entry) and plan (a path with
    different widths left and right)."""
    a, b = _pair(_open_path())
    for state in ((3.0, 0.5, 0.05), (3.4, 0.45, 0.02), (3.9, 0.4, -0.01)):
        sa, sb = a.solve(state, measured={"speed": 6.0}), b.solve(state, measured={"speed": 6.0})
        for name in ("s", "x", "u", "xy", "lb", "ub"):
            np.testing.assert_array_equal(getattr(sa, name), getattr(sb, name), err_msg=name)
        assert (sa.v, sa.delta, sa.iterations, sa.corridor_violation) == (sb.v, sb.delta, sb.iterations,
                                                                          sb.corridor_violation)
        pa, pb = a.step_problem(), b.step_problem()
        for name in ("A", "B", "f", "x0", "q", "l", "u", "A_data"):
            if hasattr(pa, name):
                np.testing.assert_array_equal(getattr(pa, name), getattr(pb, name), err_msg=name)
        np.testing.assert_array_equal(a.data.A_data, b.data.A_data)
        for name in ("q", "l", "u"):
            np.testing.assert_array_equal(getattr(a.data, name), getattr(b.data, name), err_msg=name)


def test_the_plan_of_a_step_is_not_overwritten_by_the_next() -> None:
    """What a solution holds (grid, plan, bounds) is its own: the fused step reuses only its scratch."""
    a, _ = _pair(mt.load_path("oval", ds=0.5))
    first = a.solve((3.0, 0.5, 0.0))
    kept = {name: np.array(getattr(first, name), copy=True) for name in ("s", "x", "u", "xy", "lb", "ub")}
    a.solve((3.5, 0.3, 0.0))
    for name, value in kept.items():
        np.testing.assert_array_equal(getattr(first, name), value, err_msg=name)


@pytest.mark.parametrize("changes", [{"compiled": "python"}, {"disturbance_observer": True}, {"iterations": 2},
                                     {"warm_start": "shift"}, {"delay": 0.05}, {"prediction_model": "dynamic"}])
def test_other_settings_take_the_general_path(changes: dict[str, Any]) -> None:
    st = mt.MPCSettings(horizon=10, v_max=10.0, **changes)
    assert mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(), st)._fused is None


def test_a_corridor_provider_takes_the_general_path() -> None:
    class Wide:
        def bounds(self, s: np.ndarray, t: object = None, e_y0: object = None) -> tuple[np.ndarray, np.ndarray]:
            return np.full(s.shape, -3.0), np.full(s.shape, 3.0)

    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(), mt.MPCSettings(horizon=10), corridor=Wide())
    assert mpc._fused is None


def test_outside_the_domain_is_the_same_error() -> None:
    a, b = _pair(mt.load_path("oval", ds=0.5))
    for mpc in (a, b):
        with pytest.raises(InputError, match="faces away"):
            mpc._solve_fused((3.0, 0.2, 1.7), 0.0, None, 0.0) if mpc is a else mpc._prepare((3.0, 0.2, 1.7))
    with pytest.raises(InputError, match="expected finite"):
        a.solve((np.nan, 0.2, 0.0))


def test_non_finite_data_falls_back() -> None:
    """A non-finite QP (a NaN curvature of the path) is not solved: the fallback, as on the general path."""
    path = mt.load_path("oval", ds=0.5)
    a, b = _pair(path)
    sols = []
    for mpc in (a, b):
        assert mpc.solve((3.0, 0.3, 0.0)).status == "solved"
        mpc._sampler.table[:, 0] = np.nan  # the curvature: the dynamics' entries
        mpc._sampler._kernel_source = None
        sols.append(mpc.solve((3.3, 0.3, 0.0)))
    assert [s.solver_status for s in sols] == ["non-finite QP data"] * 2
    assert sols[0].status == sols[1].status == "fallback"
    assert (sols[0].v, sols[0].delta) == (sols[1].v, sols[1].delta)


def test_native_solve_retries_an_ignored_ctrl_c(monkeypatch: pytest.MonkeyPatch) -> None:
    """OSQP's extension object reporting an interrupted solve in a process that ignores Ctrl-C (a sweep worker):
    solved again; else the status is handed back as is (the back end raises KeyboardInterrupt)."""
    import signal
    from types import SimpleNamespace

    from mpc_tracking.mpc.backends import osqp as osqp_backend

    sigint, solved = int(osqp_backend._S.OSQP_SIGINT), int(osqp_backend._S.OSQP_SOLVED)

    class Native:
        def __init__(self, codes: list[int]) -> None:
            self.codes, self.solves = codes, 0
            self.solution = SimpleNamespace(x=np.zeros(2))

        def update_data_vec(self, *args: object) -> None: ...
        def update_data_mat(self, *args: object) -> None: ...

        def solve(self) -> None:
            self.info = SimpleNamespace(status_val=self.codes[min(self.solves, len(self.codes) - 1)], iter=3,
                                        run_time=1e-5, status="text")
            self.solves += 1

    z = np.zeros(2)
    monkeypatch.setattr(signal, "getsignal", lambda sig: signal.SIG_IGN)
    native = Native([sigint, solved])
    assert osqp_backend._solve_native(native, z, z, z, z, None, 0)[0] == solved and native.solves == 2
    native = Native([sigint])
    assert osqp_backend._solve_native(native, z, z, z, z, None, 0)[0] == sigint
    assert native.solves == 1 + osqp_backend._SIGINT_RETRIES
    monkeypatch.setattr(signal, "getsignal", lambda sig: signal.SIG_DFL)
    native = Native([sigint, solved])
    code, _x, iters, run_time, text = osqp_backend._solve_native(native, z, z, z, z, None, 0)
    assert (code, iters, run_time, text, native.solves) == (sigint, 3, 1e-5, "text", 1)


def test_the_pack_holds_the_constants_of_the_general_path() -> None:
    """kinematic_step_pack copies the QP's and the reference's constants in the kernel's layout."""
    a, _ = _pair(mt.load_path("oval", ds=0.5))
    pack, c, ref_prm = a._fused[4], a.qp._kernel_consts, a._prepare_args[1]  # type: ignore[index]
    N = a.N
    i = pack.i_v_start - 6  # where ref_prm starts
    assert i == 2 * N + 1
    np.testing.assert_array_equal(pack.cst[: N + 1], c.s_off_x)
    np.testing.assert_array_equal(pack.cst[N + 1 : i], c.s_off_u)
    np.testing.assert_array_equal(np.delete(pack.cst[i : i + 8], 6), np.delete(ref_prm, 6))
    np.testing.assert_array_equal(pack.cst[i + 8 : i + 20], c.prm[:12])
    assert np.isnan(pack.cst[i + 20])  # the measured speed: none from the controller
    np.testing.assert_array_equal(pack.cst[i + 21 : i + 30], c.Q.ravel())
    np.testing.assert_array_equal(pack.cst[-3:], [a.ds, a.settings.v_min, c.wheelbase])
    np.testing.assert_array_equal(pack.ints[8:], np.concatenate([c.dynamics[1], c.dynamics[2]]))
    with pytest.raises(ValueError, match="sizes"):
        kernels.kinematic_step_pack(c, ref_prm[:7], a.ds, 0.1, False)


def test_finish_plan_equals_numpy() -> None:
    """The solved plan's copy, its points beside the path, the shift table and the largest slack: the numbers of the
    numpy path of ``SpatialMPC._solved`` (offset_point, the table's rows, z[start:].max())."""
    from mpc_tracking.paths.geometry import offset_point

    kern = kernels.load()
    rng = np.random.default_rng(5)
    N, nx, nu, n_slack = 7, 3, 2, 4
    nX, nU = (N + 1) * nx, N * nu
    z = rng.normal(size=nX + nU + n_slack)
    x, y, psi = (rng.normal(size=(N + 1, 3)) * [10.0, 10.0, 1.0]).T  # columns: strided, as the sample's
    xu, xy, table = np.empty(nX + nU), np.empty((N + 1, 2)), np.empty((N + 1, nx + nu))
    slack = kern.finish_plan(z, x, y, psi, 0, xu, xy, nx, nX + nU, table)
    X, U = z[:nX].reshape(N + 1, nx), z[nX : nX + nU].reshape(N, nu)
    np.testing.assert_array_equal(xu, z[: nX + nU])
    np.testing.assert_allclose(xy, offset_point(x, y, psi, X[:, 0]), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(table, np.column_stack([X, np.vstack([U, U[-1]])]))
    assert slack == z[nX + nU :].max()
