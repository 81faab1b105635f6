"""``mpc_tracking.fileio``: atomic writes, JSON conversion, the bounded YAML and ``.npz`` readers."""
from __future__ import annotations

import errno
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mpc_tracking import fileio
from mpc_tracking.errors import InputError, ScenarioError
from mpc_tracking.fileio import (
    atomic_open,
    atomic_path,
    check_file_size,
    json_safe,
    load_yaml,
    named_oserror,
    parse_yaml,
    read_npz,
    read_yaml,
    write_json,
)


# ---------------------------------------------------------------------- atomic writes
def test_atomic_path_renames_on_success_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out.npz"
    with atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".npz" and tmp != target
        np.savez(tmp, a=np.arange(3))
        assert not target.exists()  # not under the final name before the block ends
    np.testing.assert_array_equal(np.load(target)["a"], np.arange(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npz"]


def test_atomic_path_keeps_the_old_file_and_removes_the_temporary_on_failure(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="crash"), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]


@pytest.mark.parametrize(("mode", "data"), [("w", "text ü\n"), ("wb", b"\x00\x01")])
def test_atomic_open_writes_text_and_binary(tmp_path, mode, data):
    target = tmp_path / "f.dat"
    with atomic_open(target, mode, fsync=True) as fh:
        fh.write(data)
    assert (target.read_text(encoding="utf-8") if mode == "w" else target.read_bytes()) == data


def test_atomic_open_refuses_other_modes(tmp_path):
    with pytest.raises(InputError, match="mode: expected 'w' or 'wb', got 'a'"), atomic_open(tmp_path / "x", "a"):
        pass


def test_atomic_open_failure_leaves_nothing(tmp_path):
    with pytest.raises(ValueError, match="bad"), atomic_open(tmp_path / "f.txt") as fh:
        fh.write("part")
        raise ValueError("bad")
    assert list(tmp_path.iterdir()) == []


def test_named_oserror_names_the_file_only_when_the_error_names_none():
    with pytest.raises(OSError, match=r"No space left on device: 'out/r\.npz'") as info, named_oserror("out/r.npz"):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert info.value.errno == errno.ENOSPC and info.value.filename == "out/r.npz"
    with pytest.raises(FileNotFoundError) as info, named_oserror("other"):
        raise FileNotFoundError(errno.ENOENT, "gone", "real.txt")
    assert info.value.filename == "real.txt"


def test_a_write_under_a_file_names_the_target(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError) as info, atomic_open(tmp_path / "file" / "sub.txt") as fh:
        fh.write("never")
    assert "file" in str(info.value)


# ---------------------------------------------------------------------- JSON
@pytest.mark.parametrize(("nonfinite", "expected"), [
    ("text", [None, "inf", "-inf", 1.5]),
    ("null", [None, None, None, 1.5]),
])
def test_json_safe_nonfinite_choices(nonfinite, expected):
    assert json_safe(np.array([np.nan, np.inf, -np.inf, 1.5]), nonfinite=nonfinite) == expected


def test_json_safe_keep_leaves_floats_and_converts_containers():
    out = json_safe({1: (np.float32(0.5), float("nan")), "n": np.int64(7)}, nonfinite="keep")
    assert list(out) == ["1", "n"] and out["n"] == 7 and type(out["n"]) is int
    assert out["1"][0] == 0.5 and math.isnan(out["1"][1])


def test_json_safe_does_not_change_its_argument_and_refuses_unknown_choice():
    data = {"a": [np.nan]}
    json_safe(data)
    assert math.isnan(data["a"][0])
    with pytest.raises(InputError, match="nonfinite: expected one of"):
        json_safe(1.0, nonfinite="drop")  # type: ignore[arg-type]


def test_write_json_is_standard_json(tmp_path):
    target = write_json(tmp_path / "m.json", {"x": np.array([1.0, np.inf]), "k": (1, 2)})
    text = target.read_text()
    assert text.endswith("\n") and "Infinity" not in text
    assert json.loads(text) == {"x": [1.0, "inf"], "k": [1, 2]}
    with pytest.raises(InputError, match="standard JSON"):
        write_json(tmp_path / "k.json", {}, nonfinite="keep")  # type: ignore[arg-type]
    assert not (tmp_path / "k.json").exists()


# ---------------------------------------------------------------------- YAML
def test_parse_yaml_reads_yaml_1_2_floats_and_keeps_the_node_tree():
    doc = parse_yaml("a: 1e3\nb:\n  - 2.5E-1\n", name="s.yaml")
    assert doc.data == {"a": 1000.0, "b": [0.25]} and doc.source == "s.yaml"
    assert doc.node.value[1][0].start_mark.line == 1


def test_parse_yaml_empty_document():
    doc = parse_yaml("", name="e")
    assert doc.data is None and doc.node is None


#: malformed or hostile YAML text -> the one-line error it must give
BAD_YAML = [
    ("a: [1, 2", r"s\.yaml:\d+: not valid YAML"),
    ("a: 1\na: 2\n", r"s\.yaml:2: duplicate key 'a' \(first at line 1\)"),
    ("a: &x [1, *x]\n", r"s\.yaml:1: an alias refers to a node that contains it"),
    ("a: " + "[" * 70 + "]" * 70 + "\n", r"s\.yaml:1: nested deeper than 64 levels"),
    ("a: !!python/object:os.system x\n", r"s\.yaml:1: not valid YAML"),
]


@pytest.mark.parametrize(("text", "error"), BAD_YAML, ids=["syntax", "duplicate", "recursive", "deep", "python-tag"])
def test_parse_yaml_errors_name_the_source_and_line(text, error):
    with pytest.raises(InputError, match=error) as info:
        parse_yaml(text, name="s.yaml")
    assert "\n" not in str(info.value)


def test_alias_bomb_is_measured_not_expanded():
    lines = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]" for i in range(8)]
    with pytest.raises(InputError, match=r"aliases expand the document by 1\.23e\+09 nodes"):
        parse_yaml("\n".join(lines) + "\n")
    # a few shared anchors are fine, and merge keys do not count as duplicates
    doc = parse_yaml("base: &b {v: 1}\nx:\n  <<: *b\n  w: 2\n")
    assert doc.data["x"] == {"v": 1, "w": 2}


