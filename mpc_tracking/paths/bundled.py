"""Access to the reference paths bundled with the package (``reference_paths/`` in the source tree)."""
from __future__ import annotations

import difflib
from importlib import resources
from pathlib import Path

from mpc_tracking.errors import PathError

__all__ = ["bundled_dir", "list_bundled", "bundled_file", "DEFAULT_PATH"]

#: name of the path ``mpc-tracking demo`` drives
DEFAULT_PATH = "oval"
_SUFFIXES = (".csv", ".yaml")


def bundled_dir() -> Path:
    """Folder holding the bundled path files."""
    return Path(str(resources.files("mpc_tracking.reference_paths")))


def list_bundled() -> list[str]:
    """Names of the bundled paths (file names without suffix)."""
    return sorted({p.stem for p in bundled_dir().iterdir() if p.suffix in _SUFFIXES and not p.stem.startswith("_")})


def bundled_file(name: str) -> Path:
    """File of the bundled path ``name``; unknown names list the available ones."""
    for suffix in _SUFFIXES:
        f = bundled_dir() / f"{name}{suffix}"
        if f.is_file():
            return f
    near = difflib.get_close_matches(str(name), list_bundled(), n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    raise PathError(f"unknown bundled path {name!r}{hint} (available: {', '.join(list_bundled())}; or a path file)")
