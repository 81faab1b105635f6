"""Closed-loop quality of the kinematic set-up on generated circuits: one lap each, outcome, lap time, e_y, iterations.

The default scenario (``mt.default_scenario()``, kinematic bicycle plant, N = 30, 50 ms, as
``bench_closed_loop.py`` runs it) driven for one lap on each of ``--n`` circuits from ``circuits.py`` (``--seed``,
0.5 m path step). Per circuit: outcome, lap time [s], RMS and max |e_y| [m] (the run starts 1 m off the line),
mean OSQP iterations, steps and wall time per step. Run it on two versions of the package (``PYTHONPATH``) to check
that a speed change leaves the closed loop as it was. Prints JSON with a ``provenance`` block; ``--out FILE`` saves it.

    python benchmarks/bench_kinematic_laps.py [--n 5] [--seed 21] [--out FILE]
"""
from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
from _provenance import dumps, finish, provenance, save_json
from bench_closed_loop import scenario
from circuits import generate_circuits

import mpc_tracking as mt
from mpc_tracking.scenario.build import build


def lap(path: mt.ReferencePath) -> dict[str, Any]:
    """One lap of ``path`` with the kinematic scenario's controller settings, plant and actuator."""
    _, ref, plant, actuator, kw = build(scenario("kinematic", 1e5))
    mpc = mt.SpatialMPC(path, ref.vehicle, ref.settings)
    t0 = time.perf_counter()
    res = mt.simulate(path, mpc, plant, actuator, **kw)
    wall = time.perf_counter() - t0
    it = np.asarray(res.series["iterations"])
    return {"length_m": round(path.length, 1), "outcome": str(res.reason),
            "lap_time_s": res.lap_times[0] if res.lap_times else None,
            "rms_e_y_m": float(res.metrics["rms_e_y"]), "max_abs_e_y_m": float(np.abs(res.series["e_y"]).max()),
            "iterations_mean": float(it.mean()), "steps": int(it.size), "wall_per_step_ms": 1e3 * wall / it.size}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5, help="generated circuits")
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--out", type=Path, help="write the JSON to this file")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    prov = provenance()
    rows = [{"circuit": f"gen{args.seed}_{i}", **lap(p)}
            for i, p in enumerate(generate_circuits(args.n, seed=args.seed, ds=0.5))]
    report = {"benchmark": "kinematic_laps", "seed": args.seed, "rows": rows, "provenance": finish(prov)}
    print(dumps(report))
    if args.out:
        save_json(args.out, report)


if __name__ == "__main__":
    main()
