"""The ``mpc-tracking`` command.

Subcommands: ``demo`` (embedded default run), ``run SCENARIO.yaml`` (run a scenario file, write
result/CSV/JSON/plots), ``animate RESULT_OR_SCENARIO --out run.gif|run.mp4``, ``path show`` /
``path list``, ``check SCENARIO.yaml`` (validate and print the resolved scenario).
Exit codes: 0 success, 1 the run did not reach its goal (files still written), 2 usage or
input error (one line on stderr naming the cause).
"""
from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mpc_tracking.cli.identify import add_identify_command
from mpc_tracking.cli.models import add_model_commands
from mpc_tracking.cli.sweep import add_sweep_command
from mpc_tracking.errors import InputError, MPCTrackingError
from mpc_tracking.mpc.settings import MPCSettings

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error (exit code 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _say(args: argparse.Namespace, text: str) -> None:
    if not getattr(args, "quiet", False):
        print(text)


def _progress(args: argparse.Namespace, total: float, desc: str) -> tuple[Callable | None, Callable[[], None]]:
    """An ``on_step(k, t)`` callback driving a tqdm bar (only on a terminal, not with --quiet)."""
    if getattr(args, "quiet", False) or not sys.stderr.isatty():
        return None, lambda: None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover
        return None, lambda: None
    bar = tqdm(total=round(total, 1), desc=desc, unit="sim s", leave=False, file=sys.stderr)

    def on_step(k: int, t: float) -> None:
        bar.n = min(round(t, 1), bar.total)
        bar.refresh() if k % 10 == 0 else None

    return on_step, bar.close


def _summary_table(result) -> str:
    m, info = result.metrics, result.info or {}
    rows = [
        ("scenario", info.get("scenario_name", "-")),
        ("path", info.get("path", "-")),
        ("plant", info.get("plant", "-")),
        ("mode / horizon", f"{info.get('mode', '-')} / N = {info.get('horizon', '-')}"),
        ("outcome", f"{m['reason']} (laps completed: {m['laps_completed']})"),
        ("lap time [s]", " ".join(f"{t:.2f}" for t in result.lap_times) or "-"),
        ("duration [s]", f"{m['duration']:.2f}"),
        ("RMS / max |e_y| [m]", f"{m['rms_e_y']:.3f} / {m['max_abs_e_y']:.3f}"),
        ("max |e_psi| [rad]", f"{m['max_abs_e_psi']:.3f}"),
        ("mean speed [m/s]", f"{m['mean_speed']:.2f}"),
        ("solve median / p95 [ms]", f"{m['solve_time_median'] * 1e3:.2f} / {m['solve_time_p95'] * 1e3:.2f}"),
        ("infeasible steps", f"{m['infeasible_steps']} of {m['steps']}"),
        ("corridor violations", f"{m['corridor_violation_steps']}"),
        ("body past the edge [m]", "-" if m["max_body_overshoot"] != m["max_body_overshoot"]
         else f"{m['max_body_overshoot']:.3f}"),
        ("real-time overruns", f"{m['realtime_overruns']} (worst step {m['worst_step_time'] * 1e3:.1f} ms)"),
    ]
    w = max(len(k) for k, _ in rows)
    return "\n".join(f"  {k:<{w}}  {v}" for k, v in rows)


def _load_with_overrides(args: argparse.Namespace):
    from mpc_tracking.cli.options import parse_set_option
    from mpc_tracking.scenario.core import load_scenario

    sc = load_scenario(args.scenario)
    overrides: dict[str, Any] = {}
    if getattr(args, "plant", None):  # first, so that --set plant.params.X=... applies to the new plant
        overrides["plant.name"] = args.plant
        overrides["plant.params"] = {}
    overrides.update(parse_set_option(s) for s in (getattr(args, "set", None) or []))
    return sc.with_overrides(overrides) if overrides else sc


def _simulate(args: argparse.Namespace, sc):
    from mpc_tracking.scenario.build import build
    from mpc_tracking.scenario.core import expected_duration, run_scenario

    built = build(sc)
    on_step, close = _progress(args, expected_duration(sc, built[0]), sc.name)
    try:
        return run_scenario(sc, on_step, built=built)
    finally:
        close()


def _finish(args: argparse.Namespace, result, out: Path, sc) -> int:
    from mpc_tracking.cli.outputs import write_run_files
    from mpc_tracking.viz.animation import animate

    _say(args, _summary_table(result))
    files = write_run_files(result, out, plots=sc.outputs.plots, scenario=sc.to_dict(),
                            log=lambda f: _say(args, f"wrote {f}"))
    an = sc.outputs.animation
    if an.file and len(result):
        f = animate(result, out / an.file, fps=an.fps, speed=an.speed, every=an.every)
        files.append(f)
        _say(args, f"wrote {f}")
    if result.reason == "time_limit" and sc.simulation.t_max is not None:
        _say(args, f"stopped at the requested simulation.t_max = {sc.simulation.t_max:g} s")
        return 0
    if not result.success:
        t = result.series["t"][-1] if len(result) else 0.0
        why = f"{result.reason}: {result.message}" if result.message else str(result.reason)
        print(f"mpc-tracking: run failed: {why} at t = {t:.2f} s (partial results in {out})", file=sys.stderr)
        return 1
    return 0


# ---------------------------------------------------------------------- commands
def _cmd_demo(args: argparse.Namespace) -> int:
    from mpc_tracking.cli.demo import run_default_demo

    out = Path(args.out)
    result, files = run_default_demo(out, horizon=args.horizon, laps=args.laps)
    info = result.info
    print(f"mpc-tracking demo: {info['path']} with plant {info['plant']}, horizon N = {info['horizon']}")
    print(result.summary())
    for f in files:
        print(f"wrote {f}")
    return 0 if result.success else 1


def _cmd_run(args: argparse.Namespace) -> int:
    from mpc_tracking.cli.outputs import prepare_folder

    sc = _load_with_overrides(args)
    out = prepare_folder(args.out or sc.outputs.folder)
    if args.no_plots:
        sc = sc.with_overrides({"outputs.plots": []})
    result = _simulate(args, sc)
    return _finish(args, result, out, sc)


def _cmd_check(args: argparse.Namespace) -> int:
    if args.keys:
        from mpc_tracking.scenario.schema import scenario_keys

        rows = scenario_keys()
        w = max(len(k) for k, *_ in rows)
        for key, _kind, default, doc in rows:
            print(f"{key:<{w}}  {default!r:<22} {doc}")
        return 0
    if args.scenario is None:
        raise InputError("check: give a SCENARIO.yaml (or --keys to list every key)")
    sc = _load_with_overrides(args)
    from mpc_tracking.scenario.build import build
    from mpc_tracking.simulation import check_simulation

    # everything `run` does short of simulating: path, corridor, vehicle, plant, actuator,
    # controller, and the simulation's own checks of its arguments
    path, mpc, plant, _actuator, kw = build(sc)
    check_simulation(path, mpc, plant, **kw)
    print(sc.to_yaml(), end="")
    return 0


def _cmd_animate(args: argparse.Namespace) -> int:
    from mpc_tracking.cli.outputs import prepare_folder
    from mpc_tracking.viz.animation import FORMATS, animate, available_formats

    src, out = Path(args.source), Path(args.out)
    if out.suffix.lower() not in FORMATS:
        raise InputError(f"--out {out}: unknown animation format {out.suffix!r}; expected one of {', '.join(FORMATS)}")
    reason = available_formats()[out.suffix.lower()]
    if reason is not None:
        raise InputError(f"--out {out}: {reason}")
    if not src.is_file():
        raise InputError(f"{src}: no such file (expected a result .npz or a scenario .yaml)")
    prepare_folder(out.parent)
    if src.suffix == ".npz":
        from mpc_tracking.results import SimulationResult

        result = SimulationResult.load(src)
    elif src.suffix in (".yaml", ".yml"):
        args.scenario = str(src)
        result = _simulate(args, _load_with_overrides(args))
    else:
        raise InputError(f"{src}: expected a result .npz (mpc-tracking run) or a scenario .yaml, got {src.suffix!r}")
    on_frame, close = _frame_progress(args)
    try:
        f = animate(result, out, fps=args.fps, speed=args.speed, every=args.every, dpi=args.dpi,
                    window=args.window, progress=on_frame)
    finally:
        close()
    _say(args, f"wrote {f}")
    return 0


def _frame_progress(args: argparse.Namespace):
    if args.quiet or not sys.stderr.isatty():
        return None, lambda: None
    from tqdm import tqdm

    bar = tqdm(desc="frames", unit="frame", leave=False, file=sys.stderr)

    def on_frame(i: int, n: int) -> None:
        bar.total = n
        bar.update(1)

    return on_frame, bar.close


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (tuple, list)):
        return " .. ".join(_fmt(x) for x in v)
    return str(v)


