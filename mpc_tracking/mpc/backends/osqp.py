"""OSQP's ADMM on the sparse QP (``MPCSettings.solver = "osqp"``, the default): set up once on the
full sparsity pattern, then ``update(q, l, u, Ax)`` and a warm-started ``solve()`` per step."""
from __future__ import annotations

import logging
import signal
import time
from typing import Any

import numpy as np
import osqp
from scipy import sparse

from mpc_tracking.errors import SettingsError, SolverError
from mpc_tracking.mpc import kernels
from mpc_tracking.mpc.backends.base import BackendResult, QPBackend, QPStructure
from mpc_tracking.mpc.layout import QPData
from mpc_tracking.mpc.qp import INF
from mpc_tracking.mpc.settings import MPCSettings, Status

__all__ = ["OSQPBackend", "STATUS_TABLE", "native_solver"]

logger = logging.getLogger("mpc_tracking.mpc.controller")  # messages read as the controller's

_S = osqp.SolverStatus
#: OSQP's statuses onto the controller's: a usable solution, or None (no solution); unlisted: None
STATUS_TABLE: dict[int, Status | None] = {
    _S.OSQP_SOLVED: Status.SOLVED,
    _S.OSQP_SOLVED_INACCURATE: Status.SOLVED_INACCURATE,
    _S.OSQP_PRIMAL_INFEASIBLE: None,
    _S.OSQP_PRIMAL_INFEASIBLE_INACCURATE: None,
    _S.OSQP_DUAL_INFEASIBLE: None,
    _S.OSQP_DUAL_INFEASIBLE_INACCURATE: None,
    _S.OSQP_MAX_ITER_REACHED: None,
    _S.OSQP_TIME_LIMIT_REACHED: None,
    _S.OSQP_NON_CVX: None,
    _S.OSQP_SIGINT: None,  # handed back as KeyboardInterrupt (see OSQPBackend.solve)
    _S.OSQP_UNSOLVED: None,
}
_SIGINT_RETRIES = 3  # re-solves after OSQP caught a Ctrl-C that this process ignores
#: OSQP's Ruiz equilibration passes (its ``scaling``; OSQP's default 10). OSQP equilibrates again on every
#: ``update`` of the matrix, so each pass costs every step. Replaying 1201 QPs of the sedan's closed loop (dynamic
#: model, N = 30): the update took 158 us at 10 passes, 79 us at 3, 68 us at 2, 57 us at 1, with the same
#: iterations from 2 passes on (1 pass: 46 instead of 35) and the same distance to a tight solve; the kinematic
#: model's update 101 -> 47 us. In the sedan's closed loop (bundled circuit and 3 generated ones, 60 s each) the
#: mean iterations were 34.8 / 17.5 / 19.6 / 23.6 at 10 passes, 32.1 / 17.3 / 19.7 / 23.4 at 3 and
#: 42.8 / 16.4 / 19.7 / 23.1 at 2 (the bundled circuit's few slow steps moved): 3 keeps every track's count.
SCALING_PASSES = 3


def _sigint_ignored() -> bool:
    """True in a process that ignores Ctrl-C (a sweep worker): OSQP still stops a solve on it."""
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


