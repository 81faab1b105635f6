"""The QP back-end contract of :class:`~mpc_tracking.mpc.controller.SpatialMPC` and its registry.

A back end is set up once on the structure of the controller's QP (:class:`QPStructure`: the
sparse layout, the cost matrix and a representative constraint matrix) and the settings, then
solves one step's numbers (:class:`~mpc_tracking.mpc.layout.QPData` plus the linearized dynamics)
per call into a :class:`BackendResult`: ``z`` in the sparse layout (states, inputs, slacks) and a
:class:`~mpc_tracking.mpc.settings.Status`, or ``z = None`` and a text saying why. Each back end
maps its solver's own statuses onto :class:`Status` in one table (its ``STATUS_TABLE``). A solver
exception is a failure, not an error: the controller's fallback path takes over. The controller
checks a returned ``z`` against the QP's rows before it applies it
(:meth:`Safeguards.check_solution <mpc_tracking.mpc.safeguards.Safeguards.check_solution>`).

Back ends register by name (:func:`register`); ``MPCSettings.solver`` names the one the controller
uses (:func:`get`); :func:`available` lists them.

>>> from mpc_tracking.mpc import backends
>>> backends.available()
('osqp', 'daqp')
>>> backends.get("daqp").__name__
'DAQPBackend'
"""
from __future__ import annotations

import abc
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import sparse

from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc.layout import QPData, QPLayout
from mpc_tracking.mpc.settings import SOLVERS, MPCSettings, Status

__all__ = ["QPStructure", "BackendResult", "QPBackend", "FaultInjection", "register", "get", "available"]


@dataclass(frozen=True, eq=False)
class QPStructure:
    """What a back end is set up on (once, before the first step).

    Attributes
    ----------
    layout : QPLayout
        The sparse QP's layout: sizes, row blocks, positions of the dynamics entries.
    P : scipy.sparse matrix, shape (n, n)
        Upper triangle of the (constant) cost Hessian.
    A_data : ndarray, shape (nnz,)
        CSC data of a representative constraint matrix (one linearization; every structural entry
        of the dynamics present, some may be 0). The rows below the dynamics are the constant ones.
    slack_quad : float
        Quadratic weight of the corridor slacks in the cost (``slack_weight`` is the linear one).
    scale : ndarray, shape (n,), optional
        Typical magnitude of each variable (:meth:`PredictionModel.variable_scale
        <mpc_tracking.models.prediction.PredictionModel.variable_scale>`): a back end may solve for ``z / scale``
        (the same QP in other units; OSQP does); None: ones.
    check_duality_gap : bool
        Whether an iterative back end also waits for the duality gap before it stops (OSQP's ``check_dualgap``),
        besides the primal and dual residuals (:attr:`PredictionModel.CHECK_DUALITY_GAP
        <mpc_tracking.models.prediction.PredictionModel.CHECK_DUALITY_GAP>`).
    q : ndarray, shape (n,), optional
        A representative linear cost (the constant part the controller sets up: the slack weights); a back end may
        equilibrate the problem with it once (OSQP does, :mod:`~mpc_tracking.mpc.backends.equilibration`: its cost
        factor follows the largest entry). None: zeros (the cost factor then follows ``P`` alone, which for the
        controller's QP, whose slack weights dominate the cost, stops a tight solve about 100x further from the
        exact solution: 1.2e-6 instead of 1.7e-8 m/s at eps 1e-9, N = 20).
    tolerance_factor : float
        Factor (> 0) on the settings' tolerances ``eps_abs``, ``eps_rel`` for this QP (:attr:`PredictionModel.
        QP_TOLERANCE_FACTOR <mpc_tracking.models.prediction.PredictionModel.QP_TOLERANCE_FACTOR>`); default 1.
    scaling_passes : int, optional
        Ruiz passes of an equilibration a back end computes once at set-up (:attr:`PredictionModel.QP_SCALING_PASSES
        <mpc_tracking.models.prediction.PredictionModel.QP_SCALING_PASSES>`); None: the back end's default.
    """

    layout: QPLayout
    P: sparse.spmatrix
    A_data: np.ndarray
    slack_quad: float
    scale: np.ndarray | None = None
    check_duality_gap: bool = True
    q: np.ndarray | None = None
    tolerance_factor: float = 1.0
    scaling_passes: int | None = None


@dataclass(eq=False, slots=True)
class BackendResult:
    """The outcome of one solve.

    Attributes
    ----------
    z : ndarray, shape (n,), or None
        The solution in the sparse layout (states, inputs, slacks), None when the solve failed
        (no usable solution: infeasible, limit reached, non-finite values, solver exception).
        It may be a buffer the back end overwrites at its next solve: copy what you keep.
    status : Status or None
        :attr:`Status.SOLVED` or :attr:`Status.SOLVED_INACCURATE` with a solution; None without.
    iterations : int
        The solver's iterations.
    solve_time : float
        The solve's own time [s] (a condensing back end includes its condensing).
    message : str
        The solver's own status text (``"solved"``, ``"primal infeasible"``,
        ``"iteration limit reached (exit flag -4)"``, ``"solver exception (RuntimeError)"``, ...).
    """

    z: np.ndarray | None
    status: Status | None
    iterations: int
    solve_time: float
    message: str

    @property
    def success(self) -> bool:
        """True when the solve returned a solution."""
        return self.z is not None


