"""Controller defaults that follow from the car: what holds at the grip limit when the user did not say.

:func:`grip_defaults` turns the settings a scenario gives (``controller:``) into the settings the
controller runs with, given the plant, its actuator and the vehicle file (``vehicle.file:``):

* ``prediction_model: auto`` becomes ``dynamic`` for a plant that slips (the 3D car, or a plant
  class with ``slips = True``) or with a vehicle file (it carries tyre data), else ``kinematic``;
* the limits the user left at their defaults (``a_y_max = 4``, ``accel_max``/``decel_max`` inf)
  become ``grip_fraction`` times the car's: the vehicle file's lateral limit, braking and
  acceleration limits, else for the 3D car mu g for braking and acceleration; always at most what
  the actuator can command. A limit set to another value wins. The vehicle file's power limit
  ``power_per_mass`` (P/m: acceleration at most ``P/m / v``) becomes ``grip_fraction`` times it the
  same way (``power_per_mass`` left at inf);
* the vehicle file's steering rate limit ``steering_rate_max`` (measured by identification's
  steering steps) becomes ``delta_rate_max`` = :data:`STEER_RATE_SHARE` times it (``delta_rate_max``
  left at inf): a plan that turns the wheels faster than they can follow gets its corrections late,
  and at speed the loop rings (the CommonRoad drift model, wheels at most 0.4 rad/s, left the track
  at 36 m/s without it);
* with the dynamic model the settings that hold at the limit (measured on generated circuits,
  ``benchmarks/bench_grip_limit.py``): the friction ellipse on, RK4 and a step ``ds`` of at least
  :data:`DYNAMIC_MIN_DS` and at least the distance one control period covers at ``v_max``
  (``v_max x control_period``: a shorter step holds each planned input for several steps and the
  steering rings; when ``friction_ellipse``, ``discretization`` and ``ds`` are at their defaults);
* combinations known to be unsafe are logged as warnings naming the way out: the dynamic model
  without the friction ellipse near the limit, the kinematic model on a slipping plant above
  :data:`KINEMATIC_SLIP_SPEED`.

``MPCSettings(grip_defaults=False)`` keeps the settings as given (the warnings still come).
Everything changed is logged (INFO) with where the value came from.
"""
from __future__ import annotations

import logging
import math
from dataclasses import fields
from typing import Any

import numpy as np

from mpc_tracking.mpc.settings.grip import DRIVES

logger = logging.getLogger(__name__)

__all__ = ["grip_defaults", "plant_slips", "KINEMATIC_SLIP_SPEED", "ELLIPSE_WARN_SHARE", "DYNAMIC_MIN_DS",
           "STEER_RATE_SHARE", "dynamic_default_ds"]

#: above this top speed [m/s] the kinematic model on a slipping plant is warned about (on the 3D
#: sedan its loop weaves off a 40 m/s straight and leaves the track at 0.95 of the limits)
KINEMATIC_SLIP_SPEED = 20.0
#: the dynamic model without the friction ellipse is warned about when a_y_max is above this share
#: of the car's lateral limit (on unseen circuits it left the track at 0.85 and at 0.95)
ELLIPSE_WARN_SHARE = 0.7
#: the smallest prediction step [m] the dynamic model gets by default (the validated setting)
DYNAMIC_MIN_DS = 1.0
#: the share of the car's steering rate limit the controller plans with (``delta_rate_max``): the
#: rest is the steering servo's reserve to correct what the plan did not foresee
STEER_RATE_SHARE = 0.9


def dynamic_default_ds(v_max: float, control_period: float) -> float:
    """The dynamic model's default prediction step [m]: ``max(DYNAMIC_MIN_DS, v_max x control_period)``.

    One control period at ``v_max`` [m/s] covers ``v_max x control_period`` metres; a step shorter than
    that makes the MPC plan inputs the car holds for several steps (the steering rings; the check in
    :mod:`mpc_tracking.simulation_checks` warns about it). Measured on 6 generated circuits, sedan at
    0.95, 40 m/s, 50 ms: 2 m against 1 m, lap vs ideal +1.53 % against +1.58 % (median), max e_y 22 cm
    against 28 cm, RMS e_y 4.9 against 5.3 cm.

    >>> dynamic_default_ds(40.0, 0.05), dynamic_default_ds(12.0, 0.05)
    (2.0, 1.0)
    """
    covered = float(v_max) * float(control_period)
    return max(DYNAMIC_MIN_DS, covered) if math.isfinite(covered) else DYNAMIC_MIN_DS


