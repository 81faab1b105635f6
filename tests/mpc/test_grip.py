"""Online grip estimation (issue 21, items 2-3): the estimator on analytic measurements, the limits it scales.

The measurements are built from the single-track balance the estimator inverts: a steady turn (``v_y``, ``r``
constant) at lateral acceleration ``a_y`` loads the front axle with ``m a_y l_r / L`` on ``m g l_r / L``, so an
axle at its peak shows exactly ``a_y / (D g)``.
"""
from __future__ import annotations

import logging
import math

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import SettingsError
from mpc_tracking.models.prediction import DynamicPrediction
from mpc_tracking.models.prediction import spatial_dynamic as sd
from mpc_tracking.mpc import grip
from mpc_tracking.mpc.grip import GripConfig, GripEstimator, axle_force, magic_formula, saturation_slip
from mpc_tracking.mpc.reference import path_speed_ceilings

T = 0.05  # control period [s]
V = 20.0  # speed [m/s]


@pytest.fixture(scope="module")
def params() -> sd.DynamicParams:
    return sd.DynamicParams.bmw_320i()


def _turn(est: GripEstimator, a_y: float, alpha_f: float, steps: int, t0: float = 0.0) -> grip.GripEstimate:
    """``steps`` samples of a steady turn at ``a_y`` [m/s^2] with front slip ``alpha_f`` [rad], the CG moving
    along the body axis (v_y of the CG 0, so a_x = 0 and the loads are static)."""
    r = a_y / V
    p = est.params
    v_y_rear = -p.l_r * r  # the CG's v_y is 0
    delta = alpha_f + math.atan(p.l_f * r / V)
    e = est.estimate
    for k in range(steps):
        e = est.update(t0 + k * T, {"v_x": V, "v_y": v_y_rear, "r": r}, delta)
    return e


def _straight(est: GripEstimator, seconds: float) -> grip.GripEstimate:
    e = est.estimate
    for k in range(round(seconds / T)):
        e = est.update(k * T, {"v_x": V, "v_y": 0.0, "r": 0.0}, 0.0)
    return e


def test_slide_on_a_wet_road_reads_the_friction(params):
    """Turning at the peak of a mu 0.6 road (the model built for 1.0, the slip far past the peak): the front axle
    slides, and the estimate is the friction it shows, a_y / (D g), from the first step of the slide (a drop of at
    most GRIP_MAX_DROP: 0.5 lets 1.0 -> 0.6 through at once; at 0.25 the first step stopped at 0.75)."""
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    mu_true = 0.6
    a_y = mu_true * params.tyre_D_f * params.g
    alpha = 2.0 * saturation_slip((params.tyre_B_f, params.tyre_C_f, params.tyre_E_f))
    e = _turn(est, a_y, alpha, steps=2)  # one sample past the curve: not yet a slide
    assert not e.sliding and e.mu_front == params.mu
    e = _turn(est, a_y, alpha, steps=1, t0=2 * T)  # the second: a slide
    assert e.sliding
    assert e.mu_front == pytest.approx(max(mu_true, (1.0 - grip.GRIP_MAX_DROP) * params.mu))
    assert e.mu_front == pytest.approx(mu_true, rel=1e-9)  # the reading at once: a 40 % drop is within the cap
    e = _turn(est, a_y, alpha, steps=4, t0=1.0)
    assert e.mu_front == pytest.approx(mu_true, rel=1e-9)
    sigma = grip.GRIP_SIGMA_SLIDE * mu_true  # a slide's reading keeps its uncertainty
    assert e.mu == e.mu_front and e.sigma_front == pytest.approx(sigma)
    assert e.plan_ratio() == pytest.approx((mu_true - sigma) / params.mu)


def test_force_deficit_is_noticed_before_the_slip_passes_the_dry_peak(params):
    """At 0.8 of the dry saturation slip a dry tyre gives its curve's force; showing 0.2 D F_z less than that is
    the residual of a slipperier road: sliding, the estimate drops; the same slip with the curve's force does not."""
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    alpha = 0.8 * saturation_slip(shape)
    phi = magic_formula(alpha, *shape)  # F / (D mu F_z) on the model's road
    dry = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    e = _turn(dry, phi * params.mu * params.tyre_D_f * params.g, alpha, steps=3)
    assert not e.sliding and e.mu_front == pytest.approx(params.mu)
    wet = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    e = _turn(wet, (phi - 0.2) * params.mu * params.tyre_D_f * params.g, alpha, steps=3)  # two samples
    assert e.sliding and e.mu_front < params.mu


def test_a_model_error_short_of_the_force_deficit_is_not_a_slide(params):
    """The identified tyre curve misses a real car's axle force by some percent of D F_z (the dry sedan at 0.95 of
    its limits: 10-15 % around 0.6 of the saturation slip): a deficit below GRIP_FORCE_DEFICIT held for many
    samples keeps the estimate; just above it, the same slip is a slide."""
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    alpha = 0.6 * saturation_slip(shape)
    curve = magic_formula(alpha, *shape) * params.mu  # F / (D F_z) of the curve at the estimate
    for deficit, slides in ((grip.GRIP_FORCE_DEFICIT - 0.02, False), (grip.GRIP_FORCE_DEFICIT + 0.02, True)):
        est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
        e = _turn(est, (curve - deficit) * params.tyre_D_f * params.g, alpha, steps=10)
        assert (e.mu_front < params.mu) is slides, deficit  # after the drop the curve at the estimate fits
        if not slides:
            assert not e.sliding and e.mu_front == params.mu
    assert grip.GRIP_FORCE_DEFICIT > 0.13  # the dry sedan's 10-15 % is not a slide


def _braking_turn(est: GripEstimator, a_x: float, a_y: float, alpha_f: float, steps: int,
                  v0: float = 30.0) -> tuple[bool, grip.GripEstimate]:
    """``steps`` samples of a turn while braking at ``a_x`` < 0 [m/s^2]: the speed falls linearly, the CG moves
    along the body axis at a constant yaw rate (the lateral acceleration ``v_x r`` is ``a_y`` at ``v0``, no yaw
    acceleration), the steering gives the front slip ``alpha_f`` [rad] at each sample's midpoint. Returns
    whether any step was flagged sliding, and the last estimate."""
    p = est.params
    r = a_y / v0
    flags = []
    for k in range(steps):
        v = v0 + a_x * k * T
        v_mid = v - 0.5 * a_x * T
        e = est.update(k * T, {"v_x": v, "v_y": -p.l_r * r, "r": r}, alpha_f + math.atan(p.l_f * r / v_mid))
        flags.append(e.sliding)
    return any(flags), est.estimate


def _straight_line(est: GripEstimator, a_x: float, a_x_cmd: float, steps: int,
                      v0: float = 25.0) -> list[grip.GripEstimate]:
    """``steps`` samples on a straight at the acceleration ``a_x`` [m/s^2] (braking: negative; the speed changes
    linearly) while the plan commands ``a_x_cmd``; the estimate after each."""
    return [est.update(k * T, {"v_x": v0 + a_x * k * T, "v_y": 0.0, "r": 0.0}, 0.0, a_x_cmd)
            for k in range(steps)]


def test_braking_short_of_the_command_reads_the_friction(params):
    """On a straight, the plan commands 6.5 m/s^2 of braking and the car decelerates at 4.8 only (a mu 0.5 patch:
    no slip angle tells): after GRIP_SUSTAIN_SAMPLES samples short of the command the car slides, the estimate is
    the grip the whole car shows, |a_x| / (D g) (linear units; D = 1), and the plan may brake as hard as the car
    did (decel_held)."""
    assert params.tyre_D_f == params.tyre_D_r == 1.0
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    a_x = -4.8
    es = _straight_line(est, a_x, -6.5, steps=1 + grip.GRIP_SUSTAIN_SAMPLES + 3)
    # the first sample has no predecessor; then GRIP_SUSTAIN_SAMPLES - 1 samples short are not yet a slide
    assert not any(e.sliding for e in es[:grip.GRIP_SUSTAIN_SAMPLES])
    assert es[grip.GRIP_SUSTAIN_SAMPLES].sliding
    e = es[-1]
    assert e.mu_front == pytest.approx(-a_x / params.g, rel=1e-6)
    assert e.mu_rear == pytest.approx(-a_x / params.g, rel=1e-6)
    assert e.decel_held == pytest.approx(-a_x, rel=1e-9)


@pytest.mark.parametrize("a_x, a_x_cmd", [(-6.3, -6.5), (-0.4, -0.9), (-1.0, None), (-0.5, -4.0)])
def test_braking_as_commanded_or_gently_is_no_reading(params, a_x, a_x_cmd):
    """Decelerating within GRIP_BRAKE_SHORT of the command (the speed loop's own lag), a command gentler than
    GRIP_BRAKE_MIN, no command known, or the car itself decelerating less than GRIP_BRAKE_MIN: the estimate
    holds."""
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    es = _straight_line(est, a_x, a_x_cmd, steps=12)
    assert not any(e.sliding for e in es)
    assert es[-1].mu == params.mu and es[-1].decel_held is None


def test_the_actuator_catching_up_with_a_braking_command_is_no_reading(params):
    """The command switches from accelerating to braking at 3.5 m/s^2; the car's deceleration follows within a few
    samples (each short of the command by more than GRIP_BRAKE_SHORT, but not steady: GRIP_BRAKE_STEADY) and then
    holds the command: no slide (the rain on gen3_1 of seed 3 read this as a mu 0.24 road)."""
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    v, es = 30.0, []
    for k, a in enumerate((2.5, 2.5, 1.5, 0.6, -1.2, -1.6, -2.0, -2.4, -2.8, -3.2, -3.4, -3.4, -3.4)):
        es.append(est.update(k * T, {"v_x": v, "v_y": 0.0, "r": 0.0}, 0.0, 2.5 if k < 2 else -3.5))
        v += a * T
    assert not any(e.sliding for e in es) and es[-1].mu == params.mu


