"""The settled metrics a sweep ranks by: analytic cases, the closed loop, the ranking they give."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from mpc_tracking.errors import InputError
from mpc_tracking.scenario.core import default_scenario, run_scenario
from mpc_tracking.tuning.analysis import pareto_front, ranking_metric, recommend
from mpc_tracking.tuning.metrics import SETTLE_FRACTION, settled_metrics


class _Run(SimpleNamespace):
    def __len__(self) -> int:
        return len(self.series["x"])


def _straight(e_y: np.ndarray, length: float = 100.0) -> _Run:
    """A car driving along y = 0 with the given lateral errors, one sample per metre."""
    x = np.arange(e_y.size, dtype=float)
    return _Run(path=SimpleNamespace(length=length), series={"x": x, "y": np.zeros_like(x), "e_y": e_y})


def test_the_first_fraction_of_the_path_is_left_out():
    e_y = np.where(np.arange(101) < 10, 1.0, 0.02)  # 1 m for the first 10 m, then 2 cm
    m = settled_metrics(_straight(e_y), 0.1)
    assert m["settle_distance"] == pytest.approx(10.0)
    assert m["rms_e_y_settled"] == pytest.approx(0.02) and m["max_abs_e_y_settled"] == pytest.approx(0.02)
    assert settled_metrics(_straight(e_y), 0.0)["rms_e_y_settled"] == pytest.approx(np.sqrt(np.mean(e_y**2)))


def test_a_run_that_never_settles_has_nan_settled_metrics():
    m = settled_metrics(_straight(np.ones(5)), 0.1)  # drives 4 m of a 100 m path
    assert math.isnan(m["rms_e_y_settled"]) and math.isnan(m["max_abs_e_y_settled"])


@pytest.mark.parametrize("bad", [-0.1, 1.0, float("nan"), "0.1", True])
def test_bad_settle_fraction(bad):
    with pytest.raises(InputError, match="settle_fraction: expected a fraction in \\[0, 1\\)"):
        settled_metrics(_straight(np.ones(5)), bad)


def test_closed_loop_from_an_offset_start_excludes_the_transient():
    run = run_scenario(default_scenario().with_overrides({"simulation.t_max": 6.0, "simulation.e_y0": 1.0}))
    m = settled_metrics(run)
    assert m["settle_distance"] == pytest.approx(SETTLE_FRACTION * run.path.length)
    assert abs(run.series["e_y"][0]) > 0.9  # it starts 1 m off the line ...
    assert m["rms_e_y_settled"] < 0.2 * run.metrics["rms_e_y"]  # ... and that is most of the whole-run RMS


def _rows(rms, settled, cost=(1e-3, 2e-3, 3e-3)):
    return [{"index": i, "point": i, "repeat": 0, "key": str(i), "controller.horizon": n, "status": "ok",
             "rms_e_y": r, "rms_e_y_settled": s, "solve_time_median": c, "lap_completed": True}
            for i, (n, r, s, c) in enumerate(zip((10, 20, 30), rms, settled, cost, strict=True))]


def test_recommendation_ranks_by_the_settled_error_by_default():
    # the whole-run RMS is the start transient (N = 10 looks best); after it N = 30 tracks best
    rows = _rows(rms=[0.125, 0.128, 0.129], settled=[0.010, 0.006, 0.004])
    assert recommend(rows, ["controller.horizon"]).value == 30
    assert recommend(rows, ["controller.horizon"]).metric == "rms_e_y_settled"
    assert recommend(rows, ["controller.horizon"], metric="rms_e_y").value == 10
    assert [p["controller.horizon"] for p in pareto_front(rows)] == [10, 20, 30]


def test_rows_without_settled_metrics_rank_by_the_whole_run():
    rows = _rows(rms=[0.125, 0.128, 0.129], settled=[float("nan")] * 3)
    assert ranking_metric(rows) == "rms_e_y"
    assert recommend(rows, ["controller.horizon"]).value == 10
