"""``mpc-tracking check`` does everything ``run`` would do short of simulating: the scenarios that
``run`` rejects as bad input (exit 2) are rejected by ``check`` too, with the same one line."""
from __future__ import annotations

from pathlib import Path

import pytest

from mpc_tracking.cli.main import main

QUICK = str(Path(__file__).resolve().parents[2] / "demos" / "quickstart.yaml")

#: overrides that pass the schema but fail when the run is built or set up (issue 12's list)
BAD = [
    (["--set", "path.source=no_such_path.csv"], "no_such_path"),
    (["--set", "path.ds=0"], "ds"),
    (["--set", "vehicle.wheelbase=-2"], "wheelbase"),
    (["--set", "simulation.laps=0"], "laps"),
    (["--set", "simulation.e_y0=50"], "e_y0"),
    (["--set", "simulation.control_period=-0.1"], "control_period"),
    (["--plant", "ackermann3d", "--set", "plant.params.preset=nope"], "preset"),
    (["--plant", "ackermann3d", "--set", "plant.params.mass=-5"], "mass"),
]


@pytest.mark.parametrize("extra, word", BAD, ids=[w for _, w in BAD])
def test_check_rejects_what_run_rejects(capsys, extra, word):
    assert main(["check", QUICK, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and word in err[0], err
    # and run says the same (without simulating a step further)
    assert main(["run", QUICK, *extra, "--out", "/nonexistent/never-written", "-q"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == err


def test_check_passes_a_good_scenario_and_prints_it(capsys):
    assert main(["check", QUICK]) == 0
    assert "controller:" in capsys.readouterr().out


def test_check_reports_every_problem_at_once_with_file_and_line(tmp_path, capsys):
    f = tmp_path / "many.yaml"
    f.write_text("path:\n  source: nosuchfile.csv\ncontroller:\n  horizn: 30\n  v_max: -3\n"
                 "vehicle:\n  wheelbase: -1\nsimulation:\n  laps: 0\n")
    assert main(["check", str(f)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "5 problems" in err[0], err
    line = err[0]
    for part in (f"{f}:4: unknown key 'horizn'", f"{f}:9: simulation.laps", f"{f}:5: MPCSettings.v_max",
                 "wheelbase: expected a positive number", "nosuchfile.csv: no such file"):
        assert part in line, part
    assert line.count("v_max") == 1 + line.count("v_max, ")  # listed once (the valid-keys list names it too)
    # --set problems join those of the file
    assert main(["check", str(f), "--set", "controller.horizon=0"]) == 2
    assert "6 problems" in capsys.readouterr().err
