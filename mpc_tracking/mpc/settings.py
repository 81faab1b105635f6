"""Settings and result types of the spatial MPC (kept apart from the QP machinery in :mod:`mpc`)."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any

import numpy as np

from mpc_tracking.errors import SettingsError

__all__ = ["MPCSettings", "MPCSolution", "Status", "MODES", "LINEARIZATIONS", "WARM_STARTS", "SOLVERS"]

MODES = ("tracking", "time_optimal")
LINEARIZATIONS = ("auto", "previous", "reference")
WARM_STARTS = ("solver", "shift", "none")
SOLVERS = ("osqp", "daqp")


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


@dataclass(frozen=True)
class MPCSettings:
    """Settings of :class:`~mpc_tracking.mpc.controller.SpatialMPC`, validated on construction.

    Cost (summed over the horizon, k = 1..N for states and 0..N-1 for inputs)::

        1/2 (x_k - x_ref)^T Q (x_k - x_ref)  (Q_N = terminal_weight * Q at k = N)
      + 1/2 (u_k - u_ref)^T R (u_k - u_ref)  + 1/2 (u_k - u_{k-1})^T R_rate (u_k - u_{k-1})
      + slack_weight * (corridor violation [m])  + time_weight * t_N  (time-optimal mode)

    Attributes
    ----------
    horizon : int
        Number N of prediction steps, >= 1.
    ds : float or None
        Prediction step along the path [m]; ``None`` uses the path's waypoint spacing.
    Q : sequence of float or ndarray
        3 weights or a 3x3 PSD matrix on (e_y [m], e_psi [rad], t [s]); for a prediction model
        with more states, its own number of weights, or 3 (the others then get the model's
        defaults).
    R : sequence of float or ndarray
        2 weights or a 2x2 PSD matrix on the inputs minus their reference: (v [m/s], delta [rad])
        for the kinematic model, (a_x [m/s^2], delta [rad]) for the dynamic one.
    R_rate : sequence of float or ndarray
        2 weights or a 2x2 PSD matrix on input changes between prediction steps.
    terminal_weight : float
        Factor >= 0 on Q at the last prediction step.
    v_min, v_max : float
        Speed bounds [m/s], 0 < v_min <= v_max.
    delta_max : float
        Steering bound [rad], 0 < delta_max < pi/2.
    a_y_max : float
        Lateral acceleration limit [m/s^2]: ``v <= sqrt(a_y_max / |kappa|)``.
    accel_max, decel_max : float
        Speed rate bounds [m/s^2] (> 0, may be inf).
    delta_rate_max : float
        Steering rate bound [rad/s] (> 0, may be inf).
    corridor_margin : float
        Extra clearance [m] kept from the corridor edges, >= 0.
    slack_weight : float
        Exact-penalty weight per metre of corridor violation, > 0.
    mode : {"tracking", "time_optimal"}
        "tracking" follows the centre line (or the corridor's lateral reference) and the speed
        reference; "time_optimal" minimises the predicted time to the horizon's end inside the
        corridor (``time_weight``).
    time_weight : float
        Weight on the predicted time t_N in time-optimal mode [1/s], >= 0.
    linearization : {"auto", "previous", "reference"}
        Operating point: previous solution shifted by the distance travelled (real-time
        iteration), or the reference (e = 0, v_ref, path curvature); "auto" (default) takes the
        prediction model's own choice (``PredictionModel.LINEARIZATION``): "previous" for the
        kinematic model, "reference" for the dynamic one (about a shifted plan its stiff tyre
        dynamics made the steering oscillate at the grip limit: RMS e_y 15-41 cm and 2-3 m
        excursions on the shared race tracks at 0.85 of the sedan's limit, 7-18 cm about the
        reference).
    discretization : {"euler", "rk4"}
        How the spatial model is discretized over one step ``ds``: explicit Euler
        (``A = I + ds Jx``), or one classical Runge-Kutta step with its exact sensitivities (more
        accurate at large ``ds``, a little more work).
    iterations : int
        Re-linearizations per step (>= 1); each one re-solves about the newest solution.
    control_period : float
        Time between two solves [s]; bounds the change of the first input.
    delay : float
        Computation/actuation delay [s] the measured state is predicted over before solving.
    max_fallback_steps : int
        Steps the previous plan may be used after a solver failure before a safe stop.
    brake_decel : float
        Deceleration of the safe stop [m/s^2], > 0; it brakes from the measured speed (when
        the caller passes ``measured={"speed": ...}``, as :func:`~mpc_tracking.simulate` does),
        else from the last command.
    rejoin : bool
        Outside the spatial model's domain (|e_psi| >= 1.2 rad, or e_y beyond 90 % of the radius
        of curvature) steer back to the path by pure pursuit of a point ahead on it (full lock
        when the point is behind), at the speed of the tightest turn, until |e_psi| < 0.6 rad,
        e_y kappa < 0.5 and |e_y| is within one minimum turning radius; then the MPC takes over
        (:mod:`mpc_tracking.mpc.rejoin`). False: such a state is an
        :class:`~mpc_tracking.errors.InputError`.
    warm_start : {"solver", "shift", "none"}
        "solver": OSQP reuses its last primal/dual solution; "shift": warm start from the
        previous plan shifted along s; "none": cold start every step.
    eps_abs, eps_rel : float
        OSQP tolerances.
    solver : {"osqp", "daqp"}
        QP solver. "osqp" (default): OSQP's ADMM on the sparse QP (states, inputs and slacks),
        set up once and updated in place; cost grows linearly with the horizon, accuracy is
        ``eps_abs``/``eps_rel``. "daqp": the QP condensed onto
        the inputs and solved exactly by DAQP's dual active-set method, warm-started from the last
        active set (:mod:`mpc_tracking.mpc.condensed`); its cost grows with the square of the horizon
        but does not depend on conditioning, so QPs with long chains of active rows (obstacles)
        that take ADMM thousands of iterations take it a few hundred. Same QP, same soft corridor;
        no friction-ellipse cuts. ``max_iter`` and ``max_solve_time`` apply to both.
    prediction_model : {"auto", "kinematic", "dynamic"}
        The controller's model of the car: the kinematic spatial bicycle (state e_y, e_psi, t; input
        v, delta), or the dynamic one with tyre forces (adds v_x, v_y, r; input a_x, delta; see
        :mod:`mpc_tracking.models.prediction`). "auto" (default): the dynamic model when the run has
        a plant that slips (the 3D car) or a vehicle file with tyre data (a scenario, see
        :func:`mpc_tracking.scenario.defaults.grip_defaults`), else the kinematic one; a
        :class:`SpatialMPC` built without a ``prediction`` object uses the kinematic model.
    friction_ellipse : bool
        Combine longitudinal and lateral acceleration on an ellipse with semi-axes
        (accel_max or decel_max, a_y_max): in the whole-path speed ceilings (less braking and
        acceleration in corners, :func:`mpc_tracking.paths.speed_profile.speed_profile`) and, for
        models with an acceleration input (dynamic), in the QP's per-step bounds on it.
    ellipse_cuts : bool
        With ``friction_ellipse`` and a model with an acceleration input: hold the ellipse in the
        QP as soft linear cuts (tangents at 30..150 deg, one exact-penalty slack per step, see
        :data:`mpc_tracking.mpc.qp.ELLIPSE_CUT_ANGLES`) that couple the acceleration input with the
        planned lateral acceleration ``v_x r``, instead of acceleration bounds frozen at the
        operating point's lateral acceleration (the default).
    max_iter : int
        OSQP iteration limit.
    max_solve_time : float
        OSQP time limit per solve [s] (> 0, inf: none). A solve that hits it counts as failed and
        takes the fallback path (the previous plan, then a safe stop), so a real-time loop never
        waits longer than this for a command. Its own overhead around the solve is not included.
    disturbance_observer : bool
        Offset-free tracking: estimate a constant disturbance on the prediction model from the
        one-step prediction residuals and add it to every prediction step (see
        :mod:`mpc_tracking.mpc.disturbance`); reset by :meth:`SpatialMPC.reset`.
    disturbance_time_constant : float
        Low-pass time constant of the disturbance estimate [s], > 0.
    disturbance_max : float
        Bound on the disturbance estimate, as an acceleration [m/s^2] (> 0; converted per state,
        see :mod:`mpc_tracking.mpc.disturbance`).
    grip_fraction : float
        Margin on the car's own limits, in (0, 1] (default 0.9): where the limits come from the car
        (a vehicle file's identified lateral, braking and acceleration limits; the 3D plant's
        friction mu g), the controller uses this share of them. Limits set explicitly (a value other
        than the default ``a_y_max = 4``, a finite ``accel_max``/``decel_max``) win (see
        :func:`mpc_tracking.scenario.defaults.grip_defaults`).
    grip_defaults : bool
        True (default): settings left at their defaults follow from the car when a scenario is
        built (prediction model, limits scaled by ``grip_fraction``, and for the dynamic model the
        friction ellipse, RK4 and ``ds >= 1 m``, which hold at the grip limit). False: the
        settings are used exactly as given (a combination known to be unsafe is still warned about).
    """

    horizon: int = 30
    ds: float | None = None
    Q: Any = (1.0, 2.0, 0.0)
    R: Any = (0.2, 2.0)
    R_rate: Any = (0.5, 20.0)
    terminal_weight: float = 5.0
    v_min: float = 0.5
    v_max: float = 10.0
    delta_max: float = 0.5
    a_y_max: float = 4.0
    accel_max: float = float("inf")
    decel_max: float = float("inf")
    delta_rate_max: float = float("inf")
    corridor_margin: float = 0.0
    slack_weight: float = 1.0e3
    mode: str = "tracking"
    time_weight: float = 10.0
    linearization: str = "auto"
    discretization: str = "euler"
    iterations: int = 1
    control_period: float = 0.05
    delay: float = 0.0
    max_fallback_steps: int = 5
    brake_decel: float = 3.0
    rejoin: bool = True
    warm_start: str = "solver"
    solver: str = "osqp"
    eps_abs: float = 1e-5
    eps_rel: float = 1e-5
    max_iter: int = 4000
    max_solve_time: float = float("inf")
    prediction_model: str = "auto"
    friction_ellipse: bool = False
    ellipse_cuts: bool = False
    disturbance_observer: bool = False
    disturbance_time_constant: float = 0.5
    disturbance_max: float = 3.0
    # ---- grip-limit defaults (issue 20; added at the end, to be moved into a settings group) ----
    #: share of the car's identified limits the controller uses where it takes them from the car
    grip_fraction: float = 0.9
    #: settings left at their defaults follow from the car (model, limits, ellipse, rk4, ds)
    grip_defaults: bool = True
    Q_matrix: np.ndarray = field(init=False, repr=False, compare=False)
    R_matrix: np.ndarray = field(init=False, repr=False, compare=False)
    R_rate_matrix: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        def integer(name: str, lo: int) -> None:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise SettingsError(f"MPCSettings.{name}: expected an integer >= {lo}, got {v!r}")

        def number(name: str, lo: float, strict: bool, allow_inf: bool = False) -> float:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
                raise SettingsError(f"MPCSettings.{name}: expected a number, got {v!r}")
            v = float(v)
            if np.isnan(v) or (np.isinf(v) and not allow_inf) or v < lo or (strict and v == lo):
                rel = ">" if strict else ">="
                kind = "number" if allow_inf else "finite number"
                raise SettingsError(f"MPCSettings.{name}: expected a {kind} {rel} {lo}, got {v!r}")
            return v

        integer("horizon", 1)
        if self.horizon > MAX_HORIZON:
            raise SettingsError(f"MPCSettings.horizon: expected at most {MAX_HORIZON} prediction steps, got "
                                f"{self.horizon!r}")
        integer("iterations", 1)
        integer("max_fallback_steps", 0)
        integer("max_iter", 1)
        if self.ds is not None:
            number("ds", 0.0, True)
        number("terminal_weight", 0.0, False)
        number("v_min", 0.0, True)
        number("v_max", 0.0, True)
        if self.v_min > self.v_max:
            raise SettingsError(f"MPCSettings: v_min = {self.v_min} must be <= v_max = {self.v_max} m/s")
        number("delta_max", 0.0, True)
        if self.delta_max >= 0.5 * np.pi:
            raise SettingsError(f"MPCSettings.delta_max: expected < pi/2 rad, got {self.delta_max}")
        number("a_y_max", 0.0, True)
        for name in ("accel_max", "decel_max", "delta_rate_max"):
            number(name, 0.0, True, allow_inf=True)
        number("corridor_margin", 0.0, False)
        number("slack_weight", 0.0, True)
        number("time_weight", 0.0, False)
        number("control_period", 0.0, True)
        number("delay", 0.0, False)
        number("brake_decel", 0.0, True)
        number("max_solve_time", 0.0, True, allow_inf=True)
        number("eps_abs", 0.0, True)
        number("eps_rel", 0.0, False)
        number("disturbance_time_constant", 0.0, True)
        number("disturbance_max", 0.0, True)
        grip = number("grip_fraction", 0.0, True)
        if grip > 1.0:
            raise SettingsError(f"MPCSettings.grip_fraction: expected a share in (0, 1] of the car's limits, "
                                f"got {self.grip_fraction!r}")
        if not isinstance(self.grip_defaults, (bool, np.bool_)):
            raise SettingsError(f"MPCSettings.grip_defaults: expected True or False, got {self.grip_defaults!r}")
        for flag in ("friction_ellipse", "ellipse_cuts", "rejoin"):
            if not isinstance(getattr(self, flag), (bool, np.bool_)):
                raise SettingsError(f"MPCSettings.{flag}: expected True or False, got {getattr(self, flag)!r}")
        if not isinstance(self.disturbance_observer, (bool, np.bool_)):
            raise SettingsError("MPCSettings.disturbance_observer: expected True or False, "
                                f"got {self.disturbance_observer!r}")
        for name, allowed in (("mode", MODES), ("linearization", LINEARIZATIONS), ("warm_start", WARM_STARTS),
                              ("solver", SOLVERS)):
            if getattr(self, name) not in allowed:
                raise SettingsError(f"MPCSettings.{name}: expected one of {allowed}, got {getattr(self, name)!r}")
        from mpc_tracking.models.spatial_bicycle import DISCRETIZATIONS

        if self.discretization not in DISCRETIZATIONS:
            raise SettingsError(
                f"MPCSettings.discretization: expected one of {DISCRETIZATIONS}, got {self.discretization!r}"
            )
        from mpc_tracking.models.prediction import prediction_model_sizes

        if self.prediction_model == "auto":  # either model: 3 weights, or the dynamic model's 6
            nx = 6 if np.size(self.Q) in (6, 36) else 3
        else:
            nx, _nu = prediction_model_sizes(self.prediction_model)
        n_q = nx if np.size(self.Q) in (nx, nx * nx) and nx != 3 else 3
        if nx != 3 and np.size(self.Q) not in (1, 3, 9, nx, nx * nx):
            raise SettingsError(f"MPCSettings.Q: expected 3 or {nx} weights for the {self.prediction_model} "
                                f"prediction model, got {np.size(self.Q)} values")
        object.__setattr__(self, "Q_matrix", _weight_matrix(self.Q, n_q, "MPCSettings.Q"))
        object.__setattr__(self, "R_matrix", _weight_matrix(self.R, 2, "MPCSettings.R"))
        object.__setattr__(self, "R_rate_matrix", _weight_matrix(self.R_rate, 2, "MPCSettings.R_rate"))

    def replace(self, **changes: Any) -> MPCSettings:
        """A copy with some fields changed (validated again)."""
        kw = {f.name: getattr(self, f.name) for f in fields(self) if f.init}
        unknown = set(changes) - set(kw)
        if unknown:
            import difflib

            k = sorted(unknown)[0]
            near = difflib.get_close_matches(k, list(kw), n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise SettingsError(f"MPCSettings: unknown setting {k!r}{hint}")
        kw.update(changes)
        return MPCSettings(**kw)


#: longest horizon accepted (a QP of ~100 000 variables; far beyond any useful look-ahead)
MAX_HORIZON = 10_000


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
