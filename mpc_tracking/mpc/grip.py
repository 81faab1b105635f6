"""Online grip estimation: the road's friction from the measured response, per axle, with a confidence.

Every control step the estimator (:class:`GripEstimator`) gets the measured body-frame velocities of the
rear axle (``v_x``, ``v_y``) and the yaw rate ``r`` -- what the closed loop measures for the dynamic
prediction model -- and the steering angle applied over the last period. From two consecutive samples
(period ``T``) it forms, at their midpoint,

* the accelerations ``a_y = dv_y/dt + v_x r`` (CG), ``a_x = dv_x/dt - v_y r`` and ``r' = dr/dt``;
* the axle lateral forces of the single-track force and moment balance
  ``F_yf = (m a_y l_r + I_z r') / L``, ``F_yr = (m a_y l_f - I_z r') / L`` and the loads with the
  longitudinal transfer ``F_zf = m (g l_r - a_x h) / L``, ``F_zr = m (g l_f + a_x h) / L``;
* the axle slip angles ``alpha_f = delta - atan((v_y + l_f r) / v_x)``, ``alpha_r = -atan((v_y - l_r r) / v_x)``
  (``v_y`` of the CG).

Per axle it fits the friction ``mu`` of a **brush (Fiala) tyre** with the prediction model's cornering
stiffness ``C`` (which does not depend on ``mu``: a wet road does not make the tyre softer, it makes it
saturate earlier)::

    F_y = C a - C^2 |a| a / (3 D mu F_z) + C^3 a^3 / (27 (D mu F_z)^2),   |a| < 3 D mu F_z / C
    F_y = D mu F_z sign(a)                                                 beyond

(``a = tan(alpha)``; ``D`` the axle's peak factor). In the linear range ``dF_y / dmu`` is ~0: the data say
nothing about the grip there, and the estimate **holds**. Near saturation the force is a strong function of
``mu``, and beyond it a direct measurement. The update is a scalar extended Kalman filter on each axle's
``mu``: the variance grows at ``grip_sigma_growth`` per second (random walk, capped at ``grip_sigma_max``) and
shrinks with every informative sample. With braking or driving the lateral capacity is what the friction
circle leaves, ``sqrt((D mu F_z)^2 - F_x^2)`` (``F_x`` of the axle from ``m a_x`` and the load share).

**Noticing lost grip**: when an axle slides (its slip angle beyond the brush tyre's full-sliding angle at the
current estimate, by ``GRIP_SLIDE_SLIP_MARGIN``) or the body's sideslip exceeds ``grip_slide_sideslip``,
the axle's estimate drops at once to the friction the axle is showing (``|F| / (D F_z)``, never above the
estimate) and :attr:`GripEstimate.sliding` is True for that step.

The limits the controller plans with (:meth:`GripEstimate.plan_ratio`) use the lower confidence bound
``mu - grip_margin sigma`` of the weaker axle, relative to the nominal friction the limits were set for,
at most 1: the plan stays conservative until grip is confirmed, by at most ``grip_margin * grip_sigma_max``.

Example: a car at 20 m/s on a 50 m circle with a wet road (mu 0.5, the model built for 0.9) shows the
friction of the saturated front axle within one step.

>>> import numpy as np
>>> from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
>>> est = GripEstimator(DynamicParams.bmw_320i(), GripConfig(mu_nominal=0.9))
>>> p = est.params
>>> fz_f = p.mass * p.g * p.l_r / (p.l_f + p.l_r)
>>> _ = est.update(0.0, {"v_x": 20.0, "v_y": 0.0, "r": 0.35}, delta=0.20)
>>> e = est.update(0.05, {"v_x": 20.0, "v_y": 0.0, "r": 0.35}, delta=0.20)   # a_y = 7 m/s^2 at 0.20 rad
>>> e.sliding, round(e.mu_front, 2) < 0.9
(True, True)
"""
from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc.qp import INF as QP_INF
from mpc_tracking.paths.interpolation import LinearTable

__all__ = ["GripEstimator", "GripEstimate", "GripConfig", "GripLimits", "fiala_force", "GRIP_SLIDE_SLIP_MARGIN",
           "GRIP_FORCE_NOISE", "GRIP_MIN_SPEED", "RATIO_STEP"]

