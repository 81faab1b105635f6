"""Spatial kinematic bicycle: the MPC's prediction model, with arc length s as the independent variable.

State ``x = (e_y, e_psi, t)``: lateral error [m] (positive left), heading error [rad] and
time [s]; input ``u = (v, delta)``: speed [m/s] and front steering angle [rad]; ``kappa`` is the
path curvature [1/m] at the current arc length. The reference point is the rear axle, so the
car turns with radius ``L / tan(delta)``.

Derivatives with respect to s::

    e_y'   = (1 - e_y kappa) tan(e_psi)
    e_psi' = (1 - e_y kappa) tan(delta) / (L cos(e_psi)) - kappa
    t'     = (1 - e_y kappa) / (v cos(e_psi))

All functions are vectorized over leading dimensions: ``x`` (..., 3), ``u`` (..., 2), ``kappa`` (...).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError, ModelError
from mpc_tracking.models.integrators import INTEGRATORS, affine_step

__all__ = [
    "STATE_NAMES",
    "INPUT_NAMES",
    "IDX_EY",
    "IDX_EPSI",
    "IDX_T",
    "IDX_V",
    "IDX_DELTA",
    "DISCRETIZATIONS",
    "VehicleParams",
    "derivatives",
    "jacobians",
    "linearize",
    "discrete_step",
    "temporal_to_spatial",
    "spatial_to_temporal",
    "check_domain",
]

STATE_NAMES = ("e_y", "e_psi", "t")
INPUT_NAMES = ("v", "delta")
IDX_EY, IDX_EPSI, IDX_T = 0, 1, 2
IDX_V, IDX_DELTA = 0, 1
DISCRETIZATIONS = ("euler", "rk4")


@dataclass(frozen=True)
class VehicleParams:
    """Geometry of the car as the controller sees it.

    Attributes
    ----------
    wheelbase : float
        Distance rear axle to front axle L [m], > 0.
    length : float
        Body length [m], > 0.
    width : float
        Body width [m], > 0.
    rear_overhang : float
        Distance from the rear axle (the reference point) back to the rear bumper [m], >= 0.
    """

    wheelbase: float = 2.7
    length: float = 4.5
    width: float = 1.8
    rear_overhang: float = 0.9

    def __post_init__(self) -> None:
        for name in ("wheelbase", "length", "width"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
                raise ModelError(f"VehicleParams.{name}: expected a positive number of metres, got {v!r}")
        ro = self.rear_overhang
        if not isinstance(ro, (int, float)) or not np.isfinite(ro) or ro < 0 or ro >= self.length:
            raise ModelError(
                f"VehicleParams.rear_overhang: expected 0 <= rear_overhang < length={self.length} m, got {ro!r}"
            )

    @classmethod
    def rc_car(cls) -> VehicleParams:
        """A 1:10 RC car (wheelbase 0.26 m, body 0.40 x 0.20 m)."""
        return cls(wheelbase=0.26, length=0.40, width=0.20, rear_overhang=0.07)

    @property
    def front_extent(self) -> float:
        """Distance from the reference point forward to the front bumper [m]."""
        return self.length - self.rear_overhang

    @property
    def center_offset(self) -> float:
        """Distance from the reference point forward to the body centre [m]."""
        return 0.5 * self.length - self.rear_overhang

    @property
    def safety_ellipse(self) -> tuple[float, float]:
        """Semi-axes (a, b) = (length/sqrt(2), width/sqrt(2)) [m] of the ellipse around the body.

        It is the smallest ellipse with the body's aspect ratio that contains the rectangle;
        it is centred at :attr:`center_offset` ahead of the reference point.
        """
        return self.length / np.sqrt(2.0), self.width / np.sqrt(2.0)


def _split(x, u, kappa):
    x = np.asarray(x, dtype=float)
    u = np.asarray(u, dtype=float)
    kappa = np.asarray(kappa, dtype=float)
    return x[..., IDX_EY], x[..., IDX_EPSI], u[..., IDX_V], u[..., IDX_DELTA], kappa


def _terms(x, u, kappa, L):
    """Common subexpressions of f and its Jacobians."""
    ey, ep, v, d, k = _split(x, u, kappa)
    g = 1.0 - ey * k
    ce = np.cos(ep)
    se = np.sin(ep)
    td = np.tan(d)
    inv_ce = 1.0 / ce
    inv_v = 1.0 / v
    return ey, ep, v, d, k, g, ce, se, td, inv_ce, inv_v


def _f_from_terms(T, L):
    _ey, _ep, _v, _d, k, g, _ce, se, td, inv_ce, inv_v = T
    g_ce = g * inv_ce
    out = np.empty((*np.shape(g), 3))
    out[..., 0] = g_ce * se
    out[..., 1] = g_ce * td / L - k
    out[..., 2] = g_ce * inv_v
    return out


def _jac_from_terms(T, L, Jx=None, Ju=None):
    _ey, _ep, _v, _d, k, g, _ce, se, td, inv_ce, inv_v = T
    shape = np.shape(g)
    if Jx is None:
        Jx = np.zeros((*shape, 3, 3))
    if Ju is None:
        Ju = np.zeros((*shape, 3, 2))
    inv_ce2 = inv_ce * inv_ce
    Jx[..., 0, 0] = -k * se * inv_ce
    Jx[..., 0, 1] = g * inv_ce2
    Jx[..., 1, 0] = -k * td * inv_ce / L
    Jx[..., 1, 1] = g * td * se * inv_ce2 / L
    Jx[..., 2, 0] = -k * inv_ce * inv_v
    Jx[..., 2, 1] = g * se * inv_ce2 * inv_v
    Ju[..., 1, 1] = g * inv_ce * (1.0 + td * td) / L
    Ju[..., 2, 0] = -g * inv_ce * inv_v * inv_v
    return Jx, Ju


def derivatives(x: Any, u: Any, kappa: Any, params: VehicleParams) -> np.ndarray:
    """Spatial derivatives d/ds of ``(e_y, e_psi, t)``.

    Parameters
    ----------
    x : array_like, shape (..., 3)
    u : array_like, shape (..., 2)
    kappa : array_like, shape (...)
    params : VehicleParams

    Returns
    -------
    ndarray, shape (..., 3)
        ``(de_y/ds [-], de_psi/ds [rad/m], dt/ds [s/m])``.
    """
    return _f_from_terms(_terms(x, u, kappa, params.wheelbase), params.wheelbase)


def jacobians(x: Any, u: Any, kappa: Any, params: VehicleParams) -> tuple[np.ndarray, np.ndarray]:
    """Analytic Jacobians of :func:`derivatives`.

    Returns
    -------
    Jx : ndarray, shape (..., 3, 3)
        ``d f / d x``.
    Ju : ndarray, shape (..., 3, 2)
        ``d f / d u``.
    """
    return _jac_from_terms(_terms(x, u, kappa, params.wheelbase), params.wheelbase)


def check_domain(x: Any, u: Any, kappa: Any, where: str = "state") -> None:
    """Raise :class:`InputError` when ``1 - e_y kappa <= 0``, ``|e_psi| >= pi/2`` or ``v <= 0``.

    The message names the first offending index along the leading axis.
    """
    ey, ep, v, _, k = _split(x, u, kappa)
    g = np.atleast_1d(1.0 - ey * k)
    bad = g <= 0.0
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise InputError(
            f"{where}: outside the path's domain at horizon index {i}: "
            f"1 - e_y*kappa = {g.ravel()[i]:.3g} <= 0 (the car is beyond the centre of curvature)"
        )
    bad = np.atleast_1d(np.abs(ep) >= 0.5 * np.pi)
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise InputError(f"{where}: |e_psi| >= pi/2 at horizon index {i}: the car faces away from the path")
    bad = np.atleast_1d(v <= 0.0)
    if bad.any():
        i = int(np.flatnonzero(bad.ravel())[0])
        raise InputError(f"{where}: speed must be > 0 in the spatial model; index {i} has v = {np.ravel(v)[i]}")


def discrete_step(x: Any, u: Any, kappa: Any, ds: float, params: VehicleParams, method: str = "rk4") -> np.ndarray:
    """Advance the nonlinear spatial model by ``ds`` metres (kappa constant over the step)."""
    if method not in DISCRETIZATIONS:
        raise InputError(f"method: expected one of {DISCRETIZATIONS}, got {method!r}")
    return INTEGRATORS[method](lambda x_, u_: derivatives(x_, u_, kappa, params), np.asarray(x, dtype=float), u, ds)


def linearize(
    x_op: Any,
    u_op: Any,
    kappa: Any,
    ds: Any,
    params: VehicleParams,
    method: str = "euler",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Discrete affine model ``x_next ~= A x + B u + f`` around an operating point.

    Parameters
    ----------
    x_op : array_like, shape (..., 3)
        Operating state (any e_y, e_psi in the domain, not only 0).
    u_op : array_like, shape (..., 2)
        Operating input.
    kappa : array_like, shape (...)
        Path curvature over the step [1/m].
    ds : float or array_like, shape (...)
        Step length [m].
    params : VehicleParams
    method : {"euler", "rk4"}
        ``"euler"``: A = I + ds Jx. ``"rk4"``: exact sensitivities of one RK4 step.

    Returns
    -------
    A : ndarray, shape (..., 3, 3)
    B : ndarray, shape (..., 3, 2)
    f : ndarray, shape (..., 3)
        Affine term so that the model is exact at the operating point:
        ``F(x_op, u_op) = A x_op + B u_op + f``.
    """
    x_op = np.asarray(x_op, dtype=float)
    u_op = np.asarray(u_op, dtype=float)
    h = np.asarray(ds, dtype=float)[..., None]
    H = h[..., None]
    eye = np.eye(3)
    if method == "euler":
        # A = I + h Jx, B = h Ju, f = h (f0 - Jx x_op - Ju u_op)
        L = params.wheelbase
        T = _terms(x_op, u_op, kappa, L)
        f0 = _f_from_terms(T, L)
        Jx, Ju = _jac_from_terms(T, L)
        f = f0
        f -= (Jx @ x_op[..., None])[..., 0]
        f -= (Ju @ u_op[..., None])[..., 0]
        f *= h
        Jx *= H
        Jx += eye
        Ju *= H
        return Jx, Ju, f
    if method == "rk4":

        def fj(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            T = _terms(x, u_op, kappa, params.wheelbase)
            Jx, Ju = _jac_from_terms(T, params.wheelbase)
            return _f_from_terms(T, params.wheelbase), Jx, Ju

        return affine_step(fj, x_op, u_op, ds, method)
    raise InputError(f"discretization: expected one of {DISCRETIZATIONS}, got {method!r}")


def temporal_to_spatial(x: float, y: float, psi: float, x_ref: float, y_ref: float,
                        psi_ref: float) -> tuple[float, float]:
    """Lateral and heading error of a pose relative to a waypoint (t2s).

    Returns
    -------
    e_y : float
        Signed offset along the waypoint's left normal [m].
    e_psi : float
        Heading error wrapped to [-pi, pi) [rad].
    """
    e_y = -(x - x_ref) * np.sin(psi_ref) + (y - y_ref) * np.cos(psi_ref)
    e_psi = (psi - psi_ref + np.pi) % (2 * np.pi) - np.pi
    return float(e_y), float(e_psi)


def spatial_to_temporal(e_y: float, e_psi: float, x_ref: float, y_ref: float,
                        psi_ref: float) -> tuple[float, float, float]:
    """World pose ``(x, y, psi)`` of the spatial state at a waypoint (s2t)."""
    return (
        float(x_ref - e_y * np.sin(psi_ref)),
        float(y_ref + e_y * np.cos(psi_ref)),
        float(psi_ref + e_psi),
    )
