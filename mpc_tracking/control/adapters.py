"""The MPC controllers behind the :class:`~mpc_tracking.control.protocol.Controller` protocol.

:class:`~mpc_tracking.mpc.controller.SpatialMPC` has what the loop needs under its own names
(``settings.control_period``, ``model.MEASURES``, ``N``, ``settings.v_min``/``v_max``);
:class:`SpatialMPCController` reads them through the protocol's names and otherwise forwards every
call, so a run with the adapter is bit for bit the run with the bare MPC. The cvxpy reference
controllers (:class:`~mpc_tracking.mpc.cvxpy_ref.CvxpyMPC`, :class:`~mpc_tracking.mpc.cvxpy_dynamic.CvxpyDynamicMPC`)
solve one step from an explicit previous solution and return a dict; :class:`CvxpyController` keeps
that previous solution and answers with an :class:`~mpc_tracking.mpc.settings.MPCSolution`, so they
close the loop too (slowly: the cross-check's problem is built in cvxpy every step).

:func:`as_controller` picks the adapter: ``simulate`` calls it on whatever it is given.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from mpc_tracking.control.protocol import Controller
from mpc_tracking.errors import InputError, SolverError
from mpc_tracking.mpc.controller import SpatialMPC
from mpc_tracking.mpc.settings import MPCSolution, Status
from mpc_tracking.paths.projection import Projection

__all__ = ["SpatialMPCController", "CvxpyController", "as_controller"]


class SpatialMPCController:
    """A :class:`~mpc_tracking.mpc.controller.SpatialMPC` seen through the Controller protocol.

    Parameters
    ----------
    mpc : SpatialMPC
        The controller; :attr:`mpc` keeps it (its settings, solver, last plan).
    """

    def __init__(self, mpc: SpatialMPC) -> None:
        if not isinstance(mpc, SpatialMPC):
            raise InputError(f"mpc: expected a SpatialMPC, got {type(mpc).__name__}")
        self.mpc = mpc
        self.path = mpc.path
        self.vehicle = mpc.vehicle

    @property
    def control_period(self) -> float:
        """``settings.control_period`` [s]."""
        return float(self.mpc.settings.control_period)

    @property
    def measures(self) -> bool:
        """The prediction model's ``MEASURES``: the dynamic model needs the body-frame velocities."""
        return bool(self.mpc.model.MEASURES)

    @property
    def horizon(self) -> int:
        """``N``: prediction steps."""
        return int(self.mpc.N)

    @property
    def ds(self) -> float:
        """The MPC's spatial step [m] (the set-up checks refuse one longer than the path)."""
        return float(self.mpc.ds)

    @property
    def speed_range(self) -> tuple[float, float]:
        """``(settings.v_min, settings.v_max)`` [m/s]."""
        st = self.mpc.settings
        return float(st.v_min), float(st.v_max)

    def plan_feedforward(self, sol: MPCSolution) -> tuple[float, float] | None:
        """The plan's (speed [m/s], acceleration [m/s^2]) for a speed loop to feed forward, or None
        (:meth:`PredictionModel.feedforward`: the dynamic model plans one, the kinematic one not)."""
        return self.mpc.model.feedforward(sol.x, sol.u)

    def reset(self) -> None:
        """:meth:`SpatialMPC.reset`."""
        self.mpc.reset()

    def solve(self, state: Projection, t: float = 0.0, measured: Mapping[str, float] | None = None) -> MPCSolution:
        """:meth:`SpatialMPC.solve` (an :class:`MPCSolution`)."""
        return self.mpc.solve(state, t=t, measured=measured)  # type: ignore[arg-type]

    def reference_input(self, s0: float) -> np.ndarray:
        """:meth:`SpatialMPC.reference_input`."""
        return self.mpc.reference_input(s0)

    def describe(self) -> dict[str, Any]:
        """``{"controller": "mpc", "mode": settings.mode}``."""
        return {"controller": "mpc", "mode": self.mpc.settings.mode}


