"""One axle's friction estimate and how a reading moves it (used by :class:`~mpc_tracking.mpc.grip.GripEstimator`).

The estimator (:mod:`mpc_tracking.mpc.grip`) works out, every step, what each axle showed -- a slide, a grip held at
the limit, a reading through a slip control, grip without a slide -- and tells the axle's
:class:`AxleEstimate`, which moves its estimate (model units: the grip ``|F| / (D F_z)`` the axle shows) and its
variance by the rules below: a slide drops the estimate within the step (by at most :data:`GRIP_MAX_DROP`), a
reading through a slip control is a lower bound with a ceiling the next corners probe up to
(:data:`GRIP_PROBE_RATE`), grip shown above the estimate raises it at once, and a confirmed estimate creeps back
towards the nominal friction (:data:`GRIP_RECOVERY_RATE`).

>>> axle = AxleEstimate(mu=1.0, sigma=0.05)
>>> axle.slid(0.6, reference=1.0)          # a slide showing 0.6: the estimate drops to it within the step
>>> axle.mu, round(axle.var ** 0.5, 3)
(0.6, 0.03)
>>> axle.slid(0.3, reference=1.0)          # within the same slide a sample past the peak reads low: held
>>> axle.mu
0.6
"""
from __future__ import annotations

import math

__all__ = ["AxleEstimate", "GRIP_MAX_DROP", "GRIP_SLIDE_MEMORY", "GRIP_CONFIRM_SHARE", "GRIP_SIGMA_CONFIRMED",
           "GRIP_SIGMA_SLIDE", "GRIP_RECOVERY_RATE", "GRIP_SLIP_CONTROL_SHARE", "GRIP_PROBE_RATE",
           "GRIP_SUSTAIN_SAMPLES", "MU_BOUNDS"]

#: at most this share of the estimate goes in one step of sliding [-] (one bad sample cannot take it all). 0.5: at
#: 0.25 the first step of a slide on a road 0.9 -> 0.6 took the estimate to 0.80 only, and when the plan's lower
#: limits ended the slide there it stayed at 0.80 (rain, 2 s into cornering: 34 % off on one generated circuit).
#: Only with :data:`GRIP_SLIDE_MEMORY`: without it 0.5 let a second slide's low reading through (below)
GRIP_MAX_DROP = 0.5
#: the most grip an axle showed in a slide still counts this long [s] after it grips again: a slide that follows
#: within it reads at least that. An axle whose force fell because the command did (the plan lowered its limits
#: after the first slide) is still past its curve by its slip angle for a moment and reads low: a driven axle that
#: showed 0.60 spinning up (road 0.6) read 0.30 0.15 s later, and the plan dropped to a third of its limits and
#: left the track (rain, generated circuit gen3_7 of seed 3)
GRIP_SLIDE_MEMORY = 0.5
#: an axle showing this share of the estimate without sliding confirms it [-]
GRIP_CONFIRM_SHARE = 0.75
#: standard deviation of an estimate confirmed at the grip the limits stand for, as a share of it [-]
GRIP_SIGMA_CONFIRMED = 0.003
#: standard deviation of a slide's reading, as a share of it [-] (the grip shown varies by a few percent with the
#: speed, the load transfer and the steering: the plan keeps this margin until the car holds the reference again)
GRIP_SIGMA_SLIDE = 0.05
#: while confirmed, the estimate rises back towards the nominal friction at this rate [1/s]
GRIP_RECOVERY_RATE = 0.002
#: a slip control (an ABS, a traction control) holds a wheel at no less than this share of its peak [-]: a reading of
#: a car braking or accelerating short of the command through one is a lower bound of the road's grip, and the road
#: at most the reading over this share (real systems hold 0.85-1.0 of the peak; the 3D car's actuator 0.9 of the
#: road's). Such a reading lowers the limits at once, and the next corners probe up to that ceiling
#: (:data:`GRIP_PROBE_RATE`): the rear-drive sedan whose traction control held its wheels at 0.9 of a mu 0.6 road's
#: grip read it as 0.515 and kept that for the rest of the lap
GRIP_SLIP_CONTROL_SHARE = 0.85
#: after a reading through a slip control, an axle that shows the estimate in a corner without sliding (at least
#: :data:`GRIP_CONFIRM_SHARE` of it) raises it at this rate [1/s, share of the reference], up to the reading's
#: ceiling (:data:`GRIP_SLIP_CONTROL_SHARE`); a slide reads the road and ends the probe. 0.1 against 0.05: the
#: same 160 rain and patch laps of 40 generated circuits (the same overshoots), the estimate within 10 % of the road
#: 2 s into cornering in 34 of 40 lap-start rain laps instead of 32
GRIP_PROBE_RATE = 0.1
#: the grip an axle shows counts as the least over this many consecutive samples (a force it held) [-]
GRIP_SUSTAIN_SAMPLES = 3
#: friction range of the estimate [-]
MU_BOUNDS = (0.05, 2.0)


