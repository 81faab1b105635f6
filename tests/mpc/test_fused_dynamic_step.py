"""The dynamic model's step before the solve in three compiled calls (``SpatialMPC._build_fused_dynamic``:
``_kernels.dynamic_prepare``, ``_kernels_dynamic.dynamic_op_fill``, ``_kernels.dynamic_rest``) against the general
path of the same controller (``_prepare``, ``build_qp``), bit for bit."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import InputError
from mpc_tracking.models.prediction import DynamicPrediction
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
from mpc_tracking.mpc import kernels

pytestmark = pytest.mark.skipif(not kernels.numba_available(), reason="numba is not installed (extra 'fast')")

SERIES = ("e_y", "e_psi", "v_cmd", "delta_cmd", "iterations", "lb", "ub", "corridor_violation")
MEAS = {"speed": 8.0, "v_x": 8.0, "v_y": 0.05, "r": 0.2}


def _open_path() -> mt.ReferencePath:
    x = np.linspace(0.0, 60.0, 121)
    return mt.ReferencePath(x, 2.0 * np.sin(x / 8.0), closed=False, ds=0.5, width_left=3.0, width_right=2.5)


def _pair(path: mt.ReferencePath, model: dict[str, Any] | None = None,
          **changes: Any) -> tuple[mt.SpatialMPC, mt.SpatialMPC]:
    """Two controllers of the same settings (the dynamic model): the fused step, and the general path
    (``_fused_dyn`` removed)."""
    st = mt.MPCSettings(horizon=20, v_max=10.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0,
                        prediction_model="dynamic", **changes)
    fused, general = (mt.SpatialMPC(path, mt.VehicleParams(), st,
                                    prediction=DynamicPrediction(DynamicParams.bmw_320i(), **(model or {})))
                      for _ in range(2))
    assert fused._fused_dyn is not None
    general._fused_dyn = None
    return fused, general


CASES = {
    "grip_on": {},
    "grip_off": {"grip_estimation": False},
    "ellipse_bounds_rk4": {"friction_ellipse": True, "discretization": "rk4"},
    "ellipse_cuts_power": {"friction_ellipse": True, "ellipse_cuts": True, "power_per_mass": 60.0},
    "time_optimal": {"mode": "time_optimal", "friction_ellipse": True, "ellipse_cuts": True},
    "previous_linearization": {"linearization": "previous"},
    "open_path_end": {},
    "no_slip_reference": {},
}


@pytest.mark.parametrize("case", list(CASES))
def test_closed_loop_equals_the_general_path(case: str) -> None:
    """The same closed loop, bit for bit, with the grip estimate on (the default; its limits lowered during the
    run: the packed numbers follow) or off, the friction ellipse as bounds or cuts, the time-optimal mode, the
    shifted last plan as operating point and an open path's end."""
    path = _open_path() if case == "open_path_end" else mt.load_path("oval", ds=0.5)
    model = {"slip_reference": False} if case == "no_slip_reference" else None
    a, b = _pair(path, model, **CASES[case])
    built = []  # the steps the fused call built
    build = a._build_fused_dynamic

    def counted(*args: Any) -> Any:
        out = build(*args)
        built.append(out is not None)
        return out

    a._build_fused_dynamic = counted  # type: ignore[method-assign]
    runs = []
    for mpc in (a, b):
        if mpc.grip is not None:  # lower the limits after 3 s, as a slide would
            solve, done = mpc.solve, []

            def lowered(state: Any, t: float = 0.0, measured: Any = None, _m: Any = mpc, _s: Any = solve,
                        _done: list = done) -> Any:
                if t > 3.0 and not _done:
                    _m.grip._apply(0.8)
                    _done.append(t)
                return _s(state, t, measured)

            mpc.solve = lowered  # type: ignore[method-assign]
        plant = mt.create_model("kinematic_bicycle", {"wheelbase": mpc.vehicle.wheelbase})
        runs.append(mt.simulate(path, mpc, plant, t_max=8.0, e_y0=0.8))
    ra, rb = runs
    assert len(ra.series["e_y"]) > 100
    assert sum(built) > 0.9 * len(ra.series["e_y"])
    if a.grip is not None:
        assert a.grip.ratio == b.grip.ratio != 1.0
    for name in SERIES:
        np.testing.assert_array_equal(np.asarray(ra.series[name], dtype=float),
                                      np.asarray(rb.series[name], dtype=float), err_msg=name)
    assert list(ra.series["status"]) == list(rb.series["status"])


def test_one_step_gives_the_general_qp_and_solution() -> None:
    """After one step from the same state both controllers hold the same QP (every entry), the same record of it
    (:meth:`step_problem`) and plan."""
    a, b = _pair(_open_path(), friction_ellipse=True, ellipse_cuts=True)
    for state in ((3.0, 0.5, 0.05), (3.4, 0.45, 0.02), (3.9, 0.4, -0.01)):
        sa, sb = a.solve(state, measured=MEAS), b.solve(state, measured=MEAS)
        for name in ("s", "x", "u", "xy", "lb", "ub"):
            np.testing.assert_array_equal(getattr(sa, name), getattr(sb, name), err_msg=name)
        assert (sa.v, sa.delta, sa.iterations, sa.corridor_violation) == (sb.v, sb.delta, sb.iterations,
                                                                          sb.corridor_violation)
        pa, pb = a.step_problem(), b.step_problem()
        for name in ("A", "B", "f", "x0", "u_lo", "u_hi", "rate_lo", "rate_hi", "corr_lo", "corr_hi", "e_ref",
                     "u_ref", "u_prev"):
            np.testing.assert_array_equal(getattr(pa, name), getattr(pb, name), err_msg=name)
        for name in ("A_data", "q", "l", "u"):
            np.testing.assert_array_equal(getattr(a.data, name), getattr(b.data, name), err_msg=name)


