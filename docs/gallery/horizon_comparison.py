"""
Horizon comparison: accuracy against solve time
===============================================

The quickstart scenario, started on the line and driven faster (``v_max`` 16 m/s, ``a_y_max``
6 m/s²), with prediction horizons N = 5, 10, 20 and 40 steps of 0.5 m. Too short a horizon
cannot see the bends coming; a longer one costs solve time.

A notebook that runs as downloaded; as a script: ``python demos/horizon_comparison.py``. For a
whole grid of horizons (and any other setting) on all cores or a Dask cluster see
:doc:`/guide/sweeps`.
"""

# %%
# The runs
# --------
import os

import mpc_tracking as mt
from mpc_tracking.viz.plotting import new_figure

T_MAX = float(os.environ.get("MPC_TRACKING_DEMO_T_MAX", 0)) or None  # [s]; None: the whole lap

SCENARIOS = {
    "quickstart.yaml": {
        "name": "quickstart",
        "path": {"source": "oval", "ds": 0.5},
        "vehicle": {"preset": "car"},
        "plant": {"name": "kinematic_bicycle", "params": {}},
        "controller": {"horizon": 30, "mode": "tracking", "v_max": 12.0, "a_y_max": 4.0, "accel_max": 3.0,
                       "decel_max": 5.0, "delta_rate_max": 0.6},
        "simulation": {"laps": 1, "e_y0": 1.0},
    },
}
base = mt.load_scenario(SCENARIOS["quickstart.yaml"]).with_overrides({
    "simulation.t_max": T_MAX, "simulation.e_y0": 0.0, "controller.v_max": 16.0, "controller.a_y_max": 6.0,
    "controller.ds": 0.5})
horizons = (5, 10, 20, 40)
runs = {N: mt.run_scenario(base.with_overrides({"controller.horizon": N})) for N in horizons}
for N, r in runs.items():
    m = r.metrics
    print(f"N = {N:>2}: {m['reason']:<10} RMS e_y {m['rms_e_y'] * 100:5.2f} cm, max {m['max_abs_e_y'] * 100:5.1f} cm, "
          f"median solve {m['solve_time_median'] * 1e3:5.2f} ms")

# %%
# Lateral error, and accuracy against cost
# ----------------------------------------
fig = new_figure(figsize=(12, 4.5), layout="constrained")
ax_e, ax_m = fig.subplots(1, 2)
for N, r in runs.items():
    ax_e.plot(r.t, r.e_y, label=f"N = {N}")
ax_e.set(xlabel="t [s]", ylabel="e_y [m]", title="lateral error")
ax_e.legend()
ax_m.plot(horizons, [runs[N].metrics["rms_e_y"] * 100 for N in horizons], "o-", color="tab:blue")
ax_m.set_xlabel("horizon N")
ax_m.set_ylabel("RMS e_y [cm]", color="tab:blue")
ax_t = ax_m.twinx()
ax_t.plot(horizons, [runs[N].metrics["solve_time_median"] * 1e3 for N in horizons], "s--", color="tab:red")
ax_t.set_ylabel("median solve time [ms]", color="tab:red")
ax_m.set_title("accuracy vs cost")
fig  # noqa: B018 (the last expression of a cell is shown)
