"""Clean shutdowns, by fault injection: a sweep stopped by Ctrl-C / SIGTERM stops its workers and
still writes its summary; a run writes its folder whole (or leaves ``INCOMPLETE``); ``new-model``
writes its package whole or not at all; a disk error names the path."""
from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpc_tracking.cli.main import main
from mpc_tracking.cli.outputs import INCOMPLETE_NAME

CLI_MAIN = sys.modules["mpc_tracking.cli.main"]
QUICK = str(Path(__file__).resolve().parents[2] / "demos" / "quickstart.yaml")
LOG_LINE = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip() and not LOG_LINE.match(line)]


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _short_run(out: Path, *extra: str) -> list[str]:
    return ["run", QUICK, "-q", "--no-plots", "--out", str(out), "--set", "simulation.t_max=0.3", "--set",
            "controller.horizon=8", *extra]


# ---------------------------------------------------------------------- run
def test_run_moves_its_files_into_place_and_leaves_no_staging(tmp_path, capsys):
    out = tmp_path / "out"
    (out).mkdir()
    (out / "mine.txt").write_text("the user's own file")
    (out / INCOMPLETE_NAME).write_text("stale marker of an earlier run")
    assert main(_short_run(out)) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["metrics.json", "mine.txt", "result.npz", "scenario.yaml", "timeseries.csv"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no .out.partial-* left beside it


def test_run_disk_full_names_the_file_and_marks_the_folder_incomplete(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.npz").write_text("result of an earlier run")
    monkeypatch.setattr("numpy.savez_compressed", _disk_full)
    assert main(_short_run(out)) == 1
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "No space left on device" in lines[0] and "result.npz" in lines[0], lines
    assert (out / "result.npz").read_text() == "result of an earlier run"  # not half-replaced
    assert "stopped before its files were complete" in (out / INCOMPLETE_NAME).read_text()
    assert not (out / "timeseries.csv").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_run_interrupted_leaves_incomplete_and_exit_130(tmp_path, monkeypatch, capsys):
    def interrupted(args, sc):
        raise KeyboardInterrupt

    monkeypatch.setattr(CLI_MAIN, "_simulate", interrupted)
    out = tmp_path / "out"
    assert main(_short_run(out)) == 130
    assert _error_lines(capsys.readouterr().err) == [
        "mpc-tracking: interrupted (Ctrl-C); files already written are kept"]
    assert "interrupted" in (out / INCOMPLETE_NAME).read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def test_run_bad_input_writes_no_marker(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(_short_run(out, "--set", "simulation.e_y0=40")) == 2
    assert not (out / INCOMPLETE_NAME).exists()
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


# ---------------------------------------------------------------------- new-model
def test_new_model_whole_or_nothing(tmp_path, monkeypatch, capsys):
    calls = []
    real = Path.write_text

    def third_fails(self, *a, **k):
        calls.append(self)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "write_text", third_fails)
    target = tmp_path / "plugin"
    assert main(["new-model", "flying_car", str(target)]) == 1
    lines = _error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and "No space left on device" in lines[0] and str(target) in lines[0], lines
    assert not target.exists() and list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    assert main(["new-model", "flying_car", str(target)]) == 0
    assert (target / "pyproject.toml").is_file() and (target / "mpc_tracking_flying_car" / "model.py").is_file()


def test_new_model_force_keeps_the_old_files_when_it_fails(tmp_path, monkeypatch, capsys):
    target = tmp_path / "plugin"
    assert main(["new-model", "flying_car", str(target)]) == 0
    (target / "pyproject.toml").write_text("edited by hand")
    (target / "notes.txt").write_text("mine")
    real = os.replace
    calls = []

    def fourth_fails(src, dst):
        calls.append(dst)
        if len(calls) == 4:
            raise OSError(errno.EIO, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", fourth_fails)
    assert main(["new-model", "flying_car", str(target), "--force"]) == 1
    assert "Input/output error" in capsys.readouterr().err
    monkeypatch.undo()
    assert (target / "pyproject.toml").read_text() == "edited by hand"
    assert (target / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plugin"]
    assert not [p for p in target.rglob(".*") if p.is_file()]


# ---------------------------------------------------------------------- sweep
def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to see the worker processes")
@pytest.mark.parametrize("sig, code, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_sweep_signal_stops_workers_and_writes_the_summary(tmp_path, sig, code, word):
    out = tmp_path / "sweep"
    # `python -c` (no main script to import again), as the installed `mpc-tracking` script would run it
    argv = [sys.executable, "-c", "import sys; from mpc_tracking.cli import main; sys.exit(main(sys.argv[1:]))",
            "sweep", QUICK, "--grid", "controller.horizon=8,9,10,11,12,13,14,15", "--workers", "2", "--out", str(out),
            "--no-progress", "--set", "simulation.laps=3"]
    # a session of its own: Ctrl-C in a terminal reaches the whole process group, workers included
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            start_new_session=True)
    rows: list[dict] = []
    deadline = time.monotonic() + 120
    jsonl = out / "sweep.jsonl"
    while time.monotonic() < deadline and proc.poll() is None:
        if jsonl.is_file():
            rows = [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
            if rows:
                break
        time.sleep(0.1)
    assert rows, "no run finished in time"
    workers = {int(r["worker"].rsplit(":", 1)[1]) for r in rows}
    if sig == signal.SIGINT:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    lines = _error_lines(err)
    assert len(lines) == 1 and word in lines[0] and "workers stopped" in lines[0], err
    summary = json.loads((out / "sweep.json").read_text())
    assert 1 <= len(summary) < 8 and all(r["status"] == "ok" for r in summary)
    assert [r["index"] for r in summary] == sorted(r["index"] for r in summary)
    time.sleep(0.5)
    assert not [pid for pid in workers if _alive(pid)], "worker processes outlived the sweep"
    # and --resume goes on from there
    assert f"{len(summary)} finished runs kept" in lines[0]
