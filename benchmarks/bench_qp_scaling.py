"""OSQP iterations of the dynamic model's QP with and without its variable scaling, on generated circuits.

The sedan of ``bench_closed_loop.py`` (``ackermann3d`` plant, dynamic prediction model, N = 30, 50 ms) drives
``--n`` generated circuits (``circuits.py``, seed ``--seed``) for ``--t-max`` simulated seconds, once per variant:
``scaled`` (the default: OSQP solves in the variables ``z / scale``, ``PredictionModel.variable_scale``, with the
rows equilibrated once, ``PredictionModel.EQUILIBRATE_ONCE``), ``each`` (the same variables, OSQP's own
``SCALING_PASSES`` Ruiz passes at every matrix update instead of the once-computed rows: the default before
SPEED-D2), ``unscaled`` (the model's scale replaced by ones on the instance and OSQP's passes: the QP as before
issue 23's scaling) and ``kinematic`` (the kinematic prediction model in the same loop: the iterations to compare
with); ``--passes`` adds ``passes10``: OSQP's own 10 passes at every update (each pass is paid on every matrix
update); ``--variants`` picks some. Per run: the median, mean and 90th percentile of OSQP's iterations, the median
solve and step times, the mean step time, RMS e_y and the outcome; then the distribution over circuits (median and
worst of each figure). Prints JSON with a ``provenance`` block; ``--out FILE`` writes it.

    python benchmarks/bench_qp_scaling.py [--n 6] [--seed 1] [--t-max 60] [--passes] [--variants ...] [--out FILE]
"""
from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import numpy as np
from _provenance import dumps, finish, provenance, save_json
from bench_closed_loop import scenario
from circuits import generate_circuits

import mpc_tracking as mt
from mpc_tracking.mpc.backends import osqp as osqp_backend
from mpc_tracking.scenario.build import build

VARIANTS = ("scaled", "each", "unscaled", "kinematic")


def run(path: mt.ReferencePath, variant: str, t_max: float) -> dict[str, Any]:
    """One closed loop of the sedan on ``path`` with the QP ``variant``."""
    _p, mpc0, plant, actuator, kw = build(scenario("sedan", t_max))
    settings, model = mpc0.settings, mpc0.model
    if variant == "kinematic":
        settings, model = settings.replace(prediction_model="kinematic"), None
    elif variant == "unscaled":
        model.variable_scale = lambda st, ds: (np.ones(model.nx), np.ones(model.nu))  # type: ignore[method-assign]
        model.EQUILIBRATE_ONCE = False  # type: ignore[misc]
    elif variant in ("each", "passes10"):  # OSQP's own equilibration at every update (not the rows' once-computed)
        model.EQUILIBRATE_ONCE = False  # type: ignore[misc]
    passes = osqp_backend.SCALING_PASSES
    if variant == "passes10":  # OSQP's default equilibration, set up with the controller's back end
        osqp_backend.SCALING_PASSES = 10
    try:
        mpc = mt.SpatialMPC(path, mpc0.vehicle, settings, prediction=model)
    finally:
        osqp_backend.SCALING_PASSES = passes
    res = mt.simulate(path, mpc, plant, actuator, **kw)
    it = np.asarray(res.series["iterations"], dtype=float)
    return {"iterations": {"median": float(np.median(it)), "mean": float(it.mean()),
                           "p90": float(np.percentile(it, 90))},
            "solve_ms_median": 1e3 * float(np.median(res.series["solve_time"])),
            "step_ms_median": 1e3 * float(np.median(res.series["step_time"])),
            "step_ms_mean": 1e3 * float(np.mean(res.series["step_time"])),
            "rms_e_y_m": float(res.metrics["rms_e_y"]), "infeasible_steps": int(res.metrics["infeasible_steps"]),
            "outcome": str(res.reason), "steps": len(it)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=6, help="generated circuits")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--t-max", type=float, default=60.0, help="simulated seconds per run")
    ap.add_argument("--passes", action="store_true", help="add OSQP's default 10 equilibration passes (passes10)")
    ap.add_argument("--variants", nargs="+", choices=(*VARIANTS, "passes10"), help="run only these")
    ap.add_argument("--out", type=Path, help="write the JSON to this file")
    args = ap.parse_args()
    variants = tuple(args.variants or ((*VARIANTS, "passes10") if args.passes else VARIANTS))
    logging.basicConfig(level=logging.ERROR)
    prov = provenance()
    rows = []
    for i, path in enumerate(generate_circuits(args.n, seed=args.seed)):
        rows.append({"circuit": i, "length_m": float(path.length),
                     **{v: run(path, v, args.t_max) for v in variants}})
    summary: dict[str, Any] = {}
    for v in variants:
        per = {"iterations_median": [r[v]["iterations"]["median"] for r in rows],
               "iterations_mean": [r[v]["iterations"]["mean"] for r in rows],
               "iterations_p90": [r[v]["iterations"]["p90"] for r in rows],
               "solve_ms_median": [r[v]["solve_ms_median"] for r in rows],
               "step_ms_median": [r[v]["step_ms_median"] for r in rows],
               "step_ms_mean": [r[v]["step_ms_mean"] for r in rows],
               "rms_e_y_m": [r[v]["rms_e_y_m"] for r in rows]}
        summary[v] = {k: {"median": float(np.median(a)), "worst": float(np.max(a))} for k, a in per.items()}
    out = {"provenance": finish(prov), "benchmark": "qp_scaling", "n": args.n, "seed": args.seed,
           "t_max_s": args.t_max, "scaling_passes": osqp_backend.SCALING_PASSES, "rows": rows, "summary": summary}
    print(dumps(out))
    if args.out:
        save_json(args.out, out)


if __name__ == "__main__":
    main()
