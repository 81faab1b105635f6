"""OSQP settings replayed on the QPs of one closed loop: equilibration per update vs once, termination-check interval.

The kinematic scenario of ``bench_closed_loop.py`` (bundled circuit, N = ``--horizon``, 50 ms) runs for ``--t-max``
simulated seconds while every step's QP is recorded in the QP's own variables (``QPData``: ``q, l, u`` and the matrix
data, before the back end touches them). The sequence is then solved again, warm-started from solve to solve as in the
loop, by fresh OSQP solvers:

* ``osqp_scaling``: OSQP equilibrating itself on every update (``SCALING_PASSES`` passes, the back end before
  issue 23's SPEED-K2),
* ``fixed``: equilibrated once at set-up on the first QP (``mpc.backends.equilibration.ruiz``, the same passes, as
  the back end does), OSQP's own scaling off, each step's numbers scaled with the fixed factors,

each with termination checks every ``c`` iterations for ``c`` in ``--intervals`` (1 gives the true iteration
counts). Per variant: OSQP's update and solve times (medians, us), iterations (mean, median, p90, p99), and the
distance of the first input (speed [m/s], steering [rad]) and of the plan's e_y [m] from a tight solve of the same QP
(eps 1e-10, OSQP's 10 passes, polished): 99th percentile and max. Prints JSON with a ``provenance`` block; ``--out``
saves it.

    python benchmarks/study_osqp_replay.py [--horizon 30] [--t-max 120] [--intervals 1 5 10] [--out FILE]

``--models`` compares the two prediction models instead (issue 23: is the dynamic model's QP as well conditioned as
the kinematic one's?): the closed loops of ``bench_closed_loop.py`` (the kinematic plant with the kinematic model, the
sedan with the dynamic model) at each ``--horizons`` N record every QP as the back end hands it to OSQP (after its
own equilibration and the model's scaling, ``OSQPBackend.equilibrated``), and a fresh OSQP with the back end's own
settings replays them checking termination every iteration (the true iteration counts) and at the back end's interval
(what the loop pays): iterations (mean, median, p90), solve time per QP and per iteration, the QP's size.

    python benchmarks/study_osqp_replay.py --models [--horizons 10 30 50] [--t-max 60] [--out FILE]
"""
from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import osqp
from _provenance import dumps, finish, provenance, save_json
from bench_closed_loop import scenario
from scipy import sparse

import mpc_tracking as mt
from mpc_tracking.mpc.backends import equilibration
from mpc_tracking.mpc.backends.osqp import SCALING_PASSES
from mpc_tracking.mpc.qp import INF
from mpc_tracking.scenario.build import build


def record(horizon: int, t_max: float) -> tuple[Any, list[dict[str, np.ndarray]]]:
    """The controller and every step's QP numbers in its own variables."""
    path, mpc, plant, actuator, kw = build(scenario("kinematic", t_max).with_overrides({"controller.horizon": horizon}))
    recs: list[dict[str, np.ndarray]] = []
    inner = mpc.backend.solve

    def recording(data: Any, A: Any, B: Any, **kwargs: Any) -> Any:
        recs.append({"q": data.q.copy(), "l": data.l.copy(), "u": data.u.copy(), "Ax": data.A_data.copy()})
        return inner(data, A, B, **kwargs)

    mpc.backend.solve = recording  # type: ignore[method-assign]
    mt.simulate(path, mpc, plant, actuator, **kw)
    return mpc, recs


