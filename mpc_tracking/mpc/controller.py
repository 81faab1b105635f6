"""Spatial LTV-MPC: the QP set up once, updated in place every step.

Every step the controller

1. (optionally) predicts the measured state over the configured delay,
2. lays a prediction grid of N steps of ``ds`` metres ahead of the current arc length,
3. linearizes the spatial bicycle model about the previous solution shifted along s (or the
   reference) -- vectorized over the horizon,
4. writes the new A_k/B_k entries, cost vector and bounds into the fixed-pattern QP, and
5. solves it warm-started with its QP back end (:mod:`mpc_tracking.mpc.backends`, named by
   ``MPCSettings.solver``), checking the back end's status and the solution against the QP's
   rows (osqp 1.x returns finite garbage for infeasible problems). On failure the previous plan
   is reused for at most ``max_fallback_steps`` steps, then the command becomes a safe stop
   (:class:`~mpc_tracking.mpc.safeguards.Safeguards`).

The step's data travels as a :class:`~mpc_tracking.mpc.step.StepInput`, its result is an
:class:`~mpc_tracking.mpc.settings.MPCSolution`.
"""
from __future__ import annotations

import logging
import math
import time
from typing import Any

import numpy as np

from mpc_tracking.environment.corridor import Corridor
from mpc_tracking.errors import InputError, SettingsError
from mpc_tracking.models.prediction import DynamicPrediction, KinematicPrediction, Measurement, PredictionModel
from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
from mpc_tracking.mpc import backends, fused
from mpc_tracking.mpc.backends import BackendResult, QPBackend, QPStructure
from mpc_tracking.mpc.blas import BlasLimit
from mpc_tracking.mpc.disturbance import ModelDisturbance
from mpc_tracking.mpc.grip_limits import GripLimits
from mpc_tracking.mpc.layout import QPData, QPLayout, StepProblem
from mpc_tracking.mpc.qp import StepQP, ellipse_cut_layout
from mpc_tracking.mpc.reference import feasible_speed_profile, path_speed_ceilings, predict_over_delay
from mpc_tracking.mpc.safeguards import Safeguards
from mpc_tracking.mpc.sampler import PathSample, PathSampler
from mpc_tracking.mpc.settings import MPCSettings, MPCSolution, Status
from mpc_tracking.mpc.step import StepInput
from mpc_tracking.paths.geometry import offset_point
from mpc_tracking.paths.interpolation import LinearTable
from mpc_tracking.paths.projection import Projection
from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["SpatialMPC"]

logger = logging.getLogger(__name__)


