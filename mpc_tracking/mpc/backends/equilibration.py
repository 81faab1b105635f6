"""Ruiz equilibration of a QP, computed once: the scaling a first-order solver (OSQP) otherwise redoes every step.

OSQP equilibrates the KKT matrix ``[[P, A'], [A, 0]]`` (Ruiz: each column and row divided by the square root of
its largest entry, a few passes) at set-up and again at every update of the matrix, so its passes are paid on
every step (half of the dynamic model's matrix update at N = 30: 84 -> 43 us without them). :func:`equilibrate`
computes the equilibration once, on a representative QP. The OSQP back end keeps its *row* scales (each row of
``A`` and its bounds multiplied by ``row_scale``), keeps the model's own variable scale for the columns and tells
OSQP not to scale (``scaling = 0``); used for the prediction models that ask for it
(:attr:`PredictionModel.EQUILIBRATE_ONCE <mpc_tracking.models.prediction.PredictionModel.EQUILIBRATE_ONCE>`).

Why not the columns too: without its own scaling OSQP judges its residuals in the units it is given, so the
dual residual of a variable shrunk by a column factor < 1 counts as small early. Replaying a lap of the dynamic
model's QPs (oval, N = 30; ``benchmarks/bench_qp_scaling.py --replay``) against a tight solve, the first
acceleration's worst error was 1.9e-2 m/s^2 with OSQP's 3 passes per update, 3.1e-2 with rows and columns kept
from the first QP and 1.1e-2 with the rows alone (the rows' factors are 1-3: a primal residual counts larger,
never smaller), at the same iterations (mean 34.6, 35.3, 36.3). There is no cost scaling here either.

>>> import numpy as np
>>> from scipy import sparse
>>> P = sparse.csc_matrix(np.diag([4.0, 1e-6]))
>>> A = sparse.csc_matrix(np.array([[100.0, 0.0], [0.0, 1.0]]))
>>> col, row = equilibrate(P, A, passes=30)
>>> Ps, As = np.outer(col, col) * P.toarray(), np.outer(row, col) * A.toarray()
>>> [round(float(v), 3) for v in np.maximum(abs(Ps).max(axis=0), abs(As).max(axis=0))]   # column norms of the KKT
[1.0, 1.0]
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from mpc_tracking.errors import SettingsError

__all__ = ["equilibrate", "EQUILIBRATION_PASSES", "SCALE_RANGE"]

#: Ruiz passes of the once-computed equilibration (OSQP's default ``scaling``; it is paid once, at set-up).
#: Replaying a lap of the dynamic model's QPs 3, 10 and 25 passes took the same iterations.
EQUILIBRATION_PASSES = 10
#: column/row norms outside this range are clipped to it, below its lower end taken as 1 (OSQP's
#: ``MIN_SCALING``, ``MAX_SCALING``)
SCALE_RANGE = (1e-4, 1e4)


def _limit(norms: np.ndarray) -> np.ndarray:
    lo, hi = SCALE_RANGE
    return np.minimum(np.where(norms < lo, 1.0, norms), hi)


def equilibrate(P: sparse.spmatrix, A: sparse.spmatrix, scale: np.ndarray | None = None,
                passes: int = EQUILIBRATION_PASSES, powers_of_two: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Column and row scales that equilibrate ``[[P, A'], [A, 0]]`` (Ruiz, ``passes`` passes).

    Parameters
    ----------
    P : sparse matrix, shape (n, n)
        Cost Hessian, its upper triangle (as OSQP takes it) or the whole symmetric matrix.
    A : sparse matrix, shape (m, n)
        Constraint matrix (a representative one: its entries set the scales).
    scale : ndarray, shape (n,), optional
        A variable scale already applied (the model's :meth:`variable_scale
        <mpc_tracking.models.prediction.PredictionModel.variable_scale>`): the equilibration is computed in the
        variables ``z / scale`` and returned multiplied by it.
    passes : int
        Ruiz passes (>= 1).
    powers_of_two : bool
        Round the equilibration's factors to the nearest power of two: scaling by them is exact in floating point
        (the scaled QP is the same numbers in other units, no rounding), and matrices that differ by rounding get
        the same factors (the compiled and the numpy step then give the same solver path).

    Returns
    -------
    col_scale : ndarray, shape (n,)
        The solver works on ``z / col_scale`` (``scale`` times the equilibration's column factors).
    row_scale : ndarray, shape (m,)
        Row ``i`` of ``A`` and its bounds ``l_i, u_i`` are multiplied by ``row_scale[i]``.
    """
    if not (isinstance(passes, (int, np.integer)) and passes >= 1):
        raise SettingsError(f"equilibrate: passes: expected an int >= 1, got {passes!r}")
    m, n = A.shape
    if P.shape != (n, n):
        raise SettingsError(f"equilibrate: P: expected shape ({n}, {n}) to match A {A.shape}, got {P.shape}")
    P = sparse.csc_matrix(P)
    P = abs(sparse.triu(P) + sparse.triu(P, 1).T)  # the whole symmetric matrix from its upper triangle
    A = abs(sparse.csc_matrix(A))
    col = np.ones(n) if scale is None else np.asarray(scale, dtype=float).copy()
    if col.shape != (n,) or not (np.isfinite(col).all() and (col > 0).all()):
        raise SettingsError(f"equilibrate: scale: expected {n} finite numbers > 0, got shape {col.shape}")
    row = np.ones(m)
    for _ in range(passes):
        Dc = sparse.diags(col)
        Ps, As = Dc @ P @ Dc, sparse.diags(row) @ A @ Dc
        cn = np.maximum(Ps.max(axis=0).toarray().ravel(), As.max(axis=0).toarray().ravel())
        rn = As.max(axis=1).toarray().ravel()
        col = col / np.sqrt(_limit(cn))
        row = row / np.sqrt(_limit(rn))
    if powers_of_two:
        given = np.ones(n) if scale is None else np.asarray(scale, dtype=float)
        col = given * np.exp2(np.round(np.log2(col / given)))
        row = np.exp2(np.round(np.log2(row)))
    return col, row
