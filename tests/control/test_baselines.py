"""The geometric baselines (pure pursuit, Stanley): analytic truths of their laws, limits, laps, bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.control import TrackingLimits

L = 2.7  # the default VehicleParams' wheelbase [m], also given to the plant
BASELINES = (mt.PurePursuit, mt.Stanley)


def _line(length: float = 400.0) -> mt.ReferencePath:
    x = np.linspace(0.0, length, int(length / 0.5) + 1)
    return mt.ReferencePath(x, np.zeros_like(x), closed=False, ds=0.5, width_left=5.0, width_right=5.0, name="line")


def _ring(radius: float) -> mt.ReferencePath:
    th = np.linspace(0, 2 * np.pi, int(2 * np.pi * radius / 0.25), endpoint=False)
    return mt.ReferencePath(radius * np.cos(th), radius * np.sin(th), closed=True, ds=0.25, width_left=3.0,
                            width_right=3.0, name="ring")


def _plant(**params):
    return mt.create_model("kinematic_bicycle", {"wheelbase": L, **params})


@pytest.fixture(scope="module")
def ring_runs():
    """One lap at 3 m/s on a circle of radius 10 m with each baseline (R chosen so that atan(L/R) and
    asin(L/R) differ by 0.01 rad)."""
    path = _ring(10.0)
    lim = TrackingLimits(v_max=3.0)
    return path, {c.name: mt.simulate(path, c(path, limits=lim), _plant(), t_max=30.0) for c in BASELINES}


def test_pure_pursuit_steady_steering_on_a_circle_is_atan_l_over_r(ring_runs):
    _, runs = ring_runs
    r = runs["pure_pursuit"]
    assert r.reason == "completed"
    half = r.series["delta_cmd"][len(r) // 2:]
    assert np.median(half) == pytest.approx(math.atan(L / 10.0), abs=1e-5)
    assert np.abs(r.e_y[len(r) // 2:]).max() < 1e-4  # the rear axle on the circle


def test_stanley_steady_steering_on_a_circle_is_asin_l_over_r(ring_runs):
    """Stanley puts the front axle on the circle: steering asin(L/R), the rear axle R - sqrt(R^2 - L^2) inside."""
    _, runs = ring_runs
    r = runs["stanley"]
    assert r.reason == "completed"
    n = len(r) // 2
    assert np.median(r.series["delta_cmd"][n:]) == pytest.approx(math.asin(L / 10.0), abs=1e-4)
    assert np.median(r.e_y[n:]) == pytest.approx(10.0 - math.sqrt(100.0 - L * L), abs=1e-3)  # left = inside


def test_pure_pursuit_one_step_on_a_circle_is_atan_l_over_r_for_any_lookahead():
    path = _ring(20.0)
    x, y = path.point_at(np.array([5.0]))[0]
    psi = float(path.interpolate(np.array([5.0]))["psi"][0])
    for gain in (0.0, 0.4, 2.0):
        pp = mt.PurePursuit(path, params=mt.PurePursuitParams(lookahead_gain=gain))
        cmd = pp.solve(path.project(x, y, psi), measured={"speed": 5.0})
        assert cmd.delta == pytest.approx(math.atan(L / 20.0), abs=2e-4)
        assert math.hypot(*(cmd.target - (x, y))) == pytest.approx(pp.lookahead(5.0), rel=1e-6)


def test_pure_pursuit_offset_on_a_straight_decays_with_damping_one_over_sqrt2():
    """Linearized about a line, e'' + (2/L_d) e' + (2/L_d^2) e = 0: damping 1/sqrt(2) for any L_d, so the
    offset falls monotonically to zero, overshoots once by exp(-pi) = 4.3 % and has settled after that."""
    path = _line()
    r = mt.simulate(path, mt.PurePursuit(path, limits=TrackingLimits(v_max=5.0)), _plant(), e_y0=0.5, t_max=20.0)
    e = r.e_y
    cross = int(np.argmax(e < 0))
    assert cross > 0 and np.all(np.diff(e[:cross]) <= 1e-12)
    assert -e.min() / 0.5 == pytest.approx(math.exp(-math.pi), rel=0.05)
    assert e[int(np.argmin(e)):].max() < 0.05 * -e.min()  # no second swing to speak of


@pytest.mark.parametrize("softening, v", [(0.0, 1.0), (0.0, 5.0), (1.0, 1.0), (1.0, 2.0), (1.0, 5.0)])
def test_stanley_cross_track_error_decays_at_rate_k(softening, v):
    """e_f' = -k_eff e_f with k_eff = k v / (v + v_soft); applied every T as a held command, the front axle's
    error shrinks by (1 - k_eff T) per period: rate -ln(1 - k_eff T) / T."""
    path = _line()
    k, T = 2.5, 0.05
    st = mt.Stanley(path, params=mt.StanleyParams(gain=k, softening=softening),
                    limits=TrackingLimits(v_max=v, v_min=min(0.5, v), control_period=T))
    r = mt.simulate(path, st, _plant(), e_y0=0.2, t_max=10.0)
    e_f = r.e_y + L * np.sin(r.series["e_psi"])  # front axle on a straight
    t = r.t
    window = (e_f < 0.9 * 0.2) & (e_f > 0.1 * 0.2) & (t < t[int(np.argmax(e_f < 0.02))])
    rate = -np.polyfit(t[window], np.log(e_f[window]), 1)[0]
    k_eff = k * v / (v + softening)
    assert rate == pytest.approx(-math.log(1 - k_eff * T) / T, rel=0.02)
    assert e_f.min() > -1e-4  # no overshoot


@pytest.mark.parametrize("cls", BASELINES)
def test_steering_is_clipped_and_rate_limited(cls):
    path = _line()
    lim = TrackingLimits(v_max=3.0, delta_max=0.2, delta_rate_max=0.5)
    r = mt.simulate(path, cls(path, limits=lim), _plant(), e_y0=3.0, t_max=10.0)
    d = r.series["delta_cmd"]
    assert np.abs(d).max() == pytest.approx(0.2)  # the big offset saturates the steering
    assert np.abs(np.diff(d)).max() <= 0.5 * 0.05 + 1e-12
    assert abs(r.e_y[-1]) < 0.05


@pytest.mark.parametrize("cls", BASELINES)
def test_speed_follows_the_profile_within_the_rate_limits(cls):
    path = mt.load_path("oval", ds=0.5)
    lim = TrackingLimits(v_max=8.0, a_y_max=3.0, accel_max=2.0, decel_max=4.0)
    ctrl = cls(path, limits=lim)
    r = mt.simulate(path, ctrl, _plant(), t_max=15.0)
    v = r.series["v_cmd"]
    dv = np.diff(v) / 0.05
    assert dv.max() <= 2.0 + 1e-9 and dv.min() >= -4.0 - 1e-9
    assert np.all(v <= ctrl.speed_at(r.s) + 1e-9 + 2.0 * 0.05)  # at most one step of acceleration above it
    assert np.allclose(r.series["v_ref"], ctrl.speed_at(r.s))
    assert np.nanmax(v) > 0.9 * min(8.0, float(ctrl.v_profile.max()))


@pytest.mark.parametrize("cls", BASELINES)
@pytest.mark.parametrize("name", ["oval", "figure_eight", "double_lane_change"])
def test_closed_loop_on_bundled_paths_finishes(cls, name):
    path = mt.load_path(name, ds=0.5)
    lim = TrackingLimits(v_max=8.0, accel_max=3.0, decel_max=5.0, delta_rate_max=1.0)
    r = mt.simulate(path, cls(path, limits=lim), _plant())
    assert r.reason == ("completed" if path.closed else "end_of_path")
    assert np.abs(r.e_y).max() < 0.7
    assert r.horizon_xy.shape == (len(r), 0, 2)
    assert r.info["controller"] == cls.name and r.info["horizon"] == 0


def test_a_baseline_run_saves_loads_plots_and_summarises(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    path = mt.load_path("oval", ds=0.5)
    r = mt.simulate(path, mt.Stanley(path), _plant(), t_max=3.0)
    r.save(tmp_path / "run.npz")
    back = mt.SimulationResult.load(tmp_path / "run.npz")
    assert back.horizon_xy.shape == (len(r), 0, 2)
    np.testing.assert_array_equal(back.series["delta_cmd"], r.series["delta_cmd"])
    assert back.info["controller"] == "stanley"
    for kind in ("track", "timeseries"):
        assert r.plot(kind) is not None
    m = r.metrics
    assert m["rms_e_y"] == pytest.approx(float(np.sqrt(np.mean(r.e_y ** 2))), rel=1e-9)
    assert m["max_body_overshoot"] == 0.0 and m["infeasible_steps"] == 0
    assert "command time" in r.summary() and "MPC" not in r.summary()


BAD = [
    (lambda: mt.PurePursuitParams(lookahead_gain=-0.1), "lookahead_gain"),
    (lambda: mt.PurePursuitParams(lookahead_min=0.0), "lookahead_min"),
    (lambda: mt.PurePursuitParams(lookahead_min=5.0, lookahead_max=4.0), "lookahead_min <= lookahead_max"),
    (lambda: mt.StanleyParams(gain=0.0), "StanleyParams.gain"),
    (lambda: mt.StanleyParams(softening=float("nan")), "StanleyParams.softening"),
    (lambda: mt.StanleyParams(yaw_damping=-1.0), "yaw_damping"),
    (lambda: TrackingLimits(control_period=0.0), "control_period"),
    (lambda: TrackingLimits(v_min=5.0, v_max=4.0), "v_min <= v_max"),
    (lambda: TrackingLimits(delta_max=2.0), "delta_max"),
    (lambda: TrackingLimits(v_max=float("inf")), "v_max"),
    (lambda: mt.PurePursuit(_line(), params=mt.StanleyParams()), "params: expected PurePursuitParams"),
    (lambda: mt.Stanley(_line(), limits=mt.MPCSettings()), "limits: expected TrackingLimits"),
    (lambda: mt.Stanley("oval"), "path: expected a ReferencePath"),
]


@pytest.mark.parametrize("make, words", BAD, ids=[w for _, w in BAD])
def test_bad_parameters_name_the_field(make, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(")):
        make()


def test_limits_from_mpc_settings_are_the_mpcs():
    st = mt.MPCSettings(v_max=12.0, a_y_max=3.0, decel_max=4.0, delta_max=0.4, control_period=0.02)
    lim = TrackingLimits.from_settings(st)
    assert (lim.v_max, lim.a_y_max, lim.decel_max, lim.delta_max, lim.control_period) == (12.0, 3.0, 4.0, 0.4, 0.02)


def test_stanley_yaw_damping_asks_for_the_yaw_rate_and_uses_it():
    path = _ring(20.0)
    plain = mt.Stanley(path)
    damped = mt.Stanley(path, params=mt.StanleyParams(yaw_damping=0.1))
    assert not plain.measures and damped.measures
    x, y = path.point_at(np.array([5.0]))[0]
    psi = float(path.interpolate(np.array([5.0]))["psi"][0])
    proj = path.project(x, y, psi)
    a = damped.solve(proj, measured={"speed": 4.0, "r": 4.0 / 20.0 + 0.1})  # turning 0.1 rad/s too fast
    b = plain.solve(proj, measured={"speed": 4.0, "r": 4.0 / 20.0 + 0.1})
    assert a.delta - b.delta == pytest.approx(-0.1 * 0.1, abs=2e-4)


# ---------------------------------------------------------------------- scenarios: controller.type
@pytest.mark.parametrize("kind", ["mpc", "pure_pursuit", "stanley"])
def test_a_scenario_selects_the_controller(kind):
    sc = mt.default_scenario().with_overrides({"controller.type": kind, "simulation.t_max": 1.0,
                                               "controller.v_max": 7.0})
    r = mt.run_scenario(sc)
    assert r.info["controller"] == kind and r.info["scenario"]["controller"]["type"] == kind
    assert np.nanmax(r.series["v_cmd"]) <= 7.0 + 1e-9  # the MPC's limit, for the baselines too


def test_a_scenario_passes_the_baselines_gains_and_the_mpc_limits():
    from mpc_tracking.scenario.build import build

    sc = mt.default_scenario().with_overrides({
        "controller.type": "pure_pursuit", "controller.pure_pursuit.lookahead_gain": 0.8,
        "controller.pure_pursuit.lookahead_max": 12.0, "controller.delta_max": 0.4, "controller.control_period": 0.02})
    _path, ctrl, _plant_, _act, kw = build(sc)
    assert isinstance(ctrl, mt.PurePursuit)
    assert ctrl.params == mt.PurePursuitParams(lookahead_gain=0.8, lookahead_max=12.0)
    assert ctrl.limits.delta_max == 0.4 and ctrl.control_period == 0.02 == kw["control_period"]
    sc = sc.with_overrides({"controller.type": "stanley", "controller.stanley.softening": 0.5})
    assert build(sc)[1].params == mt.StanleyParams(softening=0.5)


def test_an_unknown_controller_type_names_the_key_line_and_valid_types(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("name: bad\ncontroller:\n  horizon: 10\n  type: lqr\n")
    with pytest.raises(mt.ScenarioError, match=r"bad\.yaml:4: controller\.type: expected one of "
                                               r"\['mpc', 'pure_pursuit', 'stanley'\], got 'lqr'"):
        mt.load_scenario(f)


@pytest.mark.parametrize("text, words", [
    ("  stanley:\n    gain: 0\n", r"bad\.yaml:5: controller\.stanley\.gain: expected a number > 0"),
    ("  pure_pursuit:\n    lookahed: 1\n", r"bad\.yaml:5: unknown key 'lookahed' in controller\.pure_pursuit"),
])
def test_bad_baseline_gains_name_the_key_and_line(tmp_path, text, words):
    f = tmp_path / "bad.yaml"
    f.write_text("name: bad\ncontroller:\n  type: stanley\n" + text)
    with pytest.raises(mt.ScenarioError, match=words):
        mt.load_scenario(f)


def test_check_validates_a_baseline_scenario(tmp_path, capsys):
    from mpc_tracking.cli.main import main

    f = tmp_path / "pp.yaml"
    f.write_text("name: pp\ncontroller:\n  type: pure_pursuit\n  pure_pursuit:\n    lookahead_min: 5.0\n"
                 "    lookahead_max: 4.0\n")
    assert main(["check", str(f)]) == 2
    assert "lookahead_min <= lookahead_max" in capsys.readouterr().err
    f.write_text("name: pp\ncontroller:\n  type: stanley\n  stanley:\n    gain: 3.0\n")
    assert main(["check", str(f)]) == 0
    assert "type: stanley" in capsys.readouterr().out


def test_a_sweep_grids_over_the_controller_type():
    short = mt.default_scenario().with_overrides({"simulation.t_max": 2.0})
    res = mt.sweep(short, {"controller.type": ["mpc", "pure_pursuit", "stanley"]}, executor="serial",
                   progress=False)
    rows = {row["controller.type"]: row for row in res.rows}
    assert set(rows) == {"mpc", "pure_pursuit", "stanley"}
    assert all(row["status"] == "ok" for row in rows.values())
    assert rows["pure_pursuit"]["rms_e_y"] != rows["mpc"]["rms_e_y"]  # the type reached the run
