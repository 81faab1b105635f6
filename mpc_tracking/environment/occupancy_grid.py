"""Occupancy grids (from arrays or PNG images) and free-interval search along path normals."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError, PathFormatError
from mpc_tracking.fileio import check_file_size

__all__ = ["OccupancyGrid", "MAX_GRID_PIXELS", "MAX_GRID_FILE_BYTES"]

#: most pixels an occupancy-grid image may have (checked from the header, before decoding): 25
#: megapixels, e.g. 5000 x 5000 cells = 250 m x 250 m at 5 cm
MAX_GRID_PIXELS = 25_000_000
#: largest occupancy-grid image file [bytes] (64 MB)
MAX_GRID_FILE_BYTES = 64 * 1024 * 1024


class OccupancyGrid:
    """A 2-D grid of free/occupied cells in world coordinates.

    Parameters
    ----------
    free : array_like of bool, shape (rows, cols)
        True where the cell is free. Row 0 is the lowest ``y`` (like ROS ``map_server``:
        ``origin`` is the world position of the lower-left corner of cell (0, 0)).
    origin : (float, float)
        World position [m] of the lower-left corner of the grid.
    resolution : float
        Cell size [m], > 0.
    outside_free : bool
        Whether points outside the grid count as free (default: occupied).
    """

    def __init__(self, free: Any, origin: Any = (0.0, 0.0), resolution: float = 0.05, *, outside_free: bool = False):
        f = np.asarray(free)
        if f.ndim != 2 or min(f.shape) < 1:
            raise InputError(f"free: expected a 2-D grid of cells (rows, cols), got shape {f.shape}")
        self.free = f.astype(bool)
        o = np.asarray(origin, dtype=float).reshape(-1)
        if o.size != 2 or not np.all(np.isfinite(o)):
            raise InputError(f"origin: expected a finite (x, y) in m, got {origin!r}")
        self.origin = o
        r = float(resolution)
        if not np.isfinite(r) or r <= 0:
            raise InputError(f"resolution: expected a cell size > 0 m, got {resolution!r}")
        self.resolution = r
        self.outside_free = bool(outside_free)

    @classmethod
    def from_array(
        cls, data: Any, origin: Any = (0.0, 0.0), resolution: float = 0.05, *,
        free_value: float | None = None, threshold: float = 0.5, outside_free: bool = False,
    ) -> OccupancyGrid:
        """Grid from numbers: free where ``data == free_value``, or (default) where ``data > threshold``.

        ``data`` has shape (rows, cols) with row 0 at the lowest ``y``.
        """
        a = np.asarray(data)
        if a.ndim != 2:
            raise InputError(f"data: expected a 2-D array (rows, cols), got shape {a.shape}")
        if not np.issubdtype(a.dtype, np.number) and a.dtype != bool:
            raise InputError(f"data: expected numbers or booleans, got dtype {a.dtype}")
        free = (a == free_value) if free_value is not None else (a.astype(float) > threshold)
        return cls(free, origin, resolution, outside_free=outside_free)

    @classmethod
    def from_image(
        cls, filename: str | Path, origin: Any = (0.0, 0.0), resolution: float = 0.05, *,
        threshold: float = 0.5, free_value: float | None = None, outside_free: bool = False,
        max_pixels: int = MAX_GRID_PIXELS,
    ) -> OccupancyGrid:
        """Grid from a PNG (or any image Pillow reads): light pixels are free.

        The image is converted to grey levels in [0, 1]; pixels brighter than ``threshold``
        (or equal to ``free_value``) are free. The image's top row is the highest ``y``.

        Parameters
        ----------
        filename : str or Path
        origin, resolution, threshold, free_value, outside_free
            See :meth:`from_array` and the class.
        max_pixels : int
            Most pixels accepted (default ``MAX_GRID_PIXELS``); the size is read from the
            image header, so a huge or "decompression bomb" image is refused before decoding.
            The file itself may not exceed ``MAX_GRID_FILE_BYTES``.

        Raises
        ------
        PathFormatError
            Missing file, not an image, an image too large (naming the file and its size),
            smaller than 2 x 2 pixels.
        """
        filename = Path(filename)
        if not filename.exists():
            raise PathFormatError(f"{filename}: no such file")
        check_file_size(filename, MAX_GRID_FILE_BYTES, what="occupancy-grid image", error=PathFormatError)
        try:
            from PIL import Image
        except ImportError:  # pragma: no cover - Pillow is a dependency
            raise PathFormatError(f"{filename}: occupancy-grid images need Pillow (pip install pillow)") from None
        try:
            with Image.open(filename) as im:
                w, h = im.size
                if w * h > max_pixels:
                    raise PathFormatError(
                        f"{filename}: the occupancy-grid image is {w} x {h} = {w * h:.3g} pixels, more than the "
                        f"{max_pixels:.3g} allowed; scale it down (and raise the resolution in m per cell)")
                grey = np.asarray(im.convert("L"), dtype=float) / 255.0
        except PathFormatError:
            raise
        except Image.DecompressionBombError as exc:  # the header claims more pixels than Pillow opens at all
            m = re.search(r"(\d+) pixels", str(exc))
            size = f"{int(m.group(1)):.3g} pixels" if m else "too many pixels"
            raise PathFormatError(f"{filename}: the occupancy-grid image has {size}, more than the {max_pixels:.3g} "
                                  f"allowed; scale it down (and raise the resolution in m per cell)") from None
        except MemoryError:
            raise PathFormatError(f"{filename}: the occupancy-grid image does not fit in memory") from None
        except Exception as exc:  # Pillow raises assorted errors for non-images
            raise PathFormatError(
                f"{filename}: not an occupancy-grid image (expected a PNG/greyscale image; "
                f"{type(exc).__name__}: {' '.join(str(exc).split())})"
            ) from None
        if grey.ndim != 2 or min(grey.shape) < 2:
            raise PathFormatError(f"{filename}: expected a 2-D image of at least 2x2 pixels, got {grey.shape}")
        return cls.from_array(grey[::-1], origin, resolution, free_value=free_value, threshold=threshold,
                              outside_free=outside_free)

    @property
    def extent(self) -> tuple[float, float, float, float]:
        """(x_min, x_max, y_min, y_max) [m], for ``imshow(..., origin="lower")``."""
        rows, cols = self.free.shape
        x0, y0 = self.origin
        return (x0, x0 + cols * self.resolution, y0, y0 + rows * self.resolution)

    def is_free(self, x: Any, y: Any) -> np.ndarray:
        """Whether world points are free (vectorized; any matching shapes)."""
        x = np.asarray(x, dtype=float)
        y = np.asarray(y, dtype=float)
        col = np.floor((x - self.origin[0]) / self.resolution).astype(np.int64)
        row = np.floor((y - self.origin[1]) / self.resolution).astype(np.int64)
        rows, cols = self.free.shape
        inside = (row >= 0) & (row < rows) & (col >= 0) & (col < cols)
        out = np.full(np.broadcast(x, y).shape, self.outside_free)
        out[inside] = self.free[row[inside], col[inside]]
        return out

    def free_intervals(self, px, py, nx, ny, lb, ub, step: float | None = None) -> list[list[tuple[float, float]]]:
        """Free stretches of each normal line ``p + e n`` with ``lb <= e <= ub``.

        Parameters
        ----------
        px, py, nx, ny, lb, ub : ndarray, shape (K,)
            Points, unit normals and search limits [m].
        step : float, optional
            Sampling step along the normals [m] (default: half a cell).

        Returns
        -------
        list of K lists of (lo, hi) [m]
        """
        h = 0.5 * self.resolution if step is None else float(step)
        lo, hi = float(np.min(lb)), float(np.max(ub))
        e = np.arange(np.floor(lo / h), np.ceil(hi / h) + 1) * h
        free = self.is_free(px[:, None] + e[None, :] * nx[:, None], py[:, None] + e[None, :] * ny[:, None])
        free &= (e[None, :] >= lb[:, None] - 1e-12) & (e[None, :] <= ub[:, None] + 1e-12)
        pad = np.zeros((free.shape[0], 1), bool)
        edges = np.diff(np.hstack([pad, free, pad]).astype(np.int8), axis=1)
        r_start, c_start = np.nonzero(edges == 1)
        _, c_end = np.nonzero(edges == -1)
        out: list[list[tuple[float, float]]] = [[] for _ in range(free.shape[0])]
        for r, a, b in zip(r_start.tolist(), c_start.tolist(), (c_end - 1).tolist(), strict=True):
            out[r].append((max(float(e[a]), float(lb[r])), min(float(e[b]), float(ub[r]))))
        return out
