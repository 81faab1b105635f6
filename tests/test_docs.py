"""The documentation sources keep up with the code (cheap: reads files, never builds the site).

Every demo has a gallery page, every public name is in the API reference (at the place that
documents it), and every page is reachable. The site itself is built by CI (``.ci/run``):
``python -m sphinx -W --keep-going -b html docs docs/_build/html``.
"""
from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import mpc_tracking

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API = DOCS / "api"
DEMOS = sorted(p.stem for p in (ROOT / "demos").glob("*.py") if not p.stem.startswith("_"))
#: the modules whose ``__all__`` the API reference documents, name by name
PUBLIC = [
    "mpc_tracking.paths", "mpc_tracking.environment", "mpc_tracking.mpc", "mpc_tracking.control", "mpc_tracking.models",
    "mpc_tracking.models.prediction", "mpc_tracking.actuation", "mpc_tracking.simulation",
    "mpc_tracking.results", "mpc_tracking.viz.plotting", "mpc_tracking.viz.animation", "mpc_tracking.viz.notebook",
    "mpc_tracking.scenario", "mpc_tracking.tuning", "mpc_tracking.identification", "mpc_tracking.errors",
]


def _entries(rst: Path) -> list[tuple[str, str, bool]]:
    """(current module, entry, on its own page) of every autosummary/autoexception entry of ``rst``."""
    out, module, in_summary, toctree = [], "", False, False
    for line in rst.read_text().splitlines():
        if m := re.match(r"\.\. (?:current|auto)module:: (\S+)", line):
            module, in_summary = m.group(1), False
        elif line.startswith(".. autosummary::"):
            in_summary, toctree = True, False
        elif m := re.match(r"\.\. autoexception:: (\S+)", line):
            out.append((module, m.group(1), True))
        elif in_summary and line.strip().startswith(":toctree:"):
            toctree = True
        elif in_summary and line.startswith("   ") and not line.strip().startswith(":"):
            out.append((module, line.strip(), toctree))
        elif in_summary and line.strip() and not line.startswith(" "):
            in_summary = False
    return out


def _documented() -> set[str]:
    """Full names documented (with a page or an entry of their own) by the module pages."""
    return {f"{mod}.{name}" for page in API.glob("*.rst") if page.name != "mpc_tracking.rst"
            for mod, name, own in _entries(page) if own}


def _toctree(page: Path) -> list[str]:
    lines, out, inside = page.read_text().splitlines(), [], False
    for line in lines:
        if re.match(r"(\.\. toctree::|```\{toctree\})", line.strip()):
            inside = True
        elif inside and line.strip() and not line.strip().startswith(":") and not line.startswith("```"):
            if not line.startswith(" ") and page.suffix == ".rst":
                inside = False
            else:
                out.append(line.strip())
        elif inside and line.startswith("```"):
            inside = False
    return out


def _page_scenarios(page: Path) -> dict:
    """The ``SCENARIOS = {...}`` of a gallery page: its upper-case top-level data (pure literals,
    which may use each other, as ``_CONTROLLER``) evaluated without builtins."""
    names: dict[str, object] = {}
    for node in ast.parse(page.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper():
            try:
                names[node.targets[0].id] = eval(compile(ast.Expression(node.value), page.name, "eval"),
                                                 {"__builtins__": {}}, dict(names))
            except (NameError, TypeError, AttributeError):  # not data (T_MAX reads the environment)
                continue
    return names.get("SCENARIOS", {})  # type: ignore[return-value]


def _without_outputs(scenario) -> dict:
    data = scenario.to_dict()
    data.pop("outputs", None)
    data.pop("description", None)
    return data


@pytest.mark.parametrize("demo", DEMOS)
def test_every_demo_has_a_self_contained_gallery_page(demo):
    from mpc_tracking.scenario.core import load_scenario

    page = DOCS / "gallery" / f"{demo}.py"
    assert page.is_file(), f"demos/{demo}.py has no gallery page docs/gallery/{demo}.py"
    text = page.read_text()
    doc = ast.get_docstring(ast.parse(text), clean=False) or ""
    title, underline = (doc.strip().splitlines() + ["", ""])[:2]
    assert title and set(underline) == {"="} and len(underline) >= len(title), f"{page.name}: no reST title"
    # runs as downloaded: no helper of docs/, no file of demos/
    imported = {n.module if isinstance(n, ast.ImportFrom) else a.name
                for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.Import, ast.ImportFrom))
                for a in n.names}
    roots = {name.split(".")[0] for name in imported}
    assert roots <= {"os", "pathlib", "numpy", "mpc_tracking"}, f"{page.name} imports {sorted(roots)}"
    assert ".yaml\")" not in text and "demos/" not in re.sub(r'"""[\s\S]*?"""|#.*', "", text)
    # the scenarios it holds are the demo's files, key for key
    scenarios = _page_scenarios(page)
    assert scenarios, f"{page.name}: no SCENARIOS = {{'file.yaml': {{...}}}} literal"
    for file, data in scenarios.items():
        assert _without_outputs(load_scenario(data)) == _without_outputs(load_scenario(ROOT / "demos" / file)), \
            f"{page.name}: SCENARIOS[{file!r}] differs from demos/{file}"


