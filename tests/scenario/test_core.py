"""Scenario files: loading, validation with file:line and suggestions, overrides, build and run."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

import mpc_tracking as mt
from mpc_tracking.cli.options import parse_set_option
from mpc_tracking.errors import ScenarioError
from mpc_tracking.mpc.controller import SpatialMPC
from mpc_tracking.mpc.settings import MPCSettings
from mpc_tracking.scenario.build import build
from mpc_tracking.scenario.core import (
    Scenario,
    default_scenario,
    load_scenario,
    run_scenario,
)

DEMOS = Path(__file__).resolve().parents[2] / "demos"


def _write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "sc.yaml"
    f.write_text(text)
    return f


def test_default_scenario_matches_demo_settings():
    sc = default_scenario()
    assert isinstance(sc, Scenario)
    assert sc.path.source == "oval" and sc.controller.horizon == 30 and sc.simulation.e_y0 == 1.0
    # every MPCSettings field is a controller key with the same default where the demo does not set it
    for name in ("Q", "R", "mode", "linearization", "slack_weight"):
        assert hasattr(sc.controller, name)
    assert sc.controller.slack_weight == MPCSettings().slack_weight


@pytest.mark.parametrize(
    "text, match",
    [
        ("controller:\n  horizon: 20\n  horizn: 3\n", r"sc\.yaml:3: unknown key 'horizn' in controller; did you mean 'horizon'"),
        ("pat:\n  source: oval\n", r"sc\.yaml:1: unknown key 'pat' in scenario; did you mean 'path'"),
        ("simulation:\n  laps: 1\n\n  e_y_0: 1.0\n", r"sc\.yaml:4: unknown key 'e_y_0' in simulation; did you mean 'e_y0'"),
        ("environment:\n  obstacles:\n    - type: circle\n      centre: [1, 2]\n",
         r"sc\.yaml:4: unknown key 'centre' in environment\.obstacles\.0; did you mean 'center'"),
        ("controller:\n  horizon: twenty\n", r"sc\.yaml:2: controller\.horizon: expected an integer, got 'twenty'"),
        ("controller:\n  horizon: 2.5\n", r"controller\.horizon: expected an integer"),
        ("simulation:\n  e_y0: [1]\n", r"sc\.yaml:2: simulation\.e_y0: expected a number"),
        ("path:\n  closed: yes please\n", r"path\.closed: expected true, false or null"),
        ("path:\n  corners: [[0, 0], [1]]\n", r"path\.corners: expected a list of \[x, y\] pairs"),
        ("controller:\n  mode: time_optimale\n", r"controller\.mode: expected one of .*did you mean 'time_optimal'"),
        ("outputs:\n  plots: [track, heatmap]\n", r"outputs\.plots: expected one of"),
        ("controller: 5\n", r"sc\.yaml:1: controller: expected a mapping"),
        ("- a\n- b\n", r"sc\.yaml:1: expected a mapping of sections"),
        ("controller:\n  horizon: [1\n", r"sc\.yaml:\d+: not valid YAML"),
        ("controller:\n  v_min: 20\n  v_max: 10\n", r"sc\.yaml:2: MPCSettings: v_min = 20"),
    ],
)
def test_bad_scenario_files(tmp_path, text, match):
    with pytest.raises(ScenarioError, match=match):
        load_scenario(_write(tmp_path, text))


def test_missing_file_and_bad_source(tmp_path):
    with pytest.raises(ScenarioError, match="no such scenario file"):
        load_scenario(tmp_path / "nope.yaml")
    with pytest.raises(ScenarioError, match="expected a YAML file name or a mapping"):
        load_scenario(42)


def test_dict_source_and_inf_strings():
    sc = load_scenario({"controller": {"accel_max": "inf", "Q": [1, 2, 0]}, "simulation": {"laps": 2.0}})
    assert math.isinf(sc.controller.accel_max) and sc.simulation.laps == 2
    assert isinstance(sc.simulation.laps, int)


def test_overrides_are_validated_and_do_not_mutate():
    sc = default_scenario()
    sc2 = sc.with_overrides({"controller.horizon": 50, "plant.params.wheelbase": 2.5, "simulation.e_y0": 0})
    assert sc2.controller.horizon == 50 and sc.controller.horizon == 30
    assert sc2.plant.params == {"wheelbase": 2.5} and sc.plant.params == {}
    assert sc2.simulation.e_y0 == 0.0
    with pytest.raises(ScenarioError, match=r"unknown key 'horizn' in controller; did you mean 'horizon'"):
        sc.with_overrides({"controller.horizn": 5})
    with pytest.raises(ScenarioError, match=r"unknown section 'controler'; did you mean 'controller'"):
        sc.with_overrides({"controler.horizon": 5})
    with pytest.raises(ScenarioError, match=r"controller\.horizon: expected an integer"):
        sc.with_overrides({"controller.horizon": "x"})
    with pytest.raises(ScenarioError, match=r"is a value, not a section"):
        sc.with_overrides({"controller.horizon.deep": 1})


@pytest.mark.parametrize(
    "text, expected",
    [
        ("controller.horizon=50", ("controller.horizon", 50)),
        ("controller.v_max = 8.5", ("controller.v_max", 8.5)),
        ("controller.Q=[1, 2, 0]", ("controller.Q", [1, 2, 0])),
        ("controller.mode=time_optimal", ("controller.mode", "time_optimal")),
        ("outputs.animation.file=null", ("outputs.animation.file", None)),
        ("path.closed=false", ("path.closed", False)),
        ("controller.accel_max=inf", ("controller.accel_max", math.inf)),
    ],
)
def test_parse_set_option(text, expected):
    assert parse_set_option(text) == expected


@pytest.mark.parametrize("text", ["controller.horizon", "=5", "a..b=1"])
def test_parse_set_option_bad(text):
    with pytest.raises(ScenarioError, match="expected"):
        parse_set_option(text)


def test_to_dict_round_trip_yaml():
    sc = default_scenario().with_overrides({"controller.Q": [[1, 0, 0], [0, 2, 0], [0, 0, 0]]})
    again = load_scenario(yaml.safe_load(sc.to_yaml()))
    assert again == sc
    assert again.to_dict() == sc.to_dict()


def test_build_maps_sections_onto_objects():
    sc = default_scenario().with_overrides({
        "controller.horizon": 12, "simulation.control_period": 0.1, "vehicle.width": 2.0, "simulation.laps": 2,
    })
    path, mpc, plant, actuator, kw = build(sc)
    assert isinstance(mpc, SpatialMPC) and mpc.N == 12
    assert mpc.settings.control_period == 0.1 and kw["control_period"] == 0.1
    assert mpc.vehicle.width == 2.0
    assert plant.params["wheelbase"] == mpc.vehicle.wheelbase and plant.params["delta_max"] == mpc.settings.delta_max
    assert kw["laps"] == 2 and kw["e_y0"] == 1.0
    assert path.name == "oval" and path.ds == pytest.approx(0.5, rel=0.05)


def test_corner_path_and_widths():
    sc = load_scenario({"path": {"corners": [[0, 0], [40, 0], [40, 30], [0, 30]], "ds": 0.5,
                                 "width_left": 3.0, "width_right": 2.0, "closed": True}})
    path, *_ = build(sc)
    assert path.closed and np.allclose(path.width_left, 3.0) and np.allclose(path.width_right, 2.0)
    sc = load_scenario({"path": {"source": "oval", "width_left": 1.5}})
    path, *_ = build(sc)
    assert np.allclose(path.width_left, 1.5) and not np.allclose(path.width_right, 1.5)


def test_run_scenario_short_and_records_scenario():
    sc = default_scenario().with_overrides({"simulation.t_max": 2.0, "controller.horizon": 15})
    res = run_scenario(sc)
    assert res.reason == "time_limit" and len(res) > 10
    assert res.info["scenario"]["controller"]["horizon"] == 15
    assert abs(res.e_y[0] - 1.0) < 1e-2
    # the tracker pulls the car towards the line
    assert abs(res.e_y[-1]) < 4e-3  # measured 7.8e-4 after 2 s (from 1 m)


def test_unknown_plant_names_known_ones():
    with pytest.raises(ScenarioError, match=r"known models: .*kinematic_bicycle"):
        default_scenario().with_overrides({"plant.name": "hovercraft"})


@pytest.mark.parametrize(
    "text, match",
    [
        ("plant:\n  name: hovercraft\n", r"sc\.yaml:2: plant\.name: unknown motion model 'hovercraft'"),
        ("plant:\n  name: kinematic_bicycle\n  params:\n    wheelbse: 2.5\n",
         r"sc\.yaml:4: unknown parameter 'wheelbse' of plant 'kinematic_bicycle'; did you mean 'wheelbase'"),
        ("actuation:\n  name: direkt\n", r"sc\.yaml:2: unknown actuator 'direkt'; did you mean 'direct'"),
    ],
)
def test_bad_plant_sections(tmp_path, text, match):
    with pytest.raises(ScenarioError, match=match):
        load_scenario(_write(tmp_path, text))


@pytest.mark.parametrize("f", sorted(DEMOS.glob("*.yaml")), ids=lambda f: f.name)
def test_bundled_scenarios_load(f):
    sc = load_scenario(f)
    assert sc.name


@pytest.mark.parametrize("f", sorted(DEMOS.glob("*.yaml")), ids=lambda f: f.name)
def test_bundled_scenarios_run_briefly(f):
    sc = load_scenario(f).with_overrides({"simulation.t_max": 0.5})
    res = run_scenario(sc)
    assert res.reason == "time_limit", res.reason
    assert np.all(np.isfinite(res.e_y)) and np.max(np.abs(res.e_y)) < 2.0


def test_bundled_scenarios_cover_every_mode_and_plant():
    from mpc_tracking.models import available_models
    from mpc_tracking.mpc.settings import MODES

    scs = [load_scenario(f) for f in DEMOS.glob("*.yaml")]
    assert {s.controller.mode for s in scs} >= set(MODES)
    assert {s.plant.name for s in scs} >= {"kinematic_bicycle", "unicycle", "simple_car", "ackermann3d"} & set(available_models())


def test_obstacles_and_grid_build_a_corridor(tmp_path):
    from PIL import Image

    img = np.full((100, 200), 255, dtype=np.uint8)  # 20 m x 10 m at 0.1 m, all free ...
    img[:, 100:110] = 0                              # ... but a wall at x in [0, 1) m
    Image.fromarray(img).save(tmp_path / "grid.png")
    (tmp_path / "sc.yaml").write_text(
        "path: {corners: [[-10, 0], [10, 0]], closed: false, ds: 0.2, width_left: 4, width_right: 4}\n"
        "environment:\n  obstacles:\n    - {type: circle, center: [5, 1], radius: 0.5}\n"
        "  grid: {image: grid.png, origin: [-10, -5], resolution: 0.1, outside_free: true}\n"
    )
    sc = load_scenario(tmp_path / "sc.yaml")
    path, mpc, *_ = build(sc)
    lb, ub = mpc.corridor.bounds(np.array([2.0, 15.0]), e_y0=0.0)  # s = 2 m: x = -8 (free); s = 15: x = 5 (circle)
    assert lb[0] == pytest.approx(-4.0, abs=0.2) and ub[0] == pytest.approx(4.0, abs=0.2)
    assert ub[1] == pytest.approx(0.5, abs=0.15)  # the circle (centre 1 m left, r 0.5) caps the left side
    with pytest.raises(ScenarioError, match=r"obstacles\.0: a circle needs center"):
        build(load_scenario({"environment": {"obstacles": [{"type": "circle", "radius": 1.0}]}}))


def test_speed_profile_section_sets_v_ref():
    sc = default_scenario().with_overrides({"speed_profile.enabled": True, "speed_profile.v_max": 11.0})
    path, mpc, *_ = build(sc)
    assert path.v_ref is not None and mpc.path.v_ref is not None
    assert np.max(path.v_ref) <= 11.0 + 1e-9
    limit = np.sqrt(sc.controller.a_y_max / np.maximum(np.abs(path.kappa), 1e-9))
    assert np.all(path.v_ref <= limit + 1e-6)
    assert np.min(path.v_ref) < 10.0  # slower in the bends than on the straights


def test_files_relative_to_the_scenario_are_resolved(tmp_path, monkeypatch):
    from mpc_tracking.paths.bundled import bundled_file

    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "track.csv").write_text(bundled_file("oval").read_text())
    (sub / "sc.yaml").write_text("path: {source: track.csv, ds: 1.0}\n")
    monkeypatch.chdir(tmp_path)
    sc = load_scenario(sub / "sc.yaml")
    assert Path(sc.path.source).resolve() == (sub / "track.csv").resolve()
    again = load_scenario(sc.to_dict())  # self-contained: loads from a dict elsewhere
    path, *_ = build(again)
    assert path.name == "track"


@pytest.mark.parametrize("fmt, source, closed", [("tum", "oval", True), ("auto", "oval", True)])
def test_path_format_picks_the_reader(fmt, source, closed):
    path, *_ = build(load_scenario({"path": {"source": source, "format": fmt, "ds": 0.5}}))
    assert path.closed is closed and path.length == pytest.approx(245.7, abs=0.5)


def test_path_file_obstacles_survive_width_override():
    sc = load_scenario({"path": {"source": "hairpin_slalom", "width_left": 5.0}})
    path, mpc, *_ = build(sc)
    assert len(path.obstacles) > 0 and mpc.corridor is not None
    res = run_scenario(sc.with_overrides({"simulation.t_max": 0.3}))
    assert len(res.info["obstacles"]) == len(path.obstacles)


def test_unbounded_accel_limits_default_to_what_the_car_can_do():
    from mpc_tracking.scenario.build import build

    sedan = load_scenario({"path": {"source": "oval"},
                           "plant": {"name": "ackermann3d", "params": {"preset": "sedan"}}})
    _path, mpc, plant, actuator, _kw = build(sedan)
    assert actuator.accel_limits == (6.0, 8.0)  # wheel_torque_pi's clamps
    assert mpc.settings.accel_max == 6.0  # the actuator's, below friction
    assert mpc.settings.decel_max == pytest.approx(0.9 * plant.vehicle.mu * 9.81)  # friction, below 8
    given = sedan.with_overrides({"controller.decel_max": 5.0})
    assert build(given)[1].settings.decel_max == 5.0  # a finite value of the scenario is kept
    kinematic = load_scenario({"path": {"source": "oval"}})
    st = build(kinematic)[1].settings
    assert np.isinf(st.accel_max) and np.isinf(st.decel_max)  # nothing known about the car: unbounded


def test_corner_courses_default_to_twice_the_turning_radius_and_take_corner_radius():
    from mpc_tracking.scenario.build import build

    corners = [[0, 0], [40, 0], [40, 30], [0, 30]]
    sc = load_scenario({"path": {"corners": corners, "ds": 0.25, "width_left": 3.0, "width_right": 3.0}})
    path = build(sc)[0]
    r_min = 2.7 / np.tan(0.5)  # default vehicle wheelbase, controller delta_max
    assert np.max(np.abs(path.kappa)) == pytest.approx(1 / (2 * r_min), rel=1e-3)
    eight = build(sc.with_overrides({"path.corner_radius": 8.0}))[0]
    assert np.max(np.abs(eight.kappa)) == pytest.approx(1 / 8.0, rel=1e-3)
    with pytest.raises(mt.PathError, match="fits a radius of at most"):
        build(sc.with_overrides({"path.corner_radius": 30.0}))  # asked for: an error naming the largest
    with pytest.raises(mt.ScenarioError, match="corner_radius"):
        load_scenario({"path": {"corners": corners, "corner_radius": -1}})


def test_corner_csv_in_a_scenario_uses_the_vehicle_default(tmp_path):
    from mpc_tracking.scenario.build import build

    f = tmp_path / "block.csv"
    f.write_text("0,0\n120,0\n120,80\n0,80\n")
    path = build(load_scenario({"path": {"source": str(f), "ds": 1.0}}))[0]
    # a quarter of the median edge (25 m) is above twice the car's turning radius (9.9 m): as load_path
    assert np.max(np.abs(path.kappa)) == pytest.approx(1 / 25.0, rel=1e-3)
    assert path.length == pytest.approx(mt.load_path(f, ds=1.0).length)
    assert path.closed and path.x.min() > -1e-6 and path.x.max() < 120 + 1e-6
    # a longer car: twice its turning radius (25.6 m) is the least default radius
    long_car = build(load_scenario({"path": {"source": str(f), "ds": 1.0}, "vehicle": {"wheelbase": 7.0}}))[0]
    assert np.max(np.abs(long_car.kappa)) == pytest.approx(1 / (2 * 7.0 / np.tan(0.5)), rel=1e-3)


def test_one_set_of_defaults_for_corners_csv_scenarios(tmp_path):
    """Issue 26: the same corners give the same path (closed, ds, corner radius) from from_corners,
    a CSV through load_path, a scenario's path.corners and a scenario's CSV source."""
    from mpc_tracking.scenario.build import build

    corners = [[0, 0], [80, 0], [80, 40], [0, 40]]
    f = tmp_path / "block.csv"
    f.write_text("".join(f"{x},{y}\n" for x, y in corners))
    paths = [mt.ReferencePath.from_corners(corners), mt.load_path(f),
             build(load_scenario({"path": {"corners": corners}}))[0],
             build(load_scenario({"path": {"source": str(f)}}))[0]]
    for p in paths:
        assert p.closed and p.ds == pytest.approx(paths[0].ds) and p.length == pytest.approx(paths[0].length)
        assert np.max(np.abs(p.kappa)) == pytest.approx(np.max(np.abs(paths[0].kappa)))
        assert p.x.min() > -1e-6 and p.x.max() < 80 + 1e-6
    assert paths[0].ds == pytest.approx(0.5, rel=1e-3)


def test_polygons_take_points_or_vertices_in_both_file_kinds(tmp_path):
    from mpc_tracking.scenario.build import build

    square = [[20, -1], [22, -1], [22, 1], [20, 1]]
    for key in ("points", "vertices"):
        sc = load_scenario({"path": {"source": "oval"},
                            "environment": {"obstacles": [{"type": "polygon", key: square}]}})
        assert build(sc)[1].corridor is not None
    both = load_scenario({"path": {"source": "oval"},
                          "environment": {"obstacles": [{"type": "polygon", "points": square, "vertices": square}]}})
    with pytest.raises(mt.ScenarioError, match="once"):
        build(both)
    course = tmp_path / "c.yaml"
    course.write_text("points: [[0, 0], [30, 0], [30, 20], [0, 20]]\nclosed: true\nds: 0.5\nwidth: 3\n"
                      "obstacles:\n  - {type: polygon, points: [[10, -1], [12, -1], [12, 1]]}\n")
    assert len(mt.load_path(course).obstacles) == 1
