"""Least-squares fits of the speed loop and the tyres from recorded manoeuvres.

**Speed loop** (:func:`fit_longitudinal`): the first-order model the controller assumes
(:class:`~mpc_tracking.models.prediction.DynamicPrediction` with ``speed_lag``), with saturated
acceleration::

    v_x' = clip((v_cmd - v_x) / tau, -decel_max, accel_max)

simulated over the recorded speed commands of the straight-line runs from their measured start;
``(tau, accel_max, decel_max)`` minimize the speed error (``scipy.optimize.least_squares``), starting
from the plateaus of the measured acceleration.

**Tyres** (:func:`fit_lateral`): an equation-error fit of the dynamic bicycle's lateral and yaw
equations (:mod:`mpc_tracking.models.prediction.spatial_dynamic`) on measured derivatives (Savitzky-Golay)::

    v_y' + r v_x          = (F_yf cos delta + F_yr) / m
    I_z r'                = l_f F_yf cos delta - l_r F_yr
    F_y = mu F_z sin(C atan(B alpha)),   F_zf, F_zr with the longitudinal load transfer

(``v_y`` of the CG, ``alpha`` from the measured velocities, the model's ``a_x`` input from the
measured longitudinal acceleration plus ``F_yf sin(delta) / m``). Unknowns ``mu``, ``B_f``, ``B_r``
and, when the plant does not give it, ``I_z``; ``C`` (and ``E = 0``) are given. Both residuals are in
m/s² (the yaw one divided by ``m L``). Only samples above the model's blend speed and below a
sideslip of 0.2 rad enter.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares
from scipy.signal import savgol_filter

from mpc_tracking.identification.manoeuvres import RECORDED, Recording

__all__ = ["derivative", "LongitudinalFit", "fit_longitudinal", "simulate_speed", "LateralFit", "fit_lateral",
           "lateral_samples", "B_MAX", "AxlePeaks", "axle_forces", "axle_peaks"]

logger = logging.getLogger(__name__)

#: upper bound of the Pacejka stiffness factor B [1/rad] (a plant without measurable slip ends here)
B_MAX = 40.0
#: slip angle [rad] below which an axle counts as not slipping (95th percentile over the samples)
_NO_SLIP = 5e-3


def derivative(y: np.ndarray, dt: float, window: float) -> np.ndarray:
    """Time derivative of the samples ``y`` [unit/s]: Savitzky-Golay (cubic) over ``window`` seconds."""
    n = len(y)
    w = max(5, round(window / dt) | 1)
    if n < 5:
        return np.gradient(y, dt)
    w = min(w, n if n % 2 else n - 1)
    return np.asarray(savgol_filter(y, w, min(3, w - 2), deriv=1, delta=dt, mode="interp"))


def simulate_speed(v0: float, v_cmd: np.ndarray, dt: float, tau: float, a_max: float, d_max: float,
                   power_per_mass: float = math.inf, v_floor: float = 0.1) -> np.ndarray:
    """Speed [m/s] of the clipped first-order loop, RK4 per sample with the command held, shape of ``v_cmd``.

    ``v' = clip((v_cmd - v) / tau, -d_max, min(a_max, power_per_mass / max(v, v_floor)))`` (``power_per_mass``
    P/m [W/kg]; inf: no power limit; ``v_floor`` [m/s]: the power limit has no bound at standstill)."""
    out = np.empty_like(v_cmd)
    v = float(v0)
    inv = 1.0 / tau if tau > 0 else math.inf
    pm = float(power_per_mass)

    if math.isinf(pm):
        def f(v_: float, c: float) -> float:
            return min(max((c - v_) * inv, -d_max), a_max)
    else:
        def f(v_: float, c: float) -> float:
            return min(max((c - v_) * inv, -d_max), min(a_max, pm / max(v_, v_floor)))

    for k, c in enumerate(v_cmd):
        out[k] = v
        if math.isinf(inv):  # no lag: the speed is the command
            v = float(c)
            continue
        k1 = f(v, c)
        k2 = f(v + 0.5 * dt * k1, c)
        k3 = f(v + 0.5 * dt * k2, c)
        k4 = f(v + dt * k3, c)
        v += dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return out


@dataclass(frozen=True)
class LongitudinalFit:
    """Result of :func:`fit_longitudinal`.

    Attributes
    ----------
    tau : float
        Speed-loop time constant [s] (0: the speed follows the command within a sample).
    accel_max, decel_max : float
        Largest acceleration and braking deceleration [m/s²] (``inf`` when not limited).
    accel_plateau, decel_plateau : float
        The same read off the measured acceleration (median of its top 5 % in each run) [m/s²].
    rms_speed : float
        RMS speed error of the fitted loop over the runs [m/s].
    power_per_mass : float or None
        P/m [W/kg] when the acceleration falls with speed as a power limit, ``min(accel_max, P/m / v)``
        (it bound over at least a fifth of the full-throttle run above V, or of the acceleration run
        without one, and cut the speed error by a quarter);
        None: not limited within the speeds driven.
    """

    tau: float
    accel_max: float
    decel_max: float
    accel_plateau: float
    decel_plateau: float
    rms_speed: float
    power_per_mass: float | None = None


def _plateau(a: np.ndarray) -> float:
    top = np.sort(a)[-max(3, a.size // 20):]
    return float(np.median(top))


def fit_longitudinal(accel: Recording, brake: Recording, window: float,
                     high: Recording | None = None) -> LongitudinalFit:
    """Fit ``(tau, accel_max, decel_max)`` to the straight-line acceleration and braking runs, and a power
    limit where the acceleration falls with speed (on them and on ``high``, a full-throttle run above the
    manoeuvre speed, up to where its speed levelled off)."""
    top = None if high is None else _accelerating_part(high)
    runs = (accel, brake) if top is None else (accel, brake, top)
    dt = accel.dt
    a_acc = derivative(accel.v_x, dt, window)
    a_brk = derivative(brake.v_x, dt, window)
    acc_p, dec_p = _plateau(a_acc), _plateau(-a_brk)
    # a speed that follows its command within two samples has no measurable lag or limit
    step_k = int(np.argmax(np.diff(accel.v_cmd) > 0.5 * np.ptp(accel.v_cmd))) + 1
    dv = accel.v_cmd[step_k] - accel.v_cmd[step_k - 1]
    if step_k + 2 < len(accel) and accel.v_x[step_k + 2] - accel.v_x[step_k - 1] >= 0.9 * dv:
        logger.info("identify: the speed follows its command within two samples: no lag, no acceleration limit")
        return LongitudinalFit(0.0, math.inf, math.inf, acc_p, dec_p, 0.0)

    def residual(p: np.ndarray) -> np.ndarray:
        tau, a, d = np.exp(p[:3])
        pm = float(np.exp(p[3])) if p.size > 3 else math.inf
        return np.concatenate([simulate_speed(r.v_x[0], r.v_cmd, dt, tau, a, d, pm) - r.v_x for r in runs])

    # initial lag: time to 63 % of the small step at the end of the acceleration run
    p0 = np.log([_lag_guess(accel), max(acc_p, 1e-3), max(dec_p, 1e-3)])
    sol = least_squares(residual, p0, x_scale=1.0, method="trf")
    tau, a, d = (float(v) for v in np.exp(sol.x))
    rms = float(np.sqrt(np.mean(sol.fun ** 2)))
    power = _fit_power(residual, sol, accel if top is None else top)
    if power is not None:
        tau, a, d, pm = (float(v) for v in np.exp(power.x))
        rms_p = float(np.sqrt(np.mean(power.fun ** 2)))
        v_run = accel.v_x[accel.v_cmd >= 0.99 * np.max(accel.v_cmd)]
        v_full = v_run if top is None else top.v_x  # the run above V is where a power limit shows
        binds = float(np.mean(pm / np.maximum(v_full, 0.1) < a)) if v_full.size else 0.0
        logger.debug("identify: speed error %.3g m/s without, %.3g with a power limit P/m = %.4g W/kg (binds on "
                     "%.0f %% of the full-throttle run)", rms, rms_p, pm, 100 * binds)
        if rms_p < 0.75 * rms and binds >= 0.2:
            logger.info("identify: a power limit P/m = %.4g W/kg (speed error %.3g -> %.3g m/s)", pm, rms, rms_p)
            # a power limit that binds from the start of the run leaves accel_max unmeasured above P/m / v
            a = min(a, pm / max(float(np.min(v_run)), 0.1))
            d = d if _plateau_time(-a_brk, dt) >= 0.5 * tau else math.inf
            return LongitudinalFit(tau, a, d, acc_p, dec_p, rms_p, pm)
        tau, a, d = (float(v) for v in np.exp(sol.x))
    # a limit is measured only where the acceleration stayed near its largest value for a while (a plateau);
    # an unsaturated first-order response peaks at the step and decays at once
    a, d = (v if _plateau_time(acc, dt) >= 0.5 * tau else math.inf for v, acc in ((a, a_acc), (d, -a_brk)))
    return LongitudinalFit(tau, a, d, acc_p, dec_p, rms)


def _accelerating_part(rec: Recording) -> Recording:
    """``rec`` up to where its speed first came within 2 % of the largest speed of the run (a plateau of a
    plant that levelled off below the command is no evidence of its acceleration limit)."""
    v = rec.v_x
    rise = v - v[0]
    k = int(np.argmax(rise >= 0.98 * np.max(rise))) + 1 if np.max(rise) > 0 else v.size
    k = max(k, min(3, v.size))
    t, v_x, v_y, r, v_cmd, delta = (getattr(rec, f)[:k] for f in RECORDED)
    return Recording(rec.name, rec.purpose, t, v_x, v_y, r, v_cmd, delta, note=rec.note)


def _fit_power(residual, sol, accel: Recording):
    """The fit with a power limit P/m added, started where ``P/m / v`` meets the fitted acceleration
    limit at 0.7 of the run's top speed (None when the run has no full-throttle phase)."""
    full = accel.v_cmd >= 0.99 * np.max(accel.v_cmd)
    if np.count_nonzero(full) < 10:
        return None
    v_top = float(np.max(accel.v_x[full]))
    p0 = np.concatenate([sol.x, [sol.x[1] + math.log(0.7 * v_top)]])
    return least_squares(residual, p0, x_scale=1.0, method="trf")


