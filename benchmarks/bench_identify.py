"""Identification on plants that differ from the sedan: identified vs true, hold-out errors, success.

Plants (all from the command's defaults, nothing tuned per plant):

* ``sedan_dry`` / ``sedan_wet``: the 3D sedan at mu 0.9 / 0.6 (truth: the plant's mu; the a-priori
  model :func:`~mpc_tracking.models.prediction.dynamic_params_from_ackermann3d` for the tyres);
* ``sedan_rwd_oversteer``: the sedan with the CG moved back (a = 1.6 m) and the roll stiffness on the rear
  axle, rear drive: oversteers at the limit;
* ``rc_car``: the 1:10 RC car (its bearing drag holds it at 1.8 m/s, a third of the manoeuvre speed);
* ``synthetic``: the dynamic bicycle itself (every parameter known);
* ``synthetic_power_topspeed``: the same with P/m = 40 W/kg and a 15 m/s governor;
* ``commonroad_std``: CommonRoad's single-track drift model (steering-rate + acceleration inputs, Magic
  Formula tyres with peak p_dy1 = 1.0489, rear drive, wheels turning at most 0.4 rad/s), the test plugin
  ``tests/identification/plants``; ``commonroad_std_speed30`` the same with ``speed=30`` (its power limit
  binds above 21.6 m/s).

Prints JSON with provenance; ``--save`` writes benchmarks/results/identify.json.
Run: ``nice python benchmarks/bench_identify.py [--only NAME ...] [--save]`` (about 3 minutes on one core).
``--lap [TRACK ...] [--circuits N --seed S --length-km 2 3] [--fraction 0.9] [--steering-rate on|off]``:
the CommonRoad model identified, then its vehicle file in closed loop (one lap of each shared track
and generated circuit with the dynamic MPC at that fraction of its limits, default settings otherwise):
completed, RMS/max e_y, body overshoot, solver failures, lap time vs the planned one (the speed
profile's, a flying lap) and the kinematic ideal, median and worst (``--save``:
results/identify_lap.json or ``--out``). ``--steering-rate off`` drops the measured steering rate
limit (the behaviour before identification measured it).
"""
from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from typing import Any

from _provenance import REPO, RESULTS, dumps, finish, provenance, save_json
from _shared import shared_dir

sys.path.insert(0, str(REPO))

import mpc_tracking as mt
from mpc_tracking.identification import DynamicBicyclePlant
from mpc_tracking.models.prediction import dynamic_params_from_ackermann3d

OVERSTEER = {"preset": "sedan", "cg_to_front": 1.6, "arb_front": 0.0, "arb_rear": 3.0e4}


def _plants() -> dict[str, tuple[Any, dict[str, Any], dict[str, float]]]:
    """name -> (plant, identify() options, truth)."""
    out: dict[str, tuple[Any, dict[str, Any], dict[str, float]]] = {}
    for name, params, mu in (("sedan_dry", {"preset": "sedan"}, 0.9),
                             ("sedan_wet", {"preset": "sedan", "mu": 0.6}, 0.6),
                             ("sedan_rwd_oversteer", OVERSTEER, 0.9), ("rc_car", {"preset": "rc_car"}, 0.9)):
        plant = mt.create_model("ackermann3d", params)
        prior = dynamic_params_from_ackermann3d(plant.vehicle)
        out[name] = (plant, {}, {"mu": mu, "C_alpha_f": prior.cornering_stiffness[0],
                                 "C_alpha_r": prior.cornering_stiffness[1]})
    for name, params in (("synthetic", {}), ("synthetic_power_topspeed", {"power_per_mass": 40.0, "speed_max": 15.0})):
        plant = DynamicBicyclePlant(params)
        vp = plant.vehicle_params
        truth = {"mu": vp.mu, "C_alpha_f": vp.cornering_stiffness[0], "C_alpha_r": vp.cornering_stiffness[1],
                 "speed_lag": plant.params["tau"], "accel_max": plant.params["accel_max"],
                 "decel_max": plant.params["decel_max"]}
        if params.get("power_per_mass"):
            truth["power_per_mass"] = params["power_per_mass"]
        out[name] = (plant, {"dt": 0.02}, truth)
    from tests.identification.plants import commonroad_std

    if commonroad_std.available():
        commonroad_std.register()
        from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

        bmw = DynamicParams.bmw_320i()  # CommonRoad's vehicle 2 with its tyre file (the a-priori model)
        truth = {"mu": bmw.mu, "C_alpha_f": bmw.cornering_stiffness[0], "C_alpha_r": bmw.cornering_stiffness[1]}
        # the engine's a_max v_switch / v limit (P/m = 11.5 x 7.319 W/kg) binds above 21.6 m/s, where the
        # actuator's 3.9 m/s^2 meets it: seen by the run on to 2 V (35 m/s) and by manoeuvres at 30 m/s;
        # the wheels turn at most steering.v_max = 0.4 rad/s
        car = mt.create_model("commonroad_std")
        lon = car.vp.longitudinal
        truth = {**truth, "power_per_mass": lon.a_max * lon.v_switch, "steering_rate_max": car.vp.steering.v_max}
        out["commonroad_std"] = (car, {}, truth)
        out["commonroad_std_speed30"] = (mt.create_model("commonroad_std"), {"speed": 30.0}, truth)
    return out


