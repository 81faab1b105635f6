"""Generate the bundled reference paths of mpc_tracking (and the table in README.md).

Run from anywhere: ``python reference_paths/make_paths.py``. Every data file in this folder is
written by it; README.md is rewritten from the template below with figures measured on the
written files (so the table cannot drift from the data).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent


def write_tum(name: str, x, y, w_right, w_left, comment: str) -> Path:
    """Write a closed centre line in the TUM racetrack format (no repeated closing point)."""
    out = HERE / f"{name}.csv"
    data = np.column_stack([x, y, np.broadcast_to(w_right, np.shape(x)), np.broadcast_to(w_left, np.shape(x))])
    with out.open("w") as fh:
        fh.write(f"# {comment}\n")
        fh.write("# x_m,y_m,w_tr_right_m,w_tr_left_m\n")
        np.savetxt(fh, data, fmt="%.6f", delimiter=",")
    return out


def write_xy(name: str, x, y, w_right, w_left, comment: str, closed: bool = False) -> Path:
    """Write a plain x, y, w_right, w_left table with an ``mpc_tracking path`` metadata line."""
    out = HERE / f"{name}.csv"
    with out.open("w") as fh:
        fh.write(f"# {comment}\n")
        fh.write(f"# mpc_tracking path: name={name}; closed={str(closed).lower()}\n")
        fh.write("# x_m,y_m,w_right_m,w_left_m\n")
        np.savetxt(fh, np.column_stack([x, y, w_right, w_left]), fmt="%.6f", delimiter=",")
    return out


def write_yaml(name: str, doc: dict, comment: str) -> Path:
    out = HERE / f"{name}.yaml"
    with out.open("w") as fh:
        fh.write(f"# {comment}\n")
        yaml.safe_dump(doc, fh, sort_keys=False, default_flow_style=None)
    return out


def oval(straight: float = 60.0, radius: float = 20.0, spacing: float = 1.0):
    """Stadium oval: two straights joined by semicircles (counter-clockwise)."""
    n_s = round(straight / spacing)
    n_c = round(np.pi * radius / spacing)
    xs = np.linspace(-straight / 2, straight / 2, n_s, endpoint=False)
    a = np.linspace(-np.pi / 2, np.pi / 2, n_c, endpoint=False)
    right = np.column_stack([straight / 2 + radius * np.cos(a), radius * np.sin(a)])
    top = np.column_stack([-xs, np.full(n_s, radius)])
    left = np.column_stack([-straight / 2 - radius * np.cos(a), -radius * np.sin(a)])
    bottom = np.column_stack([xs, np.full(n_s, -radius)])
    pts = np.vstack([bottom, right, top, left])
    return pts[:, 0], pts[:, 1]


def figure_eight(a: float = 40.0, b: float = 20.0, n: int = 300):
    """Lemniscate of Gerono-like loop x = a sin t, y = b sin 2t; crosses itself at the origin."""
    t = np.linspace(0.0, 2.0 * np.pi, n, endpoint=False)
    return a * np.sin(t), b * np.sin(2.0 * t)


def double_lane_change(car_width: float = 1.8, spacing: float = 0.25):
    """ISO 3888-2 obstacle-avoidance lane change for a car of ``car_width``, with lead-in/out.

    Sections (x from the entry gate): 1: 0-12 m, lane 1.1 W + 0.25; 2: 12-25.5 m, free; 3: 25.5-36.5 m,
    lane W + 1, its right edge 1 m left of lane 1's left edge; 4: 36.5-49 m, free; 5: 49-61 m, lane
    1.3 W + 0.25, right edges of lanes 1 and 5 aligned (y = 0).
    """
    w1, w3, w5 = 1.1 * car_width + 0.25, car_width + 1.0, 1.3 * car_width + 0.25
    y1, y3, y5 = 0.5 * w1, w1 + 1.0 + 0.5 * w3, 0.5 * w5
    top = w1 + 1.0 + w3
    x = np.arange(-20.0, 90.0 + 1e-9, spacing)

    def step(x0, x1, ya, yb):
        u = np.clip((x - x0) / (x1 - x0), 0.0, 1.0)
        return (yb - ya) * (10 * u**3 - 15 * u**4 + 6 * u**5)

    y = y1 + step(12.0, 25.5, y1, y3) + step(36.5, 49.0, y3, y5)
    right, left = np.zeros_like(x), np.full_like(x, top)
    left[x <= 12.0] = w1
    sec3 = (x >= 25.5) & (x <= 36.5)
    right[sec3], left[sec3] = w1 + 1.0, top
    left[x >= 49.0] = w5
    return x, y, y - right, left - y


def synthetic_circuit(seed: int = 3, spacing: float = 5.0, noise: float = 0.05):
    """Closed full-size circuit from a polar Fourier curve (about 4.5 km), GPS-like noise of ``noise`` m RMS."""
    rng = np.random.default_rng(seed)
    th = np.linspace(0.0, 2.0 * np.pi, 20000, endpoint=False)
    r = 700.0 * (1 + 0.28 * np.cos(2 * th + 0.3) + 0.10 * np.sin(3 * th) + 0.05 * np.cos(5 * th + 1.0)
                 + 0.02 * np.sin(9 * th + 0.5))
    x, y = r * np.cos(th), r * np.sin(th)
    seg = np.hypot(np.diff(x, append=x[0]), np.diff(y, append=y[0]))
    s = np.concatenate([[0.0], np.cumsum(seg)[:-1]])
    length = s[-1] + seg[-1]
    si = np.arange(0.0, length - 0.5 * spacing, spacing)
    xi, yi = np.interp(si, s, x), np.interp(si, s, y)
    xi = xi + noise * rng.standard_normal(si.size)
    yi = yi + noise * rng.standard_normal(si.size)
    w = 6.0 + 1.0 * np.sin(2 * np.pi * si / length * 7)
    return xi, yi, w, w + 0.3 * np.cos(2 * np.pi * si / length * 3)


HAIRPIN_SLALOM = {
    "name": "hairpin_slalom",
    "closed": False,
    "ds": 0.25,
    "radius": 5.5,
    "blend": 0.5,
    "width": 4.0,
    "points": [[0.0, 0.0], [70.0, 0.0], [78.0, 8.0], [70.0, 16.0], [0.0, 16.0]],
    "obstacles": [
        {"type": "circle", "center": [15.0, 1.0], "radius": 0.6},
        {"type": "circle", "center": [27.0, -1.0], "radius": 0.6},
        {"type": "circle", "center": [39.0, 1.0], "radius": 0.6},
        {"type": "circle", "center": [51.0, -1.0], "radius": 0.6},
        {"type": "polygon", "vertices": [[30.0, 15.0], [36.0, 15.0], [36.0, 20.5], [30.0, 20.5]]},
    ],
}

RC_COURSE = {
    "name": "rc_course",
    "closed": True,
    "ds": 0.05,
    "radius": 0.15,
    "blend": 0.5,
    "width": 0.3,
    "points": [[0.0, 0.0], [1.5, 0.0], [1.5, 0.6], [2.2, 0.6], [2.2, 0.0], [3.0, 0.0], [3.0, 1.5], [0.0, 1.5]],
    "obstacles": [
        {"type": "circle", "center": [0.75, 0.07], "radius": 0.06},
        {"type": "circle", "center": [2.6, -0.08], "radius": 0.06},
        {"type": "circle", "center": [3.05, 0.9], "radius": 0.05},
        {"type": "circle", "center": [1.2, 1.45], "radius": 0.07},
    ],
}

README = """# Bundled reference paths

