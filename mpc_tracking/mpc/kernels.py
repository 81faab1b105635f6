"""The MPC step's numbers in compiled code (numba) or numpy: choice, lazy loading, one entry per kernel.

``MPCSettings.compiled`` chooses where the numbers of a step are computed:

``"python"``
    numpy only (the reference);
``"numba"``
    the kernels of :mod:`mpc_tracking.mpc._kernels`, compiled with numba (the optional extra
    ``pip install "mpc_tracking[fast]"``); a :class:`~mpc_tracking.errors.SettingsError` when numba is not
    installed;
``"auto"`` (default)
    ``"numba"`` when numba can be imported, else ``"python"``.

Both paths give the same numbers to rounding (``tests/mpc/test_kernels.py``: 1e-12 on every entry of the QP, 1e-9
on closed-loop runs of both prediction models, where OSQP's iterations amplify last-bit differences). Compiled
today: the path sample (:meth:`PathSampler.sample <mpc_tracking.mpc.sampler.PathSampler.sample>`), the shift of
the last plan and the clamp of the operating point (any model), the kinematic model's reference operating point,
its Euler linearization and discretization written into the QP (:func:`kinematic_linearize_fill`), its speed
bound, rates, corridor rows, lateral reference and cost vector, in the same call (:func:`kinematic_build`), and
the grid, path sample, reference and shifted operating point of its step in one call
(``_kernels.kinematic_prepare``); the controller runs all of that, the domain check, the corridor bounds of the
path's widths and the finiteness check as one call per step (``_kernels.kinematic_step``, its constants packed by
:func:`kinematic_step_pack`: each array argument costs a conversion per call) where its general path would run
those same kernels; the solved plan's copy, its points in the world and the table of the next step's shift in one
call (``finish_plan``); the solution check
(:func:`constraint_excess`), the finiteness checks of the QP data and of the solver's solution
(``all_finite``), the largest corridor slack (``tail_max``) and the plan's points in the world (``offset_points``),
the OSQP back end's equilibration of each step's numbers and the solution's way back (``equilibrate_step``,
``unscale_finite``; :mod:`mpc_tracking.mpc.backends.equilibration` is their numpy path),
and the dynamic model's step (:mod:`._kernels_dynamic`): its linearization and
discretization (Euler or RK4 with exact sensitivities, substeps composed along the nonlinear rollout) written into
the QP, and its reference operating point (the speed reference and the steady cornering state), with its
parameters packed by :func:`dynamic_params`; the controller runs the dynamic model's step before the solve as three
calls (``_kernels.dynamic_prepare``: grid, path sample, speed reference, shifted last plan;
``_kernels_dynamic.dynamic_op_fill``: reference and operating point, its clamp, the dynamics written into the QP;
``_kernels.dynamic_rest``: bounds, corridor rows, cost and the finiteness check, its constants packed by
:meth:`StepQP.dynamic_rest_pack <mpc_tracking.mpc.qp.StepQP.dynamic_rest_pack>`; three, not one: a kernel calls
only kernels of its own file, see :mod:`._kernels`) where its general path would run those same kernels.

Loading is lazy: the first controller that uses the kernels imports numba (about 0.5 s) and compiles the kernels
(15-30 s on a busy 2-core machine, half of it the dynamic model's; once per installation, about 3 MB of cache) or
loads them from numba's on-disk cache (about 0.6 s) (``cache=True``: ``__pycache__``
beside :mod:`._kernels`, else numba's user cache or ``NUMBA_CACHE_DIR``). The time is logged (level INFO) and kept
in :func:`compile_seconds`; :func:`warm_up` does it ahead (e.g. in a sweep's parent process, so that its workers
load from the cache).

>>> resolve("python")
'python'
"""
from __future__ import annotations

import importlib
import importlib.util
import logging
import time
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from mpc_tracking._optional import numba_available
from mpc_tracking.errors import SettingsError

