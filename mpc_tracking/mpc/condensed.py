"""Condensed QP on the inputs, solved by DAQP's dual active-set method (``MPCSettings.solver = "daqp"``).

The sparse QP of :class:`~mpc_tracking.mpc.layout.QPLayout` holds the states, the inputs and the
corridor slacks. Here the states are eliminated with the step's dynamics,

    X = Theta U + c,      Theta (nx (N+1), nu N) block lower-triangular,  c = free response of x0 and f,

so the QP keeps only the ``nu N`` inputs:

    minimize  1/2 U^T (Theta^T P_x Theta + P_u) U + (Theta^T (P_x c + q_x) + q_u)^T U
    s.t.      input box and the first rate row   (simple bounds on U)
              rate rows k >= 1, speed rows        (hard rows)
              corridor rows                       (soft rows)

The corridor slacks become DAQP soft constraints with the same penalty as the sparse QP's:
``slack_weight * s + SLACK_QUAD / 2 * s^2`` on each side of each row (DAQP's linear weight ``w``
and reciprocal quadratic weight ``rho = 1 / SLACK_QUAD``), so both back ends solve the same
problem. The states and the slacks are recovered from the inputs, and the solution is handed back
in the sparse layout, so everything downstream (unpacking, the solution check) is shared.

Trade-offs (measured in ``benchmarks/bench_mpc_step.py``): the condensing costs about
``N (nx nu N)`` multiply-adds in a Python loop of N small products plus one dense
``(nu N)^2 x nx (N+1)`` product per step; the active-set solve is exact (no ADMM tolerance) and
its work depends on how many constraints change from one step to the next, not on the
conditioning that slows ADMM down when long chains of rows are active (obstacles). The
friction-ellipse cuts (shared slack per step) are not supported.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc.layout import QPData, QPLayout

__all__ = ["CondensedDAQP", "DAQP_OK", "DAQP_EXIT"]

#: DAQP exit flags of a solution: 1 optimal, 2 optimal with soft constraints violated
DAQP_OK = (1, 2)
#: what DAQP's exit flags mean
DAQP_EXIT = {1: "optimal", 2: "optimal (soft constraints violated)", -1: "primal infeasible", -2: "cycling",
             -3: "unbounded", -4: "iteration limit reached", -5: "non-convex", -6: "overdetermined initial active set",
             -7: "time limit reached", -100: "condensed Hessian not positive definite"}
#: DAQP's infinity (bounds at or beyond it are "no bound")
_DAQP_INF = 1e30
_SOFT = 8  # DAQP sense flag of a soft constraint
_ACTIVE = 1  # DAQP sense flag of a constraint in the starting working set


def _padded_rows(rows: sparse.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    """Columns and values of each row's entries, padded with zeros to the longest row: ``(m, K)``
    each (column 0, value 0 where a row has fewer entries), so ``sum_j vals[:, j] * X[cols[:, j]]``
    is the product of the rows with ``X`` in K gathers."""
    csr = sparse.csr_matrix(rows)
    counts = np.diff(csr.indptr)
    K = max(int(counts.max(initial=0)), 1)
    cols = np.zeros((csr.shape[0], K), dtype=np.intp)
    vals = np.zeros((csr.shape[0], K))
    for i in range(csr.shape[0]):
        a, b = csr.indptr[i], csr.indptr[i + 1]
        cols[i, : b - a] = csr.indices[a:b]
        vals[i, : b - a] = csr.data[a:b]
    return cols, vals


class CondensedDAQP:
    """The step's QP condensed onto the inputs and solved by DAQP, warm-started from the last active set.

    Parameters
    ----------
    layout : QPLayout
        Sparse layout (without friction-ellipse cuts).
    P : scipy.sparse matrix
        Upper-triangular Hessian of the sparse QP, shape ``(n, n)``.
    A_data0 : ndarray
        CSC data of the sparse constraint matrix (the rows below the dynamics are constant).
    slack_weight, slack_quad : float
        Linear and quadratic weight of the corridor slacks in the sparse QP.
    iter_limit : int
        DAQP's iteration limit per solve.
    time_limit : float
        Seconds per solve (``inf``: none).
    warm_start : bool
        Start each solve from the active set of the last solution.
    """

    def __init__(self, layout: QPLayout, P: sparse.spmatrix, A_data0: np.ndarray, slack_weight: float,
                 slack_quad: float, iter_limit: int = 4000, time_limit: float = float("inf"),
                 warm_start: bool = True) -> None:
        if layout.n_cuts:
            raise SettingsError("MPCSettings.solver: 'daqp' does not hold friction-ellipse cuts "
                                "(ellipse_cuts=True); use solver='osqp'")
        try:
            import daqp
        except ImportError as exc:
            raise SettingsError("MPCSettings.solver: 'daqp' needs the daqp package "
                                "(a dependency of mpc_tracking: pip install daqp)") from exc
        self._daqp = daqp
        # LAPACK here, not at import (the back end is optional); loaded at set-up, so a BLAS thread
        # limit set up after it (mpc_tracking.mpc.blas) sees SciPy's BLAS library
        from scipy.linalg.lapack import dpotrf, dtrtri

        self._dpotrf, self._dtrtri = dpotrf, dtrtri
        lay = self.layout = layout
        N, nx, nu = lay.N, lay.nx, lay.nu
        self.N, self.nx, self.nu, self.nU = N, nx, nu, lay.nU
        # cost blocks: P_x per stage (block diagonal), P_u (banded), as dense arrays
        Pf = sparse.csc_matrix(P)
        Pf = (Pf + sparse.triu(Pf, k=1).T).tocsc()
        Px = Pf[: lay.nX, : lay.nX].toarray().reshape(N + 1, nx, N + 1, nx)
        self._Px = np.ascontiguousarray(np.einsum("kikj->kij", Px))  # (N+1, nx, nx)
        self._Pu = Pf[lay.nX : lay.nX + lay.nU, lay.nX : lay.nX + lay.nU].toarray()
        # constant inequality rows below the dynamics, split by column block
        A = lay.A_matrix(A_data0).tocsr()
        self._bound_rows = np.arange(lay.r_box, lay.r_rate)  # input box: identity on U
        self._rate0_rows = np.arange(lay.r_rate, lay.r_rate + nu)  # u_0 within u_prev +- rate: identity too
        self._hard_rows = np.arange(lay.r_rate + nu, lay.r_corr)  # rate rows k >= 1, speed-state rows
        self._soft_rows = np.arange(lay.r_corr, lay.r_ell)  # corridor rows
        rows = np.concatenate([self._hard_rows, self._soft_rows])
        G = A[rows]
        # rows without states (input rates) are constant in U; the others (corridor, speed states)
        # have at most a few state entries each, kept as (rows, K) columns and values
        Gx = G[:, : lay.nX].tocsr()
        per_row = np.diff(Gx.indptr)
        self._xrows = np.flatnonzero(per_row > 0)
        self._urows = np.flatnonzero(per_row == 0)
        self._gx_cols, self._gx_vals = _padded_rows(Gx[self._xrows])
        G_u = G[:, lay.nX : lay.nX + lay.nU]
        self._G = G_u.toarray()  # (m_g, nU): the condensed rows, state rows refilled every step
        self._G_u_x = self._G[self._xrows].copy()
        self._gx_buf = np.empty_like(self._G_u_x)
        # the input-only rows (differences of inputs) as (rows, K) columns and values too
        self._gu_cols, self._gu_vals = _padded_rows(G_u[self._urows])
        self._m_hard, self._m_g = len(self._hard_rows), len(rows)
        self._rows = rows
        # column blocks of the corridor slacks in the soft rows: +1 relaxes the lower bound, -1 the upper
        S = A[self._soft_rows][:, lay.isl0 :].tocoo()
        self._slack_lo = (S.row[S.data > 0], lay.isl0 + S.col[S.data > 0])  # (soft row, z index)
        self._slack_hi = (S.row[S.data < 0], lay.isl0 + S.col[S.data < 0])
        # work arrays
        # augmented recursion [x; 1]: transitions [A_k f_k] (N, nx, nx+1), influence (N+1, nx+1, 1+nU)
        self._At = np.zeros((N, nx, nx + 1))
        self._Th = np.zeros((N + 1, nx + 1, 1 + lay.nU))
        self._Th[:, nx, 0] = 1.0
        self._width = [1 + k * nu for k in range(N)]  # columns that are non-zero at stage k
        kk, ii, jj = np.meshgrid(np.arange(N), np.arange(nx), np.arange(nu), indexing="ij")
        self._b_k, self._b_i, self._b_j = (kk + 1).ravel(), ii.ravel(), (1 + kk * nu + jj).ravel()
        m = lay.nU + self._m_g
        self._sense0 = np.zeros(m, dtype=np.int32)
        self._sense0[lay.nU + self._m_hard :] = _SOFT
        self._sense = self._sense0.copy()
        # soft rows: DAQP's penalty w s + s^2 / (2 rho) on each side equals the sparse QP's slack cost
        self._rho = np.zeros(m)
        self._w = np.zeros(m)
        self._rho[lay.nU + self._m_hard :] = 1.0 / slack_quad
        self._w[lay.nU + self._m_hard :] = slack_weight
        self._lo, self._hi = np.empty(m), np.empty(m)
        self._M = np.empty((m, lay.nU))
        self._eye, self._zero_f = np.eye(lay.nU), np.zeros(lay.nU)
        self._warm_start = bool(warm_start)
        self._settings: dict[str, float] = {"iter_limit": int(iter_limit)}
        if np.isfinite(time_limit):
            self._settings["time_limit"] = float(time_limit)
        self._prev_active: np.ndarray | None = None
        self.z = np.zeros(lay.n)
        self.iterations = 0
        self.exitflag = 0
        self.run_time = 0.0

    def status_text(self) -> str:
        """What the last exit flag means, e.g. ``"iteration limit reached (exit flag -4)"``."""
        return f"{DAQP_EXIT.get(self.exitflag, 'failed')} (exit flag {self.exitflag})"

    # ------------------------------------------------------------------ condensing
    def condense(self, A: np.ndarray, B: np.ndarray, d: QPData) -> tuple[np.ndarray, np.ndarray]:
        """Fill ``Theta`` and ``c`` for the dynamics ``A`` (N, nx, nx), ``B`` (N, nx, nu) and the affine
        terms in ``d.l``; return the condensed Hessian ``H`` (nU, nU) and gradient ``f`` (nU,).

        The recursion runs on the state augmented with a constant 1 (``[x; 1]``, the affine term as
        a column of the transition), one matrix product per prediction step: column 0 of the
        augmented ``Theta`` is the free response ``c``, columns 1.. the inputs' influence.
        """
        lay, N, nx = self.layout, self.N, self.nx
        A, B = lay.stage_dynamics(A, B)  # (the model's dynamics: the QP's states of them)
        At, Th = self._At, self._Th
        At[:, :, :nx] = A
        At[:, :, nx] = -d.l[nx : lay.nX].reshape(N, nx)
        Th[0, :nx, 0] = d.l[:nx]
        Th[self._b_k, self._b_i, self._b_j] = B.reshape(-1)
        for k in range(N):
            w = self._width[k]
            np.matmul(At[k], Th[k, :, :w], out=Th[k + 1, :nx, :w])
        T = Th[:, :nx, :]  # (N+1, nx, 1 + nU)
        PT = np.matmul(self._Px, T)
        T2 = T.reshape(-1, 1 + self.nU)
        PT2 = PT.reshape(-1, 1 + self.nU)
        H = T2[:, 1:].T @ PT2[:, 1:]
        H += self._Pu
        f = T2[:, 1:].T @ (PT2[:, 0] + d.q[: lay.nX]) + d.q[lay.nX : lay.nX + lay.nU]
        return H, f

    # ------------------------------------------------------------------ solving
    def _run_daqp(self, M: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                  active: np.ndarray | None) -> tuple[np.ndarray, int, dict]:
        """DAQP on ``min |v|^2 / 2, lo <= M v <= hi`` (corridor rows soft), starting from the rows
        ``active`` (None: cold); returns ``(v, exit flag, info)``."""
        sense = self._sense
        sense[:] = self._sense0
        if active is not None:
            sense[active] |= _ACTIVE
        model = self._daqp.Model()
        model.setup(self._eye, self._zero_f, M, hi, lo, sense)
        model.soft_weights(rho_l=self._rho, rho_u=self._rho, w_l=self._w, w_u=self._w)
        model.settings = self._settings
        v, _fval, exitflag, info = model.solve()
        return v, int(exitflag), info

    def solve(self, A: np.ndarray, B: np.ndarray, d: QPData) -> np.ndarray | None:
        """Solve the step's QP; return ``z`` in the sparse layout (states, inputs, slacks) or None.

        :attr:`exitflag`, :attr:`iterations` and :attr:`run_time` describe the solve.
        """
        lay = self.layout
        H, f = self.condense(A, B, d)
        T2 = self._Th[:, : self.nx, :].reshape(-1, 1 + self.nU)
        Th2, c = T2[:, 1:], T2[:, 0]
        G, xr = self._G, self._xrows
        G_x, buf = self._G_u_x.copy(), self._gx_buf
        shift = np.zeros(self._m_g)
        shift_x = np.zeros(len(xr))
        for j in range(self._gx_cols.shape[1]):
            cols, vals = self._gx_cols[:, j], self._gx_vals[:, j]
            np.take(Th2, cols, axis=0, out=buf)
            buf *= vals[:, None]
            G_x += buf
            shift_x += vals * c[cols]
        G[xr] = G_x
        shift[xr] = shift_x
        nU = self.nU
        lo, hi = self._lo, self._hi
        # rows 0..nU-1: the input box, tightened by the first rate row (both identity rows on U)
        lo[:nU] = d.l[self._bound_rows]
        hi[:nU] = d.u[self._bound_rows]
        lo[: self.nu] = np.maximum(lo[: self.nu], d.l[self._rate0_rows])
        hi[: self.nu] = np.minimum(hi[: self.nu], d.u[self._rate0_rows])
        lo[nU:] = d.l[self._rows] - shift
        hi[nU:] = d.u[self._rows] - shift
        # least-distance form (done here with LAPACK, faster than DAQP's own set-up): with
        # H = R^T R, U = R^-1 v + u_free and u_free = -H^-1 f, the cost is |v|^2 / 2 + const
        R, info_chol = self._dpotrf(H, lower=0, clean=1)
        if info_chol != 0:  # not positive definite (a weight matrix that is only semi-definite)
            self.exitflag, self.iterations, self._prev_active = -100, 0, None
            return None
        Rinv, _ = self._dtrtri(R, lower=0)
        u_free = -(Rinv @ (Rinv.T @ f))
        M = self._M
        M[:nU] = Rinv
        M[nU + xr] = G_x @ Rinv
        M_u = Rinv[self._gu_cols[:, 0]] * self._gu_vals[:, :1]
        for j in range(1, self._gu_cols.shape[1]):
            M_u += Rinv[self._gu_cols[:, j]] * self._gu_vals[:, j : j + 1]
        M[nU + self._urows] = M_u
        C_free = np.concatenate([u_free, G @ u_free])
        np.clip(lo - C_free, -_DAQP_INF, _DAQP_INF, out=lo)
        np.clip(hi - C_free, -_DAQP_INF, _DAQP_INF, out=hi)
        warm = self._warm_start and self._prev_active is not None
        v, exitflag, info = self._run_daqp(M, lo, hi, self._prev_active if warm else None)
        if exitflag not in DAQP_OK and warm:
            # the last active set may not suit this QP (e.g. more rows than inputs): start cold
            v, exitflag, info = self._run_daqp(M, lo, hi, None)
        self.exitflag, self.iterations = int(exitflag), int(info["iterations"])
        self.run_time = float(info["solve_time"]) + float(info["setup_time"])
        if exitflag not in DAQP_OK:
            self._prev_active = None
            return None
        U = Rinv @ np.asarray(v, dtype=float) + u_free
        lam = np.asarray(info["lam"])
        self._prev_active = np.flatnonzero(lam != 0.0)
        z = self.z
        z[: lay.nX] = Th2 @ U + c
        z[lay.nX : lay.nX + nU] = U
        # slacks from the corridor rows: how far each row lies outside its bounds
        rows_val = (G @ U)[self._m_hard :] + shift[self._m_hard :]
        below = np.maximum(d.l[self._soft_rows] - rows_val, 0.0)
        above = np.maximum(rows_val - d.u[self._soft_rows], 0.0)
        z[lay.isl0 :] = 0.0
        z[self._slack_lo[1]] = below[self._slack_lo[0]]
        z[self._slack_hi[1]] = above[self._slack_hi[0]]
        return z
