"""Settings and result types of the spatial MPC (kept apart from the QP machinery in :mod:`mpc`).

The settings come in seven groups, one frozen dataclass per concern (:data:`SETTINGS_GROUPS`):

=============================  ====================  =====================================================
group (attribute)              class                 fields
=============================  ====================  =====================================================
``prediction``                 PredictionSettings    horizon, step, prediction model, timing
``cost``                       CostSettings          weights, mode
``limits``                     LimitSettings         speed, steering, acceleration, corridor margin
``qp``                         QPSettings            QP solver and its tolerances, limits, warm start
``safeguards``                 SafeguardSettings     fallback, safe stop, rejoin
``observer``                   ObserverSettings      disturbance observer (offset-free tracking)
``grip``                       GripSettings          online grip estimation, noticing lost grip
=============================  ====================  =====================================================

Each field is declared once, in its group, with :func:`setting`: default, one-line description,
unit, allowed values or range. The validation, the docstrings (the ``Attributes`` sections are
generated from the declarations), the scenario schema (:mod:`mpc_tracking.scenario.schema`) and
``mpc-tracking check --keys`` all read that declaration. :class:`MPCSettings` holds one group of
each and keeps every field readable and settable by its flat name (``settings.v_max``,
``MPCSettings(v_max=12.0)``); field names are unique across the groups.
"""
from __future__ import annotations

import difflib
import inspect
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import Field, dataclass, field, fields
from enum import Enum
from functools import cached_property
from typing import Any

import numpy as np

from mpc_tracking.errors import SettingsError

__all__ = [
    "MPCSettings", "MPCSolution", "Status", "MODES", "LINEARIZATIONS", "WARM_STARTS", "SOLVERS", "MAX_HORIZON",
    "PredictionSettings", "CostSettings", "LimitSettings", "QPSettings", "SafeguardSettings", "ObserverSettings",
    "GripSettings", "SETTINGS_GROUPS", "SettingsGroup", "setting", "settings_fields", "field_choices", "field_doc",
    "field_group",
]

MODES = ("tracking", "time_optimal")
LINEARIZATIONS = ("auto", "previous", "reference")
WARM_STARTS = ("solver", "shift", "none")
#: longest horizon accepted (a QP of ~100 000 variables; far beyond any useful look-ahead)
MAX_HORIZON = 10_000

#: what a field's ``kind`` (from its default) accepts, for messages and the scenario schema
KINDS = ("int", "float", "float?", "bool", "str", "weights")


