"""Scenario files: one YAML file (or dict) describes a whole closed-loop run.

A scenario maps onto the library's objects: the path (bundled name, file or corner points),
speed profile, obstacles, vehicle geometry, plant and actuation, MPC settings, simulation and
outputs. It is validated on load (see :mod:`mpc_tracking.scenario.schema`): an unknown key names
the key, the file and line and suggests the nearest valid key; a wrong type says what was expected.

Examples
--------
>>> sc = default_scenario().with_overrides({"controller.horizon": 20, "simulation.t_max": 2.0})
>>> sc.controller.horizon
20
>>> result = run_scenario(sc)          # or load_scenario("demos/quickstart.yaml")
>>> str(result.reason), round(float(result.t[-1]), 1)
('time_limit', 2.0)
"""
from __future__ import annotations

import copy
import difflib
import logging
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from mpc_tracking.errors import MPCTrackingError, ScenarioError
from mpc_tracking.fileio import read_yaml
from mpc_tracking.scenario.build import build, obstacle_records, resolve_file
from mpc_tracking.scenario.schema import Location, ScenarioBase, compose_marks, validate

__all__ = [
    "Scenario", "load_scenario", "default_scenario", "run_scenario", "DEFAULT_SCENARIO", "record_scenario",
]

logger = logging.getLogger(__name__)

#: the embedded default (``mpc-tracking demo``): one lap of the bundled oval, kinematic bicycle
DEFAULT_SCENARIO: dict[str, Any] = {
    "name": "demo",
    "description": "one lap of the bundled default path with a kinematic bicycle, starting 1 m off the line",
    "path": {"source": "oval", "ds": 0.5},
    "plant": {"name": "kinematic_bicycle"},
    "controller": {
        "horizon": 30, "v_max": 12.0, "a_y_max": 4.0, "delta_rate_max": 0.6, "accel_max": 3.0, "decel_max": 5.0,
    },
    "simulation": {"laps": 1, "e_y0": 1.0},
    "outputs": {"folder": "out/demo", "plots": ["track", "timeseries"]},
}


@dataclass
class Scenario(ScenarioBase):
    """A validated scenario (a tree of dataclasses; see :mod:`mpc_tracking.scenario.schema`).

    Attributes
    ----------
    name, description : str
    path, speed_profile, environment, vehicle, plant, actuation, controller, simulation, outputs
        The sections; ``controller`` has one field per :class:`~mpc_tracking.mpc.settings.MPCSettings` field.
    source : str
        Where it was loaded from (file name or ``"<dict>"``); not part of :meth:`to_dict`.
    """

    def __post_init__(self) -> None:
        self.source = "<dict>"

    def to_dict(self) -> dict[str, Any]:
        """The resolved scenario as plain lists/dicts/scalars (YAML-able; JSON-able except inf)."""
        return asdict(self)

    def with_overrides(self, overrides: Mapping[str, Any], *, errors: list | None = None) -> Scenario:
        """A new validated scenario with dotted keys changed, e.g. ``{"controller.horizon": 50}``.

        Keys below a free-form mapping (``plant.params.wheelbase``) are created as needed; any
        other unknown key raises :class:`ScenarioError` with the nearest valid key (``errors``: a
        list collecting every problem instead, as in :func:`load_scenario`).
        """
        data = self.to_dict()
        for key, value in overrides.items():
            try:
                _set_dotted(data, str(key), value)
            except ScenarioError as exc:
                if errors is None:
                    raise
                errors.append(exc)
        out = _from_dict(data, Location("overrides"), errors)
        out.source = self.source
        return out

    def to_yaml(self) -> str:
        """The resolved scenario as YAML text (loads back to an equal scenario)."""
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None)


# ---------------------------------------------------------------------- loading
def _set_dotted(data: dict, key: str, value: Any) -> None:
    parts = key.split(".")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list):
            try:
                node = node[int(part)]
                continue
            except (ValueError, IndexError):
                raise ScenarioError(f"override {key!r}: {'.'.join(parts[:i + 1])} is not an item of the list") from None
        if not isinstance(node, dict):
            raise ScenarioError(f"override {key!r}: {'.'.join(parts[:i])} is a value, not a section")
        if part not in node:
            near = difflib.get_close_matches(part, [str(k) for k in node], n=1, cutoff=0.5)
            hint = f"; did you mean {'.'.join([*parts[:i], near[0]])!r}?" if near else ""
            raise ScenarioError(f"override {key!r}: unknown section {part!r}{hint}")
        if node[part] is None:
            node[part] = {}
        node = node[part]
    if isinstance(node, list):
        try:
            node[int(parts[-1])] = value
            return
        except (ValueError, IndexError):
            raise ScenarioError(f"override {key!r}: no list item {parts[-1]!r}") from None
    if not isinstance(node, dict):
        raise ScenarioError(f"override {key!r}: {'.'.join(parts[:-1])} is a value, not a section")
    node[parts[-1]] = value  # unknown leaf keys are caught by validation (with a suggestion)


def _check_controller(sc: Scenario, loc: Location) -> None:
    """Construct MPCSettings once so bad values are reported with the file and line."""
    from mpc_tracking.mpc.settings import MPCSettings
    from mpc_tracking.scenario.schema import mpc_settings_kwargs

    try:
        MPCSettings(**mpc_settings_kwargs(sc.controller))
    except MPCTrackingError as exc:
        msg = str(exc)
        key = "controller"
        for f in fields(sc.controller):
            if f"MPCSettings.{f.name}" in msg or f" {f.name} " in msg:
                key = f"controller.{f.name}"
                break
        raise ScenarioError(f"{loc.at(key)}: {msg}") from None


