"""A-priori parameters of the dynamic prediction model read off a 3D car's parameter set.

:func:`dynamic_params_from_ackermann3d` turns an
:class:`~mpc_tracking.models.plants.ackermann3d.Ackermann3DParams` into
:class:`~mpc_tracking.models.prediction.spatial_dynamic.DynamicParams` without driving the car: each axle's
tyre curve from its two wheels under quasi-static lateral load transfer
(:func:`axle_curves_ackermann3d`). For a plant that is not ours, identify it instead
(:func:`mpc_tracking.identify`). Re-exported by :mod:`mpc_tracking.models.prediction`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

__all__ = ["dynamic_params_from_ackermann3d", "axle_curves_ackermann3d"]


def _wheel_lateral_force(P: Any, alpha: np.ndarray, fz: np.ndarray) -> np.ndarray:
    """|F_y| [N] of one wheel of the 3D car at slip angle ``alpha`` [rad] (>= 0) and load ``fz`` [N],
    pure lateral slip, by the plant's own tyre law (see :mod:`mpc_tracking.models.plants.ackermann3d`)."""
    if P.slip_squash:
        alpha = 0.5 * np.tanh(alpha / 0.5)
    fy = np.asarray(P.cornering_stiffness(fz), dtype=float) * alpha
    fmax = np.asarray(P.friction(fz), dtype=float) * fz
    if P.friction_limit == "clip":
        return np.minimum(fy, fmax)
    return fy * fmax / np.sqrt(fy * fy + P.eps_force + fmax * fmax)


def axle_curves_ackermann3d(plant_params: Any, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Steady-state lateral force [N] of the 3D car's front and rear axle at slip angles ``alpha`` (K,).

    Quasi-static cornering: each axle carries its static share of ``m a_y``, and the roll moment
    ``m a_y h`` moves load from the inner to the outer wheel of each axle in proportion to the axle's
    roll stiffness ``W^2 (k_n / 2 + k_arb)``; with load-sensitive tyres the axle then peaks below
    ``mu F_z`` (solved by fixed-point iteration on the axle force).

    Returns
    -------
    front, rear : ndarray, shape (K,)
    """
    P = plant_params
    a = np.abs(np.asarray(alpha, dtype=float))
    W, L = P.mass * P.gravity, P.wheelbase
    loads = (W * P.cg_to_rear / L, W * P.cg_to_front / L)
    roll = np.array([P.track**2 * (0.5 * P.k_n + P.arb_front), P.track**2 * (0.5 * P.k_n + P.arb_rear)])
    share = roll / roll.sum()
    out = []
    for fz_axle, sh in zip(loads, share, strict=True):
        F = np.zeros_like(a)
        for _ in range(60):
            a_y = F / (P.mass * fz_axle / W)
            dfz = np.minimum(sh * P.mass * a_y * P.cg_height / P.track, 0.5 * fz_axle)
            F_new = (_wheel_lateral_force(P, a, 0.5 * fz_axle - dfz)
                     + _wheel_lateral_force(P, a, 0.5 * fz_axle + dfz))
            F = 0.5 * (F + F_new)
        out.append(F)
    return out[0], out[1]


def dynamic_params_from_ackermann3d(plant_params: Any, shape_factor: float | None = 1.3) -> DynamicParams:
    """Dynamic-model parameters read off a 3D car's parameter set (a priori, not identified).

    Mass, yaw inertia, axle distances and CG height are the plant's. Each axle's tyre curve
    ``D mu F_z sin(C atan(B alpha))`` follows the plant's steady-state axle force with lateral load
    transfer (:func:`axle_curves_ackermann3d`, slip angles up to 2.5 times where a wheel at its
    static load saturates): D is that curve's peak, so the axle that saturates first in the plant
    (the front one of the ``sedan``, whose anti-roll bar takes most of the load transfer)
    saturates first in the model too, and B gives the plant's cornering stiffness at the static
    load. ``mu`` is the plant's friction at the static wheel loads (their mean).

    Parameters
    ----------
    plant_params : Ackermann3DParams
        E.g. ``create_model("ackermann3d", {"preset": "sedan"}).vehicle``.
    shape_factor : float or None
        The Pacejka shape factor C of both axles (E = 0): then D is the axle curve's peak and B
        gives the plant's cornering stiffness ``2 C_alpha(F_z)`` at the static load (exact in the
        linear range); None fits B, C, D and E per axle to the whole curve by least squares (the
        sedan's front then gets C = 1.9, a sharp peak that falls off fast beyond it: measured on the
        shared race tracks at 0.85 mu g it left the track on 2 of 6 where C = 1.3 completed all).

    Returns
    -------
    DynamicParams
    """
    from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
    from mpc_tracking.models.prediction.tyre_fit import fit_axle_curve

    P = plant_params
    W, L = P.mass * P.gravity, P.wheelbase
    a, b = P.cg_to_front, P.cg_to_rear
    fz_wheel = np.array([W * b / (2 * L), W * a / (2 * L)])  # front, rear
    mu = float(np.mean(np.asarray(P.friction(fz_wheel), dtype=float)))
    # slip angles up to 2.5x where a wheel at its static load saturates (linear tyre to mu F_z)
    alpha_sat = float(np.max(np.asarray(P.friction(fz_wheel)) * fz_wheel / np.asarray(P.cornering_stiffness(fz_wheel))))
    alpha = np.linspace(0.0, min(2.5 * alpha_sat, 1.0), 101)
    curves = axle_curves_ackermann3d(P, alpha)
    c_axle = 2.0 * np.asarray(P.cornering_stiffness(fz_wheel), dtype=float)  # at the static loads
    fit = []
    for F, fz, c in zip(curves, fz_wheel, c_axle, strict=True):
        y = F / (mu * 2.0 * fz)
        if shape_factor is None:
            fit.append(fit_axle_curve(alpha, y))
        else:  # the peak of the curve, and the plant's stiffness at the static load
            D = float(np.max(y))
            fit.append((float(c / (shape_factor * D * mu * 2.0 * fz)), float(shape_factor), D, 0.0))
    (B_f, C_f, D_f, E_f), (B_r, C_r, D_r, E_r) = fit
    return DynamicParams(
        mass=float(P.mass), I_z=float(P.inertia[2]), l_f=float(a), l_r=float(b), h_cg=float(P.cg_height),
        mu=mu, tyre_B_f=B_f, tyre_C_f=C_f, tyre_D_f=D_f, tyre_E_f=E_f, tyre_B_r=B_r, tyre_C_r=C_r, tyre_D_r=D_r,
        tyre_E_r=E_r,
        g=float(P.gravity),
    )
