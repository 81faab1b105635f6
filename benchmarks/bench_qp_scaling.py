"""OSQP iterations of the dynamic model's QP with and without its variable scaling, on generated circuits.

The sedan of ``bench_closed_loop.py`` (``ackermann3d`` plant, dynamic prediction model, N = 30, 50 ms) drives
``--n`` generated circuits (``circuits.py``, seed ``--seed``) for ``--t-max`` simulated seconds, three times each:
``scaled`` (the default: OSQP solves in the variables ``z / scale``, ``PredictionModel.variable_scale``),
``unscaled`` (the model's scale replaced by ones on the instance: the QP as before issue 23's scaling) and
``kinematic`` (the kinematic prediction model in the same loop: the iterations to compare with); ``--passes``
adds ``passes10``: the back end's ``SCALING_PASSES`` set to 10 (since dynqp the dynamic QP is equilibrated once
with the model's own 10 passes, ``QP_SCALING_PASSES``, so for it this is the default); ``residuals`` (not by
default) the dynamic QP's stopping rule before dynqp (OSQP's residuals alone, OSQP equilibrating on every update,
the settings' tolerances); ``--variants`` picks some. Per run: the median, mean and 90th percentile of OSQP's
iterations, the median solve and step times, the mean step time, RMS e_y, max |e_y|, mean speed, the lap time and
the outcome; then the distribution over circuits (median and worst of each figure).

``--replay`` instead records every QP of closed loops (the oval loop of ``bench_mpc_step.py``, dynamic model at
N = 10, 30, 50, and the sedan on ``--n`` circuits, plus the bundled circuit with ``--bundled``) and replays them in
order on fresh OSQP back ends, each QP by every back end in turn: ``default`` (as the controller sets it up),
``unscaled`` (no variable scale), ``passes10``, ``passes3`` (10 or 3 Ruiz passes) and ``residuals`` (the
stopping rule before dynqp), each against a
tight solve of the same QPs (eps 1e-9): iterations, update + solve time and the first
input's distance to the tight solve; and (``without_t``) the same QPs on bare OSQP with and without the time state
``t`` (its columns and dynamics rows removed: without a cost on it the same optimum for the rest; since SPEED-D3
the controller's QP leaves t out by itself, so this part is skipped).

``--step-ab [N ...]`` times the controller's dynamic step with the QP without t (the default since SPEED-D3) and
with t (a model that keeps it), without t with the stopping rule before dynqp (``dynamic_residuals``), and the
kinematic step, call by call in turn (a busy machine moves them alike): the whole step, the QP numbers and the
back end's update + solve, and the ratios. With ``--against DIR`` (a source tree of another commit, e.g.
``git archive main | tar -x -C /tmp/before``) it runs that measurement ``--rounds`` times in fresh processes on
this checkout (``after``) and on DIR (``before``, the same benchmark code importing DIR's package), alternately
and in turn first (interleaved: a busy machine moves both alike): per tree and horizon the medians over the rounds,
and the ratios after / before. Prints JSON with a ``provenance`` block; ``--out FILE`` writes it.

    python benchmarks/bench_qp_scaling.py [--n 6] [--seed 1] [--t-max 60] [--passes] [--variants ...]
        [--replay [--bundled]] [--step-ab [N ...] [--repeats 2000] [--against DIR [--rounds 3]]] [--out FILE]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import osqp
from _provenance import dumps, finish, provenance, save_json
from bench_closed_loop import scenario
from circuits import generate_circuits
from scipy import sparse

import mpc_tracking as mt
import mpc_tracking.mpc.backends
import mpc_tracking.mpc.layout
from mpc_tracking.models.prediction import DynamicPrediction
from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams
from mpc_tracking.mpc.backends import osqp as osqp_backend
from mpc_tracking.mpc.qp import INF
from mpc_tracking.scenario.build import build

VARIANTS = ("scaled", "unscaled", "kinematic")


def run(path: mt.ReferencePath, variant: str, t_max: float) -> dict[str, Any]:
    """One closed loop of the sedan on ``path`` with the QP ``variant``."""
    _p, mpc0, plant, actuator, kw = build(scenario("sedan", t_max))
    settings, model = mpc0.settings, mpc0.model
    if variant == "kinematic":
        settings, model = settings.replace(prediction_model="kinematic"), None
    elif variant == "residuals":  # the dynamic QP's stopping rule before dynqp: residuals alone, OSQP equilibrating
        model.CHECK_DUALITY_GAP = False  # type: ignore[misc]
        model.QP_TOLERANCE_FACTOR = 1.0  # type: ignore[misc]
    elif variant == "unscaled":
        model.variable_scale = lambda st, ds: (np.ones(model.nx), np.ones(model.nu))  # type: ignore[method-assign]
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
            "rms_e_y_m": float(res.metrics["rms_e_y"]), "lap_time_s": float(res.metrics["lap_time"]),
            "max_abs_e_y_m": float(res.metrics["max_abs_e_y"]), "mean_speed_mps": float(res.metrics["mean_speed"]),
            "infeasible_steps": int(res.metrics["infeasible_steps"]),
            "outcome": str(res.reason), "steps": len(it)}


def _record(path: mt.ReferencePath, mpc: mt.SpatialMPC, plant: Any, actuator: Any, **kw: Any) -> list[tuple]:
    """Every step's QP of a closed loop: copies of (q, l, u, A data) and the dynamics (A, B) the back end got."""
    recs: list[tuple] = []
    solve = mpc.backend.solve

    def recording(data: Any, A: np.ndarray, B: np.ndarray, **kws: Any) -> Any:
        recs.append((data.q.copy(), data.l.copy(), data.u.copy(), data.A_data.copy(), A.copy(), B.copy()))
        return solve(data, A, B, **kws)

    mpc.backend.solve = recording  # type: ignore[method-assign]
    mt.simulate(path, mpc, plant, actuator, **kw)
    return recs


