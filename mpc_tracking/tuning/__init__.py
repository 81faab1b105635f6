"""Parameter sweeps over scenarios: grids, executors (serial, processes, Dask), streaming rows, analysis."""
from __future__ import annotations

from mpc_tracking.tuning.sweep import SweepResult, sweep

__all__ = ["SweepResult", "sweep"]
