"""Identification from a recorded drive: what the logged signals excite, with hold-out errors.

:func:`identify_from_log` fits, on the first part of a log (``fit_fraction``, default 70 %):

* the **speed loop** of the vehicle file (:mod:`mpc_tracking.identification.fit`'s model, the same
  ``simulate_speed``): ``v' = clip((v_cmd(t - d_v) - v) / tau, -decel_max, accel_max)`` -- the lag
  ``tau`` and a command delay ``d_v`` (grid over ``d_v``, least squares over ``tau``, then the limits);
  a limit counts as measured only when the fitted loop spends at least ``max(0.5 tau, 0.2 s)`` on it
  (otherwise ``inf``, named "not excited"), as in ``identify``; the acceleration limit may fall with
  speed as a **power limit**: ``v' <= min(accel_max, (P/m) / v)`` (``power_per_mass`` P/m [W/kg]),
  kept only when the loop spends that long on it *and* it lowers the fit's cost by a fifth (a
  constant limit fitted with a spurious power term does not);
* the **steering offset and delay**: the steering the car turned with, from a steering feedback
  signal when the log has one, else from the yaw rate and speed with the kinematic relation
  ``delta = atan(L r / v)`` (``wheelbase`` L needed; samples above ``v_min``), against the commanded
  angle: ``delta(t) = delta_cmd(t - d) + offset``;
* the **steering rate limit** ``steering_rate_max`` (from a steering feedback signal only: the yaw-rate
  angle lags the wheels through the car's own response): where the steering runs behind its delayed
  command by more than :data:`STEER_CATCH_UP` and moves towards it, a servo with a rate limit turns at
  one rate whatever the gap (a plateau of the rates), a lag at a rate proportional to it; a plateau
  holding at least :data:`RATE_PLATEAU` of those samples is the limit (their median rate), otherwise the
  steering is not rate limited up to the fastest rate it showed (``steering_rate_seen``).

and reports the RMS errors of both on the rest of the log (hold-out), beside those of the trivial
predictions (speed = command, steering = command). With a ``base`` vehicle (the geometry: mass,
CG position, ``I_z``) and a lateral velocity in the log it also fits

* the **axle stiffness and the grip peak** (``tyre_B_f``, ``tyre_B_r``, ``mu``;
  :mod:`mpc_tracking.logs.tyres`) where the drive excites them: slip for the stiffness, a tyre
  near its peak force for ``mu``.

What the drive does not excite is named, with why: a constant speed command (no lag), limits
never reached, no steering, no wheelbase, no slip, a peak never approached; what is not fitted is
taken from ``base`` (or assumed and named). A log in which nothing is excited raises
:class:`~mpc_tracking.errors.IdentificationError` saying so.

The fits, one module each: :mod:`~mpc_tracking.logs.identify.speed` (the speed loop),
:mod:`~mpc_tracking.logs.identify.steering` (offset, delay, rate limit) and
:mod:`~mpc_tracking.logs.identify.tyres` (the axles, through :mod:`mpc_tracking.logs.tyres`);
:mod:`~mpc_tracking.logs.identify.core` finds the signals and runs them,
:mod:`~mpc_tracking.logs.identify.result` holds what they measured (:class:`LogIdentification`).
"""
from __future__ import annotations

from mpc_tracking.logs.identify.core import SIGNALS, identify_from_log
from mpc_tracking.logs.identify.result import LogIdentification
from mpc_tracking.logs.identify.speed import V_POWER_FLOOR, simulate_speed_power
from mpc_tracking.logs.identify.steering import RATE_PLATEAU, STEER_CATCH_UP

__all__ = ["identify_from_log", "LogIdentification", "SIGNALS", "simulate_speed_power", "V_POWER_FLOOR",
           "STEER_CATCH_UP", "RATE_PLATEAU"]
