"""Obstacle avoidance: obstacles narrow the corridor and the MPC plans around them.

Part 1: three circles placed on the oval by the scenario file (demos/obstacles.yaml). Part 2: the
bundled `hairpin_slalom` course, whose path file carries its own cones and a block, so the MPC has
to pick a gap and keep it over the horizon. The car (rectangle about its rear axle) and its
safety ellipse are drawn at the passing instants; the predicted horizon in orange.

Your own obstacle source: any object with ``bounds(s, t=None, e_y0=None) -> (lb, ub)`` (raw free
space in e_y along the path) can be given to ``SpatialMPC(path, vehicle, settings, corridor=...)``;
see mpc_tracking.environment.corridor for circles, moving circles, polygons and occupancy grids.

    python demos/obstacle_avoidance.py [--t-max S]
"""
import numpy as np
from _common import parse_args, save, scenario

from mpc_tracking.scenario.core import run_scenario
from mpc_tracking.viz.plotting import plot_timeseries, plot_track, scenario_obstacles


def passing_instants(result) -> list[int]:
    """Control steps where the car is closest to each obstacle (circles: centre; polygons: mean vertex)."""
    xy = np.column_stack([result.x, result.y])
    out = set()
    for ob in scenario_obstacles(result):
        c = np.asarray(ob["center"] if ob.get("center") is not None else np.mean(ob["points"], axis=0))
        out.add(int(np.argmin(np.hypot(*(xy - c).T))))
    return sorted(out)


args = parse_args("obstacle_avoidance", __doc__.splitlines()[0])
for label, file, overrides in (
    ("obstacles", "obstacles.yaml", {}),
    ("slalom", "obstacles.yaml",
     {"path.source": "hairpin_slalom", "environment.obstacles": [], "controller.v_max": 8.0}),
):
    sc = scenario(file, args, **overrides)
    result = run_scenario(sc)
    print(f"{label}: {result.path.name}, {len(scenario_obstacles(result))} obstacles")
    print(result.summary())
    if len(result) == 0:
        continue
    fig, ax = plot_track(result, instants=passing_instants(result))
    save(fig, args, f"{label}.png")
    fig, _ = plot_timeseries(result)
    fig.tight_layout()
    save(fig, args, f"{label}_timeseries.png")