def _plateau_time(a: np.ndarray, dt: float) -> float:
    """Time [s] the acceleration ``a`` spends within 10 % of its level (:func:`_plateau`, the median of its top
    5 %), above or below it.

    An unsaturated first-order response peaks at the step and passes through the band at once. Measured against
    the largest value instead, a brief overshoot at the start of a run hid a long plateau: a front-driven sedan's
    traction held 3.92 m/s^2 for 2.5 s after 0.1 s at 4.5 (the load not yet shifted to the rear), 0.08 s within
    10 % of the peak, and its acceleration limit came out unmeasured (inf; the controller then planned the
    actuator's 6 m/s^2 and the front axle, driven beyond its grip, slid on a dry road)."""
    level = _plateau(a)
    return float(np.count_nonzero(np.abs(a - level) <= 0.1 * abs(level)) * dt)


def _lag_guess(rec: Recording) -> float:
    """Time [s] for the last speed step's response to cover 63 % of the step."""
    jumps = np.flatnonzero(np.abs(np.diff(rec.v_cmd)) > 1e-9)
    if jumps.size == 0:
        return 0.3
    k = int(jumps[-1]) + 1
    v0, v1 = rec.v_x[k], rec.v_cmd[k]
    reached = np.flatnonzero(np.abs(rec.v_x[k:] - v1) <= 0.37 * abs(v1 - v0))
    return float(max(rec.t[k + reached[0]] - rec.t[k], rec.dt)) if reached.size else 0.3


