"""The QP back ends behind one contract (mpc_tracking.mpc.backends): registry, status tables, the
same QP solved alike by each, failures as results, and the controller going through the registry."""
from __future__ import annotations

import numpy as np
import osqp
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc import backends
from mpc_tracking.mpc.backends import base as backends_base
from mpc_tracking.mpc.backends import daqp as daqp_backend
from mpc_tracking.mpc.backends import osqp as osqp_backend
from mpc_tracking.mpc.condensed import DAQP_EXIT

BASE = mt.MPCSettings(horizon=20, v_max=12.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0,
                      eps_abs=1e-9, eps_rel=1e-9, max_iter=50000)
STATE = (5.0, 0.4, 0.05)


def _step_qp(settings=BASE):
    """A controller whose QP holds one built step (``prepare_qp``), and its structure."""
    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(), settings)
    mpc.prepare_qp(STATE)
    structure = backends.QPStructure(mpc.layout, mpc.P, mpc.data.A_data.copy(), mpc.qp.slack_quad,
                                     q=mpc.data.q.copy())  # the representative cost, as the controller's
    return mpc, structure


def test_the_registry_lists_gets_and_refuses_by_name():
    from mpc_tracking.mpc.settings import SOLVERS

    assert backends.available() == ("osqp", "daqp") == tuple(SOLVERS)  # the settings' list of the built-in ones
    assert backends.get("osqp") is backends.OSQPBackend and backends.get("daqp") is backends.DAQPBackend
    with pytest.raises(SettingsError, match=r"MPCSettings.solver: expected one of \('osqp', 'daqp'\), got 'qpoases'"):
        backends.get("qpoases")
    with pytest.raises(SettingsError, match="QPBackend subclass"):
        backends.register("mine", object)  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match="non-empty string"):
        backends.register("", backends.OSQPBackend)


def test_register_adds_a_back_end_by_name(monkeypatch):
    import mpc_tracking.mpc.settings as settings_module
    from mpc_tracking.mpc.settings import qp as qp_settings

    monkeypatch.setattr(backends_base, "_REGISTRY", dict(backends_base._REGISTRY))
    names = list(settings_module.SOLVERS)  # the names the settings accept: restored after the test
    for module in (backends_base, settings_module, qp_settings):
        monkeypatch.setattr(module, "SOLVERS", names)

    class Mine(backends.OSQPBackend):
        name = "mine"

    backends.register("mine", Mine)
    assert backends.available() == ("osqp", "daqp", "mine") and backends.get("mine") is Mine
    assert mt.MPCSettings(solver="mine").solver == "mine"


def test_the_controller_uses_the_registered_class_and_never_its_name(monkeypatch):
    """The controller builds what the registry returns for settings.solver and calls only solve()."""
    calls = []

    class Recording(backends.OSQPBackend):
        def solve(self, data, A, B, *, warm_x=None, step=0):
            calls.append(step)
            return super().solve(data, A, B, warm_x=warm_x, step=step)

    monkeypatch.setitem(backends_base._REGISTRY, "osqp", Recording)
    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(), BASE)
    assert type(mpc.backend) is Recording
    assert mpc.solve(STATE).success and mpc.solve((5.3, 0.35, 0.04)).success
    assert calls == [0, 1]


def test_every_osqp_status_is_in_its_table():
    native = [getattr(osqp.SolverStatus, n) for n in dir(osqp.SolverStatus) if n.startswith("OSQP_")]
    assert set(native) == set(osqp_backend.STATUS_TABLE)
    solved = {k: v for k, v in osqp_backend.STATUS_TABLE.items() if v is not None}
    assert solved == {osqp.SolverStatus.OSQP_SOLVED: mt.Status.SOLVED,
                      osqp.SolverStatus.OSQP_SOLVED_INACCURATE: mt.Status.SOLVED_INACCURATE}


def test_every_daqp_exit_flag_is_in_its_table():
    assert set(daqp_backend.STATUS_TABLE) == set(DAQP_EXIT)
    assert {k for k, v in daqp_backend.STATUS_TABLE.items() if v is not None} == {1, 2}
    assert all(v in (None, mt.Status.SOLVED) for v in daqp_backend.STATUS_TABLE.values())


def test_each_back_end_solves_the_same_qp_to_the_same_solution():
    """Set up on one structure and handed the same step's numbers, the back ends agree (both exact
    at eps 1e-9), and the solution satisfies the QP's rows."""
    mpc, structure = _step_qp()
    A, B, _f = mpc.qp.dynamics
    z = {}
    for name in backends.available():
        res = backends.get(name)(structure, BASE).solve(mpc.data, A, B)
        assert res.success and res.status == mt.Status.SOLVED and res.message == "solved", (name, res.message)
        assert res.iterations > 0 and res.solve_time > 0
        assert mpc.safeguards.check_solution(mpc.data, res.z) is None
        z[name] = res.z.copy()
    lay = mpc.layout
    u = {k: v[lay.nX : lay.nX + lay.nU] for k, v in z.items()}
    np.testing.assert_allclose(u["daqp"], u["osqp"], atol=1e-6)


