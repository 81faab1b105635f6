"""Input checks shared by the reference-path constructors (messages name the argument)."""
from __future__ import annotations

import logging
from typing import Any

import numpy as np

from mpc_tracking.errors import PathError

logger = logging.getLogger("mpc_tracking.paths.reference_path")  # messages read as the path builder's


def _as_points(x: Any, y: Any, name: str) -> np.ndarray:
    try:
        xa = np.asarray(x, dtype=float).reshape(-1)
        ya = np.asarray(y, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise PathError(f"{name}: coordinates must be numeric arrays ({exc})") from None
    if xa.shape != ya.shape:
        raise PathError(f"{name}: x has {xa.size} values but y has {ya.size}; expected equal lengths")
    bad = ~(np.isfinite(xa) & np.isfinite(ya))
    if bad.any():
        raise PathError(
            f"{name}: coordinates must be finite; point {int(np.flatnonzero(bad)[0])} is "
            f"({xa[bad][0]}, {ya[bad][0]})"
        )
    return np.column_stack([xa, ya])


def _as_widths(w: Any, n: int, name: str) -> np.ndarray | None:
    if w is None:
        return None
    try:
        wa = np.asarray(w, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise PathError(f"{name}: widths must be numeric ({exc})") from None
    if wa.size == 1:
        wa = np.full(n, float(wa[0]))
    if wa.size != n:
        raise PathError(f"{name}: expected {n} widths (one per point) or a scalar, got {wa.size}")
    bad = ~np.isfinite(wa) | (wa <= 0.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise PathError(f"{name}: widths must be finite and > 0 m; point {i} has {wa[i]}")
    return wa


def _check_positive(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise PathError(f"{name}: expected a positive number, got {value!r}") from None
    if not np.isfinite(v) or v <= 0:
        raise PathError(f"{name}: expected a positive finite number, got {value!r}")
    return v


def _distinct_mask(pts: np.ndarray, closed: bool) -> np.ndarray:
    """Mask dropping duplicate consecutive points (and a closing duplicate when closed)."""
    if len(pts) == 0:
        return np.zeros(0, bool)
    scale = max(1.0, float(np.abs(pts).max()))
    step = np.hypot(*np.diff(pts, axis=0).T)
    keep = np.concatenate([[True], step > 1e-9 * scale])
    if closed and keep.sum() > 1:
        last = np.flatnonzero(keep)[-1]
        if np.hypot(*(pts[last] - pts[0])) <= 1e-9 * scale:
            keep[last] = False
    if not keep.all():
        logger.debug("removed %d duplicate points", int((~keep).sum()))
    return keep


def _check_count(pts: np.ndarray, closed: bool, name: str) -> None:
    need = 3 if closed else 2
    if len(pts) < need:
        kind = "closed" if closed else "open"
        raise PathError(f"{name}: a {kind} path needs at least {need} distinct points, got {len(pts)}")
