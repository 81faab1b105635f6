"""Issue 26 (items 2-3) at the command line: ``run FILE.csv`` runs the default scenario on a path
file, a mistyped file name says "did you mean" in one line, ``path show`` takes the keys of a
scenario's ``path:`` section (or a scenario file) and draws the input points."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from mpc_tracking.cli.main import main, scenario_argument
from mpc_tracking.scenario.schema import PathConfig

ROOT = Path(__file__).resolve().parents[2]
QUICK = str(ROOT / "demos" / "quickstart.yaml")


def run_main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse usage errors
        return int(exc.code or 0)


def _out_and_back(tmp_path: Path) -> Path:
    x = np.linspace(0.0, 40.0, 20)
    t = np.linspace(-np.pi / 2, np.pi / 2, 15)[1:-1]
    pts = np.vstack([np.column_stack([x, 0 * x]), np.column_stack([40 + 8 * np.cos(t), 8 + 8 * np.sin(t)]),
                     np.column_stack([x[::-1], 16 + 0 * x])])
    f = tmp_path / "my_track.csv"
    f.write_text("x,y\n" + "".join(f"{a:.6f},{b:.6f}\n" for a, b in pts))
    return f


def test_run_a_csv_runs_the_default_scenario_on_it(tmp_path, capsys):
    f = _out_and_back(tmp_path)
    out = tmp_path / "out"
    code = run_main(["run", str(f), "--set", "simulation.t_max=2", "--set", "controller.horizon=10", "--no-plots",
                     "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err  # was: "expected a mapping of sections (path, controller, ...), got str"
    meta = json.loads((out / "metrics.json").read_text())
    assert meta["scenario"]["path"]["source"] == str(f) and meta["scenario"]["name"] == "my_track"
    assert meta["scenario"]["controller"]["v_max"] == 12.0  # the default scenario's controller


def test_a_path_argument_gives_the_default_scenario(tmp_path):
    f = _out_and_back(tmp_path)
    sc = scenario_argument(str(f))
    assert sc.path.source == str(f) and sc.simulation.e_y0 == 1.0  # the demo's start offset
    assert scenario_argument("oval").path.source == "oval"  # a bundled name
    course = tmp_path / "course.yaml"
    course.write_text("points: [[0, 0], [10, 0], [10, 6], [0, 6]]\nwidth: 1\n")
    assert scenario_argument(str(course)).path.source == str(course)  # a YAML course is a path, not a scenario
    assert scenario_argument(QUICK).source == QUICK  # a scenario file stays a scenario


@pytest.mark.parametrize("argv, want", [
    (["run", "{D}/quikstart.yaml"], r"quikstart.yaml: no such scenario file; did you mean '.*quickstart.yaml'\?"),
    (["check", "{D}/quikstart.yaml"], r"no such scenario file; did you mean '.*quickstart.yaml'\?"),
    (["run", "{T}/my_trak.csv"], r"my_trak.csv: no such file .*; did you mean '.*my_track.csv'\?"),
    (["path", "show", "ovl"], r"unknown bundled path 'ovl'; did you mean 'oval'\?"),
    (["check", "{T}/sc.yaml"], r"sc.yaml:2: path.source: .*my_trak.csv: no such file; did you mean '.*my_track.csv'\?"),
])
def test_a_mistyped_file_name_says_did_you_mean_in_one_line(tmp_path, capsys, argv, want):
    import re

    _out_and_back(tmp_path)
    (tmp_path / "sc.yaml").write_text(f"path:\n  source: {tmp_path / 'my_trak.csv'}\n")
    argv = [a.replace("{D}", str(ROOT / "demos")).replace("{T}", str(tmp_path)) for a in argv]
    assert run_main(argv) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("mpc-tracking")]
    assert len(err) == 1 and re.search(want, err[0]), err
    assert "Traceback" not in err[0]


def test_corners_with_a_source_is_an_error_naming_both(tmp_path, capsys):
    f = tmp_path / "both.yaml"
    f.write_text("path:\n  source: oval\n  corners: [[0, 0], [50, 0], [50, 30], [0, 30]]\n")
    assert run_main(["check", str(f)]) == 2  # was: the corners silently won
    err = capsys.readouterr().err
    assert "both.yaml:3: path.corners: given together with path.source = 'oval'" in err and "both.yaml:2" in err


def test_path_show_takes_the_keys_of_the_path_section(tmp_path, capsys):
    f = _out_and_back(tmp_path)
    flags = {f"--{k.replace('_', '-')}" for k in PathConfig.__dataclass_fields__}
    from mpc_tracking.cli.main import build_parser

    show = build_parser()._subparsers._group_actions[0].choices["path"]._subparsers._group_actions[0].choices["show"]
    options = {o for a in show._actions for o in a.option_strings}
    assert flags - {"--source", "--corners"} <= options and "--open" in options
    png = tmp_path / "p.png"
    assert run_main(["path", "show", str(f), "--out", str(png)]) == 0  # ends 16 m apart: plainly open
    assert "closed             False" in capsys.readouterr().out
    assert run_main(["path", "show", str(f), "--closed", "--ds", "1", "--smoothing", "0", "--out", str(png)]) == 0
    out = capsys.readouterr().out
    assert "closed             True" in out and "n_waypoints        124" in out  # ds 1 m on 124 m
    # a scenario file: its path section, with the flags on top
    sc = tmp_path / "sc.yaml"
    sc.write_text("path:\n  source: null\n  corners: [[0, 0], [60, 0], [60, 40], [0, 40]]\n")
    assert run_main(["path", "show", str(sc), "--open", "--out", str(png)]) == 0
    assert "closed             False" in capsys.readouterr().out
    assert run_main(["path", "show", str(sc), "--corner-radius", "-1", "--out", str(png)]) == 2
    assert "--corner-radius: expected a finite number > 0 m" in capsys.readouterr().err


def test_path_show_draws_the_input_points(tmp_path, monkeypatch, capsys):
    import mpc_tracking.viz.plotting as plotting

    drawn = []
    original = plotting.plot_input_points
    monkeypatch.setattr(plotting, "plot_input_points", lambda path, ax: drawn.append(path) or original(path, ax))
    f = _out_and_back(tmp_path)
    assert run_main(["path", "show", str(f), "--out", str(tmp_path / "p.png")]) == 0
    assert drawn and len(drawn[0].input_points) == 53 and (tmp_path / "p.png").is_file()
