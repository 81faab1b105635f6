"""The ``mpc-tracking`` command.

Subcommands: ``demo`` (embedded default run), ``run SCENARIO.yaml`` (run a scenario file, write
result/CSV/JSON/plots), ``animate RESULT_OR_SCENARIO --out run.gif|run.mp4``, ``path show`` /
``path list``, ``check SCENARIO.yaml`` (validate and print the resolved scenario), ``sweep``,
``models``, ``new-model``, ``identify`` (``--log``), ``path from-log``, ``replay``
(:mod:`mpc_tracking.cli.logs`), ``ros-node`` / ``ros-sim`` / ``ros-plant`` (ROS 2).

Exit codes (:data:`EXIT_POLICY`, shown by ``--help``; :mod:`mpc_tracking.cli.failures`): 0
success, 1 the run failed (or ``--strict`` and the body left the corridor / the controller
overran its period; an internal error), 2 bad input (one line on stderr naming the cause), 130
interrupted (143 on SIGTERM). No input ends in a traceback unless ``--debug`` asks for it.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mpc_tracking.cli.failures import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    classify,
    error_line,
    log_folder,
    sigterm_as_exception,
    write_error_log,
)
from mpc_tracking.cli.identify import add_identify_command
from mpc_tracking.cli.logs import add_path_from_log, add_replay_command, add_run_log_options, write_run_logs
from mpc_tracking.cli.models import add_model_commands
from mpc_tracking.cli.options import add_path_options, int_range, number, path_overrides
from mpc_tracking.cli.ros import add_ros_commands
from mpc_tracking.cli.sweep import add_sweep_command
from mpc_tracking.errors import InputError, MPCTrackingError, ScenarioError
from mpc_tracking.mpc.settings import MPCSettings

__all__ = ["main", "build_parser", "EXIT_POLICY", "strict_problems"]

#: the exit-code policy, as shown at the end of ``mpc-tracking --help``
EXIT_POLICY = """\
exit codes:
  0    success; a run/demo whose car body left the corridor or whose controller overran its
       control period still exits 0 (its summary says so) unless --strict is given
  1    the run failed: it did not reach its goal (partial files are written), a solver or
       simulation error, a disk error (the message names the path), out of memory,
       --strict with the body past the track edge, corridor slack used or real-time overruns,
       or an internal error (one line; the traceback goes to mpc-tracking-error.log in the
       output folder, else in the temporary folder; --debug prints it)
  2    bad input: usage, a flag value, a missing/unreadable/invalid/too large file or key
       (one line on stderr naming the file, key, value and what is allowed), an unreachable
       Dask scheduler
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM); files already written are kept
every failure prints exactly one line on stderr starting with "mpc-tracking"."""

#: the resolution range of ``animate --dpi`` (8 x 6 inch frames: 80 x 60 to 4800 x 3600 pixels)
MIN_DPI, MAX_DPI = 10, 600
#: a body corner further than this past the track edge [m] counts as leaving the corridor (--strict)
BODY_TOLERANCE = 1e-3


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


#: suffixes of scenario files (a YAML file that is a corner-point course is a path file)
_SCENARIO_SUFFIXES = (".yaml", ".yml")


def _is_course_yaml(p: Path) -> bool:
    """Whether the YAML file ``p`` is a corner-point course (``points:`` and no scenario section), not a scenario."""
    from mpc_tracking.fileio import read_yaml
    from mpc_tracking.scenario.schema import ScenarioBase

    try:
        data = read_yaml(p, error=ScenarioError, what="scenario file").data
    except MPCTrackingError:  # the scenario loader reports it (with its limits)
        return False
    from mpc_tracking.paths.course_yaml import COURSE_KEYS

    if not isinstance(data, dict) or set(ScenarioBase.__dataclass_fields__).intersection(data):
        return False
    return "points" in data or set(data) <= set(COURSE_KEYS)


def scenario_argument(source: str, errors: list | None = None):
    """The scenario a ``run``/``check``/``path show`` argument names: a scenario file, or a path
    (any path file, a YAML course, a bundled name) driven by the default scenario.

    Raises
    ------
    InputError
        No such file (and no such bundled name), with the nearest name that exists ("did you mean").
    """
    from mpc_tracking.paths.bundled import bundled_file, list_bundled
    from mpc_tracking.paths.io import missing_file_hint
    from mpc_tracking.scenario.core import load_scenario

    p = Path(source)
    if not p.exists():
        if not p.suffix and "/" not in source:
            if source in list_bundled():
                return _default_scenario_on(source)
            hint = missing_file_hint(p, bundled=False)
            if not hint:
                bundled_file(source)  # unknown bundled path 'ovl'; did you mean 'oval'? (available: ...)
            raise InputError(f"{source}: no such file or bundled path{hint}")
        if p.suffix.lower() in _SCENARIO_SUFFIXES:
            raise InputError(f"{source}: no such scenario file{missing_file_hint(p, bundled=False)}")
        raise InputError(f"{source}: no such file (expected a scenario .yaml, a path file or a bundled path name)"
                         f"{missing_file_hint(p)}")
    if p.suffix.lower() in _SCENARIO_SUFFIXES and not _is_course_yaml(p):
        return load_scenario(p, errors=errors)
    return _default_scenario_on(str(p))


def _default_scenario_on(source: str):
    """The default scenario (``mpc-tracking demo``) on the path ``source``, its output in ``out/<stem>``."""
    from mpc_tracking.scenario.core import default_scenario

    stem = Path(source).stem or "path"
    sc = default_scenario().with_overrides({
        "name": stem, "description": f"the default scenario (mpc-tracking demo) on the path {source}",
        "path.source": source, "path.ds": None, "outputs.folder": str(Path("out") / stem)})
    sc.source = f"the default scenario on {source}"
    return sc


def _load_with_overrides(args: argparse.Namespace, errors: list | None = None):
    from mpc_tracking.cli.options import parse_set_option

    sc = scenario_argument(args.scenario, errors=errors)
    overrides: dict[str, Any] = path_overrides(args)
    if getattr(args, "plant", None):  # first, so that --set plant.params.X=... applies to the new plant
        overrides["plant.name"] = args.plant
        overrides["plant.params"] = {}
    overrides.update(parse_set_option(s) for s in (getattr(args, "set", None) or []))
    return sc.with_overrides(overrides, errors=errors) if overrides else sc


def _simulate(args: argparse.Namespace, sc):
    from mpc_tracking.scenario.build import build
    from mpc_tracking.scenario.core import expected_duration, run_scenario

    built = build(sc)
    on_step, close = _progress(args, expected_duration(sc, built[0]), sc.name)
    try:
        return run_scenario(sc, on_step, built=built)
    finally:
        close()


def strict_problems(result) -> list[str]:
    """What ``--strict`` fails a run for: its body past the track edge, corridor slack used,
    real-time overruns (from :attr:`SimulationResult.metrics`); empty when none."""
    m = result.metrics
    out = []
    body = m.get("max_body_overshoot", math.nan)
    if body == body and body > BODY_TOLERANCE:
        out.append(f"the body went {body:.3f} m past the track edge")
    n = m.get("corridor_violation_steps", 0)
    if n:
        out.append(f"{n} step{'s' if n != 1 else ''} used corridor slack")
    n = m.get("realtime_overruns", 0)
    if n:
        period = m.get("control_period", math.nan)
        of = f" over the {period * 1e3:.0f} ms control period" if period == period else ""
        out.append(f"{n} real-time overrun{'s' if n != 1 else ''}{of} (worst step {m['worst_step_time'] * 1e3:.1f} ms)")
    return out


def _strict_outcome(args: argparse.Namespace, result, code: int) -> int:
    """Note corridor/real-time problems in the summary; with --strict they make a successful run exit 1."""
    problems = strict_problems(result)
    if not problems or code != 0:
        return code
    text = "; ".join(problems)
    if getattr(args, "strict", False):
        print(error_line(f"run failed --strict: {text}"), file=sys.stderr)
        return EXIT_FAILED
    _say(args, f"note: {text} (exit code 1 with --strict)")
    return code


def _finish(args: argparse.Namespace, result, staging, sc) -> int:
    """Write the run's files through ``staging`` (:func:`~mpc_tracking.cli.outputs.staged_folder`),
    move them into place, print what was written; returns the exit code of the outcome."""
    from mpc_tracking.cli.outputs import write_run_files
    from mpc_tracking.viz.animation import animate

    out = staging.target
    _say(args, _summary_table(result))
    write_run_files(result, staging.folder, plots=sc.outputs.plots, scenario=sc.to_dict())
    an = sc.outputs.animation
    if an.file and len(result):
        animate(result, staging.folder / an.file, fps=an.fps, speed=an.speed, every=an.every)
    for f in staging.commit():
        _say(args, f"wrote {f}")
    if result.reason == "time_limit" and sc.simulation.t_max is not None:
        _say(args, f"stopped at the requested simulation.t_max = {sc.simulation.t_max:g} s")
        return _strict_outcome(args, result, 0)
    if not result.success:
        t = result.series["t"][-1] if len(result) else 0.0
        why = f"{result.reason}: {result.message}" if result.message else str(result.reason)
        print(error_line(f"run failed: {why} at t = {t:.2f} s (partial results in {out})"), file=sys.stderr)
        return EXIT_FAILED
    return _strict_outcome(args, result, 0)


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
    if not result.success:
        print(error_line(f"demo failed: {result.reason}" + (f": {result.message}" if result.message else "")),
              file=sys.stderr)
        return EXIT_FAILED
    return _strict_outcome(args, result, 0)


def _cmd_run(args: argparse.Namespace) -> int:
    from mpc_tracking.cli.outputs import check_output_formats, prepare_folder, staged_folder

    sc = _load_with_overrides(args)
    check_output_formats(sc)  # before the run, as `check` does
    out = prepare_folder(args.out or sc.outputs.folder)
    if args.no_plots:
        sc = sc.with_overrides({"outputs.plots": []})
    with staged_folder(out, what=f"run of {args.scenario}") as staging:
        result = _simulate(args, sc)
        code = _finish(args, result, staging, sc)
    write_run_logs(args, result)
    return code


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
    from mpc_tracking.cli.outputs import check_output_formats
    from mpc_tracking.scenario.build import build
    from mpc_tracking.simulation import check_simulation

    # everything `run` does short of simulating: path, corridor, vehicle, plant, actuator,
    # controller, and the simulation's own checks of its arguments -- every problem, not the first
    errors: list[MPCTrackingError] = []
    sc = _load_with_overrides(args, errors)
    try:
        check_output_formats(sc)
    except MPCTrackingError as exc:
        errors.append(exc)
    path, mpc, plant, _actuator, kw = build(sc, errors)
    if path is not None and mpc is not None and plant is not None:
        try:
            check_simulation(path, mpc, plant, **kw)
        except MPCTrackingError as exc:
            errors.append(exc)
    errors = _distinct_problems(errors)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        listed = " | ".join(f"({i}) {' '.join(str(e).split())}" for i, e in enumerate(errors, 1))
        raise ScenarioError(f"{len(errors)} problems: {listed}")
    print(sc.to_yaml(), end="")
    return 0


def _distinct_problems(errors: list[MPCTrackingError]) -> list[MPCTrackingError]:
    """``errors`` without repeats: a problem found by the file check and again when the object is
    built (with and without the ``file:line:`` prefix) is listed once, with its line."""
    out: list[MPCTrackingError] = []
    seen: list[str] = []
    for exc in errors:
        text = " ".join(str(exc).split())
        if any(text == s or s.endswith(": " + text) or text.endswith(": " + s) for s in seen):
            continue
        seen.append(text)
        out.append(exc)
    return out


def _cmd_animate(args: argparse.Namespace) -> int:
    from mpc_tracking.cli.outputs import check_animation_file, prepare_folder
    from mpc_tracking.fileio import check_input_file
    from mpc_tracking.viz.animation import animate

    src, out = Path(args.source), check_animation_file(args.out, "--out")
    if not src.exists():
        raise InputError(f"{src}: no such file (expected a result .npz or a scenario .yaml)")
    check_input_file(src, what="result .npz or scenario .yaml")
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
    from mpc_tracking.paths.speed_profile import speed_profile
    from mpc_tracking.scenario.build import build_path, obstacle_records
    from mpc_tracking.viz.plotting import plot_path_view

    args.scenario = args.source  # a path (file or bundled name) or a scenario file, with the path flags
    sc = _load_with_overrides(args)
    path = build_path(sc)
    print(_describe(path))
    out = Path(args.out) if args.out else Path("out") / f"path_{path.name}.png"
    prepare_folder(out.parent)
    profile = speed_profile(path, v_max=args.v_max, a_y_max=args.a_y_max, a_max=args.accel_max,
                            a_brake=args.decel_max)
    obstacles = obstacle_records(sc, path) or None
    fig, _ = plot_path_view(path, v_max=args.v_max, a_y_max=args.a_y_max, v_profile=profile, obstacles=obstacles)
    print(f"wrote {save_figure(fig, out)}")
    return 0


def _cmd_path_list(args: argparse.Namespace) -> int:
    from mpc_tracking.paths.bundled import list_bundled

    for name in list_bundled():
        print(name)
    return 0


# ---------------------------------------------------------------------- parser
def _add_scenario_options(p: argparse.ArgumentParser, *, plant: bool = True) -> None:
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override a scenario value, e.g. --set controller.horizon=50 (repeatable; YAML values)")
    if plant:
        p.add_argument("--plant", metavar="NAME", help="plant to simulate (replaces plant.name, clears plant.params)")
    add_path_options(p)


def _add_strict(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when the car body went past the track edge, the controller used corridor slack "
                        "or overran its control period (default: exit 0, the summary notes it)")


def _add_demo(sub) -> None:
    d = sub.add_parser("demo", help="closed-loop demo on the bundled default path",
                       description="Drive one lap of the bundled default path and write track/time-series PNGs.")
    d.add_argument("--out", default="out/demo", help="output folder (default: out/demo)")
    d.add_argument("--horizon", type=int_range(1, 10000), default=30, help="MPC horizon N (default 30)")
    d.add_argument("--laps", type=int_range(1, 1000), default=1, help="laps to drive (default 1)")
    _add_strict(d)
    d.set_defaults(func=_cmd_demo)


def _add_run(sub) -> None:
    r = sub.add_parser("run", help="run a scenario file, or the default scenario on a path file", description=(
        "Run a scenario and write result.npz, timeseries.csv, metrics.json, scenario.yaml and plots. "
        "Given a path file (CSV, TUM, raceline, GPX/KML, a YAML course) or a bundled path name instead, run "
        "the default scenario (mpc-tracking demo) on it, writing to out/NAME. "
        "Exit code 1 when the run does not reach its goal (files are still written)."))
    r.add_argument("scenario", metavar="SCENARIO.yaml|PATH",
                   help="scenario file (see demos/*.yaml), or a path file or bundled name to drive")
    _add_scenario_options(r)
    r.add_argument("--out", metavar="DIR", help="output folder (default: outputs.folder of the scenario)")
    r.add_argument("--no-plots", action="store_true", help="write data files only")
    add_run_log_options(r)
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar, no summary")
    _add_strict(r)
    r.set_defaults(func=_cmd_run)
    c = sub.add_parser("check", help="validate a scenario file and print it resolved",
                       description="Validate a scenario (with overrides): build everything `run` would (path, "
                                   "corridor, vehicle, plant, actuator, controller) and check the simulation's "
                                   "arguments, short of simulating; print the resolved YAML.")
    c.add_argument("scenario", metavar="SCENARIO.yaml|PATH", nargs="?",
                   help="scenario file, or a path file or bundled name (checked with the default scenario)")
    c.add_argument("--keys", action="store_true", help="list every scenario key with its default and meaning")
    _add_scenario_options(c)
    c.set_defaults(func=_cmd_check)


def _add_animate(sub) -> None:
    a = sub.add_parser("animate", help="animate a result (.npz) or a scenario (.yaml) as GIF/MP4",
                       description="Car rectangle + safety ellipse + predicted horizon + corridor, as GIF or MP4.")
    a.add_argument("source", metavar="RESULT_OR_SCENARIO",
                   help="result.npz from `run`, or a scenario .yaml to run first")
    a.add_argument("--out", required=True, metavar="FILE", help="run.gif (Pillow) or run.mp4 (imageio-ffmpeg)")
    a.add_argument("--fps", type=number(gt=0, le=1000), default=20.0, help="frames per second (default 20)")
    a.add_argument("--speed", type=number(gt=0), default=1.0, help="playback speed vs real time (default 1)")
    a.add_argument("--every", type=int_range(1), default=None,
                   help="use every n-th control step (default from fps, speed)")
    a.add_argument("--dpi", type=int_range(MIN_DPI, MAX_DPI), default=80,
                   help=f"resolution, 8x6 inch frames ({MIN_DPI}..{MAX_DPI}; default 80 -> 640x480)")
    a.add_argument("--window", type=number(ge=0, unit="m"), default=None,
                   help="half-width [m] of a view following the car; 0 = whole path (default: follow on paths > 150 m)")
    _add_scenario_options(a)
    a.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    a.set_defaults(func=_cmd_animate)


def _add_path(sub) -> None:
    p = sub.add_parser("path", help="inspect reference paths", description="Inspect reference paths.")
    psub = p.add_subparsers(dest="path_command", metavar="ACTION", required=True)
    s = psub.add_parser("show", help="plot a path (plan view, curvature, speed limit, widths) and describe it",
                        description="Plot a path with curvature, speed profile and widths against the points it was "
                                    "fitted to; print its description. The path is built as a scenario builds it: "
                                    "the flags are the keys of a scenario's path: section.")
    s.add_argument("source", metavar="FILE|NAME|SCENARIO.yaml",
                   help="path file, bundled name (mpc-tracking path list), or a scenario file (its path: section)")
    s.add_argument("--out", metavar="FILE.png", help="figure file (default out/path_NAME.png)")
    _add_scenario_options(s, plant=False)
    s.add_argument("--v-max", type=number(gt=0, unit="m/s"), default=20.0,
                   help="top speed of the speed profile [m/s] (default 20)")
    a_y_max = MPCSettings.a_y_max  # the controller's default
    s.add_argument("--a-y-max", type=number(gt=0, unit="m/s^2"), default=a_y_max,
                   help=f"lateral acceleration limit [m/s^2] (default {a_y_max:g}, as the controller)")
    s.add_argument("--accel-max", type=number(gt=0, unit="m/s^2"), default=3.0,
                   help="acceleration limit [m/s^2] (default 3)")
    s.add_argument("--decel-max", type=number(gt=0, unit="m/s^2"), default=6.0,
                   help="braking limit [m/s^2] (default 6)")
    s.set_defaults(func=_cmd_path_show)
    lst = psub.add_parser("list", help="list the bundled paths", description="List the bundled paths.")
    lst.set_defaults(func=_cmd_path_list)
    add_path_from_log(psub)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="mpc-tracking", description="Spatial MPC path tracking: run, tune, plot.", epilog=EXIT_POLICY,
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-v", "--verbose", action="store_true", help="log library messages")
    p.add_argument("--debug", action="store_true",
                   help="log everything and print the traceback of an error before its one line "
                        "(also accepted after the subcommand)")
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
    add_replay_command(sub)
    add_ros_commands(sub, load=_load_with_overrides, finish=_finish)
    _add_everywhere(p, "--debug", help="as mpc-tracking --debug")
    for name in ("run", "demo"):
        sp = sub.choices[name]
        sp.epilog, sp.formatter_class = EXIT_POLICY, argparse.RawDescriptionHelpFormatter
    return p


def _add_everywhere(p: argparse.ArgumentParser, flag: str, help: str) -> None:
    """Accept a global ``store_true`` flag after any subcommand too (without resetting it when absent)."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sp in {id(c): c for c in action.choices.values()}.values():
                sp.add_argument(flag, action="store_true", default=argparse.SUPPRESS, help=help)
                _add_everywhere(sp, flag, help)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    See :data:`EXIT_POLICY`: 0 success, 1 the run failed, 2 bad input, 130 Ctrl-C (143 SIGTERM).
    Every error ends here as one line on stderr; none escapes as a traceback (``--debug`` prints it).
    """
    from mpc_tracking._startup import raise_from_now_on

    raise_from_now_on()  # the start-up guard (mpc_tracking/__init__.py) hands Ctrl-C back to this function
    try:
        parser = build_parser()
        args = parser.parse_args(None if argv is None else list(argv))  # usage errors: one line, SystemExit(2)
    except KeyboardInterrupt as exc:  # Ctrl-C while the command starts (imports)
        code, text = classify(exc)
        print(error_line(text), file=sys.stderr)
        return code
    debug = getattr(args, "debug", False)
    level = (logging.DEBUG if debug else logging.INFO if args.verbose
             else logging.ERROR if getattr(args, "quiet", False) else logging.WARNING)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    _warnings_as_log_lines()
    if not getattr(args, "func", None):
        parser.print_help()
        print(error_line("error: no command given (see mpc-tracking --help)"), file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        with sigterm_as_exception():
            return int(args.func(args))
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # the one place that turns any error into one line + an exit code
        return _report(exc, args, argv, debug)


def _show_warning(message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None,
                  line: str | None = None) -> None:
    """A library warning (Pillow's image size, multiprocessing, matplotlib fonts) as one log line."""
    logging.getLogger("py.warnings").warning("%s: %s", category.__name__, " ".join(str(message).split()))


def _warnings_as_log_lines() -> None:
    """Route :mod:`warnings` through :func:`_show_warning`: every warning is one ``WARNING py.warnings:``
    line (shown or hidden with the log level), never the two-line ``file:line: Warning`` + source."""
    import warnings

    warnings.showwarning = _show_warning


def _report(exc: BaseException, args: argparse.Namespace, argv: Sequence[str] | None, debug: bool) -> int:
    """Print the one stderr line for ``exc`` (and the traceback with --debug); return the exit code."""
    if isinstance(exc, BrokenPipeError):  # stdout closed (`mpc-tracking ... | head`): nobody is listening
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_FAILED
    code, text = classify(exc)
    if debug:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    if code < 0:  # a bug: the traceback goes to a file, the user gets one line
        if debug:
            text += " (traceback above)"
        else:
            log = write_error_log(exc, argv, log_folder(args))
            where = f"traceback written to {log}" if log is not None else "the traceback could not be written"
            text += f"; {where}; run with --debug to see it"
        code = EXIT_FAILED
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    print(error_line(text), file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
