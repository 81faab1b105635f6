"""The check of a settings value, one per field kind (:data:`~mpc_tracking.mpc.settings.fields.KINDS`),
and the weight matrices; every failure is a :class:`~mpc_tracking.errors.SettingsError` naming the field."""
from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc.settings.fields import Bounds

__all__ = ["CHECKS", "weight_matrix"]


def _with_unit(meta: Mapping[str, Any]) -> str:
    return "" if meta["unit"] == "-" else f" {meta['unit']}"


def _check_range(label: str, v: Any, meta: Mapping[str, Any], noun: str) -> None:
    b: Bounds = meta["bounds"]
    low = b.lower_problem(float(v))
    if low is not None:
        raise SettingsError(f"{label}: expected {noun} {low}{_with_unit(meta)}, got {v!r}")
    high = b.upper_problem(float(v))
    if high is not None:
        raise SettingsError(f"{label}: expected {high}{_with_unit(meta)}, got {v!r}")


def _check_int(label: str, v: Any, meta: Mapping[str, Any]) -> None:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        raise SettingsError(f"{label}: expected an integer {meta['bounds'].text()}, got {v!r}")
    _check_range(label, v, meta, "an integer")


def _check_float(label: str, v: Any, meta: Mapping[str, Any]) -> None:
    b: Bounds = meta["bounds"]
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.floating, np.integer)):
        raise SettingsError(f"{label}: expected a number, got {v!r}")
    noun = "number" if b.allow_inf else "finite number"
    if math.isnan(v) or (math.isinf(v) and not b.allow_inf):
        raise SettingsError(f"{label}: expected a {noun} {b.text()}{_with_unit(meta)}, got {v!r}")
    _check_range(label, v, meta, f"a {noun}")


def _check_optional_float(label: str, v: Any, meta: Mapping[str, Any]) -> None:
    if v is not None:
        _check_float(label, v, meta)


def _check_bool(label: str, v: Any, meta: Mapping[str, Any]) -> None:
    if not isinstance(v, (bool, np.bool_)):
        raise SettingsError(f"{label}: expected True or False, got {v!r}")


def _check_str(label: str, v: Any, meta: Mapping[str, Any]) -> None:
    choices = meta["choices"]() if callable(meta["choices"]) else meta["choices"]
    if isinstance(v, str) and (choices is None or v in choices):
        return
    near = difflib.get_close_matches(v, choices, n=1) if isinstance(v, str) else []
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise SettingsError(f"{label}: expected one of {choices}, got {v!r}{hint}")


def _check_weights(label: str, v: Any, meta: Mapping[str, Any]) -> None:
    """A number, a vector or a matrix of finite numbers (the group checks sizes and definiteness)."""
    try:
        w = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        raise SettingsError(f"{label}: expected weights (numbers, or a matrix), got {v!r}") from None
    if w.ndim > 2 or not np.all(np.isfinite(w)):
        raise SettingsError(f"{label}: expected finite weights (numbers, or a matrix), got {v!r}")


CHECKS: dict[str, Callable[[str, Any, Mapping[str, Any]], None]] = {
    "int": _check_int, "float": _check_float, "float?": _check_optional_float, "bool": _check_bool,
    "str": _check_str, "weights": _check_weights,
}


def weight_matrix(value: Any, n: int, name: str) -> np.ndarray:
    """Weights as a symmetric positive semi-definite matrix.

    Parameters
    ----------
    value : float, sequence of float or array_like, shape (n, n)
        One weight for all, ``n`` diagonal weights, or the matrix.
    n : int
        Size of the matrix.
    name : str
        The setting's name in messages (``"CostSettings.R"``).

    Returns
    -------
    ndarray, shape (n, n)

    Raises
    ------
    SettingsError
        Wrong size, not finite, not symmetric or not positive semi-definite.
    """
    try:
        w = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise SettingsError(f"{name}: expected {n} weights or a {n}x{n} matrix, got {value!r}") from None
    if w.ndim == 0:
        w = np.full(n, float(w))
    if w.shape == (n,):
        w = np.diag(w)
    if w.shape != (n, n):
        raise SettingsError(f"{name}: expected {n} weights or a {n}x{n} matrix, got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise SettingsError(f"{name}: weights must be finite")
    if not np.allclose(w, w.T, atol=1e-12):
        raise SettingsError(f"{name}: weight matrix must be symmetric")
    ev = np.linalg.eigvalsh(w)
    if ev.min() < -1e-10 * max(1.0, abs(ev).max()):
        raise SettingsError(
            f"{name}: weights must be positive semi-definite (smallest eigenvalue {ev.min():.3g}); "
            "diagonal weights must be >= 0"
        )
    return w

