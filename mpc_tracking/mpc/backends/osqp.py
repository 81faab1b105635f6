"""OSQP's ADMM on the sparse QP (``MPCSettings.solver = "osqp"``, the default): set up once on the
full sparsity pattern, equilibrated once (:mod:`.equilibration`), then ``update(q, l, u, Ax)`` and a warm-started
``solve()`` per step."""
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
from mpc_tracking.mpc.backends import equilibration
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
_SIGINT = int(_S.OSQP_SIGINT)  # (an int: compared with each solve's status code)
#: the status codes of STATUS_TABLE with a usable solution, as ints: (status, its text)
_USABLE = {int(code): (status, status.value) for code, status in STATUS_TABLE.items() if status is not None}
#: Ruiz equilibration passes (:func:`.equilibration.ruiz`, or OSQP's own ``scaling``; its default 10). OSQP
#: equilibrates again on every ``update`` of the matrix, paying every pass every step: replaying 1201 QPs of the
#: sedan's closed loop (dynamic model, N = 30) the update took 158 us at 10 passes, 79 us at 3, 68 us at 2, 57 us at 1,
#: with the same iterations from 2 passes on (1 pass: 46 instead of 35) and the same distance to a tight solve.
SCALING_PASSES = 3
#: Equilibrate once at set-up (on the representative QP, OSQP's own scaling off) where the QP's stopping rule includes
#: the duality gap (``QPStructure.check_duality_gap``: the kinematic model) and the mode is tracking; else OSQP
#: equilibrates on every update. The kinematic plant's closed loop on the bundled circuit (N = 30, 2400 QPs replayed,
#: ``benchmarks/study_osqp_replay.py``): update 49 -> 24 us, the same iterations and the same distance of the first
#: input to a tight solve (99th percentile 2.6e-5 m/s both). OSQP
#: measures its residuals in the problem it is given (``scaled_termination`` off), so with the residuals alone
#: deciding, equilibrating once moves the stopping point: the same QPs without the gap check stopped 2-3x further
#: from the tight solve (speed 0.024 vs 0.013 m/s; the sedan's dynamic QP, a_x 0.016 vs 0.004 m/s^2). Nor in the
#: time-optimal mode: the cost factor (1e-3, from the slack weight) loosens OSQP's absolute tolerance on the dual
#: residual in the cost's units, which there decides the speed plan (the regression case ``time_optimal``: distance
#: 55.482 m vs 55.503 m of a tight solve, 55.497 m with OSQP equilibrating); without the cost factor the tracking
#: QPs' solutions moved further from cvxpy's (8.8e-5 vs 5e-5 m).
FIXED_EQUILIBRATION = True
#: OSQP checks its stopping criteria every this many iterations (its ``check_termination``; its default 25) in the
#: QPs equilibrated once; the others keep 10 (a time-optimal instance of ``test_controller``'s random set reached the
#: iteration limit with OSQP's own equilibration and 5). A check costs about one iteration (7 us against 6 us per
#: iteration, kinematic QP, N = 30), so checking every iteration doubles the cost; checking every 10 wastes up to 9
#: iterations on the many QPs that converge in 1-15 (closed loops of the kinematic model on the bundled circuit at
#: N = 10..100 and on 4 generated circuits: 1 iteration on straights, 8-15 in corners). Modelled from the true
#: iteration counts of those 8 runs, 5 costs 0.93x the OSQP time of 10 on average (0.72-1.06x per run; 3: 0.97x,
#: 4: 0.94x, 6: 0.95x, 8: 0.97x); replayed (``benchmarks/study_osqp_replay.py``): the bundled circuit's QPs 20.8 -> 16.1
#: mean iterations, the first input's 99th-percentile distance to a tight solve 4.8e-6 -> 1.2e-5 m/s.
CHECK_INTERVAL = 5


def _sigint_ignored() -> bool:
    """True in a process that ignores Ctrl-C (a sweep worker): OSQP still stops a solve on it."""
    return signal.getsignal(signal.SIGINT) is signal.SIG_IGN