logger = logging.getLogger(__name__)

#: an axle slides when its slip angle exceeds the brush tyre's full-sliding angle at the estimate by this factor
GRIP_SLIDE_SLIP_MARGIN = 1.15
#: standard deviation of a measured axle force, as a share of the axle's load [-]
GRIP_FORCE_NOISE = 0.04
#: below this speed [m/s] the estimator holds (slip angles are not defined at standstill)
GRIP_MIN_SPEED = 5.0
#: the limits are re-scaled when the plan's share of the nominal grip moves by more than this (or drops in a slide)
RATIO_STEP = 0.005
#: friction range of the estimate [-]
_MU_BOUNDS = (0.05, 2.0)


@dataclass(frozen=True)
class GripConfig:
    """What the estimator needs besides the car (from :class:`~mpc_tracking.mpc.settings.GripSettings`).

    Attributes
    ----------
    mu_nominal : float
        The friction the limits and the prediction model were set for [-] (the estimate starts there).
    sigma0 : float
        Initial standard deviation of the estimate [-].
    sigma_growth : float
        Growth of the standard deviation without information [1/s] (random walk: variance grows by
        ``sigma_growth^2 dt``).
    sigma_max : float
        Cap of the standard deviation [-].
    margin : float
        Lower confidence bound used by the plan: ``mu - margin sigma`` [-].
    slide_sideslip : float
        Body sideslip angle beyond which the car counts as sliding [rad].
    """

    mu_nominal: float = 1.0
    sigma0: float = 0.02
    sigma_growth: float = 0.005
    sigma_max: float = 0.02
    margin: float = 1.0
    slide_sideslip: float = 0.12

    def __post_init__(self) -> None:
        for name in ("mu_nominal", "sigma0", "sigma_growth", "sigma_max", "margin", "slide_sideslip"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise SettingsError(f"GripConfig.{name}: expected a finite number >= 0, got {value!r}")
        if self.mu_nominal <= 0:
            raise SettingsError(f"GripConfig.mu_nominal: expected > 0, got {self.mu_nominal!r}")


@dataclass(frozen=True)
class GripEstimate:
    """The grip estimate of one step.

    Attributes
    ----------
    mu_front, mu_rear : float
        Friction estimate of each axle [-].
    sigma_front, sigma_rear : float
        Their standard deviations [-] (the confidence: small = confirmed).
    sliding : bool
        True when an axle slid or the sideslip exceeded its bound this step (the estimate was lowered at once).
    mu_nominal : float
        The friction the limits were set for [-].
    margin : float
        The plan's confidence margin (in standard deviations).
    """

    mu_front: float
    mu_rear: float
    sigma_front: float
    sigma_rear: float
    sliding: bool
    mu_nominal: float
    margin: float = 1.0

    @property
    def mu(self) -> float:
        """The car's grip [-]: the weaker axle's estimate."""
        return min(self.mu_front, self.mu_rear)

    @property
    def sigma(self) -> float:
        """Standard deviation of :attr:`mu` [-] (the weaker axle's)."""
        return self.sigma_front if self.mu_front <= self.mu_rear else self.sigma_rear

    def plan_ratio(self) -> float:
        """Share of the nominal limits the plan may use: ``(mu - margin sigma) / mu_nominal`` in (0, 1]."""
        low = min(self.mu_front - self.margin * self.sigma_front, self.mu_rear - self.margin * self.sigma_rear)
        return float(min(1.0, max(_MU_BOUNDS[0], low) / self.mu_nominal))


def fiala_force(tan_alpha: float, c_alpha: float, peak: float) -> float:
    """Brush (Fiala) tyre lateral force [N] at ``tan_alpha`` with stiffness ``c_alpha`` [N/rad] and peak ``peak`` [N].

    >>> round(fiala_force(0.001, 1e5, 5e3), 3), fiala_force(1.0, 1e5, 5e3)     # linear, then saturated
    (99.335, 5000.0)
    """
    if peak <= 0.0:
        return 0.0
    a = tan_alpha
    slide = 3.0 * peak / c_alpha
    if abs(a) >= slide:
        return math.copysign(peak, a)
    return c_alpha * a - c_alpha * c_alpha * abs(a) * a / (3.0 * peak) + c_alpha ** 3 * a ** 3 / (27.0 * peak * peak)


class _Axle:
    """One axle's scalar Kalman filter on mu."""

    def __init__(self, mu: float, sigma: float) -> None:
        self.mu, self.var = mu, sigma * sigma

    def predict(self, dt: float, growth: float, sigma_max: float) -> None:
        self.var = min(self.var + growth * growth * dt, sigma_max * sigma_max)

    def update(self, force: float, tan_alpha: float, c_alpha: float, d_fz: float, f_x: float, noise: float) -> None:
        """EKF step with the measured force ``force`` [N]; ``d_fz`` = D F_z [N], ``f_x`` the axle's longitudinal force."""
        def model(mu: float) -> float:
            peak = math.sqrt(max((mu * d_fz) ** 2 - f_x * f_x, (0.1 * mu * d_fz) ** 2))
            return fiala_force(tan_alpha, c_alpha, peak)

        h = 1e-4
        pred = model(self.mu)
        slope = (model(self.mu + h) - model(self.mu - h)) / (2.0 * h)
        s = slope * slope * self.var + noise * noise
        gain = self.var * slope / s
        self.mu = min(max(self.mu + gain * (force - pred), _MU_BOUNDS[0]), _MU_BOUNDS[1])
        self.var = max((1.0 - gain * slope) * self.var, 1e-8)


class GripEstimator:
    """Per-axle friction estimate from the measured response (see the module doc).

    Parameters
    ----------
    params : DynamicParams
        The car as the dynamic prediction model knows it (mass, yaw inertia, axle distances, CG height,
        tyre stiffness and peak factors).
    config : GripConfig
    """

    def __init__(self, params: Any, config: GripConfig) -> None:
        self.params = params
        self.config = config
        p = params
        L = p.l_f + p.l_r
        self._L = L
        fzf, fzr = p.mass * p.g * p.l_r / L, p.mass * p.g * p.l_f / L
        c_f, c_r = p.cornering_stiffness  # at the model's mu: B C D mu F_z
        self._c = (c_f, c_r)
        self._fz_static = (fzf, fzr)
        self.reset()

    def reset(self) -> None:
        """Back to the nominal friction with the initial uncertainty; forget the last sample."""
        cfg = self.config
        self._axles = (_Axle(cfg.mu_nominal, cfg.sigma0), _Axle(cfg.mu_nominal, cfg.sigma0))
        self._last: tuple[float, float, float, float] | None = None  # t, v_x, v_y (CG), r
        self._sliding = False

    @property
    def estimate(self) -> GripEstimate:
        """The current estimate."""
        f, r = self._axles
        return GripEstimate(f.mu, r.mu, math.sqrt(f.var), math.sqrt(r.var), self._sliding, self.config.mu_nominal,
                            self.config.margin)

    def update(self, t: float, measured: Mapping[str, float] | None, delta: float | None) -> GripEstimate:
        """One step with the measurement at time ``t`` [s] and the steering ``delta`` [rad] applied since the last.

        ``measured`` holds ``v_x``, ``v_y`` (rear axle) [m/s] and ``r`` [rad/s]; without them (or below
        :data:`GRIP_MIN_SPEED`) the estimate only ages.
        """
        self._sliding = False
        cfg = self.config
        if not measured or "r" not in measured or "v_y" not in measured or "v_x" not in measured:
            return self.estimate
        p = self.params
        v_x, r = float(measured["v_x"]), float(measured["r"])
        v_y = float(measured["v_y"]) + p.l_r * r  # at the CG
        last, self._last = self._last, (float(t), v_x, v_y, r)
        if last is None:
            return self.estimate
        dt = float(t) - last[0]
        if not dt > 0.0:
            return self.estimate
        for axle in self._axles:
            axle.predict(dt, cfg.sigma_growth, cfg.sigma_max)
        vx_m, vy_m, r_m = 0.5 * (v_x + last[1]), 0.5 * (v_y + last[2]), 0.5 * (r + last[3])
        if delta is None or vx_m < GRIP_MIN_SPEED or not all(map(math.isfinite, (v_x, v_y, r, delta))):
            return self.estimate
        a_y = (v_y - last[2]) / dt + vx_m * r_m
        a_x = (v_x - last[1]) / dt - vy_m * r_m
        r_dot = (r - last[3]) / dt
        self._update_axles(a_x, a_y, r_dot, vx_m, vy_m, r_m, float(delta))
        beta = math.atan2(vy_m, vx_m)
        if abs(beta) > cfg.slide_sideslip and not self._sliding:
            self._slide_all(a_x, a_y)
        return self.estimate

    def _update_axles(self, a_x: float, a_y: float, r_dot: float, v_x: float, v_y: float, r: float,
                      delta: float) -> None:
        p, L = self.params, self._L
        m, g = p.mass, p.g
        fy = ((m * a_y * p.l_r + p.I_z * r_dot) / L, (m * a_y * p.l_f - p.I_z * r_dot) / L)
        fz = (max(m * (g * p.l_r - a_x * p.h_cg) / L, 0.1 * self._fz_static[0]),
              max(m * (g * p.l_f + a_x * p.h_cg) / L, 0.1 * self._fz_static[1]))
        tan_a = (math.tan(delta - math.atan((v_y + p.l_f * r) / v_x)), -(v_y - p.l_r * r) / v_x)
        share = fz[0] / (fz[0] + fz[1])
        fx = (m * a_x * share, m * a_x * (1.0 - share))
        for i, (axle, d) in enumerate(zip(self._axles, (p.tyre_D_f, p.tyre_D_r), strict=True)):
            d_fz = d * fz[i]
            peak = math.sqrt(max((axle.mu * d_fz) ** 2 - fx[i] ** 2, (0.1 * axle.mu * d_fz) ** 2))
            slide = 3.0 * peak / self._c[i]
            if abs(tan_a[i]) > GRIP_SLIDE_SLIP_MARGIN * slide:
                shown = math.hypot(fy[i], fx[i]) / d_fz
                if shown < axle.mu:
                    axle.mu = max(shown, _MU_BOUNDS[0])
                    axle.var = min(axle.var, (GRIP_FORCE_NOISE * 2.0) ** 2)
                self._sliding = True
                logger.debug("grip: %s axle slides (tan alpha %.3f beyond %.3f): mu %.3f", ("front", "rear")[i],
                             tan_a[i], slide, axle.mu)
                continue
            noise = GRIP_FORCE_NOISE * fz[i] * (1.0 + (a_x / (0.3 * g)) ** 2)
            axle.update(fy[i], tan_a[i], self._c[i], d_fz, fx[i], noise)

    def _slide_all(self, a_x: float, a_y: float) -> None:
        """The body slides (sideslip beyond its bound): both axles at most the grip the car shows."""
        p = self.params
        shown = math.hypot(a_x, a_y) / (p.g * max(p.tyre_D_f, p.tyre_D_r))
        for axle in self._axles:
            if shown < axle.mu:
                axle.mu = max(shown, _MU_BOUNDS[0])
        self._sliding = True


class GripLimits:
    """The controller's side of the estimate: every step it updates the estimator and scales the limits.

    What scales with the share ``rho`` (:meth:`GripEstimate.plan_ratio`) of the nominal grip: ``a_y_max``,
    ``decel_max``, ``accel_max`` (and with them the QP's bounds, rates and friction-ellipse cuts), the safe
    stop's ``brake_decel`` (never more than the estimated braking grip), the whole-path speed ceilings (by
    ``sqrt(rho)``: every acceleration of their forward-backward pass scales by ``rho``, so their ``v^2`` does,
    or less where ``v_max`` caps them) and the prediction model's tyre peak (``D rho`` with ``B / rho``: the
    same cornering stiffness, an earlier saturation). Built by :meth:`for_controller`.

    Attributes
    ----------
    estimator : GripEstimator
    ratio : float
        The share of the nominal limits in use (1 = as set).
    last : GripEstimate
        The estimate of the last step.
    """

    def __init__(self, mpc: Any) -> None:
        st = mpc.settings
        params = mpc.model.params
        self.mpc = mpc
        self._base = st
        self._params0 = params
        cfg = GripConfig(mu_nominal=float(st.grip_mu if st.grip_mu is not None else params.mu),
                         sigma0=st.grip_sigma_max, sigma_growth=st.grip_sigma_growth, sigma_max=st.grip_sigma_max,
                         margin=st.grip_margin, slide_sideslip=st.grip_slide_sideslip)
        self.estimator = GripEstimator(params, cfg)
        sampler = mpc._sampler
        self._table0 = sampler.table.copy()
        qp = mpc.qp
        self._cuts0 = (qp._cut_a.copy(), qp._cut_y.copy()) if mpc.layout.n_cuts else None
        self.ratio = 1.0
        self.last = self.estimator.estimate

    @classmethod
    def for_controller(cls, mpc: Any) -> GripLimits | None:
        """The applier for ``mpc`` when ``settings.grip_estimation`` is on and its prediction model has tyres
        (the dynamic model), else None (with a warning when the estimation was asked for)."""
        if not mpc.settings.grip_estimation:
            return None
        params = getattr(mpc.model, "params", None)
        if params is None or not hasattr(params, "tyre_D_f") or not mpc.model.MEASURES:
            logger.warning("grip_estimation: the %s prediction model has no tyres and measures no v_y, r; the grip "
                           "is not estimated (use prediction_model: dynamic)", mpc.model.name)
            return None
        return cls(mpc)

    def reset(self) -> None:
        """Back to the nominal grip and limits (a new run)."""
        self.estimator.reset()
        self.last = self.estimator.estimate
        if self.ratio != 1.0:
            self._apply(1.0)

    def step(self, t: float, measured: Mapping[str, float] | None, delta: float | None) -> GripEstimate:
        """Update the estimate with this step's measurement and re-scale the limits when it moved."""
        est = self.last = self.estimator.update(t, measured, delta)
        ratio = est.plan_ratio()
        if abs(ratio - self.ratio) > RATIO_STEP or (est.sliding and ratio < self.ratio):
            if est.sliding and ratio < self.ratio:
                logger.info("grip: sliding at t = %.2f s; limits lowered at once to %.0f %% (mu %.3f)", t,
                            100 * ratio, est.mu)
            self._apply(ratio)
        return est

    def _apply(self, ratio: float) -> None:
        """Scale every limit of the controller to ``ratio`` of the settings' (see the class doc)."""
        mpc, base = self.mpc, self._base
        self.ratio = ratio
        st = base.replace(a_y_max=ratio * base.a_y_max, decel_max=ratio * base.decel_max,
                          accel_max=ratio * base.accel_max,
                          brake_decel=min(base.brake_decel, ratio * base.decel_max))
        mpc.settings = mpc.qp.settings = mpc.safeguards.settings = st
        qp, model = mpc.qp, mpc.model
        lo, hi = model.input_bounds(st)
        views = qp._views
        views["box_l"][:] = np.maximum(lo, -QP_INF)
        views["box_u"][:] = np.minimum(hi, QP_INF)
        qp._box_lo0, qp._box_hi0 = views["box_l"][0].copy(), views["box_u"][0].copy()
        qp._rate_dn, qp._rate_up = model.input_rates(st)
        if self._cuts0 is not None:
            qp._cut_a = self._cuts0[0] / ratio
            qp._cut_y = self._cuts0[1] / ratio
            qp._cut_ga = np.broadcast_to(qp._cut_a, qp._cut_ga.shape)
        sampler = mpc._sampler
        table = self._table0.copy()
        table[:, 3] *= math.sqrt(ratio)  # the speed reference
        table[:, 7] *= math.sqrt(ratio)  # the speed ceiling
        sampler.table = table
        sampler._linear = LinearTable(sampler.s, table)
        p = self._params0
        model.params = replace(p, tyre_D_f=p.tyre_D_f * ratio, tyre_D_r=p.tyre_D_r * ratio,
                               tyre_B_f=p.tyre_B_f / ratio, tyre_B_r=p.tyre_B_r / ratio)

