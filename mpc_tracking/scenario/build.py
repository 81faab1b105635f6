"""Building the objects of a run from a :class:`~mpc_tracking.scenario.core.Scenario`.

:func:`build` maps the sections onto :class:`ReferencePath` (bundled name, file or corner
points, speed profile), :class:`VehicleParams`, the corridor (:mod:`mpc_tracking.environment.corridor`:
obstacles, occupancy grid, obstacles a path file carries), the plant and its actuator, and the
controller ``controller.type`` names: :class:`SpatialMPC` with the controller settings, or a
geometric baseline (:class:`~mpc_tracking.control.PurePursuit`, :class:`~mpc_tracking.control.Stanley`)
with its gains from ``controller.<type>`` and the MPC's limits (:func:`_build_controller`).
"""
from __future__ import annotations

import inspect
import logging
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mpc_tracking.errors import InputError, MPCTrackingError, ScenarioError

logger = logging.getLogger(__name__)

if TYPE_CHECKING:  # types only: this module imports the packages it builds from inside its functions
    from mpc_tracking.environment.obstacles import CircleObstacle, PolygonObstacle

__all__ = ["build", "build_path", "obstacle_records", "resolve_file"]

#: the least default corner radius of corner courses, in minimum turning radii of the vehicle (room to steer)
CORNER_RADIUS_TURNS = 2.0


def build_path(sc):
    """The scenario's path, as :func:`build` makes it (``path:`` section and speed profile, default
    corner radii from the scenario's vehicle); what ``mpc-tracking path show`` draws."""
    from mpc_tracking.scenario.schema import mpc_settings

    vehicle, settings = _build_vehicle(sc), mpc_settings(sc.controller)
    return _apply_speed_profile(sc, _build_path(sc, vehicle.wheelbase / np.tan(settings.delta_max)))


def _build_path(sc, min_turning_radius: float | None = None):
    """The scenario's path: ``path.corners`` rounded (``path.corner_radius``), or the file or bundled
    name ``path.source`` (the bundled default when neither is given). Unset ``closed``, ``ds`` and
    corner radius take the defaults every path takes (:mod:`mpc_tracking.paths.defaults`); the
    default corner radius is at least :data:`CORNER_RADIUS_TURNS` x ``min_turning_radius``."""
    floor = None if min_turning_radius is None else CORNER_RADIUS_TURNS * min_turning_radius
    if sc.path.corners is not None:
        return _path_from_corners(sc, floor)
    return _with_widths_and_name(sc.path, _read_path_source(sc, floor))


def _path_from_corners(sc, min_radius: float | None):
    from mpc_tracking.paths._checks import _distinct_mask
    from mpc_tracking.paths.defaults import decide_closed, default_corner_radius
    from mpc_tracking.paths.reference_path import ReferencePath

    pc = sc.path
    pts = np.asarray(pc.corners, dtype=float)
    closed = pc.closed if pc.closed is not None else decide_closed(pts, f"{sc.source}: path.corners")
    radius = pc.corner_radius
    if radius is None and len(pts) >= 2:
        radius = default_corner_radius(pts[_distinct_mask(pts, closed)], closed, min_radius)
    return ReferencePath.from_corners(
        pts, ds=pc.ds, closed=closed, smoothing=pc.smoothing, width_left=pc.width_left,
        width_right=pc.width_right, name=pc.name or sc.name, radius=radius, fit_radius=pc.corner_radius is None,
    )


