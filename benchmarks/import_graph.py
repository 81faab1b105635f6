"""Import graph of the ``mpc_tracking`` package: nodes, edges, depth, cycles and layer violations.

Prints JSON. A node is a top-level module (``mpc_tracking.simulation``) or a subpackage
(``mpc_tracking.paths``, all its modules merged); an edge is an import inside the package,
function-level imports included, ``if TYPE_CHECKING:`` imports excluded (they do not run).
"Upward" edges go against ``LAYERS`` in ``tests/test_architecture.py`` (the same ordering is
defined there, where it is enforced; this script only reports). A lazy public name
(``_lazy_names({"module": "names"})`` in a package ``__init__``, see ``mpc_tracking/_lazy.py``) is an
edge to its module: it is imported on first access.

``--import-time`` measures instead what importing costs: for a few statements (``import
mpc_tracking``, the names of a closed-loop run, the CLI), each in a fresh interpreter, the best
wall time of ``--repeat`` runs (warm: the files are in the OS cache after the first) and which
heavy third-party packages are loaded afterwards.

    python benchmarks/import_graph.py [--modules] [--save]    # --modules: one node per module file
    python benchmarks/import_graph.py --import-time [--repeat 7] [--against DIR] [--save]

``--against DIR`` measures a second source tree (a checkout of another commit: ``git worktree add
DIR main`` or ``git archive main | tar -x -C DIR``) in the same run, the two interleaved.
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
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("lazy_names", "_lazy_names")
                and node.args and isinstance(node.args[0], ast.Dict)):  # lazy public names: {module: names}
            found.update(k.value for k in node.args[0].keys
                         if isinstance(k, ast.Constant) and isinstance(k.value, str))
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


#: what --import-time measures: label -> statement run in a fresh interpreter
IMPORT_STATEMENTS = {
    "import mpc_tracking": "import mpc_tracking",
    "names of a run": "from mpc_tracking import SpatialMPC, simulate, load_path, KinematicBicycle, MPCSettings",
    "the CLI module": "import mpc_tracking.cli.main",
    "numpy alone (reference)": "import numpy",
}
#: third-party packages reported as loaded (or not) after each statement
HEAVY = ("numpy", "scipy.sparse", "scipy.spatial", "scipy.interpolate", "scipy.optimize", "scipy.integrate",
         "scipy.ndimage", "scipy.signal", "scipy.stats", "osqp", "numba", "yaml", "matplotlib", "cvxpy",
         "pandas", "dask", "threadpoolctl")


def import_time(repeat: int, trees: list[Path]) -> dict[str, dict[str, dict[str, object]]]:
    """Best wall time [s] of each of ``IMPORT_STATEMENTS`` over ``repeat`` fresh interpreters per source
    tree (the trees interleaved), and the heavy packages loaded; the interpreter's own start
    (``python -c pass``) is reported and subtracted."""
    import json
    import os
    import subprocess
    import time

    envs = {str(t): dict(os.environ, PYTHONPATH=str(t) + os.pathsep + os.environ.get("PYTHONPATH", ""))
            for t in trees}

    def best(code: str) -> dict[str, tuple[float, str]]:
        times: dict[str, list[float]] = {t: [] for t in envs}
        outs: dict[str, str] = {}
        for _ in range(repeat):
            for tree, env in envs.items():
                t0 = time.perf_counter()
                outs[tree] = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                                            cwd=tree, check=True).stdout
                times[tree].append(time.perf_counter() - t0)
        return {t: (min(times[t]), outs[t]) for t in envs}

    base = best("pass")
    rows: dict[str, dict[str, dict[str, object]]] = {t: {"python -c pass": {"wall_s": round(base[t][0], 4)}}
                                                     for t in envs}
    for label, stmt in IMPORT_STATEMENTS.items():
        code = f"import sys, json\n{stmt}\nprint(json.dumps([m for m in {list(HEAVY)!r} if m in sys.modules]))"
        for tree, (wall, out) in best(code).items():
            rows[tree][label] = {"statement": stmt, "wall_s": round(wall, 4),
                                 "minus_interpreter_s": round(wall - base[tree][0], 4),
                                 "heavy_loaded": json.loads(out.strip().splitlines()[-1])}
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modules", action="store_true", help="one node per module file")
    ap.add_argument("--save", action="store_true",
                    help="write benchmarks/results/import_graph.json (import_time.json with --import-time)")
    ap.add_argument("--import-time", action="store_true", help="measure import cost instead of the graph")
    ap.add_argument("--repeat", type=int, default=7, help="fresh interpreters per statement (--import-time)")
    ap.add_argument("--against", type=Path, default=None,
                    help="a second source tree to measure in the same run (--import-time)")
    args = ap.parse_args()
    from _provenance import RESULTS, dumps, finish, provenance, save_json  # only when run as a script
    if args.import_time:
        prov = provenance()
        trees = [ROOT.parent] + ([args.against.resolve()] if args.against else [])
        for tree in trees:
            if not (tree / "mpc_tracking" / "__init__.py").is_file():
                ap.error(f"--against: {tree} holds no mpc_tracking/__init__.py (expected a source tree)")
        rows = import_time(max(1, args.repeat), trees)
        result = {"provenance": finish(prov), "repeat": args.repeat, "import_time": rows}
        print(dumps(result))
        if args.save:
            save_json(RESULTS / "import_time.json", result)
        return
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
