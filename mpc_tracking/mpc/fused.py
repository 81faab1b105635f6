"""The controller's step before the solve in few compiled calls (issue 23): where a step would run only compiled
kernels anyway, :class:`~mpc_tracking.mpc.controller.SpatialMPC` takes it through these instead of building a
:class:`~mpc_tracking.mpc.step.StepInput` and a :class:`~mpc_tracking.mpc.sampler.PathSample` and calling the kernels
one by one.

* the kinematic model: :func:`build_kinematic`, one call (``_kernels.kinematic_step``: prepare, domain check, body
  width bounds, build, finiteness), with the constants of :func:`kinematic_setup`;
* the dynamic model: :func:`build_dynamic`, three calls (``_kernels.dynamic_prepare``,
  ``_kernels_dynamic.dynamic_op_fill``, ``_kernels.dynamic_rest``: no kernel calls across files, whose on-disk cache
  would not see the other file change), with the buffers of :func:`dynamic_setup`.

The setups return None where a step needs the general path (:meth:`SpatialMPC._prepare
<mpc_tracking.mpc.controller.SpatialMPC>` and :meth:`SpatialMPC.build_qp
<mpc_tracking.mpc.controller.SpatialMPC.build_qp>`); the builds return None where this step does (nothing changed but
the measured speed). Both paths give the same numbers bit for bit (tests/mpc/test_fused_step.py,
tests/mpc/test_fused_dynamic_step.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from mpc_tracking.models.prediction import DynamicPrediction, Measurement
from mpc_tracking.mpc import kernels

__all__ = ["kinematic_setup", "dynamic_setup", "build_kinematic", "build_dynamic"]

_F_UPREV = kernels.FLG_NAMES.index("has_u_prev")  # (the flag of a last command in the fused step's integers)


def kinematic_setup(mpc: Any, replaced: bool) -> tuple[Any, ...] | None:
    """The constants of ``SpatialMPC._solve_fused``, or None when the step needs the general path: not the
    compiled kinematic QP (:attr:`StepQP.compiled_reference <mpc_tracking.mpc.qp.StepQP>` with its whole build
    compiled), a corridor provider, a disturbance estimate, grip estimation, a delay, re-linearizations, a shifted
    warm start, or ``SpatialMPC._prepare`` or :meth:`~mpc_tracking.mpc.controller.SpatialMPC.build_qp` replaced (a
    subclass: ``replaced``; on the instance: checked per step)."""
    st, qp = mpc.settings, mpc.qp
    if (replaced or mpc._prepare_args is None or not qp._compiled_rest or mpc.corridor is not None
            or not mpc._sampler.has_body or mpc.disturbance is not None or mpc.grip is not None
            or st.delay > 0 or st.iterations != 1 or st.warm_start == "shift"):
        return None
    cap_col, ref_prm, dummy_table = mpc._prepare_args
    c = qp._kernel_consts
    pack = kernels.kinematic_step_pack(c, ref_prm, mpc.ds, st.v_min, mpc._sampler.has_v_box)
    A_data, _pos_A, _pos_B, A, B, f = c.dynamics
    outputs = (A_data, A, B, f, *c.out[-5:])  # the QP's data l, u, q, the step durations, the lateral reference
    return (st, qp.kernels, cap_col, dummy_table, pack, np.zeros(2), outputs)


def dynamic_setup(mpc: Any, replaced: bool) -> dict[str, Any] | None:
    """The buffers and constants of :func:`build_dynamic`, or None when the step needs the general path:
    not the compiled dynamic model (``DynamicPrediction`` itself, :attr:`StepQP._compiled_dynamic_model
    <mpc_tracking.mpc.qp.StepQP>`), a corridor provider, no body widths, a disturbance estimate,
    re-linearizations, a shifted warm start, or ``SpatialMPC._prepare`` or
    :meth:`~mpc_tracking.mpc.controller.SpatialMPC.build_qp` replaced (a subclass: ``replaced``; on the instance:
    checked per step). The grip estimate is welcome: the packed numbers follow the objects it replaces."""
    st, qp = mpc.settings, mpc.qp
    if (replaced or not qp._compiled_dynamic_model or type(mpc.model) is not DynamicPrediction
            or mpc.corridor is not None or not mpc._sampler.has_body or mpc.disturbance is not None
            or st.delay > 0 or st.iterations != 1 or st.warm_start == "shift"):
        return None
    N, K, sampler = mpc.N, mpc.N + 1, mpc._sampler
    return {
        "cap_col": 3 if st.mode != "time_optimal" and sampler.has_v_ref else 7 if sampler.has_v_box else -1,
        # [s_off_x (K), s_off_u (N), the speed reference's prm (8)] (_kernels.dynamic_prepare)
        "cst": np.concatenate([mpc._s_offsets, qp._s_offsets_u, np.zeros(8)]), "cst_of": None,
        # [xcol (6), pos_A, pos_B] (_kernels_dynamic.dynamic_op_fill)
        "ints": np.concatenate([qp._xcol, qp._pos_A, qp._pos_B]).astype(np.int64),
        "v": np.empty(N), "z_op": np.empty((K, mpc.nx + mpc.nu)), "x_ref": np.empty((K, mpc.nx)),
        "u_ref": np.empty((N, mpc.nu)), "scratch": np.empty((2, K)), "out": np.empty((K, 5)),
        "lim": np.empty(K), "dummy_table": np.zeros((K, mpc.nx + mpc.nu)),
    }



def build_kinematic(mpc: Any, state: Any, measured: Measurement | None
                    ) -> tuple[int, float, np.ndarray, np.ndarray, np.ndarray] | None:
    """This step's QP from the measurement in one compiled call (``_kernels.kinematic_step``: the numbers of
    ``SpatialMPC._prepare`` and :meth:`~mpc_tracking.mpc.controller.SpatialMPC.build_qp`).

    Returns ``(code, s0, x0, s_grid, r)``: 1 (built) or 2 (built, not all finite), the start ``s0`` [m], the
    state ``x0`` (3,), the grid (N+1,) [m] and the path sample's rows ``r`` (N+1, 10)
    (:meth:`PathSampler.packed <mpc_tracking.mpc.sampler.PathSampler.packed>`); None when the last plan's grid is
    not uniform with this one (nothing built: the general path takes the step). InputError outside the model's
    domain, as ``SpatialMPC._prepare``."""
    _st, kern, cap_col, dummy_table, pack, no_u_prev, outputs = mpc._fused
    s0, x0 = mpc._measured_state(state, measured)
    prev = mpc.safeguards.last_plan
    use_prev = prev is not None and mpc.linearization == "previous"
    N, sampler, u_prev = mpc.N, mpc._sampler, mpc._u_prev
    s_grid, r, lb = np.empty(N + 1), np.empty((N + 1, sampler.table.shape[1])), np.empty(N + 1)
    v_start = mpc._speed_start()
    pack.cst[pack.i_v_start] = np.nan if v_start is None else v_start
    has_u_prev = u_prev is not None
    pack.ints[_F_UPREV] = has_u_prev
    code = kern.kinematic_step(
        *sampler.kernel_args(), s0, cap_col, use_prev, x0, mpc._prev_table if use_prev else dummy_table,
        prev.s if use_prev else s_grid, u_prev if has_u_prev else no_u_prev,
        s_grid, r, lb, pack.cst, pack.ints, pack.work, *outputs)
    if code == 0:  # the last plan's grid is not uniform with this one
        return None
    if code == 3:
        mpc._check_domain(s0, x0, r[:, 0])  # raises
        return None  # pragma: no cover - the kernel's check is this one
    u_ref = pack.views[1]
    mpc.qp.compiled_build_done(x0, lb, r[:, 8], u_ref, u_prev if u_prev is not None else u_ref[0])
    return code, s0, x0, s_grid, r


def build_dynamic(mpc: Any, state: Any, measured: Measurement | None
                  ) -> tuple[int, float, np.ndarray, np.ndarray, np.ndarray] | None:
    """This step's QP of the dynamic model from the measurement in three compiled calls: the numbers of
    ``SpatialMPC._prepare`` and :meth:`~mpc_tracking.mpc.controller.SpatialMPC.build_qp`
    (``_kernels.dynamic_prepare``: grid, path sample, speed reference, shifted last plan;
    ``_kernels_dynamic.dynamic_op_fill``: reference and operating point, clamp, dynamics;
    ``_kernels.dynamic_rest``: bounds, corridor rows, cost and the finiteness check), no
    :class:`~mpc_tracking.mpc.step.StepInput` or :class:`~mpc_tracking.mpc.sampler.PathSample`.

    Returns ``(code, s0, x0, s_grid, r)`` as :func:`build_kinematic` (x0 (6,)); None when the last plan's grid is
    not uniform with this one (nothing built: the general path takes the step). InputError outside the model's
    domain, as ``SpatialMPC._prepare``."""
    fd: Any = mpc._fused_dyn
    s0, x0 = mpc._measured_state(state, measured)
    st, qp, sampler, N = mpc.settings, mpc.qp, mpc._sampler, mpc.N
    kern: Any = qp.kernels
    cst = fd["cst"]
    if fd["cst_of"] is not st:  # the speed reference's numbers (the grip estimate replaces the settings)
        sampler_caps = 3 if st.mode != "time_optimal" and sampler.has_v_ref else 7 if sampler.has_v_box else -1
        if st.iterations != 1 or st.warm_start == "shift" or st.delay > 0 or sampler_caps != fd["cap_col"]:
            return None  # (settings replaced on the instance by ones this step does not cover)
        cst[2 * N + 1:] = qp.dynamic_reference_prm()
        fd["cst_of"] = st
    v_start = mpc._speed_start()
    cst[2 * N + 7] = np.nan if v_start is None else v_start
    prev = mpc.safeguards.last_plan
    use_prev = prev is not None and mpc.linearization == "previous"
    s_grid, r = np.empty(N + 1), np.empty((N + 1, sampler.table.shape[1]))
    v, z_op, x_ref, u_ref = fd["v"], fd["z_op"], fd["x_ref"], fd["u_ref"]
    code = kern.dynamic_prepare(*sampler.kernel_args(), s0, fd["cap_col"], use_prev, x0,
                                mpc._prev_table if use_prev else fd["dummy_table"],
                                prev.s if use_prev else s_grid, cst, s_grid, r, v, z_op)
    if code == 0:  # the last plan's grid is not uniform with this one
        return None
    if code == 3:
        mpc._check_domain(s0, x0, r[:, 0])  # raises
        return None  # pragma: no cover - the kernel's check is this one
    d, model = mpc.data, mpc.model
    A, B, f = qp._lin_buf
    kern.dynamic_op_fill(r, v, mpc.ds, qp._dynamic_params(), model.slip_reference,
                         st.discretization == "rk4", use_prev, x0, st.v_min, z_op, x_ref, u_ref, fd["scratch"],
                         fd["out"], fd["lim"], s_grid, d.A_data, d.l, d.u, A, B, f, qp._ds_buf, fd["ints"])
    rest_cst, rest_ints = qp.dynamic_rest_pack()
    u_prev = mpc._u_prev
    has_u_prev = u_prev is not None
    rest_ints[8] = bool(model.slip_reference)
    rest_ints[9] = sampler.has_v_box
    rest_ints[10] = has_u_prev
    up = u_prev if has_u_prev else u_ref[0]
    lb, ub = np.empty(N + 1), np.empty(N + 1)
    finite = kern.dynamic_rest(r, z_op, x0, s_grid, u_ref, up, x_ref, lb, ub, rest_cst, rest_ints, d.A_data,
                               d.l, d.u, d.q, qp._dt_buf, qp._e_ref_buf)
    qp.compiled_build_done(x0, lb, ub, u_ref, up)
    return (1 if finite else 2), s0, x0, s_grid, r
