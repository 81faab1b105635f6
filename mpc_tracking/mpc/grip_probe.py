"""The brake test: while nothing has told the grip estimate what the road gives, the controller brakes hard once,
on a straight, to find out.

A car whose vehicle file was identified on another road (the dry file on a wet road) learns the grip only when its
tyres reach their peak. Left to the plan, that happens in the first braking zone or the first fast corner: on four
of the six real race tracks the dry file's first braking zone on a mu 0.6 road was read 0.4 s after the car began
braking at the dry pace, too late to make the corner, and the car ran 0.4-3.1 m past the edge
(``benchmarks/bench_grip_change.py``, ``wet_fast``). A driver on an unknown road brakes hard once on the first
straight; :class:`BrakeTest` does the same:

* **when**: once per run (:meth:`BrakeTest.reset` arms it again), at the first step where the estimate still has
  its initial uncertainty (nothing confirmed or read yet), the car is at least at :data:`PROBE_MIN_SPEED`, the
  plan does not brake (its accelerations over the horizon all above ``-GRIP_BRAKE_MIN``) and the path is straight
  where the test brakes: over the distance it covers at the current speed (``grip_probe_time`` and
  :data:`PROBE_LOOKAHEAD_MARGIN`) the reference's lateral acceleration ``v^2 |kappa|`` stays within
  :data:`PROBE_LATERAL_SHARE` of ``a_y_max`` (a corner after it is met slower, which is safe);
* **what**: the first command's acceleration becomes ``-decel_max`` (the braking the plan will ask for in the braking
  zones), the plan's next speed the one that braking leaves after the first step (``v_1^2 = v_0^2 - 2 decel ds``)
  and the speed command follows them (:meth:`PredictionModel.command
  <mpc_tracking.models.prediction.PredictionModel.command>`); the steering stays the plan's. The estimator sees a
  command the road cannot give as braking short of it (:data:`~mpc_tracking.mpc.grip.GRIP_BRAKE_SHORT`): on the
  wet road the estimate fell to the road's grip within 0.2 s, before the first braking zone;
* **until**: the estimate moved (a reading or a confirmation: its uncertainty left the initial one, or it slid) or
  :attr:`BrakeTest.duration` passed (``grip_probe_time``).

On a dry road the braking confirms the grip within 0.05-0.15 s and the test ends: the dry laps of the six real
tracks moved by -0.02 to +0.01 % (``bench_grip_change.py --validate``). Repeating it when the uncertainty grows
back (rain later in the run) is not done: every 15 s it cost 1-3 % a lap on the dry real tracks (each test near
a braking zone slows the next corner); whenever the uncertainty was back at its maximum it cost under 0.05 % but
changed no rain lap.
"""
from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

from mpc_tracking.mpc.grip import GRIP_BRAKE_MIN, GripEstimate

__all__ = ["BrakeTest", "PROBE_MIN_SPEED", "PROBE_LATERAL_SHARE", "PROBE_LOOKAHEAD_MARGIN"]

logger = logging.getLogger("mpc_tracking.mpc.grip")

#: the brake test waits for at least this speed [m/s] (the estimator reads nothing below ``GRIP_MIN_SPEED``)
PROBE_MIN_SPEED = 10.0
#: ... a path ahead whose reference asks at most this share of ``a_y_max`` laterally (a straight) [-]
PROBE_LATERAL_SHARE = 0.1
#: ... over the distance the test covers at the current speed and this much more time [s] (the speed loop's lag)
PROBE_LOOKAHEAD_MARGIN = 0.2


