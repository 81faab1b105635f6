"""``identify(plant)``: run the manoeuvres, fit the dynamic model, report how well it predicts.

Sequence (sizes from :class:`~mpc_tracking.identification.manoeuvres.Scale`):

1. straight-line acceleration and braking runs -> speed lag ``tau``, ``accel_max``, ``decel_max`` and a
   power limit ``power_per_mass`` where the acceleration falls with speed (a full-throttle run from V
   on to 2 V shows one that binds only above V); a plant whose speed levels off below V is identified
   at 0.9 of its top speed (listed in the assumptions); two steering steps at 0.3 V (at most the speed
   where A = 0.1 rad turns at 0.15 g; amplitudes A and A/2) -> the steering's rate limit ``steering_rate_max``
   (:mod:`~mpc_tracking.identification.steering`; None: the wheels follow the command at once);
2. constant-steer speed ramp on a circle (radius ``(1.1 V)² / g``, at least 3 L) until the lateral
   acceleration ``v_y' + v_x r`` saturates or the car diverges in yaw
   (:class:`~mpc_tracking.identification.manoeuvres.RampMonitor`) -> the last steady lateral
   acceleration ``a_y_peak`` and the balance there; the axle forces solved from the motion
   (:func:`~mpc_tracking.identification.fit.axle_peaks`): mu is the force peak of an axle that
   saturated (measured, not extrapolated by the tyre curve), the peak factors ``D_f``, ``D_r`` follow;
3. step steers at 0.6 V (0.4 a_ref) and 0.9 V (0.7 a_ref, to the other side) and a sine sweep at
   0.75 V, ``a_ref = min(a_y_peak, mu g, mu_max g)``; one that spins is retried at half amplitude ->
   with the ramp, the equation-error fit of ``B_f``, ``B_r`` (and ``I_z``; ``mu`` too when no axle
   saturated);
4. hold-out manoeuvres not used by any fit: a step steer at 0.75 V (0.55 a_ref) and a braking in a
   turn (0.7 V -> 0.28 V at 0.4 a_ref) -> one-step and open-loop prediction errors.

Geometry the manoeuvres cannot measure (mass, l_f, l_r, h_cg, I_z unless fitted, the driven axle) is
what the plant declares (:class:`~mpc_tracking.models.base.MotionModel` attributes ``mass``,
``yaw_inertia``, ``l_f``, ``l_r``, ``cg_height``, ``driven_axle``), else read off a 3D car's
``plant.vehicle`` (Ackermann3DParams), a plant's ``vehicle_params`` (:class:`DynamicParams`), or
parameters named ``mass``, ``I_z``, ``l_f``, ``l_r``, ``h_cg``, ``wheelbase``; the ``geometry``
argument overrides. The lateral dynamics depend on the mass only through ``I_z / m`` (the tyre forces
scale with ``m``), so an unknown mass is set to 1 kg (then ``I_z`` is per kilogram); an unknown CG
position is the middle of the wheelbase; an unknown CG height is 0. Every such assumption is logged
and listed in the result's (and the vehicle file's) ``assumptions``.
"""
from __future__ import annotations

import datetime
import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc_tracking.errors import IdentificationError, InputError
from mpc_tracking.identification import manoeuvres as mv
from mpc_tracking.identification.fit import (
    AxlePeaks,
    LateralFit,
    LongitudinalFit,
    axle_peaks,
    fit_lateral,
    fit_longitudinal,
    lateral_samples,
)
from mpc_tracking.identification.report import ERROR_KEYS, predict_errors
from mpc_tracking.identification.steering import SteeringFit, fit_steering
from mpc_tracking.identification.vehicle_file import VehicleFile, plain
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

__all__ = ["identify", "IdentificationResult", "plant_geometry", "GEOMETRY_KEYS"]

logger = logging.getLogger(__name__)

#: geometry the manoeuvres do not measure
GEOMETRY_KEYS = ("mass", "I_z", "l_f", "l_r", "h_cg", "g")