Generated by `python reference_paths/make_paths.py` (do not edit the data files by hand; this
README's table is rewritten by the script from the written files). Load any of them with
`mpc_tracking.load_path(name)`.

| name | file | format | length [m] | closed | what it tests |
|---|---|---|---|---|---|
{rows}

Formats: *TUM* = `# x_m,y_m,w_tr_right_m,w_tr_left_m` (closed, no repeated closing point);
*x/y table* = `x_m,y_m,w_right_m,w_left_m` with a `# mpc_tracking path: name=...; closed=...` line;
*YAML course* = corner points rounded by clothoid-arc blends of the given `radius`, widths, and
`obstacles` (attached to the loaded path as `path.obstacles`, for `ObstacleCorridor`). Lengths
are of the path as loaded by `load_path(name)` (default `ds`).
"""

WHAT = {
    "oval": ("TUM", "default demo path: 60 m straights, R = 20 m turns, 4 m each side"),
    "figure_eight": ("TUM", "self-crossing loop: projection with `s_hint` must keep the right branch at the crossing"),
    "double_lane_change": ("x/y table", "ISO 3888-2 double lane change (W = 1.8 m car), open, lane-width corridor"),
    "hairpin_slalom": ("YAML course", "slalom through 4 cones, a 180 deg hairpin (R 5.5 m) and a block: gap choice"),
    "rc_course": ("YAML course", "1:10 RC course (~9.6 m loop, 0.3 m each side) with 4 circular obstacles"),
    "circuit": ("TUM", "synthetic full-size circuit (~4.9 km, 5 m spacing, 5 cm GPS-like noise): smoothing"),
}


def main() -> None:
    x, y = oval()
    write_tum("oval", x, y, 4.0, 4.0, "oval: 60 m straights, R = 20 m turns, 4 m each side (default demo path)")
    x, y = figure_eight()
    write_tum("figure_eight", x, y, 3.0, 3.0, "figure eight: x = 40 sin t, y = 20 sin 2t, crossing at the origin")
    x, y, wr, wl = double_lane_change()
    write_xy("double_lane_change", x, y, wr, wl, "ISO 3888-2 double lane change, car width 1.8 m, 20 m lead-in/out")
    write_yaml("hairpin_slalom", HAIRPIN_SLALOM, "hairpin + slalom with obstacles (full-size car)")
    write_yaml("rc_course", RC_COURSE, "RC-scale course (1:10 car) with circular obstacles")
    x, y, wr, wl = synthetic_circuit()
    write_tum("circuit", x, y, wr, wl, "synthetic full-size circuit, seed 3, 5 m spacing, 5 cm noise")
    from mpc_tracking.paths.io import load_path

    rows = []
    for name, (fmt, what) in WHAT.items():
        f = next(p for p in HERE.iterdir() if p.stem == name and p.suffix in (".csv", ".yaml"))
        p = load_path(f)
        rows.append(f"| {name} | {f.name} | {fmt} | {p.length:.1f} | {'yes' if p.closed else 'no'} | {what} |")
    (HERE / "README.md").write_text(README.format(rows="\n".join(rows)))


if __name__ == "__main__":
    main()
