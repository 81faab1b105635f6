"""The schema of scenario files: a tree of dataclasses and a validator that reports file and line.

Each section of a scenario is a dataclass whose fields carry a *kind* (what type is expected) in
their metadata. :func:`validate` turns a plain mapping (from YAML or a dict) into the dataclass
tree; an unknown key names the key, the file and line, and suggests the nearest valid key; a
value of the wrong type says what was expected. A section may take groups of its keys as nested
mappings (:data:`SECTION_GROUPS`: the controller's settings groups, ``limits: {v_max: 12}``); they
are stored flat. The controller's keys, kinds and descriptions are read from the declarations of
the settings (:func:`mpc_tracking.mpc.settings.settings_fields`). Line numbers come from :func:`compose_marks`,
which walks the YAML node tree (``yaml.compose``) and records the line of every key.
"""
from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, is_dataclass, make_dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import yaml

from mpc_tracking.errors import ScenarioError
from mpc_tracking.fileio import parse_yaml
from mpc_tracking.mpc.settings import SETTINGS_GROUPS, MPCSettings, field_choices, settings_fields
from mpc_tracking.paths.bundled import DEFAULT_PATH
from mpc_tracking.paths.defaults import DEFAULT_DS, DEFAULT_MIN_WAYPOINTS

__all__ = [
    "PathConfig", "SpeedProfileConfig", "ObstacleConfig", "GridConfig", "EnvironmentConfig", "VehicleConfig",
    "PlantConfig", "ActuationConfig", "ControllerConfig", "SimulationConfig", "AnimationConfig",
    "OutputsConfig", "ScenarioBase", "validate", "compose_marks", "Location", "PLOT_KINDS", "PATH_FORMATS",
    "scenario_keys", "SECTION_GROUPS", "canonical_key", "mpc_settings", "BASELINE_KEYS",
]

#: path file formats (``read_<format>`` in :mod:`mpc_tracking.paths.io`)
PATH_FORMATS = ("auto", "tum", "raceline", "xy", "waypoints", "yaml")
#: plots a scenario may ask for
PLOT_KINDS = ("track", "timeseries", "path")
_EXPECT = {
    "float": "a number", "float?": "a number or null", "int": "an integer", "int?": "an integer or null",
    "bool": "true or false", "bool?": "true, false or null", "str": "a string", "str?": "a string or null",
    "dict": "a mapping",
    "points?": "a list of [x, y] pairs or null", "point?": "an [x, y] pair or null",
    "weights": "a number, a list of numbers or a matrix (list of lists)",
    "strlist": "a list of strings", "obstacles": "a list of obstacle mappings",
}


