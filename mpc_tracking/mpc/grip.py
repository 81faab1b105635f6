"""Online grip estimation: the road's friction from the measured response, per axle, with a confidence.

Every control step the estimator (:class:`GripEstimator`) gets the measured body-frame velocities of the
rear axle (``v_x``, ``v_y``) and the yaw rate ``r`` -- what the closed loop measures for the dynamic
prediction model -- and the steering angle applied over the last period. From two consecutive samples
(period ``T``) it forms, at their midpoint,

* the accelerations ``a_y = dv_y/dt + v_x r`` (CG), ``a_x = dv_x/dt - v_y r`` and ``r' = dr/dt``;
* the axle forces of the single-track force and moment balance ``F_yf = (m a_y l_r + I_z r') / L``,
  ``F_yr = (m a_y l_f - I_z r') / L``, ``F_x`` split by the loads, and the loads with the longitudinal
  transfer ``F_zf = m (g l_r - a_x h) / L``, ``F_zr = m (g l_f + a_x h) / L``;
* the axle slip angles ``alpha_f = delta - atan((v_y + l_f r) / v_x)``, ``alpha_r = -atan((v_y - l_r r) / v_x)``
  (``v_y`` of the CG), and the grip each axle *shows*, ``|F| / (D F_z)`` (``D`` its peak factor).

What the data say about the friction ``mu`` of an axle (in the units of the prediction model's tyres, the grip
``|F| / (D F_z)`` it shows; the grip an axle counts as showing is the least over the last
:data:`GRIP_SUSTAIN_SAMPLES` samples, a force it held, not one sample's noise):

* **Sliding** (the axle's slip angle beyond :data:`GRIP_SLIDE_SLIP_MARGIN` times the slip where its tyre curve
  reaches 98 % of its peak at the current estimate; or the axle shows less force than that curve by
  :data:`GRIP_FORCE_DEFICIT` of its load -- the force residual, which a road slipperier than the estimate
  gives as soon as the tyres pass their real peak; or the body's sideslip beyond ``grip_slide_sideslip``; the
  curve at another ``mu`` is the identified one carried by similarity, ``F_y = P phi(alpha D mu_0 F_z / P)``
  with the peak ``P = D mu F_z``: a wet road keeps the cornering stiffness and saturates earlier):
  the tyre is at its peak, so the grip it shows **is** the friction. A tyre past its curve for
  :data:`GRIP_SLIDE_SAMPLES` consecutive samples (the sideslip: at once) slides: the estimate drops to the grip
  shown (the most the axle held during the slide -- and during a slide that ended less than
  :data:`GRIP_SLIDE_MEMORY` before --, by at most :data:`GRIP_MAX_DROP` of itself per step), its
  standard deviation becomes :data:`GRIP_SIGMA_SLIDE` of it and the step is flagged
  (:attr:`GripEstimate.sliding`): the controller lowers its limits within that step.

  The split of the car's longitudinal force between the axles (brake balance, driven axle) is not measured:
  the per-axle figures assume the split by the loads, and a slide must show whatever the split is -- the
  slip test uses the saturation slip of the whole peak, the force test the curve with all of ``m a_x`` on
  the axle (under trail braking the load split read the dry sedan's front axle 20 % of ``D F_z`` short of its
  curve, and lowered its limits by 12 %). The grip a slide reads is at least the whole car's,
  ``m |a| / sum(D F_z)``: every tyre holds at most ``mu D F_z``, so the road's friction is at least that,
  whatever the split; an axle sliding under power (``a_x > 0``) with less lateral force than ``m a_x`` is the
  driven one spinning up (nothing else uses its grip: a rear axle spinning up on a wet straight shows no lateral
  force), and its grip is read with all of ``m a_x`` on it -- and it counts as past its curve from
  :data:`GRIP_SPIN_SLIP` of its saturation slip (other axles: :data:`GRIP_DEFICIT_SLIP`). And a tyre past its
  curve while the whole car holds at least the grip the limits as set ask for (``grip_fraction`` of the reference,
  :attr:`GripConfig.grip_fraction`) is the car at its limit --
  what the margin ``1 - grip_fraction`` is for --, not a slipperier road: the estimate holds (a grip shown
  above it raises it, at the reference it confirms it).
* **Braking short of the command** (the longitudinal residual, :meth:`GripEstimator.update`'s ``a_x_cmd``: the
  plan's acceleration input): a car that decelerates steadily less than the plan commanded
  (:data:`GRIP_BRAKE_SHORT`, :data:`GRIP_BRAKE_SHORT_SHARE`, :data:`GRIP_BRAKE_STEADY`) has its tyres at their
  peak -- on a straight, where no slip angle tells (a wet patch in a braking zone: read 0.1-0.35 s after the car
  entered it instead of 2.3-3 s later, in the corner). Both axles read the whole car's grip as a slide (unless the
  car holds the grip the limits ask for); while the estimate stands on that reading the controller keeps braking
  at the road's peak (:attr:`GripEstimate.decel_held`): scaled by the share, the sedan would have braked at
  3.6 m/s^2 where the road gave 4.8 -- and entered the corner 2.4 m/s faster. With the car's own braking limit
  (:attr:`GripConfig.brake_reference`, ``settings.grip_brake_limit``: the vehicle file's ``decel_max``) the
  reading is the road's friction ``mu_nominal`` times the deceleration held over it (an ABS holds the wheels
  below their peak on every road alike; the tyre peak counts that as a slipperier road), carried to the grip an
  axle would show at its lateral limit on that road (:meth:`GripEstimator.braking_equivalent`).
* **Through a slip control**: a car's ABS and traction control hold its wheels below their peak on every road (the
  3D car's actuator at 0.9 of the road's), so a reading of a car braking or accelerating short of the command is a
  lower bound of the road: read against the tyre peak, the rear-drive sedan accelerating on a mu 0.6 road read
  0.515. The limits drop to it at once, and the road is at most the reading over :data:`GRIP_SLIP_CONTROL_SHARE`:
  the next corners where the axle shows the estimate without sliding raise it towards that ceiling at
  :data:`GRIP_PROBE_RATE` (a slide there reads the road and ends the probe). A braking reading against the car's own
  braking limit (``brake_reference``) counts its ABS already and is not probed.
* **A first slide, probed**: a tyre's first slide off the reference, on an axle that has confirmed it in this run
  (:data:`GRIP_SLIDE_PROBE`), lowers the limits at once like any slide, and the corners after
  it probe back up to the estimate it broke at :data:`GRIP_PROBE_RATE` (as after a lower bound); a new slide reads
  the road and ends the probe, so a road that really changed costs one more slide. A car whose axle slides for a
  moment at the dry limit -- the tall front-driven SUV turning in at 36 m/s: a yaw and roll overshoot the
  single-track model does not predict, read at 0.67 of a mu 0.9 road -- otherwise kept that reading for the rest
  of the lap (dry laps +5.4 % median on 8 generated circuits).
* **Grip confirmed**: an axle that shows at least :data:`GRIP_CONFIRM_SHARE` of the estimate (at most the
  reference below) without sliding confirms it: at the reference its uncertainty falls to
  :data:`GRIP_SIGMA_CONFIRMED` of it (below, after a slide, it keeps the slide's), and the estimate rises back
  towards the nominal friction at :data:`GRIP_RECOVERY_RATE` per second (the road may have dried: the car
  probes, and a slide takes it back). Grip shown above the estimate raises it at once (a lower bound).
* **Nothing** (straights, gentle corners): the estimate holds; its variance grows by ``grip_sigma_growth^2``
  per second up to ``grip_sigma_max^2`` (both as shares of ``grip_mu``).

In the linear range of the tyres the force does not depend on ``mu``, so no method can read the friction
there without a tyre model exact to a few percent (slip-slope fits with the identified magic formula were
biased by 10-20 % on the 3D sedan, whose tyres are linear up to a clip): this estimator uses only what the
tyre curve's *peak* tells, which the identified model gets right.

**Units.** The estimate is read against the *reference*: the grip an axle shows at the lateral limit the
controller's limits stand for (``a_y_max / (grip_fraction g)``: a_y_max is ``grip_fraction`` of the car's
limit; at most the tyre model's peak ``mu``). The reported friction is ``grip_mu`` times the estimate over the
reference, at most ``grip_mu``. (Against the tyre model's peak instead, an identification that extrapolated
the peak above what the car reached -- the dry sedan: 0.944 on a 0.9 road, the car holding 0.79 g -- read a
mu 0.6 road as 0.55 and planned 14 % below the wet-identified controller.) The controller's estimator maps the
grip shown to the road's friction with the load transfer (``road_units="load"``,
:meth:`GripEstimator.road_friction`): a car holds a larger share of a slipperier road's friction (less load moves
across its axles, and with tyre load sensitivity an axle loses the square of it) -- the sedan 0.88 of mu 0.9 at
its dry limit, 0.93-0.96 of mu 0.6 at its wet one, which the linear share read as 0.64-0.68. The plan's share
of the limits stays the grip shown over the reference: the limits are accelerations the car holds.

The limits the controller plans with (:meth:`GripEstimate.plan_ratio`) use the lower confidence bound
``mu - grip_margin sigma`` of the weaker axle, relative to the nominal friction, at most 1: the plan stays
conservative until grip is confirmed, by at most ``grip_margin * grip_sigma_max`` of the limits.

Example: a car at 20 m/s steering 0.2 rad (a dry model asks for 11 m/s^2) shows 7 m/s^2: it slides, and the
estimate drops within the step to the grip its front axle shows.

>>> from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
>>> est = GripEstimator(DynamicParams.bmw_320i(), GripConfig(mu_nominal=1.0))
>>> for t in (0.0, 0.05):
...     _ = est.update(t, {"v_x": 20.0, "v_y": 0.0, "r": 0.35}, delta=0.20)
>>> e = est.update(0.10, {"v_x": 20.0, "v_y": 0.0, "r": 0.35}, delta=0.20)
>>> e.sliding, round(e.mu_front, 2)
(True, 0.68)
"""
from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc.grip_axle import (
    GRIP_CONFIRM_SHARE,
    GRIP_MAX_DROP,
    GRIP_PROBE_RATE,
    GRIP_RECOVERY_RATE,
    GRIP_SIGMA_CONFIRMED,
    GRIP_SIGMA_SLIDE,
    GRIP_SLIDE_MEMORY,
    GRIP_SLIP_CONTROL_SHARE,
    GRIP_SUSTAIN_SAMPLES,
    MU_BOUNDS,
    AxleEstimate,
)
from mpc_tracking.mpc.grip_tyre import axle_force, lateral_peak, magic_formula, saturation_slip
from mpc_tracking.mpc.settings.grip import DRIVES

