"""The QP group: solver, tolerances, limits, warm start."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mpc_tracking.mpc.settings.fields import documented, setting
from mpc_tracking.mpc.settings.group import SettingsGroup

__all__ = ["QPSettings", "SOLVERS", "WARM_STARTS"]

WARM_STARTS = ("solver", "shift", "none")

#: the names ``MPCSettings.solver`` takes: the registered QP back ends, in registration order
#: (:func:`mpc_tracking.mpc.backends.register` adds to it). The built-in ones, which
#: :mod:`mpc_tracking.mpc.backends` registers under these names, are listed from the start, so that the
#: settings are checked without importing the solvers (``tests/mpc/test_backends.py`` holds the two equal).
SOLVERS: list[str] = ["osqp", "daqp"]


def _qp_backends() -> Sequence[str]:
    """The registered QP back ends (:data:`SOLVERS`)."""
    return tuple(SOLVERS)


@documented
@dataclass(frozen=True)
class QPSettings(SettingsGroup):
    """The QP solver: which one, its tolerances and limits, and how it is warm-started."""

    solver: str = setting(
        "osqp", "QP solver: a registered back end (:func:`mpc_tracking.mpc.backends.available`)", "-",
        choices=_qp_backends,
        notes="'osqp': OSQP's ADMM on the sparse QP (states, inputs and slacks), set up once and updated in "
              "place; cost grows linearly with the horizon, accuracy is ``eps_abs``/``eps_rel``. 'daqp': the QP "
              "condensed onto the inputs and solved exactly by DAQP's dual active-set method, warm-started from "
              "the last active set (:mod:`mpc_tracking.mpc.condensed`); its cost grows with the square of the "
              "horizon but does not depend on conditioning, so QPs with long chains of active rows (obstacles) "
              "that take ADMM thousands of iterations take it a few hundred. Same QP, same soft corridor; no "
              "friction-ellipse cuts.")
    warm_start: str = setting(
        "solver", "How each solve is started", "-", choices=WARM_STARTS,
        notes="'solver': the solver reuses its last primal/dual solution; 'shift': warm start from the previous "
              "plan shifted along s; 'none': cold start every step.")
    eps_abs: float = setting(1e-5, "Absolute tolerance (OSQP)", "-", gt=0)
    eps_rel: float = setting(1e-5, "Relative tolerance (OSQP)", "-", ge=0)
    max_iter: int = setting(4000, "Iteration limit per solve", "-", ge=1)
    max_solve_time: float = setting(
        math.inf, "Time limit per solve (inf: none)", "s", gt=0, allow_inf=True,
        notes="A solve that hits it counts as failed and takes the fallback path (the previous plan, then a "
              "safe stop), so a real-time loop never waits longer than this for a command. Its own overhead "
              "around the solve is not included.")
    compiled: str = setting(
        "auto", "Where the step's numbers are computed: compiled kernels or numpy", "-",
        choices=("auto", "numba", "python"),
        notes="'auto': the numba kernels (:mod:`mpc_tracking.mpc.kernels`) when numba is installed (the extra "
              "``mpc_tracking[fast]``), else numpy; 'numba': the kernels, an error without numba; 'python': "
              "numpy only. Both give the same numbers (to rounding, 1e-12).")
    blas_threads: int = setting(
        1, "BLAS threads while the controller computes a step (0: leave BLAS as it is)", "-", ge=0,
        notes="The step's dense algebra is small; spread over several threads it slows down by an order of "
              "magnitude when other processes keep the cores busy. The limit holds only during "
              ":meth:`SpatialMPC.solve <mpc_tracking.mpc.SpatialMPC.solve>` and is restored after it "
              "(:mod:`mpc_tracking.mpc.blas`); an outer, lower limit stays as it is. A step that runs no dense "
              "algebra (OSQP with the compiled kernels, the default) sets no limit: it would only cost time.")