def _f(default: Any, kind: str, doc: str = "", choices: tuple | None = None, *, gt: float | None = None,
       ge: float | None = None, le: float | None = None) -> Any:
    """A schema field: default, expected kind, description (shown by ``--help``-like listings) and,
    for numbers, bounds (``gt``: greater than, ``ge``: at least, ``le``: at most) checked on load
    so that the file and line are named (the objects built from the values check them again).

    Returns the :func:`dataclasses.field` (typed ``Any``, as it stands in for the field's value);
    a list or dict default is copied for every instance.
    """
    meta = {"kind": kind, "doc": doc, "choices": choices, "bounds": (gt, ge, le)}
    if isinstance(default, (list, dict)):
        template: list | dict = default

        def copy_default() -> list | dict:
            return type(template)(template)

        return field(default_factory=copy_default, metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class PathConfig:
    """Where the reference path comes from."""

    source: str | None = _f(None, "str?", "bundled path name or path file (default: the bundled "
                            f"{DEFAULT_PATH!r} when path.corners is not given either)")
    format: str = _f("auto", "str", "file format (auto = detected from the content)", PATH_FORMATS)
    corners: list | None = _f(None, "points?", "corner points [[x, y], ...] instead of a source [m]")
    corner_radius: float | None = _f(None, "float?", "radius of the rounded corners of path.corners or of "
                                     "a corner-polygon x/y file [m] (default: a quarter of the median edge, at "
                                     "least twice the vehicle's minimum turning radius, reduced where it does "
                                     "not fit)", gt=0)
    closed: bool | None = _f(None, "bool?", "closed loop (default: a file's own, else decided from the data: "
                             "a loop only when the end meets the start and the closing segment turns like "
                             "the path; logged)")
    # > 0: checked by the path (one message)
    ds: float | None = _f(None, "float?", f"waypoint spacing [m] (default {DEFAULT_DS:g}, finer on paths "
                          f"shorter than {DEFAULT_DS * DEFAULT_MIN_WAYPOINTS:g} m)")
    smoothing: float | None = _f(None, "float?", "RMS deviation the smoothing spline may take [m] (default: "
                                 "x/y tables measure their noise)")
    width_left: float | None = _f(None, "float?", "override left corridor width [m]")
    width_right: float | None = _f(None, "float?", "override right corridor width [m]")
    name: str | None = _f(None, "str?", "name shown in plots")


def _check_path_section(pc: PathConfig, loc: Location, prefix: str) -> None:
    """``path.source`` and ``path.corners`` exclude each other (neither silently wins)."""
    if pc.corners is not None and pc.source is not None:
        raise _fail(loc, f"{prefix}corners", f"given together with {prefix}source = {pc.source!r} "
                    f"({loc.at(prefix + 'source')}); give one of them: {prefix}source (a path file or bundled "
                    f"name) or {prefix}corners (corner points), and set the other to null")


@dataclass
class SpeedProfileConfig:
    """Forward-backward speed profile along the path (off: the MPC limits speed by a_y itself)."""

    enabled: bool = _f(False, "bool", "compute v_ref(s) before the run")
    v_max: float | None = _f(None, "float?", "top speed [m/s] (default controller.v_max)")
    a_y_max: float | None = _f(None, "float?", "lateral acceleration [m/s^2] (default controller.a_y_max)")
    accel_max: float | None = _f(None, "float?", "acceleration [m/s^2] (default controller.accel_max)")
    decel_max: float | None = _f(None, "float?", "braking [m/s^2] (default controller.decel_max)")
    friction_ellipse: bool = _f(False, "bool", "combine a_x and a_y on a friction ellipse")


@dataclass
class ObstacleConfig:
    """One obstacle: a circle (centre + radius) or a polygon, optionally moving."""

    type: str = _f("circle", "str", "obstacle shape", ("circle", "polygon"))
    center: list | None = _f(None, "point?", "circle centre [x, y] [m]")
    radius: float | None = _f(None, "float?", "circle radius [m]", gt=0)
    points: list | None = _f(None, "points?", "polygon vertices [[x, y], ...] [m]")
    vertices: list | None = _f(None, "points?", "the same as points (the name path files use)")
    velocity: list | None = _f(None, "point?", "constant velocity [vx, vy] [m/s]")
    name: str | None = _f(None, "str?", "label")


@dataclass
class GridConfig:
    """Occupancy grid from an image (light pixels free); null image: no grid."""

    image: str | None = _f(None, "str?", "PNG file (relative to the scenario file)")
    origin: list = _f([0.0, 0.0], "point?", "world position of the lower-left pixel corner [x, y] [m]")
    resolution: float = _f(0.05, "float", "cell size [m]", gt=0)
    threshold: float = _f(0.5, "float", "grey level above which a pixel is free (0..1)", ge=0, le=1)
    outside_free: bool = _f(False, "bool", "treat space outside the image as free")


@dataclass
class EnvironmentConfig:
    """Obstacles and an occupancy grid that shape the corridor."""

    obstacles: list = _f([], "obstacles", "list of obstacles")
    grid: GridConfig = field(default_factory=GridConfig, metadata={"kind": "section"})


@dataclass
class VehicleConfig:
    """Controller geometry (VehicleParams); null fields take the preset's value."""

    preset: str = _f("car", "str", "base geometry", ("car", "rc_car"))
    wheelbase: float | None = _f(None, "float?", "rear to front axle [m]")
    length: float | None = _f(None, "float?", "body length [m]")
    width: float | None = _f(None, "float?", "body width [m]")
    rear_overhang: float | None = _f(None, "float?", "rear axle to rear bumper [m]")
    file: str | None = _f(None, "str?", "vehicle file from `mpc-tracking identify` (relative to the scenario file): "
                                        "the dynamic model's parameters, speed lag and the plant's limits")


@dataclass
class PlantConfig:
    """The simulated car: a registered motion model and its parameters."""

    name: str = _f("kinematic_bicycle", "str", "registered motion model (mpc-tracking models)")
    params: dict = _f({}, "dict", "model parameters (unset wheelbase/delta_max follow vehicle/controller)")


@dataclass
class ActuationConfig:
    """Maps MPC commands to the plant's inputs (null name: the plant's default actuator)."""

    name: str | None = _f(None, "str?", "registered actuator")
    params: dict = _f({}, "dict", "actuator parameters")


def _key_doc(group: str, f: Any) -> str:
    """The listing text of a controller key: its group, description and unit (from the field's declaration)."""
    unit, rng = f.metadata["unit"], f.metadata["bounds"].text()
    return f"[{group}] {f.metadata['doc']}" + ("" if unit == "-" else f" [{unit}]") + (f", {rng}" if rng else "")


def _controller_fields() -> list[tuple[str, Any, Any]]:
    """``(name, type, field)`` of every MPC setting (:func:`~mpc_tracking.mpc.settings.settings_fields`),
    for :func:`make_dataclass`: kind, choices and description come from the setting's declaration.

    The ranges are left to :class:`MPCSettings` (one message, mapped to the key's line by the scenario)."""
    out: list[tuple[str, Any, Any]] = []
    for group, f in settings_fields():
        default: Any = f.default
        if f.metadata["kind"] == "weights":
            default = list(default)
        out.append((f.name, Any, _f(default, f.metadata["kind"], _key_doc(group, f), field_choices(f))))
    return out


#: keys of the controller section that are not MPCSettings fields: the controller type and the baselines' gains
BASELINE_KEYS = ("type", "pure_pursuit", "stanley")


def _baseline_fields() -> list[tuple[str, Any, Any]]:
    """``controller.type`` and one section per baseline (``controller.pure_pursuit``, ``controller.stanley``),
    made from the fields of its parameter dataclass (defaults, and the docs and bounds in their metadata)."""
    from mpc_tracking.control import CONTROLLER_TYPES, PurePursuitParams, StanleyParams

    out: list[tuple[str, Any, Any]] = [
        ("type", Any, _f("mpc", "str", "the controller: the MPC or a geometric baseline (whose gains are in "
                         "controller.<type>; the limits are the MPC's fields)", CONTROLLER_TYPES))]
    for key, params in (("pure_pursuit", PurePursuitParams), ("stanley", StanleyParams)):
        section = make_dataclass(f"{params.__name__}Config", [
            (f.name, Any, _f(f.default, "float?" if f.default is None else "float", f.metadata.get("doc", ""),
                             gt=f.metadata.get("gt"), ge=f.metadata.get("ge")))
            for f in fields(params)])
        section.__doc__ = f"Gains of the {key} baseline (:class:`~mpc_tracking.control.{params.__name__}`)."
        out.append((key, Any, field(default_factory=section, metadata={"kind": "section"})))
    return out


if TYPE_CHECKING:

    @dataclass
    class ControllerConfig:
        """What type checkers see of the class made below: a dataclass whose fields (those of
        :class:`MPCSettings`, values as read from the file) are typed ``Any``."""

        def __getattr__(self, name: str) -> Any: ...

else:
    #: the MPC settings (one field per :class:`~mpc_tracking.mpc.settings.MPCSettings` field)
    ControllerConfig = make_dataclass("ControllerConfig", _controller_fields() + _baseline_fields())
    ControllerConfig.__doc__ = ("The controller: its type (controller.type), the MPC settings (the fields of "
                                "MPCSettings, same names and defaults, stored flat; a file may also group them: "
                                "limits: {v_max: 12}) and the baselines' gains.")

#: checks across the keys of a section, run after its keys were validated: section class -> check(section, loc, prefix)
_SECTION_CHECKS: dict[type, Callable[[Any, Location, str], None]] = {PathConfig: _check_path_section}

#: groups of keys a section also takes as nested mappings (``controller: {limits: {v_max: 12}}``),
#: stored flat: section class -> {group: key names}
SECTION_GROUPS: dict[type, dict[str, tuple[str, ...]]] = {
    ControllerConfig: {g: tuple(f.name for f in fields(cls)) for g, cls in SETTINGS_GROUPS.items()},
}


def mpc_settings(controller: Any, **changes: Any) -> MPCSettings:
    """The :class:`MPCSettings` of a scenario's ``controller`` section (its MPC fields; other keys ignored).

    Parameters
    ----------
    controller : ControllerConfig
        The validated section (flat fields).
    **changes
        Settings that replace the section's (``control_period=0.1``).

    Returns
    -------
    MPCSettings

    Raises
    ------
    SettingsError
        A value out of range (the message names ``MPCSettings.<field>``).
    """
    names = [f.name for _g, f in settings_fields()]
    return MPCSettings(**{**{name: getattr(controller, name) for name in names}, **changes})


def canonical_key(key: str) -> str:
    """A dotted scenario key with a settings group dropped: ``controller.limits.v_max`` -> ``controller.v_max``."""
    parts = key.split(".")
    kinds = {f.name: f.metadata.get("kind", "section") for f in fields(ScenarioBase)}
    if len(parts) < 3 or kinds.get(parts[0]) != "section":
        return key
    groups = SECTION_GROUPS.get(_section_type(ScenarioBase, parts[0]), {})
    if parts[1] in groups:  # a name not of the group is then reported (with a suggestion) by validation
        return ".".join([parts[0], *parts[2:]])
    return key


@dataclass
class SimulationConfig:
    """Closed-loop run (arguments of :func:`~mpc_tracking.simulation.simulate`)."""

    control_period: float | None = _f(None, "float?", "time between solves [s] (default controller.control_period)")
    sim_dt: float | None = _f(None, "float?", "plant step [s]")
    laps: int = _f(1, "int", "laps on a closed path", ge=1)
    t_max: float | None = _f(None, "float?", "time limit [s]")
    s0: float = _f(0.0, "float", "initial arc length [m]")
    e_y0: float = _f(0.0, "float", "initial lateral offset [m]")
    e_psi0: float = _f(0.0, "float", "initial heading error [rad]")
    v0: float | None = _f(None, "float?", "initial speed [m/s]")
    corridor_tolerance: float | None = _f(None, "float?", "distance beyond the edge that stops the run [m]")
    step_wall_limit: float | None = _f(None, "float?", "longest wall time of one loop step [s]; over it the run "
                                       "stops with step_wall_limit (a stalled plant)", gt=0)


@dataclass
class AnimationConfig:
    """Animation written after a run (null file: none)."""

    file: str | None = _f(None, "str?", "file name in the output folder (.gif or .mp4)")
    fps: int = _f(20, "int", "frames per second of the video", ge=1)
    speed: float = _f(1.0, "float", "playback speed (2 = twice real time)", gt=0)
    every: int | None = _f(None, "int?", "use every n-th control step (default from fps and speed)", ge=1)


@dataclass
class OutputsConfig:
    """What a run writes."""

    folder: str = _f("out/run", "str", "output folder")
    plots: list = _f(["track", "timeseries"], "strlist", "figures to write", PLOT_KINDS)
    animation: AnimationConfig = field(default_factory=AnimationConfig, metadata={"kind": "section"})
    mcap: str | None = _f(None, "str?", "MCAP file name in the output folder: the run for Foxglove (as run --mcap)")
    bag: str | None = _f(None, "str?", "ROS 2 bag folder name (sqlite3) in the output folder (as run --bag)")


def _section(cls: type) -> Any:
    """A field holding a nested section (a fresh ``cls()`` per instance)."""
    return field(default_factory=cls, metadata={"kind": "section"})


@dataclass
class ScenarioBase:
    """Fields of a scenario (see :class:`mpc_tracking.scenario.core.Scenario` for the methods)."""

    name: str = _f("scenario", "str", "name of the run")
    description: str = _f("", "str", "free text")
    path: PathConfig = _section(PathConfig)
    speed_profile: SpeedProfileConfig = _section(SpeedProfileConfig)
    environment: EnvironmentConfig = _section(EnvironmentConfig)
    vehicle: VehicleConfig = _section(VehicleConfig)
    plant: PlantConfig = _section(PlantConfig)
    actuation: ActuationConfig = _section(ActuationConfig)
    controller: ControllerConfig = _section(ControllerConfig)
    simulation: SimulationConfig = _section(SimulationConfig)
    outputs: OutputsConfig = _section(OutputsConfig)


def scenario_keys(cls: type = ScenarioBase, prefix: str = "") -> list[tuple[str, str, Any, str]]:
    """Every scenario key: ``(dotted key, expected type, default, description)``, in file order."""
    out = []
    for f in fields(cls):
        kind = f.metadata.get("kind", "section")
        if kind == "section":
            out += scenario_keys(_section_type(cls, f.name), f"{prefix}{f.name}.")
            continue
        if f.default is not MISSING:
            default = f.default
        elif f.default_factory is not MISSING:
            default = f.default_factory()
        else:  # pragma: no cover - schema bug
            raise ScenarioError(f"schema: {cls.__name__}.{f.name} has no default")
        doc = f.metadata.get("doc", "")
        if f.metadata.get("choices"):
            doc += f" (one of {', '.join(map(str, f.metadata['choices']))})"
        out.append((prefix + f.name, _EXPECT.get(kind, kind), default, doc))
        if kind == "obstacles":
            out += [(f"{prefix}{f.name}.N.{k}", e, d, doc_) for k, e, d, doc_ in scenario_keys(ObstacleConfig)]
    return out


# ---------------------------------------------------------------------- locations
class Location:
    """Where a key came from: the source name and a map of dotted keys to line numbers."""

    def __init__(self, source: str = "<dict>", marks: dict[str, int] | None = None) -> None:
        self.source = source
        self.marks = marks or {}

    def at(self, key: str) -> str:
        """``"file:line"`` of a dotted key (or of its nearest parent that has a line)."""
        parts = key.split(".")
        while parts:
            line = self.marks.get(".".join(parts))
            if line is not None:
                return f"{self.source}:{line}"
            parts.pop()
        return self.source


def compose_marks(source: Any) -> dict[str, int]:
    """Line number (1-based) of every key in a YAML document, by dotted key (list items by index).

    Parameters
    ----------
    source : str or yaml.Node or None
        YAML text (read with the bounded parser :func:`mpc_tracking.fileio.parse_yaml`) or the
        composed node tree of a :class:`~mpc_tracking.fileio.YamlDocument` (walked as is; its
        limits were checked when it was read).
    """
    marks: dict[str, int] = {}
    if isinstance(source, str):
        source = parse_yaml(source, error=ScenarioError).node
    stack: list[tuple[Any, str]] = [(source, "")] if source is not None else []
    while stack:  # iterative: no recursion limit to meet
        node, prefix = stack.pop()
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = f"{prefix}{k.value}"
                marks[key] = k.start_mark.line + 1
                stack.append((v, key + "."))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                marks[f"{prefix}{i}"] = v.start_mark.line + 1
                stack.append((v, f"{prefix}{i}."))
    return marks


# ---------------------------------------------------------------------- validation
def _fail(loc: Location, key: str, msg: str) -> ScenarioError:
    return ScenarioError(f"{loc.at(key)}: {key}: {msg}")


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and v.strip().lower() in ("inf", "+inf", ".inf", "-inf", "-.inf"):
        return -math.inf if v.strip().startswith("-") else math.inf
    return None


class _NotOfKind(Exception):
    """A value that is not of its key's kind (:func:`_check_value` names the key and what was expected)."""


def _as_float(v: Any) -> float:
    x = _number(v)
    if x is None or math.isnan(x):
        raise _NotOfKind
    return x


def _as_int(v: Any) -> int:
    if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, float) and v.is_integer())):
        raise _NotOfKind
    return int(v)


