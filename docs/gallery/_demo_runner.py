"""Helpers of the galleries (not an example): run a script of ``demos/``, show what it wrote.

Each gallery page (``docs/gallery/<demo>.py``) calls :func:`run_demo`, which runs
``demos/<demo>.py --out <dir>`` in this process, exactly as ``python demos/<demo>.py`` would, and
prints the demo's own output with ``<dir>`` shown as the default ``out/<demo>``. The figures and
animations the demo wrote are then picked up by :func:`scrape_demo_files` (a sphinx-gallery image
scraper) in the order the demo wrote them. ``MPC_TRACKING_DOCS_T_MAX`` (seconds) shortens every
simulated run for a quick build (the demos' own ``--t-max``).

:func:`scrape_loose_figures` shows the figures an example holds in its variables but never
registered with pyplot (``fig, ax = result.plot("track")``: the plotting functions build their
figures outside pyplot, which sphinx-gallery's own matplotlib scraper does not see).
"""
from __future__ import annotations

import contextlib
import io
import os
import runpy
import shutil
import sys
import weakref
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMOS = ROOT / "demos"
OUT = ROOT / "docs" / "_build" / "demo_out"
#: gallery order (quickstart first, then by feature); demos not listed follow alphabetically
ORDER = ("quickstart", "plant_comparison", "horizon_comparison", "time_optimal", "obstacle_avoidance", "race_track")
#: what a demo writes that the page shows (the result .npz and CSV files are not shown)
SHOWN = (".png", ".gif")

_pending: list[Path] = []
_shown: weakref.WeakSet = weakref.WeakSet()


def run_demo(name: str, *args: str) -> None:
    """Run ``demos/<name>.py [args]`` here and queue the figures it writes for the page."""
    out = OUT / name
    shutil.rmtree(out, ignore_errors=True)
    t_max = os.environ.get("MPC_TRACKING_DOCS_T_MAX")
    argv = [str(DEMOS / f"{name}.py"), *args, "--out", str(out)]
    if t_max:
        argv += ["--t-max", t_max]
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv, sys.path = argv, [str(DEMOS), *sys.path]
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            runpy.run_path(argv[0], run_name="__main__")
    finally:
        sys.argv, sys.path = saved_argv, saved_path
        # the demo's output as a user sees it: files under out/<name>, not under the docs build
        print(buf.getvalue().replace(str(out), f"out/{name}"), end="")
    files = sorted((f for f in out.rglob("*") if f.suffix in SHOWN), key=lambda f: f.stat().st_mtime_ns)
    _pending.extend(files)


def scrape_demo_files(block, block_vars, gallery_conf) -> str:
    """sphinx-gallery image scraper: copy the files queued by :func:`run_demo` next to the page."""
    from sphinx_gallery.scrapers import figure_rst

    files = list(_pending)
    _pending.clear()
    rst = []
    for f in files:
        target = Path(next(block_vars["image_path_iterator"]))
        target = target.with_suffix(f.suffix)
        shutil.copyfile(f, target)
        rst.append(figure_rst([str(target)], gallery_conf["src_dir"]))
    return "".join(rst)


def scrape_loose_figures(block, block_vars, gallery_conf) -> str:
    """sphinx-gallery image scraper: new figures found in the example's variables (or in tuples there)."""
    from matplotlib.figure import Figure
    from sphinx_gallery.scrapers import figure_rst

    figures = []
    for value in list(block_vars["example_globals"].values()):
        for obj in value if isinstance(value, tuple) else (value,):
            if isinstance(obj, Figure) and obj not in _shown and obj not in figures:
                figures.append(obj)
    rst = []
    for fig in figures:
        _shown.add(fig)
        target = next(block_vars["image_path_iterator"])
        fig.savefig(target, dpi=100)
        rst.append(figure_rst([str(target)], gallery_conf["src_dir"]))
    return "".join(rst)


class DemoOrder:
    """sphinx-gallery ``within_subsection_order``: :data:`ORDER` first, then by file name."""

    def __init__(self, src_dir: str) -> None:
        self.src_dir = src_dir

    def __call__(self, filename: str) -> tuple[int, str]:
        stem = Path(filename).stem
        return (ORDER.index(stem) if stem in ORDER else len(ORDER), stem)

    def __repr__(self) -> str:
        return "<DemoOrder>"
