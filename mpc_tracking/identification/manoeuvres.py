"""Open-loop excitation manoeuvres on any plant, driven through its actuator like the closed loop.

A manoeuvre is a list of :class:`Segment` (speed command and steering angle as functions of the
time since the segment began, a fixed duration or an end condition with a time limit);
:func:`run_manoeuvre` places the plant at a start speed, calls
``u = actuator(t, dt, v_cmd, delta, plant)`` and ``plant.step(t, dt, u)`` every ``dt`` (the calls
:func:`mpc_tracking.simulate` makes) and records the body-frame velocities the closed loop measures:
``v_x``, ``v_y`` of the rear axle (the pose origin moved back by ``plant.reference_offset``) and the
yaw rate ``r``, with the commands.

Sizes scale with the car (:class:`Scale`): speeds with ``speed`` (default ``3.5 sqrt(g L)``, 18 m/s
for a 2.7 m sedan, 5.6 m/s for a 0.26 m RC car), times with the Froude time ``sqrt(L / g)``
(0.52 s and 0.16 s), the circle of the speed ramp with the speed (radius ``(1.1 V)² / g``, at least 3 L).
"""
from __future__ import annotations

import bisect
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mpc_tracking.errors import IdentificationError, MPCTrackingError, NonFiniteStateError

__all__ = [
    "Scale", "Recording", "Segment", "RampMonitor", "run_manoeuvre", "measure",
    "acceleration_run", "braking_run", "ramp_radius", "steady_state_ramp", "step_steer", "sine_sweep",
    "braking_in_turn", "steering_step", "top_speed_run",
]

logger = logging.getLogger(__name__)

#: fields of a :class:`Recording`, each an array of shape (K,)
RECORDED = ("t", "v_x", "v_y", "r", "v_cmd", "delta")


@dataclass(frozen=True)
class Scale:
    """How big and how fast the manoeuvres are.

    Attributes
    ----------
    wheelbase : float
        L [m].
    speed : float
        Reference speed V [m/s] (top of the acceleration run, start of the braking run).
    dt : float
        Step of the plant and of the recording [s].
    g : float
        Gravitational acceleration [m/s²].
    """

    wheelbase: float
    speed: float
    dt: float
    g: float = 9.81

    @property
    def tf(self) -> float:
        """Froude time ``sqrt(L / g)`` [s], the unit of every duration."""
        return math.sqrt(self.wheelbase / self.g)

    def steer_for(self, a_y: float, v: float) -> float:
        """Kinematic steering angle [rad] for lateral acceleration ``a_y`` [m/s²] at speed ``v`` [m/s]."""
        return math.atan(self.wheelbase * a_y / (v * v))


@dataclass
class Recording:
    """One manoeuvre's samples (all arrays of shape (K,), sampled every ``dt``).

    Attributes
    ----------
    name : str
        Manoeuvre name (``accel``, ``brake``, ``ramp``, ``step_steer_0.6``, ...).
    purpose : str
        ``"longitudinal"`` or ``"lateral"`` (used by the fits) or ``"holdout"`` (only for the report).
    t : ndarray
        Time [s].
    v_x, v_y : ndarray
        Body-frame longitudinal and lateral velocity of the rear axle [m/s] (as the closed loop measures).
    r : ndarray
        Yaw rate [rad/s].
    v_cmd, delta : ndarray
        Speed command [m/s] and steering command [rad] applied from ``t`` to ``t + dt``.
    note : str
        What ended the manoeuvre when it was not its own program (e.g. "spun").
    """

    name: str
    purpose: str
    t: np.ndarray
    v_x: np.ndarray
    v_y: np.ndarray
    r: np.ndarray
    v_cmd: np.ndarray
    delta: np.ndarray
    note: str = ""

    def __len__(self) -> int:
        return int(self.t.size)

    @property
    def dt(self) -> float:
        """Sample period [s]."""
        return float(self.t[1] - self.t[0]) if len(self) > 1 else 0.0

    def v_y_cg(self, l_r: float) -> np.ndarray:
        """Lateral velocity of the centre of gravity, ``l_r`` [m] ahead of the rear axle [m/s]."""
        return self.v_y + l_r * self.r

    def as_dict(self) -> dict[str, Any]:
        """Plain lists (for YAML/JSON)."""
        return {"name": self.name, "purpose": self.purpose, "note": self.note,
                **{k: getattr(self, k).tolist() for k in RECORDED}}


Value = Callable[[float], float] | float


