"""Readers and writers of reference paths (first version: TUM racetrack CSV)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .bundled import bundled_file
from .errors import PathFormatError
from .reference_path import ReferencePath

__all__ = ["read_tum", "load_path"]


def read_tum(filename: str | Path, *, ds: float = 1.0, smoothing: float = 0.0, name: str | None = None) -> ReferencePath:
    """Read a closed track in the TUM racetrack format (``# x_m,y_m,w_tr_right_m,w_tr_left_m``).

    Parameters
    ----------
    filename : path
    ds : float
        Waypoint spacing of the result [m].
    smoothing : float
        RMS deviation [m] the smoothing spline may take from the centre line.
    """
    filename = Path(filename)
    if not filename.is_file():
        raise PathFormatError(f"{filename}: no such file")
    rows = []
    for lineno, line in enumerate(filename.read_text().splitlines(), start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != 4:
            raise PathFormatError(f"{filename}:{lineno}: expected 4 columns x_m,y_m,w_tr_right_m,w_tr_left_m, got {len(parts)}")
        try:
            rows.append([float(p) for p in parts])
        except ValueError:
            raise PathFormatError(f"{filename}:{lineno}: non-numeric value in {text!r}") from None
    if not rows:
        raise PathFormatError(f"{filename}: no data rows")
    a = np.asarray(rows)
    return ReferencePath(
        a[:, 0], a[:, 1], width_right=a[:, 2], width_left=a[:, 3], ds=ds, closed=True,
        smoothing=smoothing, name=name or filename.stem,
    )


def load_path(source: str | Path, *, ds: float | None = None, smoothing: float = 0.0) -> ReferencePath:
    """Load a bundled path by name or a path file (format chosen from the content)."""
    p = Path(source)
    if not p.exists():
        p = bundled_file(str(source))
    return read_tum(p, ds=ds or 1.0, smoothing=smoothing)