def test_braking_short_at_the_planned_grip_keeps_the_limits(params):
    """Short of the command while the car holds what the limits as set ask for (grip_fraction of the reference):
    brakes or a command beyond the car, not a slipperier road -- the estimate holds."""
    ref, nominal = 0.8, 0.9
    est = GripEstimator(params, GripConfig(mu_nominal=nominal, mu_reference=ref, grip_fraction=0.95))
    es = _straight_line(est, -0.96 * ref * params.g, -9.5, steps=10)
    assert not any(e.sliding for e in es) and es[-1].mu == pytest.approx(nominal)
    est = GripEstimator(params, GripConfig(mu_nominal=nominal, mu_reference=ref, grip_fraction=0.95))
    es = _straight_line(est, -0.6 * ref * params.g, -9.5, steps=10)
    assert es[-1].mu == pytest.approx(0.6 * nominal, rel=1e-6)


def test_a_braking_reading_is_dropped_once_the_car_shows_more_grip(params):
    """The braking reading's deceleration stands while the estimate does; a turn showing more grip than it (the
    car left the patch) raises the estimate and drops it."""
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    e = _straight_line(est, -4.8, -6.5, steps=8)[-1]
    assert e.decel_held == pytest.approx(4.8)
    e = _turn(est, 0.8 * params.tyre_D_f * params.g, 0.3 * saturation_slip((params.tyre_B_f, params.tyre_C_f,
                                                                               params.tyre_E_f)), steps=6, t0=1.0)
    assert e.mu_front > 0.75 and e.decel_held is None


def _front_load(p: sd.DynamicParams, a_x: float) -> float:
    """D F_z of the front axle [N] with the longitudinal load transfer of ``a_x``."""
    return p.tyre_D_f * p.mass * (p.g * p.l_r - a_x * p.h_cg) / (p.l_f + p.l_r)


def test_braking_is_not_a_slide_whatever_the_brake_balance(params):
    """Turning while braking at 6 m/s^2, the front axle shows the force of its curve when it carries all the
    braking (0.05 D F_z below it), far below the curve of the split by the loads (more than GRIP_FORCE_DEFICIT
    short of it): the brake balance is not known, so this is not a slide (the dry sedan's trail braking read
    like this and lowered its limits by 12 %)."""
    p = params
    shape = (p.tyre_B_f, p.tyre_C_f, p.tyre_E_f)
    a_x, alpha = -6.0, 0.7 * saturation_slip(shape)
    d_fz = _front_load(p, a_x)
    fz_r = p.mass * p.g - d_fz / p.tyre_D_f
    f_x_split = p.mass * a_x * (d_fz / p.tyre_D_f) / (p.mass * p.g)
    curve_all = axle_force(alpha, shape, grip.lateral_peak(p.mu, d_fz, p.mass * a_x), p.mu * d_fz)
    curve_split = axle_force(alpha, shape, grip.lateral_peak(p.mu, d_fz, f_x_split), p.mu * d_fz)
    f_y = curve_all - 0.05 * d_fz
    assert curve_split - f_y > grip.GRIP_FORCE_DEFICIT * d_fz + 0.1 * d_fz  # the load split would read a slide
    a_y = f_y * (p.l_f + p.l_r) / (p.mass * p.l_r)
    assert fz_r > 0 and math.hypot(a_x, a_y) < 0.9 * p.mu * p.g  # not at the car's limit: no other rule holds it
    slid, e = _braking_turn(GripEstimator(p, GripConfig(mu_nominal=p.mu)), a_x, a_y, alpha, steps=8)
    assert not slid and e.mu_front == p.mu


def test_a_braking_slide_reads_at_least_the_cars_grip(params):
    """The front tyre far past its curve while braking at 4 m/s^2 and turning at 5 m/s^2: a slide. Its axle's
    grip by the load split (0.60) is less than what the whole car holds, |a| / g = 0.65, a lower bound of the
    road's friction whatever the split: the estimate drops to the car's grip, not below."""
    p = params
    shape = (p.tyre_B_f, p.tyre_C_f, p.tyre_E_f)
    a_x, a_y = -4.0, 5.0
    est = GripEstimator(p, GripConfig(mu_nominal=p.mu))
    slid, e = _braking_turn(est, a_x, a_y, 3.0 * saturation_slip(shape), steps=6)
    d_fz = _front_load(p, a_x)
    axle = math.hypot(p.mass * a_y * p.l_r / (p.l_f + p.l_r), p.mass * a_x * d_fz / (p.tyre_D_f * p.mass * p.g))
    car = math.hypot(a_x, a_y) / p.g  # D = 1 on both axles
    assert axle / d_fz < 0.93 * car
    assert slid and e.mu_front == pytest.approx(car, rel=0.03)


def _axle_loads(p: sd.DynamicParams, a_x: float) -> tuple[float, float]:
    """The axles' normal loads [N] with the longitudinal load transfer of ``a_x``."""
    L = p.l_f + p.l_r
    return p.mass * (p.g * p.l_r - a_x * p.h_cg) / L, p.mass * (p.g * p.l_f + a_x * p.h_cg) / L


def _confirmed(est: GripEstimator) -> GripEstimator:
    """``est`` after a corner confirmed the grip the limits stand for (a turn at 0.8 g, 0.3 of the saturation
    slip), its last sample forgotten (the samples that follow start afresh)."""
    p = est.params
    _turn(est, 0.8 * p.mu * p.g, 0.3 * saturation_slip((p.tyre_B_f, p.tyre_C_f, p.tyre_E_f)), steps=6, t0=-1.0)
    assert est._confirmed and est.estimate.mu == pytest.approx(est.config.mu_nominal)
    est._last = None
    return est


def test_accelerating_short_before_any_grip_was_confirmed_is_no_reading(params):
    """A run that starts on a road the car has not confirmed: the traction control holds the driven wheels below
    their peak and the reading would come 10-20 % low -- left to the brake test and the first corner."""
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu, drive="rwd"))
    es = _straight_line(est, 2.7, 3.2, steps=12)
    assert not any(e.sliding for e in es) and es[-1].mu == params.mu
    es = _straight_line(_confirmed(GripEstimator(params, GripConfig(mu_nominal=params.mu, drive="rwd"))), 2.7,
                           3.2, steps=12)
    assert es[-1].mu_rear < 0.7


@pytest.mark.parametrize("drive", ["rwd", "fwd", "awd", "unknown"])
def test_accelerating_short_of_the_command_reads_the_driven_axle(params, drive):
    """On a straight the plan commands 3.2 m/s^2 and the car accelerates at 2.7 only (rain: its driven wheels spin
    at their peak; no slip angle tells): after GRIP_DRIVE_SAMPLES samples the driven axle reads the grip it
    shows carrying all of m a_x; the other axle keeps its estimate (awd: both read the whole car's grip; unknown:
    both read as if each drove -- the plan's weaker axle is never above the driven one)."""
    a_x = 2.7
    est = _confirmed(GripEstimator(params, GripConfig(mu_nominal=params.mu, drive=drive)))
    es = _straight_line(est, a_x, 3.2, steps=1 + grip.GRIP_DRIVE_SAMPLES + 3)
    assert not any(e.sliding for e in es[:grip.GRIP_DRIVE_SAMPLES])
    assert es[grip.GRIP_DRIVE_SAMPLES].sliding
    fz_f, fz_r = _axle_loads(params, a_x)
    m_a = params.mass * a_x
    shown = {"front": m_a / (params.tyre_D_f * fz_f), "rear": m_a / (params.tyre_D_r * fz_r)}
    e = es[-1]
    if drive == "awd":
        car = a_x / params.g  # D = 1 on both axles
        assert e.mu_front == pytest.approx(car, rel=1e-6) and e.mu_rear == pytest.approx(car, rel=1e-6)
        return
    driven = {"rwd": ["rear"], "fwd": ["front"], "unknown": ["front", "rear"]}[drive]
    for axle in ("front", "rear"):
        got = getattr(e, f"mu_{axle}")
        assert got == pytest.approx(shown[axle] if axle in driven else params.mu, rel=1e-6)
    assert e.mu <= shown[driven[0]] + 1e-12


def test_a_reading_through_the_traction_control_is_probed_up_to_its_ceiling_in_corners(params):
    """A traction control holds the driven wheels below their peak (the 3D car's at 0.9 of the road's): the reading
    is a lower bound, the road at most the reading over GRIP_SLIP_CONTROL_SHARE. The estimate drops to the reading
    at once; on the straight it holds; in a corner where the axle shows the estimate without sliding it rises at
    GRIP_PROBE_RATE of the reference per second up to that ceiling (then at the usual recovery rate)."""
    est = _confirmed(GripEstimator(params, GripConfig(mu_nominal=params.mu, drive="rwd")))
    es = _straight_line(est, 2.7, 3.2, steps=1 + grip.GRIP_DRIVE_SAMPLES + 3)
    read = es[-1].mu_rear
    assert read < 0.7 and est._axles[1].ceiling == pytest.approx(read / grip.GRIP_SLIP_CONTROL_SHARE, rel=1e-12)
    assert est._axles[0].ceiling is None  # the front (undriven) axle kept its estimate
    e = _straight(est, 2.0)
    assert e.mu_rear == read  # no probing on a straight
    est._last = None
    shape = (params.tyre_B_r, params.tyre_C_r, params.tyre_E_r)
    steps = 12
    e = _turn(est, 0.9 * read * params.tyre_D_r * params.g, 0.05 * saturation_slip(shape), steps=steps, t0=10.0)
    assert not e.sliding
    rate = grip.GRIP_PROBE_RATE * est._ref[1]
    # the grip shown counts once held over GRIP_SUSTAIN_SAMPLES samples (the first only starts the turn)
    assert e.mu_rear == pytest.approx(read + rate * (steps - grip.GRIP_SUSTAIN_SAMPLES) * T, rel=1e-9)
    e = _turn(est, 0.9 * read * params.tyre_D_r * params.g, 0.05 * saturation_slip(shape), steps=200, t0=20.0)
    ceiling = read / grip.GRIP_SLIP_CONTROL_SHARE
    assert ceiling < e.mu_rear < ceiling + 0.05 and est._axles[1].ceiling is None  # then the slow recovery


