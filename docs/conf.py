"""Sphinx configuration of the mpc_tracking documentation.

Build (from the repository root, after ``pip install -e ".[docs]"``)::

    python -m sphinx -W --keep-going -b html docs docs/_build/html

The gallery (``docs/gallery/``, one self-contained notebook per script of ``demos/``) and the
tutorials run at full length; ``MPC_TRACKING_DOCS_T_MAX=2`` cuts each simulated run of the
gallery to 2 s for a quick build, ``-D plot_gallery=0`` skips running them. Each example's zip
download holds its ``.py``, its ``.ipynb`` and the data files beside it (``tutorials/*.csv``).
The front page shows an animation of the quickstart made while the site is built
(``_generated/quickstart.gif``).
"""
from __future__ import annotations

import importlib
import os
import re
import sys
import warnings
from pathlib import Path

import mpc_tracking

DOCS = Path(__file__).resolve().parent
# the gallery helpers (demo runner, image scraper, ordering) are imported by name from here
sys.path.insert(0, str(DOCS / "gallery"))
os.environ.setdefault("MPLBACKEND", "Agg")
# the gallery pages read the demos' time limit (they run as downloaded, without this file)
if os.environ.get("MPC_TRACKING_DOCS_T_MAX"):
    os.environ["MPC_TRACKING_DEMO_T_MAX"] = os.environ["MPC_TRACKING_DOCS_T_MAX"]

# -- project ---------------------------------------------------------------------------------
project = "mpc_tracking"
author = "the mpc_tracking authors"
copyright = f"2026, {author}"
release = mpc_tracking.__version__
version = release

# -- general ---------------------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = ["_build", "_generated", "Thumbs.db", ".DS_Store",
                    "gallery/GALLERY_HEADER.rst", "tutorials/GALLERY_HEADER.rst"]
default_role = "py:obj"
pygments_style = "sphinx"

# -- autodoc / autosummary / numpydoc ---------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"  # the numpydoc sections give the types, with shapes and units
autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": True}
numpydoc_show_class_members = False  # the class template lists the members itself
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_validation_checks: set[str] = set()

# -- MyST ------------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist", "amsmath", "dollarmath"]
myst_heading_anchors = 3

# -- sphinx-gallery: the tutorials (docs/tutorials) and one page per demos/*.py (docs/gallery) --
sphinx_gallery_conf = {
    "examples_dirs": ["tutorials", "gallery"],
    "gallery_dirs": ["auto_tutorials", "auto_gallery"],
    "filename_pattern": r"[\\/][a-z]\w*\.py$",  # run every wrapper
    "ignore_pattern": r"^_",  # ... but not the helpers (_demo_runner.py; matched on the file name)
    "within_subsection_order": "_demo_runner.DemoOrder",
    "image_scrapers": ("matplotlib", "_demo_runner.scrape_loose_figures"),
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "capture_repr": (),
    "min_reported_time": 1,
    "show_memory": False,
    "show_signature": False,
}

# -- HTML ------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"mpc_tracking {release}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
}
html_show_sourcelink = True


# -- docstring clean-up (rendering only; the docstrings themselves are not changed) -------------
# 1. Docstrings write absolute values as |kappa| or |F|^2 in prose, which reST reads as
#    substitution references (errors, or a bar that swallows text): escape such bars outside
#    inline literals, roles and literal blocks.
# 2. numpydoc drops sections it does not know (with a UserWarning): a "Class attributes" section
#    (models.prediction.PredictionModel) is read as "Attributes" when there is none.
_ABS = re.compile(r"(?<![\\|`\w])\|([A-Za-z_][\w .]*?)\|(?![|`A-Za-z0-9])")
_LITERAL = re.compile(r"(`+[^`]*`+)")


def _escape_abs_bars(line: str) -> str:
    parts = _LITERAL.split(line)
    return "".join(p if i % 2 else _ABS.sub(r"\\|\1\\|", p) for i, p in enumerate(parts))


def _clean_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    literal_indent = None  # indentation of the paragraph that opened a literal block (::)
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if line.strip() and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        if line.rstrip().endswith("::"):
            literal_indent = indent
        lines[i] = _escape_abs_bars(line)
    headings = [line.strip() for line in lines]
    if "Attributes" not in headings:
        for i in range(len(lines) - 1):
            if lines[i].strip() == "Class attributes" and set(lines[i + 1].strip()) == {"-"}:
                lines[i] = lines[i].replace("Class attributes", "Attributes")
                lines[i + 1] = lines[i + 1].replace("-" * len("Class attributes"), "-" * len("Attributes"))


