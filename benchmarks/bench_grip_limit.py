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

``--circuits N`` (issue 20) drives the sedan with **default settings** instead: ``MPCSettings(v_max=40,
grip_fraction=f)`` and nothing else, resolved as a scenario resolves them
(:func:`mpc_tracking.scenario.defaults.grip_defaults` with the plant, its actuator and the identified
car: prediction model auto, limits f x identified, ellipse, rk4, ds), on N generated circuits
(``benchmarks/circuits.py``, seed ``--seed``) and on the shared tracks (``--no-shared``: not), and
reports distributions (median, worst) per fraction and set: completed, body overshoot, RMS/max e_y,
lap vs the ideal (the kinematic plant with the same resolved limits), the planned-vs-realized
acceleration error (RMS over the lap of the plan's a_x minus the measured speed change per control
period), solver failures, step time. ``--no-feedforward`` runs the actuator without the plan's
feed-forward (the speed PI on the command alone, as before). ``--budget S`` stops starting laps after S
seconds of wall time.

Prints JSON with a ``provenance`` block; ``--save`` writes benchmarks/results/grip_limit.json
(``--circuits``: grip_limit_circuits.json, or ``--out NAME``).

    python benchmarks/bench_grip_limit.py [--tracks Monza,Spa] [--fractions 0.7,0.85,0.95]
                                          [--models kinematic,dynamic] [--rc] [--save]
    python benchmarks/bench_grip_limit.py --circuits 30 --fractions 0.85,0.95 [--seed 0] [--no-shared]
                                          [--no-feedforward] [--budget 3000] [--save]
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json
from _shared import shared_dir

import mpc_tracking as mt
from mpc_tracking.models.prediction import DynamicPrediction, dynamic_params_from_ackermann3d

#: the shared tracks ($MPC_TRACKING_SHARED, ../shared or ../../shared: benchmarks/_shared.py)
TRACKS = shared_dir("tracks")
G = 9.81
#: the sedan's body as the controller sees it (matches the ``sedan`` preset: wheelbase 2.68 m)
SEDAN_BODY = mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)


def _settings(a_y: float, decel: float, accel: float, horizon: int, v_max: float, ds: float, model: str,
              delta_max: float = 0.6, delta_rate_max: float = 0.8) -> mt.MPCSettings:
    return mt.MPCSettings(horizon=horizon, ds=ds, v_max=v_max, a_y_max=a_y, decel_max=decel, accel_max=accel,
                          delta_max=delta_max, delta_rate_max=delta_rate_max, prediction_model=model,
                          discretization="rk4" if model == "dynamic" else "euler", friction_ellipse=True)


def run_lap(path: mt.ReferencePath, vehicle: mt.VehicleParams, settings: mt.MPCSettings, plant: str,
            params: dict[str, Any], corridor: Any = None, dynamic: Any = None,
            feedforward: bool = True) -> dict[str, Any]:
    """One lap from the centre line; the row of figures. ``dynamic``: the DynamicParams of the
    dynamic prediction model (default: read off the 3D car), with the actuator's speed lead."""
    car = mt.create_model(plant, params)
    act = mt.actuation.default_actuator(car)
    if hasattr(act, "pi"):
        act.pi.feedforward = feedforward
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
        "accel_error_rms": _accel_error(res, settings) if settings.prediction_model == "dynamic" else None,
        "corner_excess_pct": _corner_excess(res, path, settings),
        "wall_s": round(wall, 1),
    }


def _corner_excess(res: Any, path: mt.ReferencePath, settings: mt.MPCSettings) -> float | None:
    """How far [%] the car's speed went above the corner's ceiling: the largest ``v / sqrt(a_y_max /
    |kappa|) - 1`` over the lap where the path's lateral ceiling is below 0.97 v_max (in corners)."""
    from mpc_tracking.paths.speed_profile import lateral_speed_limit

    s, v = (np.asarray(res.series[k], dtype=float) for k in ("s", "v"))
    if s.size < 2:
        return None
    ceiling = lateral_speed_limit(np.interp(s, path.s, path.kappa), settings.a_y_max, settings.v_max)
    corner = ceiling < 0.97 * settings.v_max
    if not corner.any():
        return None
    return round(100.0 * (float(np.max(v[corner] / ceiling[corner])) - 1.0), 2)