def replay(name: str, path: mt.ReferencePath, mpc: mt.SpatialMPC, plant: Any, actuator: Any,
           **kw: Any) -> dict[str, Any]:
    """The closed loop's QPs replayed in order on fresh OSQP back ends (``default``, ``unscaled``, ``passes10``,
    ``residuals``: the stopping rule before dynqp, OSQP's residuals alone with OSQP equilibrating on every update at
    the settings' tolerances, and a tight solve: eps 1e-9); per variant the iterations, the back end's update + solve
    time (median, mean) and the first input's distance to the tight solve (p99, worst, per input component)."""
    recs = _record(path, mpc, plant, actuator, **kw)
    lay, st, model = mpc.layout, mpc.settings, mpc.model
    var = lay.column_scale(*model.variable_scale(st, mpc.ds))
    var_or_none = None if (var == 1.0).all() else var
    struct0 = mt.mpc.backends.QPStructure(lay, mpc.P, recs[0][3], mpc.qp.slack_quad, var_or_none,
                                          model.CHECK_DUALITY_GAP, recs[0][0], model.QP_TOLERANCE_FACTOR,
                                          model.QP_SCALING_PASSES)
    data = mt.mpc.layout.QPData(lay)
    u0 = slice(lay.nX, lay.nX + lay.nu)
    out: dict[str, Any] = {"case": name, "qps": len(recs), "N": lay.N}
    tight = {"eps_abs": 1e-9, "eps_rel": 1e-9, "max_iter": 200000}
    before = {"check_duality_gap": False, "tolerance_factor": 1.0}
    bes: dict[str, Any] = {}
    for variant, scale, passes, extra, rule in (
            ("tight", var_or_none, osqp_backend.SCALING_PASSES, tight, {"tolerance_factor": 1.0}),
            ("default", var_or_none, osqp_backend.SCALING_PASSES, {}, {}),
            ("unscaled", None, osqp_backend.SCALING_PASSES, {}, {}),
            ("passes10", var_or_none, 10, {}, {"scaling_passes": 10}),
            ("passes3", var_or_none, osqp_backend.SCALING_PASSES, {}, {"scaling_passes": 3}),
            ("residuals", var_or_none, osqp_backend.SCALING_PASSES, {}, before)):
        default_passes = osqp_backend.SCALING_PASSES
        osqp_backend.SCALING_PASSES = passes
        try:
            bes[variant] = mt.mpc.backends.get("osqp")(dataclasses.replace(struct0, scale=scale, **rule),
                                                       st.replace(**extra))
        finally:
            osqp_backend.SCALING_PASSES = default_passes
    # each QP solved by every variant in turn (a busy machine slows them alike), each warm from its own last solve
    its: dict[str, list[int]] = {v: [] for v in bes}
    times: dict[str, list[float]] = {v: [] for v in bes}
    firsts: dict[str, list[np.ndarray]] = {v: [] for v in bes}
    for q, lo, hi, Ax, A, B in recs:
        data.q[:], data.l[:], data.u[:], data.A_data[:] = q, lo, hi, Ax
        for variant, be in bes.items():
            t = time.perf_counter()
            res = be.solve(data, A, B)
            times[variant].append(time.perf_counter() - t)
            its[variant].append(res.iterations)
            firsts[variant].append(np.full(lay.nu, np.nan) if res.z is None else res.z[u0].copy())
    for variant in bes:
        if variant == "tight":
            continue
        err = np.abs(np.asarray(firsts[variant]) - np.asarray(firsts["tight"]))
        it = its[variant]
        out[variant] = {"iterations": {"mean": float(np.mean(it)), "median": float(np.median(it)),
                                       "p90": float(np.percentile(it, 90)), "max": int(np.max(it))},
                        "update_solve_us": {"median": 1e6 * float(np.median(times[variant])),
                                            "mean": 1e6 * float(np.mean(times[variant]))},
                        "first_input_error_p99": [float(v) for v in np.nanpercentile(err, 99, axis=0)],
                        "first_input_error_max": [float(v) for v in np.nanmax(err, axis=0)],
                        "failed": int(np.isnan(err).any(axis=1).sum())}
    # t carries no cost (and the QP holds it: since SPEED-D3 the dynamic model's QP leaves it out by itself)
    if mpc.model.I_T in lay.states and not np.any(mpc.P.tocsc()[:, lay.x_index(np.arange(lay.N + 1),
                                                                               mpc.model.I_T)].data):
        out["without_t"] = _replay_without_t(recs, mpc, var)
    return out


