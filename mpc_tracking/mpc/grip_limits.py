"""The controller's side of the online grip estimate (:mod:`mpc_tracking.mpc.grip`): every step it updates the
estimator with the measurement and scales every limit of the controller to the share of the nominal grip the
estimate's lower confidence bound leaves -- the QP's bounds, rates and friction-ellipse cuts, the safe stop's
braking, the whole-path speed ceilings and the prediction model's tyre peak.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from mpc_tracking.mpc.grip import RATIO_STEP, GripConfig, GripEstimate, GripEstimator
from mpc_tracking.mpc.grip_probe import BrakeTest
from mpc_tracking.mpc.qp import INF as QP_INF
from mpc_tracking.paths.interpolation import LinearTable

__all__ = ["GripLimits"]

#: the grip estimate's messages come from one logger, the estimator's (users filter by it)
logger = logging.getLogger("mpc_tracking.mpc.grip")


class GripLimits:
    """The controller's side of the estimate: every step it updates the estimator and scales the limits.

    What scales with the share ``rho`` (:meth:`GripEstimate.plan_ratio`) of the nominal grip: ``a_y_max``,
    ``decel_max``, ``accel_max`` (and with them the QP's bounds, rates and friction-ellipse cuts), the safe
    stop's ``brake_decel`` (never more than the estimated braking grip), the whole-path speed ceilings (by
    ``sqrt(rho)``: every acceleration of their forward-backward pass scales by ``rho``, so their ``v^2`` does,
    or less where ``v_max`` caps them) and the prediction model's tyre peak (``D rho`` with ``B / rho``: the
    same cornering stiffness, an earlier saturation). Built by :meth:`for_controller`.

    Except the braking limit while the estimate stands on a braking reading (:attr:`GripEstimate.decel_held`:
    the car braked short of the plan's command, its tyres at their peak): it stays as set, so the plan keeps
    commanding at least what the road gives and the car keeps braking at the road's peak. Scaled by the share
    the plan asks for less than the road gives (the sedan: 3.6 m/s^2 where the road gave 4.8); capped at the
    deceleration held, with the friction ellipse at the lowered lateral limit taking more off, the dry vehicle
    file on the wet sedan braked less into the first corners of three of six real tracks and left them
    (``bench_grip_change.py --shared ...``). The safe stop brakes at most at the deceleration held. The same while
    the estimate is a lower bound (:attr:`GripEstimate.lower_bound`: a reading through the car's traction control
    or ABS, the road likely grippier): scaled by it, the sedan braked at 4.1 m/s^2 for a corner after rain read
    under power (0.51 on a 0.6 road) where the road gave 4.7, and ran 2.5 m past the edge (gen5_0 of seed 5,
    started on its straight; an oracle of the road stayed on). As set, a command beyond the road's grip is held at
    the peak by the ABS, and read. The safe stop then brakes at most at the estimate's share.

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
        mu_nominal = float(st.grip_mu if st.grip_mu is not None else params.mu)
        sigma_max = st.grip_sigma_max * mu_nominal  # the settings give the uncertainty as a share of grip_mu
        # the lateral limit the settings stand for (a_y_max is grip_fraction of it): the grip an axle shows there
        reference = st.a_y_max / (st.grip_fraction * params.g)
        cfg = GripConfig(mu_nominal=mu_nominal, sigma0=sigma_max, sigma_growth=st.grip_sigma_growth * mu_nominal,
                         sigma_max=sigma_max, margin=st.grip_margin, slide_sideslip=st.grip_slide_sideslip,
                         mu_reference=reference if math.isfinite(reference) and reference > 0 else None,
                         grip_fraction=st.grip_fraction, road_units="load",
                         brake_reference=None if st.grip_brake_limit is None else st.grip_brake_limit / params.g,
                         drive=st.grip_drive)
        self.estimator = GripEstimator(params, cfg)
        sampler = mpc._sampler
        self._table0 = sampler.table.copy()
        qp = mpc.qp
        self._cuts0 = (qp._cut_a.copy(), qp._cut_y.copy()) if mpc.layout.n_cuts else None
        self.ratio = 1.0
        self.decel_held: float | None = None  # the braking limit's floor in use (GripEstimate.decel_held)
        self.lower_bound = False  # the braking limit kept as set for a lower-bound estimate (GripEstimate)
        self.last = self.estimator.estimate
        self._informed = False  # a measurement of v_y and r has arrived (until then the limits stay as set)
        #: the brake test while the grip is not confirmed (``settings.grip_probe``), or None
        self.probe: BrakeTest | None = BrakeTest(st.grip_probe_time, self.last) if st.grip_probe else None

    @classmethod
    def for_controller(cls, mpc: Any) -> GripLimits | None:
        """The applier for ``mpc`` when ``settings.grip_estimation`` is on (the default) and its prediction model
        has tyres and measures ``v_y``, ``r`` (the dynamic model), else None (one info message: the estimation is
        on by default, and the kinematic model cannot do it)."""
        if not mpc.settings.grip_estimation:
            return None
        params = getattr(mpc.model, "params", None)
        if params is None or not hasattr(params, "tyre_D_f") or not mpc.model.MEASURES:
            logger.info("grip_estimation: the %s prediction model has no tyres and measures no v_y, r; the grip "
                        "is not estimated (prediction_model: dynamic does)", mpc.model.name)
            return None
        return cls(mpc)

    def reset(self) -> None:
        """Back to the nominal grip and limits (a new run)."""
        self.estimator.reset()
        self.last = self.estimator.estimate
        self._informed = False
        if self.probe is not None:
            self.probe.reset(self.last)
        if self.ratio != 1.0 or self.decel_held is not None or self.lower_bound:
            self._apply(1.0)

    def solved(self, sol: Any, t: float, measured: Mapping[str, float] | None) -> None:
        """After a solved step: the brake test (:class:`~mpc_tracking.mpc.grip_probe.BrakeTest`) when it is due
        or running -- it replaces the first command's acceleration in ``sol``, in place."""
        if self.probe is not None and self._informed:
            self.probe.apply(self.mpc, sol, t, measured, self.last)

    def step(self, t: float, measured: Mapping[str, float] | None, delta: float | None,
             a_x_cmd: float | None = None) -> GripEstimate:
        """Update the estimate with this step's measurement (and the steering ``delta`` [rad] and longitudinal
        acceleration ``a_x_cmd`` [m/s^2] commanded since the last) and re-scale the limits when it moved (not
        before the first measurement of ``v_y`` and ``r``: a car that reports none keeps the limits as set)."""
        est = self.last = self.estimator.update(t, measured, delta, a_x_cmd)
        if not self._informed:
            if not measured or not all(k in measured for k in ("v_x", "v_y", "r")):
                return est
            self._informed = True
        ratio = est.plan_ratio()
        if (abs(ratio - self.ratio) > RATIO_STEP or (est.sliding and ratio < self.ratio)
                or est.decel_held != self.decel_held or est.lower_bound != self.lower_bound):
            if est.sliding and ratio < self.ratio:
                logger.info("grip: sliding at t = %.2f s; limits lowered at once to %.0f %% (mu %.3f)", t,
                            100 * ratio, est.mu)
            self._apply(ratio, est.decel_held, est.lower_bound)
        return est

    def _apply(self, ratio: float, decel_held: float | None = None, lower_bound: bool = False) -> None:
        """Scale every limit of the controller to ``ratio`` of the settings' (see the class doc). While the
        estimate stands on a braking reading (``decel_held`` [m/s^2], :attr:`GripEstimate.decel_held`) the
        braking limit stays as set and the safe stop brakes at most at ``decel_held``; while it is a
        ``lower_bound`` (:attr:`GripEstimate.lower_bound`) the braking limit stays as set too."""
        mpc, base = self.mpc, self._base
        self.ratio, self.decel_held, self.lower_bound = ratio, decel_held, lower_bound
        decel = ratio * base.decel_max
        stop = min(base.brake_decel, decel if decel_held is None else decel_held)
        if decel_held is not None or lower_bound:
            decel = base.decel_max
        st = base.replace(a_y_max=ratio * base.a_y_max, decel_max=decel, accel_max=ratio * base.accel_max,
                          brake_decel=stop)
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
        sampler.use_kernels(sampler._kernels)  # the compiled sampler keeps its own copy of the table
        p = self._params0
        model.params = replace(p, tyre_D_f=p.tyre_D_f * ratio, tyre_D_r=p.tyre_D_r * ratio,
                               tyre_B_f=p.tyre_B_f / ratio, tyre_B_r=p.tyre_B_r / ratio)