def _accel_error(res: Any, settings: mt.MPCSettings) -> float | None:
    """RMS [m/s^2] of the planned a_x (logged as ``v_ref`` of the dynamic model) minus the measured
    speed change over the control period that followed it, after the first second."""
    t, v, a_plan = (np.asarray(res.series[k], dtype=float) for k in ("t", "v", "v_ref"))
    if t.size < 3:
        return None
    a_real = np.diff(v) / np.diff(t)
    keep = (t[:-1] > 1.0) & np.isfinite(a_plan[:-1])
    if not keep.any():
        return None
    return round(float(np.sqrt(np.mean((a_plan[:-1] - a_real)[keep] ** 2))), 3)


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
    ap.add_argument("--circuits", type=int, default=0, help="default settings on N generated circuits")
    ap.add_argument("--seed", type=int, default=0, help="seed of the generated circuits")
    ap.add_argument("--no-shared", action="store_true", help="with --circuits: skip the shared tracks")
    ap.add_argument("--defaults", action="store_true", help="default settings on the shared tracks (no --circuits)")
    ap.add_argument("--no-feedforward", action="store_true", help="speed PI without the plan's feed-forward")
    ap.add_argument("--grip", choices=("default", "on", "off"), default="default",
                    help="the online grip estimate (MPCSettings.grip_estimation): as the defaults set it, or forced")
    ap.add_argument("--budget", type=float, default=float("inf"), help="stop starting laps after S seconds")
    ap.add_argument("--out", default=None, help="file name under benchmarks/results/ for --save")
    ap.add_argument("--circuit-offset", type=int, default=0,
                    help="with --circuits N: circuits K..K+N-1 of the seed (split a run over processes)")
    ap.add_argument("--vehicle-file", default=None,
                    help="read the identified sedan from this vehicle file (written there when missing)")
    ap.add_argument("--merge", default=None,
                    help="comma-separated result files of split runs: one summary over their rows")
    args = ap.parse_args()
    if args.merge:
        main_merge(args)
        return
    if args.circuits or args.no_shared or args.defaults:
        main_defaults(args)
        return
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


def _default_settings(frac: float, v_max: float, ident: Any, car: Any, path: mt.ReferencePath) -> mt.MPCSettings:
    """What a user gets with only v_max and the grip fraction set (as a scenario resolves it)."""
    from mpc_tracking.scenario.defaults import grip_defaults

    act = mt.actuation.default_actuator(car)
    return grip_defaults(mt.MPCSettings(v_max=v_max, grip_fraction=frac), car, act, ident, path.ds, "bench")