def _replay_without_t(recs: list[tuple], mpc: mt.SpatialMPC, var: np.ndarray) -> dict[str, Any]:
    """The same QPs on bare OSQP (the back end's settings) with and without the time state ``t``: its columns and
    its dynamics rows removed (``t`` feeds no other state, and without a cost on it the other variables' optimum
    is the same QP's). Iterations and update + solve time of both, and the QPs' sizes."""
    lay, st = mpc.layout, mpc.settings
    n, m = lay.n, lay.m
    t_idx = lay.x_index(np.arange(lay.N + 1), mpc.model.I_T)  # a state's column and its dynamics row share an index
    ecol = np.repeat(np.arange(n), np.diff(lay.A_indptr))
    erow = np.asarray(lay.A_indices)
    out: dict[str, Any] = {}
    for name, drop in (("with_t", np.array([], dtype=int)), ("without_t", t_idx)):
        cols, rows = np.setdiff1d(np.arange(n), drop), np.setdiff1d(np.arange(m), drop)
        rmap, cmap = np.full(m, -1), np.full(n, -1)
        rmap[rows], cmap[cols] = np.arange(rows.size), np.arange(cols.size)
        keep = (rmap[erow] >= 0) & (cmap[ecol] >= 0)  # the maps are monotone: CSC order is kept
        new_col = cmap[ecol[keep]]
        indptr = np.concatenate([[0], np.cumsum(np.bincount(new_col, minlength=cols.size))])
        f = var[cols][new_col]
        data0 = recs[0][3][keep] * f
        data0[data0 == 0.0] = 1e-12  # structural zeros kept through set-up, as the back end does
        D = sparse.diags(var[cols])
        solver = osqp.OSQP()
        solver.setup(sparse.triu(D @ mpc.P.tocsc()[cols][:, cols] @ D, format="csc"), np.zeros(cols.size),
                     sparse.csc_matrix((data0, rmap[erow[keep]], indptr),
                                       shape=(rows.size, cols.size)),
                     np.full(rows.size, -INF), np.full(rows.size, INF), verbose=False, eps_abs=st.eps_abs,
                     eps_rel=st.eps_rel, max_iter=st.max_iter, polishing=False, warm_starting=True,
                     check_termination=10, scaling=osqp_backend.SCALING_PASSES,
                     check_dualgap=bool(mpc.model.CHECK_DUALITY_GAP))
        ext = solver._solver
        its, times = [], []
        for q, lo, hi, Ax, _A, _B in recs:
            qv, lv, uv, ax = q[cols] * var[cols], lo[rows], hi[rows], Ax[keep] * f
            t = time.perf_counter()
            ext.update_data_vec(qv, lv, uv)
            ext.update_data_mat(None, None, ax, None)
            ext.solve()
            times.append(time.perf_counter() - t)
            its.append(ext.info.iter)
        out[name] = {"n": int(cols.size), "m": int(rows.size), "nnz_A": int(keep.sum()),
                     "iterations_mean": float(np.mean(its)),
                     "update_solve_us": {"median": 1e6 * float(np.median(times)),
                                         "mean": 1e6 * float(np.mean(times))}}
    return out


