"""The module paths of before the plants / prediction split still import, as the moved modules themselves."""
from __future__ import annotations

import importlib

import pytest

from mpc_tracking.models import MOVED_MODULES


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_old_path_is_the_moved_module(old):
    assert importlib.import_module(old) is importlib.import_module(MOVED_MODULES[old])


def test_submodule_of_a_moved_package_is_not_loaded_twice():
    from mpc_tracking.models.ackermann3d.params import Ackermann3DParams as old
    from mpc_tracking.models.plants.ackermann3d.params import Ackermann3DParams as new

    assert old is new


def test_from_import_of_a_moved_module():
    from mpc_tracking.models import spatial_dynamic
    from mpc_tracking.models.prediction import spatial_dynamic as moved

    assert spatial_dynamic is moved


def test_unknown_module_still_fails():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("mpc_tracking.models.no_such_module")


@pytest.mark.parametrize("old", sorted(MOVED_MODULES))
def test_old_path_has_a_type_stub_naming_the_moved_module(old):
    """Type checkers do not run the import hook: each old path has a ``.pyi`` that re-exports the moved module."""
    from pathlib import Path

    import mpc_tracking

    rel = Path(*old.split(".")[1:])
    stub = Path(mpc_tracking.__file__).parent.joinpath(rel.with_suffix(".pyi"))
    if not stub.is_file():
        stub = Path(mpc_tracking.__file__).parent.joinpath(rel, "__init__.pyi")
    assert f"from {MOVED_MODULES[old]} import *" in stub.read_text()
