"""Fit the dynamic model's axle tyre curve (simplified Pacejka) to measured or computed axle forces.

The dynamic spatial bicycle (:mod:`~mpc_tracking.models.prediction.spatial_dynamic`) gives each axle the lateral
force ``F_y = D mu F_z sin(C atan(B alpha - E (B alpha - atan(B alpha))))``. :func:`fit_axle_curve`
finds ``B, C, D, E`` by least squares from samples of the normalized force ``F_y / (mu F_z)`` over slip angle:
from a plant's own tyre law with load transfer (a-priori parameters of our 3D car) or from forces
measured on steady-state cornering (identification).

Examples
--------
>>> import numpy as np
>>> alpha = np.linspace(0.0, 0.2, 60)
>>> y = 0.95 * np.sin(1.2 * np.arctan(14.0 * alpha))
>>> B, C, D, E = fit_axle_curve(alpha, y)
>>> [round(float(v), 4) for v in (B, C, D, E)]
[14.0, 1.2, 0.95, 0.0]
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

from mpc_tracking.errors import InputError

__all__ = ["fit_axle_curve", "axle_curve"]

#: the shape factor C is kept in this range (C < 1: no peak, the force creeps up; C > 1: falls off)
C_RANGE = (0.5, 1.9)
#: and the curvature factor E in this one (E -> 1 with C = pi/2: a sharp knee and a flat top)
E_RANGE = (-2.0, 1.0)


def axle_curve(alpha: np.ndarray, B: float, C: float, D: float, E: float = 0.0) -> np.ndarray:
    """Normalized axle force ``D sin(C atan(B alpha - E (B alpha - atan(B alpha))))`` [-] at slip angles
    ``alpha`` [rad]."""
    ba = B * np.asarray(alpha, dtype=float)
    return D * np.sin(C * np.arctan(ba - E * (ba - np.arctan(ba))))


def fit_axle_curve(alpha: np.ndarray, force: np.ndarray, C: float | None = None,
                   D: float | None = None) -> tuple[float, float, float, float]:
    """Least-squares ``B`` [1/rad], ``C``, ``D``, ``E`` [-] of the axle curve (:func:`axle_curve`).

    Parameters
    ----------
    alpha : array_like, shape (K,)
        Slip angles [rad] (of either sign; the curve is odd).
    force : array_like, shape (K,)
        Normalized lateral force ``F_y / (mu F_z)`` [-] at those slip angles.
    C : float, optional
        Hold the shape factor at this value and E at 0 (fit B and D only).
    D : float, optional
        With ``C``: hold the peak factor too (e.g. the measured peak), fit B only.

    Returns
    -------
    B, C, D, E : float
    """
    a = np.asarray(alpha, dtype=float).ravel()
    y = np.asarray(force, dtype=float).ravel()
    if a.shape != y.shape or a.size < 4 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(y))):
        raise InputError(f"fit_axle_curve: expected >= 4 finite (alpha, force) pairs of equal length, got "
                         f"{a.size} and {y.size}")
    y = y * np.sign(a + (a == 0))  # fold onto alpha >= 0
    a = np.abs(a)
    if np.ptp(a) <= 0 or np.max(np.abs(y)) <= 0:
        raise InputError("fit_axle_curve: the samples span no slip angle or carry no force")
    D0 = float(np.max(y))
    small = a <= np.quantile(a, 0.2) + 1e-12
    slope = float(np.sum(a[small] * y[small]) / max(np.sum(a[small] ** 2), 1e-300))
    C0 = 1.2 if C is None else float(C)
    B0 = max(slope / (C0 * D0), 1e-3)

    def resid(p: np.ndarray) -> np.ndarray:
        if C is not None:
            return axle_curve(a, p[0], C0, p[1]) - y
        return axle_curve(a, p[0], p[2], p[1], p[3]) - y

    if C is not None and D is not None:
        sol = least_squares(lambda p: axle_curve(a, p[0], C0, float(D)) - y, [slope / (C0 * float(D))],
                            bounds=([1e-6], [np.inf]), x_scale="jac")
        return float(sol.x[0]), C0, float(D), 0.0
    if C is not None:
        sol = least_squares(resid, [B0, D0], bounds=([1e-6, 1e-6], [np.inf, np.inf]), x_scale="jac")
        return float(sol.x[0]), C0, float(sol.x[1]), 0.0
    lo, hi = [1e-6, 1e-6, C_RANGE[0], E_RANGE[0]], [np.inf, np.inf, C_RANGE[1], E_RANGE[1]]
    # a few starts: a rounded peak (C 1.2, E 0), a sharp knee with a flat top (C pi/2, E 0.9)
    starts = ((1.2, 0.0), (1.0, 0.0), (0.5 * np.pi, 0.9))
    sols = [least_squares(resid, [max(slope / (c0 * D0), 1e-3), D0, c0, e0], bounds=(lo, hi), x_scale="jac")
            for c0, e0 in starts]
    best = min(sols, key=lambda sol: sol.cost)
    return float(best.x[0]), float(best.x[2]), float(best.x[1]), float(best.x[3])