def test_a_slide_in_the_corner_ends_the_probe(params):
    """Probing after a traction reading (drive unknown: both axles read it), the front axle slides in the corner:
    the slide reads the road and its ceiling is gone (no probing above what the slide showed)."""
    est = _confirmed(GripEstimator(params, GripConfig(mu_nominal=params.mu, drive="unknown")))
    _straight_line(est, 2.7, 3.2, steps=1 + grip.GRIP_DRIVE_SAMPLES + 3)
    assert all(axle.ceiling is not None for axle in est._axles)
    est._last = None
    a_y = 0.55 * params.tyre_D_f * params.g
    slides, e = _slid(est, a_y, 3.0 * saturation_slip((params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)), 6)
    assert slides and est._axles[0].ceiling is None and e.mu_front < 0.6


def test_a_first_slide_off_a_confirmed_reference_is_probed_back_and_a_second_reads_the_road(params):
    """A tyre's first slide off the reference on an axle that has confirmed it in this run (shown 0.75 of it
    without sliding; the tall SUV's front axle at turn-in at 36 m/s, on a dry road) lowers the estimate at once; on a straight it holds; in the corners after it the axle,
    showing the lowered estimate without sliding, raises it at GRIP_PROBE_RATE of the reference per second back to
    the estimate the slide broke (before: GRIP_RECOVERY_RATE, the rest of the lap at 0.76 of the limits). A new slide
    (GRIP_SLIDE_MEMORY after the last) reads the road and ends the probe; an axle that has not shown that grip (the
    dry file on a wet road from the start) does not probe."""
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    alpha_slide = 3.0 * saturation_slip(shape)
    # the axle has shown 0.8 of the reference without sliding (_confirmed)
    est = _confirmed(GripEstimator(params, GripConfig(mu_nominal=params.mu)))
    slid, e = _slid(est, 0.6 * params.tyre_D_f * params.g, alpha_slide, steps=4)
    assert slid and e.mu_front == pytest.approx(0.6, rel=1e-9) and est._axles[0].probe_to == params.mu
    assert est._axles[0].ceiling is None and not e.lower_bound  # a slide, not a lower bound: braking scales too
    est._last = None
    assert _straight(est, 2.0).mu_front == pytest.approx(0.6, rel=1e-9)  # no probing on a straight
    est._last = None
    steps, a_y = 12, 0.55 * params.tyre_D_f * params.g
    e = _turn(est, a_y, 0.05 * saturation_slip(shape), steps=steps, t0=10.0)
    rate = grip.GRIP_PROBE_RATE * est._ref[0]
    assert not e.sliding
    assert e.mu_front == pytest.approx(0.6 + rate * (steps - grip.GRIP_SUSTAIN_SAMPLES) * T, rel=1e-9)
    est._last = None  # the car corners harder as the limits rise (at least GRIP_CONFIRM_SHARE of the estimate)
    e = _turn(est, 0.8 * params.mu * params.tyre_D_f * params.g, 0.05 * saturation_slip(shape), steps=100, t0=20.0)
    assert e.mu_front == pytest.approx(params.mu, rel=1e-9) and est._axles[0].probe_to is None  # back, probe done
    # the second slide off the confirmed estimate (the road is wet after all) probes again; a slide during that
    # probe reads the road and ends it
    est._last = None
    _slid(est, 0.6 * params.tyre_D_f * params.g, alpha_slide, steps=4)
    est._last = None
    e = _turn(est, a_y, 0.05 * saturation_slip(shape), steps=steps, t0=40.0)
    assert e.mu_front > 0.6 and est._axles[0].probe_to == params.mu
    _turn(est, 0.6 * params.tyre_D_f * params.g, 0.05 * saturation_slip(shape), steps=3, t0=40.0 + steps * T)
    est._last = None
    slid, e = _slid(est, 0.6 * params.tyre_D_f * params.g, alpha_slide, steps=4)
    assert slid and e.mu_front == pytest.approx(0.6, rel=1e-9) and est._axles[0].probe_to is None
    est._last = None
    e = _turn(est, a_y, 0.05 * saturation_slip(shape), steps=steps, t0=60.0)
    assert 0.6 < e.mu_front <= 0.6 + grip.GRIP_RECOVERY_RATE * steps * T + 1e-12  # the slow recovery only
    # no grip shown yet (the dry file on a wet road), or less than GRIP_CONFIRM_SHARE of the reference (0.7):
    # no probe
    p = params
    for shown in (None, 0.7):
        fresh = GripEstimator(p, GripConfig(mu_nominal=p.mu))
        if shown is not None:
            _turn(fresh, shown * p.mu * p.g, 0.3 * saturation_slip(shape), steps=6, t0=-1.0)
            assert not fresh.estimate.sliding and fresh._axles[0].shown_best == pytest.approx(shown * p.mu)
            fresh._last = None
        slid, e = _slid(fresh, 0.6 * p.tyre_D_f * p.g, alpha_slide, steps=4)
        assert slid and e.mu_front == pytest.approx(0.6, rel=1e-9) and fresh._axles[0].probe_to is None


def test_a_reading_of_the_road_replaces_a_lower_bound(params):
    """After a traction reading (a lower bound, 0.51 on a 0.6 road through the traction control) the car brakes
    short of the command, read against its own braking limit (the road itself): the estimate becomes that reading
    even though it is higher, and the probe's ceiling is gone."""
    cfg = _brake_config(drive="rwd")
    est = _confirmed(GripEstimator(params, cfg))
    _straight_line(est, 2.7, 3.2, steps=1 + grip.GRIP_DRIVE_SAMPLES + 3)
    low = est.estimate.mu_rear
    assert est._axles[1].ceiling is not None
    est._last = None
    road = 0.6
    a_x = -road / cfg.mu_nominal * cfg.brake_reference * params.g  # the car's limit on that road
    es = _straight_line(est, a_x, -7.5, steps=6)
    e = es[-1]
    assert e.mu_rear > low and e.mu_rear == pytest.approx(road, rel=0.03) and est._axles[1].ceiling is None


def test_a_braking_reading_through_the_abs_is_a_lower_bound_without_a_braking_limit(params):
    """Braking short of the command, read against the tyre peak (no ``brake_reference``): the ABS held the wheels
    below it, so the reading is a lower bound with a ceiling; read against the car's braking limit it is not."""
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    _straight_line(est, -4.0, -6.0, steps=5)
    assert est.estimate.sliding or est.estimate.mu < params.mu
    assert all(axle.ceiling is not None for axle in est._axles)
    est = GripEstimator(params, _brake_config())
    _straight_line(est, -4.0, -6.0, steps=5)
    assert est.estimate.mu < est.config.mu_nominal and all(axle.ceiling is None for axle in est._axles)


@pytest.mark.parametrize("a_x, a_x_cmd", [(2.9, 3.0), (2.0, 2.25), (0.5, 0.9), (2.0, None), (0.6, 3.0)])
def test_accelerating_as_commanded_or_gently_is_no_reading(params, a_x, a_x_cmd):
    """Within GRIP_DRIVE_SHORT of the command (the dry sedan: 0.105 m/s^2 at most), a command gentler than
    GRIP_BRAKE_MIN, no command known, or the car itself accelerating less than that: the estimate holds."""
    est = _confirmed(GripEstimator(params, GripConfig(mu_nominal=params.mu, drive="rwd")))
    es = _straight_line(est, a_x, a_x_cmd, steps=12)
    assert not any(e.sliding for e in es) and es[-1].mu == params.mu


def test_accelerating_short_in_a_corner_is_no_reading(params):
    """Leaving a tight corner at 10 m/s with 5.4 m/s^2 laterally, the car accelerates at 1.24 against a command of
    1.68 (the tyres' slip angles drag it; the dry sedan out of Monza's chicanes): not on a straight
    (GRIP_DRIVE_LATERAL), no reading. The same shortfall on a straight reads the rear axle."""
    p = params
    sat_f = saturation_slip((p.tyre_B_f, p.tyre_C_f, p.tyre_E_f))
    sat_r = saturation_slip((p.tyre_B_r, p.tyre_C_r, p.tyre_E_r))

    def run(a_y: float) -> grip.GripEstimate:
        est = _confirmed(GripEstimator(p, GripConfig(mu_nominal=0.9, mu_reference=0.8, grip_fraction=0.9,
                                                     drive="rwd")))
        v, e = 10.0, est.estimate
        for k in range(10):
            r = a_y / v
            v_y_rear = -math.tan(0.3 * sat_r) * v if a_y else 0.0  # both axles at 0.3 of their saturation slip
            delta = 0.3 * sat_f + math.atan((v_y_rear + (p.l_r + p.l_f) * r) / v) if a_y else 0.0
            e = est.update(k * T, {"v_x": v, "v_y": v_y_rear, "r": r}, delta, 1.68)
            v += 1.24 * T
        return e

    assert not run(5.4).sliding and run(5.4).mu == pytest.approx(0.9)
    assert run(0.0).mu < 0.9


def test_the_actuator_catching_up_with_an_acceleration_command_is_no_reading(params):
    """The command switches from braking to accelerating at 3 m/s^2 and the car's acceleration ramps up to it
    (short of it by more than GRIP_DRIVE_SHORT, but not steady): no reading."""
    est = _confirmed(GripEstimator(params, GripConfig(mu_nominal=params.mu, drive="rwd")))
    v, es = 25.0, []
    for k, a in enumerate((-3.0, -3.0, -2.0, -0.5, 1.0, 1.6, 2.1, 2.5, 2.8, 3.0, 3.0, 3.0)):
        es.append(est.update(k * T, {"v_x": v, "v_y": 0.0, "r": 0.0}, 0.0, -3.0 if k < 2 else 3.0))
        v += a * T
    assert not any(e.sliding for e in es) and es[-1].mu == params.mu


