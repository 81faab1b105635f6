"""Static figures of paths and closed-loop runs.

Every function takes ``ax=None`` (or ``axes=None``), builds a :class:`matplotlib.figure.Figure`
directly when no axes are given (no pyplot global state, works with the Agg backend), returns
the figure and axes/artists and never calls ``plt.show()``.

The car is drawn about its reference point, the rear axle: the body spans from
``-rear_overhang`` to ``length - rear_overhang`` along the heading and ``+-width/2`` across it;
the safety ellipse (semi-axes :attr:`VehicleParams.safety_ellipse`) is centred
``center_offset`` ahead of the reference point.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "car_outline", "draw_car", "plot_path", "plot_obstacles", "plot_track", "plot_timeseries",
    "plot_path_profile", "plot_path_view", "plot_input_points", "scenario_obstacles", "run_setting", "new_figure",
    "STATUS_COLORS", "Plot",
]

#: colour of each MPC step status in the time-series plot
STATUS_COLORS = {0: "tab:green", 1: "gold", 2: "tab:orange", 3: "tab:red", 4: "tab:purple"}
_STATUS_NAMES = {0: "solved", 1: "inaccurate", 2: "fallback", 3: "safe stop", 4: "rejoin"}


def new_figure(**fig_kw: Any):
    """A stand-alone Agg figure (not registered with pyplot)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(**fig_kw)
    FigureCanvasAgg(fig)
    return fig


class Plot(tuple):
    """What the plot functions return: the tuple ``(fig, ax)``, which Jupyter shows as the figure.

    Unpack it as usual (``fig, ax = plot_track(result)``); as the last expression of a notebook
    cell it renders inline as a PNG (``_repr_png_``), whatever the matplotlib backend, since
    the figures are not attached to pyplot.
    """

    __slots__ = ()

    def __new__(cls, fig: Any, ax: Any) -> Plot:
        return super().__new__(cls, (fig, ax))

    @property
    def fig(self) -> Any:
        """The :class:`matplotlib.figure.Figure`."""
        return self[0]

    @property
    def ax(self) -> Any:
        """Its axes (one Axes, an array or a list, as the plot function documents)."""
        return self[1]

    def _repr_png_(self) -> bytes:
        import io

        buf = io.BytesIO()
        self[0].savefig(buf, format="png", dpi=80, bbox_inches="tight")
        return buf.getvalue()


def _axes(ax, **fig_kw):
    if ax is not None:
        return ax.figure, ax
    fig = new_figure(**fig_kw)
    return fig, fig.add_subplot(1, 1, 1)


# ---------------------------------------------------------------------- car geometry
def car_outline(x: float, y: float, yaw: float, vehicle) -> np.ndarray:
    """Corners of the car body, shape (4, 2) [m], counter-clockwise from the rear right.

    Parameters
    ----------
    x, y : float
        Reference point (rear axle) [m].
    yaw : float
        Heading [rad].
    vehicle : VehicleParams
    """
    r, f, h = -vehicle.rear_overhang, vehicle.length - vehicle.rear_overhang, 0.5 * vehicle.width
    local = np.array([[r, -h], [f, -h], [f, h], [r, h]])
    c, s = np.cos(yaw), np.sin(yaw)
    return local @ np.array([[c, s], [-s, c]]) + np.array([x, y])


def _ellipse_params(x: float, y: float, yaw: float, vehicle) -> tuple[tuple[float, float], float, float, float]:
    a, b = vehicle.safety_ellipse
    c = vehicle.center_offset
    return (x + c * np.cos(yaw), y + c * np.sin(yaw)), 2 * a, 2 * b, float(np.rad2deg(yaw))


def draw_car(ax, x: float, y: float, yaw: float, vehicle, *, color: str = "tab:red", ellipse: bool = True,
             alpha: float = 0.9, zorder: int = 5) -> list:
    """Draw the car body (rectangle) and its safety ellipse; returns the artists ``[body, ellipse]``."""
    from matplotlib.patches import Ellipse, Patch, Polygon

    body = Polygon(car_outline(x, y, yaw, vehicle), closed=True, facecolor=color, edgecolor="k",
                   lw=0.8, alpha=alpha, zorder=zorder)
    ax.add_patch(body)
    out: list[Patch] = [body]
    if ellipse:
        centre, w, h, ang = _ellipse_params(x, y, yaw, vehicle)
        e = Ellipse(centre, w, h, angle=ang, fill=False, edgecolor=color, ls="--", lw=1.0, zorder=zorder)
        ax.add_patch(e)
        out.append(e)
    return out


