"""The OSQP back end's direct calls on OSQP's extension object against its wrapper's methods."""
from __future__ import annotations

import numpy as np
import osqp

import mpc_tracking as mt
from mpc_tracking.mpc.backends.osqp import native_solver


def _run(path: mt.ReferencePath, wrapper: bool, warm_start: str) -> mt.SimulationResult:
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=20, v_max=8.0, warm_start=warm_start))
    if wrapper:  # an instance attribute sends every call through the wrapper's methods
        mpc.solver.update = mpc.solver.update
        assert native_solver(mpc.solver) is None
    else:
        assert native_solver(mpc.solver) is mpc.solver._solver
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": 2.7})
    return mt.simulate(path, mpc, plant, t_max=8.0, e_y0=0.8)


def test_native_calls_give_the_wrapper_s_numbers() -> None:
    path = mt.load_path("oval", ds=0.5)
    for warm in ("solver", "shift"):
        a, b = _run(path, False, warm), _run(path, True, warm)
        np.testing.assert_array_equal(np.asarray(a.series["e_y"]), np.asarray(b.series["e_y"]))
        np.testing.assert_array_equal(np.asarray(a.series["iterations"]), np.asarray(b.series["iterations"]))


def test_native_solver_only_for_a_plain_set_up_wrapper(monkeypatch) -> None:
    class Sub(osqp.OSQP):
        pass

    assert native_solver(object()) is None
    assert native_solver(Sub()) is None
    s = osqp.OSQP()
    s.solve = lambda raise_error=False: None  # replaced: the replacement must be called
    assert native_solver(s) is None
    plain = osqp.OSQP()
    assert native_solver(plain) is getattr(plain, "_solver", None)
    monkeypatch.setattr(osqp.OSQP, "update", lambda self, **kw: None)  # replaced on the class
    assert native_solver(osqp.OSQP()) is None
