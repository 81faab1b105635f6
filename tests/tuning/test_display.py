"""A sweep in a notebook: one-line repr, HTML table + Pareto figure, DataFrame, figures that draw,
progress bar in Jupyter, a warning once per sweep."""
from __future__ import annotations

import base64
import importlib
import logging
import re
import sys
import types

import numpy as np
import pytest

from mpc_tracking.scenario.core import default_scenario
from mpc_tracking.tuning.analysis import metric_label
from mpc_tracking.tuning.sweep import sweep

sweep_module = importlib.import_module("mpc_tracking.tuning.sweep")  # the package re-exports sweep() over it


@pytest.fixture(scope="module")
def res():
    """Three horizons, 4 s of the oval from 1 m off the line (the settled metrics exist)."""
    base = default_scenario().with_overrides({"simulation.t_max": 4.0, "simulation.e_y0": 1.0})
    return sweep(base, {"controller.horizon": [5, 10, 20]}, executor="serial", progress=False)


def test_repr_is_one_line_without_the_rows(res):
    text = repr(res)
    assert "\n" not in text and len(text) < 200
    assert text.startswith("<SweepResult: 3 runs over controller.horizon (3 points), 0 failed")
    assert f"recommended controller.horizon = {res.recommend().value}" in text


def test_html_has_a_row_per_point_and_the_pareto_figure(res):
    html = res._repr_html_()
    body = html.split("<tbody>")[1].split("</tbody>")[0]
    assert body.count("<tr") == 3
    assert body.count("font-weight:bold") == 1  # the recommended point
    assert metric_label("rms_e_y_settled")[0] in html
    (png,) = re.findall(r"data:image/png;base64,([^']+)", html)
    assert base64.b64decode(png)[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(html) < 100_000


def test_to_pandas_has_the_rows_and_the_points(res):
    pytest.importorskip("pandas")
    df = res.to_pandas()
    assert list(df.index) == [0, 1, 2] and df.index.name == "index"
    assert list(df["controller.horizon"]) == [5, 10, 20]
    assert np.allclose(df["rms_e_y_settled"], [r["rms_e_y_settled"] for r in res.rows])
    pts = res.to_pandas(points=True)
    assert pts.index.name == "point" and list(pts["ok"]) == [1, 1, 1]


def test_plot_pareto_draws_the_points_and_shows_inline(res):
    plot = res.plot_pareto(chosen=res.recommend())
    fig, ax = plot
    _, ys = metric_label("rms_e_y_settled")
    _, xs = metric_label("solve_time_median")
    dots = next(line for line in ax.lines if line.get_label() == "sweep points")
    expected = sorted(zip((r["solve_time_median"] * xs for r in res.rows),
                          (r["rms_e_y_settled"] * ys for r in res.rows), strict=True))
    assert sorted(zip(dots.get_xdata(), dots.get_ydata(), strict=True)) == pytest.approx(expected)
    assert any(line.get_marker() == "*" for line in ax.lines)
    assert plot._repr_png_()[:4] == b"\x89PNG"


def test_plot_metrics_defaults_to_the_settled_error(res):
    fig, axes = res.plot_metrics()
    assert [ax.get_ylabel() for ax in axes][:2] == [metric_label("rms_e_y_settled")[0],
                                                    metric_label("rms_e_y")[0]]
    assert all(len(ax.lines) >= 1 for ax in axes)


def _warns(scenario, overrides):
    logging.getLogger("mpc_tracking.paths.fake").warning("path: waypoint spacing 2.0 m is coarse")
    return {"reason": "completed", "rms_e_y": 0.01 * overrides["controller.horizon"], "solve_time_median": 1e-3,
            "lap_completed": True}


def test_a_warning_of_the_runs_is_shown_once_per_sweep(caplog):
    with caplog.at_level(logging.INFO, logger="mpc_tracking"):
        res = sweep(default_scenario(), {"controller.horizon": [5, 10, 20]}, executor="serial", progress=False,
                    runner=_warns)
    shown = [r for r in caplog.records if "waypoint spacing 2.0 m is coarse" in r.getMessage()]
    assert len(shown) == 2  # the warning, and the count at the end
    assert shown[0].levelno == logging.WARNING and "shown once per sweep" in shown[0].getMessage()
    assert shown[1].levelno == logging.INFO and "3 of the 3 runs warned" in shown[1].getMessage()
    assert all("warnings" not in r for r in res.rows)
    assert res.recommend().metric == "rms_e_y"  # the runner gives no settled metrics


def test_warnings_outside_a_sweep_still_reach_the_handlers(caplog):
    with caplog.at_level(logging.WARNING):
        logging.getLogger("mpc_tracking.paths.fake").warning("after the sweep")
    assert "after the sweep" in caplog.text


def test_progress_bar_is_on_in_a_notebook(monkeypatch, capsys):
    class ZMQInteractiveShell:  # the name IPython's kernel shell has
        pass

    fake = types.ModuleType("IPython")
    fake.get_ipython = ZMQInteractiveShell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert sweep_module._in_notebook()
    sweep(default_scenario(), {"controller.horizon": [5, 10]}, executor="serial", runner=_warns)
    assert "2/2" in capsys.readouterr().err
    fake.get_ipython = lambda: None  # type: ignore[attr-defined]
    assert not sweep_module._in_notebook()
    sweep(default_scenario(), {"controller.horizon": [5, 10]}, executor="serial", runner=_warns)
    assert "2/2" not in capsys.readouterr().err  # stderr is no terminal under pytest
