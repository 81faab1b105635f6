"""Animation speed: a 60 s closed-loop run at 20 Hz (1201 control steps) written as GIF and MP4.

Prints JSON: frames, wall time per format, ms per frame, and the simulation time of the same run
(for a ratio measured in the same process). Runs on the bundled oval (whole-track view) and,
when ../shared/tracks/Monza.csv exists, on Monza (a view following the car).

    python benchmarks/bench_animation.py
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from mpc_tracking.viz.animation import animate, available_formats
from mpc_tracking.scenario.core import default_scenario, run_scenario

SHARED = Path(__file__).resolve().parents[2] / "shared" / "tracks"


def bench(name: str, overrides: dict) -> dict:
    sc = default_scenario().with_overrides({"simulation.t_max": 60.0, "simulation.laps": 10, **overrides})
    t0 = time.perf_counter()
    result = run_scenario(sc)
    sim = time.perf_counter() - t0
    row = {"track": name, "steps": len(result), "control_period_s": result.info["control_period"], "simulate_s": round(sim, 2)}
    with tempfile.TemporaryDirectory() as d:
        for suffix in (".gif", ".mp4"):
            if available_formats()[suffix] is not None:
                row[suffix[1:]] = "unavailable"
                continue
            t0 = time.perf_counter()
            out = animate(result, Path(d) / f"run{suffix}")
            dt = time.perf_counter() - t0
            row[f"{suffix[1:]}_s"] = round(dt, 2)
            row[f"{suffix[1:]}_ms_per_frame"] = round(1e3 * dt / len(result), 2)
            row[f"{suffix[1:]}_MB"] = round(out.stat().st_size / 1e6, 2)
            row[f"{suffix[1:]}_vs_simulate"] = round(dt / sim, 2)
    return row


rows = [bench("oval", {})]
if (SHARED / "Monza.csv").is_file():
    rows.append(bench("Monza", {"path.source": str(SHARED / "Monza.csv"), "path.ds": 1.0, "controller.v_max": 25.0,
                                "controller.horizon": 40, "simulation.e_y0": 0.0}))
print(json.dumps({"benchmark": "animation of a 60 s run at 20 Hz (fps 20, speed 1, every 1, 640x480)", "runs": rows}, indent=2))
