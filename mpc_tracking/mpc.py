"""Spatial LTV-MPC on OSQP: set up once, updated in place every step.

Every step the controller

1. (optionally) predicts the measured state over the configured delay,
2. lays a prediction grid of N steps of ``ds`` metres ahead of the current arc length,
3. linearizes the spatial bicycle model about the previous solution shifted along s (or the
   reference) -- vectorized over the horizon,
4. writes the new A_k/B_k entries, cost vector and bounds into the fixed-pattern QP, and
5. solves it warm-started, checking OSQP's status (osqp 1.x returns finite garbage for
   infeasible problems). On failure the previous plan is reused for at most
   ``max_fallback_steps`` steps, then the command becomes a safe stop.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Protocol

import numpy as np
import osqp
from numpy.lib.stride_tricks import sliding_window_view

from .errors import InputError, SolverError
from .models import spatial_bicycle as sb
from .models.spatial_bicycle import VehicleParams
from .mpc_settings import MPCSettings, MPCSolution
from .path_sampler import PathSample, PathSampler, lerp_rows
from .mpc_reference import feasible_speed_profile, predict_over_delay, speed_limit
from .qp_layout import QPData, QPLayout, StepProblem
from .reference_path import Projection, ReferencePath

__all__ = ["SpatialMPC", "MPCSettings", "MPCSolution", "Corridor", "QPData", "StepProblem"]

logger = logging.getLogger(__name__)
_INF = float(osqp.OSQP().constant("OSQP_INFTY"))
_OK = {osqp.SolverStatus.OSQP_SOLVED: "solved", osqp.SolverStatus.OSQP_SOLVED_INACCURATE: "solved_inaccurate"}


class Corridor(Protocol):
    """Anything that gives lateral bounds along the path (see :mod:`mpc_tracking.environment`)."""

    def bounds(
        self, s: np.ndarray, t: np.ndarray | None = None, e_y0: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Raw lower/upper bound on e_y [m] of the free space at arc lengths ``s`` and times ``t``.

        An optional attribute ``time_varying = False`` tells the MPC the bounds do not depend on
        ``t`` (it then queries once per step instead of twice).

        ``e_y0`` is the car's current lateral position: where an obstacle splits the corridor the
        provider picks the gap that contains (or is nearest to) it and follows that gap along ``s``.
        The bounds are not shrunk by the car; the MPC adds half width, margin and footprint swing.
        """
        ...


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

    Examples
    --------
    >>> mpc = SpatialMPC(path, VehicleParams(), MPCSettings(horizon=30))  # doctest: +SKIP
    >>> sol = mpc.solve(path.project(x, y, psi))                           # doctest: +SKIP
    >>> v, delta = sol.command                                             # doctest: +SKIP
    """

    def __init__(
        self,
        path: ReferencePath,
        vehicle: VehicleParams | None = None,
        settings: MPCSettings | None = None,
        corridor: Corridor | None = None,
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
        # a provider may declare itself static (no moving obstacles) to be queried once per step
        self._corridor_moves = bool(getattr(corridor, "time_varying", True))
        st = self.settings
        self.N = st.horizon
        self.ds = float(st.ds if st.ds is not None else path.ds)
        self.layout = QPLayout(self.N, self.vehicle.front_extent, self.vehicle.rear_overhang)
        self.data = QPData(self.layout)
        self._build_constants()
        self.reset()
        self._setup_solver()

    # ------------------------------------------------------------------ set-up
    def _build_constants(self) -> None:
        st, lay, N = self.settings, self.layout, self.N
        Q = st.Q_matrix
        self._Q, self._QN = Q, st.terminal_weight * Q
        self._R, self._Rd = st.R_matrix, st.R_rate_matrix
        self._slack_quad = 1e-4
        self.P = lay.cost_matrix(self._Q, self._QN, self._R, self._Rd, slack_quad=self._slack_quad)
        self._half_w = 0.5 * self.vehicle.width + st.corridor_margin
        self._s_offsets = self.ds * np.arange(N + 1)
        j_r = int(np.ceil(self.vehicle.rear_overhang / self.ds - 1e-9))
        j_f = int(np.ceil(self.vehicle.front_extent / self.ds - 1e-9))
        self._ext_offsets = self.ds * np.arange(-j_r, N + 1 + j_f)
        self._ext_window = j_r + j_f + 1
        self._inv_L = 1.0 / self.vehicle.wheelbase
        self._sampler = PathSampler(self.path)
        self._rate_dn = np.array([st.decel_max, st.delta_rate_max])
        self._rate_up = np.array([st.accel_max, st.delta_rate_max])
        self._finite_decel = bool(np.isfinite(st.decel_max))
        self._dt_buf = np.empty(N)
        self._prev_table = np.empty((N + 1, 5))  # last plan: x (3) and u (2) per grid point
        self._dt_buf[0] = st.control_period
        # constant parts of l/u/q, and views of the parts that change
        d = self.data
        d.l[lay.r_slack :] = 0.0
        d.u[lay.r_slack :] = _INF
        box_l = d.l[lay.r_box : lay.r_rate].reshape(N, 2)
        box_u = d.u[lay.r_box : lay.r_rate].reshape(N, 2)
        box_l[:, 0] = st.v_min
        box_l[:, 1] = -st.delta_max
        box_u[:, 1] = st.delta_max
        d.q[lay.isl0 :] = st.slack_weight
        self._views = {
            "box_u": box_u,
            "rate_l": d.l[lay.r_rate : lay.r_corr].reshape(N, 2),
            "rate_u": d.u[lay.r_rate : lay.r_corr].reshape(N, 2),
            "corr_l": d.l[lay.r_corr : lay.r_slack].reshape(N + 1, 2),
            "corr_u": d.u[lay.r_corr : lay.r_slack].reshape(N + 1, 2),
            "qx": d.q[: lay.nX].reshape(N + 1, 3),
            "qu": d.q[lay.nX : lay.nX + lay.nU].reshape(N, 2),
        }

    def _setup_solver(self) -> None:
        st = self.settings
        # a representative first linearization for OSQP's scaling
        s_grid = self._grid(0.0)
        q = self._sampler.sample(s_grid)
        x_op, u_op = self._reference_op(q)
        A, B, f = self._linearize(x_op, u_op, q.kappa, s_grid)
        self.layout.fill_dynamics(self.data.A_data, A, B)
        setup_data = self.data.A_data.copy()
        dyn = np.concatenate([self.layout.dyn_pos_A, self.layout.dyn_pos_B])
        tiny = setup_data[dyn] == 0.0
        setup_data[dyn[tiny]] = 1e-12  # keep structural zeros through set-up
        self.solver = osqp.OSQP()
        try:
            self.solver.setup(
                self.P,
                np.zeros(self.layout.n),
                self.layout.A_matrix(setup_data),
                np.full(self.layout.m, -_INF),
                np.full(self.layout.m, _INF),
                verbose=False,
                eps_abs=st.eps_abs,
                eps_rel=st.eps_rel,
                max_iter=st.max_iter,
                polishing=False,
                warm_starting=st.warm_start != "none",
                check_termination=10,
            )
        except Exception as exc:  # pragma: no cover - OSQP set-up errors are bugs or bad weights
            raise SolverError(f"OSQP set-up failed: {exc}") from exc

    def reset(self) -> None:
        """Forget the previous plan and command (e.g. before a new run)."""
        self._prev: MPCSolution | None = None
        self._u_prev: np.ndarray | None = None
        self._fail_count = 0
        self.n_steps = 0

    # ------------------------------------------------------------------ helpers
    def _grid(self, s0: float) -> np.ndarray:
        s = s0 + self._s_offsets
        if not self.path.closed:
            s = np.minimum(s, self.path.length)  # horizon shrinks gracefully at the end
        return s

    def _reference_op(self, q: PathSample):
        """Operating point on the reference: e = 0, v = v_ref, delta = atan(L kappa)."""
        N = self.N
        x_op = np.zeros((N + 1, 3))
        u_op = np.empty((N, 2))
        u_op[:, 0] = self._speed_reference(q)
        u_op[:, 1] = np.arctan(self.vehicle.wheelbase * q.kappa[:N])
        np.cumsum(self.ds / u_op[:, 0], out=x_op[1:, 2])  # time along the reference
        return x_op, u_op

    def reference_input(self, s0: float) -> np.ndarray:
        """Reference input (v_ref, delta_ref) at arc length ``s0`` (e.g. an initial speed)."""
        return self._reference_op(self._sampler.sample(self._grid(s0)))[1][0].copy()

    def _speed_limit(self, kappa: np.ndarray, delta_op: np.ndarray | None) -> np.ndarray:
        st = self.settings
        return speed_limit(kappa, delta_op, self._inv_L, st.a_y_max, st.v_min, st.v_max)

    def _speed_reference(self, q: PathSample) -> np.ndarray:
        st = self.settings
        N = self.N
        lim = self._speed_limit(q.kappa[:N], None)
        if st.mode != "time_optimal" and q.v_ref is not None:
            lim = np.minimum(np.maximum(q.v_ref[:N], st.v_min), lim)
        v_start = None
        if self._u_prev is not None:
            v_start = self._u_prev[0] + 0.9 * st.accel_max * st.control_period
        return feasible_speed_profile(lim, self._s_offsets[:N], 0.9 * st.decel_max, 0.9 * st.accel_max, v_start, st.v_min)

    def _linearize(self, x_op, u_op, kap, s_grid):
        ds_k = np.maximum(s_grid[1:] - s_grid[:-1], 0.0)
        return sb.linearize(x_op[:-1], u_op, kap[:-1], ds_k, self.vehicle, self.settings.discretization)

    def _shifted_op(self, s_grid: np.ndarray):
        """Previous solution interpolated onto the new grid (real-time iteration)."""
        prev = self._prev
        s_prev = prev.s
        s_new = s_grid
        if self.path.closed:
            # unwrap the new grid relative to the previous one
            s_new = s_grid + np.round((s_prev[0] - s_grid[0]) / self.path.length) * self.path.length
        z = lerp_rows(s_prev, self._prev_table, s_new)
        x_op = z[:, :3]
        beyond = s_new[-1] - s_prev[-1]
        if beyond > 0:  # extend the time beyond the old horizon at its last pace
            pace = (prev.x[-1, 2] - prev.x[-2, 2]) / max(s_prev[-1] - s_prev[-2], 1e-12)
            past = s_new > s_prev[-1]
            x_op[past, 2] = prev.x[-1, 2] + (s_new[past] - s_prev[-1]) * pace
        x_op[:, 2] -= x_op[0, 2]
        return x_op, z[:-1, 3:]

    def _predict_delay(self, s0: float, x0: np.ndarray) -> tuple[float, np.ndarray]:
        """Predict the spatial state over the delay with the last command (nonlinear model, RK4)."""
        if self.settings.delay <= 0 or self._u_prev is None:
            return s0, x0
        return predict_over_delay(self._sampler, self.vehicle, s0, x0, self._u_prev, self.settings.delay, self.ds)

    # ------------------------------------------------------------------ solve
    def _prepare(self, state: Any):
        """Measured state -> prediction grid, path sample and operating point of this step."""
        s0, e_y, e_psi = (state.s, state.e_y, state.e_psi) if isinstance(state, Projection) else state
        x0 = np.array([float(e_y), float(e_psi), 0.0])
        s0 = float(s0)
        if not (np.isfinite(x0[0]) and np.isfinite(x0[1]) and np.isfinite(s0)):
            raise InputError(f"state: expected finite (s, e_y, e_psi), got ({s0}, {e_y}, {e_psi})")
        s0, x0 = self._predict_delay(s0, x0)
        s_grid = self._grid(s0)
        q = self._sampler.sample(s_grid)
        kap = q.kappa
        if x0[0] * kap[0] >= 1.0:
            raise InputError(
                f"state: outside the path's domain at horizon index 0 (s = {s0:.2f} m): "
                f"e_y*kappa = {x0[0] * kap[0]:.3g} >= 1 (the car is beyond the centre of curvature)"
            )
        if abs(x0[1]) >= 0.5 * np.pi:
            raise InputError(f"state: |e_psi| = {abs(x0[1]):.3f} rad >= pi/2; the car faces away from the path")
        st = self.settings
        x_ref_op, u_ref = self._reference_op(q)
        if st.linearization == "previous" and self._prev is not None:
            x_op, u_op = self._shifted_op(s_grid)
        else:
            x_op, u_op = x_ref_op, u_ref.copy()
        x_op[0] = x0
        # keep the operating point inside the model's domain
        lim = 0.95 / np.maximum(np.abs(kap), 1e-12)
        e = x_op[:, 0]
        np.minimum(np.maximum(e, -lim, out=e), lim, out=e)
        e = x_op[:, 1]
        np.minimum(np.maximum(e, -1.2, out=e), 1.2, out=e)
        np.maximum(u_op[:, 0], st.v_min, out=u_op[:, 0])
        return x0, x_op, u_op, u_ref, q, s_grid, lim, s0

    def prepare_qp(self, state: Any, t: float = 0.0) -> "StepProblem":
        """Build this step's QP without solving it and return its data (for cross-checks).

        The controller's internal memory (previous plan and command) is not changed.
        """
        x0, x_op, u_op, u_ref, q, s_grid, _, _ = self._prepare(state)
        self.build_qp(x0, x_op, u_op, u_ref, q, s_grid, t)
        return self.step_problem()

    def step_problem(self) -> "StepProblem":
        """Copy of the semantic data of the QP last built by :meth:`build_qp`."""
        lay, V, N = self.layout, self._views, self.N
        d = self.data
        return StepProblem(
            A=self._lin[0].copy(), B=self._lin[1].copy(), f=self._lin[2].copy(), x0=d.l[:3].copy(),
            u_lo=d.l[lay.r_box : lay.r_rate].reshape(N, 2).copy(), u_hi=V["box_u"].copy(),
            rate_lo=V["rate_l"].copy(), rate_hi=V["rate_u"].copy(),
            corr_lo=V["corr_l"][:, 0].copy(), corr_hi=V["corr_u"][:, 0].copy(),
            e_ref=self._e_ref.copy(), u_ref=self._u_ref_used.copy(), u_prev=self._u_prev_used.copy(),
            Q=self._Q, QN=self._QN, R=self._R, R_rate=self._Rd,
            slack_weight=self.settings.slack_weight, slack_quad=self._slack_quad,
            time_weight=self.settings.time_weight if self.settings.mode == "time_optimal" else 0.0,
            front=self.vehicle.front_extent, rear=self.vehicle.rear_overhang,
        )

    def solve(self, state: Any, t: float = 0.0) -> MPCSolution:
        """Compute the command for the measured spatial state.

        Parameters
        ----------
        state : Projection or sequence (s, e_y, e_psi)
            Arc length [m], lateral error [m], heading error [rad] of the car now.
        t : float
            Current time [s] (moving obstacles are evaluated at ``t`` + predicted time).

        Returns
        -------
        MPCSolution
        """
        t_start = time.perf_counter()
        x0, x_op, u_op, u_ref, q, s_grid, lim, s0 = self._prepare(state)
        st = self.settings
        iters_total, solve_time = 0, 0.0
        z = None
        for it in range(st.iterations):
            z, status, iters, stime = self._solve_qp(x0, x_op, u_op, u_ref, q, s_grid, t)
            iters_total += iters
            solve_time += stime
            if z is None:
                break
            if it + 1 < st.iterations:
                x_op, u_op = self._unpack(z)
                x_op = x_op.copy()
                x_op[:, 0] = np.minimum(np.maximum(x_op[:, 0], -lim), lim)
                u_op = np.maximum(u_op, [st.v_min, -np.inf])
        self.n_steps += 1
        if z is None:
            return self._fallback(status, iters_total, solve_time, t_start, s0)
        X, U = self._unpack(z)
        X, U = X.copy(), U.copy()
        lay = self.layout
        spsi, cpsi = np.sin(q.psi), np.cos(q.psi)
        xy = np.column_stack([q.x - X[:, 0] * spsi, q.y + X[:, 0] * cpsi])
        name = _OK[status]
        sol = MPCSolution(
            v=float(U[0, 0]),
            delta=float(U[0, 1]),
            status=name,
            solver_status=name,
            success=True,
            iterations=iters_total,
            solve_time=solve_time,
            step_time=0.0,
            s=s_grid,
            x=X,
            u=U,
            xy=xy,
            corridor_violation=max(0.0, float(z[lay.isl0 :].max())),
            fallback_steps=0,
            lb=self._lb,
            ub=self._ub,
        )
        self._fail_count = 0
        self._prev = sol
        table = self._prev_table
        table[:, :3] = X
        table[:-1, 3:] = U
        table[-1, 3:] = U[-1]
        self._u_prev = U[0].copy()
        sol.step_time = time.perf_counter() - t_start
        return sol

    def _unpack(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lay = self.layout
        return z[: lay.nX].reshape(self.N + 1, 3), z[lay.nX : lay.nX + lay.nU].reshape(self.N, 2)

    def _bounds(self, s_grid: np.ndarray, q: PathSample, t_pred: np.ndarray, e_y0: float) -> tuple[np.ndarray, np.ndarray]:
        """Corridor bounds for the car at each grid point: the tightest bound along the body.

        The body spans ``[s - rear_overhang, s + front_extent]`` along the path, so the bounds are
        queried on a grid extended by the footprint and reduced with a sliding min/max window.
        """
        s_ext = s_grid[0] + self._ext_offsets
        if not self.path.closed:
            s_ext = np.minimum(np.maximum(s_ext, 0.0), self.path.length)
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
        return sliding_window_view(lb, w).max(axis=1), sliding_window_view(ub, w).min(axis=1)

    def build_qp(self, x0, x_op, u_op, u_ref, q: PathSample, s_grid, t_now: float = 0.0) -> QPData:
        """Fill :attr:`data` (q, l, u, A data) for one step and return it.

        Parameters
        ----------
        x0 : (3,) measured state; x_op (N+1, 3), u_op (N, 2): operating point;
        u_ref : (N, 2) input reference; q : path sample on ``s_grid`` (N+1,); t_now : time [s].
        """
        st, lay, N, d, V = self.settings, self.layout, self.N, self.data, self._views
        A, B, f = self._lin = self._linearize(x_op, u_op, q.kappa, s_grid)
        lay.fill_dynamics(d.A_data, A, B)
        # dynamics rows: x_0 = x0 and A x + B u - x_next = -f
        d.l[:3] = x0
        d.l[3 : lay.nX] = -f.reshape(-1)
        d.u[: lay.nX] = d.l[: lay.nX]
        # input box: speed limit from path and planned curvature
        box_u = V["box_u"]
        box_u[:, 0] = self._speed_limit(q.kappa[:N], u_op[:, 1])
        # rates: per prediction step via the predicted speed; first step via the control period
        dt_all = self._dt_buf
        dt_all[1:] = np.maximum(s_grid[1:N] - s_grid[: N - 1], 1e-9) / np.maximum(u_op[: N - 1, 0], st.v_min)
        rl, ru = V["rate_l"], V["rate_u"]
        rl[:] = -self._rate_dn * dt_all[:, None]
        ru[:] = self._rate_up * dt_all[:, None]
        u_prev = self._u_prev if self._u_prev is not None else u_ref[0]
        if self._u_prev is None:
            rl[0], ru[0] = -_INF, _INF
        else:
            rl[0] += u_prev
            ru[0] += u_prev
            if self._finite_decel:
                # never ask for more braking than the rate bound allows (keeps the QP feasible)
                v_reach = u_prev[0] - st.decel_max * np.cumsum(dt_all)
                np.maximum(box_u[:, 0], v_reach + 1e-6, out=box_u[:, 0])
        np.maximum(rl, -_INF, out=rl)
        np.minimum(ru, _INF, out=ru)
        # corridor for the footprint
        lb, ub = self._bounds(s_grid, q, t_now + x_op[:, 2], float(x0[0]))
        lo = np.maximum(lb + self._half_w, -_INF)
        hi = np.minimum(ub - self._half_w, _INF)
        narrow = lo > hi
        if narrow.any():
            mid = 0.5 * (lo + hi)
            lo = np.where(narrow, mid, lo)
            hi = np.where(narrow, mid, hi)
        self._lb, self._ub = lb, ub
        V["corr_l"][:] = lo[:, None]
        V["corr_u"][:] = hi[:, None]
        # cost vector: the e_y reference moves into the free gap when 0 is blocked
        e_ref = self._e_ref = np.minimum(np.maximum(0.0, lo), hi)
        self._u_ref_used, self._u_prev_used = u_ref, u_prev
        qx = V["qx"]
        qx[1:N] = -np.outer(e_ref[1:N], self._Q[0])
        qx[N] = -e_ref[N] * self._QN[0]
        if st.mode == "time_optimal":
            qx[N, 2] += st.time_weight
        qu = V["qu"]
        np.matmul(u_ref, self._R, out=qu)
        qu *= -1.0
        qu[0] -= u_prev @ self._Rd
        return d

    def _solve_qp(self, x0, x_op, u_op, u_ref, q, s_grid, t_now):
        d = self.build_qp(x0, x_op, u_op, u_ref, q, s_grid, t_now)
        if not (np.isfinite(d.A_data).all() and np.isfinite(d.q).all()):
            logger.warning("MPC step %d: non-finite linearization; not solved", self.n_steps)
            return None, "non-finite QP data", 0, 0.0
        self.solver.update(q=d.q, l=d.l, u=d.u, Ax=d.A_data)
        if self.settings.warm_start == "shift" and self._prev is not None:
            z = np.zeros(self.layout.n)
            z[: self.layout.nX] = x_op.reshape(-1)
            z[self.layout.nX : self.layout.nX + self.layout.nU] = u_op.reshape(-1)
            self.solver.warm_start(x=z)
        res = self.solver.solve(raise_error=False)
        info = res.info
        status = info.status_val
        x = res.x
        ok = status in _OK and x is not None and np.isfinite(x).all()
        stime = float(info.run_time)
        if not ok:
            logger.warning("MPC step %d: OSQP status %s", self.n_steps, info.status)
            return None, info.status, int(info.iter), stime
        return x, status, int(info.iter), stime

    def _fallback(self, solver_status, iters, solve_time, t_start, s0) -> MPCSolution:
        """Reuse the previous plan (shifted) for at most K steps, then brake to a safe stop."""
        st = self.settings
        self._fail_count += 1
        prev = self._prev
        if prev is not None and self._fail_count <= st.max_fallback_steps:
            s_grid = self._grid(s0)
            x_op, u_op = self._shifted_op(s_grid)
            status = "fallback"
            v, delta = float(u_op[0, 0]), float(u_op[0, 1])
            x_pred, u_pred = x_op, u_op
        else:
            status = "safe_stop"
            v_last, d_last = self._u_prev if self._u_prev is not None else (0.0, 0.0)
            v = max(0.0, float(v_last) - st.brake_decel * st.control_period)
            delta = float(d_last)
            s_grid = self._grid(s0)
            x_pred = np.full((self.N + 1, 3), np.nan)
            u_pred = np.tile([v, delta], (self.N, 1))
        self._u_prev = np.array([v, delta])
        q = self._sampler.sample(s_grid)
        e = np.nan_to_num(x_pred[:, 0])
        xy = np.column_stack([q.x - e * np.sin(q.psi), q.y + e * np.cos(q.psi)])
        return MPCSolution(
            v=v,
            delta=delta,
            status=status,
            solver_status=str(solver_status),
            success=False,
            iterations=iters,
            solve_time=solve_time,
            step_time=time.perf_counter() - t_start,
            s=s_grid,
            x=x_pred,
            u=u_pred,
            xy=xy,
            corridor_violation=float("nan"),
            fallback_steps=self._fail_count,
        )
