"""The embedded default closed-loop demo (``mpc-tracking demo``)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

from .bundled import DEFAULT_PATH
from .models import create_model
from .models.spatial_bicycle import VehicleParams
from .mpc import SpatialMPC
from .mpc_settings import MPCSettings
from .path_io import load_path
from .results import SimulationResult
from .simulation import simulate

__all__ = ["run_default_demo"]


def run_default_demo(out: Path, horizon: int = 30, laps: int = 1) -> tuple[SimulationResult, list[Path]]:
    """Drive the bundled default path with the kinematic bicycle; write figures into ``out``.

    Returns the result and the files written.
    """
    matplotlib.use("Agg", force=False)
    path = load_path(DEFAULT_PATH, ds=0.5)
    vehicle = VehicleParams()
    settings = MPCSettings(horizon=horizon, v_max=12.0, a_y_max=4.0, delta_rate_max=0.6, accel_max=3.0, decel_max=5.0)
    mpc = SpatialMPC(path, vehicle, settings)
    plant = create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase, "delta_max": settings.delta_max})
    result = simulate(path, mpc, plant, laps=laps, e_y0=1.0)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    fig, _ = result.plot("track")
    f = out / "track.png"
    fig.savefig(f, dpi=120)
    files.append(f)
    fig, _ = result.plot("timeseries")
    f = out / "timeseries.png"
    fig.savefig(f, dpi=120)
    files.append(f)
    return result, files
