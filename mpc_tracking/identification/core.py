"""``identify(plant)``: run the manoeuvres, fit the dynamic model, report how well it predicts.

Sequence (sizes from :class:`~mpc_tracking.identification.manoeuvres.Scale`):

1. straight-line acceleration and braking runs -> speed lag ``tau``, ``accel_max``, ``decel_max``;
2. constant-steer speed ramp on a circle (radius ``(1.1 V)² / g``, at least 3 L) until the lateral
   acceleration saturates -> peak lateral acceleration ``a_y_peak`` (``mu`` start value; without
   saturation ``mu`` is assumed);
3. step steers at 0.6 V (0.4 a_y_peak) and 0.9 V (0.7 a_y_peak, to the other side) and a sine sweep
   at 0.75 V -> with the ramp, the equation-error fit of ``mu``, ``B_f``, ``B_r`` (and ``I_z``);
4. hold-out manoeuvres not used by any fit: a step steer at 0.75 V (0.55 a_y_peak) and a braking in a
   turn (0.7 V -> 0.28 V at 0.4 a_y_peak) -> one-step and open-loop prediction errors.

Geometry the manoeuvres cannot measure (mass, l_f, l_r, h_cg, and I_z unless fitted) is read off the
plant: a 3D car's ``plant.vehicle`` (Ackermann3DParams), a plant's ``vehicle_params``
(:class:`DynamicParams`), or parameters named ``mass``, ``I_z``, ``l_f``, ``l_r``, ``h_cg``,
``wheelbase``; the ``geometry`` argument overrides. The lateral dynamics depend on the mass only
through ``I_z / m`` (the tyre forces scale with ``m``), so an unknown mass is set to 1 kg (then ``I_z``
is per kilogram); an unknown CG position is the middle of the wheelbase; an unknown CG height is 0.
Every such assumption is logged and listed in the provenance.
"""
from __future__ import annotations

import datetime
import logging
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError
from mpc_tracking.identification import manoeuvres as mv
from mpc_tracking.identification.fit import (
    LateralFit,
    LongitudinalFit,
    fit_lateral,
    fit_longitudinal,
    lateral_samples,
)
from mpc_tracking.identification.report import ERROR_KEYS, predict_errors
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
        Largest steady lateral acceleration of the speed ramp [m/s²] (``v_x r``, low-pass filtered).
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
            ("I_z [kg m^2]", p.I_z, prior.get("I_z")),
            ("speed lag [s]", self.speed_lag, prior.get("speed_lag")),
            ("accel_max [m/s^2]", self.accel_max, None),
            ("decel_max [m/s^2]", self.decel_max, None),
        ]

        def fmt(v: Any) -> str:
            if v is None:
                return "-"
            return f"{v:.4g}" if isinstance(v, float) else str(v)

        w = max(len(r[0]) for r in rows)
        lines = [f"  {'quantity':<{w}}  {'identified':>14}  {'a priori':>14}"]
        lines += [f"  {k:<{w}}  {fmt(v):>14}  {fmt(a):>14}" for k, v, a in rows]
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