@pytest.mark.parametrize("name, text", [("osqp", "maximum iterations reached"), ("daqp", "iteration limit")])
def test_a_failed_solve_is_a_result_without_a_solution(name, text):
    mpc, structure = _step_qp(BASE.replace(horizon=20))
    A, B, _f = mpc.qp.dynamics
    res = backends.get(name)(structure, BASE.replace(max_iter=1)).solve(mpc.data, A, B)
    assert res.z is None and res.status is None and not res.success
    assert text in res.message


def test_a_solver_exception_is_a_result_not_an_error(backend):
    mpc, structure = _step_qp(BASE.replace(solver=backend))
    be = backends.get(backend)(structure, BASE)
    be.solver = None  # any call on it raises AttributeError
    res = be.solve(mpc.data, *mpc.qp.dynamics[:2])
    assert res.z is None and res.message == "solver exception (AttributeError)"


def test_fault_injection_fails_and_corrupts_the_chosen_calls(backend):
    mpc, structure = _step_qp(BASE.replace(solver=backend))
    A, B, _f = mpc.qp.dynamics
    fi = backends.FaultInjection(backends.get(backend)(structure, BASE), fail=[1], corrupt=lambda k: k == 2,
                                 corrupt_value=7.0)
    results, first = [], None
    for _ in range(4):
        results.append(fi.solve(mpc.data, A, B))
        first = results[0].z.copy() if first is None else first  # (a back end may reuse its z buffer)
    assert [r.success for r in results] == [True, False, True, True] and fi.calls == 4
    assert results[1].message == "injected failure"
    assert np.all(results[2].z == 7.0) and results[2].status == mt.Status.SOLVED
    assert mpc.safeguards.check_solution(mpc.data, results[2].z) is not None  # the check rejects it
    np.testing.assert_allclose(results[3].z, first, atol=1e-6)


@pytest.mark.parametrize("factor", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_tolerance_factor_is_a_settings_error(factor: float) -> None:
    from dataclasses import replace

    _mpc, structure = _step_qp()
    with pytest.raises(SettingsError, match=r"QPStructure\.tolerance_factor: expected a finite number > 0"):
        backends.get("osqp")(replace(structure, tolerance_factor=factor), BASE)


def test_the_tolerance_factor_scales_osqp_s_tolerances() -> None:
    """``QPStructure.tolerance_factor`` multiplies the settings' ``eps_abs`` and ``eps_rel``; the controller passes the
    model's ``QP_TOLERANCE_FACTOR`` (3 for the dynamic model, 1 for the kinematic)."""
    from dataclasses import replace

    _mpc, structure = _step_qp()
    be = backends.get("osqp")(replace(structure, tolerance_factor=3.0), BASE)
    assert be.solver.settings.eps_abs == 3.0 * BASE.eps_abs and be.solver.settings.eps_rel == 3.0 * BASE.eps_rel
    assert be.osqp_settings["eps_abs"] == 3.0 * BASE.eps_abs
    plain = backends.get("osqp")(structure, BASE)
    assert plain.solver.settings.eps_abs == BASE.eps_abs


@pytest.mark.parametrize("passes", [-1, 101, 2.5, True])
def test_bad_scaling_passes_is_a_settings_error(passes) -> None:
    from dataclasses import replace

    _mpc, structure = _step_qp()
    with pytest.raises(SettingsError, match=r"QPStructure\.scaling_passes: expected None or an int 0\.\.100"):
        backends.get("osqp")(replace(structure, scaling_passes=passes), BASE)


def test_the_dynamic_model_s_qp_is_equilibrated_with_its_own_passes(monkeypatch) -> None:
    """The controller hands the model's ``QP_SCALING_PASSES`` to the back end: the dynamic model's QP is equilibrated
    once with 10 Ruiz passes, not the back end's default 3."""
    st = BASE.replace(prediction_model="dynamic")
    mpc = mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(), st)
    assert mpc.model.QP_SCALING_PASSES == 10 and mpc.backend.fixed_equilibration
    D10 = mpc.backend.equilibration.D
    np.testing.assert_array_equal(mpc._setup_backend().equilibration.D, D10)  # the same set-up: the same factors
    monkeypatch.setattr(type(mpc.model), "QP_SCALING_PASSES", None)  # the back end's SCALING_PASSES (3)
    assert osqp_backend.SCALING_PASSES == 3
    assert not np.allclose(mpc._setup_backend().equilibration.D, D10)
