"""How a :class:`~mpc_tracking.tuning.sweep.SweepResult` shows in a notebook: a table of its grid
points (the recommended one in bold), the recommendation, and the Pareto figure as an inline PNG.

Small (the figure at 60 dpi: about 20-30 kB of base64), so a cell that ends in ``res`` renders at
once and the picture survives an HTML export of the notebook.
"""
from __future__ import annotations

import base64
import html
import io
import math
from typing import Any

from mpc_tracking.tuning.analysis import _value_text, metric_label

__all__ = ["sweep_html", "TABLE_METRICS", "MAX_TABLE_ROWS"]

#: metric columns of the table, in this order (those no point has are left out)
TABLE_METRICS = ("rms_e_y_settled", "rms_e_y", "max_abs_e_y", "lap_time", "solve_time_median", "solve_time_p95",
                 "infeasible_steps")
#: most grid points listed; the rest are counted below the table
MAX_TABLE_ROWS = 50


def _cell(name: str, value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return html.escape(str(value))
    return _value_text(name, float(value), with_name=False).split(" ")[0]


def sweep_html(result: Any, dpi: int = 60) -> str:
    """The HTML of ``result`` in Jupyter.

    Parameters
    ----------
    result : SweepResult
    dpi : int
        Resolution of the embedded Pareto figure.

    Returns
    -------
    str
        An HTML fragment: a ``<table>`` (one row per grid point), a paragraph with the
        recommendation, and an ``<img>`` of :meth:`SweepResult.plot_pareto` when a point succeeded.
    """
    e = html.escape
    points = result.points()
    rec = result._recommendation()
    shown = [m for m in TABLE_METRICS if any(isinstance(p.get(m), (int, float)) and math.isfinite(p[m])
                                             for p in points)]
    head = [*result.params, "ok/runs", "lap", *(metric_label(m)[0] for m in shown)]
    rows = []
    for p in points[:MAX_TABLE_ROWS]:
        cells = [*(e(str(p.get(k))) for k in result.params), f"{p['ok']}/{p['runs']}", str(p["lap_completed"]),
                 *(_cell(m, p.get(m)) for m in shown)]
        style = " style='font-weight:bold'" if rec is not None and p["point"] == rec.point else ""
        rows.append(f"<tr{style}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    more = len(points) - MAX_TABLE_ROWS
    table = ("<table><thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr></thead><tbody>"
             + "".join(rows) + "</tbody></table>" + (f"<p>... and {more} more points</p>" if more > 0 else ""))
    title = (f"<p><b>SweepResult</b>: {len(result.rows)} runs, {result.n_failed} failed, "
             f"{result.wall_time:.1f} s</p>")
    summary = f"<p>{e(rec.summary())}</p>" if rec is not None else "<p>no recommendation: no run succeeded</p>"
    figure = _pareto_png(result, rec, dpi) if rec is not None else ""
    return (f"<div>{title}<div style='display:flex;gap:1em;align-items:flex-start;flex-wrap:wrap'>"
            f"<div>{table}{summary}</div>{figure}</div></div>")


def _pareto_png(result: Any, rec: Any, dpi: int) -> str:
    fig, _ = result.plot_pareto(chosen=rec)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f"<img alt='Pareto front of the sweep' src='data:image/png;base64,{data}'/>"
