"""numba kernels of the MPC step (imported lazily by :mod:`mpc_tracking.mpc.kernels`; importing it needs numba).

Each kernel computes the numbers of a numpy expression in :mod:`mpc_tracking.mpc.kernels` (the pure-Python path,
the reference), one horizon step at a time and in the same order of floating-point operations, so the two paths
agree to rounding (``tests/mpc/test_kernels.py`` holds them to 1e-12; most entries are bitwise equal).

Compiler options of every kernel: ``cache=True, nogil=True, error_model="numpy", fastmath=False`` (IEEE
arithmetic: x / 0 gives inf or nan as in numpy, no exception), and explicit signatures, so importing this module
compiles every kernel or loads it from numba's on-disk cache (``__pycache__`` beside this file, else numba's user
cache directory or ``NUMBA_CACHE_DIR``); no call pays a compile.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

# the dynamic model's kernels, in this one namespace (they call nothing of this file: numba's on-disk cache checks
# only the file that defines a kernel, so a kernel calling into another file could load stale code)
from mpc_tracking.mpc._kernels_dynamic import (  # noqa: F401
    dynamic_linearize,
    dynamic_linearize_fill,
    dynamic_op_fill,
    dynamic_reference,
    dynamic_substeps,
    expand_states,
    steady_cornering,
)

_F1 = nb.float64[::1]
_F2 = nb.float64[:, ::1]
_F3 = nb.float64[:, :, ::1]
_I1 = nb.int64[::1]
_I1_32 = nb.int32[::1]
_A1 = nb.float64[:]  # any layout (a column of the path sample)
_A2 = nb.float64[:, :]


@nb.njit(nb.void(_A2, _A2, _A1, _A1, nb.float64, _A1, _F1, _I1, _I1, _F1, _F1, _F3, _F3, _F2), cache=True, nogil=True,
         error_model="numpy", fastmath=False)
def kinematic_linearize_fill(x_op, u_op, kappa, s_grid, L, x0, data, pos_A, pos_B, lower, upper, A, B,
                             f):  # pragma: no cover - compiled
    """Euler linearization of the kinematic spatial bicycle written into the QP, in place.

    ``A`` (N, 3, 3), ``B`` (N, 3, 2), ``f`` (N, 3) about ``x_op[:N]``, ``u_op`` with ``kappa[:N]`` and the steps
    ``max(s_grid[k+1] - s_grid[k], 0)``; their entries into the CSC ``data`` at ``pos_A``, ``pos_B`` (row-major
    order of the blocks); the dynamics rows ``lower[:3] = upper[:3] = x0`` and ``lower = upper = -f`` below them.
    """
    N = u_op.shape[0]
    for i in range(3):
        lower[i] = x0[i]
        upper[i] = x0[i]
    for k in range(N):
        h = max(s_grid[k + 1] - s_grid[k], 0.0)
        ey, ep, t = x_op[k, 0], x_op[k, 1], x_op[k, 2]
        v, d, kap = u_op[k, 0], u_op[k, 1], kappa[k]
        g = 1.0 - ey * kap
        ce = math.cos(ep)
        se = math.sin(ep)
        td = math.tan(d)
        inv_ce = 1.0 / ce
        inv_v = 1.0 / v
        g_ce = g * inv_ce
        f0 = g_ce * se
        f1 = g_ce * td / L - kap
        f2 = g_ce * inv_v
        inv_ce2 = inv_ce * inv_ce
        j00 = -kap * se * inv_ce
        j01 = g * inv_ce2
        j10 = -kap * td * inv_ce / L
        j11 = g * td * se * inv_ce2 / L
        j20 = -kap * inv_ce * inv_v
        j21 = g * se * inv_ce2 * inv_v
        b11 = g * inv_ce * (1.0 + td * td) / L
        b20 = -g * inv_ce * inv_v * inv_v
        # f = h (f0 - Jx x - Ju u), the products summed in matmul's order (j = 0, 1, 2)
        f0 = (f0 - ((j00 * ey + j01 * ep) + 0.0 * t)) - (0.0 * v + 0.0 * d)
        f1 = (f1 - ((j10 * ey + j11 * ep) + 0.0 * t)) - (0.0 * v + b11 * d)
        f2 = (f2 - ((j20 * ey + j21 * ep) + 0.0 * t)) - (b20 * v + 0.0 * d)
        f[k, 0] = f0 * h
        f[k, 1] = f1 * h
        f[k, 2] = f2 * h
        A[k, 0, 0] = j00 * h + 1.0
        A[k, 0, 1] = j01 * h
        A[k, 0, 2] = 0.0
        A[k, 1, 0] = j10 * h
        A[k, 1, 1] = j11 * h + 1.0
        A[k, 1, 2] = 0.0
        A[k, 2, 0] = j20 * h
        A[k, 2, 1] = j21 * h
        A[k, 2, 2] = 1.0
        B[k, 0, 0] = 0.0
        B[k, 0, 1] = 0.0
        B[k, 1, 0] = 0.0
        B[k, 1, 1] = b11 * h
        B[k, 2, 0] = b20 * h
        B[k, 2, 1] = 0.0
        for i in range(3):
            r = 3 * (k + 1) + i
            lower[r] = -f[k, i]
            upper[r] = lower[r]
            for j in range(3):
                data[pos_A[9 * k + 3 * i + j]] = A[k, i, j]
            for j in range(2):
                data[pos_B[6 * k + 2 * i + j]] = B[k, i, j]


@nb.njit(nb.types.UniTuple(nb.float64, 3)(_I1_32, _I1_32, _F1, _F1, _F1, _F1, _F1), cache=True, nogil=True,
         error_model="numpy", fastmath=False)
def constraint_excess(indptr, indices, data, z, lower, upper, Az):  # pragma: no cover - compiled
    """``(row, excess, scale)`` of the rows ``lower <= A z <= upper`` of a CSC matrix: the first row of largest
    ``max(lower - Az, Az - upper)`` (the first NaN one when any is NaN, then ``excess`` and ``scale`` are NaN) and
    ``scale = max(|Az|_inf, |z|_inf, 1)``; ``Az`` (m,) is scratch, summed column by column as scipy does."""
    m = lower.shape[0]
    for i in range(m):
        Az[i] = 0.0
    for j in range(z.shape[0]):
        zj = z[j]
        for p in range(indptr[j], indptr[j + 1]):
            Az[indices[p]] += data[p] * zj
    scale = 1.0
    for j in range(z.shape[0]):
        a = abs(z[j])
        if a != a:
            scale = math.nan
            break
        scale = max(scale, a)
    best_i = 0
    best = -math.inf
    for i in range(m):
        a = Az[i]
        e_lo = lower[i] - a
        e_hi = a - upper[i]
        if e_lo != e_lo or e_hi != e_hi:  # numpy's maximum and argmax: the first NaN wins
            return float(i), math.nan, math.nan
        e = max(e_lo, e_hi)
        if scale == scale:
            scale = max(scale, abs(a))
        if e > best:
            best, best_i = e, i
    return float(best_i), best, scale


@nb.njit(nb.boolean(_F1, _F1), cache=True, nogil=True, error_model="numpy", fastmath=False)
def all_finite(a, b):  # pragma: no cover - compiled
    """``np.isfinite(a).all() and np.isfinite(b).all()`` in one pass (the QP data's check before a solve)."""
    for x in (a, b):
        for i in range(x.shape[0]):
            if not math.isfinite(x[i]):
                return False
    return True


@nb.njit(nb.void(_F1, _F1, _F1, _F1, _F1, _F1, _F1, nb.float64, _F1, _F1, _F1, _F1), cache=True, nogil=True,
         error_model="numpy", fastmath=False)
def equilibrate_step(q, lo, hi, Ax, cD, E, fA, inf, q_out, l_out, u_out, a_out):  # pragma: no cover - compiled
    """One step's QP numbers in the equilibrated problem (:func:`mpc_tracking.mpc.backends.equilibration.apply`):
    ``q_out = q cD``, ``a_out = Ax fA``, ``l_out = lo E``, ``u_out = hi E``, bounds at or beyond ``inf`` kept
    at ``-inf`` / ``inf``."""
    for i in range(q.shape[0]):
        q_out[i] = q[i] * cD[i]
    for i in range(Ax.shape[0]):
        a_out[i] = Ax[i] * fA[i]
    for i in range(lo.shape[0]):
        a = lo[i]
        l_out[i] = -inf if a <= -inf else a * E[i]
        b = hi[i]
        u_out[i] = inf if b >= inf else b * E[i]


@nb.njit(nb.boolean(_F1, _F1, _F1), cache=True, nogil=True, error_model="numpy", fastmath=False)
def unscale_finite(x, D, out):  # pragma: no cover - compiled
    """``out = x D`` (the solver's solution in the QP's variables) and whether every entry of ``x`` is finite."""
    ok = True
    for i in range(x.shape[0]):
        v = x[i]
        if not math.isfinite(v):
            ok = False
        out[i] = v * D[i]
    return ok


@nb.njit(nb.void(_F2, _F2, _F2), cache=True, nogil=True, error_model="numpy", fastmath=False)
def store_plan(X, U, table):  # pragma: no cover - compiled
    """The last plan's table (N+1, nx+nu) for the next step's shift: ``X`` (N+1, nx) in the first columns, ``U``
    (N, nu) in the others, its last row repeated at N (``table[:, :nx] = X; table[:-1, nx:] = U;
    table[-1, nx:] = U[-1]``)."""
    nx = X.shape[1]
    N = U.shape[0]
    for k in range(N + 1):
        for j in range(nx):
            table[k, j] = X[k, j]
        kk = min(k, N - 1)
        for j in range(U.shape[1]):
            table[k, nx + j] = U[kk, j]


@nb.njit(nb.float64(_F1, nb.int64), cache=True, nogil=True, error_model="numpy", fastmath=False)
def tail_max(z, start):  # pragma: no cover - compiled
    """``z[start:].max()`` (NaN when any of them is NaN, as numpy's; -inf when empty): the largest corridor slack."""
    best = -math.inf
    for i in range(start, z.shape[0]):
        v = z[i]
        if v != v:
            return math.nan
        best = max(best, v)
    return best


@nb.njit(nb.void(_A1, _A1, _A1, _A1, _F2), cache=True, nogil=True, error_model="numpy", fastmath=False)
def offset_points(x, y, psi, e_y, out):  # pragma: no cover - compiled
    """:func:`mpc_tracking.paths.geometry.offset_point` of equal-length arrays into ``out`` (K, 2): the plan's
    points in the world, ``(x - e_y sin psi, y + e_y cos psi)`` [m], in numpy's order of operations."""
    for k in range(x.shape[0]):
        e = e_y[k]
        out[k, 0] = x[k] + e * (-math.sin(psi[k]))
        out[k, 1] = y[k] + e * math.cos(psi[k])


# positions in the prm / flg arrays of kinematic_bounds_cost (kernels.bounds_cost_constants packs them)
P_INV_L, P_AY, P_VMIN, P_VMAX, P_DT0, P_ACC, P_DEC, P_HALF_W, P_INSET, P_SLOPE, P_TIME_W, P_INF, P_VNOW = range(13)
F_RBOX, F_RRATE, F_RCORR, F_NX, F_VBOX, F_UPREV, F_FIN_ACC, F_FIN_DEC = range(8)


@nb.njit(nb.void(_F1, _F1, nb.int64, nb.float64, nb.float64, _F1, _F1), cache=True, nogil=True,
         error_model="numpy", fastmath=False)
def _lateral_envelopes(lower, upper, r_corr, inset_max, slope, s, e_ref):  # pragma: no cover - compiled
    """:func:`~mpc_tracking.mpc.reference.lateral_reference` on the inset corridor rows (``e_ref`` (K,) in/out)."""
    K = e_ref.shape[0]
    lo_in = np.empty(K)
    hi_in = np.empty(K)
    for k in range(K):
        lo, hi = lower[r_corr + 2 * k], upper[r_corr + 2 * k]
        inset = min(0.5 * (hi - lo), inset_max)
        lo_in[k], hi_in[k] = lo + inset, hi - inset
    lo_f = np.empty(K)
    lo_b = np.empty(K)
    hi_f = np.empty(K)
    hi_b = np.empty(K)
    run_lo, run_hi = -math.inf, math.inf
    for k in range(K):  # from points behind
        a = slope * s[k]
        run_lo = max(run_lo, lo_in[k] + a)
        run_hi = min(run_hi, hi_in[k] - a)
        lo_f[k] = run_lo - a
        hi_f[k] = run_hi + a
    run_lo, run_hi = -math.inf, math.inf
    for k in range(K - 1, -1, -1):  # from points ahead
        a = slope * s[k]
        run_lo = max(run_lo, lo_in[k] - a)
        run_hi = min(run_hi, hi_in[k] + a)
        lo_b[k] = run_lo + a
        hi_b[k] = run_hi - a
    for k in range(K):
        low = max(lo_f[k], lo_b[k])
        high = min(hi_f[k], hi_b[k])
        e_ref[k] = 0.5 * (low + high) if low > high else min(max(0.0, low), high)


@nb.njit(nb.void(_A1, _A1, nb.float64, nb.float64, nb.float64, nb.float64, nb.int64, _F1, _F1, _F1, _F1),
         cache=True, nogil=True, error_model="numpy", fastmath=False)
def _corridor_rows(lb, ub, half_w, inset_max, slope, inf, r_corr, s_off_x, lower, upper,
                   e_ref):  # pragma: no cover - compiled
    """The corridor rows of both models' QPs (front and rear alike) from the corridor bounds ``lb``, ``ub`` (K,)
    [m] (before the half width ``half_w``), and the lateral reference ``e_ref`` (K,): 0 when it is inside every
    inset bound, else :func:`_lateral_envelopes` (the numbers of ``StepQP.build``'s corridor block)."""
    K = e_ref.shape[0]
    lo_max, hi_min = -math.inf, math.inf
    for k in range(K):
        lo = max(lb[k] + half_w, -inf)
        hi = min(ub[k] - half_w, inf)
        if lo > hi:
            mid = 0.5 * (lo + hi)
            lo, hi = mid, mid
        lower[r_corr + 2 * k] = lo
        lower[r_corr + 2 * k + 1] = lo
        upper[r_corr + 2 * k] = hi
        upper[r_corr + 2 * k + 1] = hi
        inset = min(0.5 * (hi - lo), inset_max)
        lo_max = max(lo_max, lo + inset)
        hi_min = min(hi_min, hi - inset)
    if lo_max <= 0.0 <= hi_min:  # 0 is inside every bound: the envelopes hold it too
        for k in range(K):
            e_ref[k] = 0.0
    else:
        _lateral_envelopes(lower, upper, r_corr, inset_max, slope, s_off_x, e_ref)



@nb.njit(nb.void(_A1, _A2, _A1, _A1, _A2, _A1, _A1, _A1, _F1, _F1, _F2, _F2, _F2, _F2, _F1, _F1, _F1, _I1,
                 _F1, _F1, _F1, _F1, _F1), cache=True, nogil=True, error_model="numpy", fastmath=False)
def kinematic_bounds_cost(kappa, u_op, v_box, s_grid, u_ref, u_prev, lb, ub, s_off_x, s_off_u, Q, QN, R, Rd,
                          rate_dn, rate_up, prm, flg, lower, upper, q, dt, e_ref):  # pragma: no cover - compiled
    """Speed bound, input rates, corridor rows, lateral reference and cost vector of the kinematic model's QP.

    The numbers of :meth:`StepQP.build <mpc_tracking.mpc.qp.StepQP.build>` after the dynamics (speed as an input,
    no friction ellipse), in its order of operations: :func:`~mpc_tracking.mpc.reference.speed_limit`,
    :func:`~mpc_tracking.mpc.reference.feasible_speed_profile` and
    :func:`~mpc_tracking.mpc.reference.lateral_reference` one grid point at a time. ``lb``, ``ub`` (N+1,) are the
    corridor bounds [m] (before the half width); ``dt`` (N,) and ``e_ref`` (N+1,) receive the step durations [s]
    and the lateral reference [m].
    """
    N = u_op.shape[0]
    NU = 2
    r_box, r_rate, r_corr, nX = flg[F_RBOX], flg[F_RRATE], flg[F_RCORR], flg[F_NX]
    v_min, inf = prm[P_VMIN], prm[P_INF]
    # speed bound from the path's and the plan's curvature (and the whole-path ceiling)
    for k in range(N):
        kk = max(abs(kappa[k]), abs(math.tan(u_op[k, 1])) * prm[P_INV_L])
        kk = max(kk, 1e-12)
        v = min(max(math.sqrt(prm[P_AY] / kk), v_min), prm[P_VMAX])
        if flg[F_VBOX]:
            v = min(v, max(v_box[k], v_min))
        upper[r_box + NU * k] = v
    # rates per prediction step via the planned speed; the first via the control period
    dt[0] = prm[P_DT0]
    for k in range(1, N):
        dt[k] = max(s_grid[k] - s_grid[k - 1], 1e-9) / max(u_op[k - 1, 0], v_min)
    for k in range(N):
        for j in range(NU):
            lower[r_rate + NU * k + j] = -rate_dn[j] * dt[k]
            upper[r_rate + NU * k + j] = rate_up[j] * dt[k]
    has_prev = flg[F_UPREV] != 0
    if not has_prev:
        for j in range(NU):
            lower[r_rate + j] = -inf
            upper[r_rate + j] = inf
    else:
        for j in range(NU):
            lower[r_rate + j] += u_prev[j]
            upper[r_rate + j] += u_prev[j]
        v0 = u_prev[0] if prm[P_VNOW] != prm[P_VNOW] else prm[P_VNOW]
        fin_acc, fin_dec = flg[F_FIN_ACC] != 0, flg[F_FIN_DEC] != 0
        if fin_acc or fin_dec:  # feasible_speed_profile(spd, s_off_u, 0.95 decel, 0.95 accel, v_start, v_min)
            v_start = v0 + 0.95 * prm[P_ACC] * prm[P_DT0]
            decel, accel = 0.95 * prm[P_DEC], 0.95 * prm[P_ACC]
            for k in range(N):  # v^2 in the speed rows' place until the square root below
                v = upper[r_box + NU * k]
                upper[r_box + NU * k] = v * v
            if fin_dec:  # backward pass: brake into the limits ahead
                b2 = 2.0 * decel
                run = math.inf
                for k in range(N - 1, -1, -1):
                    run = min(run, upper[r_box + NU * k] + b2 * s_off_u[k])
                    upper[r_box + NU * k] = run - b2 * s_off_u[k]
            if fin_acc:  # forward pass from v_start
                a2 = 2.0 * accel
                upper[r_box] = min(upper[r_box], v_start * v_start)
                run = math.inf
                for k in range(N):
                    run = min(run, upper[r_box + NU * k] - a2 * s_off_u[k])
                    upper[r_box + NU * k] = run + a2 * s_off_u[k]
            for k in range(N):
                upper[r_box + NU * k] = max(math.sqrt(max(upper[r_box + NU * k], 0.0)), v_min)
        if fin_dec:  # never ask for more braking than the speed input's rate allows
            total = 0.0
            for k in range(N):
                total += dt[k]
                upper[r_box + NU * k] = max(upper[r_box + NU * k], (v0 - prm[P_DEC] * total) + 1e-6)
    for k in range(N):
        for j in range(NU):
            lower[r_rate + NU * k + j] = max(lower[r_rate + NU * k + j], -inf)
            upper[r_rate + NU * k + j] = min(upper[r_rate + NU * k + j], inf)
    # corridor rows (front and rear alike) and the lateral reference
    _corridor_rows(lb, ub, prm[P_HALF_W], prm[P_INSET], prm[P_SLOPE], inf, r_corr, s_off_x, lower, upper, e_ref)
    # cost vector: states 1..N (targets e_ref on e_y, 0 on e_psi and t) and inputs
    for k in range(1, N):
        for i in range(3):
            q[3 * k + i] = -(e_ref[k] * Q[0, i] + 0.0 * Q[1, i] + 0.0 * Q[2, i])
    for i in range(3):
        q[3 * N + i] = -(QN[i, 0] * e_ref[N] + QN[i, 1] * 0.0 + QN[i, 2] * 0.0)
    q[3 * N + 2] += prm[P_TIME_W]
    for k in range(N):
        for i in range(NU):
            q[nX + NU * k + i] = -(u_ref[k, 0] * R[0, i] + u_ref[k, 1] * R[1, i])
    for i in range(NU):
        q[nX + i] -= u_prev[0] * Rd[0, i] + u_prev[1] * Rd[1, i]


# positions in the prm / flg arrays of dynamic_bounds_cost (kernels.dynamic_bounds_cost packs them)
(Q_AY, Q_VMIN, Q_VMAX, Q_DT0, Q_ACC, Q_DEC, Q_HALF_W, Q_INSET, Q_SLOPE, Q_TIME_W, Q_INF, Q_POWER,
 Q_FLOOR, Q_FIRST_FLOOR, Q_PEAK, Q_LF, Q_VSLIP, Q_PEAK_R, Q_LR) = range(19)
#: the length of dynamic_bounds_cost's prm
N_PRM = 19
(G_RBOX, G_RRATE, G_RXBOX, G_RCORR, G_RELL, G_NX, G_NCUTS, G_ELLIPSE, G_SLIP, G_VBOX, G_UPREV, G_POWER,
 G_NQ) = range(13)


@nb.njit(nb.void(_A1, _A1, _A2, _F1, _A1, _A2, _F1, _A2, _F1, _F1, _F1, _I1, _F1, _F1, _F1, _F1, _F1, _F1, _I1, _I1,
                 _F1, _F2, _F2, _F2, _F2, _F1, _F1, _F1, _F1, _F1, _F1, _I1), cache=True, nogil=True,
         error_model="numpy", fastmath=False)
def dynamic_bounds_cost(kappa, v_box, x_op, x0, s_grid, u_ref, u_prev, x_ref, lb, ub, prm, flg, box_lo0, box_hi0,
                        rate_dn, rate_up, cut_a, cut_y, cut_pos_x, cut_pos_a, s_off_x, Q, QN, R, Rd, data, lower,
                        upper, q, dt, e_ref, xcol):  # pragma: no cover - compiled
    """Speed bound, friction ellipse (bounds or cuts), power limit, rates, corridor rows, lateral reference and cost
    vector of the dynamic model's QP (speed a state, acceleration input 0, cut states v_x and r): the numbers of
    :meth:`StepQP.build <mpc_tracking.mpc.qp.StepQP.build>` after the dynamics, in its order of operations.
    ``lb``, ``ub`` (N+1,) are the corridor bounds [m] (before the half width); ``dt`` (N,) and ``e_ref`` (N+1,)
    receive the step durations [s] and the lateral reference [m]. The cost vector holds the states the QP does
    (``xcol`` (6,): each state's column in the QP's stage of ``flg[G_NQ]`` columns, -1 for none)."""
    N = u_ref.shape[0]
    NX, NU, NQ = 6, 2, flg[G_NQ]
    r_box, r_rate, r_xbox, r_corr = flg[G_RBOX], flg[G_RRATE], flg[G_RXBOX], flg[G_RCORR]
    r_ell, nX, C = flg[G_RELL], flg[G_NX], flg[G_NCUTS]
    a_y, v_min, inf = prm[Q_AY], prm[Q_VMIN], prm[Q_INF]
    # speed bound on the states 1..N from the path's curvature (and the whole-path ceiling)
    for k in range(N):
        kk = max(abs(kappa[k + 1]), 1e-12)
        v = min(max(math.sqrt(a_y / kk), v_min), prm[Q_VMAX])
        if flg[G_VBOX]:
            v = min(v, max(v_box[k + 1], v_min))
        upper[r_xbox + k] = v
    ellipse = flg[G_ELLIPSE] != 0
    share = np.ones(N)  # the braking's share (with the floors)
    accel_share = 1.0  # the acceleration's (no floor)
    for k in range(N):
        vx, r = x_op[k, 3], x_op[k, 5]
        if ellipse:  # ellipse_share(|v_x r|, a_y_max, floor)
            use = min(abs(vx * r) / a_y, 1.0)
            accel_share = math.sqrt(1.0 - use * use)
            share[k] = max(accel_share, prm[Q_FLOOR] if k > 0 else prm[Q_FIRST_FLOOR])
            if C == 0:
                lower[r_box + NU * k] = max(box_lo0[0] * share[k], -inf)
                upper[r_box + NU * k] = min(box_hi0[0] * accel_share, inf)
            else:  # cuts: a_y ~ r_op v_x + v_op r - v_op r_op, on the side of the operating point's a_y
                c = -vx * r
                ay_op = (r * x_op[k, 3] + vx * x_op[k, 5]) + c
                sigma = 1.0 if ay_op >= 0.0 else -1.0
                for j in range(C):
                    sy = sigma * cut_y[j]
                    data[cut_pos_x[2 * (C * k + j)]] = sy * r
                    data[cut_pos_x[2 * (C * k + j) + 1]] = sy * vx
                    data[cut_pos_a[C * k + j]] = cut_a[j]
                    upper[r_ell + C * k + j] = 1.0 - sy * c
        if flg[G_POWER]:
            top = min(box_hi0[0], prm[Q_POWER] / max(vx, v_min))
            if ellipse and C == 0:
                top = top * accel_share
            upper[r_box + NU * k] = min(top, inf)
    # rates per prediction step via the planned speed; the first via the control period
    dt[0] = prm[Q_DT0]
    for k in range(1, N):
        dt[k] = max(s_grid[k] - s_grid[k - 1], 1e-9) / max(x_op[k - 1, 3], v_min)
    for k in range(N):
        for j in range(NU):
            lower[r_rate + NU * k + j] = -rate_dn[j] * dt[k]
            upper[r_rate + NU * k + j] = rate_up[j] * dt[k]
    if flg[G_UPREV] == 0:
        for j in range(NU):
            lower[r_rate + j] = -inf
            upper[r_rate + j] = inf
    else:
        for j in range(NU):
            lower[r_rate + j] += u_prev[j]
            upper[r_rate + j] += u_prev[j]
    # the speed bound reachable from the car's speed with 95 % of the limits, one step ahead of the car
    v0 = x0[3]
    acc, dec = prm[Q_ACC], prm[Q_DEC]
    fin_acc, fin_dec = acc < math.inf, dec < math.inf
    if fin_acc or fin_dec:  # feasible_speed_profile([v_start, bound], s_off_x, 0.95 dec, 0.95 acc, v_start)[1:]
        v_start = v0 + 0.95 * acc * prm[Q_DT0]
        ext = np.empty(N + 1)
        ext[0] = v_start * v_start
        for k in range(N):
            v = upper[r_xbox + k]
            ext[k + 1] = v * v
        if fin_dec:
            b2 = 2.0 * (0.95 * dec)
            run = math.inf
            for k in range(N, -1, -1):
                run = min(run, ext[k] + b2 * s_off_x[k])
                ext[k] = run - b2 * s_off_x[k]
        if fin_acc:
            a2 = 2.0 * (0.95 * acc)
            ext[0] = min(ext[0], v_start * v_start)
            run = math.inf
            for k in range(N + 1):
                run = min(run, ext[k] - a2 * s_off_x[k])
                ext[k] = run + a2 * s_off_x[k]
        for k in range(N):
            upper[r_xbox + k] = max(math.sqrt(max(ext[k + 1], 0.0)), v_min)
    if fin_dec:  # never ask for more braking than the acceleration bounds allow (half of it, for margin)
        drop = 0.0
        for k in range(N):
            a_lo = dec * share[k] if ellipse else dec * 1.0
            drop += a_lo * (s_grid[k + 1] - s_grid[k])
            upper[r_xbox + k] = max(upper[r_xbox + k], math.sqrt(max(v0 * v0 - drop, 0.0)) + 1e-6)
    for k in range(N):
        for j in range(NU):
            lower[r_rate + NU * k + j] = max(lower[r_rate + NU * k + j], -inf)
            upper[r_rate + NU * k + j] = min(upper[r_rate + NU * k + j], inf)
    if not math.isnan(prm[Q_PEAK]):  # the steering within the front tyres' peak slip (StepQP._steering_within...)
        peak, lo0, hi0 = prm[Q_PEAK], box_lo0[1], box_hi0[1]
        r_lo, r_hi = 0.0, 0.0
        for k in range(N):
            lo, hi = lo0, hi0
            if peak < math.inf and x_op[k, 3] >= prm[Q_VSLIP]:
                beta = math.atan((x_op[k, 4] + prm[Q_LF] * x_op[k, 5]) / x_op[k, 3])
                lo = min(max(beta - peak, lo0), hi0)
                hi = min(max(beta + peak, lo0), hi0)
            if k == 0 and peak < math.inf and x_op[0, 3] >= prm[Q_VSLIP] and prm[Q_PEAK_R] < math.inf:
                # spatial_dynamic.countersteer_bounds: no front slip adding to an oversteer slide's yaw
                vx, vy, yr = x_op[0, 3], x_op[0, 4], x_op[0, 5]
                alpha_r = -math.atan((vy - prm[Q_LR] * yr) / vx)
                if yr * alpha_r > 0.0 and abs(alpha_r) > prm[Q_PEAK_R]:
                    beta = math.atan((vy + prm[Q_LF] * yr) / vx)
                    if yr > 0.0:
                        hi = max(min(hi, beta), lo0)
                    else:
                        lo = min(max(lo, beta), hi0)
            # qp.reachable_box: within reach of the rate rows
            if k == 0:
                r_lo, r_hi = lower[r_rate + 1], upper[r_rate + 1]
            else:
                r_lo, r_hi = r_lo + lower[r_rate + NU * k + 1], r_hi + upper[r_rate + NU * k + 1]
            if lo > r_hi:
                lo = r_hi
            if hi < r_lo:
                hi = r_lo
            r_lo, r_hi = max(r_lo, lo), min(r_hi, hi)
            lower[r_box + NU * k + 1] = lo
            upper[r_box + NU * k + 1] = hi
    # corridor rows (front and rear alike) and the lateral reference
    _corridor_rows(lb, ub, prm[Q_HALF_W], prm[Q_INSET], prm[Q_SLOPE], inf, r_corr, s_off_x, lower, upper, e_ref)
    # cost vector: the state targets (e_ref on e_y, the steady cornering heading error with the slip reference,
    # the reference operating point's v_x, v_y, r) and the inputs
    slip = flg[G_SLIP] != 0
    tgt = np.zeros(NX)
    for k in range(1, N + 1):
        tgt[0] = e_ref[k]
        tgt[1] = x_ref[k, 1] if slip else 0.0
        for i in range(3, NX):
            tgt[i] = x_ref[k, i]
        for i in range(NX):
            acc_q = 0.0
            if k < N:
                for j in range(NX):
                    acc_q += tgt[j] * Q[j, i]
            else:
                for j in range(NX):
                    acc_q += QN[i, j] * tgt[j]
            if xcol[i] >= 0:
                q[NQ * k + xcol[i]] = -acc_q
    if xcol[2] >= 0:  # the time-optimal mode's cost on t_N (the QP holds t then)
        q[NQ * N + xcol[2]] += prm[Q_TIME_W]
    for k in range(N):
        for i in range(NU):
            q[nX + NU * k + i] = -(u_ref[k, 0] * R[0, i] + u_ref[k, 1] * R[1, i])
    for i in range(NU):
        q[nX + i] -= u_prev[0] * Rd[0, i] + u_prev[1] * Rd[1, i]


@nb.njit(nb.void(_F1, _F2, _F2, _F1, nb.boolean, nb.boolean, nb.float64, nb.float64, nb.int64, _A1, _F2),
         cache=True, nogil=True, error_model="numpy", fastmath=False)
def sample_path(grid, table, delta, inv_len, has_inf, closed, length, lap_turn, i_psi, s, out):  # pragma: no cover
    """:meth:`PathSampler.sample <mpc_tracking.mpc.sampler.PathSampler.sample>`'s table at arc lengths ``s`` (K,):
    wrapped (closed) or clamped (open), the segment and weight of :class:`~mpc_tracking.paths.interpolation.
    LinearTable` (inf-safe: a NaN of ``inf - inf`` takes the nearer end), the heading column ``i_psi`` unwrapped
    by laps; ``out`` (K, m) receives the rows."""
    K = s.shape[0]
    n_seg = grid.shape[0] - 1
    m = table.shape[1]
    unwrap = closed and (s[K - 1] >= length or s[0] < 0)
    for k in range(K):
        sk = s[k]
        sw = sk % length if closed else min(max(sk, 0.0), length)
        i = np.searchsorted(grid, sw, side="right") - 1
        i = min(max(i, 0), n_seg - 1)
        w = (sw - grid[i]) * inv_len[i]
        w = min(max(w, 0.0), 1.0)
        for j in range(m):
            v = delta[i, j] * w + table[i, j]
            if has_inf and v != v:
                v = table[i, j] if w < 0.5 else table[i + 1, j]
            out[k, j] = v
        if unwrap:
            out[k, i_psi] = out[k, i_psi] + math.floor(sk / length) * lap_turn


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False)
def _speed_reference(kappa, v_cap, has_cap, s_off, prm, v_out):  # pragma: no cover - compiled
    """``SpatialMPC._speed_reference`` into ``v_out`` (N,): the lateral speed limit, capped by ``v_cap`` when
    ``has_cap``, then the feasible speed profile (``prm`` as in :func:`kinematic_reference`)."""
    N = v_out.shape[0]
    a_y, v_min, v_max = prm[1], prm[2], prm[3]
    decel, accel, v_start = prm[4], prm[5], prm[6]
    for k in range(N):
        kk = max(abs(kappa[k]), 1e-12)
        v = min(max(math.sqrt(a_y / kk), v_min), v_max)
        if has_cap:
            v = min(max(v_cap[k], v_min), v)
        v_out[k] = v * v  # v^2 until the square root below
    if decel < math.inf:
        b2 = 2.0 * decel
        run = math.inf
        for k in range(N - 1, -1, -1):
            run = min(run, v_out[k] + b2 * s_off[k])
            v_out[k] = run - b2 * s_off[k]
    if accel < math.inf:
        a2 = 2.0 * accel
        if v_start == v_start:
            v_out[0] = min(v_out[0], v_start * v_start)
        run = math.inf
        for k in range(N):
            run = min(run, v_out[k] - a2 * s_off[k])
            v_out[k] = run + a2 * s_off[k]
    for k in range(N):
        v_out[k] = max(math.sqrt(max(v_out[k], 0.0)), v_min)