# mangle_signature parses the raw docstring too (the rendered one has the renamed section)
warnings.filterwarnings("ignore", message="Unknown section Class Attributes in the docstring of PredictionModel",
                        category=UserWarning)


# Docstrings link to objects by where they are defined (mpc_tracking.paths.io.write_path) or by a
# re-export (mpc_tracking.simulate), the reference documents each object once, under its public
# module (mpc_tracking.paths.write_path): resolve such links to the documented object. Autodoc
# registers these aliases for classes only.
_LINKABLE = {"class", "exception", "function", "method", "property", "module", "classmethod", "staticmethod"}


def _import_name(name: str, attribute_first: bool = True):
    """The object ``name`` names, or None; ``attribute_first``: ``a.f`` is the attribute f of a
    (a function re-exported over its module of the same name) rather than the submodule a.f."""
    parts = name.split(".")
    try:
        obj = importlib.import_module(parts[0])
        for i, part in enumerate(parts[1:], 2):
            if attribute_first and hasattr(obj, part):
                obj = getattr(obj, part)
                continue
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                obj = getattr(obj, part)
        return obj
    except (ImportError, AttributeError):
        return None


def _documented_objects(env) -> dict[int, str]:
    if getattr(env, "_mpc_documented", None) is None:
        index: dict[int, str] = {}
        for name, entry in sorted(env.get_domain("py").objects.items()):
            if entry.objtype in _LINKABLE and not entry.aliased:
                obj = _import_name(name)
                if obj is not None:
                    index.setdefault(id(obj), name)
        env._mpc_documented = index
    return env._mpc_documented


def _resolve_alias(app, env, node, contnode):
    if node.get("refdomain") != "py" or not node.get("reftarget"):
        return None
    target, module, cls = node["reftarget"].lstrip("~."), node.get("py:module"), node.get("py:class")
    candidates = [f"{module}.{cls}.{target}"] if module and cls else []
    candidates += [f"{module}.{target}"] if module else []
    candidates.append(target)
    index = _documented_objects(env)
    for candidate in candidates:
        if not candidate.startswith("mpc_tracking"):
            continue
        for obj in (_import_name(candidate), _import_name(candidate, attribute_first=False)):
            if obj is not None and (name := index.get(id(obj))) is not None:
                return env.get_domain("py").resolve_xref(env, node["refdoc"], app.builder, "obj", name, node,
                                                         contnode)
    return None


def _generate_outputs(app) -> None:
    """What guide/notebooks.md shows of a real run (its repr and its Jupyter HTML) and the front
    page's animation of it (docs/_generated/)."""
    out = DOCS / "_generated"
    out.mkdir(exist_ok=True)
    result = mpc_tracking.run_scenario(mpc_tracking.load_scenario(DOCS.parent / "demos" / "quickstart.yaml"))
    (out / "result_repr.txt").write_text(repr(result) + "\n")
    (out / "result_repr.html").write_text(result._repr_html_() + "\n")
    result.animate(fps=10, speed=3.0, dpi=50).save(out / "quickstart.gif")


#: data files beside the examples of a gallery that go into each example's zip download
_ZIP_DATA = ("*.csv", "*.yaml")


def _complete_zips(app) -> None:
    """Add the data files of each gallery's source folder (``my_track.csv``) to its examples' zips.

    sphinx-gallery zips an example's ``.py`` and ``.ipynb`` only; a tutorial that reads a file
    beside it would fail as downloaded.
    """
    import zipfile

    conf = app.config.sphinx_gallery_conf
    for src, dst in zip(conf["examples_dirs"], conf["gallery_dirs"], strict=True):
        data = sorted({f for pattern in _ZIP_DATA for f in (DOCS / src).glob(pattern)})
        if not data:
            continue
        for archive in (DOCS / dst).glob("*.zip"):
            if archive.name.startswith(Path(dst).name):  # the gallery-wide zips (download_all_examples)
                continue
            with zipfile.ZipFile(archive, "a") as zf:
                names = set(zf.namelist())
                for f in data:
                    if f.name not in names:
                        zf.write(f, f.name)


def setup(app) -> None:
    # before numpydoc (priority 500) turns the sections into reST
    app.connect("autodoc-process-docstring", _clean_docstring, priority=400)
    app.connect("builder-inited", _generate_outputs)
    app.connect("builder-inited", _complete_zips, priority=900)  # after sphinx-gallery wrote the zips
    app.connect("missing-reference", _resolve_alias)
    app.connect("env-before-read-docs", lambda app, env, docnames: setattr(env, "_mpc_documented", None))
