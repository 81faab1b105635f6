"""Sweep grids: their size (counted, never expanded to count), the check of every swept value,
expansion into points, stable run keys.

A sweep sizes its work before doing any: :func:`grid_size` is the product of the axis lengths
(a grid of 10**12 points is counted in microseconds), and :func:`check_values` passes each
distinct value of each axis once through the scenario's own validation, so a bad value
(``controller.v_max=10,nan``) is refused before the first run starts.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence, Sized
from typing import Any

from mpc_tracking.errors import InputError, MPCTrackingError, ScenarioError

__all__ = ["expand_grid", "grid_size", "check_values", "point_key", "check_keys", "plain"]


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


def grid_size(grid: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> int:
    """The number of points of ``grid`` (see :func:`expand_grid`), counted without expanding it.

    Examples
    --------
    >>> grid_size({f"k{i}": list(range(10)) for i in range(12)})
    1000000000000
    >>> grid_size([{"controller.horizon": 10}, {"controller.horizon": 20}])
    2
    """
    if isinstance(grid, Mapping):
        if not grid:
            raise InputError("grid: empty; give at least one key with values, e.g. {'controller.horizon': [10, 20]}")
        return math.prod(len(_values(_check_key(k), v)) for k, v in grid.items())
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Sized):
        raise InputError(f"grid: expected a mapping of dotted keys to lists or a list of override dicts, got {grid!r}")
    return len(grid)


def _distinct_values(grid: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> dict[str, list]:
    """Each swept key and its distinct values, in order of appearance."""
    axes: dict[str, list] = {}
    items = ((k, v) for k in grid for v in _values(_check_key(k), grid[k])) if isinstance(grid, Mapping) else (
        (_check_key(k), plain(v)) for i, ov in enumerate(grid) for k, v in _point_items(i, ov))
    for key, value in items:
        seen = axes.setdefault(key, [])
        if not any(_same(value, old) for old in seen):
            seen.append(value)
    return axes


def _point_items(i: int, ov: Any) -> Iterable[tuple[Any, Any]]:
    if not isinstance(ov, Mapping):
        raise InputError(f"grid[{i}]: expected a mapping of dotted keys to values, got {ov!r}")
    return ov.items()


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same type (1 and 1.0 and True are checked apart; NaN equals NaN)."""
    return type(a) is type(b) and json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True,
                                                                                            default=str)


def check_values(scenario: Any, grid: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> int:
    """Check every distinct value of every swept key against the scenario's validation, before any run.

    Each value is applied alone to ``scenario`` (:meth:`Scenario.with_overrides`, the validation
    a scenario file gets), once: the cost is the sum of the axis lengths, not their product.
    Problems that only a combination of values shows (``v_min`` above ``v_max``), or only
    building the controller finds, still fail their runs one by one.

    Returns
    -------
    int
        The number of values checked.

    Raises
    ------
    ScenarioError
        ``grid key 'controller.v_max' = nan: ...`` for the first bad value (an unknown key: the
        nearest valid one suggested).
    """
    n = 0
    for key, values in _distinct_values(grid).items():
        for value in values:
            n += 1
            try:
                scenario.with_overrides({key: value})
            except MPCTrackingError as exc:
                msg = str(exc)
                if msg.startswith("override"):
                    msg = msg.split(": ", 1)[-1]
                shown = f"grid key {key!r}" if len(values) == 1 else f"grid key {key!r} = {value!r}"
                raise ScenarioError(f"{shown}: {msg}") from None
    return n


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
