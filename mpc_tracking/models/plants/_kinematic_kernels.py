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


@nb.njit(nb.types.Tuple((nb.int64, _F))(_F[::1], _F, _F, _F, _F, nb.int64, _F, nb.int64, _F, _F, nb.boolean, _F, _F, _F,
                                        _F, _F), cache=True, nogil=True, error_model="numpy", fastmath=False)
def held_command_steps(x, steer, v_cmd, delta_cmd, dt, n_steps, h, n, L, tau_v, steer_dyn, tau_d, r_max, d_max,
                       lim_max, lim_rate):  # pragma: no cover - compiled
    """``n_steps`` plant steps of ``dt`` [s] under one held command ``(v_cmd, delta_cmd)`` passed through a steering
    limiter, as :class:`~mpc_tracking.actuation.DirectActuator` and :meth:`KinematicBicycle.step
    <mpc_tracking.models.plants.kinematic_bicycle.KinematicBicycle.step>` compute them one call at a time (the same
    floating-point operations in the same order).

    ``x`` (5,) is the plant state ``(x, y, psi, v, delta)``, updated in place after each step whose result is finite;
    ``steer`` the limiter's angle [rad] (its limits ``lim_max`` [rad], ``lim_rate`` [rad/s], inf: none); ``h``, ``n``
    the RK4 substep [s] and substeps per step; ``L``, ``tau_v``, ``steer_dyn``, ``tau_d``, ``r_max`` as in
    :func:`rk4_substeps`; ``d_max`` the plant's steering saturation [rad]. Returns ``(k, steer)``: the steps completed
    (``k < n_steps``: step ``k`` became non-finite and ``x`` holds the state before it) and the limiter's angle after
    the last step attempted.
    """
    target = min(max(delta_cmd, -lim_max), lim_max)
    step = lim_rate * dt
    px, py, psi, v, d = x[0], x[1], x[2], x[3], x[4]
    for k in range(n_steps):
        steer += min(max(target - steer, -step), step)
        u1 = min(max(steer, -d_max), d_max)
        if tau_v == 0:  # the speed follows the command
            v = v_cmd
        if not steer_dyn:  # and so does the steering
            d = u1
        npx, npy, npsi, nv, nd = rk4_substeps(px, py, psi, v, d, v_cmd, u1, h, n, L, tau_v, steer_dyn, tau_d, r_max)
        if not (math.isfinite(npx) and math.isfinite(npy) and math.isfinite(npsi) and math.isfinite(nv)
                and math.isfinite(nd)):
            return k, steer
        px, py, psi, v, d = npx, npy, npsi, nv, nd
        x[0], x[1], x[2], x[3], x[4] = px, py, psi, v, d
    return n_steps, steer
