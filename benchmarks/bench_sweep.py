"""Sweep executors (serial vs local processes vs Dask LocalCluster) and the horizon study.

Part 1 -- parallel efficiency: the same 16-point sweep (horizon x MPC step, one lap each of the
bundled default scenario unless ``--t-max`` caps the simulated time) on

- ``serial``      in this process,
- ``processes``   2 spawned worker processes (pool start-up included),
- ``dask_local``  a LocalCluster with 2 worker processes (cluster start-up included),
- ``dask_warm``   the same cluster already running (start-up excluded).

Efficiency = T_serial / (workers x T_parallel). The per-run overhead of the Dask path is
measured on ``--noop-runs`` runs that do nothing (dispatch + result round trip), and from the
real sweep as the worker time spent outside the runs, (workers x T_dask_warm - sum of run wall
times) / runs. Utilisation = sum of run wall times / (workers x T_sweep); run_slowdown = sum of
run wall times / the same sum in the serial sweep. All figures come from one process run;
the 1-minute load average before the run is recorded (other work on the machine lowers the
efficiency).

Part 2 -- horizon study (``--study``): one lap of a bundled circuit (default ``oval``, starting
on the line, driven hard) for N in ``--horizons``, run serially; RMS e_y, lap time and solve time
vs N. Two studies are defined (``--set KEY=VALUE`` / ``--horizons`` replace their defaults):

- ``kinematic``: the kinematic-bicycle plant (the MPC's own model), v_max 20 m/s, a_y_max 8 m/s^2,
  N = 10 20 30 50 80 -> ``horizon_study.{csv,png,json}``;
- ``sedan``: the 3D ``ackermann3d`` plant with ``plant.params.preset=sedan`` (model mismatch),
  v_max 20 m/s, a_y_max 7 m/s^2, N = 5 10 20 30 50 80 -> ``horizon_study_sedan.{csv,png,json}``.

The CSV holds every sweep row, the PNG the metrics vs N and the Pareto front with the recommended
N marked, and the JSON sidecar the provenance (command line, commit, machine and load, package
versions), the settings, the summary table and the recommendation.

    python benchmarks/bench_sweep.py [--save | --out DIR] [--t-max S] [--skip-executors]
                                     [--study kinematic|sedan|none] [--horizons N ...] [--set KEY=VALUE ...]

Prints JSON (with a ``provenance`` block); the executor part is saved to OUT/sweep.json (only when
it runs), each horizon study to its sidecar OUT/<study file>.json. OUT is the untracked
``out/benchmarks`` unless ``--save`` (the tracked ``benchmarks/results``) or ``--out`` says otherwise.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from _provenance import dumps, finish, provenance, save_json

import mpc_tracking as mt
from mpc_tracking.cli.options import parse_set_option
from mpc_tracking.tuning.executors import dask_client

WORKERS = 2
GRID = {"controller.horizon": [10, 14, 18, 22, 26, 30, 35, 40], "controller.ds": [0.5, 1.0]}


def noop(scenario: dict, overrides: dict) -> dict:
    """A run that does nothing: measures the executor's own cost per run."""
    return {"rms_e_y": 0.0, "solve_time_median": 0.0}


def _timed(**kwargs) -> tuple[float, object]:
    t0 = time.perf_counter()
    res = mt.sweep(progress=False, yes=True, **kwargs)
    return time.perf_counter() - t0, res


def _busy(res) -> tuple[float, float]:
    """Sum of the runs' wall and CPU times [s]."""
    return sum(r["wall_time"] for r in res.rows), sum(r["cpu_time"] for r in res.rows)


def executors(t_max: float | None, noop_runs: int) -> dict:
    """Time the same sweep serially, on processes and on Dask (cold and warm), plus no-op runs."""
    sc = mt.default_scenario().with_overrides({"simulation.t_max": t_max})
    load = os.getloadavg()[0]
    n = len(GRID["controller.horizon"]) * len(GRID["controller.ds"])
    timed = {"serial": _timed(scenario=sc, grid=GRID, executor="serial"),
             "processes": _timed(scenario=sc, grid=GRID, executor="processes", workers=WORKERS),
             "dask_local": _timed(scenario=sc, grid=GRID, dask="local", workers=WORKERS)}
    t0 = time.perf_counter()
    client, cluster, _ = dask_client("local", workers=WORKERS)
    t_start = time.perf_counter() - t0
    noop_grid = {"controller.horizon": list(range(1, noop_runs + 1))}
    try:
        client.run(lambda: __import__("mpc_tracking.scenario.core"))  # imports paid once, like a long-lived cluster
        timed["dask_warm"] = _timed(scenario=sc, grid=GRID, dask=client)
        t_noop_dask, _ = _timed(scenario=sc, grid=noop_grid, dask=client, runner=noop)
    finally:
        client.close()
        cluster.close()
    t_noop_serial, _ = _timed(scenario=sc, grid=noop_grid, executor="serial", runner=noop)
    t_serial, ref = timed["serial"]
    serial_wall, _ = _busy(ref)
    out: dict = {"runs": n, "workers": WORKERS, "t_max_s": t_max, "loadavg_1min_before": load,
                 "cpu_count": os.cpu_count(), "dask_cluster_start_s": t_start}
    for name, (t, res) in timed.items():
        wall, cpu = _busy(res)
        w = 1 if name == "serial" else WORKERS
        out[name] = {
            "sweep_s": t,
            "efficiency": t_serial / (w * t),           # speed-up / workers
            "utilisation": wall / (w * t),               # share of worker time spent inside runs
            "run_slowdown": wall / serial_wall,          # mean run wall time vs serial (CPU contention)
            "run_cpu_share": cpu / wall,                 # CPU time / wall time inside the runs
            "runs_wall_s": wall,
            "runs_cpu_s": cpu,
            "failed": res.n_failed,
        }
    warm_t, warm = timed["dask_warm"]
    out["dask_overhead_per_run_noop_ms"] = 1e3 * t_noop_dask / noop_runs
    out["serial_overhead_per_run_noop_ms"] = 1e3 * t_noop_serial / noop_runs
    out["dask_idle_worker_time_per_run_ms"] = 1e3 * (WORKERS * warm_t - _busy(warm)[0]) / n
    out["noop_runs"] = noop_runs
    return out


