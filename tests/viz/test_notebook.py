"""Notebook-native results: compact repr, HTML table, DataFrame export; --version, py.typed, LICENSE."""
from __future__ import annotations

import configparser
import re
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.cli.main import main
from mpc_tracking.results import SERIES

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def lap():
    """One lap of a 20 m circle with a short horizon (about a second)."""
    th = np.linspace(0, 2 * np.pi, 120, endpoint=False)
    path = mt.ReferencePath(20 * np.cos(th), 20 * np.sin(th), closed=True, ds=0.5, width_left=3.0, width_right=3.0)
    veh = mt.VehicleParams()
    mpc = mt.SpatialMPC(path, veh, mt.MPCSettings(horizon=15, v_max=8.0))
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": veh.wheelbase})
    return mt.simulate(path, mpc, plant, laps=1, e_y0=0.5)


def _empty(**kw) -> mt.SimulationResult:
    series = {k: np.zeros(0) for k in SERIES}
    return mt.SimulationResult(series=series, horizon_xy=np.zeros((0, 16, 2)), **kw)


# ---------------------------------------------------------------------- repr
def test_repr_is_one_short_line_with_the_outcome(lap):
    text = repr(lap)
    assert len(text) < 300 and "\n" not in text
    assert "completed" in text and f"{len(lap)} steps" in text and "laps 1" in text
    assert f"lap time {lap.lap_times[0]:.2f} s" in text
    assert f"RMS e_y {lap.metrics['rms_e_y']:.3f} m" in text
    assert "array" not in text and "[" not in text


def test_repr_of_failed_and_empty_runs_stays_short():
    res = _empty(reason="error", message="the plant raised: " + "x" * 500)
    text = repr(res)
    assert len(text) < 300 and text.startswith("<SimulationResult error (the plant raised")
    assert "0 steps" in text and "duration 0.00 s" in text


# ---------------------------------------------------------------------- HTML
def test_repr_html_is_a_small_table_with_units_and_the_rms(lap):
    page = lap._repr_html_()
    m = lap.metrics
    assert "<table" in page and "</table>" in page
    assert "<th" in page and ">unit<" in page and "<td>m</td>" in page and "<td>ms</td>" in page
    assert f"{m['rms_e_y']:.3f}" in page and f"{m['max_abs_e_y']:.3f}" in page
    assert "<svg" in page and page.count("<polyline") == 2  # centre line and trajectory
    assert len(page.encode()) < 20_000  # measured 7.7 kB


def test_repr_html_escapes_the_message_and_works_without_data():
    page = _empty(reason="error", message="<b>bad</b>")._repr_html_()
    assert "&lt;b&gt;bad&lt;/b&gt;" in page and "<b>" not in page
    assert "<table" in page and "<svg" not in page  # no path, no samples: no sketch


# ---------------------------------------------------------------------- summary units
def test_summary_uses_metres_like_the_cli(lap):
    text = lap.summary()
    m = lap.metrics
    assert f"RMS {m['rms_e_y']:.3f} m, max {m['max_abs_e_y']:.3f} m" in text
    assert not re.search(r"\bcm\b", text)


# ---------------------------------------------------------------------- pandas
def test_to_pandas_one_column_per_series_indexed_by_time(lap):
    pytest.importorskip("pandas")
    df = lap.to_pandas()
    assert list(df.columns) == [k for k in SERIES if k != "t"]
    assert len(df) == len(lap) and df.index.name == "t"
    np.testing.assert_array_equal(df.index.to_numpy(), lap.t)
    for k in df.columns:
        np.testing.assert_array_equal(df[k].to_numpy(), lap.series[k])
    assert df.attrs["units"]["e_y"] == "m" and df.attrs["units"]["t"] == "s" and df.attrs["units"]["status"] == ""
    assert lap.to_dataframe().equals(df)


