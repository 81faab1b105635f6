"""The limits group: speed, steering, acceleration, corridor clearance, the share of the grip used."""
from __future__ import annotations

import math
from dataclasses import dataclass

from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc.settings.fields import documented, setting
from mpc_tracking.mpc.settings.group import SettingsGroup

__all__ = ["LimitSettings"]

@documented
@dataclass(frozen=True)
class LimitSettings(SettingsGroup):
    """What the car may do: speed, steering, acceleration and the corridor's clearance."""

    v_min: float = setting(0.5, "Lowest speed", "m/s", gt=0)
    v_max: float = setting(10.0, "Top speed", "m/s", gt=0)
    delta_max: float = setting(0.5, "Steering bound", "rad", gt=0, lt=0.5 * math.pi)
    a_y_max: float = setting(4.0, "Lateral acceleration limit: v <= sqrt(a_y_max / |kappa|)", "m/s^2", gt=0)
    accel_max: float = setting(math.inf, "Acceleration bound (rate of the speed)", "m/s^2", gt=0, allow_inf=True)
    decel_max: float = setting(math.inf, "Braking bound (rate of the speed)", "m/s^2", gt=0, allow_inf=True)
    power_per_mass: float = setting(
        math.inf, "Power limit P/m: the acceleration bound at speed v is min(accel_max, power_per_mass / v)",
        "W/kg", gt=0, allow_inf=True,
        notes="inf (default): not limited. In the whole-path speed profile and, for models with an acceleration "
              "input (dynamic), in the QP's bound on it at each step's planned speed. From a vehicle file's "
              "``power_per_mass`` (times ``grip_fraction``) when left at the default.")
    delta_rate_max: float = setting(math.inf, "Steering rate bound", "rad/s", gt=0, allow_inf=True)
    corridor_margin: float = setting(0.0, "Extra clearance kept from the corridor edges", "m", ge=0)
    friction_ellipse: bool = setting(
        False, "Combine longitudinal and lateral acceleration on an ellipse", "-",
        notes="Semi-axes (accel_max or decel_max, a_y_max): in the whole-path speed ceilings (less braking and "
              "acceleration in corners, :func:`mpc_tracking.paths.speed_profile.speed_profile`) and, for models "
              "with an acceleration input (dynamic), in the QP's per-step bounds on it.")
    ellipse_cuts: bool = setting(
        False, "Hold the friction ellipse in the QP as soft linear cuts", "-",
        notes="With ``friction_ellipse`` and a model with an acceleration input: tangents at 30..150 deg, one "
              "exact-penalty slack per step (:data:`mpc_tracking.mpc.qp.ELLIPSE_CUT_ANGLES`), coupling the "
              "acceleration input with the planned lateral acceleration ``v_x r``, instead of acceleration "
              "bounds frozen at the operating point's lateral acceleration (the default).")
    steer_within_peak_slip: bool = setting(
        True, "Keep the plan's steering within the front tyres' peak slip (dynamic model)", "-",
        notes="Each step's steering bound is ``front_slip_direction ± peak_slip`` of the prediction model's "
              "front tyres about the operating point (the measured state at the first step; above "
              "``v_blend_high``, where the tyre model holds), widened only where the steering rate could not "
              "reach it. Beyond the peak more steering gives less force, which the linearized model cannot "
              "see: without the bound a car that slides at speed is planned 0.2-0.5 rad of steering and spins "
              "or runs wide (:func:`mpc_tracking.models.prediction.spatial_dynamic.peak_slip`). Models without "
              "tyres ignore it.")
    grip_fraction: float = setting(
        0.9, "Share of the car's own limits the controller uses where it takes them from the car", "-",
        gt=0, le=1,
        notes="Where the limits come from the car (a vehicle file's identified lateral, braking and acceleration "
              "limits; the 3D plant's friction mu g), the controller uses this share of them. Limits set "
              "explicitly (a value other than the default ``a_y_max = 4``, a finite ``accel_max``/``decel_max``) "
              "win (see :func:`mpc_tracking.scenario.defaults.grip_defaults`).")
    grip_defaults: bool = setting(
        True, "Settings left at their defaults follow from the car when a scenario is built", "-",
        notes="True (default): the prediction model, the limits scaled by ``grip_fraction`` and, for the dynamic "
              "model, the friction ellipse, RK4 and ``ds >= 1 m``, which hold at the grip limit. False: the "
              "settings are used exactly as given (a combination known to be unsafe is still warned about).")

    def _check_together(self) -> None:
        if self.v_min > self.v_max:
            raise SettingsError(f"{type(self).__name__}: v_min = {self.v_min} must be <= v_max = {self.v_max} m/s")
