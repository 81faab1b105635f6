"""BLAS threads around the controller's step: small dense algebra runs on one thread.

The step's dense products (the condensed QP of the ``daqp`` back end: ``H = T' P T``, its
Cholesky factor, the obstacle rows) are a few hundred rows at most. OpenBLAS spreads products of
that size over all cores; on a machine where other processes keep those cores busy each product
then waits for a descheduled thread, and the step slows down by an order of magnitude (the
obstacle demo's median DAQP solve, two busy processes on two cores: 7.1 ms with two BLAS
threads, 0.49 ms with one: ``benchmarks/bench_obstacles.py --blas``). One thread is never slower at these
sizes, so :class:`~mpc_tracking.mpc.SpatialMPC` limits BLAS to ``MPCSettings.blas_threads``
(default 1) while it computes a step and restores the previous count afterwards: the user's
own algebra outside the step keeps every thread. A step that runs no dense algebra -- OSQP
(sparse, its own factorization) with the compiled kernels, the default -- sets no limit: the
five calls into the BLAS libraries would cost 5-8 us of a 75-140 us step for nothing
(``QPBackend.dense_algebra``).

The limit is set up once per controller (:class:`BlasLimit`: the BLAS libraries loaded at that
time, found by ``threadpoolctl``) and costs a few microseconds per step; inside a scope that
already limits BLAS to at most that many threads (an outer ``threadpoolctl.threadpool_limits``,
``OPENBLAS_NUM_THREADS=1``) it changes nothing. ``blas_threads = 0`` leaves BLAS alone. The count
is per process: a thread that runs BLAS while another is inside a step sees the limit too.
Without ``threadpoolctl`` (a dependency, so only in a broken install) there is no limit.
"""
from __future__ import annotations

import logging
import sys
from types import TracebackType
from typing import Any

__all__ = ["BlasLimit", "blas_libraries"]

logger = logging.getLogger(__name__)

#: the last search: ``len(sys.modules)`` then, and the libraries found (a BLAS library is loaded by
#: an extension module, so while no module has been imported since, the list is still right)
_found: tuple[int, list[Any]] = (-1, [])


def blas_libraries(refresh: bool = False) -> list[Any]:
    """``threadpoolctl`` controllers of the BLAS libraries loaded in this process (empty without it).

    Each has ``get_num_threads()``, ``set_num_threads(n)`` and ``prefix`` (the library's name).
    The search (a few milliseconds) is repeated only when modules have been imported since the
    last one, or with ``refresh=True``.
    """
    global _found
    if not refresh and _found[0] == len(sys.modules):
        return list(_found[1])
    try:
        from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - threadpoolctl is a dependency
        logger.debug("threadpoolctl is not installed: BLAS threads are not limited")
        return []
    libraries = list(ThreadpoolController().select(user_api="blas").lib_controllers)
    _found = (len(sys.modules), libraries)
    return list(libraries)


def _count_getter(lib: Any) -> Any:
    """``lib.get_num_threads`` as one callable looked up once: OpenBLAS's own C function
    ``openblas_get_num_threads`` when threadpoolctl reads exactly that (its pthreads build: what
    ``get_num_threads`` calls after a symbol lookup by name on every call), else the method."""
    if getattr(lib, "internal_api", None) == "openblas" and getattr(lib, "threading_layer", None) != "openmp":
        lookup = getattr(lib, "_get_symbol", None)
        func = lookup("openblas_get_num_threads") if callable(lookup) else None
        if func is not None:
            return func
    return lib.get_num_threads


class BlasLimit:
    """A re-entrant context that limits every loaded BLAS library to ``threads`` threads.

    Parameters
    ----------
    threads : int
        Threads BLAS may use inside the context (>= 1); 0: no limit (the context does nothing).

    Notes
    -----
    The libraries are found when the object is made (about a millisecond): make it after the
    code that loads them (NumPy's, SciPy's LAPACK) and keep it. Entering reads each library's
    count and lowers the ones above ``threads``; leaving restores exactly those.

    Examples
    --------
    >>> from mpc_tracking.mpc.blas import BlasLimit
    >>> with BlasLimit(1) as limit:
    ...     all(lib.get_num_threads() == 1 for lib in limit.libraries)
    True
    """

    __slots__ = ("_getters", "_saved", "libraries", "threads")

    def __init__(self, threads: int) -> None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
            raise ValueError(f"threads: expected an int >= 0 (0: no limit), got {threads!r}")
        self.threads = threads
        self.libraries: list[Any] = blas_libraries() if threads > 0 else []
        # each library's thread-count getter, looked up once (read on every entry)
        self._getters = [(lib, _count_getter(lib)) for lib in self.libraries]
        self._saved: list[list[tuple[Any, int]]] = []

    def __enter__(self) -> BlasLimit:
        changed: list[tuple[Any, int]] = []
        n = self.threads
        for lib, get in self._getters:
            before = get()
            if before is not None and before > n:
                lib.set_num_threads(n)
                changed.append((lib, before))
        self._saved.append(changed)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for lib, before in reversed(self._saved.pop()):
            lib.set_num_threads(before)

    def __reduce__(self) -> tuple[type[BlasLimit], tuple[int]]:
        """Pickled and copied by its count: the copy finds the libraries of the process it lands in."""
        return type(self), (self.threads,)

    def __repr__(self) -> str:
        names = ", ".join(str(getattr(lib, "prefix", "?")) for lib in self.libraries) or "none"
        return f"BlasLimit(threads={self.threads}, libraries=[{names}])"