def replays(n: int, seed: int, t_max: float, bundled: bool = False) -> list[dict[str, Any]]:
    """:func:`replay` on the loops of ``bench_mpc_step.py`` (oval, kinematic plant, the dynamic model at N = 10,
    30, 50) and of the sedan (dynamic model, N = 30) on ``n`` generated circuits (and the bundled circuit)."""
    out = []
    if bundled:
        path, mpc, plant, actuator, kw = build(scenario("sedan", t_max))
        out.append(replay("sedan bundled circuit", path, mpc, plant, actuator, **kw))
    path = mt.load_path("oval", ds=0.5)
    vehicle = mt.VehicleParams()
    for N in (10, 30, 50):
        st = mt.MPCSettings(horizon=N, v_max=12.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0,
                            prediction_model="dynamic")
        plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
        out.append(replay(f"oval N={N}", path, mt.SpatialMPC(path, vehicle, st), plant, None, laps=1, e_y0=1.0))
    for i, circ in enumerate(generate_circuits(n, seed=seed)):
        _p, mpc0, plant, actuator, kw = build(scenario("sedan", t_max))
        mpc = mt.SpatialMPC(circ, mpc0.vehicle, mpc0.settings, prediction=mpc0.model)
        out.append(replay(f"sedan circuit {i}", circ, mpc, plant, actuator, **kw))
    return out


def _with_t(model: DynamicPrediction) -> DynamicPrediction:
    """``model`` keeping the time state t in the QP (the layout before SPEED-D3; on the instance, so the controller
    still takes its compiled path, which it does for the class ``DynamicPrediction`` itself)."""
    model.qp_states = lambda settings: tuple(range(model.nx))  # type: ignore[method-assign]
    return model


def _residuals(model: DynamicPrediction) -> DynamicPrediction:
    """``model`` with the QP's stopping rule before dynqp (OSQP's residuals alone, OSQP equilibrating on every update,
    the settings' tolerances; on the instance, as :func:`_with_t`)."""
    model.CHECK_DUALITY_GAP = False  # type: ignore[misc]
    model.QP_TOLERANCE_FACTOR = 1.0  # type: ignore[misc]
    return model


