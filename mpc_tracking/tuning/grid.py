"""Sweep grids: expansion into points, stable run keys, and the check of the swept keys."""
from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mpc_tracking.errors import InputError, MPCTrackingError, ScenarioError

__all__ = ["expand_grid", "point_key", "check_keys", "plain"]


def plain(value: Any) -> Any:
    """Python scalars/lists for numpy values (stable JSON for the run key)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    return value


def _values(key: str, values: Any) -> list:
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        return [plain(values)]
    out = [plain(v) for v in values]
    if not out:
        raise InputError(f"grid[{key!r}]: empty list of values; give at least one")
    return out


def expand_grid(grid: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """The sweep points of ``grid`` and the parameter names they set.

    Parameters
    ----------
    grid : mapping or sequence of mappings
        ``{"controller.horizon": [10, 20], "controller.ds": [0.5, 1.0]}`` -> the cartesian product
        (first key varies slowest; a scalar is one value), or an explicit list of override dicts.

    Returns
    -------
    (params, points) : list of str, list of dict

    Examples
    --------
    >>> params, points = expand_grid({"controller.horizon": [10, 20], "controller.v_max": 8.0})
    >>> params
    ['controller.horizon', 'controller.v_max']
    >>> points
    [{'controller.horizon': 10, 'controller.v_max': 8.0}, {'controller.horizon': 20, 'controller.v_max': 8.0}]
    """
    if isinstance(grid, Mapping):
        if not grid:
            raise InputError("grid: empty; give at least one key with values, e.g. {'controller.horizon': [10, 20]}")
        keys = [_check_key(k) for k in grid]
        lists = [_values(k, grid[k]) for k in keys]
        return keys, [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*lists)]
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Iterable):
        raise InputError(f"grid: expected a mapping of dotted keys to lists or a list of override dicts, got {grid!r}")
    points: list[dict[str, Any]] = []
    seen: dict[str, None] = {}  # insertion-ordered set of the keys of all points
    for i, ov in enumerate(grid):
        if not isinstance(ov, Mapping):
            raise InputError(f"grid[{i}]: expected a mapping of dotted keys to values, got {ov!r}")
        points.append({_check_key(k): plain(v) for k, v in ov.items()})
        seen.update(dict.fromkeys(points[-1]))
    if not points:
        raise InputError("grid: empty list of override dicts; give at least one point")
    return list(seen), points


def _check_key(key: Any) -> str:
    if not isinstance(key, str) or not key or any(not part for part in key.split(".")):
        raise InputError(f"grid: expected dotted keys like 'controller.horizon', got {key!r}")
    return key


def point_key(overrides: Mapping[str, Any], repeat: int = 0) -> str:
    """Stable identifier of one run (hash of its overrides and repeat number); used by ``resume``."""
    text = json.dumps({"overrides": {k: plain(v) for k, v in overrides.items()}, "repeat": int(repeat)},
                      sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _flat_keys(data: Mapping[str, Any], prefix: str = "") -> set[str]:
    out = set()
    for k, v in data.items():
        out.add(prefix + str(k))
        if isinstance(v, Mapping):
            out |= _flat_keys(v, f"{prefix}{k}.")
    return out


def check_keys(scenario: Any, params: list[str], points: list[dict]) -> None:
    """Unknown keys are bad input (named, nearest suggested by the scenario); values are checked per run."""
    known = _flat_keys(scenario.to_dict())
    for key in params:
        if key in known:
            continue
        probe = next(p[key] for p in points if key in p)
        try:  # keys below a free-form mapping (plant.params.x) are valid; others raise with a suggestion
            scenario.with_overrides({key: probe})
        except MPCTrackingError as exc:
            msg = str(exc)
            if msg.startswith("override"):
                msg = msg.split(": ", 1)[-1]
            raise ScenarioError(f"grid key {key!r}: {msg}") from None
