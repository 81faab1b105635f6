"""The spatial MPC's QP with the *dynamic* prediction model, written in cvxpy: an independent cross-check.

:class:`CvxpyDynamicMPC` is the counterpart of :class:`~mpc_tracking.mpc.cvxpy_ref.CvxpyMPC` for a
prediction model whose speed is a state and whose input is an acceleration
(:class:`~mpc_tracking.models.prediction.DynamicPrediction`: x = (e_y, e_psi, t, v_x, v_y, r),
u = (a_x, delta)). It builds one step's QP from the path, vehicle, settings, model and the
measured state, never from the OSQP vectors of :mod:`mpc_tracking.mpc.qp`. The step, written out
(N = horizon, ``ds`` = prediction step, T = control period, ``v0`` = measured v_x)::

    ceilings    whole-path forward-backward profiles (90 % of the limits: reference; 95 % braking, no
                acceleration limit: hard), with the friction ellipse when set, each held
                (speed_lag + T) v metres earlier, v the hard ceiling there (minimum over that
                distance ahead)
    speed ref   min(sqrt(a_y_max/|kappa_k|) in [v_min, v_max], reference ceiling) (k = 0..N-1),
                then braking/accelerating feasible with 90 % of the limits, from v0 + 0.9 accel T
                once a plan exists
    operating   "reference": t = cumsum(ds / v), v_x = v, r = v kappa, v_y = l_r r at the grid points,
    point       a_x = (v_{k+1}^2 - v_k^2) / (2 ds), delta = atan(L kappa) + K_us v^2 kappa (K_us =
                m/L (l_r/C_f - l_f/C_r)); "previous": the last plan on the new grid; then x_op[0] =
                measured, |e_y| <= 0.95/|kappa|, |e_psi| <= 1.2, v_x >= v_min
    dynamics    x_{k+1} = A_k x_k + B_k u_k + f_k from the model's linearization at the operating point
    ellipse     e_k = sqrt(max(1 - (|v_x r|_op,k / a_y_max)^2, 0)), braking share_k = max(e_k, ELLIPSE_FLOOR),
                share_0 at least FIRST_STEP_FLOOR; without cuts the a_x box is
                [-decel share, accel e]; with ``ellipse_cuts`` the box is the plain one and the cuts
                cos(th) a_x / A_x + sigma_k sin(th) (r_op v_x + v_op r - v_op r_op) / a_y_max <= 1 + e_k
                (A_x = accel_max for cos >= 0, else decel_max; sigma_k the sign of the operating point's
                v_x r; e_k >= 0 with the slack cost)
    speed bound v_min <= v_x,k <= ceiling (k = 1..N): min(sqrt(a_y_max/|kappa_k|) in [v_min, v_max], hard
                ceiling), made reachable from v0 + 0.95 accel T with 95 % of the limits, and never
                below sqrt(max(v0^2 - sum_j decel share_j ds_j, 0)) + 1e-6 (what braking can reach)
    rates       |delta_k - delta_{k-1}| <= rate dt_k, dt_0 = T, dt_k = ds / v_x,op,k-1 (a_x: none); the
                first row against the last plan's first input (unbounded before the first step)
    steering    |delta_k| <= delta_max; with ``steer_within_peak_slip`` also within beta_k +- alpha*, beta_k =
                atan((v_y + l_f r) / v_x)_op,k where v_x,op,k >= v_blend_high, alpha* the front tyres' peak
                slip, the first step's also within countersteer_bounds(x0) (no front slip adding to an
                oversteer slide's yaw), each step's box moved to the nearest end of what the rates can reach
                from the last
    corridor    as the kinematic reference (front/rear corner rows on e_y, e_psi with slacks)
    cost        1/2 |x_k - r_k|^2_Q (k = 1..N-1) + 1/2 |x_N - r_N|^2_{terminal_weight Q}, r_k = (e_ref, 0,
                0, v_x, v_y, r of the reference operating point), Q the model's weights; inputs,
                rates, slacks and time as the kinematic reference

Shared with the controller on purpose: the model's linearization and weights, the path's
interpolation and forward-backward profile, the corridor's bounds and the kinematic reference's
helpers (corridor reduction over the body, lateral reference). Not covered: ``delay``,
``iterations > 1`` and the disturbance observer.
"""
from __future__ import annotations

