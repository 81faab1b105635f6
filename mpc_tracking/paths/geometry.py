"""The frame of a reference path: the left normal and the point at a lateral offset (the one place of the formula).

A point at lateral offset ``e_y`` [m] (positive left) from the path point ``(x, y)`` of heading
``psi`` [rad] lies at ``(x - e_y sin psi, y + e_y cos psi)``: along the left normal
``(-sin psi, cos psi)``. :meth:`ReferencePath.point_at <mpc_tracking.paths.ReferencePath.point_at>`,
the controller's plans and the plant's start pose use these.

Examples
--------
>>> import numpy as np
>>> offset_point(1.0, 2.0, np.pi / 2, 0.5).round(12).tolist()   # heading north: left is west
[0.5, 2.0]
>>> offset_point([0.0, 0.0], [0.0, 0.0], [0.0, np.pi], 1.0).round(12).tolist()
[[0.0, 1.0], [-0.0, -1.0]]
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["left_normal", "offset_point"]


def left_normal(psi: Any) -> tuple[np.ndarray, np.ndarray]:
    """The unit normal to the left of the heading ``psi`` [rad], any shape.

    Returns
    -------
    nx, ny : ndarray, the shape of ``psi``
        ``(-sin psi, cos psi)``.
    """
    psi = np.asarray(psi, dtype=float)
    return -np.sin(psi), np.cos(psi)


def offset_point(x: Any, y: Any, psi: Any, e_y: Any) -> np.ndarray:
    """The point at lateral offset ``e_y`` [m] (positive left) from ``(x, y)`` [m] of heading ``psi`` [rad].

    Parameters
    ----------
    x, y, psi, e_y : float or array_like
        Broadcast against each other.

    Returns
    -------
    ndarray, shape (..., 2)
        ``(x - e_y sin psi, y + e_y cos psi)`` [m], the broadcast shape with a last axis of 2.
    """
    nx, ny = left_normal(psi)
    e_y = np.asarray(e_y, dtype=float)
    px, py = np.asarray(x, dtype=float) + e_y * nx, np.asarray(y, dtype=float) + e_y * ny
    if px.shape == py.shape:  # the controller's every step: one horizon of equal arrays, no broadcast copies
        out = np.empty((*px.shape, 2))
        out[..., 0], out[..., 1] = px, py
        return out
    return np.stack(np.broadcast_arrays(px, py), axis=-1)
