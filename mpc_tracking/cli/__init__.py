"""The ``mpc-tracking`` command: the only library code that prints."""
from __future__ import annotations

from mpc_tracking.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