import math
from typing import Any

import cvxpy as cp
import numpy as np

from mpc_tracking.errors import InputError, SolverError
from mpc_tracking.models.prediction import DynamicPrediction
from mpc_tracking.models.prediction.spatial_dynamic import countersteer_bounds
from mpc_tracking.mpc.cvxpy_ref import _BIG, CvxpyMPC, _reachable, _slope_limited_reference, _sqrtm
from mpc_tracking.mpc.qp import ELLIPSE_CUT_ANGLES, ELLIPSE_FLOOR, FIRST_STEP_FLOOR, REF_SLOPE, SLACK_QUAD
from mpc_tracking.paths.speed_profile import speed_profile

__all__ = ["CvxpyDynamicMPC"]


class CvxpyDynamicMPC(CvxpyMPC):
    """One step of the spatial MPC with the dynamic prediction model, as a cvxpy problem.

    Parameters
    ----------
    path, vehicle, settings, corridor
        As :class:`~mpc_tracking.mpc.cvxpy_ref.CvxpyMPC` (``delay`` 0, ``iterations`` 1).
    model : DynamicPrediction
        The prediction model (speed as a state, an acceleration input).
    """

    def __init__(self, path: Any, vehicle: Any, settings: Any, model: DynamicPrediction, corridor: Any = None) -> None:
        if settings.delay > 0 or settings.iterations != 1 or settings.disturbance_observer:
            raise InputError("CvxpyDynamicMPC: delay > 0, iterations > 1 and the disturbance observer are not modelled")
        if not (model.SPEED_IN_STATE and model.I_ACCEL is not None):
            raise InputError(f"CvxpyDynamicMPC: expected a model with the speed as a state and an acceleration "
                             f"input, got {model.name!r}")
        self.path, self.vehicle, self.settings, self.corridor, self.model = path, vehicle, settings, corridor, model
        st = settings
        self.N = st.horizon
        self.ds = float(st.ds if st.ds is not None else path.ds)
        self.front, self.rear = vehicle.length - vehicle.rear_overhang, vehicle.rear_overhang
        self._body_widths = None
        self.linearization = model.LINEARIZATION if st.linearization == "auto" else st.linearization
        self.v_ref_path: np.ndarray | None = None
        self.v_box_path: np.ndarray | None = None
        if math.isfinite(st.decel_max) or math.isfinite(st.accel_max):
            kw = {"v_max": st.v_max, "a_y_max": st.a_y_max, "friction_ellipse": st.friction_ellipse,
                  "ellipse_floor": ELLIPSE_FLOOR}
            v_ref = speed_profile(path, a_max=0.9 * st.accel_max, a_brake=0.9 * st.decel_max, **kw)
            self.v_ref_path = v_ref if path.v_ref is None else np.minimum(v_ref, path.v_ref)
            self.v_box_path = speed_profile(path, a_max=np.inf, a_brake=0.95 * st.decel_max, **kw)
            if model.speed_lag > 0:  # every ceiling held (lag + T) v metres earlier, v the ceiling there
                lead = (model.speed_lag + st.control_period) * self.v_box_path
                n_ahead = [math.ceil(d / path.ds) for d in lead]
                self.v_ref_path = self._min_ahead(self.v_ref_path, n_ahead)
                self.v_box_path = self._min_ahead(self.v_box_path, n_ahead)

    def _min_ahead(self, v: np.ndarray, n_ahead: list[int]) -> np.ndarray:
        n = v.size
        out = np.empty(n)
        for i in range(n):
            idx = np.arange(i, i + n_ahead[i] + 1)
            idx = np.mod(idx, n) if self.path.closed else np.minimum(idx, n - 1)
            out[i] = v[idx].min()
        return out

    # ---------------------------------------------------------------- the step's numbers
    def _reference_op(self, kappa: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p, N, ds = self.model.params, self.N, self.ds
        if getattr(self.model, "slip_reference", False):  # steady cornering (spatial_dynamic.steady_cornering)
            from mpc_tracking.models.prediction.spatial_dynamic import steady_cornering

            vg = np.append(v, v[-1])
            a_ref = (vg[1:] ** 2 - vg[:-1] ** 2) / (2 * ds)
            e_psi, v_y, r, a_x, delta = steady_cornering(kappa, vg, p, np.append(a_ref, a_ref[-1]))
            x = np.zeros((N + 1, 6))
            x[1:, 2] = np.cumsum(ds / v)
            x[:, 1], x[:, 3], x[:, 4], x[:, 5] = e_psi, vg, v_y, r
            return x, np.column_stack([a_x[:N], delta[:N]])
        c_f, c_r = p.cornering_stiffness
        k_us = p.mass / p.wheelbase * (p.l_r / c_f - p.l_f / c_r)
        vg = np.append(v, v[-1])
        x = np.zeros((N + 1, 6))
        x[1:, 2] = np.cumsum(ds / v)
        x[:, 3] = vg
        x[:, 5] = vg * kappa
        x[:, 4] = p.l_r * x[:, 5]
        u = np.column_stack([(vg[1:] ** 2 - vg[:-1] ** 2) / (2 * ds),
                             np.arctan(p.wheelbase * kappa[:N]) + k_us * v**2 * kappa[:N]])
        return x, u

    def step_data(self, state: Any, t: float = 0.0, previous: Any = None,
                  measured: dict[str, float] | None = None) -> dict[str, Any]:
        """All numbers of this step's QP (see the module doc). ``measured``: v_x, v_y (rear axle), r."""
        st, N, m = self.settings, self.N, self.model
        if not measured:
            raise InputError("measured: expected the body-frame velocities {'v_x', 'v_y', 'r'}")
        s0, e_y, e_psi = (state.s, state.e_y, state.e_psi) if hasattr(state, "e_psi") else state
        p = m.params
        x0 = np.array([e_y, e_psi, 0.0, measured["v_x"], measured["v_y"] + p.l_r * measured["r"], measured["r"]],
                      dtype=float)
        v0 = float(x0[3])
        s_grid = float(s0) + self.ds * np.arange(N + 1)
        if not self.path.closed:
            s_grid = np.minimum(s_grid, self.path.length)
        self._s_grid = s_grid
        kappa = self.path.interpolate(s_grid)["kappa"]
        u_prev_plan = None if previous is None else np.asarray(previous.u[0], dtype=float)
        # speed reference and the reference operating point
        lim = np.clip(np.sqrt(st.a_y_max / np.maximum(np.abs(kappa[:N]), 1e-9)), st.v_min, st.v_max)
        ceiling = self.v_ref_path if st.mode != "time_optimal" else self.v_box_path
        if ceiling is not None:
            lim = np.minimum(np.maximum(self._path_column(ceiling, s_grid[:N]), st.v_min), lim)
        v_start = None if previous is None else v0 + 0.9 * st.accel_max * st.control_period
        v_ref = _reachable(lim, self.ds * np.arange(N), 0.9 * st.decel_max, 0.9 * st.accel_max, v_start, st.v_min)
        x_ref, u_ref = self._reference_op(kappa, v_ref)
        if self.linearization == "previous" and previous is not None:
            x_op, u_op = self._shifted(previous, s_grid)
        else:
            x_op, u_op = x_ref.copy(), u_ref.copy()
        x_op[0] = x0
        e_lim = 0.95 / np.maximum(np.abs(kappa), 1e-12)
        x_op[:, 0] = np.clip(x_op[:, 0], -e_lim, e_lim)
        x_op[:, 1] = np.clip(x_op[:, 1], -1.2, 1.2)
        x_op[:, 3] = np.maximum(x_op[:, 3], st.v_min)
        A, B, f = m.linearize(x_op[:-1], u_op, kappa[:-1], np.maximum(np.diff(s_grid), 0.0), st.discretization)
        # friction ellipse
        ay_op = x_op[:-1, 3] * x_op[:-1, 5]
        share, accel_share = np.ones(N), np.ones(N)  # braking's (with the floors), acceleration's (none)
        if st.friction_ellipse:
            accel_share = np.sqrt(np.maximum(1.0 - (np.abs(ay_op) / st.a_y_max) ** 2, 0.0))
            share = np.maximum(accel_share, ELLIPSE_FLOOR)
            share[0] = max(share[0], FIRST_STEP_FLOOR)
        cut = st.friction_ellipse and st.ellipse_cuts
        a_lo = -st.decel_max * (1.0 if cut else share)
        a_hi = st.accel_max * (1.0 if cut else accel_share)
        # speed bound on v_x,1..N
        v_hi = np.clip(np.sqrt(st.a_y_max / np.maximum(np.abs(kappa[1:]), 1e-9)), st.v_min, st.v_max)
        if self.v_box_path is not None:
            v_hi = np.minimum(v_hi, np.maximum(self._path_column(self.v_box_path, s_grid[1:]), st.v_min))
        if math.isfinite(st.accel_max) or math.isfinite(st.decel_max):
            vs = v0 + 0.95 * st.accel_max * st.control_period
            v_hi = _reachable(np.concatenate([[vs], v_hi]), self.ds * np.arange(N + 1), 0.95 * st.decel_max,
                              0.95 * st.accel_max, vs, st.v_min)[1:]
        if math.isfinite(st.decel_max):
            drop = np.cumsum(st.decel_max * share * np.diff(s_grid))
            v_hi = np.maximum(v_hi, np.sqrt(np.maximum(v0 * v0 - drop, 0.0)) + 1e-6)
        # steering rates
        dt = np.empty(N)
        dt[0] = st.control_period
        dt[1:] = np.maximum(np.diff(s_grid[:N]), 1e-9) / np.maximum(x_op[: N - 1, 3], st.v_min)
        d_lo, d_hi = -st.delta_rate_max * dt, st.delta_rate_max * dt
        if u_prev_plan is None:
            d_lo[0], d_hi[0] = -np.inf, np.inf
            u_prev = u_ref[0].copy()
        else:
            u_prev = u_prev_plan
            d_lo[0] += u_prev[1]
            d_hi[0] += u_prev[1]
        # steering box: within the front tyres' peak slip about the operating point, reachable with the rates
        delta_lo, delta_hi = np.full(N, -st.delta_max), np.full(N, st.delta_max)
        if st.steer_within_peak_slip:
            p = m.params
            peak = p.peak_slip_angles[0]
            reach_lo, reach_hi = d_lo[0], d_hi[0]
            for k in range(N):
                vx, vy, r = x_op[k, 3], x_op[k, 4], x_op[k, 5]
                if math.isfinite(peak) and vx >= p.v_blend_high:
                    beta = math.atan((vy + p.l_f * r) / vx)
                    delta_lo[k] = min(max(beta - peak, -st.delta_max), st.delta_max)
                    delta_hi[k] = min(max(beta + peak, -st.delta_max), st.delta_max)
                if k == 0 and math.isfinite(peak):  # the measured state: no front slip adding to an oversteer slide
                    c_lo, c_hi = countersteer_bounds(x_op[0], p)
                    delta_lo[0] = min(max(delta_lo[0], c_lo), st.delta_max)
                    delta_hi[0] = max(min(delta_hi[0], c_hi), -st.delta_max)
                if k:
                    reach_lo, reach_hi = reach_lo + d_lo[k], reach_hi + d_hi[k]
                delta_lo[k] = min(delta_lo[k], reach_hi)
                delta_hi[k] = max(delta_hi[k], reach_lo)
                reach_lo, reach_hi = max(reach_lo, delta_lo[k]), min(reach_hi, delta_hi[k])
        # corridor and lateral reference
        lb, ub = self._raw_bounds(s_grid, t + x_op[:, 2], float(x0[0]))
        half = 0.5 * self.vehicle.width + st.corridor_margin
        lo, hi = lb + half, ub - half
        mid = 0.5 * (lo + hi)
        lo, hi = np.where(lo > hi, mid, lo), np.where(lo > hi, mid, hi)
        inset = np.minimum(0.5 * (hi - lo), 0.5 * self.vehicle.width)
        e_ref = _slope_limited_reference(lo + inset, hi - inset, self.ds * np.arange(N + 1), REF_SLOPE)
        target = np.zeros((N + 1, 6))
        target[:, 0] = e_ref
        target[:, 1] = x_ref[:, 1]  # 0, or the heading error of steady cornering
        target[:, 3:] = x_ref[:, 3:]
        data = {"s": s_grid, "kappa": kappa, "x_op": x_op, "u_op": u_op, "A": A, "B": B, "f": f, "x0": x0,
                "v_hi": v_hi, "a_lo": a_lo * np.ones(N), "a_hi": a_hi * np.ones(N), "d_lo": d_lo, "d_hi": d_hi,
                "delta_lo": delta_lo, "delta_hi": delta_hi,
                "lb": lb, "ub": ub, "corr_lo": lo, "corr_hi": hi, "e_ref": e_ref, "target": target,
                "u_ref": u_ref, "u_prev": u_prev, "cuts": None}
        if cut:
            th = np.radians(ELLIPSE_CUT_ANGLES)
            axis = np.where(np.cos(th) >= 0.0, st.accel_max, st.decel_max)
            sigma = np.where(ay_op >= 0.0, 1.0, -1.0)
            data["cuts"] = (np.cos(th) / axis, sigma, np.sin(th) / st.a_y_max)
        return data

    def solve(self, state: Any, t: float = 0.0, previous: Any = None, solver: str | None = None,
              measured: dict[str, float] | None = None, **solver_kw: Any) -> dict[str, Any]:
        """Build and solve this step's QP. Returns ``x`` (N+1, 6), ``u`` (N, 2), ``status``, ``data``."""
        st, N, d = self.settings, self.N, self.step_data(state, t, previous, measured)
        x, u = cp.Variable((N + 1, 6)), cp.Variable((N, 2))
        sl, su = cp.Variable((N + 1, 2), nonneg=True), cp.Variable((N + 1, 2), nonneg=True)
        Q = self.model.weights(st)
        Mq, MqN, Mr, Mrd = (_sqrtm(W) for W in (Q, st.terminal_weight * Q, st.R_matrix, st.R_rate_matrix))
        err = x - d["target"]
        cost = 0.5 * cp.sum_squares(err[1:N] @ Mq) + 0.5 * cp.sum_squares(err[N] @ MqN)
        cost += 0.5 * cp.sum_squares((u - d["u_ref"]) @ Mr)
        du = cp.vstack([cp.reshape(u[0] - d["u_prev"], (1, 2), order="C"), u[1:] - u[:-1]])
        cost += 0.5 * cp.sum_squares(du @ Mrd)
        cost += st.slack_weight * (cp.sum(sl) + cp.sum(su))
        cost += 0.5 * SLACK_QUAD * (cp.sum_squares(sl) + cp.sum_squares(su))
        if st.mode == "time_optimal":
            cost += st.time_weight * x[N, 2]
        cons = [x[0] == d["x0"]]
        cons += [x[k + 1] == d["A"][k] @ x[k] + d["B"][k] @ u[k] + d["f"][k] for k in range(N)]
        cons += [x[1:, 3] >= st.v_min, x[1:, 3] <= np.minimum(d["v_hi"], _BIG)]
        cons += [u[:, 0] >= np.maximum(d["a_lo"], -_BIG), u[:, 0] <= np.minimum(d["a_hi"], _BIG)]
        cons += [u[:, 1] >= d["delta_lo"], u[:, 1] <= d["delta_hi"]]
        dd = cp.hstack([u[0, 1], u[1:, 1] - u[:-1, 1]])
        cons += [dd >= np.maximum(d["d_lo"], -_BIG), dd <= np.minimum(d["d_hi"], _BIG)]
        for j, coef in enumerate((self.front, -self.rear)):
            corner = x[:, 0] + coef * x[:, 1] + sl[:, j] - su[:, j]
            cons += [corner >= np.maximum(d["corr_lo"], -_BIG), corner <= np.minimum(d["corr_hi"], _BIG)]
        if d["cuts"] is not None:
            ca, sigma, cy = d["cuts"]
            e = cp.Variable(N, nonneg=True)
            v_op, r_op = d["x_op"][:-1, 3], d["x_op"][:-1, 5]
            ay_lin = cp.multiply(r_op, x[:-1, 3]) + cp.multiply(v_op, x[:-1, 5]) - v_op * r_op
            for j in range(len(ca)):
                cons.append(ca[j] * u[:, 0] + cy[j] * cp.multiply(sigma, ay_lin) <= 1.0 + e)
            cost += st.slack_weight * cp.sum(e) + 0.5 * SLACK_QUAD * cp.sum_squares(e)
        problem = cp.Problem(cp.Minimize(cost), cons)
        try:
            problem.solve(solver=solver or cp.CLARABEL, **solver_kw)
        except cp.SolverError as exc:
            raise SolverError(f"cvxpy solve failed: {exc}") from exc
        return {"x": x.value, "u": u.value, "status": problem.status, "data": d}
