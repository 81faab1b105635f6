"""Parameter sweeps: same rows on every executor, streamed output, resume, failures, bad input."""
from __future__ import annotations

import argparse
import json
import math
import os
import socket

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from mpc_tracking.cli.sweep import add_sweep_command, parse_grid_option
from mpc_tracking.errors import ClusterError, InputError, ScenarioError
from mpc_tracking.scenario.core import default_scenario
from mpc_tracking.tuning.analysis import aggregate, pareto_front, recommend
from mpc_tracking.tuning.grid import expand_grid, point_key
from mpc_tracking.tuning.io import read_rows
from mpc_tracking.tuning.sweep import TIMING_FIELDS, sweep

GRID = {"controller.horizon": [5, 10], "controller.ds": [0.5, 1.0]}


@pytest.fixture(scope="module")
def base():
    """2 s of simulated time on the bundled oval: a few dozen MPC steps per run."""
    return default_scenario().with_overrides({"simulation.t_max": 2.0})


@pytest.fixture(scope="module")
def serial(base, tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    return sweep(base, GRID, executor="serial", out=out), out


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _strip(rows):
    return [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in rows]


def _assert_same_rows(rows_a, rows_b):
    a, b = _strip(rows_a), _strip(rows_b)
    assert [r["index"] for r in a] == [r["index"] for r in b]
    for ra, rb in zip(a, b, strict=True):
        assert ra.keys() == rb.keys()
        diff = {k: (ra[k], rb[k]) for k in ra if not _same(ra[k], rb[k])}
        assert not diff, f"run {ra['index']} differs: {diff}"


# ---------------------------------------------------------------------- executors give the same rows
def test_serial_rows_cover_the_grid(serial):
    res, _ = serial
    assert [r["index"] for r in res.rows] == [0, 1, 2, 3]
    assert [(r["controller.horizon"], r["controller.ds"]) for r in res.rows] == [(5, 0.5), (5, 1.0), (10, 0.5), (10, 1.0)]
    assert all(r["status"] == "ok" for r in res.rows)
    assert all(r["steps"] > 10 and r["rms_e_y"] > 0 and r["solve_time_median"] > 0 for r in res.rows)
    # different settings give different closed loops
    assert len({round(r["rms_e_y"], 12) for r in res.rows}) == 4


def test_processes_and_dask_give_the_serial_rows(base, serial):
    ref, _ = serial
    procs = sweep(base, GRID, executor="processes", workers=2)
    _assert_same_rows(ref.rows, procs.rows)
    here = f"{socket.gethostname()}:{os.getpid()}"
    assert {r["worker"] for r in ref.rows} == {here}  # serial runs in this process
    workers = {r["worker"] for r in procs.rows}
    assert here not in workers and 1 <= len(workers) <= 2  # in (at most 2) worker processes
    with_dask = sweep(base, GRID, dask="local", workers=2)
    _assert_same_rows(ref.rows, with_dask.rows)


# ---------------------------------------------------------------------- streamed output and resume
def test_output_files_hold_the_rows(serial):
    res, out = serial
    arr = json.loads((out / "sweep.json").read_text())
    assert [r["index"] for r in arr] == [0, 1, 2, 3]
    lines = (out / "sweep.jsonl").read_text().splitlines()
    assert len(lines) == 4
    header = (out / "sweep.csv").read_text().splitlines()[0].split(",")
    assert header[:6] == ["index", "point", "repeat", "key", "controller.horizon", "controller.ds"]
    back = read_rows(out)
    assert [r["key"] for r in back] == [r["key"] for r in res.rows]
    assert back[0]["rms_e_y"] == pytest.approx(res.rows[0]["rms_e_y"], rel=1e-12)


def test_resume_runs_only_the_missing_points(base, tmp_path):
    first = sweep(base, {"controller.horizon": [5, 10]}, executor="serial", out=tmp_path)
    with open(tmp_path / "sweep.jsonl", "a") as fh:
        fh.write('{"index": 7, "key": "torn wri')  # a row cut off by a kill
    more = sweep(base, {"controller.horizon": [5, 10, 15, 20]}, executor="serial", out=tmp_path, resume=True)
    assert more.skipped == 2
    assert [r["controller.horizon"] for r in more.rows] == [5, 10, 15, 20]
    # the two earlier rows are the stored ones (same wall time), not new runs
    assert [r["wall_time"] for r in more.rows[:2]] == pytest.approx([r["wall_time"] for r in first.rows])
    assert len(read_rows(tmp_path)) == 4
    assert math.isnan(more.rows[0]["lap_time"]) and more.rows[0]["lap_completed"] is False  # exact round trip
    again = sweep(base, {"controller.horizon": [5, 10, 15, 20]}, executor="serial", out=tmp_path, resume=True)
    assert again.skipped == 4 and len(again.rows) == 4


def test_resume_reindexes_a_grown_grid_and_refuses_a_shrunk_one(base, tmp_path):
    sweep(base, {"controller.horizon": [10]}, executor="serial", out=tmp_path, runner=_cheap)
    grown = sweep(base, {"controller.horizon": [5, 10]}, executor="serial", out=tmp_path, resume=True, runner=_cheap)
    assert grown.skipped == 1
    assert [(r["index"], r["controller.horizon"]) for r in grown.rows] == [(0, 5), (1, 10)]
    assert [r["index"] for r in json.loads((tmp_path / "sweep.json").read_text())] == [0, 1]
    with pytest.raises(InputError, match=r"1 runs that are not in this grid \(e.g. controller.horizon=5"):
        sweep(base, {"controller.horizon": [10]}, executor="serial", out=tmp_path, resume=True, runner=_cheap)


def test_resume_refuses_another_scenario(base, tmp_path):
    sweep(base, {"controller.horizon": [5]}, executor="serial", out=tmp_path)
    other = base.with_overrides({"simulation.e_y0": 0.5})
    with pytest.raises(InputError, match="different scenario"):
        sweep(other, {"controller.horizon": [5]}, executor="serial", out=tmp_path, resume=True)


def _stop_at_15(scenario, overrides):
    if overrides["controller.horizon"] == 15:
        raise KeyboardInterrupt
    return {"rms_e_y": 0.1, "solve_time_median": 1e-3, "lap_completed": True}


def test_interrupted_sweep_keeps_its_rows(base, tmp_path):
    grid = {"controller.horizon": [5, 10, 15, 20]}
    with pytest.raises(KeyboardInterrupt):
        sweep(base, grid, executor="serial", out=tmp_path, runner=_stop_at_15)
    kept = read_rows(tmp_path)
    assert [r["controller.horizon"] for r in kept] == [5, 10]
    assert len(json.loads((tmp_path / "sweep.json").read_text())) == 2


# ---------------------------------------------------------------------- failures are rows
def test_failing_run_is_recorded_and_the_sweep_goes_on(base):
    # values the scenario schema accepts but building the run refuses (a bad value the schema
    # refuses, controller.horizon = 0, stops the sweep before any run: test_reliability_round2)
    points = [{"controller.horizon": 5}, {"plant.params.wheelbase": -1.0}, {"plant.params.wheelbase": -2.0}]
    res = sweep(base, points, executor="serial")
    assert [r["status"] for r in res.rows] == ["ok", "error", "error"]
    assert "wheelbase" in res.rows[1]["error"] and "-2" in res.rows[2]["error"]
    assert res.n_failed == 2
    assert res.rows[0]["rms_e_y"] > 0


def _boom(scenario, overrides):
    raise RuntimeError(f"boom at N={overrides['controller.horizon']}")


def test_progress_bar_and_injected_runner(base, capsys):
    res = sweep(base, {"controller.horizon": [5, 10]}, executor="serial", runner=_boom, progress=True)
    assert [r["error"] for r in res.rows] == ["RuntimeError: boom at N=5", "RuntimeError: boom at N=10"]
    assert "2/2" in capsys.readouterr().err


# ---------------------------------------------------------------------- grid and keys
def test_expand_grid_is_a_cartesian_product():
    params, pts = expand_grid({"a.x": [1, 2, 3], "b.y": np.array([0.5, 1.0]), "c.z": "s"})
    assert params == ["a.x", "b.y", "c.z"]
    assert len(pts) == 6 and pts[0] == {"a.x": 1, "b.y": 0.5, "c.z": "s"} and pts[1]["b.y"] == 1.0
    params, pts = expand_grid([{"a.x": 1}, {"b.y": 2}])
    assert params == ["a.x", "b.y"] and pts == [{"a.x": 1}, {"b.y": 2}]


def test_point_key_is_stable():
    assert point_key({"a.x": np.int64(3)}, 0) == point_key({"a.x": 3}, 0)
    assert point_key({"a.x": 3, "b": 1}) == point_key({"b": 1, "a.x": 3})
    assert point_key({"a.x": 3}, 0) != point_key({"a.x": 3}, 1)


def _unreachable_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"tcp://127.0.0.1:{port}"


def _cheap(scenario, overrides):
    return {"rms_e_y": 0.1, "solve_time_median": 1e-3}


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"grid": {"controller.horizn": [10]}}, ScenarioError, r"controller.horizn.*did you mean 'horizon'"),
    ({"grid": {"controler.horizon": [10]}}, ScenarioError, r"did you mean 'controller'"),
    ({"grid": {}}, InputError, "grid: empty"),
    ({"grid": []}, InputError, "grid: empty"),
    ({"grid": {"controller.horizon": []}}, InputError, r"grid\['controller.horizon'\]: empty"),
    ({"grid": {"controller.horizon": [5, 6, 7, 8]}, "max_runs": 3}, InputError, r"4 runs .* max_runs=3.*yes"),
    ({"grid": {"controller.horizon": [5]}, "executor": "threads"}, InputError, "executor: expected one of"),
    ({"grid": {"controller.horizon": [5]}, "executor": "dask"}, InputError, "dask: executor='dask' needs"),
    ({"grid": {"controller.horizon": [5]}, "repeats": 0}, InputError, "repeats: expected a positive"),
    ({"grid": {"controller.horizon": [5]}, "resume": True}, InputError, "resume: needs out="),
    ({"grid": {"controller.horizon": [5]}, "dask": "nowhere"}, InputError, "dask: expected 'local' or"),
])
def test_bad_input(base, kwargs, exc, match):
    kw = {"executor": "processes" if "dask" in kwargs else "serial", **kwargs}
    with pytest.raises(exc, match=match):
        sweep(base, runner=_cheap, **kw)


