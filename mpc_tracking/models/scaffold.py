"""``mpc-tracking new-model NAME DIR``: write an installable motion-model plugin package.

Layout written into ``DIR``::

    pyproject.toml                 entry point NAME = mpc_tracking_NAME.model:ClassName (group mpc_tracking.models)
    README.md
    mpc_tracking_NAME/__init__.py
    mpc_tracking_NAME/model.py     MotionModel template with init/step/xdot and comments
    tests/test_NAME.py             registry + turning-radius test

Also :func:`describe_models` (the ``mpc-tracking models`` listing).
"""
from __future__ import annotations

import keyword
import re
from importlib import resources
from pathlib import Path
from string import Template

from mpc_tracking.errors import InputError

__all__ = ["new_model", "describe_models"]

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "init.py.tmpl": "{package}/__init__.py",
    "model.py.tmpl": "{package}/model.py",
    "test_model.py.tmpl": "tests/test_{name}.py",
}


def _template(name: str) -> Template:
    return Template((resources.files("mpc_tracking.models") / "templates" / name).read_text(encoding="utf-8"))


def new_model(name: str, directory: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write a plugin package for a model called ``name`` into ``directory``.

    Parameters
    ----------
    name : str
        Registry name: lowercase letters, digits and underscores, starting with a letter.
    directory : str or Path
        Target folder (created; must be empty unless ``overwrite``).
    overwrite : bool
        Allow writing into a non-empty folder (existing files are replaced).

    Returns
    -------
    list of Path
        The files written.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name) or keyword.iskeyword(name):
        raise InputError(
            f"new-model: NAME must be lowercase letters, digits and underscores starting with a letter, got {name!r}"
        )
    from mpc_tracking.models import available_models

    if name in available_models():
        raise InputError(f"new-model: a model named {name!r} is already registered; choose another NAME")
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise InputError(f"new-model: DIR {str(out)!r} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise InputError(f"new-model: DIR {str(out)!r} is not empty (pass overwrite=True / --force)")
    fields = {
        "name": name,
        "package": f"mpc_tracking_{name}",
        "dist_name": f"mpc-tracking-{name.replace('_', '-')}",
        "class_name": "".join(part.capitalize() for part in name.split("_")) + "Model",
    }
    written = []
    for tmpl, target in _FILES.items():
        path = out / target.format(**fields)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_template(tmpl).substitute(fields), encoding="utf-8")
        written.append(path)
    return written


def describe_models() -> str:
    """Text listing of the registered plants (built-in and plugins) and plugins that failed to load."""
    from mpc_tracking.models import available_models, get_model, plugin_errors

    lines = ["registered motion models:"]
    for n in available_models():
        cls = get_model(n)
        doc = (cls.__doc__ or "").strip().splitlines()
        origin = cls.__module__.split(".")[0]
        tag = "" if origin == "mpc_tracking" else f" [plugin {cls.__module__}]"
        lines.append(f"  {n:<20s} {doc[0] if doc else ''}{tag}")
        lines.append(f"  {'':<20s} inputs {', '.join(cls.INPUT_NAMES)}; default actuator "
                     f"{cls.default_actuator}")
    errs = plugin_errors()
    if errs:
        lines.append("plugins that failed to load:")
        lines.extend(f"  {n}: {why}" for n, why in sorted(errs.items()))
    return "\n".join(lines)
