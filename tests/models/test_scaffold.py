"""`new-model` scaffold end to end (write, pip install, registry, closed loop, uninstall) and plugin errors."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from importlib import metadata

import numpy as np
import pytest

from mpc_tracking import InputError, MPCSettings, ReferencePath, SpatialMPC, VehicleParams, models, simulate
from mpc_tracking.models import available_models, create_model, plugin_errors, reload_plugins
from mpc_tracking.models.scaffold import describe_models, new_model


def _pip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args, "-q", "--disable-pip-version-check"],
                          capture_output=True, text=True, timeout=300)


def _can_build_wheels() -> bool:
    try:
        import setuptools

        if tuple(int(a) for a in setuptools.__version__.split(".")[:2]) >= (70, 1):
            return True
        import wheel  # noqa: F401  (setuptools < 70.1 needs it for bdist_wheel)
    except ImportError:
        return False
    return True


def test_scaffold_install_register_drive(tmp_path):
    # the test extra installs setuptools and wheel, so building offline must work
    assert _can_build_wheels(), "pip cannot build the plugin offline: install the test extra (setuptools, wheel)"
    name = "scaffolded_test_car"
    files = new_model(name, tmp_path / "pkg")
    assert {f.name for f in files} == {"pyproject.toml", "README.md", "__init__.py", "model.py", f"test_{name}.py"}
    text = (tmp_path / "pkg" / "pyproject.toml").read_text()
    assert '[project.entry-points."mpc_tracking.models"]' in text and f"{name} = " in text
    proc = _pip("install", "--no-deps", "--no-build-isolation", "--no-index", str(tmp_path / "pkg"))
    assert proc.returncode == 0, proc.stderr
    try:
        reload_plugins()
        assert name in available_models()
        assert "[plugin" in describe_models()
        path = ReferencePath.from_corners([(0, 0), (30, 0), (30, 20), (0, 20)], ds=0.25, closed=True,
                                          smoothing=None, width_left=3.0, width_right=3.0)
        mpc = SpatialMPC(path, VehicleParams(), MPCSettings(horizon=15, v_max=4.0, control_period=0.1))
        plant = create_model(name, {"wheelbase": VehicleParams().wheelbase})
        res = simulate(path, mpc, plant, t_max=8.0)
        assert res.reason in ("time_limit", "completed")
        assert float(res.s[-1]) > 20.0 and np.max(np.abs(res.e_y)) < 1.0
        # the generated tests pass against the installed plugin (run in-process: cheaper than a pytest subprocess)
        spec = importlib.util.spec_from_file_location("generated_test", tmp_path / "pkg" / "tests" / f"test_{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mod.test_registered()
        mod.test_turning_radius()
    finally:
        _pip("uninstall", "-y", f"mpc-tracking-{name.replace('_', '-')}")
        reload_plugins()
    assert name not in available_models()


class _EP:
    def __init__(self, name, value, target=None, exc=None):
        self.name, self.value, self._target, self._exc = name, value, target, exc

    def load(self):
        if self._exc:
            raise self._exc
        return self._target


def test_broken_plugin_reported_others_usable(monkeypatch):
    from mpc_tracking.models.plants.unicycle import Unicycle

    class Good(Unicycle):
        name = "good_plugin"

    eps = [_EP("broken_plugin", "nowhere.mod:Cls", exc=ImportError("No module named 'nowhere'")),
           _EP("not_a_model", "os:path", target=object),
           _EP("good_plugin", "x:Good", target=Good)]
    monkeypatch.setattr(metadata, "entry_points", lambda group=None: eps)
    try:
        reload_plugins()
        errs = plugin_errors()
        assert "No module named 'nowhere'" in errs["broken_plugin"]
        assert "not a MotionModel subclass" in errs["not_a_model"]
        assert "good_plugin" in available_models() and "unicycle" in available_models()
        create_model("good_plugin").step(0.0, 0.1, [0.0, 1.0])
        with pytest.raises(KeyError, match=r"broken_plugin.*failed to load.*nowhere"):
            models.get_model("broken_plugin")
        assert "broken_plugin" in describe_models()
    finally:
        monkeypatch.undo()
        reload_plugins()


@pytest.mark.parametrize("name, match", [("Bad-Name", "lowercase"), ("1car", "lowercase"), ("class", "lowercase"),
                                         ("unicycle", "already registered")])
def test_scaffold_bad_names(tmp_path, name, match):
    with pytest.raises(InputError, match=match):
        new_model(name, tmp_path / "x")


def test_scaffold_refuses_nonempty_dir(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(InputError, match="not empty"):
        new_model("fresh_car", tmp_path)


def test_cli_models_and_new_model(tmp_path, capsys):
    from mpc_tracking.cli.main import main

    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert all(n in out for n in ("ackermann3d", "unicycle", "simple_car", "kinematic_bicycle"))
    assert main(["new-model", "cli_made_car", str(tmp_path / "pkg")]) == 0
    assert (tmp_path / "pkg" / "mpc_tracking_cli_made_car" / "model.py").is_file()
    assert "wrote" in capsys.readouterr().out
    assert main(["new-model", "Bad-Name", str(tmp_path / "other")]) == 2
    assert "NAME must be lowercase" in capsys.readouterr().err