@nb.njit(nb.void(_A1, _A1, nb.boolean, _F1, _F1, _F2, _F2), cache=True, nogil=True, error_model="numpy",
         fastmath=False)
def kinematic_reference(kappa, v_cap, has_cap, s_off, prm, x_ref, u_ref):  # pragma: no cover - compiled
    """The kinematic model's reference operating point: the speed reference of ``SpatialMPC._speed_reference``
    (the lateral speed limit, capped by ``v_cap`` when ``has_cap``, then the feasible speed profile) and
    ``KinematicPrediction.reference_op`` (e = 0, steering ``atan(L kappa)``, time ``cumsum(ds / v)``).

    ``prm``: L, a_y_max, v_min, v_max, decel, accel (the profile's, inf: none), v_start (NaN: none), ds.
    ``x_ref`` (N+1, 3), ``u_ref`` (N, 2) receive the operating point.
    """
    N = u_ref.shape[0]
    L, ds = prm[0], prm[7]
    v = np.empty(N)
    _speed_reference(kappa, v_cap, has_cap, s_off, prm, v)
    for k in range(N):
        u_ref[k, 0] = v[k]
        u_ref[k, 1] = math.atan(L * kappa[k])
    t = 0.0
    for i in range(3):
        x_ref[0, i] = 0.0
    for k in range(N):
        t += ds / u_ref[k, 0]
        x_ref[k + 1, 0] = 0.0
        x_ref[k + 1, 1] = 0.0
        x_ref[k + 1, 2] = t


