"""The grip-change benchmark's estimate figures (benchmarks/bench_grip_change.py): the window after a change of
the road starts at the first turn (``mu_err_2s_after_cornering_pct``) and at the first corner that tests the grip
(``mu_err_2s_after_limit_cornering_pct``: the path asks for at least LIMIT_DEMAND of the road's friction), None
-- no information -- when the lap has none."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import mpc_tracking as mt

ROOT = Path(__file__).resolve().parents[2]
V = 20.0  # speed [m/s]


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("bench_grip_change")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _lap(radius: float, t_read: float) -> tuple[dict[str, np.ndarray], mt.ReferencePath]:
    """120 m of straight, then a quarter circle of ``radius``, driven at V along the path; the road goes from 0.9
    to 0.6 at t = 2 s and the estimate follows at ``t_read`` [s]."""
    th = np.linspace(0.0, np.pi / 2, 200)
    x = np.concatenate([np.linspace(0.0, 120.0, 121)[:-1], 120.0 + radius * np.sin(th)])
    y = np.concatenate([np.zeros(120), radius * (1.0 - np.cos(th))])
    path = mt.ReferencePath(x, y, ds=1.0, width_left=5.0, width_right=5.0)
    t = np.arange(0.0, (path.length - 1.0) / V, 0.05)
    s = V * t
    series = {"t": t, "s": s, "v": np.full(t.size, V), "yaw": np.interp(s, path.s, np.unwrap(path.psi)),
              "mu_true": np.where(t >= 2.0, 0.6, 0.9), "mu_est": np.where(t >= t_read, 0.6, 0.9)}
    return series, path


class _Res(SimpleNamespace):
    def __len__(self) -> int:
        return len(self.series["t"])


@pytest.mark.parametrize("radius, limit", [(50.0, True), (200.0, False)])
def test_the_window_starts_at_the_first_corner_that_tests_the_grip(bench, radius, limit):
    """R 50 m at 20 m/s asks 8 m/s^2 (more than 0.9 of the 0.6 road's 5.9): both windows start at the corner (6 s)
    and the estimate, read there, is right. R 200 m asks 2 m/s^2: a turn (above 0.3 mu g) below the road's limit,
    where the tyres show nothing and the estimate holds -- the first window counts it as 50 % off, the limit
    window says no information (None)."""
    series, path = _lap(radius, 6.5 if limit else np.inf)
    out = bench._estimate_figures(_Res(series=series), path)
    assert out["t_change_s"] == pytest.approx(2.0)
    assert out["t_cornering_s"] == pytest.approx(120.0 / V, abs=0.2)
    assert out["mu_err_2s_after_cornering_pct"] == (0.0 if limit else 50.0)
    if limit:
        assert out["t_limit_cornering_s"] == pytest.approx(120.0 / V, abs=0.2)
        assert out["mu_err_2s_after_limit_cornering_pct"] == 0.0
    else:
        assert out["t_limit_cornering_s"] is None and out["mu_err_2s_after_limit_cornering_pct"] is None


@pytest.mark.parametrize("t_read, expected", [(6.5, 0.5), (3.0, 0.0), (np.inf, None)])
def test_time_to_within_10_percent_counts_from_the_first_cornering(bench, t_read, expected):
    """The estimate read 0.5 s into the corner (6 s): 0.5 s; read on the straight before it (a braking reading):
    0; never: None. The distributions count the laps within 2 s."""
    series, path = _lap(50.0, t_read)
    out = bench._estimate_figures(_Res(series=series), path)
    got = out["mu_within_10pct_after_cornering_s"]
    assert got == (None if expected is None else pytest.approx(expected, abs=0.06))
    row = {"track": "c0", "scenario": "rain", "vehicle_file": "dry", "grip_estimation": True, "completed": True,
           "max_body_overshoot_m": 0.0, "reaction_s": 1.0, **out}
    dist = bench.distributions([row])["rain_mu_within_10pct_after_cornering_s"]
    assert dist["within_2s"] == ("0/1" if expected is None else "1/1")


def test_no_information_is_counted_apart_in_the_distributions(bench):
    """The distributions give median/worst over the laps with a limit corner and count the others."""
    rows = []
    for k, err in enumerate((3.0, None, 7.0)):
        rows.append({"track": f"c{k}", "scenario": "rain", "vehicle_file": "dry", "grip_estimation": True,
                     "completed": True, "max_body_overshoot_m": 0.0, "mu_err_2s_after_cornering_pct": 50.0,
                     "mu_err_2s_after_limit_cornering_pct": err, "reaction_s": 1.0})
    out = bench.distributions(rows)["rain_mu_err_2s_after_limit_cornering_pct"]
    assert out["no_information"] == 1 and out["median"] == 5.0 and out["worst"] == 7.0


def test_wet_laps_start_at_the_lower_reference_of_the_two_files(bench, monkeypatch):
    """On the wet road both vehicle files start at the lower of their speed references at the start (one a wet
    car can hold there); on the other roads each controller starts at its own (None) -- wet_fast too: the same
    wet road, the dry file at the dry pace."""
    refs = {"dry": 36.6, "wet": 30.5}

    def controller(path, ident, friction, grip):
        assert friction == {"mu": bench.MU_WET} and grip
        return None, None, None, SimpleNamespace(reference_input=lambda s: np.array([refs[ident], 0.0]))

    monkeypatch.setattr(bench, "_controller", controller)
    idents = {"dry": "dry", "wet": "wet"}
    assert bench.start_speed(None, idents, "wet") == 30.5
    for scenario in ("dry", "wet_fast", "rain", "patch"):
        assert bench.start_speed(None, idents, scenario) is None
    assert bench.road("wet_fast", np.zeros(2)) == bench.road("wet", np.zeros(2)) == {"mu": bench.MU_WET}
    assert ("wet_fast", "dry", True) in bench.VALIDATION_RUNS


def test_the_oracle_sets_the_limits_to_the_road_under_the_car(bench):
    """--oracle: every step the limits are the share the plan would use on the road under the car, known exactly
    (the estimator's plan_share of it), and the nominal ones back on the nominal road."""
    from mpc_tracking.models.prediction import DynamicPrediction
    from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

    params = DynamicParams.bmw_320i()
    th = np.linspace(0.0, np.pi, 120)
    path = mt.ReferencePath(60.0 * np.sin(th), 60.0 * (1.0 - np.cos(th)), ds=1.0, width_left=4.0, width_right=4.0)
    st = mt.MPCSettings(prediction_model="dynamic", horizon=10, v_max=20.0, a_y_max=7.0, decel_max=7.0,
                        accel_max=3.0, grip_mu=0.9)
    mpc = mt.SpatialMPC(path, mt.VehicleParams(wheelbase=params.wheelbase), st, prediction=DynamicPrediction(params))
    road = [0.6]
    bench.follow_the_road(mpc, SimpleNamespace(road_friction=lambda: road[0]))
    mpc.grip.step(0.0, None, None)
    share = mpc.grip.estimator.plan_share(0.6)
    assert 0.6 / 0.9 < share < 0.9 and mpc.grip.ratio == share
    assert mpc.settings.a_y_max == pytest.approx(share * 7.0) and mpc.settings.decel_max == pytest.approx(share * 7.0)
    road[0] = 0.9
    mpc.grip.step(0.05, None, None)
    assert mpc.grip.ratio == 1.0 and mpc.settings.a_y_max == pytest.approx(7.0)
