"""Run one benchmark on two source trees, alternating, and keep both JSON outputs in one file.

A 2-core machine shared with others changes speed by tens of percent between runs, so a before/after comparison
is only fair inside one session, interleaved: round r runs the benchmark on ``--before`` then on ``--after``
(``PYTHONPATH`` set to each tree, working directory the tree), ``--rounds`` times. The output holds every run's
JSON (its ``provenance`` block trimmed to the command and date) and, for the two benchmarks it knows, the figures
per round, their after/before ratios and the medians over the rounds:

``bench_mpc_step.py``
    per horizon N: ``our_step`` median, the bare OSQP floor, their ratio (``rounds_summary[N]``), the time around
    OSQP's own solve; ``step_parts_us`` (per N) of each run;
``bench_closed_loop.py``
    per plant: total, mpc and outside medians per step [ms] and the real-time factor (from the medians and the
    means).

    python benchmarks/compare_trees.py --before /tmp/before --after . --rounds 3 --out FILE -- \
        benchmarks/bench_mpc_step.py --horizons 10 30 50 --rounds 3 --no-variants
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _provenance import dumps, finish, provenance, save_json


def _run(tree: Path, argv: list[str]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    proc = subprocess.run([sys.executable, *argv], cwd=tree, env=env, capture_output=True, text=True, check=True)
    data, _end = json.JSONDecoder().raw_decode(proc.stdout)  # (a cProfile listing may follow the JSON)
    prov = data.pop("provenance", {})
    data["provenance"] = {k: prov.get(k) for k in ("command", "date_utc", "elapsed_s")}
    return data


def _figures(data: dict[str, Any]) -> dict[str, Any]:
    """The headline figures of one run (see the module docstring)."""
    if data.get("benchmark") == "mpc_step":
        out: dict[str, Any] = {}
        for N, s in data["rounds_summary"].items():
            out[N] = {"our_step_ms": s["our_step_median_ms"], "bare_osqp_ms": s["bare_osqp_median_ms"],
                      "ratio": s["ratio_median_of_rounds"], "around_solve_ms": s["around_solve_median_ms"]}
        return out
    if data.get("benchmark") == "closed_loop":
        return {r["plant"]: {"total_ms": r["total_ms"]["median"], "mpc_ms": r["mpc_ms"]["median"],
                             "outside_ms": r["outside_ms"]["median"],
                             "real_time_factor_median": r["real_time_factor"]["median"],
                             "real_time_factor_mean": r["real_time_factor"]["mean"]} for r in data["rows"]}
    return {}


def _ratios(before: Any, after: Any) -> Any:
    """after / before of every number in two figure trees of the same shape."""
    if isinstance(before, dict):
        return {k: _ratios(before[k], after[k]) for k in before if k in after}
    return float(after) / float(before) if before else None


def _median(trees: list[Any]) -> Any:
    if isinstance(trees[0], dict):
        return {k: _median([t[k] for t in trees]) for k in trees[0]}
    values = [t for t in trees if t is not None]
    return float(np.median(values)) if values else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="the tree before (e.g. git archive of the base)")
    ap.add_argument("--after", type=Path, required=True, help="the tree after")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--note", default="", help="kept in the output (what runs, the machine's state)")
    ap.add_argument("--out", type=Path, help="write the JSON here")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then the benchmark script and its options")
    args = ap.parse_args()
    argv = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not argv:
        ap.error("command: expected -- then the benchmark script and its options")
    if args.rounds < 1:
        ap.error(f"--rounds: expected an int >= 1, got {args.rounds}")
    prov = provenance()
    before_tree, after_tree = args.before.resolve(), args.after.resolve()
    rounds = []
    for r in range(args.rounds):
        row: dict[str, Any] = {"round": r + 1}
        for name, tree in (("before", before_tree), ("after", after_tree)):
            t0 = time.perf_counter()
            row[name] = _run(tree, argv)
            row[name + "_wall_s"] = round(time.perf_counter() - t0, 1)
        row["figures"] = {k: _figures(row[k]) for k in ("before", "after")}
        row["after_over_before"] = _ratios(row["figures"]["before"], row["figures"]["after"])
        rounds.append(row)
    out = {"provenance": finish(prov), "benchmark": "compare_trees", "command": " ".join(argv),
           "before": str(before_tree), "after": str(after_tree), "note": args.note, "rounds": rounds,
           "median_of_rounds": {k: _median([row["figures"][k] for row in rounds]) for k in ("before", "after")},
           "after_over_before_median_of_rounds": _median([row["after_over_before"] for row in rounds])}
    print(dumps({k: v for k, v in out.items() if k != "rounds"}))
    if args.out:
        save_json(args.out, out)


if __name__ == "__main__":
    main()