class OSQPBackend(QPBackend):
    """OSQP set up once on the cost ``P`` and the constraint matrix with every structural entry
    present (zeros of the representative linearization kept as 1e-12), with the settings'
    tolerances, limits and warm start; ``q, l, u`` and the matrix data come with each step.

    OSQP catches Ctrl-C during a solve and returns: that is handed back as ``KeyboardInterrupt``
    (the CLI ends with exit 130, keeping what was written), except in a process that ignores
    Ctrl-C (a sweep worker, which got the group's Ctrl-C meant for its parent), which solves again.
    """

    name = "osqp"

    def __init__(self, structure: QPStructure, settings: MPCSettings) -> None:
        lay, st = structure.layout, settings
        setup_data = structure.A_data.copy()
        dyn = np.concatenate([lay.dyn_pos_A, lay.dyn_pos_B])
        tiny = setup_data[dyn] == 0.0
        setup_data[dyn[tiny]] = 1e-12  # keep structural zeros through set-up
        n, m = lay.n, lay.m
        #: the variables' scale (n,) OSQP solves in (``z = scale * z_osqp``), or None (ones)
        self.scale: np.ndarray | None = None
        #: the cost matrix OSQP was set up with (``diag(scale) P diag(scale)``)
        self.P = structure.P
        if structure.scale is not None:
            scale = np.asarray(structure.scale, dtype=float)
            if scale.shape != (n,) or not (np.isfinite(scale).all() and (scale > 0).all()):
                raise SettingsError(f"QPStructure.scale: expected {n} finite numbers > 0, got shape {scale.shape}")
            if not (scale == 1.0).all():
                self.scale = scale
                D = sparse.diags(scale)
                self.P = sparse.triu(D @ structure.P @ D, format="csc")
                self._a_scale = scale[np.repeat(np.arange(n), np.diff(lay.A_indptr))]  # per CSC entry
                setup_data *= self._a_scale
                self._q_buf, self._A_buf = np.empty(n), np.empty(setup_data.size)
        A = lay.A_matrix(setup_data)
        # the solution's finiteness check in one compiled call (settings.compiled)
        self._all_finite = kernels.load().all_finite if kernels.resolve(st.compiled) == "numba" else None
        self._none = np.empty(0)
        self.solver = osqp.OSQP()
        try:
            self.solver.setup(
                self.P, np.zeros(n), A, np.full(m, -INF), np.full(m, INF),
                verbose=False, eps_abs=st.eps_abs, eps_rel=st.eps_rel, max_iter=st.max_iter, polishing=False,
                warm_starting=st.warm_start != "none", check_termination=10, scaling=SCALING_PASSES,
                check_dualgap=bool(structure.check_duality_gap),
                time_limit=st.max_solve_time if np.isfinite(st.max_solve_time) else 1e10,  # OSQP: 1e10 = none
            )
        except Exception as exc:  # pragma: no cover - OSQP set-up errors are bugs or bad weights
            raise SolverError(f"OSQP set-up failed: {exc}") from exc

    def solve(self, data: QPData, A: np.ndarray, B: np.ndarray, *, warm_x: np.ndarray | None = None,
              step: int = 0) -> BackendResult:
        """Update the solver with the step's numbers and solve (``A``, ``B`` are in ``data`` already).

        The solver's own extension object is called directly (:func:`native_solver`): the QP data
        are float64 arrays already clipped to OSQP's infinity, so the wrapper's per-call copies,
        clipping and result namespaces are skipped. A wrapper whose methods were replaced (tests,
        recording benchmarks) is called through those methods instead.
        """
        t0 = time.perf_counter()
        native = native_solver(self.solver)
        q, Ax, scale = data.q, data.A_data, self.scale
        if scale is not None:  # the same QP in the scaled variables z / scale
            q = np.multiply(q, scale, out=self._q_buf)
            Ax = np.multiply(Ax, self._a_scale, out=self._A_buf)
            if warm_x is not None:
                warm_x = warm_x / scale
        try:
            if native is not None:
                code, x, iters, stime, text = _solve_native(native, q, data.l, data.u, Ax, warm_x, step)
            else:
                code, x, iters, stime, text = self._solve_wrapper(q, data.l, data.u, Ax, warm_x, step)
        except Exception as exc:  # a solver fault must not end the run: the fallback path takes over
            logger.warning("MPC step %d: the solver raised %s: %s", step, type(exc).__name__, exc)
            return BackendResult(None, None, 0, time.perf_counter() - t0, f"solver exception ({type(exc).__name__})")
        if code == _S.OSQP_SIGINT and not _sigint_ignored():
            raise KeyboardInterrupt
        status = STATUS_TABLE.get(code)
        if status is None or x is None or not self._finite(x):
            logger.warning("MPC step %d: OSQP status %s", step, text)
            return BackendResult(None, None, iters, stime, str(text))
        if scale is not None:
            x = x * scale
        return BackendResult(x, status, iters, stime, status.value)

    def _finite(self, x: np.ndarray) -> bool:
        """``np.isfinite(x).all()`` (compiled for a C-contiguous float64 ``x`` when the kernels are loaded)."""
        fin = self._all_finite
        if fin is not None and x.dtype == np.float64 and x.flags.c_contiguous and x.ndim == 1:
            return bool(fin(x, self._none))
        return bool(np.isfinite(x).all())

    def _solve_wrapper(self, q: np.ndarray, lo: np.ndarray, hi: np.ndarray, Ax: np.ndarray,
                       warm_x: np.ndarray | None, step: int) -> tuple[int, np.ndarray | None, int, float, str]:
        """Update and solve through the ``osqp.OSQP`` wrapper's methods."""
        solver = self.solver
        solver.update(q=q, l=lo, u=hi, Ax=Ax)
        if warm_x is not None:
            solver.warm_start(x=warm_x)
        res = solver.solve(raise_error=False)
        for _ in range(_SIGINT_RETRIES):
            if res.info.status_val != _S.OSQP_SIGINT or not _sigint_ignored():
                break
            logger.debug("MPC step %d: OSQP caught an ignored Ctrl-C; solving again", step)
            res = solver.solve(raise_error=False)
        info = res.info
        return info.status_val, res.x, int(info.iter), float(info.run_time), str(info.status)