@nb.njit(nb.void(_A1, _A1, nb.boolean, _F1, _F1, _F1), cache=True, nogil=True, error_model="numpy",
         fastmath=False)
def speed_reference(kappa, v_cap, has_cap, s_off, prm, v_out):  # pragma: no cover - compiled
    """``SpatialMPC._speed_reference`` into ``v_out`` (N,) (``prm`` as in :func:`kinematic_reference`); the
    dynamic model's reference operating point follows from it (:func:`._kernels_dynamic.dynamic_reference`)."""
    _speed_reference(kappa, v_cap, has_cap, s_off, prm, v_out)


@nb.njit(nb.boolean(_F2, _A1, _A1, nb.float64, nb.boolean, nb.float64, nb.int64, nb.int64, _F2), cache=True,
         nogil=True, error_model="numpy", fastmath=False)
def shift_plan(table, s_prev, s_grid, ds, closed, length, nx, it, out):  # pragma: no cover - compiled
    """The last plan's table (N+1, nx+nu) on the new grid ``s_grid`` (N+1,) when both grids are uniform and the new
    one starts at or ahead of the old one: ``SpatialMPC._shifted_op`` with ``_shift_uniform`` (one weight for all
    points, rows beyond the old horizon held at its last row, the time column extended at its last pace and
    counted from the grid's start), into ``out`` (N+1, nx+nu). False (``out`` untouched) when the grids are not
    uniform that way: the caller interpolates instead."""
    N = table.shape[0] - 1
    nz = table.shape[1]
    shift = 0.0
    if closed:  # unwrap the new grid relative to the previous one
        shift = np.round((s_prev[0] - s_grid[0]) / length) * length
    s_last = s_grid[N] + shift
    if not closed and max(s_prev[N], s_last) >= length:
        return False  # a grid clamped at the end of an open path is not uniform
    d = ((s_grid[0] + shift) - s_prev[0]) / ds
    if not 0.0 <= d <= N:
        return False
    m = int(d)
    w = d - m
    for k in range(N + 1):
        a = min(m + k, N)
        b = min(m + k + 1, N)
        for j in range(nz):
            v = table[a, j] * (1.0 - w)
            out[k, j] = v + w * table[b, j]
    if s_last - s_prev[N] > 0:  # extend the time beyond the old horizon at its last pace
        pace = (table[N, it] - table[N - 1, it]) / max(s_prev[N] - s_prev[N - 1], 1e-12)
        for k in range(N + 1):
            sk = s_grid[k] + shift
            if sk > s_prev[N]:
                out[k, it] = table[N, it] + (sk - s_prev[N]) * pace
    t0 = out[0, it]
    for k in range(N + 1):
        out[k, it] -= t0
    return True


