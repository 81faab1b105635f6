"""``mpc-tracking models`` and ``mpc-tracking new-model NAME DIR`` (registered by :func:`add_model_commands`).

Command-line code: it writes to stdout; the logic lives in :mod:`mpc_tracking.models.scaffold`.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["add_model_commands"]


def _cmd_models(args: argparse.Namespace) -> int:
    from mpc_tracking.models.scaffold import describe_models

    sys.stdout.write(describe_models() + "\n")
    return 0


def _cmd_new_model(args: argparse.Namespace) -> int:
    from mpc_tracking.models.scaffold import new_model

    files = new_model(args.name, args.dir, overwrite=args.force)
    for f in files:
        sys.stdout.write(f"wrote {f}\n")
    sys.stdout.write(
        f"next: pip install -e {args.dir}   (then `mpc-tracking models` lists {args.name!r})\n"
    )
    return 0


def add_model_commands(sub: Any) -> None:
    """Add the ``models`` and ``new-model`` subparsers to ``sub`` (an argparse subparsers action)."""
    m = sub.add_parser("models", help="list the plants (motion models), built-in and plugins",
                       description="List registered motion models, including plugins and plugins that failed to load.")
    m.set_defaults(func=_cmd_models)
    n = sub.add_parser("new-model", help="write an installable motion-model plugin package",
                       description="Write a plugin package (pyproject with the mpc_tracking.models entry point, "
                                   "a MotionModel template with init/step/xdot, a test) into DIR.")
    n.add_argument("name", metavar="NAME", help="registry name (lowercase letters, digits, underscores)")
    n.add_argument("dir", metavar="DIR", help="target folder (created; must be empty unless --force)")
    n.add_argument("--force", action="store_true", help="write into a non-empty folder")
    n.set_defaults(func=_cmd_new_model)