def _as_bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise _NotOfKind
    return v


def _as_str(v: Any) -> str:
    if not isinstance(v, str):
        raise _NotOfKind
    return v


def _as_dict(v: Any) -> dict:
    if not isinstance(v, dict):
        raise _NotOfKind
    return dict(v)


def _is_pair(p: Any) -> bool:
    return isinstance(p, (list, tuple)) and len(p) == 2 and all(_number(c) is not None for c in p)


def _as_points(v: Any) -> list[list[float]]:
    if not isinstance(v, (list, tuple)) or not v or not all(_is_pair(p) for p in v):
        raise _NotOfKind
    return [[float(c) for c in p] for p in v]


def _as_point(v: Any) -> list[float]:
    return _as_points([v])[0]


def _numbers(row: Any) -> list[float] | None:
    """``row`` as a list of numbers, or None when it is not a list of numbers."""
    if not isinstance(row, (list, tuple)):
        return None
    out = [_number(c) for c in row]
    return None if any(x is None for x in out) else out  # type: ignore[return-value]


def _as_weights(v: Any) -> float | list:
    """A number, a list of numbers or a matrix (list of lists of numbers)."""
    x = _number(v)
    if x is not None:
        return x
    vector = _numbers(v)
    if vector is not None:
        return vector
    rows = [_numbers(r) for r in v] if isinstance(v, (list, tuple)) else [None]
    if any(r is None for r in rows):
        raise _NotOfKind
    return rows


