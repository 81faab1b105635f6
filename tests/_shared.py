"""The shared reference data folder for the tests: the benchmarks' lookup (``benchmarks/_shared.py``), loaded
from its file so that the places it searches are written once ($MPC_TRACKING_SHARED, ../shared, ../../shared).
Tests that read it skip with :data:`SKIP_TRACKS` (or their own reason) when it is absent."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "_shared.py"
_spec = importlib.util.spec_from_file_location("_mpc_tracking_benchmarks_shared", _FILE)
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

#: the shared folder (may not exist)
SHARED: Path = _module.shared_dir()
#: ... its race tracks (TUM CSV files)
TRACKS: Path = SHARED / "tracks"
#: skip reason of a test that needs the shared tracks
SKIP_TRACKS = (f"{TRACKS} not found (${_module.ENV_VAR}, ../shared or ../../shared): real-track tests need the "
               "shared data folder")


def generated_circuits() -> ModuleType:
    """``benchmarks/circuits.py`` (the seeded random circuit generator), loaded from its file once."""
    name = "circuits"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _FILE.parent / "circuits.py")
        assert spec is not None and spec.loader is not None  # (the benchmarks folder is part of the repository)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]