def test_yes_launches_a_large_grid(base):
    res = sweep(base, {"controller.horizon": [5, 6, 7, 8]}, executor="serial", max_runs=3, yes=True, runner=_cheap)
    assert len(res.rows) == 4


def test_unreachable_dask_scheduler_is_a_clear_error(base):
    addr = _unreachable_address()
    with pytest.raises(ClusterError, match=f"cannot reach the Dask scheduler at '{addr}' within 1 s"):
        sweep(base, {"controller.horizon": [5]}, dask=addr, connect_timeout=1.0, runner=_cheap)


# ---------------------------------------------------------------------- analysis
def _rows(rms, cost, laps=None):
    laps = laps or [True] * len(rms)
    return [{"index": i, "point": i, "controller.horizon": n, "status": "ok", "rms_e_y": e, "solve_time_median": c,
             "lap_completed": lap} for i, (n, e, c, lap) in enumerate(zip((10, 20, 30, 50), rms, cost, laps, strict=False))]


def test_recommend_smallest_horizon_within_tolerance():
    rows = _rows([0.10, 0.052, 0.0505, 0.05], [1e-3, 2e-3, 3e-3, 5e-3])
    rec = recommend(rows, ["controller.horizon"], within=0.05)
    assert rec.value == 20 and rec.best_value == 0.05 and rec.cost_value == 2e-3
    assert recommend(rows, ["controller.horizon"], within=0.0).value == 50
    assert recommend(rows, ["controller.horizon"], within=1.0).value == 10
    assert "controller.horizon = 20" in rec.summary()