def replay(mpc: Any, recs: list[dict[str, np.ndarray]], fixed: bool, interval: int,
           **extra: Any) -> dict[str, np.ndarray]:
    """Solve the recorded sequence with one OSQP set-up; iterations, times and solutions (QP variables)."""
    lay, st = mpc.layout, mpc.settings
    n, m = lay.n, lay.m
    P, A0 = mpc.P, lay.A_matrix(recs[0]["Ax"])
    if fixed:
        eq = equilibration.ruiz(P, A0, recs[0]["q"], SCALING_PASSES)
        passes = 0
    else:
        eq, passes = equilibration.Equilibration(np.ones(n), np.ones(m), 1.0), SCALING_PASSES
    cD, E, fA = eq.c * eq.D, eq.E, eq.entry_factors(lay.A_indptr, lay.A_indices)
    Dm = sparse.diags(eq.D)
    kw = dict(verbose=False, eps_abs=st.eps_abs, eps_rel=st.eps_rel, max_iter=st.max_iter, polishing=False,
              warm_starting=True, check_termination=interval, scaling=passes, check_dualgap=True)
    kw.update(extra)
    bufs = (np.empty(n), np.empty(m), np.empty(m), np.empty(A0.nnz))
    equilibration.apply(recs[0]["q"], recs[0]["l"], recs[0]["u"], recs[0]["Ax"], cD, E, fA, INF, bufs)
    solver = osqp.OSQP()
    solver.setup(sparse.triu(eq.c * (Dm @ P @ Dm), format="csc"), bufs[0].copy(), lay.A_matrix(bufs[3].copy()),
                 bufs[1].copy(), bufs[2].copy(), **kw)
    ext = solver._solver
    its, t_upd, t_sol, X = [], [], [], []
    for r in recs:
        t0 = time.perf_counter()
        equilibration.apply(r["q"], r["l"], r["u"], r["Ax"], cD, E, fA, INF, bufs)
        ext.update_data_vec(bufs[0], bufs[1], bufs[2])
        ext.update_data_mat(None, None, bufs[3], None)
        t1 = time.perf_counter()
        ext.solve()
        t2 = time.perf_counter()
        its.append(ext.info.iter)
        t_upd.append(t1 - t0)
        t_sol.append(t2 - t1)
        X.append(eq.D * ext.solution.x)
    return {"iterations": np.array(its), "update": np.array(t_upd), "solve": np.array(t_sol), "x": np.array(X)}


def record_backend(plant: str, horizon: int, t_max: float) -> tuple[Any, list[tuple[np.ndarray, ...]]]:
    """The controller of ``bench_closed_loop``'s ``plant`` scenario and every step's QP as its OSQP back end hands it to
    OSQP (``q, l, u`` and the matrix data after the back end's equilibration)."""
    path, mpc, plant_model, actuator, kw = build(
        scenario(plant, t_max).with_overrides({"controller.horizon": horizon}))
    backend, recs = mpc.backend, []
    inner = backend.equilibrated

    def recording(data: Any) -> Any:
        out = inner(data)
        recs.append(tuple(a.copy() for a in out))
        return out

    backend.equilibrated = recording
    mt.simulate(path, mpc, plant_model, actuator, **kw)
    return mpc, recs


def replay_backend(mpc: Any, recs: list[tuple[np.ndarray, ...]], **extra: Any) -> dict[str, np.ndarray]:
    """Solve the recorded sequence with one OSQP set up as the back end's (``extra`` overriding its settings),
    warm-started from solve to solve: iterations and solve times."""
    backend, lay = mpc.backend, mpc.layout
    settings = {**backend.osqp_settings, **extra}
    solver = osqp.OSQP()
    q0, lo0, hi0, A0 = recs[0]
    solver.setup(backend.P, q0, lay.A_matrix(A0), lo0, hi0, **settings)
    ext = solver._solver
    its, t_sol = [], []
    for q, lo, hi, Ax in recs:
        ext.update_data_vec(q, lo, hi)
        ext.update_data_mat(None, None, Ax, None)
        t0 = time.perf_counter()
        ext.solve()
        t_sol.append(time.perf_counter() - t0)
        its.append(ext.info.iter)
    return {"iterations": np.array(its), "solve": np.array(t_sol)}


