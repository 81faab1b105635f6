"""What the controller does when the QP cannot be trusted: the rejoin mode, the check of a
"solved" solution against its own constraints, and the fallback to the previous plan then a
safe stop. Mixed into :class:`~mpc_tracking.mpc.controller.SpatialMPC` (it uses the
controller's settings, model, layout, path sampler and memory of the previous plan).
"""
from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from mpc_tracking.mpc.layout import QPData
from mpc_tracking.mpc.rejoin import ENTER_EPSI, ENTER_EY_KAPPA, back_in_domain, outside_domain, pure_pursuit
from mpc_tracking.mpc.settings import MPCSolution, Status
from mpc_tracking.paths.projection import Projection

__all__ = ["SafeguardsMixin"]

logger = logging.getLogger("mpc_tracking.mpc.controller")  # messages read as the controller's


class SafeguardsMixin:
    """Rejoin, solution check and fallback of :class:`~mpc_tracking.mpc.controller.SpatialMPC`."""

    # provided by SpatialMPC (declared for the type checker)
    settings: Any
    model: Any
    layout: Any
    path: Any
    vehicle: Any
    N: int
    nx: int
    n_steps: int
    _sampler: Any
    _A_check: Any
    _kappa_max: float
    _rejoining: bool
    _prev: MPCSolution | None
    _fail_count: int
    _u_prev: np.ndarray | None
    _cmd_prev: np.ndarray | None
    _v_measured: float | None

    def _kappa_at(self, s: float) -> float:  # pragma: no cover - overridden by SpatialMPC
        raise NotImplementedError

    def _grid(self, s0: float) -> np.ndarray:  # pragma: no cover - overridden by SpatialMPC
        raise NotImplementedError

    def _shifted_op(self, prev: MPCSolution, s_grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
        raise NotImplementedError

    def _needs_rejoin(self, state: Any) -> bool:
        """Enter/leave the geometric rejoin mode (with hysteresis, see :mod:`mpc_tracking.mpc.rejoin`)."""
        s0, e_y, e_psi = (state.s, state.e_y, state.e_psi) if isinstance(state, Projection) else state
        if not (np.isfinite(s0) and np.isfinite(e_y) and np.isfinite(e_psi)):
            return False  # _prepare reports it
        if not self._rejoining and abs(e_psi) < ENTER_EPSI and abs(e_y) * self._kappa_max < ENTER_EY_KAPPA:
            return False  # the everyday case, without a path lookup
        kappa = self._kappa_at(float(s0))
        if self._rejoining:
            r_min = self.vehicle.wheelbase / np.tan(self.settings.delta_max)
            self._rejoining = not back_in_domain(float(e_y), float(e_psi), kappa, e_y_max=r_min)
            if not self._rejoining:
                logger.info("MPC step %d: back in the spatial model's domain (e_y = %.2f m, e_psi = %.2f rad); "
                            "the MPC takes over", self.n_steps, e_y, e_psi)
        elif outside_domain(float(e_y), float(e_psi), kappa):
            self._rejoining = True
            logger.warning("MPC step %d: outside the spatial model's domain (e_y = %.2f m, e_psi = %.2f rad, "
                           "e_y kappa = %.2f); steering back to the path by pure pursuit", self.n_steps, e_y, e_psi,
                           e_y * kappa)
        return self._rejoining

    def _rejoin(self, state: Any, t_start: float) -> MPCSolution:
        """One step of the geometric approach; the MPC's memory is cleared for its restart."""
        s0, e_y, e_psi = (state.s, state.e_y, state.e_psi) if isinstance(state, Projection) else state
        st, m = self.settings, self.model
        d_prev = None if self._cmd_prev is None else float(self._cmd_prev[1])
        v, delta = pure_pursuit(self.path, self.vehicle, st, s0=float(s0), e_y=float(e_y), e_psi=float(e_psi),
                                delta_prev=d_prev)
        self.n_steps += 1
        self._prev, self._fail_count = None, 0
        s_grid = self._grid(float(s0))
        u_pred = np.tile(m.stop_input(v, delta, st), (self.N, 1))
        self._u_prev = u_pred[0].copy()
        self._cmd_prev = np.array([v, delta])
        q = self._sampler.sample(s_grid)
        return MPCSolution(
            v=v, delta=delta, status=Status.REJOIN, solver_status="rejoin (pure pursuit)", success=False,
            iterations=0, solve_time=0.0, step_time=time.perf_counter() - t_start, s=s_grid,
            x=np.full((self.N + 1, self.nx), np.nan), u=u_pred, xy=np.column_stack([q.x, q.y]),
            corridor_violation=float("nan"), fallback_steps=0,
        )

    def _constraint_violation(self, d: QPData, z: np.ndarray) -> tuple[int, float] | None:
        """``(row, amount)`` of the worst violated constraint ``l <= A z <= u`` beyond tolerance, else None.

        The rows are the dynamics (equalities), input bounds and rates, corridor rows with their
        slacks. The tolerance is 100x OSQP's own (absolute and relative), so an accurate or
        "inaccurate" solution passes and a corrupted one (garbage "solved") does not.
        """
        A = self._A_check
        np.copyto(A.data, d.A_data)
        Az = A @ z
        st = self.settings
        scale = max(float(np.max(np.abs(Az))), float(np.max(np.abs(z))), 1.0)
        tol = 100.0 * (st.eps_abs + st.eps_rel * scale)
        excess = np.maximum(d.l - Az, Az - d.u)
        i = int(np.argmax(excess))
        return (i, float(excess[i])) if excess[i] > tol else None

    def _fallback(self, solver_status: Any, iters: int, solve_time: float, t_start: float, s0: float) -> MPCSolution:
        """Reuse the previous plan (shifted) for at most K steps, then brake to a safe stop."""
        st = self.settings
        self._fail_count += 1
        prev = self._prev
        m = self.model
        if prev is not None and self._fail_count <= st.max_fallback_steps:
            s_grid = self._grid(s0)
            x_op, u_op = self._shifted_op(prev, s_grid)
            status = Status.FALLBACK
            v, delta = m.command(x_op, u_op)
            x_pred, u_pred = x_op, u_op
        else:
            status = Status.SAFE_STOP
            v_last, d_last = self._cmd_prev if self._cmd_prev is not None else (0.0, 0.0)
            if self._v_measured is not None:  # brake from the speed the car has, from the first step on
                v_last = self._v_measured
            v = max(0.0, float(v_last) - st.brake_decel * st.control_period)
            delta = float(d_last)
            s_grid = self._grid(s0)
            x_pred = np.full((self.N + 1, self.nx), np.nan)
            u_pred = np.tile(m.stop_input(v, delta, st), (self.N, 1))
        self._u_prev = u_pred[0].copy()
        self._cmd_prev = np.array([v, delta])
        q = self._sampler.sample(s_grid)
        e = np.nan_to_num(x_pred[:, m.I_EY])
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