#: wrapper methods whose replacement (on an instance or on the class) sends the solve through the wrapper
_UPDATE, _SOLVE, _WARM_START = osqp.OSQP.update, osqp.OSQP.solve, osqp.OSQP.warm_start


def native_solver(solver: object) -> object | None:
    """The extension object (``osqp.OSQP()._solver``) that a plain, set-up ``osqp.OSQP`` wraps, else None.

    None for anything else: another object, a subclass, or ``update``, ``solve`` or ``warm_start``
    replaced on the instance or the class (those calls must go through the replacement).
    """
    if type(solver) is not osqp.OSQP:
        return None
    own = solver.__dict__
    if "update" in own or "solve" in own or "warm_start" in own:
        return None
    cls: Any = osqp.OSQP
    if cls.update is not _UPDATE or cls.solve is not _SOLVE or cls.warm_start is not _WARM_START:
        return None  # the class's methods were replaced (a test counting the calls)
    return getattr(solver, "_solver", None)


def _solve_native(native: object, q: np.ndarray, lo: np.ndarray, hi: np.ndarray, Ax: np.ndarray,
                  warm_x: np.ndarray | None, step: int) -> tuple[int, np.ndarray | None, int, float, str]:
    """Update (``q``, ``l``, ``u``, the CSC data of A) and solve on OSQP's extension object: no copies, one call
    per operation.

    Returns ``(status code, x or None, iterations, OSQP's run time [s], status text)``.
    """
    solver: Any = native
    solver.update_data_vec(q, lo, hi)  # (positional: pybind11 skips matching keywords)
    solver.update_data_mat(None, None, Ax, None)  # P_x, P_i, A_x, A_i
    if warm_x is not None:
        solver.warm_start(warm_x, None)
    solver.solve()
    info = solver.info
    for _ in range(_SIGINT_RETRIES):
        if info.status_val != _S.OSQP_SIGINT or not _sigint_ignored():
            break
        logger.debug("MPC step %d: OSQP caught an ignored Ctrl-C; solving again", step)
        solver.solve()
        info = solver.info
    return info.status_val, solver.solution.x, int(info.iter), float(info.run_time), str(info.status)
