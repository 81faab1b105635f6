"""One step's QP numbers: dynamics, bounds, corridor and cost, written in place into fixed arrays.

:class:`StepQP` turns the situation of one MPC step (measured state, operating point, path sample,
corridor, last command) into the OSQP vectors ``q, l, u`` and the changing entries of the constraint
matrix, in the layout of :class:`~mpc_tracking.mpc.layout.QPLayout`. The controller policy (operating
point, solving, fallback) lives in :mod:`mpc_tracking.mpc.controller`.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import osqp

from mpc_tracking.models.prediction import DynamicPrediction, KinematicPrediction, PredictionModel
from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
from mpc_tracking.models.prediction.spatial_dynamic import IDX_VX, countersteer_bounds, front_slip_direction
from mpc_tracking.mpc import kernels
from mpc_tracking.mpc.layout import QPData, QPLayout, StepProblem
from mpc_tracking.mpc.reference import BRAKE_FLOOR, feasible_speed_profile, lateral_reference, speed_limit
from mpc_tracking.mpc.sampler import PathSample, PathSampler, window_reduce
from mpc_tracking.mpc.settings import MPCSettings
from mpc_tracking.paths.speed_profile import ellipse_share

__all__ = ["StepQP", "INF", "ELLIPSE_CUT_ANGLES", "FIRST_STEP_FLOOR", "ellipse_cut_layout", "reachable_box"]

#: OSQP's infinity: bounds at or beyond it are "no bound"
INF = float(osqp.OSQP().constant("OSQP_INFTY"))
_INF = INF


#: quadratic weight of the corridor slacks (keeps the QP strictly convex in them). Beside the linear
#: ``slack_weight`` (1e3 per m by default) it changes the optimum negligibly, but it conditions the
#: QP for ADMM: 1.0 instead of 1e-4 takes OSQP from a median of 60 to 20 iterations at N = 50 with
#: the first input as accurate (benchmarks/study_tolerance.py)
SLACK_QUAD = 1.0
#: steepest lateral slope de_y/ds of the e_y reference around obstacles
REF_SLOPE = 0.15
#: the friction ellipse leaves at least this share of the braking limit (braking stays possible); the same floor as
#: the whole-path ceilings' (:data:`mpc_tracking.mpc.reference.BRAKE_FLOOR`). The acceleration has no floor: at and
#: beyond the lateral limit it is 0 -- power there takes the driven axle's lateral grip. With a floor (this one, and
#: FIRST_STEP_FLOOR on the first step) a rear-driven car whose rear slid on a wet road was driven on through the slide
#: and spun; the rear-heavy oversteering sedan of ``benchmarks/bench_grip_change.py --car sedan_rwd_oversteer`` with
#: its dry file on the wet road left the track in 21 of 64 wet, rain and patch laps (generated circuits, seeds 3
#: and 4) with the floors, 11 with the acceleration at this floor on every step, 9 with none (the guide's
#: "No power beyond the ellipse")
ELLIPSE_FLOOR = BRAKE_FLOOR
#: the first prediction step keeps at least this share of the braking limit whatever the measured lateral
#: acceleration: the box is frozen at the operating point's first state, the measured one, and a car beyond its
#: lateral limit (the grip estimate lowered it mid-corner) cannot hold that acceleration anyway -- braking in the
#: first step is the only lever that sheds speed. At the floor (0.1 of 4.6 m/s^2) the plan braked from its second
#: step, only the first is applied, and the dry vehicle file on the wet sedan ran wide for 2.5-3.5 s
#: (benchmarks/bench_grip_change.py; see the guide's "limits of grip estimation")
FIRST_STEP_FLOOR = 0.5
#: friction-ellipse cuts per prediction step: tangents of the ellipse at these angles [deg] from
#: the acceleration axis towards the side of the operating point's lateral acceleration (90 is the
#: pure lateral limit; 0 and 180, pure acceleration and braking, are the input box)
ELLIPSE_CUT_ANGLES = (30.0, 60.0, 90.0, 120.0, 150.0)


def ellipse_cut_layout(model: PredictionModel, settings: MPCSettings) -> dict[str, Any]:
    """Keyword arguments of :class:`~mpc_tracking.mpc.layout.QPLayout` for the friction-ellipse cuts
    (none unless ``settings.friction_ellipse`` and the model has an acceleration input)."""
    if not (settings.friction_ellipse and settings.ellipse_cuts and model.I_ACCEL is not None and model.CUT_STATES):
        return {}
    return {"n_cuts": len(ELLIPSE_CUT_ANGLES), "cut_states": model.CUT_STATES, "i_accel": model.I_ACCEL}


def reachable_box(lo: np.ndarray, hi: np.ndarray, rate_lo: np.ndarray, rate_hi: np.ndarray) -> None:
    """Widen a per-step box ``[lo_k, hi_k]`` of one input, in place, just enough that every step of it can be
    reached within the rate rows: ``rate_lo[0] <= u_0 <= rate_hi[0]`` (the first row, against the last command:
    absolute bounds) and ``rate_lo[k] <= u_k - u_{k-1} <= rate_hi[k]`` (k >= 1). The interval the rows leave
    reachable is carried forward step by step; a box that misses it is moved to its nearest end, so box and rates
    together stay feasible. All arrays (N,)."""
    r_lo, r_hi = rate_lo[0], rate_hi[0]
    for k in range(lo.shape[0]):
        if k:
            r_lo, r_hi = r_lo + rate_lo[k], r_hi + rate_hi[k]
        if lo[k] > r_hi:
            lo[k] = r_hi
        if hi[k] < r_lo:
            hi[k] = r_lo
        r_lo, r_hi = max(r_lo, lo[k]), min(r_hi, hi[k])


class StepQP:
    """QP data of the spatial MPC for one step, updated in place (views into fixed arrays).

    Parameters
    ----------
    layout : QPLayout
    settings : MPCSettings
    vehicle : VehicleParams
    sampler : PathSampler
        Fast path interpolation (widths when no corridor is given).
    ds : float
        Prediction step [m].
    closed, length
        Whether the path is a loop, and its length [m].
    corridor : optional
        Lateral bounds provider (see :class:`~mpc_tracking.environment.Corridor`).
    model : PredictionModel, optional
        The prediction model (sizes, roles of the components, linearization); default the
        kinematic bicycle of ``vehicle``.
    """

    def __init__(self, layout: QPLayout, settings: MPCSettings, vehicle: VehicleParams, sampler: PathSampler,
                 ds: float, closed: bool, length: float, corridor: Any = None,
                 model: PredictionModel | None = None) -> None:
        self.layout, self.settings, self.vehicle, self._sampler = layout, settings, vehicle, sampler
        self.model = model = model if model is not None else KinematicPrediction(vehicle)
        # nx: the model's state size (x0, x_op, the dynamics A, B, f); nq: the QP's stage (layout.states)
        NX, NU = self.nx, self.nu = layout.nx_model, layout.nu
        NQ = self.nq = layout.nx
        self._x0 = np.zeros(NX)  # the measured state of the last build (the dropped states start there)
        self._xcol = np.ascontiguousarray(layout.x_col, dtype=np.int64)
        self.N, self.ds, self.closed, self.length = layout.N, ds, closed, length
        self.corridor = corridor
        # a provider may declare itself static (no moving obstacles) to be queried once per step
        self._corridor_moves = bool(getattr(corridor, "time_varying", True))
        self.data = QPData(layout)
        # raw corridor bounds (before the half width) of the last :meth:`build`, shape (N+1,) [m]
        self.lb: np.ndarray | None = None
        self.ub: np.ndarray | None = None
        st, lay, N = settings, layout, layout.N
        Q = model.weights(st)
        self._Q, self._QN = Q, st.terminal_weight * Q
        self._R, self._Rd = st.R_matrix, st.R_rate_matrix
        self._slack_quad = SLACK_QUAD
        self.P = lay.cost_matrix(self._Q, self._QN, self._R, self._Rd, slack_quad=self._slack_quad)
        self._half_w = 0.5 * self.vehicle.width + st.corridor_margin
        self._ref_inset = 0.5 * self.vehicle.width
        self._ref_slope = REF_SLOPE
        self._s_offsets_x = self.ds * np.arange(N + 1)
        j_r = int(np.ceil(self.vehicle.rear_overhang / self.ds - 1e-9))
        j_f = int(np.ceil(self.vehicle.front_extent / self.ds - 1e-9))
        self._ext_offsets = self.ds * np.arange(-j_r, N + 1 + j_f)
        self._ext_window = j_r + j_f + 1
        self.inv_L = 1.0 / model.wheelbase
        self._rate_dn, self._rate_up = model.input_rates(st)
        self._finite_decel = bool(np.isfinite(st.decel_max))
        self._finite_accel = bool(np.isfinite(st.accel_max))
        self._s_offsets_u = self.ds * np.arange(N)
        self._dt_buf = np.empty(N)
        self._dt_buf[0] = st.control_period
        # constant parts of l/u/q, and views of the parts that change
        d = self.data
        d.l[lay.r_slack :] = 0.0
        d.u[lay.r_slack :] = _INF
        box_l = d.l[lay.r_box : lay.r_rate].reshape(N, NU)
        box_u = d.u[lay.r_box : lay.r_rate].reshape(N, NU)
        lo, hi = model.input_bounds(st)
        box_l[:] = np.maximum(lo, -_INF)
        box_u[:] = np.minimum(hi, _INF)
        # the speed bound: per input step (speed as input) or per grid point 1..N (speed as state)
        self._speed_in_state = model.SPEED_IN_STATE
        if self._speed_in_state:
            d.l[lay.r_xbox : lay.r_corr] = st.v_min
            speed_hi = d.u[lay.r_xbox : lay.r_corr]
        else:
            speed_hi = box_u[:, model.I_SPEED]
        d.q[lay.iel0 :] = st.slack_weight
        self._box_lo0, self._box_hi0 = box_l[0].copy(), box_u[0].copy()
        self._ellipse = model.I_ACCEL is not None and st.friction_ellipse
        #: the steering within the front tyres' peak slip (settings.steer_within_peak_slip, a model with tyres)
        self._peak_slip = bool(st.steer_within_peak_slip) and isinstance(model, DynamicPrediction)
        #: power limit P/m [W/kg] on the acceleration input (models with speed as a state), or None
        self._power = (float(st.power_per_mass) if np.isfinite(st.power_per_mass) and model.I_ACCEL is not None
                       and model.SPEED_IN_STATE else None)
        if lay.n_cuts:
            # cut j: cos(th_j) a_x / A_x + sin(th_j) sigma a_y / a_y_max <= 1 + e_k, with A_x the
            # acceleration or braking limit on either side (0 coefficient when that limit is inf)
            th = np.radians(ELLIPSE_CUT_ANGLES)
            a_x_axis = np.where(np.cos(th) >= 0.0, st.accel_max, st.decel_max)
            self._cut_a = np.cos(th) / a_x_axis
            self._cut_y = np.sin(th) / st.a_y_max
            self._cut_gx = np.empty((N, lay.n_cuts, len(lay.cut_states)))
            self._cut_cols = list(model.CUT_STATES)  # (the model's indices: x_op's columns)
            self._cut_ga = np.broadcast_to(self._cut_a, (N, lay.n_cuts))
            d.l[lay.r_ell : lay.r_slack] = -_INF
        #: the compiled kernels (:mod:`mpc_tracking.mpc.kernels`) when ``settings.compiled`` resolves to numba
        self.kernels = kernels.load() if kernels.resolve(st.compiled) == "numba" else None
        # the kinematic model's Euler linearization and its fill run as one compiled call
        self._compiled_dynamics = (self.kernels is not None and type(model) is KinematicPrediction
                                   and st.discretization == "euler")
        if self._compiled_dynamics:
            self._lin_buf = (np.empty((N, NX, NX)), np.empty((N, NX, NU)), np.empty((N, NX)))
            self._pos_A = np.ascontiguousarray(lay.dyn_pos_A, dtype=np.int64)
            self._pos_B = np.ascontiguousarray(lay.dyn_pos_B, dtype=np.int64)
        # ... and so do the bounds, the corridor rows and the cost (speed as an input, no friction ellipse)
        self._compiled_rest = self._compiled_dynamics and not self._ellipse and not self._speed_in_state
        if self._compiled_rest:
            self._e_ref_buf = np.empty(N + 1)
            self._kernel_consts = kernels.bounds_cost_constants(
                self, model.input_rates(st), _INF, (self._pos_A, self._pos_B, *self._lin_buf, self._dt_buf,
                                                    self._e_ref_buf))
        # the dynamic model: its linearization (euler or rk4, substeps) and fill in one compiled call
        self._compiled_dynamic_model = self.kernels is not None and type(model) is DynamicPrediction
        if self._compiled_dynamic_model:
            self._lin_buf = (np.empty((N, NX, NX)), np.empty((N, NX, NU)), np.empty((N, NX)))
            self._pos_A = np.ascontiguousarray(lay.dyn_pos_A, dtype=np.int64)
            self._pos_B = np.ascontiguousarray(lay.dyn_pos_B, dtype=np.int64)
            self._ds_buf = np.empty(N)
            self._ref_scratch = (np.empty(N), np.empty((2, N + 1)), np.empty((N + 1, 5)))
            self._e_ref_buf = np.empty(N + 1)
        self._rest_packed: tuple[Any, ...] | None = None  # (settings, the dynamic model's constants for its kernel)
        self._dyn_packed: tuple[Any, np.ndarray] | None = None  # (params, their packed array)
        self._peak_cache: tuple[Any, float, float] | None = None  # (params, the front and rear peak slip [rad])
        self._limits_packed: tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]] | None = None  # (sources, arrays)
        self._ref_packed: tuple[Any, np.ndarray] | None = None  # (settings, the reference's numbers)
        self._rest_step_packed: tuple[tuple[Any, ...], np.ndarray, np.ndarray] | None = None  # dynamic_rest_pack
        #: the reference operating point in compiled code (:meth:`reference_op`)
        self.compiled_reference = self._compiled_rest or self._compiled_dynamic_model
        if self._compiled_rest:
            self._ref_prm = np.array([model.wheelbase, st.a_y_max, st.v_min, st.v_max, 0.9 * st.decel_max,
                                      0.9 * st.accel_max, np.nan, self.ds])
        self._views = {
            "box_l": box_l,
            "box_u": box_u,
            "speed_hi": speed_hi,
            "rate_l": d.l[lay.r_rate : lay.r_xbox].reshape(N, NU),
            "rate_u": d.u[lay.r_rate : lay.r_xbox].reshape(N, NU),
            "corr_l": d.l[lay.r_corr : lay.r_ell].reshape(N + 1, 2),
            "corr_u": d.u[lay.r_corr : lay.r_ell].reshape(N + 1, 2),
            "ell_u": d.u[lay.r_ell : lay.r_slack].reshape(N, lay.n_cuts),
            "qx": d.q[: lay.nX].reshape(N + 1, NQ),
            "qu": d.q[lay.nX : lay.nX + lay.nU].reshape(N, NU),
        }

    @property
    def slack_quad(self) -> float:
        """Quadratic weight of the corridor slacks in the cost (:data:`SLACK_QUAD`)."""
        return self._slack_quad

    def peak_slip(self) -> float:
        """The front tyres' peak slip angle [rad] of the prediction model's parameters now (they change with the
        grip estimate; inf: no bound)."""
        return self._peak_slips()[0]

    def _peak_slips(self) -> tuple[float, float]:
        """The (front, rear) peak slip angles [rad] of the model's parameters now, worked out once per parameter set
        (:attr:`~mpc_tracking.models.prediction.spatial_dynamic.DynamicParams.peak_slip_angles`: ~90 us)."""
        params = self.model.params  # type: ignore[attr-defined]
        if self._peak_cache is None or self._peak_cache[0] is not params:
            front, rear = params.peak_slip_angles
            self._peak_cache = (params, float(front), float(rear))
        return self._peak_cache[1], self._peak_cache[2]

    def _steering_within_peak_slip(self, x_op: np.ndarray, rate_l: np.ndarray, rate_u: np.ndarray) -> None:
        """The steering box of each step: ``front_slip_direction(x_op[k]) ± peak_slip`` within the plain box where
        ``v_x >= v_blend_high`` (the plain box below), the first step's also within :func:`countersteer_bounds` of
        the measured state (no front slip adding to an oversteer slide's yaw), then widened where the rate rows could
        not reach it (:func:`reachable_box`; ``rate_l``, ``rate_u`` (N, nu) the rate rows' bounds)."""
        model: Any = self.model
        p, i, V = model.params, model.I_DELTA, self._views
        lo0, hi0 = self._box_lo0[i], self._box_hi0[i]
        lo, hi = np.full(self.N, lo0), np.full(self.N, hi0)
        peak = self.peak_slip()
        if np.isfinite(peak):
            beta = front_slip_direction(x_op[:-1], p)
            on = x_op[:-1, IDX_VX] >= p.v_blend_high
            lo = np.where(on, np.clip(beta - peak, lo0, hi0), lo0)
            hi = np.where(on, np.clip(beta + peak, lo0, hi0), hi0)
            # the first step from the measured state: no front slip adding to an oversteer slide's yaw
            c_lo, c_hi = countersteer_bounds(x_op[0], p, self._peak_slips()[1])
            lo[0] = min(max(lo[0], c_lo), hi0)
            hi[0] = max(min(hi[0], c_hi), lo0)
        reachable_box(lo, hi, rate_l[:, i], rate_u[:, i])
        V["box_l"][:, i] = lo
        V["box_u"][:, i] = hi

    def speed_limit(self, kappa: np.ndarray, delta_op: np.ndarray | None) -> np.ndarray:
        st = self.settings
        return speed_limit(kappa, delta_op, self.inv_L, st.a_y_max, st.v_min, st.v_max)

    def linearize(
        self, x_op: np.ndarray, u_op: np.ndarray, kap: np.ndarray, s_grid: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``A`` (N, nx, nx), ``B`` (N, nx, nu), ``f`` (N, nx) of the prediction model about ``(x_op, u_op)``."""
        if self._compiled_dynamic_model and self.kernels is not None:  # the same numbers in one compiled call
            N, NX, NU = self.N, self.nx, self.nu
            A, B, f = np.empty((N, NX, NX)), np.empty((N, NX, NU)), np.empty((N, NX))
            ds = np.maximum(s_grid[1:] - s_grid[:-1], 0.0)
            self.kernels.dynamic_linearize(x_op, u_op, kap, ds, self._dynamic_params(),
                                           self.settings.discretization == "rk4", A, B, f)
            return A, B, f
        ds_k = np.maximum(s_grid[1:] - s_grid[:-1], 0.0)
        return self.model.linearize(x_op[:-1], u_op, kap[:-1], ds_k, self.settings.discretization)

    def bounds(
        self, s_grid: np.ndarray, q: PathSample, t_pred: np.ndarray, e_y0: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """Corridor bounds for the car at each grid point: the tightest bound along the body.

        The body spans ``[s - rear_overhang, s + front_extent]`` along the path, so the bounds are
        queried on a grid extended by the footprint and reduced with a sliding min/max window.
        """
        if self.corridor is None and q.width_left_body is not None and q.width_right_body is not None:
            return -q.width_right_body, q.width_left_body  # widths pre-reduced over the body length
        s_ext = s_grid[0] + self._ext_offsets
        if not self.closed:
            s_ext = np.minimum(np.maximum(s_ext, 0.0), self.length)
        if self.corridor is not None:
            # moving obstacles: a point of the path is under the body from the time the front
            # bumper reaches it until the rear bumper leaves it; both ends are checked
            veh = self.vehicle
            s_rel = s_grid[0] + self._ext_offsets
            lb, ub = None, None
            for shift in (-veh.front_extent, veh.rear_overhang):
                t_ext = np.interp(s_rel + shift, s_grid, t_pred)
                lo, hi = self.corridor.bounds(s_ext, t_ext, e_y0)
                lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
                lb = lo if lb is None else np.maximum(lb, lo)
                ub = hi if ub is None else np.minimum(ub, hi)
                if not self._corridor_moves:
                    break
        else:
            qe = self._sampler.sample(s_ext)
            lb, ub = -qe.width_right, qe.width_left
        w = self._ext_window
        return window_reduce(np.ascontiguousarray(lb), w, True), window_reduce(np.ascontiguousarray(ub), w, False)

    def build(
        self,
        x0: np.ndarray,
        x_op: np.ndarray,
        u_op: np.ndarray,
        u_ref: np.ndarray,
        q: PathSample,
        s_grid: np.ndarray,
        t_now: float,
        u_prev_cmd: np.ndarray | None,
        x_ref: np.ndarray | None = None,
        v_now: float | None = None,
    ) -> QPData:
        """Fill :attr:`data` (q, l, u, A data) for one step and return it.

        ``u_prev_cmd`` is the last applied input of the plan (None before the first step).

        Parameters
        ----------
        x0 : (nx,) measured state; x_op (N+1, nx), u_op (N, nu): operating point;
        u_ref : (N, nu) input reference; q : path sample on ``s_grid`` (N+1,); t_now : time [s];
        x_ref : (N+1, nx) the reference operating point (targets of the states beyond e_y, e_psi, t);
        v_now : the car's speed now [m/s] (the speed bound must be reachable from it); default the
        last planned speed.
        """
        st, lay, N, d, V = self.settings, self.layout, self.N, self.data, self._views
        NX, NQ, model = self.nx, self.nq, self.model
        kern = self.kernels
        self._x0[:] = x0
        if self._compiled_rest and kern is not None:  # the whole QP in one compiled call
            return self._build_rest_compiled(kern, x0, x_op, u_op, u_ref, q, s_grid, t_now, u_prev_cmd, v_now)
        if self._compiled_dynamics and kern is not None:  # the same numbers in one compiled call
            # (kernels.kinematic_linearize_fill, called directly)
            kern.kinematic_linearize_fill(x_op, u_op, q.kappa, s_grid, float(model.wheelbase), x0, d.A_data,
                                          self._pos_A, self._pos_B, d.l, d.u, *self._lin_buf)
            self._lin = self._lin_buf
        elif self._compiled_dynamic_model and kern is not None:
            kern.dynamic_linearize_fill(x_op, u_op, q.kappa, s_grid, self._dynamic_params(),
                                        st.discretization == "rk4", x0, d.A_data, self._pos_A, self._pos_B, d.l, d.u,
                                        *self._lin_buf, self._ds_buf, self._xcol)
            self._lin = self._lin_buf
        else:
            A, B, f = self._lin = self.linearize(x_op, u_op, q.kappa, s_grid)
            lay.fill_dynamics(d.A_data, A, B)
            # dynamics rows: x_0 = x0 and A x + B u - x_next = -f (the QP's states)
            d.l[:NQ] = lay.stage_states(np.asarray(x0, dtype=float))
            d.l[NQ : lay.nX] = -lay.stage_states(f).reshape(-1)
            d.u[: lay.nX] = d.l[: lay.nX]
        if self._compiled_dynamic_model and kern is not None and x_ref is not None:
            return self._build_rest_dynamic(kern, x0, x_op, u_ref, q, s_grid, t_now, u_prev_cmd, x_ref)
        # speed bound from path and planned curvature: on the inputs 0..N-1 or the states 1..N
        spd = V["speed_hi"]
        ks = slice(1, N + 1) if self._speed_in_state else slice(0, N)
        # (the kinematic model also counts the car's own curvature tan(delta)/L of the plan; the
        # dynamic model's steering includes slip angles, and its tyres limit the cornering themselves)
        spd[:] = self.speed_limit(q.kappa[ks], None if self._speed_in_state else u_op[:, model.I_DELTA])
        if q.v_box is not None:  # braking-aware ceiling from the whole path (see SpatialMPC)
            np.minimum(spd, np.maximum(q.v_box[ks], st.v_min), out=spd)
        share = None
        if self._ellipse:
            # friction ellipse (a_x / A_x)^2 + (a_y / a_y_max)^2 <= 1: the acceleration bounds (and
            # the braking the speed bound may count on) are what the tyres have left at the
            # operating point's lateral acceleration (braking_budget: never below ELLIPSE_FLOOR,
            # the floor the whole-path ceilings use too); or, with ellipse_cuts, the QP holds soft
            # linear cuts that couple a_x with the planned a_y
            ay = model.lateral_acceleration(x_op[:-1], u_op)
            accel_share = ellipse_share(ay, st.a_y_max)  # the acceleration's: no floor (see ELLIPSE_FLOOR)
            share = np.maximum(accel_share, ELLIPSE_FLOOR)  # the braking's, with the floors
            share[0] = max(share[0], FIRST_STEP_FLOOR)
            if not lay.n_cuts:  # bounds frozen at the operating point's lateral acceleration
                ia = model.I_ACCEL
                V["box_l"][:, ia] = np.maximum(self._box_lo0[ia] * share, -_INF)
                V["box_u"][:, ia] = np.minimum(self._box_hi0[ia] * accel_share, _INF)
            else:
                g, c = model.lateral_acceleration_linear(x_op[:-1])
                ay_op = np.einsum("ki,ki->k", g, x_op[:-1, self._cut_cols]) + c
                sigma = np.where(ay_op >= 0.0, 1.0, -1.0)  # the side of the ellipse the plan is on
                sy = sigma[:, None] * self._cut_y[None, :]  # (N, n_cuts)
                np.multiply(sy[:, :, None], g[:, None, :], out=self._cut_gx)
                lay.fill_cuts(d.A_data, self._cut_gx, self._cut_ga)
                np.subtract(1.0, sy * c[:, None], out=V["ell_u"])
        if self._power is not None:
            # power limit: a_x <= min(accel_max, P/m / v) at each step's planned speed (times the
            # ellipse's share when the bounds carry it)
            ia = model.I_ACCEL
            top = np.minimum(self._box_hi0[ia], self._power / np.maximum(x_op[:-1, model.I_SPEED], st.v_min))
            if share is not None and not lay.n_cuts:
                top = top * accel_share
            V["box_u"][:, ia] = np.minimum(top, _INF)
        # rates: per prediction step via the predicted speed; first step via the control period
        dt_all = self._dt_buf
        speeds = model.speeds(x_op, u_op)
        dt_all[1:] = np.maximum(s_grid[1:N] - s_grid[: N - 1], 1e-9) / np.maximum(speeds[: N - 1], st.v_min)
        rl, ru = V["rate_l"], V["rate_u"]
        rl[:] = -self._rate_dn * dt_all[:, None]
        ru[:] = self._rate_up * dt_all[:, None]
        u_prev = u_prev_cmd if u_prev_cmd is not None else u_ref[0]
        if u_prev_cmd is None:
            rl[0], ru[0] = -_INF, _INF
        else:
            rl[0] += u_prev
            ru[0] += u_prev
        v0: float | None = None
        if self._speed_in_state:
            v0 = float(x0[model.I_SPEED])
        elif u_prev_cmd is not None:
            v0 = float(u_prev[model.I_SPEED] if v_now is None else v_now)
        if v0 is not None:
            # the speed bound starts where the car is (state) or at the last command (input)
            offsets = self._s_offsets_x[1:] if self._speed_in_state else self._s_offsets_u
            if self._finite_accel or self._finite_decel:
                # make the speed bound itself reachable with 95 % of the rate limits: then the bound,
                # not a long chain of active rate rows, limits the plan (such chains slow ADMM down)
                v_start = v0 + 0.95 * st.accel_max * st.control_period
                if self._speed_in_state:  # the bound starts one step ahead of the car (at ds)
                    ext = np.concatenate(([v_start], spd))
                    spd[:] = feasible_speed_profile(
                        ext, self._s_offsets_x, 0.95 * st.decel_max, 0.95 * st.accel_max, v_start, st.v_min
                    )[1:]
                else:
                    spd[:] = feasible_speed_profile(
                        spd, offsets, 0.95 * st.decel_max, 0.95 * st.accel_max, v_start, st.v_min
                    )
            if self._finite_decel:
                # never ask for more braking than the limits allow (keeps the QP feasible): the
                # speed input changes at most decel_max per second; the speed state brakes at most
                # by the acceleration input's lower bounds of each step (after the friction
                # ellipse) along s: v^2 falls by 2 |a_lo| ds per step (half of it, for margin)
                if self._speed_in_state:
                    a_lo = st.decel_max * (share if share is not None else 1.0)
                    drop = np.cumsum(a_lo * np.diff(s_grid))
                    v_reach = np.sqrt(np.maximum(v0 * v0 - drop, 0.0))
                else:
                    v_reach = v0 - st.decel_max * np.cumsum(dt_all)
                np.maximum(spd, v_reach + 1e-6, out=spd)
        np.maximum(rl, -_INF, out=rl)
        np.minimum(ru, _INF, out=ru)
        if self._peak_slip:
            self._steering_within_peak_slip(x_op, rl, ru)
        # corridor for the footprint
        lb, ub = self.bounds(s_grid, q, t_now + x_op[:, model.I_T], float(x0[model.I_EY]))
        lo = np.maximum(lb + self._half_w, -_INF)
        hi = np.minimum(ub - self._half_w, _INF)
        narrow = lo > hi
        if narrow.any():
            mid = 0.5 * (lo + hi)
            lo = np.where(narrow, mid, lo)
            hi = np.where(narrow, mid, hi)
        self.lb, self.ub = lb, ub
        V["corr_l"][:] = lo[:, None]
        V["corr_u"][:] = hi[:, None]
        # cost vector: the e_y reference moves into the free gap when 0 is blocked
        # (kept half a car width inside the gap where it can be, so the plan does not hug the edge:
        # a reference on the bound makes a chain of active rows, which ADMM converges on slowly)
        inset = np.minimum(0.5 * (hi - lo), self._ref_inset)
        e_ref = self._e_ref = lateral_reference(lo + inset, hi - inset, self._s_offsets_x, self._ref_slope)
        self._u_ref_used, self._u_prev_used = u_ref, u_prev
        qx = V["qx"]
        if x_ref is None:
            target = np.zeros((N + 1, NX))
            target[:, model.I_EY] = e_ref
        else:
            target = model.state_target(x_ref, e_ref)
        if NQ == NX:
            np.matmul(target[1:N], self._Q, out=qx[1:N])
        else:
            qx[1:N] = lay.stage_states(target[1:N] @ self._Q)
        qx[1:N] *= -1.0
        qx[N] = -lay.stage_states(self._QN @ target[N])
        if st.mode == "time_optimal":  # (the model keeps t in the QP then: QPLayout.x_index raises otherwise)
            qx[N, lay.x_index(0, model.I_T)] += st.time_weight
        qu = V["qu"]
        np.matmul(u_ref, self._R, out=qu)
        qu *= -1.0
        qu[0] -= u_prev @ self._Rd
        return d

    def _build_rest_compiled(self, kern: Any, x0: np.ndarray, x_op: np.ndarray, u_op: np.ndarray, u_ref: np.ndarray,
                             q: PathSample, s_grid: np.ndarray, t_now: float, u_prev_cmd: np.ndarray | None,
                             v_now: float | None) -> QPData:
        """:meth:`build` of the kinematic model (Euler, speed as an input, no friction ellipse) in one compiled
        call, the linearization included: the same numbers (:func:`mpc_tracking.mpc.kernels.kinematic_build`)."""
        model = self.model
        u_prev = u_prev_cmd if u_prev_cmd is not None else u_ref[0]
        lb, ub = self.bounds(s_grid, q, t_now + x_op[:, model.I_T], float(x0[model.I_EY]))
        kernels.kinematic_build(kern, self._kernel_consts, x_op, u_op, q, s_grid, x0, u_prev, u_prev_cmd is not None,
                                v_now, lb, ub, u_ref)
        self.compiled_build_done(x0, lb, ub, u_ref, u_prev)
        return self.data

    def compiled_build_done(self, x0: np.ndarray, lb: np.ndarray, ub: np.ndarray, u_ref: np.ndarray,
                            u_prev: np.ndarray) -> None:
        """Record a build of the kinematic model's QP by its compiled kernel (into the buffers packed in
        ``_kernel_consts``; the controller's fused step calls it too): the state ``x0`` (nx,), the corridor bounds
        ``lb``, ``ub`` (N+1,) [m], the input reference ``u_ref`` (N, nu) and the last command ``u_prev`` (nu,) it
        used (:meth:`problem`, :meth:`plan_states`)."""
        self._x0[:] = x0
        self._lin = self._lin_buf
        self.lb, self.ub = lb, ub
        self._e_ref = self._e_ref_buf
        self._u_ref_used, self._u_prev_used = u_ref, u_prev

    def _dynamic_constants(self) -> tuple[Any, ...]:
        """What :meth:`_build_rest_dynamic` passes to its kernel besides the step's arrays, packed again when the
        settings object is replaced (the grip estimate does, with the bounds and cut coefficients)."""
        st, lay = self.settings, self.layout
        model: Any = self.model
        if self._rest_packed is not None and self._rest_packed[0] is st and self._rest_packed[5] is model.params:
            return self._rest_packed
        prm = np.array([st.a_y_max, st.v_min, st.v_max, st.control_period, st.accel_max, st.decel_max, self._half_w,
                        self._ref_inset, self._ref_slope, st.time_weight if st.mode == "time_optimal" else 0.0, _INF,
                        np.nan if self._power is None else self._power, ELLIPSE_FLOOR, FIRST_STEP_FLOOR,
                        self.peak_slip() if self._peak_slip else np.nan, model.params.l_f, model.params.v_blend_high,
                        self._peak_slips()[1], model.params.l_r],
                       dtype=np.float64)
        flg = np.array([lay.r_box, lay.r_rate, lay.r_xbox, lay.r_corr, lay.r_ell, lay.nX, lay.n_cuts,
                        int(self._ellipse), int(model.slip_reference), 0, 0, int(self._power is not None), lay.nx],
                       dtype=np.int64)
        f64 = np.ascontiguousarray
        cut_pos = ((f64(lay.cut_pos_x, dtype=np.int64), f64(lay.cut_pos_a, dtype=np.int64)) if lay.n_cuts
                   else (np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)))
        mats = tuple(f64(a, dtype=np.float64) for a in (self._Q, self._QN, self._R, self._Rd))
        self._rest_packed = (st, prm, flg, cut_pos, mats, model.params)
        return self._rest_packed

    def _dynamic_limits(self) -> tuple[np.ndarray, ...]:
        """The input box, rate limits and cut coefficients :meth:`_build_rest_dynamic` passes to its kernel, as
        C-contiguous float64 arrays: converted again only when one of them is replaced (the grip estimate does)."""
        one = self._dt_buf[:1]  # a placeholder for the arrays a variant does not use
        src = (self._box_lo0, self._box_hi0, self._rate_dn, self._rate_up,
               *((self._cut_a, self._cut_y) if self.layout.n_cuts else (one, one)))
        cached = self._limits_packed
        if cached is None or any(a is not b for a, b in zip(cached[0], src, strict=True)):
            cached = self._limits_packed = (src, tuple(np.ascontiguousarray(a, dtype=np.float64) for a in src))
        return cached[1]

    def dynamic_rest_pack(self) -> tuple[np.ndarray, np.ndarray]:
        """The constants of the dynamic model's QP after its dynamics packed for ``_kernels.dynamic_rest`` (the
        controller's fused dynamic step): ``cst`` (float64) and ``ints`` (int64) as that kernel documents them, the
        numbers :meth:`_build_rest_dynamic` passes to its kernel. Packed again when the settings, the model's
        parameters, the input box, the rate limits or the cut coefficients are replaced (the grip estimate does);
        the caller sets the flags of the step (``ints[8:11]``: slip reference, whole-path ceiling, last command)."""
        model: Any = self.model
        src = (self.settings, model.params, self._box_lo0, self._box_hi0, self._rate_dn, self._rate_up,
               getattr(self, "_cut_a", None), getattr(self, "_cut_y", None))  # (no cut coefficients without cuts)
        cached = self._rest_step_packed
        if cached is not None and all(a is b for a, b in zip(cached[0], src, strict=True)):
            return cached[1], cached[2]
        _st, prm, flg, (pos_x, pos_a), mats, _params = self._dynamic_constants()
        cst = np.concatenate([prm, *self._dynamic_limits(), self._s_offsets_x, *(m.reshape(-1) for m in mats)])
        ints = np.concatenate([flg, self._xcol, pos_x, pos_a]).astype(np.int64)
        self._rest_step_packed = (src, cst, ints)
        return cst, ints

    def _build_rest_dynamic(self, kern: Any, x0: np.ndarray, x_op: np.ndarray, u_ref: np.ndarray, q: PathSample,
                            s_grid: np.ndarray, t_now: float, u_prev_cmd: np.ndarray | None,
                            x_ref: np.ndarray) -> QPData:
        """The part of :meth:`build` after the dynamics for the dynamic model in one compiled call (speed bound,
        friction ellipse as bounds or cuts, power limit, rates, corridor rows, lateral reference, cost): the same
        numbers (:func:`mpc_tracking.mpc._kernels.dynamic_bounds_cost`)."""
        model, d = self.model, self.data
        _st, prm, flg, (pos_x, pos_a), (Q, QN, R, Rd), _params = self._dynamic_constants()
        u_prev = u_prev_cmd if u_prev_cmd is not None else u_ref[0]
        lb, ub = self.bounds(s_grid, q, t_now + x_op[:, model.I_T], float(x0[model.I_EY]))
        flg[8] = bool(getattr(model, "slip_reference", False))
        flg[9] = q.v_box is not None
        flg[10] = u_prev_cmd is not None
        f64 = np.ascontiguousarray
        kern.dynamic_bounds_cost(q.kappa, q.v_box if q.v_box is not None else q.kappa, x_op, f64(x0, dtype=float),
                                 s_grid, u_ref, f64(u_prev, dtype=float), x_ref, f64(lb, dtype=float),
                                 f64(ub, dtype=float), prm, flg, *self._dynamic_limits(), pos_x, pos_a,
                                 self._s_offsets_x, Q, QN, R, Rd, d.A_data, d.l, d.u, d.q, self._dt_buf,
                                 self._e_ref_buf, self._xcol)
        self.lb, self.ub = lb, ub
        self._e_ref = self._e_ref_buf
        self._u_ref_used, self._u_prev_used = u_ref, u_prev
        return d

    def reference_op(self, q: PathSample, v_start: float | None) -> tuple[np.ndarray, np.ndarray]:
        """The reference operating point ``x_op`` (N+1, nx), ``u_op`` (N, nu) in one compiled call: the numbers of
        ``SpatialMPC._speed_reference`` (the path's speed limits, its ``v_ref`` or whole-path ceiling, the feasible
        profile from ``v_start`` [m/s]) and the model's ``reference_op`` (:meth:`KinematicPrediction.reference_op
        <mpc_tracking.models.prediction.KinematicPrediction.reference_op>`, :meth:`DynamicPrediction.reference_op
        <mpc_tracking.models.prediction.DynamicPrediction.reference_op>`). Only with :attr:`compiled_reference`."""
        N, st = self.N, self.settings
        cap = q.v_ref if st.mode != "time_optimal" and q.v_ref is not None else q.v_box
        kern: Any = self.kernels
        if self._compiled_dynamic_model:
            model: Any = self.model
            prm = self.dynamic_reference_prm()
            prm[6] = np.nan if v_start is None else v_start
            x_op, u_op = np.empty((N + 1, self.nx)), np.empty((N, self.nu))
            v, scratch, out = self._ref_scratch
            kern.speed_reference(q.kappa, q.kappa if cap is None else cap, cap is not None, self._s_offsets_u, prm, v)
            kern.dynamic_reference(q.kappa, v, self.ds, self._dynamic_params(), model.slip_reference, x_op, u_op,
                                   scratch, out)
            return x_op, u_op
        prm = self._ref_prm
        prm[6] = np.nan if v_start is None else v_start
        x_op, u_op = np.empty((N + 1, 3)), np.empty((N, 2))
        kern.kinematic_reference(q.kappa, q.kappa if cap is None else cap, cap is not None, self._s_offsets_u, prm,
                                 x_op, u_op)
        return x_op, u_op

    def dynamic_reference_prm(self) -> np.ndarray:
        """The dynamic model's speed reference's numbers (``prm`` of ``_kernels.speed_reference``: wheelbase,
        a_y_max, v_min, v_max, 0.9 decel_max, 0.9 accel_max, the start speed (NaN: none; the caller sets it), ds),
        packed again when the settings object is replaced (the grip estimate does)."""
        st = self.settings
        if self._ref_packed is None or self._ref_packed[0] is not st:
            self._ref_packed = (st, np.array([self.model.wheelbase, st.a_y_max, st.v_min, st.v_max,
                                              0.9 * st.decel_max, 0.9 * st.accel_max, np.nan, self.ds]))
        return self._ref_packed[1]

    def _dynamic_params(self) -> np.ndarray:
        """The dynamic model's parameters packed for the kernels (packed again when the model's parameters are
        replaced, e.g. by the grip estimate)."""
        params = self.model.params  # type: ignore[attr-defined]
        if self._dyn_packed is None or self._dyn_packed[0] is not params:
            self._dyn_packed = (params, kernels.dynamic_params(params))
        return self._dyn_packed[1]

    @property
    def dynamics(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``A`` (N, nx, nx), ``B`` (N, nx, nu), ``f`` (N, nx) of the QP last built, in the model's coordinates
        (views, not copies; the QP's rows hold the states of ``layout.states``:
        :meth:`QPLayout.stage_dynamics <mpc_tracking.mpc.layout.QPLayout.stage_dynamics>`)."""
        return self._lin

    def plan_states(self, zx: np.ndarray, U: np.ndarray) -> np.ndarray:
        """The plan's states (N+1, nx) in the model's coordinates from the QP's state variables ``zx``
        ((N+1) nq,) and inputs ``U`` (N, nu) of the QP last built: the states the QP does not hold (the dynamic
        model's t outside the time-optimal mode) from their rows of its dynamics
        (:meth:`QPLayout.expand_states <mpc_tracking.mpc.layout.QPLayout.expand_states>`; the compiled kernel
        ``expand_states`` with ``settings.compiled``: the same numbers)."""
        A, B, f = self._lin
        kern = self.kernels
        if kern is not None and zx.dtype == np.float64 and U.dtype == np.float64:
            X = np.empty((self.N + 1, self.nx))
            kern.expand_states(zx, U, self._x0, A, B, f, self._xcol, X)
            return X
        return self.layout.expand_states(zx, U, self._x0, A, B, f)

    def add_affine(self, w: np.ndarray) -> None:
        """Add ``w`` (N, nx) to the affine term ``f`` of the dynamics of the QP last built, in place
        (``f`` and the equality rows ``l = u = -f`` of the QP's states), e.g. a disturbance estimate."""
        self._lin[2][...] += w
        rows = slice(self.nq, self.layout.nX)
        flat = self.layout.stage_states(np.asarray(w, dtype=float)).reshape(-1)
        self.data.l[rows] -= flat
        self.data.u[rows] -= flat

    def problem(self) -> StepProblem:
        """Copy of the semantic data of the QP last built by :meth:`build`."""
        lay, V, N = self.layout, self._views, self.N
        NU = self.nu
        d = self.data
        return StepProblem(
            A=self._lin[0].copy(), B=self._lin[1].copy(), f=self._lin[2].copy(), x0=self._x0.copy(),
            u_lo=d.l[lay.r_box : lay.r_rate].reshape(N, NU).copy(), u_hi=V["box_u"].copy(),
            rate_lo=V["rate_l"].copy(), rate_hi=V["rate_u"].copy(),
            corr_lo=V["corr_l"][:, 0].copy(), corr_hi=V["corr_u"][:, 0].copy(),
            e_ref=self._e_ref.copy(), u_ref=self._u_ref_used.copy(), u_prev=self._u_prev_used.copy(),
            Q=self._Q, QN=self._QN, R=self._R, R_rate=self._Rd,
            slack_weight=self.settings.slack_weight, slack_quad=self._slack_quad,
            time_weight=self.settings.time_weight if self.settings.mode == "time_optimal" else 0.0,
            front=self.vehicle.front_extent, rear=self.vehicle.rear_overhang,
        )