def _distribution(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def stat(key: str, worst: Any = max) -> dict[str, Any] | None:
        vals = [r[key] for r in rows if r.get(key) is not None]
        if not vals:
            return None
        return {"median": round(float(np.median(vals)), 3), "worst": round(float(worst(vals)), 3)}

    done = [r for r in rows if r["completed"]]
    return {
        "completed": f"{len(done)} of {len(rows)}",
        "body_overshoot_zero": f"{sum(r['max_body_overshoot_m'] == 0 for r in rows)} of {len(rows)}",
        "max_body_overshoot_m": stat("max_body_overshoot_m"),
        "rms_e_y_cm": stat("rms_e_y_cm"), "max_e_y_cm": stat("max_e_y_cm"),
        "lap_excess_pct": stat("lap_excess_pct"), "accel_error_rms": stat("accel_error_rms"),
        "corner_excess_pct": stat("corner_excess_pct"),
        "solver_failures": stat("solver_failures"), "step_ms_median": stat("step_ms_median"),
    }


def main_defaults(args: Any) -> None:
    """Default settings on generated circuits (+ the shared tracks): distributions per fraction and set."""
    from circuits import generate_circuits

    prov = provenance()
    fractions = [float(f) for f in args.fractions.split(",")]
    t0 = time.perf_counter()
    car = mt.create_model("ackermann3d", {"preset": "sedan"})
    ident = _identified(car, args.vehicle_file)
    identified = {"lateral_limit": ident.lateral_limit, "decel_max": ident.decel_max, "accel_max": ident.accel_max,
                  "mu": ident.params.mu, "power_per_mass": getattr(ident, "power_per_mass", None),
                  "seconds": round(time.perf_counter() - t0, 1), "vehicle_file": args.vehicle_file}
    sets = []
    if args.circuits:
        gen = generate_circuits(args.circuit_offset + args.circuits, args.seed, ds=1.0)[args.circuit_offset:]
        sets.append(("generated", gen))
    if not args.no_shared and TRACKS.is_dir():
        sets.append(("shared", [p for _, p in _tracks(args.tracks.split(",") if args.tracks else None)]))
    rows: list[dict[str, Any]] = []
    stopped = False
    for set_name, paths in sets:
        for path in paths:
            for frac in fractions:
                if time.perf_counter() - t0 > args.budget:
                    stopped = True
                    break
                st = _default_settings(frac, args.v_max, ident, car, path)
                if args.grip != "default":  # the online grip estimate forced on or off (a comparison run)
                    st = st.replace(grip_estimation=args.grip == "on")
                kin = mt.MPCSettings(horizon=st.horizon, ds=1.0, v_max=st.v_max, a_y_max=st.a_y_max,
                                     decel_max=st.decel_max, accel_max=st.accel_max, prediction_model="kinematic",
                                     friction_ellipse=True)
                ideal = run_lap(path, SEDAN_BODY, kin, "kinematic_bicycle", {"wheelbase": SEDAN_BODY.wheelbase})
                row = run_lap(path, SEDAN_BODY, st, "ackermann3d", {"preset": "sedan"}, dynamic=ident.params,
                              feedforward=not args.no_feedforward)
                row.update(set=set_name, track=path.name, length_m=round(path.length, 1), fraction=frac,
                           prediction_model=st.prediction_model, grip_estimation=st.grip_estimation,
                           a_y_max=round(st.a_y_max, 3),
                           decel_max=round(st.decel_max, 3), accel_max=round(st.accel_max, 3),
                           ideal_lap_time_s=ideal["lap_time_s"], lap_excess_pct=_excess(row, ideal))
                rows.append(row)
                print(f"{set_name:9s} {path.name:13s} f={frac:.2f} {row['reason']:14s} lap {row['lap_time_s']} "
                      f"({row['lap_excess_pct']} %) RMS {row['rms_e_y_cm']} max {row['max_e_y_cm']} cm "
                      f"over {row['max_body_overshoot_m']} m a_err {row['accel_error_rms']} "
                      f"corner {row['corner_excess_pct']} % "
                      f"fail {row['solver_failures']} step {row['step_ms_median']} ms", flush=True)
    out = {"provenance": finish(prov), "plant": "ackermann3d sedan (wheel_torque_pi)", "identified": identified,
           "settings": "MPCSettings(v_max, grip_fraction) + grip_defaults (everything else default)",
           "feedforward": not args.no_feedforward, "grip": args.grip, "seed": args.seed, "stopped_by_budget": stopped,
           "summary": _summaries(rows), "rows": rows}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / (args.out or "grip_limit_circuits.json"), out)


def _summaries(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Distributions per set and fraction, and over all sets per fraction."""
    keys = sorted({(r["set"], r["fraction"]) for r in rows})
    out = {f"{s} {f:g}": _distribution([r for r in rows if (r["set"], r["fraction"]) == (s, f)]) for s, f in keys}
    for f in sorted({f for _, f in keys}):
        out[f"all {f:g}"] = _distribution([r for r in rows if r["fraction"] == f])
    return out


def _identified(car: Any, vehicle_file: str | None) -> Any:
    """The identified sedan: read from ``vehicle_file`` when it exists, else identified (and written there)."""
    if vehicle_file and Path(vehicle_file).is_file():
        return mt.load_vehicle_file(vehicle_file)
    ident = mt.identify(car)
    if vehicle_file:
        ident.to_yaml(vehicle_file)
    return ident


def main_merge(args: Any) -> None:
    """One summary over the rows of several saved split runs (``--merge a.json,b.json``)."""
    import json

    parts = [json.loads((RESULTS / f if not Path(f).is_file() else Path(f)).read_text()) for f in args.merge.split(",")]
    rows = [r for p in parts for r in p["rows"]]
    out = {"provenance": provenance(), "merged": args.merge.split(","),
           "commits": sorted({p["provenance"]["git"]["commit"] or "" for p in parts}),
           "identified": parts[0].get("identified"), "settings": parts[0].get("settings"),
           "summary": _summaries(rows), "rows": rows}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / (args.out or "grip_limit_circuits.json"), out)


if __name__ == "__main__":
    main()