__all__ = ["GripEstimator", "GripEstimate", "GripConfig", "magic_formula", "saturation_slip",
           "lateral_peak", "axle_force", "GRIP_SLIDE_SLIP_MARGIN", "GRIP_FORCE_DEFICIT", "GRIP_DEFICIT_SLIP",
           "GRIP_SPIN_SLIP", "GRIP_BRAKE_SHORT", "GRIP_BRAKE_SHORT_SHARE", "GRIP_BRAKE_MIN",
           "GRIP_BRAKE_STEADY", "GRIP_DRIVE_SHORT", "GRIP_DRIVE_LATERAL", "GRIP_DRIVE_SAMPLES",
           "BRAKE_REFERENCE_FLOOR", "DRIVES",
           "GRIP_MAX_DROP", "GRIP_SLIDE_MEMORY",
           "GRIP_CONFIRM_SHARE", "GRIP_SIGMA_CONFIRMED", "GRIP_SIGMA_SLIDE",
           "GRIP_RECOVERY_RATE", "GRIP_SLIP_CONTROL_SHARE", "GRIP_PROBE_RATE", "GRIP_SLIDE_PROBE", "GRIP_MIN_SPEED",
           "GRIP_SUSTAIN_SAMPLES", "GRIP_SLIDE_SAMPLES", "RATIO_STEP"]

logger = logging.getLogger(__name__)