def test_limits_are_arguments():
    with pytest.raises(InputError, match="nested deeper than 2 levels"):
        parse_yaml("a: {b: {c: 1}}\n", max_depth=2)
    with pytest.raises(InputError, match="more than the 3 allowed"):
        parse_yaml("a: &a [1, 2, 3]\nb: [*a, *a]\n", max_alias_nodes=3)


def test_read_yaml_file_errors_use_the_callers_error_class(tmp_path):
    with pytest.raises(ScenarioError, match=r"nope\.yaml: no such scenario file"):
        read_yaml(tmp_path / "nope.yaml", error=ScenarioError, what="scenario file")
    with pytest.raises(InputError, match="is a folder, not a YAML file"):
        read_yaml(tmp_path)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match=r"bin\.yaml: not a text file"):
        read_yaml(binary)
    nul = tmp_path / "nul.yaml"
    nul.write_bytes(b"a: 1\x00\n")
    with pytest.raises(InputError, match="NUL bytes"):
        read_yaml(nul)
    big = tmp_path / "big.yaml"
    big.write_text("a: 1\n" * 100)
    with pytest.raises(InputError, match=r"big\.yaml: the YAML file is 500 bytes, more than the 100 bytes limit"):
        read_yaml(big, max_bytes=100)


def test_read_yaml_and_load_yaml_read_a_file_with_bom(tmp_path):
    f = tmp_path / "ok.yaml"
    f.write_bytes("\ufeffname: ü\nv: [1, 2]\n".encode())
    assert read_yaml(f).data == load_yaml(f) == {"name": "ü", "v": [1, 2]}
    assert read_yaml(f).source == str(f)


