"""Summary figures of a reference path: length, radii, curvature noise, widths (``ReferencePath.describe``)."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["curvature_noise", "describe_path", "format_description", "fit_smoothing"]


def curvature_noise(kappa: Any, ds: float, *, window: float, closed: bool) -> float:
    """RMS of ``kappa - smoothed kappa`` [1/m].

    Parameters
    ----------
    kappa : array_like, shape (n,)
        Curvature at uniform spacing ``ds`` [1/m].
    ds : float
        Spacing [m].
    window : float
        Standard deviation of the Gaussian smoothing along s [m]; curvature that varies faster
        than this counts as noise.
    closed : bool
        Periodic smoothing across the seam.
    """
    k = np.asarray(kappa, dtype=float)
    from scipy.ndimage import gaussian_filter1d  # here, not at import (SciPy's ndimage costs ~50 ms)

    sm = gaussian_filter1d(k, sigma=max(window / ds, 0.5), mode="wrap" if closed else "nearest")
    return float(np.sqrt(np.mean((k - sm) ** 2)))


def describe_path(path, noise_window: float | None = None) -> dict[str, Any]:
    """Summary of ``path`` as a dict (see :meth:`ReferencePath.describe`)."""
    if noise_window is None:
        noise_window = max(3.0 * path.ds, 2.0 * getattr(path, "input_spacing", path.ds))
    kmax = float(np.max(np.abs(path.kappa)))
    wl, wr = path.width_left, path.width_right
    return {
        "name": path.name,
        "length": float(path.length),
        "closed": bool(path.closed),
        "n_waypoints": int(path.n),
        "ds": float(path.ds),
        "min_radius": float(1.0 / kmax) if kmax > 0 else float("inf"),
        "max_abs_kappa": kmax,
        "curvature_noise": curvature_noise(path.kappa, path.ds, window=noise_window, closed=path.closed),
        "noise_window": float(noise_window),
        "width_left_range": (float(np.min(wl)), float(np.max(wl))),
        "width_right_range": (float(np.min(wr)), float(np.max(wr))),
        "has_speed_profile": path.v_ref is not None,
    }


def format_description(d: dict[str, Any]) -> str:
    """Multi-line text of a :func:`describe_path` dict."""
    kind = "closed" if d["closed"] else "open"
    lines = [
        f"{d['name']}: {kind}, length {d['length']:.2f} m, {d['n_waypoints']} waypoints (ds {d['ds']:.3f} m)",
        f"  min radius {d['min_radius']:.3g} m, max |kappa| {d['max_abs_kappa']:.4g} 1/m",
        f"  curvature noise {d['curvature_noise']:.3g} 1/m "
        f"(RMS of kappa - kappa smoothed over {d['noise_window']:.3g} m)",
        "  width left {:.3g}..{:.3g} m, right {:.3g}..{:.3g} m".format(*d["width_left_range"], *d["width_right_range"]),
    ]
    if d["has_speed_profile"]:
        lines.append("  has a speed profile (v_ref)")
    return "\n".join(lines)


def fit_smoothing(build, target_noise: float, *, noise_window: float | None = None, max_smoothing: float = 5.0,
                  iterations: int = 12):
    """Smallest smoothing whose path has curvature noise <= ``target_noise`` (bisection).

    Parameters
    ----------
    build : callable
        ``build(smoothing) -> ReferencePath``.
    target_noise : float
        Wanted curvature noise [1/m] (see :func:`curvature_noise`), > 0.
    max_smoothing : float
        Upper end of the search [m RMS].

    Returns
    -------
    ReferencePath
        The path built with the found smoothing (``path.smoothing``); the most smoothed one
        when even ``max_smoothing`` does not reach the target.
    """
    def noise(p):
        return describe_path(p, noise_window)["curvature_noise"]

    best = build(0.0)
    if noise(best) <= target_noise:
        return best
    lo, hi = 0.0, float(max_smoothing)
    best = build(hi)
    if noise(best) > target_noise:
        return best
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        p = build(mid)
        if noise(p) <= target_noise:
            hi, best = mid, p
        else:
            lo = mid
    return best