def _describe(path) -> str:
    """The path's :meth:`~mpc_tracking.paths.reference_path.ReferencePath.describe` as an aligned table."""
    return "\n".join(f"  {k:<18} {_fmt(v)}" for k, v in path.describe().items())


def _cmd_path_show(args: argparse.Namespace) -> int:
    from mpc_tracking.cli.outputs import prepare_folder, save_figure
    from mpc_tracking.paths.io import load_path
    from mpc_tracking.paths.speed_profile import speed_profile
    from mpc_tracking.viz.plotting import plot_path_view

    path = load_path(args.source, ds=args.ds)
    print(_describe(path))
    out = Path(args.out) if args.out else Path("out") / f"path_{path.name}.png"
    prepare_folder(out.parent)
    profile = speed_profile(path, v_max=args.v_max, a_y_max=args.a_y_max, a_max=args.accel_max,
                            a_brake=args.decel_max)
    obstacles = None
    if getattr(path, "obstacles", None):
        from mpc_tracking.scenario.build import obstacle_records

        obstacles = obstacle_records(None, path)
    fig, _ = plot_path_view(path, v_max=args.v_max, a_y_max=args.a_y_max, v_profile=profile, obstacles=obstacles)
    print(f"wrote {save_figure(fig, out)}")
    return 0