def test_check_file_size(tmp_path):
    f = tmp_path / "f.bin"
    f.write_bytes(b"x" * 3 * 2**20)
    assert check_file_size(f, 4 * 2**20) == 3 * 2**20
    with pytest.raises(InputError, match=r"f\.bin: the track is 3 MB, more than the 2 MB limit"):
        check_file_size(f, 2 * 2**20, what="track")
    with pytest.raises(InputError, match=r"missing\.bin: no such file"):
        check_file_size(tmp_path / "missing.bin", 10)


# ---------------------------------------------------------------------- npz
def test_read_npz_reads_every_array(tmp_path):
    f = tmp_path / "a.npz"
    np.savez_compressed(f, x=np.arange(5.0), flag=np.array([True, False]), meta=np.array("text"))
    z = read_npz(f)
    assert sorted(z) == ["flag", "meta", "x"]
    np.testing.assert_array_equal(z["x"], np.arange(5.0))
    assert str(z["meta"]) == "text"


def test_read_npz_refuses_pickles_before_reading_them(tmp_path):
    f = tmp_path / "obj.npz"
    np.savez(f, ok=np.zeros(2), bad=np.array([{}, 1], dtype=object))
    with pytest.raises(InputError, match=r"obj\.npz: array 'bad' holds Python objects"):
        read_npz(f)


def test_read_npz_refuses_arrays_too_large_from_their_headers(tmp_path):
    f = tmp_path / "big.npz"
    np.savez_compressed(f, z=np.zeros(100_000))  # 800 kB in memory, a few hundred bytes compressed
    assert f.stat().st_size < 10_000
    expected = r"big\.npz: the arrays would take more than the 100000 bytes allowed in memory \(array 'z' has shape \(100000,\)"
    with pytest.raises(InputError, match=expected):
        read_npz(f, max_array_bytes=100_000)


def test_read_npz_member_and_file_limits(tmp_path):
    f = tmp_path / "many.npz"
    np.savez(f, **{f"a{i}": np.zeros(1) for i in range(5)})
    with pytest.raises(InputError, match=r"many\.npz: 5 arrays, more than the 4"):
        read_npz(f, max_members=4)
    with pytest.raises(InputError, match="more than the 100 bytes limit"):
        read_npz(f, max_bytes=100)


@pytest.mark.parametrize(("content", "error"), [
    (b"not a zip", r"not a run file \(not a zip archive"),
    (None, r"no such run file"),
])
def test_read_npz_not_a_file(tmp_path, content, error):
    f = tmp_path / "r.npz"
    if content is not None:
        f.write_bytes(content)
    with pytest.raises(ScenarioError, match=rf"r\.npz: {error}"):
        read_npz(f, error=ScenarioError, what="run file")


def test_read_npz_truncated_and_not_numpy_members(tmp_path):
    good = tmp_path / "g.npz"
    np.savez(good, x=np.arange(1000.0))
    cut = tmp_path / "cut.npz"
    cut.write_bytes(good.read_bytes()[:3000])
    with pytest.raises(InputError, match=r"cut\.npz: not a npz file"):
        read_npz(cut)
    odd = tmp_path / "odd.npz"
    with zipfile.ZipFile(odd, "w") as zf:
        zf.writestr("x.npy", b"plain text, no numpy header")
    with pytest.raises(InputError, match=r"odd\.npz: not a npz file \(ValueError"):
        read_npz(odd)


def test_module_depends_on_nothing_above_errors():
    """fileio is the bottom layer: it imports no other package module than errors."""
    source = Path(fileio.__file__).read_text()
    imports = [line for line in source.splitlines() if line.startswith(("from mpc_tracking", "import mpc_tracking"))]
    assert imports == ["from mpc_tracking.errors import InputError"]