@nb.njit(nb.void(_A2, _A2, _A1, _F1, nb.int64, nb.int64, nb.boolean, nb.int64, nb.float64), cache=True,
         nogil=True, error_model="numpy", fastmath=False)
def clamp_op(x_op, u_op, kappa, lim, i_ey, i_epsi, speed_in_state, i_speed, v_min):  # pragma: no cover - compiled
    """``SpatialMPC._prepare``'s domain guard, in place: ``lim = 0.95 / max(|kappa|, 1e-12)`` (N+1,), then
    ``|e_y| <= lim``, ``|e_psi| <= 1.2`` rad and the speed (state or input) ``>= v_min``."""
    for k in range(x_op.shape[0]):
        lim[k] = 0.95 / max(abs(kappa[k]), 1e-12)
        x_op[k, i_ey] = min(max(x_op[k, i_ey], -lim[k]), lim[k])
        x_op[k, i_epsi] = min(max(x_op[k, i_epsi], -1.2), 1.2)
        if speed_in_state:
            x_op[k, i_speed] = max(x_op[k, i_speed], v_min)
    if not speed_in_state:
        for k in range(u_op.shape[0]):
            u_op[k, i_speed] = max(u_op[k, i_speed], v_min)


@nb.njit(nb.boolean(_F1, _F2, _F2, _F1, nb.boolean, nb.boolean, nb.float64, nb.float64, nb.float64, _F1, _F1,
                    nb.int64, _F1, _F2, _F1, nb.boolean, nb.float64, _F1, nb.float64, _F1, _F2, _F2, _F2, _F2, _F1),
         cache=True, nogil=True, error_model="numpy", fastmath=False)