@dataclass
class Segment:
    """One phase of a manoeuvre.

    Attributes
    ----------
    v_cmd, delta : float or callable
        Speed command [m/s] and steering angle [rad], constants or functions of the time since the
        segment began [s].
    duration : float, optional
        Fixed length [s].
    until : callable, optional
        ``until(tau, m) -> bool`` on the segment time and the measurement (:func:`measure`); the
        segment ends ``then`` seconds after it first holds.
    then : float
        Hold time after ``until`` [s].
    limit : float
        Longest time [s] ``until`` may take; beyond it :class:`IdentificationError`.
    waiting_for : str
        What ``until`` waits for (for the error message).
    stop_at_limit : bool
        At the time limit end the manoeuvre (noted in :attr:`Recording.note`) instead of raising.
    """

    v_cmd: Value
    delta: Value
    duration: float | None = None
    until: Callable[[float, dict[str, float]], bool] | None = None
    then: float = 0.0
    limit: float = math.inf
    waiting_for: str = ""
    stop_at_limit: bool = False

    def command(self, tau: float) -> tuple[float, float]:
        """(v_cmd, delta) at segment time ``tau``."""
        v = self.v_cmd(tau) if callable(self.v_cmd) else self.v_cmd
        d = self.delta(tau) if callable(self.delta) else self.delta
        return float(v), float(d)


def measure(plant: Any, offset: float) -> dict[str, float]:
    """Body-frame ``v_x``, ``v_y`` of the rear axle and ``r`` (the closed loop's ``_measure``), and ``speed``."""
    yaw = plant.pose.yaw
    vel = plant.velocity
    c, s = math.cos(yaw), math.sin(yaw)
    r = float(vel.angular[2])
    v_x = float(vel.linear[0] * c + vel.linear[1] * s)
    v_y = float(-vel.linear[0] * s + vel.linear[1] * c) - offset * r
    return {"v_x": v_x, "v_y": v_y, "r": r, "speed": float(plant.speed)}


def run_manoeuvre(plant: Any, actuator: Any, name: str, v0: float, segments: list[Segment], scale: Scale,
                  purpose: str, spin_limit: float = 0.35, stop_on_spin: bool = False) -> Recording:
    """Drive ``plant`` open loop through ``segments`` from straight running at ``v0`` [m/s].

    Parameters
    ----------
    plant : MotionModel
        Re-placed with ``plant.init({"speed": v0})`` (its parameters are kept).
    actuator : Actuator
        Maps ``(v_cmd, delta)`` to the plant's input; reset first.
    name, purpose : str
        See :class:`Recording`.
    v0 : float
        Start speed [m/s].
    segments : list of Segment
    scale : Scale
    spin_limit : float
        Largest rear-axle sideslip ``|atan(v_y / v_x)|`` [rad]; beyond it (or ``v_x <= 0``) the car
        has spun.
    stop_on_spin : bool
        End the recording at a spin (the speed ramp: a spin is how an oversteering car meets its
        limit) instead of raising.

    Returns
    -------
    Recording

    Raises
    ------
    IdentificationError
        The plant spun, became non-finite or rejected its input, or an end condition was not met
        within its time limit; the message names the manoeuvre and what was reached.
    """
    dt = scale.dt
    try:
        plant.init({"speed": float(v0)})
        actuator.reset(plant)
    except MPCTrackingError as exc:
        raise IdentificationError(f"{name}: the plant could not start at {v0:.2f} m/s: {exc}") from None
    offset = float(plant.reference_offset)
    rows: list[tuple[float, ...]] = []
    t, note = 0.0, ""
    seg_i, seg_t0, met_at = 0, 0.0, None
    while seg_i < len(segments):
        m = measure(plant, offset)
        if not all(math.isfinite(v) for v in m.values()):
            raise IdentificationError(f"{name}: the plant's velocities became non-finite at t = {t:.2f} s")
        slip = math.atan2(abs(m["v_y"]), m["v_x"])
        if slip > spin_limit:
            what = f"{name}: the car spun at t = {t:.2f} s (rear sideslip {math.degrees(slip):.0f} deg, " \
                   f"v_x = {m['v_x']:.2f} m/s)"
            if stop_on_spin:
                note = "spun"
                logger.info("%s; the manoeuvre ends there", what)
                break
            raise IdentificationError(what)
        seg = segments[seg_i]
        tau = t - seg_t0
        if seg.duration is not None:
            done = tau >= seg.duration - 1e-9
        else:
            if met_at is None and seg.until is not None and seg.until(tau, m):
                met_at = t
            if met_at is None and tau > seg.limit:
                if seg.stop_at_limit:
                    note = f"{seg.waiting_for or 'end condition'} not reached in {seg.limit:.1f} s " \
                           f"(v_x = {m['v_x']:.2f} m/s)"
                    logger.warning("%s: %s", name, note)
                    break
                raise IdentificationError(
                    f"{name}: {seg.waiting_for or 'end condition'} not reached in {seg.limit:.1f} s; reached "
                    f"v_x = {m['v_x']:.2f} m/s, yaw rate {m['r']:.3f} rad/s "
                    f"(speed command {seg.command(tau)[0]:.2f} m/s)")
            done = met_at is not None and t - met_at >= seg.then - 1e-9
        if done:
            seg_i, seg_t0, met_at = seg_i + 1, t, None
            continue
        v_cmd, delta = seg.command(tau)
        rows.append((t, m["v_x"], m["v_y"], m["r"], v_cmd, delta))
        try:
            u = actuator(t, dt, v_cmd, delta, plant)
            plant.step(t, dt, u)
        except NonFiniteStateError as exc:
            raise IdentificationError(f"{name}: the plant diverged at t = {t:.2f} s (v_x was {m['v_x']:.2f} m/s): "
                                      f"{exc}") from None
        except MPCTrackingError as exc:
            raise IdentificationError(f"{name}: the plant stopped at t = {t:.2f} s: {exc}") from None
        t += dt
    if len(rows) < 3:
        raise IdentificationError(f"{name}: fewer than 3 samples recorded")
    arr = np.array(rows, dtype=float)
    t_, vx, vy, r, vc, d = (arr[:, i] for i in range(arr.shape[1]))
    return Recording(name, purpose, t_, vx, vy, r, vc, d, note=note)


