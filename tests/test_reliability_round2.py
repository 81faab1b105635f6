"""Reliability, round two (issue 22, items 2-9): each class of failure as a table, each case failing
without its fix, plus hypothesis properties over the new inputs (files, grids, plant outputs).

Classes: inputs that could hang (named pipes, devices) -- one opener in :mod:`mpc_tracking.fileio`;
work sized before it is checked (grids counted, values validated before any run); values not
checked (plant outputs, ``v0``, ``ds`` vs the path, animation formats); columns read by name;
signals at start-up; processes and folders left behind; a watchdog of the loop step; small ones
(the disk-full path of a sweep, warnings as one log line).
"""
from __future__ import annotations

import dataclasses
import errno
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpc_tracking.errors import InputError, PathFormatError, ScenarioError, SettingsError
from mpc_tracking.fileio import check_input_file, read_input_bytes, read_yaml
from mpc_tracking.paths.io import _header_columns, load_path, read_tum, read_xy
from mpc_tracking.results import Outcome
from mpc_tracking.scenario.build import build
from mpc_tracking.scenario.core import load_scenario
from mpc_tracking.simulation import check_simulation, simulate
from mpc_tracking.tuning.grid import check_values, expand_grid, grid_size
from mpc_tracking.tuning.sweep import MAX_SWEEP_RUNS, sweep

sweep_module = sys.modules["mpc_tracking.tuning.sweep"]

ROOT = Path(__file__).resolve().parents[1]
QUICK = str(ROOT / "demos" / "quickstart.yaml")
LOG_LINE = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")
_PROPS = settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux (/proc, mkfifo, /dev)")


def _in_thread(fn, timeout: float = 60.0):
    """``fn()``'s exception (or None) -- or a failure when it blocks (a read of a pipe never returns)."""
    box: dict = {}

    def target():
        try:
            fn()
        except BaseException as exc:  # handed to the test
            box["exc"] = exc

    th = threading.Thread(target=target, daemon=True)
    th.start()
    th.join(timeout)
    assert not th.is_alive(), f"{fn} blocked (a read that never returns)"
    return box.get("exc")


# ====================================================================== 2. inputs that could hang
def _special(kind: str, folder: Path, name: str) -> Path:
    p = folder / name
    if kind == "fifo":
        os.mkfifo(p)
    elif kind in ("zero", "urandom"):
        p.symlink_to(f"/dev/{kind}")
    elif kind == "folder":
        p.mkdir()
    return p


def _readers(folder: Path):
    """(name, file name, call) for every reader of input files."""
    from mpc_tracking.environment.occupancy_grid import OccupancyGrid
    from mpc_tracking.identification.vehicle_file import load_vehicle_file
    from mpc_tracking.results import SimulationResult
    from mpc_tracking.tuning.io import read_rows

    def rows(p: Path):
        return read_rows(p.parent)

    return [
        ("scenario", "s.yaml", load_scenario),
        ("path-table", "p.csv", load_path),
        ("path-yaml", "c.yaml", load_path),
        ("read_tum", "t.csv", read_tum),
        ("read_xy", "x.csv", read_xy),
        ("vehicle", "v.yaml", load_vehicle_file),
        ("result", "r.npz", SimulationResult.load),
        ("grid-image", "g.png", OccupancyGrid.from_image),
        ("sweep-rows", "sweep.jsonl", rows),
    ]


_KIND_TEXT = {"fifo": "not a regular file: a named pipe", "zero": "not a regular file: a character device",
              "urandom": "not a regular file: a character device", "folder": "is a folder"}
_READERS = ["scenario", "path-table", "path-yaml", "read_tum", "read_xy", "vehicle", "result", "grid-image",
            "sweep-rows"]


