"""Low-level file writing shared by the outputs of runs, sweeps and animations.

- :func:`atomic_path` / :func:`atomic_open`: write under a temporary name beside the target and
  rename it over the target when complete, so a crash never leaves a half-written file under
  the final name (the temporary file is removed on failure).
- :func:`json_safe`: plain JSON types from numpy scalars/arrays, tuples and non-string keys, with
  a choice of what NaN and infinity become.
- :func:`write_json`: both together.

This module depends only on the standard library and :mod:`mpc_tracking.errors`.

Examples
--------
>>> import numpy as np
>>> json_safe({"n": np.int64(3), "x": np.array([0.5, np.nan]), "v_max": float("inf")})
{'n': 3, 'x': [0.5, None], 'v_max': 'inf'}
>>> json_safe([np.float32(1.5), float("-inf")], nonfinite="null")
[1.5, None]
>>> json_safe((1.0, float("nan")), nonfinite="keep")
[1.0, nan]
"""
from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

from mpc_tracking.errors import InputError

__all__ = ["atomic_path", "atomic_open", "json_safe", "write_json", "NONFINITE"]

#: what :func:`json_safe` does with NaN and +-inf
NONFINITE = ("text", "null", "keep")
Nonfinite = Literal["text", "null", "keep"]


def _temp_name(target: Path) -> Path:
    return target.with_name(f".{target.stem}.partial{target.suffix}")


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary file name beside ``target``; rename it to ``target`` on success.

    The temporary name is ``.<stem>.partial<suffix>`` in the same folder (same suffix, so writers
    that choose the format by the suffix still work). It is removed when the block raises.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> with atomic_path(folder / "a.txt") as tmp:
    ...     _ = tmp.write_text("done")
    >>> (folder / "a.txt").read_text(), sorted(p.name for p in folder.iterdir())
    ('done', ['a.txt'])
    """
    target = Path(target)
    tmp = _temp_name(target)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


@contextlib.contextmanager
def atomic_open(target: str | Path, mode: str = "w", *, encoding: str | None = "utf-8", newline: str | None = None,
                fsync: bool = False) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``target`` for writing; on success close it and rename it to ``target``.

    Parameters
    ----------
    target : str or Path
    mode : str
        ``"w"`` (text) or ``"wb"`` (binary).
    encoding, newline
        As for :func:`open` (text mode only).
    fsync : bool
        Flush the file to disk before the rename (the file survives a power loss once renamed).
    """
    if mode not in ("w", "wb"):
        raise InputError(f"mode: expected 'w' or 'wb', got {mode!r}")
    with atomic_path(target) as tmp, (
        open(tmp, "w", encoding=encoding, newline=newline) if mode == "w" else open(tmp, "wb")
    ) as fh:
        yield fh
        fh.flush()
        if fsync:
            os.fsync(fh.fileno())


def json_safe(obj: Any, *, nonfinite: Nonfinite = "text") -> Any:
    """``obj`` in plain JSON types: numpy scalars/arrays become Python numbers/lists, tuples
    become lists, dict keys become strings.

    Parameters
    ----------
    obj : any
    nonfinite : {"text", "null", "keep"}
        What NaN and +-inf become: ``"text"`` (default): NaN -> ``None``, +-inf -> ``"inf"`` /
        ``"-inf"`` (scenario files read these back); ``"null"``: both -> ``None`` (standard JSON
        of numeric tables); ``"keep"``: floats unchanged (Python's :mod:`json` writes and reads
        ``NaN`` / ``Infinity``, as in JSON-lines files meant for Python).

    Returns
    -------
    The converted copy (``obj`` is not changed).
    """
    if nonfinite not in NONFINITE:
        raise InputError(f"nonfinite: expected one of {NONFINITE}, got {nonfinite!r}")
    return _convert(obj, nonfinite)


def _convert(obj: Any, nonfinite: str) -> Any:
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):  # numpy scalar or array
        obj = obj.tolist()
    if isinstance(obj, dict):
        return {str(k): _convert(v, nonfinite) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_convert(v, nonfinite) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj) and nonfinite != "keep":
        if nonfinite == "text" and math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return None
    return obj


def write_json(target: str | Path, data: Any, *, nonfinite: Literal["text", "null"] = "text", indent: int = 2,
               fsync: bool = False) -> Path:
    """Write ``data`` atomically as indented standard JSON (see :func:`json_safe`); returns ``target``."""
    if nonfinite not in ("text", "null"):
        raise InputError(f"nonfinite: expected 'text' or 'null' (standard JSON), got {nonfinite!r}")
    target = Path(target)
    with atomic_open(target, fsync=fsync) as fh:
        fh.write(json.dumps(json_safe(data, nonfinite=nonfinite), indent=indent, allow_nan=False) + "\n")
    return target