def _near(v: float, tol: float) -> Callable[[float, dict[str, float]], bool]:
    return lambda _tau, m: abs(m["v_x"] - v) <= tol


def _ramp_to(value: float, duration: float, start: float = 0.0) -> Callable[[float], float]:
    """start -> value linearly over ``duration`` [s], then held."""
    return lambda tau: start + (value - start) * min(1.0, tau / duration) if duration > 0 else value


def acceleration_run(scale: Scale, limit: float, stop_at_limit: bool = False) -> tuple[float, list[Segment]]:
    """Straight line: 0.2 V -> V (full-throttle step), hold; then small steps V -> 0.95 V -> V (the lag).

    Returns (start speed, segments); ``limit`` [s] is the time allowed to reach V (``stop_at_limit``:
    then the recording ends there, noted, instead of raising).
    """
    V, tf = scale.speed, scale.tf
    return 0.2 * V, [
        Segment(0.2 * V, 0.0, duration=2 * tf),
        Segment(V, 0.0, until=_near(V, 0.02 * V), then=6 * tf, limit=limit,
                waiting_for=f"the commanded speed {V:.2f} m/s", stop_at_limit=stop_at_limit),
        Segment(0.95 * V, 0.0, duration=6 * tf),
        Segment(V, 0.0, duration=6 * tf),
    ]


def top_speed_run(scale: Scale, v_top: float, limit: float) -> tuple[float, list[Segment]]:
    """Straight line: V -> ``v_top`` [m/s] (full-throttle step), hold: how the acceleration falls above V
    (a power limit). A plant that levels off below ``v_top`` ends the recording after ``limit`` [s] (noted)."""
    V, tf = scale.speed, scale.tf
    return V, [
        Segment(V, 0.0, duration=2 * tf),
        Segment(v_top, 0.0, until=_near(v_top, 0.02 * v_top), then=2 * tf, limit=limit,
                waiting_for=f"the commanded speed {v_top:.2f} m/s", stop_at_limit=True),
    ]


def braking_run(scale: Scale, limit: float) -> tuple[float, list[Segment]]:
    """Straight line: V -> 0.2 V (full-brake step), hold."""
    V, tf = scale.speed, scale.tf
    return V, [
        Segment(V, 0.0, duration=2 * tf),
        Segment(0.2 * V, 0.0, until=_near(0.2 * V, 0.02 * V), then=4 * tf, limit=limit,
                waiting_for=f"the commanded speed {0.2 * V:.2f} m/s"),
    ]