def _cmd_path_list(args: argparse.Namespace) -> int:
    from mpc_tracking.paths.bundled import list_bundled

    for name in list_bundled():
        print(name)
    return 0


# ---------------------------------------------------------------------- parser
def _add_scenario_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override a scenario value, e.g. --set controller.horizon=50 (repeatable; YAML values)")
    p.add_argument("--plant", metavar="NAME", help="plant to simulate (replaces plant.name, clears plant.params)")


def _add_demo(sub) -> None:
    d = sub.add_parser("demo", help="closed-loop demo on the bundled default path",
                       description="Drive one lap of the bundled default path and write track/time-series PNGs.")
    d.add_argument("--out", default="out/demo", help="output folder (default: out/demo)")
    d.add_argument("--horizon", type=int, default=30, help="MPC horizon N (default 30)")
    d.add_argument("--laps", type=int, default=1, help="laps to drive (default 1)")
    d.set_defaults(func=_cmd_demo)


def _add_run(sub) -> None:
    r = sub.add_parser("run", help="run a scenario file", description=(
        "Run a scenario and write result.npz, timeseries.csv, metrics.json, scenario.yaml and plots. "
        "Exit code 1 when the run does not reach its goal (files are still written)."))
    r.add_argument("scenario", metavar="SCENARIO.yaml", help="scenario file (see demos/*.yaml)")
    _add_scenario_options(r)
    r.add_argument("--out", metavar="DIR", help="output folder (default: outputs.folder of the scenario)")
    r.add_argument("--no-plots", action="store_true", help="write data files only")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    r.set_defaults(func=_cmd_run)
    c = sub.add_parser("check", help="validate a scenario file and print it resolved",
                       description="Validate a scenario (with overrides): build everything `run` would (path, "
                                   "corridor, vehicle, plant, actuator, controller) and check the simulation's "
                                   "arguments, short of simulating; print the resolved YAML.")
    c.add_argument("scenario", metavar="SCENARIO.yaml", nargs="?")
    c.add_argument("--keys", action="store_true", help="list every scenario key with its default and meaning")
    _add_scenario_options(c)
    c.set_defaults(func=_cmd_check)


