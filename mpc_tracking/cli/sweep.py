"""The ``mpc-tracking sweep`` subcommand (registered by :func:`add_sweep_command`).

Command-line code: it writes to stdout/stderr (through :func:`_echo`), the library modules do not.

Example::

    mpc-tracking sweep demos/quickstart.yaml --grid controller.horizon=10,20,30,50 --plot
    mpc-tracking sweep sc.yaml --grid controller.horizon=10,20 --grid controller.ds=0.5,1 --dask tcp://sched:8786
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from mpc_tracking.cli.failures import EXIT_TERMINATED
from mpc_tracking.cli.options import int_range, number
from mpc_tracking.errors import InputError
from mpc_tracking.tuning.metrics import DEFAULT_METRIC, SETTLE_FRACTION
from mpc_tracking.tuning.sweep import DEFAULT_MAX_RUNS, METRIC_FIELDS, SweepResult

__all__ = ["add_sweep_command", "parse_grid_option", "cmd_sweep"]


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside [...] and {...}."""
    items: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    items.append("".join(cur))
    return [i.strip() for i in items]


def parse_grid_option(text: str) -> tuple[str, list[Any]]:
    """``"controller.horizon=10,20,30"`` -> ``("controller.horizon", [10, 20, 30])``.

    Values are YAML scalars separated by commas; brackets group a list-valued value
    (``controller.Q=[1,1,1],[10,10,1]`` is two values).
    """
    from mpc_tracking.cli.options import parse_value, split_key_value

    key, raw = split_key_value(text, "--grid", "KEY=V1,V2,...", "controller.horizon=10,20,30")
    if not raw:
        raise InputError(f"--grid {text!r}: no values after '='; give at least one, e.g. {key}=10,20")
    items = _split_top_level(raw)
    if any(not item for item in items):
        raise InputError(f"--grid {text!r}: empty value between commas")
    return key, [parse_value(item, f"--grid {key}") for item in items]


def add_sweep_command(sub: Any) -> argparse.ArgumentParser:
    """Add ``sweep`` to the subparsers ``sub`` of the ``mpc-tracking`` parser."""
    p = sub.add_parser(
        "sweep", help="parameter sweep of a scenario (horizon, weights, ...) on processes or Dask",
        description="Run the closed loop for every grid point; rows stream to OUT/sweep.csv and sweep.json.")
    p.add_argument("scenario", help="scenario YAML file ('default' = the embedded demo scenario)")
    p.add_argument("--grid", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="swept key and its values (repeatable: the cartesian product is run)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change the base scenario")
    p.add_argument("--repeats", type=int_range(1), default=1, help="runs per point (default 1)")
    p.add_argument("--executor", choices=("serial", "processes"), default="processes",
                   help="local executor (default processes: one worker per core)")
    p.add_argument("--workers", type=int_range(1), default=None, help="local worker processes (default: one per core)")
    p.add_argument("--dask", metavar="tcp://HOST:PORT|local", default=None,
                   help="run on a Dask cluster: a scheduler address, or 'local' for a LocalCluster here")
    p.add_argument("--connect-timeout", type=number(gt=0, unit="s"), default=10.0,
                   help="seconds to reach the Dask scheduler (default 10)")
    p.add_argument("--out", default="out/sweep", help="output folder (default out/sweep)")
    p.add_argument("--resume", action="store_true", help="skip runs already in OUT")
    p.add_argument("--plot", action="store_true", help="write sweep_metrics.png and sweep_pareto.png")
    p.add_argument("--param", default=None, help="key of the recommendation and plots (default the horizon)")
    p.add_argument("--within", type=number(ge=0, unit="%"), default=5.0,
                   help="recommend within this %% of the best --metric (5)")
    p.add_argument("--metric", default=DEFAULT_METRIC,
                   help=f"rank by this row field (default {DEFAULT_METRIC}: RMS e_y after the first "
                        f"{SETTLE_FRACTION:.0%} of the path, leaving out the start transient; rms_e_y: the whole run)")
    p.add_argument("--max-runs", type=int_range(1), default=DEFAULT_MAX_RUNS,
                   help=f"refuse larger sweeps without --yes (default {DEFAULT_MAX_RUNS})")
    p.add_argument("--yes", action="store_true", help="launch even more than --max-runs runs")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_sweep)
    return p


def _fmt(value: Any, scale: float = 1.0, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value)
    try:
        v = float(value) * scale
    except (TypeError, ValueError):
        return str(value)
    return "nan" if math.isnan(v) else f"{v:.{digits}g}"


