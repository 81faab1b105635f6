"""The MPC step's numbers in compiled code (numba) or numpy: choice, lazy loading, one entry per kernel.

``MPCSettings.compiled`` chooses where the numbers of a step are computed:

``"python"``
    numpy only (the reference);
``"numba"``
    the kernels of :mod:`mpc_tracking.mpc._kernels`, compiled with numba (the optional extra
    ``pip install "mpc_tracking[fast]"``); a :class:`~mpc_tracking.errors.SettingsError` when numba is not
    installed;
``"auto"`` (default)
    ``"numba"`` when numba can be imported, else ``"python"``.

Both paths give the same numbers to rounding (``tests/mpc/test_kernels.py``: 1e-12 on every entry of the QP and
on closed-loop runs of both prediction models). Compiled today: the kinematic model's Euler linearization and
discretization written into the QP in one call (:func:`kinematic_linearize_fill`), and the solution check
(:func:`constraint_excess`).

Loading is lazy: the first controller that uses the kernels imports numba (about 0.3 s) and compiles the kernels
(a few seconds, once per installation) or loads them from numba's on-disk cache (``cache=True``: ``__pycache__``
beside :mod:`._kernels`, else numba's user cache or ``NUMBA_CACHE_DIR``). The time is logged (level INFO) and kept
in :func:`compile_seconds`; :func:`warm_up` does it ahead (e.g. in a sweep's parent process, so that its workers
load from the cache).

>>> resolve("python")
'python'
"""
from __future__ import annotations

import importlib
import importlib.util
import logging
import time
from types import ModuleType

import numpy as np

from mpc_tracking.errors import SettingsError

__all__ = ["CHOICES", "numba_available", "resolve", "load", "warm_up", "compile_seconds",
           "kinematic_linearize_fill", "constraint_excess"]

logger = logging.getLogger(__name__)

#: the values of ``MPCSettings.compiled``
CHOICES = ("auto", "numba", "python")

_MODULE: ModuleType | None = None
_SECONDS: float | None = None


def numba_available() -> bool:
    """True when numba can be imported (checked without importing it)."""
    return importlib.util.find_spec("numba") is not None


def resolve(choice: str) -> str:
    """The path actually used, ``"numba"`` or ``"python"``, for ``MPCSettings.compiled = choice``.

    Raises
    ------
    SettingsError
        ``choice`` is not one of :data:`CHOICES`, or ``"numba"`` while numba is not installed.
    """
    if choice not in CHOICES:
        raise SettingsError(f"MPCSettings.compiled: expected one of {CHOICES}, got {choice!r}")
    if choice == "python":
        return "python"
    if numba_available():
        return "numba"
    if choice == "numba":
        raise SettingsError('MPCSettings.compiled: "numba" needs numba, which is not installed; '
                            'pip install "mpc_tracking[fast]" or use "auto"')
    logger.debug("MPCSettings.compiled = 'auto': numba is not installed, the step runs in numpy")
    return "python"


def load() -> ModuleType:
    """The compiled kernels (:mod:`._kernels`), compiled or loaded from numba's cache on the first call."""
    global _MODULE, _SECONDS
    if _MODULE is None:
        t0 = time.perf_counter()
        mod = importlib.import_module("mpc_tracking.mpc._kernels")
        _SECONDS = time.perf_counter() - t0
        _MODULE = mod
        logger.info("MPC step kernels ready in %.2f s (import numba, then compile or load from the cache)", _SECONDS)
    return _MODULE


def warm_up() -> bool:
    """Load the kernels now when numba is installed (compiling them into the on-disk cache the first
    time); True when they are loaded."""
    if not numba_available():
        return False
    load()
    return True


def compile_seconds() -> float | None:
    """Wall time [s] the first :func:`load` took (import numba + compile or cache load); None before."""
    return _SECONDS


def kinematic_linearize_fill(kern: ModuleType, x_op: np.ndarray, u_op: np.ndarray, kappa: np.ndarray,
                             s_grid: np.ndarray, wheelbase: float, x0: np.ndarray, data: np.ndarray,
                             pos_A: np.ndarray, pos_B: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                             out: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Euler linearization of the kinematic spatial bicycle, written into the QP in one compiled call.

    The numbers of :func:`~mpc_tracking.models.prediction.spatial_bicycle.linearize` (``method="euler"``) about
    ``x_op[:N]`` (N, 3), ``u_op`` (N, 2) with ``kappa[:N]`` [1/m] over the steps ``max(diff(s_grid), 0)`` [m],
    then :meth:`QPLayout.fill_dynamics <mpc_tracking.mpc.layout.QPLayout.fill_dynamics>` into ``data`` and the
    dynamics rows of ``lower``, ``upper`` (``x0`` (3,), then ``-f``). ``out = (A, B, f)`` (N, 3, 3), (N, 3, 2), (N, 3)
    receives the model. Every array must be C-contiguous float64 (positions int64).
    """
    A, B, f = out
    kern.kinematic_linearize_fill(x_op, u_op, kappa, s_grid, float(wheelbase), x0, data, pos_A, pos_B, lower, upper,
                                  A, B, f)


def constraint_excess(kern: ModuleType, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, z: np.ndarray,
                      lower: np.ndarray, upper: np.ndarray, scratch: np.ndarray) -> tuple[int, float, float]:
    """``(row, excess, scale)`` of ``lower <= A z <= upper`` for the CSC matrix ``(data, indices, indptr)``.

    ``row`` is the first row of largest ``max(lower - Az, Az - upper)`` (NaN rows first: then ``excess`` and ``scale``
    are NaN), ``scale = max(|Az|_inf, |z|_inf, 1)``: the numbers of ``A @ z``, ``np.maximum``, ``np.argmax``.
    ``scratch`` (m,) float64 holds ``A z`` afterwards.
    """
    i, e, scale = kern.constraint_excess(indptr, indices, data, z, lower, upper, scratch)
    return int(i), e, scale