__all__ = ["CHOICES", "numba_available", "resolve", "load", "warm_up", "compile_seconds",
           "kinematic_linearize_fill", "constraint_excess", "BoundsCostConstants", "bounds_cost_constants",
           "kinematic_build", "KinematicStepPack", "kinematic_step_pack", "dynamic_params", "DYNAMIC_PARAM_NAMES"]

logger = logging.getLogger(__name__)

#: the values of ``MPCSettings.compiled``
CHOICES = ("auto", "numba", "python")

_MODULE: ModuleType | None = None
_SECONDS: float | None = None




def resolve(choice: str) -> str:
    """The path actually used, ``"numba"`` or ``"python"``, for ``MPCSettings.compiled = choice``.

    Raises
    ------
    SettingsError
        ``choice`` is not one of :data:`CHOICES`, or ``"numba"`` while numba is not installed.
    """
    if choice not in CHOICES:
        raise SettingsError(f"MPCSettings.compiled: expected one of {CHOICES}, got {choice!r}")
    if choice == "python":
        return "python"
    if numba_available():
        return "numba"
    if choice == "numba":
        raise SettingsError('MPCSettings.compiled: "numba" needs numba, which is not installed; '
                            'pip install "mpc_tracking[fast]" or use "auto"')
    logger.debug("MPCSettings.compiled = 'auto': numba is not installed, the step runs in numpy")
    return "python"


def load() -> ModuleType:
    """The compiled kernels (:mod:`._kernels`), compiled or loaded from numba's cache on the first call."""
    global _MODULE, _SECONDS
    if _MODULE is None:
        t0 = time.perf_counter()
        mod = importlib.import_module("mpc_tracking.mpc._kernels")
        _SECONDS = time.perf_counter() - t0
        _MODULE = mod
        logger.info("MPC step kernels ready in %.2f s (import numba, then compile or load from the cache)", _SECONDS)
    return _MODULE


def warm_up() -> bool:
    """Load the kernels now when numba is installed (compiling them into the on-disk cache the first
    time), the kinematic bicycle plant's compiled substeps, the 3D car's step and its held-command kernel
    behind the wheel-torque PI, and the closed loop's compiled projection walk; True when they are loaded."""
    if not numba_available():
        return False
    load()
    from mpc_tracking.models.plants.ackermann3d import batch_numba, held
    from mpc_tracking.models.plants.kinematic_bicycle import substep_kernel
    from mpc_tracking.paths.projection import compiled_walk

    substep_kernel()
    compiled_walk()
    batch_numba.load_kernels()
    held.load_kernel()
    return True


def compile_seconds() -> float | None:
    """Wall time [s] the first :func:`load` took (import numba + compile or cache load); None before."""
    return _SECONDS


