"""Tracking at the grip limit: the 3D sedan on real race tracks at a fraction of its friction limit.

For every track in ``../shared/tracks`` (TUM format; the bundled synthetic ``circuit`` when the
folder is absent), every friction fraction ``f`` (lateral limit ``a_y = f mu g`` and braking
``decel = f mu g``, mu of the plant preset) and every prediction model, one lap from the centre
line with the ``ackermann3d`` plant (preset ``sedan``), and the same lap with the kinematic-bicycle
plant (the controller's own model: the ideal reference lap time at the same limits). Columns:
completed, lap time, RMS and max |e_y|, the largest distance any body corner left the track
(:func:`mpc_tracking.results.body_overshoot`: measured from the logged pose and the body rectangle,
not the controller's slack), solver failures (steps not solved), MPC step time median / p95.
``--rc`` adds the same table for the ``rc_car`` preset on the bundled ``rc_course``.

Prints JSON with a ``provenance`` block; ``--save`` writes benchmarks/results/grip_limit.json.

    python benchmarks/bench_grip_limit.py [--tracks Monza,Spa] [--fractions 0.7,0.85,0.95]
                                          [--models kinematic] [--rc] [--save]
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


def _settings(frac: float, mu: float, horizon: int, v_max: float, ds: float, prediction_model: str,
              ellipse: bool = True) -> mt.MPCSettings:
    a = frac * mu * G
    return mt.MPCSettings(horizon=horizon, ds=ds, v_max=v_max, a_y_max=a, decel_max=a, accel_max=3.0,
                          delta_max=0.6, delta_rate_max=0.8, prediction_model=prediction_model,
                          discretization="rk4" if prediction_model == "dynamic" else "euler",
                          friction_ellipse=ellipse)


def run_lap(path: mt.ReferencePath, vehicle: mt.VehicleParams, settings: mt.MPCSettings, plant: str,
            params: dict[str, Any], corridor: Any = None) -> dict[str, Any]:
    """One lap from the centre line; the row of figures. The dynamic model gets the 3D car's
    parameters (read off its parameter set) and the speed loop's lag of its actuator."""
    car = mt.create_model(plant, params)
    act = mt.actuation.default_actuator(car)
    prediction = None
    if settings.prediction_model == "dynamic":
        dyn = dynamic_params_from_ackermann3d(car.vehicle)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tracks", default=None, help="comma-separated track names (default: all)")
    ap.add_argument("--fractions", default="0.7,0.85,0.95", help="fractions of mu g for a_y and braking")
    ap.add_argument("--models", default="kinematic,dynamic", help="prediction models, comma-separated")
    ap.add_argument("--no-ellipse", action="store_true", help="without the friction ellipse (MPCSettings)")
    ap.add_argument("--horizon", type=int, default=30)
    ap.add_argument("--v-max", type=float, default=40.0, help="top speed [m/s]")
    ap.add_argument("--rc", action="store_true", help="also the rc_car preset on the bundled rc_course")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/grip_limit.json")
    args = ap.parse_args()
    prov = provenance()
    fractions = [float(f) for f in args.fractions.split(",")]
    models = args.models.split(",")
    sedan_mu = mt.Ackermann3DParams.sedan().mu
    rows = []
    for name, path in _tracks(args.tracks.split(",") if args.tracks else None):
        for frac in fractions:
            ideal = run_lap(path, SEDAN_BODY, _settings(frac, sedan_mu, args.horizon, args.v_max, 1.0, "kinematic"),
                            "kinematic_bicycle", {"wheelbase": SEDAN_BODY.wheelbase})
            for model in models:
                st = _settings(frac, sedan_mu, args.horizon, args.v_max, 1.0, model, not args.no_ellipse)
                row = run_lap(path, SEDAN_BODY, st, "ackermann3d", {"preset": "sedan"})
                row.update(track=name, fraction=frac, a_y_max=round(st.a_y_max, 3), prediction_model=model,
                           ideal_lap_time_s=ideal["lap_time_s"])
                rows.append(row)
                print(f"{name:14s} f={frac:.2f} {model:9s} {row['reason']:14s} lap {row['lap_time_s']} "
                      f"(ideal {ideal['lap_time_s']}) RMS {row['rms_e_y_cm']} cm overshoot "
                      f"{row['max_body_overshoot_m']} m", flush=True)
    rc_rows = []
    if args.rc:
        path = mt.load_path("rc_course")
        veh = mt.VehicleParams.rc_car()
        corridor = mt.ObstacleCorridor(path, path.obstacles) if path.obstacles else None
        rc_mu = mt.Ackermann3DParams.rc_car().mu
        for frac in fractions:
            for model in models:
                st = _settings(frac, rc_mu, args.horizon, 3.0, path.ds, model, not args.no_ellipse)
                row = run_lap(path, veh, st, "ackermann3d", {"preset": "rc_car"}, corridor)
                ideal = run_lap(path, veh, _settings(frac, rc_mu, args.horizon, 3.0, path.ds, "kinematic"),
                                "kinematic_bicycle", {"wheelbase": veh.wheelbase}, corridor)
                row.update(track="rc_course", fraction=frac, prediction_model=model,
                           ideal_lap_time_s=ideal["lap_time_s"])
                rc_rows.append(row)
    out = {"provenance": finish(prov), "plant": "ackermann3d sedan", "mu": sedan_mu,
           "friction_ellipse": not args.no_ellipse,
           "horizon": args.horizon, "v_max": args.v_max, "rows": rows, "rc_car": rc_rows,
           "summary": {
               "completed": f"{sum(r['completed'] for r in rows)} of {len(rows)}",
               "body_overshoot_zero": f"{sum(r['max_body_overshoot_m'] == 0 for r in rows)} of {len(rows)}",
               "median_rms_e_y_cm": float(np.median([r["rms_e_y_cm"] for r in rows])) if rows else None,
           }}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / "grip_limit.json", out)


if __name__ == "__main__":
    main()