#: horizon studies: output file stem, default ``--set`` overrides, default horizons
STUDIES = {
    "kinematic": ("horizon_study", ["simulation.e_y0=0", "controller.v_max=20", "controller.a_y_max=8"],
                  [10, 20, 30, 50, 80]),
    "sedan": ("horizon_study_sedan", ["simulation.e_y0=0", "controller.v_max=20", "controller.a_y_max=7",
                                      "plant.name=ackermann3d", "plant.params.preset=sedan"],
              [5, 10, 20, 30, 50, 80]),
}
ROW_KEYS = ("controller.horizon", "status", "lap_completed", "lap_time", "rms_e_y", "max_abs_e_y", "solve_time_median",
            "solve_time_p95", "solve_time_max", "infeasible_steps", "corridor_violation_steps", "wall_time")


def _plant_label(plant_cfg: object) -> str:
    """``name`` or ``name (key=value, ...)`` of the scenario's plant section."""
    params = ", ".join(f"{k}={v}" for k, v in plant_cfg.params.items())
    return f"{plant_cfg.name} ({params})" if params else plant_cfg.name


def _plot_study(res: object, rec: object, title: str, file: Path) -> None:
    """Metrics vs N (left) and the Pareto front with the recommended N (right), saved to ``file``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 6.5), layout="constrained")
    gs = fig.add_gridspec(3, 2, width_ratios=[1, 1.15])
    axes = [fig.add_subplot(gs[0, 0])]
    axes += [fig.add_subplot(gs[i, 0], sharex=axes[0]) for i in (1, 2)]
    res.plot_metrics(metrics=("rms_e_y", "lap_time", "solve_time_median"), axes=axes)
    res.plot_pareto(chosen=rec, ax=fig.add_subplot(gs[:, 1]))
    fig.suptitle(title, fontsize="medium")
    fig.savefig(file, dpi=110)


def horizon_study(out: Path, stem: str, path: str, horizons: list[int], within: float, settings: list[str]) -> dict:
    """Run the horizon sweep and write ``stem``.csv (all rows) and ``stem``.png; return the summary."""
    overrides = dict(parse_set_option(s) for s in settings)
    sc = mt.default_scenario().with_overrides({"path.source": path, **overrides})
    tmp = Path(tempfile.mkdtemp(prefix="horizon_study_"))
    try:
        # serial: solve times are not disturbed by a second run on the other core
        res = mt.sweep(sc, {"controller.horizon": horizons}, executor="serial", out=tmp, progress=False)
        shutil.copy(tmp / "sweep.csv", out / f"{stem}.csv")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rec = res.recommend(within=within)
    plant = _plant_label(sc.plant)
    title = f"horizon study: one lap of '{path}', plant {plant}\n{', '.join(settings)}"
    _plot_study(res, rec, title, out / f"{stem}.png")
    table = [{k: r.get(k) for k in ROW_KEYS} for r in res.rows]
    return {"path": path, "plant": plant, "settings": settings, "horizons": horizons, "within": within,
            "files": [f"{stem}.csv", f"{stem}.png"], "rows": table,
            "recommendation": rec.summary() if rec else None, "recommended_horizon": rec.value if rec else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None, help="output folder (default out/benchmarks; --save: benchmarks/results)")
    ap.add_argument("--save", action="store_true", help="write into the tracked benchmarks/results")
    ap.add_argument("--t-max", type=float, default=None, help="cap [s] of simulated time per run (default: one lap)")
    ap.add_argument("--noop-runs", type=int, default=64)
    ap.add_argument("--study", default="kinematic", choices=[*STUDIES, "none"], help="which horizon study")
    ap.add_argument("--path", default="oval", help="bundled circuit of the horizon study")
    ap.add_argument("--horizons", type=int, nargs="+", default=None, help="horizons (default: the study's)")
    ap.add_argument("--within", type=float, default=0.05, help="recommendation tolerance (fraction)")
    ap.add_argument("--set", action="append", default=None, metavar="KEY=VALUE",
                    help="scenario overrides of the horizon study (default: the study's, see the docstring)")
    ap.add_argument("--skip-executors", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out or ("benchmarks/results" if args.save else "out/benchmarks"))
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {}
    if not args.skip_executors:
        prov = provenance()
        report["executors"] = executors(args.t_max, args.noop_runs)
        report["provenance"] = finish(prov)
        save_json(out / "sweep.json", {"provenance": report["provenance"], "executors": report["executors"]})
    if args.study != "none":
        stem, settings, horizons = STUDIES[args.study]
        prov = provenance()
        study = horizon_study(out, stem, args.path, args.horizons or horizons, args.within, args.set or settings)
        sidecar = {"provenance": finish(prov), "study": args.study, **study}
        save_json(out / f"{stem}.json", sidecar)
        report["horizon_study"] = sidecar
    print(dumps(report))


if __name__ == "__main__":
    main()
