"""Importing the package is cheap: the heavy dependencies load only when a name that needs them is used.

Each check runs in a fresh interpreter (``sys.modules`` of this test process already holds everything)
and asserts which modules are *not* loaded afterwards -- no timing threshold.
"""
from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import mpc_tracking as mt
from mpc_tracking import _lazy

ROOT = Path(__file__).resolve().parents[1]

#: never loaded by ``import mpc_tracking``
HEAVY = ("numpy", "scipy", "osqp", "numba", "llvmlite", "yaml", "matplotlib", "cvxpy", "pandas", "dask",
         "threadpoolctl", "mpc_tracking.mpc", "mpc_tracking.paths", "mpc_tracking.models")
#: optional stacks: not loaded by a closed-loop run (path, controller, plant, simulate)
NOT_FOR_A_RUN = ("scipy.ndimage", "scipy.signal", "scipy.stats", "matplotlib", "cvxpy",
                 "pandas", "dask", "mpc_tracking.viz", "mpc_tracking.identification", "mpc_tracking.tuning")
#: ... and what only building a path needs (SciPy's splines, which import scipy.optimize; the KD-tree; sparse
#: LU; YAML, which numba imports too): not loaded by importing the names
NOT_FOR_THE_NAMES = NOT_FOR_A_RUN + ("scipy.interpolate", "scipy.optimize", "scipy.integrate", "scipy.spatial",
                                     "scipy.sparse.linalg", "numba", "yaml")


def _loaded_after(statement: str, names: tuple[str, ...]) -> list[str]:
    code = (f"import sys, json\n{statement}\n"
            f"print(json.dumps(sorted(n for n in {list(names)!r} if n in sys.modules)))")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                         timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_loads_no_heavy_dependency():
    assert _loaded_after("import mpc_tracking", HEAVY) == []


def test_the_probe_sees_a_loaded_module():  # the check above can fail
    assert {"mpc_tracking.paths", "numpy"} <= set(_loaded_after("import mpc_tracking; mpc_tracking.ReferencePath",
                                                                HEAVY))


def test_the_names_of_a_run_do_not_load_the_optional_stacks():
    statement = "from mpc_tracking import SpatialMPC, simulate, load_path, KinematicBicycle, MPCSettings"
    assert _loaded_after(statement, NOT_FOR_THE_NAMES) == []


def test_a_closed_loop_run_does_not_load_the_optional_stacks():
    run = ("import mpc_tracking as mt\n"
           "path = mt.load_path('oval')\n"
           "res = mt.simulate(path, mt.SpatialMPC(path), mt.KinematicBicycle(), t_max=1.0)\n"
           "assert res.t.size > 10")
    assert _loaded_after(run, NOT_FOR_A_RUN) == []


#: what the MPC's settings (and the types of a step's answer) do without: the controller, its QP machinery,
#: SciPy and the solvers (checking ``prediction_model`` reads the registry of ``mpc_tracking.models``)
NOT_FOR_THE_SETTINGS = ("scipy", "osqp", "daqp", "numba", "cvxpy", "mpc_tracking.mpc.controller",
                        "mpc_tracking.mpc.backends", "mpc_tracking.mpc.qp", "mpc_tracking.mpc.kernels",
                        "mpc_tracking.paths")


def test_the_settings_do_not_import_the_controller_or_a_solver():
    """``mpc_tracking.mpc.settings`` is read by the scenario schema, the CLI's key listing and the result types:
    importing it (or its package, ``mpc_tracking.mpc``), or checking settings, must not set up the controller
    stack."""
    statement = ("import mpc_tracking.mpc.settings\nfrom mpc_tracking.mpc import MPCSettings, MPCSolution, Status\n"
                 "MPCSettings(solver='daqp', prediction_model='dynamic')")
    assert _loaded_after(statement, NOT_FOR_THE_SETTINGS) == []


def test_the_controller_name_loads_the_controller_stack():  # the check above can fail
    loaded = _loaded_after("import mpc_tracking.mpc as m\nm.SpatialMPC", NOT_FOR_THE_SETTINGS)
    assert {"mpc_tracking.mpc.controller", "mpc_tracking.mpc.backends", "osqp", "scipy"} <= set(loaded)


def test_lazy_names_match_the_type_checking_imports():
    """``_LAZY`` (run time) and the ``if TYPE_CHECKING:`` imports (type checkers, docs) name the same objects."""
    for package, path in ((mt, ROOT / "mpc_tracking" / "__init__.py"),
                          (mt.paths, ROOT / "mpc_tracking" / "paths" / "__init__.py"),
                          (mt.mpc, ROOT / "mpc_tracking" / "mpc" / "__init__.py")):
        tree = ast.parse(path.read_text())
        typed: dict[str, str] = {}
        for node in tree.body:
            if isinstance(node, ast.If) and getattr(node.test, "id", "") == "TYPE_CHECKING":
                for imp in node.body:
                    assert isinstance(imp, ast.ImportFrom)
                    typed.update({a.name: str(imp.module) for a in imp.names})
        assert typed == package._LAZY
        eager = {n for n in package.__all__ if n not in package._LAZY}
        assert all(n in vars(package) for n in eager), sorted(eager - set(vars(package)))


def test_every_lazy_name_resolves_to_its_module_object():
    for name, module in mt._LAZY.items():
        assert getattr(mt, name) is getattr(sys.modules[module], name)
    assert set(mt._LAZY) <= set(mt.__all__)
    assert set(mt.__all__) <= set(dir(mt))
    assert mt.paths is sys.modules["mpc_tracking.paths"]
    for name, module in mt.mpc._LAZY.items():
        assert getattr(mt.mpc, name) is getattr(sys.modules[module], name)
    assert set(mt.mpc.__all__) <= set(dir(mt.mpc))
    assert mt.mpc.rejoin is importlib.import_module("mpc_tracking.mpc.rejoin")  # a module, as an attribute


def test_speed_profile_stays_the_function_after_its_module_is_imported():
    import mpc_tracking.paths.speed_profile  # noqa: F401  (binds the submodule on the package)

    assert callable(mt.paths.speed_profile) and callable(mt.speed_profile)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="NoSuchName"):
        mt.NoSuchName  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute"):
        mt.paths.NoSuchName  # noqa: B018


def test_lazy_names_rejects_a_name_listed_twice():
    with pytest.raises(ValueError, match="'a' is listed under both"):
        _lazy.lazy_names({"m1": "a b", "m2": "a"})
