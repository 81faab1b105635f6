"""OSQP tolerance study: how accurate is the applied first input at eps 1e-3 / 1e-4 / 1e-5, what do
the closed-loop metrics do, and what does each cost?

For each horizon N and tolerance eps (``eps_abs = eps_rel``), a closed loop on the bundled oval
(kinematic bicycle, rate and acceleration limits active) records every step's QP. Each QP is then
solved again at eps 1e-8 (cold, polished: the reference) and the controller's own first input
(replayed with its warm starts, so identical to what it applied) is compared with the reference's:
``|dv| / (v_max - v_min)`` and ``|d delta| / (2 delta_max)``, max and p99 over the run. The
closed-loop RMS/max e_y, lap time, OSQP iterations and solve time come from the same runs.
A second path (the bundled circuit at 20 m/s) checks a harder, faster case.

    python benchmarks/study_tolerance.py [--horizons 10 30 50] [--eps 1e-3 1e-4 1e-5] [--save]

Prints JSON with a ``provenance`` block; ``--save`` writes benchmarks/results/tolerance_study.json.
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import osqp
from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt

CASES = {
    "oval": dict(path="oval", ds=0.5, v_max=12.0, a_y_max=4.0),
    "circuit": dict(path="circuit", ds=1.0, v_max=20.0, a_y_max=6.0),
}


def _settings(case: dict, N: int, eps: float) -> mt.MPCSettings:
    return mt.MPCSettings(horizon=N, v_max=case["v_max"], a_y_max=case["a_y_max"], delta_rate_max=0.6,
                          accel_max=3.0, decel_max=5.0, eps_abs=eps, eps_rel=eps)


def run(name: str, N: int, eps: float) -> dict:
    case = CASES[name]
    path = mt.load_path(case["path"], ds=case["ds"])
    vehicle = mt.VehicleParams()
    st = _settings(case, N, eps)
    mpc = mt.SpatialMPC(path, vehicle, st)
    recorded, iters = [], []
    orig_update, orig_solve = mpc.solver.update, mpc.solver.solve

    def recording_update(**kw):
        recorded.append({k: np.array(v, copy=True) for k, v in kw.items()})
        return orig_update(**kw)

    def recording_solve(**kw):
        res = orig_solve(**kw)
        recorded[-1]["z"] = None if res.x is None else np.array(res.x, copy=True)
        iters.append(int(res.info.iter))
        return res

    mpc.solver.update, mpc.solver.solve = recording_update, recording_solve
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
    t0 = time.perf_counter()
    res = mt.simulate(path, mpc, plant, laps=1, e_y0=1.0)
    wall = time.perf_counter() - t0
    lay = mpc.layout
    ref = osqp.OSQP()
    ref.setup(mpc.P, recorded[0]["q"], lay.A_matrix(recorded[0]["Ax"]), recorded[0]["l"], recorded[0]["u"],
              verbose=False, eps_abs=1e-8, eps_rel=1e-8, max_iter=200000, polishing=True, warm_starting=False)
    dv, dd = [], []
    span_v, span_d = st.v_max - st.v_min, 2.0 * st.delta_max
    for rec in recorded:
        if rec.get("z") is None:
            continue
        ref.update(q=rec["q"], l=rec["l"], u=rec["u"], Ax=rec["Ax"])
        r = ref.solve(raise_error=False)
        if r.x is None or not np.all(np.isfinite(r.x)):
            continue
        u_ours, u_ref = rec["z"][lay.iu0: lay.iu0 + 2], r.x[lay.iu0: lay.iu0 + 2]
        dv.append(abs(u_ours[0] - u_ref[0]) / span_v)
        dd.append(abs(u_ours[1] - u_ref[1]) / span_d)
    m = res.metrics
    return {
        "path": name, "N": N, "eps": eps, "steps": len(res), "completed": res.success,
        "rms_e_y_m": m["rms_e_y"], "max_e_y_m": m["max_abs_e_y"],
        "lap_time_s": res.lap_times[0] if res.lap_times else None,
        "iterations_median": float(np.median(iters)), "iterations_p95": float(np.percentile(iters, 95)),
        "solve_median_ms": 1e3 * m["solve_time_median"], "step_median_ms": 1e3 * m["step_time_median"],
        "closed_loop_ms_per_step": 1e3 * wall / max(1, len(res)),
        "first_input_rel_err": {"v_max": float(np.max(dv)), "v_p99": float(np.percentile(dv, 99)),
                                "delta_max": float(np.max(dd)), "delta_p99": float(np.percentile(dd, 99))},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizons", type=int, nargs="+", default=[10, 30, 50])
    ap.add_argument("--eps", type=float, nargs="+", default=[1e-3, 1e-4, 1e-5])
    ap.add_argument("--paths", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/tolerance_study.json")
    args = ap.parse_args()
    prov = provenance()
    rows = [run(p, N, eps) for p in args.paths for N in args.horizons for eps in args.eps]
    # ratios within the run: each eps against the tightest one of the same path and N
    for r in rows:
        base = next(b for b in rows if b["path"] == r["path"] and b["N"] == r["N"] and b["eps"] == min(args.eps))
        r["solve_vs_tightest"] = r["solve_median_ms"] / base["solve_median_ms"]
        r["rms_e_y_vs_tightest"] = r["rms_e_y_m"] / base["rms_e_y_m"]
    report = {"rows": rows, "provenance": finish(prov)}
    print(dumps(report))
    if args.save:
        save_json(RESULTS / "tolerance_study.json", report)


if __name__ == "__main__":
    main()