# ---------------------------------------------------------------------- path and obstacles
def _edges(path) -> tuple[np.ndarray, np.ndarray] | None:
    if not path.has_widths:
        return None
    wl = np.where(np.isfinite(path.width_left) & (path.width_left < 1e6), path.width_left, np.nan)
    wr = np.where(np.isfinite(path.width_right) & (path.width_right < 1e6), path.width_right, np.nan)
    left = path.point_at(path.s, wl)
    right = path.point_at(path.s, -wr)
    if path.closed:
        left, right = np.vstack([left, left[:1]]), np.vstack([right, right[:1]])
    return left, right


def plot_path(path, ax=None, *, obstacles: Sequence[Any] | None = None, fill: bool = True):
    """Centre line, corridor edges (filled) and obstacles of a path; returns ``(fig, ax)``."""
    if ax is None:
        w = max(float(np.ptp(path.x)), 1e-6)
        aspect = float(np.ptp(path.y)) / w
        fig, ax = _axes(None, figsize=(9.0, float(np.clip(7.5 * aspect + 1.5, 3.5, 9.0))), layout="constrained")
    else:
        fig = ax.figure
    edges = _edges(path)
    if edges is not None:
        left, right = edges
        if fill and np.all(np.isfinite(left)) and np.all(np.isfinite(right)):
            ring = np.vstack([left, right[::-1]])
            ax.fill(ring[:, 0], ring[:, 1], color="0.92", zorder=0, lw=0)
        ax.plot(left[:, 0], left[:, 1], color="0.35", lw=1.0, label="corridor")
        ax.plot(right[:, 0], right[:, 1], color="0.35", lw=1.0)
    xs, ys = (np.append(path.x, path.x[0]), np.append(path.y, path.y[0])) if path.closed else (path.x, path.y)
    ax.plot(xs, ys, "k--", lw=0.7, label="centre line")
    if obstacles:
        plot_obstacles(ax, obstacles)
    ax.set_aspect("equal")
    ax.set_xlabel("x [m]")
    ax.set_ylabel("y [m]")
    return fig, ax


def scenario_obstacles(result) -> list:
    """Obstacle records of a run: ``result.info["obstacles"]`` (written with the run, e.g. by
    :func:`mpc_tracking.scenario.core.record_scenario`), else ``[]``.

    The plotting functions use these when they are given no ``obstacles``; pass the obstacles
    explicitly to draw others.
    """
    info = getattr(result, "info", None) or {}
    return list(info.get("obstacles") or [])


def run_setting(result, name: str) -> Any:
    """The controller setting ``name`` (an :class:`~mpc_tracking.mpc.settings.MPCSettings` field)
    recorded with a run, or ``None`` when the run did not record it.

    Runs of a scenario record the resolved scenario in ``result.info["scenario"]``; its
    ``controller`` section holds every MPCSettings field.
    """
    info = getattr(result, "info", None) or {}
    settings = (info.get("scenario") or {}).get("controller") or {}
    return settings.get(name)


def _mpc_default(name: str) -> Any:
    """The default of the :class:`~mpc_tracking.mpc.settings.MPCSettings` field ``name`` (defined there only)."""
    from dataclasses import fields

    from mpc_tracking.mpc.settings import MPCSettings

    return next(f.default for f in fields(MPCSettings) if f.name == name)


def _field(ob: Any, key: str) -> Any:
    """Field ``key`` of an obstacle record (dict) or obstacle object; None when it has none."""
    return ob.get(key) if isinstance(ob, dict) else getattr(ob, key, None)


def _obstacle_geometry(ob: Any, t: float) -> tuple[str, Any]:
    v = _field(ob, "velocity")
    vel = np.zeros(2) if v is None else np.asarray(v, dtype=float)
    dt = t - float(_field(ob, "t0") or 0.0)
    center, radius = _field(ob, "center"), _field(ob, "radius")
    if radius is not None and center is not None:
        return "circle", (np.asarray(center, dtype=float) + vel * dt, float(radius))
    pts = _field(ob, "points")
    if pts is None:
        pts = _field(ob, "vertices")
    if pts is not None:
        return "polygon", np.asarray(pts, dtype=float) + vel * dt
    return "unknown", None