def test_the_speed_loop_catching_up_with_a_new_command_is_no_traction_reading(params):
    """The command steps from 1.5 to 3.0 m/s^2 and the car's acceleration follows it through the speed loop's lag
    (0.27 s), short of it by more than GRIP_DRIVE_SHORT for a few samples, each step changing by less than
    GRIP_BRAKE_STEADY: the command was not steady over GRIP_DRIVE_SAMPLES, no reading (the dry file 0.2 s into a
    wet lap read 0.48 for a 0.6 road over three samples)."""
    est = _confirmed(GripEstimator(params, GripConfig(mu_nominal=params.mu, drive="rwd")))
    v, a, es = 20.0, 1.5, []
    for k in range(16):
        cmd = 1.5 if k < 4 else 3.0
        es.append(est.update(k * T, {"v_x": v, "v_y": 0.0, "r": 0.0}, 0.0, cmd))
        a += (cmd - a) * T / 0.27
        v += a * T
    assert not any(e.sliding for e in es) and es[-1].mu == params.mu


def test_accelerating_short_at_the_planned_grip_keeps_the_limits(params):
    """Short of the command while the whole car holds what the limits as set ask for (grip_fraction of the
    reference: accelerating at 0.75 g with the reference 0.8): the drive at the car's limit, not a slipperier
    road."""
    est = _confirmed(GripEstimator(params, GripConfig(mu_nominal=0.9, mu_reference=0.8, grip_fraction=0.9,
                                                      drive="rwd")))
    es = _straight_line(est, 0.75 * params.g, 9.0, steps=10)
    assert not any(e.sliding for e in es) and es[-1].mu == pytest.approx(0.9)


def test_bad_drive():
    with pytest.raises(SettingsError, match="drive"):
        GripConfig(drive="4wd")


def _brake_config(**kw) -> GripConfig:
    """The controller's units (load mapping) for a car whose lateral limit is 0.8 g and braking limit 0.76 g on a
    mu 0.9 road (the identified sedan: 0.80 and 0.76)."""
    return GripConfig(**{"mu_nominal": 0.9, "mu_reference": 0.8, "road_units": "load", "grip_fraction": 0.9,
                         "brake_reference": 0.76, **kw})


@pytest.mark.parametrize("road", [0.6, 0.45])
def test_braking_short_reads_the_road_against_the_cars_braking_limit(params, road):
    """A car whose brakes (an ABS below the tyre peak) stop it at 0.76 g on the nominal road brakes short at
    0.76 road / 0.9 g on a slipperier one: the estimate is that road, with the plan's share the lateral limit's
    there (a slide in a corner of it reads the same). Against the tyre peak (no brake reference) the same car read
    the road 10 % or more below it (the dry sedan's file read mu 0.6 as 0.515)."""
    a_x = -0.76 * road / 0.9 * params.g
    est = GripEstimator(params, _brake_config())
    e = _straight_line(est, a_x, -9.0, steps=8)[-1]
    assert e.sliding or e.decel_held is not None
    assert e.mu_front == pytest.approx(road, rel=1e-6) and e.mu_rear == pytest.approx(road, rel=1e-6)
    corner = GripEstimator(params, _brake_config())  # the lateral reading of the same road: the same shown grip
    s = corner.braking_equivalent(0.76 * road / 0.9, 0)
    assert corner.road_friction(s, corner._ref[0])[0] == pytest.approx(road, rel=1e-9)
    assert e.plan_ratio() == pytest.approx(s / corner._ref[0] * (1.0 - grip.GRIP_SIGMA_SLIDE), rel=1e-3)
    peak = _straight_line(GripEstimator(params, _brake_config(brake_reference=None)), a_x, -9.0, steps=8)[-1]
    assert peak.mu_front < 0.92 * road


def test_the_plan_share_of_a_known_road_is_the_one_a_slide_there_gives(params):
    """plan_share (the oracle's limits): 1 on the nominal road and above it; on a slipperier one the share a slide
    at that road's limit leaves (before its uncertainty), larger than the linear share mu / mu_nominal (the car
    holds more of a slipperier road: the load mapping), and growing with mu."""
    est = GripEstimator(params, _brake_config())
    assert est.plan_share(0.9) == pytest.approx(1.0) and est.plan_share(1.2) == 1.0
    shares = [est.plan_share(mu) for mu in (0.3, 0.45, 0.6, 0.75)]
    assert all(np.diff(shares) > 0)
    assert all(sh > mu / 0.9 for sh, mu in zip(shares, (0.3, 0.45, 0.6, 0.75), strict=True))
    slid = GripEstimator(params, _brake_config())
    for axle, ref in zip(slid._axles, slid._ref, strict=True):
        axle.slid(slid.shown_at_limit(0.6, 0), ref)
    assert slid.estimate.mu == pytest.approx(0.6, rel=1e-9)
    assert slid.estimate.plan_ratio() == pytest.approx(est.plan_share(0.6) * (1.0 - grip.GRIP_SIGMA_SLIDE), rel=1e-6)


def test_a_braking_limit_set_for_comfort_does_not_over_read_the_road(params):
    """decel_max set at 3 m/s^2 (0.31 g: a comfort limit, not the car's grip): a braking reading counts against
    BRAKE_REFERENCE_FLOOR of the lateral reference, not against 0.31 g (that would read a road 2.6 times as
    grippy as the car showed)."""
    a_x = -2.2  # the car brakes short of the comfort command on ice
    est = GripEstimator(params, _brake_config(brake_reference=3.0 / (0.9 * params.g)))
    e = _straight_line(est, a_x, -3.0, steps=8)[-1]
    expected = 0.9 * (-a_x / params.g) / (grip.BRAKE_REFERENCE_FLOOR * est._ref_car)
    assert e.mu_front == pytest.approx(expected, rel=1e-6)
    assert e.mu_front < 0.3


def test_braking_short_at_the_planned_braking_grip_keeps_the_limits(params):
    """Short of the command while the car brakes at more than grip_fraction of its braking limit (0.92 x 0.76 g,
    below grip_fraction of the lateral one, 0.9 x 0.8): the brakes' limit as set, not a slipperier road -- the
    estimate holds. Read against the lateral limit it was a slide."""
    a_x = -0.92 * 0.76 * params.g
    e = _straight_line(GripEstimator(params, _brake_config()), a_x, -9.0, steps=8)[-1]
    assert e.mu == pytest.approx(0.9) and e.decel_held is None
    e = _straight_line(GripEstimator(params, _brake_config(brake_reference=None)), a_x, -9.0, steps=8)[-1]
    assert e.mu < 0.89 and e.decel_held is not None


@pytest.mark.parametrize("bad", [0.0, -0.5, float("nan"), "0.7"])
def test_bad_brake_reference(bad):
    with pytest.raises(SettingsError, match="brake_reference"):
        GripConfig(brake_reference=bad)


def test_the_controller_reads_braking_against_the_cars_braking_limit(params):
    """The controller's estimator counts braking against ``grip_brake_limit`` (as a share of g), not against
    decel_max (a setting, which may be below what the car can do); unset: against the tyre peak. Braking at 4 m/s^2
    short of the plan's 7.5 on a car whose brakes hold 8.5 on the nominal road: the limits' share is that road's,
    read in the lateral limit's units."""
    mpc = _mpc(params, grip_mu=0.9, grip_brake_limit=8.5)
    est = mpc.grip.estimator
    assert est.config.brake_reference == pytest.approx(8.5 / params.g, rel=1e-12)
    mpc.solve((0.0, 0.0, 0.0), t=0.0, measured={"v_x": 25.0, "v_y": 0.0, "r": 0.0, "speed": 25.0})
    for k in range(8):
        mpc.grip.step(k * T, {"v_x": 25.0 - 4.0 * k * T, "v_y": 0.0, "r": 0.0}, 0.0, -7.5)
    assert mpc.grip.last.mu == pytest.approx(0.9 * 4.0 / 8.5, rel=1e-6)
    shown = est.braking_equivalent(4.0 / params.g, 0)
    assert mpc.grip.ratio == pytest.approx(shown / est._ref[0] * (1.0 - grip.GRIP_SIGMA_SLIDE), rel=1e-3)
    assert _mpc(params, grip_mu=0.9).grip.estimator.config.brake_reference is None


@pytest.mark.parametrize("share, lowered", [(0.96, False), (0.9, True)])
def test_a_tyre_past_its_curve_at_the_planned_grip_keeps_the_limits(params, share, lowered):
    """Limits at grip_fraction 0.95 of the reference: a front tyre past its curve while the car holds 0.96 of the
    reference -- more than the plan asks for -- is the car at its planned limit (the estimate holds); at 0.9 of
    it, less than the plan asks for, it is a slipperier road: the estimate drops to the reading."""
    ref, nominal = 0.8, 0.9
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    est = GripEstimator(params, GripConfig(mu_nominal=nominal, mu_reference=ref, grip_fraction=0.95))
    slid, e = _slid(est, share * ref * params.tyre_D_f * params.g, 3.0 * saturation_slip(shape), steps=8)
    assert slid is lowered
    assert e.mu_front == pytest.approx(nominal * share if lowered else nominal, rel=1e-9)


