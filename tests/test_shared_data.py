"""The one lookup of the shared reference data (``benchmarks/_shared.py``, used by the benchmarks and, through
``tests/_shared.py``, by the tests): the environment variable wins, then ../shared, then ../../shared."""
from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(file: Path):
    spec = importlib.util.spec_from_file_location(f"_shared_{abs(hash(str(file)))}", file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lookup_in(checkout: Path):
    """``benchmarks/_shared.py`` as if it were in ``checkout`` (its places are relative to its file)."""
    (checkout / "benchmarks").mkdir(parents=True)
    shutil.copy(ROOT / "benchmarks" / "_shared.py", checkout / "benchmarks" / "_shared.py")
    return _load(checkout / "benchmarks" / "_shared.py")


def test_a_checkout_beside_the_shared_folder_finds_it(tmp_path, monkeypatch):
    monkeypatch.delenv("MPC_TRACKING_SHARED", raising=False)
    (tmp_path / "shared" / "tracks").mkdir(parents=True)
    (tmp_path / "wt" / "shared").mkdir(parents=True)  # ../../shared of a worktree: not taken, ../shared is there
    lookup = _lookup_in(tmp_path / "main")
    assert lookup.shared_dir("tracks") == tmp_path / "shared" / "tracks"


def test_a_worktree_one_folder_down_finds_it_two_levels_up(tmp_path, monkeypatch):
    monkeypatch.delenv("MPC_TRACKING_SHARED", raising=False)
    (tmp_path / "shared" / "plants").mkdir(parents=True)
    lookup = _lookup_in(tmp_path / "wt" / "mine")
    assert lookup.shared_dir("plants", "ackermann3d") == tmp_path / "shared" / "plants" / "ackermann3d"


def test_the_environment_variable_wins_and_nothing_found_is_the_sibling(tmp_path, monkeypatch):
    (tmp_path / "shared").mkdir()
    lookup = _lookup_in(tmp_path / "main")
    monkeypatch.setenv("MPC_TRACKING_SHARED", str(tmp_path / "elsewhere"))
    assert lookup.shared_dir("tracks") == tmp_path / "elsewhere" / "tracks"  # as given, even when absent
    monkeypatch.delenv("MPC_TRACKING_SHARED")
    (tmp_path / "shared").rmdir()
    assert lookup.shared_dir() == tmp_path / "shared"  # none exists: ../shared, for the "not found" message


def test_the_tests_use_the_same_lookup():
    from tests import _shared

    lookup = _load(ROOT / "benchmarks" / "_shared.py")
    assert lookup.shared_dir() == _shared.SHARED
    assert lookup.shared_dir("tracks") == _shared.TRACKS


@pytest.mark.parametrize("script", ["bench_tracks.py", "bench_baselines.py", "bench_animation.py",
                                    "ackermann3d_reference_diff.py", "bench_grip_change.py", "bench_grip_limit.py",
                                    "bench_identify.py"])
def test_no_benchmark_has_a_lookup_of_its_own(script):
    text = (ROOT / "benchmarks" / script).read_text()
    assert "shared_dir(" in text and '/ "shared"' not in text, script