def compare_models(horizons: list[int], t_max: float) -> dict[str, Any]:
    """Per N and model: the QP's size, true iterations (checked every iteration) and the loop's (the back end's
    interval), solve time per QP and per iteration (medians of 3 replays), and the ratios dynamic / kinematic."""
    out: dict[str, Any] = {}
    for N in horizons:
        row: dict[str, Any] = {}
        for plant in ("kinematic", "sedan"):
            mpc, recs = record_backend(plant, N, t_max)
            lay, backend = mpc.layout, mpc.backend
            entry: dict[str, Any] = {"model": type(mpc.model).__name__, "qps": len(recs), "n": lay.n, "m": lay.m,
                                     "nnz_A": len(lay.A_indices), "nnz_P": int(backend.P.nnz),
                                     "check_termination": backend.osqp_settings["check_termination"]}
            for name, extra in (("true", {"check_termination": 1}), ("loop", {})):
                runs = [replay_backend(mpc, recs, **extra) for _ in range(3)]
                it = runs[0]["iterations"]
                solve_us = float(np.median([1e6 * r["solve"].mean() for r in runs]))
                entry[name] = {"iterations": {"mean": float(it.mean()), "median": float(np.median(it)),
                                              "p90": float(np.percentile(it, 90))},
                               "solve_us_mean": solve_us, "us_per_iteration": solve_us / float(it.mean())}
            row[plant] = entry
        k, d = row["kinematic"], row["sedan"]
        row["dynamic_over_kinematic"] = {
            "true_iterations_mean": d["true"]["iterations"]["mean"] / k["true"]["iterations"]["mean"],
            "loop_iterations_mean": d["loop"]["iterations"]["mean"] / k["loop"]["iterations"]["mean"],
            "us_per_iteration": d["true"]["us_per_iteration"] / k["true"]["us_per_iteration"],
            "loop_solve": d["loop"]["solve_us_mean"] / k["loop"]["solve_us_mean"],
            "nnz_A": d["nnz_A"] / k["nnz_A"]}
        out[str(N)] = row
    return out


def summary(mpc: Any, r: dict[str, np.ndarray], tight: np.ndarray) -> dict[str, Any]:
    lay, nx = mpc.layout, mpc.nx
    u0 = slice(lay.nX, lay.nX + 2)
    du = np.abs(r["x"][:, u0] - tight[:, u0])
    dey = np.abs(r["x"][:, 0:lay.nX:nx] - tight[:, 0:lay.nX:nx]).max(axis=1)
    it = r["iterations"]
    return {"update_us_median": 1e6 * float(np.median(r["update"])),
            "solve_us_median": 1e6 * float(np.median(r["solve"])),
            "iterations": {"mean": float(it.mean()), "median": float(np.median(it)),
                           "p90": float(np.percentile(it, 90)), "p99": float(np.percentile(it, 99))},
            "first_input_vs_tight": {"speed_p99": float(np.percentile(du[:, 0], 99)),
                                     "speed_max": float(du[:, 0].max()),
                                     "steering_p99": float(np.percentile(du[:, 1], 99)),
                                     "steering_max": float(du[:, 1].max())},
            "e_y_vs_tight": {"p99": float(np.percentile(dey, 99)), "max": float(dey.max())}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--horizon", type=int, default=30)
    ap.add_argument("--t-max", type=float, default=120.0)
    ap.add_argument("--intervals", type=int, nargs="+", default=[1, 5, 10])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--models", action="store_true",
                    help="the kinematic and the dynamic model's QPs as their back ends solve them (see the doc)")
    ap.add_argument("--horizons", type=int, nargs="+", default=[10, 30, 50], help="with --models")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    prov = provenance()
    if args.models:
        report = {"benchmark": "osqp_replay_models", "t_max_s": args.t_max,
                  "horizons": compare_models(args.horizons, args.t_max), "provenance": finish(prov)}
        print(dumps(report))
        if args.out:
            save_json(args.out, report)
        return
    mpc, recs = record(args.horizon, args.t_max)
    tight = replay(mpc, recs, False, 1, eps_abs=1e-10, eps_rel=1e-10, max_iter=200000, scaling=10,
                   polishing=True)["x"]
    rows, hist = {}, {}
    for interval in args.intervals:
        for fixed in (False, True):
            name = f"{'fixed' if fixed else 'osqp_scaling'}_check{interval}"
            r = replay(mpc, recs, fixed, interval)
            rows[name] = summary(mpc, r, tight)
            if interval == 1:
                u, c = np.unique(r["iterations"], return_counts=True)
                hist[name] = {int(a): int(b) for a, b in zip(u, c, strict=True)}
    report = {"benchmark": "osqp_replay", "horizon": args.horizon, "t_max_s": args.t_max, "qps": len(recs),
              "scaling_passes": SCALING_PASSES, "variants": rows, "true_iteration_histograms": hist,
              "provenance": finish(prov)}
    print(dumps(report))
    if args.out:
        save_json(args.out, report)


if __name__ == "__main__":
    main()