# ---------------------------------------------------------------------- documented fields
@dataclass(frozen=True)
class Bounds:
    """Range of a numeric setting: ``gt`` (greater than), ``ge`` (at least), ``lt``, ``le``; inf allowed or not."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    allow_inf: bool = False

    def lower_problem(self, x: float) -> str | None:
        """The lower bound ``x`` breaks (``"> 0"``), or None."""
        if self.gt is not None and not x > self.gt:
            return f"> {self.gt:g}"
        if self.ge is not None and not x >= self.ge:
            return f">= {self.ge:g}"
        return None

    def upper_problem(self, x: float) -> str | None:
        """The upper bound ``x`` breaks (``"at most 10000"``), or None."""
        if self.lt is not None and not x < self.lt:
            return f"< {self.lt:.6g}"
        if self.le is not None and not x <= self.le:
            return f"at most {self.le:g}"
        return None

    def text(self) -> str:
        """The range in words (``"> 0 (inf allowed)"``; empty when unbounded)."""
        pairs = ((">", self.gt, "g"), (">=", self.ge, "g"), ("<", self.lt, ".6g"), ("<=", self.le, "g"))
        parts = [f"{op} {bound:{fmt}}" for op, bound, fmt in pairs if bound is not None]
        return " and ".join(parts) + (" (inf allowed)" if self.allow_inf else "")


def setting(default: Any, doc: str, unit: str, *,
            choices: tuple[str, ...] | Callable[[], Sequence[str]] | None = None,
            gt: float | None = None, ge: float | None = None, lt: float | None = None, le: float | None = None,
            allow_inf: bool = False, notes: str = "") -> Any:
    """A settings field, documented where it is declared (the one place of its facts).

    Parameters
    ----------
    default : int, float, bool, str, tuple or None
        Default value; its type gives the field's kind (:data:`KINDS`): a tuple is a weight
        vector (``"weights"``), None an optional number (``"float?"``).
    doc : str
        One-line description (``mpc-tracking check --keys`` shows it).
    unit : str
        SI unit (``"m/s"``), ``"-"`` when the value has none.
    choices : tuple of str or callable, optional
        Allowed values of a text field; a callable returning them is resolved when they are
        needed (registries filled at import, e.g. the prediction models).
    gt, ge, lt, le : float, optional
        Range of a number: greater than, at least, less than, at most.
    allow_inf : bool
        A float field may be ``inf`` (no limit).
    notes : str
        Longer explanation for the docstring (numpydoc text, may hold roles).

    Returns
    -------
    dataclasses.Field
        Typed ``Any``, as it stands in for the field's value in the class body.
    """
    meta = {"doc": doc, "unit": unit, "kind": _kind_of(default), "choices": choices,
            "bounds": Bounds(gt, ge, lt, le, allow_inf), "notes": notes}
    return field(default=default, metadata=meta)


def _kind_of(default: Any) -> str:
    if default is None:
        return "float?"
    if isinstance(default, tuple):
        return "weights"
    for kind, typ in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if isinstance(default, typ):
            return kind
    raise TypeError(f"setting: no kind for a default of type {type(default).__name__}")  # pragma: no cover


def field_choices(f: Field) -> tuple[str, ...] | None:
    """The allowed values of a settings field (a callable in its declaration is called)."""
    choices = f.metadata.get("choices")
    return tuple(choices()) if callable(choices) else choices


def _discretizations() -> Sequence[str]:
    from mpc_tracking.models.prediction.spatial_bicycle import DISCRETIZATIONS

    return DISCRETIZATIONS


#: the names ``MPCSettings.solver`` takes: the registered QP back ends, in registration order
#: (:func:`mpc_tracking.mpc.backends.register` adds to it; "osqp" and "daqp" are built in)
SOLVERS: list[str] = []


def _qp_backends() -> Sequence[str]:
    """The registered QP back ends (:data:`SOLVERS`)."""
    return tuple(SOLVERS)


def _prediction_models() -> Sequence[str]:
    """'auto' and the registered prediction models, sorted (a list: the message says
    "one of ['auto', 'dynamic', 'kinematic']")."""
    from mpc_tracking.models.prediction import PREDICTION_MODELS

    return ["auto", *sorted(PREDICTION_MODELS)]


# ---------------------------------------------------------------------- checks, one per kind
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


_CHECKS: dict[str, Callable[[str, Any, Mapping[str, Any]], None]] = {
    "int": _check_int, "float": _check_float, "float?": _check_optional_float, "bool": _check_bool,
    "str": _check_str, "weights": _check_weights,
}


def _weight_matrix(value: Any, n: int, name: str) -> np.ndarray:
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


# ---------------------------------------------------------------------- the groups
@dataclass(frozen=True)
class SettingsGroup:
    """Base of the settings groups: every field is checked from its declaration (:func:`setting`) on
    construction; a bad value is a :class:`~mpc_tracking.errors.SettingsError` naming
    ``<Group>.<field>`` and the expected range."""

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for f in fields(self):
            _CHECKS[f.metadata["kind"]](f"{owner}.{f.name}", getattr(self, f.name), f.metadata)
        self._check_together()

    def _check_together(self) -> None:
        """Checks that involve several fields of the group (none unless a group has some)."""


@dataclass(frozen=True)
class PredictionSettings(SettingsGroup):
    """How the controller predicts: horizon, step, model, linearization and timing."""

    horizon: int = setting(30, "Number N of prediction steps", "steps", ge=1, le=MAX_HORIZON)
    ds: float | None = setting(None, "Prediction step along the path (null: the path's waypoint spacing)", "m", gt=0)
    prediction_model: str = setting(
        "auto", "The controller's model of the car", "-", choices=_prediction_models,
        notes="'kinematic': the kinematic spatial bicycle (state e_y, e_psi, t; input v, delta), or 'dynamic': the "
              "dynamic one with tyre forces (adds v_x, v_y, r; input a_x, delta; see "
              ":mod:`mpc_tracking.models.prediction`). 'auto' (default): the dynamic model when the run has a "
              "plant that slips (the 3D car) or a vehicle file with tyre data (a scenario, see "
              ":func:`mpc_tracking.scenario.defaults.grip_defaults`), else the kinematic one; a "
              ":class:`SpatialMPC` built without a ``prediction`` object uses the kinematic model.")
    discretization: str = setting(
        "euler", "How the spatial model is discretized over one step ds", "-", choices=_discretizations,
        notes="'euler': explicit Euler (``A = I + ds Jx``), or 'rk4': one classical Runge-Kutta step with its exact "
              "sensitivities (more accurate at large ``ds``, a little more work).")
    linearization: str = setting(
        "auto", "Operating point of the linearization", "-", choices=LINEARIZATIONS,
        notes="'previous': the previous solution shifted by the distance travelled (real-time iteration); "
              "'reference': the reference (e = 0, v_ref, path curvature); 'auto' takes the prediction model's "
              "own choice (``PredictionModel.LINEARIZATION``): 'previous' for the kinematic model, 'reference' "
              "for the dynamic one (about a shifted plan its stiff tyre dynamics made the steering oscillate at "
              "the grip limit: RMS e_y 15-41 cm and 2-3 m excursions on the shared race tracks at 0.85 of the "
              "sedan's limit, 7-18 cm about the reference).")
    iterations: int = setting(1, "Re-linearizations per step (each re-solves about the newest solution)", "-", ge=1)
    control_period: float = setting(0.05, "Time between two solves; bounds the change of the first input", "s",
                                    gt=0)
    delay: float = setting(0.0, "Computation/actuation delay the measured state is predicted over", "s", ge=0)


@dataclass(frozen=True)
class CostSettings(SettingsGroup):
    """Weights of the cost and the mode.

    The cost, summed over the horizon (k = 1..N for states, 0..N-1 for inputs)::

        1/2 (x_k - x_ref)^T Q (x_k - x_ref)   (Q_N = terminal_weight * Q at k = N)
        + 1/2 (u_k - u_ref)^T R (u_k - u_ref) + 1/2 (u_k - u_{k-1})^T R_rate (u_k - u_{k-1})
        + slack_weight * (corridor violation [m]) + time_weight * t_N   (time-optimal mode)
    """

    Q: Any = setting(
        (1.0, 2.0, 0.0), "State weights: 3 numbers or a 3x3 PSD matrix on (e_y, e_psi, t)", "1/unit^2",
        notes="For a prediction model with more states, its own number of weights, or 3 (the others then get "
              "the model's defaults).")
    R: Any = setting((0.2, 2.0), "Input weights: 2 numbers or a 2x2 PSD matrix on the inputs minus their reference",
                     "1/unit^2", notes="Inputs (v [m/s], delta [rad]) for the kinematic model, (a_x [m/s^2], "
                                       "delta [rad]) for the dynamic one.")
    R_rate: Any = setting((0.5, 20.0), "Input-change weights: 2 numbers or a 2x2 PSD matrix", "1/unit^2")
    terminal_weight: float = setting(5.0, "Factor on Q at the last prediction step", "-", ge=0)
    slack_weight: float = setting(1.0e3, "Exact-penalty weight per metre of corridor violation", "1/m", gt=0)
    mode: str = setting(
        "tracking", "What the cost asks for: follow the reference, or minimise the time", "-", choices=MODES,
        notes="'tracking' follows the centre line (or the corridor's lateral reference) and the speed "
              "reference; 'time_optimal' minimises the predicted time to the horizon's end inside the "
              "corridor (``time_weight``).")
    time_weight: float = setting(10.0, "Weight on the predicted time t_N in time-optimal mode", "1/s", ge=0)

    def _check_together(self) -> None:  # the matrices are made once, here (checked on the way)
        self.__dict__["R_matrix"] = _weight_matrix(self.R, 2, f"{type(self).__name__}.R")
        self.__dict__["R_rate_matrix"] = _weight_matrix(self.R_rate, 2, f"{type(self).__name__}.R_rate")

    @cached_property
    def R_matrix(self) -> np.ndarray:
        """``R`` as a 2x2 matrix, shape (2, 2)."""
        return _weight_matrix(self.R, 2, f"{type(self).__name__}.R")

    @cached_property
    def R_rate_matrix(self) -> np.ndarray:
        """``R_rate`` as a 2x2 matrix, shape (2, 2)."""
        return _weight_matrix(self.R_rate, 2, f"{type(self).__name__}.R_rate")


@dataclass(frozen=True)
class LimitSettings(SettingsGroup):
    """What the car may do: speed, steering, acceleration and the corridor's clearance."""

    v_min: float = setting(0.5, "Lowest speed", "m/s", gt=0)
    v_max: float = setting(10.0, "Top speed", "m/s", gt=0)
    delta_max: float = setting(0.5, "Steering bound", "rad", gt=0, lt=0.5 * math.pi)
    a_y_max: float = setting(4.0, "Lateral acceleration limit: v <= sqrt(a_y_max / |kappa|)", "m/s^2", gt=0)
    accel_max: float = setting(math.inf, "Acceleration bound (rate of the speed)", "m/s^2", gt=0, allow_inf=True)
    decel_max: float = setting(math.inf, "Braking bound (rate of the speed)", "m/s^2", gt=0, allow_inf=True)
    power_per_mass: float = setting(
        math.inf, "Power limit P/m: the acceleration bound at speed v is min(accel_max, power_per_mass / v)",
        "W/kg", gt=0, allow_inf=True,
        notes="inf (default): not limited. In the whole-path speed profile and, for models with an acceleration "
              "input (dynamic), in the QP's bound on it at each step's planned speed. From a vehicle file's "
              "``power_per_mass`` (times ``grip_fraction``) when left at the default.")
    delta_rate_max: float = setting(math.inf, "Steering rate bound", "rad/s", gt=0, allow_inf=True)
    corridor_margin: float = setting(0.0, "Extra clearance kept from the corridor edges", "m", ge=0)
    friction_ellipse: bool = setting(
        False, "Combine longitudinal and lateral acceleration on an ellipse", "-",
        notes="Semi-axes (accel_max or decel_max, a_y_max): in the whole-path speed ceilings (less braking and "
              "acceleration in corners, :func:`mpc_tracking.paths.speed_profile.speed_profile`) and, for models "
              "with an acceleration input (dynamic), in the QP's per-step bounds on it.")
    ellipse_cuts: bool = setting(
        False, "Hold the friction ellipse in the QP as soft linear cuts", "-",
        notes="With ``friction_ellipse`` and a model with an acceleration input: tangents at 30..150 deg, one "
              "exact-penalty slack per step (:data:`mpc_tracking.mpc.qp.ELLIPSE_CUT_ANGLES`), coupling the "
              "acceleration input with the planned lateral acceleration ``v_x r``, instead of acceleration "
              "bounds frozen at the operating point's lateral acceleration (the default).")
    grip_fraction: float = setting(
        0.9, "Share of the car's own limits the controller uses where it takes them from the car", "-",
        gt=0, le=1,
        notes="Where the limits come from the car (a vehicle file's identified lateral, braking and acceleration "
              "limits; the 3D plant's friction mu g), the controller uses this share of them. Limits set "
              "explicitly (a value other than the default ``a_y_max = 4``, a finite ``accel_max``/``decel_max``) "
              "win (see :func:`mpc_tracking.scenario.defaults.grip_defaults`).")
    grip_defaults: bool = setting(
        True, "Settings left at their defaults follow from the car when a scenario is built", "-",
        notes="True (default): the prediction model, the limits scaled by ``grip_fraction`` and, for the dynamic "
              "model, the friction ellipse, RK4 and ``ds >= 1 m``, which hold at the grip limit. False: the "
              "settings are used exactly as given (a combination known to be unsafe is still warned about).")

    def _check_together(self) -> None:
        if self.v_min > self.v_max:
            raise SettingsError(f"{type(self).__name__}: v_min = {self.v_min} must be <= v_max = {self.v_max} m/s")