def plot_obstacles(ax, obstacles: Sequence[Any], t: float = 0.0, *, color: str = "tab:gray") -> list:
    """Draw circles (``center``, ``radius``) and polygons (``points``), moved by ``velocity * t``."""
    from matplotlib.patches import Circle, Patch, Polygon

    artists = []
    for ob in obstacles:
        kind, geo = _obstacle_geometry(ob, t)
        p: Patch
        if kind == "circle":
            p = Circle(geo[0], geo[1], facecolor=color, edgecolor="k", alpha=0.8, zorder=3)
        elif kind == "polygon":
            p = Polygon(geo, closed=True, facecolor=color, edgecolor="k", alpha=0.8, zorder=3)
        else:
            continue
        ax.add_patch(p)
        artists.append(p)
    return artists


# ---------------------------------------------------------------------- runs
def _default_instants(result, n: int = 5) -> list[int]:
    k = len(result)
    if k == 0:
        return []
    return sorted(set(np.linspace(0, k - 1, n).round().astype(int).tolist()))


def plot_track(result, ax=None, *, instants: Sequence[int] | None = None, horizon: bool = True,
               obstacles: Sequence[Any] | None = None, colorbar: bool = True, **kwargs: Any):
    """Track view of a run: corridor, obstacles, trajectory coloured by speed, cars and horizons.

    Parameters
    ----------
    result : SimulationResult
    ax : matplotlib Axes, optional
    instants : sequence of int, optional
        Control-step indices at which the car, its safety ellipse and the predicted horizon are
        drawn; default 5 evenly spaced steps.
    horizon : bool
        Draw the predicted horizon at those instants.
    obstacles : sequence, optional
        Default: those of the result's scenario.

    Returns
    -------
    fig, ax
    """
    from matplotlib.collections import LineCollection

    if obstacles is None:
        obstacles = scenario_obstacles(result)
    fig, ax = plot_path(result.path, ax=ax, obstacles=obstacles)
    s = result.series
    if len(result) >= 2:
        pts = np.column_stack([s["x"], s["y"]])
        segs = np.stack([pts[:-1], pts[1:]], axis=1)
        lc = LineCollection(list(segs), cmap="viridis", lw=2.0, zorder=4)
        lc.set_array(s["v"][:-1])
        ax.add_collection(lc)
        if colorbar:
            fig.colorbar(lc, ax=ax, label="speed [m/s]", shrink=0.8)
    instants = _default_instants(result) if instants is None else list(instants)
    veh = result.vehicle
    for i in instants:
        if not 0 <= i < len(result):
            continue
        if horizon and result.horizon_xy.shape[0] > i:
            h = result.horizon_xy[i]
            ax.plot(h[:, 0], h[:, 1], "-", color="tab:orange", lw=1.2, zorder=6)
        if veh is not None:
            draw_car(ax, s["x"][i], s["y"][i], s["yaw"][i], veh, alpha=0.7)
    if horizon and instants and result.horizon_xy.shape[0]:
        ax.plot([], [], "-", color="tab:orange", label="predicted horizon")
    ax.legend(loc="best", fontsize=8)
    ax.autoscale_view()
    ax.set_title(f"{result.path.name}: {result.reason}")
    return Plot(fig, ax)


