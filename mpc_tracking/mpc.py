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

from .errors import InputError, SolverError
from .models import spatial_bicycle as sb
from .models.spatial_bicycle import VehicleParams
from .mpc_settings import MPCSettings, MPCSolution
from .qp_layout import QPLayout
from .reference_path import Projection, ReferencePath

__all__ = ["SpatialMPC", "MPCSettings", "MPCSolution", "Corridor", "QPData"]

logger = logging.getLogger(__name__)
_INF = 1e20
_OK = {osqp.SolverStatus.OSQP_SOLVED: "solved", osqp.SolverStatus.OSQP_SOLVED_INACCURATE: "solved_inaccurate"}


class Corridor(Protocol):
    """Anything that gives lateral bounds along the path (see :mod:`mpc_tracking.environment`)."""

    def bounds(
        self, s: np.ndarray, t: np.ndarray | None = None, e_y0: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Raw lower/upper bound on e_y [m] of the free space at arc lengths ``s`` and times ``t``.

        ``e_y0`` is the car's current lateral position: where an obstacle splits the corridor the
        provider picks the gap that contains (or is nearest to) it and follows that gap along ``s``.
        The bounds are not shrunk by the car; the MPC adds half width, margin and footprint swing.
        """
        ...


class QPData:
    """The numbers of one step's QP (vectors and constraint data), for inspection and cross-checks."""

    def __init__(self, layout: QPLayout) -> None:
        self.layout = layout
        self.q = np.zeros(layout.n)
        self.l = np.zeros(layout.m)
        self.u = np.zeros(layout.m)
        self.A_data = layout.A_data0.copy()

    def A(self):
        return self.layout.A_matrix(self.A_data)


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
        st = self.settings
        self.N = st.horizon
        self.ds = float(st.ds if st.ds is not None else path.ds)
        self.layout = QPLayout(self.N, self.vehicle.front_extent, self.vehicle.rear_overhang)
        self.data = QPData(self.layout)
        self._build_constants()
        self._setup_solver()
        self.reset()

    # ------------------------------------------------------------------ set-up
    def _build_constants(self) -> None:
        st, lay, N = self.settings, self.layout, self.N
        Q = st.Q_matrix
        self._Q, self._QN = Q, st.terminal_weight * Q
        self._R, self._Rd = st.R_matrix, st.R_rate_matrix
        self.P = lay.cost_matrix(self._Q, self._QN, self._R, self._Rd, slack_quad=1e-4)
        self._half_w = 0.5 * self.vehicle.width + st.corridor_margin
        self._k = np.arange(N + 1)
        self._tan_dmax = np.tan(st.delta_max)
        # constant parts of l/u
        d = self.data
        d.l[lay.r_slack:] = 0.0
        d.u[lay.r_slack:] = _INF

    def _setup_solver(self) -> None:
        st = self.settings
        # a representative first linearization for OSQP's scaling
        A, B, f = self._linearize(*self._reference_op(np.zeros(1), self._grid(0.0)))
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
        s = s0 + self.ds * self._k
        if not self.path.closed:
            s = np.minimum(s, self.path.length)  # horizon shrinks gracefully at the end
        return s

    def _reference_op(self, _unused: np.ndarray, s_grid: np.ndarray):
        q = self.path.interpolate(s_grid)
        kap = q["kappa"]
        N = self.N
        x_op = np.zeros((N + 1, 3))
        delta_ref = np.arctan(self.vehicle.wheelbase * kap[:N])
        v_ref = self._speed_reference(q, s_grid)
        u_op = np.column_stack([v_ref, delta_ref])
        return x_op, u_op, kap, s_grid

    def _speed_limit(self, kappa: np.ndarray, delta_op: np.ndarray | None) -> np.ndarray:
        st = self.settings
        k = np.abs(kappa)
        if delta_op is not None:
            k = np.maximum(k, np.abs(np.tan(delta_op)) / self.vehicle.wheelbase)
        lim = np.sqrt(st.a_y_max / np.maximum(k, 1e-9))
        return np.clip(lim, st.v_min, st.v_max)

    def _speed_reference(self, q: dict, s_grid: np.ndarray) -> np.ndarray:
        st = self.settings
        lim = self._speed_limit(q["kappa"][: self.N], None)
        if st.mode == "time_optimal" or q["v_ref"] is None:
            return lim
        return np.clip(q["v_ref"][: self.N], st.v_min, lim)

    def _linearize(self, x_op, u_op, kap, s_grid):
        ds_k = np.diff(s_grid)
        ds_k = np.where(ds_k <= 0, 0.0, ds_k)
        return sb.linearize(x_op[:-1], u_op, kap[:-1], ds_k, self.vehicle, self.settings.discretization)

    def _shifted_op(self, s_grid: np.ndarray, q: dict):
        """Previous solution interpolated onto the new grid (real-time iteration)."""
        prev = self._prev
        s_prev = prev.s
        if self.path.closed:
            # unwrap the new grid relative to the previous one
            off = np.round((s_prev[0] - s_grid[0]) / self.path.length) * self.path.length
            s_new = s_grid + off
        else:
            s_new = s_grid
        x_op = np.empty((self.N + 1, 3))
        for i in range(2):
            x_op[:, i] = np.interp(s_new, s_prev, prev.x[:, i])
        x_op[:, 2] = np.interp(s_new, s_prev, prev.x[:, 2])
        x_op[:, 2] -= x_op[0, 2]
        su = s_prev[:-1]
        u_op = np.column_stack([np.interp(s_new[:-1], su, prev.u[:, 0]), np.interp(s_new[:-1], su, prev.u[:, 1])])
        return x_op, u_op

    def _predict_delay(self, s0: float, x0: np.ndarray) -> tuple[float, np.ndarray]:
        """Predict the spatial state over the delay with the last command (nonlinear model, RK4)."""
        st = self.settings
        if st.delay <= 0 or self._u_prev is None:
            return s0, x0
        v, delta = self._u_prev
        dist = v * st.delay
        n = max(1, int(np.ceil(dist / max(self.ds, 1e-6))))
        h = dist / n
        x = x0.copy()
        s = s0
        for _ in range(n):
            kap = self.path.interpolate(np.array([s + 0.5 * h]))["kappa"][0]
            x = sb.discrete_step(x, np.array([v, delta]), kap, h, self.vehicle, "rk4")
            s += h
        return float(self.path.wrap_s(s)), x

    # ------------------------------------------------------------------ solve
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
        s0, e_y, e_psi = (state.s, state.e_y, state.e_psi) if isinstance(state, Projection) else state
        x0 = np.array([float(e_y), float(e_psi), 0.0])
        if not np.all(np.isfinite(x0)) or not np.isfinite(s0):
            raise InputError(f"state: expected finite (s, e_y, e_psi), got ({s0}, {e_y}, {e_psi})")
        s0, x0 = self._predict_delay(float(s0), x0)
        s_grid = self._grid(s0)
        q_path = self.path.interpolate(s_grid)
        kap = q_path["kappa"]
        g0 = 1.0 - x0[0] * kap[0]
        if g0 <= 0:
            raise InputError(
                f"state: outside the path's domain at horizon index 0 (s = {s0:.2f} m): "
                f"e_y*kappa = {x0[0] * kap[0]:.3g} >= 1"
            )
        if abs(x0[1]) >= 0.5 * np.pi:
            raise InputError(f"state: |e_psi| = {abs(x0[1]):.3f} rad >= pi/2; the car faces away from the path")

        st = self.settings
        x_ref_op, u_ref, _, _ = self._reference_op(None, s_grid)
        if st.linearization == "previous" and self._prev is not None and self._prev.success:
            x_op, u_op = self._shifted_op(s_grid, q_path)
        else:
            x_op, u_op = x_ref_op.copy(), u_ref.copy()
        x_op[0] = x0
        # keep the operating point inside the model's domain
        lim = 0.95 / np.maximum(np.abs(kap), 1e-12)
        x_op[:, 0] = np.clip(x_op[:, 0], -lim, lim)
        x_op[:, 1] = np.clip(x_op[:, 1], -1.2, 1.2)
        u_op[:, 0] = np.maximum(u_op[:, 0], st.v_min)

        iters_total, solve_time = 0, 0.0
        for _ in range(st.iterations):
            sol_vec, status, iters, stime = self._solve_qp(x0, x_op, u_op, u_ref, kap, s_grid, q_path, t)
            iters_total += iters
            solve_time += stime
            if sol_vec is None:
                break
            X, U = self._unpack(sol_vec)
            x_op, u_op = X.copy(), U.copy()
            x_op[:, 0] = np.clip(x_op[:, 0], -lim, lim)
        self.n_steps += 1
        if sol_vec is None:
            return self._fallback(status, iters_total, solve_time, t_start, s0)
        X, U = self._unpack(sol_vec)
        lay = self.layout
        slack = sol_vec[lay.isl0:]
        sol = MPCSolution(
            v=float(U[0, 0]),
            delta=float(U[0, 1]),
            status=_OK[status],
            solver_status=_OK[status],
            success=True,
            iterations=iters_total,
            solve_time=solve_time,
            step_time=0.0,
            s=s_grid,
            x=X,
            u=U,
            xy=self.path.point_at(s_grid, X[:, 0]),
            corridor_violation=float(max(0.0, slack.max())),
            fallback_steps=0,
            lb=self._lb,
            ub=self._ub,
        )
        self._fail_count = 0
        self._prev = sol
        self._u_prev = U[0].copy()
        sol.step_time = time.perf_counter() - t_start
        return sol

    def _unpack(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lay = self.layout
        return z[: lay.nX].reshape(self.N + 1, 3), z[lay.nX : lay.nX + lay.nU].reshape(self.N, 2)

    def _bounds(self, s_grid: np.ndarray, q_path: dict, t_pred: np.ndarray, e_y0: float) -> tuple[np.ndarray, np.ndarray]:
        if self.corridor is not None:
            lb, ub = self.corridor.bounds(s_grid, t_pred, e_y0)
            return np.asarray(lb, dtype=float), np.asarray(ub, dtype=float)
        return -q_path["width_right"], q_path["width_left"]

    def build_qp(self, x0, x_op, u_op, u_ref, kap, s_grid, q_path, t_now: float = 0.0) -> QPData:
        """Fill :attr:`data` (q, l, u, A data) for one step; returns it (used by the cvxpy cross-check)."""
        st, lay, N, d = self.settings, self.layout, self.N, self.data
        A, B, f = self._linearize(x_op, u_op, kap, s_grid)
        lay.fill_dynamics(d.A_data, A, B)
        # dynamics rows
        d.l[:3] = x0
        d.l[3 : lay.nX] = -f.reshape(-1)
        d.u[: lay.nX] = d.l[: lay.nX]
        # input box: speed limit from path and planned curvature
        v_hi = self._speed_limit(kap[:N], u_op[:, 1])
        box_l = d.l[lay.r_box : lay.r_rate].reshape(N, 2)
        box_u = d.u[lay.r_box : lay.r_rate].reshape(N, 2)
        box_l[:, 0] = st.v_min
        box_u[:, 0] = v_hi
        box_l[:, 1] = -st.delta_max
        box_u[:, 1] = st.delta_max
        # rates: per prediction step via the predicted speed; first step via the control period
        dt_k = np.diff(s_grid)[: N - 1] / np.maximum(u_op[: N - 1, 0], st.v_min)
        rl = d.l[lay.r_rate : lay.r_corr].reshape(N, 2)
        ru = d.u[lay.r_rate : lay.r_corr].reshape(N, 2)
        u_prev = self._u_prev if self._u_prev is not None else u_ref[0]
        T = st.control_period
        dt_all = np.concatenate([[T], dt_k])
        rl[:, 0] = np.maximum(-st.decel_max * dt_all, -_INF)
        ru[:, 0] = np.minimum(st.accel_max * dt_all, _INF)
        rl[:, 1] = np.maximum(-st.delta_rate_max * dt_all, -_INF)
        ru[:, 1] = np.minimum(st.delta_rate_max * dt_all, _INF)
        if self._u_prev is None:
            rl[0], ru[0] = -_INF, _INF
        else:
            rl[0] += u_prev
            ru[0] += u_prev
            if np.isfinite(st.decel_max):
                # never ask for more braking than the rate bound allows (keeps the QP feasible)
                v_reach = u_prev[0] - st.decel_max * np.cumsum(dt_all)
                box_u[:, 0] = np.maximum(box_u[:, 0], v_reach + 1e-6)
        # corridor for the footprint
        lb, ub = self._bounds(s_grid, q_path, t_now + x_op[:, 2], float(x0[0]))
        lo = np.maximum(lb + self._half_w, -_INF)
        hi = np.minimum(ub - self._half_w, _INF)
        narrow = lo > hi
        if narrow.any():
            mid = 0.5 * (lo + hi)
            lo = np.where(narrow, mid, lo)
            hi = np.where(narrow, mid, hi)
        self._lb, self._ub = lb, ub
        cl = d.l[lay.r_corr : lay.r_slack].reshape(N + 1, 2)
        cu = d.u[lay.r_corr : lay.r_slack].reshape(N + 1, 2)
        cl[:] = lo[:, None]
        cu[:] = hi[:, None]
        # cost vector
        e_ref = np.clip(0.0, lo, hi)  # the reference moves into the free gap when 0 is blocked
        x_ref = np.zeros((N + 1, 3))
        x_ref[:, 0] = e_ref
        qx = d.q[: lay.nX].reshape(N + 1, 3)
        qx[1:N] = -(x_ref[1:N] @ self._Q)
        qx[N] = -(x_ref[N] @ self._QN)
        qx[0] = 0.0
        if st.mode == "time_optimal":
            qx[N, 2] += st.time_weight
        qu = d.q[lay.nX : lay.nX + lay.nU].reshape(N, 2)
        qu[:] = -(u_ref @ self._R)
        qu[0] -= u_prev @ self._Rd
        d.q[lay.isl0 :] = st.slack_weight
        return d

    def _solve_qp(self, x0, x_op, u_op, u_ref, kap, s_grid, q_path, t_now):
        d = self.build_qp(x0, x_op, u_op, u_ref, kap, s_grid, q_path, t_now)
        self.solver.update(q=d.q, l=d.l, u=d.u, Ax=d.A_data)
        if self.settings.warm_start == "shift" and self._prev is not None:
            z = np.zeros(self.layout.n)
            z[: self.layout.nX] = x_op.reshape(-1)
            z[self.layout.nX : self.layout.nX + self.layout.nU] = u_op.reshape(-1)
            self.solver.warm_start(x=z)
        res = self.solver.solve(raise_error=False)
        info = res.info
        status = info.status_val
        ok = status in _OK and res.x is not None and np.all(np.isfinite(res.x))
        stime = float(getattr(info, "run_time", 0.0))
        if not ok:
            logger.warning("MPC step %d: OSQP status %s", self.n_steps, info.status)
            return None, info.status, int(info.iter), stime
        return np.array(res.x), status, int(info.iter), stime

    def _fallback(self, solver_status, iters, solve_time, t_start, s0) -> MPCSolution:
        """Reuse the previous plan (shifted) for at most K steps, then brake to a safe stop."""
        st = self.settings
        self._fail_count += 1
        prev = self._prev
        if prev is not None and self._fail_count <= st.max_fallback_steps:
            s_grid = self._grid(s0)
            x_op, u_op = self._shifted_op(s_grid, None)
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
        xy = self.path.point_at(s_grid, np.nan_to_num(x_pred[:, 0]))
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