def kinematic_linearize_fill(kern: ModuleType, x_op: np.ndarray, u_op: np.ndarray, kappa: np.ndarray,
                             s_grid: np.ndarray, wheelbase: float, x0: np.ndarray, data: np.ndarray,
                             pos_A: np.ndarray, pos_B: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                             out: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Euler linearization of the kinematic spatial bicycle, written into the QP in one compiled call.

    The numbers of :func:`~mpc_tracking.models.prediction.spatial_bicycle.linearize` (``method="euler"``) about
    ``x_op[:N]`` (N, 3), ``u_op`` (N, 2) with ``kappa[:N]`` [1/m] over the steps ``max(diff(s_grid), 0)`` [m],
    then :meth:`QPLayout.fill_dynamics <mpc_tracking.mpc.layout.QPLayout.fill_dynamics>` into ``data`` and the
    dynamics rows of ``lower``, ``upper`` (``x0`` (3,), then ``-f``). ``out = (A, B, f)`` (N, 3, 3), (N, 3, 2), (N, 3)
    receives the model. Every array must be C-contiguous float64 (positions int64).
    """
    A, B, f = out
    kern.kinematic_linearize_fill(x_op, u_op, kappa, s_grid, float(wheelbase), x0, data, pos_A, pos_B, lower, upper,
                                  A, B, f)


def constraint_excess(kern: ModuleType, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, z: np.ndarray,
                      lower: np.ndarray, upper: np.ndarray, scratch: np.ndarray) -> tuple[int, float, float]:
    """``(row, excess, scale)`` of ``lower <= A z <= upper`` for the CSC matrix ``(data, indices, indptr)``.

    ``row`` is the first row of largest ``max(lower - Az, Az - upper)`` (NaN rows first: then ``excess`` and ``scale``
    are NaN), ``scale = max(|Az|_inf, |z|_inf, 1)``: the numbers of ``A @ z``, ``np.maximum``, ``np.argmax``.
    ``scratch`` (m,) float64 holds ``A z`` afterwards.
    """
    i, e, scale = kern.constraint_excess(indptr, indices, data, z, lower, upper, scratch)
    return int(i), e, scale


class BoundsCostConstants(NamedTuple):
    """What :func:`kinematic_build` passes to the kernel besides the step's arrays (packed once per controller)."""

    prm: np.ndarray
    flg: np.ndarray
    s_off_x: np.ndarray
    s_off_u: np.ndarray
    Q: np.ndarray
    QN: np.ndarray
    R: np.ndarray
    Rd: np.ndarray
    rate_dn: np.ndarray
    rate_up: np.ndarray
    no_v_box: np.ndarray
    wheelbase: float
    #: the QP's matrix data, the positions of the model's entries in it and the arrays that receive the model
    #: ``(A_data, pos_A, pos_B, A, B, f)``
    dynamics: tuple[np.ndarray, ...]
    #: the constant arrays and the outputs after the step's arrays: offsets, weights, rate limits, prm, flg, then
    #: ``l``, ``u``, ``q``, the step durations and the lateral reference
    out: tuple[np.ndarray, ...]


#: positions in ``prm`` and ``flg`` (the same literals as in :mod:`._kernels`, checked by the tests)
PRM_NAMES = ("inv_wheelbase", "a_y_max", "v_min", "v_max", "control_period", "accel_max", "decel_max", "half_width",
             "ref_inset", "ref_slope", "time_weight", "inf", "v_now")
FLG_NAMES = ("r_box", "r_rate", "r_corr", "nX", "has_v_box", "has_u_prev", "finite_accel", "finite_decel")


def bounds_cost_constants(qp: Any, rates: tuple[np.ndarray, np.ndarray], inf: float,
                          buffers: tuple[np.ndarray, ...]) -> BoundsCostConstants:
    """Pack the constants of a :class:`~mpc_tracking.mpc.qp.StepQP` (kinematic model) for :func:`kinematic_build`.

    ``rates`` are the model's input rate limits ``(down, up)`` (nu,) per second, ``inf`` the solver's infinity
    (:data:`mpc_tracking.mpc.qp.INF`), ``buffers = (pos_A, pos_B, A, B, f, dt, e_ref)`` the positions of the model's
    entries in the QP's matrix data and the arrays that receive the model, the step durations and the lateral
    reference.
    """
    st, lay = qp.settings, qp.layout
    values = {"inv_wheelbase": qp.inv_L, "a_y_max": st.a_y_max, "v_min": st.v_min, "v_max": st.v_max,
              "control_period": st.control_period, "accel_max": st.accel_max, "decel_max": st.decel_max,
              "half_width": qp._half_w, "ref_inset": qp._ref_inset, "ref_slope": qp._ref_slope,
              "time_weight": st.time_weight if st.mode == "time_optimal" else 0.0, "inf": inf, "v_now": np.nan}
    flags = {"r_box": lay.r_box, "r_rate": lay.r_rate, "r_corr": lay.r_corr, "nX": lay.nX, "has_v_box": 0,
             "has_u_prev": 0, "finite_accel": int(np.isfinite(st.accel_max)),
             "finite_decel": int(np.isfinite(st.decel_max))}

    def f64(a: Any) -> np.ndarray:
        return np.ascontiguousarray(a, dtype=np.float64)

    prm, flg = np.array([float(values[k]) for k in PRM_NAMES]), np.array([int(flags[k]) for k in FLG_NAMES])
    s_off_x, s_off_u, Q, QN, R, Rd = (f64(a) for a in (qp._s_offsets_x, qp._s_offsets_u, qp._Q, qp._QN, qp._R,
                                                       qp._Rd))
    rate_dn, rate_up = f64(rates[0]), f64(rates[1])
    pos_A, pos_B, A, B, f, dt, e_ref = buffers
    d = qp.data
    return BoundsCostConstants(
        prm=prm, flg=flg, s_off_x=s_off_x, s_off_u=s_off_u, Q=Q, QN=QN, R=R, Rd=Rd, rate_dn=rate_dn, rate_up=rate_up,
        no_v_box=np.zeros(1), wheelbase=float(qp.model.wheelbase), dynamics=(d.A_data, pos_A, pos_B, A, B, f),
        out=(s_off_x, s_off_u, Q, QN, R, Rd, rate_dn, rate_up, prm, flg, d.l, d.u, d.q, dt, e_ref))


def kinematic_build(kern: ModuleType, c: BoundsCostConstants, x_op: np.ndarray, u_op: np.ndarray, q: Any,
                    s_grid: np.ndarray, x0: np.ndarray, u_prev: np.ndarray, has_u_prev: bool, v_now: float | None,
                    lb: np.ndarray, ub: np.ndarray, u_ref: np.ndarray) -> None:
    """The kinematic model's QP in one compiled call (``_kernels.kinematic_build``): its Euler linearization and
    discretization written into the QP (:func:`kinematic_linearize_fill`), then the speed bound, rates, corridor
    rows, lateral reference and cost (``_kernels.kinematic_bounds_cost``): the numbers of :meth:`StepQP.build
    <mpc_tracking.mpc.qp.StepQP.build>`.

    ``x_op`` (N+1, 3), ``u_op`` (N, 2) are the operating point, ``x0`` (3,) the state, ``q`` the step's
    :class:`~mpc_tracking.mpc.sampler.PathSample` on ``s_grid`` (N+1,), ``u_prev`` (2,) the last command
    (``has_u_prev``), ``v_now`` the measured speed [m/s] or None, ``lb``, ``ub`` (N+1,) the corridor bounds [m],
    ``u_ref`` (N, 2) the input reference. The results go to the arrays packed in ``c.out``
    (:func:`bounds_cost_constants`): the QP data (``A_data``, ``l``, ``u``, ``q``), the model ``A``, ``B``, ``f``,
    the step durations [s] and the lateral reference [m].
    """
    c.prm[12] = np.nan if v_now is None else float(v_now)
    c.flg[4] = q.v_box is not None
    c.flg[5] = has_u_prev
    if lb.dtype != np.float64 or ub.dtype != np.float64:
        lb, ub = np.asarray(lb, dtype=np.float64), np.asarray(ub, dtype=np.float64)
    kern.kinematic_build(x_op, u_op, q.kappa, s_grid, c.wheelbase, x0, *c.dynamics,
                         q.v_box if q.v_box is not None else c.no_v_box, u_ref, u_prev, lb, ub, *c.out)


class KinematicStepPack(NamedTuple):
    """The packed arguments of the fused kinematic step (``_kernels.kinematic_step``; :func:`kinematic_step_pack`)."""

    #: the constants ``[s_off_x (K), s_off_u (N), ref_prm (8), prm (13), Q, QN (9 each), R, Rd (4 each), rate_dn,
    #: rate_up (2 each), ds, v_min, L]`` (K = N+1)
    cst: np.ndarray
    #: ``[flg (8), pos_A (9N), pos_B (6N)]`` (int64)
    ints: np.ndarray
    #: the scratch ``[x_ref (3K), u_ref (2N), z_op (5K), lim (K)]``
    work: np.ndarray
    #: position in ``cst`` of ``ref_prm[6]``, the speed the reference's forward pass starts from (NaN: none)
    i_v_start: int
    #: views of ``work``: ``x_ref`` (K, 3), ``u_ref`` (N, 2), ``z_op`` (K, 5), ``lim`` (K,)
    views: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def kinematic_step_pack(c: BoundsCostConstants, ref_prm: np.ndarray, ds: float, v_min: float,
                        has_v_box: bool) -> KinematicStepPack:
    """Pack the constants of the kinematic model's fused step (``_kernels.kinematic_step``, whose docstring gives the
    layout): the step's grid offsets, the reference's numbers ``ref_prm`` (8,) (:meth:`StepQP.reference_op
    <mpc_tracking.mpc.qp.StepQP.reference_op>`), the QP's constants ``c`` (:func:`bounds_cost_constants`), the grid
    step ``ds`` [m], the smallest speed ``v_min`` [m/s] and whether the path sample has the extra speed ceiling
    ``has_v_box``. Copies: a later change of ``c`` or ``ref_prm`` does not reach the pack (the measured speed
    ``prm[12]`` is NaN in it, as the controller passes none)."""
    N = c.s_off_u.size
    prm = c.prm.copy()
    prm[12] = np.nan
    parts = (c.s_off_x, c.s_off_u, ref_prm, prm, c.Q, c.QN, c.R, c.Rd, c.rate_dn, c.rate_up, [ds, v_min, c.wheelbase])
    cst = np.ascontiguousarray(np.concatenate([np.ravel(a) for a in parts]), dtype=np.float64)
    sizes = (N + 1, N, 8, 13, 9, 9, 4, 4, 2, 2, 3)
    if tuple(np.size(a) for a in parts) != sizes:
        raise ValueError(f"kinematic_step_pack: expected the kinematic model's constants of sizes {sizes}, got "
                         f"{tuple(np.size(a) for a in parts)}")
    flg = c.flg.copy()
    flg[4] = has_v_box
    _data, pos_A, pos_B = c.dynamics[:3]
    ints = np.ascontiguousarray(np.concatenate([flg, pos_A, pos_B]), dtype=np.int64)
    K = N + 1
    work = np.empty(3 * K + 2 * N + 5 * K + K)
    views = (work[: 3 * K].reshape(K, 3), work[3 * K : 3 * K + 2 * N].reshape(N, 2),
             work[3 * K + 2 * N : 8 * K + 2 * N].reshape(K, 5), work[8 * K + 2 * N :])
    return KinematicStepPack(cst, ints, work, 2 * N + 1 + 6, views)


#: the dynamic model's parameters in the order of :mod:`._kernels_dynamic`'s ``D_*`` positions (checked by the tests)
DYNAMIC_PARAM_NAMES = ("mass", "I_z", "l_f", "l_r", "h_cg", "mu_f", "mu_r", "tyre_B_f", "tyre_C_f", "tyre_E_f",
                       "tyre_B_r", "tyre_C_r", "tyre_E_r", "v_floor", "v_blend_low", "v_blend_high", "tau_kin", "g",
                       "wheelbase", "cornering_sum", "cornering_f", "cornering_r", "understeer_gradient")


def dynamic_params(params: Any) -> np.ndarray:
    """The parameters of a :class:`~mpc_tracking.models.prediction.spatial_dynamic.DynamicParams`, packed for the
    dynamic model's kernels: (23,) float64 in the order of :data:`DYNAMIC_PARAM_NAMES`, each derived number
    (``mu D`` per axle, wheelbase, cornering stiffnesses, understeer gradient) computed as the numpy model does."""
    p = params
    c_f, c_r = p.cornering_stiffness
    L = p.wheelbase
    values = {name: getattr(p, name) for name in DYNAMIC_PARAM_NAMES[:18] if hasattr(p, name)}
    values.update(mu_f=p.mu * p.tyre_D_f, mu_r=p.mu * p.tyre_D_r, wheelbase=L, cornering_sum=c_f + c_r,
                  cornering_f=c_f, cornering_r=c_r, understeer_gradient=p.mass / L * (p.l_r / c_f - p.l_f / c_r))
    return np.array([float(values[name]) for name in DYNAMIC_PARAM_NAMES])