def plot_timeseries(result, axes=None, *, delta_max: float | None = None, **kwargs: Any):
    """Time series of a run: e_y with corridor bounds, e_psi, v with v_ref, delta with limits,
    solve time coloured by solver status, and -- when the run logged them (grip estimation on, or a plant whose
    road's friction varies) -- the grip: the controller's friction estimate ``mu_est``, the road's ``mu_true`` and
    the share of its nominal limits the plan used ``grip_share``. Returns ``(fig, axes)`` (5 axes; 6 with the
    grip; given ``axes`` of 5, the grip is left out).

    ``delta_max`` [rad] draws the steering limits; default: the run's recorded setting (see
    :func:`run_setting`), none when it is not recorded.
    """
    s = result.series
    grip = [k for k in ("mu_true", "mu_est", "grip_share") if k in s]
    if axes is None:
        fig = new_figure(figsize=(8, 12 if grip else 10))
        axes = fig.subplots(6 if grip else 5, 1, sharex=True)
    else:
        fig = axes[0].figure
    t = s["t"]
    a = axes[0]
    a.plot(t, s["e_y"], label="e_y")
    lb, ub = np.where(np.abs(s["lb"]) < 1e6, s["lb"], np.nan), np.where(np.abs(s["ub"]) < 1e6, s["ub"], np.nan)
    a.plot(t, lb, "r--", lw=0.8, label="corridor bounds")
    a.plot(t, ub, "r--", lw=0.8)
    a.set_ylabel("e_y [m]")
    a.legend(loc="upper right", fontsize=8)
    axes[1].plot(t, np.rad2deg(s["e_psi"]))
    axes[1].set_ylabel("e_psi [deg]")
    a = axes[2]
    a.plot(t, s["v"], label="v")
    a.plot(t, s["v_ref"], "k:", label="v_ref (plan)")
    path = result.path
    if path is not None and getattr(path, "v_ref", None) is not None and len(result):
        a.plot(t, np.interp(s["s"], path.s, path.v_ref, period=path.length if path.closed else None),
               color="tab:green", lw=0.8, label="v_ref (path profile)")
    a.plot(t, s["v_cmd"], "--", lw=0.8, label="v_cmd")
    a.set_ylabel("v [m/s]")
    a.legend(loc="lower right", fontsize=8)
    for ax_ in axes[:4]:
        ax_.ticklabel_format(axis="y", useOffset=False)
    a = axes[3]
    a.plot(t, s["delta_cmd"], label="delta_cmd")
    dmax = run_setting(result, "delta_max") if delta_max is None else delta_max
    if dmax is not None:
        dmax = float(dmax)
        a.axhline(dmax, color="r", ls="--", lw=0.8, label="limit")
        a.axhline(-dmax, color="r", ls="--", lw=0.8)
    a.set_ylabel("delta [rad]")
    a.legend(loc="upper right", fontsize=8)
    a = axes[4]
    st = s["status"].astype(int) if len(result) else np.zeros(0, int)
    a.plot(t, s["solve_time"] * 1e3, color="0.5", lw=0.6)
    for code, col in STATUS_COLORS.items():
        m = st == code
        if np.any(m):
            a.scatter(t[m], s["solve_time"][m] * 1e3, s=6, color=col, label=_STATUS_NAMES[code], zorder=3)
    a.set_ylabel("solve [ms]")
    if len(result):
        a.legend(loc="upper right", fontsize=8, ncol=4)
    if grip and len(axes) > 5:
        a = axes[5]
        styles = {"mu_true": ("k-", "mu (road)"), "mu_est": ("C1-", "mu (estimate)"),
                  "grip_share": ("C2--", "share of the limits in use")}
        for name in grip:
            a.plot(t, s[name], styles[name][0], lw=1.0, label=styles[name][1])
        a.set_ylabel("grip [-]")
        a.legend(loc="lower left", fontsize=8)
    axes[-1].set_xlabel("t [s]")
    fig.suptitle(f"{result.path.name}: {result.reason}")
    return Plot(fig, axes)


def _speed_limit(path, v_max: float, a_y_max: float) -> np.ndarray:
    from mpc_tracking.paths.speed_profile import lateral_speed_limit

    return lateral_speed_limit(path.kappa, a_y_max, v_max)


