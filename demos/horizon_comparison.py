"""Horizon comparison: the quickstart scenario, started on the line and driven faster (v_max 16 m/s,
a_y 6 m/s^2), with prediction horizons N = 5, 10, 20, 40 (0.5 m steps) -- tracking error against
solve time. Too short a horizon cannot see the bends coming.

    python demos/horizon_comparison.py [--t-max S]
"""
from _common import HEADER, parse_args, row, save, scenario

from mpc_tracking.scenario.core import run_scenario
from mpc_tracking.viz.plotting import new_figure

args = parse_args("horizon_comparison", __doc__.splitlines()[0])
horizons = (5, 10, 20, 40)
base = {"simulation.e_y0": 0.0, "controller.v_max": 16.0, "controller.a_y_max": 6.0, "controller.ds": 0.5}
runs = {N: run_scenario(scenario("quickstart.yaml", args, **base, **{"controller.horizon": N})) for N in horizons}
print(HEADER)
for N, r in runs.items():
    print(row(f"N = {N}", r))

fig = new_figure(figsize=(12, 4.5), layout="constrained")
ax_e, ax_m = fig.subplots(1, 2)
for N, r in runs.items():
    ax_e.plot(r.t, r.e_y, label=f"N = {N}")
ax_e.set_xlabel("t [s]")
ax_e.set_ylabel("e_y [m]")
ax_e.legend()
ax_e.set_title("lateral error")
rms = [runs[N].metrics["rms_e_y"] * 100 for N in horizons]
med = [runs[N].metrics["solve_time_median"] * 1e3 for N in horizons]
ax_m.plot(horizons, rms, "o-", color="tab:blue")
ax_m.set_xlabel("horizon N")
ax_m.set_ylabel("RMS e_y [cm]", color="tab:blue")
ax_t = ax_m.twinx()
ax_t.plot(horizons, med, "s--", color="tab:red")
ax_t.set_ylabel("median solve time [ms]", color="tab:red")
ax_m.set_title("accuracy vs cost")
save(fig, args, "horizon_comparison.png")