class CvxpyController:
    """A cvxpy reference controller closing the loop (the Controller protocol).

    Every step solves the reference's QP from the measured state and the last solution, and
    returns an :class:`MPCSolution` (horizon, first input as the command) built from the cvxpy
    result; a step whose problem is not solved to optimality raises
    :class:`~mpc_tracking.errors.SolverError` (the run stops with ``"error"``: the reference has no
    fallback).

    Parameters
    ----------
    reference : CvxpyMPC or CvxpyDynamicMPC
        The one-step problem; its ``path``, ``vehicle`` and ``settings`` are the controller's.
    solver : str, optional
        cvxpy solver name (default: the reference's, Clarabel).

    Notes
    -----
    The command is the first planned input, as :class:`SpatialMPC` applies it for the kinematic
    model; for the dynamic reference (input a_x, delta) the speed command is the planned speed at
    the end of the first step, ``x[1, 3]``.
    """

    def __init__(self, reference: Any, solver: str | None = None) -> None:
        from mpc_tracking.mpc.cvxpy_ref import CvxpyMPC

        if not isinstance(reference, CvxpyMPC):
            raise InputError(f"reference: expected a CvxpyMPC or CvxpyDynamicMPC, got {type(reference).__name__}")
        self.reference = reference
        self.path = reference.path
        self.vehicle = reference.vehicle
        self.solver = solver
        self._dynamic = hasattr(reference, "model")
        self._prev: MPCSolution | None = None

    @property
    def control_period(self) -> float:
        """``settings.control_period`` [s]."""
        return float(self.reference.settings.control_period)

    @property
    def measures(self) -> bool:
        """True for the dynamic reference (it needs v_x, v_y, r)."""
        return self._dynamic

    @property
    def horizon(self) -> int:
        """``N``."""
        return int(self.reference.N)

    @property
    def speed_range(self) -> tuple[float, float]:
        """``(settings.v_min, settings.v_max)`` [m/s]."""
        st = self.reference.settings
        return float(st.v_min), float(st.v_max)

    def reset(self) -> None:
        """Forget the last solution (the next step starts without rate rows, as the MPC's first)."""
        self._prev = None

    def reference_input(self, s0: float) -> np.ndarray:
        """``(v_ref, delta_ref)`` at ``s0``: the first reference input of the step's problem."""
        data = self.reference.step_data((float(s0), 0.0, 0.0), 0.0, None, **self._measured_kw(None, s0))
        return np.asarray(data["u_ref"][0], dtype=float) if not self._dynamic else np.array(
            [float(data["target"][0, 3]), float(data["u_ref"][0, 1])])

    def _measured_kw(self, measured: Mapping[str, float] | None, s0: float) -> dict[str, Any]:
        if not self._dynamic:
            return {}
        if measured is None or "v_x" not in measured:  # a reference query: the car at the speed ceiling
            v = float(self.reference.settings.v_min)
            measured = {"v_x": v, "v_y": 0.0, "r": 0.0}
        return {"measured": dict(measured)}

    def solve(self, state: Projection, t: float = 0.0, measured: Mapping[str, float] | None = None) -> MPCSolution:
        """Solve the reference's step QP and return it as an :class:`MPCSolution`."""
        t0 = time.perf_counter()
        s0 = float(state.s) if hasattr(state, "s") else float(next(iter(state)))
        kw = self._measured_kw(measured, s0)
        if self.solver is not None:
            kw["solver"] = self.solver
        out = self.reference.solve(state, t=t, previous=self._prev, **kw)
        if out["status"] not in ("optimal", "optimal_inaccurate") or out["u"] is None:
            raise SolverError(f"cvxpy reference step at s = {s0:.2f} m: status {out['status']!r}")
        status = Status.SOLVED if out["status"] == "optimal" else Status.SOLVED_INACCURATE
        sol = self._solution(out, status, time.perf_counter() - t0)
        self._prev = sol
        return sol

    def _solution(self, out: dict[str, Any], status: Status, wall: float) -> MPCSolution:
        d = out["data"]
        X, U = np.asarray(out["x"], dtype=float), np.asarray(out["u"], dtype=float)
        xy = self.path.point_at(np.asarray(d["s"], dtype=float), X[:, 0])
        v_cmd = float(X[1, 3]) if self._dynamic else float(U[0, 0])
        slacks = [np.asarray(out[k], dtype=float) for k in ("slack_lower", "slack_upper") if out.get(k) is not None]
        slack = max([0.0] + [float(a.max()) for a in slacks if a.size])
        return MPCSolution(
            v=v_cmd, delta=float(U[0, 1]), status=status, solver_status=str(out["status"]), success=True,
            iterations=0, solve_time=wall, step_time=wall, s=np.asarray(d["s"], dtype=float), x=X, u=U, xy=xy,
            corridor_violation=slack, lb=np.asarray(d["lb"], dtype=float), ub=np.asarray(d["ub"], dtype=float),
        )

    def describe(self) -> dict[str, Any]:
        """``{"controller": "cvxpy", "mode": settings.mode}``."""
        return {"controller": "cvxpy", "mode": self.reference.settings.mode}


def as_controller(obj: Any) -> Controller:
    """``obj`` as a :class:`~mpc_tracking.control.protocol.Controller`.

    A :class:`SpatialMPC` is wrapped in :class:`SpatialMPCController`, a cvxpy reference
    controller in :class:`CvxpyController`; an object that already has the protocol's members is
    returned as is. Anything else is an :class:`~mpc_tracking.errors.InputError` naming what is
    missing.
    """
    if isinstance(obj, SpatialMPC):
        return SpatialMPCController(obj)
    if isinstance(obj, Controller):
        return obj
    cvxpy_ref = sys.modules.get("mpc_tracking.mpc.cvxpy_ref")  # not imported: obj cannot be one (no cvxpy import)
    if cvxpy_ref is not None and isinstance(obj, cvxpy_ref.CvxpyMPC):
        return CvxpyController(obj)
    members = ("path", "vehicle", "control_period", "measures", "horizon", "speed_range", "reset", "solve",
               "reference_input", "describe")
    missing = [m for m in members if not hasattr(obj, m)]
    raise InputError(f"controller: expected a SpatialMPC or an object with the Controller protocol's members "
                     f"(mpc_tracking.control.Controller), got {type(obj).__name__} without {', '.join(missing)}")

