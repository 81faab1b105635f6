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
