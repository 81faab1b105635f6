"""The QP condensed onto the inputs and solved by DAQP's dual active-set method
(``MPCSettings.solver = "daqp"``; the condensing is :class:`~mpc_tracking.mpc.condensed.CondensedDAQP`)."""
from __future__ import annotations

import logging
import time

import numpy as np

from mpc_tracking.mpc.backends.base import BackendResult, QPBackend, QPStructure
from mpc_tracking.mpc.condensed import DAQP_EXIT, DAQP_OK, CondensedDAQP
from mpc_tracking.mpc.layout import QPData
from mpc_tracking.mpc.settings import MPCSettings, Status

__all__ = ["DAQPBackend", "STATUS_TABLE"]

logger = logging.getLogger("mpc_tracking.mpc.controller")  # messages read as the controller's

#: DAQP's exit flags onto the controller's statuses: optimal (also with soft corridor rows
#: violated: the slacks say by how much) is solved, every other flag is no solution
STATUS_TABLE: dict[int, Status | None] = {flag: (Status.SOLVED if flag in DAQP_OK else None) for flag in DAQP_EXIT}


class DAQPBackend(QPBackend):
    """Condensed DAQP, warm-started from the last active set (no friction-ellipse cuts).

    ``MPCSettings.max_iter`` is DAQP's iteration limit, ``max_solve_time`` its time limit, and
    ``warm_start = "none"`` starts every solve cold; the primal guess ``warm_x`` is not used.
    """

    name = "daqp"

    def __init__(self, structure: QPStructure, settings: MPCSettings) -> None:
        st = settings
        self.solver = CondensedDAQP(
            structure.layout, structure.P, structure.A_data, st.slack_weight, structure.slack_quad,
            iter_limit=st.max_iter, time_limit=st.max_solve_time, warm_start=st.warm_start != "none")

    def solve(self, data: QPData, A: np.ndarray, B: np.ndarray, *, warm_x: np.ndarray | None = None,
              step: int = 0) -> BackendResult:
        """Condense with ``A``, ``B`` and solve; the solve time includes the condensing."""
        solver = self.solver
        t0 = time.perf_counter()
        try:
            z = solver.solve(A, B, data)
        except Exception as exc:  # a solver fault must not end the run: the fallback path takes over
            logger.warning("MPC step %d: the solver raised %s: %s", step, type(exc).__name__, exc)
            return BackendResult(None, None, 0, time.perf_counter() - t0, f"solver exception ({type(exc).__name__})")
        stime = time.perf_counter() - t0
        status = STATUS_TABLE.get(solver.exitflag)
        if z is None or status is None or not np.isfinite(z).all():
            text = solver.status_text()
            logger.warning("MPC step %d: DAQP %s", step, text)
            return BackendResult(None, None, solver.iterations, stime, text)
        return BackendResult(z, status, solver.iterations, stime, status.value)