def plot_path_profile(path, axes=None, *, v_max: float | None = None, a_y_max: float | None = None,
                      v_profile=None):
    """kappa(s), speeds over s (the path's own v_ref, a given profile ``v_profile`` (n,) [m/s] and
    the a_y limit ``min(v_max, sqrt(a_y_max / |kappa|))``) and widths(s); returns ``(fig, axes)``.

    ``v_max`` [m/s] and ``a_y_max`` [m/s^2] default to those of
    :class:`~mpc_tracking.mpc.settings.MPCSettings`.
    """
    v_max = float(_mpc_default("v_max") if v_max is None else v_max)
    a_y_max = float(_mpc_default("a_y_max") if a_y_max is None else a_y_max)
    if axes is None:
        fig = new_figure(figsize=(8, 7))
        axes = fig.subplots(3, 1, sharex=True)
    else:
        fig = axes[0].figure
    axes[0].plot(path.s, path.kappa, lw=1.0, label="kappa")
    if getattr(path, "raw_kappa", None) is not None and np.shape(path.raw_kappa) == np.shape(path.s):
        axes[0].plot(path.s, path.raw_kappa, color="0.6", lw=0.5, zorder=0, label="raw kappa")
    axes[0].set_ylabel("kappa [1/m]")
    axes[0].legend(loc="upper right", fontsize=8)
    if path.v_ref is not None:
        axes[1].plot(path.s, path.v_ref, label="v_ref (path)")
    if v_profile is not None:
        axes[1].plot(path.s, v_profile, color="tab:green", label="speed profile (accel/brake/a_y)")
    axes[1].plot(path.s, _speed_limit(path, v_max, a_y_max), "--", lw=0.8,
                 label=f"min(v_max, sqrt(a_y/|kappa|)), a_y = {a_y_max:g}")
    axes[1].set_ylabel("v [m/s]")
    axes[1].legend(loc="lower right", fontsize=8)
    if path.has_widths:
        axes[2].plot(path.s, np.where(path.width_left < 1e6, path.width_left, np.nan), label="left")
        axes[2].plot(path.s, -np.where(path.width_right < 1e6, path.width_right, np.nan), label="right (negative)")
        axes[2].legend(loc="upper right", fontsize=8)
    axes[2].axhline(0, color="k", lw=0.5)
    axes[2].set_ylabel("width [m]")
    axes[2].set_xlabel("s [m]")
    return Plot(fig, axes)


def plot_input_points(path, ax) -> list:
    """Draw the points ``path`` was fitted to (``path.input_points``, when it has them) on ``ax``, with
    the point it strays furthest from (``path.fit_deviation_index``) ringed and labelled with the
    distance [m]. Returns the artists (empty when the path has no input points)."""
    pts = getattr(path, "input_points", None)
    if pts is None or len(pts) == 0:
        return []
    pts = np.asarray(pts, dtype=float)
    out = ax.plot(pts[:, 0], pts[:, 1], "x", color="tab:orange", ms=5, mew=1.2, ls="none",
                  label=f"input points ({len(pts)})")
    i = getattr(path, "fit_deviation_index", None)
    dev = getattr(path, "fit_deviation", None)
    if i is not None and dev is not None and 0 <= int(i) < len(pts):
        p = pts[int(i)]
        out += ax.plot(p[0], p[1], "o", mfc="none", mec="tab:red", ms=11, mew=1.5, ls="none",
                       label=f"furthest from the path: {dev:.3g} m (point {int(i)})")
    return out


def plot_path_view(path, *, v_max: float | None = None, a_y_max: float | None = None,
                   obstacles: Sequence[Any] | None = None, v_profile=None, input_points: bool = True):
    """Path overview: plan view on the left, kappa / v / widths over s on the right (see
    :func:`plot_path_profile`); returns ``(fig, axes)``. ``input_points``: draw the points the
    path was fitted to against it (:func:`plot_input_points`)."""
    fig = new_figure(figsize=(13, 6))
    gs = fig.add_gridspec(3, 2, width_ratios=(1.1, 1.0))
    ax_map = fig.add_subplot(gs[:, 0])
    plot_path(path, ax=ax_map, obstacles=obstacles)
    if input_points:
        plot_input_points(path, ax_map)
    ax_map.plot(path.x[0], path.y[0], "go", label="s = 0")
    ax_map.legend(loc="upper right", fontsize=8)
    ax_map.set_title(f"{path.name}: {path.length:.1f} m, {'closed' if path.closed else 'open'}")
    axes = [fig.add_subplot(gs[0, 1])]
    axes += [fig.add_subplot(gs[i, 1], sharex=axes[0]) for i in (1, 2)]
    plot_path_profile(path, axes=axes, v_max=v_max, a_y_max=a_y_max, v_profile=v_profile)
    fig.tight_layout()
    return Plot(fig, [ax_map, *axes])
