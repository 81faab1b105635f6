"""Import graph of the ``mpc_tracking`` package: nodes, edges, depth, cycles and layer violations.

Prints JSON. A node is a top-level module (``mpc_tracking.simulation``) or a subpackage
(``mpc_tracking.paths``, all its modules merged); an edge is an import inside the package,
function-level imports included, ``if TYPE_CHECKING:`` imports excluded (they do not run).
"Upward" edges go against ``LAYERS`` in ``tests/test_architecture.py`` (the same ordering is
defined there, where it is enforced; this script only reports).

    python benchmarks/import_graph.py [--modules] [--save]    # --modules: one node per module file
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "mpc_tracking"


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(path: Path, module: str, is_pkg: bool, files: set[str]) -> set[str]:
    """Names of the package modules imported by ``path`` (outside TYPE_CHECKING)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.body:
                for sub in ast.walk(child):
                    skip.add(id(sub))
    package = module if is_pkg else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("mpc_tracking"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("mpc_tracking"):
                continue
            submodules = {f"{target}.{a.name}" for a in node.names} & files  # ``from pkg import module``
            found.update(submodules)
            if len(submodules) < len(node.names):
                found.add(target)
    return found


def module_graph() -> dict[str, set[str]]:
    """``{module: {imported package modules}}`` over every ``.py`` file of the package."""
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        deps = {d for d in _imports(path, name, path.name == "__init__.py", set(files)) if d in files}
        deps.discard(name)
        graph[name] = deps
    return graph


def collapse(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """Merge each subpackage into one node ``mpc_tracking.<sub>``."""
    def node(name: str) -> str:
        parts = name.split(".")
        if len(parts) >= 2 and (ROOT / parts[1]).is_dir():
            return ".".join(parts[:2])
        return name

    out: dict[str, set[str]] = {}
    for src, deps in graph.items():
        out.setdefault(node(src), set()).update(node(d) for d in deps)
    for src, deps in out.items():
        deps.discard(src)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    sys.setrecursionlimit(10_000)

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def depth(graph: dict[str, set[str]]) -> int:
    """Number of levels of the longest import chain (cycles counted once)."""
    memo: dict[str, int] = {}

    def level(v: str, seen: frozenset[str]) -> int:
        if v in memo:
            return memo[v]
        deps = [w for w in graph.get(v, ()) if w not in seen]
        value = 1 + max((level(w, seen | {v}) for w in deps), default=0)
        memo[v] = value
        return value

    return max((level(v, frozenset()) for v in graph), default=0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", action="store_true", help="one node per module file")
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/import_graph.json")
    args = ap.parse_args()
    from _provenance import RESULTS, dumps, provenance, save_json  # only when run as a script
    graph = module_graph()
    if not args.modules:
        graph = collapse(graph)
    folders: dict[str, int] = {}
    for p in ROOT.rglob("*.py"):
        key = str(p.parent.relative_to(ROOT.parent))
        folders[key] = folders.get(key, 0) + 1
    out = {
        "provenance": provenance(),
        "nodes": len(graph),
        "edges": sum(len(d) for d in graph.values()),
        "levels": depth(graph),
        "cycles": cycles(graph),
        "modules_per_folder": dict(sorted(folders.items())),
    }
    print(dumps(out))
    if args.save:
        save_json(RESULTS / ("import_graph_modules.json" if args.modules else "import_graph.json"), out)


if __name__ == "__main__":
    main()