@dataclass(frozen=True)
class QPSettings(SettingsGroup):
    """The QP solver: which one, its tolerances and limits, and how it is warm-started."""

    solver: str = setting(
        "osqp", "QP solver: a registered back end (:func:`mpc_tracking.mpc.backends.available`)", "-",
        choices=_qp_backends,
        notes="'osqp': OSQP's ADMM on the sparse QP (states, inputs and slacks), set up once and updated in "
              "place; cost grows linearly with the horizon, accuracy is ``eps_abs``/``eps_rel``. 'daqp': the QP "
              "condensed onto the inputs and solved exactly by DAQP's dual active-set method, warm-started from "
              "the last active set (:mod:`mpc_tracking.mpc.condensed`); its cost grows with the square of the "
              "horizon but does not depend on conditioning, so QPs with long chains of active rows (obstacles) "
              "that take ADMM thousands of iterations take it a few hundred. Same QP, same soft corridor; no "
              "friction-ellipse cuts.")
    warm_start: str = setting(
        "solver", "How each solve is started", "-", choices=WARM_STARTS,
        notes="'solver': the solver reuses its last primal/dual solution; 'shift': warm start from the previous "
              "plan shifted along s; 'none': cold start every step.")
    eps_abs: float = setting(1e-5, "Absolute tolerance (OSQP)", "-", gt=0)
    eps_rel: float = setting(1e-5, "Relative tolerance (OSQP)", "-", ge=0)
    max_iter: int = setting(4000, "Iteration limit per solve", "-", ge=1)
    max_solve_time: float = setting(
        math.inf, "Time limit per solve (inf: none)", "s", gt=0, allow_inf=True,
        notes="A solve that hits it counts as failed and takes the fallback path (the previous plan, then a "
              "safe stop), so a real-time loop never waits longer than this for a command. Its own overhead "
              "around the solve is not included.")
    compiled: str = setting(
        "auto", "Where the step's numbers are computed: compiled kernels or numpy", "-",
        choices=("auto", "numba", "python"),
        notes="'auto': the numba kernels (:mod:`mpc_tracking.mpc.kernels`) when numba is installed (the extra "
              "``mpc_tracking[fast]``), else numpy; 'numba': the kernels, an error without numba; 'python': "
              "numpy only. Both give the same numbers (to rounding, 1e-12).")
    blas_threads: int = setting(
        1, "BLAS threads while the controller computes a step (0: leave BLAS as it is)", "-", ge=0,
        notes="The step's dense algebra is small; spread over several threads it slows down by an order of "
              "magnitude when other processes keep the cores busy. The limit holds only during "
              ":meth:`SpatialMPC.solve <mpc_tracking.mpc.SpatialMPC.solve>` and is restored after it "
              "(:mod:`mpc_tracking.mpc.blas`); an outer, lower limit stays as it is.")


