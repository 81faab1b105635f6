"""The result file format: one closed-loop run in a compressed ``.npz``, written and read back checked.

:meth:`SimulationResult.save <mpc_tracking.results.SimulationResult.save>` and
:meth:`~mpc_tracking.results.SimulationResult.load` are thin wrappers of :func:`write_result` and
:func:`read_result`. The archive holds

``series_<name>``, shape (K,)
    one array per time series (:data:`mpc_tracking.results.SERIES`);
``horizon_xy``, shape (K, N+1, 2)
    the predicted positions [m] of every step;
``path_s, path_x, path_y, path_psi, path_kappa, path_wl, path_wr``, shape (M,)
    the reference path, when the run carries one (infinite widths stay infinite);
``meta``, a 0-d text array
    JSON: ``reason``, ``message``, ``laps_completed``, ``lap_times``, ``info``, and ``path``
    (name, closed, length) and ``vehicle`` (the :class:`VehicleParams` fields) when present.

Every defect :func:`read_result` finds raises one :class:`~mpc_tracking.errors.InputError` line
naming the file and the key.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError

__all__ = ["write_result", "read_result", "defect", "PATH_KEYS", "WHAT"]

#: what a result file is, in the error messages
WHAT = "simulation result written by SimulationResult.save"
#: the arrays of the reference path, all present or none
PATH_KEYS = ("path_s", "path_x", "path_y", "path_psi", "path_kappa", "path_wl", "path_wr")
#: the metadata keys and their JSON types (``message`` may be absent: files of before it)
_META_TYPES: tuple[tuple[str, type], ...] = (
    ("reason", str), ("laps_completed", int), ("lap_times", list), ("info", dict), ("message", str),
)
_OPTIONAL_META = frozenset({"message"})
#: a finite stand-in for an infinite track width when the path is rebuilt [m]
_NO_WIDTH = 1e9


class _Defect:
    """Builds the one-line error of a defect in the result file ``filename``."""

    def __init__(self, filename: Path) -> None:
        self.filename = filename

    def __call__(self, key: str, problem: str) -> InputError:
        return InputError(f"{self.filename}: {key}: {problem} (not a {WHAT})")

    def wrap(self, key: str, exc: Exception) -> InputError:
        """The error of a constructor that refused the stored values, its text on one line."""
        return self(key, " ".join(str(exc).split()))


# ---------------------------------------------------------------------- writing
def _path_arrays(path: Any) -> dict[str, np.ndarray]:
    """The path's waypoint arrays under their keys of :data:`PATH_KEYS`."""
    values = (path.s, path.x, path.y, path.psi, path.kappa, path.width_left, path.width_right)
    return dict(zip(PATH_KEYS, values, strict=True))


def write_result(
    filename: str | Path,
    *,
    series: Mapping[str, np.ndarray],
    horizon_xy: np.ndarray,
    meta: Mapping[str, Any],
    path: Any = None,
    vehicle: Any = None,
) -> Path:
    """Write one run to a compressed ``.npz`` (the layout in the module docstring).

    Parameters
    ----------
    filename : str or Path
    series : mapping of str -> ndarray, shape (K,)
    horizon_xy : ndarray, shape (K, N+1, 2)
    meta : mapping
        ``reason``, ``message``, ``laps_completed``, ``lap_times``, ``info`` (JSON-serializable;
        other values are written as their text).
    path : ReferencePath, optional
    vehicle : VehicleParams, optional

    Returns
    -------
    Path
        ``filename``.
    """
    filename = Path(filename)
    meta = dict(meta)
    # values typed Any: numpy 2.x stubs let ``**kwds`` of savez_compressed bind its ``allow_pickle: bool``,
    # so a dict of arrays is rejected although no key here is ``allow_pickle``
    arrays: dict[str, Any] = {f"series_{k}": v for k, v in series.items()}
    if path is not None:
        arrays.update(_path_arrays(path))
        meta["path"] = {"name": path.name, "closed": path.closed, "length": path.length}
    if vehicle is not None:
        meta["vehicle"] = asdict(vehicle)
    np.savez_compressed(filename, horizon_xy=horizon_xy, meta=json.dumps(meta, default=str), **arrays)
    return filename