def _check_plant(sc: Scenario, loc: Location) -> None:
    """Plant name, plant parameter names and actuator name, reported with the file and line."""
    from mpc_tracking.actuation import ACTUATORS
    from mpc_tracking.models import get_model

    try:
        cls = get_model(sc.plant.name)
    except MPCTrackingError as exc:
        raise ScenarioError(f"{loc.at('plant.name')}: plant.name: {exc}") from None
    for key, value in sc.plant.params.items():
        if key not in cls.PARAMS:
            near = difflib.get_close_matches(str(key), list(cls.PARAMS), n=1, cutoff=0.5)
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise ScenarioError(f"{loc.at('plant.params.' + str(key))}: unknown parameter {key!r} of plant "
                                f"{sc.plant.name!r}{hint} (valid: {', '.join(cls.PARAMS)})", key=f"plant.params.{key}")
        problem = cls.param_problem(str(key), value)
        if problem:  # the key lets build() leave the plant to this report (one message, with its line)
            raise ScenarioError(f"{loc.at('plant.params.' + str(key))}: plant.params.{key}: {problem}",
                                key=f"plant.params.{key}")
    name = sc.actuation.name
    if name is not None and name not in ACTUATORS:
        near = difflib.get_close_matches(name, list(ACTUATORS), n=1, cutoff=0.5)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        known = ", ".join(sorted(ACTUATORS))
        raise ScenarioError(f"{loc.at('actuation.name')}: unknown actuator {name!r}{hint} (known: {known})")


def _from_dict(data: Any, loc: Location, errors: list | None = None) -> Scenario:
    sc = validate(Scenario, data, loc, errors=errors)
    for check in (_check_controller, _check_plant):
        try:
            check(sc, loc)
        except ScenarioError as exc:
            if errors is None:
                raise
            errors.append(exc)
    sc.source = loc.source
    return sc


def load_scenario(source: str | Path | Mapping[str, Any], *, errors: list | None = None) -> Scenario:
    """Read and validate a scenario from a YAML file or a mapping.

    Parameters
    ----------
    source : str, Path or mapping
        A YAML file name, or the scenario as a (nested) dict. Missing keys take the defaults
        of :class:`Scenario` (not those of :func:`default_scenario`).
    errors : list, optional
        Collect every problem of the settings here instead of raising at the first (a bad value
        keeps its default); a file that cannot be read or parsed still raises.

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        Missing, unreadable or unparsable file, or one beyond the limits of
        :func:`mpc_tracking.fileio.read_yaml` (10 MB, nesting depth, alias expansion, duplicate
        keys); unknown key (with file, line and the nearest valid key);
        wrong type (with what was expected); invalid controller settings.
    """
    if isinstance(source, Mapping):
        return _from_dict(copy.deepcopy(dict(source)), Location("<dict>"), errors)
    if not isinstance(source, (str, Path)):
        raise ScenarioError(f"scenario: expected a YAML file name or a mapping, got {type(source).__name__}")
    p = Path(source)
    doc = read_yaml(p, error=ScenarioError, what="scenario file")
    data = doc.data
    marks = compose_marks(doc.node)
    if data is None:
        raise ScenarioError(f"{p}: the scenario file is empty; expected sections such as path, plant, controller, "
                            f"simulation (mpc-tracking check --keys lists them)")
    if not isinstance(data, dict):
        raise ScenarioError(f"{p}:1: expected a mapping of sections (path, controller, ...), got {type(data).__name__}")
    sc = _from_dict(data, Location(str(p), marks), errors)
    # files named relative to the scenario file are stored resolved, so to_dict() is self-contained
    if sc.path.source is not None:
        sc.path.source = resolve_file(sc, sc.path.source)
    if sc.environment.grid.image is not None:
        sc.environment.grid.image = resolve_file(sc, sc.environment.grid.image)
    return sc


def default_scenario() -> Scenario:
    """The embedded demo scenario (no files needed): one lap of ``oval``, kinematic bicycle."""
    sc = _from_dict(copy.deepcopy(DEFAULT_SCENARIO), Location("<default scenario>"))
    return sc


def run_scenario(scenario: Scenario, on_step: Callable[[int, float], None] | None = None, *,
                 built: tuple | None = None):
    """Build and simulate a scenario; the result's ``info["scenario"]`` holds the resolved scenario.

    Parameters
    ----------
    scenario : Scenario
    on_step : callable, optional
        ``on_step(k, t)`` after every control step (progress bars).
    built : tuple, optional
        What :func:`build` returned for ``scenario`` (when the caller needed the objects first,
        e.g. the path's length for a progress bar); default: built here.

    Returns
    -------
    SimulationResult
        A run that fails midway returns what it logged, with the reason in ``result.reason``.
    """
    from mpc_tracking.simulation import simulate

    path, mpc, plant, actuator, kw = build(scenario) if built is None else built
    result = simulate(path, mpc, plant, actuator, on_step=on_step, **kw)
    record_scenario(result, scenario)
    return result


def record_scenario(result, scenario: Scenario) -> None:
    """Store the resolved scenario and the run's obstacles in ``result.info`` (saved with the result)."""
    result.info["scenario"] = scenario.to_dict()
    result.info["scenario_name"] = scenario.name
    result.info["obstacles"] = obstacle_records(scenario, result.path)


def expected_duration(scenario: Scenario, path=None) -> float:
    """Rough simulated time [s] of a run (for progress bars): t_max, else distance / mean speed."""
    if scenario.simulation.t_max is not None:
        return float(scenario.simulation.t_max)
    length = path.length if path is not None else 500.0
    laps = scenario.simulation.laps if (path is None or path.closed) else 1
    return laps * length / max(0.5 * scenario.controller.v_max, 0.1)

