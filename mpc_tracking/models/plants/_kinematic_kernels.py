"""numba kernel of the kinematic bicycle plant's RK4 substeps (imported lazily by
:mod:`mpc_tracking.models.plants.kinematic_bicycle`; importing it needs numba).

:func:`rk4_substeps` evaluates :meth:`KinematicBicycle._rk4
<mpc_tracking.models.plants.kinematic_bicycle.KinematicBicycle._rk4>` in the same order of floating-point operations
(``tests/models/plants/test_kinematic_plants.py`` holds the two to 1e-12). Compiler options: ``cache=True`` (numba's
on-disk cache beside this file, else its user cache or ``NUMBA_CACHE_DIR``), IEEE arithmetic (``error_model="numpy"``,
no ``fastmath``), an explicit signature (compiled or loaded from the cache at import, never at a call).
"""
from __future__ import annotations

import math

import numba as nb

_F = nb.float64


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False)
def _deriv(psi, v, d, u0, u1, L, tau_v, steer, tau_d, r_max):  # pragma: no cover - compiled
    """xdot at (psi, v, delta): x, y, yaw rates, speed and steering rates (``KinematicBicycle._rk4``'s ``deriv``)."""
    dv = (u0 - v) / tau_v if tau_v > 0 else 0.0
    dd = min(max((u1 - d) / tau_d, -r_max), r_max) if steer else 0.0
    return v * math.cos(psi), v * math.sin(psi), v * math.tan(d) / L, dv, dd


@nb.njit(nb.types.UniTuple(_F, 5)(_F, _F, _F, _F, _F, _F, _F, _F, nb.int64, _F, _F, nb.boolean, _F, _F), cache=True,
         nogil=True, error_model="numpy", fastmath=False)
def rk4_substeps(px, py, psi, v, d, u0, u1, h, n, L, tau_v, steer, tau_d, r_max):  # pragma: no cover - compiled
    """``n`` RK4 substeps of length ``h`` [s] of the kinematic bicycle from the state ``(px, py, psi, v, d)`` with the
    applied inputs ``u0`` [m/s], ``u1`` [rad]: wheelbase ``L`` [m], speed lag ``tau_v`` [s] (0: none), steering
    dynamics ``steer`` with lag ``tau_d`` [s] and rate limit ``r_max`` [rad/s]. Returns the new state."""
    h2, h6 = 0.5 * h, h / 6.0
    for _ in range(n):
        a1, b1, c1, e1, f1 = _deriv(psi, v, d, u0, u1, L, tau_v, steer, tau_d, r_max)
        a2, b2, c2, e2, f2 = _deriv(psi + h2 * c1, v + h2 * e1, d + h2 * f1, u0, u1, L, tau_v, steer, tau_d, r_max)
        a3, b3, c3, e3, f3 = _deriv(psi + h2 * c2, v + h2 * e2, d + h2 * f2, u0, u1, L, tau_v, steer, tau_d, r_max)
        a4, b4, c4, e4, f4 = _deriv(psi + h * c3, v + h * e3, d + h * f3, u0, u1, L, tau_v, steer, tau_d, r_max)
        px = px + h6 * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        py = py + h6 * (b1 + 2.0 * b2 + 2.0 * b3 + b4)
        psi = psi + h6 * (c1 + 2.0 * c2 + 2.0 * c3 + c4)
        v = v + h6 * (e1 + 2.0 * e2 + 2.0 * e3 + e4)
        d = d + h6 * (f1 + 2.0 * f2 + 2.0 * f3 + f4)
    return px, py, psi, v, d
