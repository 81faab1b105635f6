"""MPC vs the geometric baselines (pure pursuit, Stanley) on the same paths, plant and limits.

Every controller drives one lap (or the whole open path) of each path with the kinematic bicycle
(the same wheelbase and steering limit as the controllers) and the same limits: the MPC's settings,
and for the baselines ``TrackingLimits.from_settings`` of them (speed profile from v_max, a_y_max,
accel_max, decel_max; steering delta_max and delta_rate_max). Figures per run: RMS and max |e_y| [m]
of the rear axle, the body's largest overshoot past the track edge [m], lap time [s], outcome, and the
median controller time per step [ms]; ratios to the MPC of the same path in the same run.

Paths: the bundled ones (but rc_course, sized for a 0.26 m car) and, when present, the shared race
tracks in ../shared/tracks (full-size, at race-track limits). The 3D sedan (``ackermann3d``, preset
``sedan``, its wheel-torque PI speed loop) drives the short bundled paths too, built from a scenario
(``controller.type``) as ``mpc-tracking run`` would. Prints JSON with a ``provenance`` block;
``--save`` also writes benchmarks/results/baselines.json.

    python benchmarks/bench_baselines.py [--save] [--bundled-only] [--no-sedan]
"""
from __future__ import annotations

import argparse
import logging
import math
import time
from typing import Any

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json
from _shared import shared_dir

import mpc_tracking as mt

TRACKS = shared_dir("tracks")
#: bundled paths (waypoint spacing 0.5 m) at moderate limits
BUNDLED = ("oval", "figure_eight", "double_lane_change", "hairpin_slalom", "circuit")
SMALL = {"v_max": 10.0, "a_y_max": 4.0, "accel_max": 2.5, "decel_max": 5.0, "delta_rate_max": 0.8}
#: the race tracks (spacing 1 m) at full-size car limits
RACE = {"v_max": 20.0, "a_y_max": 6.0, "accel_max": 3.0, "decel_max": 6.0, "delta_rate_max": 0.8}
CONTROLLERS = ("mpc", "pure_pursuit", "stanley")
#: the paths the 3D sedan drives (a lap of each takes it 0.5 - 2 s of CPU per controller)
SEDAN_PATHS = ("oval", "figure_eight", "double_lane_change", "hairpin_slalom")


def _controller(kind: str, path: mt.ReferencePath, settings: mt.MPCSettings) -> Any:
    vehicle = mt.VehicleParams()
    if kind == "mpc":
        return mt.SpatialMPC(path, vehicle, settings)
    limits = mt.TrackingLimits.from_settings(settings)
    return (mt.PurePursuit if kind == "pure_pursuit" else mt.Stanley)(path, vehicle, limits=limits)


def run(path: mt.ReferencePath, kind: str, settings: mt.MPCSettings) -> dict[str, Any]:
    """One run's figures (kinematic bicycle)."""
    ctrl = _controller(kind, path, settings)
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": mt.VehicleParams().wheelbase,
                                                  "delta_max": settings.delta_max})
    t0 = time.perf_counter()
    r = mt.simulate(path, ctrl, plant)
    return _figures(kind, r, time.perf_counter() - t0)


def run_sedan(name: str, kind: str, limits: dict[str, float]) -> dict[str, Any]:
    """One run's figures with the 3D sedan, from a scenario."""
    sc = mt.default_scenario().with_overrides({
        "path.source": name, "plant.name": "ackermann3d", "plant.params.preset": "sedan", "controller.type": kind,
        "controller.horizon": 30, "simulation.e_y0": 0.0, **{f"controller.{k}": v for k, v in limits.items()}})
    t0 = time.perf_counter()
    r = mt.run_scenario(sc)
    return _figures(kind, r, time.perf_counter() - t0)


def _figures(kind: str, r: mt.SimulationResult, wall: float) -> dict[str, Any]:
    m = r.metrics
    return {
        "controller": kind, "outcome": m["reason"], "completed": bool(m["lap_completed"]),
        "rms_e_y_m": round(m["rms_e_y"], 4), "max_e_y_m": round(m["max_abs_e_y"], 4),
        "body_overshoot_m": round(m["max_body_overshoot"], 4),
        "lap_time_s": round(m["lap_time"], 2) if math.isfinite(m["lap_time"]) else round(m["duration"], 2),
        "mean_speed_mps": round(m["mean_speed"], 2), "step_time_median_ms": round(1e3 * m["step_time_median"], 3),
        "steps": m["steps"], "wall_s": round(wall, 2),
    }


def bench_path(name: str, path: mt.ReferencePath, limits: dict[str, float], ds: float,
               plant: str = "kinematic_bicycle") -> dict[str, Any]:
    """The three controllers on one path, with ratios to the MPC."""
    settings = mt.MPCSettings(horizon=30, ds=ds, **limits)
    if plant == "kinematic_bicycle":
        rows = [run(path, kind, settings) for kind in CONTROLLERS]
    else:
        rows = [run_sedan(name, kind, limits) for kind in CONTROLLERS]
    mpc = rows[0]
    for row in rows[1:]:
        row["rms_e_y_vs_mpc"] = round(row["rms_e_y_m"] / max(mpc["rms_e_y_m"], 1e-9), 2)
        row["lap_time_vs_mpc"] = round(row["lap_time_s"] / max(mpc["lap_time_s"], 1e-9), 3)
    logging.getLogger(__name__).info("%s: %s", name, [(r["controller"], r["rms_e_y_m"]) for r in rows])
    return {"path": name, "plant": plant, "length_m": round(path.length, 1), "closed": path.closed, "limits": limits,
            "runs": rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/baselines.json")
    ap.add_argument("--bundled-only", action="store_true", help="skip the shared race tracks")
    ap.add_argument("--no-sedan", action="store_true", help="skip the 3D sedan runs")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    prov = provenance()
    paths = [(name, mt.load_path(name, ds=0.5), SMALL, 0.5) for name in BUNDLED]
    if TRACKS.is_dir() and not args.bundled_only:
        paths += [(f.stem, mt.read_tum(f, ds=1.0, smoothing=0.25), RACE, 1.0) for f in sorted(TRACKS.glob("*.csv"))]
    results = [bench_path(*p) for p in paths]
    if not args.no_sedan:
        results += [bench_path(name, mt.load_path(name, ds=0.5), SMALL, 0.5, "ackermann3d_sedan")
                    for name in SEDAN_PATHS]
    summary = {}
    for plant, kind in [(p, k) for p in ("kinematic_bicycle", "ackermann3d_sedan") for k in CONTROLLERS]:
        runs = [r for res in results if res["plant"] == plant for r in res["runs"] if r["controller"] == kind]
        if not runs:
            continue
        summary[f"{plant}/{kind}"] = {
            "completed": f"{sum(r['completed'] for r in runs)}/{len(runs)}",
            "median_rms_e_y_m": round(float(np.median([r["rms_e_y_m"] for r in runs])), 4),
            "worst_max_e_y_m": round(max(r["max_e_y_m"] for r in runs), 3),
            "worst_body_overshoot_m": round(max(r["body_overshoot_m"] for r in runs), 3),
        }
    out = {"provenance": finish(prov), "benchmark": "baselines", "horizon": 30,
           "summary": summary, "paths": results}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / "baselines.json", out)


if __name__ == "__main__":
    main()