def _read_path_source(sc, min_corner_radius: float | None):
    """The path of ``path.source`` (a file, or a bundled name; default the bundled default path), read in
    ``path.format``."""
    from mpc_tracking.paths import io as path_io
    from mpc_tracking.paths.bundled import DEFAULT_PATH, bundled_file

    pc = sc.path
    source = resolve_file(sc, pc.source if pc.source is not None else DEFAULT_PATH)
    _check_source_exists(sc, source)
    kw: dict[str, Any] = {"ds": pc.ds, "smoothing": pc.smoothing, "closed": pc.closed,
                          "corner_radius": pc.corner_radius, "min_corner_radius": min_corner_radius}
    if pc.format == "auto":
        reader = path_io.load_path
    else:
        reader = getattr(path_io, f"read_{pc.format}")
        if not Path(source).exists():
            source = str(bundled_file(source))
    params = inspect.signature(reader).parameters
    return reader(source, **{k: v for k, v in kw.items() if k in params and v is not None})


def _check_source_exists(sc, source: str) -> None:
    """A ``path.source`` that is neither a file nor a bundled name: an error naming the scenario's line
    and the nearest file (or bundled name) that exists."""
    from mpc_tracking.paths.bundled import list_bundled
    from mpc_tracking.paths.io import missing_file_hint

    p = Path(source)
    if p.exists() or (not p.suffix and "/" not in source and source in list_bundled()):
        return
    kind = "file" if p.suffix or "/" in source else "file or bundled path"
    raise ScenarioError(f"{_key_location(sc, 'path.source')}: path.source: {source}: no such {kind}"
                        f"{missing_file_hint(p)}")


def _key_location(sc, key: str) -> str:
    """``"scenario.yaml:LINE"`` of a dotted key of the scenario's file (the file when it has no line)."""
    from mpc_tracking.fileio import read_yaml
    from mpc_tracking.scenario.schema import Location, compose_marks

    where = str(sc.source)
    if not Path(where).is_file():
        return where
    try:
        return Location(where, compose_marks(read_yaml(Path(where), error=ScenarioError).node)).at(key)
    except MPCTrackingError:  # the file changed since it was loaded: name it without a line
        return where


def _with_widths_and_name(pc, path):
    """``path`` with the widths and name ``path.width_left/width_right/name`` override (when given)."""
    from mpc_tracking.paths.reference_path import ReferencePath

    if pc.width_left is None and pc.width_right is None and not pc.name:
        return path
    wl = np.full(path.n, pc.width_left) if pc.width_left is not None else path.width_left
    wr = np.full(path.n, pc.width_right) if pc.width_right is not None else path.width_right
    out = ReferencePath.from_waypoints(
        path.s, path.x, path.y, path.psi, path.kappa, width_left=wl, width_right=wr, v_ref=path.v_ref,
        closed=path.closed, length=path.length, name=pc.name or path.name,
    ).with_obstacles(path.obstacles)
    # the same fit: its input points and how far it strays from them (plots draw them)
    out.input_points, out.smoothing = path.input_points, path.smoothing
    out.fit_deviation, out.fit_deviation_index = path.fit_deviation, path.fit_deviation_index
    return out


def _apply_speed_profile(sc, path):
    sp = sc.speed_profile
    if not sp.enabled:
        return path
    try:
        from mpc_tracking.paths.speed_profile import speed_profile
    except ImportError:
        raise ScenarioError(
            f"{sc.source}: speed_profile.enabled needs mpc_tracking.paths.speed_profile, not in this version"
        ) from None
    c = sc.controller
    try:
        v = speed_profile(
            path,
            v_max=sp.v_max if sp.v_max is not None else c.v_max,
            a_y_max=sp.a_y_max if sp.a_y_max is not None else c.a_y_max,
            a_max=sp.accel_max if sp.accel_max is not None else c.accel_max,
            a_brake=sp.decel_max if sp.decel_max is not None else c.decel_max,
            friction_ellipse=sp.friction_ellipse,
        )
    except MPCTrackingError as exc:
        raise ScenarioError(f"{sc.source}: speed_profile: {exc}") from None
    return path.with_speed_profile(v)


def resolve_file(sc, name: str) -> str:
    """A file named in a scenario: as given when it exists, else relative to the scenario file."""
    if not Path(name).exists() and sc.source not in ("<dict>", "overrides", "<default scenario>"):
        rel = Path(sc.source).parent / name
        if rel.exists():
            return str(rel)
    return name


