"""Tracking at the grip limit: the 3D sedan on real race tracks at a fraction of its identified limits.

The sedan (``ackermann3d``, preset ``sedan``, its ``wheel_torque_pi`` actuator) is identified first
(:func:`mpc_tracking.identify`: the lateral acceleration it held on a constant-steer speed ramp, its
braking and acceleration limits, its tyre parameters). For every track in ``../shared/tracks`` (TUM
format; the bundled synthetic ``circuit`` when the folder is absent), every fraction ``f`` and every
prediction model, one lap from the centre line with

    a_y_max = f * (identified lateral limit),  decel_max = f * (identified braking limit),
    accel_max = min(3, identified acceleration limit),  v_max 40 m/s, horizon 30, ds 1 m,
    friction ellipse on;

the dynamic model predicts with the identified parameters and the actuator's speed lead (1/kp),
as a scenario with ``vehicle.file:`` does. The same lap with the kinematic-bicycle plant (the
controller's own model) gives the ideal lap time at the same limits. Columns: completed, lap time
and its excess over the ideal, RMS and max |e_y|, the largest distance any body corner left the
track (:func:`mpc_tracking.results.body_overshoot`: from the logged pose and the body rectangle, not
the controller's slack), solver failures (steps not solved), MPC step time median / p95.

``--rc`` adds the ``rc_car`` preset on the course of ``demos/rc_course.yaml`` (12.9 m, corner
radius 0.45 m, 0.35 m each side), with the a-priori parameters: with its actuator the RC car tops
out at ~1.8 m/s, so the fractions apply to the tyres' nominal mu g and v_max is 1.6 m/s; steering
up to 0.6 rad at 6 rad/s (a hobby servo).

Prints JSON with a ``provenance`` block; ``--save`` writes benchmarks/results/grip_limit.json.

    python benchmarks/bench_grip_limit.py [--tracks Monza,Spa] [--fractions 0.7,0.85,0.95]
                                          [--models kinematic,dynamic] [--rc] [--save]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt
from mpc_tracking.models.prediction import DynamicPrediction, dynamic_params_from_ackermann3d

TRACKS = Path(__file__).resolve().parents[2] / "shared" / "tracks"
G = 9.81
#: the sedan's body as the controller sees it (matches the ``sedan`` preset: wheelbase 2.68 m)
SEDAN_BODY = mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)


def _settings(a_y: float, decel: float, accel: float, horizon: int, v_max: float, ds: float, model: str,
              delta_max: float = 0.6, delta_rate_max: float = 0.8) -> mt.MPCSettings:
    return mt.MPCSettings(horizon=horizon, ds=ds, v_max=v_max, a_y_max=a_y, decel_max=decel, accel_max=accel,
                          delta_max=delta_max, delta_rate_max=delta_rate_max, prediction_model=model,
                          discretization="rk4" if model == "dynamic" else "euler", friction_ellipse=True)


def run_lap(path: mt.ReferencePath, vehicle: mt.VehicleParams, settings: mt.MPCSettings, plant: str,
            params: dict[str, Any], corridor: Any = None, dynamic: Any = None) -> dict[str, Any]:
    """One lap from the centre line; the row of figures. ``dynamic``: the DynamicParams of the
    dynamic prediction model (default: read off the 3D car), with the actuator's speed lead."""
    car = mt.create_model(plant, params)
    act = mt.actuation.default_actuator(car)
    prediction = None
    if settings.prediction_model == "dynamic":
        dyn = dynamic if dynamic is not None else dynamic_params_from_ackermann3d(car.vehicle)
        prediction = DynamicPrediction(dyn, speed_lag=act.speed_lag)
    mpc = mt.SpatialMPC(path, vehicle, settings, corridor=corridor, prediction=prediction)
    t0 = time.perf_counter()
    res = mt.simulate(path, mpc, car, act)
    wall = time.perf_counter() - t0
    m = res.metrics
    return {
        "completed": bool(res.success),
        "reason": str(res.reason),
        "lap_time_s": round(m["lap_time"], 3) if res.lap_times else None,
        "rms_e_y_cm": round(100 * m["rms_e_y"], 2),
        "max_e_y_cm": round(100 * m["max_abs_e_y"], 2),
        "max_body_overshoot_m": round(m["max_body_overshoot"], 3),
        "solver_failures": m["infeasible_steps"],
        "steps": m["steps"],
        "step_ms_median": round(1e3 * m["step_time_median"], 3),
        "step_ms_p95": round(1e3 * m["step_time_p95"], 3),
        "wall_s": round(wall, 1),
    }


def _tracks(names: list[str] | None) -> list[tuple[str, mt.ReferencePath]]:
    if TRACKS.is_dir():
        files = sorted(TRACKS.glob("*.csv"))
        if names:
            files = [f for f in files if f.stem in names]
        return [(f.stem, mt.read_tum(f, ds=1.0, smoothing=0.25)) for f in files]
    return [("circuit (bundled)", mt.load_path("circuit", ds=1.0))]


def _excess(row: dict[str, Any], ideal: dict[str, Any]) -> float | None:
    if row["lap_time_s"] is None or ideal["lap_time_s"] is None:
        return None
    return round(100.0 * (row["lap_time_s"] / ideal["lap_time_s"] - 1.0), 2)


