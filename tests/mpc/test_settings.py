"""MPCSettings in groups: each field declared once (default, doc, unit, range) in its group, flat names
and groups both construct, read and replace, the checks of every field are kept, and scenario files
take the settings flat or grouped."""
from __future__ import annotations

import dataclasses
import math
import pickle
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import ScenarioError, SettingsError
from mpc_tracking.mpc import settings as ms
from mpc_tracking.mpc.settings import (
    KINDS,
    SETTINGS_GROUPS,
    CostSettings,
    LimitSettings,
    MPCSettings,
    ObserverSettings,
    PredictionSettings,
    QPSettings,
    SafeguardSettings,
    field_group,
    settings_fields,
)
from mpc_tracking.scenario.schema import ControllerConfig, canonical_key, mpc_settings, scenario_keys

ROOT = Path(__file__).resolve().parents[2]
FLAT_NAMES = [f.name for _g, f in settings_fields()]


# ---------------------------------------------------------------- one declaration per field
def test_every_field_is_documented_with_a_unit():
    """A field declared without setting(...) (no doc, no unit) or with an empty one fails here."""
    for group, f in settings_fields():
        meta = f.metadata
        assert meta.get("doc", "").strip(), f"{group}.{f.name}: no doc"
        assert meta.get("unit", "").strip(), f"{group}.{f.name}: no unit (use '-' for none)"
        assert meta.get("kind") in KINDS, f"{group}.{f.name}: kind {meta.get('kind')!r}"
        if meta["kind"] == "str":
            assert ms.field_choices(f), f"{group}.{f.name}: a text setting needs its choices"


def test_field_names_are_unique_across_groups_and_never_a_group_name():
    assert len(FLAT_NAMES) == len(set(FLAT_NAMES)) == 53
    assert not set(FLAT_NAMES) & set(SETTINGS_GROUPS)
    assert {field_group(n) for n in FLAT_NAMES} == set(SETTINGS_GROUPS)


def test_flat_fields_are_the_groups_fields_with_their_defaults():
    flat = [f for f in dataclasses.fields(MPCSettings) if f.init]
    assert [f.name for f in flat] == FLAT_NAMES
    for f, (group, g) in zip(flat, settings_fields(), strict=True):
        assert f.type == g.type and f.default == g.default, f.name
        assert getattr(MPCSettings, f.name) == getattr(SETTINGS_GROUPS[group], f.name) == g.default  # class access


def test_a_flat_list_out_of_step_with_the_groups_is_an_import_error(monkeypatch):
    """Adding a field to a group without its flat line in MPCSettings (or the reverse) is caught at import."""
    from mpc_tracking.mpc.settings import mpc_settings

    real = mpc_settings.settings_fields

    def one_more():
        yield from real()
        yield "limits", dataclasses.field(default=1.0)

    monkeypatch.setattr(mpc_settings, "settings_fields", one_more)
    with pytest.raises(TypeError, match="flat fields must list the groups' fields"):
        mpc_settings._check_flat_fields()


def test_docstrings_are_generated_from_the_declarations():
    doc = MPCSettings.__doc__
    for group, f in settings_fields():
        text = ms.field_doc(f)
        assert text in doc and text in SETTINGS_GROUPS[group].__doc__, f.name
        assert f.metadata["doc"][1:] in text
        if f.metadata["unit"] != "-":
            assert f"[{f.metadata['unit']}]" in text
    assert "v_max : float\n    Top speed [m/s]; > 0. Default: ``10.0``." in LimitSettings.__doc__
    assert doc.index("Attributes\n----------") < doc.index("Examples\n--------")


def test_the_scenario_schema_reads_the_declarations():
    rows = {key: (default, doc) for key, _kind, default, doc in scenario_keys()}
    for group, f in settings_fields():
        default, doc = rows[f"controller.{f.name}"]
        assert doc.startswith(f"[{group}] {f.metadata['doc']}"), f.name
        assert default == (list(f.default) if isinstance(f.default, tuple) else f.default)
    assert rows["controller.v_max"][1] == "[limits] Top speed [m/s], > 0"
    assert dataclasses.fields(ControllerConfig)[0].metadata["doc"].startswith("[prediction]")