def kinematic_prepare(grid, table, delta, inv_len, has_inf, closed, length, lap_turn, s0, s_off_x, s_off_u, cap_col,
                      ref_prm, prev, s_prev, use_prev, ds, x0, v_min, s_grid, r, x_ref, u_ref, z_op,
                      lim):  # pragma: no cover - compiled
    """The kinematic model's step data from its start ``s0`` [m] and state ``x0`` (3,) in one call: the numbers of
    ``SpatialMPC._prepare`` after the delay prediction (the grid, :func:`sample_path`, :func:`kinematic_reference`,
    :func:`shift_plan` of the last plan or the reference, ``x_op[0] = x0`` and :func:`clamp_op`).

    ``s_off_x`` (N+1,), ``s_off_u`` (N,): the grid's offsets [m]; ``cap_col``: the sample's column that caps the speed
    reference (-1: none); ``ref_prm`` as in :func:`kinematic_reference`; ``prev`` (N+1, 5), ``s_prev`` (N+1,): the
    last plan's table and grid (``use_prev``: shift it, else start from the reference). Outputs: ``s_grid`` (N+1,),
    ``r`` (N+1, 10) the path sample's rows, ``x_ref`` (N+1, 3), ``u_ref`` (N, 2), ``z_op`` (N+1, 5) the operating
    point (``x_op = z_op[:, :3]``, ``u_op = z_op[:-1, 3:]``), ``lim`` (N+1,) the ``|e_y|`` limits. False when the
    last plan's grid is not uniform with this one (``z_op`` holds nothing then: the caller shifts and clamps).
    """
    K = s_off_x.shape[0]
    N = K - 1
    for k in range(K):
        s = s0 + s_off_x[k]
        s_grid[k] = s if closed else min(s, length)
    sample_path(grid, table, delta, inv_len, has_inf, closed, length, lap_turn, 6, s_grid, r)
    kappa = r[:, 0]
    kinematic_reference(kappa, r[:, max(cap_col, 0)], cap_col >= 0, s_off_u, ref_prm, x_ref, u_ref)
    if use_prev:
        if not shift_plan(prev, s_prev, s_grid, ds, closed, length, 3, 2, z_op):
            return False
    else:
        for k in range(K):
            for j in range(3):
                z_op[k, j] = x_ref[k, j]
            kk = min(k, N - 1)
            for j in range(2):
                z_op[k, 3 + j] = u_ref[kk, j]
    for j in range(3):
        z_op[0, j] = x0[j]
    clamp_op(z_op[:, :3], z_op[:N, 3:], kappa, lim, 0, 1, False, 0, v_min)
    return True