def test_recommend_ignores_runs_that_did_not_finish():
    rows = _rows([0.01, 0.052, 0.0505, 0.05], [1e-3, 2e-3, 3e-3, 5e-3], laps=[False, True, True, True])
    assert recommend(rows, ["controller.horizon"], within=0.05).value == 20
    failed = [dict(r, status="error") for r in rows]
    assert recommend(failed, ["controller.horizon"]) is None


def test_pareto_front_and_aggregate():
    rows = _rows([0.10, 0.05, 0.06, 0.04], [1e-3, 2e-3, 3e-3, 5e-3])
    front = pareto_front(aggregate(rows, ["controller.horizon"]))
    assert [p["controller.horizon"] for p in front] == [10, 20, 50]  # N=30 is dominated by N=20
    rep = [dict(r, index=2 * i + k, repeat=k, rms_e_y=r["rms_e_y"] * (1 + k)) for i, r in enumerate(rows) for k in (0, 1)]
    agg = aggregate(rep, ["controller.horizon"])
    assert len(agg) == 4 and agg[0]["runs"] == 2 and agg[0]["rms_e_y"] == pytest.approx(0.15)


def test_plots_are_figures(serial, tmp_path):
    res, _ = serial
    fig, axes = res.plot_metrics(metrics=("rms_e_y", "solve_time_median", "lap_time"))
    assert len(axes) == 3 and len(axes[0].lines) >= 2  # one line per ds value
    rec = res.recommend()
    fig2, ax = res.plot_pareto(chosen=rec)
    assert any(line.get_marker() == "*" for line in ax.lines)
    fig2.savefig(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000


# ---------------------------------------------------------------------- command line
def _parser():
    p = argparse.ArgumentParser(prog="mpc-tracking")
    add_sweep_command(p.add_subparsers(dest="command"))
    return p


def test_parse_grid_option():
    assert parse_grid_option("controller.horizon=10,20, 30") == ("controller.horizon", [10, 20, 30])
    assert parse_grid_option("controller.Q=[1,1,1],[10,10,1]") == ("controller.Q", [[1, 1, 1], [10, 10, 1]])
    assert parse_grid_option("controller.mode=tracking") == ("controller.mode", ["tracking"])
    for bad, match in [("controller.horizon", "expected KEY=V1"), ("controller.horizon=", "no values"),
                       ("controller.horizon=1,,2", "empty value")]:
        with pytest.raises(InputError, match=match):
            parse_grid_option(bad)


def test_cli_sweep_writes_table_and_plots(tmp_path, capsys):
    args = _parser().parse_args(["sweep", "default", "--set", "simulation.t_max=1.5", "--grid",
                                 "controller.horizon=5,10", "--executor", "serial", "--out", str(tmp_path),
                                 "--plot", "--no-progress"])
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "recommended: controller.horizon =" in text and "RMS e_y [cm]" in text and "settled [cm]" in text
    assert (tmp_path / "sweep_pareto.png").is_file() and (tmp_path / "sweep_metrics.png").is_file()


@pytest.mark.parametrize("argv, match", [
    (["--grid", "controller.horizn=5"], "did you mean 'horizon'"),
    ([], "--grid: empty grid"),
    (["--grid", "controller.horizon=5,6,7", "--max-runs", "2"], "--yes"),
    (["--grid", "controller.horizon=5", "--grid", "controller.horizon=6"], "given twice"),
    (["--grid", "controller.horizon=5", "--metric", "rms_e_y_setled"], "did you mean 'rms_e_y_settled'"),
])
def test_cli_bad_input(argv, match, tmp_path):
    args = _parser().parse_args(["sweep", "default", "--out", str(tmp_path), "--executor", "serial", *argv])
    with pytest.raises(InputError, match=match):
        args.func(args)


def test_mpc_tracking_sweep_command_reports_bad_input(tmp_path, capsys):
    from mpc_tracking.cli.main import main

    base = ["sweep", "default", "--out", str(tmp_path), "--no-progress"]
    assert main(base + ["--executor", "serial", "--grid", "controler.horizon=5"]) == 2
    assert "did you mean 'controller'" in capsys.readouterr().err
    assert main(base + ["--dask", _unreachable_address(), "--connect-timeout", "1", "--grid",
                        "controller.horizon=5"]) == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err
    assert main(base + ["--grid", "controller.horizon=5,6", "--max-runs", "1"]) == 2
    assert "pass yes=True (--yes)" in capsys.readouterr().err