# ---------------------------------------------------------------- flat and grouped access
GROUPED_VS_FLAT = [
    (dict(limits=LimitSettings(v_max=12.0, a_y_max=3.0)), dict(v_max=12.0, a_y_max=3.0)),
    (dict(qp={"solver": "daqp", "max_iter": 50}, horizon=20), dict(solver="daqp", max_iter=50, horizon=20)),
    (dict(prediction=PredictionSettings(horizon=12, ds=1.0), cost=CostSettings(mode="time_optimal")),
     dict(horizon=12, ds=1.0, mode="time_optimal")),
    (dict(safeguards=SafeguardSettings(rejoin=False), observer=ObserverSettings(disturbance_observer=True)),
     dict(rejoin=False, disturbance_observer=True)),
    (dict(limits={"v_max": 12.0}, a_y_max=3.0, cost={"Q": (1.0, 1.0, 0.0)}), dict(v_max=12.0, a_y_max=3.0, Q=(1.0, 1.0, 0.0))),
]


@pytest.mark.parametrize("grouped, flat", GROUPED_VS_FLAT)
def test_grouped_and_flat_construction_are_equal(grouped, flat):
    a, b = MPCSettings(**grouped), MPCSettings(**flat)
    assert a == b and a.as_dict() == b.as_dict()
    for name, value in flat.items():
        assert getattr(a, name) == value == getattr(getattr(a, field_group(name)), name)
    for g in SETTINGS_GROUPS:
        assert getattr(a, g) == getattr(b, g)
    np.testing.assert_array_equal(a.Q_matrix, b.Q_matrix)


def test_groups_read_the_same_values_as_the_flat_names():
    s = MPCSettings(horizon=17, v_max=9.0, solver="daqp", brake_decel=2.0, disturbance_max=1.0, mode="time_optimal")
    for group, f in settings_fields():
        assert getattr(getattr(s, group), f.name) == getattr(s, f.name)
    assert isinstance(s.limits, LimitSettings) and isinstance(s.qp, QPSettings)
    assert s.qp.solver == "daqp" and s.prediction.horizon == 17 and s.cost.mode == "time_optimal"


def test_round_trips_flat_grouped_replace_pickle():
    s = MPCSettings(horizon=12, v_max=7.5, Q=(1.0, 3.0, 0.0), solver="daqp", rejoin=False)
    assert MPCSettings(**s.as_dict()) == s
    grouped = s.as_dict(grouped=True)
    assert set(grouped) == set(SETTINGS_GROUPS) and grouped["limits"]["v_max"] == 7.5
    assert MPCSettings(**grouped) == s
    assert dataclasses.replace(s, v_max=8.0) == s.replace(v_max=8.0) == MPCSettings(**{**s.as_dict(), "v_max": 8.0})
    # a whole group replaced: its other fields take the group's values, the other groups stay
    r = s.replace(limits=LimitSettings(a_y_max=2.0))
    assert r.v_max == LimitSettings().v_max and r.a_y_max == 2.0 and r.horizon == 12 and r.solver == "daqp"
    assert s.replace(qp={"max_iter": 9}).solver == "daqp"  # a mapping changes only the fields it names
    back = pickle.loads(pickle.dumps(s))
    assert back == s and back.limits == s.limits and back.qp.solver == "daqp"


def test_flat_settings_are_frozen():
    s = MPCSettings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.v_max = 3.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.limits.v_max = 3.0  # type: ignore[misc]