@dataclass
class RampMonitor:
    """End condition of the constant-steer speed ramp: the lateral limit, yaw divergence, or a cap.

    The lateral acceleration is measured properly, ``a_y = v_y' + v_x r`` at the centre of gravity
    (``v_y`` of the rear axle plus ``l_r r``; ``v_y'`` by differencing), not ``v_x r`` alone (which
    reads a spin-in, the yaw rate climbing, as grip). Both terms pass the same two first-order
    low-pass stages (time constant ``smooth`` [s]), so they stay in phase. A sample is *steady* while
    the sideslip changes slowly, ``|v_y'| <= 0.15 |a_y|`` (on a slow ramp ``v_y'`` is a few percent of ``a_y``).

    The ramp ends when

    * the car diverges in yaw: ``|v_y'|`` above that bound for ``0.3 smooth`` (the circle tightens
      and the sideslip grows faster than a steady state allows: an oversteering car at its limit);
    * ``a_y`` stopped growing with speed (less than 3 % over the last 12 % of speed; in the linear
      range it grows 25 %) or fell below 85 % of its peak (an understeering car running wide);
    * ``a_y`` reached ``cap`` (not saturated).

    :attr:`peak` is the largest *steady* ``a_y`` (the limit), :attr:`balance` the car's balance there:
    ``"oversteer"`` after a yaw divergence, else how the yaw rate's curvature ``r / v_x`` went over the
    last 12 % of speed before the end: ``"understeer"`` (the circle widened), ``"oversteer"`` (it
    tightened) or ``"neutral"`` (within 3 %).
    """

    dt: float
    smooth: float
    cap: float
    l_r: float = 0.0
    peak: float = 0.0
    saturated: bool = False
    reason: str = ""
    balance: str = ""
    _a: float | None = field(default=None, repr=False)
    _vy: float | None = field(default=None, repr=False)
    _vyd: float = field(default=0.0, repr=False)
    _vr: list = field(default_factory=list, repr=False)
    _unsteady: float = field(default=0.0, repr=False)
    _vmax: list = field(default_factory=list, repr=False)  # running maximum of the speed (sorted)
    _acc: list = field(default_factory=list, repr=False)
    _kappa: list = field(default_factory=list, repr=False)

    def __call__(self, tau: float, m: dict[str, float]) -> bool:
        k = min(1.0, self.dt / self.smooth)
        v, r = m["v_x"], m["r"]
        vy = m["v_y"] + self.l_r * r
        if self._vy is None:
            self._vy, self._vr = vy, [v * r, v * r]
        vy_prev = self._vy
        # both terms through the same two first-order stages (v_y', by differencing, between them): in phase
        self._vy += k * (vy - self._vy)
        self._vyd += k * ((self._vy - vy_prev) / self.dt - self._vyd)
        self._vr[0] += k * (v * r - self._vr[0])
        self._vr[1] += k * (self._vr[0] - self._vr[1])
        a = self._a = abs(self._vr[1] + self._vyd)
        steady = abs(self._vyd) <= 0.15 * max(a, 0.02 * self.cap)
        self._unsteady = 0.0 if steady else self._unsteady + self.dt
        if steady:
            self.peak = max(self.peak, a)
        self._vmax.append(max(v, self._vmax[-1]) if self._vmax else v)
        self._acc.append(a)
        self._kappa.append(abs(self._vr[1]) / max(v * v, 1e-9))  # the yaw rate's curvature r / v_x
        # a_y and the curvature when the speed was 12 % lower (the speed rises along the ramp)
        i = bisect.bisect_right(self._vmax, v / 1.12) - 1
        if self._unsteady >= 0.3 * self.smooth and self.peak > 0.2 * self.cap:
            return self._end(i, True, "yaw divergence: the sideslip grew faster than a steady state allows")
        if a >= self.cap and steady:
            return self._end(i, False, f"a_y reached the cap {self.cap:.2f} m/s^2 without saturating")
        if a < 0.85 * self.peak and self.peak > 0.2 * self.cap:
            return self._end(i, True, "a_y fell off its peak")
        if i >= 0 and self.peak > 0.05 * self.cap and a < 1.03 * self._acc[i] and steady:
            return self._end(i, True, "a_y stopped growing with speed")
        return False

    def _end(self, i: int, saturated: bool, reason: str) -> bool:
        self.saturated, self.reason = saturated, reason
        if reason.startswith("yaw divergence"):  # the yaw rate outran the path
            self.balance = "oversteer"
        elif i >= 0:
            change = self._kappa[-1] / max(self._kappa[i], 1e-12) - 1.0
            self.balance = "oversteer" if change > 0.03 else "understeer" if change < -0.03 else "neutral"
        return True