def obstacle_records(scenario, path=None) -> list[dict[str, Any]]:
    """Every obstacle of a run as a plain dict (scenario ones, if a scenario is given, and those a path file carries).

    Keys: ``type`` ("circle" or "polygon"), ``center`` + ``radius`` or ``points``, ``velocity``
    (None when static), ``t0`` [s] (time at which a moving circle is at ``center``).
    """
    from mpc_tracking.environment.obstacles import obstacle_record

    out = [dict(asdict(o), t0=0.0) for o in scenario.environment.obstacles] if scenario is not None else []
    out.extend(obstacle_record(ob) for ob in (path.obstacles if path is not None else ()))
    return out


def _build_corridor(sc, path):
    env_cfg = sc.environment
    path_obstacles = list(path.obstacles)
    if not env_cfg.obstacles and env_cfg.grid.image is None and not path_obstacles:
        return None
    from mpc_tracking import environment as env

    obstacles = [_obstacle(o, f"{sc.source}: environment.obstacles.{i}") for i, o in enumerate(env_cfg.obstacles)]
    grid = None
    g = env_cfg.grid
    if g.image is not None:
        grid = env.OccupancyGrid.from_image(resolve_file(sc, g.image), g.origin, g.resolution,
                                            threshold=g.threshold, outside_free=g.outside_free)
    return env.ObstacleCorridor(path, obstacles + path_obstacles, grid=grid)


def _obstacle(o, where: str) -> CircleObstacle | PolygonObstacle:
    """One scenario obstacle (``where`` names it in errors); a MovingCircle is a CircleObstacle."""
    from mpc_tracking import environment as env

    moving = o.velocity is not None and any(o.velocity)
    if o.type == "circle":
        if o.center is None or o.radius is None:
            raise ScenarioError(f"{where}: a circle needs center [x, y] and radius")
        return env.MovingCircle(o.center, o.radius, o.velocity) if moving else env.CircleObstacle(o.center, o.radius)
    if o.points is not None and o.vertices is not None:
        raise ScenarioError(f"{where}: give the polygon's corners once, as points or as vertices")
    pts = o.points if o.points is not None else o.vertices
    if pts is None or len(pts) < 3:
        raise ScenarioError(f"{where}: a polygon needs at least 3 points [[x, y], ...]")
    if moving:
        raise ScenarioError(f"{where}: moving obstacles must be circles")
    return env.PolygonObstacle(pts)


def _build_vehicle(sc):
    from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams

    vc = sc.vehicle
    base = VehicleParams.rc_car() if vc.preset == "rc_car" else VehicleParams()
    kw = asdict(base)
    kw.update({k: v for k, v in asdict(vc).items() if k not in ("preset", "file") and v is not None})
    try:
        return VehicleParams(**kw)
    except MPCTrackingError as exc:
        raise ScenarioError(f"{sc.source}: vehicle: {exc}") from None


def _matching_preset(cls: Any, params: dict[str, Any], vehicle: Any, where: str) -> None:
    """For the 3D car: pick the preset whose wheelbase is nearest the vehicle's when none is given
    (in place, logged), and warn when a given preset's car is far from the vehicle the MPC plans for."""
    from mpc_tracking.models.plants.ackermann3d import Ackermann3D
    from mpc_tracking.models.plants.ackermann3d.params import PRESETS

    if not (isinstance(cls, type) and issubclass(cls, Ackermann3D)):
        return
    if params.get("preset") is None:
        choices = {name: PRESETS[name]().wheelbase for name in ("rc_car", "sedan")}
        name = min(choices, key=lambda n: abs(np.log(choices[n] / vehicle.wheelbase)))
        params["preset"] = name
        logger.info("%s: plant.params.preset not given; using %r (wheelbase %.2f m, nearest to the vehicle's "
                    "%.2f m)", where, name, choices[name], vehicle.wheelbase)
        return
    preset = params["preset"]
    if preset in PRESETS:
        wb = PRESETS[preset]().wheelbase
        if not 0.67 < wb / vehicle.wheelbase < 1.5:
            logger.warning("%s: plant preset %r has a %.2f m wheelbase but the vehicle the controller plans for has "
                           "%.2f m; set vehicle or plant.params.preset to the same car", where, preset, wb,
                           vehicle.wheelbase)


