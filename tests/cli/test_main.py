"""The mpc-tracking command end to end (subprocess), plus in-process usage/error tables."""
from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mpc_tracking.cli.main import build_parser, main
from mpc_tracking.viz.animation import frame_indices

ROOT = Path(__file__).resolve().parents[2]
QUICK = str(ROOT / "demos" / "quickstart.yaml")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpc_tracking", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


def _not_blank(png: Path) -> None:
    a = np.asarray(Image.open(png).convert("RGB"), dtype=float)
    assert a.shape[0] > 100 and a.std() > 10, f"{png} looks blank"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    p = cli("run", QUICK, "--set", "simulation.t_max=2", "--set", "controller.horizon=12", "--out", str(out),
            "--set", "outputs.animation={file: run.gif, every: 10, fps: 10}")
    assert p.returncode == 0, p.stderr
    return out, p


def test_run_writes_everything(run_dir):
    out, p = run_dir
    assert "RMS / max |e_y|" in p.stdout and "wrote" in p.stdout
    for name in ("result.npz", "timeseries.csv", "metrics.json", "scenario.yaml", "track.png", "timeseries.png", "path.png",
                 "run.gif"):
        assert (out / name).is_file(), name
    for png in ("track.png", "timeseries.png", "path.png"):
        _not_blank(out / png)
    meta = json.loads((out / "metrics.json").read_text())
    assert meta["scenario"]["controller"]["horizon"] == 12
    assert meta["scenario"]["controller"]["accel_max"] == 3.0
    with Image.open(out / "run.gif") as im:
        assert im.n_frames == len(frame_indices(meta["metrics"]["steps"], 0.05, every=10))
    with open(out / "timeseries.csv") as f:
        rows = list(csv.reader(f))
    assert rows[0][:3] == ["t", "x", "y"] and len(rows) - 1 == meta["metrics"]["steps"]
    assert not list(out.glob(".*partial*"))


def test_resolved_scenario_reloads(run_dir, capsys):
    out, _ = run_dir
    assert main(["check", str(out / "scenario.yaml")]) == 0
    assert "horizon: 12" in capsys.readouterr().out


def test_animate_result_frame_count(run_dir, tmp_path):
    out, _ = run_dir
    gif = tmp_path / "run.gif"
    assert main(["animate", str(out / "result.npz"), "--out", str(gif), "--every", "5", "--dpi", "40"]) == 0
    steps = json.loads((out / "metrics.json").read_text())["metrics"]["steps"]
    with Image.open(gif) as im:
        assert im.n_frames == len(range(0, steps, 5)) + (0 if (steps - 1) % 5 == 0 else 1)


def test_failed_run_exit_1_with_partial_results(tmp_path, capsys):
    code = main(["run", QUICK, "--quiet", "--out", str(tmp_path), "--set", "controller.max_iter=1",
                 "--set", "controller.max_fallback_steps=1", "--set", "controller.brake_decel=30"])
    assert code == 1
    cap = capsys.readouterr()
    assert len(cap.err.strip().splitlines()) == 1
    assert "run failed: safe_stop" in cap.err and cap.out == ""
    assert (tmp_path / "result.npz").is_file() and (tmp_path / "metrics.json").is_file()


def test_path_show(tmp_path, capsys):
    assert main(["path", "show", "oval", "--out", str(tmp_path / "oval.png")]) == 0
    assert "length" in capsys.readouterr().out
    _not_blank(tmp_path / "oval.png")


def test_demo_command(tmp_path):
    p = cli("demo", "--out", str(tmp_path / "demo"))
    assert p.returncode == 0, p.stderr
    assert "lap time" in p.stdout and "completed" in p.stdout
    for name in ("track.png", "timeseries.png"):
        _not_blank(tmp_path / "demo" / name)


@pytest.mark.parametrize(
    "argv, match",
    [
        (["run", QUICK, "--set", "controller.horizn=5"], r"unknown key 'horizn' in controller; did you mean 'horizon'"),
        (["run", QUICK, "--set", "controller.horizon"], r"expected KEY=VALUE"),
        (["run", QUICK, "--set", "controller.horizon=abc"], r"controller\.horizon: expected an integer"),
        (["run", "missing.yaml"], r"missing\.yaml: no such scenario file"),
        (["run", QUICK, "--plant", "hovercraft"], r"unknown motion model 'hovercraft'"),
        (["animate", "missing.npz", "--out", "x.gif"], r"missing\.npz: no such file"),
        (["animate", QUICK, "--out", "x.avi"], r"unknown animation format '\.avi'"),
        (["path", "show", "no_such_track"], r"unknown bundled path 'no_such_track'"),
    ],
)
def test_input_errors_one_line_exit_2(argv, match, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    import re

    assert re.search(match, err), err


def test_wrong_format_and_unwritable_folder(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("controller:\n  horizon: [1\n")
    assert main(["run", str(bad)]) == 2
    assert "not valid YAML" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["run", QUICK, "--out", str(blocker / "sub")]) == 2
    err = capsys.readouterr().err
    assert "output folder" in err and "cannot write" in err
    junk = tmp_path / "junk.npz"
    junk.write_text("not a zip")
    assert main(["animate", str(junk), "--out", str(tmp_path / "x.gif")]) == 2
    assert "not a simulation result" in capsys.readouterr().err
    assert not (tmp_path / "x.gif").exists()


def test_usage_errors_exit_2_one_line(capsys):
    p = cli("run")
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "required" in p.stderr
    with pytest.raises(SystemExit) as exc:
        main(["frobnicate"])
    assert exc.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_help_everywhere(capsys):
    parser = build_parser()
    for argv in (["--help"], ["demo", "--help"], ["run", "--help"], ["animate", "--help"], ["path", "show", "--help"],
                 ["check", "--help"]):
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(argv)
        assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--set KEY=VALUE" in out and "--fps" in out


class _FakeTTY:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


@pytest.mark.parametrize("quiet", [False, True])
def test_progress_bar_only_on_a_terminal_and_not_quiet(tmp_path, monkeypatch, capsys, quiet):
    fake = _FakeTTY()
    monkeypatch.setattr(sys, "stderr", fake)
    argv = ["run", QUICK, "--no-plots", "--out", str(tmp_path), "--set", "simulation.t_max=1"] + (["--quiet"] if quiet else [])
    assert main(argv) == 0
    assert ("sim s" in fake.text) is (not quiet)
    assert (capsys.readouterr().out == "") is quiet


def test_check_keys_lists_every_section(capsys):
    assert main(["check", "--keys"]) == 0
    out = capsys.readouterr().out
    for key in ("path.source", "controller.horizon", "controller.mode", "simulation.e_y0", "outputs.animation.fps",
                "environment.obstacles.N.radius", "environment.grid.image", "plant.params"):
        assert key in out, key
    assert "Number N of prediction steps" in out


def test_plant_option_then_set_plant_params(capsys):
    assert main(["check", QUICK, "--plant", "ackermann3d", "--set", "plant.params.preset=sedan"]) == 0
    out = capsys.readouterr().out
    assert "name: ackermann3d" in out and "preset: sedan" in out
