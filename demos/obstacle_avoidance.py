"""Obstacle avoidance: circular obstacles on the track narrow the corridor; the MPC plans around
them (car body + safety ellipse drawn at the passing instants).

The corridor comes from ``mpc_tracking.environment`` when this installation has it (the scenario's
``environment.obstacles``). Otherwise the demo plugs in a small corridor provider of its own --
which is also how to write one: any object with ``bounds(s, t=None, e_y0=None) -> (lb, ub)``
(raw free space in e_y along the path) can be passed to ``SpatialMPC(..., corridor=...)``.

    python demos/obstacle_avoidance.py [--t-max S]
"""
import numpy as np
from _common import parse_args, save, scenario

from mpc_tracking.mpc import SpatialMPC
from mpc_tracking.plotting import plot_timeseries, plot_track
from mpc_tracking.scenario import build, run_scenario
from mpc_tracking.simulation import simulate


class CircleCorridor:
    """Track widths minus static circles; each circle is passed on the side with the wider gap."""

    def __init__(self, path, obstacles, vehicle):
        self.path = path
        c = np.array([o["center"] for o in obstacles], dtype=float)
        r = np.array([o["radius"] for o in obstacles], dtype=float)
        proj = path.project(c[:, 0], c[:, 1])
        self.s_o, self.e_o, self.r = np.atleast_1d(proj.s), np.atleast_1d(proj.e_y), r
        q = path.interpolate(self.s_o)
        room_left = q["width_left"] - (self.e_o + r)
        room_right = (self.e_o - r) + q["width_right"]
        self.left = room_left >= room_right          # pass on the left of obstacle i
        self.ahead, self.behind = vehicle.length - vehicle.rear_overhang, vehicle.rear_overhang

    def bounds(self, s, t=None, e_y0=None):
        s = np.asarray(s, dtype=float)
        q = self.path.interpolate(s)
        lb, ub = -q["width_right"].copy(), q["width_left"].copy()
        for s_o, e_o, r, left in zip(self.s_o, self.e_o, self.r, self.left):
            d = s - s_o
            if self.path.closed:
                d = (d + 0.5 * self.path.length) % self.path.length - 0.5 * self.path.length
            # the body reaches `ahead` in front of and `behind` the reference point
            near = (d > -r - self.ahead) & (d < r + self.behind)
            half = np.where(near, r, 0.0)
            if left:
                lb = np.where(near, np.maximum(lb, e_o + half), lb)
            else:
                ub = np.where(near, np.minimum(ub, e_o - half), ub)
        return lb, ub


args = parse_args("obstacle_avoidance", __doc__.splitlines()[0])
sc = scenario("obstacles.yaml", args)
obstacles = [dict(o.__dict__) for o in sc.environment.obstacles]
try:
    import mpc_tracking.environment  # noqa: F401

    result = run_scenario(sc)
except ImportError:
    print("mpc_tracking.environment not available: using the demo's CircleCorridor")
    path, mpc, plant, actuator, kw = build(sc.with_overrides({"environment.obstacles": []}))
    mpc = SpatialMPC(path, mpc.vehicle, mpc.settings, corridor=CircleCorridor(path, obstacles, mpc.vehicle))
    result = simulate(path, mpc, plant, actuator, **kw)
    result.info["scenario"] = sc.to_dict()
print(result.summary())
# the instants closest to each obstacle
xy = np.column_stack([result.x, result.y])
instants = sorted({int(np.argmin(np.hypot(*(xy - o["center"]).T))) for o in obstacles})
fig, ax = plot_track(result, instants=instants, obstacles=obstacles)
save(fig, args, "obstacles.png")
fig, _ = plot_timeseries(result)
fig.tight_layout()
save(fig, args, "timeseries.png")
