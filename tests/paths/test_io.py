"""path_io: readers, writer round trip, load_path dispatch, malformed files, YAML courses, real tracks."""
from __future__ import annotations

import numpy as np
import pytest

from mpc_tracking import PathError, PathFormatError
from mpc_tracking.paths.bundled import list_bundled
from mpc_tracking.paths.io import load_path, read_raceline, read_tum, read_waypoints, read_xy, write_path
from tests._shared import SKIP_TRACKS, TRACKS

TUM_HEADER = "# x_m,y_m,w_tr_right_m,w_tr_left_m\n"


def square_rows(n=40, R=20.0):
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.column_stack([R * np.cos(a), R * np.sin(a), np.full(n, 3.0), np.full(n, 4.0)])


def write(tmp_path, name, text):
    f = tmp_path / name
    f.write_text(text)
    return f


def tum_text(rows):
    return TUM_HEADER + "\n".join(",".join(f"{v:.6f}" for v in r) for r in rows) + "\n"


def test_all_bundled_paths_load():
    names = list_bundled()
    assert {"oval", "figure_eight", "double_lane_change", "hairpin_slalom", "rc_course", "circuit"} <= set(names)
    for n in names:
        p = load_path(n)
        assert p.n > 10 and np.all(np.isfinite(p.kappa)), n
    assert len(load_path("rc_course").obstacles) == 4
    assert 8.0 < load_path("rc_course").length < 11.0


def test_tum_reader_and_closing_duplicate(tmp_path):
    rows = square_rows()
    p = read_tum(write(tmp_path, "c.csv", tum_text(rows)), ds=0.5)
    assert p.closed and np.allclose(p.width_right, 3.0) and np.allclose(p.width_left, 4.0)
    dup = read_tum(write(tmp_path, "d.csv", tum_text(np.vstack([rows, rows[:1]]))), ds=0.5)  # dropped
    assert dup.length == pytest.approx(p.length, rel=1e-9)


def test_write_read_round_trip_identical(tmp_path):
    for p in (load_path("oval", ds=0.5), load_path("hairpin_slalom"),
              load_path("oval").with_speed_profile(v_max=20, a_y_max=4, a_max=2, a_brake=4)):
        f = write_path(p, tmp_path / f"{p.name}.csv")
        q = load_path(f)
        assert q.closed == p.closed and q.length == p.length and q.name == p.name
        for attr in ("s", "x", "y", "psi", "kappa", "width_left", "width_right"):
            assert np.array_equal(getattr(q, attr), getattr(p, attr)), attr
        assert (q.v_ref is None) == (p.v_ref is None)
        if p.v_ref is not None:
            assert np.array_equal(q.v_ref, p.v_ref)
        assert np.array_equal(read_waypoints(f).x, p.x)


def test_raceline_psi_convention_and_speed(tmp_path):
    R, n = 30.0, 120
    a = np.linspace(0, 2 * np.pi, n, endpoint=False)
    s = R * a
    psi_ours = a + np.pi / 2
    psi_tum = psi_ours - np.pi / 2  # TUM: measured from north
    psi_tum = (psi_tum + np.pi) % (2 * np.pi) - np.pi
    v = 10 + np.sin(a)
    rows = np.column_stack([s, R * np.cos(a), R * np.sin(a), psi_tum, np.full(n, 1 / R), v, np.zeros(n)])
    text = "# s_m; x_m; y_m; psi_rad; kappa_radpm; vx_mps; ax_mps2\n" + "\n".join("; ".join(f"{x:.9f}" for x in r) for r in rows)
    p = load_path(write(tmp_path, "race.csv", text))
    assert p.closed and np.allclose(p.v_ref, v) and np.allclose(np.diff(p.psi), 2 * np.pi / n)
    assert np.allclose((p.psi - psi_ours + np.pi) % (2 * np.pi) - np.pi, 0, atol=1e-9)
    r = read_raceline(tmp_path / "race.csv", ds=0.5)
    assert np.allclose(r.kappa, 1 / R, rtol=1e-3) and r.v_ref.min() == pytest.approx(9, abs=0.01)