# ---------------------------------------------------------------- checks (every one of the flat class kept)
#: (field, bad value): each check the flat MPCSettings made, one row per bound, type and choice
BAD = [
    ("horizon", 0), ("horizon", 2.5), ("horizon", True), ("horizon", ms.MAX_HORIZON + 1),
    ("ds", 0.0), ("ds", -1.0), ("ds", math.inf), ("ds", "1"),
    ("prediction_model", "bike"), ("discretization", "trapezoid"), ("linearization", "nominal"),
    ("iterations", 0), ("control_period", 0.0), ("control_period", math.nan), ("delay", -0.01), ("delay", math.inf),
    ("Q", (1.0, -1.0, 0.0)), ("Q", "abc"), ("Q", (1.0, 2.0)), ("Q", (1.0, math.nan, 0.0)),
    ("R", [[1.0, 2.0], [2.0, 1.0]]), ("R", (1.0, 2.0, 3.0)), ("R_rate", (1.0, 2.0, 3.0)), ("R_rate", [[1, 0], [1, 1]]),
    ("terminal_weight", -1.0), ("slack_weight", 0.0), ("mode", "racing"), ("time_weight", -1.0),
    ("v_min", 0.0), ("v_max", 0.0), ("v_max", math.inf), ("delta_max", 0.0), ("delta_max", 0.5 * math.pi),
    ("a_y_max", 0.0), ("accel_max", 0.0), ("decel_max", -1.0), ("delta_rate_max", 0.0), ("accel_max", math.nan),
    ("power_per_mass", 0.0), ("power_per_mass", -80.0),
    ("corridor_margin", -0.1), ("friction_ellipse", "yes"), ("ellipse_cuts", 1), ("steer_within_peak_slip", 0),
    ("grip_fraction", 0.0), ("grip_fraction", 1.2), ("grip_fraction", math.nan), ("grip_defaults", "yes"),
    ("solver", "qpoases"), ("warm_start", "hot"), ("eps_abs", 0.0), ("eps_rel", -1e-9), ("max_iter", 0),
    ("max_solve_time", 0.0), ("compiled", "fortran"), ("blas_threads", -1), ("blas_threads", 1.5),
    ("max_fallback_steps", -1), ("brake_decel", 0.0), ("rejoin", None),
    ("disturbance_observer", "yes"), ("disturbance_time_constant", 0.0), ("disturbance_max", math.inf),
    ("grip_estimation", "yes"), ("grip_mu", 0.0), ("grip_margin", -1.0), ("grip_sigma_max", -0.1),
    ("grip_sigma_growth", math.nan), ("grip_slide_sideslip", 0.0), ("grip_probe", 1), ("grip_probe_time", 0.0),
    ("grip_probe_time", math.inf), ("grip_brake_limit", 0.0), ("grip_brake_limit", math.nan),
    ("grip_drive", "4wd"), ("grip_drive", None),
]
#: values at the edge of what is allowed
GOOD = [
    ("horizon", ms.MAX_HORIZON), ("horizon", np.int64(3)), ("ds", None), ("delay", 0.0), ("eps_rel", 0.0),
    ("max_fallback_steps", 0), ("accel_max", math.inf), ("max_solve_time", math.inf), ("delta_max", 1.57),
    ("rejoin", np.bool_(False)), ("corridor_margin", 0.0), ("terminal_weight", 0.0), ("time_weight", 0.0),
    ("v_min", 10.0), ("Q", 1.0), ("Q", np.eye(3)), ("prediction_model", "dynamic"), ("discretization", "rk4"),
    ("blas_threads", 0),
]


def test_the_tables_cover_every_field():
    assert {name for name, _ in BAD} == set(FLAT_NAMES)


@pytest.mark.parametrize("name, value", BAD, ids=[f"{n}={v!r}" for n, v in BAD])
def test_a_bad_value_names_the_field_flat_and_in_its_group(name, value):
    with pytest.raises(SettingsError, match=rf"^MPCSettings\.{name}: ") as flat:
        MPCSettings(**{name: value})
    group = SETTINGS_GROUPS[field_group(name)]
    with pytest.raises(SettingsError, match=rf"^MPCSettings\.{name}: "):
        MPCSettings(**{field_group(name): {name: value}})
    if name != "Q":  # Q's size depends on the prediction model: checked by MPCSettings
        with pytest.raises(SettingsError, match=rf"^{group.__name__}\.{name}: "):
            group(**{name: value})
    assert isinstance(flat.value, ValueError)


@pytest.mark.parametrize("name, value", GOOD, ids=[f"{n}={v!r}" for n, v in GOOD])
def test_values_at_the_edge_are_accepted(name, value):
    s = MPCSettings(**{name: value})
    assert getattr(s, name) is value or getattr(s, name) == value