@dataclass(frozen=True)
class SafeguardSettings(SettingsGroup):
    """What happens when the solver fails or the car leaves the spatial model's domain."""

    max_fallback_steps: int = setting(5, "Steps the previous plan may be used after a solver failure before a "
                                         "safe stop", "steps", ge=0)
    brake_decel: float = setting(
        3.0, "Deceleration of the safe stop", "m/s^2", gt=0,
        notes="It brakes from the measured speed (when the caller passes ``measured={'speed': ...}``, as "
              ":func:`~mpc_tracking.simulate` does), else from the last command.")
    rejoin: bool = setting(
        True, "Steer back to the path geometrically when outside the model's domain (false: an error)", "-",
        notes="Outside the spatial model's domain (|e_psi| >= 1.2 rad, or e_y beyond 90 % of the radius of "
              "curvature) steer back to the path by pure pursuit of a point ahead on it (full lock when the point "
              "is behind), at the speed of the tightest turn, until |e_psi| < 0.6 rad, e_y kappa < 0.5 and |e_y| "
              "is within one minimum turning radius; then the MPC takes over (:mod:`mpc_tracking.mpc.rejoin`). "
              "False: such a state is an :class:`~mpc_tracking.errors.InputError`.")


@dataclass(frozen=True)
class ObserverSettings(SettingsGroup):
    """The disturbance observer (offset-free tracking)."""

    disturbance_observer: bool = setting(
        False, "Estimate a constant disturbance on the prediction model and add it to every step", "-",
        notes="The estimate comes from the one-step prediction residuals (see :mod:`mpc_tracking.mpc.disturbance`); "
              "reset by :meth:`SpatialMPC.reset`.")
    disturbance_time_constant: float = setting(0.5, "Low-pass time constant of the disturbance estimate", "s", gt=0)
    disturbance_max: float = setting(3.0, "Bound on the disturbance estimate, as an acceleration (converted per "
                                          "state, see mpc_tracking.mpc.disturbance)", "m/s^2", gt=0)


