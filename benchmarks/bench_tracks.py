"""Real-track figures: length, min radius, curvature noise before/after smoothing, load time, projection time.

Projection times per point: scalar calls with a hint (the closed loop's use), vectorized with
hints, and vectorized global (no hint), on points offset up to 3 m from the centre line. Ratios
are measured in the same run. Reads ../shared/tracks; prints JSON with a ``provenance`` block;
``--save`` also writes benchmarks/results/tracks.json.

    python benchmarks/bench_tracks.py [--save]
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _provenance import RESULTS, dumps, finish, provenance, save_json
from _shared import shared_dir

import mpc_tracking as mt

TRACKS = shared_dir("tracks")
SMOOTHING = 0.25  # m RMS: default for GPS-derived full-size centre lines
NOISE_WINDOW = 10.0  # m: curvature varying faster than this counts as noise


def best_of(fn: Callable[[], Any], repeat: int = 3) -> tuple[float, Any]:
    """Shortest wall time [s] of ``repeat`` calls of ``fn`` and the last call's return value."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def bench(f: Path) -> dict:
    """Figures of one TUM track file."""
    raw = mt.read_tum(f, ds=1.0, smoothing=0.0)
    t_load, p = best_of(lambda: mt.read_tum(f, ds=1.0, smoothing=SMOOTHING))
    t_load_raw, _ = best_of(lambda: mt.read_tum(f, ds=1.0, smoothing=0.0))
    rng = np.random.default_rng(0)
    m = 2000
    s = rng.uniform(0, p.length, m)
    pts = p.point_at(s, rng.uniform(-3, 3, m))
    hint = s - 2.0
    xs, ys, hs = pts[:, 0].tolist(), pts[:, 1].tolist(), hint.tolist()

    def scalar():
        for x, y, h in zip(xs, ys, hs, strict=True):
            p.project(x, y, 0.0, s_hint=h)

    t_sc, _ = best_of(scalar)
    t_vec, _ = best_of(lambda: p.project(pts[:, 0], pts[:, 1], s_hint=hint))
    t_glob, _ = best_of(lambda: p.project(pts[:, 0], pts[:, 1]))
    d_raw, d = raw.describe(NOISE_WINDOW), p.describe(NOISE_WINDOW)
    return {
        "track": f.stem,
        "length_m": round(d["length"], 1),
        "n_waypoints": d["n_waypoints"],
        "min_radius_raw_m": round(d_raw["min_radius"], 2),
        "min_radius_m": round(d["min_radius"], 2),
        "curvature_noise_raw_1pm": round(d_raw["curvature_noise"], 5),
        "curvature_noise_smoothed_1pm": round(d["curvature_noise"], 5),
        "load_resample_ms": round(1e3 * t_load, 1),
        "load_resample_raw_ms": round(1e3 * t_load_raw, 1),
        "project_scalar_hint_us": round(1e6 * t_sc / m, 1),
        "project_vector_hint_us_per_point": round(1e6 * t_vec / m, 2),
        "project_vector_global_us_per_point": round(1e6 * t_glob / m, 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/tracks.json")
    a = ap.parse_args()
    if not TRACKS.is_dir():
        raise SystemExit(f"{TRACKS} not found: the benchmark needs the shared track folder")
    prov = provenance()
    rows = [bench(f) for f in sorted(TRACKS.glob("*.csv"))]
    out = {"provenance": finish(prov), "benchmark": "tracks", "smoothing_m": SMOOTHING,
           "noise_window_m": NOISE_WINDOW, "ds_m": 1.0, "tracks": rows}
    print(dumps(out))
    if a.save:
        save_json(RESULTS / "tracks.json", out)


if __name__ == "__main__":
    main()