def test_to_pandas_skips_multi_column_series(lap):
    pytest.importorskip("pandas")
    res = mt.SimulationResult(series={**lap.series, "extra_2d": np.zeros((len(lap), 3))},
                              horizon_xy=lap.horizon_xy, reason=lap.reason)
    assert "extra_2d" not in res.to_pandas().columns


def test_to_pandas_without_pandas_names_the_extra(lap, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError, match=r"pip install mpc_tracking\[pandas\]"):
        lap.to_pandas()
    with pytest.raises(ImportError, match="needs pandas"):
        lap.to_dataframe()


# ---------------------------------------------------------------------- packaging
def test_version_option(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"mpc-tracking {version('mpc_tracking')}\n"
    assert version("mpc_tracking") == mt.__version__  # setup.cfg reads it from the package


def test_py_typed_is_in_the_package_and_shipped():
    assert (Path(mt.__file__).parent / "py.typed").is_file()
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert "py.typed" in cfg["options.package_data"]["mpc_tracking"]


def test_license_file_matches_setup_cfg():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "the mpc_tracking authors" in text
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert cfg["metadata"]["license"] == "MIT" and "LICENSE" in cfg["metadata"]["license_files"]
    assert "pandas" in cfg["options.extras_require"]["pandas"] and "pandas" in cfg["options.extras_require"]["test"]


def test_realtime_overruns_and_body_overshoot_are_counted_and_reported():
    """Steps whose controller time exceeds the control period are counted (metrics, summary, CLI
    table), with the worst step time; so is the largest distance the body went past the edge."""
    from mpc_tracking.cli.main import _summary_table

    path = mt.load_path("oval", ds=0.5)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=10, v_max=8.0))
    plant = mt.create_model("kinematic_bicycle", {"wheelbase": 2.7})
    res = mt.simulate(path, mpc, plant, t_max=2.0)
    step = res.series["step_time"]
    m = res.metrics
    assert m["control_period"] == 0.05 and m["worst_step_time"] == pytest.approx(float(step.max()))
    assert m["realtime_overruns"] == int(np.sum(step > 0.05))
    res.series["step_time"] = step.copy()
    res.series["step_time"][[3, 7]] = 0.2  # two overruns of a 50 ms period
    m = res.metrics
    assert m["realtime_overruns"] == 2 and m["worst_step_time"] == 0.2
    text = res.summary()
    assert "2 of" in text and "50 ms period (worst 200.0 ms)" in text and "body never past it" in text
    table = _summary_table(res)
    assert "real-time overruns" in table and "2 (worst step 200.0 ms)" in table and "body past the edge" in table


def test_plots_render_inline_as_png_and_still_unpack(tmp_path):
    """Jupyter shows the last expression's _repr_png_: result.plot() displays without plt.show()."""
    import mpc_tracking as mt
    from mpc_tracking.viz.plotting import Plot

    path = mt.load_path("oval", ds=1.0)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=10, v_max=8.0))
    result = mt.simulate(path, mpc, mt.create_model("kinematic_bicycle"), t_max=1.0)
    for kind in ("track", "timeseries", "path"):
        shown = result.plot(kind)
        assert isinstance(shown, Plot) and isinstance(shown, tuple) and len(shown) == 2
        fig, ax = shown
        assert fig is shown.fig and ax is shown.ax
        png = shown._repr_png_()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_repr_html_lists_rejoin_steps_when_there_were_some():
    import mpc_tracking as mt

    path = mt.load_path("oval", ds=0.5)
    free = mt.ReferencePath.from_waypoints(path.s, path.x, path.y, path.psi, path.kappa, closed=True,
                                           length=path.length)
    mpc = mt.SpatialMPC(free, mt.VehicleParams(), mt.MPCSettings(horizon=10, v_max=8.0))
    res = mt.simulate(free, mpc, mt.create_model("kinematic_bicycle"), e_psi0=2.5, t_max=3.0)
    assert res.metrics["rejoin_steps"] > 0
    assert "rejoin steps" in res._repr_html_() and "rejoin steps" in res.summary()