def _notebook_of(page: Path, folder: Path) -> Path:
    """The page's notebook as the docs build makes it (sphinx-gallery's converter), in ``folder``."""
    import contextlib
    import io
    import shutil

    from sphinx_gallery.notebook import python_to_jupyter_cli

    copy = folder / page.name
    shutil.copyfile(page, copy)
    with contextlib.redirect_stdout(io.StringIO()):
        python_to_jupyter_cli([str(copy)])
    copy.unlink()  # only the notebook is left: it must not need the .py (nor anything else)
    return copy.with_suffix(".ipynb")


GALLERY_PAGES = [DOCS / "gallery" / f"{d}.py" for d in DEMOS] + sorted((DOCS / "tutorials").glob("[a-z]*.py"))


@pytest.mark.parametrize("page", GALLERY_PAGES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_downloaded_notebook_runs_in_an_empty_folder(page, tmp_path, monkeypatch):
    """Each page's "Download Jupyter notebook", executed in a clean folder (runs cut to 1.5 s)."""
    nbformat = pytest.importorskip("nbformat", reason="needs the test extra (nbformat, nbclient, ipykernel)")
    nbclient = pytest.importorskip("nbclient", reason="needs the test extra (nbformat, nbclient, ipykernel)")
    pytest.importorskip("ipykernel", reason="needs the test extra (nbformat, nbclient, ipykernel)")
    pytest.importorskip("sphinx_gallery", reason="needs the docs extra (sphinx-gallery)")
    monkeypatch.setenv("MPC_TRACKING_DEMO_T_MAX", "1.5")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb_file = _notebook_of(page, tmp_path)
    nb = nbformat.read(nb_file, as_version=4)
    assert sum(c.cell_type == "code" for c in nb.cells) >= 2
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
                            ).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    if "animate(" in page.read_text():  # the animation plays inline: an embedded video or player
        html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
        assert any("data:video/mp4;base64" in h or "data:image/jpeg;base64" in h for h in html)


def test_gallery_pages_and_order_match_the_demos():
    pages = {p.stem for p in (DOCS / "gallery").glob("*.py") if not p.stem.startswith("_")}
    assert pages == set(DEMOS), "gallery pages without a demo (or the other way round)"
    runner = ast.parse((DOCS / "gallery" / "_demo_runner.py").read_text())
    order = next(ast.literal_eval(node.value) for node in runner.body
                 if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "ORDER")
    assert sorted(order) == DEMOS, "docs/gallery/_demo_runner.ORDER must list every demo once"


def test_top_level_names_link_to_where_they_are_documented():
    entries = {}
    for mod, name, _ in _entries(API / "mpc_tracking.rst"):
        full = name.lstrip("~")
        full = full if full.startswith("mpc_tracking.") else f"{mod}.{full}"
        entries[full.rsplit(".", 1)[1]] = full
    missing = sorted(set(mpc_tracking.__all__) - set(entries))
    assert not missing, f"mpc_tracking.__all__ names missing from docs/api/mpc_tracking.rst: {missing}"
    documented = _documented()
    for name in mpc_tracking.__all__:
        module, attr = entries[name].rsplit(".", 1)
        assert getattr(importlib.import_module(module), attr) is getattr(mpc_tracking, name), \
            f"docs/api/mpc_tracking.rst: {entries[name]} is not mpc_tracking.{name}"
        assert entries[name] in documented, f"{entries[name]} (mpc_tracking.{name}) has no page in docs/api/"


@pytest.mark.parametrize("module", PUBLIC)
def test_every_public_name_is_in_the_api_reference(module):
    documented = _documented()
    names = importlib.import_module(module).__all__
    missing = [name for name in names if f"{module}.{name}" not in documented]
    assert not missing, f"{module}.__all__ names missing from docs/api/*.rst: {missing}"


def test_every_page_is_reachable():
    api_pages = {p.stem for p in API.glob("*.rst")} - {"index"}
    assert set(_toctree(API / "index.rst")) == api_pages
    guide = {p.stem for p in (DOCS / "guide").glob("*.md")} - {"index"}
    assert set(_toctree(DOCS / "guide" / "index.md")) == guide
    assert {"getting_started", "auto_tutorials/index", "guide/index", "auto_gallery/index", "api/index",
            "changelog"} <= set(_toctree(DOCS / "index.rst"))
    assert (ROOT / "CHANGELOG.md").is_file() and (DOCS / "tutorials" / "own_path.py").is_file()


def test_the_changelog_names_the_current_version():
    assert f"## [{mpc_tracking.__version__}]" in (ROOT / "CHANGELOG.md").read_text()


def _check_links_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("check_links", DOCS / "check_links.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def test_link_checker_finds_missing_pages_and_fragments(tmp_path):
    check = _check_links_module()
    (tmp_path / "guide").mkdir()
    (tmp_path / "index.html").write_text(
        '<a href="guide/a.html#models">ok</a> <a href="guide/a.html#nowhere">bad fragment</a>'
        '<a href="guide/missing.html">bad page</a> <a href="https://example.org/x">external</a>'
        '<img src="img/logo.png"> <a href="#top">self</a> <p id="top"></p>')
    (tmp_path / "guide" / "a.html").write_text('<h2 id="models">Models</h2><a href="../index.html">up</a>')
    bad = sorted(link for _, link in check.broken_links(tmp_path))
    assert bad == ["guide/a.html#nowhere", "guide/missing.html", "img/logo.png"]
    assert check.main([str(tmp_path)]) == 1
    (tmp_path / "index.html").write_text('<a href="guide/a.html#models">ok</a>')
    assert check.main([str(tmp_path)]) == 0