def _add_animate(sub) -> None:
    a = sub.add_parser("animate", help="animate a result (.npz) or a scenario (.yaml) as GIF/MP4",
                       description="Car rectangle + safety ellipse + predicted horizon + corridor, as GIF or MP4.")
    a.add_argument("source", metavar="RESULT_OR_SCENARIO",
                   help="result.npz from `run`, or a scenario .yaml to run first")
    a.add_argument("--out", required=True, metavar="FILE", help="run.gif (Pillow) or run.mp4 (imageio-ffmpeg)")
    a.add_argument("--fps", type=float, default=20.0, help="frames per second (default 20)")
    a.add_argument("--speed", type=float, default=1.0, help="playback speed vs real time (default 1)")
    a.add_argument("--every", type=int, default=None, help="use every n-th control step (default from fps, speed)")
    a.add_argument("--dpi", type=int, default=80, help="resolution, 8x6 inch frames (default 80 -> 640x480)")
    a.add_argument("--window", type=float, default=None,
                   help="half-width [m] of a view following the car; 0 = whole path (default: follow on paths > 150 m)")
    _add_scenario_options(a)
    a.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    a.set_defaults(func=_cmd_animate)


def _add_path(sub) -> None:
    p = sub.add_parser("path", help="inspect reference paths", description="Inspect reference paths.")
    psub = p.add_subparsers(dest="path_command", metavar="ACTION", required=True)
    s = psub.add_parser("show", help="plot a path (plan view, curvature, speed limit, widths) and describe it",
                        description="Plot a path with curvature, speed profile and widths; print its description.")
    s.add_argument("source", metavar="FILE|NAME", help="path file or bundled name (mpc-tracking path list)")
    s.add_argument("--out", metavar="FILE.png", help="figure file (default out/path_NAME.png)")
    s.add_argument("--ds", type=float, default=0.5, help="waypoint spacing [m] (default 0.5)")
    s.add_argument("--v-max", type=float, default=20.0, help="top speed of the speed profile [m/s] (default 20)")
    a_y_max = MPCSettings.a_y_max  # the controller's default
    s.add_argument("--a-y-max", type=float, default=a_y_max,
                   help=f"lateral acceleration limit [m/s^2] (default {a_y_max:g}, as the controller)")
    s.add_argument("--accel-max", type=float, default=3.0, help="acceleration limit [m/s^2] (default 3)")
    s.add_argument("--decel-max", type=float, default=6.0, help="braking limit [m/s^2] (default 6)")
    s.set_defaults(func=_cmd_path_show)
    lst = psub.add_parser("list", help="list the bundled paths", description="List the bundled paths.")
    lst.set_defaults(func=_cmd_path_list)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mpc-tracking", description="Spatial MPC path tracking: run, tune, plot.")
    p.add_argument("-v", "--verbose", action="store_true", help="log library messages")
    from importlib.metadata import PackageNotFoundError, version

    try:  # the installed distribution's (setup.cfg reads it from mpc_tracking.__version__)
        release = version("mpc_tracking")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree without installing
        release = "unknown (not installed)"
    p.add_argument("--version", action="version", version=f"%(prog)s {release}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    _add_demo(sub)
    _add_run(sub)
    _add_animate(sub)
    _add_path(sub)
    add_sweep_command(sub)
    add_model_commands(sub)
    add_identify_command(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.INFO if args.verbose else logging.ERROR if getattr(args, "quiet", False) else logging.WARNING
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except (MPCTrackingError, OSError) as exc:
        text = " ".join(str(exc).split())
        print(f"mpc-tracking: error: {text}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