@linux_only
@pytest.mark.parametrize("kind", list(_KIND_TEXT))
@pytest.mark.parametrize("reader", _READERS)
def test_every_reader_refuses_pipes_and_devices_by_name(reader, kind, tmp_path):
    name, filename, call = next(r for r in _readers(tmp_path) if r[0] == reader)
    p = _special(kind, tmp_path, filename)
    exc = _in_thread(lambda: call(p))
    assert isinstance(exc, InputError), (name, kind, exc)
    text = str(exc)
    assert _KIND_TEXT[kind] in text and filename in text and "\n" not in text, text


@linux_only
def test_a_file_swapped_for_a_pipe_after_the_check_does_not_block(tmp_path, monkeypatch):
    """The open uses O_NONBLOCK and the open descriptor is checked again (no window between stat and open)."""
    fifo = tmp_path / "late.yaml"
    os.mkfifo(fifo)
    import mpc_tracking.fileio as fileio

    monkeypatch.setattr(fileio, "check_input_file", lambda *a, **k: 0)  # as if it was a file when checked
    exc = _in_thread(lambda: read_input_bytes(fifo, what="scenario file"))
    assert isinstance(exc, InputError) and "named pipe" in str(exc)


@linux_only
@pytest.mark.parametrize("argv", [["check", "{P}"], ["run", "{P}"], ["path", "show", "{P}"],
                                  ["animate", "{P}", "--out", "{T}/a.gif"]], ids=["check", "run", "path", "animate"])
def test_cli_refuses_a_pipe_in_one_line(argv, tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    args = [a.replace("{P}", str(fifo)).replace("{T}", str(tmp_path)) for a in argv]
    p = subprocess.run([sys.executable, "-m", "mpc_tracking", *args], capture_output=True, text=True, cwd=tmp_path,
                       timeout=120)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not LOG_LINE.match(ln)]
    assert len(lines) == 1 and "named pipe" in lines[0] and "Traceback" not in p.stderr, p.stderr


@_PROPS
@given(data=st.binary(max_size=300), limit=st.integers(0, 400))
def test_property_bounded_reads_return_the_file_or_refuse_it(data, limit, tmp_path_factory):
    f = tmp_path_factory.mktemp("bytes") / "f.bin"
    f.write_bytes(data)
    if len(data) <= limit:
        assert read_input_bytes(f, max_bytes=limit) == data
        assert check_input_file(f, max_bytes=limit) == len(data)
    else:
        with pytest.raises(InputError, match="limit"):
            read_input_bytes(f, max_bytes=limit)


def test_yaml_reader_goes_through_the_one_opener(tmp_path, monkeypatch):
    import mpc_tracking.fileio as fileio

    calls = []
    real = fileio.read_input_bytes
    monkeypatch.setattr(fileio, "read_input_bytes", lambda *a, **k: calls.append(a[0]) or real(*a, **k))
    f = tmp_path / "a.yaml"
    f.write_text("a: 1\n")
    assert read_yaml(f).data == {"a": 1} and calls == [f]


# ====================================================================== 3. work sized before it is checked
def _no_run(scenario, overrides):  # module level: picklable
    raise AssertionError(f"a run started: {overrides}")


@pytest.fixture(scope="module")
def base():
    return load_scenario(QUICK).with_overrides({"simulation.t_max": 0.5, "controller.horizon": 8})