class SpatialMPC:
    """Model predictive path tracker in the spatial domain.

    Parameters
    ----------
    path : ReferencePath
        The path to follow (its ``v_ref`` is used as speed reference when present).
    vehicle : VehicleParams
        Geometry (wheelbase for the model, footprint for the corridor).
    settings : MPCSettings, optional
    corridor : Corridor, optional
        Lateral bounds provider; default: the path's track widths.
    prediction : PredictionModel, optional
        The controller's model of the car; default the one ``settings.prediction_model`` names,
        built from ``vehicle`` (kinematic) or with :meth:`DynamicParams.bmw_320i
        <mpc_tracking.models.prediction.spatial_dynamic.DynamicParams.bmw_320i>` scaled to nothing (dynamic:
        pass a :class:`~mpc_tracking.models.prediction.DynamicPrediction` with your car's
        parameters).

    Attributes
    ----------
    backend : QPBackend
        The QP back end ``settings.solver`` names (:mod:`mpc_tracking.mpc.backends`); replaceable,
        e.g. by a :class:`~mpc_tracking.mpc.backends.FaultInjection` wrapping it.
    safeguards : Safeguards
        Rejoin, solution check, fallback and safe stop, with their state (last plan, failures).
    disturbance : ModelDisturbance or None
        The disturbance estimate (``settings.disturbance_observer``).

    Examples
    --------
    >>> import mpc_tracking as mt
    >>> path = mt.load_path("oval", ds=0.5)
    >>> mpc = SpatialMPC(path, mt.VehicleParams(), mt.MPCSettings(horizon=30, v_max=10.0))
    >>> x, y = path.point_at(5.0, e_y=0.3)          # a car 0.3 m left of the line at s = 5 m
    >>> sol = mpc.solve(path.project(x, y, path.interpolate([5.0])["psi"][0]))
    >>> sol.status, sol.v <= 10.0, sol.delta < 0     # solved; steers right, back to the line
    (<Status.SOLVED: 'solved'>, True, True)
    """

    def __init__(
        self,
        path: ReferencePath,
        vehicle: VehicleParams | None = None,
        settings: MPCSettings | None = None,
        corridor: Corridor | None = None,
        prediction: PredictionModel | None = None,
    ) -> None:
        if not isinstance(path, ReferencePath):
            raise InputError(f"path: expected a ReferencePath, got {type(path).__name__}")
        self.path = path
        self.vehicle = vehicle or VehicleParams()
        if not isinstance(self.vehicle, VehicleParams):
            raise InputError(f"vehicle: expected VehicleParams, got {type(self.vehicle).__name__}")
        self.settings = settings or MPCSettings()
        if not isinstance(self.settings, MPCSettings):
            raise InputError(f"settings: expected MPCSettings, got {type(self.settings).__name__}")
        self.corridor = corridor
        st = self.settings
        self.model = model = self._prediction_model(prediction)
        #: the operating point in use, "previous" or "reference" (settings.linearization, "auto" resolved by the model)
        self.linearization = model.LINEARIZATION if st.linearization == "auto" else st.linearization
        self.N = N = st.horizon
        self.ds = float(st.ds if st.ds is not None else path.ds)
        self.nx, self.nu = model.nx, model.nu
        self.layout = QPLayout(N, self.vehicle.front_extent, self.vehicle.rear_overhang, model.nx, model.nu,
                               i_ey=model.I_EY, i_epsi=model.I_EPSI,
                               i_speed_state=model.I_SPEED if model.SPEED_IN_STATE else None,
                               states=model.qp_states(st), **ellipse_cut_layout(model, st))
        body = (self.vehicle.rear_overhang, self.vehicle.front_extent)
        ceilings = path_speed_ceilings(path, st, model.speed_lag)
        self._sampler = PathSampler(path, *ceilings, body=body)
        self.qp = StepQP(self.layout, st, self.vehicle, self._sampler, self.ds, path.closed, path.length, corridor,
                         model)
        self.data = self.qp.data
        self._sampler.use_kernels(self.qp.kernels)  # settings.compiled: sample the path in compiled code
        #: the constants of :meth:`_prepare_kinematic` (the kinematic model's step data in one compiled call), or None
        self._prepare_args: tuple[int, np.ndarray, np.ndarray] | None = None
        if self.qp.compiled_reference and type(model) is KinematicPrediction:
            cap = 3 if st.mode != "time_optimal" and self._sampler.has_v_ref else 7 if self._sampler.has_v_box else -1
            self._prepare_args = (cap, self.qp._ref_prm, np.zeros((N + 1, self.nx + self.nu)))
        self.P = self.qp.P
        self._s_offsets = self.ds * np.arange(N + 1)
        self._prev_table = np.empty((N + 1, self.nx + self.nu))  # last plan: x and u per grid point
        self._prev_pad = np.empty((2 * N + 2, self.nx + self.nu))  # the same, held at its end (shifts)
        #: offset-free tracking (``settings.disturbance_observer``): the disturbance estimate, or None
        self.disturbance = (ModelDisturbance(model, st, self._kappa_at, path.length if path.closed else None)
                            if st.disturbance_observer else None)
        self.safeguards = Safeguards(st, model, path, self.vehicle, self._sampler,
                                     self.layout.A_matrix(self.data.A_data.copy()), self._shifted_op)
        #: online grip estimation (``settings.grip_estimation``): scales the limits every step, or None
        self.grip = GripLimits.for_controller(self)
        self.reset()
        self.backend: QPBackend = self._setup_backend()
        #: the BLAS thread limit held during :meth:`solve` (``settings.blas_threads``; set up after the
        #: back end, which loads the libraries it uses): only for a step that runs dense algebra -- a dense
        #: back end, or the numpy path -- not OSQP's sparse step in compiled kernels, which calls no BLAS
        dense = self.backend.dense_algebra or self.qp.kernels is None
        self.blas_limit = BlasLimit(st.blas_threads if dense else 0)
        #: the constants of :meth:`_solve_fused` (the kinematic model's step before the solve in one compiled call),
        #: or None where the general path runs
        cls = type(self)
        replaced = cls._prepare is not SpatialMPC._prepare or cls.build_qp is not SpatialMPC.build_qp  # a subclass's
        self._fused = fused.kinematic_setup(self, replaced)
        #: the buffers of :meth:`_build_fused_dynamic` (the dynamic model's step before the solve in three compiled
        #: calls), or None where the general path runs
        self._fused_dyn = fused.dynamic_setup(self, replaced)
        self._check_turning_radius()

    # ------------------------------------------------------------------ set-up
    def _check_turning_radius(self) -> None:
        """Warn when the path curves tighter than the vehicle can turn (``wheelbase / tan(delta_max)``),
        naming where: the car cannot follow it there and will leave the line."""
        d_max = self.settings.delta_max
        if not 0.0 < d_max < 0.5 * np.pi:
            return
        r_min = self.vehicle.wheelbase / np.tan(d_max)
        tight = np.abs(self.path.kappa) * r_min > 1.0
        if not tight.any():
            return
        i = int(np.argmax(np.abs(self.path.kappa)))
        logger.warning(
            "path %r: radius %.3g m at s = %.1f m is below the vehicle's minimum turning radius %.3g m "
            "(wheelbase %.3g m, delta_max %.3g rad); %.1f m of the path is that tight and cannot be followed",
            self.path.name, 1.0 / abs(float(self.path.kappa[i])), float(self.path.s[i]), r_min,
            self.vehicle.wheelbase, d_max, float(tight.sum()) * self.path.ds)

    def _prediction_model(self, prediction: PredictionModel | None) -> PredictionModel:
        st = self.settings
        if prediction is not None:
            if not isinstance(prediction, PredictionModel):
                raise InputError(f"prediction: expected a PredictionModel, got {type(prediction).__name__}")
            if prediction.name != st.prediction_model and st.prediction_model not in ("kinematic", "auto"):
                raise InputError(f"prediction: a {prediction.name!r} model, but settings.prediction_model is "
                                 f"{st.prediction_model!r}")
            model = prediction
        elif st.prediction_model in ("kinematic", "auto"):  # "auto" is resolved with a plant (scenario)
            model = KinematicPrediction(self.vehicle)
        else:
            from mpc_tracking.models.prediction.spatial_dynamic import DynamicParams

            model = DynamicPrediction(DynamicParams.bmw_320i())
        if model.SPEED_IN_STATE and st.delay > 0:
            raise SettingsError(f"MPCSettings.delay: the {model.name} prediction model does not predict over a "
                                "delay yet; use delay = 0")
        return model

    def _setup_backend(self) -> QPBackend:
        """The back end ``settings.solver`` names, set up on the QP's structure with a representative
        first linearization (on the reference at s = 0: OSQP scales its problem with it)."""
        cls = backends.get(self.settings.solver)
        s_grid = self._grid(0.0)
        q = self._sampler.sample(s_grid)
        x_op, u_op = self._reference_op(q)
        A, B, _f = self.qp.linearize(x_op, u_op, q.kappa, s_grid)
        self.layout.fill_dynamics(self.data.A_data, A, B)
        scale = self.layout.column_scale(*self.model.variable_scale(self.settings, self.ds))
        return cls(QPStructure(self.layout, self.P, self.data.A_data.copy(), self.qp.slack_quad, scale,
                               self.model.CHECK_DUALITY_GAP, self.data.q.copy(), self.model.QP_TOLERANCE_FACTOR,
                               self.model.QP_SCALING_PASSES),
                   self.settings)

    @property
    def solver(self) -> Any:
        """The back end's native solver object (``osqp.OSQP``, :class:`~mpc_tracking.mpc.condensed.CondensedDAQP`);
        for inspection and fault injection (setting it replaces the back end's)."""
        return self.backend.solver

    @solver.setter
    def solver(self, value: Any) -> None:
        self.backend.solver = value

    def reset(self) -> None:
        """Forget the previous plan and command, the safeguards' state and the disturbance
        estimate (e.g. before a new run); the back end keeps its set-up."""
        self._u_prev: np.ndarray | None = None  # first input of the last plan (the rate rows start there)
        self._cmd_prev: np.ndarray | None = None  # last command (v [m/s], delta [rad]) sent to the plant
        self._v_now: float | None = None  # measured speed of this step (models with the speed as a state)
        self.n_steps = 0
        self.safeguards.reset()
        if self.disturbance is not None:
            self.disturbance.reset()
        grip = getattr(self, "grip", None)  # reset() runs once before the applier exists
        if grip is not None:
            grip.reset()

    # ------------------------------------------------------------------ helpers
    def _grid(self, s0: float) -> np.ndarray:
        s = s0 + self._s_offsets
        if not self.path.closed:
            s = np.minimum(s, self.path.length)  # horizon shrinks gracefully at the end
        return s

    def _kappa_at(self, s: float) -> float:
        return float(self._sampler.sample(np.array([s])).kappa[0])

    def _reference_op(self, q: PathSample) -> tuple[np.ndarray, np.ndarray]:
        """Operating point on the reference: e = 0, the speed reference, delta = atan(L kappa).

        Returns ``x_op`` (N+1, nx) with the time [s] along the reference in the time column, and
        ``u_op`` (N, nu) (see :meth:`PredictionModel.reference_op`).
        """
        if self.qp.compiled_reference:  # the same numbers in one compiled call
            return self.qp.reference_op(q, self._speed_start())
        return self.model.reference_op(q.kappa, self._speed_reference(q), self.ds)

    def reference_input(self, s0: float) -> np.ndarray:
        """Reference speed and steering ``(v_ref [m/s], delta_ref [rad])`` at arc length ``s0``."""
        q = self._sampler.sample(self._grid(s0))
        v = self._speed_reference(q)
        _x, u = self.model.reference_op(q.kappa, v, self.ds)
        return np.array([v[0], u[0, self.model.I_DELTA]])

    def _speed_reference(self, q: PathSample) -> np.ndarray:
        st = self.settings
        N = self.N
        lim = self.qp.speed_limit(q.kappa[:N], None)
        if st.mode != "time_optimal" and q.v_ref is not None:
            lim = np.minimum(np.maximum(q.v_ref[:N], st.v_min), lim)
        elif q.v_box is not None:
            lim = np.minimum(np.maximum(q.v_box[:N], st.v_min), lim)
        return feasible_speed_profile(
            lim, self._s_offsets[:N], 0.9 * st.decel_max, 0.9 * st.accel_max, self._speed_start(), st.v_min
        )

    def _speed_start(self) -> float | None:
        """The speed [m/s] the speed reference's forward pass starts from (None: no start): the car's own speed
        when the model has it as a state (a lead-compensated command is not a speed), else the last speed
        command, plus what the acceleration limit adds in one control period."""
        st = self.settings
        v_now = self._v_now if self.model.SPEED_IN_STATE else (None if self._cmd_prev is None else self._cmd_prev[0])
        if v_now is not None and self._cmd_prev is not None:
            return v_now + 0.9 * st.accel_max * st.control_period
        return None

    def _shifted_op(self, prev: MPCSolution, s_grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Previous solution interpolated onto the new grid (real-time iteration).

        Parameters
        ----------
        prev : MPCSolution
            The last successful plan (``safeguards.last_plan``; ``self._prev_table`` holds its x and u).
        s_grid : ndarray, shape (N+1,)
            The new prediction grid [m].

        Returns
        -------
        x_op : ndarray, shape (N+1, nx)
            States, time counted from the grid's start.
        u_op : ndarray, shape (N, nu)
            Inputs.
        """
        NX, it = self.nx, self.model.I_T
        s_prev = prev.s
        kern = self.qp.kernels
        if kern is not None:  # settings.compiled: the uniform shift in one call (False: interpolate below)
            out = np.empty_like(self._prev_table)
            if kern.shift_plan(self._prev_table, s_prev, s_grid, self.ds, self.path.closed, self.path.length, NX, it,
                               out):
                return out[:, :NX], out[:-1, NX:]
        s_new = s_grid
        if self.path.closed:
            # unwrap the new grid relative to the previous one
            s_new = s_grid + np.round((s_prev[0] - s_grid[0]) / self.path.length) * self.path.length
        z = self._shift_uniform(s_prev, s_new)
        if z is None:
            z = LinearTable(s_prev, self._prev_table)(s_new)
        x_op = z[:, :NX]
        beyond = s_new[-1] - s_prev[-1]
        if beyond > 0:  # extend the time beyond the old horizon at its last pace
            pace = (prev.x[-1, it] - prev.x[-2, it]) / max(s_prev[-1] - s_prev[-2], 1e-12)
            past = s_new > s_prev[-1]
            x_op[past, it] = prev.x[-1, it] + (s_new[past] - s_prev[-1]) * pace
        x_op[:, it] -= x_op[0, it]
        return x_op, z[:-1, NX:]

    def _shift_uniform(self, s_prev: np.ndarray, s_new: np.ndarray) -> np.ndarray | None:
        """The last plan's table at ``s_new`` when both grids are the uniform ``ds`` grid and the new
        one starts at or ahead of the old one (every step but those at an open path's end): one
        weight for all points, rows beyond the old horizon held at its last row -- the numbers of
        ``LinearTable(s_prev, table)(s_new)`` in three array operations. None otherwise."""
        N, ds = self.N, self.ds
        if not self.path.closed and max(s_prev[-1], s_new[-1]) >= self.path.length:
            return None  # a grid clamped at the end of an open path is not uniform
        d = (s_new[0] - s_prev[0]) / ds
        if not 0.0 <= d <= N:
            return None
        m = int(d)
        w = d - m
        pad = self._prev_pad
        pad[: N + 1] = self._prev_table
        pad[N + 1 :] = self._prev_table[N]
        z = pad[m : m + N + 1] * (1.0 - w)
        z += w * pad[m + 1 : m + N + 2]
        return z

    def _predict_delay(self, s0: float, x0: np.ndarray) -> tuple[float, np.ndarray]:
        """Predict the spatial state over the delay with the last command (nonlinear model, RK4)."""
        if self.settings.delay <= 0 or self._u_prev is None or self.model.SPEED_IN_STATE:
            return s0, x0
        return predict_over_delay(self._sampler, self.vehicle, s0, x0, self._u_prev, self.settings.delay, self.ds)

    # ------------------------------------------------------------------ solve
    @staticmethod
    def _unpack_state(state: Any) -> tuple[Any, Any, Any]:
        """``(s, e_y, e_psi)`` of a Projection or a sequence of three numbers."""
        return (state.s, state.e_y, state.e_psi) if isinstance(state, Projection) else state

    def _prepare(self, state: Any, measured: Measurement | None = None, t: float = 0.0) -> StepInput:
        """Measured state -> this step's prediction grid, path sample and operating point
        (:class:`~mpc_tracking.mpc.step.StepInput`, ``x0`` and ``s0`` after the delay prediction)."""
        s0, x0 = self._measured_state(state, measured)
        s_measured, x_measured = s0, x0.copy()  # before the delay prediction (the disturbance estimate's input)
        s0, x0 = self._predict_delay(s0, x0)
        prev = self.safeguards.last_plan
        use_prev = self.linearization == "previous" and prev is not None
        if self._prepare_args is not None:  # settings.compiled, kinematic model: the numbers below in one call
            s_grid, q, x_ref_op, u_ref, x_op, u_op, lim = self._prepare_kinematic(s0, x0, prev if use_prev else None)
        else:
            s_grid = self._grid(s0)
            q = self._sampler.sample(s_grid)
            self._check_domain(s0, x0, q.kappa)
            x_ref_op, u_ref = self._reference_op(q)
            if use_prev:
                x_op, u_op = self._shifted_op(prev, s_grid)  # type: ignore[arg-type]
            else:
                x_op, u_op = x_ref_op.copy(), u_ref.copy()
            lim = self._start_op(x0, x_op, u_op, q.kappa)
        v_measured = float(measured["speed"]) if measured and "speed" in measured else None
        return StepInput(x0=x0, x_op=x_op, u_op=u_op, u_ref=u_ref, x_ref=x_ref_op, q=q, s_grid=s_grid, e_y_limit=lim,
                         s0=s0, t=float(t), s_measured=s_measured, x_measured=x_measured, v_measured=v_measured)

    def _measured_state(self, state: Any, measured: Measurement | None) -> tuple[float, np.ndarray]:
        """``s0`` [m] and the model's state ``x0`` (nx,) of the measurement (sets the measured speed of models with
        the speed as a state); InputError when they are not finite."""
        s0, e_y, e_psi = self._unpack_state(state)
        x0 = self.model.initial_state(e_y, e_psi, measured)
        self._v_now = float(x0[self.model.I_SPEED]) if self.model.SPEED_IN_STATE else None
        s0 = float(s0)
        if not (math.isfinite(x0[0]) and math.isfinite(x0[1]) and math.isfinite(s0)):
            raise InputError(f"state: expected finite (s, e_y, e_psi), got ({s0}, {e_y}, {e_psi})")
        return s0, x0

    @staticmethod
    def _check_domain(s0: float, x0: np.ndarray, kappa: np.ndarray) -> None:
        """InputError when the state ``x0`` at ``s0`` [m] is outside the spatial model's domain (beyond the
        centre of curvature ``kappa[0]``, or facing away from the path)."""
        if x0[0] * kappa[0] >= 1.0:
            raise InputError(
                f"state: outside the path's domain at horizon index 0 (s = {s0:.2f} m): "
                f"e_y*kappa = {x0[0] * kappa[0]:.3g} >= 1 (the car is beyond the centre of curvature)"
            )
        if abs(x0[1]) >= 0.5 * np.pi:
            raise InputError(f"state: |e_psi| = {abs(x0[1]):.3f} rad >= pi/2; the car faces away from the path")

    def _start_op(self, x0: np.ndarray, x_op: np.ndarray, u_op: np.ndarray, kappa: np.ndarray) -> np.ndarray:
        """Start the operating point at ``x0`` and keep it inside the model's domain, in place; returns the
        ``|e_y|`` limits (N+1,) [m]."""
        x_op[0] = x0
        kern = self.qp.kernels
        if kern is not None:  # settings.compiled: the same numbers in one call
            m, lim = self.model, np.empty(kappa.size)
            kern.clamp_op(x_op, u_op, kappa, lim, m.I_EY, m.I_EPSI, m.SPEED_IN_STATE, m.I_SPEED, self.settings.v_min)
        else:
            lim = 0.95 / np.maximum(np.abs(kappa), 1e-12)
            self._clamp_op(x_op, u_op, lim)
        return lim

    def _prepare_kinematic(self, s0: float, x0: np.ndarray, prev: MPCSolution | None) -> tuple[Any, ...]:
        """The grid, path sample, reference and operating point of the kinematic model in one compiled call
        (:func:`mpc_tracking.mpc._kernels.kinematic_prepare`): the numbers of the numpy path of :meth:`_prepare`.
        Returns ``(s_grid, q, x_ref, u_ref, x_op, u_op, lim)``."""
        N, sampler, (cap_col, ref_prm, dummy_table) = self.N, self._sampler, self._prepare_args  # type: ignore[misc]
        s_grid, r, lim = np.empty(N + 1), np.empty((N + 1, sampler.table.shape[1])), np.empty(N + 1)
        x_ref, u_ref, z_op = np.empty((N + 1, 3)), np.empty((N, 2)), np.empty((N + 1, 5))
        v_start = self._speed_start()
        ref_prm[6] = np.nan if v_start is None else v_start
        kern: Any = self.qp.kernels
        done = kern.kinematic_prepare(
            *sampler.kernel_args(), s0, self._s_offsets, self.qp._s_offsets_u, cap_col, ref_prm,
            self._prev_table if prev is not None else dummy_table, prev.s if prev is not None else s_grid,
            prev is not None, self.ds, x0, self.settings.v_min, s_grid, r, x_ref, u_ref, z_op, lim)
        q = sampler.packed(r)
        self._check_domain(s0, x0, q.kappa)
        if done:
            return s_grid, q, x_ref, u_ref, z_op[:, :3], z_op[:-1, 3:], lim
        x_op, u_op = self._shifted_op(prev, s_grid)  # type: ignore[arg-type]  # (a grid not uniform with the last)
        return s_grid, q, x_ref, u_ref, x_op, u_op, self._start_op(x0, x_op, u_op, q.kappa)

    def _clamp_op(self, x_op: np.ndarray, u_op: np.ndarray, lim: np.ndarray) -> None:
        """Keep an operating point inside the model's domain, in place: |e_y| < 0.95/|kappa|,
        |e_psi| <= 1.2 rad, speed >= v_min."""
        m = self.model
        e = x_op[:, m.I_EY]
        np.minimum(np.maximum(e, -lim, out=e), lim, out=e)
        e = x_op[:, m.I_EPSI]
        np.minimum(np.maximum(e, -1.2, out=e), 1.2, out=e)
        v = x_op[:, m.I_SPEED] if m.SPEED_IN_STATE else u_op[:, m.I_SPEED]
        np.maximum(v, self.settings.v_min, out=v)

    def prepare_qp(self, state: Any, t: float = 0.0) -> StepProblem:
        """Build this step's QP without solving it and return its data (for cross-checks).

        The controller's internal memory (previous plan and command) is not changed.
        """
        self.build_qp(self._prepare(state, t=t))
        return self.step_problem()

    def step_problem(self) -> StepProblem:
        """Copy of the semantic data of the QP last built (see :class:`~mpc_tracking.mpc.qp.StepQP`)."""
        return self.qp.problem()

    def build_qp(self, step: StepInput) -> QPData:
        """Fill the QP data for one step (delegates to :meth:`StepQP.build`; the disturbance
        estimate, when there is one, shifts the dynamics' affine terms)."""
        d = self.qp.build(step.x0, step.x_op, step.u_op, step.u_ref, step.q, step.s_grid, step.t, self._u_prev,
                          step.x_ref)
        if self.disturbance is not None:
            self.disturbance.shift_dynamics(self.qp, step)
        return d

    def solve(self, state: Any, t: float = 0.0, measured: Measurement | None = None) -> MPCSolution:
        """Compute the command for the measured spatial state.

        Parameters
        ----------
        state : Projection or sequence (s, e_y, e_psi)
            Arc length [m], lateral error [m], heading error [rad] of the car now.
        t : float
            Current time [s] (moving obstacles are evaluated at ``t`` + predicted time).
        measured : dict, optional
            Further measurements the prediction model needs (the dynamic model: body-frame
            velocities ``v_x, v_y`` [m/s] of the reference point and yaw rate ``r`` [rad/s]);
            ``speed`` [m/s], the car's speed, is where a safe stop starts braking from.

        Returns
        -------
        MPCSolution

        Notes
        -----
        BLAS runs on ``settings.blas_threads`` threads (default 1) during the call
        (:mod:`mpc_tracking.mpc.blas`).
        """
        t_start = time.perf_counter()  # the step time includes setting the limit
        if not self.blas_limit.threads:  # no limit: the context would do nothing
            sol = self._solve(state, t, measured, t_start)
        else:
            with self.blas_limit:
                sol = self._solve(state, t, measured, t_start)
        if self.grip is not None and sol.status in (Status.SOLVED, Status.SOLVED_INACCURATE):
            self.grip.solved(sol, float(t), measured)  # the brake test, when due
        return sol

    def _solve(self, state: Any, t: float, measured: Measurement | None, t_start: float) -> MPCSolution:
        if self.grip is not None:  # the grip estimate scales the limits before anything reads them
            self.grip.step(float(t), measured, None if self._cmd_prev is None else float(self._cmd_prev[1]),
                           self._accel_cmd())
        guard = self.safeguards
        if self.settings.rejoin:
            s0, e_y, e_psi = self._unpack_state(state)
            if guard.needs_rejoin(s0, e_y, e_psi, self.n_steps):
                s_grid = self._grid(float(s0))
                d_prev = None if self._cmd_prev is None else float(self._cmd_prev[1])
                self.n_steps += 1
                return self._applied(guard.rejoin(s0, e_y, e_psi, s_grid, self._sampler.sample(s_grid), d_prev,
                                                  t_start))
        fused = self._fused
        if (fused is not None and fused[0] is self.settings and self.disturbance is None and self.grip is None
                and "build_qp" not in self.__dict__ and "_prepare" not in self.__dict__):  # (not replaced: tests)
            sol = self._solve_fused(state, t, measured, t_start)
            if sol is not None:
                return sol
        if (self._fused_dyn is not None and self.disturbance is None and "build_qp" not in self.__dict__
                and "_prepare" not in self.__dict__):
            sol = self._solve_fused(state, t, measured, t_start, dynamic=True)
            if sol is not None:
                return sol
        step = self._prepare(state, measured, t)
        if self.disturbance is not None:
            self.disturbance.observe(step, self._u_prev)
        res = self._solve_iterations(step)
        self.n_steps += 1
        if res.z is None or res.status is None:
            return self._applied(guard.fallback(step, res.message, res.iterations, res.solve_time, t_start,
                                                self._cmd_prev))
        q = step.q
        return self._solved(res, step.s_grid, q.x, q.y, q.psi, t_start)

    def _solve_fused(self, state: Any, t: float, measured: Measurement | None, t_start: float,
                     dynamic: bool = False) -> MPCSolution | None:
        """One step of the compiled kinematic QP (:attr:`_fused`; ``dynamic``: the dynamic model's,
        :attr:`_fused_dyn`): :meth:`_build_fused` (:meth:`_build_fused_dynamic`), the solve, the solution; no
        :class:`~mpc_tracking.mpc.step.StepInput` unless the solve fails. None (nothing changed but the measured
        speed) where this step needs the general path."""
        built = self._build_fused_dynamic(state, measured) if dynamic else self._build_fused(state, measured)
        if built is None:
            return None
        code, s0, x0, s_grid, r = built
        if code == 2:
            logger.warning("MPC step %d: non-finite linearization; not solved", self.n_steps)
            res = BackendResult(None, None, 0, 0.0, "non-finite QP data")
        else:
            res = self._backend_solve(self.data, None)
        self.n_steps += 1
        if res.z is None or res.status is None:
            if dynamic:
                fd: Any = self._fused_dyn
                x_ref, u_ref, z_op, lim = fd["x_ref"], fd["u_ref"], fd["z_op"], fd["lim"]
            else:
                x_ref, u_ref, z_op, lim = self._fused[4].views  # type: ignore[index]
            nx = x_ref.shape[1]
            step = StepInput(x0=x0, x_op=z_op[:, :nx], u_op=z_op[:-1, nx:], u_ref=u_ref, x_ref=x_ref,
                             q=self._sampler.packed(r), s_grid=s_grid, e_y_limit=lim, s0=s0, t=float(t),
                             s_measured=s0, x_measured=x0.copy(),
                             v_measured=float(measured["speed"]) if measured and "speed" in measured else None)
            return self._applied(self.safeguards.fallback(step, res.message, res.iterations, res.solve_time, t_start,
                                                          self._cmd_prev))
        return self._solved(res, s_grid, r[:, 4], r[:, 5], r[:, 6], t_start)

    def _build_fused(self, state: Any, measured: Measurement | None) -> tuple[int, float, np.ndarray, np.ndarray,
                                                                            np.ndarray] | None:
        """This step's QP of the kinematic model in one compiled call
        (:func:`mpc_tracking.mpc.fused.build_kinematic`)."""
        return fused.build_kinematic(self, state, measured)

    def _build_fused_dynamic(self, state: Any, measured: Measurement | None) -> tuple[int, float, np.ndarray,
                                                                                    np.ndarray, np.ndarray] | None:
        """This step's QP of the dynamic model in three compiled calls
        (:func:`mpc_tracking.mpc.fused.build_dynamic`)."""
        return fused.build_dynamic(self, state, measured)

    def _solved(self, res: BackendResult, s_grid: np.ndarray, x: np.ndarray, y: np.ndarray, psi: np.ndarray,
                t_start: float) -> MPCSolution:
        """The solution of a solved step (``res.z`` not None) on the grid ``s_grid`` (N+1,) [m] with the path's
        points ``x``, ``y`` [m] and heading ``psi`` [rad] there; it is recorded as the last plan and its first input
        as the command sent."""
        guard, lay, N = self.safeguards, self.layout, self.N
        z: np.ndarray = res.z  # type: ignore[assignment]  # (a solved step: the callers checked it)
        kern: Any = self.qp.kernels
        # settings.compiled: the same numbers in compiled calls (X, U: C-contiguous float64 copies of z's then)
        fast = kern is not None and z.dtype == np.float64 and z.flags.c_contiguous
        if fast and lay.nx == self.nx:  # one call: the plan's copy, its points, the table for the next step's shift
            xu, xy = np.empty(lay.nX + lay.nU), np.empty((N + 1, 2))
            slack_max = kern.finish_plan(z, x, y, psi, self.model.I_EY, xu, xy, self.nx, lay.isl0, self._prev_table)
            X, U = xu[: lay.nX].reshape(N + 1, self.nx), xu[lay.nX :].reshape(N, self.nu)
        elif fast:  # (the QP does not hold every state: X recomputed)
            X, U = self._unpack(z[: lay.nX + lay.nU].copy())  # one copy, two views of it
            e_y = X[:, self.model.I_EY]
            xy = np.empty((e_y.size, 2))
            slack_max = kern.finish_step(x, y, psi, e_y, xy, z, lay.isl0, X, U, self._prev_table)
        else:
            X, U = self._unpack(z[: lay.nX + lay.nU].copy())
            e_y = X[:, self.model.I_EY]
            xy = offset_point(x, y, psi, e_y)
            slack_max = z[self.layout.isl0 :].max()
        v_cmd, delta_cmd = self.model.command(X, U)
        sol = MPCSolution(
            v=v_cmd,
            delta=delta_cmd,
            status=res.status,  # type: ignore[arg-type]
            solver_status=res.message,
            success=True,
            iterations=res.iterations,
            solve_time=res.solve_time,
            step_time=0.0,
            s=s_grid,
            x=X,
            u=U,
            xy=xy,
            corridor_violation=max(0.0, float(slack_max)),
            fallback_steps=0,
            lb=self.qp.lb,
            ub=self.qp.ub,
        )
        guard.solved(sol)
        table, NX = self._prev_table, self.nx
        if not fast:
            table[:, :NX] = X
            table[:-1, NX:] = U
            table[-1, NX:] = U[-1]
        self._u_prev = U[0].copy()
        self._cmd_prev = np.array([v_cmd, delta_cmd])
        sol.step_time = time.perf_counter() - t_start
        return sol

    def _accel_cmd(self) -> float | None:
        """The longitudinal acceleration [m/s^2] the last command asked for (the prediction model's input), or
        None (the model has none, or nothing was sent yet): what the grip estimate compares the measured one to."""
        i = self.model.I_ACCEL
        if i is None or self._u_prev is None:
            return None
        return float(self._u_prev[i])

    def _applied(self, sol: MPCSolution) -> MPCSolution:
        """Remember a rejoin or fallback step's command as the one sent (the rate rows start there)."""
        self._u_prev = sol.u[0].copy()
        self._cmd_prev = np.array([sol.v, sol.delta])
        return sol

    def _solve_iterations(self, step: StepInput) -> BackendResult:
        """``settings.iterations`` solves, each re-linearized about the last solution (``step.x_op``,
        ``step.u_op`` replaced); the last result, with iterations and solve times summed."""
        n_it = self.settings.iterations
        res = self._solve_qp(step)
        if n_it == 1 or res.z is None:
            return res
        iters, stime = res.iterations, res.solve_time
        for _ in range(n_it - 1):
            x_op, u_op = (a.copy() for a in self._unpack(res.z))
            self._clamp_op(x_op, u_op, step.e_y_limit)
            step.x_op, step.u_op = x_op, u_op
            res = self._solve_qp(step)
            iters += res.iterations
            stime += res.solve_time
            if res.z is None:
                break
        res.iterations, res.solve_time = iters, stime
        return res

    def _unpack(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The plan ``X`` (N+1, nx), ``U`` (N, nu) in ``z`` (views; ``X`` a new array with the states the QP does
        not hold recomputed, :meth:`StepQP.plan_states <mpc_tracking.mpc.qp.StepQP.plan_states>`)."""
        lay = self.layout
        U = z[lay.nX : lay.nX + lay.nU].reshape(self.N, self.nu)
        if lay.nx == self.nx:
            return z[: lay.nX].reshape(self.N + 1, self.nx), U
        return self.qp.plan_states(z[: lay.nX], U), U

    def _solve_qp(self, step: StepInput) -> BackendResult:
        """Build and solve one QP with the back end; a solution that violates the QP's rows is a
        failure (:meth:`Safeguards.check_solution <mpc_tracking.mpc.safeguards.Safeguards.check_solution>`)."""
        d = self.build_qp(step)
        kern = self.qp.kernels
        finite = (kern.all_finite(d.A_data, d.q) if kern is not None  # settings.compiled: one pass
                  else np.isfinite(d.A_data).all() and np.isfinite(d.q).all())
        if not finite:
            logger.warning("MPC step %d: non-finite linearization; not solved", self.n_steps)
            return BackendResult(None, None, 0, 0.0, "non-finite QP data")
        warm = None
        if self.settings.warm_start == "shift" and self.safeguards.last_plan is not None:
            lay = self.layout
            warm = np.zeros(lay.n)
            warm[: lay.nX] = lay.stage_states(step.x_op).reshape(-1)
            warm[lay.nX : lay.nX + lay.nU] = step.u_op.reshape(-1)
        return self._backend_solve(d, warm)

    def _backend_solve(self, d: QPData, warm: np.ndarray | None) -> BackendResult:
        """Solve the QP built in ``d`` with the back end (``warm``: a primal guess (n,) or None); a solution that
        violates the QP's rows is a failure."""
        A, B, _f = self.qp.dynamics
        res = self.backend.solve(d, A, B, warm_x=warm, step=self.n_steps)
        if res.z is None:
            return res
        worst = self.safeguards.check_solution(d, res.z)
        if worst is not None:
            logger.warning("MPC step %d: the %s solver reported %s but the solution violates row %d by %.3g; "
                           "not applied", self.n_steps, self.backend.name, res.message, *worst)
            return BackendResult(None, None, res.iterations, res.solve_time, "solution violates the constraints")
        return res
