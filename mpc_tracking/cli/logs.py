"""Drive-log commands: ``path from-log LOG --topic /odom --out path.csv`` and the ``run --mcap/--bag`` outputs.

Command-line glue only; the logic lives in :mod:`mpc_tracking.logs`.
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from mpc_tracking.cli.options import number

__all__ = ["add_path_from_log", "add_run_log_options", "write_run_logs"]


def _cmd_path_from_log(args: argparse.Namespace) -> int:
    from mpc_tracking.cli.outputs import prepare_folder
    from mpc_tracking.logs.trajectory import path_from_log
    from mpc_tracking.paths.io import write_path

    origin = tuple(args.origin) if args.origin else None
    lp = path_from_log(args.log, args.topic, ds=args.ds, smoothing=args.smoothing, origin=origin)
    out = Path(args.out)
    prepare_folder(out.parent)
    write_path(lp.path, out)
    print(lp.summary())
    geo = getattr(lp.path, "geo_origin", None)
    if geo is not None:
        print(f"  local frame      east/north [m] about lat {geo.lat:.8f}, lon {geo.lon:.8f} deg (transverse Mercator)")
    print(f"wrote {out}")
    return 0


def add_path_from_log(psub: Any) -> None:
    """Add ``from-log`` to the ``path`` subcommands (``psub``: an argparse subparsers action)."""
    f = psub.add_parser(
        "from-log", help="fit a reference path to the trajectory of a drive log (GNSS or odometry)",
        description="Read a ROS 2 bag (.mcap, .db3, rosbag2 folder) or CSV log, take the positions of a GNSS "
                    "(NavSatFix, converted to a local east-north frame) or odometry/pose topic, drop jumps, "
                    "outliers and standstill, keep the first lap, fit a smoothed path (a loop when the trace "
                    "closes) and write it; prints how far the path strays from the points.")
    f.add_argument("log", metavar="LOG", help="drive log (ROS 2 bag, MCAP or CSV with a time column)")
    f.add_argument("--topic", metavar="TOPIC", help="GNSS or odometry topic (default: the first GNSS, else odometry)")
    f.add_argument("--out", required=True, metavar="FILE.csv", help="path file to write (waypoints, lossless)")
    f.add_argument("--ds", type=number(gt=0, unit="m"), default=1.0, help="waypoint spacing [m] (default 1)")
    f.add_argument("--smoothing", type=number(ge=0, unit="m"), default=None,
                   help="RMS distance [m] the line may move (default: from the measured noise)")
    f.add_argument("--origin", type=float, nargs=2, metavar=("LAT", "LON"),
                   help="origin of the local frame of GNSS fixes [deg] (default: the first fix)")
    f.set_defaults(func=_cmd_path_from_log)


def add_run_log_options(r: argparse.ArgumentParser) -> None:
    """Add ``--mcap FILE`` and ``--bag DIR`` to ``run``."""
    r.add_argument("--mcap", metavar="FILE.mcap",
                   help="also write the run as MCAP (ROS 2 schemas: pose, TF, path, corridor, horizon, footprint, "
                        "commands, solver status) to open in Foxglove")
    r.add_argument("--bag", metavar="DIR",
                   help="also write the run as a ROS 2 bag folder (sqlite3) that read_log reads back")


def write_run_logs(args: argparse.Namespace, result: Any) -> list[Path]:
    """Write the ``--mcap`` / ``--bag`` files of a run (nothing without those options); returns them."""
    from mpc_tracking.logs.export import write_run

    files = []
    if getattr(args, "mcap", None):
        files.append(write_run(result, args.mcap, storage="mcap"))
    if getattr(args, "bag", None):
        files.append(write_run(result, args.bag, storage="sqlite3"))
    if not getattr(args, "quiet", False):
        for f in files:
            print(f"wrote {f}")
    return files


def add_identify_log_options(p: argparse.ArgumentParser) -> None:
    """Add ``--log``, ``--wheelbase`` and ``--base`` to ``identify``."""
    p.add_argument("--log", metavar="LOG",
                   help="identify from a recorded drive (ROS 2 bag, MCAP or CSV log) instead of a simulated plant: "
                        "speed lag and delay, acceleration/braking/power limits, steering offset and delay, and "
                        "(with --base) the axles' tyre stiffness and grip peak, where the drive excites them")
    p.add_argument("--wheelbase", type=number(gt=0, unit="m"),
                   help="with --log: wheelbase [m] (steering from the yaw rate; geometry of the vehicle file)")
    p.add_argument("--base", metavar="VEHICLE.yaml",
                   help="with --log: vehicle file giving what a log does not identify (geometry; the tyres where "
                        "the drive does not excite them)")


def run_identify_from_log(args: argparse.Namespace) -> int:
    """``identify --log``: fit, print the summary, write the vehicle file."""
    from mpc_tracking.identification.vehicle_file import load_vehicle_file
    from mpc_tracking.logs.identify import identify_from_log

    base = load_vehicle_file(args.base) if args.base else None
    if base is None and args.wheelbase is None:
        from mpc_tracking.errors import InputError

        raise InputError("identify --log: give --wheelbase L (m) or --base VEHICLE.yaml for the geometry")
    wheelbase = args.wheelbase if args.wheelbase is not None else base.params.l_f + base.params.l_r  # type: ignore
    result = identify_from_log(args.log, wheelbase=wheelbase, base=base)
    vf = result.vehicle_file(base, wheelbase=wheelbase)
    out = vf.to_yaml(args.out or f"{Path(args.log).stem}_vehicle.yaml")
    if not args.quiet:
        print(f"identified from {args.log}")
        print(result.summary())
        print(f"wrote {out}")
    return 0


def _cmd_replay(args: argparse.Namespace) -> int:
    from mpc_tracking.cli.outputs import prepare_folder, save_figure, write_csv
    from mpc_tracking.logs.replay import replay
    from mpc_tracking.scenario.build import build
    from mpc_tracking.scenario.core import load_scenario

    sc = load_scenario(args.scenario)
    path, mpc, _plant, _actuator, _kw = build(sc)
    res = replay(args.log, path, mpc, pose_topic=args.pose_topic, cmd_topic=args.cmd_topic)
    out = prepare_folder(args.out)
    files = [write_csv(out / "replay.csv", res.columns()), save_figure(res.plot()[0], out / "replay.png")]
    print(f"replayed {args.log} through the controller of {args.scenario}")
    print(res.summary())
    for f in files:
        print(f"wrote {f}")
    return 0


def add_replay_command(sub: Any) -> None:
    """Add ``replay LOG SCENARIO`` (``sub``: the argparse subparsers action)."""
    p = sub.add_parser(
        "replay", help="feed a log's states to a scenario's controller and compare its commands with the logged ones",
        description="Read a drive log, project every logged pose onto the scenario's path, step the scenario's "
                    "controller with it and write the logged and replayed commands (replay.csv, replay.png); "
                    "prints their agreement.")
    p.add_argument("log", metavar="LOG", help="drive log (ROS 2 bag, MCAP)")
    p.add_argument("scenario", metavar="SCENARIO.yaml", help="scenario whose path and controller to use")
    p.add_argument("--out", default="out/replay", metavar="DIR", help="output folder (default out/replay)")
    p.add_argument("--pose-topic", dest="pose_topic", metavar="TOPIC", help="odometry topic (default: the first)")
    p.add_argument("--cmd-topic", dest="cmd_topic", metavar="TOPIC", help="command topic (default: the first)")
    p.set_defaults(func=_cmd_replay)
