"""The ``mpc-tracking`` command."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from .errors import MPCTrackingError

__all__ = ["main", "build_parser"]


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_default_demo

    out = Path(args.out)
    result, files = run_default_demo(out, horizon=args.horizon, laps=args.laps)
    print(f"mpc-tracking demo: {result.info['path']} with plant {result.info['plant']}, horizon N = {result.info['horizon']}")
    print(result.summary())
    for f in files:
        print(f"wrote {f}")
    return 0 if result.success else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mpc-tracking", description="Spatial MPC path tracking: run, tune, plot.")
    p.add_argument("-v", "--verbose", action="store_true", help="log library messages")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    d = sub.add_parser("demo", help="closed-loop demo on the bundled default path")
    d.add_argument("--out", default="out/demo", help="output folder (default: out/demo)")
    d.add_argument("--horizon", type=int, default=30, help="MPC horizon N (default 30)")
    d.add_argument("--laps", type=int, default=1, help="laps to drive (default 1)")
    d.set_defaults(func=_cmd_demo)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except MPCTrackingError as exc:
        print(f"mpc-tracking: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"mpc-tracking: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
