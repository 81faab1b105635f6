"""The plugin interface every plant (motion model) implements.

A plant is what the car really does in a closed-loop run; the MPC never sees its internals,
only the pose that the loop projects onto the path. To add a plant, subclass
:class:`MotionModel`, declare its names and parameter defaults, implement
:meth:`MotionModel._initial_state`, :meth:`MotionModel.xdot`, :attr:`MotionModel.pose` and
:attr:`MotionModel.velocity`, and register it (see :mod:`mpc_tracking.models`).
"""
from __future__ import annotations

import abc
import difflib
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from mpc_tracking.errors import ModelError, NonFiniteStateError
from mpc_tracking.models.integrators import integrate

__all__ = ["MotionModel", "Pose", "Velocity"]

#: attributes a plant declares for identification (:meth:`MotionModel.declared_geometry`)
GEOMETRY_ATTRIBUTES = ("mass", "yaw_inertia", "l_f", "l_r", "cg_height", "driven_axle")
#: values of :attr:`MotionModel.driven_axle`
DRIVEN_AXLES = ("front", "rear", "all")


@dataclass(frozen=True)
class Pose:
    """Position [m] and orientation (roll, pitch, yaw) [rad] of the car frame in the world."""

    x: float
    y: float
    z: float = 0.0
    roll: float = 0.0
    pitch: float = 0.0
    yaw: float = 0.0

    @property
    def position(self) -> np.ndarray:
        """Position (3,) [m]."""
        return np.array([self.x, self.y, self.z])

    @property
    def rotation(self) -> np.ndarray:
        """Rotation matrix (3, 3) body -> world, ZYX convention."""
        cr, sr = np.cos(self.roll), np.sin(self.roll)
        cp, sp = np.cos(self.pitch), np.sin(self.pitch)
        cy, sy = np.cos(self.yaw), np.sin(self.yaw)
        return np.array(
            [
                [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                [-sp, cp * sr, cp * cr],
            ]
        )


@dataclass(frozen=True)
class Velocity:
    """Linear velocity (3,) [m/s] and angular velocity (3,) [rad/s], both in the world frame."""

    linear: np.ndarray
    angular: np.ndarray


class MotionModel(abc.ABC):
    """Base class of plants: the whole plugin contract, declared here.

    The closed loop (:func:`mpc_tracking.simulate`) uses exactly what this class declares: it
    calls :meth:`init` (optional, to place the car), then alternates reading :attr:`pose` /
    :attr:`speed` and calling :meth:`step`. Nothing else is read from a plant. A subclass
    declares the class attributes listed under Attributes. Angles are radians everywhere,
    including the initial condition (``yaw``).

    Order of calls: the constructor leaves a valid state (``info`` or the origin at rest), so
    :meth:`step`, :meth:`xdot`, :attr:`pose`, :attr:`velocity` and :attr:`speed` may be used in
    any order after it; :meth:`init` may be called again at any time to re-place the car.

    Parameters
    ----------
    params : mapping, optional
        Parameter overrides (unknown names are an error that lists the valid ones).
    info : mapping, optional
        Initial condition, see :meth:`init`. Default: origin, yaw 0, speed 0.

    Attributes
    ----------
    name : str
        Registry name.
    STATE_NAMES, INPUT_NAMES : tuple of str
        Names of the state and input components, in order.
    STATE_UNITS, INPUT_UNITS : tuple of str
        Units of the same components (``"m"``, ``"rad"``, ``"m/s"``, ``"N m"``, ``"-"``); empty
        when undeclared, else the same length as the names (checked when the class is defined).
    PARAMS : dict
        Parameter name -> (default, description with unit). Every parameter has a default.
    reference_offset : float
        Distance [m] from the pose origin back along the car's axis to the rear axle, the point
        the controller tracks (0 for rear-axle models; the 3D car sets its CG-to-rear-axle
        distance per instance).
    default_actuator : str
        Name of the actuator (:data:`mpc_tracking.actuation.ACTUATORS`) that maps the MPC's
        ``(v, delta)`` to this plant's inputs when the user names none.
    integrator, max_substep : str, float
        Fixed-step integrator name (``"euler"``/``"rk4"``) and longest internal substep [s]
        used by the default :meth:`step`.
    mass, yaw_inertia, l_f, l_r, cg_height, driven_axle : optional
        What identification (:func:`mpc_tracking.identify`) needs and cannot measure: mass [kg],
        yaw moment of inertia about the CG [kg m^2], CG to front / rear axle [m], CG height
        above the ground [m] and the driven axle (``"front"``, ``"rear"`` or ``"all"``). None (the
        default) means not declared; a plant declares them as class attributes or sets them per
        instance (e.g. in :meth:`_check_params` from its parameters). :meth:`declared_geometry`
        returns the declared ones. Identification refuses a plant without ``l_f``/``l_r`` (or a
        ``wheelbase`` parameter) and lists every undeclared one it had to assume.
    """

    name: ClassVar[str] = "base"
    STATE_NAMES: ClassVar[tuple[str, ...]] = ()
    INPUT_NAMES: ClassVar[tuple[str, ...]] = ()
    STATE_UNITS: ClassVar[tuple[str, ...]] = ()
    INPUT_UNITS: ClassVar[tuple[str, ...]] = ()
    PARAMS: ClassVar[dict[str, tuple[Any, str]]] = {}
    reference_offset: float = 0.0
    default_actuator: ClassVar[str] = "direct"
    integrator: ClassVar[str] = "rk4"
    max_substep: float | None = 0.01
    #: height [m] of a planar model's pose, set by its :meth:`_initial_state` (see :meth:`_planar_pose`)
    _z: float
    #: keys of the initial condition, see :meth:`init`
    INFO_KEYS: ClassVar[tuple[str, ...]] = ("x", "y", "z", "yaw", "speed")
    #: vehicle mass [kg] (None: not declared; see the class doc, identification)
    mass: float | None = None
    #: yaw moment of inertia about the CG [kg m^2] (None: not declared)
    yaw_inertia: float | None = None
    #: distance CG to front axle [m] (None: not declared)
    l_f: float | None = None
    #: distance CG to rear axle [m] (None: not declared)
    l_r: float | None = None
    #: CG height above the ground [m] (None: not declared)
    cg_height: float | None = None
    #: the axle the drive torque reaches: "front", "rear" or "all" (None: not declared)
    driven_axle: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for names, units in (("STATE_NAMES", "STATE_UNITS"), ("INPUT_NAMES", "INPUT_UNITS")):
            n, u = getattr(cls, names), getattr(cls, units)
            if u and len(u) != len(n):
                raise ModelError(f"{cls.__name__}: {units} has {len(u)} entries, {names} has {len(n)}")

    def __init__(self, params: Mapping[str, Any] | None = None, info: Mapping[str, Any] | None = None) -> None:
        self.t = 0.0
        self.init(info or {}, params)

    # ------------------------------------------------------------------ plugin API
    def init(self, info: Mapping[str, Any], params: Mapping[str, Any] | None = None) -> None:
        """Set parameters and the initial state.

        Parameters
        ----------
        info : mapping
            ``x``, ``y``, ``z`` [m], ``yaw`` [rad, 0 along +x, counter-clockwise], ``speed``
            [m/s]; missing keys default to 0. The key ``heading`` [deg] of earlier versions is
            still accepted (converted, with a ``DeprecationWarning``).
        params : mapping, optional
            Parameter overrides; ``None`` keeps the current parameters (defaults at first).
        """
        if params is not None or not hasattr(self, "params"):
            self.params = self._resolve_params(params or {})
            self._check_params(self.params)
        info = _heading_deg_to_yaw(info, self.name)
        unknown = [k for k in info if k not in self.INFO_KEYS]
        if unknown:
            raise ModelError(
                f"{self.name}: unknown initial-condition key {unknown[0]!r}; expected some of {list(self.INFO_KEYS)}"
            )
        vals = {}
        for k in self.INFO_KEYS:
            v = info.get(k, 0.0)
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise ModelError(f"{self.name}: initial {k} must be a number, got {v!r}") from None
            if not np.isfinite(v):
                raise ModelError(f"{self.name}: initial {k} must be finite, got {v}")
            vals[k] = v
        vals["heading"] = float(np.rad2deg(vals["yaw"]))  # for plugins written before yaw [rad]; deprecated
        self.t = 0.0
        self._state = np.asarray(self._initial_state(vals), dtype=float)

    def step(self, t: float, dt: float, u: Any) -> np.ndarray:
        """Advance the state from time ``t`` by ``dt`` seconds with input ``u`` held constant.

        Returns the new state vector.
        """
        return self._advance(t, dt, self.check_input(u))

    def held_command_stepper(self, limiter: Any) -> Callable[[float, float, int, float, float], float] | None:
        """One compiled call for a control period's plant steps behind a steering limiter, or None (the default).

        ``limiter`` is a :class:`~mpc_tracking.actuation.SteeringLimiter` (its angle ``delta`` [rad], limits
        ``delta_max`` [rad] and ``rate_max`` [rad/s]). A plant that can advance several steps of one held
        command ``(v_cmd, delta_cmd)`` [m/s, rad] at once -- the same numbers as ``n`` calls of
        ``step(t, dt, (v_cmd, limiter(dt, delta_cmd)))`` -- returns ``advance(t, dt, n, v_cmd, delta_cmd) ->
        t_end`` [s] (finite commands: the actuator checks them); the actuator offers it to
        :func:`mpc_tracking.simulate` (:meth:`Actuator.held_command_stepper
        <mpc_tracking.actuation.Actuator.held_command_stepper>`), which then makes one call per control
        period instead of ``n``. When step ``k`` becomes non-finite, ``advance`` raises
        :class:`~mpc_tracking.errors.NonFiniteStateError` with the time ``t`` [s] that step started at as its
        attribute ``t``, the state before it kept.
        """
        return None

    def _advance(self, t: float, dt: float, u: np.ndarray) -> np.ndarray:
        """:meth:`step` after the input check (``u`` from :meth:`check_input`): a subclass that
        checked the input itself integrates through here instead of checking it again."""
        self._check_dt(dt)
        x = integrate(self.xdot, self._state, u, dt, self.integrator, self.max_substep)
        if not np.isfinite(x).all():  # the method: no numpy dispatch wrapper on this hot path
            raise NonFiniteStateError(f"{self.name}.step: the state became non-finite at t = {t + dt:.3f} s")
        self._state = x
        self.t = t + dt
        return x

    def _check_dt(self, dt: Any) -> None:
        """Raise :class:`~mpc_tracking.errors.ModelError` unless ``dt`` is a positive finite number [s]."""
        try:
            ok = math.isfinite(dt) and dt > 0
        except TypeError:
            ok = False
        if not ok:
            raise ModelError(f"{self.name}.step: dt must be a positive number of seconds, got {dt}")

    @abc.abstractmethod
    def xdot(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Right-hand side dx/dt of the model, shape like ``x``."""

    @abc.abstractmethod
    def _initial_state(self, info: dict[str, float]) -> np.ndarray:
        """State vector for the initial condition ``info`` (all of :attr:`INFO_KEYS`; ``yaw`` in rad)."""

    @property
    @abc.abstractmethod
    def pose(self) -> Pose:
        """Position and orientation of the car frame in the world."""

    @property
    @abc.abstractmethod
    def velocity(self) -> Velocity:
        """Linear and angular velocity in the world frame."""

    # ------------------------------------------------------------------ helpers
    def declared_geometry(self) -> dict[str, Any]:
        """The declared identification attributes (those of :data:`GEOMETRY_ATTRIBUTES` that are not None).

        Raises :class:`~mpc_tracking.errors.ModelError` for a declared value that is not a positive
        number (``cg_height`` may be 0) or a ``driven_axle`` outside ``"front"``, ``"rear"``, ``"all"``.
        """
        out: dict[str, Any] = {}
        for k in GEOMETRY_ATTRIBUTES:
            v = getattr(self, k, None)
            if v is None:
                continue
            if k == "driven_axle":
                if v not in DRIVEN_AXLES:
                    raise ModelError(f"{self.name}: driven_axle must be one of {DRIVEN_AXLES} or None, got {v!r}")
                out[k] = v
                continue
            ok = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v)
            if not ok or v < 0 or (v == 0 and k != "cg_height"):
                raise ModelError(f"{self.name}: declared {k} must be a positive number (or None), got {v!r}")
            out[k] = float(v)
        return out

    @property
    def state(self) -> np.ndarray:
        """Full state vector (a copy), ordered as :attr:`STATE_NAMES`."""
        return self._state.copy()

    @state.setter
    def state(self, value: Any) -> None:
        x = np.asarray(value, dtype=float).reshape(-1)
        if x.size != len(self.STATE_NAMES) or not np.all(np.isfinite(x)):
            raise ModelError(f"{self.name}.state: expected {len(self.STATE_NAMES)} finite values {self.STATE_NAMES}")
        self._state = x

    def _planar_pose(self) -> Pose:
        """Pose of a planar model whose state starts with (x, y, heading) and that keeps ``self._z``."""
        x = self._state
        return Pose(float(x[0]), float(x[1]), float(self._z), 0.0, 0.0, float(x[2]))

    @property
    def speed(self) -> float:
        """Signed speed along the car's heading [m/s]."""
        p, v = self.pose, self.velocity
        return float(v.linear[0] * np.cos(p.yaw) + v.linear[1] * np.sin(p.yaw))

    def check_input(self, u: Any) -> np.ndarray:
        """Validate an input vector: shape (len(INPUT_NAMES),) and finite."""
        try:
            ua = np.asarray(u, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise ModelError(f"{self.name}: input must be numeric {self.INPUT_NAMES}, got {u!r}") from None
        if ua.size != len(self.INPUT_NAMES):
            raise ModelError(f"{self.name}: expected {len(self.INPUT_NAMES)} inputs {self.INPUT_NAMES}, got {ua.size}")
        if not all(map(math.isfinite, ua.tolist())):  # a few values: cheaper than np.isfinite(ua).all()
            raise ModelError(f"{self.name}: input must be finite, got {ua}")
        return ua

    @classmethod
    def _resolve_params(cls, overrides: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v[0] for k, v in cls.PARAMS.items()}
        for k, v in overrides.items():
            if k not in cls.PARAMS:
                near = difflib.get_close_matches(k, list(cls.PARAMS), n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ModelError(
                    f"{cls.name}: unknown parameter {k!r}{hint}; valid parameters: {sorted(cls.PARAMS)}"
                )
            out[k] = v
        return out

    @classmethod
    def param_problem(cls, key: str, value: Any) -> str:
        """Why ``value`` cannot be the parameter ``key`` (empty when it may be).

        The model's own schema: the type of the parameter's default in :attr:`PARAMS` (a number,
        a string, true/false; a default of None leaves it to the model), not NaN, and for a model
        integrated by ``solve_ivp`` the ``method`` among scipy's methods. Scenario files report
        the same text with their file and line.
        """
        default, doc = cls.PARAMS[key]
        got = f"got {value!r} ({type(value).__name__})"
        if isinstance(default, bool):
            return "" if isinstance(value, (bool, np.bool_)) else f"expected true or false ({doc}), {got}"
        if isinstance(default, (int, float)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                return f"expected a number ({doc}), {got}"
            return f"expected a number ({doc}), got NaN" if value != value else ""
        if isinstance(default, str):
            if not isinstance(value, str):
                return f"expected a string ({doc}), {got}"
            if key == "method" and getattr(cls, "integrator", None) == "solve_ivp":
                methods = _solve_ivp_methods()
                if methods and value not in methods:
                    near = difflib.get_close_matches(value, methods, n=1, cutoff=0.5)
                    hint = f"; did you mean {near[0]!r}?" if near else ""
                    return f"unknown solve_ivp method {value!r}{hint} (one of {', '.join(methods)})"
        return ""

    def _check_params(self, p: dict[str, Any]) -> None:
        """Validate parameters (override to add physical checks); default: :meth:`param_problem`."""
        for k, v in p.items():
            problem = self.param_problem(k, v)
            if problem:
                raise ModelError(f"{self.name}: parameter {k}: {problem}")

    def _require_positive(self, p: dict[str, Any], *names: str) -> None:
        for k in names:
            v = p[k]
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not np.isfinite(v) or v <= 0:
                raise ModelError(f"{self.name}: parameter {k} must be > 0 ({self.PARAMS[k][1]}), got {v!r}")


def _heading_deg_to_yaw(info: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """Accept the old initial-condition key ``heading`` [deg] as ``yaw`` [rad], with a warning."""
    if "heading" not in info:
        return info
    if "yaw" in info:
        raise ModelError(f"{name}: give the initial yaw [rad] or the old heading [deg], not both")
    warnings.warn(
        f"{name}: initial 'heading' [deg] is deprecated; give 'yaw' in radians", DeprecationWarning, stacklevel=4
    )
    out = {k: v for k, v in info.items() if k != "heading"}
    try:
        out["yaw"] = np.deg2rad(float(info["heading"]))
    except (TypeError, ValueError):
        raise ModelError(f"{name}: initial heading must be a number, got {info['heading']!r}") from None
    return out


def _solve_ivp_methods() -> list[str]:
    """The method names :func:`scipy.integrate.solve_ivp` accepts (empty when scipy does not list them)."""
    try:
        from scipy.integrate._ivp.ivp import METHODS
    except ImportError:  # pragma: no cover - a scipy that moved it: the model reports it at its first step
        return []
    return list(METHODS)
