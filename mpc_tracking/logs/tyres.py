"""Axle cornering stiffness and grip peak from a recorded drive (the lateral part of ``identify_from_log``).

The logged body velocities of the rear axle (``v_x``, ``v_y``: an odometry twist in ``base_link``
at the rear axle, REP-103 axes), the yaw rate ``r`` and the steering angle the wheels turned to
become the samples of :func:`mpc_tracking.identification.fit.lateral_samples` (measured lateral
acceleration ``v_y' + r v_x`` of the centre of gravity, yaw acceleration, slip angles), and
:func:`~mpc_tracking.identification.fit.fit_lateral` fits the Pacejka stiffness factors ``B_f``,
``B_r`` and the friction coefficient ``mu`` of the dynamic model with the car's geometry (mass,
``l_f``, ``l_r``, ``h_cg``, ``I_z``, shape factor ``C``) taken from a base vehicle: the same fit as
:func:`mpc_tracking.identify`, on a drive instead of scripted manoeuvres.

What a drive excites:

* **axle stiffness** (``B`` per axle, reported as the cornering stiffness ``C_alpha = B C mu F_z``
  [N/rad] at the static axle load): needs measurable slip (95th percentile of the axle's slip
  angle at least 5 mrad, :data:`mpc_tracking.identification.fit._NO_SLIP`); an axle without it is
  named;
* **the peak** (``mu``): needs the fitted tyres to reach :data:`PEAK_RATIO` of their peak force
  somewhere in the drive; a gentler drive gives the stiffness only (``mu`` held at the base's
  value, named "not excited").
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc_tracking.identification.fit import B_MAX, _forces, fit_lateral, lateral_samples
from mpc_tracking.identification.manoeuvres import Recording

__all__ = ["TyreFit", "fit_tyres", "PEAK_RATIO", "SMOOTHING_WINDOW"]

logger = logging.getLogger(__name__)

#: the peak (mu) counts as measured when the fitted tyres reach this share of mu F_z somewhere
PEAK_RATIO = 0.9
#: window of the Savitzky-Golay derivatives of v_y and r [s]
SMOOTHING_WINDOW = 0.2
_MIN_SEGMENT = 20  # samples of a finite stretch of the log used


@dataclass
class TyreFit:
    """What :func:`fit_tyres` measured.

    Attributes
    ----------
    B_f, B_r : float or None
        Pacejka stiffness factors [1/rad] (None: the axle did not slip measurably).
    mu : float or None
        Friction coefficient [-] (None: the drive did not reach the peak; the base's is kept).
    stiffness_f, stiffness_r : float or None
        Axle cornering stiffness ``B C mu F_z`` at the static load [N/rad].
    force_ratio : float
        Largest ``|F_y| / (mu F_z)`` of the fitted tyres over the fitted samples [-].
    samples : int
        Samples fitted.
    fitted, holdout : dict
        RMS lateral-acceleration error [m/s²] of the fitted tyres (``a_y``) beside that of the
        base vehicle's tyres (``a_y_base``), on the fitted and the held-out samples.
    not_excited : dict of str -> str
        ``tyre_B_f``, ``tyre_B_r``, ``mu`` -> why the drive does not determine it.
    """

    B_f: float | None = None
    B_r: float | None = None
    mu: float | None = None
    stiffness_f: float | None = None
    stiffness_r: float | None = None
    force_ratio: float = math.nan
    samples: int = 0
    fitted: dict[str, float] = field(default_factory=dict)
    holdout: dict[str, float] = field(default_factory=dict)
    not_excited: dict[str, str] = field(default_factory=dict)


def _recordings(t: np.ndarray, v_x: np.ndarray, v_y: np.ndarray, r: np.ndarray, delta: np.ndarray,
                lo: int, hi: int) -> list[Recording]:
    """The finite stretches of samples ``[lo, hi)`` as recordings (at least 20 samples each)."""
    ok = np.isfinite(v_x[lo:hi]) & np.isfinite(v_y[lo:hi]) & np.isfinite(r[lo:hi]) & np.isfinite(delta[lo:hi])
    recs = []
    edges = np.flatnonzero(np.diff(np.concatenate([[0], ok.astype(int), [0]])))
    for a, b in zip(edges[::2], edges[1::2], strict=True):
        if b - a >= _MIN_SEGMENT:
            sl = slice(lo + a, lo + b)
            recs.append(Recording(f"log[{lo + a}:{lo + b}]", "lateral", t[sl], v_x[sl], v_y[sl], r[sl], v_x[sl],
                                  delta[sl]))
    return recs


def _rms_lateral(S: dict[str, np.ndarray], geo: dict[str, float], mu: float, bf: float, br: float, C: float) -> float:
    if S["v_x"].size == 0:
        return math.nan
    fyf, fyr, _, _ = _forces(S, geo, mu, bf, br, C)
    e = S["a_y"] - (fyf * np.cos(S["delta"]) + fyr) / geo["mass"]
    return float(np.sqrt(np.mean(e ** 2)))


def fit_tyres(t: np.ndarray, v_x: np.ndarray, v_y: np.ndarray, r: np.ndarray, delta: np.ndarray, split: int,
              params: Any, v_min: float = 2.0) -> TyreFit:
    """Fit the axles' stiffness and the grip peak to a drive's samples (see the module doc).

    Parameters
    ----------
    t : ndarray, shape (K,)
        Uniform sample times [s].
    v_x, v_y : ndarray, shape (K,)
        Body-frame velocity of the rear axle [m/s].
    r : ndarray, shape (K,)
        Yaw rate [rad/s].
    delta : ndarray, shape (K,)
        Steering angle of the wheels [rad].
    split : int
        Samples ``[0, split)`` are fitted, the rest is the hold-out.
    params : DynamicParams
        The base vehicle: geometry, ``I_z``, shape factor ``tyre_C_f`` and the prior tyres.
    v_min : float
        Slowest speed used [m/s].

    Returns
    -------
    TyreFit
    """
    geo = {"mass": params.mass, "l_f": params.l_f, "l_r": params.l_r, "h_cg": params.h_cg, "g": params.g}
    C = float(params.tyre_C_f)
    out = TyreFit()
    fit_recs = _recordings(t, v_x, v_y, r, delta, 0, split)
    S = lateral_samples(fit_recs, geo, SMOOTHING_WINDOW, v_min) if fit_recs else {"v_x": np.zeros(0)}
    out.samples = int(S["v_x"].size)
    if out.samples < 50:
        why = f"{out.samples} samples above {v_min:g} m/s with speed, lateral velocity, yaw rate and steering"
        out.not_excited.update(dict.fromkeys(("tyre_B_f", "tyre_B_r", "mu"), why))
        return out
    fit = fit_lateral(S, geo, C, params.mu, params.I_z, fit_mu=True)
    if not fit.slip_seen:
        why = "no measurable tyre slip (95th percentile of the slip angles below 5 mrad)"
        out.not_excited.update(dict.fromkeys(("tyre_B_f", "tyre_B_r", "mu"), why))
        return out
    if fit.max_force_ratio < PEAK_RATIO:
        out.not_excited["mu"] = (f"the tyres used at most {fit.max_force_ratio:.0%} of their peak force (the peak "
                                 f"needs {PEAK_RATIO:.0%}); mu kept at the base's {params.mu:g}")
        fit = fit_lateral(S, geo, C, params.mu, params.I_z, fit_mu=False)
    else:
        out.mu = fit.mu
    out.force_ratio = fit.max_force_ratio
    mu = fit.mu
    L = params.l_f + params.l_r
    loads = {"f": params.mass * params.g * params.l_r / L, "r": params.mass * params.g * params.l_f / L}
    for axle, B in (("f", fit.B_f), ("r", fit.B_r)):
        if B >= 0.999 * B_MAX:
            out.not_excited[f"tyre_B_{axle}"] = (f"the {'front' if axle == 'f' else 'rear'} axle's slip stays "
                                                 f"within the noise (its B reached the bound {B_MAX:g})")
            continue
        setattr(out, f"B_{axle}", float(B))
        setattr(out, f"stiffness_{axle}", float(B * C * mu * loads[axle]))
    hold_recs = _recordings(t, v_x, v_y, r, delta, split, t.size)
    S_hold = lateral_samples(hold_recs, geo, SMOOTHING_WINDOW, v_min) if hold_recs else {"v_x": np.zeros(0)}
    prior = (params.mu, params.tyre_B_f, params.tyre_B_r)
    for errs, samples in ((out.fitted, S), (out.holdout, S_hold)):
        errs["a_y"] = _rms_lateral(samples, geo, mu, fit.B_f, fit.B_r, C)
        errs["a_y_base"] = _rms_lateral(samples, geo, *prior, C)
    logger.info("tyres from the log: B_f %.4g, B_r %.4g, mu %.4g (force ratio %.2f, %d samples)", fit.B_f, fit.B_r,
                mu, fit.max_force_ratio, out.samples)
    return out