def test_after_a_wet_patch_the_dry_road_brings_the_estimate_back(params):
    """A slide on a patch at half the reference lowers the estimate to half; back on the dry road the car corners
    at 0.97 of the reference (more than the limits as set ask for, grip_fraction 0.95) at 0.6 of the dry
    saturation slip -- past the low estimate's curve, yet the car holds the force: the estimate returns to the
    grip shown within a few samples."""
    ref, nominal = 0.8, 0.9
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    est = GripEstimator(params, GripConfig(mu_nominal=nominal, mu_reference=ref, grip_fraction=0.95))
    slid, e = _slid(est, 0.5 * ref * params.tyre_D_f * params.g, 3.0 * saturation_slip(shape), steps=8)
    assert slid and e.mu_front == pytest.approx(0.5 * nominal, rel=1e-9)
    a_y = 0.97 * ref * params.tyre_D_f * params.g
    mus = [_turn(est, a_y, 0.6 * saturation_slip(shape), steps=1, t0=1.0 + k * T).mu_front for k in range(6)]
    assert min(mus) >= 0.5 * nominal - 1e-12  # the step between the turns (a yaw jump) lowers nothing
    assert mus[-1] == pytest.approx(0.97 * nominal, rel=1e-3)  # the grip shown (old rule: 0.45 until the slow
    # recovery, GRIP_RECOVERY_RATE, brought it back)


def test_bad_grip_fraction():
    with pytest.raises(SettingsError, match="grip_fraction"):
        GripConfig(grip_fraction=1.5)


def test_holds_on_a_straight_with_growing_uncertainty(params):
    """No lateral force, no information: the estimate holds exactly; sigma grows as sqrt(s0^2 + g^2 t), capped."""
    cfg = GripConfig(mu_nominal=params.mu, sigma0=0.001, sigma_growth=0.004, sigma_max=0.02)
    est = GripEstimator(params, cfg)
    e = _straight(est, 5.0)
    assert e.mu == params.mu and not e.sliding
    t = 5.0 - T  # the first sample only starts the differences
    assert e.sigma == pytest.approx(math.sqrt(0.001**2 + 0.004**2 * t), rel=1e-9)
    e = _straight(est, 200.0)
    assert e.sigma == pytest.approx(0.02) and e.mu == params.mu


def test_one_sample_past_the_curve_is_not_a_slide(params):
    """A steering command that spikes for one sample (the slip past the dry saturation with the force of a gentle
    turn) is a glitch, not a slide: the estimate holds; the same for two samples is a slide."""
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    a_y = 0.4 * params.mu * params.tyre_D_f * params.g
    gentle, spike = 0.1 * saturation_slip(shape), 2.0 * saturation_slip(shape)
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    _turn(est, a_y, gentle, steps=5)
    e = _turn(est, a_y, spike, steps=1, t0=5 * T)
    e = _turn(est, a_y, gentle, steps=5, t0=6 * T)
    assert not e.sliding and e.mu_front == params.mu
    e = _turn(est, a_y, spike, steps=2, t0=11 * T)
    assert e.sliding and e.mu_front < params.mu


def _slid(est: GripEstimator, a_y: float, alpha_f: float, steps: int) -> tuple[bool, grip.GripEstimate]:
    """:func:`_turn` one sample at a time: whether any step was flagged sliding, and the last estimate."""
    flags = [_turn(est, a_y, alpha_f, steps=1, t0=k * T).sliding for k in range(steps)]
    return any(flags), est.estimate


def test_a_slide_at_the_reference_confirms_the_limits(params):
    """A tyre past its curve while the car holds the grip the limits stand for keeps them (sigma at the confirmed
    share); a slide reading 0.6 of it lowers the estimate to the reading with GRIP_SIGMA_SLIDE of it."""
    ref = 0.8
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    for share, sigma in ((1.0, grip.GRIP_SIGMA_CONFIRMED * ref), (0.6, grip.GRIP_SIGMA_SLIDE * 0.6 * ref)):
        est = GripEstimator(params, GripConfig(mu_nominal=0.9, mu_reference=ref))
        slid, e = _slid(est, share * ref * params.tyre_D_f * params.g, 3.0 * saturation_slip(shape), steps=8)
        assert (slid or share == 1.0) and e.mu_front == pytest.approx(0.9 * share, rel=1e-9)
        assert e.sigma_front == pytest.approx(0.9 * sigma / ref, rel=1e-9)


def test_an_axle_spinning_up_slides_before_its_saturation_slip(params):
    """A driven axle losing traction on a wet road: its slip angle grows (here 0.6 of the saturation slip) while it
    shows no lateral force -- short of its curve by far more than GRIP_FORCE_DEFICIT: a slide after
    GRIP_SLIDE_SAMPLES samples, before the slip reaches the saturation slip; with the curve's force it is not."""
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    alpha = 0.6 * saturation_slip(shape)
    assert alpha > grip.GRIP_DEFICIT_SLIP * saturation_slip(shape)
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    e = _turn(est, 0.0, alpha, steps=1 + grip.GRIP_SLIDE_SAMPLES)  # v_y, r = 0: no lateral force at that slip
    assert e.sliding and e.mu_front < params.mu
    curve = magic_formula(alpha, *shape) * params.mu * params.tyre_D_f * params.g
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    e = _turn(est, curve, alpha, steps=1 + grip.GRIP_SLIDE_SAMPLES)
    assert not e.sliding and e.mu_front == params.mu


def test_a_driven_axle_spinning_up_on_a_straight_slides_and_reads_its_drive(params):
    """Accelerating at 3 m/s^2 on a straight, the rear axle just past GRIP_DEFICIT_SLIP of its saturation slip shows no
    lateral force (a driven axle spinning up on a wet road: the drive takes its grip): a slide within
    GRIP_SLIDE_SAMPLES samples, before the slip reaches the saturation slip, and the grip it reads is the drive's force over its load,
    ``m a_x / (D F_zr)`` (an axle sliding under power carries the drive), not the load split's share of it."""
    p = params
    shape_r = (p.tyre_B_r, p.tyre_C_r, p.tyre_E_r)
    a_x, alpha_r = 3.0, (grip.GRIP_DEFICIT_SLIP + 0.1) * saturation_slip(shape_r)
    L = p.l_f + p.l_r
    d_fz_r = p.tyre_D_r * p.mass * (p.g * p.l_f + a_x * p.h_cg) / L
    drive = p.mass * a_x / d_fz_r
    assert a_x / p.g < 0.6 * drive < p.mu  # the load split (and the whole car) would read about half of it
    est = GripEstimator(p, GripConfig(mu_nominal=p.mu))
    flags = []
    for k in range(10):
        v = V + a_x * k * T
        v_y = -math.tan(alpha_r) * v  # the rear axle's lateral velocity: slip alpha_r, no yaw, no lateral force
        flags.append(est.update(k * T, {"v_x": v, "v_y": v_y, "r": 0.0}, -alpha_r).sliding)  # front: no slip
    e = est.estimate
    assert any(flags[:1 + grip.GRIP_SLIDE_SAMPLES]) and e.mu_rear == pytest.approx(drive, rel=1e-3)
    assert e.mu_front == p.mu  # the front axle showed nothing


@pytest.mark.parametrize("a_x, slides", [(2.7, True), (0.0, False), (-2.0, False)])
def test_a_driven_axle_spinning_up_at_a_small_slip_angle_slides(params, a_x, slides):
    """Under power (a_x > 0) a rear axle at 0.35 of its saturation slip -- below GRIP_DEFICIT_SLIP, above
    GRIP_SPIN_SLIP -- with no lateral force is the driven axle spinning up (the sideslip of a corner decaying on a
    wet straight): a slide that reads its drive. Coasting or braking with the same slip and no force it is not
    (below GRIP_DEFICIT_SLIP a curve that is not the plant's is not read as a slide)."""
    p = params
    shape_r = (p.tyre_B_r, p.tyre_C_r, p.tyre_E_r)
    alpha_r = 0.35 * saturation_slip(shape_r)
    assert grip.GRIP_SPIN_SLIP * saturation_slip(shape_r) < alpha_r < grip.GRIP_DEFICIT_SLIP * saturation_slip(shape_r)
    est = GripEstimator(p, GripConfig(mu_nominal=p.mu))
    flags = []
    for k in range(10):
        v = V + a_x * k * T
        flags.append(est.update(k * T, {"v_x": v, "v_y": -math.tan(alpha_r) * v, "r": 0.0}, -alpha_r).sliding)
    assert any(flags) is slides
    L = p.l_f + p.l_r
    drive = p.mass * a_x / (p.tyre_D_r * p.mass * (p.g * p.l_f + a_x * p.h_cg) / L)
    assert est.estimate.mu_rear == (pytest.approx(drive, rel=1e-3) if slides else p.mu)


def _spin_up(est: GripEstimator, a_x: float, alpha_r: float, steps: int, t0: float, v0: float) -> float:
    """``steps`` samples on a straight accelerating at ``a_x`` with the rear slip ``alpha_r`` and no lateral force
    (a driven axle spinning up); returns the speed at the end."""
    v = v0
    for k in range(steps):
        v = v0 + a_x * k * T
        est.update(t0 + k * T, {"v_x": v, "v_y": -math.tan(alpha_r) * v, "r": 0.0}, -alpha_r)
    return v