@dataclass(frozen=True)
class GripSettings(SettingsGroup):
    """Online grip estimation and what the controller does with it (:mod:`mpc_tracking.mpc.grip`)."""

    grip_estimation: bool = setting(
        True, "Estimate the road's friction online and scale the limits with it", "-",
        notes="On by default; it works with the dynamic prediction model on a car that reports v_x, v_y, r (its "
              "tyres and the measured response). With the kinematic model it is off (one info message), and "
              "without v_y, r in the measurements the limits stay as set. Every step the per-axle estimate "
              "(:class:`~mpc_tracking.mpc.grip.GripEstimator`) scales a_y_max, decel_max, accel_max, the friction "
              "ellipse, the whole-path speed ceilings, the prediction model's tyre peak and the safe stop's "
              "braking by the share of the nominal friction the estimate's lower confidence bound leaves "
              "(at most 1); a slide lowers them within the step. On a dry road it costs 0.3-0.4 % lap time "
              "(the sedan at 0.95 of its limits, 12 generated circuits: +0.32 % median, +0.38 % worst, "
              "benchmarks/results/grip_dry_cost_circuits_*.json); False: the limits exactly as set.")
    grip_mu: float | None = setting(
        None, "Friction the limits and the prediction model were set for (null: the prediction model's mu)", "-",
        gt=0)
    grip_margin: float = setting(1.0, "Confidence margin of the plan: it uses mu - margin sigma", "-", ge=0)
    grip_sigma_max: float = setting(
        0.015, "Largest standard deviation of the estimate (where nothing informs it), as a share of grip_mu", "-",
        ge=0, notes="With ``grip_margin`` it bounds how far the plan stays below a confirmed grip without cause: "
                    "``grip_margin * grip_sigma_max`` of the limits (1.5 % by default).")
    grip_sigma_growth: float = setting(
        0.005, "Growth of the estimate's standard deviation without information, as a share of grip_mu per "
               "square root of a second", "1/sqrt(s)", ge=0)
    grip_slide_sideslip: float = setting(0.12, "Body sideslip angle beyond which the car counts as sliding", "rad",
                                         gt=0)


#: the groups of :class:`MPCSettings`: attribute name -> class, in declaration order
SETTINGS_GROUPS: dict[str, type[SettingsGroup]] = {
    "prediction": PredictionSettings, "cost": CostSettings, "limits": LimitSettings, "qp": QPSettings,
    "safeguards": SafeguardSettings, "observer": ObserverSettings, "grip": GripSettings,
}


def settings_fields() -> Iterator[tuple[str, Field]]:
    """``(group name, field)`` of every setting, in declaration order (the fields carry the docs)."""
    for name, cls in SETTINGS_GROUPS.items():
        for f in fields(cls):
            yield name, f


#: flat field name -> its group's attribute name
_GROUP_OF: dict[str, str] = {f.name: g for g, f in settings_fields()}


def field_group(name: str) -> str:
    """The group (attribute name) that holds the setting ``name`` (``"v_max"`` -> ``"limits"``)."""
    try:
        return _GROUP_OF[name]
    except KeyError:
        raise _unknown_setting(name) from None