def format_table(result: SweepResult) -> str:
    """Text table: one line per grid point (repeats averaged); ``settled`` is the RMS e_y after the
    start transient (:mod:`mpc_tracking.tuning.metrics`), the default ranking."""
    head = [*result.params, "ok/runs", "lap", "lap time [s]", "RMS e_y [cm]", "settled [cm]", "max e_y [cm]",
            "solve med [ms]", "solve p95 [ms]", "infeasible"]
    lines = []
    for p in result.points():
        lines.append([*(str(p.get(k)) for k in result.params), f"{p['ok']}/{p['runs']}", str(p["lap_completed"]),
                      _fmt(p.get("lap_time")), _fmt(p.get("rms_e_y"), 100), _fmt(p.get("rms_e_y_settled"), 100),
                      _fmt(p.get("max_abs_e_y"), 100),
                      _fmt(p.get("solve_time_median"), 1e3), _fmt(p.get("solve_time_p95"), 1e3),
                      _fmt(p.get("infeasible_steps"))])
    widths = [max(len(h), *(len(r[i]) for r in lines)) for i, h in enumerate(head)]
    out = ["  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True))]
    out += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in lines]
    return "\n".join(out)


def _echo(text: str, stream: Any = None) -> None:
    (stream or sys.stdout).write(f"{text}\n")


def cmd_sweep(args: argparse.Namespace) -> int:
    """Run ``mpc-tracking sweep``; returns the exit code (1 when some run failed)."""
    from mpc_tracking.cli.options import parse_set_option
    from mpc_tracking.scenario.core import default_scenario, load_scenario
    from mpc_tracking.tuning.sweep import sweep

    if args.scenario == "default" and not Path(args.scenario).exists():
        scenario = default_scenario()
    else:
        scenario = load_scenario(args.scenario)
    if args.set:
        scenario = scenario.with_overrides(dict(parse_set_option(s) for s in args.set))
    if not args.grid:
        raise InputError("--grid: empty grid; give at least one, e.g. --grid controller.horizon=10,20,30")
    grid: dict[str, list] = {}
    for text in args.grid:
        key, values = parse_grid_option(text)
        if key in grid:
            raise InputError(f"--grid {key}: given twice; put all values in one --grid {key}=V1,V2,...")
        grid[key] = values
    if args.param is not None and args.param not in grid:  # before the runs, not after them
        raise InputError(f"--param {args.param!r}: not a swept key; swept: {', '.join(grid)}")
    if args.metric not in METRIC_FIELDS:
        from difflib import get_close_matches

        near = get_close_matches(args.metric, METRIC_FIELDS, n=1)
        raise InputError(f"--metric {args.metric!r}: not a metric of the rows"
                         + (f"; did you mean {near[0]!r}?" if near else f"; one of {', '.join(METRIC_FIELDS)}"))
    try:
        result = sweep(scenario, grid, executor=args.executor, dask=args.dask, workers=args.workers,
                       repeats=args.repeats, out=args.out, resume=args.resume, max_runs=args.max_runs, yes=args.yes,
                       progress=False if args.no_progress else None, connect_timeout=args.connect_timeout)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated) through mpc_tracking.cli.main
        from mpc_tracking.cli.failures import classify
        from mpc_tracking.tuning.io import JSON_NAME, read_rows

        code, _ = classify(exc)
        word = "terminated (SIGTERM)" if code == EXIT_TERMINATED else "interrupted (Ctrl-C)"
        done = len(read_rows(args.out)) if Path(args.out).is_dir() else 0
        _echo(f"mpc-tracking sweep: {word}; workers stopped; {done} finished runs kept in "
              f"{Path(args.out) / JSON_NAME} and sweep.csv (rerun with --resume to go on)", sys.stderr)
        return code
    _echo(format_table(result))
    rec = result.recommend(param=args.param, within=args.within / 100.0, metric=args.metric)
    _echo(rec.summary() if rec is not None else "no recommendation: no run succeeded")
    files = list(result.files.values())
    if args.plot:
        fig, _ = result.plot_metrics(param=args.param)
        files.append(Path(args.out) / "sweep_metrics.png")
        fig.savefig(files[-1], dpi=120)
        fig, _ = result.plot_pareto(chosen=rec, metric=args.metric)
        files.append(Path(args.out) / "sweep_pareto.png")
        fig.savefig(files[-1], dpi=120)
    done = len(result.rows) - result.skipped
    _echo(f"{done} runs in {result.wall_time:.1f} s ({result.skipped} resumed), {result.n_failed} failed")
    for f in files:
        _echo(f"wrote {f}")
    if result.n_failed:
        first = next(r for r in result.rows if r.get("status") != "ok")
        where = ", ".join(f"{k}={first.get(k)!r}" for k in result.params)
        why = " ".join(str(first.get("error") or "").split())
        _echo(f"mpc-tracking: sweep: {result.n_failed} of {len(result.rows)} runs failed (first: {where}: {why}); "
              f"the error of each is in {result.files.get('csv', 'the rows')}", sys.stderr)
        return 1
    return 0