@pytest.mark.parametrize("kwargs, match", [
    ({"v_min": 5.0, "v_max": 2.0}, r"^MPCSettings: v_min = 5.0 must be <= v_max = 2.0 m/s"),
    ({"horizon": 100_000_000}, r"horizon: expected at most 10000 steps"),
    ({"delta_max": 2.0}, r"delta_max: expected < 1.5708 rad, got 2.0"),
    ({"v_max": -3.0}, r"v_max: expected a finite number > 0 m/s, got -3.0"),
    ({"accel_max": -1.0}, r"accel_max: expected a number > 0 m/s\^2, got -1.0"),
    ({"solver": "osq"}, r"solver: expected one of \('osqp', 'daqp'\), got 'osq' \(did you mean 'osqp'\?\)"),
    ({"prediction_model": "dynamic", "Q": (1.0, 2.0)}, r"MPCSettings\.Q: expected 3 or 6 weights for the dynamic"),
])
def test_messages_say_what_was_expected(kwargs, match):
    with pytest.raises(SettingsError, match=match):
        MPCSettings(**kwargs)


@pytest.mark.parametrize("call, match", [
    (lambda: MPCSettings(horizn=3), r"unknown setting 'horizn' \(did you mean 'horizon'\?\)"),
    (lambda: MPCSettings().replace(v_mx=3), r"unknown setting 'v_mx' \(did you mean 'v_max'\?\)"),
    (lambda: MPCSettings(limit={"v_max": 3}), r"unknown setting 'limit' \(did you mean 'limits'\?\)"),
    (lambda: MPCSettings(limits={"horizon": 3}), r"MPCSettings\.limits: unknown setting 'horizon'"),
    (lambda: MPCSettings(limits=QPSettings()), r"MPCSettings\.limits: expected a LimitSettings or a mapping"),
    (lambda: MPCSettings(limits=LimitSettings(), v_max=3.0), r"'v_max' given twice, by name and in limits"),
    (lambda: MPCSettings(limits={"v_max": 4.0}, v_max=3.0), r"'v_max' given twice"),
    (lambda: LimitSettings(horizon=3), r"unexpected keyword argument 'horizon'"),
])
def test_unknown_and_doubled_names(call, match):
    with pytest.raises((SettingsError, TypeError), match=match):
        call()


# ---------------------------------------------------------------- scenario files
FLAT_YAML = "controller:\n  horizon: 20\n  v_max: 12\n  a_y_max: 3.0\n  solver: daqp\n  rejoin: false\n"
GROUPED_YAML = ("controller:\n  prediction:\n    horizon: 20\n  limits:\n    v_max: 12\n    a_y_max: 3.0\n"
                "  qp: {solver: daqp}\n  safeguards:\n    rejoin: false\n")
MIXED_YAML = "controller:\n  horizon: 20\n  limits: {v_max: 12, a_y_max: 3.0}\n  solver: daqp\n  safeguards: {rejoin: false}\n"


def test_a_scenario_takes_the_settings_flat_or_grouped(tmp_path):
    loaded = []
    for i, text in enumerate((FLAT_YAML, GROUPED_YAML, MIXED_YAML)):
        f = tmp_path / f"sc{i}.yaml"
        f.write_text(text)
        loaded.append(mt.load_scenario(f))
    flat, grouped, mixed = loaded
    assert flat.to_dict()["controller"] == grouped.to_dict()["controller"] == mixed.to_dict()["controller"]
    assert "limits" not in grouped.to_dict()["controller"]  # stored flat: sweeps and saved runs use flat keys
    st = mpc_settings(grouped.controller)
    assert st == mpc_settings(flat.controller) == mpc_settings(mixed.controller)
    assert st == MPCSettings(horizon=20, v_max=12, a_y_max=3.0, solver="daqp", rejoin=False, Q=[1.0, 2.0, 0.0],
                             R=[0.2, 2.0], R_rate=[0.5, 20.0])  # weights as read from YAML: lists
    assert mt.load_scenario(grouped.to_dict()).to_dict() == grouped.to_dict()  # resolved form loads back


