"""Closed-loop fuzz campaign: N seeded random feasible cases (:mod:`mpc_tracking.fuzz`), counts of
what went wrong. Not part of the test suite (``tests/test_reliability.py`` runs a seeded handful).

    python benchmarks/fuzz_closed_loop.py [--runs 1000] [--first-seed 0] [--workers 2] [--save]

Prints JSON: counts of exceptions, NaN, corridor exits (body past the corridor by > 2 % of the
car's width, or the run ended outside it) on cases with a corridor, aborted runs (error, safe
stop, non-finite state), rejoin runs, outcomes and the failing seeds (re-run one with
``mpc_tracking.fuzz.run_case(mpc_tracking.fuzz.random_case(SEED))``). ``--save`` writes
benchmarks/results/fuzz_closed_loop.json.
"""
from __future__ import annotations

import argparse
import collections
import logging
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _provenance import dumps, finish, provenance, save_json

from mpc_tracking.fuzz import random_case, run_case


def one(seed: int) -> dict:
    logging.disable(logging.WARNING)  # the campaign counts outcomes; per-step warnings are noise here
    t0 = time.perf_counter()
    record = run_case(random_case(seed))
    record["wall_time"] = time.perf_counter() - t0
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/fuzz_closed_loop.json")
    args = ap.parse_args()
    prov = provenance()
    seeds = range(args.first_seed, args.first_seed + args.runs)
    with ProcessPoolExecutor(args.workers) as pool:
        records = list(pool.map(one, seeds, chunksize=8))
    counts = collections.Counter()
    failing: dict[str, list[int]] = collections.defaultdict(list)
    outcomes = collections.Counter(r["outcome"] for r in records)
    by_plant = collections.Counter(r["case"]["plant"] for r in records)
    for r in records:
        for key in ("exception", "nan", "corridor_exit", "aborted"):
            if r[key]:
                counts[key] += 1
                failing[key].append(r["case"]["seed"])
        counts["rejoined"] += r["rejoin_steps"] > 0
    with_corridor = sum(r["case"]["half_width"] is not None for r in records)
    report = {
        "runs": len(records), "with_corridor": with_corridor, "open_field": len(records) - with_corridor,
        "exceptions": counts["exception"], "nan": counts["nan"], "corridor_exits": counts["corridor_exit"],
        "aborted": counts["aborted"], "rejoined": counts["rejoined"], "outcomes": dict(outcomes),
        "plants": dict(by_plant), "failing_seeds": dict(failing),
        "wall_time_median_s": sorted(r["wall_time"] for r in records)[len(records) // 2],
        "examples": [r for r in records if r["exception"] or r["nan"] or r["corridor_exit"] or r["aborted"]][:5],
    }
    report["provenance"] = finish(prov)
    print(dumps(report))
    if args.save:
        save_json(Path("benchmarks/results/fuzz_closed_loop.json"), report)


if __name__ == "__main__":
    main()
