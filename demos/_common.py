"""Shared bits of the demo scripts: command-line options and the output folder.

Each demo accepts ``--t-max SECONDS`` (or the environment variable ``MPC_TRACKING_DEMO_T_MAX``)
to cut the simulated time short (smoke tests), and ``--out DIR`` (default ``out/demos/<demo name>``,
apart from the ``out/<name>`` folders the YAML scenarios of the same name write with ``mpc-tracking run``).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import mpc_tracking as mt
from mpc_tracking.cli.outputs import prepare_folder, save_figure
from mpc_tracking.scenario.core import load_scenario

HERE = Path(__file__).resolve().parent


def parse_args(name: str, description: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=f"python demos/{name}.py", description=description)
    env = os.environ.get("MPC_TRACKING_DEMO_T_MAX")
    p.add_argument("--t-max", type=float, default=float(env) if env else None,
                   help="simulated time limit per run [s] (default: full laps; env MPC_TRACKING_DEMO_T_MAX)")
    p.add_argument("--out", default=f"out/demos/{name}", help=f"output folder (default out/demos/{name})")
    args = p.parse_args()
    args.out = prepare_folder(args.out)
    return args


def scenario(file: str, args: argparse.Namespace, **overrides):
    """Load ``demos/<file>`` with dotted overrides and the --t-max limit."""
    sc = load_scenario(HERE / file)
    if args.t_max is not None:
        overrides["simulation.t_max"] = args.t_max
    return sc.with_overrides(overrides) if overrides else sc


def save(fig, args: argparse.Namespace, name: str) -> Path:
    f = save_figure(fig, Path(args.out) / name)
    print(f"wrote {f}")
    return f


def row(label: str, result: mt.SimulationResult) -> str:
    m = result.metrics
    lap = f"{result.lap_times[0]:7.2f}" if result.lap_times else "      -"
    return (f"{label:<22} {m['reason']:<14} {lap} {m['rms_e_y'] * 100:8.2f} {m['max_abs_e_y'] * 100:8.2f} "
            f"{m['mean_speed']:6.2f} {m['solve_time_median'] * 1e3:7.2f} {m['solve_time_p95'] * 1e3:7.2f}")


HEADER = (f"{'run':<22} {'outcome':<14} {'lap[s]':>7} {'rms e_y':>8} {'max e_y':>8} {'v[m/s]':>6} "
          f"{'med ms':>7} {'p95 ms':>7}\n" + "-" * 86)