def _rel(a: float | None, b: float) -> float | None:
    return None if a is None or not math.isfinite(a) else a / b - 1.0


def measure(name: str, plant: Any, options: dict[str, Any], truth: dict[str, float]) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        res = mt.identify(plant, **options)
    except mt.MPCTrackingError as exc:
        return {"plant": name, "success": False, "error": str(exc), "seconds": time.perf_counter() - t0}
    p = res.params
    got = {"mu": p.mu, "C_alpha_f": p.cornering_stiffness[0], "C_alpha_r": p.cornering_stiffness[1],
           "speed_lag": res.speed_lag, "accel_max": res.accel_max, "decel_max": res.decel_max,
           "power_per_mass": res.power_per_mass, "steering_rate_max": res.steering_rate_max}
    return {
        "plant": name, "success": True, "seconds": time.perf_counter() - t0,
        "identified": {**got, "D_f": p.tyre_D_f, "D_r": p.tyre_D_r, "a_y_max": res.a_y_max},
        "truth": truth, "relative_error": {k: _rel(got[k], v) for k, v in truth.items()},
        "mu_source": res.report["lateral"]["mu_source"], "ramp": res.report["ramp"],
        "axle_peaks": res.report["axle_peaks"], "assumptions": list(res.assumptions),
        "retried": {n: m["note"] for n, m in res.provenance["manoeuvres"].items() if "half amplitude" in m["note"]},
        "speed": res.provenance["options"]["speed"],
        "holdout_open_loop": {n: e["open_loop"] for n, e in res.report["holdout"].items()},
    }


def _lap_paths(tracks: list[str], circuits: int, seed: int, length_km: tuple[float, float]) -> list[Any]:
    """The shared ``tracks`` by name, then ``circuits`` generated circuits (``benchmarks/circuits.py``)
    of ``length_km`` named ``gen<seed>_<i>``."""
    import numpy as np
    from circuits import generate_circuit

    where = shared_dir("tracks")  # $MPC_TRACKING_SHARED, ../shared or ../../shared (benchmarks/_shared.py)
    out = [mt.read_tum(where / f"{t}.csv", ds=1.0, smoothing=0.25) for t in tracks]
    for t, p in zip(tracks, out, strict=True):
        p.name = t
    rng_range = (1000.0 * length_km[0], 1000.0 * length_km[1])
    out += [generate_circuit(np.random.default_rng([seed, i]), ds=1.0, length_range=rng_range, name=f"gen{seed}_{i}")
            for i in range(circuits)]
    return out


def lap(path: Any, vf: Any, fraction: float) -> dict[str, Any]:
    """One lap of ``path`` by the CommonRoad drift model with the dynamic MPC at ``fraction`` of the limits of
    its vehicle file ``vf`` (``MPCSettings(v_max=40, grip_fraction=fraction)`` + the scenario defaults:
    nothing tuned), beside the planned lap time (the speed profile of the resolved limits, a flying lap)
    and the kinematic ideal (a kinematic bicycle at the same limits)."""
    import numpy as np

    from mpc_tracking.models.prediction import DynamicPrediction
    from mpc_tracking.paths.speed_profile import speed_profile
    from mpc_tracking.scenario.defaults import grip_defaults
    from tests.identification.plants import commonroad_std

    commonroad_std.register()
    car = mt.create_model("commonroad_std")
    body = mt.VehicleParams(wheelbase=vf.params.l_f + vf.params.l_r, length=4.508, width=1.61, rear_overhang=0.95)
    act = mt.actuation.default_actuator(car)
    st = grip_defaults(mt.MPCSettings(v_max=40.0, grip_fraction=fraction), car, act, vf, path.ds, "bench")
    pred = DynamicPrediction(vf.params, speed_lag=act.speed_lag) if st.prediction_model == "dynamic" else None
    t0 = time.perf_counter()
    res = mt.simulate(path, mt.SpatialMPC(path, body, st, prediction=pred), car, act)
    wall = time.perf_counter() - t0
    kin = mt.MPCSettings(horizon=st.horizon, ds=1.0, v_max=st.v_max, a_y_max=st.a_y_max, decel_max=st.decel_max,
                         accel_max=st.accel_max, prediction_model="kinematic", friction_ellipse=True)
    ideal_car = mt.create_model("kinematic_bicycle", {"wheelbase": body.wheelbase})
    ideal = mt.simulate(path, mt.SpatialMPC(path, body, kin), ideal_car, mt.actuation.default_actuator(ideal_car))
    v_plan = speed_profile(path, v_max=st.v_max, a_y_max=st.a_y_max, a_max=st.accel_max, a_brake=st.decel_max,
                           friction_ellipse=True, power_per_mass=st.power_per_mass)
    planned = float(np.sum(np.diff(np.append(path.s, path.length)) / v_plan))
    m = res.metrics
    lap_time = m["lap_time"] if res.lap_times else None
    return {"track": path.name, "length_m": round(float(path.length), 1), "fraction": fraction,
            "completed": bool(res.success), "reason": str(res.reason),
            "lap_time_s": lap_time, "planned_lap_time_s": planned, "ideal_lap_time_s": ideal.metrics["lap_time"],
            "lap_vs_planned_pct": None if lap_time is None else 100.0 * (lap_time / planned - 1.0),
            "rms_e_y_m": m["rms_e_y"], "max_e_y_m": m["max_abs_e_y"], "max_body_overshoot_m": m["max_body_overshoot"],
            "solver_failures": m["infeasible_steps"], "t_end_s": float(res.t[-1]), "s_end_m": float(res.s[-1]),
            "wall_s": round(wall, 1),
            "settings": {"prediction_model": st.prediction_model, "a_y_max": st.a_y_max, "accel_max": st.accel_max,
                         "decel_max": st.decel_max, "power_per_mass": st.power_per_mass,
                         "delta_rate_max": st.delta_rate_max, "horizon": st.horizon,
                         "friction_ellipse": st.friction_ellipse}}


