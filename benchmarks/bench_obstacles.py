"""Obstacle avoidance within the control period: solve and step time percentiles on every bundled
obstacle scenario (demos/obstacles*.yaml, and the hairpin_slalom course as the obstacle demo runs it).

Each scenario runs as ``mpc-tracking run`` would (its own settings), then the MPC solve time and
the whole controller step time per control step are summarised: median, p95, p99, max [ms], and
how many steps overran the control period. Prints JSON with a ``provenance`` block; ``--save``
writes benchmarks/results/obstacles.json.

Each scenario runs once per QP solver (``controller.solver``: OSQP and the condensed DAQP back end).

    python benchmarks/bench_obstacles.py [--solvers osqp daqp] [--save]
"""
from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json

from mpc_tracking.mpc.settings import SOLVERS
from mpc_tracking.scenario.core import load_scenario, run_scenario

DEMOS = Path(__file__).resolve().parents[1] / "demos"
SCENARIOS = {
    "obstacles": (DEMOS / "obstacles.yaml", {}),
    "obstacles_moving": (DEMOS / "obstacles_moving.yaml", {}),
    # as demos/obstacle_avoidance.py drives it: the course's own cones and block
    "hairpin_slalom": (DEMOS / "obstacles.yaml", {"path.source": "hairpin_slalom", "environment.obstacles": [],
                                                   "controller.v_max": 8.0}),
}


def _ms(a: np.ndarray) -> dict:
    a = np.asarray(a) * 1e3
    return {"median": float(np.median(a)), "p95": float(np.percentile(a, 95)), "p99": float(np.percentile(a, 99)),
            "max": float(np.max(a))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/obstacles.json")
    ap.add_argument("--solvers", nargs="+", default=list(SOLVERS), choices=SOLVERS,
                    help="QP solvers to compare (controller.solver), each on every scenario")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    prov = provenance()
    rows = []
    for name, (file, overrides) in SCENARIOS.items():
        for solver in args.solvers:
            sc = load_scenario(file).with_overrides({**overrides, "controller.solver": solver})
            res = run_scenario(sc)
            m = res.metrics
            period = res.info["control_period"]
            rows.append({"scenario": name, "solver": solver, "outcome": m["reason"], "steps": m["steps"],
                         "control_period_ms": 1e3 * period,
                         "solve_ms": _ms(res.series["solve_time"]), "step_ms": _ms(res.series["step_time"]),
                         "iterations_max": int(np.max(res.series["iterations"])),
                         "overruns": int(m["realtime_overruns"]), "infeasible_steps": m["infeasible_steps"],
                         "p99_step_within_period": bool(np.percentile(res.series["step_time"], 99) <= period),
                         "rms_e_y_m": m["rms_e_y"], "max_body_overshoot_m": m.get("max_body_overshoot")})
    # same-run ratios of the p99 solve time against the first solver
    base = {r["scenario"]: r["solve_ms"]["p99"] for r in rows if r["solver"] == args.solvers[0]}
    for r in rows:
        r["solve_p99_vs_" + args.solvers[0]] = r["solve_ms"]["p99"] / base[r["scenario"]]
    report = {"rows": rows, "provenance": finish(prov)}
    print(dumps(report))
    if args.save:
        save_json(RESULTS / "obstacles.json", report)


if __name__ == "__main__":
    main()
