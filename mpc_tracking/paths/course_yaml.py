"""YAML corner-point courses: corner points, rounding, widths and obstacles.

Example::

    name: rc_course
    closed: true
    ds: 0.05              # waypoint spacing [m]
    radius: 0.15          # corner radius [m] (scalar or one per point)
    blend: 0.5            # clothoid share of each corner's turning
    smoothing: 0.0        # optional extra smoothing [m RMS]
    width: 0.35           # or width_left / width_right (scalar or one per point) [m]
    points: [[0, 0], [2, 0], [2, 1], [0, 1]]
    obstacles:
      - {type: circle, center: [1.0, 0.05], radius: 0.08}
      - {type: polygon, vertices: [[1.5, 0.9], [1.7, 0.9], [1.7, 1.1]]}
      - {type: moving_circle, center: [0, 0.5], radius: 0.1, velocity: [0.2, 0], t0: 0}

Unknown keys are errors naming the key, the nearest valid key and the file. The obstacles are
carried by the returned path as ``path.obstacles`` (use them with
:class:`mpc_tracking.environment.ObstacleCorridor`).
"""
from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import numpy as np

from mpc_tracking.environment.obstacles import CircleObstacle, MovingCircle, PolygonObstacle
from mpc_tracking.errors import InputError, PathFormatError
from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["read_course", "COURSE_KEYS", "OBSTACLE_KEYS"]

COURSE_KEYS = ("name", "description", "closed", "ds", "radius", "blend", "smoothing", "width",
               "width_left", "width_right", "points", "obstacles")
OBSTACLE_KEYS = {
    "circle": ("type", "center", "radius"),
    "polygon": ("type", "vertices", "points"),  # "points" as in scenario files
    "moving_circle": ("type", "center", "radius", "velocity", "t0"),
}


def _unknown(key: str, valid, where: str) -> PathFormatError:
    near = difflib.get_close_matches(str(key), list(valid), n=1, cutoff=0.0)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    return PathFormatError(f"{where}: unknown key {key!r}{hint} (valid keys: {', '.join(valid)})")


def _obstacle(spec: Any, where: str):
    if not isinstance(spec, dict):
        raise PathFormatError(f"{where}: expected a mapping with a 'type', got {spec!r}")
    kind = spec.get("type")
    if kind not in OBSTACLE_KEYS:
        near = difflib.get_close_matches(str(kind), list(OBSTACLE_KEYS), n=1, cutoff=0.0)
        raise PathFormatError(f"{where}: unknown obstacle type {kind!r}; did you mean {near[0]!r}? "
                              f"(valid: {', '.join(OBSTACLE_KEYS)})")
    for key in spec:
        if key not in OBSTACLE_KEYS[kind]:
            raise _unknown(key, OBSTACLE_KEYS[kind], where)
    try:
        if kind == "circle":
            return CircleObstacle(spec["center"], spec["radius"])
        if kind == "polygon":
            if ("vertices" in spec) == ("points" in spec):
                raise PathFormatError(f"{where}: a polygon needs its corners under 'vertices' (or 'points'), "
                                      "exactly one of them")
            return PolygonObstacle(spec["vertices"] if "vertices" in spec else spec["points"])
        return MovingCircle(spec["center"], spec["radius"], spec["velocity"], spec.get("t0", 0.0))
    except KeyError as exc:
        raise PathFormatError(f"{where}: {kind} obstacle needs key {exc.args[0]!r}") from None
    except (InputError, TypeError, ValueError) as exc:
        raise PathFormatError(f"{where}: {exc}") from None


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _optional_bool(value: Any) -> bool | None:
    """A YAML ``closed:`` value: None (decided from the data) or a bool; anything else is an error."""
    if value is None or isinstance(value, bool):
        return value
    raise TypeError(f"closed: expected true or false, got {value!r}")


def read_course(filename: str | Path, *, ds: float | None = None) -> ReferencePath:
    """Read a YAML corner-point course (format above) into a :class:`ReferencePath`.

    Parameters
    ----------
    filename : path
    ds : float, optional
        Waypoint spacing [m]; default the file's ``ds``, else the default of every path
        (:func:`mpc_tracking.paths.defaults.default_ds`). ``closed`` missing from the file is
        decided from the points (:func:`mpc_tracking.paths.defaults.closure`, logged).
    """
    from mpc_tracking.fileio import read_yaml

    filename = Path(filename)
    if not filename.exists():  # pipes and devices: refused by fileio.read_yaml
        raise PathFormatError(f"{filename}: no such file")
    doc = read_yaml(filename, error=PathFormatError, what="course file").data
    if not isinstance(doc, dict):
        raise PathFormatError(f"{filename}: expected a mapping with 'points' (and optional {', '.join(COURSE_KEYS)})")
    for key in doc:
        if key not in COURSE_KEYS:
            raise _unknown(key, COURSE_KEYS, str(filename))
    if "points" not in doc:
        raise PathFormatError(f"{filename}: missing key 'points' (a list of [x, y] corner points in m)")
    try:
        pts = np.asarray(doc["points"], dtype=float)
    except (TypeError, ValueError):
        raise PathFormatError(f"{filename}: points: expected a list of [x, y] numbers") from None
    if "width" in doc and ("width_left" in doc or "width_right" in doc):
        raise PathFormatError(f"{filename}: give either 'width' or 'width_left'/'width_right', not both")
    wl = doc.get("width_left", doc.get("width"))
    wr = doc.get("width_right", doc.get("width"))
    obstacles = tuple(_obstacle(o, f"{filename}: obstacles[{i}]") for i, o in enumerate(doc.get("obstacles") or []))
    try:
        path = ReferencePath.from_corners(
            pts, ds=_optional_float(ds if ds is not None else doc.get("ds")), closed=_optional_bool(doc.get("closed")),
            radius=doc.get("radius"), blend=float(doc.get("blend", 0.5)), smoothing=doc.get("smoothing"),
            width_left=wl, width_right=wr, name=str(doc.get("name", filename.stem)),
        )
    except (InputError, TypeError, ValueError) as exc:
        raise PathFormatError(f"{filename}: {exc}") from None
    return path.with_obstacles(obstacles)