GRID_CASES = [
    # (id, grid, extra sweep arguments, error class, message regex)
    ("1e12-points", {f"plant.params.p{i}": list(range(10)) for i in range(12)}, {"yes": True}, InputError,
     r"1,000,000,000,000 runs are more than any sweep launches"),
    ("1e6-points", {"controller.horizon": list(range(1, 1001)), "simulation.s0": [0.01 * i for i in range(1000)]},
     {}, InputError, r"1000000 runs to launch exceed max_runs=200"),
    ("1e6-with-yes", {"controller.horizon": list(range(1, 1001)), "simulation.s0": [0.01 * i for i in range(1001)]},
     {"yes": True}, InputError, r"1,001,000 runs are more than"),
    ("repeats-count", {"controller.horizon": [8, 9]}, {"repeats": 150}, InputError, r"300 runs to launch exceed"),
    ("nan-value", {"controller.v_max": [10.0, float("nan")]}, {}, ScenarioError,
     r"grid key 'controller\.v_max' = nan: .*NaN"),
    ("horizon-0", {"controller.horizon": [8, 0]}, {}, ScenarioError, r"grid key 'controller\.horizon' = 0: .*>= 1"),
    ("negative-vmax", {"controller.v_max": [-1.0]}, {}, ScenarioError, r"grid key 'controller\.v_max': .*> 0"),
    ("unknown-key", {"controller.horizn": [8, 9]}, {}, ScenarioError, r"did you mean 'horizon'"),
    ("points-list-bad", [{"controller.horizon": 8}, {"controller.v_max": float("inf")}], {}, ScenarioError,
     r"grid key 'controller\.v_max'"),
]


@pytest.mark.parametrize("grid, extra, error, pattern", [c[1:] for c in GRID_CASES], ids=[c[0] for c in GRID_CASES])
def test_grids_are_sized_and_checked_before_any_run(grid, extra, error, pattern, base, monkeypatch):
    def expanded(*a, **k):
        raise AssertionError("the grid was expanded before it was sized and checked")

    monkeypatch.setattr(sweep_module, "expand_grid", expanded)
    with pytest.raises(error, match=pattern):
        sweep(base, grid, executor="serial", progress=False, runner=_no_run, **extra)


def test_a_valid_grid_still_runs(base):
    res = sweep(base, {"controller.horizon": [8, 9]}, executor="serial", progress=False)
    assert [r["status"] for r in res.rows] == ["ok", "ok"]


def test_grid_size_counts_without_expanding():
    assert grid_size({f"k{i}": list(range(10)) for i in range(12)}) == 10**12
    assert MAX_SWEEP_RUNS < 10**12


_VALUES = st.one_of(st.integers(1, 50), st.floats(0.5, 5.0))


@_PROPS
@given(axes=st.lists(st.lists(_VALUES, min_size=1, max_size=4), min_size=1, max_size=4))
def test_property_grid_size_is_the_number_of_points(axes):
    grid = {f"plant.params.k{i}": values for i, values in enumerate(axes)}
    assert grid_size(grid) == len(expand_grid(grid)[1]) == int(np.prod([len(v) for v in axes]))


@_PROPS
@given(good=st.lists(st.floats(2.0, 20.0), min_size=0, max_size=4), where=st.integers(0, 4),
       bad=st.sampled_from([float("nan"), float("inf"), -1.0, 0.0]))
def test_property_a_bad_value_anywhere_on_an_axis_is_found(good, where, bad, base):
    values = list(good)
    values.insert(min(where, len(values)), bad)
    with pytest.raises(ScenarioError, match=r"grid key 'controller\.v_max'"):
        check_values(base, {"controller.horizon": [8], "controller.v_max": values})
    if good:  # without the bad value the axis passes, each distinct value checked once
        assert check_values(base, {"controller.v_max": good + good}) == len(set(good))


# ====================================================================== 4. values not checked
@pytest.fixture()
def built():
    sc = load_scenario(QUICK).with_overrides({"controller.horizon": 8, "simulation.t_max": 3.0})
    return build(sc)


def _faulty(plant, attribute: str, value, after: int):
    """Make ``plant`` report ``value`` as its ``attribute`` (speed, or x/yaw of its pose) after ``after`` reads."""
    cls = type(plant)
    reads = {"n": 0}

    def bad_speed(self):
        reads["n"] += 1
        return value if reads["n"] > after else cls.speed.fget(self)

    def bad_pose(self):
        pose = cls.pose.fget(self)
        reads["n"] += 1
        if reads["n"] <= after:
            return pose
        return dataclasses.replace(pose, **{attribute: value})

    body = {"speed": property(bad_speed)} if attribute == "speed" else {"pose": property(bad_pose)}
    plant.__class__ = type(f"Faulty{cls.__name__}", (cls,), body)
    return plant


