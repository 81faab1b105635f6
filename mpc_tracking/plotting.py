"""Static figures of paths and runs (first version). Functions take ``ax=None``, return the
figure/axes and never call ``plt.show()``; they work with the Agg backend."""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["plot_track", "plot_timeseries"]


def _axes(ax, **fig_kw):
    import matplotlib

    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure

    fig = Figure(**fig_kw)
    return fig, fig.add_subplot(1, 1, 1)


def plot_path(path, ax=None):
    """Centre line and corridor edges of a path."""
    fig, ax = _axes(ax, figsize=(7, 6))
    ax.plot(path.x, path.y, "k--", lw=0.8, label="centre line")
    if path.has_widths:
        left = path.point_at(path.s, path.width_left)
        right = path.point_at(path.s, -path.width_right)
        if path.closed:
            left, right = np.vstack([left, left[:1]]), np.vstack([right, right[:1]])
        ax.plot(left[:, 0], left[:, 1], color="0.4", lw=1.0)
        ax.plot(right[:, 0], right[:, 1], color="0.4", lw=1.0)
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    return fig, ax


def plot_track(result, ax=None, **kwargs: Any):
    """Track view: path, corridor, driven trajectory coloured by speed."""
    fig, ax = plot_path(result.path, ax=ax)
    s = result.series
    sc = ax.scatter(s["x"], s["y"], c=s["v"], s=4, cmap="viridis", label="driven")
    fig.colorbar(sc, ax=ax, label="speed [m/s]")
    ax.set_title(f"{result.path.name}: {result.reason}")
    return fig, ax


def plot_timeseries(result, axes=None, **kwargs: Any):
    """e_y, v and delta over time."""
    from matplotlib.figure import Figure

    s = result.series
    if axes is None:
        fig = Figure(figsize=(8, 7))
        axes = fig.subplots(3, 1, sharex=True)
    else:
        fig = axes[0].figure
    axes[0].plot(s["t"], s["e_y"], label="e_y")
    axes[0].set_ylabel("e_y [m]")
    axes[1].plot(s["t"], s["v"], label="v")
    axes[1].plot(s["t"], s["v_cmd"], "--", label="v_cmd")
    axes[1].set_ylabel("v [m/s]")
    axes[1].legend()
    axes[2].plot(s["t"], s["delta_cmd"])
    axes[2].set_ylabel("delta [rad]")
    axes[2].set_xlabel("t [s]")
    return fig, axes