class BrakeTest:
    """The brake test of one controller (see the module doc); built by
    :class:`~mpc_tracking.mpc.grip_limits.GripLimits` when ``settings.grip_probe`` is on.

    Parameters
    ----------
    duration : float
        Longest test [s] (``settings.grip_probe_time``).
    initial : GripEstimate
        The estimator's estimate before any measurement.

    Attributes
    ----------
    armed : bool
        True until the test ran (or the estimate moved before it could).
    started : float or None
        Time [s] the running test began, None when none runs.
    done : tuple of (float, float) or None
        ``(start, end)`` [s] of the test this run, None before it.
    """

    def __init__(self, duration: float, initial: GripEstimate) -> None:
        self.duration = float(duration)
        self.reset(initial)

    def reset(self, initial: GripEstimate) -> None:
        """Arm the test again (a new run) with the estimator's ``initial`` estimate (what nothing has told yet)."""
        self.armed = True
        self.started: float | None = None
        self.done: tuple[float, float] | None = None
        self._initial = initial

    def _moved(self, est: GripEstimate) -> bool:
        """The estimate left its initial state: a slide, a braking reading, a friction read or a confirmation."""
        e0 = self._initial
        return (est.sliding or est.decel_held is not None
                or abs(est.mu_front - e0.mu_front) > 1e-9 * e0.mu_front
                or abs(est.mu_rear - e0.mu_rear) > 1e-9 * e0.mu_rear
                or est.sigma_front < 0.999 * e0.sigma_front or est.sigma_rear < 0.999 * e0.sigma_rear)

    def apply(self, mpc: Any, sol: Any, t: float, measured: Any, est: GripEstimate) -> None:
        """Run the test in this step when it is due: the first acceleration of the solved plan ``sol`` (an
        :class:`~mpc_tracking.mpc.settings.MPCSolution`) becomes ``-decel_max`` and its speed command follows, in
        place, and the controller's memory of the command sent with it."""
        if not self.armed and self.started is None:
            return
        moved = self._moved(est)
        if self.started is not None:
            if moved or t - self.started >= self.duration - 1e-9:
                self.done, self.started = (self.started, t), None
                logger.info("grip: brake test ended at t = %.2f s (%s)", t,
                            "the estimate moved" if moved else "no reading")
                return
        elif moved:  # the road told the estimate before a straight came: nothing to test
            self.armed = False
            return
        elif not self._due(mpc, sol, measured):
            return
        else:
            self.armed, self.started = False, t
            logger.info("grip: brake test at t = %.2f s, %.1f m/s (the grip is not confirmed yet)", t,
                        float(measured["v_x"]))
        model = mpc.model
        a = -mpc.settings.decel_max
        sol.u[0, model.I_ACCEL] = a
        if model.SPEED_IN_STATE:  # the plan's next speed after the test's braking over the first step
            j = model.I_SPEED
            sol.x[1, j] = math.sqrt(max(sol.x[0, j] ** 2 + 2.0 * a * float(sol.s[1] - sol.s[0]), 0.0))
        sol.v, sol.delta = model.command(sol.x, sol.u)
        mpc._u_prev = sol.u[0].copy()
        mpc._cmd_prev = np.array([sol.v, sol.delta])

    def _due(self, mpc: Any, sol: Any, measured: Any) -> bool:
        """The car at speed, its plan not braking and the path ahead straight."""
        if not sol.success or measured is None or "v_x" not in measured or mpc.model.I_ACCEL is None:
            return False
        v = float(measured["v_x"])
        if not (math.isfinite(v) and v >= PROBE_MIN_SPEED):
            return False
        if float(np.min(sol.u[:, mpc.model.I_ACCEL])) < -GRIP_BRAKE_MIN:
            return False
        st, path = mpc.settings, mpc.path
        s0 = float(sol.s[0])
        ahead = v * (self.duration + PROBE_LOOKAHEAD_MARGIN)
        s = s0 + np.arange(0.0, ahead + path.ds, path.ds)
        s = np.mod(s, path.length) if path.closed else np.minimum(s, path.length)
        kappa = np.interp(s, path.s, path.kappa)
        return bool(v * v * float(np.max(np.abs(kappa))) <= PROBE_LATERAL_SHARE * st.a_y_max)