@dataclass(frozen=True)
class IdentificationResult(VehicleFile):
    """The identified vehicle (a :class:`VehicleFile`: ``params``, ``speed_lag``, ``accel_max``,
    ``decel_max``, ``report``, ``provenance``, :meth:`to_yaml`) plus what it was fitted from.

    Attributes
    ----------
    a_y_peak : float
        Largest steady lateral acceleration of the speed ramp [m/s²] (``v_y' + v_x r``, low-pass filtered).
    longitudinal : LongitudinalFit
    lateral : LateralFit
    recordings : dict
        Manoeuvre name -> :class:`~mpc_tracking.identification.manoeuvres.Recording`.
    """

    a_y_peak: float = math.nan
    longitudinal: LongitudinalFit | None = None
    lateral: LateralFit | None = None
    recordings: dict = field(default_factory=dict)

    def summary(self) -> str:
        """A table: the fitted numbers (beside the a-priori ones where the plant has them) and the
        hold-out prediction errors."""
        p, rep = self.params, self.report
        prior = rep.get("a_priori", {})
        cf, cr = p.cornering_stiffness
        rows = [
            ("mu [-]", p.mu, prior.get("mu")),
            ("mu g [m/s^2]", self.mu_g, None),
            ("peak a_y on the ramp [m/s^2]", self.a_y_peak if self.a_y_max is not None else
             f"{self.a_y_peak:.4g} (not saturated)", None),
            ("C_alpha front [N/rad]", cf, prior.get("C_alpha_f")),
            ("C_alpha rear [N/rad]", cr, prior.get("C_alpha_r")),
            ("B front / rear [1/rad]", f"{p.tyre_B_f:.3f} / {p.tyre_B_r:.3f}",
             f"{prior['B_f']:.3f} / {prior['B_r']:.3f}" if "B_f" in prior else None),
            ("D front / rear [-]", f"{p.tyre_D_f:.3f} / {p.tyre_D_r:.3f}",
             f"{prior['D_f']:.3f} / {prior['D_r']:.3f}" if "D_f" in prior else None),
            ("I_z [kg m^2]", p.I_z, prior.get("I_z")),
            ("speed lag [s]", self.speed_lag, prior.get("speed_lag")),
            ("accel_max [m/s^2]", self.accel_max, None),
            ("power_per_mass P/m [W/kg]", self.power_per_mass if self.power_per_mass is not None
             else "not limited", None),
            ("decel_max [m/s^2]", self.decel_max, None),
            ("steering rate max [rad/s]", self.steering_rate_max if self.steering_rate_max is not None
             else "not limited", None),
            ("at the limit", rep.get("ramp", {}).get("balance") or "-", None),
        ]

        def fmt(v: Any) -> str:
            if v is None:
                return "-"
            return f"{v:.4g}" if isinstance(v, float) else str(v)

        w = max(len(r[0]) for r in rows)
        lines = [f"  {'quantity':<{w}}  {'identified':>14}  {'a priori':>14}"]
        lines += [f"  {k:<{w}}  {fmt(v):>14}  {fmt(a):>14}" for k, v, a in rows]
        lines.append("  assumptions (not measured): " + ("none" if not self.assumptions else ""))
        lines += [f"    - {a}" for a in self.assumptions]
        for kind in ("holdout", "fit_manoeuvres"):
            errs = rep.get(kind, {})
            if not errs:
                continue
            title = "hold-out" if kind == "holdout" else "fitted on"
            lines.append(f"  prediction RMS error ({title}): v_x [m/s]  v_y [m/s]  r [rad/s]  a_y [m/s^2]")
            for name, e in errs.items():
                for mode in ("one_step", "open_loop"):
                    vals = "  ".join(f"{e[mode][k]:.3g}" for k in ERROR_KEYS)
                    tag = f"one-step {e['step']:.2g} s" if mode == "one_step" else "open loop"
                    lines.append(f"    {name:<22} {tag:<15} {vals}")
        return "\n".join(lines)


def _num(v: Any) -> float | None:
    if isinstance(v, (int, float, np.floating)) and not isinstance(v, bool) and math.isfinite(float(v)):
        return float(v)
    return None


#: the plant attributes (:class:`~mpc_tracking.models.base.MotionModel`) behind each geometry key
_DECLARED = {"mass": "mass", "I_z": "yaw_inertia", "l_f": "l_f", "l_r": "l_r", "h_cg": "cg_height"}
#: how a plant declares its geometry (the error of a plant that declares none)
HOW_TO_DECLARE = ("declare them on the plant class (MotionModel attributes: mass = 1500.0  # kg, "
                  "yaw_inertia = 2500.0  # kg m^2, l_f = 1.2, l_r = 1.5  # m, cg_height = 0.5  # m, "
                  "driven_axle = 'rear'; see `mpc-tracking new-model`), or pass geometry={'l_f': ..., 'l_r': ...} "
                  "(CLI: --l-f, --l-r, or --wheelbase)")
_DRIVE_OF_3D = {"rwd": "rear", "fwd": "front", "awd": "all"}
#: the vehicle file's drive layout (:attr:`VehicleFile.drive`) of a driven axle
_LAYOUT_OF_AXLE = {axle: layout for layout, axle in _DRIVE_OF_3D.items()}