def _unknown_setting(key: str, where: str = "MPCSettings") -> SettingsError:
    valid = list(_GROUP_OF) + list(SETTINGS_GROUPS)
    near = difflib.get_close_matches(str(key), valid, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return SettingsError(f"{where}: unknown setting {key!r}{hint}")


# ---------------------------------------------------------------------- generated documentation
def _type_text(f: Field) -> str:
    kind = f.metadata["kind"]
    choices = f.metadata["choices"]
    if kind == "str" and isinstance(choices, tuple):
        return "{" + ", ".join(f'"{c}"' for c in choices) + "}"
    return {"weights": "sequence of float or ndarray", "float?": "float or None"}.get(kind, kind)


def field_doc(f: Field) -> str:
    """The description of a settings field: doc, unit, range, notes and default (one paragraph)."""
    m = f.metadata
    text = m["doc"]
    text += "" if m["unit"] == "-" else f" [{m['unit']}]"
    rng = m["bounds"].text()
    text += f"; {rng}." if rng else "."
    text += f" {m['notes']}" if m["notes"] else ""
    return text + f" Default: ``{f.default!r}``."


def _attributes_section(items: list[Field]) -> str:
    lines = ["Attributes", "----------"]
    for f in items:
        lines.append(f"{f.name} : {_type_text(f)}")
        lines.append("    " + field_doc(f))
    return "\n".join(lines)


def _document(cls: type, items: list[Field], intro: str = "") -> None:
    """Add the generated ``Attributes`` section to ``cls.__doc__`` (before its ``Examples``, if any)."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    head, examples, tail = doc.partition("\nExamples\n--------\n")
    cls.__doc__ = f"{head.rstrip()}\n\n{intro}{_attributes_section(items)}\n" + (examples + tail if examples else "")


for _group_cls in SETTINGS_GROUPS.values():
    _document(_group_cls, list(fields(_group_cls)))
del _group_cls


# ---------------------------------------------------------------------- the whole
@dataclass(frozen=True, init=False)
class MPCSettings:
    """Settings of :class:`~mpc_tracking.mpc.controller.SpatialMPC`, validated on construction.

    Seven groups (:data:`SETTINGS_GROUPS`), each a frozen dataclass: :attr:`prediction`
    (:class:`PredictionSettings`), :attr:`cost` (:class:`CostSettings`), :attr:`limits`
    (:class:`LimitSettings`), :attr:`qp` (:class:`QPSettings`), :attr:`safeguards`
    (:class:`SafeguardSettings`), :attr:`observer` (:class:`ObserverSettings`) and :attr:`grip`
    (:class:`GripSettings`); the cost
    they weigh is written out in :class:`CostSettings`. Every field
    is also an attribute of its own (``settings.v_max``, the same as ``settings.limits.v_max``),
    and the keyword arguments take flat names, groups (an instance or a mapping), or both for
    different groups. A bad value is a :class:`~mpc_tracking.errors.SettingsError` naming the
    field and its range; an unknown name suggests the nearest one.

    Parameters
    ----------
    prediction, cost, limits, qp, safeguards, observer, grip : group or mapping, optional
        A whole group (its fields not given by flat name take its values).
    **flat
        Any field by name (``horizon=20, v_max=12.0``).

    Examples
    --------
    >>> s = MPCSettings(horizon=20, limits=LimitSettings(v_max=12.0, a_y_max=3.0))
    >>> s.v_max, s.limits.v_max, s.prediction.horizon
    (12.0, 12.0, 20)
    >>> s == MPCSettings(horizon=20, v_max=12.0, a_y_max=3.0)
    True
    >>> s.replace(qp={"solver": "daqp"}).solver
    'daqp'
    """

    # The flat fields, one line each, group by group (a typed view for readers and type checkers:
    # the defaults come from the groups, where each field is declared and documented; an import-time
    # check, _check_flat_fields, keeps this list and the groups the same).
    # -- prediction
    horizon: int = PredictionSettings.horizon
    ds: float | None = PredictionSettings.ds
    prediction_model: str = PredictionSettings.prediction_model
    discretization: str = PredictionSettings.discretization
    linearization: str = PredictionSettings.linearization
    iterations: int = PredictionSettings.iterations
    control_period: float = PredictionSettings.control_period
    delay: float = PredictionSettings.delay
    # -- cost
    Q: Any = CostSettings.Q
    R: Any = CostSettings.R
    R_rate: Any = CostSettings.R_rate
    terminal_weight: float = CostSettings.terminal_weight
    slack_weight: float = CostSettings.slack_weight
    mode: str = CostSettings.mode
    time_weight: float = CostSettings.time_weight
    # -- limits
    v_min: float = LimitSettings.v_min
    v_max: float = LimitSettings.v_max
    delta_max: float = LimitSettings.delta_max
    a_y_max: float = LimitSettings.a_y_max
    accel_max: float = LimitSettings.accel_max
    decel_max: float = LimitSettings.decel_max
    power_per_mass: float = LimitSettings.power_per_mass
    delta_rate_max: float = LimitSettings.delta_rate_max
    corridor_margin: float = LimitSettings.corridor_margin
    friction_ellipse: bool = LimitSettings.friction_ellipse
    ellipse_cuts: bool = LimitSettings.ellipse_cuts
    grip_fraction: float = LimitSettings.grip_fraction
    grip_defaults: bool = LimitSettings.grip_defaults
    # -- qp
    solver: str = QPSettings.solver
    warm_start: str = QPSettings.warm_start
    eps_abs: float = QPSettings.eps_abs
    eps_rel: float = QPSettings.eps_rel
    max_iter: int = QPSettings.max_iter
    max_solve_time: float = QPSettings.max_solve_time
    compiled: str = QPSettings.compiled
    blas_threads: int = QPSettings.blas_threads
    # -- safeguards
    max_fallback_steps: int = SafeguardSettings.max_fallback_steps
    brake_decel: float = SafeguardSettings.brake_decel
    rejoin: bool = SafeguardSettings.rejoin
    # -- observer
    disturbance_observer: bool = ObserverSettings.disturbance_observer
    disturbance_time_constant: float = ObserverSettings.disturbance_time_constant
    disturbance_max: float = ObserverSettings.disturbance_max
    # -- grip
    grip_estimation: bool = GripSettings.grip_estimation
    grip_mu: float | None = GripSettings.grip_mu
    grip_margin: float = GripSettings.grip_margin
    grip_sigma_max: float = GripSettings.grip_sigma_max
    grip_sigma_growth: float = GripSettings.grip_sigma_growth
    grip_slide_sideslip: float = GripSettings.grip_slide_sideslip
    # -- derived (the weights as matrices, sized by the prediction model)
    Q_matrix: np.ndarray = field(init=False, repr=False, compare=False)
    R_matrix: np.ndarray = field(init=False, repr=False, compare=False)
    R_rate_matrix: np.ndarray = field(init=False, repr=False, compare=False)

    def __init__(self, *, prediction: PredictionSettings | Mapping[str, Any] | None = None,
                 cost: CostSettings | Mapping[str, Any] | None = None,
                 limits: LimitSettings | Mapping[str, Any] | None = None,
                 qp: QPSettings | Mapping[str, Any] | None = None,
                 safeguards: SafeguardSettings | Mapping[str, Any] | None = None,
                 observer: ObserverSettings | Mapping[str, Any] | None = None,
                 grip: GripSettings | Mapping[str, Any] | None = None, **flat: Any) -> None:
        given = {"prediction": prediction, "cost": cost, "limits": limits, "qp": qp, "safeguards": safeguards,
                 "observer": observer, "grip": grip}
        groups = _build_groups({k: v for k, v in given.items() if v is not None}, flat)
        for group in groups.values():
            for f in fields(group):
                object.__setattr__(self, f.name, getattr(group, f.name))
        self.__dict__.update(groups)  # the cached group properties below
        q_matrix = _q_matrix(self.Q, self.prediction_model)
        object.__setattr__(self, "Q_matrix", q_matrix)
        object.__setattr__(self, "R_matrix", self.cost.R_matrix)
        object.__setattr__(self, "R_rate_matrix", self.cost.R_rate_matrix)

    # the groups (set on construction; cached_property so that a copy made without __init__ rebuilds them)
    @cached_property
    def prediction(self) -> PredictionSettings:
        """Horizon, step, prediction model, linearization and timing (:class:`PredictionSettings`)."""
        return PredictionSettings(**self._values("prediction"))

    @cached_property
    def cost(self) -> CostSettings:
        """Weights and mode (:class:`CostSettings`)."""
        return CostSettings(**self._values("cost"))

    @cached_property
    def limits(self) -> LimitSettings:
        """Speed, steering, acceleration limits and corridor margin (:class:`LimitSettings`)."""
        return LimitSettings(**self._values("limits"))

    @cached_property
    def qp(self) -> QPSettings:
        """QP solver, tolerances, limits and warm start (:class:`QPSettings`)."""
        return QPSettings(**self._values("qp"))

    @cached_property
    def safeguards(self) -> SafeguardSettings:
        """Fallback, safe stop and rejoin (:class:`SafeguardSettings`)."""
        return SafeguardSettings(**self._values("safeguards"))

    @cached_property
    def observer(self) -> ObserverSettings:
        """The disturbance observer (:class:`ObserverSettings`)."""
        return ObserverSettings(**self._values("observer"))

    @cached_property
    def grip(self) -> GripSettings:
        """Online grip estimation (:class:`GripSettings`)."""
        return GripSettings(**self._values("grip"))

    def _values(self, group: str) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(SETTINGS_GROUPS[group])}

    def as_dict(self, grouped: bool = False) -> dict[str, Any]:
        """The settings as plain values: ``{name: value}``, or ``{group: {name: value}}`` when ``grouped``.

        Either form constructs equal settings again (``MPCSettings(**s.as_dict(grouped=True))``).
        """
        if grouped:
            return {g: self._values(g) for g in SETTINGS_GROUPS}
        return {name: getattr(self, name) for name in _GROUP_OF}

    def replace(self, **changes: Any) -> MPCSettings:
        """A copy with some fields changed, validated again.

        ``changes`` take flat names (``v_max=12.0``), whole groups (``limits=LimitSettings(...)``: the
        group's other fields take its values) or group mappings (``qp={"solver": "daqp"}``: only the
        fields named change).
        """
        for key in changes:
            if key not in _GROUP_OF and key not in SETTINGS_GROUPS:
                raise _unknown_setting(key)
        kept = self.as_dict()
        for group, value in changes.items():
            if group in SETTINGS_GROUPS:  # a whole group drops its fields, a mapping those it names
                names = value if isinstance(value, Mapping) else self._values(group)
                kept = {k: v for k, v in kept.items() if k not in names}
        return MPCSettings(**{**kept, **changes})


def _build_groups(given: dict[str, Any], flat: Mapping[str, Any]) -> dict[str, SettingsGroup]:
    """One validated group each: a given group (instance or mapping) updated by the flat fields of it."""
    per_group: dict[str, dict[str, Any]] = {g: {} for g in SETTINGS_GROUPS}
    for key, value in flat.items():
        if key not in _GROUP_OF:
            raise _unknown_setting(key)
        per_group[_GROUP_OF[key]][key] = value
    return {g: _group(g, given.get(g), per_group[g]) for g in SETTINGS_GROUPS}


def _group(name: str, given: Any, flat: dict[str, Any]) -> SettingsGroup:
    """The group ``name`` from what was given for it (None, an instance or a mapping) and its flat fields."""
    cls = SETTINGS_GROUPS[name]
    if given is None:
        values: dict[str, Any] = {}
    elif isinstance(given, cls):
        values = {f.name: getattr(given, f.name) for f in fields(given)}
    elif isinstance(given, Mapping):
        values = dict(given)
        for key in values:
            if _GROUP_OF.get(key) != name:
                raise _unknown_setting(key, f"MPCSettings.{name}")
    else:
        raise SettingsError(f"MPCSettings.{name}: expected a {cls.__name__} or a mapping, got {given!r}")
    twice = sorted(set(flat) & set(values)) if given is not None else []
    if twice:
        raise SettingsError(f"MPCSettings: {twice[0]!r} given twice, by name and in {name}; give it once")
    try:
        return cls(**{**values, **flat})
    except SettingsError as exc:  # name the field as MPCSettings.<name>: the names are unique
        text = str(exc)
        renamed = "MPCSettings" + text[len(cls.__name__):] if text.startswith(cls.__name__) else text
        raise SettingsError(renamed) from None


def _q_matrix(Q: Any, prediction_model: str) -> np.ndarray:
    """Q as a matrix sized by the prediction model (3 weights also suit a model with more states)."""
    from mpc_tracking.models.prediction import prediction_model_sizes

    if prediction_model == "auto":  # either model: 3 weights, or the dynamic model's 6
        nx = 6 if np.size(Q) in (6, 36) else 3
    else:
        nx, _nu = prediction_model_sizes(prediction_model)
    n_q = nx if np.size(Q) in (nx, nx * nx) and nx != 3 else 3
    if nx != 3 and np.size(Q) not in (1, 3, 9, nx, nx * nx):
        raise SettingsError(f"MPCSettings.Q: expected 3 or {nx} weights for the {prediction_model} "
                            f"prediction model, got {np.size(Q)} values")
    return _weight_matrix(Q, n_q, "MPCSettings.Q")


def _check_flat_fields() -> None:
    """The flat fields of MPCSettings are those of the groups, in their order, with their types and defaults."""
    flat = [(f.name, f.type, f.default) for f in fields(MPCSettings) if f.init]
    declared = [(f.name, f.type, f.default) for _g, f in settings_fields()]
    if flat != declared:
        diff = next((a, b) for a, b in zip([*flat, None], [*declared, None], strict=False) if a != b)
        raise TypeError(f"MPCSettings: the flat fields must list the groups' fields in order with the same "
                        f"type and default (MPCSettings has {diff[0]}, the groups {diff[1]}); add a new field to "
                        f"its group with setting(...) and one line 'name: type = Group.name' to MPCSettings")


_check_flat_fields()
_document(MPCSettings, [f for _g, f in settings_fields()],
          intro="The fields, group by group (prediction, cost, limits, qp, safeguards, observer, grip):\n\n")


class Status(str, Enum):
    """Outcome of one MPC step; compares equal to its string value (``Status.SOLVED == "solved"``).

    :attr:`code` is the integer stored in logged time series (``SimulationResult.series["status"]``).
    """

    SOLVED = "solved"
    SOLVED_INACCURATE = "solved_inaccurate"
    FALLBACK = "fallback"  # solver failed: the previous plan, shifted, is reused
    SAFE_STOP = "safe_stop"  # fallback exhausted: braking at brake_decel, wheel held
    REJOIN = "rejoin"  # outside the spatial model's domain: steering back to the path geometrically

    def __str__(self) -> str:
        return self.value

    @property
    def code(self) -> int:
        """Integer code in logs: 0 solved, 1 solved_inaccurate, 2 fallback, 3 safe_stop, 4 rejoin."""
        return _STATUS_ORDER.index(self)

    @property
    def solved(self) -> bool:
        """True when this step's QP was solved (accurately or not)."""
        return self in (Status.SOLVED, Status.SOLVED_INACCURATE)

    @classmethod
    def from_code(cls, code: int) -> Status:
        """The status of a logged integer code."""
        return _STATUS_ORDER[int(code)]


_STATUS_ORDER = tuple(Status)


@dataclass
class MPCSolution:
    """What one MPC step produced.

    Attributes
    ----------
    v, delta : float
        Command to apply: speed [m/s] and steering angle [rad].
    status : Status
        ``"solved"``, ``"solved_inaccurate"``, ``"fallback"`` (previous plan reused after a
        solver failure), ``"safe_stop"`` (fallback exhausted: braking, wheel held) or
        ``"rejoin"`` (the car was outside the spatial model's domain -- facing away from the path
        or beyond its centre of curvature -- and is steered back by pure pursuit).
    solver_status : str
        OSQP's own status string of this step's (last) solve.
    success : bool
        True when this step's QP was solved.
    iterations : int
        OSQP iterations (summed over re-linearizations).
    solve_time : float
        OSQP's own solve time [s] (summed).
    step_time : float
        Wall time of the whole ``solve()`` call [s].
    s : ndarray, shape (N+1,)
        Arc lengths of the prediction grid [m].
    x : ndarray, shape (N+1, 3)
        Predicted (e_y, e_psi, t).
    u : ndarray, shape (N, 2)
        Predicted (v, delta).
    xy : ndarray, shape (N+1, 2)
        Predicted positions in the world [m].
    corridor_violation : float
        Largest slack used [m] (0 when the footprint stays inside the corridor).
    fallback_steps : int
        Consecutive failed steps so far (0 after a successful solve).
    lb, ub : ndarray, shape (N+1,)
        Corridor bounds on the reference point's e_y used in this step [m].
    """

    v: float
    delta: float
    status: Status
    solver_status: str
    success: bool
    iterations: int
    solve_time: float
    step_time: float
    s: np.ndarray
    x: np.ndarray
    u: np.ndarray
    xy: np.ndarray
    corridor_violation: float = 0.0
    fallback_steps: int = 0
    lb: np.ndarray | None = None
    ub: np.ndarray | None = None

    @property
    def command(self) -> tuple[float, float]:
        """``(v, delta)``."""
        return self.v, self.delta
