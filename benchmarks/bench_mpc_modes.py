"""Closed-loop quality and cost of the MPC's options on a bundled circuit.

Compares, on one lap with the kinematic bicycle: tracking vs time-optimal mode, linearization
about the previous solution vs about the reference, and the three warm-start options.
Prints JSON (RMS/max e_y, lap time, corridor violations, solve and step time medians, and a
``provenance`` block); ``--save`` also writes benchmarks/results/mpc_modes.json (``--out FILE``
elsewhere).

    python benchmarks/bench_mpc_modes.py [--path oval] [--horizon 30] [--ds 1.0] [--save | --out FILE]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt

BASE = dict(v_max=15.0, a_y_max=5.0, delta_rate_max=0.8, accel_max=4.0, decel_max=6.0)
VARIANTS = {
    "tracking": {},
    "time_optimal": {"mode": "time_optimal", "Q": (0.05, 1.0, 0.0), "time_weight": 20.0},
    "tracking_linearize_reference": {"linearization": "reference"},
    "tracking_rk4": {"discretization": "rk4"},
    "tracking_warm_shift": {"warm_start": "shift"},
    "tracking_cold_start": {"warm_start": "none"},
}


def run(path_name: str, N: int, ds: float, name: str, extra: dict) -> dict:
    """One lap of ``path_name`` with the kinematic bicycle and the MPC settings ``BASE`` + ``extra``."""
    path = mt.load_path(path_name, ds=ds)
    veh = mt.VehicleParams()
    st = mt.MPCSettings(horizon=N, ds=ds, **{**BASE, **extra})
    mpc = mt.SpatialMPC(path, veh, st)
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})
    res = mt.simulate(path, mpc, plant, laps=1, e_y0=0.5)
    m = res.metrics
    return {
        "variant": name,
        "reason": res.reason,
        "lap_time_s": m["lap_time"],
        "rms_e_y_m": m["rms_e_y"],
        "max_abs_e_y_m": m["max_abs_e_y"],
        "corridor_violation_steps": m["corridor_violation_steps"],
        "infeasible_steps": m["infeasible_steps"],
        "osqp_iterations_median": float(np.median(res.iterations)),
        "solve_time_median_ms": 1e3 * m["solve_time_median"],
        "step_time_median_ms": 1e3 * m["step_time_median"],
        "step_time_p95_ms": 1e3 * m["step_time_p95"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default="oval")
    ap.add_argument("--horizon", type=int, default=30)
    ap.add_argument("--ds", type=float, default=1.0)
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/mpc_modes.json")
    ap.add_argument("--out", type=Path, help="write the JSON to this file instead")
    args = ap.parse_args()
    prov = provenance()
    rows = [run(args.path, args.horizon, args.ds, k, v) for k, v in VARIANTS.items()]
    base = rows[0]
    for r in rows:
        r["lap_time_vs_tracking"] = r["lap_time_s"] / base["lap_time_s"]
        r["step_time_vs_tracking"] = r["step_time_median_ms"] / base["step_time_median_ms"]
    out = {"provenance": finish(prov), "benchmark": "mpc_modes", "path": args.path, "horizon": args.horizon,
           "ds": args.ds, "limits": BASE, "results": rows}
    print(dumps(out))
    if args.save or args.out:
        save_json(args.out or RESULTS / "mpc_modes.json", out)


if __name__ == "__main__":
    main()