def _build_plant(sc, vehicle, settings):
    from mpc_tracking.models import create_model, get_model

    cls = get_model(sc.plant.name)
    params = dict(sc.plant.params)
    _matching_preset(cls, params, vehicle, str(sc.source))
    auto = {"wheelbase": vehicle.wheelbase, "delta_max": settings.delta_max, "length": vehicle.length,
            "width": vehicle.width, "rear_overhang": vehicle.rear_overhang}
    for k, v in auto.items():
        # fill geometry the plant takes explicitly; a default of None means "from the plant's preset"
        if k in cls.PARAMS and k not in params and cls.PARAMS[k][0] is not None:
            params[k] = v
    return create_model(sc.plant.name, params)


def _vehicle_file(sc) -> Any:
    """The scenario's vehicle file (``vehicle.file``), loaded and validated, or None."""
    name = sc.vehicle.file
    if name is None:
        return None
    from mpc_tracking.identification.vehicle_file import load_vehicle_file

    try:
        return load_vehicle_file(resolve_file(sc, name))
    except MPCTrackingError as exc:
        raise ScenarioError(f"{sc.source}: vehicle.file: {exc}") from None


#: a controller limit beyond this multiple of what the vehicle file measured is an error, not a warning
GROSS_LIMIT_FACTOR = 1.5


def _check_limits(sc, settings: Any, vf: Any) -> None:
    """Warn when the controller's (or speed profile's) limits exceed what the identified plant can do;
    raise :class:`ScenarioError` beyond :data:`GROSS_LIMIT_FACTOR` times the plant's limit."""
    sp = sc.speed_profile
    checks = [
        ("controller.a_y_max", settings.a_y_max, vf.lateral_limit, "lateral acceleration the plant held"),
        ("controller.accel_max", settings.accel_max, vf.accel_max, "acceleration the plant delivered"),
        ("controller.decel_max", settings.decel_max, vf.decel_max, "braking deceleration the plant delivered"),
    ]
    if sp.enabled:
        for k, plant_v, what in (("a_y_max", vf.lateral_limit, "lateral acceleration the plant held"),
                                 ("accel_max", vf.accel_max, "acceleration the plant delivered"),
                                 ("decel_max", vf.decel_max, "braking deceleration the plant delivered")):
            v = getattr(sp, k)
            if v is not None:
                checks.append((f"speed_profile.{k}", v, plant_v, what))
    for key, v, limit, what in checks:
        if not (np.isfinite(limit) and v > 1.02 * limit):
            continue
        text = (f"{sc.source}: {key} = {v:g} m/s^2 exceeds the {what}, {limit:.3g} m/s^2 "
                f"(vehicle file {vf.source})")
        if key.endswith("a_y_max") and v > GROSS_LIMIT_FACTOR * limit:
            raise ScenarioError(text + f"; more than {GROSS_LIMIT_FACTOR:g}x: lower it")
        logger.warning("%s; the plan will ask for more than the car can do", text)


