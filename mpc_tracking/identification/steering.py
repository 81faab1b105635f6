"""The steering's rate limit, measured through the car's response to two steering steps.

A plant's wheels need not follow the steering command at once: a servo with a rate limit
(CommonRoad's vehicle models turn the wheels at most 0.4 rad/s; their input is the steering *rate*),
a lag, or both. A controller that plans steering faster than the wheels can turn gets its
corrections late; at high speed the loop then rings and the car leaves the track. The rate limit is
a property of the car like its grip, so identification measures it and the vehicle file carries it
(``steering_rate_max``, which the controller's defaults turn into ``delta_rate_max``).

Measurement (no access to the plant's internals): at a low speed the car rolls without noticeable
slip, so its effective steering angle follows from the yaw rate and the rear axle's speed,
``delta_eff = atan(L r / v_x)``. Two steps from straight running, of amplitude ``A`` and ``A / 2``,
each normalised by its own final value; their 30-70 % rise times ``t_A`` and ``t_A/2``. A rate
limit turns a step into a ramp whose length grows with the amplitude; a lag (the servo's, the yaw
dynamics') has a rise time independent of it. So when ``t_A > RATE_RATIO t_A/2`` the steering is
rate limited, at the slope of the large step's ramp ``0.4 A / t_A`` (a lag after the rate limit
delays the ramp but keeps its slope), else it is not (``rate_max`` None) and the large step's
rise is reported as a first-order lag ``t_A / ln(7/3)``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mpc_tracking.errors import IdentificationError
from mpc_tracking.identification.manoeuvres import Recording

__all__ = ["SteeringFit", "fit_steering", "effective_steering", "rise_time", "RATE_RATIO"]

#: a large step rising this many times slower than the half step means a rate limit (a pure rate
#: limit gives 2, a pure lag 1)
RATE_RATIO = 1.5


@dataclass(frozen=True)
class SteeringFit:
    """What the steering steps showed.

    Attributes
    ----------
    rate_max : float or None
        Largest steering rate the wheels follow [rad/s]; None: not rate limited (the rise time does
        not grow with the amplitude).
    lag : float
        First-order time constant equivalent to the large step's rise, ``t_A / ln(7/3)`` [s].
    rise_large, rise_small : float
        30-70 % rise times of the steps of amplitude ``A`` and ``A / 2`` [s].
    amplitude : float
        ``A`` [rad].
    """

    rate_max: float | None
    lag: float
    rise_large: float
    rise_small: float
    amplitude: float


def effective_steering(rec: Recording, wheelbase: float) -> np.ndarray:
    """``atan(L r / v_x)`` [rad], shape (K,): the kinematic steering angle of the yaw rate ``r`` at the rear
    axle's speed ``v_x`` (exact for a car rolling without slip)."""
    return np.arctan(wheelbase * rec.r / np.maximum(rec.v_x, 1e-6))


def rise_time(t: np.ndarray, y: np.ndarray, t_step: float, lo: float = 0.3, hi: float = 0.7) -> float:
    """Time [s] a step response ``y(t)`` (shape (K,), normalised: 0 before, 1 at the end) takes from ``lo`` to
    ``hi``, after the step at ``t_step`` (crossings interpolated linearly between samples).

    >>> t = np.linspace(0.0, 2.0, 201)
    >>> round(rise_time(t, np.clip((t - 0.5) / 1.0, 0.0, 1.0), 0.5), 6)   # a ramp of 1 s
    0.4

    Raises
    ------
    IdentificationError
        The response never reaches ``hi`` after the step.
    """
    after = t >= t_step

    def crossing(level: float) -> float:
        idx = np.flatnonzero(after & (y >= level))
        if idx.size == 0:
            raise IdentificationError(f"steering step: the response never reached {100 * level:.0f} % of its end "
                                      f"value (largest {100 * float(np.max(y[after])):.0f} %)")
        i = int(idx[0])
        if i == 0 or not after[i - 1]:
            return float(t[i])
        return float(t[i - 1] + (level - y[i - 1]) / (y[i] - y[i - 1]) * (t[i] - t[i - 1]))

    return crossing(hi) - crossing(lo)


def _step_time(rec: Recording) -> float:
    moved = np.flatnonzero(rec.delta != 0.0)
    if moved.size == 0:
        raise IdentificationError(f"{rec.name}: the steering command never moved")
    return float(rec.t[int(moved[0])])


def _normalised_rise(rec: Recording, wheelbase: float) -> float:
    t_step = _step_time(rec)
    d = effective_steering(rec, wheelbase)
    tail = d[rec.t >= rec.t[-1] - 0.15 * (rec.t[-1] - t_step)]
    end = float(np.mean(tail))
    if not (math.isfinite(end) and abs(end) > 1e-6):
        raise IdentificationError(f"{rec.name}: the car did not turn (end yaw rate {float(rec.r[-1]):.3g} rad/s)")
    if float(np.ptp(tail)) > 0.05 * abs(end):
        raise IdentificationError(f"{rec.name}: the steering had not settled at the end of the step "
                                  f"(still changing by {100 * float(np.ptp(tail)) / abs(end):.0f} %)")
    y = d / end
    before = rec.t < t_step
    if before.any():  # the level of the straight running before the step is 0
        y = y - float(np.mean(y[before]))
    return rise_time(rec.t, y, t_step)


def fit_steering(large: Recording, small: Recording, amplitude: float, wheelbase: float) -> SteeringFit:
    """Rate limit and lag of the steering from two step responses.

    Parameters
    ----------
    large, small : Recording
        Steering steps of amplitude ``amplitude`` and ``amplitude / 2`` at the same low speed after
        straight running (the step is where the recorded steering command leaves 0).
    amplitude : float
        ``A`` [rad].
    wheelbase : float
        L [m].

    Returns
    -------
    SteeringFit

    Raises
    ------
    IdentificationError
        A response did not settle or never rose (the message names the step).
    """
    t_a = _normalised_rise(large, wheelbase)
    t_h = _normalised_rise(small, wheelbase)
    rate: float | None = None
    if t_a > RATE_RATIO * t_h:
        rate = 0.4 * abs(amplitude) / t_a
    return SteeringFit(rate, t_a / math.log(7.0 / 3.0), t_a, t_h, float(abs(amplitude)))
