"""Prediction models of the MPC: what the QP needs to know about a spatial model, in one object.

The controller (:class:`~mpc_tracking.mpc.controller.SpatialMPC`) takes any
:class:`PredictionModel`; its state and input sizes, the roles of their components (lateral
error, heading error, time, speed, steering), the linearization, the operating point on the
reference, the bounds and rates, and the command sent to the plant all come from here. Every
spatial model starts its state with ``(e_y, e_psi, t)`` (the corridor rows and the time-optimal
cost use them).

Two are built in (:data:`PREDICTION_MODELS`):

``"kinematic"`` (:class:`KinematicPrediction`)
    :mod:`~mpc_tracking.models.prediction.spatial_bicycle`: state ``(e_y, e_psi, t)``, input ``(v, delta)``;
    the speed is an input, bounded per step by the speed limits.
``"dynamic"`` (:class:`DynamicPrediction`)
    :mod:`~mpc_tracking.models.prediction.spatial_dynamic`: state ``(e_y, e_psi, t, v_x, v_y, r)``, input
    ``(a_x, delta)``; the speed ``v_x`` is a state, bounded per grid point by the speed limits,
    the input ``a_x`` by the acceleration and braking limits. It needs the measured body-frame
    velocities ``(v_x, v_y, r)`` of the car (:func:`mpc_tracking.simulate` passes them).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from mpc_tracking.errors import InputError, SettingsError
from mpc_tracking.models.prediction import spatial_bicycle as sb
from mpc_tracking.models.prediction.apriori import dynamic_params_from_ackermann3d as dynamic_params_from_ackermann3d
from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams

if TYPE_CHECKING:
    from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

__all__ = [
    "PredictionModel", "KinematicPrediction", "DynamicPrediction", "PREDICTION_MODELS", "prediction_model_sizes",
    "Measurement", "dynamic_params_from_ackermann3d",
]

#: measured quantities a model may use besides (s, e_y, e_psi): speed [m/s] along the heading,
#: body-frame velocities v_x, v_y [m/s] of the reference point and yaw rate r [rad/s]
Measurement = dict


class PredictionModel:
    """The interface between a spatial prediction model and the MPC's QP.

    Attributes
    ----------
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
    CHECK_DUALITY_GAP : bool
        Whether OSQP stops only when the duality gap is small too, besides the primal and dual residuals
        (:attr:`QPStructure.check_duality_gap <mpc_tracking.mpc.backends.QPStructure>`; default True).
    QP_TOLERANCE_FACTOR : float
        Factor on the settings' ``eps_abs``, ``eps_rel`` for this model's QP (:attr:`QPStructure.tolerance_factor
        <mpc_tracking.mpc.backends.QPStructure>`; default 1).
    QP_SCALING_PASSES : int or None
        Ruiz passes of the equilibration the OSQP back end computes once at set-up for this model's QP
        (:attr:`QPStructure.scaling_passes <mpc_tracking.mpc.backends.QPStructure>`); None (default): the back end's
        ``SCALING_PASSES``.
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
    CHECK_DUALITY_GAP: ClassVar[bool] = True
    QP_TOLERANCE_FACTOR: ClassVar[float] = 1.0
    QP_SCALING_PASSES: ClassVar[int | None] = None
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

    def qp_states(self, settings: Any) -> tuple[int, ...]:
        """The state components the QP holds (:class:`~mpc_tracking.mpc.layout.QPLayout` ``states``); the
        others are recomputed from the plan after the solve. Default: all."""
        return tuple(range(self.nx))

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

    def feedforward(self, X: np.ndarray, U: np.ndarray) -> tuple[float, float] | None:
        """``(speed now [m/s], planned acceleration [m/s^2])`` of a plan for the actuator's speed loop
        (:meth:`mpc_tracking.actuation.Actuator.set_plan`), or None for a model that plans no
        acceleration (the kinematic one: its speed input is the command)."""
        if self.I_ACCEL is None or not self.SPEED_IN_STATE:
            return None
        return float(X[0, self.I_SPEED]), float(U[0, self.I_ACCEL])

    def stop_input(self, v: float, delta: float, settings: Any) -> np.ndarray:
        """The input (nu,) of a safe stop: speed ``v`` [m/s] (or braking at ``settings.brake_decel``), steering
        ``delta`` [rad]."""
        raise NotImplementedError

    def variable_scale(self, settings: Any, ds: float) -> tuple[np.ndarray, np.ndarray]:
        """Typical magnitudes of the state (nx,) and input (nu,) components in the QP, in their units.

        The QP solver works on the variables divided by them (:attr:`QPStructure.scale
        <mpc_tracking.mpc.backends.QPStructure>`): a change of variables, so the solution is the same QP's;
        what changes is how fast a first-order solver (OSQP's ADMM) gets there. Default: ones (no scaling).
        """
        return np.ones(self.nx), np.ones(self.nu)

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
    """The kinematic spatial bicycle (:mod:`~mpc_tracking.models.prediction.spatial_bicycle`), the default.

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
    """The dynamic spatial bicycle with tyre forces (:mod:`~mpc_tracking.models.prediction.spatial_dynamic`).

    Parameters
    ----------
    params : DynamicParams
        Mass, inertia, axle distances, CG height, friction and tyre coefficients.
    speed_lag : float
        Time constant [s] of the plant's speed loop (e.g. ``1 / kp`` of a proportional speed
        controller); 0 when the plant follows the speed command at once.
    slip_reference : bool
        Targets of the heading error, v_y and r (and the reference operating point) from the
        steady cornering state at the reference curvature and speed (default), instead of zero
        slip (which left a steady offset to the outside of long fast turns: the rear axle must slip
        there and the plan traded lateral position for the zero-slip target).

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
    #: OSQP stops on the duality gap too (the default ``CHECK_DUALITY_GAP``), so the back end equilibrates this QP
    #: once at set-up (as the kinematic model's; ``backends.osqp.FIXED_EQUILIBRATION``) instead of OSQP's Ruiz passes
    #: on every update, at tolerances 3x the settings' in that equilibrated problem. Replaying the QPs of 8 closed
    #: loops (the sedan on the bundled and 4 generated circuits at N = 30, the oval with a kinematic plant at N = 10,
    #: 30, 50; each QP solved in turn by both rules; benchmarks/results/dynqp_step.json) against the rule before
    #: (residuals alone, OSQP equilibrating on every update, eps 1e-5): median update + solve lower in all 8 (sedan
    #: loops 0.44-0.87x, oval 0.85-0.92x), median iterations 5-30 instead of 20-40, mean iterations lower on the sedan
    #: loops (14-25 instead of 22-27) but higher on the oval at N = 10 / 30 / 50 (28 / 39 / 44 instead of 27 / 35 / 38:
    #: a longer tail); the first a_x 1.4-6x closer to a tight solve (worst 1.5e-3 to 6.9e-3 instead of 8.9e-3 to
    #: 2.0e-2 m/s^2), steering as close (within 3.8e-4 rad). Residuals alone on the once-equilibrated QP (fewer
    #: iterations again) stopped further from the tight solve (a_x 4e-2 m/s^2). The time-optimal mode keeps OSQP's own
    #: equilibration, now with the gap check and these tolerances.
    QP_TOLERANCE_FACTOR = 3.0
    #: 10 Ruiz passes (OSQP's default) for the equilibration computed once (free per step; the back end's 3 passes
    #: were chosen for OSQP's equilibration on every update). A small gain on the same replay against 3 passes: mean
    #: iterations summed over the 8 loops 205 instead of 209, mean update + solve summed 4.46 instead of 4.66 ms, mostly
    #: the oval's N = 50 tail (44 instead of 50 mean iterations; at N = 30 39 instead of 36); as accurate. The
    #: kinematic QP gains nothing from it (its replays: the same or more iterations).
    QP_SCALING_PASSES = 10

    def __init__(self, params: DynamicParams, speed_lag: float = 0.0, slip_reference: bool = True) -> None:
        from mpc_tracking.models.prediction import spatial_dynamic as sd

        if not (isinstance(speed_lag, (int, float)) and np.isfinite(speed_lag) and speed_lag >= 0):
            raise InputError(f"speed_lag: expected a time constant >= 0 s, got {speed_lag!r}")
        if not isinstance(slip_reference, bool):
            raise InputError(f"slip_reference: expected True or False, got {slip_reference!r}")
        self.speed_lag = float(speed_lag)
        self.slip_reference = slip_reference

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
        """On the centre line at the reference speeds: with ``slip_reference`` (default) the steady
        cornering state of the dynamic model at each point's curvature and speed
        (:func:`~mpc_tracking.models.prediction.spatial_dynamic.steady_cornering`: the heading error, v_y, r,
        a_x and steering that keep the car on the line with the axles slipping as the tyres need),
        else the zero-slip state (r = v kappa, a rear axle without side slip) and the linear
        single track's steering."""
        N = v.size
        L = self.wheelbase
        v_grid = np.append(v, v[-1])  # speed at the grid points 0..N
        x_op = np.zeros((N + 1, 6))
        np.cumsum(ds / v, out=x_op[1:, 2])
        x_op[:, 3] = v_grid
        u_op = np.empty((N, 2))
        a_ref = (v_grid[1:] ** 2 - v_grid[:-1] ** 2) / (2.0 * ds)
        if self.slip_reference:
            e_psi, v_y, r, a_x, delta = self._sd.steady_cornering(kappa, v_grid, self.params,
                                                                  np.append(a_ref, a_ref[-1]))
            x_op[:, 1], x_op[:, 4], x_op[:, 5] = e_psi, v_y, r
            u_op[:, 0], u_op[:, 1] = a_x[:N], delta[:N]
            return x_op, u_op
        x_op[:, 5] = v_grid * kappa  # yaw rate of the path at that speed
        x_op[:, 4] = self.params.l_r * x_op[:, 5]  # CG side velocity of a rear axle on the line
        u_op[:, 0] = a_ref
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
        if self.slip_reference:  # the heading error of steady cornering (the rear axle's slip)
            target[:, self.I_EPSI] = x_ref[:, self.I_EPSI]
        target[:, 3:] = x_ref[:, 3:]
        return target

    def input_bounds(self, settings: Any) -> tuple[np.ndarray, np.ndarray]:
        return (np.array([-settings.decel_max, -settings.delta_max]),
                np.array([settings.accel_max, settings.delta_max]))

    def qp_states(self, settings: Any) -> tuple[int, ...]:
        """All but the time ``t`` outside the time-optimal mode: t feeds no other state (the dynamics do not
        depend on it) and, with no weight on it in ``Q``, carries no cost, so the QP need not hold it (one column
        and one dynamics row per stage fewer, and the entries of its ``A`` rows: SPEED-D2 measured the same OSQP
        iterations and 13-16 % less update + solve time). The plan's t is then recomputed from its own rows of the
        linearized dynamics (:meth:`QPLayout.expand_states <mpc_tracking.mpc.layout.QPLayout.expand_states>`).
        The time-optimal mode (cost ``time_weight t_N``) or a weight on t keeps it."""
        Q = self.weights(settings)
        if settings.mode == "time_optimal" or Q[self.I_T].any() or Q[:, self.I_T].any():
            return tuple(range(self.nx))
        return tuple(i for i in range(self.nx) if i != self.I_T)

    def input_rates(self, settings: Any) -> tuple[np.ndarray, np.ndarray]:
        inf = float("inf")
        return np.array([inf, settings.delta_rate_max]), np.array([inf, settings.delta_rate_max])

    def variable_scale(self, settings: Any, ds: float) -> tuple[np.ndarray, np.ndarray]:
        """The acceleration input at its typical size ``a`` (the smaller finite of ``accel_max``, ``decel_max``,
        else ``a_y_max``) [m/s^2] and the speed state at the change that acceleration makes over one step at the
        top speed, ``a ds / v_max`` [m/s]; the rest 1.

        In the spatial model a_x reaches v_x only through ``ds / v`` per step (small at speed): unscaled, OSQP
        needed 35-100 iterations on the sedan's QPs where the kinematic model's (speed an input) need 10-40.
        """
        finite = [a for a in (settings.accel_max, settings.decel_max) if np.isfinite(a)]
        a_typ = float(min(finite)) if finite else float(settings.a_y_max)
        x_scale, u_scale = np.ones(self.nx), np.ones(self.nu)
        x_scale[self.I_SPEED] = a_typ * ds / max(float(settings.v_max), float(settings.v_min))
        u_scale[self.I_ACCEL] = a_typ
        return x_scale, u_scale

    def _accel_command(self, X: np.ndarray, U: np.ndarray) -> float:
        """The acceleration [m/s^2] the command asks for: the plan's first input; near standstill (below twice
        the model's speed floor, where the spatial model is not the dynamics and its first input no acceleration)
        at least what the plan's next speed asks of the speed loop, ``(v_1 - v_0) / speed_lag``. (A car stopped
        beside a chicane of Monza after a slide got a_x = -1.2 there -- a command of -0.41 m/s and a braking feed
        forward -- and stood for 2150 s while every step reported "solved".)"""
        a = float(U[0, 0])
        if self.speed_lag > 0 and X[0, 3] < 2.0 * self.params.v_floor:
            a = max(a, float(X[1, 3] - X[0, 3]) / self.speed_lag)
        return a

    def command(self, X: np.ndarray, U: np.ndarray) -> tuple[float, float]:
        if self.speed_lag > 0:  # lead: a first-order speed loop gives a = (v_cmd - v) / speed_lag
            return float(X[0, 3] + self.speed_lag * self._accel_command(X, U)), float(U[0, 1])
        return float(X[1, 3]), float(U[0, 1])

    def feedforward(self, X: np.ndarray, U: np.ndarray) -> tuple[float, float] | None:
        return float(X[0, 3]), self._accel_command(X, U)

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
        raise SettingsError(f"prediction_model: expected 'auto' or one of {sorted(PREDICTION_MODELS)}, "
                            f"got {name!r}") from None
    return len(cls.STATE_NAMES), len(cls.INPUT_NAMES)
