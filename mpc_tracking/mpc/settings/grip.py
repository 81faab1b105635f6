"""The grip group: online grip estimation and noticing lost grip."""
from __future__ import annotations

from dataclasses import dataclass

from mpc_tracking.mpc.settings.fields import documented, setting
from mpc_tracking.mpc.settings.group import SettingsGroup

__all__ = ["GripSettings", "DRIVES"]

#: which axles drive the car (``grip_drive``; the estimator's :attr:`GripConfig.drive
#: <mpc_tracking.mpc.grip.GripConfig.drive>`): "unknown" reads a traction reading on both
DRIVES = ("unknown", "rwd", "fwd", "awd")

@documented
@dataclass(frozen=True)
class GripSettings(SettingsGroup):
    """Online grip estimation and what the controller does with it (:mod:`mpc_tracking.mpc.grip`)."""

    grip_estimation: bool = setting(
        True, "Estimate the road's friction online and scale the limits with it", "-",
        notes="On by default; it works with the dynamic prediction model on a car that reports v_x, v_y, r (its "
              "tyres and the measured response). With the kinematic model it is off (one info message), and "
              "without v_y, r in the measurements the limits stay as set. Every step the per-axle estimate "
              "(:class:`~mpc_tracking.mpc.grip.GripEstimator`) scales a_y_max, decel_max, accel_max, the friction "
              "ellipse, the whole-path speed ceilings, the prediction model's tyre peak and the safe stop's "
              "braking by the share of the nominal friction the estimate's lower confidence bound leaves "
              "(at most 1); a slide lowers them within the step. On a dry road it costs 0.3-0.4 % lap time "
              "(the sedan at 0.95 of its limits, 12 generated circuits: +0.32 % median, +0.38 % worst, "
              "benchmarks/results/grip_dry_cost_circuits_*.json); False: the limits exactly as set.")
    grip_mu: float | None = setting(
        None, "Friction the limits and the prediction model were set for (null: the prediction model's mu)", "-",
        gt=0)
    grip_margin: float = setting(1.0, "Confidence margin of the plan: it uses mu - margin sigma", "-", ge=0)
    grip_sigma_max: float = setting(
        0.015, "Largest standard deviation of the estimate (where nothing informs it), as a share of grip_mu", "-",
        ge=0, notes="With ``grip_margin`` it bounds how far the plan stays below a confirmed grip without cause: "
                    "``grip_margin * grip_sigma_max`` of the limits (1.5 % by default).")
    grip_sigma_growth: float = setting(
        0.005, "Growth of the estimate's standard deviation without information, as a share of grip_mu per "
               "square root of a second", "1/sqrt(s)", ge=0)
    grip_slide_sideslip: float = setting(0.12, "Body sideslip angle beyond which the car counts as sliding", "rad",
                                         gt=0)
    grip_probe: bool = setting(
        True, "Brake hard once on the first straight while the grip is not confirmed (a brake test)", "-",
        notes="With grip estimation on: at the first step where nothing has yet confirmed or read the estimate, the "
              "car is at 10 m/s or more, the plan does not brake and the path ahead is straight, the first "
              "command brakes at ``decel_max`` for up to ``grip_probe_time`` (:mod:`mpc_tracking.mpc.grip_probe`); "
              "a road slipperier than the vehicle file's is read before the first braking zone. The dry vehicle "
              "file on a mu 0.6 sedan at the dry pace: every real track's lap inside the edges instead of 2 of 6. "
              "Once per run; on a dry road the braking confirms the grip within 0.05-0.15 s (dry laps within "
              "0.02 %). False: no test (traffic behind the car, a passenger on board).")
    grip_probe_time: float = setting(0.6, "Longest brake test", "s", gt=0)
    grip_brake_limit: float | None = setting(
        None, "The car's braking deceleration at its limit on the grip_mu road, through its brakes and ABS (null: "
              "braking is read against the tyre peak; a scenario takes the vehicle file's decel_max)", "m/s^2",
        gt=0,
        notes="A car braking short of the plan's command reads the road against it: ``grip_mu`` times the "
              "deceleration held over this one (:attr:`GripConfig.brake_reference "
              "<mpc_tracking.mpc.grip.GripConfig.brake_reference>`). Right for a car whose ABS holds its wheels "
              "at the same share of their peak on every road, as the identified ``decel_max`` measured it: the 3D "
              "sedan, whose actuator holds 0.9 of the road's grip, reads a mu 0.6 road as 0.58-0.62 with it and "
              "0.49-0.52 against the tyre peak. Without it (no vehicle file) the tyre peak's reading is a lower "
              "bound that the next corners probe up (:data:`~mpc_tracking.mpc.grip.GRIP_PROBE_RATE`).")
    grip_drive: str = setting(
        "unknown", "Which axles drive the car (rwd, fwd, awd; unknown: a traction reading lowers both)", "-",
        choices=DRIVES,
        notes="A car accelerating short of the plan's command on a straight, once the run has confirmed the "
              "grip, has its driven wheels at their peak (:data:`~mpc_tracking.mpc.grip.GRIP_DRIVE_SHORT`): rain "
              "that starts on a straight under power is read there, before the next corner, instead of in it: a "
              "lower bound through the traction control, which the next corners probe up. The driven "
              "axle reads the road; ``unknown`` reads both axles as if each drove the car, which may read the "
              "undriven one low (the rear-drive sedan's front: 0.52 on a mu 0.6 road, the rear 0.59), never "
              "above the road. A scenario takes it from the 3D car's ``drive``, else from the vehicle file's, "
              "when it is left unknown.")