@dataclass(frozen=True)
class LateralFit:
    """Result of :func:`fit_lateral`.

    Attributes
    ----------
    mu, B_f, B_r : float
        Friction coefficient [-] and Pacejka stiffness factors [1/rad].
    I_z : float
        Yaw inertia [kg m²] (the given one unless fitted).
    fitted_inertia : bool
        Whether ``I_z`` was a fit parameter.
    slip_seen : bool
        False when the plant showed no measurable tyre slip (a kinematic plant): ``B`` is then
        :data:`B_MAX` and ``mu`` the given lower bound.
    max_force_ratio : float
        Largest ``|F_y| / (mu F_z)`` of the fitted tyres at the measured slip angles, both axles [-]
        (near 1: the data reached the friction limit, so ``mu`` is measured, not extrapolated).
    rms_lateral, rms_yaw : float
        RMS equation errors [m/s²] of the lateral and the yaw equation (the latter divided by ``m L``).
    samples : int
        Samples used.
    D_f, D_r : float
        Peak factors of the axles [-] (the axle's peak force is ``D mu F_z``).
    """

    mu: float
    B_f: float
    B_r: float
    I_z: float
    fitted_inertia: bool
    slip_seen: bool
    max_force_ratio: float
    rms_lateral: float
    rms_yaw: float
    samples: int
    D_f: float = 1.0
    D_r: float = 1.0


