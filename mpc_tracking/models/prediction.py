"""Prediction models of the MPC: what the QP needs to know about a spatial model, in one object.

The controller (:class:`~mpc_tracking.mpc.controller.SpatialMPC`) takes any
:class:`PredictionModel`; its state and input sizes, the roles of their components (lateral
error, heading error, time, speed, steering), the linearization, the operating point on the
reference, the bounds and rates, and the command sent to the plant all come from here. Every
spatial model starts its state with ``(e_y, e_psi, t)`` (the corridor rows and the time-optimal
cost use them).

Two are built in (:data:`PREDICTION_MODELS`):

``"kinematic"`` (:class:`KinematicPrediction`)
    :mod:`~mpc_tracking.models.spatial_bicycle`: state ``(e_y, e_psi, t)``, input ``(v, delta)``;
    the speed is an input, bounded per step by the speed limits.
``"dynamic"`` (:class:`DynamicPrediction`)
    :mod:`~mpc_tracking.models.spatial_dynamic`: state ``(e_y, e_psi, t, v_x, v_y, r)``, input
    ``(a_x, delta)``; the speed ``v_x`` is a state, bounded per grid point by the speed limits,
    the input ``a_x`` by the acceleration and braking limits. It needs the measured body-frame
    velocities ``(v_x, v_y, r)`` of the car (:func:`mpc_tracking.simulate` passes them).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mpc_tracking.errors import InputError, SettingsError
from mpc_tracking.models import spatial_bicycle as sb
from mpc_tracking.models.spatial_bicycle import VehicleParams

if TYPE_CHECKING:
    from mpc_tracking.models.spatial_dynamic import DynamicParams

__all__ = [
    "PredictionModel", "KinematicPrediction", "DynamicPrediction", "PREDICTION_MODELS", "prediction_model_sizes",
    "Measurement", "dynamic_params_from_ackermann3d",
]

#: measured quantities a model may use besides (s, e_y, e_psi): speed [m/s] along the heading,
#: body-frame velocities v_x, v_y [m/s] of the reference point and yaw rate r [rad/s]
Measurement = dict


class PredictionModel:
    """The interface between a spatial prediction model and the MPC's QP.

    Class attributes
    ----------------
    name : str
    STATE_NAMES, INPUT_NAMES : tuple of str
        The first three states are ``(e_y, e_psi, t)``.
    I_DELTA : int
        Index of the steering angle [rad] in the input.
    SPEED_IN_STATE : bool
        The speed is a state component (bounded per grid point) rather than an input.
    I_SPEED : int
        Index of the speed [m/s] in the state (``SPEED_IN_STATE``) or in the input.
    Q_EXTRA : tuple of float
        Default cost weights of the states beyond ``(e_y, e_psi, t)`` (used when the settings'
        ``Q`` gives three weights).
    MEASURES : tuple of str
        Measurements the model needs besides ``(s, e_y, e_psi)`` (keys of :data:`Measurement`).
    I_ACCEL : int or None
        Index of the longitudinal acceleration in the input, for models that have one (the
        friction ellipse then couples it with the lateral acceleration in the QP).
    LINEARIZATION : str
        The operating point ``MPCSettings(linearization="auto")`` resolves to.
    CUT_STATES : tuple of int
        State components the lateral acceleration depends on (see
        :meth:`lateral_acceleration_linear`); the friction-ellipse cuts of the QP hold them.
    """

    name: ClassVar[str] = "base"
    STATE_NAMES: ClassVar[tuple[str, ...]] = ("e_y", "e_psi", "t")
    INPUT_NAMES: ClassVar[tuple[str, ...]] = ()
    I_EY: ClassVar[int] = 0
    I_EPSI: ClassVar[int] = 1
    I_T: ClassVar[int] = 2
    I_DELTA: ClassVar[int] = 1
    SPEED_IN_STATE: ClassVar[bool] = False
    I_SPEED: ClassVar[int] = 0
    Q_EXTRA: ClassVar[tuple[float, ...]] = ()
    MEASURES: ClassVar[tuple[str, ...]] = ()
    I_ACCEL: ClassVar[int | None] = None
    #: the operating point ``MPCSettings(linearization="auto")`` takes: "previous" or "reference"
    LINEARIZATION: ClassVar[str] = "previous"
    CUT_STATES: ClassVar[tuple[int, ...]] = ()
    #: time constant [s] of the plant's speed loop the model leads (0: none)
    speed_lag: float = 0.0

    wheelbase: float

    @property
    def nx(self) -> int:
        """Number of states."""
        return len(self.STATE_NAMES)

    @property
    def nu(self) -> int:
        """Number of inputs."""
        return len(self.INPUT_NAMES)

    def linearize(self, x_op: np.ndarray, u_op: np.ndarray, kappa: np.ndarray, ds: np.ndarray,
                  method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Discrete affine model per step: ``A`` (N, nx, nx), ``B`` (N, nx, nu), ``f`` (N, nx)."""
        raise NotImplementedError

    def reference_op(self, kappa: np.ndarray, v: np.ndarray, ds: float) -> tuple[np.ndarray, np.ndarray]:
        """Operating point on the centre line at speeds ``v`` (N,) [m/s] and curvature ``kappa`` (N+1,).

        Returns ``x_op`` (N+1, nx) with the time along the reference [s] in column ``I_T``, and
        ``u_op`` (N, nu).
        """
        raise NotImplementedError

    def initial_state(self, e_y: float, e_psi: float, measured: Measurement | None) -> np.ndarray:
        """The measured state (nx,) with ``t = 0``."""
        raise NotImplementedError

    def state_target(self, x_ref: np.ndarray, e_ref: np.ndarray) -> np.ndarray:
        """Cost targets (N+1, nx): the lateral reference ``e_ref``, heading and time 0, the rest from
        the reference operating point ``x_ref``."""
        target = np.zeros_like(x_ref)
        target[:, self.I_EY] = e_ref
        return target

    def speeds(self, x_op: np.ndarray, u_op: np.ndarray) -> np.ndarray:
        """Planned speed over each prediction step (N,) [m/s]."""
        return x_op[:-1, self.I_SPEED] if self.SPEED_IN_STATE else u_op[:, self.I_SPEED]

    def input_bounds(self, settings: Any) -> tuple[np.ndarray, np.ndarray]:
        """Constant box on the inputs: lower (nu,), upper (nu,)."""
        raise NotImplementedError

    def input_rates(self, settings: Any) -> tuple[np.ndarray, np.ndarray]:
        """Largest decrease and increase of each input per second: (nu,), (nu,) (> 0, may be inf)."""
        raise NotImplementedError

    def command(self, X: np.ndarray, U: np.ndarray) -> tuple[float, float]:
        """The command ``(v [m/s], delta [rad])`` the actuator gets from a plan ``X`` (N+1, nx), ``U`` (N, nu)."""
        raise NotImplementedError

    def lateral_acceleration(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Lateral acceleration [m/s^2] (absolute) at the states ``x`` (K, nx) with inputs ``u`` (K, nu)."""
        raise NotImplementedError

    def lateral_acceleration_linear(self, x_op: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Signed lateral acceleration linearized at the states ``x_op`` (K, nx).

        Returns ``g`` (K, len(CUT_STATES)) and ``c`` (K,) such that
        ``a_y(x) ~= g_k . x[CUT_STATES] + c_k`` [m/s^2] near ``x_op[k]``.
        """
        raise NotImplementedError

    def stop_input(self, v: float, delta: float, settings: Any) -> np.ndarray:
        """The input (nu,) of a safe stop: speed ``v`` [m/s] (or braking at ``settings.brake_decel``), wheel held."""
        raise NotImplementedError

    def weights(self, settings: Any) -> np.ndarray:
        """State weight matrix Q (nx, nx) from the settings' ``Q`` (3x3 on e_y, e_psi, t, or nx x nx)."""
        Q = np.asarray(settings.Q_matrix, dtype=float)
        if Q.shape == (self.nx, self.nx):
            return Q
        if Q.shape == (3, 3) and len(self.Q_EXTRA) == self.nx - 3:
            out = np.zeros((self.nx, self.nx))
            out[:3, :3] = Q
            out[3:, 3:] = np.diag(self.Q_EXTRA)
            return out
        raise SettingsError(f"MPCSettings.Q: expected 3 or {self.nx} weights for the {self.name} model "
                            f"{self.STATE_NAMES}, got shape {Q.shape}")


class KinematicPrediction(PredictionModel):
    """The kinematic spatial bicycle (:mod:`~mpc_tracking.models.spatial_bicycle`), the default.

    Parameters
    ----------
    vehicle : VehicleParams
        Its wheelbase is the model's.
    """

    name = "kinematic"
    STATE_NAMES = sb.STATE_NAMES
    INPUT_NAMES = sb.INPUT_NAMES
    I_DELTA = sb.IDX_DELTA
    SPEED_IN_STATE = False
    I_SPEED = sb.IDX_V

    def __init__(self, vehicle: VehicleParams) -> None:
        self.vehicle = vehicle
        self.wheelbase = vehicle.wheelbase

    def linearize(self, x_op: np.ndarray, u_op: np.ndarray, kappa: np.ndarray, ds: np.ndarray,
                  method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return sb.linearize(x_op, u_op, kappa, ds, self.vehicle, method)

    def reference_op(self, kappa: np.ndarray, v: np.ndarray, ds: float) -> tuple[np.ndarray, np.ndarray]:
        N = v.size
        x_op = np.zeros((N + 1, 3))
        u_op = np.empty((N, 2))
        u_op[:, 0] = v
        u_op[:, 1] = np.arctan(self.wheelbase * kappa[:N])
        np.cumsum(ds / v, out=x_op[1:, 2])
        return x_op, u_op

    def initial_state(self, e_y: float, e_psi: float, measured: Measurement | None) -> np.ndarray:
        return np.array([float(e_y), float(e_psi), 0.0])

    def input_bounds(self, settings: Any) -> tuple[np.ndarray, np.ndarray]:
        return np.array([settings.v_min, -settings.delta_max]), np.array([settings.v_max, settings.delta_max])

    def input_rates(self, settings: Any) -> tuple[np.ndarray, np.ndarray]:
        return (np.array([settings.decel_max, settings.delta_rate_max]),
                np.array([settings.accel_max, settings.delta_rate_max]))

    def command(self, X: np.ndarray, U: np.ndarray) -> tuple[float, float]:
        return float(U[0, 0]), float(U[0, 1])

    def stop_input(self, v: float, delta: float, settings: Any) -> np.ndarray:
        return np.array([v, delta])


class DynamicPrediction(PredictionModel):
    """The dynamic spatial bicycle with tyre forces (:mod:`~mpc_tracking.models.spatial_dynamic`).

    Parameters
    ----------
    params : DynamicParams
        Mass, inertia, axle distances, CG height, friction and tyre coefficients.
    speed_lag : float
        Time constant [s] of the plant's speed loop (e.g. ``1 / kp`` of a proportional speed
        controller); 0 when the plant follows the speed command at once.

    The command to the plant is the first planned steering angle and a speed: the planned speed
    one step ahead, or with ``speed_lag`` the speed that makes a first-order speed loop deliver
    the planned acceleration now (``v + speed_lag a_x``).
    """

    name = "dynamic"
    STATE_NAMES = ("e_y", "e_psi", "t", "v_x", "v_y", "r")
    INPUT_NAMES = ("a_x", "delta")
    I_DELTA = 1
    SPEED_IN_STATE = True
    I_SPEED = 3
    #: weights on v_x - v_ref [1/(m/s)^2], v_y - v_y,ref [1/(m/s)^2] and r - v kappa [1/(rad/s)^2]:
    #: speed tracking, and yaw rate near the path's own (without it the plan corrects a lateral
    #: offset at high speed with yaw rates worth several m/s^2 of lateral acceleration)
    Q_EXTRA = (0.5, 1.0, 10.0)
    MEASURES = ("v_x", "v_y", "r")
    I_ACCEL = 0
    LINEARIZATION = "reference"  # about a shifted plan the stiff tyre modes made the steering oscillate
    CUT_STATES = (3, 5)  # a_y = v_x r

    def __init__(self, params: DynamicParams, speed_lag: float = 0.0) -> None:
        from mpc_tracking.models import spatial_dynamic as sd

        if not (isinstance(speed_lag, (int, float)) and np.isfinite(speed_lag) and speed_lag >= 0):
            raise InputError(f"speed_lag: expected a time constant >= 0 s, got {speed_lag!r}")
        self.speed_lag = float(speed_lag)

        if not isinstance(params, sd.DynamicParams):
            raise InputError(f"params: expected DynamicParams, got {type(params).__name__}")
        self._sd = sd
        self.params = params
        self.wheelbase = params.wheelbase
        c_f, c_r = params.cornering_stiffness
        #: understeer gradient K_us = m / L (l_r / C_f - l_f / C_r) [rad/(m/s^2)]
        self._k_us = params.mass / params.wheelbase * (params.l_r / c_f - params.l_f / c_r)

    def substeps(self, x_op: np.ndarray, ds: np.ndarray, method: str) -> int:
        """Substeps per prediction step that keep the explicit discretization stable.

        The lateral/yaw modes decay at about ``(C_af + C_ar) / (m v^2)`` per metre, the low-speed
        kinematic blend at ``1 / (tau_kin v)`` (weighted by the blend, largest over the horizon);
        Euler is stable for ``h lambda < 2``, RK4 for ``< 2.78``: the step is split so that
        ``h lambda <= 1.5`` (Euler) or ``2`` (RK4).
        """
        p = self.params
        v = np.maximum(x_op[:, 3], p.v_floor)
        w = self._sd.blend_weight(v, p)  # 1: tyre dynamics, 0: the kinematic blend
        c_f, c_r = p.cornering_stiffness
        lam = float(np.max(w * (c_f + c_r) / (p.mass * v * v) + (1.0 - w) / (p.tau_kin * v)))
        limit = 2.0 if method == "rk4" else 1.5
        return int(min(max(np.ceil(float(np.max(ds)) * lam / limit), 1), 50))

    def linearize(self, x_op: np.ndarray, u_op: np.ndarray, kappa: np.ndarray, ds: np.ndarray,
                  method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m = self.substeps(x_op, np.asarray(ds, dtype=float), method)
        if m == 1:
            return self._sd.linearize(x_op, u_op, kappa, ds, self.params, method)
        # compose m substeps about the nonlinear rollout from x_op with u_op held
        h = np.asarray(ds, dtype=float) / m
        A_tot, B_tot, f_tot = self._sd.linearize(x_op, u_op, kappa, h, self.params, method)
        x = self._rk_step(np.array(x_op, dtype=float), u_op, kappa, h, method)
        for _ in range(m - 1):
            A, B, f = self._sd.linearize(x, u_op, kappa, h, self.params, method)
            B_tot = np.einsum("...ij,...jk->...ik", A, B_tot) + B
            f_tot = np.einsum("...ij,...j->...i", A, f_tot) + f
            A_tot = np.einsum("...ij,...jk->...ik", A, A_tot)
            x = self._rk_step(x, u_op, kappa, h, method)
        return A_tot, B_tot, f_tot

    def _rk_step(self, x: np.ndarray, u: np.ndarray, kappa: np.ndarray, h: np.ndarray, method: str) -> np.ndarray:
        """One nonlinear step of length ``h`` (K,) [m] from each state of ``x`` (K, nx)."""
        return self._sd.discrete_step(x, u, kappa, h[..., None], self.params, method)

    def reference_op(self, kappa: np.ndarray, v: np.ndarray, ds: float) -> tuple[np.ndarray, np.ndarray]:
        N = v.size
        L = self.wheelbase
        v_grid = np.append(v, v[-1])  # speed at the grid points 0..N
        x_op = np.zeros((N + 1, 6))
        np.cumsum(ds / v, out=x_op[1:, 2])
        x_op[:, 3] = v_grid
        x_op[:, 5] = v_grid * kappa  # yaw rate of the path at that speed
        x_op[:, 4] = self.params.l_r * x_op[:, 5]  # CG side velocity of a rear axle on the line
        u_op = np.empty((N, 2))
        u_op[:, 0] = (v_grid[1:] ** 2 - v_grid[:-1] ** 2) / (2.0 * ds)
        # steady-state steering of the linear single track: L kappa + K_us a_y (understeer gradient)
        u_op[:, 1] = np.arctan(L * kappa[:N]) + self._k_us * v[:N] ** 2 * kappa[:N]
        return x_op, u_op

    def initial_state(self, e_y: float, e_psi: float, measured: Measurement | None) -> np.ndarray:
        if not measured or not all(k in measured for k in ("v_x", "v_y", "r")):
            raise InputError("measured: the dynamic prediction model needs the body-frame velocities "
                             "{'v_x', 'v_y', 'r'} of the car (simulate() passes them)")
        # the plant reports its reference point (rear axle); the model's v_y is the CG's
        v_y_cg = float(measured["v_y"]) + self.params.l_r * float(measured["r"])
        return np.array([float(e_y), float(e_psi), 0.0, float(measured["v_x"]), v_y_cg, float(measured["r"])])

    def state_target(self, x_ref: np.ndarray, e_ref: np.ndarray) -> np.ndarray:
        target = np.zeros_like(x_ref)
        target[:, self.I_EY] = e_ref
        target[:, 3:] = x_ref[:, 3:]
        return target

    def input_bounds(self, settings: Any) -> tuple[np.ndarray, np.ndarray]:
        return (np.array([-settings.decel_max, -settings.delta_max]),
                np.array([settings.accel_max, settings.delta_max]))

    def input_rates(self, settings: Any) -> tuple[np.ndarray, np.ndarray]:
        inf = float("inf")
        return np.array([inf, settings.delta_rate_max]), np.array([inf, settings.delta_rate_max])

    def command(self, X: np.ndarray, U: np.ndarray) -> tuple[float, float]:
        if self.speed_lag > 0:  # lead: a first-order speed loop gives a = (v_cmd - v) / speed_lag
            return float(X[0, 3] + self.speed_lag * U[0, 0]), float(U[0, 1])
        return float(X[1, 3]), float(U[0, 1])

    def stop_input(self, v: float, delta: float, settings: Any) -> np.ndarray:
        return np.array([-settings.brake_decel, delta])

    def lateral_acceleration(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        return np.abs(x[:, 3] * x[:, 5])  # v_x r (steady-state part; v_y_dot is small on a plan)

    def lateral_acceleration_linear(self, x_op: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # a_y = v_x r ~= r_op v_x + v_op r - v_op r_op
        v, r = x_op[:, 3], x_op[:, 5]
        return np.column_stack([r, v]), -v * r


#: built-in prediction models by the name ``MPCSettings.prediction_model`` takes
PREDICTION_MODELS: dict[str, type[PredictionModel]] = {"kinematic": KinematicPrediction, "dynamic": DynamicPrediction}


def prediction_model_sizes(name: str) -> tuple[int, int]:
    """State and input sizes of the built-in prediction model ``name``."""
    try:
        cls = PREDICTION_MODELS[name]
    except KeyError:
        raise SettingsError(f"prediction_model: expected one of {sorted(PREDICTION_MODELS)}, got {name!r}") from None
    return len(cls.STATE_NAMES), len(cls.INPUT_NAMES)


def _wheel_lateral_force(P: Any, alpha: np.ndarray, fz: np.ndarray) -> np.ndarray:
    """|F_y| [N] of one wheel of the 3D car at slip angle ``alpha`` [rad] (>= 0) and load ``fz`` [N],
    pure lateral slip, by the plant's own tyre law (see :mod:`mpc_tracking.models.ackermann3d`)."""
    if P.slip_squash:
        alpha = 0.5 * np.tanh(alpha / 0.5)
    fy = np.asarray(P.cornering_stiffness(fz), dtype=float) * alpha
    fmax = np.asarray(P.friction(fz), dtype=float) * fz
    if P.friction_limit == "clip":
        return np.minimum(fy, fmax)
    return fy * fmax / np.sqrt(fy * fy + P.eps_force + fmax * fmax)


def axle_curves_ackermann3d(plant_params: Any, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Steady-state lateral force [N] of the 3D car's front and rear axle at slip angles ``alpha`` (K,).

    Quasi-static cornering: each axle carries its static share of ``m a_y``, and the roll moment
    ``m a_y h`` moves load from the inner to the outer wheel of each axle in proportion to the axle's
    roll stiffness ``W^2 (k_n / 2 + k_arb)``; with load-sensitive tyres the axle then peaks below
    ``mu F_z`` (solved by fixed-point iteration on the axle force).

    Returns
    -------
    front, rear : ndarray, shape (K,)
    """
    P = plant_params
    a = np.abs(np.asarray(alpha, dtype=float))
    W, L = P.mass * P.gravity, P.wheelbase
    loads = (W * P.cg_to_rear / L, W * P.cg_to_front / L)
    roll = np.array([P.track**2 * (0.5 * P.k_n + P.arb_front), P.track**2 * (0.5 * P.k_n + P.arb_rear)])
    share = roll / roll.sum()
    out = []
    for fz_axle, sh in zip(loads, share, strict=True):
        F = np.zeros_like(a)
        for _ in range(60):
            a_y = F / (P.mass * fz_axle / W)
            dfz = np.minimum(sh * P.mass * a_y * P.cg_height / P.track, 0.5 * fz_axle)
            F_new = (_wheel_lateral_force(P, a, 0.5 * fz_axle - dfz)
                     + _wheel_lateral_force(P, a, 0.5 * fz_axle + dfz))
            F = 0.5 * (F + F_new)
        out.append(F)
    return out[0], out[1]


def dynamic_params_from_ackermann3d(plant_params: Any, shape_factor: float | None = 1.3) -> DynamicParams:
    """Dynamic-model parameters read off a 3D car's parameter set (a priori, not identified).

    Mass, yaw inertia, axle distances and CG height are the plant's. Each axle's tyre curve
    ``D mu F_z sin(C atan(B alpha))`` follows the plant's steady-state axle force with lateral load
    transfer (:func:`axle_curves_ackermann3d`, slip angles up to 2.5 times where a wheel at its
    static load saturates): D is that curve's peak, so the axle that saturates first in the plant
    (the front one of the ``sedan``, whose anti-roll bar takes most of the load transfer)
    saturates first in the model too, and B gives the plant's cornering stiffness at the static
    load. ``mu`` is the plant's friction at the static wheel loads (their mean).

    Parameters
    ----------
    plant_params : Ackermann3DParams
        E.g. ``create_model("ackermann3d", {"preset": "sedan"}).vehicle``.
    shape_factor : float or None
        The Pacejka shape factor C of both axles (E = 0): then D is the axle curve's peak and B
        gives the plant's cornering stiffness ``2 C_alpha(F_z)`` at the static load (exact in the
        linear range); None fits B, C, D and E per axle to the whole curve by least squares (the
        sedan's front then gets C = 1.9, a sharp peak that falls off fast beyond it: measured on the
        shared race tracks at 0.85 mu g it left the track on 2 of 6 where C = 1.3 completed all).

    Returns
    -------
    DynamicParams
    """
    from mpc_tracking.models.spatial_dynamic import DynamicParams
    from mpc_tracking.models.tyre_fit import fit_axle_curve

    P = plant_params
    W, L = P.mass * P.gravity, P.wheelbase
    a, b = P.cg_to_front, P.cg_to_rear
    fz_wheel = np.array([W * b / (2 * L), W * a / (2 * L)])  # front, rear
    mu = float(np.mean(np.asarray(P.friction(fz_wheel), dtype=float)))
    # slip angles up to 2.5x where a wheel at its static load saturates (linear tyre to mu F_z)
    alpha_sat = float(np.max(np.asarray(P.friction(fz_wheel)) * fz_wheel / np.asarray(P.cornering_stiffness(fz_wheel))))
    alpha = np.linspace(0.0, min(2.5 * alpha_sat, 1.0), 101)
    curves = axle_curves_ackermann3d(P, alpha)
    c_axle = 2.0 * np.asarray(P.cornering_stiffness(fz_wheel), dtype=float)  # at the static loads
    fit = []
    for F, fz, c in zip(curves, fz_wheel, c_axle, strict=True):
        y = F / (mu * 2.0 * fz)
        if shape_factor is None:
            fit.append(fit_axle_curve(alpha, y))
        else:  # the peak of the curve, and the plant's stiffness at the static load
            D = float(np.max(y))
            fit.append((float(c / (shape_factor * D * mu * 2.0 * fz)), float(shape_factor), D, 0.0))
    (B_f, C_f, D_f, E_f), (B_r, C_r, D_r, E_r) = fit
    return DynamicParams(
        mass=float(P.mass), I_z=float(P.inertia[2]), l_f=float(a), l_r=float(b), h_cg=float(P.cg_height),
        mu=mu, tyre_B_f=B_f, tyre_C_f=C_f, tyre_D_f=D_f, tyre_E_f=E_f, tyre_B_r=B_r, tyre_C_r=C_r, tyre_D_r=D_r,
        tyre_E_r=E_r,
        g=float(P.gravity),
    )
