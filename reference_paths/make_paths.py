"""Generate the bundled reference paths of mpc_tracking.

Run from anywhere: ``python reference_paths/make_paths.py``. Every file in this folder except
this script, ``__init__.py`` and ``README.md`` is written by it; the README's table lists them.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

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


def oval(straight: float = 60.0, radius: float = 20.0, spacing: float = 1.0):
    """Stadium oval: two straights joined by semicircles (counter-clockwise)."""
    n_s = int(round(straight / spacing))
    n_c = int(round(np.pi * radius / spacing))
    xs = np.linspace(-straight / 2, straight / 2, n_s, endpoint=False)
    a = np.linspace(-np.pi / 2, np.pi / 2, n_c, endpoint=False)
    right = np.column_stack([straight / 2 + radius * np.cos(a), radius * np.sin(a)])
    top = np.column_stack([-xs, np.full(n_s, radius)])
    left = np.column_stack([-straight / 2 - radius * np.cos(a), -radius * np.sin(a)])
    bottom = np.column_stack([xs, np.full(n_s, -radius)])
    pts = np.vstack([bottom, right, top, left])
    return pts[:, 0], pts[:, 1]


def main() -> None:
    x, y = oval()
    write_tum("oval", x, y, 4.0, 4.0, "oval: 60 m straights, R = 20 m turns, 4 m each side (default demo path)")


if __name__ == "__main__":
    main()