@pytest.mark.parametrize("text, match", [
    ("controller:\n  limits:\n    v_max: -12\n", r"sc\.yaml:3: MPCSettings\.v_max: expected a finite number > 0"),
    ("controller:\n  limits:\n    v_mx: 12\n", r"sc\.yaml:3: unknown key 'v_mx' in controller\.limits; did you mean 'v_max'"),
    ("controller:\n  limits:\n    horizon: 12\n", r"sc\.yaml:3: unknown key 'horizon' in controller\.limits"),
    ("controller:\n  limit:\n    v_max: 12\n", r"sc\.yaml:2: unknown key 'limit' in controller; did you mean 'limits'"),
    ("controller:\n  limits: 12\n", r"sc\.yaml:2: controller\.limits: expected a mapping of the limits settings"),
    ("controller:\n  v_max: 3\n  limits:\n    v_max: 12\n", r"sc\.yaml:4: controller\.limits\.v_max: given twice"),
    ("controller:\n  qp:\n    solver: osq\n", r"sc\.yaml:3: controller\.qp\.solver: expected one of .*did you mean 'osqp'"),
    ("controller:\n  limits:\n    v_min: 20\n    v_max: 10\n", r"sc\.yaml:3: MPCSettings: v_min = 20"),
])
def test_bad_grouped_keys_name_the_file_and_line(tmp_path, text, match):
    f = tmp_path / "sc.yaml"
    f.write_text(text)
    with pytest.raises(ScenarioError, match=match):
        mt.load_scenario(f)


def test_every_problem_of_grouped_keys_is_collected(tmp_path):
    f = tmp_path / "sc.yaml"
    f.write_text("controller:\n  limits:\n    v_mx: 1\n    v_max: -1\n  qp: 3\n")
    errors: list = []
    mt.load_scenario(f, errors=errors)
    text = " | ".join(map(str, errors))
    assert len(errors) == 3 and "v_mx" in text and "controller.qp: expected a mapping" in text and "v_max" in text


def test_overrides_and_sweeps_take_grouped_dotted_keys():
    assert canonical_key("controller.limits.v_max") == "controller.v_max"
    assert canonical_key("controller.v_max") == "controller.v_max"
    assert canonical_key("plant.params.limits") == "plant.params.limits"
    sc = mt.default_scenario()
    a = sc.with_overrides({"controller.limits.v_max": 7.0, "controller.qp.solver": "daqp"})
    b = sc.with_overrides({"controller.v_max": 7.0, "controller.solver": "daqp"})
    assert a.to_dict() == b.to_dict() and a.controller.v_max == 7.0
    with pytest.raises(ScenarioError, match="unknown key 'v_mx' in controller; did you mean 'v_max'"):
        sc.with_overrides({"controller.limits.v_mx": 7.0})
    from mpc_tracking.tuning.grid import check_keys

    check_keys(sc, ["controller.limits.v_max"], [{"controller.limits.v_max": 7.0}])  # a sweep's key check passes


# ---------------------------------------------------------------- documentation and complexity
def test_the_guide_table_lists_the_groups_and_their_fields():
    text = (ROOT / "docs" / "guide" / "controller.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \(\{class\}`~mpc_tracking\.mpc\.settings\.\w+`\) \| (.*) \|$", text, re.M))
    assert list(rows) == list(SETTINGS_GROUPS)
    for group, cls in SETTINGS_GROUPS.items():
        assert re.findall(r"`(\w+)`", rows[group]) == [f.name for f in dataclasses.fields(cls)], group


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is not installed")
def test_the_settings_and_scenario_validation_stay_simple():
    """No function of the scenario package or the settings above cyclomatic complexity 15."""
    paths = [str(ROOT / "mpc_tracking" / "scenario"), str(ROOT / "mpc_tracking" / "mpc" / "settings")]
    assert all(Path(p).is_dir() for p in paths), paths  # ruff passes a missing path with a warning only
    out = subprocess.run(["ruff", "check", "--isolated", "--select", "C901", "--config",
                          "lint.mccabe.max-complexity=15", *paths], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
