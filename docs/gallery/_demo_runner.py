"""Helpers of the galleries (not an example): page order and the image scraper.

The gallery pages (``docs/gallery/<demo>.py``) are self-contained notebooks: each holds its
demo's scenario as a dictionary (``SCENARIOS``, equal to the ``demos/*.yaml`` files: checked by
``tests/test_docs.py``) and calls the public API only, so the page's downloaded ``.ipynb`` or
``.py`` runs in any folder where mpc_tracking is installed. ``MPC_TRACKING_DEMO_T_MAX``
(seconds; ``MPC_TRACKING_DOCS_T_MAX`` for the docs build) shortens every simulated run.

:func:`scrape_loose_figures` shows what an example holds in its variables but never registered
with pyplot: figures (``fig, ax = result.plot("track")``; the plotting functions build their
figures outside pyplot, which sphinx-gallery's own matplotlib scraper does not see) and
animations (``result.animate()``), written as GIF.
"""
from __future__ import annotations

import weakref
from pathlib import Path

#: gallery order (quickstart first, then by feature); demos not listed follow alphabetically
ORDER = ("quickstart", "plant_comparison", "horizon_comparison", "time_optimal", "obstacle_avoidance", "race_track")

_shown: weakref.WeakSet = weakref.WeakSet()


def _candidates(value):
    return value if isinstance(value, tuple) else (value,)


def scrape_loose_figures(block, block_vars, gallery_conf) -> str:
    """sphinx-gallery image scraper: new figures and animations found in the example's variables
    (or in tuples there), in the order the variables were made."""
    from matplotlib.figure import Figure
    from sphinx_gallery.scrapers import figure_rst

    from mpc_tracking.viz.animation import Animation

    found = []
    for value in list(block_vars["example_globals"].values()):
        for obj in _candidates(value):
            if isinstance(obj, (Figure, Animation)) and obj not in _shown and not any(obj is f for f in found):
                found.append(obj)
    rst = []
    for obj in found:
        _shown.add(obj)
        target = Path(next(block_vars["image_path_iterator"]))
        if isinstance(obj, Animation):
            target = target.with_suffix(".gif")
            obj.save(target)
        else:
            obj.savefig(target, dpi=100)
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