def step_ab(horizons: tuple[int, ...], repeats: int) -> dict[str, Any]:
    """The dynamic model's step with and without t in the QP, with the stopping rule before dynqp
    (``dynamic_residuals``, without t), and the kinematic step, timed call by call in turn
    (the order rotated every round; one part after the other, each repeated as in ``bench_mpc_step.parts``) on one
    mid-lap state of the oval: ``bench_mpc_step.parts``' settings (the dynamic model with rk4 and the friction
    ellipse). Per horizon the medians [us] of the whole step (``solve``), the QP numbers (``build``) and
    the back end's update + solve, the ratios to the kinematic step, the QP's sizes and OSQP's iterations."""
    path = mt.load_path("oval", ds=0.5)
    meas = {"speed": 8.0, "v_x": 8.0, "v_y": 0.05, "r": 0.2}
    state = (3.6, 0.4, 0.0)
    out: dict[str, Any] = {}
    for N in horizons:
        base = mt.MPCSettings(horizon=N, v_max=12.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0)
        dyn = base.replace(prediction_model="dynamic", discretization="rk4", friction_ellipse=True)
        params = DynamicParams.bmw_320i()
        veh = mt.VehicleParams()
        mpcs = {"kinematic": mt.SpatialMPC(path, veh, base),
                "dynamic_without_t": mt.SpatialMPC(path, veh, dyn, prediction=DynamicPrediction(params)),
                "dynamic_with_t": mt.SpatialMPC(path, veh, dyn, prediction=_with_t(DynamicPrediction(params))),
                "dynamic_residuals": mt.SpatialMPC(path, veh, dyn, prediction=_residuals(DynamicPrediction(params)))}
        calls: dict[str, dict[str, Any]] = {}
        for name, mpc in mpcs.items():
            for s in (3.0, 3.3):
                mpc.solve((s, 0.5, 0.0), measured=meas)
            step = mpc._prepare(state, meas)
            calls[name] = {
                "solve": (lambda m=mpc: m.solve(state, measured=meas)),
                "build": (lambda m=mpc, st=step: m.build_qp(st)),
                "backend": (lambda m=mpc: m.backend.solve(m.data, *m.qp.dynamics[:2])),
            }
        times: dict[str, dict[str, list[float]]] = {n: {p: [] for p in ("solve", "build", "backend")} for n in mpcs}
        names = list(mpcs)
        for part in ("solve", "build", "backend"):  # (a part at a time: the back end re-solves one QP, as in parts())
            for r in range(repeats):
                order = names[r % len(names):] + names[: r % len(names)]
                for name in order:
                    fn = calls[name][part]
                    t = time.perf_counter()
                    fn()
                    times[name][part].append(time.perf_counter() - t)
        med = {n: {p: round(1e6 * float(np.median(v)), 1) for p, v in parts.items()} for n, parts in times.items()}
        row: dict[str, Any] = {"median_us": med}
        for n in ("dynamic_without_t", "dynamic_with_t", "dynamic_residuals"):
            row[f"{n}_vs_kinematic_step"] = med[n]["solve"] / med["kinematic"]["solve"]
            lay = mpcs[n].layout
            row[f"{n}_qp"] = {"n": lay.n, "m": lay.m, "nnz_A": int(lay.nnz),
                              "iterations": int(mpcs[n].solve(state, measured=meas).iterations)}
        row["without_vs_with_t"] = {p: med["dynamic_without_t"][p] / med["dynamic_with_t"][p]
                                    for p in ("solve", "build", "backend")}
        row["default_vs_residuals"] = {p: med["dynamic_without_t"][p] / med["dynamic_residuals"][p]
                                       for p in ("solve", "build", "backend")}
        out[str(N)] = row
    return out