def test_xy_whitespace_and_yaml(tmp_path):
    text = "x y\n" + "\n".join(f"{x} {0.1 * x}" for x in range(10))
    p = read_xy(write(tmp_path, "line.txt", text), ds=0.5)
    assert not p.closed and np.max(np.abs(p.kappa)) < 1e-9 and not p.has_widths
    y = write(tmp_path, "c.yaml", "points: [[0, 0], [10, 0], [10, 5], [0, 5]]\nclosed: true\nwidth: 1.5\nds: 0.1\n"
              "obstacles:\n  - {type: circle, center: [5, 0], radius: 0.3}\n")
    c = load_path(y)
    assert c.closed and np.allclose(c.width_left, 1.5) and len(c.obstacles) == 1


BAD_CSV = [
    ("text.csv", TUM_HEADER + "1,2,3,4\n1,abc,3,4\n", r"text\.csv:3: expected numbers"),
    ("ragged.csv", "1,2,3,4\n2,3,4\n", r"ragged\.csv:2: expected 4 columns"),
    ("missing.csv", TUM_HEADER + "1,2\n3,4\n", r"missing\.csv:2: expected 4 columns"),
    ("empty.csv", "", r"empty\.csv: no data rows"),
    ("few.csv", TUM_HEADER + "0,0,1,1\n1,0,1,1\n", r"few\.csv: .*at least 3 distinct points"),
    ("nan.csv", TUM_HEADER + "0,0,1,1\n1,nan,1,1\n2,2,1,1\n", r"nan\.csv:3: column 2 is nan"),
    ("negw.csv", TUM_HEADER + "0,0,1,1\n1,0,-1,1\n2,2,1,1\n", r"negw\.csv:3: track width must be > 0"),
    ("zerow.csv", TUM_HEADER + "0,0,1,1\n1,0,1,0\n2,2,1,1\n", r"zerow\.csv:3: track width must be > 0"),
]


@pytest.mark.parametrize("name, text, match", BAD_CSV)
def test_malformed_tum(tmp_path, name, text, match):
    with pytest.raises(PathFormatError, match=match):
        read_tum(write(tmp_path, name, text))


def test_malformed_xy_and_ragged_xy(tmp_path):
    with pytest.raises(PathFormatError, match=r"r\.csv:3: ragged row"):
        read_xy(write(tmp_path, "r.csv", "0,0\n1,1\n2,2,1,1\n"))
    with pytest.raises(PathFormatError, match=r"three\.csv:1: expected 2 or 4 columns"):
        read_xy(write(tmp_path, "three.csv", "0,0,1\n"))
    with pytest.raises(PathFormatError, match="not a text file"):
        read_xy(_binary(tmp_path))


def _binary(tmp_path):
    f = tmp_path / "bin.csv"
    f.write_bytes(b"\xff\xfe\x00\x81\x82")
    return f


@pytest.mark.parametrize(
    "text, match",
    [
        ("points: [[0, 0], [1, 0]]\nradiuss: 1\n", r"bad\.yaml: unknown key 'radiuss'; did you mean 'radius'"),
        ("pts: [[0, 0], [1, 0]]\n", r"unknown key 'pts'; did you mean 'points'"),
        ("closed: true\n", "missing key 'points'"),
        ("points: [[0, 0], [1, 0]]\nobstacles: [{type: cirle, center: [0, 0], radius: 1}]\n", "did you mean 'circle'"),
        ("points: [[0, 0], [1, 0]]\nobstacles: [{type: circle, centre: [0, 0], radius: 1}]\n", "unknown key 'centre'; did you mean 'center'"),
        ("points: [[0, 0], [1, 0]]\nobstacles: [{type: circle, center: [0, 0], radius: -1}]\n", "radius"),
        ("points: [[0, 0], [1, 0]]\nwidth: -2\n", "width"),
        ("points: [[0, 0], [1, 0], [0, 1]]\nclosed: [\n", "not valid YAML"),
        ("- 1\n- 2\n", "expected a mapping"),
    ],
)
def test_bad_yaml(tmp_path, text, match):
    with pytest.raises(PathFormatError, match=match):
        load_path(write(tmp_path, "bad.yaml", text))


def test_unknown_source():
    with pytest.raises(PathError, match=r"unknown bundled path 'nope'.*oval"):
        load_path("nope")
    with pytest.raises(PathFormatError, match="no such file"):
        load_path("does/not/exist.csv")


def test_real_tracks_load():
    if not TRACKS.is_dir() or not list(TRACKS.glob("*.csv")):
        pytest.skip(SKIP_TRACKS)
    for f in sorted(TRACKS.glob("*.csv")):
        p = load_path(f, ds=5.0)
        assert p.closed and p.has_widths and 3000 < p.length < 8000, f.name
        assert p.width_left.min() > 0 and p.width_right.min() > 0
