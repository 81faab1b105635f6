"""A new user's time from ``pip install`` to their own path's animation in a notebook (an estimate).

Steps, each timed:

1. ``pip wheel --no-deps`` of this checkout and ``pip install --no-deps --target`` of the wheel
   into a temporary folder (the dependencies -- numpy, scipy, osqp, cvxpy, matplotlib -- are
   taken as already there: their download time depends on the network, not on this project);
2. the tutorial "Track your own path" (``docs/tutorials/own_path.py``) as the notebook its docs
   page offers for download (sphinx-gallery's converter), executed in an empty folder by a
   Jupyter kernel that imports the installed copy: kernel start, then each cell, up to and
   including the cell that shows the lap's animation (``result.animate()``).

Prints JSON with a ``provenance`` block: the install time, the notebook's time to the animation,
their sum, the cells' times and the size of the embedded animation. Needs the test extra
(nbformat, nbclient, ipykernel, sphinx-gallery). ``--save`` writes
``benchmarks/results/first_animation.json``.

    python benchmarks/bench_first_animation.py [--save]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _provenance import REPO, RESULTS, dumps, finish, provenance, save_json


def _install(folder: Path) -> tuple[Path, float]:
    """Build the wheel and install it (no dependencies) under ``folder``; (site folder, seconds)."""
    t0 = time.perf_counter()
    wheels, site = folder / "wheels", folder / "site"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(REPO),
                    "-w", str(wheels)], check=True, capture_output=True)
    (wheel,) = wheels.glob("mpc_tracking-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True)
    return site, time.perf_counter() - t0


def _tutorial_notebook(folder: Path) -> Path:
    from sphinx_gallery.notebook import python_to_jupyter_cli

    src = folder / "own_path.py"
    shutil.copyfile(REPO / "docs" / "tutorials" / "own_path.py", src)
    with contextlib.redirect_stdout(io.StringIO()):
        python_to_jupyter_cli([str(src)])
    src.unlink()
    return src.with_suffix(".ipynb")


def _run_notebook(nb_file: Path, site: Path) -> dict:
    """Execute the notebook cell by cell up to the animation; the times [s]."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(nb_file, as_version=4)
    env_before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(site)  # the kernel imports the installed copy, not this checkout
    try:
        client = NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(nb_file.parent)}})
        t0 = time.perf_counter()
        cells, html_kb = [], None
        with client.setup_kernel():
            kernel_s = time.perf_counter() - t0
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                c0 = time.perf_counter()
                client.execute_cell(cell, index)
                cells.append({"cell": index, "first_line": cell.source.splitlines()[0][:60],
                              "s": round(time.perf_counter() - c0, 2)})
                html = [o["data"]["text/html"] for o in cell.get("outputs", []) if "text/html" in o.get("data", {})]
                if "animate(" in cell.source and html:
                    html_kb = round(len(html[0]) / 1e3, 1)
                    break
        total = time.perf_counter() - t0
    finally:
        if env_before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = env_before
    module = subprocess.run([sys.executable, "-c", "import mpc_tracking; print(mpc_tracking.__file__)"],
                            env={**os.environ, "PYTHONPATH": str(site)}, cwd=str(site.parent), capture_output=True,
                            text=True).stdout
    return {"kernel_start_s": round(kernel_s, 2), "to_animation_s": round(total, 2), "cells": cells,
            "animation_html_kB": html_kb, "imported_from_install": module.strip().startswith(str(site))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--save", action="store_true", help="write benchmarks/results/first_animation.json")
    args = parser.parse_args()
    prov = provenance()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        site, install_s = _install(folder)
        work = folder / "notebook"
        work.mkdir()
        nb = _run_notebook(_tutorial_notebook(work), site)
    out = {"provenance": finish(prov), "install_no_deps_s": round(install_s, 2), "notebook": nb,
           "pip_install_to_animation_s": round(install_s + nb["to_animation_s"], 1),
           "note": "dependencies already installed; their download is not counted"}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / "first_animation.json", out)


if __name__ == "__main__":
    main()