#: an axle slides when its slip angle exceeds its tyre's saturation slip at the estimate by this factor
GRIP_SLIDE_SLIP_MARGIN = 1.15
#: an axle also slides when it shows less force than its tyre curve at the estimate by this share of D F_z [-]
#: (the curve with the least lateral peak the car's longitudinal force leaves, see the module doc). 0.15: the
#: identified tyre curve is short of the dry sedan's axle forces by 10-15 % of D F_z around 0.6 of the saturation
#: slip, where the plan drives it at 0.95 of its limits; at 0.1 that read as a slide (limits -7 %, laps up to
#: +3.6 % on 2 of 6 generated circuits); the wet road's deficit is larger
GRIP_FORCE_DEFICIT = 0.15
#: ... from this share of the saturation slip on [-] (below it the curve's force is within noise of zero, and a
#: plant whose tyres are not the identified curve -- the CommonRoad drift model identified by ``identify`` --
#: shows deficits there: at 0.1 it read false slides on 5 of 5 generated circuits, laps +14-22 % slower than
#: planned and 1-2 of 5 off the track (``bench_identify.py --circuits 5 --seed 1``), at 0.5 none). The cost: a
#: driven axle spinning up on a wet straight counts 1.2 s after the rain begins instead of 0.65 s
GRIP_DEFICIT_SLIP = 0.5
#: ... and from this share of it for an axle spinning up (sliding under power: ``a_x > 0`` and less lateral force
#: than ``m a_x``, see the module doc) [-]. The drive takes the axle's grip and its lateral force collapses at any
#: slip angle: on a wet straight right after a corner (the sideslip of the corner still decaying, the rear slip
#: 0.34 of its saturation slip) a rear axle accelerating at 2.7 m/s^2 was short of its curve by 0.54 of D F_z for
#: 2 s and went unread at 0.5 (rain on generated circuit gen3_1 of seed 3: the estimate stayed at the dry road's
#: for 19.5 s). What GRIP_DEFICIT_SLIP guards against -- a curve that is not the plant's, short by a few tenths
#: of D F_z in a corner -- is not there under power with little lateral force
GRIP_SPIN_SLIP = 0.2
#: a tyre's first slide off the reference, on an axle that has confirmed it in this run (shown at least
#: :data:`GRIP_CONFIRM_SHARE` of it without sliding), lowers the limits at once, and the corners after it probe back
#: up to the estimate it broke (:data:`GRIP_PROBE_RATE`; a new slide reads the road and ends the probe). Not on an
#: axle that has shown less (the dry file on a wet road from the start). Tried first: only on an axle that had held
#: the grip the limits ask for (``grip_fraction`` of the reference, less 5 %) -- then the SUV's first slide on Monza,
#: Spa and the Nuerburgring came in the first corners, before its front had held that, and those dry laps cost
#: 7-9.5 % (0.5-1.3 % with 0.75); 0.75 had lost the oversteering sedan's fast wet start on gen4_1 of seed 4 before
#: the countersteer (``spatial_dynamic.countersteer_bounds``), and completes it with it
GRIP_SLIDE_PROBE = True
#: the car brakes short when it decelerates less than the plan's acceleration command by more than this [m/s^2]
#: ... and by more than :data:`GRIP_BRAKE_SHORT_SHARE` of the command, for :data:`GRIP_SUSTAIN_SAMPLES`
#: consecutive samples while the command brakes by at least :data:`GRIP_BRAKE_MIN`. The 3D sedan on the dry road
#: decelerates within 0.23 m/s^2 of the command held over three samples (generated circuit gen3_2 of seed 3, 630
#: braking samples; the speed loop's own lag); on a mu 0.5 patch its deceleration clamps at 4.83 m/s^2 against a
#: command of 5.9-6.7: short by 1.0-1.9 for 2.3 s, which no lateral reading saw (the car went straight)
GRIP_BRAKE_SHORT = 0.5
#: ... the share of the command [-]
GRIP_BRAKE_SHORT_SHARE = 0.1
#: ... and a command braking by at least this [m/s^2] (below, the speed loop's lag is the larger part), the car
#: decelerating by at least this too, and steadily: its deceleration over those samples within
#: :data:`GRIP_BRAKE_STEADY` (a tyre at its peak holds a plateau; the actuator catching up with a command that
#: switched from accelerating to braking does not -- 0.8, 0.6, 0.2 m/s^2 against -3.3: rain on generated circuit
#: gen3_1 of seed 3, read as a mu 0.24 road without these two conditions)
GRIP_BRAKE_MIN = 1.0
#: ... within this spread [m/s^2]
GRIP_BRAKE_STEADY = 0.3
#: the car accelerates short when it accelerates less than the plan's command by more than this [m/s^2] (and by
#: :data:`GRIP_BRAKE_SHORT_SHARE` of it, steadily, for :data:`GRIP_SUSTAIN_SAMPLES` samples, a command and an
#: acceleration of at least :data:`GRIP_BRAKE_MIN`, on a straight: :data:`GRIP_DRIVE_LATERAL`): its driven wheels
#: spin at their peak. Held over three samples, the dry sedan falls short by at most 0.104 m/s^2 (the six real
#: tracks and 8 generated circuits of seed 9: 0.073-0.104), the wet file on the wet sedan by 0.063; rain starting
#: while it accelerates on a straight at 3.2 m/s^2: short by 0.54 within 0.2 s
#: -- which no slip angle tells (the car goes straight), and in the next corner the rear axle, its grip taken by
#: the drive, let go: a spin (gen3_0 of seed 3 left the track; measured with an actuator whose traction control held
#: the dry road's grip -- one that sees the road keeps the car straight, and the reading comes 4 s before the corner)
GRIP_DRIVE_SHORT = 0.3
#: ... on a straight: the car's lateral acceleration at most this share of the reference's grip [-]. In a corner
#: the tyres' slip angles drag the car (``F_y sin(alpha)``), which the plan's acceleration does not count: the dry
#: sedan leaving Monza's chicanes at 10 m/s and 5.4 m/s^2 laterally fell 0.44 m/s^2 short of a 1.7 m/s^2 command,
#: and read a mu 0.9 road as 0.56 (+19 % lap time); at 0.3 of the reference the drag is under 0.05 m/s^2
GRIP_DRIVE_LATERAL = 0.2
#: ... for this many consecutive samples [-], the plan's command as steady as the car's acceleration over them
#: (:data:`GRIP_BRAKE_STEADY`): the speed loop's lag after a change of the command is not a spinning wheel. Over
#: three samples the dry file on the wet sedan, 0.2 s into a lap started at 29 m/s while the speed loop caught up,
#: read a 0.6 road as 0.48 (+8 % lap time; gen5_5 of seed 5)
GRIP_DRIVE_SAMPLES = 6
#: consecutive samples a tyre must be past its curve (slip or force) to count as sliding [-] (the body's
#: sideslip counts at once)
GRIP_SLIDE_SAMPLES = 2
#: below this speed [m/s] the estimator holds (slip angles are not defined at standstill)
GRIP_MIN_SPEED = 5.0
#: a braking reading counts against at least this share of the lateral reference (:attr:`GripConfig.brake_reference`)
#: [-]. An ABS keeps a wheel near its peak (the 3D sedan's at 0.9 of it: its identified braking limit is 0.95 of
#: its lateral one); a braking limit further below is a setting, not the car's grip, and reading against it would
#: over-read the road (a car braking at 0.9 of its peak reads no more than the peak)
BRAKE_REFERENCE_FLOOR = 0.9
#: the limits are re-scaled when the plan's share of the nominal grip moves by more than this (or drops in a slide)
RATIO_STEP = 0.005
#: a gap in the measurements counts at most this long for the recovery [s] (the car probes while it drives)
_RECOVERY_DT_MAX = 0.2


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
        Growth of the standard deviation without information [1/sqrt(s)] (random walk: the variance grows by
        ``sigma_growth^2 dt``).
    sigma_max : float
        Cap of the standard deviation [-].
    margin : float
        Lower confidence bound used by the plan: ``mu - margin sigma`` [-].
    slide_sideslip : float
        Body sideslip angle beyond which the car counts as sliding [rad].
    mu_reference : float or None
        The grip an axle shows (``|F| / (D F_z)``, the prediction model's units) at the limit the controller's
        limits stand for [-]; None: the model's ``mu`` (its tyre peak). The plan's share of the limits and the
        reported friction are the estimate relative to it, at most 1: an identified tyre peak that was
        extrapolated above what the car reached does not bias them (see
        :meth:`GripLimits.for_controller <mpc_tracking.mpc.grip_limits.GripLimits.for_controller>`).
    grip_fraction : float
        Share of that limit the controller's limits ask for [-] (``settings.grip_fraction``; 1: the limits stand
        at it). A tyre past its curve while the whole car holds at least the grip the limits as set ask for
        (``grip_fraction`` times the reference) does not lower the estimate: those limits are attainable, and
        the margin ``1 - grip_fraction`` is there for such a moment at the limit.
    brake_reference : float or None
        The whole car's grip (``|a| / g``) when it brakes at its limit on the nominal road -- through its own
        brakes and ABS, as identified (the vehicle file's ``decel_max`` over g; ``settings.grip_brake_limit``) --
        or None: the tyre peak, the model's ``m |a| / sum(D F_z)``. A braking reading (the car braking short of
        the command) is read against it: the road's friction is ``mu_nominal`` times the deceleration held over
        this one. An ABS holds each wheel below its peak (the 3D sedan's ``wheel_torque_pi`` at 0.9 of it), which
        the tyre peak counts as a slipperier road: the dry sedan's file read a mu 0.6 road as 0.515 and planned
        14 % below it. At least :data:`BRAKE_REFERENCE_FLOOR` of ``mu_reference`` counts (a braking limit below
        the car's grip would read a road short of it as grippier than it is).
    drive : {"unknown", "rwd", "fwd", "awd"}
        Which axles drive the car, for a car accelerating short of the plan's command (its driven wheels at their
        peak, :data:`GRIP_DRIVE_SHORT`): the driven axle reads the grip it shows carrying all of ``m a_x``
        (``"awd"``: both axles, the whole car's grip). ``"unknown"``: both axles read as if each carried it --
        the undriven one's reading may be low (the sedan's front: 0.52 on a mu 0.6 road), never above the driven
        one's, so the plan does not run above the road.
    road_units : {"linear", "load"}
        How the grip shown maps to the road's friction when ``mu_reference`` is given (the plan's share of the
        limits is the grip shown over the reference either way: the limits are accelerations the car holds).
        ``"linear"``: ``mu_nominal`` times the grip shown over the reference. ``"load"``: the share of the road's
        friction the car holds falls with the square of its grip, ``a / mu = 1 - c a^2`` (tyre load sensitivity:
        a tyre's friction falls linearly with its load, so an axle's loses the square of its lateral load
        transfer, which grows with ``a``), ``c`` from the reference (the car holds ``mu_reference / mu_nominal``
        of the nominal road's friction there); see :meth:`GripEstimator.road_friction`.
    """

    mu_nominal: float = 1.0
    sigma0: float = 0.02
    sigma_growth: float = 0.005
    sigma_max: float = 0.02
    margin: float = 1.0
    slide_sideslip: float = 0.12
    mu_reference: float | None = None
    grip_fraction: float = 1.0
    brake_reference: float | None = None
    drive: str = "unknown"
    road_units: str = "linear"

    def __post_init__(self) -> None:
        for name in ("mu_nominal", "sigma0", "sigma_growth", "sigma_max", "margin", "slide_sideslip"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise SettingsError(f"GripConfig.{name}: expected a finite number >= 0, got {value!r}")
        if self.mu_nominal <= 0:
            raise SettingsError(f"GripConfig.mu_nominal: expected > 0, got {self.mu_nominal!r}")
        if not 0.0 < self.grip_fraction <= 1.0:
            raise SettingsError(f"GripConfig.grip_fraction: expected in (0, 1], got {self.grip_fraction!r}")
        ref = self.mu_reference
        if ref is not None and not (isinstance(ref, (int, float)) and math.isfinite(ref) and ref > 0):
            raise SettingsError(f"GripConfig.mu_reference: expected None or a finite number > 0, got {ref!r}")
        brake = self.brake_reference
        if brake is not None and not (isinstance(brake, (int, float)) and math.isfinite(brake) and brake > 0):
            raise SettingsError(f"GripConfig.brake_reference: expected None or a finite number > 0, got {brake!r}")
        if self.drive not in DRIVES:
            raise SettingsError(f"GripConfig.drive: expected one of {DRIVES}, got {self.drive!r}")
        if self.road_units not in ("linear", "load"):
            raise SettingsError(f"GripConfig.road_units: expected 'linear' or 'load', got {self.road_units!r}")


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
    plan_share : float or None
        Share of the nominal limits the plan may use, worked out by the estimator in the units of the grip shown
        (see :meth:`plan_ratio`); None: from ``mu`` and ``sigma`` (the same where the road units are linear).
    decel_held : float or None
        The deceleration [m/s^2] the car held while it braked short of the plan's command, when the estimate
        stands on that reading; None otherwise. The controller then keeps its braking limit as set (the tyres
        are at their peak: a command beyond it keeps them there) and its safe stop within this deceleration
        (:class:`~mpc_tracking.mpc.grip_limits.GripLimits`).
    lower_bound : bool
        The estimate stands on a reading through a slip control (an axle's probe ceiling is set,
        :data:`GRIP_SLIP_CONTROL_SHARE`): the road gives at least this, likely more. The controller keeps its
        braking limit as set meanwhile (a braking command beyond the road's grip is held at its peak by the ABS,
        and read), so a lower bound does not make the car brake less than the road gives.
    """

    mu_front: float
    mu_rear: float
    sigma_front: float
    sigma_rear: float
    sliding: bool
    mu_nominal: float
    margin: float = 1.0
    plan_share: float | None = None
    decel_held: float | None = None
    lower_bound: bool = False

    @property
    def mu(self) -> float:
        """The car's grip [-]: the weaker axle's estimate."""
        return min(self.mu_front, self.mu_rear)

    @property
    def sigma(self) -> float:
        """Standard deviation of :attr:`mu` [-] (the weaker axle's)."""
        return self.sigma_front if self.mu_front <= self.mu_rear else self.sigma_rear

    def plan_ratio(self) -> float:
        """Share of the nominal limits the plan may use, in (0, 1]: ``plan_share`` when the estimator gave it (the
        lower confidence bound of the grip shown over the reference: the limits are accelerations the car holds,
        which scale with the grip shown, not with the road's friction), else ``(mu - margin sigma) / mu_nominal``
        of the weaker axle."""
        if self.plan_share is not None:
            return self.plan_share
        low = min(self.mu_front - self.margin * self.sigma_front, self.mu_rear - self.margin * self.sigma_rear)
        return float(min(1.0, max(MU_BOUNDS[0], low) / self.mu_nominal))


class GripEstimator:
    """Per-axle friction estimate from the measured response (see the module doc).

    Parameters
    ----------
    params : DynamicParams
        The car as the dynamic prediction model knows it (mass, yaw inertia, axle distances, CG height,
        tyre curves and peak factors, the friction ``mu`` its tyres were identified at).
    config : GripConfig
        ``mu_nominal`` is the road friction the model stands for (reported estimates are in its units).
    """

    def __init__(self, params: Any, config: GripConfig) -> None:
        self.params = params
        self.config = config
        p = params
        L = p.l_f + p.l_r
        self._L = L
        self._fz_static = (p.mass * p.g * p.l_r / L, p.mass * p.g * p.l_f / L)
        shapes = ((p.tyre_B_f, p.tyre_C_f, p.tyre_E_f), (p.tyre_B_r, p.tyre_C_r, p.tyre_E_r))
        self._shapes = shapes
        self._alpha_sat = tuple(saturation_slip(sh) for sh in shapes)  # at the model's mu [rad]
        # the grip each axle shows at the limit the limits stand for (model units), and the factor to road units
        ref = p.mu if config.mu_reference is None else config.mu_reference
        self._ref = (min(p.mu, ref / p.tyre_D_f), min(p.mu, ref / p.tyre_D_r))
        # the same for the whole car, as |F| / F_z (the plan's limits ask for grip_fraction of it)
        self._ref_car = min(p.tyre_D_f * self._ref[0], p.tyre_D_r * self._ref[1])
        # road units: the share of the road's friction the car holds falls as 1 - c a^2 with the grip a it shows
        # (|F| / F_z); c from the reference, where it holds mu_reference / mu_nominal of the nominal friction
        held = self._ref_car / config.mu_nominal
        self._c_load = ((1.0 - held) / self._ref_car ** 2
                        if config.road_units == "load" and config.mu_reference is not None and 0.0 < held < 1.0
                        else 0.0)
        # the whole car's braking limit on the nominal road (|a| / g) a braking reading counts against, or None
        brake = config.brake_reference
        self._brake_ref = None if brake is None else max(float(brake), BRAKE_REFERENCE_FLOOR * self._ref_car)
        self.reset()

    def reset(self) -> None:
        """Back to the nominal friction with the initial uncertainty; forget the last sample."""
        cfg, mu0 = self.config, self.params.mu
        self._axles = tuple(AxleEstimate(mu0, cfg.sigma0 * ref / cfg.mu_nominal) for ref in self._ref)
        self._last: tuple[float, float, float, float] | None = None  # t, v_x, v_y (CG), r
        self._sliding = False
        self._recent_car: list[tuple[float, float]] = []  # the car's grip in the last samples: |F|/F_z, model
        #: the whole car's grip over the last samples (|F| / F_z, model units) and the lateral share of the last
        self._car_reading = (0.0, 0.0, 1.0)
        self._brake_samples = 0  # consecutive samples the car decelerated less than commanded
        self._drive_samples = 0  # consecutive samples the car accelerated less than commanded
        self._confirmed = False  # an axle has shown the grip the limits stand for since the reset
        #: the grip each axle showed with all of m a_x on it, in the last samples (model units), the car's a_x and
        #: the plan's command [m/s^2]
        self._recent_drive: list[tuple[float, float, float, float]] = []
        self._forces = ((0.0, 0.0), (1.0, 1.0))  # the axles' lateral forces and loads of the last sample [N]
        self._recent_decel: list[float] = []  # the car's deceleration in those samples [m/s^2]
        #: the deceleration held in a braking reading [m/s^2] and the axles' estimates it gave
        self._decel_held: tuple[float, tuple[float, float]] | None = None
        #: the last estimate and what it stood on (:attr:`estimate`)
        self._estimate_cache: tuple[tuple[Any, ...], GripEstimate] | None = None

    @property
    def estimate(self) -> GripEstimate:
        """The current estimate (road units, :meth:`road_friction`; the plan's share in the units of the grip
        shown). The same object as the last while what it stands on (each axle's grip, variance and lateral share,
        the sliding flag) has not moved: the controller asks every step, and most steps leave it unchanged."""
        a, b = self._axles
        key = (a.mu, a.var, a.lateral, b.mu, b.var, b.lateral, self._sliding, self._decel_held,
               a.ceiling is None and b.ceiling is None)
        cached = self._estimate_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        est = self._compute_estimate()
        self._estimate_cache = (key, est)
        return est

    def _compute_estimate(self) -> GripEstimate:
        """The numbers of :attr:`estimate`."""
        cfg = self.config
        nominal = cfg.mu_nominal
        mu, sigma, low = [], [], []
        for axle, ref, d in zip(self._axles, self._ref, (self.params.tyre_D_f, self.params.tyre_D_r), strict=True):
            shown = min(axle.mu, ref)  # above the reference: the limits' grip, no more
            std = math.sqrt(axle.var)
            linear, linear_sigma = nominal * shown / ref, nominal * std / ref
            low.append(linear - cfg.margin * linear_sigma)
            if self._c_load > 0.0:
                # at the reference the nominal, whatever the reading's direction (the limits' grip, no more)
                road, slope = self.road_friction(d * shown, d * ref, 1.0 if axle.mu >= ref else axle.lateral)
                mu.append(road)
                sigma.append(slope * d * std)
            else:
                mu.append(linear)
                sigma.append(linear_sigma)
        share = float(min(1.0, max(MU_BOUNDS[0], min(low)) / nominal))
        held = None if self._decel_held is None else self._decel_held[0]
        bound = any(axle.ceiling is not None for axle in self._axles)
        return GripEstimate(mu[0], mu[1], sigma[0], sigma[1], self._sliding, nominal, cfg.margin, share, held, bound)

    def road_friction(self, shown: float, reference: float, lateral: float = 1.0) -> tuple[float, float]:
        """The road's friction [-] where an axle shows the grip ``shown`` (``|F| / F_z``), a share ``lateral`` of
        it sideways (``|F_y| / |F|``), and its slope d mu / d shown, for the axle whose reference grip (the
        lateral limit the limits stand for) is ``reference``.

        ``mu_nominal f(shown, lateral) / f(reference, 1)`` with ``f(a, l) = a / (1 - c (l a)^2)``
        (:class:`GripConfig`, ``road_units``): the load an axle moves from its inner to its outer wheel grows
        with its lateral force, and with tyre load sensitivity its grip falls with the square of that; at the
        reference the nominal friction; below it the car holds a larger share of the road's friction, so a grip
        shown reads a lower friction than its linear share (and at least the grip shown:
        ``mu_nominal / f(reference, 1)`` is 1 with ``c`` from the reference). A longitudinal reading (a driven
        axle spinning up on a straight, ``lateral`` 0) moves no load across the axle: it reads the grip shown.
        The 3D sedan holds 0.88 of mu 0.9 at its dry limit and 0.93-0.96 of mu 0.6 at the wet one: with ``c``
        from the first, ``f`` gives 0.94 for the second (the linear share read a slide on the 0.6 road as 0.65).
        With ``c = 0`` (``road_units="linear"``) it is the linear share.

        >>> from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
        >>> p = DynamicParams.bmw_320i()
        >>> est = GripEstimator(p, GripConfig(mu_nominal=0.9, mu_reference=0.79, road_units="load"))
        >>> mu, slope = est.road_friction(0.94 * 0.6, 0.79)       # a slide at the wet limit: 0.94 of mu 0.6
        >>> round(mu, 2), round(0.9 * 0.94 * 0.6 / 0.79, 2), est.road_friction(0.79, 0.79)[0]   # vs the linear share
        (0.6, 0.64, 0.9)
        >>> round(est.road_friction(0.6, 0.79, lateral=0.0)[0], 3)   # spinning up on a straight
        0.6
        """
        c, nominal = self._c_load, self.config.mu_nominal
        f_ref = reference / (1.0 - c * reference * reference)
        k = c * lateral * lateral
        a2 = shown * shown
        return (nominal * shown / (1.0 - k * a2) / f_ref,
                nominal * (1.0 + k * a2) / (1.0 - k * a2) ** 2 / f_ref)

    def braking_equivalent(self, car_g: float, axle: int) -> float:
        """The grip axle ``axle`` (0 front, 1 rear) would show at its lateral limit (model units) on the road a
        car braking at ``car_g`` (``|a| / g``) at its limit reads, against the braking reference
        (:attr:`GripConfig.brake_reference`): :meth:`shown_at_limit` of the road ``mu_nominal car_g /
        brake_reference`` -- the same estimate a slide in a corner of that road gives, so the plan's share of the
        limits is the lateral one there.

        >>> from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
        >>> cfg = GripConfig(mu_nominal=0.9, mu_reference=0.8, road_units="load", brake_reference=0.76)
        >>> est = GripEstimator(DynamicParams.bmw_320i(), cfg)
        >>> shown = est.braking_equivalent(0.76 * 0.6 / 0.9, 0)   # the car brakes at its limit on mu 0.6
        >>> round(est.road_friction(shown * 1.0, est._ref[0] * 1.0)[0], 3)  # tyre_D_f = 1
        0.6
        """
        if self._brake_ref is None:
            raise ValueError("braking_equivalent: the estimator has no brake_reference")
        return self.shown_at_limit(self.config.mu_nominal * car_g / self._brake_ref, axle)

    def shown_at_limit(self, mu_road: float, axle: int) -> float:
        """The grip axle ``axle`` (0 front, 1 rear) shows at its lateral limit on a road of friction ``mu_road``
        (model units): the inverse of :meth:`road_friction` (``lateral`` 1). Over the reference it is the plan's
        share of the limits on that road (:meth:`plan_share`).

        >>> from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
        >>> est = GripEstimator(DynamicParams.bmw_320i(), GripConfig(mu_nominal=0.9, mu_reference=0.8,
        ...                                                          road_units="load"))
        >>> round(est.road_friction(est.shown_at_limit(0.6, 1), est._ref[1])[0], 12)   # tyre_D_r = 1
        0.6
        """
        d = (self.params.tyre_D_f, self.params.tyre_D_r)[axle]
        reference = d * self._ref[axle]
        c = self._c_load
        q = mu_road / self.config.mu_nominal * reference / (1.0 - c * reference * reference)  # s / (1 - c s^2)
        s = 2.0 * q / (1.0 + math.sqrt(1.0 + 4.0 * c * q * q)) if c > 0.0 else q
        return min(s / d, MU_BOUNDS[1])

    def plan_share(self, mu_road: float) -> float:
        """The share of the nominal limits [-] the plan would use on a road of friction ``mu_road`` known exactly
        (no uncertainty): the weaker axle's :meth:`shown_at_limit` over its reference, at most 1. What an oracle
        of the road gives (``bench_grip_change.py --oracle``: the bound on what any estimate can do)."""
        return min(1.0, *(self.shown_at_limit(mu_road, i) / self._ref[i] for i in range(2)))

    def update(self, t: float, measured: Mapping[str, float] | None, delta: float | None,
               a_x_cmd: float | None = None) -> GripEstimate:
        """One step with the measurement at time ``t`` [s] and the steering ``delta`` [rad] applied since the last.

        ``measured`` holds ``v_x``, ``v_y`` (rear axle) [m/s] and ``r`` [rad/s]; without them (or below
        :data:`GRIP_MIN_SPEED`) the estimate only ages. ``a_x_cmd`` [m/s^2] is the longitudinal acceleration the
        plan commanded since the last sample (the prediction model's input); None: braking is not read.
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
        for axle, ref in zip(self._axles, self._ref, strict=True):
            k = ref / cfg.mu_nominal  # road units -> model units of this axle
            axle.age(dt, k * cfg.sigma_growth, k * cfg.sigma_max)
        vx_m, vy_m, r_m = 0.5 * (v_x + last[1]), 0.5 * (v_y + last[2]), 0.5 * (r + last[3])
        if delta is None or vx_m < GRIP_MIN_SPEED or not all(map(math.isfinite, (v_x, v_y, r, delta))):
            for axle in self._axles:
                axle.recent.clear()
                axle.recent_driving.clear()
            self._recent_car.clear()
            self._brake_samples = self._drive_samples = 0
            self._recent_decel.clear()
            self._recent_drive.clear()
            return self.estimate
        a_y = (v_y - last[2]) / dt + vx_m * r_m
        a_x = (v_x - last[1]) / dt - vy_m * r_m
        r_dot = (r - last[3]) / dt
        body_slides = abs(math.atan2(vy_m, vx_m)) > cfg.slide_sideslip
        self._update_axles(a_x, a_y, r_dot, vx_m, vy_m, r_m, float(delta), dt, body_slides)
        self._read_braking(a_x, a_x_cmd)
        if not self._confirmed:
            self._confirmed = any(axle.var <= (1.01 * GRIP_SIGMA_CONFIRMED * ref) ** 2
                                  for axle, ref in zip(self._axles, self._ref, strict=True))
        self._read_traction(a_x, a_x_cmd, a_y)
        return self.estimate

    def _read_braking(self, a_x: float, a_x_cmd: float | None) -> None:
        """The longitudinal residual: a car that decelerates less than the plan commanded (by
        :data:`GRIP_BRAKE_SHORT` and :data:`GRIP_BRAKE_SHORT_SHARE` of it, for :data:`GRIP_SUSTAIN_SAMPLES`
        samples, steadily: :data:`GRIP_BRAKE_MIN`, :data:`GRIP_BRAKE_STEADY`) has its tyres at their peak under
        braking -- on a straight, where no slip angle tells. Unless the
        whole car holds the grip the limits as set ask for (at the limit, not a slipperier road), both axles read
        the whole car's grip as a slide (the split of the braking between the axles is not measured; the road's
        friction is at least the car's ``m |a| / sum(D F_z)``) -- or, with a braking reference
        (:attr:`GripConfig.brake_reference`), the road that deceleration reads against it, and the limit as set is
        ``grip_fraction`` of that reference. An axle already read as sliding this step keeps its own reading."""
        short = (a_x_cmd is not None and math.isfinite(a_x_cmd) and a_x_cmd <= -GRIP_BRAKE_MIN
                 and a_x <= -GRIP_BRAKE_MIN
                 and a_x - a_x_cmd > max(GRIP_BRAKE_SHORT, -GRIP_BRAKE_SHORT_SHARE * a_x_cmd))
        self._brake_samples = self._brake_samples + 1 if short else 0
        self._recent_decel.append(-a_x)
        del self._recent_decel[:-GRIP_SUSTAIN_SAMPLES]
        held, (front, rear) = self._decel_held, self._axles
        if held is not None and (self._sliding or min(front.mu - held[1][0], rear.mu - held[1][1])
                                 > GRIP_SIGMA_SLIDE * min(held[1])):
            self._decel_held = None  # a tyre read this step, or the car showed more grip since: the reading is past
        if (self._brake_samples < GRIP_SUSTAIN_SAMPLES or self._sliding or not self._recent_car
                or max(self._recent_decel) - min(self._recent_decel) > GRIP_BRAKE_STEADY):
            return
        car_g, car_shown, lateral = self._car_reading
        if self._brake_ref is None:
            readings = ((car_shown, lateral),) * 2
            planned = self._ref_car
        else:
            readings = ((self.braking_equivalent(car_g, 0), 1.0), (self.braking_equivalent(car_g, 1), 1.0))
            planned = self._brake_ref
        if car_g >= self.config.grip_fraction * planned:
            for axle, ref, (shown, lat) in zip(self._axles, self._ref, readings, strict=True):
                axle.held(shown, ref, lat)
            return
        for axle, ref, (shown, lat) in zip(self._axles, self._ref, readings, strict=True):
            if self._brake_ref is None:  # the tyre peak through the car's ABS: a lower bound
                axle.slid_under_control(shown, ref, lat)
            else:  # read against the car's own braking (its ABS included)
                axle.slid(shown, ref, lat)
        self._sliding = True
        self._decel_held = (max(min(self._recent_decel), 0.0), (self._axles[0].mu, self._axles[1].mu))
        logger.debug("grip: braking short of the command (a_x %.2f against %.2f m/s^2): mu %.3f (model units, "
                     "peak %.3f)", a_x, a_x_cmd, car_shown, self.params.mu)

    def _read_traction(self, a_x: float, a_x_cmd: float | None, a_y: float) -> None:
        """The longitudinal residual under power: a car that accelerates steadily less than the plan commanded
        (:data:`GRIP_DRIVE_SHORT`, :data:`GRIP_BRAKE_SHORT_SHARE`, :data:`GRIP_BRAKE_MIN`,
        :data:`GRIP_BRAKE_STEADY`, for :data:`GRIP_DRIVE_SAMPLES` samples) has its driven wheels at their peak
        -- on a straight (``a_y`` [m/s^2] within :data:`GRIP_DRIVE_LATERAL` of the reference), where no slip angle
        tells. Only once an axle has confirmed the grip the limits stand for in this run: a road that changed (rain
        under power). A traction control holds the wheels below their peak -- the 3D sedan's at 0.9 of it -- and
        on a road never confirmed (a run that starts on a wet road) the reading came 10-20 % low and stayed (the
        dry file on the wet car: laps up to 10.8 % slower than the wet file's); there the brake test and the first
        corner read the road. The driven axle (:attr:`GripConfig.drive`) reads the grip it
        showed with all of ``m a_x`` on it (held over those samples) as a slide; unless the whole car holds the
        grip the limits as set ask for. An axle already read as sliding this step keeps its own reading."""
        p = self.params
        (fy_f, fy_r), (fz_f, fz_r) = self._forces
        f_x = p.mass * a_x
        self._recent_drive.append((math.hypot(fy_f, f_x) / (p.tyre_D_f * fz_f),
                                   math.hypot(fy_r, f_x) / (p.tyre_D_r * fz_r), a_x,
                                   a_x_cmd if a_x_cmd is not None else math.nan))
        del self._recent_drive[:-GRIP_DRIVE_SAMPLES]
        short = (a_x_cmd is not None and math.isfinite(a_x_cmd) and a_x_cmd >= GRIP_BRAKE_MIN
                 and a_x >= GRIP_BRAKE_MIN and abs(a_y) <= GRIP_DRIVE_LATERAL * self._ref_car * p.g
                 and a_x_cmd - a_x > max(GRIP_DRIVE_SHORT, GRIP_BRAKE_SHORT_SHARE * a_x_cmd))
        self._drive_samples = self._drive_samples + 1 if short else 0
        recent = self._recent_drive
        if (self._drive_samples < GRIP_DRIVE_SAMPLES or self._sliding or not self._recent_car
                or not self._confirmed
                or max(r[2] for r in recent) - min(r[2] for r in recent) > GRIP_BRAKE_STEADY
                or max(r[3] for r in recent) - min(r[3] for r in recent) > GRIP_BRAKE_STEADY):
            return
        car_g, car_shown, lat_car = self._car_reading
        drive = self.config.drive
        if drive == "awd":
            readings = {0: (car_shown, lat_car), 1: (car_shown, lat_car)}
        else:
            lateral = [abs(fy) / math.hypot(fy, f_x) for fy in (fy_f, fy_r)]
            axles = {"rwd": (1,), "fwd": (0,)}.get(drive, (0, 1))
            readings = {i: (min(r[i] for r in recent), lateral[i]) for i in axles}
        at_limit = car_g >= self.config.grip_fraction * self._ref_car
        for i, (shown, lat) in readings.items():
            axle = self._axles[i]
            if at_limit:
                axle.held(shown, self._ref[i], lat)
            else:  # through the car's traction control: a lower bound
                axle.slid_under_control(shown, self._ref[i], lat)
        if not at_limit:
            self._sliding = True
            logger.debug("grip: accelerating short of the command (a_x %.2f against %.2f m/s^2): %s", a_x, a_x_cmd,
                         {("front", "rear")[i]: round(r[0], 3) for i, r in readings.items()})

    def _update_axles(self, a_x: float, a_y: float, r_dot: float, v_x: float, v_y: float, r: float,
                      delta: float, dt: float, body_slides: bool) -> None:
        p, L = self.params, self._L
        m, g = p.mass, p.g
        fy = ((m * a_y * p.l_r + p.I_z * r_dot) / L, (m * a_y * p.l_f - p.I_z * r_dot) / L)
        fz = (max(m * (g * p.l_r - a_x * p.h_cg) / L, 0.1 * self._fz_static[0]),
              max(m * (g * p.l_f + a_x * p.h_cg) / L, 0.1 * self._fz_static[1]))
        alpha = (delta - math.atan((v_y + p.l_f * r) / v_x), -math.atan((v_y - p.l_r * r) / v_x))
        share = fz[0] / (fz[0] + fz[1])
        fx = (m * a_x * share, m * a_x * (1.0 - share))
        # the whole car: every tyre holds at most mu D F_z, so the road's friction is at least the total force over
        # sum(D F_z) -- whatever the split between the axles (the brake balance, the load transfer), which the
        # per-axle forces above assume; held over GRIP_SUSTAIN_SAMPLES samples like an axle's
        f_car = m * math.hypot(a_x, a_y)
        lat_car = abs(a_y) / math.hypot(a_x, a_y) if f_car > 0.0 else 1.0  # lateral share of each reading
        self._recent_car.append((f_car / (fz[0] + fz[1]), f_car / (p.tyre_D_f * fz[0] + p.tyre_D_r * fz[1])))
        del self._recent_car[:-GRIP_SUSTAIN_SAMPLES]
        car_g = min(c[0] for c in self._recent_car)
        car_shown = min(c[1] for c in self._recent_car)
        self._car_reading = (car_g, car_shown, lat_car)  # (the braking reading's, _read_braking)
        self._forces = (fy, fz)
        # the grip the limits as set ask for (|F| / F_z): a tyre past its curve while the car holds it is at the
        # limit (not once the estimate is lower: then each slide reads the friction, however close to the plan)
        planned = self.config.grip_fraction * self._ref_car
        for i, (axle, d) in enumerate(zip(self._axles, (p.tyre_D_f, p.tyre_D_r), strict=True)):
            d_fz = d * fz[i]
            shown = axle.sustained(math.hypot(fy[i], fx[i]) / d_fz)
            # spinning up: an axle sliding under power with less lateral force than the drive has its grip used by
            # the drive -- it is the driven one, carrying all of m a_x (a rear-drive car spinning up its rear axle on
            # a wet straight shows no lateral force and a tenth of the load split's grip). Not an axle with more
            # lateral force than that (a front axle understeering under power in a rear-drive car: it carries none)
            spin = a_x > 0.0 and abs(fy[i]) < m * a_x
            driving = axle.sustained(math.hypot(fy[i], m * a_x) / d_fz if spin else 0.0, axle.recent_driving)
            f_i = math.hypot(fy[i], fx[i])
            lat = abs(fy[i]) / f_i if f_i > 0.0 else 1.0
            # a slide must show whatever the split of the car's longitudinal force between the axles (the brake
            # balance, the driven axle: the load split above is a guess; under braking it read the dry sedan's
            # front axle short of its curve by 20 % of D F_z): the slip where the tyre saturates on this road
            # (similarity: it scales with the lateral peak) with the whole lateral peak, the force the curve
            # gives with the least lateral peak (all of m a_x on this axle)
            slide = self._alpha_sat[i] * axle.mu / p.mu
            peak = lateral_peak(axle.mu, d_fz, m * a_x)
            deficit = (abs(axle_force(alpha[i], self._shapes[i], peak, p.mu * d_fz)) - abs(fy[i])) / d_fz
            floor = GRIP_SPIN_SLIP if spin else GRIP_DEFICIT_SLIP  # where the curve's force tells
            tyre_slides = (abs(alpha[i]) > GRIP_SLIDE_SLIP_MARGIN * slide
                           or (abs(alpha[i]) > floor * slide and deficit > GRIP_FORCE_DEFICIT))
            axle.slide_samples = axle.slide_samples + 1 if tyre_slides else 0
            if tyre_slides and not body_slides and axle.slide_samples < GRIP_SLIDE_SAMPLES:
                continue  # one sample is not yet a slide (a glitch in a command or an acceleration): hold
            if tyre_slides and not body_slides and car_g >= planned:
                axle.held(shown, self._ref[i], lat)
                logger.debug("grip: %s axle past its curve while the car holds the planned grip (%.3f >= %.3f): "
                             "at the limit, not a slipperier road", ("front", "rear")[i], car_g, planned)
            elif body_slides or tyre_slides:
                reading = max((shown, lat), (car_shown, lat_car),
                              (driving, abs(fy[i]) / math.hypot(fy[i], m * a_x) if spin else 1.0))
                # a tyre's first slide off the reference, on an axle that has confirmed it in this run (shown
                # GRIP_CONFIRM_SHARE of it without sliding): probe back
                probe = (GRIP_SLIDE_PROBE and not body_slides and axle.ceiling is None and axle.mu >= self._ref[i]
                         and axle.shown_best >= GRIP_CONFIRM_SHARE * self._ref[i])
                axle.slid(reading[0], self._ref[i], reading[1], probe)
                self._sliding = True
                logger.debug("grip: %s axle slides (alpha %.3f rad, saturation at %.3f): mu %.3f (model units)",
                             ("front", "rear")[i], alpha[i], slide, axle.mu)
            else:
                axle.gripped(shown, min(dt, _RECOVERY_DT_MAX), p.mu, self._ref[i], lat)
