"""MPC step time vs the bare OSQP floor of the very same QPs.

For each horizon N, a closed loop on the bundled default path times every ``SpatialMPC.solve()``
call (our step); the same deterministic run is repeated recording every step's QP (q, l, u,
A data), and that sequence is replayed on a fresh OSQP solver with identical settings, timing
only ``update(q, l, u, Ax)`` + ``solve()`` (the floor). Prints JSON; ``--out`` also saves it.

    python benchmarks/bench_mpc_step.py [--horizons 10 30 50 100 200] [--out benchmarks/results/mpc_step.json]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import osqp

import mpc_tracking as mt


def _stats(a) -> dict:
    a = np.asarray(a) * 1e3
    return {"median_ms": float(np.median(a)), "p95_ms": float(np.percentile(a, 95)), "p99_ms": float(np.percentile(a, 99))}


def run(N: int, warm_start: str = "solver", laps: int = 1) -> dict:
    path = mt.load_path("oval", ds=0.5)
    vehicle = mt.VehicleParams()
    settings = mt.MPCSettings(horizon=N, v_max=12.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0, warm_start=warm_start)
    # 1) timing run: the controller exactly as users run it
    mpc = mt.SpatialMPC(path, vehicle, settings)
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
    t0 = time.perf_counter()
    res = mt.simulate(path, mpc, plant, laps=laps, e_y0=1.0)
    wall = time.perf_counter() - t0
    steps = np.asarray(res.step_time)
    # 2) the same (deterministic) run again, recording every step's QP data
    mpc = mt.SpatialMPC(path, vehicle, settings)
    recorded = []
    orig = mpc.solver.update

    def recording_update(**kw):
        recorded.append({k: np.array(v, copy=True) for k, v in kw.items()})
        return orig(**kw)

    mpc.solver.update = recording_update
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
    mt.simulate(path, mpc, plant, laps=laps, e_y0=1.0)
    # replay on a fresh solver: the floor
    floor = osqp.OSQP()
    lay = mpc.layout
    floor.setup(mpc.P, recorded[0]["q"], lay.A_matrix(recorded[0]["Ax"]), recorded[0]["l"], recorded[0]["u"],
                verbose=False, eps_abs=settings.eps_abs, eps_rel=settings.eps_rel, max_iter=settings.max_iter,
                polishing=False, warm_starting=warm_start != "none", check_termination=10)
    bare = []
    for rec in recorded:
        t = time.perf_counter()
        floor.update(q=rec["q"], l=rec["l"], u=rec["u"], Ax=rec["Ax"])
        floor.solve(raise_error=False)
        bare.append(time.perf_counter() - t)
    ours = _stats(steps)
    fl = _stats(bare)
    return {
        "N": N,
        "steps": int(steps.size),
        "our_step": ours,
        "bare_osqp_update_solve": fl,
        "ratio_median": ours["median_ms"] / fl["median_ms"],
        "closed_loop_per_step_ms": 1e3 * wall / max(1, steps.size),
        "rms_e_y_m": res.metrics["rms_e_y"],
        "lap_completed": res.success,
        "infeasible_steps": res.metrics["infeasible_steps"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizons", type=int, nargs="+", default=[10, 30, 50, 100, 200])
    ap.add_argument("--warm-start", default="solver", choices=["solver", "shift", "none"])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    rows = [run(N, args.warm_start) for N in args.horizons]
    out = {"benchmark": "mpc_step", "path": "oval", "warm_start": args.warm_start, "results": rows}
    text = json.dumps(out, indent=2)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