PLANT_OUTPUT_CASES = [
    ("speed-nan-at-start", "speed", float("nan"), 0),
    ("speed-nan-later", "speed", float("nan"), 20),
    ("speed-inf", "speed", float("inf"), 5),
    ("speed-minus-inf", "speed", float("-inf"), 5),
    ("pose-x-nan", "x", float("nan"), 10),
    ("pose-yaw-inf", "yaw", float("inf"), 10),
]


@pytest.mark.parametrize("attribute, value, after", [c[1:] for c in PLANT_OUTPUT_CASES],
                         ids=[c[0] for c in PLANT_OUTPUT_CASES])
def test_every_plant_output_the_loop_reads_is_checked(attribute, value, after, built):
    path, mpc, plant, actuator, kw = built
    _faulty(plant, attribute, value, after)
    res = simulate(path, mpc, plant, actuator, **kw)
    assert res.reason == Outcome.NON_FINITE_STATE, (res.reason, res.message)
    assert attribute in res.message
    assert np.all(np.isfinite(res.series["v"])), "a non-finite output reached the log"
    assert not res.success


@_PROPS
@given(after=st.integers(0, 40), value=st.sampled_from([float("nan"), float("inf"), float("-inf")]))
def test_property_a_bad_speed_at_any_step_ends_the_run(after, value):
    sc = load_scenario(QUICK).with_overrides({"controller.horizon": 8, "simulation.t_max": 2.5})
    path, mpc, plant, actuator, kw = build(sc)
    _faulty(plant, "speed", value, after)
    res = simulate(path, mpc, plant, actuator, **kw)
    assert res.reason == Outcome.NON_FINITE_STATE
    assert np.all(np.isfinite(res.series["v"]))


SETUP_CASES = [
    ("v0-1e6", {"v0": 1e6}, InputError, r"v0: 1000000\.0 m/s is outside .*\|v0\| <= 2 x controller\.v_max"),
    ("v0-minus-1e6", {"v0": -1e6}, InputError, r"v0: .*outside"),
    ("v0-inf", {"v0": float("inf")}, InputError, r"v0: "),
    ("step-wall-limit-0", {"step_wall_limit": 0}, SettingsError, r"step_wall_limit: expected a positive"),
    ("step-wall-limit-nan", {"step_wall_limit": float("nan")}, SettingsError, r"step_wall_limit"),
]


@pytest.mark.parametrize("kwargs, error, pattern", [c[1:] for c in SETUP_CASES], ids=[c[0] for c in SETUP_CASES])
def test_run_set_up_values_are_range_checked(kwargs, error, pattern, built):
    path, mpc, plant, actuator, kw = built
    for call in (lambda: simulate(path, mpc, plant, actuator, **{**kw, **kwargs}),
                 lambda: check_simulation(path, mpc, plant, **{**kw, **kwargs})):
        with pytest.raises(error, match=pattern):
            call()


def test_a_step_longer_than_the_path_is_refused():
    import mpc_tracking as mt

    path = mt.ReferencePath(np.linspace(0, 5, 11), np.zeros(11), closed=False, ds=0.5)
    mpc = mt.SpatialMPC(path, settings=mt.MPCSettings(horizon=5, ds=8.0))
    with pytest.raises(SettingsError, match=r"controller\.ds: an MPC step of 8 m is not shorter than the whole path"):
        simulate(path, mpc, mt.KinematicBicycle())


# CLI: `check` refuses what `run` would refuse, with one line (exit 2), before any run
CHECK_CASES = [
    ("v0-huge", ["--set", "simulation.v0=1e6"], r"v0: .*outside the range"),
    ("ds-longer-than-path", ["--set", "controller.ds=1000", "--set", "controller.horizon=2"],
     r"controller\.ds: an MPC step of 1000 m is not shorter"),
    ("animation-avi", ["--set", "outputs.animation.file=run.avi"],
     r"outputs\.animation\.file run\.avi: unknown animation format '\.avi'"),
    ("animation-folder", ["--set", "outputs.animation.file=sub/run.gif"],
     r"outputs\.animation\.file 'sub/run\.gif': expected a file name in the output folder"),
    ("step-wall-limit-negative", ["--set", "simulation.step_wall_limit=-1"], r"step_wall_limit"),
]