def ramp_radius(scale: Scale, mu_at: float = 1.0) -> float:
    """Radius [m] of the speed ramp's circle: ``max((1.1 V)² / (mu_at g), 3 L)`` (friction ``mu_at``
    saturates at 1.1 V; a plant whose top speed is 1.1 V is sized with ``mu_at = 2``)."""
    return max((1.1 * scale.speed) ** 2 / (mu_at * scale.g), 3.0 * scale.wheelbase)


def steady_state_ramp(scale: Scale, rate: float, cap: float, limit: float,
                      l_r: float = 0.0, radius: float | None = None) -> tuple[float, list[Segment], RampMonitor]:
    """Constant steer on a circle of radius ``radius`` [m] (default :func:`ramp_radius`: friction 1
    saturates at 1.1 V), speed command ramped at ``rate`` [m/s²] from 0.3 V until the lateral acceleration
    saturates (:class:`RampMonitor`, ``cap`` [m/s²]); a plant whose speed stops rising first ends the ramp
    unsaturated (noted) after ``limit`` seconds. ``l_r`` [m]: rear axle to CG (for the CG's ``a_y``)."""
    V, tf = scale.speed, scale.tf
    delta = math.atan(scale.wheelbase / (ramp_radius(scale) if radius is None else radius))
    v0 = 0.3 * V
    mon = RampMonitor(scale.dt, 0.5 * tf, cap, l_r)
    return v0, [
        Segment(v0, _ramp_to(delta, 2 * tf), duration=4 * tf),
        Segment(lambda tau: v0 + rate * tau, delta, until=mon, limit=limit,
                waiting_for=f"saturated lateral acceleration (or {cap:.1f} m/s^2)", stop_at_limit=True),
    ], mon


def step_steer(scale: Scale, v: float, delta: float) -> tuple[float, list[Segment]]:
    """At speed ``v`` [m/s]: straight, steer to ``delta`` [rad] in 0.25 sqrt(L/g), hold, steer back, hold."""
    tf = scale.tf
    return v, [
        Segment(v, 0.0, duration=2 * tf),
        Segment(v, _ramp_to(delta, 0.25 * tf), duration=8 * tf),
        Segment(v, _ramp_to(0.0, 0.25 * tf, delta), duration=5 * tf),
    ]


def sine_sweep(scale: Scale, v: float, amplitude: float, f0: float = 0.05, f1: float = 0.6,
               duration: float = 24.0) -> tuple[float, list[Segment]]:
    """At speed ``v``: steering ``amplitude sin(phase)``, frequency swept linearly from ``f0 / sqrt(L/g)``
    to ``f1 / sqrt(L/g)`` [Hz] over ``duration sqrt(L/g)`` seconds."""
    tf = scale.tf
    T, fa, fb = duration * tf, f0 / tf, f1 / tf

    def steer(tau: float) -> float:
        return amplitude * math.sin(2 * math.pi * (fa * tau + 0.5 * (fb - fa) * tau * tau / T))

    return v, [Segment(v, 0.0, duration=2 * tf), Segment(v, steer, duration=T), Segment(v, 0.0, duration=2 * tf)]


def braking_in_turn(scale: Scale, v: float, delta: float, limit: float) -> tuple[float, list[Segment]]:
    """At speed ``v``: steer to ``delta``, hold, then brake to 0.4 v with the steering held."""
    tf = scale.tf
    return v, [
        Segment(v, 0.0, duration=2 * tf),
        Segment(v, _ramp_to(delta, tf), duration=5 * tf),
        Segment(0.4 * v, delta, until=_near(0.4 * v, 0.05 * v), then=2 * tf, limit=limit,
                waiting_for=f"the commanded speed {0.4 * v:.2f} m/s"),
    ]


def steering_step(scale: Scale, v: float, delta: float) -> tuple[float, list[Segment]]:
    """At speed ``v`` [m/s]: straight for 2 sqrt(L/g), then the steering command jumps to ``delta`` [rad]
    and is held for 12 sqrt(L/g) (the steering's own response shows: :mod:`~mpc_tracking.identification.steering`)."""
    tf = scale.tf
    return v, [Segment(v, 0.0, duration=2 * tf), Segment(v, delta, duration=12 * tf)]
