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

import contextlib
import keyword
import os
import re
import shutil
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
        The files written: all of them or, when writing fails (the error names the file), none
        (a folder written with ``overwrite`` keeps its earlier files).
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
    texts = {target.format(**fields): _template(tmpl).substitute(fields) for tmpl, target in _FILES.items()}
    return _write_all_or_nothing(out, texts)


def _write_all_or_nothing(out: Path, texts: dict[str, str]) -> list[Path]:
    """Write ``texts`` (relative name -> text) into ``out``: all files or none.

    The files are written into a hidden folder beside ``out`` first; a new or empty ``out`` is
    then replaced by that folder in one rename, a non-empty one (``overwrite``) file by file with
    the replaced files kept aside until every file is in place (and put back on a failure). A
    disk error names the file.
    """
    from mpc_tracking.fileio import named_oserror

    with named_oserror(out.parent):
        out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.partial-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        for rel, text in texts.items():
            path = staging / rel
            with named_oserror(out / rel):
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
        if not out.exists() or (out.is_dir() and not any(out.iterdir())):
            with named_oserror(out):
                if out.exists():
                    out.rmdir()
                os.replace(staging, out)
        else:
            _replace_files(staging, out, list(texts))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return [out / rel for rel in texts]


def _replace_files(staging: Path, out: Path, names: list[str]) -> None:
    """Move ``names`` from ``staging`` into the non-empty ``out``; on a failure undo the moves."""
    from mpc_tracking.fileio import named_oserror

    done: list[tuple[Path, Path | None]] = []
    try:
        for rel in names:
            dest = out / rel
            with named_oserror(dest):
                backup = None
                if dest.exists():
                    backup = dest.with_name(f".{dest.name}.replaced-{os.getpid()}")
                    os.replace(dest, backup)
                done.append((dest, backup))
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / rel, dest)
    except BaseException:
        for dest, backup in reversed(done):
            with contextlib.suppress(OSError):
                if backup is not None:
                    os.replace(backup, dest)
                elif dest.exists():
                    dest.unlink()
        raise
    for _, backup in done:
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()


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
