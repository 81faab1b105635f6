"""Shared fixtures and settings of the test suite."""
from __future__ import annotations

import os
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


@pytest.fixture
def shared_dir() -> Path:
    """The read-only shared folder beside the project root; skips when absent."""
    if not (SHARED / "tracks").is_dir():
        pytest.skip("../shared/tracks not found: real-track tests need the shared data folder")
    return SHARED