def _laps_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Completed count; median and worst of RMS/max e_y, body overshoot, lap vs planned, solver failures."""
    import numpy as np

    def stat(key: str, worst: Any = max) -> dict[str, float | None]:
        vals = [r[key] for r in rows if r[key] is not None]
        return {"median": float(np.median(vals)) if vals else None, "worst": float(worst(vals)) if vals else None}

    return {"laps": len(rows), "completed": sum(r["completed"] for r in rows),
            "rms_e_y_m": stat("rms_e_y_m"), "max_e_y_m": stat("max_e_y_m"),
            "max_body_overshoot_m": stat("max_body_overshoot_m"), "lap_vs_planned_pct": stat("lap_vs_planned_pct"),
            "solver_failures": stat("solver_failures")}


def laps(args: Any) -> dict[str, Any]:
    """Identify the CommonRoad drift model from scratch, then drive the requested laps with its vehicle file."""
    from tests.identification.plants import commonroad_std

    commonroad_std.register()
    vf = mt.identify(mt.create_model("commonroad_std"), holdout=False)
    if args.steering_rate == "off":  # the behaviour before the steering steps: the rate limit left out
        import dataclasses

        vf = dataclasses.replace(vf, steering_rate_max=None)
    paths = _lap_paths(args.lap or [], args.circuits, args.seed, tuple(args.length_km))
    rows = []
    for p in paths:
        row = lap(p, vf, args.fraction)
        print(f"{row['track']}: completed {row['completed']} lap {row['lap_time_s']} planned "
              f"{row['planned_lap_time_s']:.1f} RMS {100 * row['rms_e_y_m']:.1f} cm max {row['max_e_y_m']:.2f} m "
              f"body {row['max_body_overshoot_m']:.2f} m failures {row['solver_failures']}",
              file=sys.stderr, flush=True)
        rows.append(row)
    return {"steering_rate": args.steering_rate,
            "vehicle_file": {"lateral_limit": vf.lateral_limit, "accel_max": vf.accel_max, "decel_max": vf.decel_max,
                             "power_per_mass": vf.power_per_mass, "mu": vf.params.mu,
                             "steering_rate_max": vf.steering_rate_max, "assumptions": list(vf.assumptions)},
            "laps": rows, "summary": _laps_summary(rows)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="plant names to run (default all)")
    ap.add_argument("--lap", metavar="TRACK", nargs="*", help="instead: identify the CommonRoad model and drive one "
                    "lap of each shared TRACK (e.g. BrandsHatch) at --fraction of its limits")
    ap.add_argument("--circuits", type=int, default=0, help="laps: also N generated circuits (benchmarks/circuits.py)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the generated circuits (default 0)")
    ap.add_argument("--length-km", type=float, nargs=2, default=(2.0, 3.0), metavar=("MIN", "MAX"),
                    help="length range of the generated circuits [km] (default 2 3)")
    ap.add_argument("--steering-rate", choices=("on", "off"), default="on",
                    help="laps: 'off' drops the identified steering rate limit from the vehicle file (the behaviour "
                    "before it was measured)")
    ap.add_argument("--fraction", type=float, default=0.9, help="grip fraction of the laps (default 0.9)")
    ap.add_argument("--out", default=None, help="laps: results file name in benchmarks/results "
                    "(default identify_lap.json)")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/identify.json (laps: --out)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    prov = provenance()
    if args.lap is not None or args.circuits:
        out = {"provenance": None, **laps(args)}
        out["provenance"] = finish(prov)
        print(dumps(out))
        if args.save:
            save_json(RESULTS / (args.out or "identify_lap.json"), out)
        return
    rows = [measure(n, *spec) for n, spec in _plants().items() if not args.only or n in args.only]
    out = {"provenance": finish(prov), "plants": rows,
           "summary": {r["plant"]: {"success": r["success"],
                                    "mu_error": (r.get("relative_error") or {}).get("mu")} for r in rows}}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / "identify.json", out)


if __name__ == "__main__":
    main()