def plant_geometry(plant: Any, geometry: dict[str, float] | None = None) -> tuple[dict[str, float], dict[str, str]]:
    """Mass, I_z, l_f, l_r, h_cg, g of ``plant`` and where each came from.

    Sources, later ones win: a 3D car's ``plant.vehicle`` (Ackermann3DParams), a plant's
    ``vehicle_params`` (:class:`DynamicParams`), parameters named like the keys (and ``wheelbase``),
    the attributes the plant declares (:meth:`~mpc_tracking.models.base.MotionModel.declared_geometry`:
    ``mass``, ``yaw_inertia``, ``l_f``, ``l_r``, ``cg_height``), then ``geometry``.

    Returns
    -------
    geo : dict
        ``mass`` [kg], ``I_z`` [kg m²] (NaN when unknown: to be fitted), ``l_f``, ``l_r``, ``h_cg`` [m], ``g`` [m/s²].
    source : dict
        Key -> ``"plant"``, ``"argument"`` or ``"assumed"`` (``"fitted"`` is set later for I_z).

    Raises
    ------
    InputError
        A plant that declares neither axle distances nor a wheelbase (the message names the
        attributes and how to declare them), or a bad ``geometry`` entry.
    """
    geo: dict[str, float] = {}
    src: dict[str, str] = {}
    veh = getattr(plant, "vehicle", None)
    if veh is not None and all(hasattr(veh, a) for a in ("mass", "inertia", "cg_to_front", "cg_to_rear")):
        geo.update(mass=float(veh.mass), I_z=float(veh.inertia[2]), l_f=float(veh.cg_to_front),
                   l_r=float(veh.cg_to_rear), h_cg=float(getattr(veh, "cg_height", 0.0)),
                   g=float(getattr(veh, "gravity", 9.81)))
    vp = getattr(plant, "vehicle_params", None)
    if isinstance(vp, DynamicParams):
        geo.update({k: float(getattr(vp, k)) for k in GEOMETRY_KEYS})
    params = getattr(plant, "params", None) or {}
    for k in GEOMETRY_KEYS:
        if k not in geo and _num(params.get(k)) is not None:
            geo[k] = float(params[k])
    declared = plant.declared_geometry() if hasattr(plant, "declared_geometry") else {}
    for k, attr in _DECLARED.items():
        if attr in declared:
            geo[k] = float(declared[attr])
    src.update(dict.fromkeys(geo, "plant"))
    wb = _num(params.get("wheelbase"))
    for k, v in (geometry or {}).items():
        if k not in (*GEOMETRY_KEYS, "wheelbase"):
            raise InputError(f"identify: geometry: unknown key {k!r}; expected some of {[*GEOMETRY_KEYS, 'wheelbase']}")
        if _num(v) is None or float(v) < 0 or (float(v) == 0 and k != "h_cg"):
            raise InputError(f"identify: geometry[{k!r}] must be a positive number, got {v!r}")
        if k == "wheelbase":
            wb = float(v)
        else:
            geo[k], src[k] = float(v), "argument"
    if "l_f" not in geo or "l_r" not in geo:
        if "l_f" in geo and wb:
            geo["l_r"] = wb - geo["l_f"]
        elif "l_r" in geo and wb:
            geo["l_f"] = wb - geo["l_r"]
        elif wb:
            geo["l_f"] = geo["l_r"] = 0.5 * wb
            src["l_f"] = src["l_r"] = "assumed"
            logger.warning("identify: the plant gives no CG position; assuming the middle of the %.3g m wheelbase", wb)
        else:
            raise InputError(f"identify: the plant {getattr(plant, 'name', plant)!r} declares no geometry: none of "
                             f"l_f, l_r (CG to front / rear axle [m]) or a wheelbase parameter (also missing: "
                             f"{', '.join(a for a in _DECLARED.values() if a not in declared)}); {HOW_TO_DECLARE}")
        src.setdefault("l_f", "plant")
        src.setdefault("l_r", "plant")
    if geo["l_f"] <= 0 or geo["l_r"] <= 0:
        raise InputError(f"identify: l_f = {geo['l_f']:g}, l_r = {geo['l_r']:g} m must both be > 0")
    for k, v, why in (("mass", 1.0, "the lateral dynamics depend only on I_z / m; 1 kg: I_z per kilogram"),
                      ("h_cg", 0.0, "no longitudinal load transfer"), ("g", 9.81, "standard gravity")):
        if k not in geo:
            geo[k], src[k] = v, "assumed"
            if k != "g":
                logger.warning("identify: the plant gives no %s; assuming %g (%s)", k, v, why)
    if "I_z" not in geo:
        geo["I_z"], src["I_z"] = math.nan, "fitted"
    return geo, src


def driven_axle(plant: Any) -> str | None:
    """The axle the plant's drive torque reaches (``"front"``, ``"rear"``, ``"all"``) or None when not declared
    (:attr:`~mpc_tracking.models.base.MotionModel.driven_axle`, or a 3D car's ``drive``)."""
    declared = plant.declared_geometry() if hasattr(plant, "declared_geometry") else {}
    if "driven_axle" in declared:
        return str(declared["driven_axle"])
    drive = getattr(getattr(plant, "vehicle", None), "drive", None)
    return _DRIVE_OF_3D.get(drive) if isinstance(drive, str) else None


def _plant_and_actuator(plant: Any, actuator: Any, params: dict[str, Any] | None) -> tuple[Any, Any]:
    from mpc_tracking.actuation import Actuator, default_actuator, make_actuator
    from mpc_tracking.models import MotionModel, create_model

    if isinstance(plant, str):
        plant = create_model(plant, params or {})
    elif params:
        raise InputError("identify: params= is for a plant given by name; this plant is already built")
    if not isinstance(plant, MotionModel):
        raise InputError(f"identify: plant must be a MotionModel or a registered name, got {type(plant).__name__}")
    if actuator is None:
        actuator = default_actuator(plant)
    elif isinstance(actuator, str):
        actuator = make_actuator(actuator)
    if not isinstance(actuator, Actuator):
        raise InputError(f"identify: actuator must be an Actuator or a registered name, got {type(actuator).__name__}")
    return plant, actuator


def _positive(name: str, v: Any) -> float:
    if _num(v) is None or float(v) <= 0:
        raise InputError(f"identify: {name} must be a positive number, got {v!r}")
    return float(v)


