"""The spatial MPC's QP written in cvxpy: a readable reference and a cross-check of the OSQP back end.

The problem is built once with cvxpy ``Parameter`` objects (DPP-compliant, so cvxpy caches its
canonicalization) and solved for any :class:`~mpc_tracking.mpc.controller.StepProblem` produced by
:meth:`SpatialMPC.prepare_qp`. The formulation below is the one documented on ``StepProblem``,
written the way one would on paper, independent of the hand-assembled OSQP matrices.
"""
from __future__ import annotations

from typing import Any

import cvxpy as cp
import numpy as np

from mpc_tracking.errors import SolverError
from mpc_tracking.mpc.layout import StepProblem

__all__ = ["CvxpyMPC"]

_BIG = 1e6  # cvxpy cannot take inf inside parameters: "no bound" becomes a large finite bound


def _sqrtm(W: np.ndarray) -> np.ndarray:
    """Symmetric square root of a PSD matrix (so that z^T W z = |z M|^2)."""
    lam, V = np.linalg.eigh(np.asarray(W, dtype=float))
    return V @ np.diag(np.sqrt(np.maximum(lam, 0.0))) @ V.T


class CvxpyMPC:
    """cvxpy model of the MPC QP for horizon ``N``.

    Parameters
    ----------
    N : int
        Horizon.
    Q, QN, R, R_rate : ndarray
        Weight matrices (3x3, 3x3, 2x2, 2x2), as in ``StepProblem``.
    slack_weight, slack_quad : float
        Exact-penalty weight and the small quadratic slack regularization.
    front, rear : float
        Footprint distances used in the corridor rows [m].
    """

    def __init__(self, N: int, Q, QN, R, R_rate, slack_weight: float, slack_quad: float, front: float, rear: float) -> None:
        self.N = N
        x = cp.Variable((N + 1, 3), name="x")
        u = cp.Variable((N, 2), name="u")
        # lower/upper slack of the front (column 0) and rear (column 1) corner rows
        sl = cp.Variable((N + 1, 2), nonneg=True, name="slack_lower")
        su = cp.Variable((N + 1, 2), nonneg=True, name="slack_upper")
        p = {
            "A": [cp.Parameter((3, 3), name=f"A{k}") for k in range(N)],
            "B": [cp.Parameter((3, 2), name=f"B{k}") for k in range(N)],
            "f": cp.Parameter((N, 3), name="f"),
            "x0": cp.Parameter(3, name="x0"),
            "u_lo": cp.Parameter((N, 2), name="u_lo"),
            "u_hi": cp.Parameter((N, 2), name="u_hi"),
            "rate_lo": cp.Parameter((N, 2), name="rate_lo"),
            "rate_hi": cp.Parameter((N, 2), name="rate_hi"),
            "corr_lo": cp.Parameter(N + 1, name="corr_lo"),
            "corr_hi": cp.Parameter(N + 1, name="corr_hi"),
            "e_ref": cp.Parameter(N + 1, name="e_ref"),
            "u_ref": cp.Parameter((N, 2), name="u_ref"),
            "u_prev": cp.Parameter(2, name="u_prev"),
            "time_weight": cp.Parameter(nonneg=True, name="time_weight"),
        }
        self.params = p
        self.x, self.u, self.sl, self.su = x, u, sl, su

        # the state reference is (e_ref, 0, 0); |z|^2_W is written as |z M|^2 with M = sqrtm(W)
        Mq, MqN, Mr, Mrd = (_sqrtm(W) for W in (Q, QN, R, R_rate))
        x_err = cp.hstack([cp.reshape(x[:, 0] - p["e_ref"], (N + 1, 1), order="C"), x[:, 1:]])
        cost = 0.5 * cp.sum_squares(x_err[1:N] @ Mq) + 0.5 * cp.sum_squares(x_err[N] @ MqN)
        cost += 0.5 * cp.sum_squares((u - p["u_ref"]) @ Mr)
        du = cp.vstack([cp.reshape(u[0] - p["u_prev"], (1, 2), order="C"), u[1:] - u[:-1]])
        cost += 0.5 * cp.sum_squares(du @ Mrd)
        cost += slack_weight * (cp.sum(sl) + cp.sum(su)) + 0.5 * slack_quad * (cp.sum_squares(sl) + cp.sum_squares(su))
        cost += p["time_weight"] * x[N, 2]

        cons = [x[0] == p["x0"]]
        for k in range(N):
            cons.append(x[k + 1] == p["A"][k] @ x[k] + p["B"][k] @ u[k] + p["f"][k])
        cons += [u >= p["u_lo"], u <= p["u_hi"]]
        cons += [u[0] >= p["rate_lo"][0], u[0] <= p["rate_hi"][0]]
        if N > 1:
            cons += [u[1:] - u[:-1] >= p["rate_lo"][1:], u[1:] - u[:-1] <= p["rate_hi"][1:]]
        for j, coef in enumerate((front, -rear)):
            corner = x[:, 0] + coef * x[:, 1] + sl[:, j] - su[:, j]
            cons += [corner >= p["corr_lo"], corner <= p["corr_hi"]]
        self.problem = cp.Problem(cp.Minimize(cost), cons)
        if not self.problem.is_dpp():  # pragma: no cover - guards the formulation
            raise SolverError("the cvxpy MPC formulation is not DPP")

    @classmethod
    def for_step(cls, sp: StepProblem) -> "CvxpyMPC":
        """Build the model with the weights and geometry of ``sp``."""
        return cls(sp.A.shape[0], sp.Q, sp.QN, sp.R, sp.R_rate, sp.slack_weight, sp.slack_quad, sp.front, sp.rear)

    def solve(self, sp: StepProblem, solver: str | None = None, **solver_kw: Any) -> dict[str, np.ndarray]:
        """Solve for the data of ``sp``.

        Returns
        -------
        dict with ``x`` (N+1, 3), ``u`` (N, 2), ``slack_lower``, ``slack_upper`` (N+1,), ``status``.
        """
        p = self.params
        clip = lambda a: np.clip(a, -_BIG, _BIG)  # noqa: E731
        for k in range(self.N):
            p["A"][k].value = sp.A[k]
            p["B"][k].value = sp.B[k]
        p["f"].value = sp.f
        p["x0"].value = sp.x0
        for name in ("u_lo", "u_hi", "rate_lo", "rate_hi", "corr_lo", "corr_hi"):
            p[name].value = clip(getattr(sp, name))
        p["e_ref"].value = sp.e_ref
        p["u_ref"].value = sp.u_ref
        p["u_prev"].value = sp.u_prev
        p["time_weight"].value = sp.time_weight
        try:
            self.problem.solve(solver=solver or cp.CLARABEL, **solver_kw)
        except cp.SolverError as exc:
            raise SolverError(f"cvxpy solve failed: {exc}") from exc
        return {
            "x": self.x.value,
            "u": self.u.value,
            "slack_lower": self.sl.value,
            "slack_upper": self.su.value,
            "status": self.problem.status,
        }