def lateral_samples(recs: list[Recording], geo: dict[str, float], window: float, v_min: float) -> dict[str, np.ndarray]:
    """Stacked samples for :func:`fit_lateral`: ``v_x, v_y`` (CG), ``r``, ``delta``, ``a_x`` (measured
    longitudinal acceleration ``v_x' - r v_y``), ``a_y`` (``v_y' + r v_x``), ``r_dot``, ``alpha_f``, ``alpha_r``."""
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("v_x", "v_y", "r", "delta", "a_x", "a_y", "r_dot")}
    for rec in recs:
        dt = rec.dt
        vy = rec.v_y_cg(geo["l_r"])
        vxd, vyd, rd = (derivative(s, dt, window) for s in (rec.v_x, vy, rec.r))
        # the derivative at t_k straddles the commands held over [t_k-1, t_k) and [t_k, t_k+1)
        delta = 0.5 * (rec.delta + np.concatenate([rec.delta[:1], rec.delta[:-1]]))
        keep = (rec.v_x > v_min) & (np.abs(np.arctan2(rec.v_y, rec.v_x)) < 0.2)
        for k, v in (("v_x", rec.v_x), ("v_y", vy), ("r", rec.r), ("delta", delta),
                     ("a_x", vxd - rec.r * vy), ("a_y", vyd + rec.r * rec.v_x), ("r_dot", rd)):
            cols[k].append(v[keep])
    out = {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}
    out["alpha_f"] = out["delta"] - np.arctan((out["v_y"] + geo["l_f"] * out["r"]) / out["v_x"])
    out["alpha_r"] = -np.arctan((out["v_y"] - geo["l_r"] * out["r"]) / out["v_x"])
    return out


@dataclass(frozen=True)
class AxlePeaks:
    """The friction each axle used, measured without a tyre model (:func:`axle_peaks`).

    Attributes
    ----------
    front, rear : float
        Largest force of the axle over its normal load, ``|F| / F_z`` [-] (99.5th percentile of the
        samples; on the driven axle ``F`` includes the drive force ``m a_x``: combined slip).
    front_saturated, rear_saturated : bool
        The axle's force stopped growing while its slip angle kept growing (over the top tenth of
        the slip range its slope fell below 5 % of the linear range's): the axle reached its limit,
        so its peak measures its friction.
    """

    front: float
    rear: float
    front_saturated: bool
    rear_saturated: bool

    @property
    def limiting_axle(self) -> str | None:
        """``"front"`` (understeer at the limit), ``"rear"`` (oversteer), ``"both"`` or None (no axle saturated)."""
        f, r = self.front_saturated, self.rear_saturated
        return "both" if f and r else "front" if f else "rear" if r else None