class AxleEstimate:
    """One axle's estimate (model units) and its variance."""

    def __init__(self, mu: float, sigma: float) -> None:
        self.mu, self.var = mu, sigma * sigma
        self.shown_in_slide = 0.0  # the most grip shown during the current slide (0: not sliding)
        self.lateral_in_slide = 1.0  # the lateral share of that reading
        self.lateral = 1.0  # lateral share |F_y| / |F| of the reading the estimate stands on (1: the reference's)
        self.since_slide = math.inf  # time the axle has gripped since it last slid [s]
        self.recent: list[float] = []  # the grip shown in the last GRIP_SUSTAIN_SAMPLES samples
        self.recent_driving: list[float] = []  # the same with all of a driving force on this axle
        self.slide_samples = 0  # consecutive samples with the tyre past its curve
        self.ceiling: float | None = None  # the most the road may hold after a reading through a slip control
        self.probe_to: float | None = None  # the confirmed estimate a first slide broke (GRIP_SLIDE_PROBE)
        self.shown_best = 0.0  # the most grip the axle has shown without sliding since the reset

    def sustained(self, shown: float, recent: list[float] | None = None) -> float:
        """The grip the axle held over the last :data:`GRIP_SUSTAIN_SAMPLES` samples (with ``shown``): their
        least (a force held, not the peak of one sample's noise in the accelerations or the load transfer)."""
        recent = self.recent if recent is None else recent
        recent.append(shown)
        del recent[:-GRIP_SUSTAIN_SAMPLES]
        return min(recent)

    def age(self, dt: float, growth: float, sigma_max: float) -> None:
        """No information for ``dt`` [s]: the variance grows (capped)."""
        self.var = min(self.var + growth * growth * dt, max(sigma_max * sigma_max, self.var))

    def slid(self, shown: float, reference: float, lateral: float = 1.0, probe: bool = False) -> None:
        """The axle slid showing the grip ``shown``: the estimate drops to it (by at most GRIP_MAX_DROP) -- or,
        when it was a lower bound (a reading through a slip control), becomes it --, with the standard deviation
        of a slide's reading (:data:`GRIP_SIGMA_SLIDE` of it; no more than the reading is short of
        ``reference``, the grip the limits stand for: a slide at that grip confirms the limits).

        A new slide (not within :data:`GRIP_SLIDE_MEMORY` of the last) ends a probe; with ``probe`` (the first
        slide off a confirmed estimate, :data:`GRIP_SLIDE_PROBE`) it starts one back up to the estimate it broke."""
        if self.shown_in_slide == 0.0:
            self.probe_to = self.mu if probe else None
        # the grip is at least the most the axle held during this slide (one sample past the peak reads low)
        if shown >= self.shown_in_slide:
            self.shown_in_slide, self.lateral_in_slide = shown, lateral
        shown, lateral = self.shown_in_slide, self.lateral_in_slide
        self.since_slide = 0.0
        if shown < self.mu:
            self.mu = max(shown, (1.0 - GRIP_MAX_DROP) * self.mu, MU_BOUNDS[0])
            self.lateral = lateral
        elif self.ceiling is not None:  # the estimate was a lower bound: a reading of the road replaces it
            self.mu, self.lateral = min(shown, MU_BOUNDS[1]), lateral
        self.ceiling = None  # a slide reads the road (a reading through a slip control sets it again after this)
        confirmed = GRIP_SIGMA_CONFIRMED * reference
        self.var = min(GRIP_SIGMA_SLIDE * self.mu, max(confirmed, reference - self.mu)) ** 2

    def slid_under_control(self, shown: float, reference: float, lateral: float = 1.0) -> None:
        """A reading through a slip control (:data:`GRIP_SLIP_CONTROL_SHARE`): :meth:`slid` at ``shown``, a lower
        bound, and the road at most ``shown`` over that share -- the ceiling corners probe up to."""
        self.slid(shown, reference, lateral)
        self.ceiling = max(self.mu, self.shown_in_slide / GRIP_SLIP_CONTROL_SHARE)

    def held(self, shown: float, reference: float, lateral: float = 1.0) -> None:
        """The tyre is past its curve while the whole car holds the grip the limits as set ask for: at the limit,
        not a slipperier road. ``shown`` is a lower bound (it may raise the estimate); at ``reference`` it confirms
        the limits; otherwise the estimate holds (no recovery while a tyre is past its curve)."""
        if shown > self.mu:
            self.mu, self.lateral = min(shown, MU_BOUNDS[1]), lateral
        if self.mu >= reference:
            self.var = min(self.var, (GRIP_SIGMA_CONFIRMED * reference) ** 2)

    def gripped(self, shown: float, dt: float, mu_max: float, reference: float, lateral: float = 1.0) -> None:
        """The axle showed ``shown`` without sliding: a lower bound, and near the estimate a confirmation (below
        ``reference``, the grip the limits stand for, a slide's uncertainty stays: the car has not shown more).
        The slide's reading is forgotten after :data:`GRIP_SLIDE_MEMORY` of grip."""
        self.since_slide += dt
        self.shown_best = max(self.shown_best, shown)
        if self.since_slide >= GRIP_SLIDE_MEMORY:
            self.shown_in_slide = 0.0
        if shown > self.mu:
            self.mu, self.lateral = min(shown, MU_BOUNDS[1]), lateral
        if shown >= GRIP_CONFIRM_SHARE * min(self.mu, reference):
            confirmed = GRIP_SIGMA_CONFIRMED * reference
            floor = confirmed if self.mu >= reference else max(confirmed, GRIP_SIGMA_SLIDE * self.mu)
            self.var = min(self.var, floor ** 2)
            ceiling = self.ceiling if self.ceiling is not None else self.probe_to
            if ceiling is not None and lateral > 0.5 and self.mu < ceiling:  # a corner: probe up to the ceiling
                self.mu = min(self.mu + GRIP_PROBE_RATE * reference * dt, ceiling, mu_max)
            elif self.mu < mu_max:
                self.mu = min(self.mu + GRIP_RECOVERY_RATE * dt, mu_max)
            if self.ceiling is not None and self.mu >= min(self.ceiling, mu_max):
                self.ceiling = None
            if self.probe_to is not None and self.mu >= min(self.probe_to, mu_max):
                self.probe_to = None
