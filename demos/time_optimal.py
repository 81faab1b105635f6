"""Time-optimal vs tracking: the same car and track, once following the speed reference, once
minimising lap time (the MPC trades lateral position for speed inside the corridor). Both start
at the same speed V0 from the same pose, so the lap times compare like for like.

    python demos/time_optimal.py [--t-max S]
"""
import numpy as np
from _common import HEADER, parse_args, row, save, scenario

from mpc_tracking.scenario.core import run_scenario
from mpc_tracking.viz.plotting import new_figure, plot_path

V0 = 10.0  # [m/s] the start speed of both runs (each mode would otherwise start at its own reference)
args = parse_args("time_optimal", __doc__.splitlines()[0])
runs = {}
for mode in ("tracking", "time_optimal"):
    sc = scenario("time_optimal.yaml", args, **{"controller.mode": mode, "simulation.v0": V0})
    runs[mode] = run_scenario(sc)
print(HEADER)
for mode, r in runs.items():
    print(row(mode, r))

fig = new_figure(figsize=(13, 5.5), layout="constrained")
ax_map, ax_v = fig.subplots(1, 2, width_ratios=(1.2, 1.0))
plot_path(runs["tracking"].path, ax=ax_map)
for (mode, r), col in zip(runs.items(), ("tab:blue", "tab:red"), strict=True):
    ax_map.plot(r.x, r.y, color=col, lw=1.5, label=mode)
    order = np.argsort(r.s)
    ax_v.plot(r.s[order], r.v[order], ".", ms=2, color=col, label=mode)
ax_map.legend(loc="upper right", fontsize=8)
ax_map.set_title("driven lines")
ax_v.set_xlabel("s [m]")
ax_v.set_ylabel("v [m/s]")
ax_v.legend()
ax_v.set_title("speed along the path")
save(fig, args, "time_optimal_vs_tracking.png")
