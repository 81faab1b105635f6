"""The embedded default closed-loop demo (``mpc-tracking demo``)."""
from __future__ import annotations

from pathlib import Path

from mpc_tracking.cli.outputs import prepare_folder, write_plots
from mpc_tracking.results import SimulationResult
from mpc_tracking.scenario.core import default_scenario, run_scenario

__all__ = ["run_default_demo"]


def run_default_demo(out: Path, horizon: int = 30, laps: int = 1) -> tuple[SimulationResult, list[Path]]:
    """Drive the bundled default path with the kinematic bicycle (:func:`~mpc_tracking.scenario.core.default_scenario`)
    and write ``track.png`` and ``timeseries.png`` into ``out``.

    Parameters
    ----------
    out : Path
        Output folder (created).
    horizon : int
        MPC horizon N.
    laps : int
        Laps to drive.

    Returns
    -------
    result : SimulationResult
    files : list of Path
        The figures written.
    """
    folder = prepare_folder(out)
    sc = default_scenario().with_overrides({"controller.horizon": horizon, "simulation.laps": laps})
    result = run_scenario(sc)
    files = write_plots(result, folder, ("track", "timeseries"))
    return result, files
