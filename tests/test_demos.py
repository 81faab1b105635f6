"""Every demo script runs (short duration) and writes its figures; they are run side by side."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

DEMOS = Path(__file__).resolve().parents[1] / "demos"
EXPECTED = {
    "quickstart": ["track.png", "timeseries.png", "quickstart.gif"],
    "race_track": ["track.png", "timeseries.png", "path.png", "race_track.gif"],
    "time_optimal": ["time_optimal_vs_tracking.png"],
    "plant_comparison": ["plant_comparison.png"],
    "horizon_comparison": ["horizon_comparison.png"],
    "obstacle_avoidance": ["obstacles.png", "slalom.png"],
}


def test_every_demo_is_listed():
    scripts = {p.stem for p in DEMOS.glob("*.py") if not p.stem.startswith("_")}
    assert scripts == set(EXPECTED)


_RUNNER = """
import runpy, sys, traceback
demos, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, demos)
failed = 0
for name in sys.argv[3:]:
    sys.argv = [f"{demos}/{name}.py", "--out", f"{out}/{name}"]
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except BaseException as exc:
        failed += 1
        print(f"DEMO FAILED {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        traceback.print_exc()
sys.exit(1 if failed else 0)
"""


def test_demos_smoke(tmp_path):
    """Each demo as `python demos/NAME.py --out DIR` with MPC_TRACKING_DEMO_T_MAX=1 (two processes,
    each running its demos one after the other through runpy, so the imports are paid twice, not six times)."""
    env = dict(os.environ, MPC_TRACKING_DEMO_T_MAX="1.0", MPLBACKEND="Agg")
    names = list(EXPECTED)
    procs = [
        subprocess.Popen([sys.executable, "-c", _RUNNER, str(DEMOS), str(tmp_path), *names[i::2]],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
        for i in range(2)
    ]
    failures = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        failures += [line for line in err.splitlines() if line.startswith("DEMO FAILED")]
        if p.returncode != 0 and not failures:
            failures.append(err[-500:])
    for name, files in EXPECTED.items():
        for f in files:
            path = tmp_path / name / f
            if not path.is_file():
                failures.append(f"{name}: {f} not written")
            elif f.endswith(".png") and np.asarray(Image.open(path).convert("RGB"), dtype=float).std() < 10:
                failures.append(f"{name}: {f} is blank")
    assert not failures, "\n".join(failures)