def _one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip() and not LOG_LINE.match(ln)]
    assert len(lines) == 1 and lines[0].startswith("mpc-tracking") and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("extra, pattern", [c[1:] for c in CHECK_CASES], ids=[c[0] for c in CHECK_CASES])
@pytest.mark.parametrize("command", ["check", "run"])
def test_check_and_run_refuse_the_same_values_up_front(command, extra, pattern, tmp_path, monkeypatch, capsys):
    from mpc_tracking.cli.main import main

    def no_simulation(*a, **k):
        raise AssertionError("simulated before the values were checked")

    monkeypatch.setattr("mpc_tracking.simulation._Loop.run", no_simulation)
    argv = [command, QUICK, *extra] + (["-q", "--no-plots", "--out", str(tmp_path / "o")] if command == "run" else [])
    assert main(argv) == 2
    assert re.search(pattern, _one_line(capsys.readouterr().err))


# ====================================================================== 5. columns by name
_TRACK = np.column_stack([40 * np.cos(np.linspace(0, 2 * np.pi, 80, endpoint=False)),
                          15 * np.sin(np.linspace(0, 2 * np.pi, 80, endpoint=False)),
                          np.full(80, 2.0), np.full(80, 3.0)])  # x, y, w_right, w_left
_ROLE = {"x": 0, "y": 1, "w_right": 2, "w_left": 3}

HEADER_CASES = [
    # (id, header line, the columns (roles) in the file's order)
    ("x,y", "x,y", ["x", "y"]),
    ("y,x", "y,x", ["y", "x"]),
    ("Y,X", "Y,X", ["y", "x"]),
    ("units", "y [m],x [m]", ["y", "x"]),
    ("hash-y_m,x_m", "# y_m,x_m", ["y", "x"]),
    ("whitespace", "y x", ["y", "x"]),
    ("semicolon", "y_m;x_m", ["y", "x"]),
    ("tum-order", "# x_m,y_m,w_tr_right_m,w_tr_left_m", ["x", "y", "w_right", "w_left"]),
    ("left-before-right", "x,y,w_left,w_right", ["x", "y", "w_left", "w_right"]),
    ("all-shuffled", "w_left_m,y_m,w_right_m,x_m", ["w_left", "y", "w_right", "x"]),
]


def _write(folder: Path, header: str, roles: list[str], name: str = "t.csv") -> Path:
    sep = " " if header == "y x" else (";" if ";" in header else ",")
    cols = _TRACK[:, [_ROLE[r] for r in roles]]
    f = folder / name
    f.write_text(header + "\n" + "".join(sep.join(f"{v:.6f}" for v in row) + "\n" for row in cols))
    return f


@pytest.mark.parametrize("header, roles", [c[1:] for c in HEADER_CASES], ids=[c[0] for c in HEADER_CASES])
def test_columns_are_read_by_name(header, roles, tmp_path):
    path = read_xy(_write(tmp_path, header, roles), closed=True, smoothing=0)
    canonical = ["x", "y", "w_right", "w_left"][:len(roles)]
    ref = read_xy(_write(tmp_path, ",".join(canonical), canonical, "ref.csv"), closed=True, smoothing=0)
    np.testing.assert_allclose(path.x, ref.x, atol=1e-9)
    np.testing.assert_allclose(path.y, ref.y, atol=1e-9)
    if len(roles) == 4:
        np.testing.assert_allclose(path.width_right, 2.0)
        np.testing.assert_allclose(path.width_left, 3.0)