def axle_forces(S: dict[str, np.ndarray], geo: dict[str, float], I_z: float) -> tuple[np.ndarray, ...]:
    """Lateral axle forces [N] solved from the measured motion (no tyre model) and the normal loads.

    ``m a_y = F_yf cos(delta) + F_yr`` and ``I_z r' = l_f F_yf cos(delta) - l_r F_yr`` give
    ``F_yf = (m l_r a_y + I_z r') / (L cos delta)``, ``F_yr = (m l_f a_y - I_z r') / L``; the loads
    ``F_zf = m (g l_r - a_x h) / L``, ``F_zr = m (g l_f + a_x h) / L`` (longitudinal load transfer, with
    the model's ``a_x``: :func:`drive_acceleration`).

    Returns
    -------
    F_yf, F_yr, F_zf, F_zr : ndarray, each shape (K,)
    """
    m, lf, lr, h, g = geo["mass"], geo["l_f"], geo["l_r"], geo["h_cg"], geo["g"]
    L = lf + lr
    fyf = (m * lr * S["a_y"] + I_z * S["r_dot"]) / (L * np.cos(S["delta"]))
    fyr = (m * lf * S["a_y"] - I_z * S["r_dot"]) / L
    ax = drive_acceleration(S, fyf, m)
    fzf = m * (g * lr - ax * h) / L
    fzr = m * (g * lf + ax * h) / L
    return fyf, fyr, fzf, fzr


def drive_acceleration(S: dict[str, np.ndarray], fyf: np.ndarray, m: float) -> np.ndarray:
    """The dynamic model's ``a_x`` input [m/s²] (the drive force over the mass): the measured longitudinal
    acceleration plus the rearward component ``F_yf sin(delta) / m`` of the steered front axle's force."""
    return S["a_x"] + fyf * np.sin(S["delta"]) / m


def _saturated(alpha: np.ndarray, used: np.ndarray) -> bool:
    """Whether the force ``used`` levelled off over the slip angles ``alpha``: its slope over the top
    tenth of the slip range is below 5 % of its slope in the linear range (slip below 30 % of the largest)."""
    a = np.abs(alpha)
    top = float(a.max()) if a.size else 0.0
    lin, end = a <= 0.3 * top, a >= 0.9 * top
    if top <= 0 or np.count_nonzero(lin) < 5 or np.count_nonzero(end) < 5 or np.ptp(a[end]) <= 0:
        return False
    slope0 = float(np.polyfit(a[lin], used[lin], 1)[0])
    slope_end = float(np.polyfit(a[end], used[end], 1)[0])
    return bool(slope0 > 0 and slope_end < 0.05 * slope0)


def axle_peaks(S: dict[str, np.ndarray], geo: dict[str, float], I_z: float, driven: str | None) -> AxlePeaks:
    """The friction each axle used on the samples ``S`` (:func:`lateral_samples` of a steady manoeuvre,
    the constant-steer ramp) and whether it reached its limit there.

    ``driven`` (``"front"``, ``"rear"``, ``"all"`` or None) says which axle carries the drive force
    ``m a_x`` (``"all"``: in proportion to the loads; None: none of it, the pure lateral force).
    """
    m = geo["mass"]
    fyf, fyr, fzf, fzr = axle_forces(S, geo, I_z)
    fx = m * drive_acceleration(S, fyf, m)
    share_f = {"front": 1.0, "rear": 0.0, "all": fzf / (fzf + fzr)}.get(driven or "", 0.0)
    share_r = {"front": 0.0, "rear": 1.0, "all": fzr / (fzf + fzr)}.get(driven or "", 0.0)
    used_f = np.hypot(fyf, share_f * fx) / fzf
    used_r = np.hypot(fyr, share_r * fx) / fzr
    pf = float(np.percentile(used_f, 99.5)) if used_f.size else 0.0
    pr = float(np.percentile(used_r, 99.5)) if used_r.size else 0.0
    return AxlePeaks(pf, pr, _saturated(S["alpha_f"], used_f), _saturated(S["alpha_r"], used_r))


def _forces(S: dict[str, np.ndarray], geo: dict[str, float], mu: float, bf: float, br: float, C: float,
            d_f: float = 1.0, d_r: float = 1.0):
    m, lf, lr, h, g = geo["mass"], geo["l_f"], geo["l_r"], geo["h_cg"], geo["g"]
    L = lf + lr
    sd = np.sin(S["delta"])
    pf = d_f * np.sin(C * np.arctan(bf * S["alpha_f"]))
    pr = d_r * np.sin(C * np.arctan(br * S["alpha_r"]))
    ax = S["a_x"]
    for _ in range(2):  # the model's a_x input: measured acceleration + F_yf sin(delta) / m (fixed point)
        fzf = m * (g * lr - ax * h) / L
        fyf = mu * fzf * pf
        ax = S["a_x"] + fyf * sd / m
    fzf = m * (g * lr - ax * h) / L
    fzr = m * (g * lf + ax * h) / L
    return mu * fzf * pf, mu * fzr * pr, fzf, fzr