def test_a_slide_right_after_a_slide_reads_at_least_the_first(params):
    """A driven axle spinning up at 3 m/s^2 reads its drive's grip; the plan lowers the command, the axle grips for
    0.1 s, then its slip angle -- still decaying -- is past the curve again with the drive at 0.5 m/s^2: that
    reading is the lowered command's, not the road's. Within GRIP_SLIDE_MEMORY it does not lower the estimate (the
    old rule read it: a third of the limits on the rain lap of gen3_7); after it, a slide reads what it shows."""
    p = params
    shape_r = (p.tyre_B_r, p.tyre_C_r, p.tyre_E_r)
    alpha_r = (grip.GRIP_DEFICIT_SLIP + 0.1) * saturation_slip(shape_r)
    L = p.l_f + p.l_r

    def drive(a_x: float) -> float:
        return p.mass * a_x / (p.tyre_D_r * p.mass * (p.g * p.l_f + a_x * p.h_cg) / L)

    for gap, expected in ((0.1, drive(3.0)), (grip.GRIP_SLIDE_MEMORY + 0.2, drive(0.5))):
        est = GripEstimator(p, GripConfig(mu_nominal=p.mu))
        n_slide = 1 + grip.GRIP_SLIDE_SAMPLES  # the last of them slides
        v = _spin_up(est, 3.0, alpha_r, n_slide, 0.0, V)
        assert est.estimate.mu_rear == pytest.approx(drive(3.0), rel=1e-3)
        n_grip = round(gap / T)
        v = _spin_up(est, 0.0, 0.0, n_grip, n_slide * T, v)  # gripping: straight, no slip
        assert est.estimate.mu_rear == pytest.approx(drive(3.0), rel=1e-3)
        _spin_up(est, 0.5, alpha_r, 8, (n_slide + n_grip) * T, v)
        assert drive(0.5) < 0.5 * drive(3.0)
        assert est.estimate.mu_rear == pytest.approx(expected, rel=1e-3), gap


def test_linear_range_neither_lowers_nor_confirms(params):
    """Gentle cornering (0.3 mu g, slip in the linear range): no slide, no change, no confirmation."""
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu, sigma0=0.02))
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    alpha = 0.2 * saturation_slip(shape)
    a_y = magic_formula(alpha, *shape) * params.mu * params.tyre_D_f * params.g
    assert a_y < 0.5 * params.mu * params.g
    e = _turn(est, a_y, alpha, steps=40)
    assert not e.sliding and e.mu_front == params.mu and e.sigma_front > 0.019


def test_confirmation_and_recovery(params):
    """Showing >= 75 % of a low estimate without sliding confirms it and raises it at GRIP_RECOVERY_RATE."""
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    a_y = 0.6 * params.tyre_D_f * params.g
    _turn(est, a_y, 3.0 * saturation_slip(shape), steps=6)  # slides on a 0.6 road
    low = est.estimate.mu_front
    assert low == pytest.approx(0.6)
    # the road dried: the car corners at 0.5 (83 % of the estimate) with a small slip angle, no slide
    e = _turn(est, 0.5 * params.tyre_D_f * params.g, 0.05 * saturation_slip(shape), steps=5, t0=6 * T)
    assert not e.sliding and e.mu_front > low  # the first samples, with the yaw step between the turns, not counted
    start = e.mu_front
    e = _turn(est, 0.5 * params.tyre_D_f * params.g, 0.05 * saturation_slip(shape), steps=20, t0=11 * T)
    assert not e.sliding
    assert e.mu_front == pytest.approx(start + grip.GRIP_RECOVERY_RATE * 20 * T, rel=1e-9)
    # below the grip the limits stand for, a slide's uncertainty stays (the car has not shown more)
    assert e.sigma_front == pytest.approx(grip.GRIP_SIGMA_SLIDE * low)


def test_confirmation_at_the_reference_is_tight(params):
    """Holding the grip the limits stand for (mu_reference) without sliding confirms it: sigma falls to
    GRIP_SIGMA_CONFIRMED of it and the plan uses (1 - GRIP_SIGMA_CONFIRMED) of the limits."""
    ref = 0.8
    est = GripEstimator(params, GripConfig(mu_nominal=0.9, mu_reference=ref, sigma0=0.02))
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    e = _turn(est, 0.7 * params.tyre_D_f * params.g, 0.3 * saturation_slip(shape), steps=10)
    assert not e.sliding and e.mu == pytest.approx(0.9)  # reported in road units: the reference is the nominal
    assert e.sigma_front == pytest.approx(0.9 * grip.GRIP_SIGMA_CONFIRMED)
    assert e.plan_ratio() == pytest.approx(1.0 - grip.GRIP_SIGMA_CONFIRMED)


def test_reference_maps_a_slide_to_the_share_of_the_limits(params):
    """A slide showing half the reference grip (the lateral limit the settings stand for) is half the nominal
    friction, whatever the tyre model's (extrapolated) peak mu."""
    ref = 0.8
    est = GripEstimator(params, GripConfig(mu_nominal=0.9, mu_reference=ref))
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    slid, e = _slid(est, 0.5 * ref * params.tyre_D_f * params.g, 3.0 * saturation_slip(shape), steps=8)
    assert slid and e.mu_front == pytest.approx(0.45, rel=1e-9)
    assert e.plan_ratio() == pytest.approx(0.5 * (1.0 - grip.GRIP_SIGMA_SLIDE), rel=1e-9)


@pytest.mark.parametrize("road_share", [0.94, 0.96])
def test_load_units_read_a_wet_slide_as_the_road_friction(params, road_share):
    """The car holds 0.8 / 0.9 of the nominal road's friction at the reference (load transfer and tyre load
    sensitivity) and 0.94-0.96 of a 0.6 road at its wet limit: with ``road_units="load"`` a slide there reads the
    road's 0.6 within 2 % (the linear share read 0.634-0.648, 6-8 % high); the plan's share of the limits stays
    the grip shown over the reference (the limits are accelerations the car holds)."""
    ref, nominal = 0.8, 0.9
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    shown = road_share * 0.6  # |F| / F_z on the 0.6 road
    reads = {}
    for units in ("linear", "load"):
        est = GripEstimator(params, GripConfig(mu_nominal=nominal, mu_reference=ref, road_units=units))
        slid, e = _slid(est, shown * params.tyre_D_f * params.g, 3.0 * saturation_slip(shape), steps=8)
        assert slid
        reads[units] = e
    assert reads["linear"].mu_front == pytest.approx(nominal * shown / ref, rel=1e-9)
    assert reads["load"].mu_front == pytest.approx(0.6, rel=0.02)
    assert abs(reads["linear"].mu_front / 0.6 - 1.0) > 0.05
    # the limits: identical, the linear share with the slide's margin
    assert reads["load"].plan_ratio() == reads["linear"].plan_ratio()
    assert reads["load"].plan_ratio() == pytest.approx(shown / ref * (1.0 - grip.GRIP_SIGMA_SLIDE), rel=1e-9)
    # the uncertainty in road units: the mapping's slope times the shown grip's
    est = GripEstimator(params, GripConfig(mu_nominal=nominal, mu_reference=ref, road_units="load"))
    _, slope = est.road_friction(shown, ref)
    assert reads["load"].sigma_front == pytest.approx(slope * grip.GRIP_SIGMA_SLIDE * shown, rel=1e-9)


def test_load_units_keep_the_nominal_at_the_reference_and_are_monotonic(params):
    """The mapping reads the nominal friction at the reference, rises with the grip shown, lies between the grip
    shown and its linear share, and is the linear share
    without a reference (the tyre model's own peak is the friction) or when the car holds all of it there."""
    est = GripEstimator(params, GripConfig(mu_nominal=0.9, mu_reference=0.79, road_units="load"))
    assert est.road_friction(0.79, 0.79)[0] == pytest.approx(0.9, rel=1e-12)
    shown = np.linspace(0.05, 0.79, 50)
    mu = np.array([est.road_friction(a, 0.79)[0] for a in shown])
    assert np.all(np.diff(mu) > 0)
    # at least the grip shown (every tyre holds at most mu F_z), at most the linear share (less load transfer)
    assert np.all(mu >= shown - 1e-12) and np.all(mu <= 0.9 * shown / 0.79 + 1e-12)
    slope = est.road_friction(0.5, 0.79)[1]
    h = 1e-6
    assert slope == pytest.approx((est.road_friction(0.5 + h, 0.79)[0] - est.road_friction(0.5 - h, 0.79)[0])
                                  / (2 * h), rel=1e-6)
    for cfg in (GripConfig(mu_nominal=params.mu, road_units="load"),
                GripConfig(mu_nominal=0.7, mu_reference=0.8, road_units="load")):
        e = GripEstimator(params, cfg)
        ref = e._ref[0] * params.tyre_D_f
        assert e.road_friction(0.5 * ref, ref)[0] == pytest.approx(0.5 * cfg.mu_nominal, rel=1e-12)


def test_load_units_read_a_spin_up_on_a_straight_as_the_grip_shown(params):
    """A driven axle spinning up on a straight moves no load across the axle: with the load mapping its reading
    (the drive's grip, ``m a_x / (D F_zr)``) is the road's friction as shown -- not raised like a lateral reading
    of the same grip (the lateral mapping read the 0.6 road as 0.646 off a spin-up on gen3_1's straight)."""
    p = params
    ref, nominal, a_x = 0.8, 0.9, 3.0
    shape_r = (p.tyre_B_r, p.tyre_C_r, p.tyre_E_r)
    alpha_r = (grip.GRIP_DEFICIT_SLIP + 0.1) * saturation_slip(shape_r)
    L = p.l_f + p.l_r
    drive = p.mass * a_x / (p.tyre_D_r * p.mass * (p.g * p.l_f + a_x * p.h_cg) / L)
    est = GripEstimator(p, GripConfig(mu_nominal=nominal, mu_reference=ref, road_units="load"))
    _spin_up(est, a_x, alpha_r, 10, 0.0, V)
    e = est.estimate
    assert e.mu_rear == pytest.approx(p.tyre_D_r * drive, rel=1e-3)
    assert est.road_friction(p.tyre_D_r * drive, p.tyre_D_r * est._ref[1])[0] > 1.02 * e.mu_rear  # lateral: more
    assert e.plan_ratio() == pytest.approx(drive / est._ref[1] * (1.0 - grip.GRIP_SIGMA_SLIDE), rel=1e-3)