def identify(plant: Any, actuator: Any = None, *, params: dict[str, Any] | None = None, speed: float | None = None,
             dt: float | None = None, shape_factor: float = 1.3, geometry: dict[str, float] | None = None,
             fit_inertia: bool | None = None, ramp_rate: float | None = None, a_y_cap: float | None = None,
             smooth: float | None = None, prediction_step: float = 0.1, max_time: float | None = None,
             mu: float | None = None, mu_max: float | None = None, holdout: bool = True) -> IdentificationResult:
    """Identify the dynamic prediction model, speed lag and acceleration limits of a plant.

    Parameters
    ----------
    plant : MotionModel or str
        The plant (re-initialized by every manoeuvre), or a registered name built with ``params``.
    actuator : Actuator or str, optional
        Maps ``(v, delta)`` to the plant's input; default: the plant's default actuator.
    params : dict, optional
        Plant parameters when ``plant`` is a name.
    speed : float, optional
        Reference speed V [m/s]; default ``3.5 sqrt(g L)``.
    dt : float, optional
        Plant step and sample period [s]; default ``min(0.01, sqrt(L/g) / 50)``.
    shape_factor : float
        Pacejka shape factor C of both axles (given, not fitted) [-].
    geometry : dict, optional
        ``mass``, ``I_z``, ``l_f``, ``l_r``, ``h_cg``, ``g``, ``wheelbase`` overriding the plant's.
    fit_inertia : bool, optional
        Fit I_z; default: only when neither the plant nor ``geometry`` gives it.
    ramp_rate : float, optional
        Speed-command ramp of the constant-steer manoeuvre [m/s²]; default ``0.06 g``.
    a_y_cap : float, optional
        Lateral acceleration at which the ramp stops although it has not saturated [m/s²]; default 1.5 g.
    smooth : float, optional
        Savitzky-Golay window of the measured derivatives [s]; default ``max(5 dt, 0.1 sqrt(L/g))``.
    prediction_step : float
        Horizon of the one-step prediction errors [s] (a control period).
    max_time : float, optional
        Longest time a manoeuvre may wait for its speed [s]; default ``80 sqrt(L/g)`` (42 s for a sedan).
    mu : float, optional
        Friction coefficient to use instead of fitting it. Default: fitted when the speed ramp
        saturated, else ``max(1, a_y_peak / g)`` (assumed, logged; the data then only give the
        cornering stiffnesses).
    mu_max : float, optional
        Upper bound of the friction coefficient [-]: the manoeuvres are sized from the lower of the
        ramp's limit and ``mu_max g``, and an identified (or assumed) mu above it is capped (listed in
        the assumptions). ``mu`` bounds the sizing the same way.
    holdout : bool
        Run the hold-out manoeuvres and report their prediction errors.

    Returns
    -------
    IdentificationResult

    Raises
    ------
    IdentificationError
        The plant could not do a manoeuvre (never reached the speed, spun, diverged); the message
        names the manoeuvre and what was reached.
    InputError
        Bad arguments, or a plant without any wheelbase information and no ``geometry``.
    """
    plant, act = _plant_and_actuator(plant, actuator, params)
    geo, src = plant_geometry(plant, geometry)
    if not (isinstance(shape_factor, (int, float)) and 0 < shape_factor < 2):
        raise InputError(f"identify: shape_factor must be in (0, 2), got {shape_factor!r}")
    g = geo["g"]
    L = geo["l_f"] + geo["l_r"]
    sq = math.sqrt(g * L)
    tf = math.sqrt(L / g)
    V = _positive("speed", speed) if speed is not None else 3.5 * sq
    step = _positive("dt", dt) if dt is not None else min(0.01, tf / 50.0)
    rate = _positive("ramp_rate", ramp_rate) if ramp_rate is not None else 0.06 * g
    cap = _positive("a_y_cap", a_y_cap) if a_y_cap is not None else 1.5 * g
    window = _positive("smooth", smooth) if smooth is not None else max(5 * step, 0.1 * tf)
    pstep = _positive("prediction_step", prediction_step)
    limit = _positive("max_time", max_time) if max_time is not None else 80.0 * tf
    scale = mv.Scale(L, V, step, g)
    blend = {"v_floor": min(0.5, 0.1 * sq), "v_blend_low": min(2.0, 0.4 * sq), "v_blend_high": min(5.0, sq)}
    fit_iz = (src["I_z"] == "fitted") if fit_inertia is None else bool(fit_inertia)
    if fit_iz:
        src["I_z"] = "fitted"
    elif math.isnan(geo["I_z"]):
        raise InputError("identify: fit_inertia=False but neither the plant nor geometry gives I_z")
    logger.info("identify %s: V = %.2f m/s, dt = %.4g s, L = %.3g m", plant.name, V, step, L)

    def run(name: str, purpose: str, spec: tuple, **kw: Any) -> mv.Recording:
        v0, segs = spec[0], spec[1]
        rec = mv.run_manoeuvre(plant, act, name, v0, segs, scale, purpose, **kw)
        logger.info("identify: %s done (%d samples, %.1f s)%s", name, len(rec), rec.t[-1],
                    f", {rec.note}" if rec.note else "")
        return rec

    recs: dict[str, mv.Recording] = {}
    assumptions: list[str] = []
    first = run("accel", "longitudinal", mv.acceleration_run(scale, limit, stop_at_limit=True))
    if first.note:  # the speed V was not reached: a top speed below V, or a plant too weak
        v_top = _top_speed(first)
        if v_top is None or v_top < 0.25 * V:
            a_end = float(np.polyfit(first.t[-max(5, len(first) // 5):], first.v_x[-max(5, len(first) // 5):], 1)[0])
            raise IdentificationError(f"accel: {first.note.split(' (v_x')[0]}; reached v_x = {first.v_x[-1]:.2f} m/s, "
                                      f"still accelerating at {a_end:.3g} m/s^2 (pass a lower speed or a longer "
                                      f"max_time)")
        note = (f"the plant's speed levelled off at {v_top:.3g} m/s below the manoeuvre speed {V:.3g} m/s: "
                f"the manoeuvres run at {0.9 * v_top:.3g} m/s instead")
        logger.warning("identify: %s", note)
        assumptions.append(note)
        V = 0.9 * v_top
        scale = mv.Scale(L, V, step, g)
        first = run("accel", "longitudinal", mv.acceleration_run(scale, limit))
    recs["accel"] = first
    recs["brake"] = run("brake", "longitudinal", mv.braking_run(scale, limit))
    if not assumptions:  # the plant reached V: how its acceleration falls above it (a power limit)
        recs["accel_high"] = run("accel_high", "longitudinal", mv.top_speed_run(scale, HIGH_SPEED * V, limit))
    lon = fit_longitudinal(recs["accel"], recs["brake"], window, recs.get("accel_high"))
    steer = _steering_steps(run, recs, scale, assumptions)
    radius = mv.ramp_radius(scale, 2.0 if assumptions else 1.0)  # a top speed of 1.1 V: a tighter circle
    drive = driven_axle(plant)
    iz_guess = geo["I_z"] if math.isfinite(geo["I_z"]) else geo["mass"] * geo["l_f"] * geo["l_r"]

    def ramp(name: str, r_circle: float) -> tuple[mv.RampMonitor, AxlePeaks]:
        """The constant-steer speed ramp on a circle of radius ``r_circle`` [m] into ``recs[name]``."""
        v0, segs, m_ = mv.steady_state_ramp(scale, rate, cap, limit + (math.sqrt(cap * r_circle) - 0.3 * V) / rate,
                                            geo["l_r"], r_circle)
        recs[name] = run(name, "lateral", (v0, segs), stop_on_spin=True)
        if recs[name].note == "spun":
            m_.saturated, m_.reason = True, "the car spun"
        elif recs[name].note:
            m_.reason = recs[name].note
        return m_, axle_peaks(lateral_samples([recs[name]], geo, window, 0.3 * V), geo, iz_guess, drive)

    mon, peaks = ramp("ramp", radius)
    used = max(peaks.front, peaks.rear)
    if (mu is None and mon.saturated and mon.balance == "understeer" and peaks.limiting_axle is None and used > 0
            and _ramp_short_of_peak(recs["ramp"], geo, window, V, float(shape_factor), mon.peak / g,
                                    None if fit_iz else geo["I_z"])):
        # a_y levelled off well below the grip: a strongly understeering car on a constant steer runs wider as it
        # speeds up, toward an a_y set by the steering angle and its understeer gradient, and mu would be
        # extrapolated far along the tyre curve. The same ramp on a tighter circle (more steering) takes the front
        # axle to its peak.
        tighter = min(RAMP_TIGHTER_MAX, max(RAMP_TIGHTER_MIN, RAMP_REACH / used))
        logger.info("identify: the ramp's a_y levelled off at %.3g m/s^2 with the axles at %.2f of their loads "
                    "(understeer, no axle at its peak): again on a circle %.3g x tighter", mon.peak, used, tighter)
        mon_t, peaks_t = ramp("ramp_tight", radius / tighter)
        if peaks_t.limiting_axle is None:
            logger.info("identify: no axle reached its peak on the tighter circle either (%.2f of its load)",
                        max(peaks_t.front, peaks_t.rear))
        if peaks_t.limiting_axle is not None or mon_t.peak > mon.peak:
            mon, peaks = mon_t, peaks_t
    a_peak = mon.peak
    if not mon.saturated:
        logger.warning("identify: the speed ramp did not saturate (%s): mu is at least %.3f", mon.reason, a_peak / g)
    else:
        logger.info("identify: ramp limit a_y = %.3g m/s^2 (%s; %s there)", a_peak, mon.reason, mon.balance or "?")
    # the manoeuvres are sized from the lower of the ramp's limit and mu g (mu given)
    bounds = [b * g for b in (_positive("mu", mu) if mu is not None else None,
                              _positive("mu_max", mu_max) if mu_max is not None else None) if b is not None]
    a_ref = max(min([a_peak, *bounds]), 0.05 * g)

    def sized(name: str, purpose: str, build: Any, share: float) -> mv.Recording:
        """Run a manoeuvre sized to ``share`` of a_ref; one that spins is retried at half amplitude."""
        try:
            return run(name, purpose, build(share * a_ref))
        except IdentificationError as exc:
            if "spun" not in str(exc):
                raise
            logger.warning("identify: %s; retrying at half amplitude (%.3g m/s^2)", exc, 0.5 * share * a_ref)
            retried[name] = str(exc)
        try:
            rec = run(name, purpose, build(0.5 * share * a_ref))
        except IdentificationError as exc:
            raise IdentificationError(f"{exc} (also at half amplitude, {0.5 * share * a_ref:.3g} m/s^2 lateral; "
                                      f"first try: {retried[name]})") from None
        rec.note = (rec.note + "; " if rec.note else "") + "half amplitude (the full one spun)"
        return rec

    retried: dict[str, str] = {}
    recs["step_steer_0.6"] = sized("step_steer_0.6", "lateral",
                                   lambda a: mv.step_steer(scale, 0.6 * V, scale.steer_for(a, 0.6 * V)), 0.4)
    recs["step_steer_0.9"] = sized("step_steer_0.9", "lateral",
                                   lambda a: mv.step_steer(scale, 0.9 * V, -scale.steer_for(a, 0.9 * V)), 0.7)
    recs["sine_sweep"] = sized("sine_sweep", "lateral",
                               lambda a: mv.sine_sweep(scale, 0.75 * V, scale.steer_for(a, 0.75 * V)), 0.4)
    if holdout:
        recs["step_steer_0.75"] = sized("step_steer_0.75", "holdout",
                                        lambda a: mv.step_steer(scale, 0.75 * V, -scale.steer_for(a, 0.75 * V)), 0.55)
        recs["braking_in_turn"] = sized("braking_in_turn", "holdout",
                                        lambda a: mv.braking_in_turn(scale, 0.7 * V, scale.steer_for(a, 0.7 * V),
                                                                     limit), 0.4)
    lateral_recs = [r for r in recs.values() if r.purpose == "lateral"]
    S = lateral_samples(lateral_recs, geo, window, 0.3 * V)
    fit_mu, factors = False, (1.0, 1.0)
    if mu is not None:
        mu0, src["mu"] = _positive("mu", mu), "argument"
    elif mon.saturated and peaks.limiting_axle is not None:
        # the peak is measured: the friction the saturated axle used (no extrapolation by the tyre curve)
        sat = [p for p, s_ in ((peaks.front, peaks.front_saturated), (peaks.rear, peaks.rear_saturated)) if s_]
        mu0, src["mu"] = max(sat), f"measured ({peaks.limiting_axle} axle peak on the ramp)"
        factors = (peaks.front / mu0 if peaks.front_saturated else max(1.0, peaks.front / mu0),
                   peaks.rear / mu0 if peaks.rear_saturated else max(1.0, peaks.rear / mu0))
    elif mon.saturated:
        fit_mu, mu0, src["mu"] = True, max(a_peak / g, 0.05), "fitted"
    else:
        mu0, src["mu"] = max(1.0, a_peak / g), "assumed"
        logger.warning("identify: mu not measurable without a saturated ramp; assuming %.3g (pass mu= to set it)", mu0)
    if mu_max is not None and mu0 > mu_max:
        assumptions.append(f"mu capped at the bound mu_max = {mu_max:.3g} ({src['mu']}: {mu0:.3g})")
        factors, mu0, fit_mu = (1.0, 1.0), float(mu_max), False
    lat = fit_lateral(S, geo, float(shape_factor), mu0, None if fit_iz else geo["I_z"], fit_mu, factors)
    if mu_max is not None and lat.mu > mu_max:  # a fitted mu above the bound: fixed at the bound
        assumptions.append(f"mu capped at the bound mu_max = {mu_max:.3g} (fitted {lat.mu:.3g})")
        lat = fit_lateral(S, geo, float(shape_factor), float(mu_max), None if fit_iz else geo["I_z"], False)
    if fit_mu and lat.slip_seen and lat.max_force_ratio < EXTRAPOLATED_BELOW:
        logger.warning("identify: the tyres reached only %.0f %% of the fitted friction: mu = %.3f is extrapolated",
                       100 * lat.max_force_ratio, lat.mu)
    dyn = DynamicParams(mass=geo["mass"], I_z=lat.I_z, l_f=geo["l_f"], l_r=geo["l_r"], h_cg=geo["h_cg"], mu=lat.mu,
                        tyre_B_f=lat.B_f, tyre_C_f=float(shape_factor), tyre_B_r=lat.B_r,
                        tyre_C_r=float(shape_factor), tyre_D_f=lat.D_f, tyre_D_r=lat.D_r, g=g, **blend)
    report: dict[str, Any] = {
        "steering": None if steer is None else {
            "rate_max": steer.rate_max, "lag": steer.lag, "rise_large": steer.rise_large,
            "rise_small": steer.rise_small, "amplitude": steer.amplitude, "speed": steering_step_speed(scale)},
        "longitudinal": {
            "tau": lon.tau, "accel_max": lon.accel_max, "decel_max": lon.decel_max,
            "power_per_mass": lon.power_per_mass,
            "accel_plateau": lon.accel_plateau, "decel_plateau": lon.decel_plateau, "rms_speed": lon.rms_speed},
        "lateral": {"mu": lat.mu, "B_f": lat.B_f, "B_r": lat.B_r, "I_z": lat.I_z, "fitted_inertia": lat.fitted_inertia,
                    "D_f": lat.D_f, "D_r": lat.D_r, "mu_source": src["mu"],
                    "slip_seen": lat.slip_seen, "max_force_ratio": lat.max_force_ratio,
                    "rms_lateral": lat.rms_lateral, "rms_yaw": lat.rms_yaw, "samples": lat.samples,
                    "C_alpha_f": dyn.cornering_stiffness[0], "C_alpha_r": dyn.cornering_stiffness[1]},
        "ramp": {"a_y_peak": a_peak, "saturated": mon.saturated, "end": mon.reason,
                 "mu_peak": a_peak / g, "balance": mon.balance or None},
        "axle_peaks": {"front": peaks.front, "rear": peaks.rear, "front_saturated": peaks.front_saturated,
                       "rear_saturated": peaks.rear_saturated, "limiting_axle": peaks.limiting_axle,
                       "driven_axle": drive},
        "fit_manoeuvres": {n: predict_errors(r, dyn, lon, pstep, window) for n, r in recs.items()
                           if r.purpose == "lateral"},
        "holdout": {n: predict_errors(r, dyn, lon, pstep, window) for n, r in recs.items() if r.purpose == "holdout"},
    }
    prior = _a_priori(plant, act, float(shape_factor))
    if prior:
        report["a_priori"] = prior
    provenance = {
        "plant": plant.name, "plant_params": getattr(plant, "params", {}), "actuator": getattr(act, "name", "?"),
        "geometry_source": src, "options": {"speed": V, "dt": step, "shape_factor": shape_factor, "ramp_rate": rate,
                                            "a_y_cap": cap, "smooth": window, "prediction_step": pstep,
                                            "mu": mu, "mu_max": mu_max},
        "manoeuvres": {n: {"purpose": r.purpose, "samples": len(r), "duration": float(r.t[-1]), "note": r.note}
                       for n, r in recs.items()},
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    assumptions += _assumptions(src, geo, mon, peaks, drive, lat, mu0)
    for note in assumptions:
        logger.warning("identify: assumed: %s", note)
    return IdentificationResult(dyn, lon.tau, lon.accel_max, lon.decel_max, plain(report), plain(provenance), "",
                                a_y_max=a_peak if mon.saturated else None, power_per_mass=lon.power_per_mass,
                                steering_rate_max=None if steer is None else steer.rate_max,
                                drive=_LAYOUT_OF_AXLE.get(drive) if drive is not None else None,
                                assumptions=tuple(assumptions), a_y_peak=a_peak, longitudinal=lon, lateral=lat,
                                recordings=recs)


#: a fitted mu is extrapolated (warned, and the speed ramp retried on a tighter circle) when the largest axle force
#: of the data is below this share of the fitted peak
EXTRAPOLATED_BELOW = 0.9
#: a speed ramp whose a_y levelled off in understeer with no axle at its peak and short of the fitted peak
#: (:data:`EXTRAPOLATED_BELOW`) runs again on a circle tighter by
#: ``RAMP_REACH`` / (the largest share of its load an axle used), within [RAMP_TIGHTER_MIN, RAMP_TIGHTER_MAX]:
#: enough steering for an axle to reach a friction of RAMP_REACH (the tighter circle costs nothing when the grip is
#: lower: the front axle saturates earlier, at a lower speed)
RAMP_REACH = 1.3
RAMP_TIGHTER_MIN, RAMP_TIGHTER_MAX = 1.5, 3.0
#: the full-throttle run above the manoeuvre speed goes on to this multiple of it (the power limit of a
#: car that binds only above V: the CommonRoad model's above 21.6 m/s, V = 17.6 m/s)
HIGH_SPEED = 2.0
#: the steering steps run at this share of the manoeuvre speed V (rolling without noticeable slip)
STEER_STEP_SPEED = 0.3
#: their amplitude A [rad]: the kinematic angle of STEER_STEP_LATERAL g at that speed, at most this (larger
#: steps saturate the front tyres for a moment, and the rise then grows with the amplitude without a rate
#: limit; much smaller ones are dominated by the steering servo's own lag)
STEER_STEP_MAX = 0.1
#: lateral acceleration of the steering steps [g]
STEER_STEP_LATERAL = 0.15


def steering_step_speed(scale: mv.Scale) -> float:
    """Speed [m/s] of the steering steps: ``STEER_STEP_SPEED V``, at most the speed at which the largest
    step ``STEER_STEP_MAX`` gives ``STEER_STEP_LATERAL g`` (so a high manoeuvre speed keeps the full step)."""
    g, L = scale.g, scale.wheelbase
    return min(STEER_STEP_SPEED * scale.speed, math.sqrt(L * STEER_STEP_LATERAL * g / math.tan(STEER_STEP_MAX)))


def _steering_steps(run: Any, recs: dict[str, mv.Recording], scale: mv.Scale,
                    assumptions: list[str]) -> SteeringFit | None:
    """Two steering steps at low speed -> the steering's rate limit (:mod:`~mpc_tracking.identification.steering`);
    None (and an assumption noted) when they could not be measured."""
    v = steering_step_speed(scale)
    amp = min(STEER_STEP_MAX, scale.steer_for(STEER_STEP_LATERAL * scale.g, v))
    try:
        recs["steering_step"] = run("steering_step", "steering", mv.steering_step(scale, v, amp))
        recs["steering_step_half"] = run("steering_step_half", "steering", mv.steering_step(scale, v, 0.5 * amp))
        fit = fit_steering(recs["steering_step"], recs["steering_step_half"], amp, scale.wheelbase)
    except IdentificationError as exc:
        note = f"steering rate not measured ({exc}): the controller plans as if the wheels followed its command"
        logger.warning("identify: %s", note)
        assumptions.append(note)
        return None
    if fit.rate_max is not None:
        logger.info("identify: the steering is rate limited at %.3g rad/s (30-70 %% rise %.3g s for %.3g rad, "
                    "%.3g s for half)", fit.rate_max, fit.rise_large, fit.amplitude, fit.rise_small)
    else:
        logger.info("identify: the steering is not rate limited (lag %.3g s)", fit.lag)
    return fit


def _ramp_short_of_peak(rec: mv.Recording, geo: dict[str, float], window: float, V: float, C: float, mu0: float,
                        I_z: float | None) -> bool:
    """Whether the speed ramp ``rec`` stayed short of the tyres' peak: its axle forces, fitted alone, reach less than
    :data:`EXTRAPOLATED_BELOW` of the fitted friction (the friction would be extrapolated by the tyre curve)."""
    lat = fit_lateral(lateral_samples([rec], geo, window, 0.3 * V), geo, C, max(mu0, 0.05), I_z, True)
    return bool(lat.slip_seen and lat.max_force_ratio < EXTRAPOLATED_BELOW)


def _assumptions(src: dict[str, str], geo: dict[str, float], mon: mv.RampMonitor, peaks: AxlePeaks,
                 drive: str | None, lat: LateralFit, mu0: float) -> list[str]:
    """What the identified numbers rest on without having been measured (the vehicle file's ``assumptions``)."""
    out = []
    why = {"mass": "1 kg (the lateral dynamics depend only on I_z / m: I_z is per kilogram)",
           "h_cg": "0 m (no longitudinal load transfer)", "l_f": "the middle of the wheelbase"}
    for k in ("mass", "h_cg", "l_f"):
        if src.get(k) == "assumed":
            out.append(f"{'CG position' if k == 'l_f' else k} not declared by the plant: {why[k]}")
    if src.get("mu") == "assumed":
        out.append(f"mu = {mu0:.3g} assumed, not measured: the speed ramp did not reach the grip limit "
                   f"({mon.reason}); pass --mu / mu= to set it")
    elif src.get("mu") == "argument":
        out.append(f"mu = {mu0:.3g} given, not measured")
    elif src.get("mu") == "fitted":
        out.append("mu extrapolated by the tyre curve: no axle's force levelled off on the speed ramp")
    if not mon.saturated:
        out.append(f"a_y_max not measured (null): the speed ramp reached {mon.peak:.3g} m/s^2 without saturating "
                   f"({mon.reason}); the lateral limit falls back to mu g")
    if src.get("mu", "").startswith("measured"):
        for axle, sat, d in (("front", peaks.front_saturated, lat.D_f), ("rear", peaks.rear_saturated, lat.D_r)):
            if not sat:
                out.append(f"the {axle} axle never reached its limit (it used {getattr(peaks, axle):.3g} of its load): "
                           f"its peak factor D = {d:.3g} assumes the friction of the saturated axle")
    if drive is None:
        out.append("driven axle not declared: the drive force is left out of the axles' combined slip")
    return out


def _top_speed(rec: mv.Recording) -> float | None:
    """The speed [m/s] a full-throttle run levelled off at (its last fifth gained less than a tenth of
    what the run gained per second on average), else None (still accelerating)."""
    k = max(5, len(rec) // 5)
    rate_end = float(np.polyfit(rec.t[-k:], rec.v_x[-k:], 1)[0])
    rate_all = (float(rec.v_x[-1]) - float(rec.v_x[0])) / max(float(rec.t[-1] - rec.t[0]), 1e-9)
    return float(np.max(rec.v_x)) if rate_all > 0 and rate_end < 0.1 * rate_all else None


def _a_priori(plant: Any, act: Any, C: float) -> dict[str, float]:
    """The parameters read off a 3D car (:func:`dynamic_params_from_ackermann3d`) to compare with."""
    veh = getattr(plant, "vehicle", None)
    if veh is None or not hasattr(veh, "cornering_stiffness"):
        return {}
    from mpc_tracking.models.prediction import dynamic_params_from_ackermann3d

    try:
        p = dynamic_params_from_ackermann3d(veh, shape_factor=C)
    except Exception:
        return {}
    cf, cr = p.cornering_stiffness
    return {"mu": p.mu, "B_f": p.tyre_B_f, "B_r": p.tyre_B_r, "D_f": p.tyre_D_f, "D_r": p.tyre_D_r,
            "C_alpha_f": cf, "C_alpha_r": cr, "I_z": p.I_z,
            "speed_lag": float(act.speed_lag)}
