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
    "Measurement",
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

    The command to the plant is the planned speed one step ahead (the actuator's speed loop
    tracks it) and the first planned steering angle.
    """

    name = "dynamic"
    STATE_NAMES = ("e_y", "e_psi", "t", "v_x", "v_y", "r")
    INPUT_NAMES = ("a_x", "delta")
    I_DELTA = 1
    SPEED_IN_STATE = True
    I_SPEED = 3
    #: weights on (v_x - v_ref) [1/(m/s)^2], v_y, r: speed tracking, the rest free
    Q_EXTRA = (0.5, 0.0, 0.0)

    def __init__(self, params: DynamicParams) -> None:
        from mpc_tracking.models import spatial_dynamic as sd

        if not isinstance(params, sd.DynamicParams):
            raise InputError(f"params: expected DynamicParams, got {type(params).__name__}")
        self._sd = sd
        self.params = params
        self.wheelbase = params.wheelbase

    def linearize(self, x_op: np.ndarray, u_op: np.ndarray, kappa: np.ndarray, ds: np.ndarray,
                  method: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._sd.linearize(x_op, u_op, kappa, ds, self.params, method)

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
        u_op[:, 1] = np.arctan(L * kappa[:N])
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
        return float(X[1, 3]), float(U[0, 1])

    def stop_input(self, v: float, delta: float, settings: Any) -> np.ndarray:
        return np.array([-settings.brake_decel, delta])


#: built-in prediction models by the name ``MPCSettings.prediction_model`` takes
PREDICTION_MODELS: dict[str, type[PredictionModel]] = {"kinematic": KinematicPrediction, "dynamic": DynamicPrediction}


def prediction_model_sizes(name: str) -> tuple[int, int]:
    """State and input sizes of the built-in prediction model ``name``."""
    try:
        cls = PREDICTION_MODELS[name]
    except KeyError:
        raise SettingsError(f"prediction_model: expected one of {sorted(PREDICTION_MODELS)}, got {name!r}") from None
    return len(cls.STATE_NAMES), len(cls.INPUT_NAMES)