def _summary(rows: list[dict[str, Any]], models: list[str], fractions: list[float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for model in models:
        for frac in fractions:
            sel = [r for r in rows if r["prediction_model"] == model and r["fraction"] == frac]
            if not sel:
                continue
            done = [r for r in sel if r["completed"]]
            out[f"{model} {frac:g}"] = {
                "completed": f"{len(done)} of {len(sel)}",
                "body_overshoot_zero": f"{sum(r['max_body_overshoot_m'] == 0 for r in sel)} of {len(sel)}",
                "rms_e_y_cm_max": max((r["rms_e_y_cm"] for r in done), default=None),
                "lap_excess_pct_max": max((r["lap_excess_pct"] for r in done if r["lap_excess_pct"] is not None),
                                          default=None),
                "step_ms_median": float(np.median([r["step_ms_median"] for r in sel])),
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tracks", default=None, help="comma-separated track names (default: all)")
    ap.add_argument("--fractions", default="0.7,0.85,0.95", help="fractions of the identified limits")
    ap.add_argument("--models", default="kinematic,dynamic", help="prediction models, comma-separated")
    ap.add_argument("--horizon", type=int, default=30)
    ap.add_argument("--v-max", type=float, default=40.0, help="top speed [m/s]")
    ap.add_argument("--rc", action="store_true", help="also the rc_car preset on the bundled rc_course")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/grip_limit.json")
    args = ap.parse_args()
    prov = provenance()
    fractions = [float(f) for f in args.fractions.split(",")]
    models = args.models.split(",")
    t0 = time.perf_counter()
    ident = mt.identify(mt.create_model("ackermann3d", {"preset": "sedan"}))
    identified = {"lateral_limit": ident.lateral_limit, "decel_max": ident.decel_max, "accel_max": ident.accel_max,
                  "mu": ident.params.mu, "speed_lag_identified": ident.speed_lag,
                  "seconds": round(time.perf_counter() - t0, 1)}
    accel = min(3.0, ident.accel_max)
    rows = []
    for name, path in _tracks(args.tracks.split(",") if args.tracks else None):
        for frac in fractions:
            a_y, decel = frac * ident.lateral_limit, frac * ident.decel_max
            ideal = run_lap(path, SEDAN_BODY, _settings(a_y, decel, accel, args.horizon, args.v_max, 1.0, "kinematic"),
                            "kinematic_bicycle", {"wheelbase": SEDAN_BODY.wheelbase})
            for model in models:
                st = _settings(a_y, decel, accel, args.horizon, args.v_max, 1.0, model)
                row = run_lap(path, SEDAN_BODY, st, "ackermann3d", {"preset": "sedan"}, dynamic=ident.params)
                row.update(track=name, fraction=frac, a_y_max=round(a_y, 3), decel_max=round(decel, 3),
                           prediction_model=model, ideal_lap_time_s=ideal["lap_time_s"],
                           lap_excess_pct=_excess(row, ideal))
                rows.append(row)
                print(f"{name:14s} f={frac:.2f} {model:9s} {row['reason']:14s} lap {row['lap_time_s']} "
                      f"(ideal {ideal['lap_time_s']}, {row['lap_excess_pct']} %) RMS {row['rms_e_y_cm']} cm "
                      f"max {row['max_e_y_cm']} cm overshoot {row['max_body_overshoot_m']} m "
                      f"fail {row['solver_failures']} step {row['step_ms_median']} ms", flush=True)
    rc_rows = []
    if args.rc:
        from mpc_tracking.scenario.build import build

        # the demo's course (corner radius 0.45 m, drivable at delta 0.6 rad; the bundled rc_course
        # has 0.15 m corners, tighter than the car can turn)
        path = build(mt.load_scenario(Path(__file__).resolve().parents[1] / "demos" / "rc_course.yaml"))[0]
        veh = mt.VehicleParams.rc_car()
        corridor = None
        mu_g = mt.Ackermann3DParams.rc_car().mu * G
        for frac in fractions:
            lim = (frac * mu_g, frac * mu_g, 2.0, args.horizon, 1.6, path.ds)
            ideal = run_lap(path, veh, _settings(*lim, "kinematic", 0.6, 6.0), "kinematic_bicycle",
                            {"wheelbase": veh.wheelbase}, corridor)
            for model in models:
                row = run_lap(path, veh, _settings(*lim, model, 0.6, 6.0), "ackermann3d", {"preset": "rc_car"},
                              corridor)
                row.update(track="rc_course", fraction=frac, prediction_model=model,
                           ideal_lap_time_s=ideal["lap_time_s"], lap_excess_pct=_excess(row, ideal))
                rc_rows.append(row)
                print(f"rc_course      f={frac:.2f} {model:9s} {row['reason']:14s} lap {row['lap_time_s']} "
                      f"(ideal {ideal['lap_time_s']}) RMS {row['rms_e_y_cm']} cm", flush=True)
    out = {"provenance": finish(prov), "plant": "ackermann3d sedan (wheel_torque_pi)", "identified": identified,
           "friction_ellipse": True, "horizon": args.horizon, "v_max": args.v_max, "accel_max": accel,
           "rows": rows, "rc_car": rc_rows, "summary": _summary(rows, models, fractions),
           "summary_rc": _summary(rc_rows, models, fractions)}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / "grip_limit.json", out)


if __name__ == "__main__":
    main()