@nb.njit(nb.void(_A2, _A2, _A1, _A1, nb.float64, _A1, _F1, _I1, _I1, _F3, _F3, _F2, _A1, _A2, _A1, _A1, _A1, _F1,
                 _F1, _F2, _F2, _F2, _F2, _F1, _F1, _F1, _I1, _F1, _F1, _F1, _F1, _F1), cache=True, nogil=True,
         error_model="numpy", fastmath=False)
def kinematic_build(x_op, u_op, kappa, s_grid, L, x0, data, pos_A, pos_B, A, B, f, v_box, u_ref, u_prev, lb, ub,
                    s_off_x, s_off_u, Q, QN, R, Rd, rate_dn, rate_up, prm, flg, lower, upper, q, dt,
                    e_ref):  # pragma: no cover - compiled
    """The kinematic model's whole QP in one call: :func:`kinematic_linearize_fill`, then
    :func:`kinematic_bounds_cost` (their arguments, shared ones once)."""
    kinematic_linearize_fill(x_op, u_op, kappa, s_grid, L, x0, data, pos_A, pos_B, lower, upper, A, B, f)
    kinematic_bounds_cost(kappa, u_op, v_box, s_grid, u_ref, u_prev, lb, ub, s_off_x, s_off_u, Q, QN, R, Rd, rate_dn,
                          rate_up, prm, flg, lower, upper, q, dt, e_ref)