def step_ab_against(horizons: tuple[int, ...], repeats: int, against: Path, rounds: int) -> dict[str, Any]:
    """:func:`step_ab` ``rounds`` times on this checkout (``after``) and on the source tree ``against``
    (``before``), each run a fresh process of this script with ``PYTHONPATH`` on its tree, the two alternating and
    taking turns to go first. Per tree and horizon: every round's medians [us] and dynamic / kinematic step
    ratio, their medians over the rounds; and the ratios after / before of those medians."""
    trees = {"after": Path(__file__).resolve().parents[1], "before": against.resolve()}
    if not (trees["before"] / "mpc_tracking" / "__init__.py").is_file():
        raise SystemExit(f"--against: no mpc_tracking package in {against}")
    runs: dict[str, list[dict[str, Any]]] = {t: [] for t in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for tree in (("after", "before") if r % 2 == 0 else ("before", "after")):
                out = Path(tmp) / f"{tree}_{r}.json"
                env = dict(os.environ, PYTHONPATH=str(trees[tree]) + os.pathsep + os.environ.get("PYTHONPATH", ""))
                subprocess.run([sys.executable, str(Path(__file__).resolve()), "--step-ab", *map(str, horizons),
                                "--repeats", str(repeats), "--out", str(out)], env=env, check=True,
                               stdout=subprocess.DEVNULL)
                runs[tree].append(json.loads(out.read_text())["horizons"])
    summary: dict[str, Any] = {}
    for N in map(str, horizons):
        row: dict[str, Any] = {}
        for tree, rs in runs.items():
            med = {name: {part: float(np.median([x[N]["median_us"][name][part] for x in rs]))
                          for part in rs[0][N]["median_us"][name]} for name in rs[0][N]["median_us"]}
            ratios = [x[N]["dynamic_without_t_vs_kinematic_step"] for x in rs]
            row[tree] = {"median_us": med, "dynamic_vs_kinematic_step": float(np.median(ratios)),
                         "dynamic_vs_kinematic_step_rounds": ratios,
                         "iterations": {n: x[N][f"{n}_qp"]["iterations"] for x in rs[:1]
                                        for n in ("dynamic_without_t", "dynamic_with_t", "dynamic_residuals")}}
        row["after_vs_before"] = {name: {part: row["after"]["median_us"][name][part]
                                         / row["before"]["median_us"][name][part]
                                         for part in row["after"]["median_us"][name]}
                                  for name in row["after"]["median_us"]}
        summary[N] = row
    return {"trees": {t: str(p) for t, p in trees.items()}, "rounds": rounds, "horizons": summary, "runs": runs}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=6, help="generated circuits")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--t-max", type=float, default=60.0, help="simulated seconds per run")
    ap.add_argument("--passes", action="store_true", help="add OSQP's default 10 equilibration passes (passes10)")
    ap.add_argument("--variants", nargs="+", choices=(*VARIANTS, "passes10", "residuals"), help="run only these")
    ap.add_argument("--replay", action="store_true",
                    help="instead: replay recorded loops' QPs on fresh back ends against a tight solve")
    ap.add_argument("--bundled", action="store_true", help="with --replay: also the sedan on the bundled circuit")
    ap.add_argument("--step-ab", type=int, nargs="*", metavar="N",
                    help="instead: the dynamic step with and without t in the QP and the kinematic step, timed in "
                         "turn at these horizons (default 10 30 50)")
    ap.add_argument("--repeats", type=int, default=2000, help="with --step-ab: calls of each part")
    ap.add_argument("--against", type=Path, metavar="DIR",
                    help="with --step-ab: also measure the source tree DIR (before), interleaved with this one")
    ap.add_argument("--rounds", type=int, default=3, help="with --against: runs of each tree")
    ap.add_argument("--out", type=Path, help="write the JSON to this file")
    args = ap.parse_args()
    variants = tuple(args.variants or ((*VARIANTS, "passes10") if args.passes else VARIANTS))
    logging.basicConfig(level=logging.ERROR)
    prov = provenance()
    if args.step_ab is not None:
        horizons = tuple(args.step_ab or (10, 30, 50))
        if args.against is not None:
            rep = {"benchmark": "qp_scaling step_ab against", "repeats": args.repeats,
                   **step_ab_against(horizons, args.repeats, args.against, args.rounds)}
        else:
            rep = {"benchmark": "qp_scaling step_ab", "repeats": args.repeats,
                   "horizons": step_ab(horizons, args.repeats)}
        rep = {"provenance": finish(prov), **rep}
        print(dumps(rep))
        if args.out:
            save_json(args.out, rep)
        return
    if args.replay:
        cases = replays(args.n, args.seed, args.t_max, args.bundled)
        rep = {"benchmark": "qp_scaling replay", "n": args.n, "seed": args.seed, "t_max_s": args.t_max,
               "scaling_passes": osqp_backend.SCALING_PASSES, "cases": cases}
        rep = {"provenance": finish(prov), **rep}
        print(dumps(rep))
        if args.out:
            save_json(args.out, rep)
        return
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
               "rms_e_y_m": [r[v]["rms_e_y_m"] for r in rows], "lap_time_s": [r[v]["lap_time_s"] for r in rows]}
        summary[v] = {k: {"median": float(np.median(a)), "worst": float(np.max(a))} for k, a in per.items()}
    out = {"provenance": finish(prov), "benchmark": "qp_scaling", "n": args.n, "seed": args.seed,
           "t_max_s": args.t_max, "scaling_passes": osqp_backend.SCALING_PASSES, "rows": rows, "summary": summary}
    print(dumps(out))
    if args.out:
        save_json(args.out, out)


if __name__ == "__main__":
    main()
