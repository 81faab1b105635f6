"""Quickstart: load a scenario file, run it, print the summary, write the plots and a GIF.

    python demos/quickstart.py            # one lap of the bundled oval
    python demos/quickstart.py --t-max 5  # a 5 s smoke run
"""
from _common import parse_args, save, scenario

from mpc_tracking.scenario.core import run_scenario
from mpc_tracking.viz.animation import animate
from mpc_tracking.viz.plotting import plot_timeseries, plot_track

args = parse_args("quickstart", __doc__.splitlines()[0])
sc = scenario("quickstart.yaml", args)
result = run_scenario(sc)
print(result.summary())
save(plot_track(result)[0], args, "track.png")
fig, _ = plot_timeseries(result)
fig.tight_layout()
save(fig, args, "timeseries.png")
result.save(args.out / "result.npz")
gif = animate(result, args.out / "quickstart.gif", speed=2.0)
print(f"wrote {gif}")