def plant_slips(plant: Any) -> bool:
    """True for a plant whose tyres slip (its class says ``slips = True``, or it is the 3D car)."""
    flag = getattr(type(plant), "slips", None)
    if flag is not None:
        return bool(flag)
    from mpc_tracking.models.plants.ackermann3d import Ackermann3D

    return isinstance(plant, Ackermann3D)


def _class_defaults() -> dict[str, Any]:
    from mpc_tracking.mpc.settings import MPCSettings

    return {f.name: f.default for f in fields(MPCSettings) if f.init}


def _is_default(settings: Any, name: str, defaults: dict[str, Any]) -> bool:
    v, d = getattr(settings, name), defaults[name]
    if isinstance(d, float) and np.isinf(d):
        return not np.isfinite(v)
    return bool(v == d)


def _car_limits(plant: Any, vehicle_file: Any) -> dict[str, tuple[float, str]]:
    """The car's own limits (accelerations [m/s^2], ``power_per_mass`` [W/kg], ``delta_rate_max`` [rad/s])
    with where they come from."""
    out: dict[str, tuple[float, str]] = {}
    if vehicle_file is not None:
        src = f"the vehicle file {getattr(vehicle_file, 'source', '')}".rstrip()
        out["a_y_max"] = (float(vehicle_file.lateral_limit), src)
        out["decel_max"] = (float(vehicle_file.decel_max), src)
        out["accel_max"] = (float(vehicle_file.accel_max), src)
        power = getattr(vehicle_file, "power_per_mass", None)
        if power is not None:
            out["power_per_mass"] = (float(power), src)
        rate = getattr(vehicle_file, "steering_rate_max", None)
        if rate is not None:
            out["delta_rate_max"] = (float(rate), src)
    mu = getattr(getattr(plant, "vehicle", None), "mu", None)
    if mu is not None:
        for key in ("decel_max", "accel_max"):
            if key not in out or not np.isfinite(out[key][0]):
                out[key] = (float(mu) * 9.81, "friction (mu g of the plant)")
    return out


