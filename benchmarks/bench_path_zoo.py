"""A user's own paths, end to end: the path zoo of ``tests/paths/test_io_zoo.py`` as a table.

Each case is written as a plain x, y[, w_right, w_left] CSV, loaded with ``load_path`` (corner
polygons recognised and rounded, noisy traces smoothed, loops recognised) and driven one lap (or
to its end) by the kinematic MPC on the kinematic bicycle. Prints JSON rows: outcome, RMS/max
e_y, body overshoot, the largest deviation of the fitted path from the input polyline, and the
warnings the load and the run emitted. ``--save`` writes benchmarks/results/path_zoo.json.

    python benchmarks/bench_path_zoo.py [--save]
"""
from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

from _provenance import RESULTS, dumps, finish, provenance, save_json

import mpc_tracking as mt

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "paths"))
from test_io_zoo import ZOO, _write  # the cases live with their test


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/path_zoo.json")
    args = ap.parse_args()
    prov = provenance()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (pts, half_width) in ZOO.items():
            handler = _Collect()
            logging.getLogger("mpc_tracking").addHandler(handler)
            try:
                path = mt.load_path(_write(Path(tmp), name, pts, half_width))
                vehicle = mt.VehicleParams()
                mpc = mt.SpatialMPC(path, vehicle, mt.MPCSettings(horizon=30, v_max=12.0))
                plant = mt.create_model("kinematic_bicycle", {"wheelbase": vehicle.wheelbase})
                res = mt.simulate(path, mpc, plant, laps=1)
            finally:
                logging.getLogger("mpc_tracking").removeHandler(handler)
            m = res.metrics
            rows.append({"case": name, "input_points": len(pts), "closed": path.closed, "widths": half_width,
                         "outcome": m["reason"], "rms_e_y_m": m["rms_e_y"], "max_e_y_m": m["max_abs_e_y"],
                         "max_body_overshoot_m": m["max_body_overshoot"], "fit_deviation_m": path.fit_deviation,
                         "smoothing_m": path.smoothing, "warnings": handler.messages})
    report = {"rows": rows, "provenance": finish(prov)}
    print(dumps(report))
    if args.save:
        save_json(RESULTS / "path_zoo.json", report)


if __name__ == "__main__":
    main()
