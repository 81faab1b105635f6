"""Bad input to the ``mpc-tracking`` command: a table of cases, each run in-process through
``main(argv)``, each asserting the exit code, exactly one ``mpc-tracking`` line on stderr naming
the cause, and no traceback. Plus --debug, the internal-error log, --strict, Ctrl-C / SIGTERM and
the real exit code through a subprocess.

The exit-code policy is :data:`mpc_tracking.cli.main.EXIT_POLICY`: 0 success, 1 the run failed,
2 bad input, 130 interrupted (143 on SIGTERM). Lines written by :mod:`logging` (``WARNING name:
...``) may accompany the one error line; they are not counted.
"""
from __future__ import annotations

import json
import re
import signal
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

from mpc_tracking.cli import failures
from mpc_tracking.cli.main import EXIT_POLICY, main

#: the module (``mpc_tracking.cli.main`` as an attribute is the function, re-exported by the package)
CLI_MAIN = sys.modules["mpc_tracking.cli.main"]
ROOT = Path(__file__).resolve().parents[2]
QUICK = str(ROOT / "demos" / "quickstart.yaml")
LOG_LINE = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")


# ---------------------------------------------------------------------- files of the table
def _png(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` grey pixels (the data is a few bytes)."""
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    head = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b"")


def _alias_bomb(levels: int = 9) -> str:
    """A "billion laughs" YAML: 10 ** levels leaves from a few hundred bytes."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    return "\n".join(lines) + f"\ncontroller:\n  Q: *a{levels - 1}\n"


SCENARIOS = {
    "empty.yaml": "",
    "comment.yaml": "# only a comment\n",
    "list.yaml": "- path\n- controller\n",
    "scalar.yaml": "42\n",
    "syntax.yaml": "controller:\n  horizon: [1\n",
    "tabs.yaml": "controller:\n\thorizon: 10\n",
    "dup_top.yaml": "name: a\ndescription: x\nname: b\n",
    "dup_nested.yaml": "controller:\n  horizon: 10\n  v_max: 5\n  horizon: 20\n",
    "unknown_section.yaml": "controler:\n  horizon: 10\n",
    "unknown_key.yaml": "controller:\n  horizn: 10\n",
    "section_list.yaml": "controller: [1, 2]\n",
    "horizon_text.yaml": "controller:\n  horizon: ten\n",
    "horizon_zero.yaml": "controller:\n  horizon: 0\n",
    "laps_float.yaml": "simulation:\n  laps: 1.5\n",
    "laps_zero.yaml": "simulation:\n  laps: 0\n",
    "vmax_bool.yaml": "controller:\n  v_max: yes\n",
    "vmax_negative.yaml": "controller:\n  v_max: -5\n",
    "ds_zero.yaml": "path:\n  ds: 0\n",
    "ds_negative.yaml": "path:\n  ds: -0.5\n",
    "ey_nan.yaml": "simulation:\n  e_y0: .nan\n",
    "ey_inf.yaml": "simulation:\n  e_y0: .inf\n",
    "ey_outside.yaml": "simulation:\n  e_y0: 40\n",
    "bomb.yaml": _alias_bomb(),
    "recursive.yaml": "controller: &c\n  Q: *c\n",
    "deep.yaml": "controller: " + "[" * 3000 + "]" * 3000 + "\n",
    "deep_map.yaml": "".join("  " * i + f"k{i}:\n" for i in range(100)) + "  " * 100 + "v: 1\n",
    "python_tag.yaml": "name: !!python/object/apply:os.system [echo hi]\n",
    "undefined_alias.yaml": "name: *nope\n",
    "two_docs.yaml": "name: a\n---\nname: b\n",
    "corners_shape.yaml": "path:\n  source: null\n  corners: [[0, 0], [1]]\n",
    "corners_few.yaml": "path:\n  source: null\n  corners: [[0, 0], [10, 0]]\n  closed: true\n",
    "corners_and_source.yaml": "path:\n  source: oval\n  corners: [[0, 0], [10, 0], [10, 10]]\n",
    "params_list.yaml": "plant:\n  params: [1, 2]\n",
    "params_text.yaml": "plant:\n  name: kinematic_bicycle\n  params:\n    speed_time_constant: abc\n",
    "obstacle_no_radius.yaml": "environment:\n  obstacles: [{type: circle, center: [0, 0]}]\n",
    "obstacle_negative_radius.yaml": "environment:\n  obstacles: [{type: circle, center: [0, 0], radius: -1}]\n",
    "obstacle_kind.yaml": "environment:\n  obstacles: [{type: triangle}]\n",
    "obstacles_not_list.yaml": "environment:\n  obstacles: {type: circle}\n",
    "plots_bad.yaml": "outputs:\n  plots: [track, movie]\n",
    "mode_bad.yaml": "controller:\n  mode: fastest\n",
    "fps_zero.yaml": "outputs:\n  animation:\n    fps: 0\n",
    "grid_missing.yaml": "environment:\n  grid:\n    image: nowhere.png\n",
    "grid_garbage.yaml": "environment:\n  grid:\n    image: garbage.png\n",
    "grid_bomb.yaml": "environment:\n  grid:\n    image: bomb.png\n",
    "grid_big.yaml": "environment:\n  grid:\n    image: big.png\n",
    "grid_tiny.yaml": "environment:\n  grid:\n    image: tiny.png\n",
    "grid_threshold.yaml": "environment:\n  grid:\n    image: tiny.png\n    threshold: 1.5\n",
    "path_garbage.yaml": "path:\n  source: garbage.csv\n",
    "path_missing.yaml": "path:\n  source: nowhere.csv\n",
    "vehicle_file_missing.yaml": "vehicle:\n  file: nowhere_vehicle.yaml\n",
    "vehicle_file_bad.yaml": "vehicle:\n  file: vehicle_no_dynamic.yaml\n",
    "vehicle_no_dynamic.yaml": "speed_lag: 0.2\n",
}
PATH_FILES = {
    "garbage.csv": "hello world\nthis is not a path\n",
    "nan.csv": "x,y\n0,0\n50,0\nnan,50\n0,50\n",
    "one_point.csv": "x,y\n0,0\n",
    "text_cell.csv": "x,y\n0,0\n50,abc\n50,50\n0,50\n",
    "empty.csv": "",
    "huge.csv": "x,y\n0,0\n1e12,0\n1e12,1e12\n0,1e12\n",
    "huger.csv": "x,y\n0,0\n1e300,0\n1e300,1e300\n0,1e300\n",
    "course_unknown.yaml": "points: [[0, 0], [50, 0], [50, 50], [0, 50]]\nbogus: 1\n",
    "course_no_points.yaml": "width: 3\n",
    "deep_course.yaml": "points: " + "[" * 3000 + "]" * 3000 + "\n",
}


def _result_variants(good: Path, folder: Path) -> None:
    """Broken copies of a good result.npz, one defect each."""
    z = dict(np.load(good))
    meta = json.loads(str(z["meta"]))

    def save(name: str, **changes) -> None:
        d = dict(z)
        for k, v in changes.items():
            if v is None:
                d.pop(k)
            else:
                d[k] = v
        np.savez(folder / name, **d)

    n = z["series_t"].size
    save("missing_series.npz", series_v=None)
    save("short_series.npz", series_e_y=z["series_e_y"][:-1])
    save("text_series.npz", series_v=np.array(["fast"] * n))
    save("series_2d.npz", series_t=np.zeros((n, 2)))
    save("no_meta.npz", meta=None)
    save("meta_text.npz", meta=np.array("not json"))
    save("meta_list.npz", meta=np.array("[1, 2]"))
    save("meta_laps.npz", meta=np.array(json.dumps({**meta, "laps_completed": "two"})))
    save("meta_reason.npz", meta=np.array(json.dumps({**meta, "reason": "flying"})))
    save("meta_no_info.npz", meta=np.array(json.dumps({k: v for k, v in meta.items() if k != "info"})))
    save("meta_period.npz", meta=np.array(json.dumps({**meta, "info": {**meta["info"], "control_period": -1}})))
    save("meta_vehicle.npz", meta=np.array(json.dumps({**meta, "vehicle": {"wheelbase": -1}})))
    save("no_horizon.npz", horizon_xy=None)
    save("short_horizon.npz", horizon_xy=z["horizon_xy"][:2])
    save("path_partial.npz", path_wl=None)
    save("path_nan.npz", path_x=z["path_x"] * np.nan)
    np.savez(folder / "object.npz", series_t=np.array([{}, 1], dtype=object))
    (folder / "truncated.npz").write_bytes(good.read_bytes()[:4000])
    (folder / "junk.npz").write_text("not a zip archive")
    (folder / "result.txt").write_bytes(good.read_bytes())


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """Every file of the table, written once: scenarios, paths, images, results."""
    folder = tmp_path_factory.mktemp("bad_input")
    for name, text in {**SCENARIOS, **PATH_FILES}.items():
        (folder / name).write_text(text)
    (folder / "folder.yaml").mkdir()
    with open(folder / "huge.yaml", "wb") as fh:  # 11 MB (sparse): over the 10 MB limit
        fh.truncate(11 * 1024 * 1024)
    (folder / "binary.yaml").write_bytes(bytes(range(256)) * 8)
    (folder / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    (folder / "nul.yaml").write_bytes(b"name: a\x00b\n")
    (folder / "utf16.yaml").write_bytes("name: demo\n".encode("utf-16"))
    (folder / "binary.csv").write_bytes(bytes(range(256)) * 8)
    (folder / "garbage.png").write_bytes(b"this is not a png at all")
    (folder / "bomb.png").write_bytes(_png(100_000, 100_000))
    (folder / "big.png").write_bytes(_png(6000, 6000))
    from PIL import Image

    Image.new("L", (1, 1), 255).save(folder / "tiny.png")
    run = folder / "run"
    code = main(["run", QUICK, "-q", "--no-plots", "--out", str(run), "--set", "simulation.t_max=0.5",
                 "--set", "controller.horizon=8"])
    assert code == 0
    _result_variants(run / "result.npz", folder)
    return folder


# ---------------------------------------------------------------------- the table
#: (id, argv, exit code or set of allowed codes, regex the one error line must match).
#: {F}: the folder of the files above, {Q}: demos/quickstart.yaml, {R}: a good result.npz,
#: {T}: the test's own temporary folder (outputs).
CASES: list[tuple[str, list[str], int | set[int], str]] = [
    # --- usage and flag values (argparse: "argument --flag: expected ..., got ...")
    ("no-command", [], 2, r"no command given"),
    ("unknown-command", ["frobnicate"], 2, r"invalid choice: 'frobnicate'"),
    ("run-no-scenario", ["run"], 2, r"required: SCENARIO\.yaml"),
    ("run-unknown-flag", ["run", "{Q}", "--fast"], 2, r"unrecognized arguments: --fast"),
    ("run-set-no-value", ["run", "{Q}", "--set"], 2, r"argument --set: expected one argument"),
    ("demo-horizon-0", ["demo", "--horizon", "0"], 2, r"--horizon: expected an integer from 1 to 10000, got '0'"),
    ("demo-horizon-text", ["demo", "--horizon", "abc"], 2, r"--horizon: expected an integer .*got 'abc'"),
    ("demo-laps-0", ["demo", "--laps", "0"], 2, r"--laps: expected an integer from 1 .*got '0'"),
    ("demo-laps-negative", ["demo", "--laps", "-1"], 2, r"--laps: .*got '-1'"),
    ("animate-dpi-0", ["animate", "{R}", "--out", "{T}/a.gif", "--dpi", "0"], 2,
     r"--dpi: expected an integer from 10 to 600, got '0'"),
    ("animate-dpi-huge", ["animate", "{R}", "--out", "{T}/a.gif", "--dpi", "100000"], 2, r"--dpi: .*got '100000'"),
    ("animate-dpi-text", ["animate", "{R}", "--out", "{T}/a.gif", "--dpi", "high"], 2, r"--dpi: .*got 'high'"),
    ("animate-window-negative", ["animate", "{R}", "--out", "{T}/a.gif", "--window", "-5"], 2,
     r"--window: expected a finite number >= 0 m, got '-5'"),
    ("animate-window-nan", ["animate", "{R}", "--out", "{T}/a.gif", "--window", "nan"], 2, r"--window: .*got 'nan'"),
    ("animate-fps-0", ["animate", "{R}", "--out", "{T}/a.gif", "--fps", "0"], 2, r"--fps: .*> 0.*got '0'"),
    ("animate-fps-inf", ["animate", "{R}", "--out", "{T}/a.gif", "--fps", "inf"], 2, r"--fps: .*got 'inf'"),
    ("animate-speed-negative", ["animate", "{R}", "--out", "{T}/a.gif", "--speed", "-1"], 2, r"--speed: .*got '-1'"),
    ("animate-every-0", ["animate", "{R}", "--out", "{T}/a.gif", "--every", "0"], 2, r"--every: .*>= 1, got '0'"),
    ("animate-no-out", ["animate", "{R}"], 2, r"required: --out"),
    ("path-show-ds-0", ["path", "show", "oval", "--ds", "0"], 2, r"ds: expected a finite waypoint spacing > 0 m, got 0"),
    ("path-show-ds-nan", ["path", "show", "oval", "--ds", "nan"], 2, r"--ds: expected a finite number m, got 'nan'"),
    ("path-show-ds-text", ["path", "show", "oval", "--ds", "fine"], 2, r"--ds: expected a finite number m, got 'fine'"),
    ("path-show-vmax-negative", ["path", "show", "oval", "--v-max", "-1"], 2, r"--v-max: .*got '-1'"),
    ("path-show-aymax-0", ["path", "show", "oval", "--a-y-max", "0"], 2, r"--a-y-max: .*got '0'"),
    ("path-no-action", ["path"], 2, r"required: ACTION"),
    ("sweep-connect-timeout-negative", ["sweep", "{Q}", "--grid", "controller.horizon=10", "--connect-timeout", "-1"],
     2, r"--connect-timeout: expected a finite number > 0 s, got '-1'"),
    ("sweep-connect-timeout-nan", ["sweep", "{Q}", "--grid", "controller.horizon=10", "--connect-timeout", "nan"],
     2, r"--connect-timeout: .*got 'nan'"),
    ("sweep-repeats-0", ["sweep", "{Q}", "--grid", "controller.horizon=10", "--repeats", "0"], 2, r"--repeats: .*'0'"),
    ("sweep-workers-0", ["sweep", "{Q}", "--grid", "controller.horizon=10", "--workers", "0"], 2, r"--workers: .*'0'"),
    ("sweep-within-negative", ["sweep", "{Q}", "--grid", "controller.horizon=10", "--within", "-1"], 2,
     r"--within: .*>= 0 %, got '-1'"),
    ("sweep-max-runs-0", ["sweep", "{Q}", "--grid", "controller.horizon=10", "--max-runs", "0"], 2,
     r"--max-runs: .*'0'"),
    ("sweep-executor", ["sweep", "{Q}", "--grid", "controller.horizon=10", "--executor", "threads"], 2,
     r"--executor: invalid choice: 'threads'"),
    ("identify-no-plant", ["identify"], 2, r"give --plant NAME"),
    ("identify-dt-0", ["identify", "--plant", "kinematic_bicycle", "--dt", "0"], 2, r"--dt: .*got '0'"),
    ("identify-shape-negative", ["identify", "--plant", "kinematic_bicycle", "--shape-factor", "-1"], 2,
     r"--shape-factor: .*got '-1'"),
    # --- --set / --plant / --grid values
    ("set-unknown-key", ["check", "{Q}", "--set", "controller.horizn=5"], 2,
     r"unknown key 'horizn' in controller; did you mean 'horizon'"),
    ("set-no-equals", ["check", "{Q}", "--set", "controller.horizon"], 2, r"--set 'controller.horizon': expected KEY=VALUE"),
    ("set-no-key", ["check", "{Q}", "--set", "=5"], 2, r"--set '=5': expected a dotted key"),
    ("set-empty-part", ["check", "{Q}", "--set", "controller..horizon=5"], 2, r"--set .*expected a dotted key"),
    ("set-horizon-text", ["check", "{Q}", "--set", "controller.horizon=abc"], 2,
     r"controller\.horizon: expected an integer, got 'abc'"),
    ("set-horizon-0", ["check", "{Q}", "--set", "controller.horizon=0"], 2, r"horizon.*0"),
    ("set-horizon-negative", ["check", "{Q}", "--set", "controller.horizon=-3"], 2, r"horizon.*-3"),
    ("set-horizon-float", ["check", "{Q}", "--set", "controller.horizon=2.5"], 2, r"controller\.horizon: expected an integer"),
    ("set-vmax-nan", ["check", "{Q}", "--set", "controller.v_max=nan"], 2, r"controller\.v_max: expected a number, got NaN"),
    ("set-vmax-negative", ["check", "{Q}", "--set", "controller.v_max=-1"], 2, r"v_max.*-1"),
    ("set-vmax-zero", ["check", "{Q}", "--set", "controller.v_max=0"], 2, r"v_max"),
    ("set-ey0-nan", ["check", "{Q}", "--set", "simulation.e_y0=nan"], 2,
     r"simulation\.e_y0: expected a number, got NaN"),
    ("set-ey0-inf", ["check", "{Q}", "--set", "simulation.e_y0=inf"], 2, r"e_y0: expected a finite number \[m\], got inf"),
    ("set-ey0-outside", ["check", "{Q}", "--set", "simulation.e_y0=50"], 2, r"e_y0"),
    ("set-laps-0", ["check", "{Q}", "--set", "simulation.laps=0"], 2, r"simulation\.laps: expected an integer >= 1, got 0"),
    ("set-tmax-negative", ["check", "{Q}", "--set", "simulation.t_max=-1"], 2, r"t_max.*-1"),
    ("set-period-0", ["check", "{Q}", "--set", "simulation.control_period=0"], 2, r"control_period"),
    ("set-ds-0", ["check", "{Q}", "--set", "path.ds=0"], 2, r"ds: expected a finite waypoint spacing > 0 m, got 0"),
    ("set-ds-tiny", ["check", "{Q}", "--set", "path.ds=1e-9"], {1, 2}, r"ds|memory"),
    ("set-path-missing", ["check", "{Q}", "--set", "path.source=no_such_path.csv"], 2, r"no_such_path"),
    ("set-path-format", ["check", "{Q}", "--set", "path.format=bogus"], 2, r"path\.format: expected one of"),
    ("set-method-foo", ["check", "{Q}", "--plant", "simple_car", "--set", "plant.params.method=FOO"], 2,
     r"plant\.params\.method: unknown solve_ivp method 'FOO' \(one of RK23, RK45"),
    ("set-method-number", ["run", "{Q}", "--plant", "simple_car", "--set", "plant.params.method=3", "-q",
                           "--out", "{T}/o"], 2, r"plant\.params\.method: expected a string"),
    ("set-speed-time-constant-text", ["run", "{Q}", "--set", "plant.params.speed_time_constant=abc", "-q",
                                      "--out", "{T}/o"], 2,
     r"plant\.params\.speed_time_constant: expected a number \(.*\), got 'abc'"),
    ("set-wheelbase-null", ["check", "{Q}", "--set", "plant.params.wheelbase=null"], 2,
     r"plant\.params\.wheelbase: expected a number"),
    ("set-wheelbase-negative", ["check", "{Q}", "--set", "plant.params.wheelbase=-1"], 2, r"wheelbase"),
    ("set-plant-param-unknown", ["check", "{Q}", "--set", "plant.params.bogus=1"], 2, r"unknown parameter 'bogus'"),
    ("plant-unknown", ["check", "{Q}", "--plant", "hovercraft"], 2, r"unknown motion model 'hovercraft'"),
    ("set-3d-mass-text", ["check", "{Q}", "--plant", "ackermann3d", "--set", "plant.params.mass=abc"], 2, r"mass"),
    ("set-vehicle-wheelbase", ["check", "{Q}", "--set", "vehicle.wheelbase=-2"], 2, r"wheelbase"),
    ("set-vehicle-preset", ["check", "{Q}", "--set", "vehicle.preset=truck"], 2, r"vehicle\.preset: expected one of"),
    ("set-plots", ["check", "{Q}", "--set", "outputs.plots=[movie]"], 2, r"outputs\.plots: expected one of"),
    ("set-mode", ["check", "{Q}", "--set", "controller.mode=fastest"], 2, r"controller\.mode: expected one of"),
    ("set-actuator", ["check", "{Q}", "--set", "actuation.name=nope"], 2, r"unknown actuator 'nope'"),
    ("set-Q-shape", ["check", "{Q}", "--set", "controller.Q=[1,2]"], 2, r"Q: expected 3 weights"),
    ("set-obstacle-incomplete", ["check", "{Q}", "--set", "environment.obstacles=[{type: circle}]"], 2,
     r"obstacles\.0: a circle needs center"),
    ("set-polygon-two-points", ["check", "{Q}", "--set",
                                "environment.obstacles=[{type: polygon, points: [[0,0],[1,1]]}]"], 2,
     r"polygon needs at least 3 points"),
    ("set-grid-image-missing", ["check", "{Q}", "--set", "environment.grid.image=missing.png"], 2,
     r"missing\.png: no such file"),
    ("set-grid-resolution-0", ["check", "{Q}", "--set", "environment.grid.resolution=0"], 2,
     r"environment\.grid\.resolution: expected a number > 0"),
    ("set-duplicate-key", ["check", "{Q}", "--set", "controller.Q={a: 1, a: 2}"], 2, r"duplicate key 'a'"),
    ("set-alias-bomb", ["check", "{Q}", "--set",
                        "controller.Q=[" + ", ".join(["&a [1,1,1,1,1,1,1,1,1,1]"] + [
                            f"&a{i} [{', '.join(['*a' if i == 0 else f'*a{i - 1}'] * 10)}]" for i in range(7)]) + "]"],
     2, r"--set controller\.Q.*alias bomb"),
    ("set-deep", ["check", "{Q}", "--set", "controller.Q=" + "[" * 200 + "]" * 200], 2, r"nested deeper than 64"),
    ("grid-no-key", ["sweep", "{Q}", "--grid", "=1,2"], 2, r"--grid '=1,2': expected a dotted key"),
    ("grid-no-values", ["sweep", "{Q}", "--grid", "controller.horizon="], 2, r"--grid .*no values after '='"),
    ("grid-empty-value", ["sweep", "{Q}", "--grid", "controller.horizon=10,,20"], 2, r"empty value between commas"),
    ("grid-no-equals", ["sweep", "{Q}", "--grid", "controller.horizon"], 2, r"--grid .*expected KEY=V1,V2"),
    ("grid-twice", ["sweep", "{Q}", "--grid", "controller.horizon=10", "--grid", "controller.horizon=20"], 2,
     r"given twice"),
    ("grid-none", ["sweep", "{Q}"], 2, r"--grid: empty grid"),
    ("grid-unknown-key", ["sweep", "{Q}", "--grid", "controller.horizn=10,20"], 2, r"did you mean 'horizon'"),
    ("grid-too-many", ["sweep", "{Q}", "--grid", "controller.horizon=10,20", "--max-runs", "1"], 2,
     r"2 runs to launch exceed max_runs=1"),
    ("sweep-dask-address", ["sweep", "{Q}", "--grid", "controller.horizon=10", "--dask", "notanaddress"], 2,
     r"dask: expected 'local' or a scheduler address"),
    ("sweep-param-unknown", ["sweep", "{Q}", "--grid", "controller.horizon=10", "--param", "bogus"], 2,
     r"--param 'bogus': not a swept key; swept: controller\.horizon"),
    # --- round two (issue 22): devices, values checked before the run, formats checked by `check`
    ("scenario-dev-zero", ["check", "/dev/zero"], 2, r"/dev/zero: not a regular file: a character device"),
    ("run-dev-urandom", ["run", "/dev/urandom"], 2, r"/dev/urandom: not a regular file: a character device"),
    ("path-show-dev-zero", ["path", "show", "/dev/zero"], 2, r"/dev/zero: not a regular file: a character device"),
    ("animate-dev-zero", ["animate", "/dev/zero", "--out", "{T}/a.gif"], 2, r"/dev/zero: not a regular file"),
    ("sweep-dev-zero", ["sweep", "/dev/zero", "--grid", "controller.horizon=10"], 2, r"/dev/zero: not a regular"),
    ("check-v0-huge", ["check", "{Q}", "--set", "simulation.v0=1e6"], 2, r"v0: .*outside the range"),
    ("check-ds-over-path", ["check", "{Q}", "--set", "controller.ds=1000", "--set", "controller.horizon=2"], 2,
     r"controller\.ds: an MPC step of 1000 m is not shorter than the whole path"),
    ("check-animation-avi", ["check", "{Q}", "--set", "outputs.animation.file=run.avi"], 2,
     r"outputs\.animation\.file run\.avi: unknown animation format"),
    ("grid-nan-value", ["sweep", "{Q}", "--grid", "controller.v_max=10,nan"], 2,
     r"grid key 'controller\.v_max' = nan: .*NaN"),
    ("grid-huge", ["sweep", "{Q}"] + [f"--grid=plant.params.p{i}=0,1,2,3,4,5,6,7,8,9" for i in range(12)], 2,
     r"1,000,000,000,000 runs are more than any sweep launches"),
    ("grid-million", ["sweep", "{Q}", "--grid", "controller.horizon=" + ",".join(map(str, range(1, 1001))),
                      "--grid", "simulation.s0=" + ",".join(str(i / 100) for i in range(1000))], 2,
     r"1000000 runs to launch exceed max_runs=200"),
    ("sweep-bad-value-before-runs", ["sweep", "{Q}", "--grid", "controller.Q=[1,1],[2,2]", "--executor", "serial",
                                     "--no-progress", "--out", "{T}/sweep"], 2,
     r"grid key 'controller\.Q' = \[1, 1\]: .*Q: expected 3 weights"),
    ("sweep-every-run-fails", ["sweep", "{Q}", "--grid", "plant.params.wheelbase=-1,-2", "--executor", "serial",
                               "--no-progress", "--out", "{T}/sweep"], 1,
     r"sweep: 2 of 2 runs failed \(first: plant\.params\.wheelbase=-1: ModelError: .*wheelbase must be > 0"),
    ("sweep-missing-scenario", ["sweep", "{F}/nowhere.yaml", "--grid", "controller.horizon=10"], 2,
     r"nowhere\.yaml: no such scenario file"),
    # --- scenario files
    ("scenario-missing", ["run", "{F}/nowhere.yaml"], 2, r"nowhere\.yaml: no such scenario file"),
    ("scenario-folder", ["check", "{F}/folder.yaml"], 2, r"folder\.yaml: is a folder"),
    ("scenario-empty", ["check", "{F}/empty.yaml"], 2, r"empty\.yaml: the scenario file is empty"),
    ("scenario-comment-only", ["check", "{F}/comment.yaml"], 2, r"comment\.yaml: the scenario file is empty"),
    ("scenario-list", ["check", "{F}/list.yaml"], 2, r"list\.yaml:1: expected a mapping of sections"),
    ("scenario-scalar", ["check", "{F}/scalar.yaml"], 2, r"scalar\.yaml:1: expected a mapping"),
    ("scenario-syntax", ["run", "{F}/syntax.yaml"], 2, r"syntax\.yaml:3: not valid YAML"),
    ("scenario-tabs", ["check", "{F}/tabs.yaml"], 2, r"tabs\.yaml:2: not valid YAML .*'\\t'"),
    ("scenario-duplicate-key", ["check", "{F}/dup_top.yaml"], 2, r"dup_top\.yaml:3: duplicate key 'name' \(first at line 1\)"),
    ("scenario-duplicate-nested", ["check", "{F}/dup_nested.yaml"], 2,
     r"dup_nested\.yaml:4: duplicate key 'horizon' \(first at line 2\)"),
    ("scenario-unknown-section", ["check", "{F}/unknown_section.yaml"], 2,
     r"unknown_section\.yaml:1: unknown key 'controler'.*did you mean 'controller'"),
    ("scenario-unknown-key", ["check", "{F}/unknown_key.yaml"], 2, r"unknown_key\.yaml:2: unknown key 'horizn'"),
    ("scenario-section-list", ["check", "{F}/section_list.yaml"], 2, r"section_list\.yaml:1: controller: expected a mapping"),
    ("scenario-horizon-text", ["check", "{F}/horizon_text.yaml"], 2,
     r"horizon_text\.yaml:2: controller\.horizon: expected an integer, got 'ten'"),
    ("scenario-horizon-zero", ["check", "{F}/horizon_zero.yaml"], 2, r"horizon_zero\.yaml.*horizon"),
    ("scenario-laps-float", ["check", "{F}/laps_float.yaml"], 2, r"laps_float\.yaml:2: simulation\.laps: expected an integer"),
    ("scenario-laps-zero", ["check", "{F}/laps_zero.yaml"], 2, r"laps_zero\.yaml:2: simulation\.laps: .*>= 1"),
    ("scenario-vmax-bool", ["check", "{F}/vmax_bool.yaml"], 2, r"vmax_bool\.yaml:2: controller\.v_max: expected a number"),
    ("scenario-vmax-negative", ["check", "{F}/vmax_negative.yaml"], 2, r"vmax_negative\.yaml.*v_max"),
    ("scenario-ds-zero", ["check", "{F}/ds_zero.yaml"], 2, r"ds: expected a finite waypoint spacing > 0 m, got 0"),
    ("scenario-ds-negative", ["check", "{F}/ds_negative.yaml"], 2, r"ds: expected .*got -0\.5"),
    ("scenario-ey-nan", ["check", "{F}/ey_nan.yaml"], 2, r"ey_nan\.yaml:2: simulation\.e_y0: expected a number, got NaN"),
    ("scenario-ey-inf", ["check", "{F}/ey_inf.yaml"], 2, r"e_y0: expected a finite number"),
    ("scenario-ey-outside", ["run", "{F}/ey_outside.yaml", "-q", "--out", "{T}/o"], 2, r"e_y0"),
    ("scenario-alias-bomb", ["check", "{F}/bomb.yaml"], 2, r"bomb\.yaml: aliases expand the document by \d\.\d+e\+09 nodes"),
    ("scenario-recursive-alias", ["check", "{F}/recursive.yaml"], 2, r"recursive\.yaml:\d: .*recursive alias"),
    ("scenario-deep", ["check", "{F}/deep.yaml"], 2, r"deep\.yaml:1: nested deeper than 64 levels"),
    ("scenario-deep-mapping", ["check", "{F}/deep_map.yaml"], 2, r"deep_map\.yaml:\d+: nested deeper than 64 levels"),
    ("scenario-huge", ["check", "{F}/huge.yaml"], 2, r"huge\.yaml: the scenario file is 11 MB, more than the 10 MB limit"),
    ("scenario-binary", ["check", "{F}/binary.yaml"], 2, r"binary\.yaml: not a text file"),
    ("scenario-latin1", ["check", "{F}/latin1.yaml"], 2, r"latin1\.yaml: not a text file \(expected UTF-8 YAML\)"),
    ("scenario-nul", ["check", "{F}/nul.yaml"], 2, r"nul\.yaml: not a text file"),
    ("scenario-utf16", ["check", "{F}/utf16.yaml"], 2, r"utf16\.yaml: not a text file"),
    ("scenario-python-tag", ["check", "{F}/python_tag.yaml"], 2, r"python_tag\.yaml:1: not valid YAML \(could not determine"),
    ("scenario-undefined-alias", ["check", "{F}/undefined_alias.yaml"], 2, r"undefined alias 'nope'"),
    ("scenario-two-documents", ["check", "{F}/two_docs.yaml"], 2, r"two_docs\.yaml:2: not valid YAML"),
    ("scenario-corners-shape", ["check", "{F}/corners_shape.yaml"], 2, r"corners_shape\.yaml:3: path\.corners: expected a list"),
    ("scenario-corners-few", ["check", "{F}/corners_few.yaml"], 2, r"at least 3"),
    ("scenario-corners-and-source", ["check", "{F}/corners_and_source.yaml"], 2,
     r"corners_and_source\.yaml:3: path\.corners: given together with path\.source = 'oval' \(.*:2\)"),
    ("scenario-params-list", ["check", "{F}/params_list.yaml"], 2, r"params_list\.yaml:2: plant\.params: expected a mapping"),
    ("scenario-params-text", ["check", "{F}/params_text.yaml"], 2,
     r"params_text\.yaml:4: plant\.params\.speed_time_constant: expected a number"),
    ("scenario-obstacle-no-radius", ["check", "{F}/obstacle_no_radius.yaml"], 2, r"a circle needs center \[x, y\] and radius"),
    ("scenario-obstacle-negative-radius", ["check", "{F}/obstacle_negative_radius.yaml"], 2,
     r"obstacle_negative_radius\.yaml:2: environment\.obstacles\.0\.radius: expected a number > 0, got -1"),
    ("scenario-obstacle-kind", ["check", "{F}/obstacle_kind.yaml"], 2, r"obstacles\.0\.type: expected one of"),
    ("scenario-obstacles-not-list", ["check", "{F}/obstacles_not_list.yaml"], 2,
     r"environment\.obstacles: expected a list of obstacle mappings"),
    ("scenario-plots", ["check", "{F}/plots_bad.yaml"], 2, r"plots_bad\.yaml:2: outputs\.plots: .*'movie'"),
    ("scenario-mode", ["check", "{F}/mode_bad.yaml"], 2, r"mode_bad\.yaml:2: controller\.mode: .*'fastest'"),
    ("scenario-fps-zero", ["check", "{F}/fps_zero.yaml"], 2, r"fps_zero\.yaml:3: outputs\.animation\.fps: .*>= 1, got 0"),
    ("scenario-vehicle-file-missing", ["check", "{F}/vehicle_file_missing.yaml"], 2,
     r"vehicle\.file: .*nowhere_vehicle\.yaml: no such vehicle file"),
    ("scenario-vehicle-file-bad", ["check", "{F}/vehicle_file_bad.yaml"], 2, r"vehicle\.file: .*missing key 'dynamic'"),
    # --- path files (through a scenario and through `path show`)
    ("path-garbage-scenario", ["check", "{F}/path_garbage.yaml"], 2, r"garbage\.csv"),
    ("path-missing-scenario", ["check", "{F}/path_missing.yaml"], 2, r"nowhere\.csv"),
    ("path-show-garbage", ["path", "show", "{F}/garbage.csv", "--out", "{T}/p.png"], 2, r"garbage\.csv"),
    ("path-show-nan", ["path", "show", "{F}/nan.csv", "--out", "{T}/p.png"], 2, r"nan\.csv"),
    ("path-show-one-point", ["path", "show", "{F}/one_point.csv", "--out", "{T}/p.png"], 2, r"one_point\.csv"),
    ("path-show-text-cell", ["path", "show", "{F}/text_cell.csv", "--out", "{T}/p.png"], 2, r"text_cell\.csv"),
    ("path-show-empty", ["path", "show", "{F}/empty.csv", "--out", "{T}/p.png"], 2, r"empty\.csv"),
    ("path-show-binary", ["path", "show", "{F}/binary.csv", "--out", "{T}/p.png"], 2, r"binary\.csv"),
    ("path-show-unknown", ["path", "show", "no_such_track"], 2, r"unknown bundled path 'no_such_track'"),
    ("path-show-course-unknown-key", ["path", "show", "{F}/course_unknown.yaml", "--out", "{T}/p.png"], 2,
     r"course_unknown\.yaml.*bogus"),
    ("path-show-course-no-points", ["path", "show", "{F}/course_no_points.yaml", "--out", "{T}/p.png"], 2,
     r"missing key 'points'"),
    # known gaps in mpc_tracking/paths (see the report): today an out-of-memory or internal error
    # (exit 1, one line, traceback in the log file); exit 2 once paths/ bounds the waypoint count and
    # reads YAML through mpc_tracking.fileio.read_yaml
    ("path-show-huge-coordinates", ["path", "show", "{F}/huge.csv", "--out", "{T}/p.png"], {1, 2},
     r"huge\.csv|out of memory"),
    ("path-show-huger-coordinates", ["path", "show", "{F}/huger.csv", "--out", "{T}/p.png"], {1, 2},
     r"huger\.csv|internal error"),
    ("path-show-deep-course", ["path", "show", "{F}/deep_course.yaml", "--out", "{T}/p.png"], {1, 2},
     r"deep_course\.yaml|internal error: RecursionError"),
    # --- occupancy-grid images
    ("grid-image-missing", ["check", "{F}/grid_missing.yaml"], 2, r"nowhere\.png: no such file"),
    ("grid-image-garbage", ["check", "{F}/grid_garbage.yaml"], 2, r"garbage\.png: not an occupancy-grid image"),
    ("grid-image-bomb", ["check", "{F}/grid_bomb.yaml"], 2,
     r"bomb\.png: the occupancy-grid image has 1e\+10 pixels, more than the 2\.5e\+07 allowed"),
    ("grid-image-big", ["check", "{F}/grid_big.yaml"], 2, r"big\.png: the occupancy-grid image is 6000 x 6000"),
    ("grid-image-tiny", ["check", "{F}/grid_tiny.yaml"], 2, r"tiny\.png: expected a 2-D image of at least 2x2"),
    ("grid-threshold", ["check", "{F}/grid_threshold.yaml"], 2, r"environment\.grid\.threshold: .*<= 1, got 1\.5"),
    # --- result files (animate)
    ("npz-missing", ["animate", "{F}/nowhere.npz", "--out", "{T}/a.gif"], 2, r"nowhere\.npz: no such file"),
    ("npz-junk", ["animate", "{F}/junk.npz", "--out", "{T}/a.gif"], 2, r"junk\.npz: not a simulation result file"),
    ("npz-truncated", ["animate", "{F}/truncated.npz", "--out", "{T}/a.gif"], 2, r"truncated\.npz: not a simulation result"),
    ("npz-object", ["animate", "{F}/object.npz", "--out", "{T}/a.gif"], 2, r"object\.npz: array 'series_t' holds Python objects"),
    ("npz-missing-series", ["animate", "{F}/missing_series.npz", "--out", "{T}/a.gif"], 2,
     r"missing_series\.npz: series_v: missing"),
    ("npz-short-series", ["animate", "{F}/short_series.npz", "--out", "{T}/a.gif"], 2,
     r"short_series\.npz: series_e_y: \d+ samples, but series_t has \d+"),
    ("npz-text-series", ["animate", "{F}/text_series.npz", "--out", "{T}/a.gif"], 2,
     r"text_series\.npz: series_v: expected numbers, got dtype <U4"),
    ("npz-series-2d", ["animate", "{F}/series_2d.npz", "--out", "{T}/a.gif"], 2, r"series_t: expected a 1-D array"),
    ("npz-no-meta", ["animate", "{F}/no_meta.npz", "--out", "{T}/a.gif"], 2, r"no_meta\.npz: meta: missing"),
    ("npz-meta-text", ["animate", "{F}/meta_text.npz", "--out", "{T}/a.gif"], 2, r"meta: not the JSON text"),
    ("npz-meta-list", ["animate", "{F}/meta_list.npz", "--out", "{T}/a.gif"], 2, r"meta: expected a JSON object"),
    ("npz-meta-laps", ["animate", "{F}/meta_laps.npz", "--out", "{T}/a.gif"], 2, r"meta\.laps_completed: expected int"),
    ("npz-meta-reason", ["animate", "{F}/meta_reason.npz", "--out", "{T}/a.gif"], 2, r"meta\.reason: .*'flying'"),
    ("npz-meta-no-info", ["animate", "{F}/meta_no_info.npz", "--out", "{T}/a.gif"], 2, r"meta\.info: missing"),
    ("npz-meta-period", ["animate", "{F}/meta_period.npz", "--out", "{T}/a.gif"], 2,
     r"meta\.info\.control_period: expected a period > 0 s, got -1"),
    ("npz-meta-vehicle", ["animate", "{F}/meta_vehicle.npz", "--out", "{T}/a.gif"], 2, r"meta\.vehicle: .*wheelbase"),
    ("npz-no-horizon", ["animate", "{F}/no_horizon.npz", "--out", "{T}/a.gif"], 2, r"horizon_xy: missing"),
    ("npz-short-horizon", ["animate", "{F}/short_horizon.npz", "--out", "{T}/a.gif"], 2,
     r"horizon_xy: expected shape \(\d+, N\+1, 2\)"),
    ("npz-path-partial", ["animate", "{F}/path_partial.npz", "--out", "{T}/a.gif"], 2, r"path_wl: missing"),
    ("npz-path-nan", ["animate", "{F}/path_nan.npz", "--out", "{T}/a.gif"], 2, r"path_nan\.npz: path: .*finite"),
    ("animate-wrong-suffix", ["animate", "{F}/result.txt", "--out", "{T}/a.gif"], 2, r"expected a result \.npz"),
    ("animate-out-format", ["animate", "{R}", "--out", "{T}/a.avi"], 2, r"unknown animation format '\.avi'"),
    ("animate-out-under-file", ["animate", "{R}", "--out", "{F}/tiny.png/a.gif"], 2, r"cannot write there"),
    # --- outputs and other commands
    ("run-out-under-file", ["run", "{Q}", "-q", "--out", "{F}/tiny.png/sub"], 2, r"output folder .*cannot write there"),
    ("check-nothing", ["check"], 2, r"check: give a SCENARIO\.yaml"),
    ("new-model-bad-name", ["new-model", "Bad-Name", "{T}/plugin"], 2, r"NAME must be lowercase"),
    ("identify-unknown-plant", ["identify", "--plant", "nope"], 2, r"unknown motion model 'nope'"),
    ("identify-bad-set", ["identify", "--plant", "kinematic_bicycle", "--set", "bogus.key=1"], 2,
     r"identify takes plant\.params\.KEY"),
    # --- runs that fail (exit 1, partial results written)
    ("run-safe-stop", ["run", "{Q}", "-q", "--out", "{T}/o", "--set", "controller.max_iter=1",
                       "--set", "controller.max_fallback_steps=1", "--set", "controller.brake_decel=30"], 1,
     r"run failed: safe_stop"),
]


def _expand(argv: list[str], files: Path, tmp: Path) -> list[str]:
    subs = {"{F}": str(files), "{Q}": QUICK, "{R}": str(files / "run" / "result.npz"), "{T}": str(tmp)}
    out = []
    for a in argv:
        for k, v in subs.items():
            a = a.replace(k, v)
        out.append(a)
    return out


def run_main(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse usage errors
        return int(exc.code or 0)


def error_lines(err: str) -> list[str]:
    """stderr without the lines of the logging module."""
    return [line for line in err.splitlines() if line.strip() and not LOG_LINE.match(line)]


def assert_one_line(err: str, pattern: str) -> str:
    assert "Traceback" not in err, err
    lines = error_lines(err)
    assert len(lines) == 1, f"expected one error line, got {len(lines)}:\n{err}"
    assert lines[0].startswith("mpc-tracking"), lines[0]
    assert re.search(pattern, lines[0]), f"{pattern!r} not in {lines[0]!r}"
    return lines[0]


def test_the_table_is_large_and_ids_unique():
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(CASES) >= 100


@pytest.mark.parametrize("argv, code, pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(argv, code, pattern, files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))  # internal-error logs stay in the test folder
    t0 = time.perf_counter()
    rc = run_main(_expand(argv, files, tmp_path))
    elapsed = time.perf_counter() - t0
    cap = capsys.readouterr()
    assert_one_line(cap.err, pattern)
    assert rc in (code if isinstance(code, set) else {code}), (rc, cap.err)
    assert elapsed < 60


def test_alias_bomb_is_refused_fast(files, capsys):
    t0 = time.perf_counter()
    assert run_main(["check", str(files / "bomb.yaml")]) == 2
    assert time.perf_counter() - t0 < 1.0
    assert "bomb.yaml" in capsys.readouterr().err


def test_huge_file_is_refused_before_reading(files, capsys, monkeypatch):
    import builtins

    opened = []
    real_open = builtins.open

    def spy(file, *a, **k):
        opened.append(str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", spy)
    assert run_main(["check", str(files / "huge.yaml")]) == 2
    assert not any(f.endswith("huge.yaml") for f in opened)
    assert "10 MB limit" in capsys.readouterr().err


# ---------------------------------------------------------------------- policy, --debug, internal errors
def test_help_documents_the_exit_codes(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for text in ("exit codes:", "130", "--strict", "mpc-tracking-error.log", "--debug"):
        assert text in out, text
    assert "exit codes:" in EXIT_POLICY
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    assert "exit codes:" in capsys.readouterr().out


def _boom(args):
    raise RuntimeError("boom: something we did not expect")


def test_internal_error_one_line_and_a_log_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(CLI_MAIN, "_cmd_check", _boom)
    assert run_main(["check", QUICK]) == 1
    line = assert_one_line(capsys.readouterr().err, r"internal error: RuntimeError: boom")
    m = re.search(r"traceback written to (\S+); run with --debug to see it", line)
    assert m, line
    log = Path(m.group(1))
    assert log == tmp_path / failures.ERROR_LOG_NAME
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "boom" in text and "command: mpc-tracking check" in text


def test_internal_error_log_goes_to_the_output_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(CLI_MAIN, "_simulate", lambda args, sc: _boom(args))
    out = tmp_path / "out"
    assert run_main(["run", QUICK, "-q", "--out", str(out)]) == 1
    assert_one_line(capsys.readouterr().err, re.escape(str(out / failures.ERROR_LOG_NAME)))
    assert "boom" in (out / failures.ERROR_LOG_NAME).read_text()


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_shows_the_traceback(tmp_path, monkeypatch, capsys, where):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    monkeypatch.setattr(CLI_MAIN, "_cmd_check", _boom)
    argv = ["--debug", "check", QUICK] if where == "before" else ["check", QUICK, "--debug"]
    assert run_main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "RuntimeError: boom" in err
    assert err.strip().splitlines()[-1].startswith("mpc-tracking: internal error: RuntimeError: boom")
    assert not (tmp_path / failures.ERROR_LOG_NAME).exists()
    # --debug shows bad input's traceback too, and keeps its exit code
    monkeypatch.undo()
    assert run_main(["--debug", "check", str(tmp_path / "nowhere.yaml")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "no such scenario file" in err.strip().splitlines()[-1]


@pytest.mark.parametrize("exc, code, text", [
    (KeyboardInterrupt(), 130, "interrupted (Ctrl-C)"),
    (failures.Terminated(), 143, "terminated (SIGTERM)"),
    (MemoryError(), 1, "out of memory"),
    (OSError(28, "No space left on device", "/data/out/result.npz"), 1,
     "error: /data/out/result.npz: No space left on device"),
    (PermissionError(13, "Permission denied", "/etc/x"), 2, "error: /etc/x: Permission denied"),
    (FileNotFoundError(2, "No such file or directory", "a.csv"), 2, "a.csv: No such file or directory"),
])
def test_every_kind_of_failure_is_one_line(exc, code, text, monkeypatch, capsys, tmp_path):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))

    def fail(args):
        raise exc

    monkeypatch.setattr(CLI_MAIN, "_cmd_check", fail)
    assert run_main(["check", QUICK]) == code
    assert text in assert_one_line(capsys.readouterr().err, ".")


def test_solver_and_simulation_errors_exit_1_cluster_errors_2(monkeypatch, capsys):
    from mpc_tracking.errors import ClusterError, IdentificationError, SimulationError, SolverError

    for exc, code in ((SolverError("OSQP setup failed"), 1), (SimulationError("cannot go on"), 1),
                      (IdentificationError("never reached 10 m/s"), 1), (ClusterError("no scheduler at x"), 2)):
        def fail(args, exc=exc):
            raise exc

        monkeypatch.setattr(CLI_MAIN, "_cmd_check", fail)
        assert run_main(["check", QUICK]) == code
        assert_one_line(capsys.readouterr().err, f"error: {exc}")


# ---------------------------------------------------------------------- --strict
def _start_near_the_edge(extra: list[str], out: Path) -> list[str]:
    """A short run whose car starts with its body past the left track edge (e_y0 = width - 0.3 m)."""
    from mpc_tracking.paths.io import load_path

    width = float(load_path("oval", ds=0.5).width_left[0])
    return ["run", QUICK, "--no-plots", "--out", str(out), "--set", "simulation.t_max=0.3", "--set",
            f"simulation.e_y0={width - 0.3}", "--set", "controller.horizon=8", *extra]


def test_strict_fails_a_run_whose_body_left_the_track(tmp_path, capsys):
    assert run_main(_start_near_the_edge([], tmp_path / "a")) == 0
    cap = capsys.readouterr()
    assert "note: the body went" in cap.out and "exit code 1 with --strict" in cap.out
    assert error_lines(cap.err) == []
    assert run_main(_start_near_the_edge(["--strict", "-q"], tmp_path / "b")) == 1
    assert_one_line(capsys.readouterr().err, r"run failed --strict: the body went \d\.\d+ m past the track edge")
    assert (tmp_path / "b" / "result.npz").is_file()  # files are written all the same


def test_strict_counts_realtime_overruns(monkeypatch):
    from types import SimpleNamespace

    from mpc_tracking.cli.main import strict_problems

    m = {"max_body_overshoot": 0.0, "corridor_violation_steps": 0, "realtime_overruns": 3,
         "control_period": 0.05, "worst_step_time": 0.08}
    assert strict_problems(SimpleNamespace(metrics=m)) == [
        "3 real-time overruns over the 50 ms control period (worst step 80.0 ms)"]
    m.update(realtime_overruns=0, max_body_overshoot=float("nan"))
    assert strict_problems(SimpleNamespace(metrics=m)) == []
    m.update(corridor_violation_steps=2)
    assert strict_problems(SimpleNamespace(metrics=m)) == ["2 steps used corridor slack"]


def test_strict_passes_a_clean_run(tmp_path, capsys):
    argv = ["run", QUICK, "-q", "--no-plots", "--strict", "--out", str(tmp_path), "--set", "simulation.t_max=0.3",
            "--set", "controller.horizon=8"]
    assert run_main(argv) == 0
    assert error_lines(capsys.readouterr().err) == []


# ---------------------------------------------------------------------- real processes
def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpc_tracking", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_subprocess_exit_codes(files, tmp_path):
    p = _cli("check", str(files / "bomb.yaml"), cwd=tmp_path)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert_one_line(p.stderr, r"bomb\.yaml: aliases expand")
    p = _cli("animate", str(files / "run" / "result.npz"), "--out", str(tmp_path / "a.gif"), "--dpi", "0", cwd=tmp_path)
    assert p.returncode == 2
    assert_one_line(p.stderr, r"--dpi")


@pytest.mark.parametrize("sig, code, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_subprocess_interrupt(tmp_path, sig, code, word):
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "mpc_tracking", "run", QUICK, "-q", "--no-plots", "--out", str(out),
                             "--set", "simulation.laps=500"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not out.is_dir() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(1.0)  # simulating by now
    proc.send_signal(sig)
    try:  # the interrupt ends the run within a step (well under a second)
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        # the first signal went unanswered (seen once in CI: the run went on to the end). Most likely it landed in
        # the last microseconds of an OSQP solve, where OSQP 1.x's own Ctrl-C handler is still installed but no
        # longer checked (no setting turns it off); a user presses Ctrl-C again
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    # 128 + signal; or killed by SIGINT itself, which a shell shows as the same 130: CPython ends a process in
    # which a KeyboardInterrupt once escaped some C-level run of Python code (its _Py_UnhandledKeyboardInterrupt
    # flag) by re-raising SIGINT at exit, even when the command caught the interrupt and returned 130
    assert proc.returncode == code or (sig == signal.SIGINT and proc.returncode == -signal.SIGINT), err
    assert_one_line(err, word)


def test_sigterm_inside_a_finalizer_is_delivered_once_it_returns(monkeypatch):
    """A SIGTERM that lands in an object's ``__del__`` (numba's compiler frees its LLVM objects there; seen in CI as
    "Exception ignored in ObjectRef.__del__" and a run that went on) is not lost: it is raised after the finalizer
    returned, in the code that runs next, and nothing is printed as ignored."""
    import os

    ignored = []
    monkeypatch.setattr(sys, "unraisablehook", ignored.append)

    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGTERM)  # the signal arrives while the finalizer runs
            for _ in range(10000):  # Python-level work: the handler runs in here
                pass

    with failures.sigterm_as_exception(), pytest.raises(failures.Terminated):
        Finalized()  # freed at once: the finalizer runs here
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            time.sleep(0.01)
    assert ignored == []