def fit_lateral(S: dict[str, np.ndarray], geo: dict[str, float], C: float, mu0: float,
                I_z: float | None, fit_mu: bool = True, peak_factors: tuple[float, float] = (1.0, 1.0)) -> LateralFit:
    """Fit ``mu``, ``B_f``, ``B_r`` (and ``I_z`` when ``None``) to the samples of :func:`lateral_samples`.

    ``mu0`` [-] is the start value and, for a plant without tyre slip or with ``fit_mu=False``, the result
    (then the axle peaks ``D mu`` are fixed: measured by :func:`axle_peaks`, not extrapolated by the tyre
    curve). ``peak_factors`` are the axles' ``D_f, D_r`` [-].
    """
    d_f, d_r = peak_factors
    m, lf, lr = geo["mass"], geo["l_f"], geo["l_r"]
    L = lf + lr
    n = int(S["v_x"].size)
    fit_iz = I_z is None
    iz0 = m * lf * lr if I_z is None else I_z
    # an axle whose slip angles stay within the sampling noise (a kinematic plant) has no measurable stiffness
    slip = [float(np.percentile(np.abs(S[k]), 95)) if n else 0.0 for k in ("alpha_f", "alpha_r")]
    free = [s_ >= _NO_SLIP for s_ in slip]
    if n < 10 or not any(free):
        logger.warning("identify: no measurable tyre slip (95th percentile %.2g rad): tyre stiffness set to the "
                       "bound B = %g, mu to the largest lateral acceleration / g = %.3f", max(slip), B_MAX, mu0)
        return LateralFit(mu0, B_MAX, B_MAX, iz0, False, False, 1.0, math.nan, math.nan, n, d_f, d_r)
    if not all(free):
        logger.warning("identify: no measurable slip on the %s axle: its B is the bound %g",
                       "front" if not free[0] else "rear", B_MAX)
    cd = np.cos(S["delta"])

    def unpack(p: np.ndarray) -> tuple[float, float, float, float]:
        e = np.exp(p)
        e[0] = e[0] if fit_mu else mu0
        bf = float(e[1]) if free[0] else B_MAX
        br = float(e[2]) if free[1] else B_MAX
        return float(e[0]), bf, br, (float(e[3]) if fit_iz else iz0)

    def residual(p: np.ndarray) -> np.ndarray:
        mu, bf, br, iz = unpack(p)
        fyf, fyr, _, _ = _forces(S, geo, mu, bf, br, C, d_f, d_r)
        e1 = S["a_y"] - (fyf * cd + fyr) / m
        e2 = (iz * S["r_dot"] - lf * fyf * cd + lr * fyr) / (m * L)
        return np.concatenate([e1, e2])

    starts = [np.log([mu0, b, b]) for b in (5.0, 12.0, 30.0)]
    lo = np.log([0.05, 0.1, 0.1] + ([0.01 * iz0] if fit_iz else []))
    hi = np.log([3.0, B_MAX, B_MAX] + ([100.0 * iz0] if fit_iz else []))
    sols = [least_squares(residual, np.clip(np.concatenate([p0, [math.log(iz0)]]) if fit_iz else p0,
                                            lo + 1e-9, hi - 1e-9), bounds=(lo, hi), method="trf")
            for p0 in starts]
    best = min(sols, key=lambda sol: sol.cost)
    mu, bf, br, iz = unpack(best.x)
    fyf, fyr, fzf, fzr = _forces(S, geo, mu, bf, br, C, d_f, d_r)
    ratio = float(max(np.max(np.abs(fyf) / (d_f * mu * fzf)), np.max(np.abs(fyr) / (d_r * mu * fzr))))
    e = best.fun
    return LateralFit(mu, bf, br, iz, fit_iz, True, ratio, float(np.sqrt(np.mean(e[:n] ** 2))),
                      float(np.sqrt(np.mean(e[n:] ** 2))), n, d_f, d_r)
