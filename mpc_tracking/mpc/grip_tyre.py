"""The identified tyre curve as the grip estimator reads it: the magic formula, its saturation slip, an axle's
force on another road (similarity) and the lateral peak a longitudinal force leaves (the friction circle).
Scalars with :mod:`math` (called every control step); used by :mod:`mpc_tracking.mpc.grip`."""
from __future__ import annotations

import math

import numpy as np

__all__ = ["magic_formula", "axle_force", "saturation_slip", "lateral_peak"]


def magic_formula(alpha: float, B: float, C: float, E: float) -> float:
    """The normalized tyre force ``phi(alpha) = sin(C atan(B alpha - E (B alpha - atan(B alpha))))`` [-] (peak 1).

    The prediction model's lateral tyre curve (:mod:`~mpc_tracking.models.prediction.spatial_dynamic`, its axle
    force is ``D mu F_z phi``), written with :mod:`math` for the per-step scalars.

    >>> peak_slip = math.tan(math.pi / 2.6) / 10.0                 # B alpha = tan(pi / (2 C)) with E = 0
    >>> round(magic_formula(0.01, 10.0, 1.3, 0.0), 4), round(magic_formula(peak_slip, 10.0, 1.3, 0.0), 6)
    (0.1292, 1.0)
    """
    ba = B * alpha
    return math.sin(C * math.atan(ba - E * (ba - math.atan(ba))))


def axle_force(alpha: float, shape: tuple[float, float, float], peak: float, peak0: float) -> float:
    """Axle lateral force [N] at slip angle ``alpha`` [rad] on a road where the peak is ``peak`` [N], for a tyre
    whose curve ``shape = (B, C, E)`` was identified with the peak ``peak0`` [N]: ``peak phi(alpha peak0 / peak)``
    (similarity: the same cornering stiffness, saturating at ``peak / peak0`` of the slip).

    >>> f0 = axle_force(0.02, (10.0, 1.3, 0.0), 5000.0, 5000.0)
    >>> round(axle_force(0.02, (10.0, 1.3, 0.0), 2500.0, 5000.0) / f0, 3)        # same stiffness, half the peak
    0.935
    """
    if peak <= 0.0:
        return 0.0
    return peak * magic_formula(alpha * peak0 / peak, *shape)


def saturation_slip(shape: tuple[float, float, float]) -> float:
    """Smallest slip angle [rad] where the curve ``shape = (B, C, E)`` reaches 98 % of its largest value
    (searched up to 1 rad)."""
    grid = np.linspace(0.0, 1.0, 4001)
    B, C, E = shape
    ba = B * grid
    phi = np.sin(C * np.arctan(ba - E * (ba - np.arctan(ba))))
    return float(grid[int(np.argmax(phi >= 0.98 * float(np.max(phi))))])


def lateral_peak(mu: float, d_fz: float, f_x: float) -> float:
    """The axle's lateral peak [N] the friction circle leaves beside ``f_x`` [N]: ``sqrt((mu D F_z)^2 - F_x^2)``,
    at least 10 % of ``mu D F_z``.

    >>> lateral_peak(1.0, 5000.0, 3000.0)
    4000.0
    """
    return math.sqrt(max((mu * d_fz) ** 2 - f_x * f_x, (0.1 * mu * d_fz) ** 2))