@nb.njit(nb.float64(_A1, _A1, _A1, _A1, _F2, _F1, nb.int64, _F2, _F2, _F2), cache=True, nogil=True,
         error_model="numpy", fastmath=False)
def finish_step(x, y, psi, e_y, xy, z, start, X, U, table):  # pragma: no cover - compiled
    """The end of a solved step in one call: :func:`offset_points` into ``xy``, :func:`store_plan` of ``X``, ``U``
    into ``table``; returns :func:`tail_max` of ``z`` from ``start`` (the largest corridor slack)."""
    offset_points(x, y, psi, e_y, xy)
    store_plan(X, U, table)
    return tail_max(z, start)


@nb.njit(nb.int64(_F1, _F2, _F2, _F1, nb.boolean, nb.boolean, nb.float64, nb.float64, nb.float64, nb.int64, nb.boolean,
                  _F1, _F2, _F1, _F1, _F1, _F2, _F1, _F1, _I1, _F1, _F1, _F3, _F3, _F2, _F1, _F1, _F1, _F1, _F1),
         cache=True, nogil=True, error_model="numpy", fastmath=False)
def kinematic_step(grid, table, delta, inv_len, has_inf, closed, length, lap_turn, s0, cap_col, use_prev, x0, prev,
                   s_prev, u_prev, s_grid, r, lb, cst, ints, work, data, A, B, f, lower, upper, q, dt,
                   e_ref):  # pragma: no cover - compiled
    """The kinematic model's whole step before the solve in one call: :func:`kinematic_prepare`, the spatial model's
    domain check at the start, the corridor bounds of the path's widths reduced over the body (``lb = -r[:, 9]`` into
    ``lb`` (N+1,), ``ub = r[:, 8]``), :func:`kinematic_build` (``u_prev`` (2,) the last command when the flag
    ``has_u_prev`` is set, else the reference's first input) and :func:`all_finite` of the QP's matrix data and cost.

    The arguments of those kernels come packed (fewer arrays to pass: each costs a conversion per call) by
    :func:`mpc_tracking.mpc.kernels.kinematic_step_pack`, with K = N+1 grid points: ``cst`` the constants
    ``[s_off_x (K), s_off_u (N), ref_prm (8), prm (13), Q (9), QN (9), R (4), Rd (4), rate_dn (2), rate_up (2), ds,
    v_min, L]``, ``ints`` ``[flg (8), pos_A (9N), pos_B (6N)]``, ``work`` the scratch ``[x_ref (3K), u_ref (2N),
    z_op (5K), lim (K)]``; the others as in :func:`kinematic_prepare` and :func:`kinematic_build`.

    Returns 1 (the QP is built), 0 (the last plan's grid is not uniform with this one: nothing built, the caller
    takes the general path), 3 (the start is outside the model's domain: ``e_y kappa >= 1`` or ``|e_psi| >= pi/2``,
    nothing built) or 2 (built, but its numbers are not all finite).
    """
    K = s_grid.shape[0]
    N = K - 1
    o = 0
    s_off_x = cst[o:o + K]
    o += K
    s_off_u = cst[o:o + N]
    o += N
    ref_prm = cst[o:o + 8]
    o += 8
    prm = cst[o:o + 13]
    o += 13
    Q = cst[o:o + 9].reshape((3, 3))
    o += 9
    QN = cst[o:o + 9].reshape((3, 3))
    o += 9
    R = cst[o:o + 4].reshape((2, 2))
    o += 4
    Rd = cst[o:o + 4].reshape((2, 2))
    o += 4
    rate_dn = cst[o:o + 2]
    rate_up = cst[o + 2:o + 4]
    o += 4
    ds, v_min, L = cst[o], cst[o + 1], cst[o + 2]
    flg = ints[:8]
    pos_A = ints[8:8 + 9 * N]
    pos_B = ints[8 + 9 * N:8 + 15 * N]
    x_ref = work[:3 * K].reshape((K, 3))
    o = 3 * K
    u_ref = work[o:o + 2 * N].reshape((N, 2))
    o += 2 * N
    z_op = work[o:o + 5 * K].reshape((K, 5))
    o += 5 * K
    lim = work[o:o + K]
    if not kinematic_prepare(grid, table, delta, inv_len, has_inf, closed, length, lap_turn, s0, s_off_x, s_off_u,
                             cap_col, ref_prm, prev, s_prev, use_prev, ds, x0, v_min, s_grid, r, x_ref, u_ref, z_op,
                             lim):
        return 0
    if x0[0] * r[0, 0] >= 1.0 or abs(x0[1]) >= 0.5 * np.pi:
        return 3
    for k in range(K):
        lb[k] = -r[k, 9]
    up = u_prev if flg[F_UPREV] != 0 else u_ref[0]
    kinematic_build(z_op[:, :3], z_op[:N, 3:], r[:, 0], s_grid, L, x0, data, pos_A, pos_B, A, B, f, r[:, 7], u_ref, up,
                    lb, r[:, 8], s_off_x, s_off_u, Q, QN, R, Rd, rate_dn, rate_up, prm, flg, lower, upper, q, dt,
                    e_ref)
    return 1 if all_finite(data, q) else 2


