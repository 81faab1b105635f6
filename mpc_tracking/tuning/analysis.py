"""What a sweep says: per-point aggregates, the Pareto front, a recommended setting, figures.

Figures are :class:`matplotlib.figure.Figure` objects (no pyplot, never shown), returned as a
:class:`~mpc_tracking.viz.plotting.Plot` (the tuple ``(fig, ax)``, shown inline as the last
expression of a Jupyter cell); save them with ``fig.savefig(...)``.

Points are ranked by :data:`~mpc_tracking.tuning.metrics.DEFAULT_METRIC`, the RMS lateral error
once the start transient is over (:mod:`mpc_tracking.tuning.metrics`); rows without it (a custom
runner, a run too short to settle) are ranked by the whole-run ``rms_e_y``.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError
from mpc_tracking.tuning.metrics import DEFAULT_METRIC

__all__ = ["aggregate", "pareto_front", "recommend", "Recommendation", "plot_metrics", "plot_pareto", "metric_label",
           "ranking_metric", "PLOT_METRICS"]

logger = logging.getLogger(__name__)

#: the metrics :func:`plot_metrics` draws by default (one panel each)
PLOT_METRICS = (DEFAULT_METRIC, "rms_e_y", "solve_time_median")

#: display name, unit and scale of the metrics (SI value x scale = shown value)
_LABELS = {
    "rms_e_y": ("RMS e_y", "cm", 100.0),
    "max_abs_e_y": ("max |e_y|", "cm", 100.0),
    "rms_e_y_settled": ("RMS e_y after the start", "cm", 100.0),
    "max_abs_e_y_settled": ("max |e_y| after the start", "cm", 100.0),
    "settle_distance": ("start left out", "m", 1.0),
    "lap_time": ("lap time", "s", 1.0),
    "duration": ("duration", "s", 1.0),
    "mean_speed": ("mean speed", "m/s", 1.0),
    "solve_time_median": ("solve time (median)", "ms", 1e3),
    "solve_time_p95": ("solve time (p95)", "ms", 1e3),
    "solve_time_max": ("solve time (max)", "ms", 1e3),
    "step_time_median": ("MPC step time (median)", "ms", 1e3),
    "step_time_p95": ("MPC step time (p95)", "ms", 1e3),
    "worst_step_time": ("MPC step time (worst)", "ms", 1e3),
    "realtime_overruns": ("real-time overruns", "", 1.0),
    "wall_time": ("wall time per run", "s", 1.0),
    "infeasible_steps": ("infeasible steps", "", 1.0),
    "corridor_violation_steps": ("corridor violation steps", "", 1.0),
}


def metric_label(name: str) -> tuple[str, float]:
    """Axis label (with unit) and scale factor of a metric."""
    text, unit, scale = _LABELS.get(name, (name, "", 1.0))
    return (f"{text} [{unit}]" if unit else text), scale


def _value_text(name: str, value: float, with_name: bool = True) -> str:
    text, unit, scale = _LABELS.get(name, (name, "", 1.0))
    number = f"{value * scale:.3g}{' ' + unit if unit else ''}"
    return f"{text} {number}" if with_name else number


def _num(value: Any) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def aggregate(rows: Sequence[dict[str, Any]], params: Sequence[str]) -> list[dict[str, Any]]:
    """One dict per grid point: its parameter values, ``runs``, ``ok`` (successful runs),
    ``lap_completed`` (every successful run finished its laps) and every numeric metric
    averaged over the successful runs (NaN when none)."""
    groups: dict[int, list[dict]] = {}
    for r in rows:
        groups.setdefault(int(r.get("point", r.get("index", 0))), []).append(r)
    out = []
    for p in sorted(groups):
        runs = groups[p]
        ok = [r for r in runs if r.get("status") == "ok"]
        pt: dict[str, Any] = {"point": p, **{k: runs[0].get(k) for k in params}, "runs": len(runs), "ok": len(ok),
                              "lap_completed": bool(ok) and all(bool(r.get("lap_completed")) for r in ok)}
        names = [k for k in (ok[0] if ok else {}) if k not in pt and k not in ("index", "repeat", "key")]
        for k in names:
            vals = np.array([_num(r.get(k)) for r in ok])
            if np.any(np.isfinite(vals)):
                pt[k] = float(np.nanmean(vals))
        pt["error"] = next((r.get("error") for r in runs if r.get("status") != "ok"), "")
        out.append(pt)
    return out


def ranking_metric(rows: Sequence[dict[str, Any]], metric: str = DEFAULT_METRIC) -> str:
    """``metric``, or ``"rms_e_y"`` when ``metric`` is the default settled metric and no
    successful row (or aggregated point) has a finite value of it (a custom runner, runs too
    short to settle)."""
    if metric != DEFAULT_METRIC:
        return metric
    if any(r.get("status", "ok") == "ok" and math.isfinite(_num(r.get(metric))) for r in rows):
        return metric
    logger.info("no run has %s (no run drove past its start): ranking by rms_e_y, the whole run", metric)
    return "rms_e_y"


def _eligible(points: list[dict], metric: str, cost: str) -> list[dict]:
    good = [p for p in points if p["ok"] and math.isfinite(_num(p.get(metric))) and math.isfinite(_num(p.get(cost)))]
    lapped = [p for p in good if p["lap_completed"]]
    return lapped or good


def pareto_front(points: Sequence[dict[str, Any]], metric: str = DEFAULT_METRIC,
                 cost: str = "solve_time_median") -> list[dict]:
    """Points no other point beats on both ``metric`` and ``cost`` (lower is better), by rising cost.

    ``metric``: see :func:`ranking_metric`."""
    metric = ranking_metric(points, metric)
    front, best = [], math.inf
    for p in sorted(points, key=lambda q: (_num(q.get(cost)), _num(q.get(metric)))):
        if _num(p.get(metric)) < best:
            front.append(p)
            best = _num(p.get(metric))
    return front


@dataclass
class Recommendation:
    """The smallest ``param`` whose ``metric`` is within ``within`` of the best, and its cost."""

    param: str
    value: Any
    overrides: dict[str, Any]
    metric: str
    metric_value: float
    best_value: float
    best_overrides: dict[str, Any]
    within: float
    cost: str
    cost_value: float
    point: int
    considered: int
    laps_required: bool = field(default=False)

    def summary(self) -> str:
        """One paragraph for the terminal / a report."""
        others = ", ".join(f"{k} = {v}" for k, v in self.overrides.items() if k != self.param)
        best = ", ".join(f"{k} = {v}" for k, v in self.best_overrides.items())
        return (f"recommended: {self.param} = {self.value}" + (f" (with {others})" if others else "")
                + f" -- {_value_text(self.metric, self.metric_value)}, within {self.within * 100:g} % of the best "
                f"{_value_text(self.metric, self.best_value, False)} ({best}); "
                f"{_value_text(self.cost, self.cost_value)}"
                + (f"; among {self.considered} points that completed the run" if self.laps_required
                   else f"; among {self.considered} successful points"))


def _default_param(params: Sequence[str], param: str | None) -> str:
    if param is not None:
        if param not in params:
            raise InputError(f"param: {param!r} is not a swept key; swept: {', '.join(params)}")
        return param
    if not params:
        raise InputError("param: the sweep has no swept keys")
    return "controller.horizon" if "controller.horizon" in params else params[0]


def recommend(rows: Sequence[dict[str, Any]], params: Sequence[str], param: str | None = None, within: float = 0.05,
              metric: str = DEFAULT_METRIC, cost: str = "solve_time_median") -> Recommendation | None:
    """The smallest value of ``param`` (default the horizon) within ``within`` (0.05 = 5 %) of the
    best ``metric``; ties broken by ``cost``. Only points whose runs completed their laps count
    when any did. None when no point succeeded.

    ``metric`` defaults to the RMS lateral error after the start transient
    (:func:`~mpc_tracking.tuning.metrics.settled_metrics`; see :func:`ranking_metric`)."""
    param = _default_param(params, param)
    metric = ranking_metric(rows, metric)
    if not (isinstance(within, (int, float)) and within >= 0):
        raise InputError(f"within: expected a fraction >= 0 (0.05 = 5 %), got {within!r}")
    points = _eligible(aggregate(rows, params), metric, cost)
    if not points:
        return None
    best = min(points, key=lambda p: p[metric])
    limit = best[metric] * (1.0 + within) if best[metric] >= 0 else best[metric] * (1.0 - within)
    cands = [p for p in points if p[metric] <= limit + 1e-15]
    numeric = all(math.isfinite(_num(p.get(param))) for p in cands)
    chosen = min(cands, key=lambda p: ((_num(p[param]) if numeric else 0.0), p[cost]))
    return Recommendation(
        param=param, value=chosen.get(param), overrides={k: chosen.get(k) for k in params}, metric=metric,
        metric_value=chosen[metric], best_value=best[metric], best_overrides={k: best.get(k) for k in params},
        within=float(within), cost=cost, cost_value=chosen[cost], point=chosen["point"], considered=len(points),
        laps_required=all(p["lap_completed"] for p in points),
    )


def _figure(nrows: int, height: float):
    from mpc_tracking.viz.plotting import new_figure

    fig = new_figure(figsize=(6.4, height * nrows), layout="constrained")
    axes = fig.subplots(nrows, 1, sharex=True, squeeze=False)[:, 0]
    return fig, axes


def _short(key: str) -> str:
    return "N" if key == "controller.horizon" else key.split(".")[-1]


def plot_metrics(rows: Sequence[dict[str, Any]], params: Sequence[str], param: str | None = None,
                 metrics: Sequence[str] | None = None, axes: Sequence[Any] | None = None):
    """Each metric against ``param``: one line per combination of the other swept keys.

    Hollow markers: points whose runs did not complete their laps. ``axes``: one Axes per
    metric to draw into (default a new Figure). Returns a :class:`~mpc_tracking.viz.plotting.Plot`
    (Figure, axes). ``metrics`` default: :data:`PLOT_METRICS`, less those no successful run has.
    """
    from mpc_tracking.viz.plotting import Plot

    param = _default_param(params, param)
    if metrics is None:
        metrics = [m for m in PLOT_METRICS if any(r.get("status") == "ok" and math.isfinite(_num(r.get(m)))
                                                  for r in rows)] or ["rms_e_y", "solve_time_median"]
    if not metrics:
        raise InputError("metrics: give at least one metric name, e.g. ('rms_e_y', 'solve_time_median')")
    others = [k for k in params if k != param]
    points = [p for p in aggregate(rows, params) if p["ok"] and math.isfinite(_num(p.get(param)))]
    groups: dict[tuple, list[dict]] = {}
    for p in points:
        groups.setdefault(tuple(str(p.get(k)) for k in others), []).append(p)
    if axes is None:
        fig, axes = _figure(len(metrics), 2.4)
    elif len(axes) != len(metrics):
        raise InputError(f"axes: expected one Axes per metric ({len(metrics)}), got {len(axes)}")
    else:
        fig = axes[0].figure
    for ax, m in zip(axes, metrics, strict=True):
        label, scale = metric_label(m)
        for gkey, pts in groups.items():
            pts = sorted(pts, key=lambda q: _num(q[param]))
            x = np.array([_num(q[param]) for q in pts])
            y = np.array([_num(q.get(m)) * scale for q in pts])
            name = ", ".join(f"{_short(k)}={v}" for k, v in zip(others, gkey, strict=True)) or None
            (line,) = ax.plot(x, y, "-", label=name)
            done = np.array([q["lap_completed"] for q in pts], dtype=bool)
            ax.plot(x[done], y[done], "o", color=line.get_color())
            ax.plot(x[~done], y[~done], "o", mfc="none", color=line.get_color())
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel(_short(param) if param == "controller.horizon" else param)
    if others and len(groups) > 1:
        axes[0].legend(fontsize="small")
    unfinished = any(not p["lap_completed"] for p in points)
    axes[0].set_title(f"sweep over {param}" + (" (hollow: run did not finish its laps)" if unfinished else ""))
    return Plot(fig, axes)


def plot_pareto(rows: Sequence[dict[str, Any]], params: Sequence[str], chosen: Recommendation | None = None,
                metric: str = DEFAULT_METRIC, cost: str = "solve_time_median", ax: Any = None):
    """Tracking error vs compute time of every successful point, the Pareto front, ``chosen`` marked.

    ``ax``: Axes to draw into (default a new Figure). Returns a
    :class:`~mpc_tracking.viz.plotting.Plot` (Figure, Axes). ``metric``: see :func:`ranking_metric`.
    """
    from mpc_tracking.viz.plotting import Plot

    metric = ranking_metric(rows, metric)
    points = _eligible(aggregate(rows, params), metric, cost)
    if ax is None:
        fig, (ax,) = _figure(1, 4.2)
    else:
        fig = ax.figure
    ylab, ys = metric_label(metric)
    xlab, xs = metric_label(cost)
    x = np.array([p[cost] * xs for p in points])
    y = np.array([p[metric] * ys for p in points])
    ax.plot(x, y, "o", color="0.6", label="sweep points")
    for p, xi, yi in zip(points, x, y, strict=True):
        ax.annotate(", ".join(f"{_short(k)}={p.get(k)}" for k in params), (xi, yi), textcoords="offset points",
                    xytext=(4, 4), fontsize="x-small")
    front = pareto_front(points, metric, cost)
    if front:
        ax.step([p[cost] * xs for p in front], [p[metric] * ys for p in front], "-", where="post", color="C0",
                label="Pareto front")
    if chosen is not None:
        at = next((p for p in points if p["point"] == chosen.point), None)
        cx = chosen.cost_value if chosen.cost == cost or at is None else at[cost]
        cy = chosen.metric_value if chosen.metric == metric or at is None else at[metric]
        ax.plot([cx * xs], [cy * ys], "*", ms=16, color="C3", label=f"chosen: {_short(chosen.param)}={chosen.value}")
    ax.set_xlabel(xlab)
    ax.set_ylabel(ylab)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title("tracking error vs compute time")
    return Plot(fig, ax)