# ---------------------------------------------------------------------- reading: metadata
def _read_meta(z: Mapping[str, np.ndarray], bad: _Defect) -> dict[str, Any]:
    """The JSON object stored as ``meta``."""
    if "meta" not in z:
        raise bad("meta", "missing")
    try:
        meta = json.loads(str(z["meta"][()]) if z["meta"].ndim == 0 else "")
    except ValueError:
        raise bad("meta", "not the JSON text of the run's outcome") from None
    if not isinstance(meta, dict):
        raise bad("meta", f"expected a JSON object, got {type(meta).__name__}")
    return meta


def _check_meta_types(meta: Mapping[str, Any], bad: _Defect) -> None:
    """Every key of :data:`_META_TYPES` present (but the optional ones) with its JSON type."""
    for key, expected in _META_TYPES:
        if key not in meta:
            if key in _OPTIONAL_META:
                continue
            raise bad(f"meta.{key}", "missing")
        value = meta[key]
        if not isinstance(value, expected) or isinstance(value, bool):
            raise bad(f"meta.{key}", f"expected {expected.__name__}, got {type(value).__name__}")
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) for t in meta["lap_times"]):
        raise bad("meta.lap_times", "expected a list of numbers")


def _is_positive_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and bool(np.isfinite(value) and value > 0)


def _check_info(info: Mapping[str, Any], bad: _Defect) -> None:
    """The parts of ``meta.info`` that readers use: the control period, the obstacles, the scenario."""
    period = info.get("control_period")
    if period is not None and not _is_positive_number(period):
        raise bad("meta.info.control_period", f"expected a period > 0 s, got {period!r}")
    for key, expected, name in (("obstacles", list, "a list"), ("scenario", dict, "a mapping")):
        if info.get(key) is not None and not isinstance(info[key], expected):
            raise bad(f"meta.info.{key}", f"expected {name}, got {type(info[key]).__name__}")
    if not all(isinstance(o, dict) for o in info.get("obstacles") or []):
        raise bad("meta.info.obstacles", "expected a list of obstacle mappings")


# ---------------------------------------------------------------------- reading: arrays
def _numeric(z: Mapping[str, np.ndarray], key: str, ndim: int, bad: _Defect) -> np.ndarray:
    """The array ``key``: numbers (or booleans) of ``ndim`` dimensions."""
    a = z[key]
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise bad(key, f"expected numbers, got dtype {a.dtype}")
    if a.ndim != ndim:
        raise bad(key, f"expected a {ndim}-D array, got shape {a.shape}")
    return a


def _read_series(z: Mapping[str, np.ndarray], names: Iterable[str], bad: _Defect) -> dict[str, np.ndarray]:
    """All ``series_*`` arrays: every one of ``names`` present, all 1-D numbers of one length."""
    names = list(names)
    missing = [k for k in names if f"series_{k}" not in z]
    if missing:
        more = f" (and {len(missing) - 1} more of the {len(names)} series)" if len(missing) > 1 else ""
        raise bad(f"series_{missing[0]}", f"missing{more}")
    series = {k.removeprefix("series_"): _numeric(z, k, 1, bad) for k in z if k.startswith("series_")}
    n = series["t"].size
    for k, a in series.items():
        if a.size != n:
            raise bad(f"series_{k}", f"{a.size} samples, but series_t has {n}")
    return series


def _read_horizon(z: Mapping[str, np.ndarray], n: int, bad: _Defect) -> np.ndarray:
    """``horizon_xy`` of shape ``(n, N+1, 2)``."""
    if "horizon_xy" not in z:
        raise bad("horizon_xy", "missing")
    horizon = _numeric(z, "horizon_xy", 3, bad)
    if horizon.shape[0] != n or horizon.shape[2] != 2:
        raise bad("horizon_xy", f"expected shape ({n}, N+1, 2) for {n} steps, got {horizon.shape}")
    return horizon


