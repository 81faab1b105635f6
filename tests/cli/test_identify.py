"""``mpc-tracking identify``: every option of :func:`mpc_tracking.identify` has a flag and reaches it;
a plant that tops out below the manoeuvre speed (the RC car) is identified from the CLI alone and
its vehicle file and summary say what was not measured; a plant without geometry is refused."""
from __future__ import annotations

import inspect

import pytest
import yaml

import mpc_tracking.identification as ident
from mpc_tracking.cli.main import build_parser, main
from mpc_tracking.identification import load_vehicle_file

#: identify() arguments that are not options of the command (the plant itself, given another way)
_NOT_FLAGS = {"plant", "actuator", "params", "geometry"}


def _identify_subparser():
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices["identify"]


def test_every_api_option_has_a_flag():
    dests = {a.dest for a in _identify_subparser()._actions}
    api = set(inspect.signature(ident.identify).parameters) - _NOT_FLAGS
    missing = {k for k in api if k not in dests and not (k == "holdout" and "no_holdout" in dests)}
    assert not missing
    # the geometry keys, too
    assert {"mass", "yaw_inertia", "l_f", "l_r", "cg_height", "gravity", "wheelbase"} <= dests


def test_the_flags_reach_identify(monkeypatch, tmp_path, capsys):
    seen = {}

    class _Result:
        def to_yaml(self, path):
            return path

        def summary(self):
            return "summary"

    def fake(plant, actuator=None, **kw):
        seen.update(kw)
        return _Result()

    monkeypatch.setattr(ident, "identify", fake)
    code = main(["identify", "--plant", "kinematic_bicycle", "--l-f", "1.1", "--l-r", "1.5", "--mass", "1200",
                 "--yaw-inertia", "1900", "--cg-height", "0.5", "--mu-max", "0.8", "--a-y-cap", "9",
                 "--speed", "15", "--max-time", "30", "--no-fit-inertia", "--no-holdout",
                 "--out", str(tmp_path / "v.yaml")])
    assert code == 0
    assert seen["geometry"] == {"l_f": 1.1, "l_r": 1.5, "mass": 1200.0, "I_z": 1900.0, "h_cg": 0.5}
    assert (seen["mu_max"], seen["a_y_cap"], seen["speed"], seen["max_time"]) == (0.8, 9.0, 15.0, 30.0)
    assert seen["fit_inertia"] is False and seen["holdout"] is False
    assert "mu" not in seen and "dt" not in seen  # not given: identify's defaults


def test_plant_without_geometry_exit_2_names_the_contract(capsys):
    assert main(["identify", "--plant", "unicycle"]) == 2
    err = capsys.readouterr().err
    assert "declares no geometry" in err and "yaw_inertia" in err and "--l-f" in err


@pytest.mark.parametrize("argv, match", [
    (["--mu-max", "0"], r"--mu-max"),
    (["--a-y-cap", "-1"], r"--a-y-cap"),
    (["--l-f", "nan"], r"--l-f"),
    (["--cg-height", "-0.1"], r"--cg-height"),
])
def test_bad_flags_exit_2(argv, match, capsys):
    with pytest.raises(SystemExit) as info:
        main(["identify", "--plant", "kinematic_bicycle", *argv])
    assert info.value.code == 2
    assert match in capsys.readouterr().err


def test_rc_car_from_the_cli_alone(tmp_path, capsys):
    """The RC car's bearing drag holds it at 1.79 m/s (the manoeuvres want 5.6): identified at 1.61 m/s;
    on a 3 L circle that speed gives 3.3 m/s^2, no grip limit: the file carries a_y_max null, an assumed
    mu and both are listed in its assumptions and the printed summary."""
    out = tmp_path / "rc.yaml"
    assert main(["identify", "--plant", "ackermann3d", "--set", "plant.params.preset=rc_car", "--no-holdout",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "levelled off at 1.79 m/s" in text and "a_y_max not measured (null)" in text
    data = yaml.safe_load(out.read_text())
    assert data["a_y_max"] is None
    assert any("a_y_max not measured" in a for a in data["assumptions"])
    assert any(a.startswith("mu = 1 assumed") for a in data["assumptions"])
    vf = load_vehicle_file(out)
    assert vf.provenance["options"]["speed"] == pytest.approx(0.9 * 1.788, rel=0.01)
    # the plant's own numbers, read off the contract (the 3D car's parameters)
    assert vf.params.mass == 1.5 and vf.params.l_f == pytest.approx(0.13)