def grip_defaults(settings: Any, plant: Any = None, actuator: Any = None, vehicle_file: Any = None,
                  path_ds: float | None = None, where: str = "controller") -> Any:
    """The settings a run uses: the given ones, with what was left at its default taken from the car.

    Parameters
    ----------
    settings : MPCSettings
        As the user gave them.
    plant : MotionModel, optional
        The simulated car (does it slip; the 3D car's mu).
    actuator : Actuator, optional
        Its ``accel_limits`` cap the acceleration limits.
    vehicle_file : VehicleFile, optional
        Identified limits and tyre data.
    path_ds : float, optional
        Waypoint spacing of the path [m] (the step ``ds = None`` means).
    where : str
        Prefix of the log messages (e.g. the scenario file).

    Returns
    -------
    MPCSettings
        ``prediction_model`` is never "auto" in it when a plant or a vehicle file is given.
    """
    st = settings
    defaults = _class_defaults()
    changes: dict[str, Any] = {}
    if st.prediction_model == "auto" and (plant is not None or vehicle_file is not None):
        dynamic = vehicle_file is not None or (plant is not None and plant_slips(plant))
        changes["prediction_model"] = "dynamic" if dynamic else "kinematic"
        logger.info("%s: prediction_model auto -> %s (%s)", where, changes["prediction_model"],
                    "vehicle file with tyre data" if vehicle_file is not None else
                    ("a plant that slips" if dynamic else "a plant without tyre slip"))
    model = changes.get("prediction_model", st.prediction_model)
    limits = _car_limits(plant, vehicle_file)
    if st.grip_defaults:
        cap = dict(zip(("accel_max", "decel_max"), actuator.accel_limits, strict=True)) if actuator else {}
        for key, (value, source) in limits.items():
            if not (np.isfinite(value) and value > 0) or not _is_default(st, key, defaults):
                continue
            if key == "a_y_max" and vehicle_file is None:
                continue
            if key == "delta_rate_max":  # an actuator limit, not grip: its own share
                changes[key] = STEER_RATE_SHARE * value
                logger.info("%s: delta_rate_max not given; %.3g rad/s = %g x %.3g rad/s (the steering rate limit) "
                            "from %s", where, changes[key], STEER_RATE_SHARE, value, source)
                continue
            scaled = st.grip_fraction * value
            if key in cap and np.isfinite(cap[key]) and cap[key] < scaled:
                scaled, source = float(cap[key]), f"the actuator's clamp (below {st.grip_fraction:g} x {source})"
            else:
                source = f"{st.grip_fraction:g} x {value:.3g} from {source}"
            changes[key] = float(scaled)
            logger.info("%s: %s not given; %.3g %s = %s", where, key, scaled,
                        "W/kg" if key == "power_per_mass" else "m/s^2", source)
        decel = getattr(vehicle_file, "decel_max", None)
        if (decel is not None and np.isfinite(decel) and decel > 0
                and _is_default(st, "grip_brake_limit", defaults)):
            changes["grip_brake_limit"] = float(decel)
            logger.info("%s: grip_brake_limit not given; %.3g m/s^2 (the car's braking limit) from the vehicle "
                        "file %s", where, decel, getattr(vehicle_file, "source", ""))
        drive, drive_source = getattr(getattr(plant, "vehicle", None), "drive", None), "the plant's drive"
        if drive not in DRIVES[1:]:
            drive, drive_source = getattr(vehicle_file, "drive", None), "the vehicle file"
        if drive in DRIVES[1:] and _is_default(st, "grip_drive", defaults):
            changes["grip_drive"] = drive
            logger.info("%s: grip_drive not given; %s (%s)", where, drive, drive_source)
        if model == "dynamic":
            if _is_default(st, "friction_ellipse", defaults):
                changes["friction_ellipse"] = True
            if _is_default(st, "discretization", defaults):
                changes["discretization"] = "rk4"
            step = dynamic_default_ds(st.v_max, st.control_period)
            if st.ds is None and path_ds is not None and path_ds < step:
                changes["ds"] = step
            logger.info("%s: dynamic model defaults: %s", where,
                        {k: changes[k] for k in ("friction_ellipse", "discretization", "ds") if k in changes})
    out = st.replace(**changes) if changes else st
    _warn_unsafe(out, plant, limits, where)
    return out


def _warn_unsafe(st: Any, plant: Any, limits: dict[str, tuple[float, str]], where: str) -> None:
    slips = plant is not None and plant_slips(plant)
    lateral = limits.get("a_y_max", (None, ""))[0]
    if st.prediction_model == "dynamic" and not st.friction_ellipse:
        near = lateral is None or st.a_y_max > ELLIPSE_WARN_SHARE * lateral
        if near:
            logger.warning("%s: the dynamic model without the friction ellipse near the grip limit (a_y_max %.3g "
                           "m/s^2) brakes and accelerates in corners with grip the tyres do not have; on unseen "
                           "circuits the car left the track. Set friction_ellipse: true", where, st.a_y_max)
    if st.prediction_model == "kinematic" and slips and st.v_max > KINEMATIC_SLIP_SPEED:
        logger.warning("%s: the kinematic model on a plant that slips (%s) at v_max %.3g m/s > %.3g m/s: its "
                       "steering loop can oscillate and leave the track; use prediction_model: auto (or dynamic), "
                       "or lower v_max", where, getattr(plant, "name", type(plant).__name__), st.v_max,
                       KINEMATIC_SLIP_SPEED)