def _default_accel_limits(sc, settings: Any, plant: Any, actuator: Any, vf: Any) -> Any:
    """Finite ``accel_max``/``decel_max`` for a controller the scenario left unbounded.

    The smallest of what the car can do: the actuator's speed-loop clamp, the vehicle file's
    measured limits, and for the 3D car the friction bound 0.9 mu g. A plan that asks for more
    (an unbounded default) brakes too late and leaves the corridor. Logged; a finite scenario
    value is kept.
    """
    limits = {"accel_max": [("the actuator", actuator.accel_limits[0])],
              "decel_max": [("the actuator", actuator.accel_limits[1])]}
    if vf is not None:
        limits["accel_max"].append(("the vehicle file", vf.accel_max))
        limits["decel_max"].append(("the vehicle file", vf.decel_max))
    mu = getattr(getattr(plant, "vehicle", None), "mu", None)
    if mu is not None:
        bound = 0.9 * float(mu) * 9.81
        limits["accel_max"].append(("friction (0.9 mu g)", bound))
        limits["decel_max"].append(("friction (0.9 mu g)", bound))
    changes = {}
    for key, candidates in limits.items():
        if np.isfinite(getattr(settings, key)):
            continue
        finite = [(v, src) for src, v in candidates if np.isfinite(v) and v > 0]
        if finite:
            value, source = min(finite)
            changes[key] = float(value)
            logger.info("%s: controller.%s not given; %.3g m/s^2 from %s", sc.source, key, value, source)
    return settings.replace(**changes) if changes else settings


def _prediction(settings: Any, plant: Any, actuator: Any, vehicle_file: Any = None) -> Any:
    """The controller's prediction model: None (the settings' default) but for the dynamic model,
    whose parameters come from the vehicle file when there is one, else from the 3D plant when it is
    one, and whose speed lead comes from the actuator when it declares one, else from the file."""
    if settings.prediction_model != "dynamic":
        return None
    from mpc_tracking.models.plants.ackermann3d import Ackermann3D
    from mpc_tracking.models.prediction import DynamicPrediction, dynamic_params_from_ackermann3d
    from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

    if vehicle_file is not None:
        # the lead of a speed loop we configure is known exactly (1 / kp of a PI actuator); the
        # file's lag is a first-order fit of the whole response (0.27 s for the sedan's kp 3, ki 1:
        # the integral quickens a step), right for a plant whose speed loop is a black box
        lag = actuator.speed_lag if actuator.speed_lag > 0 else vehicle_file.speed_lag
        if actuator.speed_lag > 0 and abs(lag - vehicle_file.speed_lag) > 0.05 * lag:
            logger.info("speed lead %.3g s from the actuator %r (vehicle file: %.3g s identified)", lag,
                        actuator.name, vehicle_file.speed_lag)
        return DynamicPrediction(vehicle_file.params, speed_lag=lag)
    if isinstance(plant, Ackermann3D):
        params = dynamic_params_from_ackermann3d(plant.vehicle)
    else:
        params = DynamicParams.bmw_320i()
    return DynamicPrediction(params, speed_lag=actuator.speed_lag)


def _build_controller(sc, path, vehicle, settings, corridor, prediction) -> Any:
    """The controller ``controller.type`` names (``prediction()``: the MPC's prediction model, built only for it).

    A baseline takes its gains from ``controller.pure_pursuit`` / ``controller.stanley`` and its limits
    (control period, speeds, a_y, accelerations, steering) from the controller's MPC fields; it follows
    the path and ignores a corridor's obstacles (logged).
    """
    kind = sc.controller.type
    if kind == "mpc":
        from mpc_tracking.mpc.controller import SpatialMPC

        return SpatialMPC(path, vehicle, settings, corridor=corridor, prediction=prediction())
    from mpc_tracking import control

    cls, params_cls = {"pure_pursuit": (control.PurePursuit, control.PurePursuitParams),
                       "stanley": (control.Stanley, control.StanleyParams)}[kind]
    try:
        params = params_cls(**asdict(getattr(sc.controller, kind)))
    except MPCTrackingError as exc:
        raise ScenarioError(f"{sc.source}: controller.{kind}: {exc}") from None
    if corridor is not None:
        logger.warning("%s: controller.type %r follows the path and does not avoid the corridor's obstacles",
                       sc.source, kind)
    return cls(path, vehicle, params, control.TrackingLimits.from_settings(settings))