class QPBackend(abc.ABC):
    """A QP solver behind the controller: set up once, then one :meth:`solve` per step.

    Parameters
    ----------
    structure : QPStructure
        The QP's layout, cost matrix and a representative constraint matrix.
    settings : MPCSettings
        ``max_iter``, ``max_solve_time``, ``warm_start``, ``eps_abs``/``eps_rel``, ``slack_weight``.

    Raises
    ------
    SettingsError
        When the back end cannot hold this QP or its package is missing.
    """

    #: the name it is registered under (``MPCSettings.solver``)
    name: ClassVar[str] = ""
    #: whether its solve runs dense BLAS/LAPACK (condensing, dense factorizations): the controller limits
    #: BLAS threads around a step only then (``MPCSettings.blas_threads``, :mod:`mpc_tracking.mpc.blas`)
    dense_algebra: ClassVar[bool] = True
    #: the solver's native object (``osqp.OSQP``, the condensing DAQP wrapper, ...): for inspection
    #: and for fault injection in tests; the controller never touches it
    solver: Any

    @abc.abstractmethod
    def __init__(self, structure: QPStructure, settings: MPCSettings) -> None:
        """Set the solver up on ``structure``."""

    @abc.abstractmethod
    def solve(self, data: QPData, A: np.ndarray, B: np.ndarray, *, warm_x: np.ndarray | None = None,
              step: int = 0) -> BackendResult:
        """Solve one step's QP.

        Parameters
        ----------
        data : QPData
            The step's numbers in the sparse layout (``q, l, u`` and the constraint matrix's data).
        A, B : ndarray, shapes (N, nx, nx) and (N, nx, nu)
            The step's linearized dynamics (the same numbers as in ``data``; condensing back ends
            eliminate the states with them).
        warm_x : ndarray, shape (n,), optional
            A primal guess in the sparse layout (``MPCSettings.warm_start = "shift"``); a back end
            that cannot use one ignores it.
        step : int
            The controller's step number (for log messages).
        """


_REGISTRY: dict[str, type[QPBackend]] = {}


def register(name: str, cls: type[QPBackend]) -> None:
    """Make ``cls`` available as ``MPCSettings(solver=name)`` (replaces an earlier one of that name)."""
    if not (isinstance(name, str) and name):
        raise SettingsError(f"name: expected a non-empty string, got {name!r}")
    if not (isinstance(cls, type) and issubclass(cls, QPBackend)):
        raise SettingsError(f"cls: expected a QPBackend subclass, got {cls!r}")
    _REGISTRY[name] = cls
    if name not in SOLVERS:
        SOLVERS.append(name)  # the names the settings accept


def get(name: str) -> type[QPBackend]:
    """The back-end class registered as ``name``; an unknown name is a SettingsError listing the others."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise SettingsError(f"MPCSettings.solver: expected one of {available()}, got {name!r}") from None


def available() -> tuple[str, ...]:
    """Names of the registered back ends, in registration order."""
    return tuple(_REGISTRY)


def _calls(spec: Collection[int] | Callable[[int], bool]) -> Callable[[int], bool]:
    if callable(spec):
        return spec
    chosen = frozenset(int(k) for k in spec)
    return chosen.__contains__


class FaultInjection(QPBackend):
    """A back end that fails the solves you choose and passes the others to a real one (tests,
    fault-injection benchmarks): ``mpc.backend = FaultInjection(mpc.backend, fail=lambda k: k >= 20)``.

    Parameters
    ----------
    inner : QPBackend
        The back end that solves the other calls.
    fail : collection of int or callable, optional
        Solve calls (counted from 0, over the back end's life) that return no solution.
    corrupt : collection of int or callable, optional
        Solve calls that return a "solved" status with every entry of ``z`` set to
        ``corrupt_value`` (the controller's solution check must reject it).
    corrupt_value : float
        What a corrupted solution holds (``nan``, or finite garbage such as ``1e6``).

    Attributes
    ----------
    calls : int
        Solve calls so far.
    """

    name = "fault_injection"

    def __init__(self, inner: QPBackend, fail: Collection[int] | Callable[[int], bool] = (),
                 corrupt: Collection[int] | Callable[[int], bool] = (), corrupt_value: float = float("nan")) -> None:
        self.inner = inner
        self.solver = inner.solver
        self._fail, self._corrupt = _calls(fail), _calls(corrupt)
        self._corrupt_value = float(corrupt_value)
        self.calls = 0

    def solve(self, data: QPData, A: np.ndarray, B: np.ndarray, *, warm_x: np.ndarray | None = None,
              step: int = 0) -> BackendResult:
        """The inner back end's result, or the injected fault of this call."""
        k, self.calls = self.calls, self.calls + 1
        if self._fail(k):
            return BackendResult(None, None, 0, 0.0, "injected failure")
        res = self.inner.solve(data, A, B, warm_x=warm_x, step=step)
        if self._corrupt(k):
            z = np.full(data.q.shape, self._corrupt_value)
            return BackendResult(z, Status.SOLVED, res.iterations, res.solve_time, "solved")
        return res