def plant_geometry(plant: Any, geometry: dict[str, float] | None = None) -> tuple[dict[str, float], dict[str, str]]:
    """Mass, I_z, l_f, l_r, h_cg, g of ``plant`` and where each came from.

    Returns
    -------
    geo : dict
        ``mass`` [kg], ``I_z`` [kg m²] (NaN when unknown: to be fitted), ``l_f``, ``l_r``, ``h_cg`` [m], ``g`` [m/s²].
    source : dict
        Key -> ``"plant"``, ``"argument"`` or ``"assumed"`` (``"fitted"`` is set later for I_z).
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
            raise InputError(f"identify: the plant {getattr(plant, 'name', plant)!r} declares no wheelbase or axle "
                             f"distances; pass geometry={{'l_f': ..., 'l_r': ...}} (or 'wheelbase')")
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
             mu: float | None = None, holdout: bool = True) -> IdentificationResult:
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
    recs["accel"] = run("accel", "longitudinal", mv.acceleration_run(scale, limit))
    recs["brake"] = run("brake", "longitudinal", mv.braking_run(scale, limit))
    lon = fit_longitudinal(recs["accel"], recs["brake"], window)
    radius = max((1.1 * V) ** 2 / g, 3.0 * L)
    v0, segs, mon = mv.steady_state_ramp(scale, rate, cap, limit + (math.sqrt(cap * radius) - 0.3 * V) / rate)
    recs["ramp"] = run("ramp", "lateral", (v0, segs), stop_on_spin=True)
    a_peak = mon.peak
    if recs["ramp"].note == "spun":
        mon.saturated, mon.reason = True, "the car spun"
    elif recs["ramp"].note:
        mon.reason = recs["ramp"].note
    if not mon.saturated:
        logger.warning("identify: the speed ramp did not saturate (%s): mu is at least %.3f", mon.reason, a_peak / g)
    a_ref = max(a_peak, 0.05 * g)
    recs["step_steer_0.6"] = run("step_steer_0.6", "lateral",
                                 mv.step_steer(scale, 0.6 * V, scale.steer_for(0.4 * a_ref, 0.6 * V)))
    recs["step_steer_0.9"] = run("step_steer_0.9", "lateral",
                                 mv.step_steer(scale, 0.9 * V, -scale.steer_for(0.7 * a_ref, 0.9 * V)))
    recs["sine_sweep"] = run("sine_sweep", "lateral",
                             mv.sine_sweep(scale, 0.75 * V, scale.steer_for(0.4 * a_ref, 0.75 * V)))
    if holdout:
        recs["step_steer_0.75"] = run("step_steer_0.75", "holdout",
                                      mv.step_steer(scale, 0.75 * V, -scale.steer_for(0.55 * a_ref, 0.75 * V)))
        recs["braking_in_turn"] = run("braking_in_turn", "holdout",
                                      mv.braking_in_turn(scale, 0.7 * V, scale.steer_for(0.4 * a_ref, 0.7 * V), limit))
    lateral_recs = [r for r in recs.values() if r.purpose == "lateral"]
    S = lateral_samples(lateral_recs, geo, window, 0.3 * V)
    fit_mu = mu is None and mon.saturated
    if mu is not None:
        mu0, src["mu"] = _positive("mu", mu), "argument"
    elif mon.saturated:
        mu0, src["mu"] = max(a_peak / g, 0.05), "fitted"
    else:
        mu0, src["mu"] = max(1.0, a_peak / g), "assumed"
        logger.warning("identify: mu not measurable without a saturated ramp; assuming %.3g (pass mu= to set it)", mu0)
    lat = fit_lateral(S, geo, float(shape_factor), mu0, None if fit_iz else geo["I_z"], fit_mu)
    if fit_mu and lat.slip_seen and lat.max_force_ratio < 0.9:
        logger.warning("identify: the tyres reached only %.0f %% of the fitted friction: mu = %.3f is extrapolated",
                       100 * lat.max_force_ratio, lat.mu)
    dyn = DynamicParams(mass=geo["mass"], I_z=lat.I_z, l_f=geo["l_f"], l_r=geo["l_r"], h_cg=geo["h_cg"], mu=lat.mu,
                        tyre_B_f=lat.B_f, tyre_C_f=float(shape_factor), tyre_B_r=lat.B_r,
                        tyre_C_r=float(shape_factor), g=g, **blend)
    report: dict[str, Any] = {
        "longitudinal": {
            "tau": lon.tau, "accel_max": lon.accel_max, "decel_max": lon.decel_max,
            "accel_plateau": lon.accel_plateau, "decel_plateau": lon.decel_plateau, "rms_speed": lon.rms_speed},
        "lateral": {"mu": lat.mu, "B_f": lat.B_f, "B_r": lat.B_r, "I_z": lat.I_z, "fitted_inertia": lat.fitted_inertia,
                    "slip_seen": lat.slip_seen, "max_force_ratio": lat.max_force_ratio,
                    "rms_lateral": lat.rms_lateral, "rms_yaw": lat.rms_yaw, "samples": lat.samples,
                    "C_alpha_f": dyn.cornering_stiffness[0], "C_alpha_r": dyn.cornering_stiffness[1]},
        "ramp": {"a_y_peak": a_peak, "saturated": mon.saturated, "end": mon.reason,
                 "mu_peak": a_peak / g},
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
                                            "a_y_cap": cap, "smooth": window, "prediction_step": pstep},
        "manoeuvres": {n: {"purpose": r.purpose, "samples": len(r), "duration": float(r.t[-1]), "note": r.note}
                       for n, r in recs.items()},
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    return IdentificationResult(dyn, lon.tau, lon.accel_max, lon.decel_max, plain(report), plain(provenance), "",
                                a_y_max=a_peak if mon.saturated else None, a_y_peak=a_peak, longitudinal=lon,
                                lateral=lat, recordings=recs)


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
    return {"mu": p.mu, "B_f": p.tyre_B_f, "B_r": p.tyre_B_r, "C_alpha_f": cf, "C_alpha_r": cr, "I_z": p.I_z,
            "speed_lag": float(act.speed_lag)}