def _read_path_arrays(z: Mapping[str, np.ndarray], bad: _Defect) -> dict[str, np.ndarray]:
    """The arrays of :data:`PATH_KEYS`: all present, 1-D numbers of one length."""
    absent = [k for k in PATH_KEYS if k not in z]
    if absent:
        raise bad(absent[0], "missing (the other path arrays are there)")
    arrays = {k: _numeric(z, k, 1, bad) for k in PATH_KEYS}
    m = arrays["path_s"].size
    for k, a in arrays.items():
        if a.size != m:
            raise bad(k, f"{a.size} waypoints, but path_s has {m}")
    return arrays


def _read_path(z: Mapping[str, np.ndarray], meta: Mapping[str, Any], bad: _Defect) -> Any:
    """The stored :class:`~mpc_tracking.paths.ReferencePath`, or None when the file has none."""
    if not any(k in z for k in PATH_KEYS):
        return None
    arrays = _read_path_arrays(z, bad)
    pm = meta.get("path")
    if not isinstance(pm, dict) or not all(k in pm for k in ("closed", "length", "name")):
        raise bad("meta.path", "expected the path's name, closed and length")
    from mpc_tracking.paths.reference_path import ReferencePath

    try:
        return ReferencePath.from_waypoints(
            arrays["path_s"], arrays["path_x"], arrays["path_y"], arrays["path_psi"], arrays["path_kappa"],
            width_left=np.where(np.isfinite(arrays["path_wl"]), arrays["path_wl"], _NO_WIDTH),
            width_right=np.where(np.isfinite(arrays["path_wr"]), arrays["path_wr"], _NO_WIDTH),
            closed=pm["closed"], length=pm["length"], name=pm["name"],
        )
    except (InputError, TypeError, ValueError) as exc:
        raise bad.wrap("path", exc) from None


def _read_vehicle(meta: Mapping[str, Any], bad: _Defect) -> Any:
    """The stored :class:`~mpc_tracking.models.prediction.spatial_bicycle.VehicleParams`, or None."""
    if "vehicle" not in meta:
        return None
    if not isinstance(meta["vehicle"], dict):
        raise bad("meta.vehicle", f"expected a mapping, got {type(meta['vehicle']).__name__}")
    from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams

    try:
        return VehicleParams(**meta["vehicle"])
    except (InputError, TypeError, ValueError) as exc:
        raise bad.wrap("meta.vehicle", exc) from None


def read_result(filename: str | Path, series_names: Iterable[str]) -> dict[str, Any]:
    """Read a file written by :func:`write_result`, checked against what it writes.

    Parameters
    ----------
    filename : str or Path
    series_names : iterable of str
        The time series every file must hold (:data:`mpc_tracking.results.SERIES`).

    Returns
    -------
    dict
        The keyword arguments of :class:`~mpc_tracking.results.SimulationResult`: ``series``,
        ``horizon_xy``, ``reason``, ``laps_completed``, ``lap_times``, ``info``, ``path``,
        ``vehicle``, ``message``.

    Raises
    ------
    InputError
        One line naming the file and the key: not a result file, a missing array or metadata
        key, a wrong dtype (text or objects where numbers belong), series of different lengths,
        predicted horizons that do not match them, an inconsistent path or vehicle; also a file
        beyond the limits of :func:`mpc_tracking.fileio.read_npz`.
    """
    from mpc_tracking.fileio import read_npz

    filename = Path(filename)
    if not filename.exists():  # pipes and devices: refused by fileio.read_npz
        raise InputError(f"{filename}: no such result file")
    bad = _Defect(filename)
    z = read_npz(filename, what="simulation result file")
    meta = _read_meta(z, bad)
    _check_meta_types(meta, bad)
    _check_info(meta["info"], bad)
    series = _read_series(z, series_names, bad)
    horizon = _read_horizon(z, series["t"].size, bad)
    return {
        "series": series, "horizon_xy": horizon, "reason": meta["reason"],
        "laps_completed": meta["laps_completed"], "lap_times": meta["lap_times"], "info": meta["info"],
        "path": _read_path(z, meta, bad), "vehicle": _read_vehicle(meta, bad), "message": meta.get("message", ""),
    }


def defect(filename: str | Path, key: str, exc: Exception) -> InputError:
    """The error naming ``filename`` and ``key`` for a value the result's constructor refused."""
    return _Defect(Path(filename)).wrap(key, exc)
