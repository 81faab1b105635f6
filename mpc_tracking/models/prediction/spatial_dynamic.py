"""Spatial dynamic bicycle: a prediction model with tyre forces, arc length s as the independent variable.

State ``x = (e_y, e_psi, t, v_x, v_y, r)``: lateral error [m] (positive left) and heading error
[rad] of the reference point, time [s], body-frame longitudinal and lateral velocity of the centre of
gravity (CG) [m/s] and yaw rate [rad/s]; input ``u = (a_x, delta)``: longitudinal acceleration
command [m/s²] and front steering angle [rad]; ``kappa`` is the path curvature [1/m] at the current
arc length. Parameters: :class:`DynamicParams`.

**Reference point.** ``e_y, e_psi, t`` refer to the *rear axle*, the point that
:mod:`~mpc_tracking.models.prediction.spatial_bicycle`, the MPC's corridor/footprint code and the simulation
track. The rear axle moves with body velocity ``(v_x, v_yr)``, ``v_yr = v_y - l_r r``, so::

    s_dot   = (v̄_x cos e_psi - v_yr sin e_psi) / (1 - kappa e_y)
    e_y_dot =  v̄_x sin e_psi + v_yr cos e_psi
    e_psi_dot = r - kappa s_dot,        t_dot = 1

(this is the textbook CG formula with ``v_y`` replaced by the reference point's lateral velocity).
In the kinematic limit ``v_yr = 0`` and these reduce exactly to the kinematic spatial bicycle.

**Body dynamics** (time domain, single track, no aerodynamic or rolling drag)::

    v_x_dot = a_x - F_yf sin(delta) / m + r v_y
    v_y_dot = (F_yf cos(delta) + F_yr) / m - r v_x
    r_dot   = (l_f F_yf cos(delta) - l_r F_yr) / I_z

with slip angles ``alpha_f = delta - atan((v_y + l_f r) / v̄_x)``, ``alpha_r = -atan((v_y - l_r r) / v̄_x)``
and normal loads with longitudinal load transfer from the command ``a_x``::

    F_zf = m (g l_r - a_x h_cg) / (l_f + l_r),    F_zr = m (g l_f + a_x h_cg) / (l_f + l_r)

(positive while ``-g l_f / h_cg < a_x < g l_r / h_cg``; :func:`check_domain` tests it).

**Tyre model: simplified Pacejka magic formula** (pure lateral slip, no camber, no combined slip)::

    F_y = D mu F_z sin(C atan(B alpha - E (B alpha - atan(B alpha))))

Chosen over the Fiala/brush model because it is smooth everywhere (Fiala has a kink where the
contact patch fully slides, which spoils the analytic Jacobians the LTV-MPC linearizes with), it
saturates at ``D mu F_z`` and (for C > 1) falls off beyond the peak slip, and it is exactly CommonRoad's own lateral
formula at zero camber, so its published coefficients are used as they are
(:meth:`DynamicParams.bmw_320i`). The cornering stiffness is ``B C D mu F_z`` [N/rad]; the peak
factor ``D`` per axle (default 1) lets an axle peak below ``mu F_z``.

**Low speed.** The dynamic model divides by ``v_x`` and is stiff at low speed, so the velocity
derivatives blend to a kinematic bicycle with a C² smootherstep weight ``w(v_x)`` (0 below
``v_blend_low``, 1 above ``v_blend_high``)::

    x_dot = w x_dot_dynamic + (1 - w) x_dot_kinematic       (v_x, v_y, r rows)

The kinematic part holds ``v_x_dot = a_x`` and pulls ``v_y, r`` with time constant ``tau_kin`` onto
the kinematic values ``v_y = l_r tan(delta) v_x / L``, ``r = tan(delta) v_x / L`` (plus their
feed-forward ``d/dt`` at constant delta, so a state on them stays on them while ``v_x`` changes).
Every division by ``v_x`` uses ``v̄_x = floor(v_x)``, a C¹ floor at ``v_floor``
(``v̄_x = v_x`` for ``v_x >= 2 v_floor``, ``v_floor + v_x²/(4 v_floor)`` on ``[0, 2 v_floor]``,
``v_floor`` below 0); validation keeps ``v_blend_low >= 2 v_floor`` so the dynamic part is exact
wherever its weight is not zero. ``v̄_x`` is also used in ``s_dot``: below ``2 v_floor`` the spatial
model advances as if the car rolled at ``v̄_x`` (finite ``dt/ds``, no division by zero at standstill).

**Spatial form.** ``f(x, u, kappa) = x_dot / s_dot`` (so ``dt/ds = 1 / s_dot``); the Jacobians are
analytic (chain rule through every term above). All functions are vectorized over leading
dimensions: ``x`` (..., 6), ``u`` (..., 2), ``kappa`` (...), and mirror
:mod:`~mpc_tracking.models.prediction.spatial_bicycle` (same names, signatures and return conventions).

The dynamic model is stiff: the lateral/yaw modes decay at about ``(C_αf + C_αr) / (m v_x)`` [1/s],
i.e. ``(C_αf + C_αr) / (m v_x²)`` [1/m] in s (BMW 320i: ≈ 1.0 /m at 15 m/s, ≈ 9 /m at 5 m/s), so a
step ``ds`` must resolve that for the explicit discretizations to be stable.

Examples
--------
>>> import numpy as np
>>> p = DynamicParams.bmw_320i()
>>> x = np.array([0.0, 0.0, 0.0, 15.0, 0.0, 0.0])       # straight ahead at 15 m/s
>>> f = derivatives(x, [0.0, 0.0], 0.0, p)
>>> [float(v) for v in np.round(f, 6)]                    # only time advances: dt/ds = 1/15
[0.0, 0.0, 0.066667, 0.0, 0.0, 0.0]
>>> A, B, c = linearize(np.tile(x, (30, 1)), np.zeros((30, 2)), np.zeros(30), 0.2, p, "rk4")
>>> A.shape, B.shape, c.shape
((30, 6, 6), (30, 6, 2), (30, 6))
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError
from mpc_tracking.models.integrators import INTEGRATORS, affine_step
from mpc_tracking.models.prediction.dynamic_params import DynamicParams as DynamicParams
from mpc_tracking.models.prediction.dynamic_params import peak_slip as peak_slip
from mpc_tracking.models.prediction.spatial_bicycle import DISCRETIZATIONS
from mpc_tracking.models.prediction.spatial_bicycle import spatial_to_temporal as spatial_to_temporal
from mpc_tracking.models.prediction.spatial_bicycle import temporal_to_spatial as temporal_to_spatial

__all__ = [
    "STATE_NAMES",
    "INPUT_NAMES",
    "IDX_EY",
    "IDX_EPSI",
    "IDX_T",
    "IDX_VX",
    "IDX_VY",
    "IDX_R",
    "IDX_AX",
    "IDX_DELTA",
    "DynamicParams",
    "countersteer_bounds",
    "derivatives",
    "jacobians",
    "temporal_derivatives",
    "linearize",
    "discrete_step",
    "blend_weight",
    "check_domain",
    "peak_slip",
    "front_slip_direction",
]

STATE_NAMES = ("e_y", "e_psi", "t", "v_x", "v_y", "r")
INPUT_NAMES = ("a_x", "delta")
IDX_EY, IDX_EPSI, IDX_T, IDX_VX, IDX_VY, IDX_R = 0, 1, 2, 3, 4, 5
IDX_AX, IDX_DELTA = 0, 1

_NX, _NU = len(STATE_NAMES), len(INPUT_NAMES)
# columns of the stacked Jacobian d/d(x, u)
_VX, _VY, _R = IDX_VX, IDX_VY, IDX_R
_AX, _D = _NX + IDX_AX, _NX + IDX_DELTA

def front_slip_direction(x: Any, params: DynamicParams) -> np.ndarray:
    """Direction of the front axle's velocity relative to the body, ``atan((v_y + l_f r) / v̄_x)`` [rad]: the
    front slip angle is ``delta`` minus it, so the steering angles within the peak slip of the front tyres are
    ``front_slip_direction(x) ± peak_slip``. ``x`` (..., 6) states; returns shape (...)."""
    x = np.asarray(x, dtype=float)
    vx_bar = _smooth_floor(x[..., IDX_VX], params.v_floor)[0]
    return np.asarray(np.arctan((x[..., IDX_VY] + params.l_f * x[..., IDX_R]) / vx_bar))


def countersteer_bounds(x: Any, params: DynamicParams, rear_peak_slip: float | None = None) -> tuple[float, float]:
    """Steering bounds [rad] for a car whose rear axle slides past its peak slip outward of the turn it yaws into (an
    oversteer slide): the front slip angle may not add to the yaw -- ``delta <= front_slip_direction(x)`` for a car
    yawing left (``r > 0``), ``>=`` for one yawing right; ``(-inf, inf)`` otherwise and below ``v_blend_high``.

    The rear slip angle is ``-atan((v_y - l_r r) / v_x)``; it slides past its peak where that exceeds the rear
    tyres' peak slip (``rear_peak_slip`` [rad], default :attr:`DynamicParams.peak_slip_angles`' second: a caller
    stepping the same parameters passes it once worked out) with the sign of ``r``. Within
    ``front_slip_direction ± peak_slip`` alone, a plan that follows the path holds the front axle at its peak into
    the turn while the rear slides (the model is linearized about the path's steady cornering): the oversteering
    sedan on a wet road held +0.12 rad of front slip while the rear's grew from 0.07 to 0.45 rad, and spun.

    >>> p = DynamicParams.bmw_320i()
    >>> countersteer_bounds(np.array([0.0, 0.0, 0.0, 20.0, 0.0, 0.1]), p)        # rear within its peak slip
    (-inf, inf)
    >>> lo, hi = countersteer_bounds(np.array([0.0, 0.0, 0.0, 17.5, -3.3, 0.4]), p)   # the rear slides out
    >>> lo, round(hi, 3)
    (-inf, -0.161)
    """
    v_x, v_y, r = float(x[IDX_VX]), float(x[IDX_VY]), float(x[IDX_R])
    peak_r = params.peak_slip_angles[1] if rear_peak_slip is None else rear_peak_slip
    if not (v_x >= params.v_blend_high and math.isfinite(peak_r)):
        return -math.inf, math.inf
    alpha_r = -math.atan((v_y - params.l_r * r) / v_x)
    if r * alpha_r <= 0.0 or abs(alpha_r) <= peak_r:
        return -math.inf, math.inf
    beta = math.atan((v_y + params.l_f * r) / v_x)
    return (-math.inf, beta) if r > 0.0 else (beta, math.inf)


def _smooth_floor(v, v0):
    """C¹ floor of ``v`` at ``v0``, and its derivative."""
    vc = np.clip(v, 0.0, 2.0 * v0)
    low = v < 2.0 * v0
    return np.where(low, v0 + vc * vc / (4.0 * v0), v), np.where(low, vc / (2.0 * v0), 1.0)


def _smootherstep(v, lo, hi):
    """C² step from 0 (v <= lo) to 1 (v >= hi), and its derivative."""
    t = np.clip((v - lo) / (hi - lo), 0.0, 1.0)
    w = t * t * t * (10.0 + t * (6.0 * t - 15.0))
    dw = 30.0 * t * t * (1.0 - t) ** 2 / (hi - lo)
    return w, dw


def blend_weight(v_x: Any, params: DynamicParams) -> np.ndarray:
    """Weight ``w(v_x)`` of the tyre model (1 - w: kinematic bicycle), shape of ``v_x``."""
    return np.asarray(_smootherstep(np.asarray(v_x, dtype=float), params.v_blend_low, params.v_blend_high)[0])


def _pacejka(alpha, B, C, E):
    """Normalized lateral force F_y / (mu F_z) and its slope d/d alpha [1/rad]."""
    ba = B * alpha
    psi = ba - E * (ba - np.arctan(ba))
    dpsi = B * (1.0 - E + E / (1.0 + ba * ba))
    phi = C * np.arctan(psi)
    return np.sin(phi), np.cos(phi) * C / (1.0 + psi * psi) * dpsi


def _evaluate(x, u, kappa, p: DynamicParams, spatial: bool, jac: bool):
    """x_dot (or f = x_dot / s_dot) and, if ``jac``, its Jacobian d/d(x, u), shape (..., 6, 8)."""
    x = np.asarray(x, dtype=float)
    u = np.asarray(u, dtype=float)
    k = np.asarray(kappa, dtype=float)
    ey, ep, vx, vy, r = x[..., IDX_EY], x[..., IDX_EPSI], x[..., IDX_VX], x[..., IDX_VY], x[..., IDX_R]
    ax, d = u[..., IDX_AX], u[..., IDX_DELTA]
    shape = np.broadcast_shapes(ey.shape, ax.shape, k.shape)
    m, L, lf, lr = p.mass, p.wheelbase, p.l_f, p.l_r

    # --- reference point (rear axle) kinematics
    gk = 1.0 - ey * k
    ce, se = np.cos(ep), np.sin(ep)
    vyr = vy - lr * r
    vf, dvf = _smooth_floor(vx, p.v_floor)
    sdot = (vf * ce - vyr * se) / gk
    # --- dynamic part: slip angles, loads, tyre forces
    qf = (vy + lf * r) / vf
    qr = vyr / vf
    af = d - np.arctan(qf)
    ar = -np.arctan(qr)
    fzf = m * (p.g * lr - ax * p.h_cg) / L
    fzr = m * (p.g * lf + ax * p.h_cg) / L
    phif, dphif = _pacejka(af, p.tyre_B_f, p.tyre_C_f, p.tyre_E_f)
    phir, dphir = _pacejka(ar, p.tyre_B_r, p.tyre_C_r, p.tyre_E_r)
    mu_f, mu_r = p.mu * p.tyre_D_f, p.mu * p.tyre_D_r
    fyf = mu_f * fzf * phif
    fyr = mu_r * fzr * phir
    cd, sd = np.cos(d), np.sin(d)
    dyn = (ax - fyf * sd / m + r * vy, (fyf * cd + fyr) / m - r * vx, (lf * fyf * cd - lr * fyr) / p.I_z)
    # --- kinematic part
    td = np.tan(d)
    rho = td / L
    tau = p.tau_kin
    kin = (ax + 0.0 * vx, lr * rho * ax + (lr * rho * vx - vy) / tau, rho * ax + (rho * vx - r) / tau)
    w, dw = _smootherstep(vx, p.v_blend_low, p.v_blend_high)

    xdot = np.empty((*shape, _NX))
    xdot[..., IDX_EY] = vf * se + vyr * ce
    xdot[..., IDX_EPSI] = r - k * sdot
    xdot[..., IDX_T] = 1.0
    for row, a_dyn, a_kin in zip((IDX_VX, IDX_VY, IDX_R), dyn, kin, strict=True):
        xdot[..., row] = w * a_dyn + (1.0 - w) * a_kin
    if spatial:
        xdot /= sdot[..., None]
    if not jac:
        return xdot, None

    nz = _NX + _NU
    # d s_dot
    dS = np.zeros((*shape, nz))
    dS[..., IDX_EY] = sdot * k / gk
    dS[..., IDX_EPSI] = (-vf * se - vyr * ce) / gk
    dS[..., _VX] = dvf * ce / gk
    dS[..., _VY] = -se / gk
    dS[..., _R] = lr * se / gk
    D = np.zeros((*shape, _NX, nz))
    D[..., IDX_EY, IDX_EPSI] = vf * ce - vyr * se
    D[..., IDX_EY, _VX] = dvf * se
    D[..., IDX_EY, _VY] = ce
    D[..., IDX_EY, _R] = -lr * ce
    D[..., IDX_EPSI, :] = -k[..., None] * dS
    D[..., IDX_EPSI, _R] += 1.0
    # dynamic part: gradients of the slip angles and forces
    inv_vf = 1.0 / vf
    cf = 1.0 / (1.0 + qf * qf)
    cr = 1.0 / (1.0 + qr * qr)
    dAf = np.zeros((*shape, nz))
    dAf[..., _VX] = cf * qf * dvf * inv_vf
    dAf[..., _VY] = -cf * inv_vf
    dAf[..., _R] = -cf * lf * inv_vf
    dAf[..., _D] = 1.0
    dAr = np.zeros((*shape, nz))
    dAr[..., _VX] = cr * qr * dvf * inv_vf
    dAr[..., _VY] = -cr * inv_vf
    dAr[..., _R] = cr * lr * inv_vf
    dfz = m * p.h_cg / L  # d F_zr / d a_x = -d F_zf / d a_x
    dFyf = (mu_f * fzf * dphif)[..., None] * dAf
    dFyf[..., _AX] -= mu_f * phif * dfz
    dFyr = (mu_r * fzr * dphir)[..., None] * dAr
    dFyr[..., _AX] += mu_r * phir * dfz
    dDyn = np.zeros((*shape, 3, nz))
    dDyn[..., 0, :] = -(sd / m)[..., None] * dFyf
    dDyn[..., 0, _AX] += 1.0
    dDyn[..., 0, _D] -= fyf * cd / m
    dDyn[..., 0, _VY] += r
    dDyn[..., 0, _R] += vy
    dDyn[..., 1, :] = ((cd / m)[..., None] * dFyf + dFyr / m)
    dDyn[..., 1, _D] -= fyf * sd / m
    dDyn[..., 1, _VX] -= r
    dDyn[..., 1, _R] -= vx
    dDyn[..., 2, :] = (lf * cd / p.I_z)[..., None] * dFyf - (lr / p.I_z) * dFyr
    dDyn[..., 2, _D] -= lf * fyf * sd / p.I_z
    # kinematic part
    drho = (1.0 + td * td) / L
    dKin = np.zeros((*shape, 3, nz))
    dKin[..., 0, _AX] = 1.0
    dKin[..., 1, _AX] = lr * rho
    dKin[..., 1, _D] = lr * drho * (ax + vx / tau)
    dKin[..., 1, _VX] = lr * rho / tau
    dKin[..., 1, _VY] = -1.0 / tau
    dKin[..., 2, _AX] = rho
    dKin[..., 2, _D] = drho * (ax + vx / tau)
    dKin[..., 2, _VX] = rho / tau
    dKin[..., 2, _R] = -1.0 / tau
    wb = w[..., None, None]
    D[..., IDX_VX:, :] = wb * dDyn + (1.0 - wb) * dKin
    for i, (a_dyn, a_kin) in enumerate(zip(dyn, kin, strict=True)):
        D[..., IDX_VX + i, _VX] += dw * (a_dyn - a_kin)
    if spatial:
        # f = x_dot / s_dot  =>  df = (d x_dot - f d s_dot) / s_dot
        D -= xdot[..., :, None] * dS[..., None, :]
        D /= sdot[..., None, None]
    return xdot, D


def derivatives(x: Any, u: Any, kappa: Any, params: DynamicParams) -> np.ndarray:
    """Spatial derivatives d/ds of ``(e_y, e_psi, t, v_x, v_y, r)``.

    Parameters
    ----------
    x : array_like, shape (..., 6)
        State ``(e_y [m], e_psi [rad], t [s], v_x [m/s], v_y [m/s], r [rad/s])``.
    u : array_like, shape (..., 2)
        Input ``(a_x [m/s²], delta [rad])``.
    kappa : array_like, shape (...)
        Path curvature [1/m].
    params : DynamicParams

    Returns
    -------
    ndarray, shape (..., 6)
        ``(de_y/ds [-], de_psi/ds [rad/m], dt/ds [s/m], dv_x/ds [1/s], dv_y/ds [1/s], dr/ds [rad/(s m)])``.
    """
    return _evaluate(x, u, kappa, params, spatial=True, jac=False)[0]


def jacobians(x: Any, u: Any, kappa: Any, params: DynamicParams) -> tuple[np.ndarray, np.ndarray]:
    """Analytic Jacobians of :func:`derivatives`.

    Returns
    -------
    Jx : ndarray, shape (..., 6, 6)
        ``d f / d x``.
    Ju : ndarray, shape (..., 6, 2)
        ``d f / d u``.
    """
    _, J = _evaluate(x, u, kappa, params, spatial=True, jac=True)
    return J[..., :_NX], J[..., _NX:]


def temporal_derivatives(x: Any, u: Any, kappa: Any, params: DynamicParams) -> np.ndarray:
    """Time derivatives d/dt of the state (same shapes as :func:`derivatives`; ``dt/dt = 1``).

    ``derivatives = temporal_derivatives / s_dot``; the ``v_x, v_y, r`` rows are the single-track
    body dynamics (blended to the kinematic bicycle at low speed).
    """
    return _evaluate(x, u, kappa, params, spatial=False, jac=False)[0]


def check_domain(x: Any, u: Any, kappa: Any, params: DynamicParams, where: str = "state") -> None:
    """Raise :class:`InputError` outside the model's domain.

    The domain: ``1 - e_y kappa > 0``, ``|e_psi| < pi/2``, ``s_dot > 0`` (the reference point moves
    forward along the path) and positive normal loads on both axles
    (``-g l_f / h_cg < a_x < g l_r / h_cg``). The message names the first offending index along the
    leading axis (the horizon index).
    """
    x = np.asarray(x, dtype=float)
    u = np.asarray(u, dtype=float)
    k = np.asarray(kappa, dtype=float)
    ey, ep, vx, vy, r = x[..., IDX_EY], x[..., IDX_EPSI], x[..., IDX_VX], x[..., IDX_VY], x[..., IDX_R]
    ax = u[..., IDX_AX]
    g = np.atleast_1d(1.0 - ey * k)
    vf, _ = _smooth_floor(vx, params.v_floor)
    sdot = np.atleast_1d((vf * np.cos(ep) - (vy - params.l_r * r) * np.sin(ep)) / g)
    h = params.h_cg
    checks = [
        (g <= 0.0, "1 - e_y*kappa <= 0 (the car is beyond the centre of curvature)"),
        (np.atleast_1d(np.abs(ep) >= 0.5 * np.pi), "|e_psi| >= pi/2: the car faces away from the path"),
        (sdot <= 0.0, "s_dot <= 0: the reference point does not move forward along the path"),
        (np.atleast_1d(ax * h >= params.g * params.l_r), "a_x >= g l_r / h_cg: the front axle lifts off"),
        (np.atleast_1d(-ax * h >= params.g * params.l_f), "a_x <= -g l_f / h_cg: the rear axle lifts off"),
    ]
    for bad, what in checks:
        if bad.any():
            i = int(np.flatnonzero(bad.ravel())[0])
            raise InputError(f"{where}: outside the model's domain at horizon index {i}: {what}")


def discrete_step(x: Any, u: Any, kappa: Any, ds: Any, params: DynamicParams, method: str = "rk4") -> np.ndarray:
    """Advance the nonlinear spatial model by ``ds`` metres (``u`` and ``kappa`` constant over the step).

    Shapes as :func:`derivatives`; ``method`` is ``"euler"`` or ``"rk4"``.
    """
    if method not in DISCRETIZATIONS:
        raise InputError(f"method: expected one of {DISCRETIZATIONS}, got {method!r}")
    return INTEGRATORS[method](lambda x_, u_: derivatives(x_, u_, kappa, params), np.asarray(x, dtype=float), u, ds)


def linearize(
    x_op: Any,
    u_op: Any,
    kappa: Any,
    ds: Any,
    params: DynamicParams,
    method: str = "euler",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Discrete affine model ``x_next ~= A x + B u + f`` around an operating point.

    Parameters
    ----------
    x_op : array_like, shape (..., 6)
        Operating state.
    u_op : array_like, shape (..., 2)
        Operating input.
    kappa : array_like, shape (...)
        Path curvature over the step [1/m].
    ds : float or array_like, shape (...)
        Step length [m].
    params : DynamicParams
    method : {"euler", "rk4"}
        ``"euler"``: A = I + ds Jx. ``"rk4"``: exact sensitivities of one RK4 step
        (:func:`discrete_step`).

    Returns
    -------
    A : ndarray, shape (..., 6, 6)
    B : ndarray, shape (..., 6, 2)
    f : ndarray, shape (..., 6)
        Affine term so that the model is exact at the operating point:
        ``F(x_op, u_op) = A x_op + B u_op + f``.
    """
    x_op = np.asarray(x_op, dtype=float)
    u_op = np.asarray(u_op, dtype=float)
    if method not in DISCRETIZATIONS:
        raise InputError(f"discretization: expected one of {DISCRETIZATIONS}, got {method!r}")

    def fj(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        f0, J = _evaluate(x, u_op, kappa, params, spatial=True, jac=True)
        return f0, J[..., :_NX], J[..., _NX:]

    return affine_step(fj, x_op, u_op, ds, method)


def steady_cornering(kappa: Any, v_x: Any, params: DynamicParams, a_ref: Any = 0.0,
                     iterations: int = 4) -> tuple[np.ndarray, ...]:
    """Steady cornering on the path: the state and input that keep the car on it at curvature ``kappa``.

    On the path (``e_y = 0``) at body speed ``v_x``, the rear axle (the reference point) must move
    along the tangent and the body turn with the path, so with ``v_yr = v_y - l_r r``::

        e_psi = -atan(v_yr / v_x),   r = kappa sqrt(v_x^2 + v_yr^2)

    and the lateral and yaw rows of the body dynamics must vanish (``v_y_dot = r_dot = 0``): the
    axles slip exactly as much as the tyres need for the lateral force. ``a_x`` then makes
    ``v_x_dot = a_ref`` (it adds the drag of the front tyre's side force and the ``r v_y`` term).
    Solved by Newton steps on ``(v_y, delta)`` from the linear single-track solution; where the
    tyres cannot hold the curvature (beyond the model's grip) or Newton does not converge, the
    linear solution is returned.

    Parameters
    ----------
    kappa, v_x : array_like, shape (K,)
        Path curvature [1/m] and body speed [m/s].
    params : DynamicParams
    a_ref : array_like, shape (K,) or float
        Longitudinal acceleration along the path [m/s^2].
    iterations : int
        Newton steps.

    Returns
    -------
    e_psi, v_y, r, a_x, delta : ndarray, shape (K,)
        Heading error [rad], CG lateral velocity [m/s], yaw rate [rad/s], acceleration command
        [m/s^2] and steering [rad] of the steady state.

    Examples
    --------
    >>> p = DynamicParams.bmw_320i()
    >>> e_psi, v_y, r, a_x, delta = steady_cornering([1 / 50.0], [15.0], p)
    >>> x = np.array([0.0, e_psi[0], 0.0, 15.0, v_y[0], r[0]])
    >>> bool(np.all(np.abs(temporal_derivatives(x, [a_x[0], delta[0]], 1 / 50.0, p)[[0, 1, 3, 4, 5]]) < 1e-4))
    True
    """
    p = params
    kap = np.atleast_1d(np.asarray(kappa, dtype=float))
    v = np.maximum(np.atleast_1d(np.asarray(v_x, dtype=float)), p.v_floor)
    a_ref = np.broadcast_to(np.asarray(a_ref, dtype=float), kap.shape)
    L = p.wheelbase
    c_f, c_r = p.cornering_stiffness
    a_y = v * v * kap
    # linear single track: rear slip from the rear axle's share of the side force, steering with understeer
    v_yr = -v * np.tan(p.mass * a_y * p.l_f / (L * c_r))
    k_us = p.mass / L * (p.l_r / c_f - p.l_f / c_r)
    guess = (v_yr, np.arctan(L * kap) + k_us * a_y)
    v_y = v_yr + p.l_r * v * kap
    delta = guess[1].copy()
    a_x = a_ref.copy()

    def state(vy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r = kap * np.sqrt(v * v + (vy - p.l_r * kap * v) ** 2)
        for _ in range(2):  # r depends on v_yr = v_y - l_r r (contraction: l_r kappa << 1)
            r = kap * np.sqrt(v * v + (vy - p.l_r * r) ** 2)
        x = np.zeros((kap.size, 6))
        x[:, 1] = -np.arctan((vy - p.l_r * r) / v)
        x[:, 3], x[:, 4], x[:, 5] = v, vy, r
        return x, r

    def residual(vy: np.ndarray, d: np.ndarray, ax: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x, _ = state(vy)
        f = temporal_derivatives(x, np.column_stack([ax, d]), kap, p)
        return f[:, 4:6], f[:, 3]

    for _ in range(iterations):
        x, _ = state(v_y)
        f, J = _evaluate(x, np.column_stack([a_x, delta]), kap, p, spatial=False, jac=True)
        res = f[:, 4:6]
        a_x = a_x + (a_ref - f[:, 3])  # (its load transfer moves res a little: the next step sees it)
        # Jacobian of (v_y_dot, r_dot) in (v_y, delta) (r and e_psi follow v_y only weakly: left out)
        j_vy, j_d = J[:, 4:6, 4], J[:, 4:6, _NX + 1]
        det = j_vy[:, 0] * j_d[:, 1] - j_d[:, 0] * j_vy[:, 1]
        ok = np.abs(det) > 1e-12
        det = np.where(ok, det, 1.0)
        dv = (j_d[:, 1] * res[:, 0] - j_d[:, 0] * res[:, 1]) / det
        dd = (-j_vy[:, 1] * res[:, 0] + j_vy[:, 0] * res[:, 1]) / det
        v_y = v_y - np.where(ok, np.clip(dv, -2.0, 2.0), 0.0)
        delta = delta - np.where(ok, np.clip(dd, -0.05, 0.05), 0.0)
    res, vx_dot = residual(v_y, delta, a_x)
    a_x = a_x + (a_ref - vx_dot)
    x, r = state(v_y)
    scale = np.maximum(np.abs(a_y), 1.0)
    good = (np.abs(res[:, 0]) < 1e-3 * scale) & (np.abs(res[:, 1]) * p.l_f < 1e-3 * scale) & (np.abs(delta) < 0.7)
    good &= np.isfinite(v_y) & np.isfinite(delta) & np.isfinite(a_x)
    r_lin = v * kap
    e_psi = np.where(good, x[:, 1], -np.arctan(guess[0] / v))
    return (e_psi, np.where(good, v_y, guess[0] + p.l_r * r_lin), np.where(good, r, r_lin),
            np.where(good, a_x, a_ref), np.where(good, delta, guess[1]))
