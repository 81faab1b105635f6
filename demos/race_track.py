"""Race track with real widths: a full-size car on the bundled full-size circuit (the oval when
this installation has none), speed profile from the path when available, plots and an animation
whose view follows the car.

    python demos/race_track.py [--t-max S] [--track NAME_OR_FILE]
"""
import sys

from _common import parse_args, save, scenario

from mpc_tracking.paths.bundled import list_bundled
from mpc_tracking.scenario.core import run_scenario
from mpc_tracking.viz.animation import animate
from mpc_tracking.viz.plotting import plot_path_view, plot_timeseries, plot_track

track = None
if "--track" in sys.argv:  # consumed here; the rest goes to the common options
    i = sys.argv.index("--track")
    track = sys.argv[i + 1]
    del sys.argv[i:i + 2]
args = parse_args("race_track", __doc__.splitlines()[0])
if track is None:
    circuits = [n for n in list_bundled() if any(w in n.lower() for w in ("circuit", "race", "grand_prix", "gp"))]
    track = circuits[0] if circuits else "oval"
    if not circuits:
        print("no full-size circuit bundled in this installation: driving the oval")
overrides = {"path.source": track}
try:
    import mpc_tracking.paths.speed_profile  # noqa: F401

    overrides["speed_profile.enabled"] = True
except ImportError:
    print("mpc_tracking.paths.speed_profile not available: the MPC limits speed by a_y_max itself")
sc = scenario("race_track.yaml", args, **overrides)
result = run_scenario(sc)
print(f"{result.path.name}: {result.path.length:.0f} m")
print(result.summary())
save(plot_track(result, instants=[])[0], args, "track.png")
fig, _ = plot_timeseries(result)
fig.tight_layout()
save(fig, args, "timeseries.png")
save(plot_path_view(result.path, v_max=sc.controller.v_max, a_y_max=sc.controller.a_y_max)[0], args, "path.png")
an = sc.outputs.animation
print(f"wrote {animate(result, args.out / an.file, fps=an.fps, speed=an.speed)}")