BAD_HEADER_CASES = [
    ("x-twice", "x,x_m", r"t\.csv:1: header 'x,x_m': columns 1 \('x'\) and 2 \('x_m'\) both give x"),
    ("y-twice", "y,y", r"t\.csv:1: header 'y,y': .*both give y"),
    ("unknown-name", "x,elevation", r"t\.csv:1: header 'x,elevation': column 'elevation' is not one of"),
    ("no-y", "x,w_left", r"t\.csv:1: header 'x,w_left': .*"),
    ("one-width", "x,y,w_left,foo", r"t\.csv:1: header .*'foo'"),
    ("names-for-two-of-four", "x,y", r"t\.csv:1: header 'x,y': 2 names for 4 columns"),
]


@pytest.mark.parametrize("header, pattern", [c[1:] for c in BAD_HEADER_CASES], ids=[c[0] for c in BAD_HEADER_CASES])
def test_ambiguous_headers_are_refused_naming_file_line_and_header(header, pattern, tmp_path):
    n = 4 if header in ("x,y,w_left,foo", "x,y") else 2
    f = tmp_path / "t.csv"
    f.write_text(header + "\n" + "".join(",".join(f"{v:.6f}" for v in row[:n]) + "\n" for row in _TRACK))
    with pytest.raises(PathFormatError, match=pattern):
        read_xy(f, closed=True, smoothing=0)


def test_tum_files_honour_their_header(tmp_path):
    f = _write(tmp_path, "# x_m,y_m,w_tr_left_m,w_tr_right_m", ["x", "y", "w_left", "w_right"])
    path = read_tum(f)
    np.testing.assert_allclose(path.width_right, 2.0)
    np.testing.assert_allclose(path.width_left, 3.0)


@_PROPS
@given(order=st.permutations(["x", "y", "w_right", "w_left"]), spelling=st.sampled_from([0, 1]))
def test_property_any_column_order_gives_the_same_path(order, spelling, tmp_path_factory):
    names = {"x": ("x", "x_m"), "y": ("y", "y_m"), "w_right": ("w_right", "w_tr_right_m"),
             "w_left": ("w_left", "w_tr_left_m")}
    folder = tmp_path_factory.mktemp("perm")
    header = ",".join(names[r][spelling] for r in order)
    assert _header_columns(header.split(",")) == {r: i for i, r in enumerate(order)}
    path = read_xy(_write(folder, header, list(order)), closed=True, smoothing=0)
    ref = read_xy(_write(folder, "x,y,w_right,w_left", ["x", "y", "w_right", "w_left"], "ref.csv"), closed=True,
                  smoothing=0)
    np.testing.assert_allclose(np.column_stack([path.x, path.y, path.width_right, path.width_left]),
                               np.column_stack([ref.x, ref.y, ref.width_right, ref.width_left]), atol=1e-9)


