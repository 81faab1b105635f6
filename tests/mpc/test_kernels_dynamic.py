"""The dynamic prediction model's compiled kernels (:mod:`mpc_tracking.mpc._kernels_dynamic`) against numpy."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.models.prediction import DynamicPrediction
from mpc_tracking.models.prediction import spatial_dynamic as sd
from mpc_tracking.mpc import kernels

pytestmark = pytest.mark.skipif(not kernels.numba_available(), reason="numba is not installed (extra 'fast')")
TOL = 1e-12
#: a closed loop's series: each back end carries its own solution (the first commands differ by ~1e-11, OSQP's
#: round-off), and the loop amplifies that: on the oval with the rk4/ellipse/power case to 2e-10 around t = 5 s, and
#: to 1.5e-9 once the first step kept FIRST_STEP_FLOOR of its braking (a different path through the same event)
LOOP_TOL = 1e-8
MEAS = {"v_x": 9.0, "v_y": 0.1, "r": 0.08, "speed": 9.0}


def _close(a: np.ndarray, b: np.ndarray, tol: float = TOL) -> None:
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _operating_point(rng: np.random.Generator, N: int, v_lo: float, v_hi: float) -> tuple[np.ndarray, ...]:
    x = np.column_stack([rng.uniform(-1.5, 1.5, N + 1), rng.uniform(-0.3, 0.3, N + 1), np.linspace(0, 3, N + 1),
                         rng.uniform(v_lo, v_hi, N + 1), rng.normal(0, 0.4, N + 1), rng.normal(0, 0.4, N + 1)])
    u = np.column_stack([rng.uniform(-6, 3, N), rng.uniform(-0.4, 0.4, N)])
    return x, u, rng.uniform(-0.05, 0.05, N + 1)


def test_parameter_packing_matches_the_kernel_positions() -> None:
    from mpc_tracking.mpc import _kernels_dynamic as kd

    p = sd.DynamicParams.bmw_320i()
    packed = kernels.dynamic_params(p)
    assert packed.shape == (kd.N_PARAMS,) == (len(kernels.DYNAMIC_PARAM_NAMES),)
    c_f, c_r = p.cornering_stiffness
    expect = {"D_M": p.mass, "D_IZ": p.I_z, "D_LF": p.l_f, "D_LR": p.l_r, "D_H": p.h_cg, "D_MUF": p.mu * p.tyre_D_f,
              "D_MUR": p.mu * p.tyre_D_r, "D_BF": p.tyre_B_f, "D_CF": p.tyre_C_f, "D_EF": p.tyre_E_f,
              "D_BR": p.tyre_B_r, "D_CR": p.tyre_C_r, "D_ER": p.tyre_E_r, "D_VFLOOR": p.v_floor,
              "D_VLO": p.v_blend_low, "D_VHI": p.v_blend_high, "D_TAU": p.tau_kin, "D_G": p.g, "D_L": p.wheelbase,
              "D_CSUM": c_f + c_r, "D_CALF": c_f, "D_CALR": c_r}
    for name, value in expect.items():
        assert packed[getattr(kd, name)] == value, name


@pytest.mark.parametrize("method", ["euler", "rk4"])
@pytest.mark.parametrize("speeds", [(0.2, 1.5), (1.0, 6.0), (4.0, 12.0), (15.0, 40.0)])
def test_linearization_equals_numpy(method: str, speeds: tuple[float, float]) -> None:
    """A, B, f of the kernel against DynamicPrediction.linearize: below the speed floor, across the kinematic
    blend, with several substeps (low speed) and with one (high speed); a zero-length step included."""
    kern = kernels.load()
    rng = np.random.default_rng(int(10 * speeds[0]) + (method == "rk4"))
    params = replace(sd.DynamicParams.bmw_320i(), tyre_E_f=0.3, tyre_D_r=0.9)  # every tyre term non-trivial
    model = DynamicPrediction(params)
    N = 20
    x, u, kappa = _operating_point(rng, N, *speeds)
    ds = rng.uniform(0.3, 1.5, N)
    ds[4] = 0.0
    A, B, f = np.empty((N, 6, 6)), np.empty((N, 6, 2)), np.empty((N, 6))
    n_sub = kern.dynamic_linearize(x, u, kappa, ds, kernels.dynamic_params(params), method == "rk4", A, B, f)
    assert n_sub == model.substeps(x[:-1], ds, method)
    for got, want in zip((A, B, f), model.linearize(x[:-1], u, kappa[:-1], ds, method), strict=True):
        _close(got, want)
    if speeds[0] < 5.0:
        assert n_sub > 1  # the composition of substeps is exercised


def test_linearization_is_exact_at_the_operating_point() -> None:
    """Analytic truth: with one substep, A x_op + B u_op + f is the nonlinear RK4 step from x_op."""
    kern = kernels.load()
    params = sd.DynamicParams.bmw_320i()
    rng = np.random.default_rng(5)
    N = 10
    x, u, kappa = _operating_point(rng, N, 20.0, 30.0)
    ds = np.full(N, 0.5)
    A, B, f = np.empty((N, 6, 6)), np.empty((N, 6, 2)), np.empty((N, 6))
    assert kern.dynamic_linearize(x, u, kappa, ds, kernels.dynamic_params(params), True, A, B, f) == 1
    step = sd.discrete_step(x[:-1], u, kappa[:-1], ds[:, None], params, "rk4")
    _close(np.einsum("kij,kj->ki", A, x[:-1]) + np.einsum("kij,kj->ki", B, u) + f, step, 1e-10)


def test_steady_cornering_equals_numpy() -> None:
    """The Newton solve of the steady cornering state, where it converges and where it falls back (beyond grip)."""
    kern = kernels.load()
    params = sd.DynamicParams.bmw_320i()
    rng = np.random.default_rng(7)
    K = 60
    kappa = np.concatenate([rng.uniform(-0.05, 0.05, K - 4), [0.0, 0.2, -0.3, 0.1]])
    v = np.concatenate([rng.uniform(0.1, 35.0, K - 4), [0.0, 30.0, 25.0, 2.0]])
    a = rng.uniform(-5, 3, K)
    want = np.column_stack(sd.steady_cornering(kappa, v, params, a))
    got = np.empty((K, 5))
    kern.steady_cornering(kappa, v, a, kernels.dynamic_params(params), 4, got)
    _close(got, want)
    linear = np.isclose(want[:, 2], np.maximum(v, params.v_floor) * kappa)  # the fallback: r = v kappa
    assert linear[-3] and not linear.all()


def test_steady_cornering_early_stop_equals_the_fixed_newton_steps() -> None:
    """The compiled Newton solve stops once its steps are below ``NEWTON_STOP``; over a wide grid of curvatures,
    speeds and accelerations (straights, corners, beyond grip) it still equals the numpy solve's four fixed steps
    to 1e-12, and where more steps move nothing (converged) it equals eight of them too."""
    from mpc_tracking.mpc import _kernels_dynamic as kd

    kern = kernels.load()
    params = sd.DynamicParams.bmw_320i()
    p = kernels.dynamic_params(params)
    rng = np.random.default_rng(3)
    K = 4000
    kappa = rng.uniform(-0.08, 0.08, K)
    kappa[::4] = 0.0
    v = rng.uniform(0.1, 45.0, K)
    a = rng.uniform(-9.0, 4.0, K)
    got = np.empty((K, 5))
    kern.steady_cornering(kappa, v, a, p, 4, got)
    _close(got, np.column_stack(sd.steady_cornering(kappa, v, params, a)))
    more = np.column_stack(sd.steady_cornering(kappa, v, params, a, iterations=8))
    four = np.column_stack(sd.steady_cornering(kappa, v, params, a, iterations=4))
    converged = np.all(np.abs(more - four) <= 1e-14 * np.maximum(1.0, np.abs(four)), axis=1)
    assert converged.mean() > 0.5 and kd.NEWTON_STOP < 1e-12
    _close(got[converged], more[converged])


def _pair(**changes: object) -> tuple[mt.SpatialMPC, mt.SpatialMPC]:
    path = mt.load_path("oval", ds=0.5)
    st = mt.MPCSettings(horizon=25, v_max=14.0, prediction_model="dynamic", decel_max=6.0, accel_max=3.0,
                        **changes)
    return (mt.SpatialMPC(path, mt.VehicleParams(), st.replace(compiled="python")),
            mt.SpatialMPC(path, mt.VehicleParams(), st.replace(compiled="numba")))


CASES = {
    "euler": {"discretization": "euler"},
    "rk4": {"discretization": "rk4"},
    "rk4, ellipse bounds, power limit": {"discretization": "rk4", "friction_ellipse": True, "power_per_mass": 60.0},
    "ellipse cuts": {"friction_ellipse": True, "ellipse_cuts": True, "power_per_mass": 60.0},
    "zero-slip reference": {},
    "time-optimal (t in the QP)": {"mode": "time_optimal", "discretization": "rk4"},
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("state", [(3.0, 0.5, 0.1), (120.0, -1.5, 0.3)])
def test_dynamic_qp_numbers_equal(case: str, state: tuple[float, float, float]) -> None:
    """Every number of the dynamic model's QP (A, B, f, the CSC data, q, l, u: friction-ellipse rows, the
    power-limit bound) from the compiled path equals numpy's to 1e-12 on the reference, and after a solve to the
    solver's round-off (each controller then carries its own solution's input; the grip estimate, on by default,
    reads its steering)."""
    py, nb = _pair(**CASES[case])
    if case == "zero-slip reference":
        for mpc in (py, nb):
            mpc.model.slip_reference = False
    assert nb.qp._compiled_dynamic_model and nb.qp.compiled_reference and not py.qp.compiled_reference
    for solved in (False, True):
        # after a solve the QP carries the applied input of each back end's own solution, equal only to the
        # solver's round-off (a few 1e-13 on entries of order 1): compared at 1e-10 there
        tol = 1e-10 if solved else TOL
        a, b = (m.build_qp(m._prepare(state, MEAS)) and m.step_problem() for m in (py, nb))
        for name in ("A", "B", "f", "e_ref", "u_lo", "u_hi", "rate_lo", "rate_hi", "corr_lo", "corr_hi"):
            _close(getattr(a, name), getattr(b, name), tol)
        for name in ("q", "l", "u", "A_data"):
            _close(getattr(py.data, name), getattr(nb.data, name), tol)
        for mpc in (py, nb):
            assert mpc.solve((state[0] - 1.0, state[1], state[2]), measured=MEAS).success
    assert nb.qp._rest_packed is not None  # the bounds and the cost came from the compiled kernel
    if "power" in case:  # the bound is active somewhere: P/m / v below accel_max
        assert np.any(b.u_hi[:, 0] < 3.0 - 1e-9)


@pytest.mark.parametrize("changes", [{"discretization": "rk4", "friction_ellipse": True},
                                     {"friction_ellipse": True, "ellipse_cuts": True}])
def test_first_step_keeps_its_braking_beyond_the_lateral_limit(changes: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """A car measured beyond its lateral limit (v_x r = 11 m/s^2 against a_y_max = 4): the first step's braking
    keeps FIRST_STEP_FLOOR of the limit (at the ellipse's floor without it) and its acceleration none (power in a
    slide takes the driven axle's grip), and the compiled path gives numpy's numbers
    (the braking the speed bound counts on included)."""
    from mpc_tracking.mpc import qp as qp_module

    sliding = {"v_x": 11.0, "v_y": 0.3, "r": 1.0, "speed": 11.0}
    for floor in (qp_module.FIRST_STEP_FLOOR, qp_module.ELLIPSE_FLOOR):
        monkeypatch.setattr(qp_module, "FIRST_STEP_FLOOR", floor)
        py, nb = _pair(**changes)
        a, b = (m.build_qp(m._prepare((3.0, 0.2, 0.0), sliding)) and m.step_problem() for m in (py, nb))
        for name in ("u_lo", "u_hi", "A", "B", "f"):
            _close(getattr(a, name), getattr(b, name))
        for name in ("q", "l", "u", "A_data"):
            _close(getattr(py.data, name), getattr(nb.data, name))
        if not changes.get("ellipse_cuts"):  # (with cuts the box is the plain one)
            assert b.u_lo[0, 0] == pytest.approx(-6.0 * floor, rel=1e-12)
            assert b.u_hi[0, 0] == 0.0


def test_replaced_parameters_and_table_are_followed() -> None:
    """The grip estimate replaces the model's parameters and the sampler's table during a run: the compiled path
    packs them again (the same QP as numpy's)."""
    py, nb = _pair(discretization="rk4")
    for mpc in (py, nb):  # first a QP with the original parameters and settings, then the replaced ones
        mpc.build_qp(mpc._prepare((50.0, 0.3, 0.0), MEAS))
        mpc.settings = mpc.qp.settings = mpc.settings.replace(a_y_max=3.0, decel_max=4.0)
        p = mpc.model.params
        mpc.model.params = replace(p, tyre_D_f=0.7 * p.tyre_D_f, tyre_B_f=p.tyre_B_f / 0.7)
        sampler = mpc._sampler
        table = sampler.table.copy()
        table[:, 3] *= 0.8
        sampler.table = table
        sampler._linear = type(sampler._linear)(sampler.s, table)
    for mpc in (py, nb):
        mpc.build_qp(mpc._prepare((50.0, 0.3, 0.0), MEAS))
    for name in ("q", "l", "u", "A_data"):
        _close(getattr(py.data, name), getattr(nb.data, name))
    s = np.linspace(0.0, 30.0, 7)
    _close(nb._sampler.sample(s).kappa, py._sampler.sample(s).kappa)


@pytest.mark.parametrize("changes", [{"discretization": "rk4", "friction_ellipse": True, "power_per_mass": 60.0},
                                     {"friction_ellipse": True, "ellipse_cuts": True}])
def test_closed_loop_equal(changes: dict) -> None:
    """A closed loop with the dynamic model gives numpy's run (errors, commands, iterations) to 1e-9."""
    path = mt.load_path("oval", ds=0.5)
    runs = []
    for mpc in _pair(**changes):
        plant = mt.create_model("kinematic_bicycle", {"wheelbase": 2.7})
        runs.append(mt.simulate(path, mpc, plant, t_max=6.0, e_y0=0.8))
    a, b = runs
    assert a.metrics["infeasible_steps"] == 0 and len(a.series["e_y"]) == len(b.series["e_y"]) > 100
    for name in ("e_y", "e_psi", "v_cmd", "delta_cmd", "iterations"):
        _close(np.asarray(a.series[name], dtype=float), np.asarray(b.series[name], dtype=float), LOOP_TOL)
