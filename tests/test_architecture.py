"""The layout holds: imports flow one way down the layers, and no module imports another in a cycle.

The import graph comes from ``benchmarks/import_graph.py`` (function-level imports count;
``if TYPE_CHECKING:`` imports do not, since they never run).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: the layers, top to bottom: a node may import only nodes of lower layers
LAYERS: list[set[str]] = [
    {"mpc_tracking", "mpc_tracking.__main__"},
    {"mpc_tracking.cli"},
    {"mpc_tracking.ros"},  # the optional ROS 2 nodes: only the CLI imports them, they import no higher layer
    {"mpc_tracking.tuning"},
    {"mpc_tracking.scenario", "mpc_tracking.fuzz"},
    {"mpc_tracking.simulation"},
    {"mpc_tracking.simulation_checks"},
    {"mpc_tracking.results", "mpc_tracking.plausibility"},
    {"mpc_tracking.result_file"},
    {"mpc_tracking.viz"},
    {"mpc_tracking.logs"},
    {"mpc_tracking.identification"},
    {"mpc_tracking.actuation"},
    {"mpc_tracking.control"},
    {"mpc_tracking.mpc"},
    {"mpc_tracking.paths"},
    {"mpc_tracking.environment", "mpc_tracking.models"},
    {"mpc_tracking.fileio"},
    {"mpc_tracking.errors", "mpc_tracking._startup", "mpc_tracking._lazy", "mpc_tracking._optional"},
]


def _graph_module():
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "benchmarks" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def graphs():
    g = _graph_module()
    modules = g.module_graph()
    return g, modules, g.collapse(modules)


def test_every_node_has_a_layer(graphs):
    _, _, nodes = graphs
    layered = set().union(*LAYERS)
    assert set(nodes) <= layered, f"give these a layer in LAYERS: {sorted(set(nodes) - layered)}"


def test_imports_flow_down_the_layers(graphs):
    _, _, nodes = graphs
    rank = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    upward = [(src, dst) for src, deps in nodes.items() for dst in deps if rank[dst] <= rank[src]]
    assert upward == [], f"imports that go up or sideways: {upward}"


def test_no_import_cycles_between_modules(graphs):
    g, modules, _ = graphs
    assert g.cycles(modules) == []


def _models_part(module: str) -> str | None:
    """``mpc_tracking.models.plants.x`` -> ``plants``; None outside ``mpc_tracking.models.*``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["mpc_tracking", "models"] else None


def test_plants_and_prediction_models_do_not_import_each_other(graphs):
    """The plants (what the car does) and the MPC's prediction models (what it believes) share only
    ``models.base`` and ``models.integrators``; neither imports the other."""
    _, modules, _ = graphs
    crossing = sorted((src, dst) for src, deps in modules.items() for dst in deps
                      if {_models_part(src), _models_part(dst)} == {"plants", "prediction"})
    assert crossing == []


def test_the_core_never_imports_ros(graphs):
    """Only the CLI may import mpc_tracking.ros (the [ros] extra is optional)."""
    _, _, nodes = graphs
    importers = sorted(src for src, deps in nodes.items() if "mpc_tracking.ros" in deps)
    assert importers in ([], ["mpc_tracking.cli"]), importers


def test_the_checker_sees_a_cycle_and_an_upward_edge(graphs):
    """The checks above can fail: a made-up graph with a cycle is caught."""
    g, _, _ = graphs
    assert g.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert g.depth({"a": {"b"}, "b": {"c"}, "c": set()}) == 3


def test_lazy_public_names_count_as_imports(graphs):
    """A name in ``mpc_tracking._LAZY`` is imported on first access: the graph keeps it as an edge."""
    _, modules, _ = graphs
    assert {"mpc_tracking.simulation", "mpc_tracking.mpc.controller", "mpc_tracking.paths.io"} <= modules["mpc_tracking"]
    assert "mpc_tracking.paths.io" in modules["mpc_tracking.paths"]