class OSQPBackend(QPBackend):
    """OSQP set up once on the cost ``P`` and the constraint matrix with every structural entry
    present (zeros of the representative linearization kept as 1e-12), with the settings'
    tolerances, limits and warm start; ``q, l, u`` and the matrix data come with each step.

    OSQP solves the QP in the model's scaled variables (``QPStructure.scale``) and, for a QP that also stops on
    the duality gap, equilibrated once at set-up (:data:`FIXED_EQUILIBRATION`, :attr:`equilibration`): the
    ``osqp.OSQP`` object (:attr:`solver`) holds that problem, and its ``solution.x`` is ``z / equilibration.D``;
    :meth:`solve` returns ``z`` in the QP's own variables. OSQP's tolerances apply to the problem it holds.

    OSQP's own sparse factorization (QDLDL) calls no BLAS (:attr:`dense_algebra` False).

    OSQP catches Ctrl-C during a solve and returns: that is handed back as ``KeyboardInterrupt``
    (the CLI ends with exit 130, keeping what was written), except in a process that ignores
    Ctrl-C (a sweep worker, which got the group's Ctrl-C meant for its parent), which solves again.
    """

    name = "osqp"
    dense_algebra = False

    def __init__(self, structure: QPStructure, settings: MPCSettings) -> None:
        lay, st = structure.layout, settings
        setup_data = structure.A_data.copy()
        dyn = np.concatenate([lay.dyn_pos_A, lay.dyn_pos_B])
        tiny = setup_data[dyn] == 0.0
        setup_data[dyn[tiny]] = 1e-12  # keep structural zeros through set-up
        n, m = lay.n, lay.m
        #: the variables' scale (n,) of the model (``structure.scale``), or None (ones)
        self.scale: np.ndarray | None = None
        var_scale = np.ones(n)
        if structure.scale is not None:
            scale = np.asarray(structure.scale, dtype=float)
            if scale.shape != (n,) or not (np.isfinite(scale).all() and (scale > 0).all()):
                raise SettingsError(f"QPStructure.scale: expected {n} finite numbers > 0, got shape {scale.shape}")
            if not (scale == 1.0).all():
                self.scale = var_scale = scale
        # the slack weights in the linear cost set the cost factor (the controller's q at set-up)
        q_rep = np.zeros(n) if structure.q is None else np.asarray(structure.q, dtype=float)
        if q_rep.shape != (n,) or not np.isfinite(q_rep).all():
            raise SettingsError(f"QPStructure.q: expected {n} finite numbers, got shape {q_rep.shape}")
        # fixed: equilibrated once, in the model's scaled variables z / scale (the same QP in other units); else
        # OSQP equilibrates on every update (see FIXED_EQUILIBRATION)
        self.fixed_equilibration = (FIXED_EQUILIBRATION and bool(structure.check_duality_gap)
                                    and st.mode != "time_optimal")
        passes = SCALING_PASSES if structure.scaling_passes is None else structure.scaling_passes
        if isinstance(passes, bool) or not (isinstance(passes, (int, np.integer)) and 0 <= passes <= 100):
            raise SettingsError(f"QPStructure.scaling_passes: expected None or an int 0..100, got {passes!r}")
        if self.fixed_equilibration:  # (passes: of this equilibration; OSQP's own keeps SCALING_PASSES per update)
            S = sparse.diags(var_scale)
            in_scaled = equilibration.Equilibration(var_scale, np.ones(m), 1.0).entry_factors(lay.A_indptr,
                                                                                              lay.A_indices)
            eq = equilibration.ruiz(S @ structure.P @ S, lay.A_matrix(setup_data * in_scaled), q_rep * var_scale,
                                    int(passes))
        else:
            eq = equilibration.Equilibration(np.ones(n), np.ones(m), 1.0)
        #: the equilibration the back end applies itself, with the model's scale: ``D`` (n,) on the QP's variables
        #: (``z = D z_osqp``), ``E`` (m,) on its rows, ``c`` on its cost (without the fixed one: the scale alone)
        self.equilibration = equilibration.Equilibration(var_scale * eq.D, eq.E, eq.c)
        col = self.equilibration.D
        self._cD = eq.c * col
        self._E = eq.E
        self._fA = self.equilibration.entry_factors(lay.A_indptr, lay.A_indices)
        Dc = sparse.diags(col)
        #: the cost matrix OSQP was set up with (``c D P D``, upper triangle)
        self.P = sparse.triu(eq.c * (Dc @ structure.P @ Dc), format="csc")
        A = lay.A_matrix(setup_data * self._fA)
        # the step's numbers in OSQP's problem, and the solution in the QP's variables (reused every step)
        self._bufs = (np.empty(n), np.empty(m), np.empty(m), np.empty(setup_data.size))
        self._x = np.empty(n)
        # the equilibration and the solution's check in one compiled call each (settings.compiled)
        self._kern: Any = kernels.load() if kernels.resolve(st.compiled) == "numba" else None
        tol = float(structure.tolerance_factor)
        if not (np.isfinite(tol) and tol > 0):
            raise SettingsError(f"QPStructure.tolerance_factor: expected a finite number > 0, got {tol!r}")
        #: OSQP's settings at set-up (what a replay of the same QPs needs)
        self.osqp_settings: dict[str, Any] = dict(
            verbose=False, eps_abs=tol * st.eps_abs, eps_rel=tol * st.eps_rel, max_iter=st.max_iter, polishing=False,
            warm_starting=st.warm_start != "none",
            check_termination=CHECK_INTERVAL if self.fixed_equilibration else 10,
            scaling=0 if self.fixed_equilibration else SCALING_PASSES,
            check_dualgap=bool(structure.check_duality_gap),
            time_limit=st.max_solve_time if np.isfinite(st.max_solve_time) else 1e10,  # OSQP: 1e10 = none
        )
        self.solver = osqp.OSQP()
        try:
            self.solver.setup(self.P, np.zeros(n), A, np.full(m, -INF), np.full(m, INF), **self.osqp_settings)
        except Exception as exc:  # pragma: no cover - OSQP set-up errors are bugs or bad weights
            raise SolverError(f"OSQP set-up failed: {exc}") from exc

    def equilibrated(self, data: QPData) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(q, l, u, A data)`` of one step in the problem OSQP solves (buffers, overwritten at the next call)."""
        bufs, kern = self._bufs, self._kern
        if kern is not None:
            try:
                kern.equilibrate_step(data.q, data.l, data.u, data.A_data, self._cD, self._E, self._fA, INF, *bufs)
                return bufs
            except TypeError:  # not C-contiguous float64 arrays (a caller's own QPData): numpy below
                pass
        equilibration.apply(data.q, data.l, data.u, data.A_data, self._cD, self._E, self._fA, INF, bufs)
        return bufs

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
        q, lo, hi, Ax = self.equilibrated(data)
        if warm_x is not None:
            warm_x = warm_x / self.equilibration.D
        try:
            if native is not None:
                code, x, iters, stime, text = _solve_native(native, q, lo, hi, Ax, warm_x, step)
            else:
                code, x, iters, stime, text = self._solve_wrapper(q, lo, hi, Ax, warm_x, step)
        except Exception as exc:  # a solver fault must not end the run: the fallback path takes over
            logger.warning("MPC step %d: the solver raised %s: %s", step, type(exc).__name__, exc)
            return BackendResult(None, None, 0, time.perf_counter() - t0, f"solver exception ({type(exc).__name__})")
        if code == _SIGINT and not _sigint_ignored():
            raise KeyboardInterrupt
        usable = _USABLE.get(code)
        z = None if usable is None or x is None else self._unscaled(x)
        if usable is None or z is None:
            logger.warning("MPC step %d: OSQP status %s", step, text)
            return BackendResult(None, None, iters, stime, str(text))
        return BackendResult(z, usable[0], iters, stime, usable[1])

    def _unscaled(self, x: np.ndarray) -> np.ndarray | None:
        """The solver's solution in the QP's variables (``D x``, a buffer reused every step), None when not finite."""
        kern, out, D = self._kern, self._x, self.equilibration.D
        if kern is not None and x.dtype == np.float64 and x.flags.c_contiguous and x.ndim == 1:
            return out if kern.unscale_finite(x, D, out) else None
        if not np.isfinite(x).all():
            return None
        return np.multiply(x, D, out=out)

    def _solve_wrapper(self, q: np.ndarray, lo: np.ndarray, hi: np.ndarray, Ax: np.ndarray,
                       warm_x: np.ndarray | None, step: int) -> tuple[int, np.ndarray | None, int, float, str]:
        """Update and solve through the ``osqp.OSQP`` wrapper's methods."""
        solver = self.solver
        solver.update(q=q, l=lo, u=hi, Ax=Ax)
        if warm_x is not None:
            solver.warm_start(x=warm_x)
        res = solver.solve(raise_error=False)
        for _ in range(_SIGINT_RETRIES):
            if res.info.status_val != _SIGINT or not _sigint_ignored():
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
    code = info.status_val
    if code == _SIGINT:
        for _ in range(_SIGINT_RETRIES):
            if code != _SIGINT or not _sigint_ignored():
                break
            logger.debug("MPC step %d: OSQP caught an ignored Ctrl-C; solving again", step)
            solver.solve()
            info = solver.info
            code = info.status_val
    return code, solver.solution.x, int(info.iter), float(info.run_time), info.status  # (the text: str already)