def _as_strlist(v: Any) -> list[str]:
    items = [v] if isinstance(v, str) else v
    if not isinstance(items, (list, tuple)) or not all(isinstance(c, str) for c in items):
        raise _NotOfKind
    return list(items)


#: the converter of each kind of value (``"float?"`` etc.: the same, null allowed)
_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "float": _as_float, "int": _as_int, "bool": _as_bool, "str": _as_str, "dict": _as_dict,
    "points": _as_points, "point": _as_point, "weights": _as_weights, "strlist": _as_strlist,
}


def _not_of_kind(kind: str, v: Any, key: str, loc: Location) -> ScenarioError:
    if isinstance(v, float) and math.isnan(v):
        return _fail(loc, key, f"expected {_EXPECT[kind]}, got NaN (not a number)")
    return _fail(loc, key, f"expected {_EXPECT[kind]}, got {v!r} ({type(v).__name__})")


def _check_bounds(out: float, bounds: tuple, integer: bool, v: Any, key: str, loc: Location) -> None:
    gt, ge, le = bounds
    if (gt is None or out > gt) and (ge is None or out >= ge) and (le is None or out <= le):
        return
    want = " and ".join(t for t in (f"> {gt:g}" if gt is not None else "", f">= {ge:g}" if ge is not None else "",
                                    f"<= {le:g}" if le is not None else "") if t)
    raise _fail(loc, key, f"expected {'an integer' if integer else 'a number'} {want}, got {v!r}")