def test_load_units_report_the_nominal_at_or_above_the_reference_under_braking(params):
    """Braking at 4 m/s^2 in a turn at 0.82 g, below its curve's slip, the front axle shows more than its model's
    peak (0.78; the reference 0.75) with a share of it longitudinal: the estimate rises to the reading, capped at
    the reference -- the limits' grip --, and the load mapping reports the nominal friction for it (the reading's
    lateral share does not apply to the cap: it read the dry road as 0.88 on gen3_4 of seed 3)."""
    p = sd.DynamicParams(**{**params.__dict__, "mu": 0.78})
    est = GripEstimator(p, GripConfig(mu_nominal=0.9, mu_reference=0.75, road_units="load"))
    shape = (p.tyre_B_f, p.tyre_C_f, p.tyre_E_f)
    a_y, a_x = 0.82 * p.g, -4.0
    for k in range(10):
        v = V + a_x * k * T
        r = a_y / v
        delta = 0.3 * saturation_slip(shape) + math.atan(p.l_f * r / v)
        e = est.update(k * T, {"v_x": v, "v_y": -p.l_r * r, "r": r}, delta)
    assert not e.sliding and est._axles[0].mu > p.mu and est._axles[0].lateral < 0.99
    assert e.mu_front == pytest.approx(0.9, rel=1e-12)


def test_bad_road_units():
    with pytest.raises(SettingsError, match="road_units"):
        GripConfig(road_units="quadratic")


def test_the_controller_reads_road_units_with_the_load_mapping(params):
    """The controller's estimator (GripLimits) maps the grip shown to the road with the load mapping."""
    mpc = _mpc(params, grip_mu=0.9)
    assert mpc.grip.estimator.config.road_units == "load"


@pytest.mark.parametrize("bad", [0.0, -0.3, float("nan"), float("inf")])
def test_bad_reference(bad):
    with pytest.raises(SettingsError, match="mu_reference"):
        GripConfig(mu_reference=bad)


def test_a_noisy_sample_does_not_raise_the_estimate(params):
    """One sample showing more than the estimate (noise in the accelerations) does not raise it: the grip must be
    held over GRIP_SUSTAIN_SAMPLES samples."""
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu))
    shape = (params.tyre_B_f, params.tyre_C_f, params.tyre_E_f)
    _turn(est, 0.6 * params.tyre_D_f * params.g, 3.0 * saturation_slip(shape), steps=6)  # slides: 0.6
    low = est.estimate.mu_front
    # one sample of a steady turn at 0.7 between samples at 0.55 (steady: no yaw acceleration in the balance)
    e = _turn(est, 0.55 * params.tyre_D_f * params.g, 0.05 * saturation_slip(shape), steps=1, t0=6 * T)
    e = _turn(est, 0.7 * params.tyre_D_f * params.g, 0.05 * saturation_slip(shape), steps=1, t0=7 * T)
    assert e.mu_front < low + 0.01


def test_sideslip_beyond_the_bound_is_a_slide(params):
    est = GripEstimator(params, GripConfig(mu_nominal=params.mu, slide_sideslip=0.1))
    r = 0.2
    e = est.estimate
    for k in range(3):  # v_y of the CG = 0.15 V: sideslip 0.149 rad
        e = est.update(k * T, {"v_x": V, "v_y": 0.15 * V - params.l_r * r, "r": r}, 0.05)
    assert e.sliding and e.mu < params.mu


def test_estimates_are_in_road_units(params):
    """A model identified at mu 0.946 for a 0.9 road reports 0.9 at the start and scales what it reads."""
    p = sd.DynamicParams(**{**params.__dict__, "mu": 0.946})
    est = GripEstimator(p, GripConfig(mu_nominal=0.9))
    assert est.estimate.mu == pytest.approx(0.9)
    shape = (p.tyre_B_f, p.tyre_C_f, p.tyre_E_f)
    _turn(est, 0.5 * p.tyre_D_f * p.g, 3.0 * saturation_slip(shape), steps=8)
    assert est.estimate.mu_front == pytest.approx(0.5 * 0.9 / 0.946)


def test_magic_formula_is_the_prediction_models():
    """The scalar curve equals the model's own (vectorized) magic formula."""
    alpha = np.linspace(-0.3, 0.3, 61)
    ours = np.array([magic_formula(a, 11.0, 1.4, -0.3) for a in alpha])
    theirs = sd._pacejka(alpha, 11.0, 1.4, -0.3)[0]
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-14)


def test_similarity_keeps_the_stiffness_and_lowers_the_peak():
    shape = (10.0, 1.3, 0.0)
    small = 1e-5
    assert axle_force(small, shape, 2000.0, 5000.0) == pytest.approx(axle_force(small, shape, 5000.0, 5000.0),
                                                                      rel=1e-6)
    alphas = np.linspace(0.0, 0.6, 601)
    assert max(axle_force(a, shape, 2000.0, 5000.0) for a in alphas) == pytest.approx(2000.0, rel=1e-4)


# ---------------------------------------------------------------------- settings
@pytest.mark.parametrize("key, value, expected", [
    ("grip_mu", 0.0, "grip_mu"), ("grip_mu", -0.5, "grip_mu"), ("grip_margin", -1.0, "grip_margin"),
    ("grip_sigma_max", -0.1, "grip_sigma_max"), ("grip_sigma_growth", -1.0, "grip_sigma_growth"),
    ("grip_slide_sideslip", 0.0, "grip_slide_sideslip"), ("grip_estimation", "yes", "grip_estimation"),
])
def test_bad_grip_settings(key, value, expected):
    with pytest.raises(SettingsError, match=expected):
        mt.MPCSettings(**{key: value})


def test_grip_group():
    s = mt.MPCSettings(grip={"grip_estimation": True, "grip_mu": 0.6})
    assert s.grip_estimation and s.grip.grip_mu == 0.6 and s.grip_margin == 1.0
    assert mt.MPCSettings(**s.as_dict(grouped=True)) == s


# ---------------------------------------------------------------------- the controller's limits
def _circle_path(radius: float = 60.0) -> mt.ReferencePath:
    th = np.linspace(0.0, 2.0 * np.pi, 800, endpoint=False)
    x = np.concatenate([np.linspace(-150, 0, 300, endpoint=False), radius * np.sin(th)])
    y = np.concatenate([np.full(300, -radius), -radius * np.cos(th)])
    return mt.ReferencePath(x, y, closed=False, ds=1.0, width_left=5.0, width_right=5.0)


def _mpc(params, **settings) -> mt.SpatialMPC:
    st = mt.MPCSettings(prediction_model="dynamic", horizon=20, ds=1.0, v_max=30.0, a_y_max=8.0, decel_max=8.0,
                        accel_max=3.0, friction_ellipse=True, brake_decel=6.0, grip_estimation=True, **settings)
    path = _circle_path()
    return mt.SpatialMPC(path, mt.VehicleParams(wheelbase=params.wheelbase), st, prediction=DynamicPrediction(params))


@pytest.mark.parametrize("compiled", ["python", "numba"])
def test_a_slide_lowers_every_limit_within_the_step(params, compiled):
    """A sliding measurement: the very solve that gets it plans with lower limits, speed ceilings and tyre peak;
    the safe stop brakes within them; reset restores the settings (numpy and the compiled kernels)."""
    if compiled == "numba":
        pytest.importorskip("numba")
    mpc = _mpc(params, grip_mu=1.0, compiled=compiled)
    base = mpc.settings
    v_box0 = mpc._sampler.table[:, 7].copy()
    r = 7.0 / V
    for k in range(4):
        sol = mpc.solve((50.0, 0.0, 0.0), t=k * T, measured={"v_x": V, "v_y": 0.0, "r": r, "speed": V})
    est = mpc.grip.last
    ratio = mpc.grip.ratio
    assert est.mu < 0.9 and ratio < 0.9 and sol.status == mt.Status.SOLVED
    assert ratio == pytest.approx(est.plan_ratio(), abs=grip.RATIO_STEP)
    st = mpc.settings
    assert mpc.qp.settings is st and mpc.safeguards.settings is st
    assert st.a_y_max == pytest.approx(ratio * base.a_y_max) and st.decel_max == pytest.approx(ratio * base.decel_max)
    assert st.accel_max == pytest.approx(ratio * base.accel_max)
    assert st.brake_decel <= st.decel_max + 1e-12
    assert mpc.model.params.tyre_D_f == pytest.approx(ratio * params.tyre_D_f)
    assert mpc.model.params.cornering_stiffness == pytest.approx(params.cornering_stiffness)
    np.testing.assert_allclose(mpc._sampler.table[:, 7], math.sqrt(ratio) * v_box0)
    # what the plan samples (the compiled sampler keeps its own copy of the table) is the scaled ceiling
    s_grid = np.linspace(0.0, 400.0, 41)
    sampled = mpc._sampler.sample(s_grid).v_box
    np.testing.assert_allclose(sampled, math.sqrt(ratio) * np.interp(s_grid, mpc._sampler.s, v_box0), rtol=1e-9)
    mpc.reset()
    assert mpc.settings == base and mpc.grip.ratio == 1.0 and mpc.model.params == params


def test_a_braking_reading_keeps_the_car_braking_at_the_roads_peak(params):
    """The controller passes the plan's acceleration command to the estimate; braking short of it on a straight
    lowers the limits by the share, except the braking limit, which stays as set while the estimate stands on
    that reading (lowered by the share the plan would brake less than the road allows); the safe stop brakes at
    most at the deceleration the car held; reset restores the settings."""
    mpc = _mpc(params, grip_mu=1.0)
    base = mpc.settings
    sol = mpc.solve((0.0, 0.0, 0.0), t=0.0, measured={"v_x": 25.0, "v_y": 0.0, "r": 0.0, "speed": 25.0})
    assert mpc._accel_cmd() == sol.u[0, mpc.model.I_ACCEL]  # what the estimate compares the measured a_x to
    for k in range(8):
        mpc.grip.step(k * T, {"v_x": 25.0 - 4.0 * k * T, "v_y": 0.0, "r": 0.0}, 0.0, -7.5)
    ratio, st = mpc.grip.ratio, mpc.settings
    assert mpc.grip.last.decel_held == pytest.approx(4.0)
    assert ratio < 0.45 and st.a_y_max == pytest.approx(ratio * base.a_y_max)
    assert ratio * base.decel_max < 4.0
    assert st.decel_max == base.decel_max and st.brake_decel == pytest.approx(4.0)
    assert st.accel_max == pytest.approx(ratio * base.accel_max)
    mpc.reset()
    assert mpc.settings == base and mpc.grip.decel_held is None


