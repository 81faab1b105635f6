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

Part 2 -- horizon study: one lap of a bundled circuit (default ``oval``, starting on the line,
driven hard: v_max 20 m/s, a_y_max 8 m/s^2; change with ``--set KEY=VALUE``) for N in
``--horizons``, run serially; RMS e_y, lap time and solve time vs N. Writes
``horizon_study.csv`` and ``horizon_study.png`` (metrics vs N + the Pareto front with the
recommended N marked) to the results folder.

    python benchmarks/bench_sweep.py [--out benchmarks/results] [--t-max S] [--horizons 10 20 30 50 80]

Prints JSON; saves it to OUT/sweep.json.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from mpc_tracking.scenario.core import default_scenario, parse_set_option  # noqa: E402
from mpc_tracking.tuning.sweep import sweep  # noqa: E402
from mpc_tracking.tuning.executors import dask_client  # noqa: E402

WORKERS = 2
GRID = {"controller.horizon": [10, 14, 18, 22, 26, 30, 35, 40], "controller.ds": [0.5, 1.0]}


def noop(scenario: dict, overrides: dict) -> dict:
    """A run that does nothing: measures the executor's own cost per run."""
    return {"rms_e_y": 0.0, "solve_time_median": 0.0}


def _timed(**kwargs) -> tuple[float, object]:
    t0 = time.perf_counter()
    res = sweep(progress=False, yes=True, **kwargs)
    return time.perf_counter() - t0, res


def _busy(res) -> tuple[float, float]:
    """Sum of the runs' wall and CPU times [s]."""
    return sum(r["wall_time"] for r in res.rows), sum(r["cpu_time"] for r in res.rows)


def executors(t_max: float | None, noop_runs: int) -> dict:
    sc = default_scenario().with_overrides({"simulation.t_max": t_max})
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


STUDY_SET = ["simulation.e_y0=0", "controller.v_max=20", "controller.a_y_max=8"]


def horizon_study(out: Path, path: str, horizons: list[int], within: float, settings: list[str]) -> dict:
    overrides = dict(parse_set_option(s) for s in settings)
    sc = default_scenario().with_overrides({"path.source": path, **overrides})
    tmp = Path(tempfile.mkdtemp(prefix="horizon_study_"))
    try:
        # serial: solve times are not disturbed by a second run on the other core
        res = sweep(sc, {"controller.horizon": horizons}, executor="serial", out=tmp, progress=False)
        shutil.copy(tmp / "sweep.csv", out / "horizon_study.csv")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rec = res.recommend(within=within)
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 6.5), layout="constrained")
    gs = fig.add_gridspec(3, 2, width_ratios=[1, 1.15])
    axes = [fig.add_subplot(gs[0, 0])]
    axes += [fig.add_subplot(gs[i, 0], sharex=axes[0]) for i in (1, 2)]
    res.plot_metrics(metrics=("rms_e_y", "lap_time", "solve_time_median"), axes=axes)
    res.plot_pareto(chosen=rec, ax=fig.add_subplot(gs[:, 1]))
    fig.suptitle(f"horizon study: one lap of '{path}', kinematic bicycle ({', '.join(settings)})")
    fig.savefig(out / "horizon_study.png", dpi=110)
    table = [{k: r.get(k) for k in ("controller.horizon", "status", "lap_completed", "lap_time", "rms_e_y",
                                    "max_abs_e_y", "solve_time_median", "solve_time_p95", "solve_time_max",
                                    "infeasible_steps", "corridor_violation_steps", "wall_time")} for r in res.rows]
    return {"path": path, "settings": settings, "rows": table, "recommendation": rec.summary() if rec else None,
            "recommended_horizon": rec.value if rec else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results")
    ap.add_argument("--t-max", type=float, default=None, help="cap [s] of simulated time per run (default: one lap)")
    ap.add_argument("--noop-runs", type=int, default=64)
    ap.add_argument("--path", default="oval", help="bundled circuit of the horizon study")
    ap.add_argument("--horizons", type=int, nargs="+", default=[10, 20, 30, 50, 80])
    ap.add_argument("--within", type=float, default=0.05, help="recommendation tolerance (fraction)")
    ap.add_argument("--set", action="append", default=None, metavar="KEY=VALUE",
                    help=f"scenario overrides of the horizon study (default {' '.join(STUDY_SET)})")
    ap.add_argument("--skip-executors", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {}
    if not args.skip_executors:
        report["executors"] = executors(args.t_max, args.noop_runs)
    report["horizon_study"] = horizon_study(out, args.path, args.horizons, args.within,
                                            STUDY_SET if args.set is None else args.set)
    text = json.dumps(report, indent=1, default=str)
    print(text)
    (out / "sweep.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