def _check_choices(out: Any, choices: tuple, key: str, loc: Location) -> None:
    for item in out if isinstance(out, list) else [out]:
        if item not in choices:
            near = difflib.get_close_matches(str(item), [str(c) for c in choices], n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise _fail(loc, key, f"expected one of {list(choices)}, got {item!r}{hint}")


def _check_value(kind: str, v: Any, key: str, loc: Location, choices: tuple | None,
                 bounds: tuple | None = None) -> Any:
    """``v`` converted to its ``kind`` (:data:`_EXPECT`) and checked against ``bounds`` and ``choices``."""
    if v is None and kind.endswith("?"):
        return None
    base = kind.rstrip("?")
    if base not in _CONVERTERS:  # pragma: no cover - schema bug
        raise ScenarioError(f"schema: unknown kind {kind!r} for {key}")
    try:
        out = _CONVERTERS[base](v)
    except _NotOfKind:
        raise _not_of_kind(kind, v, key, loc) from None
    if bounds is not None and isinstance(out, (int, float)):
        _check_bounds(out, bounds, base == "int", v, key, loc)
    if choices is not None:
        _check_choices(out, choices, key, loc)
    return out


def _collect(errors: list | None, check: Callable[[], None]) -> None:
    """Run ``check``; its :class:`ScenarioError` is raised, or appended to ``errors`` when collecting."""
    try:
        check()
    except ScenarioError as exc:
        if errors is None:
            raise
        errors.append(exc)


def validate(cls: type, data: Any, loc: Location, prefix: str = "", errors: list | None = None) -> Any:
    """Build the dataclass ``cls`` from the mapping ``data``, checking keys and types.

    Parameters
    ----------
    cls : dataclass type
        The section (e.g. :class:`Scenario`).
    data : mapping or None
        Values; missing keys take the defaults. A section with groups (:data:`SECTION_GROUPS`)
        also takes each group as a nested mapping (``limits: {v_max: 12}``).
    loc : Location
        Source and line numbers for error messages.
    prefix : str
        Dotted key of this section (``"controller."``).
    errors : list, optional
        Collect every problem here (as :class:`ScenarioError`) instead of raising at the first;
        a key with a bad value then keeps its default.

    Raises
    ------
    ScenarioError
        Unknown key (with the nearest valid one), a value of the wrong type, a key given twice.
    """
    where = prefix.rstrip(".") or "scenario"
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise _fail(loc, where, f"expected a mapping of settings, got {data!r} ({type(data).__name__})")
    known = {f.name: f for f in fields(cls)}
    kw: dict[str, Any] = {}
    for dotted, key, value in _entries(cls, data, loc, prefix, errors):
        checked = partial(_validate_key, cls, known, key, value, loc, dotted, where, errors)
        _collect(errors, partial(_store, kw, key, checked))
    section = cls(**kw)
    check = _SECTION_CHECKS.get(cls)
    if check is not None:  # checks across the keys of one section (with the file and line)
        _collect(errors, partial(check, section, loc, prefix))
    return section


def _store(kw: dict[str, Any], key: Any, make: Callable[[], Any]) -> None:
    kw[key] = make()


def _entries(cls: type, data: dict, loc: Location, prefix: str, errors: list | None) -> list[tuple[str, Any, Any]]:
    """``(dotted key, field name, value)`` of every key of a section, the keys of its groups lifted to it."""
    groups = SECTION_GROUPS.get(cls, {})
    out: list[tuple[str, Any, Any]] = []
    where: dict[Any, str] = {}  # field name -> the dotted key that gave it
    for key, value in data.items():
        if key in groups:
            items = _group_entries(groups, key, value, loc, f"{prefix}{key}", errors)
        else:
            items = [(f"{prefix}{key}", key, value)]
        for dotted, name, v in items:
            if name in where:
                _collect(errors, partial(_twice, loc, dotted, where[name]))
                continue
            where[name] = dotted
            out.append((dotted, name, v))
    return out


def _twice(loc: Location, dotted: str, first: str) -> None:
    raise _fail(loc, dotted, f"given twice (also as {first}); give it once")


def _group_entries(groups: dict[str, tuple[str, ...]], group: str, value: Any, loc: Location, dotted: str,
                   errors: list | None) -> list[tuple[str, Any, Any]]:
    """The keys of one group mapping (``controller.limits``), each checked to belong to the group."""
    if not isinstance(value, dict):
        _collect(errors, lambda: _not_a_group(loc, dotted, value, groups[group]))
        return []
    out = []
    for key, v in value.items():
        if key in groups[group]:
            out.append((f"{dotted}.{key}", key, v))
        else:
            _collect(errors, partial(_unknown_key, loc, f"{dotted}.{key}", key, dotted, list(groups[group])))
    return out


def _not_a_group(loc: Location, dotted: str, value: Any, names: tuple[str, ...]) -> None:
    raise _fail(loc, dotted, f"expected a mapping of the {dotted.rsplit('.', 1)[-1]} settings "
                             f"({', '.join(names)}), got {value!r}")


def _unknown_key(loc: Location, dotted: str, key: Any, where: str, valid: list[str]) -> None:
    near = difflib.get_close_matches(str(key), valid, n=1, cutoff=0.5)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    raise ScenarioError(f"{loc.at(dotted)}: unknown key {key!r} in {where}{hint} (valid keys: {', '.join(valid)})")


def _validate_key(cls: type, known: dict, key: Any, value: Any, loc: Location, dotted: str, where: str,
                  errors: list | None) -> Any:
    """The checked value of one key of section ``cls`` (see :func:`validate`), by the kind of its field:
    a nested section, the obstacle list, or a value (:func:`_check_value`)."""
    if key not in known:
        _unknown_key(loc, dotted, key, where, [*known, *SECTION_GROUPS.get(cls, {})])
    f = known[key]
    kind = f.metadata.get("kind", "section")
    if kind == "section":
        section = f.type if isinstance(f.type, type) and is_dataclass(f.type) else _section_type(cls, key)
        return validate(section, value, loc, dotted + ".", errors)
    if kind == "obstacles":
        if not isinstance(value, list):
            raise _fail(loc, dotted, f"expected {_EXPECT[kind]}, got {value!r}")
        return [validate(ObstacleConfig, item, loc, f"{dotted}.{i}.", errors) for i, item in enumerate(value)]
    return _check_value(kind, value, dotted, loc, f.metadata.get("choices"), f.metadata.get("bounds"))


def _section_type(cls: type, key: str) -> type:
    """The dataclass type of a nested section (annotations may be strings)."""
    for f in fields(cls):
        if f.name == key and f.default_factory is not MISSING:
            return type(f.default_factory())
    raise ScenarioError(f"schema: {cls.__name__}.{key} is not a section")  # pragma: no cover