def test_a_lower_bound_keeps_the_braking_limit_as_set(params):
    """Accelerating short of the command on a straight (the traction control holds the driven wheels below their
    peak): the estimate drops to the reading, a lower bound (GripEstimate.lower_bound), and every limit scales with
    it except the braking limit, which stays as set (the ABS holds a command beyond the road at its peak, and a
    braking reading reads it); the safe stop brakes at most at the estimate's share. (A slide lowers the braking
    limit with the others: test_a_slide_lowers_every_limit_within_the_step.)"""
    mpc = _mpc(params, grip_mu=1.0, grip_drive="rwd")
    base = mpc.settings
    est = mpc.grip.estimator
    _confirmed(est)
    for k in range(12):
        mpc.grip.step(k * T, {"v_x": 20.0 + 2.0 * k * T, "v_y": 0.0, "r": 0.0}, 0.0, 3.0)
    e, ratio, st = mpc.grip.last, mpc.grip.ratio, mpc.settings
    assert e.lower_bound and e.mu_rear < 0.8 and ratio < 0.85
    assert st.a_y_max == pytest.approx(ratio * base.a_y_max) and st.accel_max == pytest.approx(ratio * base.accel_max)
    assert st.decel_max == base.decel_max and st.brake_decel == pytest.approx(min(base.brake_decel,
                                                                                  ratio * base.decel_max))


def test_scaled_ceilings_are_those_of_the_scaled_limits(params):
    """Cross-check: sqrt(rho) x the ceilings equals the whole-path pass with every limit scaled by rho where
    v_max does not cap it, and never exceeds it."""
    mpc = _mpc(params)
    rho = 0.6
    mpc.grip._apply(rho)
    scaled = mpc._sampler.table[:, 7]  # an open path: one row per waypoint
    _v_ref, v_box = path_speed_ceilings(mpc.path, mpc.settings, mpc.model.speed_lag)
    assert np.all(scaled <= v_box + 1e-6)
    free = v_box < 0.99 * math.sqrt(rho) * mpc.settings.v_max
    assert free.any()
    np.testing.assert_allclose(scaled[free], v_box[free], rtol=1e-6)


def test_kinematic_model_says_so_once_and_does_not_estimate(caplog):
    """The default (on) with the kinematic model: off, one info message, no warning."""
    st = mt.MPCSettings(horizon=10)
    assert st.grip_estimation  # on by default
    path = _circle_path()
    with caplog.at_level(logging.INFO, logger="mpc_tracking.mpc.grip"):
        mpc = mt.SpatialMPC(path, mt.VehicleParams(), st)
    assert mpc.grip is None
    grip_records = [r for r in caplog.records if r.name == "mpc_tracking.mpc.grip"]
    assert len(grip_records) == 1 and grip_records[0].levelno == logging.INFO and "no tyres" in grip_records[0].message


def test_on_by_default_with_the_dynamic_model_and_off_when_asked(params):
    st = mt.MPCSettings(prediction_model="dynamic", horizon=10)
    mpc = mt.SpatialMPC(_circle_path(), mt.VehicleParams(wheelbase=params.wheelbase), st,
                        prediction=DynamicPrediction(params))
    assert mpc.grip is not None
    off = mt.SpatialMPC(_circle_path(), mt.VehicleParams(wheelbase=params.wheelbase),
                        st.replace(grip_estimation=False), prediction=DynamicPrediction(params))
    assert off.grip is None


def test_without_v_y_and_r_the_limits_stay_as_set(params):
    """A car that reports no v_y, r (a kinematic plant under the dynamic model): nothing informs the estimate and
    the limits stay exactly as set; the first measurement with them starts the estimation."""
    mpc = _mpc(params)
    base = mpc.settings
    for k in range(30):
        mpc.grip.step(k * T, {"speed": V}, 0.0)
    assert mpc.grip.ratio == 1.0 and mpc.settings == base
    for k in range(30, 60):  # straight running with v_y, r: no information, sigma at its cap
        mpc.grip.step(k * T, {"v_x": V, "v_y": 0.0, "r": 0.0}, 0.0)
    assert mpc.grip.ratio == pytest.approx(1.0 - base.grip_margin * base.grip_sigma_max, abs=1e-12)
    assert mpc.settings.a_y_max == pytest.approx(mpc.grip.ratio * base.a_y_max)


# ---------------------------------------------------------------------- closed loop
def test_closed_loop_a_dry_plan_on_a_wet_circle():
    """The 3D sedan on a mu 0.5 circle (R 50 m, 3 m each side) with limits and a model for mu 0.9: without the
    estimate (grip_estimation=False) the car leaves the track within seconds; with it (the default) the first slide
    lowers the limits, the body stays inside the edges and the estimate ends within 10 % of the road; the result
    carries mu_est and the summary reports it."""
    from mpc_tracking.models.prediction import dynamic_params_from_ackermann3d

    th = np.linspace(0.0, 2.0 * np.pi, 315, endpoint=False)
    path = mt.ReferencePath(50.0 * np.cos(th), 50.0 * np.sin(th), closed=True, ds=1.0, width_left=3.0,
                            width_right=3.0)
    body = mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)
    dyn = dynamic_params_from_ackermann3d(mt.create_model("ackermann3d", {"preset": "sedan"}).vehicle)
    out = {}
    for on in (True, False):
        car = mt.create_model("ackermann3d", {"preset": "sedan", "mu": 0.5})
        act = mt.actuation.default_actuator(car)
        st = mt.MPCSettings(prediction_model="dynamic", horizon=30, ds=1.0, v_max=25.0, a_y_max=7.5, decel_max=7.0,
                            accel_max=3.0, friction_ellipse=True, discretization="rk4", delta_max=0.6,
                            grip_mu=0.9, **({} if on else {"grip_estimation": False}))  # on: the default
        mpc = mt.SpatialMPC(path, body, st, prediction=DynamicPrediction(dyn, speed_lag=act.speed_lag))
        out[on] = mt.simulate(path, mpc, car, act, t_max=10.0, v0=15.0)
    on, off = out[True], out[False]
    assert off.reason == "left_corridor"
    assert on.reason == "time_limit" and on.metrics["max_body_overshoot"] == 0.0
    assert on.series["mu_est"][-1] == pytest.approx(0.5, rel=0.1)
    np.testing.assert_array_equal(on.series["mu_true"], 0.5)
    assert "grip estimate" in on.summary() and "mu_est" not in off.series
    # the share of the limits the plan used, step by step: near 1 at the start (less the margin), the road's after
    share = on.series["grip_share"]
    assert share.shape == on.series["t"].shape and share[0] > 0.95 and 0.4 < share.min() < 0.7
    assert f"limits down to {100 * share.min():.0f} % of nominal" in on.summary() and "grip_share" not in off.series
    assert on.to_pandas().attrs["units"]["grip_share"] == "-"


def test_closed_loop_a_wet_patch_in_a_braking_zone_is_read_before_the_corner(monkeypatch):
    """The 3D sedan brakes from 25 m/s on a straight for a R 40 m corner; the last 70 m of the straight are a
    mu 0.5 patch. The car decelerates short of the plan's command there (no slip angle tells on a straight): the
    estimate reads the patch, within 15 %, before the corner begins (s = 250 m). Cross-check: with the braking
    reading off (GRIP_BRAKE_SHORT out of reach) nothing is read before the corner."""
    from mpc_tracking.models.prediction import dynamic_params_from_ackermann3d

    R = 40.0
    th = np.linspace(0.0, np.pi / 2, 80)
    x = np.concatenate([np.linspace(0.0, 250.0, 251)[:-1], 250.0 + R * np.sin(th)])
    y = np.concatenate([np.zeros(250), R * (1.0 - np.cos(th))])
    path = mt.ReferencePath(x, y, ds=1.0, width_left=4.0, width_right=4.0)
    body = mt.VehicleParams(wheelbase=2.68, length=4.6, width=1.8, rear_overhang=0.95)
    dyn = dynamic_params_from_ackermann3d(mt.create_model("ackermann3d", {"preset": "sedan"}).vehicle)

    def first_reading_s(reading: bool) -> tuple[float, float]:
        if not reading:
            monkeypatch.setattr(grip, "GRIP_BRAKE_SHORT", 1e9)
        car = mt.create_model("ackermann3d", {"preset": "sedan", "mu": 0.9, "mu_patches": [[215.0, 0.0, 35.0, 0.5]]})
        act = mt.actuation.default_actuator(car)
        st = mt.MPCSettings(prediction_model="dynamic", horizon=30, ds=2.0, v_max=25.0, a_y_max=7.0,
                            decel_max=6.5, accel_max=3.0, friction_ellipse=True, discretization="rk4",
                            delta_max=0.6, grip_mu=0.9)
        mpc = mt.SpatialMPC(path, body, st, prediction=DynamicPrediction(dyn, speed_lag=act.speed_lag))
        res = mt.simulate(path, mpc, car, act, t_max=20.0, v0=25.0)
        assert res.metrics["max_body_overshoot"] == 0.0
        low = np.flatnonzero(res.series["mu_est"] < 0.6)
        return (float(res.series["s"][low[0]]), float(res.series["mu_est"][low[0]])) if low.size else (np.inf, 0.9)

    s_read, mu = first_reading_s(True)
    assert s_read < 250.0 and mu == pytest.approx(0.5, rel=0.15)
    assert first_reading_s(False)[0] > 250.0