def build(scenario, errors: list | None = None) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
    """Construct the objects of a run.

    Parameters
    ----------
    scenario : Scenario
    errors : list, optional
        Collect every problem here (an :class:`~mpc_tracking.errors.MPCTrackingError` each)
        instead of raising at the first: each part (settings, vehicle, path, corridor, plant,
        actuator, vehicle file, controller) is built when the parts it needs were; the objects
        that could not be built are None (``mpc-tracking check`` reports them all).

    Returns
    -------
    path : ReferencePath
    mpc : SpatialMPC, PurePursuit or Stanley
        The controller ``controller.type`` names.
    plant : MotionModel
    actuator : Actuator
    sim_kwargs : dict
        Keyword arguments of :func:`~mpc_tracking.simulation.simulate` (control_period, sim_dt,
        laps, t_max, s0, e_y0, e_psi0, v0, corridor_tolerance).
    """
    from mpc_tracking.actuation import default_actuator, make_actuator
    from mpc_tracking.scenario.defaults import grip_defaults
    from mpc_tracking.scenario.schema import ScenarioBase, mpc_settings

    if not isinstance(scenario, ScenarioBase):
        raise InputError(f"scenario: expected a Scenario (load_scenario), got {type(scenario).__name__}")

    failed = object()  # a part that could not be built (None is a valid part: no corridor, no file)

    def part(make: Any, *needs: Any) -> Any:
        """``make()``, or ``failed`` when a part it needs failed or (collecting) it fails itself."""
        if any(n is failed for n in needs):
            return failed
        if errors is None:
            return make()
        try:
            return make()
        except MPCTrackingError as exc:
            errors.append(exc)
            return failed

    sim = scenario.simulation

    def make_settings() -> Any:
        changes = {"control_period": sim.control_period} if sim.control_period is not None else {}
        return mpc_settings(scenario.controller, **changes)

    settings = part(make_settings)
    vehicle = part(lambda: _build_vehicle(scenario))
    r_min = None if failed in (vehicle, settings) else vehicle.wheelbase / np.tan(settings.delta_max)
    path = part(lambda: _apply_speed_profile(scenario, _build_path(scenario, r_min)))
    corridor = part(lambda: _build_corridor(scenario, path), path)
    # plant parameters the file check rejected (with their line) are not reported again by the plant
    reported = {(getattr(e, "key", None) or "").split(".")[0] for e in errors or ()}
    plant = part(lambda: _build_plant(scenario, vehicle, settings), vehicle, settings,
                 failed if "plant" in reported else None)
    act = scenario.actuation
    actuator = part(lambda: make_actuator(act.name, **act.params) if act.name else default_actuator(plant), plant)
    vf = part(lambda: _vehicle_file(scenario))
    # what the controller settings left at their defaults follows from the car (issue 20)
    settings = part(lambda: grip_defaults(settings, plant, actuator, vf, None if path is failed else path.ds,
                                          str(getattr(scenario, "source", "controller"))),
                    settings, plant, actuator, vf)
    settings = part(lambda: _default_accel_limits(scenario, settings, plant, actuator, vf),
                    settings, plant, actuator, vf)
    if vf is not None:
        part(lambda: _check_limits(scenario, settings, vf), settings, vf)
    mpc = part(lambda: _build_controller(scenario, path, vehicle, settings, corridor,
                                         lambda: _prediction(settings, plant, actuator, vf)),
               path, vehicle, settings, corridor, plant, actuator, vf)
    sim_kwargs = dict(asdict(sim).items())
    sim_kwargs["control_period"] = None if settings is failed else settings.control_period
    path, mpc, plant, actuator = (None if x is failed else x for x in (path, mpc, plant, actuator))
    return path, mpc, plant, actuator, sim_kwargs
