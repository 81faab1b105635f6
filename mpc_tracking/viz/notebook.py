"""How a :class:`~mpc_tracking.results.SimulationResult` shows in a notebook: an HTML table of its
metrics (units in their own column) next to an inline SVG sketch of the path and the trajectory.

Cheap and small (a few kB, at most ``points`` vertices per line), so a cell that ends in
``result`` renders at once.
"""
from __future__ import annotations

import html
from typing import Any

import numpy as np

__all__ = ["result_html", "svg_sketch"]


def result_html(result: Any) -> str:
    """The HTML of ``result`` in Jupyter: its summary metrics as a table, and :func:`svg_sketch`.

    Parameters
    ----------
    result : SimulationResult

    Returns
    -------
    str
        An HTML fragment (a ``<table>``, beside an ``<svg>`` when there is something to draw).
    """
    m = result.metrics
    e = html.escape
    rows: list[tuple[str, str, str]] = [
        ("outcome", "", m["reason"] + (f": {result.message}" if result.message else "")),
        ("laps completed", "", str(m["laps_completed"])),
    ]
    if result.lap_times:
        rows.append(("lap time", "s", ", ".join(f"{t:.2f}" for t in result.lap_times)))
    rows += [
        ("duration", "s", f"{m['duration']:.2f}"),
        ("RMS |e_y|", "m", f"{m['rms_e_y']:.3f}"),
        ("max |e_y|", "m", f"{m['max_abs_e_y']:.3f}"),
        ("max |e_psi|", "rad", f"{m['max_abs_e_psi']:.3f}"),
        ("mean speed", "m/s", f"{m['mean_speed']:.2f}"),
        ("solve time median / p95", "ms", f"{m['solve_time_median'] * 1e3:.2f} / {m['solve_time_p95'] * 1e3:.2f}"),
        ("infeasible steps", "", f"{m['infeasible_steps']} of {m['steps']}"),
        ("corridor-violation steps", "", str(m["corridor_violation_steps"])),
    ]
    if m["rejoin_steps"]:
        rows.append(("rejoin steps", "", str(m["rejoin_steps"])))
    if np.isfinite(m["max_body_overshoot"]):
        rows.append(("max body overshoot", "m", f"{m['max_body_overshoot']:.3f}"))
    body = "".join(
        f"<tr><td style='text-align:left'>{e(k)}</td><td>{e(u)}</td><td style='text-align:left'>{e(v)}</td></tr>"
        for k, u, v in rows
    )
    table = ("<table><thead><tr><th style='text-align:left'>SimulationResult</th><th>unit</th>"
             f"<th style='text-align:left'>value</th></tr></thead><tbody>{body}</tbody></table>")
    sketch = svg_sketch(result)
    if not sketch:
        return table
    return (f"<div style='display:flex;gap:1em;align-items:flex-start'><div>{table}</div>"
            f"<div>{sketch}</div></div>")


def svg_sketch(result: Any, size: int = 220, points: int = 300) -> str:
    """An inline SVG plan view: the path's centre line (grey) and the trajectory (blue).

    Parameters
    ----------
    result : SimulationResult
    size : int
        Longer side of the drawing [px].
    points : int
        Most vertices drawn per line.

    Returns
    -------
    str
        The ``<svg>`` element; empty when there is nothing finite to draw.
    """
    lines: list[tuple[np.ndarray, np.ndarray, str]] = []
    if result.path is not None:
        lines.append((np.asarray(result.path.x, dtype=float), np.asarray(result.path.y, dtype=float), "#999"))
    if len(result):
        lines.append((np.asarray(result.series["x"], dtype=float), np.asarray(result.series["y"], dtype=float),
                      "#1f77b4"))
    finite = [(x[np.isfinite(x) & np.isfinite(y)], y[np.isfinite(x) & np.isfinite(y)], c) for x, y, c in lines]
    finite = [(x, y, c) for x, y, c in finite if x.size >= 2]
    if not finite:
        return ""
    xs = np.concatenate([x for x, _, _ in finite])
    ys = np.concatenate([y for _, y, _ in finite])
    x0, y0 = float(xs.min()), float(ys.min())
    span = max(float(xs.max()) - x0, float(ys.max()) - y0, 1e-9)
    scale = (size - 10) / span
    w = (float(xs.max()) - x0) * scale + 10
    h = (float(ys.max()) - y0) * scale + 10
    parts = []
    for x, y, colour in finite:
        idx = np.unique(np.linspace(0, x.size - 1, min(points, x.size)).round().astype(int))
        px = (x[idx] - x0) * scale + 5
        py = h - ((y[idx] - y0) * scale + 5)  # SVG y points down
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in zip(px, py, strict=True))
        parts.append(f"<polyline points='{pts}' fill='none' stroke='{colour}' stroke-width='1.5'/>")
    return (f"<svg xmlns='http://www.w3.org/2000/svg' width='{w:.0f}' height='{h:.0f}' "
            f"viewBox='0 0 {w:.1f} {h:.1f}'>{''.join(parts)}</svg>")
