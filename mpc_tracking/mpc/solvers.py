"""The QP back ends behind :class:`~mpc_tracking.mpc.controller.SpatialMPC`: OSQP and condensed DAQP.

Both take one step's QP in the sparse layout (:class:`~mpc_tracking.mpc.layout.QPData`) and return
``(z or None, status, iterations, solve time [s])``: ``z`` in the sparse layout and a
:class:`~mpc_tracking.mpc.settings.Status` on success, ``None`` and a text saying why on failure
(logged as a warning with the step number). A solver exception is a failure, not an error: the
controller's fallback path takes over. The controller checks a returned ``z`` against the QP's
rows before it applies it (:mod:`mpc_tracking.mpc.safeguards`).
"""
from __future__ import annotations

import logging
import signal
import time
from typing import Any

import numpy as np
import osqp
from scipy import sparse

from mpc_tracking.errors import SolverError
from mpc_tracking.mpc.condensed import CondensedDAQP
from mpc_tracking.mpc.layout import QPData
from mpc_tracking.mpc.qp import INF
from mpc_tracking.mpc.settings import MPCSettings, Status

__all__ = ["setup_osqp", "solve_osqp", "solve_condensed", "SolveResult"]

logger = logging.getLogger(__name__)

#: ``(z or None, Status or failure text, iterations, solve time [s])``
SolveResult = tuple[np.ndarray | None, Any, int, float]
_SIGINT_RETRIES = 3  # re-solves after OSQP caught a Ctrl-C that this process ignores
_OSQP_OK = {osqp.SolverStatus.OSQP_SOLVED: Status.SOLVED,
            osqp.SolverStatus.OSQP_SOLVED_INACCURATE: Status.SOLVED_INACCURATE}


def _sigint_ignored() -> bool:
    """True in a process that ignores Ctrl-C (a sweep worker): OSQP still stops a solve on it."""
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def setup_osqp(P: sparse.spmatrix, A: sparse.spmatrix, st: MPCSettings) -> Any:
    """An OSQP solver set up once on the cost ``P`` and the constraint matrix ``A`` (all structural
    entries present) with the settings' tolerances, limits and warm start; ``l, u, q`` come later."""
    n, m = A.shape[1], A.shape[0]
    solver = osqp.OSQP()
    try:
        solver.setup(
            P, np.zeros(n), A, np.full(m, -INF), np.full(m, INF),
            verbose=False, eps_abs=st.eps_abs, eps_rel=st.eps_rel, max_iter=st.max_iter, polishing=False,
            warm_starting=st.warm_start != "none", check_termination=10,
            time_limit=st.max_solve_time if np.isfinite(st.max_solve_time) else 1e10,  # OSQP: 1e10 = none
        )
    except Exception as exc:  # pragma: no cover - OSQP set-up errors are bugs or bad weights
        raise SolverError(f"OSQP set-up failed: {exc}") from exc
    return solver


def solve_osqp(solver: Any, d: QPData, step: int, warm_x: np.ndarray | None = None) -> SolveResult:
    """Update ``solver`` with the step's numbers and solve (``warm_x``: a primal warm start).

    OSQP catches Ctrl-C during a solve and returns: that is handed back as ``KeyboardInterrupt``
    (the CLI ends with exit 130, keeping what was written), except in a process that ignores
    Ctrl-C (a sweep worker, which got the group's Ctrl-C meant for its parent), which solves again.
    """
    t0 = time.perf_counter()
    try:
        solver.update(q=d.q, l=d.l, u=d.u, Ax=d.A_data)
        if warm_x is not None:
            solver.warm_start(x=warm_x)
        res = solver.solve(raise_error=False)
        for _ in range(_SIGINT_RETRIES):
            if res.info.status_val != osqp.SolverStatus.OSQP_SIGINT or not _sigint_ignored():
                break
            logger.debug("MPC step %d: OSQP caught an ignored Ctrl-C; solving again", step)
            res = solver.solve(raise_error=False)
        info = res.info
        status, x, iters, stime = info.status_val, res.x, int(info.iter), float(info.run_time)
    except Exception as exc:  # a solver fault must not end the run: the fallback path takes over
        logger.warning("MPC step %d: the solver raised %s: %s", step, type(exc).__name__, exc)
        return None, f"solver exception ({type(exc).__name__})", 0, time.perf_counter() - t0
    if status == osqp.SolverStatus.OSQP_SIGINT and not _sigint_ignored():
        raise KeyboardInterrupt
    if status not in _OSQP_OK or x is None or not np.isfinite(x).all():
        logger.warning("MPC step %d: OSQP status %s", step, info.status)
        return None, info.status, iters, stime
    return x, _OSQP_OK[status], iters, stime


def solve_condensed(solver: CondensedDAQP, A: np.ndarray, B: np.ndarray, d: QPData, step: int) -> SolveResult:
    """The step's QP condensed with the dynamics ``A`` (N, nx, nx), ``B`` (N, nx, nu) and solved by
    DAQP; the solve time includes the condensing."""
    t0 = time.perf_counter()
    try:
        z = solver.solve(A, B, d)
    except Exception as exc:  # a solver fault must not end the run: the fallback path takes over
        logger.warning("MPC step %d: the solver raised %s: %s", step, type(exc).__name__, exc)
        return None, f"solver exception ({type(exc).__name__})", 0, time.perf_counter() - t0
    stime = time.perf_counter() - t0
    if z is None or not np.isfinite(z).all():
        text = solver.status_text()
        logger.warning("MPC step %d: DAQP %s", step, text)
        return None, text, solver.iterations, stime
    return z, Status.SOLVED, solver.iterations, stime