@nb.njit(nb.float64(_F1, _A1, _A1, _A1, nb.int64, _F1, _F2, nb.int64, nb.int64, _F2), cache=True, nogil=True,
         error_model="numpy", fastmath=False)
def finish_plan(z, x, y, psi, i_ey, xu, xy, nx, start, table):  # pragma: no cover - compiled
    """:func:`finish_step` of a QP that holds every state of the model, with the plan's copy: ``xu = z[:xu.size]``
    (the plan's states ``X`` (N+1, nx) and inputs ``U`` (N, nu), row-major, N = ``xy.shape[0] - 1``), the points of
    ``X[:, i_ey]`` beside the path into ``xy``, the plan into ``table``; returns the largest slack ``z[start:]``."""
    n = xu.shape[0]
    for i in range(n):
        xu[i] = z[i]
    K = xy.shape[0]
    nX = K * nx
    X = xu[:nX].reshape((K, nx))
    U = xu[nX:].reshape((K - 1, (n - nX) // (K - 1)))
    offset_points(x, y, psi, X[:, i_ey], xy)
    store_plan(X, U, table)
    return tail_max(z, start)


@nb.njit(nb.int64(_F1, _F2, _F2, _F1, nb.boolean, nb.boolean, nb.float64, nb.float64, nb.float64, nb.int64, nb.boolean,
                  _F1, _F2, _F1, _F1, _F1, _F2, _F1, _F2), cache=True, nogil=True, error_model="numpy",
         fastmath=False)
def dynamic_prepare(grid, table, delta, inv_len, has_inf, closed, length, lap_turn, s0, cap_col, use_prev, x0, prev,
                    s_prev, cst, s_grid, r, v, z_op):  # pragma: no cover - compiled
    """The dynamic model's step data before its reference operating point in one call (``SpatialMPC._prepare``'s
    numbers with the compiled kernels): the grid from ``s0`` [m] into ``s_grid`` (N+1,), :func:`sample_path` into
    ``r`` (N+1, 10), :func:`speed_reference` into ``v`` (N,) (capped by the sample's column ``cap_col``, -1: none)
    and, with ``use_prev``, :func:`shift_plan` of the last plan ``prev`` (N+1, 8) on the grid ``s_prev`` into
    ``z_op`` (N+1, 8) (states 0..5, inputs 6..7). ``cst``: ``[s_off_x (N+1), s_off_u (N), ref_prm (8)]`` with
    ``ref_prm`` as in :func:`kinematic_reference` (its ds last).

    Returns 1, 0 (the last plan's grid is not uniform with this one: the caller takes the general path) or 3 (the
    state ``x0`` (6,) is outside the spatial model's domain: ``e_y kappa >= 1`` or ``|e_psi| >= pi/2``)."""
    K = s_grid.shape[0]
    N = K - 1
    s_off_x = cst[:K]
    s_off_u = cst[K:K + N]
    ref_prm = cst[K + N:K + N + 8]
    for k in range(K):
        s = s0 + s_off_x[k]
        s_grid[k] = s if closed else min(s, length)
    sample_path(grid, table, delta, inv_len, has_inf, closed, length, lap_turn, 6, s_grid, r)
    kappa = r[:, 0]
    _speed_reference(kappa, r[:, max(cap_col, 0)], cap_col >= 0, s_off_u, ref_prm, v)
    if use_prev and not shift_plan(prev, s_prev, s_grid, ref_prm[7], closed, length, 6, 2, z_op):
        return 0
    if x0[0] * kappa[0] >= 1.0 or abs(x0[1]) >= 0.5 * np.pi:
        return 3
    return 1


@nb.njit(nb.boolean(_F2, _F2, _F1, _F1, _F2, _F1, _F2, _F1, _F1, _F1, _I1, _F1, _F1, _F1, _F1, _F1, _F1),
         cache=True, nogil=True, error_model="numpy", fastmath=False)
def dynamic_rest(r, z_op, x0, s_grid, u_ref, u_prev, x_ref, lb, ub, cst, ints, data, lower, upper, q, dt,
                 e_ref):  # pragma: no cover - compiled
    """:func:`dynamic_bounds_cost` of the dynamic model's step with its arguments packed (each array argument costs
    a conversion per call; packed by :meth:`StepQP.dynamic_rest_pack <mpc_tracking.mpc.qp.StepQP.dynamic_rest_pack>`),
    the corridor bounds of the path's widths reduced over the body (``lb = -r[:, 9]`` into ``lb`` (N+1,),
    ``ub = r[:, 8]`` into ``ub``), then :func:`all_finite` of the QP's matrix data and cost (the return value).
    ``r`` (N+1, 10): the path sample's rows (curvature, whole-path ceiling in column 7); ``z_op`` (N+1, 8): the
    operating point (states 0..5, inputs 6..7).

    ``cst``: ``[prm (N_PRM), box_lo0 (2), box_hi0 (2), rate_dn (2), rate_up (2), cut_a (C), cut_y (C), s_off_x (N+1),
    Q (36), QN (36), R (4), Rd (4)]`` (C the cuts per step, at least 1); ``ints``: ``[flg (13), xcol (6),
    cut_pos_x (2 C N), cut_pos_a (C N)]`` (at least one entry each)."""
    K = s_grid.shape[0]
    N = K - 1
    C = max(ints[G_NCUTS], 1)
    o = 0
    prm = cst[o:o + N_PRM]
    o += N_PRM
    box_lo0, box_hi0 = cst[o:o + 2], cst[o + 2:o + 4]
    rate_dn, rate_up = cst[o + 4:o + 6], cst[o + 6:o + 8]
    o += 8
    cut_a, cut_y = cst[o:o + C], cst[o + C:o + 2 * C]
    o += 2 * C
    s_off_x = cst[o:o + K]
    o += K
    Q = cst[o:o + 36].reshape((6, 6))
    o += 36
    QN = cst[o:o + 36].reshape((6, 6))
    o += 36
    R = cst[o:o + 4].reshape((2, 2))
    Rd = cst[o + 4:o + 8].reshape((2, 2))
    flg = ints[:13]
    xcol = ints[13:19]
    n_px = max(2 * ints[G_NCUTS] * N, 1)
    cut_pos_x = ints[19:19 + n_px]
    cut_pos_a = ints[19 + n_px:]
    for k in range(K):
        lb[k] = -r[k, 9]
        ub[k] = r[k, 8]
    kappa = r[:, 0]
    v_box = r[:, 7] if flg[G_VBOX] else kappa
    dynamic_bounds_cost(kappa, v_box, z_op[:, :6], x0, s_grid, u_ref, u_prev, x_ref,
                        lb, ub, prm, flg, box_lo0, box_hi0, rate_dn, rate_up, cut_a, cut_y, cut_pos_x, cut_pos_a,
                        s_off_x, Q, QN, R, Rd, data, lower, upper, q, dt, e_ref, xcol)
    return all_finite(data, q)
