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
