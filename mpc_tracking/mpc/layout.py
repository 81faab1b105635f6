"""Fixed-sparsity QP layout of the spatial LTV-MPC (shared by the OSQP and cvxpy back ends).

Decision vector ``z = [x_0..x_N (nx each) | u_0..u_{N-1} (nu each) | ellipse slacks | corridor
slacks]``: one friction-ellipse slack per prediction step when the model has friction-ellipse cuts
(N or 0), then the corridor slacks ordered ``[sl_front, su_front, sl_rear, su_rear]`` (N+1 each;
``sl``/``su`` relax the lower/upper corridor bound of the front and rear corner rows separately, so
the QP is feasible for any heading). Constraint rows, in order:

========  =========  =====================================================================
block     rows       meaning
========  =========  =====================================================================
dyn       nx (N+1)   x_0 = x_init;  A_k x_k + B_k u_k - x_{k+1} = -f_k
box       nu N       u_min_k <= u_k <= u_max_k
rate      nu N       u_0 - (u_prev) and u_k - u_{k-1} within rate bounds
xbox      N or 0     speed bound on x_k[i_speed], k = 1..N (when the speed is a state)
corr      2 (N+1)    lb' <= e_y + l_f e_psi + sl - su <= ub' (front corners), same with -l_r (rear)
ell       n_cuts N   friction-ellipse cuts: g_kj . x_k[cut_states] + h_j a_x,k - e_k <= b_kj
slack     4(N+1)+nE  corridor and ellipse slacks >= 0
========  =========  =====================================================================

The QP's stage holds the model's state components ``states`` (default all ``nx``): a component that has no cost
and feeds no other component (the dynamic model's time ``t`` outside the time-optimal mode,
:meth:`PredictionModel.qp_states <mpc_tracking.models.prediction.PredictionModel.qp_states>`) is left out of the
QP (no column, no dynamics row) and recomputed from the plan after the solve by its own rows of the linearized
dynamics (:meth:`QPLayout.expand_states`), which gives the value the QP's equality rows would have given. ``nx``
below is the QP's stage size ``len(states)``; matrices passed in the model's coordinates (``A``, ``B``, ``Q``,
scales) are reduced here, in one place.

Only the A_k/B_k entries and the cut coefficients of the constraint matrix change between steps;
their positions in the CSC data array are computed once (``dyn_pos_A``, ``dyn_pos_B``,
``cut_pos_x``, ``cut_pos_a``), with structural zeros stored.
The sizes ``nx, nu`` and the component roles come from the prediction model
(:class:`~mpc_tracking.models.prediction.PredictionModel`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import sparse

__all__ = ["QPLayout", "QPData", "StepProblem"]


class QPLayout:
    """Index bookkeeping and constant matrices for horizon ``N``.

    Parameters
    ----------
    N : int
        Horizon.
    front, rear : float
        Distances from the reference point to the front and rear bumpers [m] (footprint swing).
    nx, nu : int
        State and input sizes of the prediction model (default: the kinematic bicycle's 3 and 2).
    i_ey, i_epsi : int
        Indices of the lateral and heading error in the model's state (the corridor rows).
    i_speed_state : int or None
        Index of the speed in the model's state when it is a state (then N speed-bound rows), else None.
    states : tuple of int, optional
        The model's state components the QP holds, in increasing order (default all ``nx``). The others
        must feed no component (zero columns of ``A`` off the diagonal) and carry no cost; the state
        indices of this class's arguments and methods are the model's.
    n_cuts : int
        Friction-ellipse cuts per prediction step (0: none). Each cut row holds the states
        ``cut_states`` of ``x_k``, the acceleration input ``i_accel`` of ``u_k`` and the step's
        ellipse slack.
    cut_states : tuple of int
        State components (the model's indices) the linearized lateral acceleration depends on.
    i_accel : int or None
        Index of the longitudinal acceleration in the input (required with cuts).
    """

    def __init__(self, N: int, front: float, rear: float, nx: int = 3, nu: int = 2, *, i_ey: int = 0,
                 i_epsi: int = 1, i_speed_state: int | None = None, n_cuts: int = 0,
                 cut_states: tuple[int, ...] = (), i_accel: int | None = None,
                 states: tuple[int, ...] | None = None) -> None:
        self.N = N
        kept = tuple(range(nx)) if states is None else tuple(int(i) for i in states)
        if not kept or list(kept) != sorted(set(kept)) or kept[0] < 0 or kept[-1] >= nx:
            raise ValueError(f"states: expected increasing distinct state indices in [0, {nx}), got {states!r}")
        #: the model's state size, the model's components the QP holds (its stage, in order) and the others
        self.nx_model = nx
        self.states = kept
        self.dropped = tuple(i for i in range(nx) if i not in kept)
        #: QP column within a stage of each model state component (nx_model,), -1 for a dropped one
        self.x_col = np.full(nx, -1, dtype=np.int64)
        self.x_col[list(kept)] = np.arange(len(kept))
        self._states_idx = np.asarray(kept, dtype=np.int64)
        self._all_states = not self.dropped
        self.nx, self.nu = len(kept), nu
        for name, i in (("i_ey", i_ey), ("i_epsi", i_epsi), ("i_speed_state", i_speed_state),
                        *(("cut_states", c) for c in (cut_states if n_cuts else ()))):
            if i is not None and (not 0 <= i < nx or self.x_col[i] < 0):
                raise ValueError(f"{name}: expected a state index the QP holds ({list(kept)}), got {i!r}")
        # (the QP's own column indices from here on)
        self.i_ey, self.i_epsi = int(self.x_col[i_ey]), int(self.x_col[i_epsi])
        self.i_speed_state = None if i_speed_state is None else int(self.x_col[i_speed_state])
        if n_cuts and (i_accel is None or not cut_states):
            raise ValueError("QPLayout: friction-ellipse cuts need i_accel and cut_states")
        self.n_cuts = int(n_cuts)
        self.cut_states = tuple(int(self.x_col[c]) for c in cut_states) if n_cuts else ()
        self.i_accel = i_accel
        self.nX = self.nx * (N + 1)
        self.nU = nu * N
        self.nE = N if self.n_cuts else 0  # one ellipse slack per prediction step
        self.nS = 4 * (N + 1)
        self.nXB = N if i_speed_state is not None else 0
        self.n = self.nX + self.nU + self.nE + self.nS
        self.r_dyn = 0
        self.r_box = self.nX
        self.r_rate = self.r_box + self.nU
        self.r_xbox = self.r_rate + self.nU
        self.r_corr = self.r_xbox + self.nXB
        self.r_ell = self.r_corr + 2 * (N + 1)
        self.r_slack = self.r_ell + self.n_cuts * N
        self.m = self.r_slack + self.nE + self.nS
        self.iu0 = self.nX
        self.iel0 = self.nX + self.nU  # first ellipse slack
        self.isl0 = self.iel0 + self.nE  # first corridor slack
        self._build_A(front, rear)

    def x_index(self, k: ArrayLike, i: int) -> np.ndarray:
        """Index in ``z`` of the model's state component ``i`` at stage(s) ``k`` (same shape as ``k``)."""
        if not 0 <= i < self.nx_model or self.x_col[i] < 0:
            raise ValueError(f"i: expected a state index the QP holds ({list(self.states)}), got {i!r}")
        return self.nx * np.asarray(k) + int(self.x_col[i])

    def stage_states(self, x: np.ndarray) -> np.ndarray:
        """The QP's components ``(..., nx)`` of states in the model's coordinates ``x`` (..., nx_model) (``x``
        itself when the QP holds them all)."""
        return x if self._all_states else x[..., self._states_idx]

    def stage_dynamics(self, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The QP's dynamics ``A`` (N, nx, nx), ``B`` (N, nx, nu) from the model's (N, nx_model, nx_model) and
        (N, nx_model, nu) (the same arrays when the QP holds all states, or when they are the QP's already)."""
        if self._all_states or A.shape[-1] == self.nx:
            return A, B
        idx = self._states_idx
        return A[:, idx[:, None], idx], B[:, idx]

    def expand_states(self, zx: np.ndarray, U: np.ndarray, x0: np.ndarray, A: np.ndarray, B: np.ndarray,
                      f: np.ndarray) -> np.ndarray:
        """The plan's states in the model's coordinates, shape (N+1, nx_model), from the QP's ``zx`` ((N+1) nx,)
        and inputs ``U`` (N, nu): a dropped component starts at ``x0`` (nx_model,) and follows its own rows of
        the model's dynamics ``A`` (N, nx_model, nx_model), ``B`` (N, nx_model, nu), ``f`` (N, nx_model),
        ``x_{k+1,i} = A_k[i] . x_k + B_k[i] . u_k + f_k[i]``: the value the QP's dynamics rows would have given
        it (it feeds no other component, so the rest of the plan is the same with or without it)."""
        N = self.N
        X = np.empty((N + 1, self.nx_model))
        X[:, self._states_idx] = zx.reshape(N + 1, self.nx)
        kept = self._states_idx
        for i in self.dropped:
            # x_{k+1,i} = a_k x_{k,i} + b_k with b_k from the kept components (a dropped one feeds no other)
            b = np.einsum("kj,kj->k", A[:, i, kept], X[:N, kept]) + np.einsum("kj,kj->k", B[:, i, :], U) + f[:, i]
            a = A[:, i, i]
            X[0, i] = x0[i]
            if np.all(a == 1.0):
                np.cumsum(b, out=X[1:, i])
                X[1:, i] += x0[i]
            else:
                for k in range(N):
                    X[k + 1, i] = a[k] * X[k, i] + b[k]
        return X

    def u_index(self, k: ArrayLike, j: int) -> np.ndarray:
        """Index in ``z`` of input component ``j`` at stage(s) ``k`` (same shape as ``k``)."""
        return self.nX + self.nu * np.asarray(k) + j

    def _build_A(self, front: float, rear: float) -> None:
        N, NX, NU = self.N, self.nx, self.nu
        row_parts: list[np.ndarray] = []
        col_parts: list[np.ndarray] = []
        val_parts: list[np.ndarray] = []
        tag_parts: list[np.ndarray] = []  # 0 constant, 1 A_k, 2 B_k, 3 cut x coefficient, 4 cut a_x coefficient

        def add(r: ArrayLike, c: ArrayLike, v: ArrayLike, dyn: int = 0) -> None:
            r_arr = np.asarray(r).ravel()
            c_arr = np.asarray(c).ravel()
            v_arr = np.broadcast_to(np.asarray(v, dtype=float), r_arr.shape).ravel()
            row_parts.append(r_arr)
            col_parts.append(c_arr)
            val_parts.append(v_arr)
            tag_parts.append(np.full(r_arr.size, dyn))

        k = np.arange(N)
        # x_0 rows
        add(np.arange(NX), np.arange(NX), 1.0)
        # -x_{k+1}
        kk2, ii2 = np.meshgrid(k, np.arange(NX), indexing="ij")
        add(NX * (kk2 + 1) + ii2, NX * (kk2 + 1) + ii2, -1.0)
        # A_k blocks (dynamic, dense 3x3), ordered (k, i, j)
        kk, ii, jj = np.meshgrid(k, np.arange(NX), np.arange(NX), indexing="ij")
        add(NX * (kk + 1) + ii, NX * kk + jj, 1.0, 1)
        # B_k blocks (dynamic, dense 3x2), ordered (k, i, j)
        kk, ii, jj = np.meshgrid(k, np.arange(NX), np.arange(NU), indexing="ij")
        add(NX * (kk + 1) + ii, self.nX + NU * kk + jj, 1.0, 2)
        # input box
        add(self.r_box + np.arange(self.nU), self.nX + np.arange(self.nU), 1.0)
        # input rates
        add(self.r_rate + np.arange(self.nU), self.nX + np.arange(self.nU), 1.0)
        add(self.r_rate + NU + np.arange(self.nU - NU), self.nX + np.arange(self.nU - NU), -1.0)
        # speed bound on the states 1..N (when the speed is a state)
        if self.i_speed_state is not None:
            add(self.r_xbox + np.arange(N), NX * np.arange(1, N + 1) + self.i_speed_state, 1.0)
        # corridor rows: front (2k) and rear (2k+1)
        kc = np.arange(N + 1)
        for side, coef in ((0, front), (1, -rear)):
            r = self.r_corr + 2 * kc + side
            s_lo = self.isl0 + (2 * side) * (N + 1) + kc
            add(r, NX * kc + self.i_ey, 1.0)
            add(r, NX * kc + self.i_epsi, coef)
            add(r, s_lo, 1.0)
            add(r, s_lo + N + 1, -1.0)
        # friction-ellipse cuts, ordered (k, j, state) and (k, j)
        if self.n_cuts:
            C, ns = self.n_cuts, len(self.cut_states)
            kk, jj, ii = np.meshgrid(k, np.arange(C), np.arange(ns), indexing="ij")
            add(self.r_ell + C * kk + jj, NX * kk + np.asarray(self.cut_states)[ii], 1.0, 3)
            k2, j2 = np.meshgrid(k, np.arange(C), indexing="ij")
            add(self.r_ell + C * k2 + j2, self.nX + NU * k2 + int(self.i_accel or 0), 1.0, 4)
            add(self.r_ell + C * k2 + j2, self.iel0 + k2, -1.0)
        # slacks >= 0 (ellipse, then corridor)
        add(self.r_slack + np.arange(self.nE + self.nS), self.iel0 + np.arange(self.nE + self.nS), 1.0)

        rows = np.concatenate(row_parts)
        cols = np.concatenate(col_parts)
        vals = np.concatenate(val_parts)
        tags = np.concatenate(tag_parts)
        order = np.arange(1, rows.size + 1, dtype=np.float64)
        probe = sparse.csc_matrix((order, (rows, cols)), shape=(self.m, self.n))
        probe.sort_indices()
        perm = probe.data.astype(np.int64) - 1  # csc position -> original entry
        inv = np.empty_like(perm)
        inv[perm] = np.arange(perm.size)
        self.A_indices = probe.indices.copy()
        self.A_indptr = probe.indptr.copy()
        self.A_data0 = vals[perm]
        self.dyn_pos_A = inv[np.flatnonzero(tags == 1)]
        self.dyn_pos_B = inv[np.flatnonzero(tags == 2)]
        self.cut_pos_x = inv[np.flatnonzero(tags == 3)]
        self.cut_pos_a = inv[np.flatnonzero(tags == 4)]
        self.nnz = perm.size

    def column_scale(self, x_scale: np.ndarray, u_scale: np.ndarray) -> np.ndarray:
        """Scale of every QP variable (n,): ``x_scale`` (nx_model,) on each stage's state, ``u_scale`` (nu,) on
        each input, 1 on the slacks."""
        d = np.ones(self.n)
        d[: self.nX] = np.tile(self.stage_states(np.asarray(x_scale, dtype=float)), self.N + 1)
        d[self.nX : self.nX + self.nU] = np.tile(np.asarray(u_scale, dtype=float), self.N)
        return d

    def A_matrix(self, data: np.ndarray) -> sparse.csc_matrix:
        """The constraint matrix with the given CSC data (structural zeros kept)."""
        return sparse.csc_matrix((data, self.A_indices.copy(), self.A_indptr.copy()), shape=(self.m, self.n))

    def fill_dynamics(self, data: np.ndarray, A: np.ndarray, B: np.ndarray) -> None:
        """Write A_k (N, nx_model, nx_model) and B_k (N, nx_model, nu) (the model's; or already the QP's,
        (N, nx, nx) and (N, nx, nu)) into the CSC data array in place."""
        A, B = self.stage_dynamics(A, B)
        data[self.dyn_pos_A] = A.reshape(-1)
        data[self.dyn_pos_B] = B.reshape(-1)

    def fill_cuts(self, data: np.ndarray, gx: np.ndarray, ga: np.ndarray) -> None:
        """Write the cut coefficients on the states (N, n_cuts, len(cut_states)) and on the
        acceleration input (N, n_cuts) into the CSC data array in place."""
        data[self.cut_pos_x] = gx.reshape(-1)
        data[self.cut_pos_a] = ga.reshape(-1)

    def cost_matrix(
        self, Q: np.ndarray, QN: np.ndarray, R: np.ndarray, Rd: np.ndarray, slack_quad: float
    ) -> sparse.csc_matrix:
        """Upper-triangular CSC Hessian P of the cost (constant for fixed weights); ``Q``, ``QN`` (nx_model,
        nx_model) in the model's coordinates (or the QP's, (nx, nx))."""
        N = self.N
        if Q.shape[0] != self.nx:
            idx = self._states_idx
            Q, QN = Q[idx[:, None], idx], QN[idx[:, None], idx]
        blocks_x = [np.zeros((self.nx, self.nx))] + [Q] * (N - 1) + [QN]
        Px = sparse.block_diag(blocks_x)
        # inputs: R on each, plus D^T Rd D for the rate cost (u_{-1} is a constant)
        D = sparse.eye(N) - sparse.eye(N, k=-1)
        Pu = sparse.kron(sparse.eye(N), R) + sparse.kron(D.T @ D, Rd)
        Ps = slack_quad * sparse.eye(self.nE + self.nS)
        P = sparse.block_diag([Px, Pu, Ps], format="csc")
        return sparse.triu(P, format="csc")


@dataclass
class StepProblem:
    """The semantic data of one step's QP (what both back ends solve).

    minimize  sum_k 1/2 |x_k - r_k|^2_Q (k=1..N-1) + 1/2 |x_N - r_N|^2_QN + sum_k 1/2 |u_k - u_ref_k|^2_R
              + sum_k 1/2 |u_k - u_{k-1}|^2_R_rate (u_{-1} = u_prev) + slack_weight sum(sl + su)
              + slack_quad/2 |(sl, su)|^2 + time_weight t_N,     r_k = (e_ref_k, 0, 0)
    s.t.      x_0 = x0,  x_{k+1} = A_k x_k + B_k u_k + f_k,  u_lo <= u_k <= u_hi,
              rate_lo_0 <= u_0 <= rate_hi_0,  rate_lo_k <= u_k - u_{k-1} <= rate_hi_k (k >= 1),
              corr_lo <= e_y + front e_psi + sl_f - su_f <= corr_hi,
              corr_lo <= e_y - rear e_psi + sl_r - su_r <= corr_hi,
              all slacks >= 0
    """

    A: np.ndarray
    B: np.ndarray
    f: np.ndarray
    x0: np.ndarray
    u_lo: np.ndarray
    u_hi: np.ndarray
    rate_lo: np.ndarray
    rate_hi: np.ndarray
    corr_lo: np.ndarray
    corr_hi: np.ndarray
    e_ref: np.ndarray
    u_ref: np.ndarray
    u_prev: np.ndarray
    Q: np.ndarray
    QN: np.ndarray
    R: np.ndarray
    R_rate: np.ndarray
    slack_weight: float
    slack_quad: float
    time_weight: float
    front: float
    rear: float


class QPData:
    """The numbers of one step's QP (vectors and constraint data), for inspection and cross-checks."""

    def __init__(self, layout: QPLayout) -> None:
        self.layout = layout
        self.q = np.zeros(layout.n)
        self.l = np.zeros(layout.m)
        self.u = np.zeros(layout.m)
        self.A_data = layout.A_data0.copy()

    def A(self) -> sparse.csc_matrix:
        """The constraint matrix, shape ``(m, n)``, with this step's data."""
        return self.layout.A_matrix(self.A_data)