def test_the_plan_of_a_step_is_not_overwritten_by_the_next() -> None:
    """What a solution holds (grid, plan, bounds) is its own: the fused step reuses only its scratch."""
    a, _ = _pair(mt.load_path("oval", ds=0.5))
    first = a.solve((3.0, 0.5, 0.0), measured=MEAS)
    kept = {name: np.array(getattr(first, name), copy=True) for name in ("s", "x", "u", "xy", "lb", "ub")}
    a.solve((3.5, 0.3, 0.0), measured=MEAS)
    for name, value in kept.items():
        np.testing.assert_array_equal(getattr(first, name), value, err_msg=name)


@pytest.mark.parametrize("changes", [{"compiled": "python"}, {"disturbance_observer": True}, {"iterations": 2},
                                     {"warm_start": "shift"}, {"prediction_model": "kinematic"}])
def test_other_settings_take_the_general_path(changes: dict[str, Any]) -> None:
    st = mt.MPCSettings(horizon=10, v_max=10.0, **{"prediction_model": "dynamic", **changes})
    assert mt.SpatialMPC(mt.load_path("oval", ds=0.5), mt.VehicleParams(), st)._fused_dyn is None


def test_settings_replaced_by_ones_it_does_not_cover_take_the_general_path() -> None:
    a, b = _pair(mt.load_path("oval", ds=0.5))
    for mpc in (a, b):
        mpc.settings = mpc.qp.settings = mpc.settings.replace(iterations=2)
    assert a._build_fused_dynamic((3.0, 0.3, 0.0), MEAS) is None
    sa, sb = a.solve((3.0, 0.3, 0.0), measured=MEAS), b.solve((3.0, 0.3, 0.0), measured=MEAS)
    np.testing.assert_array_equal(sa.u, sb.u)


def test_outside_the_domain_is_the_same_error() -> None:
    a, b = _pair(mt.load_path("oval", ds=0.5))
    with pytest.raises(InputError, match="faces away"):
        a._build_fused_dynamic((3.0, 0.2, 1.7), MEAS)
    with pytest.raises(InputError, match="faces away"):
        b._prepare((3.0, 0.2, 1.7), MEAS)


def test_non_finite_data_falls_back() -> None:
    """A non-finite QP (a NaN curvature of the path) is not solved: the fallback, as on the general path."""
    path = mt.load_path("oval", ds=0.5)
    a, b = _pair(path)
    sols = []
    for mpc in (a, b):
        assert mpc.solve((3.0, 0.3, 0.0), measured=MEAS).status == "solved"
        mpc._sampler.table[:, 0] = np.nan  # the curvature: the dynamics' entries
        mpc._sampler._kernel_source = None
        sols.append(mpc.solve((3.3, 0.3, 0.0), measured=MEAS))
    assert [s.solver_status for s in sols] == ["non-finite QP data"] * 2
    assert sols[0].status == sols[1].status == "fallback"
    assert (sols[0].v, sols[0].delta) == (sols[1].v, sols[1].delta)


def test_the_rest_pack_holds_the_general_paths_constants() -> None:
    """StepQP.dynamic_rest_pack: the constants _build_rest_dynamic passes, in dynamic_rest's layout; packed again
    when the grip estimate replaces the limits."""
    a, _ = _pair(mt.load_path("oval", ds=0.5), friction_ellipse=True, ellipse_cuts=True)
    qp = a.qp
    cst, ints = qp.dynamic_rest_pack()
    _st, prm, flg, (pos_x, pos_a), mats, _params = qp._dynamic_constants()
    limits = qp._dynamic_limits()
    np.testing.assert_array_equal(cst, np.concatenate([prm, *limits, qp._s_offsets_x, *(m.ravel() for m in mats)]))
    np.testing.assert_array_equal(ints[13:], np.concatenate([qp._xcol, pos_x, pos_a]))
    assert qp.dynamic_rest_pack()[0] is cst
    a.grip._apply(0.7)  # type: ignore[union-attr]
    cst2, _ints2 = qp.dynamic_rest_pack()
    assert cst2 is not cst and cst2[0] == pytest.approx(0.7 * cst[0])  # a_y_max


def test_the_domain_guard_binds_as_on_the_general_path() -> None:
    """A start heading beyond the operating point's guard (|e_psi| > 1.2 rad, below pi/2): the same clamped
    operating point, QP and plan (no rejoin: it would take such a step)."""
    a, b = _pair(mt.load_path("oval", ds=0.5), rejoin=False)
    for state in ((3.0, 0.2, 1.3), (3.3, -0.2, -1.35)):
        sa, sb = a.solve(state, measured=MEAS), b.solve(state, measured=MEAS)
        np.testing.assert_array_equal(a.qp.dynamics[0], b.qp.dynamics[0])
        for name in ("A_data", "q", "l", "u"):
            np.testing.assert_array_equal(getattr(a.data, name), getattr(b.data, name), err_msg=name)
        np.testing.assert_array_equal(sa.u, sb.u)
