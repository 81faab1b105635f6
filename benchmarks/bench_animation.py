"""Animation speed: a 60 s closed-loop run at 20 Hz (1201 control steps) written as GIF and MP4.

Prints JSON (with a ``provenance`` block): frames, wall time per format, ms per frame, and the
simulation time of the same run (for a ratio measured in the same process). Runs on the bundled
oval (whole-track view) and, when ../shared/tracks/Monza.csv exists, on Monza (a view following
the car). ``--save`` also writes benchmarks/results/animation.json; ``--t-max`` shortens the runs
(a quick check, not comparable with the saved figures).

    python benchmarks/bench_animation.py [--t-max 60] [--save]
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from _provenance import RESULTS, dumps, finish, provenance, save_json
from _shared import shared_dir

import mpc_tracking as mt
from mpc_tracking.viz.animation import available_formats

SHARED = shared_dir("tracks")


def bench(name: str, overrides: dict, t_max: float) -> dict:
    """Simulate ``t_max`` seconds of the default scenario with ``overrides``, then time GIF and MP4 writing."""
    sc = mt.default_scenario().with_overrides({"simulation.t_max": t_max, "simulation.laps": 10, **overrides})
    t0 = time.perf_counter()
    result = mt.run_scenario(sc)
    sim = time.perf_counter() - t0
    row = {"track": name, "steps": len(result), "control_period_s": result.info["control_period"],
           "simulate_s": round(sim, 2)}
    with tempfile.TemporaryDirectory() as d:
        for suffix in (".gif", ".mp4"):
            if available_formats()[suffix] is not None:
                row[suffix[1:]] = "unavailable"
                continue
            t0 = time.perf_counter()
            out = result.animate(Path(d) / f"run{suffix}")
            dt = time.perf_counter() - t0
            row[f"{suffix[1:]}_s"] = round(dt, 2)
            row[f"{suffix[1:]}_ms_per_frame"] = round(1e3 * dt / len(result), 2)
            row[f"{suffix[1:]}_MB"] = round(out.stat().st_size / 1e6, 2)
            row[f"{suffix[1:]}_vs_simulate"] = round(dt / sim, 2)
    return row


MONZA = {"path.source": str(SHARED / "Monza.csv"), "path.ds": 1.0, "controller.v_max": 25.0,
         "controller.horizon": 40, "simulation.e_y0": 0.0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t-max", type=float, default=60.0, help="simulated time per run [s]")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/animation.json")
    a = ap.parse_args()
    prov = provenance()
    rows = [bench("oval", {}, a.t_max)]
    if (SHARED / "Monza.csv").is_file():
        rows.append(bench("Monza", MONZA, a.t_max))
    out = {"provenance": finish(prov),
           "benchmark": f"animation of a {a.t_max:g} s run at 20 Hz (fps 20, speed 1, every 1, 640x480)",
           "runs": rows}
    print(dumps(out))
    if a.save:
        save_json(RESULTS / "animation.json", out)


if __name__ == "__main__":
    main()
