"""Offset-free tracking: an estimate of a constant disturbance on the prediction model.

A constant side force (crosswind, a banked road), a mis-identified tyre or a steering offset makes
the car drift from what the prediction model says, and a tracking MPC then settles with a steady
lateral offset: its plan assumes a car that does not exist. The usual remedy (Pannocchia &
Rawlings 2003; Maeder, Borrelli & Morari 2009) augments the model with a constant disturbance
``d``, estimates it from the measurements, and lets the plan anticipate it.

The disturbance here is a constant additive term on the prediction model's state derivative *in
time* (units per second: [m/s] on ``e_y``, [rad/s] on ``e_psi``, [m/s^2] on ``v_x, v_y``,
[rad/s^2] on ``r``; never on ``t``): a side force F on a car of mass m is ``d_vy = F / m``
whatever the speed. The spatial model advances per metre of arc length, so over a prediction step
of ``ds`` metres taking ``dt`` seconds the disturbance adds ``d dt`` to the step's affine term::

    x_{k+1} = A_k x_k + B_k u_k + c_k + d dt_k,       dt_k = t_{k+1} - t_k of the operating point

The estimate (:class:`DisturbanceEstimator`) is the augmented-state observer with ``d`` as an
integrating state, written in residual form: every step the model, with the current estimate,
predicts the state now from the state measured at the previous step and the input applied since,
over the arc length actually travelled (so the spatial model's "per metre" and the distance
driven between two solves cannot disagree); the residual per second of model time moves the
estimate by a first-order low-pass of time constant ``tau``::

    r_j = (x_j - x_pred_j) / dt_j,      d <- clip(d + alpha_j r_j),      alpha_j = 1 - exp(-dt_j / tau)

At a steady state the residual is zero, so the model with ``d`` predicts the car exactly and the
plan's own steady state is on the path: no offset. :class:`ModelDisturbance` adapts it to a
:class:`~mpc_tracking.models.prediction.PredictionModel` and the QP of
:class:`~mpc_tracking.mpc.controller.SpatialMPC` (``MPCSettings(disturbance_observer=True)``).

Bounds (``MPCSettings.disturbance_max`` = ``a`` [m/s^2], a lateral/longitudinal acceleration):
``|d_vx|, |d_vy| <= a``, ``|d_r| <= a / L`` (L the wheelbase), ``|d_e_psi| <= a / v`` (the yaw rate
that turns a lateral acceleration ``a`` at the speed ``v``), ``|d_e_y| <= DRIFT_ANGLE_MAX v`` (a
sideways drift of at most that angle).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from mpc_tracking.errors import InputError

if TYPE_CHECKING:
    from mpc_tracking.models.prediction import PredictionModel
    from mpc_tracking.mpc.qp import StepQP
    from mpc_tracking.mpc.settings import MPCSettings
    from mpc_tracking.mpc.step import StepInput

__all__ = ["DisturbanceEstimator", "ModelDisturbance", "DRIFT_ANGLE_MAX", "OBSERVED_STATES"]

#: largest sideways drift angle [rad] the e_y disturbance may represent (|d_e_y| <= this * speed)
DRIFT_ANGLE_MAX = 0.1
#: the states that carry a disturbance (when the model has them); the time t never does
OBSERVED_STATES = ("e_y", "e_psi", "v_x", "v_y", "r")


class DisturbanceEstimator:
    """Constant-disturbance observer in residual form (model-agnostic, see the module doc).

    Parameters
    ----------
    nx : int
        State size.
    channels : sequence of int
        State indices that carry a disturbance (the others stay 0).
    time_constant : float
        Low-pass time constant ``tau`` [s] of the estimate, > 0.

    Examples
    --------
    A scalar integrator ``x' = u + d`` with ``d = 0.3`` unknown to the model:

    >>> import numpy as np
    >>> est = DisturbanceEstimator(1, [0], time_constant=0.2)
    >>> x, dt = 0.0, 0.1
    >>> for _ in range(100):
    ...     x_pred = x + dt * (1.0 + est.d[0])   # the model's step, with the estimate
    ...     x = x + dt * (1.0 + 0.3)            # the true system
    ...     _ = est.update(np.array([x - x_pred]), dt)
    >>> round(float(est.d[0]), 6)
    0.3
    """

    def __init__(self, nx: int, channels: Sequence[int], time_constant: float) -> None:
        self.nx = int(nx)
        self.channels = np.asarray(channels, dtype=int)
        if self.channels.size and (self.channels.min() < 0 or self.channels.max() >= self.nx):
            raise InputError(f"channels: expected state indices in [0, {self.nx}), got {list(channels)}")
        if not (np.isfinite(time_constant) and time_constant > 0):
            raise InputError(f"time_constant: expected a finite number > 0 s, got {time_constant!r}")
        self.time_constant = float(time_constant)
        self.d = np.zeros(self.nx)
        self.reset()

    def reset(self) -> None:
        """Forget the estimate (back to zero)."""
        self.d[:] = 0.0
        self.n_updates = 0

    def update(self, residual: np.ndarray, dt: float, bound: np.ndarray | None = None) -> np.ndarray:
        """Move the estimate by one step's residual and return it.

        Parameters
        ----------
        residual : ndarray, shape (nx,)
            Measured minus predicted state after a step of ``dt`` seconds, the prediction made
            with the current estimate.
        dt : float
            Duration of that step [s], > 0 (a step of zero or negative duration is ignored).
        bound : ndarray, shape (nx,), optional
            Largest magnitude of each component of the estimate.

        Returns
        -------
        ndarray, shape (nx,)
            The estimate ``d`` (a view; per second).
        """
        r = np.asarray(residual, dtype=float)
        if r.shape != (self.nx,):
            raise InputError(f"residual: expected shape ({self.nx},), got {r.shape}")
        if not (dt > 0 and np.isfinite(dt) and np.all(np.isfinite(r[self.channels]))):
            return self.d
        alpha = -np.expm1(-dt / self.time_constant)
        ch = self.channels
        self.d[ch] += alpha * r[ch] / dt
        if bound is not None:
            np.clip(self.d, -bound, bound, out=self.d)
        self.n_updates += 1
        return self.d


class ModelDisturbance:
    """The estimator wired to a prediction model and the MPC's QP.

    Parameters
    ----------
    model : PredictionModel
    settings : MPCSettings
        ``disturbance_time_constant`` [s] and ``disturbance_max`` [m/s^2].
    kappa_at : callable
        Path curvature [1/m] at an arc length [m] (the previous step's model step uses it).
    path_length : float or None
        Length [m] of a closed path (the arc length travelled wraps at the seam), None when open.
    """

    def __init__(self, model: PredictionModel, settings: MPCSettings, kappa_at: Callable[[float], float],
                 path_length: float | None = None) -> None:
        self.model = model
        self.settings = settings
        self._kappa_at = kappa_at
        self._length = path_length
        names = model.STATE_NAMES
        channels = [names.index(n) for n in OBSERVED_STATES if n in names]
        self.estimator = DisturbanceEstimator(model.nx, channels, settings.disturbance_time_constant)
        a = settings.disturbance_max
        self._bound_const = np.zeros(model.nx)  # per-channel bounds that do not depend on the speed
        for n, b in (("v_x", a), ("v_y", a), ("r", a / model.wheelbase)):
            if n in names:
                self._bound_const[names.index(n)] = b
        self._last: tuple[float, np.ndarray] | None = None

    @property
    def d(self) -> np.ndarray:
        """The current estimate (nx,), per second (see the module doc)."""
        return self.estimator.d

    def reset(self) -> None:
        """Forget the estimate and the last measurement."""
        self.estimator.reset()
        self._last = None

    def _bound(self, v: float) -> np.ndarray:
        m = self.model
        b = self._bound_const.copy()
        v = max(abs(v), self.settings.v_min)
        b[m.I_EY] = DRIFT_ANGLE_MAX * v
        b[m.I_EPSI] = self.settings.disturbance_max / v
        return b

    def observe(self, step: StepInput, u_applied: np.ndarray | None) -> np.ndarray:
        """Update the estimate with the step's measured state (``step.x_measured`` (nx,) at the arc
        length ``step.s_measured`` [m], before any delay prediction).

        ``u_applied`` (nu,) is the input of the plan the car drove on since the last call (None:
        no update, e.g. the first step). Returns the estimate.
        """
        s = step.s_measured
        x = np.asarray(step.x_measured, dtype=float)
        last, self._last = self._last, (float(s), x.copy())
        if last is None or u_applied is None:
            return self.d
        s_prev, x_prev = last
        ds = float(s) - s_prev
        if self._length is not None:  # closed path: the seam
            ds -= self._length * np.round(ds / self._length)
        if not ds > 1e-3:  # standing, reversing, or a projection jump: nothing to learn
            return self.d
        x_pred, dt = self.predict(x_prev, u_applied, s_prev, ds)
        m = self.model
        v = float(x_prev[m.I_SPEED]) if m.SPEED_IN_STATE else float(u_applied[m.I_SPEED])
        return self.estimator.update(x - x_pred, dt, self._bound(v))

    def predict(self, x: np.ndarray, u: np.ndarray, s: float, ds: float) -> tuple[np.ndarray, float]:
        """The model's step over ``ds`` metres from ``x`` at ``s`` with input ``u``, plus the estimate.

        Returns the predicted state (nx,) (time counted on from ``x``'s) and the step's model time [s].
        """
        m = self.model
        kap = np.array([self._kappa_at(s)])
        x1, u1 = x[None, :], np.asarray(u, dtype=float)[None, :]
        A, B, f = m.linearize(x1, u1, kap, np.array([ds]), self.settings.discretization)
        x_next = A[0] @ x + B[0] @ u1[0] + f[0]  # the nonlinear step (linearized about itself)
        dt = float(x_next[m.I_T] - x[m.I_T])
        return x_next + self.offsets(np.array([dt]), A)[0], dt

    def offsets(self, dt: np.ndarray, A: np.ndarray) -> np.ndarray:
        """What the estimate adds to the affine term of steps of ``dt`` (N,) seconds with state
        matrices ``A`` (N, nx, nx): ``(d + A_k d) dt_k / 2`` (N, nx), the trapezoidal rule for a
        constant ``d`` in the state derivative (exact to second order in ``dt``)."""
        return 0.5 * dt[:, None] * (self.d[None, :] + A @ self.d)

    def shift_dynamics(self, qp: StepQP, step: StepInput) -> None:
        """Add :meth:`offsets` to the dynamics of the QP just built from ``step`` (its ``f`` and the
        equality rows; the step durations from the time column of ``step.x_op``)."""
        if not self.d.any():
            return
        A = qp.dynamics[0]
        qp.add_affine(self.offsets(np.maximum(np.diff(step.x_op[:, self.model.I_T]), 0.0), A))
