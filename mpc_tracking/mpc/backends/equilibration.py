"""Ruiz equilibration of the QP, computed once at set-up and applied by the OSQP back end itself.

OSQP equilibrates its problem (modified Ruiz on the KKT matrix ``[[P, A'], [A, 0]]`` and a cost factor; Stellato et
al., "OSQP: an operator splitting solver for quadratic programs", 2020, section 5.1) again on every update of the
constraint matrix, which the controller makes every step. The controller's QP keeps its sparsity pattern and
magnitudes from step to step, so one equilibration of a representative QP serves every step: the back end computes it
here once (:func:`ruiz`), hands OSQP the equilibrated problem with OSQP's own scaling off, and scales each step's
numbers with the fixed factors (:func:`apply`; compiled as ``_kernels.equilibrate_step``):

    P' = c D P D,   q' = c D q,   A' = E A D,   l' = E l,   u' = E u,   x = D x'

(``D`` (n,), ``E`` (m,) positive diagonal factors, ``c`` > 0). The solver's infinite bounds stay infinite.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

__all__ = ["Equilibration", "ruiz", "apply", "MIN_SCALING", "MAX_SCALING"]

#: a column or row norm below this is not scaled (taken as 1); above :data:`MAX_SCALING` it is taken as that
MIN_SCALING = 1e-4
MAX_SCALING = 1e4


@dataclass(frozen=True, eq=False)
class Equilibration:
    """Fixed equilibration factors of a QP (``P' = c D P D``, ``A' = E A D``, ``q' = c D q``, ``l', u' = E l, E u``).

    Attributes
    ----------
    D : ndarray, shape (n,)
        Variable factors (the solution is ``x = D x'``).
    E : ndarray, shape (m,)
        Constraint-row factors.
    c : float
        Cost factor.
    """

    D: np.ndarray
    E: np.ndarray
    c: float

    def entry_factors(self, indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
        """``E[row] * D[col]`` of every stored entry of a CSC matrix with this pattern (nnz,)."""
        cols = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
        return self.E[indices] * self.D[cols]


def _limited(norms: np.ndarray) -> np.ndarray:
    """Norms below :data:`MIN_SCALING` (empty or zero columns) as 1, above :data:`MAX_SCALING` as that."""
    return np.minimum(np.where(norms < MIN_SCALING, 1.0, norms), MAX_SCALING)


def _col_inf_norms(M: sparse.csc_matrix) -> np.ndarray:
    return np.asarray(abs(M).max(axis=0).todense()).ravel()


def ruiz(P: sparse.spmatrix, A: sparse.spmatrix, q: np.ndarray, passes: int) -> Equilibration:
    """Equilibrate the QP ``min 1/2 x'Px + q'x, l <= Ax <= u`` with ``passes`` Ruiz passes.

    Each pass divides every column of the KKT matrix ``[[P, A'], [A, 0]]`` by the square root of its infinity norm
    (variables: the larger of the column norms of ``P`` and ``A``; constraints: the row norms of ``A``), then scales
    the cost by ``1 / max(mean column norm of P, |q|_inf)``.

    Parameters
    ----------
    P : sparse matrix, shape (n, n)
        Upper triangle of the cost Hessian.
    A : sparse matrix, shape (m, n)
        Constraint matrix (a representative one: the factors are kept for every step).
    q : ndarray, shape (n,)
        Representative linear cost (its largest entry sets the cost factor with ``P``).
    passes : int
        Ruiz passes (>= 0; 0 gives ones).

    Returns
    -------
    Equilibration
    """
    Pf = sparse.csc_matrix(P, dtype=float)
    Pf = sparse.csc_matrix(Pf + sparse.triu(Pf, 1).T)  # the full symmetric matrix
    A = sparse.csc_matrix(A, dtype=float)
    q = np.asarray(q, dtype=float).copy()
    m, n = A.shape
    D, E, c = np.ones(n), np.ones(m), 1.0
    for _ in range(int(passes)):
        d = 1.0 / np.sqrt(_limited(np.maximum(_col_inf_norms(Pf), _col_inf_norms(A))))
        e = 1.0 / np.sqrt(_limited(_col_inf_norms(sparse.csc_matrix(A.T))))
        Dd, De = sparse.diags(d), sparse.diags(e)
        Pf = sparse.csc_matrix(Dd @ Pf @ Dd)
        A = sparse.csc_matrix(De @ A @ Dd)
        q *= d
        D *= d
        E *= e
        cost = max(float(_col_inf_norms(Pf).mean()) if n else 0.0, float(np.abs(q).max()) if n else 0.0)
        gain = 1.0 / float(_limited(np.array([cost]))[0])
        Pf = Pf * gain
        q *= gain
        c *= gain
    return Equilibration(D, E, c)


def apply(q: np.ndarray, lo: np.ndarray, hi: np.ndarray, Ax: np.ndarray, cD: np.ndarray, E: np.ndarray,
          fA: np.ndarray, inf: float, out: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
    """One step's numbers in the equilibrated problem, into ``out = (q', l', u', A'x)`` (numpy; the reference of the
    compiled ``_kernels.equilibrate_step``).

    ``q' = cD q``, ``A'x = fA Ax`` (``fA``: :meth:`Equilibration.entry_factors`), ``l' = E l``, ``u' = E u``;
    bounds at or beyond the solver's infinity ``inf`` stay ``-inf``/``+inf`` (the value ``inf``).
    """
    q_out, l_out, u_out, a_out = out
    np.multiply(q, cD, out=q_out)
    np.multiply(Ax, fA, out=a_out)
    np.multiply(lo, E, out=l_out)
    np.multiply(hi, E, out=u_out)
    l_out[lo <= -inf] = -inf
    u_out[hi >= inf] = inf