# ====================================================================== 6. signals at start-up
def _caught_signals(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("SigCgt:"):
                return int(line.split()[1], 16)
    return 0


@linux_only
@pytest.mark.parametrize("delay", [0.0, 0.05, 0.2, 0.5], ids=lambda d: f"{d}s")
@pytest.mark.parametrize("sig, code, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
                         ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_the_command_starts_is_one_line(sig, code, word, delay, tmp_path):
    """From the package's first statement on (SIGTERM caught: the guard is in place), any early
    moment: exit 128 + signal with one line, no traceback."""
    proc = subprocess.Popen([sys.executable, "-m", "mpc_tracking", "check", QUICK], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not _caught_signals(proc.pid) & (1 << (signal.SIGTERM - 1)) and time.monotonic() < deadline:
        time.sleep(0.002)
    time.sleep(delay)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:  # `check` finished before the signal: nothing to assert at this delay
        pytest.skip("the command finished before the signal")
    # 128 + signal; or killed by SIGINT itself, which a shell shows as the same 130: CPython ends a process in
    # which a KeyboardInterrupt once escaped some C-level run of Python code (its _Py_UnhandledKeyboardInterrupt
    # flag) by re-raising SIGINT at exit, even when the command caught the interrupt and returned 130
    assert proc.returncode == code or (sig == signal.SIGINT and proc.returncode == -signal.SIGINT), err
    assert word in _one_line(err)


def test_the_guard_stays_out_of_library_imports_and_workers(monkeypatch):
    from mpc_tracking import _startup

    monkeypatch.setattr(sys, "argv", ["python"])
    monkeypatch.setattr(sys, "orig_argv", ["python", "-c", "import mpc_tracking"], raising=False)
    assert not _startup.is_command_process()
    monkeypatch.setattr(sys, "argv", ["/usr/bin/mpc-tracking", "run"])
    assert _startup.is_command_process()
    monkeypatch.setattr(sys, "orig_argv", ["python", "-c", "spawn_main()", "--multiprocessing-fork"], raising=False)
    assert not _startup.is_command_process()


# ====================================================================== 7. processes and folders left behind
def _children(pid: int) -> set[int]:
    out = set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.add(int(d.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@linux_only
def test_sigkill_of_a_sweep_leaves_no_worker_behind(tmp_path):
    argv = [sys.executable, "-c", "import sys; from mpc_tracking.cli import main; sys.exit(main(sys.argv[1:]))",
            "sweep", QUICK, "--grid", "controller.horizon=8,9,10,11", "--workers", "2", "--out", str(tmp_path / "sw"),
            "--no-progress", "--set", "simulation.laps=50"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    kids: set[int] = set()
    while time.monotonic() < deadline and len(kids) < 3 and proc.poll() is None:  # 2 workers + resource tracker
        kids = _children(proc.pid)
        time.sleep(0.1)
    assert kids, "no worker started"
    time.sleep(1.0)  # the workers are running their tasks
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(_alive(k) for k in kids):
        time.sleep(0.2)
    left = [k for k in kids if _alive(k)]
    for k in left:  # do not leave them to the next test
        os.kill(k, signal.SIGKILL)
    assert not left, f"processes of the killed sweep still alive: {left}"


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.parametrize("owner, removed", [("dead", True), ("alive", False), ("other-name", False)])
def test_stale_staging_folders_are_removed_at_the_next_run(owner, removed, tmp_path, caplog):
    from mpc_tracking.cli.outputs import staged_folder

    out = tmp_path / "out"
    out.mkdir()
    pid = _dead_pid() if owner == "dead" else os.getppid()
    name = f".out.partial-{pid}" if owner != "other-name" else f".other.partial-{_dead_pid()}"
    stale = tmp_path / name
    stale.mkdir()
    (stale / "result.npz").write_bytes(b"half")
    with staged_folder(out) as staging:
        (staging.folder / "a.txt").write_text("new")
        staging.commit()
    assert stale.exists() is not removed
    assert (out / "a.txt").read_text() == "new"
    if removed:
        assert any(str(stale) in r.getMessage() for r in caplog.records)


def test_a_kill_during_the_final_moves_leaves_the_marker(tmp_path):
    """os._exit in the middle of the moves (no clean-up runs, as with SIGKILL): INCOMPLETE stays."""
    script = f"""
import os
from pathlib import Path
from mpc_tracking.cli.outputs import staged_folder
out = Path({str(tmp_path / 'out')!r}); out.mkdir()
(out / "a.txt").write_text("old"); (out / "b.txt").write_text("old")
real = os.replace
moves = []
def replace(a, b):
    moves.append(b)
    if len(moves) == 2:
        os._exit(9)
    real(a, b)
os.replace = replace
with staged_folder(out) as staging:
    (staging.folder / "a.txt").write_text("new"); (staging.folder / "b.txt").write_text("new")
    staging.commit()
"""
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 9, p.stderr
    out = tmp_path / "out"
    assert (out / "a.txt").read_text() == "new" and (out / "b.txt").read_text() == "old"  # a mix ...
    assert "being moved in" in (out / "INCOMPLETE").read_text()  # ... that says so


def test_a_completed_commit_removes_the_marker(tmp_path):
    from mpc_tracking.cli.outputs import staged_folder

    out = tmp_path / "out"
    out.mkdir()
    with staged_folder(out) as staging:
        (staging.folder / "a.txt").write_text("new")
        staging.commit()
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]


# ====================================================================== 8. a watchdog of the loop step
class _Stall:
    """Make ``obj.method`` sleep ``seconds`` once, at its ``at``-th call."""

    def __init__(self, obj, method: str, at: int, seconds: float) -> None:
        self.real, self.at, self.seconds, self.calls = getattr(obj, method), at, seconds, 0
        setattr(obj, method, self)

    def __call__(self, *a, **k):
        self.calls += 1
        if self.calls == self.at:
            time.sleep(self.seconds)
        return self.real(*a, **k)


WATCHDOG_CASES = [("plant", "step", "the plant's step"), ("controller", "solve", "the controller's step")]


@pytest.mark.parametrize("part, method, text", WATCHDOG_CASES, ids=[c[0] for c in WATCHDOG_CASES])
def test_a_stalled_step_ends_the_run_and_keeps_what_was_computed(part, method, text, built):
    path, mpc, plant, actuator, kw = built
    n_sub = 5  # plant steps per control period in this scenario (control period / sim_dt)
    at = 30 if part == "plant" else 6
    _Stall(plant if part == "plant" else mpc, method, at, 1.5)
    res = simulate(path, mpc, plant, actuator, **{**kw, "step_wall_limit": 0.75})
    assert res.reason == Outcome.STEP_WALL_LIMIT and text in res.message, (res.reason, res.message)
    assert len(res) == (at - 1) // n_sub + 1 if part == "plant" else len(res) == at
    assert res.series["step_time"][-1] >= 1.5
    assert not res.success


def test_without_a_limit_a_stalled_plant_counts_as_a_realtime_overrun(built):
    path, mpc, plant, actuator, kw = built
    _Stall(plant, "step", 30, 0.5)  # the controller alone is far inside the 50 ms period
    res = simulate(path, mpc, plant, actuator, **kw)
    k = int(np.argmax(res.series["step_time"]))
    assert res.series["step_time"][k] >= 0.5 and res.metrics["realtime_overruns"] >= 1
    assert res.series["solve_time"][k] < 0.5  # the controller's own time did not see it


def test_scenario_key_step_wall_limit_reaches_simulate():
    sc = load_scenario(QUICK).with_overrides({"simulation.step_wall_limit": 2.0})
    assert build(sc)[4]["step_wall_limit"] == 2.0


# ====================================================================== 9. small ones
def test_a_full_disk_while_a_sweep_streams_names_the_file(tmp_path):
    from mpc_tracking.tuning.io import SweepWriter

    w = SweepWriter(tmp_path, ["key", "index"])

    class Full:
        closed = False

        def write(self, _):
            raise OSError(errno.ENOSPC, "No space left on device")

        flush = close = lambda self: None

    w._jsonl_fh = Full()
    with pytest.raises(OSError) as info:
        w.append({"key": "k", "index": 0})
    assert info.value.filename == str(tmp_path / "sweep.jsonl")


def _png(width: int, height: int) -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00")) + chunk(b"IEND", b"")


def test_library_warnings_are_one_log_line_each(tmp_path):
    """Pillow warns about a 100 Mpixel image before the grid's own limit refuses it: one log line."""
    (tmp_path / "warn.png").write_bytes(_png(10_000, 10_000))
    (tmp_path / "s.yaml").write_text("environment:\n  grid:\n    image: warn.png\n")
    p = subprocess.run([sys.executable, "-W", "always", "-m", "mpc_tracking", "check", str(tmp_path / "s.yaml")],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "pixels" in _one_line(p.stderr)
    assert all(LOG_LINE.match(ln) for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("mpc-tracking"))

