"""
Time-optimal vs tracking
========================

The same car and track, once following the speed reference, once minimising lap time (the MPC
trades lateral position for speed inside the corridor). Both start at the same speed from the
same pose, so the lap times compare like for like.

A notebook that runs as downloaded; as a script: ``python demos/time_optimal.py``.
"""

# %%
# The two runs
# ------------
import os

import numpy as np

import mpc_tracking as mt
from mpc_tracking.viz.plotting import new_figure, plot_path

T_MAX = float(os.environ.get("MPC_TRACKING_DEMO_T_MAX", 0)) or None  # [s]; None: the whole lap
V0 = 10.0  # [m/s] the start speed of both runs

SCENARIOS = {
    "time_optimal.yaml": {
        "name": "time_optimal",
        "path": {"source": "oval", "ds": 0.5},
        "plant": {"name": "kinematic_bicycle"},
        "controller": {"mode": "time_optimal", "horizon": 40, "time_weight": 10.0, "Q": [0.05, 1.0, 0.0],
                       "v_max": 20.0, "a_y_max": 6.0, "accel_max": 4.0, "decel_max": 6.0, "delta_rate_max": 0.8,
                       "corridor_margin": 0.3},
        "simulation": {"laps": 1},
    },
}
base = mt.load_scenario(SCENARIOS["time_optimal.yaml"]).with_overrides({"simulation.t_max": T_MAX,
                                                                        "simulation.v0": V0})
runs = {mode: mt.run_scenario(base.with_overrides({"controller.mode": mode})) for mode in ("tracking", "time_optimal")}
for mode, r in runs.items():
    lap = f"{r.lap_times[0]:.2f} s" if r.lap_times else "-"
    print(f"{mode:<13} lap {lap}, mean speed {r.metrics['mean_speed']:.2f} m/s, "
          f"RMS e_y {r.metrics['rms_e_y'] * 100:.1f} cm")

# %%
# Driven lines and speeds
# -----------------------
fig = new_figure(figsize=(13, 5.5), layout="constrained")
ax_map, ax_v = fig.subplots(1, 2, width_ratios=(1.2, 1.0))
plot_path(runs["tracking"].path, ax=ax_map)
for (mode, r), colour in zip(runs.items(), ("tab:blue", "tab:red"), strict=True):
    ax_map.plot(r.x, r.y, color=colour, lw=1.5, label=mode)
    order = np.argsort(r.s)
    ax_v.plot(r.s[order], r.v[order], ".", ms=2, color=colour, label=mode)
ax_map.legend(loc="upper right", fontsize=8)
ax_map.set_title("driven lines")
ax_v.set(xlabel="s [m]", ylabel="v [m/s]", title="speed along the path")
ax_v.legend()
fig  # noqa: B018 (the last expression of a cell is shown)
