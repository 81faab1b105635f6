"""The spatial MPC's QP written in cvxpy from its documented semantics: an independent cross-check.

:class:`CvxpyMPC` builds the QP of one MPC step directly from the *problem*: the path, the vehicle,
the :class:`~mpc_tracking.mpc.settings.MPCSettings`, an optional corridor provider, the measured state
and the previous step's :class:`~mpc_tracking.mpc.settings.MPCSolution`. It never looks at the OSQP
vectors the controller assembles (``QPData``, ``StepProblem``), so a wrong bound, a lost ceiling or a
mis-placed row in :mod:`mpc_tracking.mpc.qp` shows up as a different plan.

The step, written out (N = horizon, ``ds`` = prediction step, T = control period)::

    grid        s_k = s0 + k ds (k = 0..N), clipped to the path end on open paths
    operating   linearization "reference": e = 0, v = speed reference, delta = atan(L kappa_k),
    point       t = cumsum(ds / v); "previous" (and "auto"): the previous plan interpolated onto the
                new grid (time beyond the old horizon at its last pace, re-based to t_0 = 0); then
                x_op[0] = measured state, |e_y| <= 0.95/|kappa|, |e_psi| <= 1.2, v >= v_min
    dynamics    x_{k+1} = A_k x_k + B_k u_k + f_k from spatial_bicycle.linearize at the operating point
    ceilings    with finite accel_max or decel_max: the path's forward-backward speed profile with
                90 % of the limits (speed reference; also capped by the path's own v_ref) and one
                with 95 % braking and no acceleration limit (hard speed ceiling)
    speed ref   min(sqrt(a_y_max/|kappa|) clipped to [v_min, v_max], ceiling reference) (tracking; the
                hard ceiling in time-optimal mode), then braking/accelerating feasible with 90 % of the
                limits from the last command + 0.9 accel_max T
    input box   v_min <= v_k <= min(sqrt(a_y_max / max(|kappa|, |tan delta_op|/L)) in [v_min, v_max],
                hard ceiling); with a previous command that bound is made reachable with 95 % of the
                rate limits and never asks for more braking than decel_max allows (+1e-6);
                |delta_k| <= delta_max
    rates       dt_0 = T, dt_k = ds / v_op_{k-1}; -decel dt <= dv <= accel dt, |d delta| <= rate dt;
                the first row against the last command (unbounded before the first step)
    corridor    the tightest track/corridor bound along the body [s - rear, s + front], shrunk by
                half the width + corridor_margin (the midpoint where it does not fit), imposed at the
                front corner (e_y + front e_psi) and the rear corner (e_y - rear e_psi) with slacks
    e_y ref     0 moved into the corridor (half a car width inside where possible) with lateral
                slope <= 0.15
    cost        sum 1/2|x_k - (e_ref,0,0)|^2_Q (k=1..N-1) + 1/2|x_N - r_N|^2_{terminal_weight Q}
                + 1/2|u_k - u_ref_k|^2_R + 1/2|u_k - u_{k-1}|^2_R_rate (u_{-1} = last command, or
                u_ref_0) + slack_weight sum(slacks) + 1e-4/2 |slacks|^2 (+ time_weight t_N)

What is shared with the controller (reused, not re-derived): the path's own interpolation
(:meth:`ReferencePath.interpolate`), the spatial bicycle's linearization
(:func:`mpc_tracking.models.prediction.spatial_bicycle.linearize`), the path's forward-backward speed profile
(:func:`mpc_tracking.paths.speed_profile.speed_profile`) for the whole-path ceilings, the corridor
provider's ``bounds()``, and the constants ``SLACK_QUAD`` and ``REF_SLOPE`` of
:mod:`mpc_tracking.mpc.qp`. Everything else (grid, operating point, horizon speed profile, rate
and box bounds, body reduction of the bounds, lateral reference, cost) is written here again, with
plain loops. Not covered: ``delay > 0`` and ``iterations > 1``.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import cvxpy as cp
import numpy as np

from mpc_tracking.errors import InputError, SolverError
from mpc_tracking.models.prediction import spatial_bicycle as sb
from mpc_tracking.mpc.qp import REF_SLOPE, SLACK_QUAD  # constants of the formulation, shared on purpose
from mpc_tracking.paths.speed_profile import speed_profile

if TYPE_CHECKING:
    from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
    from mpc_tracking.mpc.settings import MPCSettings, MPCSolution
    from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["CvxpyMPC"]

_BIG = 1e6  # cvxpy parameters cannot hold inf: "no bound" becomes a large finite bound


def _sqrtm(W: np.ndarray) -> np.ndarray:
    """Symmetric square root of a PSD matrix (so that z^T W z = |z M|^2)."""
    lam, V = np.linalg.eigh(np.asarray(W, dtype=float))
    return V @ np.diag(np.sqrt(np.maximum(lam, 0.0))) @ V.T


def _speed_limit(kappa: np.ndarray, delta_op: np.ndarray | None, L: float, st: MPCSettings) -> np.ndarray:
    k = np.abs(kappa)
    if delta_op is not None:
        k = np.maximum(k, np.abs(np.tan(delta_op)) / L)
    return np.clip(np.sqrt(st.a_y_max / np.maximum(k, 1e-9)), st.v_min, st.v_max)


def _reachable(
    v_lim: np.ndarray, s: np.ndarray, decel: float, accel: float, v_start: float | None, v_min: float
) -> np.ndarray:
    """Highest speeds under ``v_lim`` reachable with the given braking/acceleration (two plain passes)."""
    v2 = np.asarray(v_lim, dtype=float) ** 2
    if math.isfinite(decel):
        for k in range(len(v2) - 2, -1, -1):
            v2[k] = min(v2[k], v2[k + 1] + 2.0 * decel * (s[k + 1] - s[k]))
    if math.isfinite(accel):
        if v_start is not None:
            v2[0] = min(v2[0], v_start * v_start)
        for k in range(1, len(v2)):
            v2[k] = min(v2[k], v2[k - 1] + 2.0 * accel * (s[k] - s[k - 1]))
    return np.maximum(np.sqrt(np.maximum(v2, 0.0)), v_min)


def _slope_limited_reference(lo: np.ndarray, hi: np.ndarray, s: np.ndarray, slope: float) -> np.ndarray:
    """0 clipped into the slope-limited envelopes of [lo, hi] (the midpoint where they cross); O(K^2)."""
    gap = slope * np.abs(s[:, None] - s[None, :])
    low = np.max(lo[None, :] - gap, axis=1)
    high = np.min(hi[None, :] + gap, axis=1)
    ref = np.clip(0.0, low, high)
    return np.where(low > high, 0.5 * (low + high), ref)


class CvxpyMPC:
    """One step of the spatial MPC as a cvxpy problem, built from the path, vehicle and settings.

    Parameters
    ----------
    path : ReferencePath
    vehicle : VehicleParams
    settings : MPCSettings
        ``delay`` must be 0 and ``iterations`` 1 (not modelled here).
    corridor : Corridor, optional
        Lateral bounds provider (default: the path's track widths).

    Examples
    --------
    >>> import mpc_tracking as mt
    >>> path = mt.load_path("oval", ds=1.0)
    >>> settings = mt.MPCSettings(horizon=10, v_max=8.0)
    >>> ref = CvxpyMPC(path, mt.VehicleParams(), settings)
    >>> plan = ref.solve((0.0, 0.2, 0.0))
    >>> osqp = mt.SpatialMPC(path, mt.VehicleParams(), settings).solve((0.0, 0.2, 0.0))
    >>> bool(abs(plan["u"][0, 1] - osqp.delta) < 1e-3)  # the same first steering command
    True
    """

    def __init__(
        self, path: ReferencePath, vehicle: VehicleParams, settings: MPCSettings, corridor: Any = None
    ) -> None:
        if settings.delay > 0 or settings.iterations != 1:
            raise InputError("CvxpyMPC: delay > 0 and iterations > 1 are not modelled")
        self.path, self.vehicle, self.settings, self.corridor = path, vehicle, settings, corridor
        st = settings
        self.N = st.horizon
        self.ds = float(st.ds if st.ds is not None else path.ds)
        self.front, self.rear = vehicle.length - vehicle.rear_overhang, vehicle.rear_overhang
        # whole-path speed ceilings (same public function as the controller, see the module doc)
        self.v_ref_path: np.ndarray | None = path.v_ref
        self.v_box_path: np.ndarray | None = None
        if math.isfinite(st.decel_max) or math.isfinite(st.accel_max):
            v_ref = speed_profile(
                path, v_max=st.v_max, a_y_max=st.a_y_max, a_max=0.9 * st.accel_max, a_brake=0.9 * st.decel_max
            )
            self.v_ref_path = v_ref if path.v_ref is None else np.minimum(v_ref, path.v_ref)
            self.v_box_path = speed_profile(
                path, v_max=st.v_max, a_y_max=st.a_y_max, a_max=np.inf, a_brake=0.95 * st.decel_max
            )
        # (width_left, width_right) per waypoint reduced over the body, computed on first use
        self._body_widths: tuple[np.ndarray, np.ndarray] | None = None
        self._build_problem()

    # ---------------------------------------------------------------- the QP on paper
    def _build_problem(self) -> None:
        st, N = self.settings, self.N
        x = cp.Variable((N + 1, 3), name="x")
        u = cp.Variable((N, 2), name="u")
        sl = cp.Variable((N + 1, 2), nonneg=True, name="slack_lower")  # column 0 front, 1 rear corner
        su = cp.Variable((N + 1, 2), nonneg=True, name="slack_upper")
        # per-step dynamics matrices (one parameter each), then the vector/matrix parameters by name
        self.A_params = [cp.Parameter((3, 3), name=f"A{k}") for k in range(N)]
        self.B_params = [cp.Parameter((3, 2), name=f"B{k}") for k in range(N)]
        p = {
            "f": cp.Parameter((N, 3), name="f"),
            "x0": cp.Parameter(3, name="x0"),
            "v_hi": cp.Parameter(N, name="v_hi"),
            "rate_lo": cp.Parameter((N, 2), name="rate_lo"),
            "rate_hi": cp.Parameter((N, 2), name="rate_hi"),
            "corr_lo": cp.Parameter(N + 1, name="corr_lo"),
            "corr_hi": cp.Parameter(N + 1, name="corr_hi"),
            "e_ref": cp.Parameter(N + 1, name="e_ref"),
            "u_ref": cp.Parameter((N, 2), name="u_ref"),
            "u_prev": cp.Parameter(2, name="u_prev"),
        }
        self.params = p
        self.x, self.u, self.sl, self.su = x, u, sl, su
        Q = st.Q_matrix
        Mq, MqN, Mr, Mrd = (_sqrtm(W) for W in (Q, st.terminal_weight * Q, st.R_matrix, st.R_rate_matrix))
        x_err = cp.hstack([cp.reshape(x[:, 0] - p["e_ref"], (N + 1, 1), order="C"), x[:, 1:]])
        cost = 0.5 * cp.sum_squares(x_err[1:N] @ Mq) + 0.5 * cp.sum_squares(x_err[N] @ MqN)
        cost += 0.5 * cp.sum_squares((u - p["u_ref"]) @ Mr)
        du = cp.vstack([cp.reshape(u[0] - p["u_prev"], (1, 2), order="C"), u[1:] - u[:-1]])
        cost += 0.5 * cp.sum_squares(du @ Mrd)
        cost += st.slack_weight * (cp.sum(sl) + cp.sum(su))
        cost += 0.5 * SLACK_QUAD * (cp.sum_squares(sl) + cp.sum_squares(su))
        if st.mode == "time_optimal":
            cost += st.time_weight * x[N, 2]
        cons = [x[0] == p["x0"]]
        for k in range(N):
            cons.append(x[k + 1] == self.A_params[k] @ x[k] + self.B_params[k] @ u[k] + p["f"][k])
        cons += [u[:, 0] >= st.v_min, u[:, 0] <= p["v_hi"], cp.abs(u[:, 1]) <= st.delta_max]
        du_all = cp.vstack([cp.reshape(u[0], (1, 2), order="C"), u[1:] - u[:-1]])
        cons += [du_all >= p["rate_lo"], du_all <= p["rate_hi"]]
        for j, coef in enumerate((self.front, -self.rear)):
            corner = x[:, 0] + coef * x[:, 1] + sl[:, j] - su[:, j]
            cons += [corner >= p["corr_lo"], corner <= p["corr_hi"]]
        self.problem = cp.Problem(cp.Minimize(cost), cons)
        if not self.problem.is_dpp():  # pragma: no cover - guards the formulation
            raise SolverError("the cvxpy MPC formulation is not DPP")

    # ---------------------------------------------------------------- the step's numbers
    def _path_column(self, values: np.ndarray, s: np.ndarray) -> np.ndarray:
        """Linear interpolation of a per-waypoint column (wrapping on loops)."""
        path = self.path
        if path.closed:
            return np.interp(np.mod(s, path.length), np.append(path.s, path.length), np.append(values, values[0]))
        return np.interp(s, path.s, values)

    def _speed_reference(self, kappa: np.ndarray, u_prev: np.ndarray | None) -> np.ndarray:
        st, N = self.settings, self.N
        lim = _speed_limit(kappa[:N], None, self.vehicle.wheelbase, st)
        s_grid = self._s_grid
        if st.mode != "time_optimal" and self.v_ref_path is not None:
            lim = np.minimum(np.maximum(self._path_column(self.v_ref_path, s_grid[:N]), st.v_min), lim)
        elif self.v_box_path is not None:
            lim = np.minimum(np.maximum(self._path_column(self.v_box_path, s_grid[:N]), st.v_min), lim)
        v_start = None if u_prev is None else u_prev[0] + 0.9 * st.accel_max * st.control_period
        return _reachable(lim, self.ds * np.arange(N), 0.9 * st.decel_max, 0.9 * st.accel_max, v_start, st.v_min)

    def _shifted(self, prev: MPCSolution, s_grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The previous plan interpolated onto the new grid (clamped at its ends)."""
        s_prev = np.asarray(prev.s, dtype=float)
        s_new = s_grid
        if self.path.closed:
            s_new = s_grid + np.round((s_prev[0] - s_grid[0]) / self.path.length) * self.path.length
        U = np.vstack([prev.u, prev.u[-1:]])
        x_op = np.column_stack([np.interp(s_new, s_prev, prev.x[:, i]) for i in range(prev.x.shape[1])])
        u_op = np.column_stack([np.interp(s_new, s_prev, U[:, j]) for j in range(U.shape[1])])[:-1]
        past = s_new > s_prev[-1]
        if past.any():
            pace = (prev.x[-1, 2] - prev.x[-2, 2]) / max(s_prev[-1] - s_prev[-2], 1e-12)
            x_op[past, 2] = prev.x[-1, 2] + (s_new[past] - s_prev[-1]) * pace
        x_op[:, 2] -= x_op[0, 2]
        return x_op, u_op

    def _raw_bounds(self, s_grid: np.ndarray, t_pred: np.ndarray, e_y0: float) -> tuple[np.ndarray, np.ndarray]:
        """Tightest lower/upper e_y bound over the body at each grid point (before the car's width)."""
        path, N = self.path, self.N
        if self.corridor is None:
            # the track widths reduced over the body once per path (documented: at each waypoint the
            # narrowest width among the waypoints from rear_overhang behind to front_extent ahead,
            # rounded outward to whole waypoints), then linear between waypoints like every column
            if self._body_widths is None:
                n_r = math.ceil(self.rear / path.ds - 1e-9)
                n_f = math.ceil(self.front / path.ds - 1e-9)
                n = path.n
                wl, wr = np.empty(n), np.empty(n)
                for i in range(n):
                    idx = np.arange(i - n_r, i + n_f + 1)
                    idx = np.mod(idx, n) if path.closed else np.clip(idx, 0, n - 1)
                    wl[i], wr[i] = path.width_left[idx].min(), path.width_right[idx].min()
                self._body_widths = (wl, wr)
            wl, wr = self._body_widths
            return -self._path_column(wr, s_grid), self._path_column(wl, s_grid)
        n_r = math.ceil(self.rear / self.ds - 1e-9)
        n_f = math.ceil(self.front / self.ds - 1e-9)
        s_body = s_grid[0] + self.ds * np.arange(-n_r, N + 1 + n_f)  # every point any body position covers
        s_q = s_body if path.closed else np.clip(s_body, 0.0, path.length)
        lo_all, hi_all = -np.inf * np.ones(s_body.size), np.inf * np.ones(s_body.size)
        # a point is under the body from when the front bumper reaches it until the rear bumper leaves it
        shifts = (-self.front, self.rear) if getattr(self.corridor, "time_varying", True) else (-self.front,)
        for shift in shifts:
            lo, hi = self.corridor.bounds(s_q, np.interp(s_body + shift, s_grid, t_pred), e_y0)
            lo_all = np.maximum(lo_all, np.asarray(lo, dtype=float))
            hi_all = np.minimum(hi_all, np.asarray(hi, dtype=float))
        w = n_r + n_f + 1
        lb = np.array([lo_all[k : k + w].max() for k in range(N + 1)])
        ub = np.array([hi_all[k : k + w].min() for k in range(N + 1)])
        return lb, ub

    def step_data(self, state: Any, t: float = 0.0, previous: Any = None) -> dict[str, Any]:
        """All numbers of this step's QP, computed from the problem.

        Parameters
        ----------
        state : Projection or (s, e_y, e_psi)
        t : float
            Current time [s] (moving obstacles).
        previous : MPCSolution, optional
            The controller's last successful solution (its plan and first input = last command).
        """
        st, N, veh = self.settings, self.N, self.vehicle
        s0, e_y, e_psi = (state.s, state.e_y, state.e_psi) if hasattr(state, "e_psi") else state
        x0 = np.array([float(e_y), float(e_psi), 0.0])
        s_grid = float(s0) + self.ds * np.arange(N + 1)
        if not self.path.closed:
            s_grid = np.minimum(s_grid, self.path.length)
        self._s_grid = s_grid
        kappa = self.path.interpolate(s_grid)["kappa"]
        u_prev_cmd = None if previous is None else np.asarray(previous.u[0], dtype=float)
        # reference input and operating point
        u_ref = np.column_stack([self._speed_reference(kappa, u_prev_cmd), np.arctan(veh.wheelbase * kappa[:N])])
        if st.linearization in ("previous", "auto") and previous is not None:  # auto: the kinematic model's
            x_op, u_op = self._shifted(previous, s_grid)
        else:
            x_op = np.zeros((N + 1, 3))
            x_op[1:, 2] = np.cumsum(self.ds / u_ref[:, 0])
            u_op = u_ref.copy()
        x_op[0] = x0
        e_lim = 0.95 / np.maximum(np.abs(kappa), 1e-12)
        x_op[:, 0] = np.clip(x_op[:, 0], -e_lim, e_lim)
        x_op[:, 1] = np.clip(x_op[:, 1], -1.2, 1.2)
        u_op[:, 0] = np.maximum(u_op[:, 0], st.v_min)
        A, B, f = sb.linearize(x_op[:-1], u_op, kappa[:-1], np.maximum(np.diff(s_grid), 0.0), veh, st.discretization)
        # speed bound
        v_hi = _speed_limit(kappa[:N], u_op[:, 1], veh.wheelbase, st)
        if self.v_box_path is not None:
            v_hi = np.minimum(v_hi, np.maximum(self._path_column(self.v_box_path, s_grid[:N]), st.v_min))
        dt = np.empty(N)
        dt[0] = st.control_period
        dt[1:] = np.maximum(np.diff(s_grid[:N]), 1e-9) / np.maximum(u_op[: N - 1, 0], st.v_min)
        rate_lo = -np.column_stack([st.decel_max * dt, st.delta_rate_max * dt])
        rate_hi = np.column_stack([st.accel_max * dt, st.delta_rate_max * dt])
        if u_prev_cmd is None:
            rate_lo[0], rate_hi[0] = -np.inf, np.inf
            u_prev = u_ref[0].copy()
        else:
            u_prev = u_prev_cmd
            rate_lo[0] += u_prev
            rate_hi[0] += u_prev
            if math.isfinite(st.accel_max) or math.isfinite(st.decel_max):
                v_start = u_prev[0] + 0.95 * st.accel_max * st.control_period
                v_hi = _reachable(
                    v_hi, self.ds * np.arange(N), 0.95 * st.decel_max, 0.95 * st.accel_max, v_start, st.v_min
                )
            if math.isfinite(st.decel_max):
                v_hi = np.maximum(v_hi, u_prev[0] - st.decel_max * np.cumsum(dt) + 1e-6)
        # corridor for the reference point, and the lateral reference inside it
        lb, ub = self._raw_bounds(s_grid, t + x_op[:, 2], float(x0[0]))
        half = 0.5 * veh.width + st.corridor_margin
        lo, hi = lb + half, ub - half
        mid = 0.5 * (lo + hi)
        lo, hi = np.where(lo > hi, mid, lo), np.where(lo > hi, mid, hi)
        inset = np.minimum(0.5 * (hi - lo), 0.5 * veh.width)
        e_ref = _slope_limited_reference(lo + inset, hi - inset, self.ds * np.arange(N + 1), REF_SLOPE)
        return {
            "s": s_grid, "kappa": kappa, "x_op": x_op, "u_op": u_op, "A": A, "B": B, "f": f, "x0": x0,
            "v_hi": v_hi, "rate_lo": rate_lo, "rate_hi": rate_hi, "lb": lb, "ub": ub, "corr_lo": lo,
            "corr_hi": hi, "e_ref": e_ref, "u_ref": u_ref, "u_prev": u_prev,
        }

    def solve(self, state: Any, t: float = 0.0, previous: Any = None, solver: str | None = None,
              **solver_kw: Any) -> dict[str, Any]:
        """Solve this step's QP (see :meth:`step_data`).

        Returns
        -------
        dict with ``x`` (N+1, 3), ``u`` (N, 2), ``slack_lower``/``slack_upper`` (N+1, 2), ``status``
        and ``data`` (the numbers from :meth:`step_data`).
        """
        d = self.step_data(state, t, previous)
        p = self.params
        for k in range(self.N):
            self.A_params[k].value = d["A"][k]
            self.B_params[k].value = d["B"][k]
        p["f"].value = d["f"]
        p["x0"].value = d["x0"]
        for name in ("v_hi", "rate_lo", "rate_hi", "corr_lo", "corr_hi"):
            p[name].value = np.clip(d[name], -_BIG, _BIG)
        for name in ("e_ref", "u_ref", "u_prev"):
            p[name].value = d[name]
        try:
            self.problem.solve(solver=solver or cp.CLARABEL, **solver_kw)
        except cp.SolverError as exc:
            raise SolverError(f"cvxpy solve failed: {exc}") from exc
        return {
            "x": self.x.value, "u": self.u.value, "slack_lower": self.sl.value, "slack_upper": self.su.value,
            "status": self.problem.status, "data": d,
        }
