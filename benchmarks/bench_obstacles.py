"""Obstacle avoidance within the control period: solve and step time percentiles on every bundled
obstacle scenario (demos/obstacles*.yaml, and the hairpin_slalom course as the obstacle demo runs it).

Each scenario runs as ``mpc-tracking run`` would (its own settings), then the MPC solve time and
the whole controller step time per control step are summarised: median, p95, p99, max [ms], and
how many steps overran the control period. Prints JSON with a ``provenance`` block; ``--save``
writes benchmarks/results/obstacles.json.

Each scenario runs once per QP solver (``controller.solver``: OSQP and the condensed DAQP back end).

``--blas`` measures instead what the BLAS thread limit (``MPCSettings.blas_threads``,
:mod:`mpc_tracking.mpc.blas`) does on a busy machine: ``--busy`` spinning processes (nice 10)
run beside it, and each scenario runs ``--repeat`` times in each of three ways, interleaved in one
process: BLAS as the environment leaves it (``blas_threads = 0``), the library's default limit
(``blas_threads = 1``), and the whole run under one BLAS thread (``threadpool_limits(1)``: the
``OPENBLAS_NUM_THREADS=1`` figure). Unset ``OPENBLAS_NUM_THREADS`` for it, or nothing differs
(the script says so). Saves ``benchmarks/results/blas_threads.json`` with ``--save``.

    python benchmarks/bench_obstacles.py [--solvers osqp daqp] [--save]
    env -u OPENBLAS_NUM_THREADS python benchmarks/bench_obstacles.py --blas [--busy 2] [--repeat 3] [--save]
"""
from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json

from mpc_tracking.mpc.backends import available as available_solvers
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


def _blas_modes(args: argparse.Namespace) -> None:
    """The BLAS thread limit on a busy machine: no limit / the default limit / one thread throughout."""
    from threadpoolctl import threadpool_info, threadpool_limits

    if os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS"):
        print("bench_obstacles --blas: OPENBLAS_NUM_THREADS / OMP_NUM_THREADS is set: BLAS has one thread "
              "either way; run it with `env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS`", file=sys.stderr)
    prov = provenance()
    spinners = [subprocess.Popen(["nice", "-n", "10", sys.executable, "-c", "while 1: pass"])
                for _ in range(args.busy)]
    modes = {"no_limit": 0, "limit_1": 1, "one_thread_throughout": None}
    rows = []
    try:
        for name in ("obstacles", "obstacles_moving"):
            file, overrides = SCENARIOS[name]
            for solver in args.solvers:
                samples: dict[str, dict[str, list[float]]] = {m: {"solve": [], "step": []} for m in modes}
                for _ in range(args.repeat):
                    for mode, threads in modes.items():
                        sc = load_scenario(file).with_overrides(
                            {**overrides, "controller.solver": solver, "controller.blas_threads": threads or 0})
                        if threads is None:
                            with threadpool_limits(1, user_api="blas"):
                                res = run_scenario(sc)
                        else:
                            res = run_scenario(sc)
                        samples[mode]["solve"].append(float(np.median(res.series["solve_time"])) * 1e3)
                        samples[mode]["step"].append(float(np.median(res.series["step_time"])) * 1e3)
                med = {m: {k: float(np.median(v)) for k, v in d.items()} for m, d in samples.items()}
                ref = med["one_thread_throughout"]
                rows.append({
                    "scenario": name, "solver": solver, "repeat": args.repeat,
                    "median_solve_ms": {m: d["solve"] for m, d in med.items()},
                    "median_step_ms": {m: d["step"] for m, d in med.items()},
                    "runs_median_solve_ms": {m: d["solve"] for m, d in samples.items()},
                    "solve_ratio_vs_one_thread": {m: d["solve"] / ref["solve"] for m, d in med.items()},
                    "step_ratio_vs_one_thread": {m: d["step"] / ref["step"] for m, d in med.items()},
                })
                print(f"{name} {solver}: median solve ms " + ", ".join(
                    f"{m} {d['solve']:.3f}" for m, d in med.items()), file=sys.stderr, flush=True)
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    report = {"rows": rows, "busy_processes": args.busy,
              "blas_libraries": [{k: i.get(k) for k in ("prefix", "num_threads", "version", "architecture")}
                                 for i in threadpool_info() if i["user_api"] == "blas"],
              "provenance": finish(prov)}
    print(dumps(report))
    if args.save:
        save_json(RESULTS / "blas_threads.json", report)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/obstacles.json")
    ap.add_argument("--solvers", nargs="+", default=list(available_solvers()), choices=available_solvers(),
                    help="QP solvers to compare (controller.solver), each on every scenario")
    ap.add_argument("--blas", action="store_true", help="compare the BLAS thread limit's modes on a busy machine")
    ap.add_argument("--busy", type=int, default=2, help="spinning background processes during --blas")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each mode per scenario (--blas)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    if args.blas:
        _blas_modes(args)
        return
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
